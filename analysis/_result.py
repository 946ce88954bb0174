"""The result type shared by the score-level estimators."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privgame.analysis._checks import check_confidence, check_delta, check_scores
from privgame.analysis.thresholds import Bonferroni, Explicit, ThresholdChoice, ThresholdStrategy, check_strategy

__all__ = ["AuditResult", "prepare_one_run", "result_from_choice"]


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


def result_from_choice(
    choice: ThresholdChoice,
    *,
    method: str,
    n_in: int,
    n_out: int,
    confidence: float,
    delta: float,
    details: Mapping[str, Any],
) -> AuditResult:
    """The :class:`AuditResult` of a threshold strategy's choice."""
    return AuditResult(
        epsilon=choice.bound,
        method=method,
        n_in=n_in,
        n_out=n_out,
        threshold=choice.threshold,
        n_tests=choice.n_tests,
        beta_per_test=choice.beta_per_test,
        strategy=choice.strategy,
        confidence=confidence,
        delta=delta,
        details=details,
    )


def prepare_one_run(
    in_scores: ArrayLike,
    out_scores: ArrayLike,
    confidence: float,
    delta: float,
    threshold: ThresholdStrategy | None,
    two_sided: bool,
) -> tuple[NDArray[np.float64], NDArray[np.float64], float, float, ThresholdStrategy]:
    """Checked inputs of a one-run score audit: scores, confidence, δ, and a strategy whose form fits the guessing."""
    ins = check_scores("in_scores", in_scores)
    outs = check_scores("out_scores", out_scores)
    if ins.size + outs.size == 0:
        raise ValueError("in_scores and out_scores must not both be empty.")
    conf = check_confidence(confidence)
    d = check_delta(delta)
    strategy = check_strategy(Bonferroni() if threshold is None else threshold)
    if isinstance(strategy, Explicit) and isinstance(strategy.threshold, tuple) != bool(two_sided):
        form = "a pair (t_low, t_high)" if two_sided else "a single number"
        raise ValueError(f"threshold must be {form} for two_sided={two_sided}, got {strategy.threshold!r}.")
    return ins, outs, conf, d, strategy
