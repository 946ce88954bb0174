"""Calibrated evaluation of LiRA scores: per-sample standardisation, three aggregate TPRs and the FPC correction.

Efficient LiRA [1]_ trains M models, each on a random half of a pool of N₊ samples; each model j in turn is the
target and the other M − 1 are its shadows.  The attack yields a score matrix ``scores`` of shape (M, N) — model j's
membership score for sample x, higher = member — and ``member`` of the same shape (was x in model j's training
set).  This module works on those two arrays alone (no game, no model) and implements the two findings of the LiRA
calibration paper (SPEC §5):

1. Concatenated evaluation is mis-calibrated.  One global threshold on the pooled raw scores of all (j, x) pairs
   gives each sample its own FPR, so "TPR at FPR = α" is not what it says.  The fix standardises each pair with the
   leave-one-out OUT statistics of the other models, ``f_x(s) = sign(Δ_x) (s − μ_out,x) / σ_out,x`` with
   ``Δ_x = μ_in,x − μ_out,x``, after which every sample's OUT distribution is N(0, 1) under the Gaussian
   assumption and the threshold Φ⁻¹(1 − α) gives FPR α for every sample.  With few shadows the estimated μ/σ make
   that threshold optimistic; the Student-t prediction threshold ``t_{1−α, n_out−1} · sqrt(1 + 1/n_out)`` is exact
   for Gaussian scores.  The sign must not be estimated from the shadows that give μ_out,x: choosing it by
   Δ̂_x = μ̂_in,x − μ̂_out,x selects, for a sample that does not leak, the direction in which μ̂_out,x happens to lie
   low, and the realised FPR rises (0.0139 for 0.01 at M = 16, 0.0125 at M = 64).  A score whose direction is known
   ("higher = member", as every privgame attack's and LiRA's logit-scaled confidence) needs no sign
   (``direction="known"``, the default); ``direction="split"`` estimates it from shadows disjoint from those of the
   threshold.  :func:`calibration_report` reports the naive concatenated TPR, the post-processed concatenated TPR
   (both thresholds) and the mean per-sample TPR side by side, each with its realised FPR and a bootstrap interval
   over samples, plus the spread of per-sample FPRs that the naive threshold implies.
2. Finite-population bias.  Shadow training sets drawn without replacement from one pool share data, so the
   spread of the learning outcomes is underestimated by the factor ``FPC = 1 − N/N₊`` [2]_; the correction is
   ``σ²_corrected = σ²_empirical / FPC`` (:func:`finite_population_correction`, and ``fpc=`` of
   :func:`loo_statistics` and :func:`calibration_report`).

:func:`out_normality` shows where the Gaussian assumption fails (Shapiro–Wilk [3]_ per sample), and
:func:`pooled_auc` / :func:`pooled_roc` give the pooled AUC and a log-scale ROC for figures.

Conventions: the attack guesses "member" iff the score is strictly above the threshold; every "realised FPR" is
measured on the OUT pairs the threshold is applied to, and is reported next to the nominal one (SPEC §8).

This module imports nothing from ``games``, ``mechanisms`` or ``attacks``.

References
----------
.. [1] N. Carlini, S. Chien, M. Nasr, S. Song, A. Terzis, F. Tramèr. Membership Inference Attacks From First
   Principles. IEEE S&P 2022, arXiv:2112.03570 (LiRA, offline variant, efficient shadow-model reuse).
.. [2] W. G. Cochran. Sampling Techniques, 3rd ed. Wiley, 1977 (§2.5, the finite population correction).
.. [3] S. S. Shapiro, M. B. Wilk. An analysis of variance test for normality (complete samples). Biometrika
   52(3/4), 1965.
.. [4] The LiRA calibration / finite-population-correction paper (SPEC §5; summary in
   ``papers/lira_calibration_fpc_summary_nl.md``): the post-processing f_x, the Student-t threshold, the three
   aggregate numbers, the rule M ≥ 10/FPR for per-sample estimation, and σ_emp/σ_analytic ≈ sqrt(FPC).
.. [5] B. Efron, R. J. Tibshirani. An Introduction to the Bootstrap. Chapman & Hall, 1993 (ch. 13, the percentile
   interval).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from privgame.analysis._checks import check_confidence, check_int, check_member_matrix, check_real, check_score_matrix
from privgame.analysis.record_risk import auc

__all__ = [
    "DEFAULT_FPRS",
    "CalibrationReport",
    "LooStatistics",
    "NormalityReport",
    "calibration_report",
    "finite_population_correction",
    "loo_statistics",
    "normal_threshold",
    "out_normality",
    "pooled_auc",
    "pooled_roc",
    "standardise",
    "student_t_threshold",
]

DEFAULT_FPRS: tuple[float, ...] = (1e-3, 1e-2, 1e-1)
"""The nominal false-positive rates reported by default."""

METHODS: tuple[str, ...] = ("naive", "pp", "pp_t", "per_sample")
"""The four aggregate numbers, in the order of :meth:`CalibrationReport.flat`."""

DIRECTIONS: tuple[str, ...] = ("known", "split")
"""How :func:`calibration_report` orients each sample's post-processed score (its ``direction``)."""

# A leave-one-out sum of squares below this fraction of its column's total is recomputed directly: the downdating
# formula loses it to cancellation (the other values are then (nearly) all equal).
_CANCELLATION = 1e-8
_FALLBACK_CHUNK = 4096


# ---------------------------------------------------------------------------------------------------- input checks


def _check_fpc(fpc: Any) -> float:
    return check_real("fpc", fpc, low=0.0, high=1.0, low_open=True)


def _check_alpha(name: str, alpha: Any) -> float:
    return check_real(name, alpha, low=0.0, high=1.0, low_open=True, high_open=True)


def _check_fprs(fprs: Sequence[float]) -> tuple[float, ...]:
    if isinstance(fprs, (str, bytes)) or not isinstance(fprs, Sequence):
        raise TypeError(f"fprs must be a sequence of floats, got {fprs!r}.")
    levels = tuple(_check_alpha(f"fprs[{i}]", f) for i, f in enumerate(fprs))
    if not levels:
        raise ValueError(f"fprs must be a non-empty sequence of floats in (0, 1), got {fprs!r}.")
    labels = [f"{f:g}" for f in levels]
    if len(set(labels)) != len(labels):
        raise ValueError(f"fprs must be distinct (also when written with '{{:g}}'), got {fprs!r}.")
    return levels


def _check_rng(rng: Any) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {rng!r}.")
    return rng


# ------------------------------------------------------------------------------------------------------------- FPC


def finite_population_correction(n_train: int, n_pool: int) -> float:
    """The finite population correction ``FPC = 1 − N / N₊`` of a training set drawn from a finite pool.

    When each shadow training set of size N is drawn without replacement from one pool of N₊ records, the variance
    of a mean-like learning outcome across shadow sets is the variance for independent draws from the population
    times FPC (Cochran 1977; for the sample mean exactly, with the pool's variance in place of the population's),
    so shadow-model variances are corrected by ``σ²_corrected = σ²_empirical / FPC``.

    Parameters
    ----------
    n_train : int
        N, the training-set size, ≥ 1.
    n_pool : int
        N₊, the pool size, > ``n_train`` (at N = N₊ every shadow set is the whole pool and no spread is left).

    Returns
    -------
    float
        In (0, 1); 0.5 for efficient LiRA's halves.

    Raises
    ------
    TypeError
        If either is not an integer.
    ValueError
        If either is < 1, or ``n_train >= n_pool``.

    References
    ----------
    W. G. Cochran, Sampling Techniques, 1977, §2.5; the LiRA calibration paper (SPEC §5): σ_emp/σ_analytic
    concentrates around sqrt(FPC) in efficient LiRA.

    Examples
    --------
    >>> finite_population_correction(500, 1000)
    0.5
    >>> finite_population_correction(1, 4)
    0.75
    """
    n = check_int("n_train", n_train, low=1)
    n_plus = check_int("n_pool", n_pool, low=1)
    if n >= n_plus:
        raise ValueError(f"n_train must be less than n_pool = {n_plus}, got {n_train!r}.")
    return 1.0 - n / n_plus


