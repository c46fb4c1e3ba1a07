"""Scoring: rendering, post-processing, predictions, applying the metrics, samples,
pass@k, intervals and the score report.

Nothing is imported here: each module is imported where it is used."""
