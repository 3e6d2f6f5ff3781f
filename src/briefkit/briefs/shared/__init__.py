"""What every brief's notebook uses: the sections' base, figures, stability, table helpers and the campaign
comparison (also a brief of its own: ``briefkit compare``)."""
