"""The result type shared by the score-level estimators."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AuditResult"]


@dataclass(frozen=True, slots=True)
class AuditResult:
    """A privacy-audit bound computed from member and non-member scores.

    Attributes
    ----------
    epsilon : float
        The lower bound on ε (holds with probability ≥ ``confidence`` under the estimator's assumptions).
    method : str
        The estimator, with its reference.
    n_in, n_out : int
        Numbers of member and non-member scores.
    threshold : object
        The threshold (or pair of thresholds) the bound was computed at.
    n_tests : int
        How many thresholds the significance was divided among.
    beta_per_test : float
        The significance of the test at the chosen threshold.
    strategy : str
        How the threshold was chosen.
    confidence : float
    delta : float
    details : mapping
        Estimator-specific figures (counts, error-rate bounds, μ, ...).
    """

    epsilon: float
    method: str
    n_in: int
    n_out: int
    threshold: Any
    n_tests: int
    beta_per_test: float
    strategy: str
    confidence: float
    delta: float
    details: Mapping[str, Any] = field(default_factory=dict)