# ---------------------------------------------------------------------------------------------- leave-one-out stats


@dataclass(frozen=True, slots=True, eq=False)
class LooStatistics:
    """Per-pair leave-one-out OUT and IN statistics of a LiRA score matrix (see :func:`loo_statistics`).

    All arrays have the shape (M, N) of the scores; entry (j, x) is computed from the scores ``s[k, x]`` of the
    OTHER models k ≠ j.

    Attributes
    ----------
    mu_out : ndarray of shape (M, N)
        Mean of the other models' scores where x was not in their training set; NaN where ``n_out`` is 0.
    sigma_out : ndarray of shape (M, N)
        Their sample standard deviation (ddof = 1), divided by ``sqrt(fpc)``; NaN where ``n_out < 2``, 0.0 where
        those scores are all equal.
    n_out : ndarray of int of shape (M, N)
        The number of those OUT models.
    mu_in : ndarray of shape (M, N)
        Mean of the other models' scores where x was in their training set; NaN where ``n_in`` is 0.
    n_in : ndarray of int of shape (M, N)
        The number of those IN models.
    delta : ndarray of shape (M, N)
        ``mu_in − mu_out``; NaN where either is undefined (:func:`standardise` then uses the sign +1).
    valid : ndarray of bool of shape (M, N)
        Where the pair can be standardised: ``n_out >= 2`` and ``sigma_out > 0``.
    fpc : float
        The finite population correction the variances were divided by (1 = none).
    n_dropped_pairs : int
        Pairs that cannot be standardised (``~valid``).
    n_dropped_samples : int
        Samples (columns) none of whose pairs can be standardised.
    """

    mu_out: NDArray[np.float64]
    sigma_out: NDArray[np.float64]
    n_out: NDArray[np.int64]
    mu_in: NDArray[np.float64]
    n_in: NDArray[np.int64]
    delta: NDArray[np.float64]
    valid: NDArray[np.bool_]
    fpc: float
    n_dropped_pairs: int
    n_dropped_samples: int


def _loo_mean_ss(
    s: NDArray[np.float64], group: NDArray[np.bool_], *, spread: bool = True
) -> tuple[NDArray[np.float64], NDArray[np.float64] | None, NDArray[np.int64]]:
    """Per pair (j, x): mean, sum of squared deviations and count of ``s[k, x]`` over k ≠ j with ``group[k, x]``.

    Column sums minus model j's own contribution, after centring each column on its group mean (so that the
    downdate ``Q − S²/n`` does not cancel); pairs where it would still cancel are recomputed directly.  The mean is
    NaN where the count is 0, the sum of squares NaN where the count is < 2 and exactly 0 where the other values are
    all equal; with ``spread`` False only the mean and the count are computed (None for the sum of squares).
    """
    # in place where possible: each fresh (M, N) temporary costs page faults comparable to the arithmetic
    n_tot = group.sum(axis=0)
    centre = np.divide(np.where(group, s, 0.0).sum(axis=0), n_tot, out=np.zeros(s.shape[1]), where=n_tot > 0)
    d = np.subtract(s, centre)
    np.multiply(d, group, out=d)
    s_tot = d.sum(axis=0)
    q_tot = np.einsum("ij,ij->j", d, d)
    n = np.subtract(n_tot, group, dtype=np.int64)
    sums = np.subtract(s_tot, d)
    mean = np.divide(sums, n, where=n > 0, out=np.full(s.shape, np.nan))
    np.add(mean, centre, out=mean)
    if not spread:
        return mean, None, n
    ss = np.multiply(d, d, out=d)
    np.subtract(q_tot, ss, out=ss)
    np.multiply(sums, sums, out=sums)
    np.divide(sums, n, where=n > 0, out=sums)
    np.subtract(ss, sums, out=ss)
    np.maximum(ss, 0.0, out=ss)
    ss[n < 2] = np.nan
    suspect = np.argwhere((n > 1) & (ss <= _CANCELLATION * q_tot))
    for start in range(0, len(suspect), _FALLBACK_CHUNK):
        rows, cols = suspect[start : start + _FALLBACK_CHUNK].T
        keep = group[:, cols].copy()
        keep[rows, np.arange(rows.size)] = False
        values = s[:, cols]
        count = keep.sum(axis=0)
        mean_direct = np.where(keep, values, 0.0).sum(axis=0) / count
        ss_direct = np.where(keep, (values - mean_direct) ** 2, 0.0).sum(axis=0)
        constant = np.where(keep, values, -np.inf).max(axis=0) == np.where(keep, values, np.inf).min(axis=0)
        mean[rows, cols] = mean_direct
        ss[rows, cols] = np.where(constant, 0.0, ss_direct)
    return mean, ss, n


def loo_statistics(scores: ArrayLike, member: ArrayLike, *, fpc: float = 1.0) -> LooStatistics:
    """Leave-one-out OUT/IN means and the OUT standard deviation of every (model, sample) pair.

    For the pair (j, x), ``mu_out``, ``sigma_out`` (sample standard deviation, ddof = 1) and ``n_out`` are computed
    from the scores ``s[k, x]`` of the other models k ≠ j with ``member[k, x]`` False, and ``mu_in``/``n_in`` from
    those with ``member[k, x]`` True: model j is the target, the others are its shadows, as in efficient LiRA.
    With ``fpc`` < 1 the variances are divided by it (``σ² / FPC``), the finite-population correction of shadows
    trained on overlapping subsets of one pool.

    Parameters
    ----------
    scores : array-like of shape (M, N)
        ``scores[j, x]``: model j's membership score for sample x, higher = member; finite; M ≥ 2.
    member : array-like of bool of shape (M, N)
        ``member[j, x]``: whether x was in model j's training set (booleans, or integers 0/1).
    fpc : float, default=1.0
        In (0, 1]; e.g. ``finite_population_correction(N, N₊)``.  1 leaves the variances as estimated.

    Returns
    -------
    LooStatistics
        The statistics, the ``valid`` mask (``n_out >= 2`` and ``sigma_out > 0``) and the numbers of pairs and
        samples that cannot be standardised.

    Raises
    ------
    ValueError
        If the shapes disagree or are not 2-d, M < 2, N < 1, a score is not finite, ``member`` holds a value other
        than 0/1, or ``fpc`` is outside (0, 1].
    TypeError
        If ``scores`` does not hold real numbers, ``member`` is neither boolean nor integer, or ``fpc`` is not real.

    Notes
    -----
    Vectorised: column sums and sums of squares (centred on each column's OUT and IN means) minus model j's own
    contribution, O(M N) time and memory (M = 256, N = 10,000 takes a fraction of a second).  Where model j carries
    nearly all of a column's OUT variation the downdate would cancel; those few pairs are recomputed directly.

    References
    ----------
    Carlini et al. 2022, arXiv:2112.03570 (per-sample Gaussian fits from shadow models); the LiRA calibration paper
    (SPEC §5; the FPC correction σ²/FPC).

    Examples
    --------
    >>> stats = loo_statistics([[1.0, 2.0], [2.0, 3.0], [3.0, 5.0], [6.0, 1.0]],
    ...                        [[0, 1], [0, 0], [0, 1], [1, 0]])
    >>> stats.mu_out[:, 0].tolist(), stats.n_out[:, 0].tolist(), stats.valid[:, 1].tolist()
    ([2.5, 2.0, 1.5, 2.0], [2, 2, 2, 3], [True, False, True, False])
    """
    s, m = check_score_matrix(scores, member)
    correction = _check_fpc(fpc)
    mu_out, ss_out, n_out = _loo_mean_ss(s, ~m)
    if ss_out is None:  # for mypy: spread=True always computes it
        raise RuntimeError("internal error: no sum of squares.")
    mu_in, _, n_in = _loo_mean_ss(s, m, spread=False)
    sigma_out = np.divide(ss_out, (n_out - 1) * correction, out=ss_out, where=n_out >= 2)
    np.sqrt(sigma_out, out=sigma_out)
    valid = sigma_out > 0.0  # False where NaN (n_out < 2)
    return LooStatistics(
        mu_out=mu_out,
        sigma_out=sigma_out,
        n_out=n_out,
        mu_in=mu_in,
        n_in=n_in,
        delta=mu_in - mu_out,
        valid=valid,
        fpc=correction,
        n_dropped_pairs=int((~valid).sum()),
        n_dropped_samples=int((~valid.any(axis=0)).sum()),
    )


