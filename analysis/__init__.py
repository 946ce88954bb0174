"""Estimators, accountants and reporting: arrays and DataFrames in, bounds, tables and figures out.

This package imports nothing from ``games``, ``mechanisms`` or ``attacks``.
"""

from analysis import accounting, fdp, ladder, multi_run, one_run, panoramia, reporting, thresholds

__all__ = ["accounting", "fdp", "ladder", "multi_run", "one_run", "panoramia", "reporting", "thresholds"]
