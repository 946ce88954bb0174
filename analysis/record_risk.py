"""Per-record privacy risk: the AUC or accuracy of an attack on one target record, and comparisons across games.

In the record-level games of Krčo et al. [1]_ (SPEC §4) an attack plays N rounds against one target record; in each
round the target is in the training data or not (the label) and the attack outputs a score (higher = member) or a
guess.  The record's risk is the attack's ROC AUC (or accuracy) over those rounds.  Played once in the traditional
game (a fresh dataset each round) and once in the model-seeded game (the released dataset fixed, only the training
seed changes), the two risks of many records are compared by

- the miss rate ``MR(t)``: among the records whose model-seeded risk is ≥ t, the fraction whose traditional risk is
  < t, i.e. the high-risk records that the traditional game overlooks;
- the RMSD between the two risk vectors.

Intervals: :func:`auc_interval` is a stratified percentile bootstrap [3]_ (asymptotic); :func:`accuracy_interval` is
Hoeffding's [2]_ (finite-sample, distribution-free).

This module imports nothing from ``games``, ``mechanisms`` or ``attacks``.

References
----------
.. [1] N. Krčo, F. Guépin, M. Meeus, B. Kulynych, Y.-A. de Montjoye. Lost in the Averages: Reassessing
   Record-Specific Privacy Risk Evaluation. DPM workshop at ESORICS 2025, arXiv:2405.15423 (Definitions 2 and 3,
   Propositions 1 and 2, the miss rate and the RMSD).
.. [2] W. Hoeffding. Probability Inequalities for Sums of Bounded Random Variables. Journal of the American
   Statistical Association 58(301), 1963.
.. [3] B. Efron, R. J. Tibshirani. An Introduction to the Bootstrap. Chapman & Hall, 1993 (ch. 13, the percentile
   interval).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from privgame.analysis._checks import (
    check_confidence,
    check_int,
    check_membership,
    check_real,
    check_score_matrix,
    check_scores,
)
from privgame.analysis._figures import check_suffix, new_axes, root_figure, save

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "MISS_RATE_THRESHOLDS",
    "accuracy_interval",
    "auc",
    "auc_difference_interval",
    "auc_interval",
    "column_tpr_at_fpr",
    "figure_risk_scatter",
    "miss_rate",
    "miss_rate_table",
    "plot_risk_scatter",
    "rmsd",
    "tpr_at_fpr",
]

MISS_RATE_THRESHOLDS: tuple[float, ...] = (0.6, 0.7, 0.8, 0.9)
"""The risk thresholds t at which Krčo et al. report the miss rate (0.8 is their headline figure)."""

_GAMES = ("traditional", "model-seeded")
_SELECTION_STYLE = {"achilles": ("^", "tab:red"), "random": ("o", "tab:blue")}
_OTHER_STYLES = [("s", "tab:green"), ("D", "tab:purple"), ("v", "tab:orange"), ("P", "tab:brown"), ("X", "tab:pink")]


# ---------------------------------------------------------------------------------------------------- input checks


def _scores_and_labels(scores: ArrayLike, labels: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    s = check_scores("scores", scores)
    y = check_membership("labels", labels)
    if y.shape[0] != s.shape[0]:
        raise ValueError(f"scores and labels must have the same length, got {s.shape[0]} and {y.shape[0]}.")
    n_members = int(y.sum())
    if n_members == 0 or n_members == y.shape[0]:
        missing = "members (label 1)" if n_members == 0 else "non-members (label 0)"
        raise ValueError(f"labels must contain both members and non-members, got no {missing} among {y.shape[0]}.")
    return s, y


def _risk_pair(a: ArrayLike, b: ArrayLike, names: tuple[str, str]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    x = check_scores(names[0], a)
    y = check_scores(names[1], b)
    if x.shape != y.shape:
        raise ValueError(f"{names[0]} and {names[1]} must have the same length, got {x.shape[0]} and {y.shape[0]}.")
    if x.size == 0:
        raise ValueError(f"{names[0]} and {names[1]} must be non-empty, got length 0.")
    return x, y


# ------------------------------------------------------------------------------------------------------------- AUC


def _wins(pos: NDArray[np.float64], neg_sorted: NDArray[np.float64]) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """For each member score, the number of non-members strictly below it and the number below or equal."""
    return np.searchsorted(neg_sorted, pos, side="left"), np.searchsorted(neg_sorted, pos, side="right")


def auc(scores: ArrayLike, labels: ArrayLike) -> float:
    """ROC AUC of ``scores`` for the binary ``labels``, ties counted 1/2 (the Mann–Whitney form).

    ``AUC = (1 / (n₁ n₀)) Σ_{i member} Σ_{j non-member} ([s_i > s_j] + ½ [s_i = s_j])``: the probability that a
    random member scores above a random non-member.

    Parameters
    ----------
    scores : array-like of shape (n,)
        The attack's score in each round, higher = member; finite.
    labels : array-like of shape (n,)
        1 (or True) where the target was in the training data, 0 (False) where not.

    Returns
    -------
    float
        In [0, 1]; 0.5 for an attack that cannot tell (e.g. constant scores).

    Raises
    ------
    ValueError
        If the lengths differ, a score is not finite, a label is not 0/1, or one class is absent.
    TypeError
        If ``scores`` does not hold real numbers.

    References
    ----------
    Krčo et al. 2025, arXiv:2405.15423 (the per-record risk); H. B. Mann, D. R. Whitney, Ann. Math. Statist. 1947.

    Examples
    --------
    >>> auc([0.9, 0.8, 0.1, 0.8], [1, 1, 0, 0])
    0.875
    """
    s, y = _scores_and_labels(scores, labels)
    pos, neg = s[y], np.sort(s[~y])
    below, upto = _wins(pos, neg)
    return float((below.sum() + upto.sum()) / (2.0 * pos.size * neg.size))


def auc_interval(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    confidence: float = 0.95,
    n_boot: int = 1000,
    rng: np.random.Generator,
) -> tuple[float, float, float]:
    """The AUC and a stratified percentile-bootstrap confidence interval for it.

    Each of the ``n_boot`` replicates resamples the members and the non-members separately, each with replacement
    and at its own size, and computes the Mann–Whitney AUC of the resample; the interval is the ``ρ/2`` and
    ``1 − ρ/2`` quantiles of the replicates (ρ = 1 − confidence; numpy's default linear interpolation).

    Parameters
    ----------
    scores : array-like of shape (n,)
    labels : array-like of shape (n,)
        As for :func:`auc`.
    confidence : float, default=0.95
        In (0, 1).
    n_boot : int, default=1000
        Bootstrap replicates, ≥ 1.
    rng : numpy.random.Generator
        Draws, in this order, an ``(n_boot, n₁)`` matrix of member indices and an ``(n_boot, n₀)`` matrix of
        non-member indices (``rng.integers``), indices into the members and the non-members in their input order.

    Returns
    -------
    auc, low, high : float
        The AUC of the data (not of the replicates) and the interval's ends.

    Raises
    ------
    ValueError
        As :func:`auc`, and for ``confidence`` outside (0, 1) or ``n_boot < 1``.
    TypeError
        If ``rng`` is not a ``numpy.random.Generator`` or ``n_boot`` not an integer.

    Warns
    -----
    UserWarning
        When ``n_boot · ρ / 2 < 1``: too few replicates to estimate the tail quantiles.

    Notes
    -----
    Guarantee: asymptotic only — as both class sizes grow, the interval covers the true AUC with probability tending
    to ``confidence`` (the AUC is a smooth two-sample U-statistic); there is no finite-sample guarantee, and the
    interval collapses to a point when the data are perfectly separated (AUC 0 or 1), where it should not be trusted.
    Use :func:`accuracy_interval` when a finite-sample guarantee is needed.

    The replicates are computed without sorting each one: the non-members are sorted once, each replicate's
    non-member counts are accumulated in that order, and each resampled member looks up how many resampled
    non-members lie below (and at) its score.  Time and memory are O(n_boot · n).

    References
    ----------
    B. Efron, R. J. Tibshirani. An Introduction to the Bootstrap, 1993, ch. 13 (percentile interval); stratified
    resampling as in the two-sample bootstrap, ch. 8.  Krčo et al. 2025, arXiv:2405.15423 (bootstrap for the AUC).
    """
    s, y = _scores_and_labels(scores, labels)
    rho, n_boot = _bootstrap_settings(confidence, n_boot, rng)
    pos, neg = s[y], s[~y]
    idx_pos = rng.integers(0, pos.size, size=(n_boot, pos.size))
    idx_neg = rng.integers(0, neg.size, size=(n_boot, neg.size))
    point, replicates = _replicate_aucs(pos, neg, idx_pos, idx_neg)
    low, high = np.quantile(replicates, [rho / 2.0, 1.0 - rho / 2.0])
    return point, float(low), float(high)


def _bootstrap_settings(confidence: float, n_boot: int, rng: Any) -> tuple[float, int]:
    """ρ = 1 − ``confidence`` and ``n_boot``, checked, with a warning when ``n_boot · ρ / 2 < 1`` (too few replicates
    for the tail quantiles): the AUC intervals' shared settings."""
    rho = 1.0 - check_confidence(confidence)
    n_boot = check_int("n_boot", n_boot, low=1)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {rng!r}.")
    if n_boot * rho / 2.0 < 1.0:
        warnings.warn(
            f"n_boot = {n_boot} replicates are too few for the {rho / 2:g} and {1 - rho / 2:g} quantiles "
            f"(need n_boot >= {math.ceil(2.0 / rho)}); the interval is unreliable.",
            stacklevel=3,
        )
    return rho, n_boot


def _replicate_aucs(
    pos: NDArray[np.float64], neg: NDArray[np.float64], idx_pos: NDArray[np.intp], idx_neg: NDArray[np.intp]
) -> tuple[float, NDArray[np.float64]]:
    """The AUC of the members ``pos`` against the non-members ``neg``, and of each bootstrap replicate (row) of the
    index matrices ``idx_pos`` (n_boot, n₁) and ``idx_neg`` (n_boot, n₀), without sorting each replicate."""
    n_boot, n1 = idx_pos.shape
    n0 = neg.size
    order = np.argsort(neg, kind="stable")
    neg_sorted = neg[order]
    rank_of = np.empty(n0, dtype=np.intp)
    rank_of[order] = np.arange(n0)
    below, upto = _wins(pos, neg_sorted)
    # counts[b, r]: how often the non-member of sorted rank r was drawn in replicate b; cum[b, r] = Σ_{r' < r}.
    flat = (rank_of[idx_neg] + (np.arange(n_boot) * n0)[:, None]).ravel()
    counts = np.bincount(flat, minlength=n_boot * n0).reshape(n_boot, n0)
    cum = np.zeros((n_boot, n0 + 1), dtype=np.int64)
    np.cumsum(counts, axis=1, out=cum[:, 1:])
    twice_wins = np.take_along_axis(cum, below[idx_pos], axis=1) + np.take_along_axis(cum, upto[idx_pos], axis=1)
    replicates = twice_wins.sum(axis=1) / (2.0 * n1 * n0)
    return float((below.sum() + upto.sum()) / (2.0 * n1 * n0)), replicates


def auc_difference_interval(
    scores_a: ArrayLike,
    scores_b: ArrayLike,
    labels: ArrayLike,
    *,
    confidence: float = 0.95,
    n_boot: int = 1000,
    rng: np.random.Generator,
) -> tuple[float, float, float]:
    """The difference AUC(a) − AUC(b) of two attacks scored on the SAME rounds, with a paired stratified
    percentile-bootstrap interval.

    Each replicate resamples the rounds as :func:`auc_interval` does (members and non-members separately, with
    replacement) and takes both attacks' AUCs on the same resampled rounds, so the interval reflects the rounds'
    shared noise once: narrower than one built from the two separate intervals when the attacks agree on which
    rounds are easy.

    Parameters
    ----------
    scores_a, scores_b : array-like of shape (n,)
        The two attacks' scores in each round (finite).
    labels : array-like of shape (n,)
        1 where the target was in the training data.
    confidence : float, default=0.95
    n_boot : int, default=1000
    rng : numpy.random.Generator
        Draws the member then the non-member index matrices, as :func:`auc_interval`.

    Returns
    -------
    difference, low, high : float

    Raises
    ------
    ValueError
        As :func:`auc`, for scores of different lengths, ``confidence`` outside (0, 1) or ``n_boot < 1``.

    Warns
    -----
    UserWarning
        When ``n_boot · ρ / 2 < 1``, as :func:`auc_interval`.

    Notes
    -----
    Guarantee: asymptotic only, as :func:`auc_interval`'s.

    References
    ----------
    B. Efron, R. J. Tibshirani. An Introduction to the Bootstrap, 1993 (paired resampling, ch. 8).
    """
    a, y = _scores_and_labels(scores_a, labels)
    b, _ = _scores_and_labels(scores_b, labels)
    rho, n_boot = _bootstrap_settings(confidence, n_boot, rng)
    n1, n0 = int(y.sum()), int((~y).sum())
    idx_pos = rng.integers(0, n1, size=(n_boot, n1))
    idx_neg = rng.integers(0, n0, size=(n_boot, n0))
    point_a, rep_a = _replicate_aucs(a[y], a[~y], idx_pos, idx_neg)
    point_b, rep_b = _replicate_aucs(b[y], b[~y], idx_pos, idx_neg)
    low, high = np.quantile(rep_a - rep_b, [rho / 2.0, 1.0 - rho / 2.0])
    return point_a - point_b, float(low), float(high)


# -------------------------------------------------------------------------------------------------------- accuracy


def accuracy_interval(guesses: ArrayLike, labels: ArrayLike, *, confidence: float = 0.95) -> tuple[float, float, float]:
    """The attack's accuracy over N rounds and Hoeffding's two-sided interval ``± sqrt(log(2/ρ) / (2N))``.

    Parameters
    ----------
    guesses : array-like of shape (N,)
        The attack's guess in each round: 1/True = "member".
    labels : array-like of shape (N,)
        The truth in each round: 1/True where the target was in the training data.
    confidence : float, default=0.95
        1 − ρ, in (0, 1).

    Returns
    -------
    accuracy, low, high : float
        The fraction of correct guesses and the interval ``[max(0, acc − h), min(1, acc + h)]``; the interval (not
        the estimate) is clipped to [0, 1], which only removes impossible values and keeps the guarantee.

    Raises
    ------
    ValueError
        If the lengths differ, either is empty or holds values other than 0/1, or ``confidence`` is outside (0, 1).

    Notes
    -----
    Guarantee: if the N rounds are independent with the same success probability α (as in both games of Krčo et
    al.), then ``P[low <= α <= high] >= confidence`` for every N (Hoeffding 1963), with no other assumption.

    References
    ----------
    W. Hoeffding, JASA 58(301), 1963; Krčo et al. 2025, arXiv:2405.15423, Propositions 1 and 2 (the same bound in
    both games).

    Examples
    --------
    >>> acc, low, high = accuracy_interval([1, 0, 1, 1], [1, 0, 0, 1], confidence=0.5)
    >>> acc, round(low, 4), round(high, 4)
    (0.75, 0.3337, 1.0)
    """
    g = check_membership("guesses", guesses)
    y = check_membership("labels", labels)
    if g.shape != y.shape:
        raise ValueError(f"guesses and labels must have the same length, got {g.shape[0]} and {y.shape[0]}.")
    if g.size == 0:
        raise ValueError("guesses and labels must be non-empty, got length 0.")
    rho = 1.0 - check_confidence(confidence)
    acc = float(np.mean(g == y))
    half = math.sqrt(math.log(2.0 / rho) / (2.0 * g.size))
    return acc, max(0.0, acc - half), min(1.0, acc + half)


# ------------------------------------------------------------------------------------------------------ TPR at FPR


def tpr_at_fpr(scores: ArrayLike, labels: ArrayLike, fpr: float) -> tuple[float, float]:
    """The largest true-positive rate at a false-positive rate ≤ ``fpr``, and the FPR actually realised there.

    Over every threshold t (the attack guesses "member" iff score ≥ t; t ranges over the distinct scores and +∞,
    "guess nobody"), keep those whose realised FPR is ≤ ``fpr`` and return the largest TPR among them; among the
    thresholds that reach it, the smallest realised FPR is returned.

    Parameters
    ----------
    scores : array-like of shape (n,)
    labels : array-like of shape (n,)
        As for :func:`auc`.
    fpr : float
        The nominal false-positive rate, in [0, 1].

    Returns
    -------
    tpr, realised_fpr : float
        ``(0.0, 0.0)`` when no threshold but "guess nobody" finds a member within the constraint.  Report both
        (SPEC §8: never the nominal FPR alone): with n₀ non-members the realised FPR is a multiple of 1/n₀ and can
        be well below ``fpr``.

    Raises
    ------
    ValueError
        As :func:`auc`, and for ``fpr`` outside [0, 1].

    Notes
    -----
    This is a descriptive point on the empirical ROC curve, read with the labels: it is not a confidence bound.

    Examples
    --------
    >>> tpr_at_fpr([0.9, 0.7, 0.8, 0.1], [1, 1, 0, 0], 0.5)
    (1.0, 0.5)
    """
    s, y = _scores_and_labels(scores, labels)
    level = check_real("fpr", fpr, low=0.0, high=1.0)
    pos, neg = np.sort(s[y]), np.sort(s[~y])
    thresholds = np.unique(s)
    fp = neg.size - np.searchsorted(neg, thresholds, side="left")
    tp = pos.size - np.searchsorted(pos, thresholds, side="left")
    ok = fp / neg.size <= level
    best_tp = tp[ok].max() if np.any(ok) else 0
    if best_tp == 0:  # "guess nobody" (t = +inf) reaches TPR 0 with no false positive
        return 0.0, 0.0
    best_fp = fp[ok & (tp == best_tp)].min()
    return float(best_tp / pos.size), float(best_fp / neg.size)


def column_tpr_at_fpr(
    scores: ArrayLike, member: ArrayLike, fprs: Sequence[float], *, valid: ArrayLike | None = None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """:func:`tpr_at_fpr` of every column of a score matrix at once: each record's own ROC over its models.

    Column x holds one record's scores under M target models, ``member[:, x]`` whether each model trained on it;
    the result is what ``tpr_at_fpr(scores[v, x], member[v, x], f)`` returns for each column x and FPR f, v the
    column's valid pairs, computed for all columns together (sorted once per column, O(M N log M)).

    Parameters
    ----------
    scores : array-like of shape (M, N)
        ``scores[j, x]``: model j's score for record x, higher = member; finite where valid.
    member : array-like of bool of shape (M, N)
        Whether model j trained on record x (booleans, or integers 0/1).
    fprs : sequence of float
        The nominal false-positive rates, each in [0, 1].
    valid : array-like of bool of shape (M, N) or None, default=None
        The pairs to count (``None``: all); an invalid pair's score is ignored, whatever it is (NaN included).

    Returns
    -------
    tpr, realised_fpr : ndarray of shape (len(fprs), N)
        Row i, column x: :func:`tpr_at_fpr` of record x at ``fprs[i]``; NaN for a record without a valid member or
        non-member pair (its ROC is undefined).

    Raises
    ------
    ValueError
        For matrices of other shapes, a non-finite valid score, an FPR outside [0, 1].
    TypeError
        For scores that are not real numbers, or a membership that is not boolean.

    Examples
    --------
    >>> tpr, fpr = column_tpr_at_fpr([[0.9, 1.0], [0.7, 2.0], [0.8, 3.0], [0.1, 4.0]],
    ...                              [[1, 0], [1, 0], [0, 1], [0, 1]], [0.5])
    >>> tpr.tolist(), fpr.tolist()
    ([[1.0, 1.0]], [[0.5, 0.0]])
    """
    raw = np.asarray(scores)
    keep = np.ones(raw.shape, dtype=bool) if valid is None else np.asarray(valid)
    if keep.shape != raw.shape or keep.dtype != np.bool_:
        raise ValueError(
            f"valid must be a boolean array of the shape of scores {raw.shape}, got {keep.dtype} of shape {keep.shape}."
        )
    if np.issubdtype(raw.dtype, np.number):
        raw = np.where(keep, raw, 0)  # an invalid pair's score may be NaN: never looked at
    s, m = check_score_matrix(raw, member, min_models=1)
    levels = [check_real(f"fprs[{i}]", f, low=0.0, high=1.0) for i, f in enumerate(fprs)]
    n_models, n_records = s.shape
    pos, neg = keep & m, keep & ~m
    n_pos, n_neg = pos.sum(axis=0), neg.sum(axis=0)
    # each column's valid scores in descending order, the invalid ones last; a tie counts up to its group's end
    order = np.argsort(np.where(keep, -s, np.inf), axis=0, kind="stable")
    ranked = np.take_along_axis(np.where(keep, s, -np.inf), order, axis=0)
    is_valid = np.take_along_axis(keep, order, axis=0)
    tp_run = np.cumsum(np.take_along_axis(pos, order, axis=0), axis=0)
    fp_run = np.cumsum(np.take_along_axis(neg, order, axis=0), axis=0)
    last = np.ones_like(ranked, dtype=bool)
    last[:-1] = ranked[:-1] != ranked[1:]
    rows = np.arange(n_models)[:, None]
    group_end = np.minimum.accumulate(np.where(last, rows, n_models)[::-1], axis=0)[::-1]
    tp = np.take_along_axis(tp_run, group_end, axis=0)  # members with score >= the threshold at this row
    fp = np.take_along_axis(fp_run, group_end, axis=0)
    defined = (n_pos > 0) & (n_neg > 0)
    tpr = np.full((len(levels), n_records), np.nan)
    realised = np.full((len(levels), n_records), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        fp_rate = fp / n_neg
    for i, level in enumerate(levels):
        ok = is_valid & (fp_rate <= level)  # an upper set of thresholds: fp only falls as the threshold rises
        best_tp = np.where(ok, tp, -1).max(axis=0)
        best_fp = np.where(ok & (tp == best_tp), fp, np.iinfo(np.int64).max).min(axis=0)
        some = best_tp > 0  # else "guess nobody": TPR 0 at FPR 0
        with np.errstate(divide="ignore", invalid="ignore"):
            tpr[i] = np.where(defined, np.where(some, best_tp / n_pos, 0.0), np.nan)
            realised[i] = np.where(defined, np.where(some, best_fp / n_neg, 0.0), np.nan)
    return tpr, realised


# ------------------------------------------------------------------------------------------ comparing two risk vectors


def miss_rate(model_seeded: ArrayLike, traditional: ArrayLike, t: float) -> float:
    """``MR(t)``: among the records with model-seeded risk ≥ t, the fraction with traditional risk < t.

    Parameters
    ----------
    model_seeded : array-like of shape (n_records,)
        Each record's risk in the model-seeded game (e.g. its AUC).
    traditional : array-like of shape (n_records,)
        The same records' risk in the traditional game, in the same order.
    t : float
        The risk threshold (finite).

    Returns
    -------
    float
        In [0, 1], or NaN when no record has model-seeded risk ≥ t (the rate is undefined; no warning is issued,
        so that a table over many thresholds stays quiet — :func:`miss_rate_table` shows the count 0 beside it).

    Raises
    ------
    ValueError
        If the vectors are empty, differ in length or hold non-finite values, or ``t`` is not finite.

    References
    ----------
    Krčo et al. 2025, arXiv:2405.15423 (the miss rate; MR(0.8) = 0.73–0.94 in their experiments).

    Examples
    --------
    >>> miss_rate([0.9, 0.85, 0.5], [0.7, 0.82, 0.9], 0.8)
    0.5
    """
    ms, tr = _risk_pair(model_seeded, traditional, ("model_seeded", "traditional"))
    level = check_real("t", t)
    high = ms >= level
    n_high = int(high.sum())
    if n_high == 0:
        return math.nan
    return int(np.sum(tr[high] < level)) / n_high


def rmsd(a: ArrayLike, b: ArrayLike) -> float:
    """Root mean squared deviation ``sqrt(mean((a − b)²))`` between two risk vectors over the same records.

    Raises
    ------
    ValueError
        If the vectors are empty, differ in length or hold non-finite values.

    References
    ----------
    Krčo et al. 2025, arXiv:2405.15423 (RMSD 0.04–0.11 between the two games' risks).

    Examples
    --------
    >>> round(rmsd([0.5, 0.9], [0.5, 0.6]), 6)
    0.212132
    """
    x, y = _risk_pair(a, b, ("a", "b"))
    return float(np.sqrt(np.mean((x - y) ** 2)))


def miss_rate_table(
    model_seeded: ArrayLike, traditional: ArrayLike, thresholds: Sequence[float] = MISS_RATE_THRESHOLDS
) -> pd.DataFrame:
    """The miss rate at several thresholds, with the counts behind each rate.

    Parameters
    ----------
    model_seeded, traditional : array-like of shape (n_records,)
        As for :func:`miss_rate`.
    thresholds : sequence of float, default=MISS_RATE_THRESHOLDS
        Non-empty; each finite.

    Returns
    -------
    DataFrame
        One row per threshold, columns ``t`` (float), ``n_high_risk`` (records with model-seeded risk ≥ t),
        ``n_missed`` (those of them with traditional risk < t) and ``miss_rate`` (their ratio; NaN where
        ``n_high_risk`` is 0, printed "none" by :func:`privgame.analysis.reporting.format_table`).

    Examples
    --------
    >>> miss_rate_table([0.9, 0.85, 0.5], [0.7, 0.82, 0.9], thresholds=(0.8,))
         t  n_high_risk  n_missed  miss_rate
    0  0.8            2         1        0.5
    """
    ms, tr = _risk_pair(model_seeded, traditional, ("model_seeded", "traditional"))
    levels = [check_real(f"thresholds[{i}]", t) for i, t in enumerate(thresholds)]
    if not levels:
        raise ValueError(f"thresholds must be a non-empty sequence, got {thresholds!r}.")
    rows = []
    for level in levels:
        high = ms >= level
        n_high = int(high.sum())
        n_missed = int(np.sum(tr[high] < level))
        rows.append((level, n_high, n_missed, n_missed / n_high if n_high else math.nan))
    return pd.DataFrame(rows, columns=["t", "n_high_risk", "n_missed", "miss_rate"]).astype(
        {"t": float, "n_high_risk": int, "n_missed": int, "miss_rate": float}
    )


# ------------------------------------------------------------------------------------------------------------ plot


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds, so that messages read ``0``, not ``np.int64(0)``."""
    return value.item() if isinstance(value, np.generic) else value


def _paired(records: pd.DataFrame, group: Any) -> pd.DataFrame:
    """One row per record present in both games: auc/auc_low/auc_high of each game, and the selection."""
    games = records["game"].astype(str)
    parts = {}
    for game in _GAMES:
        part = records[games == game]
        dup = part["record"].duplicated()
        if dup.any():
            raise ValueError(
                f"records must have one row per (record, game) in each group, got record "
                f"{_plain(part['record'][dup].iloc[0])!r} twice in game {game!r}"
                + ("." if group is None else f", group {_plain(group)!r}.")
            )
        parts[game] = part.set_index("record")[["auc", "auc_low", "auc_high", "selection"]]
    trad, seeded = parts["traditional"], parts["model-seeded"]
    both = trad.merge(seeded, how="inner", left_index=True, right_index=True, suffixes=("_trad", "_seeded"))
    differs = both["selection_trad"].astype(str) != both["selection_seeded"].astype(str)
    if differs.any():
        first = both[differs.to_numpy()].iloc[0]
        raise ValueError(
            f"selection must be the same in both games for each record, got {_plain(first['selection_trad'])!r} "
            f"and {_plain(first['selection_seeded'])!r} for record {_plain(first.name)!r}."
        )
    for column in ("auc_trad", "auc_low_trad", "auc_high_trad", "auc_seeded", "auc_low_seeded", "auc_high_seeded"):
        values = pd.to_numeric(both[column], errors="coerce").to_numpy(dtype=float)
        if not np.all(np.isfinite(values)):
            position = int(np.argmin(np.isfinite(values)))
            game = "traditional" if column.endswith("_trad") else "model-seeded"
            raise ValueError(
                f"records must have finite numbers in {column.rsplit('_', 1)[0]!r}, got "
                f"{_plain(both[column].iloc[position])!r} for record {_plain(both.index[position])!r} in game {game!r}."
            )
    return both.rename(columns={"selection_trad": "selection"}).drop(columns="selection_seeded")


def _errors(frame: pd.DataFrame, suffix: str) -> NDArray[np.float64]:
    est = frame[f"auc{suffix}"].to_numpy(dtype=float)
    # A percentile interval need not contain its estimate; matplotlib refuses negative error-bar lengths.
    lower = np.maximum(est - frame[f"auc_low{suffix}"].to_numpy(dtype=float), 0.0)
    upper = np.maximum(frame[f"auc_high{suffix}"].to_numpy(dtype=float) - est, 0.0)
    return np.vstack([lower, upper])


def plot_risk_scatter(records: pd.DataFrame, path: str | Path, *, title: str | None = None) -> Path:
    """Scatter each record's model-seeded risk against its traditional risk into a file: the figure of
    :func:`figure_risk_scatter`, written to ``path`` (its suffix, ``.png``, ``.pdf`` or ``.svg``, chooses the
    format).

    Returns
    -------
    Path
        The written file.

    Raises
    ------
    ValueError
        For an unsupported suffix, and as :func:`figure_risk_scatter`.
    """
    _check_risk_columns(records)
    out = check_suffix(path)
    return save(figure_risk_scatter(records, title=title), out)


def _check_risk_columns(records: pd.DataFrame) -> None:
    required = ["record", "game", "auc", "auc_low", "auc_high", "selection"]
    missing = [c for c in required if c not in records.columns]
    if missing:
        raise ValueError(f"records must have the columns {required}, missing {missing}.")


def figure_risk_scatter(records: pd.DataFrame, *, title: str | None = None, ax: Axes | None = None) -> Figure:
    """Scatter each record's model-seeded risk against its traditional risk, with intervals and the diagonal.

    Points above the diagonal are records whose risk the traditional game underestimates; the dashed lines at
    t = 0.8 mark the quadrant counted by the miss rate MR(0.8) (top left: the missed records).

    Parameters
    ----------
    records : DataFrame
        Long format, one row per (record, game): columns ``record`` (an identifier), ``game``
        (``"traditional"`` or ``"model-seeded"``; other values are ignored), ``auc``, ``auc_low``, ``auc_high``
        and ``selection`` (``"achilles"``, ``"random"`` or any other label, each drawn with its own marker and
        legend entry; it must agree between a record's two rows).  An optional column ``group`` (e.g. the
        generator) gives one subplot per value, each titled with its RMSD and MR(0.8).  Records present in only
        one game are skipped.
    title : str or None, default=None
        Figure title.
    ax : matplotlib Axes or None, default=None
        Draw into this axes (the legend and title go in it, not beside it); only for one panel (no ``group``
        column, or one group).

    Returns
    -------
    Figure
        The figure drawn (``ax``'s figure when given); a plain Figure, not registered with pyplot.

    Raises
    ------
    ValueError
        For a missing column, a record twice in one game (of one group), a selection that differs between a
        record's two games, a paired record whose ``auc``, ``auc_low`` or ``auc_high`` is not a finite number,
        when no record has both games, or for ``ax`` with more than one group.

    References
    ----------
    Krčo et al. 2025, arXiv:2405.15423.
    """
    _check_risk_columns(records)
    grouped = "group" in records.columns
    groups = records.groupby("group", sort=True, dropna=False) if grouped else [(None, records)]
    panels = [(key, _paired(part, key)) for key, part in groups]
    panels = [(key, both) for key, both in panels if not both.empty]
    if not panels:
        raise ValueError("records must contain at least one record with both a 'traditional' and a 'model-seeded' row.")

    all_pairs = pd.concat([both for _, both in panels])
    bounds = all_pairs[["auc_low_trad", "auc_low_seeded", "auc_trad", "auc_seeded"]].to_numpy(dtype=float)
    low = min(0.5, float(np.nanmin(bounds))) - 0.02
    high = max(1.0, float(np.nanmax(all_pairs[["auc_high_trad", "auc_high_seeded"]].to_numpy(dtype=float)))) + 0.02
    selections = sorted({str(s) for s in all_pairs["selection"]}, key=lambda s: (s not in _SELECTION_STYLE, s))
    others = iter(_OTHER_STYLES * (len(selections) // len(_OTHER_STYLES) + 1))
    style = {s: _SELECTION_STYLE[s] if s in _SELECTION_STYLE else next(others) for s in selections}

    ncols = min(len(panels), 3)
    nrows = math.ceil(len(panels) / ncols)
    own = ax is None
    figure, axes = new_axes(ax, nrows, ncols, figsize=(3.9 * ncols + 1.3, 4.0 * nrows), what="the risk scatter")
    handles: dict[str, Any] = {}
    for ax, (key, both) in zip(axes.ravel(), panels, strict=False):
        ax.plot([low, high], [low, high], color="grey", linewidth=1, label="_diagonal")
        ax.axvline(0.8, color="grey", linestyle="--", linewidth=0.8)
        ax.axhline(0.8, color="grey", linestyle="--", linewidth=0.8)
        for selection in selections:
            part = both[both["selection"].astype(str) == selection]
            if part.empty:
                continue
            marker, colour = style[selection]
            container = ax.errorbar(
                part["auc_trad"].to_numpy(dtype=float),
                part["auc_seeded"].to_numpy(dtype=float),
                xerr=_errors(part, "_trad"),
                yerr=_errors(part, "_seeded"),
                fmt=marker,
                color=colour,
                ecolor=colour,
                elinewidth=0.6,
                alpha=0.8,
                markersize=5,
                capsize=0,
                label=selection,
            )
            handles.setdefault(selection, container)
        seeded, trad = both["auc_seeded"].to_numpy(dtype=float), both["auc_trad"].to_numpy(dtype=float)
        mr = miss_rate(seeded, trad, 0.8)
        summary = f"n = {len(both)}, RMSD {rmsd(seeded, trad):.3f}, MR(0.8) {'none' if math.isnan(mr) else f'{mr:.2f}'}"
        ax.set_title(summary if key is None else f"{key!s}\n{summary}", fontsize="small")
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
        ax.set_aspect("equal")
    for ax in axes.ravel()[len(panels) :]:
        ax.set_visible(False)
    for column in range(ncols):
        # the lowest panel in use of each column (the last row may be incomplete)
        axes[(len(panels) - 1 - column) // ncols, column].set_xlabel("traditional AUC")
    for ax in axes[:, 0]:
        ax.set_ylabel("model-seeded AUC")
    legend = {"title": "target selection", "fontsize": "small"}
    if own:
        figure.legend([handles[s] for s in selections], selections, loc="outside right upper", **legend)
        if title:
            figure.suptitle(title)
    else:  # the caller's figure keeps its own legend and title
        axes[0, 0].legend([handles[s] for s in selections], selections, loc="lower right", **legend)
        if title:
            axes[0, 0].set_title(f"{title}\n{axes[0, 0].get_title()}", fontsize="small")
    return root_figure(figure)