# ---------------------------------------------------------------------------------------------------- standardising


def standardise(
    scores: ArrayLike,
    mu_out: ArrayLike,
    sigma_out: ArrayLike,
    delta: ArrayLike | None = None,
    *,
    valid: ArrayLike | None = None,
) -> NDArray[np.float64]:
    """The paper's post-processing ``f_x(s) = sign(Δ_x) (s − μ_out,x) / σ_out,x``.

    If a sample's OUT scores are N(μ_out,x, σ²_out,x), their transforms are N(0, 1) whatever the sample (and
    whatever its IN distribution, so also when σ_in ≠ σ_out), so one threshold Φ⁻¹(1 − α) gives every sample FPR α.
    The sign makes "higher = member" hold for samples whose IN scores lie below their OUT scores.

    Parameters
    ----------
    scores : array-like
        The scores to transform; finite where used.
    mu_out, sigma_out : array-like
        The OUT mean and standard deviation, broadcast against ``scores``; finite, and ``sigma_out > 0``, where used.
        The true values, or estimates such as :attr:`LooStatistics.mu_out` / :attr:`LooStatistics.sigma_out`.
    delta : array-like or None, default=None
        ``Δ = μ_in − μ_out``, broadcast against ``scores``.  The sign is −1 where Δ < 0 and +1 otherwise: +1 where
        Δ = 0, where Δ is NaN (undefined: no IN models, as in :attr:`LooStatistics.delta`) and everywhere when
        ``delta`` is None.
    valid : array-like of bool or None, default=None
        Where to compute the transform (e.g. :attr:`LooStatistics.valid`); elsewhere the result is NaN and the
        inputs are not checked.  None: everywhere.

    Returns
    -------
    ndarray of float
        The broadcast shape of the inputs; NaN exactly where ``valid`` is False.  Mask with ``valid`` before
        pooling (:func:`calibration_report` does).

    Raises
    ------
    ValueError
        If the inputs do not broadcast, or a used score, mean or standard deviation is not finite, or a used
        standard deviation is ≤ 0.
    TypeError
        If an input does not hold real numbers (``valid``: booleans).

    References
    ----------
    The LiRA calibration paper (SPEC §5), the post-processing f_x.

    Examples
    --------
    >>> standardise([3.0, 1.0], [1.0, 2.0], [2.0, 0.5], [1.0, -1.0]).tolist()
    [1.0, 2.0]
    """
    arrays = {}
    for name, value in (("scores", scores), ("mu_out", mu_out), ("sigma_out", sigma_out)):
        arr = np.asarray(value)
        if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
            raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}.")
        arrays[name] = arr.astype(np.float64)
    if delta is None:
        d = np.ones(())
    else:
        d = np.asarray(delta)
        if not (np.issubdtype(d.dtype, np.integer) or np.issubdtype(d.dtype, np.floating)):
            raise TypeError(f"delta must hold real numbers, got dtype {d.dtype}.")
    if valid is None:
        mask = np.ones((), dtype=bool)
    else:
        mask = np.asarray(valid)
        if mask.dtype != np.bool_:
            raise TypeError(f"valid must be a boolean array, got dtype {mask.dtype}.")
    try:
        s, mu, sigma, d, mask = np.broadcast_arrays(arrays["scores"], arrays["mu_out"], arrays["sigma_out"], d, mask)
    except ValueError:
        shapes = [np.shape(a) for a in (scores, mu_out, sigma_out)] + [np.shape(d), np.shape(mask)]
        raise ValueError(
            f"scores, mu_out, sigma_out, delta and valid must broadcast together, got shapes {shapes}."
        ) from None
    for name, arr in (("scores", s), ("mu_out", mu), ("sigma_out", sigma)):
        bad = mask & ~np.isfinite(arr)
        if bad.any():
            index = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ValueError(f"{name} must be finite where used, got {float(arr[index])!r} at index {index}.")
    bad = mask & ~(sigma > 0)
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"sigma_out must be > 0 where used, got {float(sigma[index])!r} at index {index}.")
    sign = np.where(d < 0, -1.0, 1.0)
    z = np.full(s.shape, np.nan)
    np.divide(sign * (s - mu), sigma, out=z, where=mask)
    return z


# ------------------------------------------------------------------------------------------------------ thresholds


def normal_threshold(alpha: float) -> float:
    """The threshold ``Φ⁻¹(1 − α)`` on the standardised scale: FPR α for an N(0, 1) OUT distribution.

    Parameters
    ----------
    alpha : float
        The nominal FPR, in (0, 1).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If ``alpha`` is outside (0, 1).
    TypeError
        If it is not a real number.

    Notes
    -----
    Exact only when μ_out and σ_out are known; with estimates from n_out shadows the realised FPR is larger
    (:func:`student_t_threshold`).

    References
    ----------
    The LiRA calibration paper (SPEC §5).

    Examples
    --------
    >>> round(normal_threshold(0.05), 6)
    1.644854
    """
    from scipy import stats

    return float(stats.norm.isf(_check_alpha("alpha", alpha)))


