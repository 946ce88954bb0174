"""Estimators, accountants and reporting: arrays and DataFrames in, bounds, tables and figures out.

This package imports nothing from ``games``, ``mechanisms`` or ``attacks``.
"""

from analysis import accounting, one_run, reporting

__all__ = ["accounting", "one_run", "reporting"]
