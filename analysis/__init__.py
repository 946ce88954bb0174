"""Estimators, accountants and reporting: arrays and DataFrames in, bounds, tables and figures out.

This package imports nothing from ``games``, ``mechanisms`` or ``attacks``.  Its modules are imported on first
use (:mod:`analysis._lazy`): ``import analysis`` alone imports neither ``dp_accounting`` nor scipy.
"""

from typing import TYPE_CHECKING

from analysis._lazy import attach

if TYPE_CHECKING:
    from analysis import (
        accounting,
        cache,
        fdp,
        ladder,
        multi_run,
        one_run,
        order_stats,
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
    "order_stats",
    "panoramia",
    "record_risk",
    "reporting",
    "thresholds",
    "vulnerability",
]

__getattr__, __dir__ = attach(__name__, {name: f"analysis.{name}" for name in __all__})
