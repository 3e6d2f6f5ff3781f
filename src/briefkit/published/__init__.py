"""Published briefs as transcribed into data/published/<brief>/: the reader (brief), the claims and their checks."""