def student_t_threshold(alpha: float, n_out: ArrayLike) -> Any:
    """The Student-t prediction threshold on the standardised scale, ``t_{1−α, n_out−1} · sqrt(1 + 1/n_out)``.

    On the raw scale this is ``μ̂ + t_{1−α, n−1} σ̂ sqrt(1 + 1/n)``, the upper (1 − α) prediction bound for one new
    draw from the Gaussian the n = ``n_out`` shadow scores came from.

    Parameters
    ----------
    alpha : float
        The nominal FPR, in (0, 1).
    n_out : int or array-like of int
        The number of OUT shadow scores μ̂ and σ̂ were estimated from, each ≥ 0.

    Returns
    -------
    float or ndarray of float
        A float for a scalar ``n_out``, else an array of its shape; NaN where ``n_out`` < 2 (no standard deviation,
        so no threshold: a record with fewer than two OUT shadows cannot be post-processed, and a comparison with
        NaN flags nothing).

    Raises
    ------
    ValueError
        If ``alpha`` is outside (0, 1) or an ``n_out`` is negative.
    TypeError
        If ``alpha`` is not real or ``n_out`` not integer.

    Notes
    -----
    Formal guarantee: if the target's OUT score and the n shadow OUT scores are independent draws from one Gaussian
    (any mean and variance), then ``P[(s − μ̂)/σ̂ > threshold] = α`` exactly, because
    ``(s − μ̂) / (σ̂ sqrt(1 + 1/n))`` has Student's t distribution with n − 1 degrees of freedom.  Shadows sharing a
    finite pool violate the independence (the finite-population bias); divide σ̂² by the FPC first.

    References
    ----------
    The LiRA calibration paper (SPEC §5); the Gaussian prediction interval (e.g. G. J. Hahn, W. Q. Meeker,
    Statistical Intervals, Wiley 1991, §4.7).

    Examples
    --------
    >>> round(student_t_threshold(0.05, 8), 6)
    2.009504
    """
    from scipy import stats

    level = _check_alpha("alpha", alpha)
    n = np.asarray(n_out)
    if n.dtype == np.bool_ or not np.issubdtype(n.dtype, np.integer):
        raise TypeError(f"n_out must be an integer or an array of integers, got {n_out!r}.")
    if n.size and n.min() < 0:
        raise ValueError(f"n_out must be >= 0, got {n.min().item()!r}.")
    # one quantile per distinct n (at most M of them), not per pair
    distinct, inverse = np.unique(n, return_inverse=True)
    nf = distinct.astype(np.float64)
    values = np.full(nf.shape, np.nan)
    defined = nf >= 2
    values[defined] = stats.t.isf(level, nf[defined] - 1.0) * np.sqrt(1.0 + 1.0 / nf[defined])
    out = values[inverse].reshape(n.shape)
    return float(out) if n.ndim == 0 else np.asarray(out, dtype=np.float64)


# ------------------------------------------------------------------------------------------- empirical thresholds


def _n_allowed(alpha: NDArray[np.float64] | float, n: NDArray[np.int64] | int) -> NDArray[np.int64]:
    """The largest k with ``k / n <= alpha`` (floor of α n, corrected for rounding either way)."""
    a = np.asarray(alpha, dtype=np.float64)
    nn = np.asarray(n, dtype=np.int64)
    k = np.floor(a * nn).astype(np.int64)
    k = np.where((k + 1) / np.maximum(nn, 1) <= a, k + 1, k)
    return np.where(k / np.maximum(nn, 1) > a, k - 1, k)


