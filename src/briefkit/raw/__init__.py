"""The raw-folder format of a measured campaign, data/raw/<brief>/<campaign>/:

    campaign.json            the declaration the campaign was started with (``records``)
    manifest.jsonl           one event per line, append only (``manifest``)
    inventory.json           the host and the storage of each configuration
    <config>/prepare/attempt-<n>/    what the workload's prepare step wrote
    <point id>/attempt-<n>/  what a point wrote on the host, plus point.json and power.csv
    packs/<sha256>.zip       finished attempt folders packed into one file (``packs``), read as folders

``records`` reads and writes campaign.json and point.json (versioned by ``schema_version``), ``packs``
the packed form of finished attempt folders,
``manifest`` the event log, ``points`` turns a finished point folder into tidy samples, and
``campaign`` reads a whole campaign back through the declaration recorded in it (never through
today's params.yaml). The executor (briefkit.measure) writes through this package; the dataset
(briefkit.dataset) reads through it.
"""
