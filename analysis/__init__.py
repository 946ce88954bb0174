"""Estimators, accountants and reporting: arrays and DataFrames in, bounds, tables and figures out.

This package imports nothing from ``games``, ``mechanisms`` or ``attacks``.
"""

from analysis import (
    accounting,
    cache,
    fdp,
    ladder,
    multi_run,
    one_run,
    panoramia,
    record_risk,
    reporting,
    thresholds,
    vulnerability,
)

__all__ = [
    "accounting",
    "cache",
    "fdp",
    "ladder",
    "multi_run",
    "one_run",
    "panoramia",
    "record_risk",
    "reporting",
    "thresholds",
    "vulnerability",
]