def _empirical_threshold(out_sorted: NDArray[np.float64], alpha: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per α, the threshold τ (guess "member" iff score > τ) with the largest realised FPR ≤ α on ``out_sorted``.

    τ is the (k + 1)-th largest OUT score, k = ⌊α n₀⌋: more than k OUT scores lie at or above it and at most k
    strictly above, so no threshold flags more OUT scores without exceeding α.  −inf ("everyone") when k ≥ n₀.
    """
    n0 = out_sorted.size
    k = _n_allowed(alpha, n0)
    return np.where(k >= n0, -np.inf, out_sorted[np.clip(n0 - 1 - k, 0, n0 - 1)])


def _count_above(sorted_values: NDArray[np.float64], thresholds: NDArray[np.float64]) -> NDArray[np.int64]:
    return (sorted_values.size - np.searchsorted(sorted_values, thresholds, side="right")).astype(np.int64)


# -------------------------------------------------------------------------------------------------- the aggregates


@dataclass(frozen=True, slots=True, eq=False)
class CalibrationReport:
    """The three aggregate TPRs of a LiRA score matrix side by side (see :func:`calibration_report`).

    Attributes
    ----------
    table : DataFrame
        One row per nominal FPR, columns:

        - ``fpr``: the nominal FPR α; ``models_needed``: ⌈10/α⌉, the paper's M for reliable per-sample estimates;
        - for each method in ``naive``, ``pp``, ``pp_t``, ``per_sample``: ``tpr_<method>`` and ``fpr_<method>``
          (the realised FPR), each with ``_low``/``_high`` (the bootstrap interval; NaN when ``n_boot`` is 0);
        - ``fpr_per_sample_expected`` (with ``_low``/``_high``): the mean over samples of (k_x + 1)/(n_out,x + 1), the
          probability that a NEW OUT score exceeds sample x's own threshold (the (k_x + 1)-th largest of its n_out,x
          OUT scores, k_x = ⌊α n_out,x⌋): the per-sample threshold's expected FPR, which its in-sample
          ``fpr_per_sample`` (k_x / n_out,x, 0 when n_out,x < 1/α) understates;
        - ``threshold_naive`` (the global raw-score threshold τ, "member" iff score > τ) and ``threshold_pp``
          (Φ⁻¹(1 − α));
        - ``naive_sample_fpr_mean``, ``_p90``, ``_max``, ``_dispersion``: the per-sample FPRs the naive threshold
          implies (over samples with an OUT model); the dispersion is ``Σ_x n_x (f_x − f̄)² / ((K − 1) f̄ (1 − f̄))``
          over the K samples, ≈ 1 when the spread is binomial noise around a common f̄ and ≫ 1 when the threshold is
          mis-calibrated (NaN when f̄ is 0 or 1, or K = 1);
        - ``pp_sample_fpr_mean``, ``_p90``, ``_max``, ``_dispersion``: the same for the post-processed threshold
          Φ⁻¹(1 − α) over the standardisable OUT pairs.
    n_models, n_samples : int
        M and N.
    n_out_pairs, n_in_pairs : int
        OUT and IN pairs of the naive evaluation (all of them).
    n_pp_out_pairs, n_pp_in_pairs : int
        Standardisable OUT and IN pairs, those of the post-processed evaluation.
    n_dropped_pairs, n_dropped_samples : int
        Pairs left out of the post-processed evaluation (fewer than 2 other OUT models, or all their scores equal),
        and samples with no standardisable pair.
    n_per_sample_samples, n_per_sample_dropped : int
        Samples in the mean per-sample TPR (those with at least one OUT and one IN model) and those left out.
    n_out_per_sample : ndarray of int of shape (N,)
        The number of OUT models of each sample: the per-sample FPR is a multiple of 1/n_out, so below
        1/n_out the per-sample threshold can only reach FPR 0.
    fpc, confidence : float
    n_boot : int
    """

    table: pd.DataFrame
    n_models: int
    n_samples: int
    n_out_pairs: int
    n_in_pairs: int
    n_pp_out_pairs: int
    n_pp_in_pairs: int
    n_dropped_pairs: int
    n_dropped_samples: int
    n_per_sample_samples: int
    n_per_sample_dropped: int
    n_out_per_sample: NDArray[np.int64]
    fpc: float
    confidence: float
    n_boot: int

    def flat(self, methods: Sequence[str] = METHODS) -> dict[str, float]:
        """The report as one flat dict: ``tpr_<method>_<f>``, ``fpr_<method>_<f>`` and their intervals.

        ``<f>`` is the nominal FPR written ``f"{f:g}"`` (0.001 → ``"0.001"``); the intervals are
        ``tpr_<method>_low_<f>`` / ``tpr_<method>_high_<f>`` (and ``fpr_...``), like ``auc_low_<game>`` elsewhere.
        Methods in order: ``naive``, ``pp``, ``pp_t``, ``per_sample``, or those of ``methods``.
        """
        unknown = [name for name in methods if name not in METHODS]
        if unknown:
            raise ValueError(f"methods must be among {', '.join(METHODS)}, got {unknown[0]!r}.")
        out: dict[str, float] = {}
        for row in self.table.itertuples(index=False):
            f = f"{row.fpr:g}"
            for method in (name for name in METHODS if name in methods):
                for rate in ("tpr", "fpr"):
                    name = f"{rate}_{method}"
                    out[f"{name}_{f}"] = float(getattr(row, name))
                    out[f"{name}_low_{f}"] = float(getattr(row, f"{name}_low"))
                    out[f"{name}_high_{f}"] = float(getattr(row, f"{name}_high"))
                if method == "per_sample":
                    for suffix in ("", "_low", "_high"):
                        out[f"fpr_per_sample_expected{suffix}_{f}"] = float(
                            getattr(row, f"fpr_per_sample_expected{suffix}")
                        )
        return out


def _spread(fp: NDArray[np.int64], n: NDArray[np.int64]) -> tuple[float, float, float, float]:
    """Mean, 90th percentile, max and dispersion index of the per-sample rates fp/n over samples with n ≥ 1 (all NaN
    when there is none)."""
    used = n > 0
    if not used.any():
        return math.nan, math.nan, math.nan, math.nan
    fp_u, n_u = fp[used].astype(np.float64), n[used].astype(np.float64)
    rates = fp_u / n_u
    pooled = fp_u.sum() / n_u.sum()
    k = rates.size
    if k > 1 and 0.0 < pooled < 1.0:
        dispersion = float(np.sum(n_u * (rates - pooled) ** 2) / ((k - 1) * pooled * (1.0 - pooled)))
    else:
        dispersion = math.nan
    return float(rates.mean()), float(np.quantile(rates, 0.9)), float(rates.max()), dispersion


def _standardised(
    s: NDArray[np.float64], m: NDArray[np.bool_], fpc: float, direction: str
) -> tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.int64]]:
    """The post-processed scores of every pair, where they are defined, and the OUT counts behind them.

    ``"known"``: leave-one-out statistics of all the other models, sign +1.  ``"split"``: model j's pairs from the
    models of its own parity (leave-one-out), the sign from those of the other parity (see
    :func:`calibration_report`).
    """
    if direction == "known":
        stats = loo_statistics(s, m, fpc=fpc)
        return standardise(s, stats.mu_out, stats.sigma_out, valid=stats.valid), stats.valid, stats.n_out
    z = np.full(s.shape, np.nan)
    valid = np.zeros(s.shape, dtype=bool)
    n_out = np.zeros(s.shape, dtype=np.int64)
    parity = np.arange(s.shape[0]) % 2
    for g in (0, 1):
        rows, others = parity == g, parity != g
        if rows.sum() < 2:
            continue  # one model of this parity: no shadow of its own parity to standardise it with
        stats = loo_statistics(s[rows], m[rows], fpc=fpc)
        so, mo = s[others], m[others]
        with np.errstate(divide="ignore", invalid="ignore"):
            delta = (so * mo).sum(axis=0) / mo.sum(axis=0) - (so * ~mo).sum(axis=0) / (~mo).sum(axis=0)
        z[rows] = standardise(s[rows], stats.mu_out, stats.sigma_out, delta[None, :], valid=stats.valid)
        valid[rows], n_out[rows] = stats.valid, stats.n_out
    return z, valid, n_out


#: the most weights one block of bootstrap replicates holds (replicates × samples, at most 64 replicates): 32 MB
_BOOT_BLOCK_ELEMENTS = 1 << 22


class _NaiveBootstrap:
    """Re-selects the naive global threshold in a bootstrap replicate that weights column x by w[x].

    The OUT pairs are sorted once, descending; a replicate's threshold is its weighted (k + 1)-th largest OUT score,
    found from the weighted running count over the shortest prefix that reaches it.
    """

    def __init__(self, s: NDArray[np.float64], m: NDArray[np.bool_], alphas: NDArray[np.float64]) -> None:
        cols = np.broadcast_to(np.arange(s.shape[1]), s.shape)
        out_v, out_c = s[~m], cols[~m]
        order = np.argsort(-out_v, kind="stable")
        self.out_desc, self.out_col = out_v[order], out_c[order]
        neg = -self.out_desc
        self.tie_start = np.searchsorted(neg, neg, side="left")
        in_v, in_c = s[m], cols[m]
        order = np.argsort(-in_v, kind="stable")
        self.neg_in_desc, self.in_col = -in_v[order], in_c[order]
        self.n_out_col = (~m).sum(axis=0)
        self.n_in_col = m.sum(axis=0)
        self.alphas = alphas
        # the prefix a replicate needs is about α n₀ OUT pairs, give or take a few hundred (a sample's OUT pairs
        # share its weight); a replicate that needs more doubles it, so the length never changes a result
        self.prefix = min(self.out_desc.size, int(1.25 * alphas.max() * self.out_desc.size) + 256)

    def __call__(self, w: NDArray[np.int64], n0: int, n1: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The naive TPR and realised FPR at each α of the replicate weighted by ``w``, whose weighted OUT and IN
        pair counts are ``n0`` and ``n1``."""
        if n0 == 0 or n1 == 0:
            nan = np.full(self.alphas.size, np.nan)
            return nan, nan
        k = _n_allowed(self.alphas, n0)
        length = self.prefix
        while True:
            cw = np.cumsum(w[self.out_col[:length]])
            if cw[-1] > k.max() or length == self.out_desc.size:
                break
            length = min(2 * length, self.out_desc.size)
        self.prefix = max(self.prefix, length)
        pos = np.searchsorted(cw, k, side="right")
        tau = self.out_desc[pos]
        start = self.tie_start[pos]
        fp = np.where(start > 0, cw[np.maximum(start - 1, 0)], 0)
        above = np.searchsorted(self.neg_in_desc, -tau, side="left")
        cwi = np.concatenate([[0], np.cumsum(w[self.in_col[: above.max()]])])
        return cwi[above] / n1, fp / n0


