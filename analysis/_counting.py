"""Counting the guesses of a one-run audit at score thresholds: the (r, v) every one-run estimator bounds.

Shared by Steinke et al.'s bound (:mod:`privgame.analysis.one_run`) and the f-DP audit (:mod:`privgame.analysis.fdp`): r
guesses made ("member" at scores >= t, and "non-member" at scores <= t_low when two-sided), v of them correct, for every
threshold candidate at once; and the strategy's choice of the threshold with the counts at it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privgame.analysis.thresholds import (
    BoundsFn,
    ThresholdChoice,
    ThresholdStrategy,
    quantile_thresholds,
    symmetric_quantile_pairs,
)

__all__ = ["ascending", "choose_and_count", "counts_one_sided", "counts_two_sided", "guess_counts"]


def ascending(scores: NDArray[np.float64]) -> NDArray[np.float64]:
    """``scores`` sorted ascending: the array itself when it already is (one O(n) pass instead of an O(n log n)
    sort: a caller that audits the same scores many times sorts them once), else a sorted copy.  The scores are
    finite (the audits check), so the two give equal arrays."""
    if scores.size < 2 or bool(np.all(scores[1:] >= scores[:-1])):
        return scores
    return np.sort(scores)


def counts_one_sided(
    in_sorted: NDArray[np.float64], out_sorted: NDArray[np.float64], thresholds: ArrayLike
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(r, v) for "member" guesses at scores >= t, for each t (inputs sorted ascending)."""
    t = np.asarray(thresholds, dtype=np.float64)
    tp = in_sorted.size - np.searchsorted(in_sorted, t, side="left")
    fp = out_sorted.size - np.searchsorted(out_sorted, t, side="left")
    return tp + fp, tp


def guess_counts(two_sided: bool) -> Callable[..., tuple[NDArray[np.int64], NDArray[np.int64]]]:
    """The (r, v) counter of one-sided thresholds or of two-sided ``(t_low, t_high)`` pairs."""
    return counts_two_sided if two_sided else counts_one_sided


def choose_and_count(
    strategy: ThresholdStrategy,
    in_scores: NDArray[np.float64],
    out_scores: NDArray[np.float64],
    *,
    confidence: float,
    two_sided: bool,
    bounds: BoundsFn,
) -> tuple[ThresholdChoice, int, int]:
    """A one-run audit's threshold choice (quantile thresholds, or symmetric pairs when two-sided) and the (r, v)
    of the guesses at the chosen threshold on the part it is bounded on; shared by
    :mod:`privgame.analysis.one_run` and :mod:`privgame.analysis.fdp`.
    """
    choice = strategy.choose(
        in_scores,
        out_scores,
        beta=1.0 - confidence,
        candidates=symmetric_quantile_pairs if two_sided else quantile_thresholds,
        bounds=bounds,
    )
    r, v = guess_counts(two_sided)(ascending(choice.in_scores), ascending(choice.out_scores), [choice.threshold])
    return choice, int(r[0]), int(v[0])


def counts_two_sided(
    in_sorted: NDArray[np.float64], out_sorted: NDArray[np.float64], pairs: Sequence[Any]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(r, v) for "member" at scores >= t_high and "non-member" at scores <= t_low, for each (t_low, t_high)."""
    arr = np.asarray(pairs, dtype=np.float64).reshape(-1, 2)
    r_hi, v_hi = counts_one_sided(in_sorted, out_sorted, arr[:, 1])
    in_lo = np.searchsorted(in_sorted, arr[:, 0], side="right")
    out_lo = np.searchsorted(out_sorted, arr[:, 0], side="right")
    return r_hi + in_lo + out_lo, v_hi + out_lo
