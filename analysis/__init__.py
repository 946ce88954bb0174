"""Estimators, accountants and reporting: arrays and DataFrames in, bounds, tables and figures out.

This package imports nothing of privgame's but :mod:`privgame.core`.  Its modules are imported on first
use (:mod:`privgame.core._lazy`): ``import privgame.analysis`` alone imports neither ``dp_accounting`` nor scipy.
"""

from typing import TYPE_CHECKING

from privgame.core._lazy import attach

if TYPE_CHECKING:
    from privgame.analysis import (
        accounting,
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

__getattr__, __dir__ = attach(__name__, {name: f"privgame.analysis.{name}" for name in __all__})