def calibration_report(
    scores: ArrayLike,
    member: ArrayLike,
    *,
    fprs: Sequence[float] = DEFAULT_FPRS,
    fpc: float = 1.0,
    confidence: float = 0.95,
    n_boot: int = 1000,
    rng: np.random.Generator | None = None,
    direction: str = "known",
    require_pp: bool = True,
) -> CalibrationReport:
    """Naive concatenated, post-processed concatenated and mean per-sample TPR at each FPR, with realised FPRs.

    For each nominal FPR α:

    - **naive** — all (j, x) raw scores pooled, one global threshold τ: the one whose realised FPR over all OUT
      pairs is the largest ≤ α (τ = the (⌊α n₀⌋ + 1)-th largest OUT score, "member" iff score > τ); a block of tied
      OUT scores is flagged all or none, so the realised FPR can lie below α.  TPR over all IN pairs.
    - **pp** — each standardisable pair's score transformed by :func:`standardise` with the leave-one-out
      statistics of the other models (:func:`loo_statistics`), all pooled, threshold Φ⁻¹(1 − α); TPR over the IN
      pairs, realised FPR over the OUT pairs.  The sign of each sample's transform follows ``direction``.
      **pp_t** — the same with each pair's Student-t threshold
      :func:`student_t_threshold` (α, its ``n_out``).
    - **per_sample** — per sample x, the threshold on its own column ``s[:, x]`` chosen like the naive one among its
      OUT models; TPR_x among its IN models; the mean of TPR_x over samples (with an OUT and an IN model), and the
      mean per-sample realised FPR.  The per-sample FPR is a multiple of 1/n_out,x: the paper asks M ≥ 10/α for a
      reliable per-sample estimate (``models_needed``; see ``n_out_per_sample``).

    Parameters
    ----------
    scores : array-like of shape (M, N)
        ``scores[j, x]``: model j's score for sample x, higher = member; finite; M ≥ 2.
    member : array-like of bool of shape (M, N)
        Whether x was in model j's training set (booleans, or integers 0/1).
    fprs : sequence of float, default=DEFAULT_FPRS
        The nominal FPRs, each in (0, 1), distinct.
    fpc : float, default=1.0
        The finite population correction that divides the leave-one-out variances, in (0, 1].
    confidence : float, default=0.95
        Of the bootstrap intervals, in (0, 1).
    n_boot : int, default=1000
        Bootstrap replicates, ≥ 0; 0 skips the intervals (they are then NaN).
    rng : numpy.random.Generator or None, default=None
        Draws, for each replicate in turn, the N resampled column indices (``rng.integers(0, N, size=N)``).
        Needed only when ``n_boot > 0``.
    direction : {"known", "split"}, default="known"
        The sign of the post-processing f_x.  ``"known"``: +1 for every sample, the scores' own convention
        (higher = member; LiRA's statistic has a known direction).  ``"split"``: sign(Δ̂_x) estimated from the
        models of the other parity: model j's pairs are standardised with the leave-one-out OUT statistics of the
        models k ≠ j with k ≡ j (mod 2), and their sign is that of μ̂_in − μ̂_out over the models k ≢ j (mod 2),
        so that the sign is independent of the statistics the threshold uses (about half the OUT shadows each).
        Never the same shadows for both: that selection raises the realised FPR of samples that do not leak.
    require_pp : bool, default=True
        Refuse scores without a standardisable IN and OUT pair.  ``False``: report them, the post-processed rates
        NaN (an attack whose every score on a sample is the same, such as RMIA scoring 0 everywhere when no
        likelihood ratio reaches γ, still has its naive and per-sample numbers).

    Returns
    -------
    CalibrationReport
        The table (one row per FPR) and the counts; :meth:`CalibrationReport.flat` gives the flat dict.

    Raises
    ------
    ValueError
        As :func:`loo_statistics`; for an FPR outside (0, 1) or repeated, ``confidence`` outside (0, 1),
        ``n_boot < 0``, an unknown ``direction``; when there is no OUT or no IN pair, or (``require_pp``) no
        standardisable OUT or IN pair (e.g. M ≤ 3, or M ≤ 5 with ``direction="split"``).
    TypeError
        For inputs of the wrong type, and if ``rng`` is not a ``numpy.random.Generator`` (or None with
        ``n_boot = 0``).

    Warns
    -----
    UserWarning
        When ``0 < n_boot · ρ / 2 < 1`` (ρ = 1 − confidence): too few replicates for the tail quantiles.

    Notes
    -----
    Guarantee: if each sample's OUT scores are Gaussian and the models are independent, every sample's expected FPR
    under the pp_t threshold is exactly α (see :func:`student_t_threshold`), whether the sample leaks or not, with
    either ``direction`` (the sign is fixed, or independent of the target's score and of the shadows that
    standardise it); under the pp threshold it is above α and tends to α as n_out grows; the naive threshold
    promises nothing per sample.  The bootstrap resamples samples (columns),
    because the pairs of one sample share its distribution and its shadow estimates; the percentile interval
    (Efron & Tibshirani) is asymptotic in N, re-selects every threshold in each replicate, and treats the M models
    as fixed.

    References
    ----------
    The LiRA calibration paper (SPEC §5): the three aggregates, f_x, the Student-t threshold and M ≥ 10/FPR;
    Carlini et al. 2022, arXiv:2112.03570; Efron & Tibshirani 1993, ch. 13.

    Examples
    --------
    >>> report = calibration_report([[1.0, 2.0], [2.0, 3.0], [3.0, 5.0], [6.0, 1.0]],
    ...                             [[0, 1], [0, 0], [0, 1], [1, 0]], fprs=[0.5], n_boot=0,
    ...                             rng=np.random.default_rng(0))
    >>> row = report.table.iloc[0]
    >>> [round(float(row[c]), 4) for c in ("tpr_naive", "fpr_naive", "tpr_pp", "fpr_pp", "fpr_per_sample")]
    [0.6667, 0.4, 0.6667, 0.3333, 0.4167]
    """
    s, m = check_score_matrix(scores, member)
    alphas = np.asarray(_check_fprs(fprs))
    correction = _check_fpc(fpc)
    rho = 1.0 - check_confidence(confidence)
    n_boot = check_int("n_boot", n_boot, low=0)
    generator = _check_rng(rng) if n_boot > 0 or rng is not None else None
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {', '.join(DIRECTIONS)}, got {direction!r}.")
    n_models, n_samples = s.shape
    out = ~m
    n_out_pairs, n_in_pairs = int(out.sum()), int(m.sum())
    if n_out_pairs == 0 or n_in_pairs == 0:
        missing = "OUT (member False)" if n_out_pairs == 0 else "IN (member True)"
        raise ValueError(f"member must contain both IN and OUT pairs, got no {missing} pair among {s.size}.")
    if 0 < n_boot and n_boot * rho / 2.0 < 1.0:
        warnings.warn(
            f"n_boot = {n_boot} replicates are too few for the {rho / 2:g} and {1 - rho / 2:g} quantiles "
            f"(need n_boot >= {math.ceil(2.0 / rho)}); the intervals are unreliable.",
            stacklevel=2,
        )

    # naive: one threshold on the pooled raw scores
    out_sorted, in_sorted = np.sort(s[out]), np.sort(s[m])
    tau = _empirical_threshold(out_sorted, alphas)
    tpr_naive = _count_above(in_sorted, tau) / n_in_pairs
    fpr_naive = _count_above(out_sorted, tau) / n_out_pairs
    n_out_col, n_in_col = out.sum(axis=0), m.sum(axis=0)
    naive_fp_col = np.stack([(out & (s > t)).sum(axis=0) for t in tau])

    # post-processed: standardised with the leave-one-out OUT statistics of the other models
    z, valid, n_out_pair = _standardised(s, m, correction, direction)
    pp_out, pp_in = valid & out, valid & m
    n_pp_out_col, n_pp_in_col = pp_out.sum(axis=0), pp_in.sum(axis=0)
    n_pp_out, n_pp_in = int(n_pp_out_col.sum()), int(n_pp_in_col.sum())
    if require_pp and (n_pp_out == 0 or n_pp_in == 0):
        kind = "OUT" if n_pp_out == 0 else "IN"
        raise ValueError(
            f"scores must have at least one standardisable {kind} pair (one whose sample has >= 2 other OUT models "
            f"with distinct scores), got none among {s.size} pairs of {n_models} models."
        )
    z0 = np.where(valid, z, -np.inf)
    n_loo = np.where(valid, n_out_pair, 2)
    t_pp = np.array([normal_threshold(float(a)) for a in alphas])
    pp_fp_col = np.stack([(pp_out & (z0 > t)).sum(axis=0) for t in t_pp])
    pp_tp_col = np.stack([(pp_in & (z0 > t)).sum(axis=0) for t in t_pp])
    t_t = [student_t_threshold(float(a), n_loo) for a in alphas]
    ppt_fp_col = np.stack([(pp_out & (z0 > t)).sum(axis=0) for t in t_t])
    ppt_tp_col = np.stack([(pp_in & (z0 > t)).sum(axis=0) for t in t_t])

    # per sample: a threshold on each column among its own OUT models
    eligible = (n_out_col > 0) & (n_in_col > 0)
    n_eligible = int(eligible.sum())  # ≥ 1: a standardisable IN pair's sample has OUT models too
    column_sorted = np.sort(np.where(out, s, np.inf), axis=0)  # each column's OUT scores first, ascending
    k_col = _n_allowed(alphas[:, None], n_out_col[None, :])
    row = np.clip(n_out_col[None, :] - 1 - k_col, 0, n_models - 1)
    tau_col = np.where(k_col >= n_out_col, -np.inf, np.take_along_axis(column_sorted, row, axis=0))
    ps_fp = np.stack([(out & (s > t)).sum(axis=0) for t in tau_col])
    ps_tp = np.stack([(m & (s > t)).sum(axis=0) for t in tau_col])
    with np.errstate(divide="ignore", invalid="ignore"):
        ps_fpr = np.where(eligible, ps_fp / n_out_col, 0.0)
        # a new OUT draw exceeds the (k+1)-th largest of n exchangeable OUT scores with probability (k+1)/(n+1):
        # the per-sample threshold's expected FPR, above its in-sample FPR k/n (0 when n < 1/α: the largest score)
        ps_expected = np.where(eligible & (k_col < n_out_col), (k_col + 1) / (n_out_col + 1), 1.0)
        ps_expected = np.where(eligible, ps_expected, 0.0)
        ps_tpr = np.where(eligible, ps_tp / n_in_col, 0.0)

    # every count is an integer, so one float64 product gives a block of weightings' counts exactly (whatever the
    # order of its sums: they stay far below 2**53); the per-sample means are floats, one weighting at a time
    a = alphas.size
    counts = (pp_tp_col, pp_fp_col, ppt_tp_col, ppt_fp_col, n_pp_in_col, n_pp_out_col, eligible)
    counted = np.vstack(counts).T.astype(np.float64)

    def rates(weights: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
        """Every column-additive rate of the columns weighted by each row of ``weights`` (b, N), as (b, len(α))
        arrays (a row of ones: the data itself)."""
        sums = weights @ counted
        tp, fp, tp_t, fp_t = (sums[:, i * a : (i + 1) * a] for i in range(4))
        n_in, n_out, weight_eligible = (column[:, None] for column in sums[:, 4 * a :].T)
        per_sample = np.array([[p @ row for p in (ps_tpr, ps_fpr, ps_expected)] for row in weights])
        with np.errstate(divide="ignore", invalid="ignore"):
            return {
                "tpr_pp": tp / n_in,
                "fpr_pp": fp / n_out,
                "tpr_pp_t": tp_t / n_in,
                "fpr_pp_t": fp_t / n_out,
                "tpr_per_sample": per_sample[:, 0] / weight_eligible,
                "fpr_per_sample": per_sample[:, 1] / weight_eligible,
                "fpr_per_sample_expected": per_sample[:, 2] / weight_eligible,
            }

    point = {"tpr_naive": tpr_naive, "fpr_naive": fpr_naive}
    point.update({name: value[0] for name, value in rates(np.ones((1, n_samples))).items()})
    intervals: dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]] = {}
    if n_boot > 0 and generator is not None:  # (a generator is required when n_boot > 0)
        naive = _NaiveBootstrap(s, m, alphas)
        replicates = {name: np.empty((n_boot, a)) for name in point}
        block = max(1, min(64, _BOOT_BLOCK_ELEMENTS // n_samples))
        for first in range(0, n_boot, block):
            w = np.stack(  # the replicates' weights, drawn in turn as one at a time would draw them
                [
                    np.bincount(generator.integers(0, n_samples, size=n_samples), minlength=n_samples)
                    for _ in range(min(block, n_boot - first))
                ]
            )
            done = slice(first, first + w.shape[0])
            for name, value in rates(w.astype(np.float64)).items():
                replicates[name][done] = value
            for j, (n0, n1) in enumerate(zip(w @ naive.n_out_col, w @ naive.n_in_col, strict=True)):
                replicates["tpr_naive"][first + j], replicates["fpr_naive"][first + j] = naive(w[j], int(n0), int(n1))
        for name, stacked in replicates.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: no replicate defined the rate
                low, high = np.nanquantile(stacked, [rho / 2.0, 1.0 - rho / 2.0], axis=0)
            intervals[name] = (low, high)
    nan = np.full(alphas.size, np.nan)

    rows = []
    for i, alpha in enumerate(alphas):
        entry: dict[str, float] = {"fpr": float(alpha), "models_needed": float(math.ceil(10.0 / alpha - 1e-9))}
        for name, value in point.items():
            low, high = intervals.get(name, (nan, nan))
            entry[name] = float(value[i])
            entry[f"{name}_low"] = float(low[i])
            entry[f"{name}_high"] = float(high[i])
        entry["threshold_naive"] = float(tau[i])
        entry["threshold_pp"] = float(t_pp[i])
        for prefix, fp_col, n_col in (("naive", naive_fp_col[i], n_out_col), ("pp", pp_fp_col[i], n_pp_out_col)):
            mean, p90, worst, dispersion = _spread(fp_col, n_col)
            entry[f"{prefix}_sample_fpr_mean"] = mean
            entry[f"{prefix}_sample_fpr_p90"] = p90
            entry[f"{prefix}_sample_fpr_max"] = worst
            entry[f"{prefix}_sample_fpr_dispersion"] = dispersion
        rows.append(entry)
    table = pd.DataFrame(rows).astype({"models_needed": int})

    return CalibrationReport(
        table=table,
        n_models=n_models,
        n_samples=n_samples,
        n_out_pairs=n_out_pairs,
        n_in_pairs=n_in_pairs,
        n_pp_out_pairs=n_pp_out,
        n_pp_in_pairs=n_pp_in,
        n_dropped_pairs=int((~valid).sum()),
        n_dropped_samples=int((~valid.any(axis=0)).sum()),
        n_per_sample_samples=n_eligible,
        n_per_sample_dropped=n_samples - n_eligible,
        n_out_per_sample=n_out_col.astype(np.int64),
        fpc=correction,
        confidence=1.0 - rho,
        n_boot=n_boot,
    )


# ------------------------------------------------------------------------------------------------------ normality


@dataclass(frozen=True, slots=True, eq=False)
class NormalityReport:
    """Shapiro–Wilk tests of each sample's OUT scores (see :func:`out_normality`).

    Attributes
    ----------
    sample : ndarray of int of shape (n_tested,)
        The tested samples (columns), ascending.
    p_value : ndarray of float of shape (n_tested,)
        Their Shapiro–Wilk p-values; small = the Gaussian assumption fails for that sample.
    n_tested : int
        Samples with at least 3 OUT scores, not all equal.
    n_untested : int
        The others (fewer than 3 OUT scores, or all equal).
    median_p : float
        The median p-value (NaN when nothing was tested).
    share_below_0_05, share_below_0_01 : float
        The shares of tested samples with p < 0.05 and p < 0.01 (about 0.05 and 0.01 when every sample is Gaussian;
        NaN when nothing was tested).
    """

    sample: NDArray[np.int64]
    p_value: NDArray[np.float64]
    n_tested: int
    n_untested: int
    median_p: float
    share_below_0_05: float
    share_below_0_01: float


def out_normality(scores: ArrayLike, member: ArrayLike) -> NormalityReport:
    """Per sample, the Shapiro–Wilk test of normality of its OUT scores ``s[k, x]`` (``member[k, x]`` False).

    The post-processing and both thresholds assume each sample's OUT scores are Gaussian; this shows for which
    samples (and how many) that fails.

    Parameters
    ----------
    scores : array-like of shape (M, N)
    member : array-like of bool of shape (M, N)
        As for :func:`loo_statistics`.

    Returns
    -------
    NormalityReport

    Raises
    ------
    ValueError, TypeError
        As :func:`loo_statistics`.

    Notes
    -----
    Samples with fewer than 3 OUT scores (the test's minimum) or with all OUT scores equal are not tested and are
    counted in ``n_untested``.  With n_out OUT scores the test has little power against mild departures (e.g. heavy
    tails at n_out ≈ 10): a large p-value does not prove normality, a small share of small p-values only says that
    departures are not gross.  The p-values are not corrected for multiplicity.

    References
    ----------
    Shapiro & Wilk 1965; ``scipy.stats.shapiro``; the LiRA calibration paper (SPEC §5), the Gaussian assumption.

    Examples
    --------
    >>> result = out_normality([[0.1, 1.0], [0.5, 0.0], [0.2, 1.0], [0.9, 1.0]], [[0, 0], [0, 1], [0, 0], [0, 0]])
    >>> result.sample.tolist(), result.n_untested
    ([0], 1)
    """
    s, m = check_score_matrix(scores, member)
    out = ~m
    counts = out.sum(axis=0)
    low = np.where(out, s, np.inf).min(axis=0)
    high = np.where(out, s, -np.inf).max(axis=0)
    testable = (counts >= 3) & (high > low)
    tested = np.flatnonzero(testable)
    p = np.empty(tested.shape[0], dtype=np.float64)
    # the samples with the same number of OUT scores in one call (each sample's test as alone, ~6x faster than
    # a call per sample): their OUT scores in row order, one row per sample
    for n in np.unique(counts[tested]):
        where = np.flatnonzero(counts[tested] == n)
        columns = tested[where]
        values = s[:, columns].T[out[:, columns].T].reshape(columns.shape[0], int(n))
        p[where] = _shapiro_p_values(values)
    has = p.size > 0
    return NormalityReport(
        sample=np.asarray(tested, dtype=np.int64),
        p_value=p,
        n_tested=int(p.size),
        n_untested=int(s.shape[1] - p.size),
        median_p=float(np.median(p)) if has else math.nan,
        share_below_0_05=float(np.mean(p < 0.05)) if has else math.nan,
        share_below_0_01=float(np.mean(p < 0.01)) if has else math.nan,
    )


def _shapiro_p_values(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """``scipy.stats.shapiro(values, axis=1).pvalue``: each row's Shapiro–Wilk p-value, bit for bit.

    The rows share their length n, so their coefficients are computed once, by scipy's own routine (the Cython
    translation of Royston's AS R94 that ``shapiro`` calls, given each row as ``shapiro`` prepares it: sorted, less
    its unsorted middle element); about 5× faster than ``shapiro``'s per-row dispatch, which was a sixth of a LiRA
    trial's analysis.  Where that routine is not where scipy 1.17 keeps it, or n > 5000 (where ``shapiro`` warns
    that its p-value may be inaccurate), ``shapiro`` itself.
    """
    from scipy import stats

    n = values.shape[1]
    try:
        from scipy.stats._ansari_swilk_statistics import swilk
    except ImportError:
        swilk = None
    if swilk is None or n > 5000:
        return np.asarray(stats.shapiro(values, axis=1).pvalue, dtype=np.float64)
    coefficients = np.zeros(n // 2, dtype=np.float64)
    prepared = np.sort(values, axis=1) - values[:, n // 2, None]
    p = np.empty(values.shape[0], dtype=np.float64)
    for i, row in enumerate(prepared):
        p[i] = swilk(row, coefficients, i > 0)[1]  # the coefficients are computed by the first call
    return p


# --------------------------------------------------------------------------------------------------- AUC and ROC


def _flat_pairs(scores: ArrayLike, member: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    s = np.asarray(scores)
    m = np.asarray(member)
    if m.shape != s.shape:
        raise ValueError(f"member must have the shape of scores {s.shape}, got shape {m.shape}.")
    if not (np.issubdtype(s.dtype, np.integer) or np.issubdtype(s.dtype, np.floating)):
        raise TypeError(f"scores must hold real numbers, got dtype {s.dtype}.")
    flat = s.astype(np.float64).ravel()
    if not np.all(np.isfinite(flat)):
        raise ValueError(f"scores must be finite, got {float(flat[~np.isfinite(flat)][0])!r}.")
    labels = check_member_matrix(m).ravel()
    n_in = int(labels.sum())
    if n_in == 0 or n_in == labels.size:
        missing = "IN (member True)" if n_in == 0 else "OUT (member False)"
        raise ValueError(f"member must contain both IN and OUT pairs, got no {missing} pair among {labels.size}.")
    return flat, labels


def pooled_auc(scores: ArrayLike, member: ArrayLike) -> float:
    """ROC AUC of all pairs' scores pooled (ties counted 1/2), the threshold-free summary of concatenation.

    Parameters
    ----------
    scores : array-like
        Any shape: the raw (M, N) matrix, or e.g. standardised scores ``z[valid]``; finite.
    member : array-like of bool
        The same shape.

    Returns
    -------
    float
        In [0, 1].

    Raises
    ------
    ValueError
        If the shapes differ, a score is not finite, ``member`` holds a value other than 0/1, or one class is
        absent.
    TypeError
        For a non-real ``scores`` or a non-boolean, non-integer ``member``.

    References
    ----------
    :func:`privgame.analysis.record_risk.auc` (Mann–Whitney); the LiRA calibration paper (SPEC §5).

    Examples
    --------
    >>> pooled_auc([[0.9, 0.1], [0.8, 0.8]], [[1, 0], [1, 0]])
    0.875
    """
    flat, labels = _flat_pairs(scores, member)
    return auc(flat, labels)


def pooled_roc(
    scores: ArrayLike, member: ArrayLike, *, fprs: ArrayLike | None = None
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """TPR of the pooled scores on a grid of FPRs (for a log–log ROC figure), with the realised FPRs.

    At each grid value α the threshold is chosen as in the naive evaluation of :func:`calibration_report`: the
    largest realised FPR ≤ α over the pooled OUT pairs ("member" iff score > τ); at α = 1 everyone is flagged.

    Parameters
    ----------
    scores : array-like
        Any shape (e.g. the raw (M, N) matrix, or ``z[valid]``); finite.
    member : array-like of bool
        The same shape.
    fprs : array-like of float or None, default=None
        The grid, each in (0, 1]; None: 81 log-spaced values from 1e-4 to 1.

    Returns
    -------
    fpr, tpr, realised_fpr : ndarray of float of shape (n_grid,)
        The grid, the TPR at each grid value and the FPR realised there (≤ the grid value; 0 is possible, so plot
        the TPR against the grid on log axes).

    Raises
    ------
    ValueError
        As :func:`pooled_auc`, and for a grid value outside (0, 1] or an empty grid.

    Examples
    --------
    >>> fpr, tpr, realised = pooled_roc([[0.9, 0.1], [0.8, 0.7]], [[1, 0], [1, 0]], fprs=[0.5, 1.0])
    >>> tpr.tolist(), realised.tolist()
    ([1.0, 1.0], [0.5, 1.0])
    """
    flat, labels = _flat_pairs(scores, member)
    if fprs is None:
        grid = np.logspace(-4.0, 0.0, 81)
    else:
        grid = np.asarray(fprs, dtype=np.float64).ravel()
        if grid.size == 0:
            raise ValueError(f"fprs must be a non-empty grid of values in (0, 1], got {fprs!r}.")
        bad = ~((grid > 0) & (grid <= 1))
        if bad.any():
            raise ValueError(f"fprs must lie in (0, 1], got {float(grid[bad][0])!r}.")
    out_sorted, in_sorted = np.sort(flat[~labels]), np.sort(flat[labels])
    tau = _empirical_threshold(out_sorted, grid)
    tpr = _count_above(in_sorted, tau) / in_sorted.size
    realised = _count_above(out_sorted, tau) / out_sorted.size
    return grid, tpr.astype(np.float64), realised.astype(np.float64)
