"""The classic multi-run audit: FPR and FNR of a membership test over many independent runs.

Each run trains (or runs) the mechanism with or without the target; the attack scores the target once per run.
The member scores come from the "with" runs, the non-member scores from the "without" runs.  Clopper–Pearson upper
bounds on the false-positive and false-negative rates, each at β/2, hold together with probability 1 − β, and any
(ε, δ)-DP mechanism satisfies FPR + e^ε FNR ≥ 1 − δ and FNR + e^ε FPR ≥ 1 − δ.

References
----------
.. [1] M. Jagielski, J. Ullman, A. Oprea. Auditing Differentially Private Machine Learning: How Private is Private
   SGD? NeurIPS 2020, arXiv:2006.07709.
.. [2] M. Nasr, S. Song, A. Thakurta, N. Papernot, N. Carlini. Adversary Instantiation: Lower Bounds for
   Differentially Private Machine Learning. IEEE S&P 2021, arXiv:2101.04535 (the GDP variant).
.. [3] P. Kairouz, S. Oh, P. Viswanath. The Composition Theorem for Differential Privacy. ICML 2015.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import dp_accounting
import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special, stats

from privgame.analysis._checks import check_confidence, check_delta, check_scores
from privgame.analysis._result import AuditResult, result_from_choice
from privgame.analysis.thresholds import (
    Bonferroni,
    BoundsFn,
    Explicit,
    ThresholdStrategy,
    check_strategy,
    quantile_thresholds,
)

__all__ = ["audit_scores", "clopper_pearson_upper", "gdp_audit_scores"]


def clopper_pearson_upper(k: ArrayLike, n: int, alpha: float) -> NDArray[np.float64]:
    """One-sided Clopper–Pearson upper confidence bound on a binomial rate: ``P[rate > bound] <= alpha``.

    Parameters
    ----------
    k : array-like of int
        Successes out of ``n``.
    n : int
        Trials, ``>= 1``.
    alpha : float
        One-sided significance.

    Returns
    -------
    ndarray of float
        ``Beta.ppf(1 - alpha, k + 1, n - k)``, and 1 where ``k = n``.
    """
    ks = np.asarray(k, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        upper = special.betaincinv(ks + 1.0, np.maximum(n - ks, 1e-300), 1.0 - alpha)
    return np.where(ks >= n, 1.0, upper)


def _rates(
    in_sorted: NDArray[np.float64], out_sorted: NDArray[np.float64], thresholds: Sequence[Any]
) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """False positives (non-members scoring >= t) and false negatives (members scoring < t) per threshold."""
    t = np.asarray(thresholds, dtype=np.float64)
    fp = out_sorted.size - np.searchsorted(out_sorted, t, side="left")
    fn = np.searchsorted(in_sorted, t, side="left")
    return fp, fn


def _eps_from_rates(fpr: NDArray[np.float64], fnr: NDArray[np.float64], delta: float) -> NDArray[np.float64]:
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.log((1.0 - delta - fnr) / fpr)
        b = np.log((1.0 - delta - fpr) / fnr)
    out = np.fmax(np.nan_to_num(a, nan=0.0, posinf=np.inf), np.nan_to_num(b, nan=0.0, posinf=np.inf))
    return np.maximum(out, 0.0)


def _validate(
    in_scores: ArrayLike, out_scores: ArrayLike, confidence: float, delta: float
) -> tuple[NDArray[np.float64], NDArray[np.float64], float, float]:
    ins = check_scores("in_scores", in_scores)
    outs = check_scores("out_scores", out_scores)
    if ins.size == 0 or outs.size == 0:
        raise ValueError(
            f"in_scores and out_scores must both be non-empty (one score per run), got {ins.size} and {outs.size}."
        )
    return ins, outs, check_confidence(confidence), check_delta(delta)


def audit_scores(
    in_scores: ArrayLike,
    out_scores: ArrayLike,
    *,
    confidence: float = 0.95,
    delta: float = 0.0,
    threshold: ThresholdStrategy | None = None,
) -> AuditResult:
    """Lower bound on ε from the attack's error rates over independent runs (Clopper–Pearson at β/2 each).

    Parameters
    ----------
    in_scores : array-like of shape (n_in,)
        The target's score in each run that included it (one score per independent run), higher = member.
    out_scores : array-like of shape (n_out,)
        Its score in each run without it.
    confidence : float, default=0.95
    delta : float, default=0.0
    threshold : ThresholdStrategy, default=Bonferroni(100)
        The attack guesses "member" at scores ≥ t.

    Returns
    -------
    AuditResult
        ``details``: ``fpr_ub``, ``fnr_ub`` (the Clopper–Pearson upper bounds at the chosen threshold), ``fp``, ``fn``.

    Notes
    -----
    Formal guarantee: if the runs are independent and the mechanism is (ε, δ)-DP, then with probability at least
    ``confidence`` FPR ≤ FPR_ub and FNR ≤ FNR_ub (each at β/2), and then
    ``ε ≥ max(ln((1 − δ − FNR_ub)/FPR_ub), ln((1 − δ − FPR_ub)/FNR_ub))``; hence
    ``P[result.epsilon > ε] <= 1 - confidence`` (the threshold's search paid for by the strategy).
    """
    ins, outs, conf, d = _validate(in_scores, out_scores, confidence, delta)
    strategy = _one_threshold(Bonferroni() if threshold is None else threshold)

    def bounds(
        a: NDArray[np.float64], b: NDArray[np.float64], cands: Sequence[Any], beta: float
    ) -> NDArray[np.float64]:
        if a.size == 0 or b.size == 0:
            return np.zeros(len(cands))
        fp, fn = _rates(np.sort(a), np.sort(b), cands)
        return _eps_from_rates(
            clopper_pearson_upper(fp, b.size, beta / 2), clopper_pearson_upper(fn, a.size, beta / 2), d
        )

    return _finish(strategy, ins, outs, conf, d, bounds, "multi-run Clopper–Pearson (Jagielski et al. 2020)")


def gdp_audit_scores(
    in_scores: ArrayLike,
    out_scores: ArrayLike,
    *,
    confidence: float = 0.95,
    delta: float,
    threshold: ThresholdStrategy | None = None,
) -> AuditResult:
    """Lower bound on μ (Gaussian DP) from the error rates, reported as the GDP-derived ε at δ.

    ``μ ≥ Φ⁻¹(1 − FPR_ub) − Φ⁻¹(FNR_ub)`` with the same simultaneous Clopper–Pearson bounds; ε is the ε at ``delta``
    of a μ-GDP mechanism (``dp_accounting.get_epsilon_gaussian(1/μ, δ)``).

    Notes
    -----
    Formal guarantee: valid for mechanisms that are μ-GDP (Gaussian noise, DP-SGD by the CLT heuristic, NOT
    randomized response): if the mechanism is μ-GDP, ``P[result.details["mu"] > μ] <= 1 - confidence``.  The ε is a
    GDP-derived figure: applied to a mechanism that is not Gaussian it can overshoot the true ε.
    """
    ins, outs, conf, d = _validate(in_scores, out_scores, confidence, delta)
    if d <= 0.0:
        raise ValueError(f"delta must be > 0 for the GDP-derived ε (μ-GDP gives no finite ε at δ = 0), got {delta!r}.")
    strategy = _one_threshold(Bonferroni() if threshold is None else threshold)

    def mu_bounds(
        a: NDArray[np.float64], b: NDArray[np.float64], cands: Sequence[Any], beta: float
    ) -> NDArray[np.float64]:
        if a.size == 0 or b.size == 0:
            return np.zeros(len(cands))
        fp, fn = _rates(np.sort(a), np.sort(b), cands)
        fpr = clopper_pearson_upper(fp, b.size, beta / 2)
        fnr = clopper_pearson_upper(fn, a.size, beta / 2)
        return np.maximum(stats.norm.isf(fpr) - stats.norm.ppf(fnr), 0.0)

    result = _finish(strategy, ins, outs, conf, d, mu_bounds, "multi-run GDP (Nasr et al. 2021), ε derived at δ")
    mu = result.epsilon
    eps = 0.0 if mu <= 0 else (math.inf if math.isinf(mu) else float(dp_accounting.get_epsilon_gaussian(1.0 / mu, d)))
    return AuditResult(**{**_fields(result), "epsilon": eps, "details": {**result.details, "mu": mu}})


def _one_threshold(threshold: object) -> ThresholdStrategy:
    strategy = check_strategy(threshold)
    if isinstance(strategy, Explicit) and isinstance(strategy.threshold, tuple):
        raise ValueError(f"threshold must be a single number for a multi-run audit, got {strategy.threshold!r}.")
    return strategy


def _fields(result: AuditResult) -> dict[str, Any]:
    return {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}


def _finish(
    strategy: ThresholdStrategy,
    ins: NDArray[np.float64],
    outs: NDArray[np.float64],
    conf: float,
    d: float,
    bounds: BoundsFn,
    method: str,
) -> AuditResult:
    choice = strategy.choose(ins, outs, beta=1.0 - conf, candidates=quantile_thresholds, bounds=bounds)
    a, b = choice.in_scores, choice.out_scores
    fp, fn = _rates(np.sort(a), np.sort(b), [choice.threshold])
    half = choice.beta_per_test / 2
    return result_from_choice(
        choice,
        method=method,
        n_in=ins.size,
        n_out=outs.size,
        confidence=conf,
        delta=d,
        details={
            "fp": int(fp[0]),
            "fn": int(fn[0]),
            "fpr_ub": float(clopper_pearson_upper(fp, max(b.size, 1), half)[0]),
            "fnr_ub": float(clopper_pearson_upper(fn, max(a.size, 1), half)[0]),
        },
    )
