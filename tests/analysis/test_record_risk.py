"""Tests of privgame.analysis.record_risk: per-record risk metrics of Krčo et al. (arXiv:2405.15423).

* ``auc``: closed forms (perfect, reversed, all ties, a hand-counted case) and scikit-learn's ``roc_auc_score``.
* ``auc_interval``: a slow per-replicate oracle drawing the same indices, reproducibility, width shrinking with n,
  the 50 ms budget, and Monte-Carlo coverage on Gaussian scores with known AUC Φ(μ/√2), with a meta-test that a
  deliberately broken bootstrap (non-members never resampled) fails the same check.
* ``accuracy_interval``: closed forms, the clipping, and Hoeffding's coverage (binomial test at 1e-3), with a broken
  interval that fails it.
* ``tpr_at_fpr``: hand-made cases with ties and a brute-force loop over thresholds; ``column_tpr_at_fpr`` against it
  column by column.
* ``miss_rate``, ``rmsd``, ``miss_rate_table`` on hand-made vectors; ``plot_risk_scatter`` writes files and refuses
  bad input.  Every error path has a test.
"""

from __future__ import annotations

import functools
import math
import re
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from numpy.typing import NDArray
from scipy import stats
from sklearn.metrics import roc_auc_score

from privgame.analysis.record_risk import (
    MISS_RATE_THRESHOLDS,
    accuracy_interval,
    auc,
    auc_difference_interval,
    auc_interval,
    column_tpr_at_fpr,
    miss_rate,
    miss_rate_table,
    plot_risk_scatter,
    rmsd,
    tpr_at_fpr,
)

# --------------------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------------------


def _gaussian(rng: np.random.Generator, n: int, mu: float) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """n members ~ N(μ, 1) then n non-members ~ N(0, 1): the AUC is Φ(μ / √2)."""
    scores = np.concatenate([rng.normal(mu, 1.0, n), rng.normal(0.0, 1.0, n)])
    return scores, np.repeat([True, False], n)


def _msg(text: str) -> str:
    return "^" + re.escape(text) + "$"


# --------------------------------------------------------------------------------------------------------------
# 1. auc
# --------------------------------------------------------------------------------------------------------------


def test_auc_perfect_separation_is_one() -> None:
    assert auc([0.9, 0.8, 0.7, 0.1, 0.2], [1, 1, 1, 0, 0]) == 1.0


def test_auc_reversed_is_zero() -> None:
    assert auc([0.1, 0.2, 0.9, 0.8], [1, 1, 0, 0]) == 0.0


def test_auc_all_ties_is_half() -> None:
    assert auc(np.full(7, 3.0), [1, 0, 1, 0, 0, 1, 1]) == 0.5


def test_auc_hand_counted_with_a_tie() -> None:
    # members 0.9, 0.8; non-members 0.1, 0.8: wins 1 + 1 + 1 + 1/2 = 3.5 of 4 pairs
    assert auc([0.9, 0.8, 0.1, 0.8], [True, True, False, False]) == 0.875


@pytest.mark.parametrize("seed", range(5))
def test_auc_matches_sklearn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 300))
    labels = rng.integers(0, 2, n)
    labels[:2] = [0, 1]
    scores = np.round(rng.normal(size=n) + 0.5 * labels, 1)  # rounding makes ties
    assert auc(scores, labels) == pytest.approx(roc_auc_score(labels, scores), abs=1e-14)


def test_auc_errors() -> None:
    with pytest.raises(ValueError, match=_msg("scores and labels must have the same length, got 3 and 2.")):
        auc([0.1, 0.2, 0.3], [0, 1])
    with pytest.raises(ValueError, match=_msg("scores must be finite, got nan at index 1.")):
        auc([0.1, math.nan], [0, 1])
    with pytest.raises(ValueError, match=_msg("scores must be finite, got inf at index 0.")):
        auc([math.inf, 0.0], [0, 1])
    with pytest.raises(
        ValueError, match=_msg("labels must contain both members and non-members, got no members (label 1) among 3.")
    ):
        auc([0.1, 0.2, 0.3], [0, 0, 0])
    with pytest.raises(
        ValueError,
        match=_msg("labels must contain both members and non-members, got no non-members (label 0) among 2."),
    ):
        auc([0.1, 0.2], [True, True])
    with pytest.raises(ValueError, match=re.escape("labels must hold only 0/1 or booleans, got 2 at index 1")):
        auc([0.1, 0.2], [0, 2])
    with pytest.raises(ValueError, match="scores must be a 1-d array"):
        auc([[0.1, 0.2]], [0, 1])
    with pytest.raises(TypeError, match="scores must hold real numbers"):
        auc(["a", "b"], [0, 1])


# --------------------------------------------------------------------------------------------------------------
# 2. auc_interval
# --------------------------------------------------------------------------------------------------------------


def _slow_auc_interval(
    scores: NDArray[np.float64], labels: NDArray[np.bool_], confidence: float, n_boot: int, seed: int
) -> tuple[float, float, float]:
    """One :func:`auc` per replicate, on the index matrices the documented draw order gives."""
    rng = np.random.default_rng(seed)
    pos, neg = scores[labels], scores[~labels]
    idx_pos = rng.integers(0, pos.size, size=(n_boot, pos.size))
    idx_neg = rng.integers(0, neg.size, size=(n_boot, neg.size))
    y = np.repeat([True, False], [pos.size, neg.size])
    reps = [auc(np.concatenate([pos[a], neg[b]]), y) for a, b in zip(idx_pos, idx_neg, strict=True)]
    rho = 1.0 - confidence
    low, high = np.quantile(reps, [rho / 2, 1 - rho / 2])
    return auc(scores, labels), float(low), float(high)


@pytest.mark.parametrize(("seed", "n1", "n0", "confidence"), [(0, 30, 40, 0.95), (1, 7, 3, 0.8), (2, 50, 50, 0.5)])
def test_auc_interval_matches_slow_oracle(seed: int, n1: int, n0: int, confidence: float) -> None:
    rng = np.random.default_rng(seed)
    scores = np.round(np.concatenate([rng.normal(0.7, 1, n1), rng.normal(0, 1, n0)]), 1)
    labels = np.repeat([True, False], [n1, n0])
    perm = rng.permutation(n1 + n0)  # members and non-members interleaved, as a game's rounds are
    scores, labels = scores[perm], labels[perm]
    got = auc_interval(scores, labels, confidence=confidence, n_boot=300, rng=np.random.default_rng(seed + 10))
    expected = _slow_auc_interval(scores, labels, confidence, 300, seed + 10)
    assert got == pytest.approx(expected, abs=1e-12)


def test_auc_interval_contains_auc_and_is_reproducible() -> None:
    scores, labels = _gaussian(np.random.default_rng(3), 100, 1.0)
    first = auc_interval(scores, labels, rng=np.random.default_rng(7))
    assert first == auc_interval(scores, labels, rng=np.random.default_rng(7))
    point, low, high = first
    assert point == auc(scores, labels)
    assert low < point < high
    other = auc_interval(scores, labels, rng=np.random.default_rng(8))
    assert other[0] == point
    assert other[1:] != first[1:]


def test_auc_interval_shrinks_with_n() -> None:
    rng = np.random.default_rng(4)
    widths = []
    for n in (30, 300, 3000):
        scores, labels = _gaussian(rng, n, 1.0)
        _, low, high = auc_interval(scores, labels, n_boot=200, rng=rng)
        widths.append(high - low)
    # the width scales as 1/√n: a factor of about √10 ≈ 3.2 per step
    assert widths[0] > 2 * widths[1] > 4 * widths[2] > 0


def test_auc_interval_of_perfect_separation_is_a_point() -> None:
    assert auc_interval([3.0, 2.0, 1.0, 0.0], [1, 1, 0, 0], n_boot=100, rng=np.random.default_rng(0)) == (1.0, 1.0, 1.0)


def test_auc_interval_is_fast() -> None:
    scores, labels = _gaussian(np.random.default_rng(5), 100, 1.0)
    rng = np.random.default_rng(6)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        auc_interval(scores, labels, n_boot=1000, rng=rng)
        times.append(time.perf_counter() - start)
    assert min(times) < 0.05


def test_auc_interval_errors() -> None:
    scores, labels = [0.3, 0.1, 0.2], [1, 0, 1]
    rng = np.random.default_rng(0)
    for bad in (0.0, 1.0, math.nan, 1.5):
        with pytest.raises(ValueError, match=_msg(f"confidence must be in (0, 1), got {bad!r}.")):
            auc_interval(scores, labels, confidence=bad, rng=rng)
    with pytest.raises(ValueError, match=_msg("n_boot must be an integer >= 1, got 0.")):
        auc_interval(scores, labels, n_boot=0, rng=rng)
    with pytest.raises(TypeError, match=_msg("n_boot must be an integer, got 10.0.")):
        auc_interval(scores, labels, n_boot=10.0, rng=rng)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=_msg("rng must be a numpy.random.Generator, got 0.")):
        auc_interval(scores, labels, rng=0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=re.escape("rng must be a numpy.random.Generator, got RandomState")):
        auc_interval(scores, labels, rng=np.random.RandomState(0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="labels must contain both members and non-members"):
        auc_interval(scores, [1, 1, 1], rng=rng)
    with pytest.raises(ValueError, match="scores and labels must have the same length"):
        auc_interval(scores, [1, 0], rng=rng)


def test_auc_interval_warns_when_too_few_replicates() -> None:
    with pytest.warns(UserWarning, match="n_boot = 20 replicates are too few"):
        auc_interval([0.3, 0.1, 0.2], [1, 0, 1], n_boot=20, confidence=0.95, rng=np.random.default_rng(0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        auc_interval([0.3, 0.1, 0.2], [1, 0, 1], n_boot=40, confidence=0.95, rng=np.random.default_rng(0))


# Coverage.  The percentile bootstrap is asymptotic: at 50 + 50 rounds, μ = 1 (AUC 0.76), 4,000 replicates here
# measured a coverage of 0.9415 ± 0.004 at nominal 0.95 and 0.4865 ± 0.008 at 0.5, so the acceptance band allows
# that much small-sample under-coverage (SLACK) below nominal and none above.  Each end of the band is a binomial
# quantile at 5e-4, so a correct implementation (true coverage in [nominal − SLACK, nominal]) fails with
# probability ≤ 1e-3.
COVERAGE_N, COVERAGE_MU = 50, 1.0
SLACK = {0.95: 0.02, 0.5: 0.04}


def _coverage_band(replicates: int, confidence: float) -> tuple[int, int]:
    low = int(stats.binom.ppf(5e-4, replicates, confidence - SLACK[confidence]))
    high = int(stats.binom.isf(5e-4, replicates, confidence))
    return low, high


def _bootstrap_members_only(
    scores: NDArray[np.float64], labels: NDArray[np.bool_], *, confidence: float, n_boot: int, rng: np.random.Generator
) -> tuple[float, float, float]:
    """Deliberately broken: resamples the members only, ignoring the non-members' sampling variability."""
    pos, neg = scores[labels], np.sort(scores[~labels])
    wins = (np.searchsorted(neg, pos, "left") + np.searchsorted(neg, pos, "right")) / (2.0 * neg.size)
    reps = wins[rng.integers(0, pos.size, size=(n_boot, pos.size))].mean(axis=1)
    rho = 1 - confidence
    low, high = np.quantile(reps, [rho / 2, 1 - rho / 2])
    return float(wins.mean()), float(low), float(high)


def _covered(interval: Any, replicates: int, confidence: float, seed: int) -> int:
    true_auc = stats.norm.cdf(COVERAGE_MU / math.sqrt(2.0))
    count = 0
    for child in np.random.SeedSequence(seed).spawn(replicates):
        rng = np.random.default_rng(child)
        scores, labels = _gaussian(rng, COVERAGE_N, COVERAGE_MU)
        _, low, high = interval(scores, labels, confidence=confidence, n_boot=1000, rng=rng)
        count += low <= true_auc <= high
    return count


@functools.cache
def _auc_interval_covered(replicates: int, confidence: float, seed: int) -> int:
    return _covered(auc_interval, replicates, confidence, seed)


@pytest.mark.parametrize("confidence", [0.95, 0.5])
def test_auc_interval_coverage(confidence: float) -> None:
    replicates = 200
    low, high = _coverage_band(replicates, confidence)
    assert low <= _auc_interval_covered(replicates, confidence, 2024) <= high


@pytest.mark.slow
@pytest.mark.parametrize("confidence", [0.95, 0.5])
def test_auc_interval_coverage_many_replicates(confidence: float) -> None:
    replicates = 2000
    low, high = _coverage_band(replicates, confidence)
    assert low <= _covered(auc_interval, replicates, confidence, seed=7) <= high


def test_coverage_check_rejects_a_broken_bootstrap() -> None:
    # Ignoring half of the sampling variance shrinks the interval by about √2: coverage ≈ 0.83 at nominal 0.95.
    low, _ = _coverage_band(200, 0.95)
    assert _covered(_bootstrap_members_only, 200, 0.95, seed=2024) < low


def test_coverage_check_rejects_a_too_wide_interval() -> None:
    # The 95 % intervals offered as 50 % intervals (the same replicates as the 0.95 coverage test).
    _, high = _coverage_band(200, 0.5)
    assert _auc_interval_covered(200, 0.95, 2024) > high


# The paired difference of two attacks' AUCs on the same rounds: a = μ_a·b + e₁, b = μ_b·b + ρe₁ + √(1−ρ²)e₂ (unit
# variances, correlation ρ between the attacks), true difference Φ(μ_a/√2) − Φ(μ_b/√2).  2,000 replicates measured
# a coverage of 0.949 at nominal 0.95 and 0.521 at 0.5; the band is the one above.  Two separate intervals combined
# (a's low minus b's high) ignore the pairing: coverage 1.0 and 0.94, which the band's upper end rejects.
DIFF_MU, DIFF_RHO = (1.0, 0.5), 0.8


def _difference_covered(interval: Any, replicates: int, confidence: float, seed: int) -> int:
    mu_a, mu_b = DIFF_MU
    truth = stats.norm.cdf(mu_a / math.sqrt(2.0)) - stats.norm.cdf(mu_b / math.sqrt(2.0))
    count = 0
    for child in np.random.SeedSequence(seed).spawn(replicates):
        rng = np.random.default_rng(child)
        labels = np.repeat([True, False], COVERAGE_N)
        e1, e2 = rng.normal(size=(2, 2 * COVERAGE_N))
        a = mu_a * labels + e1
        b = mu_b * labels + DIFF_RHO * e1 + math.sqrt(1.0 - DIFF_RHO**2) * e2
        _, low, high = interval(a, b, labels, confidence=confidence, n_boot=1000, rng=rng)
        count += low <= truth <= high
    return count


def _separate_intervals(a: Any, b: Any, labels: Any, *, confidence: float, n_boot: int, rng: Any) -> Any:
    """Deliberately too wide: each attack's own interval, combined as if the attacks were independent."""
    point_a, low_a, high_a = auc_interval(a, labels, confidence=confidence, n_boot=n_boot, rng=rng)
    point_b, low_b, high_b = auc_interval(b, labels, confidence=confidence, n_boot=n_boot, rng=rng)
    return point_a - point_b, low_a - high_b, high_a - low_b


@pytest.mark.parametrize("confidence", [0.95, 0.5])
def test_auc_difference_interval_coverage(confidence: float) -> None:
    low, high = _coverage_band(200, confidence)
    assert low <= _difference_covered(auc_difference_interval, 200, confidence, 2026) <= high


def test_difference_coverage_check_rejects_unpaired_intervals() -> None:
    _, high = _coverage_band(200, 0.5)
    assert _difference_covered(_separate_intervals, 200, 0.5, 2026) > high


def test_auc_difference_interval_is_the_two_aucs_difference_and_its_refusals() -> None:
    rng = np.random.default_rng(3)
    labels = np.repeat([True, False], 20)
    a, b = rng.normal(size=40) + labels, rng.normal(size=40)
    diff, low, high = auc_difference_interval(a, b, labels, n_boot=200, rng=np.random.default_rng(0))
    assert diff == pytest.approx(auc(a, labels) - auc(b, labels)) and low <= diff <= high
    same = auc_difference_interval(a, a, labels, n_boot=50, rng=np.random.default_rng(0))
    assert same == (0.0, 0.0, 0.0)  # an attack against itself: every replicate's difference is 0
    with pytest.raises(ValueError, match="length"):
        auc_difference_interval(a[:-1], b, labels, rng=rng)
    with pytest.raises(ValueError, match="confidence"):
        auc_difference_interval(a, b, labels, confidence=1.0, rng=rng)
    with pytest.raises(TypeError, match="Generator"):
        auc_difference_interval(a, b, labels, rng=0)


# --------------------------------------------------------------------------------------------------------------
# 3. accuracy_interval
# --------------------------------------------------------------------------------------------------------------


def test_accuracy_interval_closed_form() -> None:
    guesses = [1, 0, 1, 1, 0, 0, 1, 0, 1, 1]
    labels = [1, 0, 0, 1, 0, 1, 1, 0, 1, 1]
    acc, low, high = accuracy_interval(guesses, labels, confidence=0.9)
    half = math.sqrt(math.log(2 / 0.1) / 20)
    assert acc == 0.8
    assert low == pytest.approx(0.8 - half, abs=1e-15)
    assert high == 1.0  # 0.8 + 0.547 clipped


def test_accuracy_interval_clips_the_interval_not_the_estimate() -> None:
    labels = np.tile([True, False], 500)
    acc, low, high = accuracy_interval(labels, labels)
    half = math.sqrt(math.log(2 / 0.05) / 2000)
    assert (acc, high) == (1.0, 1.0)
    assert low == pytest.approx(1 - half, abs=1e-15)
    acc, low, high = accuracy_interval(~labels, labels)
    assert (acc, low) == (0.0, 0.0)
    assert high == pytest.approx(half, abs=1e-15)


def test_accuracy_interval_accepts_bools_and_floats() -> None:
    assert accuracy_interval([True, False], [1.0, 1.0], confidence=0.5)[0] == 0.5


def test_accuracy_interval_errors() -> None:
    with pytest.raises(ValueError, match=_msg("guesses and labels must have the same length, got 2 and 3.")):
        accuracy_interval([1, 0], [1, 0, 1])
    with pytest.raises(ValueError, match=_msg("guesses and labels must be non-empty, got length 0.")):
        accuracy_interval([], [])
    with pytest.raises(ValueError, match=re.escape("guesses must hold only 0/1 or booleans, got 0.5 at index 0")):
        accuracy_interval([0.5, 1], [1, 0])
    with pytest.raises(ValueError, match=re.escape("labels must hold only 0/1 or booleans, got -1 at index 1")):
        accuracy_interval([0, 1], [1, -1])
    for bad in (0.0, 1.0, math.nan):
        with pytest.raises(ValueError, match=_msg(f"confidence must be in (0, 1), got {bad!r}.")):
            accuracy_interval([1, 0], [1, 0], confidence=bad)


def _hoeffding_violations(interval: Any, replicates: int, confidence: float, seed: int) -> int:
    """Rounds whose guess is correct with probability α = 0.7; count intervals that miss α."""
    alpha, n = 0.7, 100
    rng = np.random.default_rng(seed)
    violations = 0
    for _ in range(replicates):
        labels = rng.random(n) < 0.5
        correct = rng.random(n) < alpha
        _, low, high = interval(np.where(correct, labels, ~labels), labels, confidence=confidence)
        violations += not low <= alpha <= high
    return violations


@pytest.mark.parametrize("confidence", [0.95, 0.3])
def test_accuracy_interval_coverage(confidence: float) -> None:
    replicates = 2000
    violations = _hoeffding_violations(accuracy_interval, replicates, confidence, seed=11)
    assert stats.binomtest(violations, replicates, 1 - confidence, alternative="greater").pvalue > 1e-3


def test_hoeffding_coverage_check_rejects_a_broken_interval() -> None:
    def third_width(guesses: Any, labels: Any, *, confidence: float) -> tuple[float, float, float]:
        acc = accuracy_interval(guesses, labels, confidence=confidence)[0]
        half = math.sqrt(math.log(2 / (1 - confidence)) / (2 * len(labels))) / 3
        return acc, acc - half, acc + half

    violations = _hoeffding_violations(third_width, 2000, 0.95, seed=11)
    assert stats.binomtest(violations, 2000, 0.05, alternative="greater").pvalue < 1e-3


# --------------------------------------------------------------------------------------------------------------
# 4. tpr_at_fpr
# --------------------------------------------------------------------------------------------------------------

# members 0.9, 0.7, 0.5, 0.5; non-members 0.8, 0.5, 0.3, 0.1
TIES_SCORES = [0.9, 0.7, 0.5, 0.5, 0.8, 0.5, 0.3, 0.1]
TIES_LABELS = [1, 1, 1, 1, 0, 0, 0, 0]


@pytest.mark.parametrize(
    ("fpr", "expected"),
    [
        (0.0, (0.25, 0.0)),  # t = 0.9
        (0.2, (0.25, 0.0)),  # 1 false positive would be FPR 0.25 > 0.2
        (0.25, (0.5, 0.25)),  # t = 0.7 (0.8 gives the same TPR with FPR 0.25)
        (0.49, (0.5, 0.25)),  # t = 0.5 would take both tied members and the tied non-member: FPR 0.5
        (0.5, (1.0, 0.5)),
        (1.0, (1.0, 0.5)),  # lower thresholds add only false positives
    ],
)
def test_tpr_at_fpr_with_ties(fpr: float, expected: tuple[float, float]) -> None:
    assert tpr_at_fpr(TIES_SCORES, TIES_LABELS, fpr) == expected


def test_tpr_at_fpr_when_only_guessing_nobody_qualifies() -> None:
    # the highest score is a non-member's: every threshold but +inf has FPR >= 1/2
    assert tpr_at_fpr([0.5, 0.2, 0.9, 0.1], [1, 1, 0, 0], 0.4) == (0.0, 0.0)
    # all scores tied: the only threshold guesses everyone
    assert tpr_at_fpr([1.0, 1.0, 1.0], [1, 0, 0], 0.99) == (0.0, 0.0)
    assert tpr_at_fpr([1.0, 1.0, 1.0], [1, 0, 0], 1.0) == (1.0, 1.0)


def test_tpr_at_fpr_perfect_separation() -> None:
    assert tpr_at_fpr([0.9, 0.8, 0.2, 0.1], [1, 1, 0, 0], 0.0) == (1.0, 0.0)


def _brute_tpr_at_fpr(scores: NDArray[np.float64], labels: NDArray[np.bool_], fpr: float) -> tuple[float, float]:
    best = (0.0, 0.0)
    for t in [*np.unique(scores), math.inf]:
        guess = scores >= t
        tpr_t = float(np.mean(guess[labels]))
        fpr_t = float(np.mean(guess[~labels]))
        if fpr_t <= fpr and (tpr_t > best[0] or (tpr_t == best[0] and fpr_t < best[1])):
            best = (tpr_t, fpr_t)
    return best


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("fpr", [0.0, 0.01, 0.1, 0.5])
def test_tpr_at_fpr_matches_brute_force(seed: int, fpr: float) -> None:
    rng = np.random.default_rng(seed)
    labels = rng.random(120) < 0.4
    labels[:2] = [True, False]
    scores = np.round(rng.normal(size=120) + labels, 1)
    assert tpr_at_fpr(scores, labels, fpr) == _brute_tpr_at_fpr(scores, labels, fpr)


def test_tpr_at_fpr_at_tpr_zero_is_guessing_nobody() -> None:
    # the non-members' 0.9 alone is within FPR 0.5 but finds no member: guessing nobody does as well with no false
    # positive (this returned (0.0, 0.5))
    assert tpr_at_fpr([0.1, 0.9, 0.5], [1, 0, 0], 0.5) == (0.0, 0.0)
    assert _brute_tpr_at_fpr(np.array([0.1, 0.9, 0.5]), np.array([True, False, False]), 0.5) == (0.0, 0.0)


@pytest.mark.parametrize("seed", range(6))
def test_column_tpr_at_fpr_is_tpr_at_fpr_of_each_columns_valid_pairs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_models, n_records = (8, 64, 3, 40, 2, 17)[seed], 60
    member = rng.random((n_models, n_records)) < 0.5
    scores = np.round(rng.normal(size=(n_models, n_records)) + member * rng.normal(size=n_records), 1)  # ties
    valid = rng.random((n_models, n_records)) < (0.85 if seed % 2 else 1.0)
    scores[~valid] = np.nan  # never looked at
    fprs = [0.0, 0.001, 0.1, 0.25, 0.5, 1.0]
    tpr, realised = column_tpr_at_fpr(scores, member, fprs, valid=valid)
    assert tpr.shape == realised.shape == (len(fprs), n_records)
    undefined = 0
    for x in range(n_records):
        v = valid[:, x]
        if member[v, x].all() or not member[v, x].any():
            assert np.isnan(tpr[:, x]).all() and np.isnan(realised[:, x]).all()
            undefined += 1
            continue
        for i, f in enumerate(fprs):
            expected = tpr_at_fpr(scores[v, x], member[v, x], f)
            assert (tpr[i, x], realised[i, x]) == expected
            assert expected == _brute_tpr_at_fpr(scores[v, x], member[v, x], f)
    assert undefined < n_records  # the comparison ran


def test_column_tpr_at_fpr_hand_made_and_errors() -> None:
    # one column: the ties of test_tpr_at_fpr_with_ties; another: the highest score a non-member's (below FPR 1/4
    # only "guess nobody"; from 1/4 on every member, with that one false positive)
    scores = np.column_stack([TIES_SCORES, [0.5, 0.2, 0.1, 0.05, 0.9, 0.04, 0.03, 0.02]])
    member = np.column_stack([TIES_LABELS, TIES_LABELS]).astype(bool)
    tpr, realised = column_tpr_at_fpr(scores, member, [0.2, 0.25, 0.5])
    assert tpr.tolist() == [[0.25, 0.0], [0.5, 1.0], [1.0, 1.0]]
    assert realised.tolist() == [[0.0, 0.0], [0.25, 0.25], [0.5, 0.25]]
    with pytest.raises(ValueError, match=_msg("fprs[1] must be in [0, 1], got 1.5.")):
        column_tpr_at_fpr(scores, member, [0.1, 1.5])
    with pytest.raises(ValueError, match=r"^valid must be a boolean array of the shape of scores \(8, 2\)"):
        column_tpr_at_fpr(scores, member, [0.1], valid=np.ones((8, 3), dtype=bool))
    with pytest.raises(ValueError, match=r"^scores must be finite, got nan at \(model 4, sample 0\)"):
        column_tpr_at_fpr(np.where(member, scores, np.nan), member, [0.1])  # a valid pair's NaN is refused
    with pytest.raises(ValueError, match=r"^member must have the shape of scores"):
        column_tpr_at_fpr(scores, member[:4], [0.1])


def test_tpr_at_fpr_errors() -> None:
    for bad in (-0.1, 1.5, math.nan):
        with pytest.raises(ValueError, match=_msg(f"fpr must be in [0, 1], got {bad!r}.")):
            tpr_at_fpr([0.1, 0.2], [0, 1], bad)
    with pytest.raises(TypeError, match=_msg("fpr must be a real number, got '0.1'.")):
        tpr_at_fpr([0.1, 0.2], [0, 1], "0.1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="labels must contain both members and non-members"):
        tpr_at_fpr([0.1, 0.2], [0, 0], 0.1)


# --------------------------------------------------------------------------------------------------------------
# 5. miss_rate, rmsd, miss_rate_table
# --------------------------------------------------------------------------------------------------------------

SEEDED = [0.95, 0.85, 0.8, 0.75, 0.5, 0.62]
TRADITIONAL = [0.9, 0.7, 0.79, 0.8, 0.6, 0.58]


def test_miss_rate_hand_made() -> None:
    # model-seeded >= 0.8: records 0, 1, 2; traditional < 0.8 among them: records 1, 2 (0.79 < 0.8)
    assert miss_rate(SEEDED, TRADITIONAL, 0.8) == pytest.approx(2 / 3)
    # >= 0.6: records 0, 1, 2, 3, 5; traditional < 0.6: record 5
    assert miss_rate(SEEDED, TRADITIONAL, 0.6) == pytest.approx(1 / 5)
    # >= 0.7: records 0-3, none below 0.7 in the traditional game; >= 0.95: record 0, traditional 0.9
    assert miss_rate(SEEDED, TRADITIONAL, 0.7) == 0.0
    assert miss_rate(SEEDED, TRADITIONAL, 0.95) == 1.0
    assert miss_rate(TRADITIONAL, TRADITIONAL, 0.5) == 0.0


def test_miss_rate_is_nan_without_high_risk_records_and_quiet() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(miss_rate(SEEDED, TRADITIONAL, 0.96))


def test_rmsd_hand_made() -> None:
    assert rmsd([0.5, 0.9], [0.5, 0.6]) == pytest.approx(math.sqrt(0.09 / 2), abs=1e-15)
    assert rmsd(SEEDED, SEEDED) == 0.0
    assert rmsd([1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]) == 1.0


@pytest.mark.parametrize("fn", [rmsd, lambda a, b: miss_rate(a, b, 0.8), miss_rate_table])
def test_risk_vector_errors(fn: Any) -> None:
    names = ("a", "b") if fn is rmsd else ("model_seeded", "traditional")
    with pytest.raises(ValueError, match=_msg(f"{names[0]} and {names[1]} must have the same length, got 2 and 1.")):
        fn([0.1, 0.2], [0.1])
    with pytest.raises(ValueError, match=_msg(f"{names[0]} and {names[1]} must be non-empty, got length 0.")):
        fn([], [])
    with pytest.raises(ValueError, match=_msg(f"{names[1]} must be finite, got nan at index 0.")):
        fn([0.1], [math.nan])


def test_miss_rate_threshold_errors() -> None:
    with pytest.raises(ValueError, match=_msg("t must be a finite real number, got nan.")):
        miss_rate([0.9], [0.1], math.nan)
    with pytest.raises(ValueError, match=_msg("t must be finite, got inf.")):
        miss_rate([0.9], [0.1], math.inf)


def test_miss_rate_table() -> None:
    assert MISS_RATE_THRESHOLDS == (0.6, 0.7, 0.8, 0.9)
    table = miss_rate_table(SEEDED, TRADITIONAL)
    assert list(table.columns) == ["t", "n_high_risk", "n_missed", "miss_rate"]
    assert table["t"].tolist() == [0.6, 0.7, 0.8, 0.9]
    assert table["n_high_risk"].tolist() == [5, 4, 3, 1]
    assert table["n_missed"].tolist() == [1, 0, 2, 0]
    assert table["miss_rate"].tolist() == pytest.approx([1 / 5, 0.0, 2 / 3, 0.0])
    assert table["n_high_risk"].dtype.kind == "i" and table["miss_rate"].dtype.kind == "f"
    for t, rate in zip(table["t"], table["miss_rate"], strict=True):
        assert rate == miss_rate(SEEDED, TRADITIONAL, t)


def test_miss_rate_table_nan_row() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = miss_rate_table(SEEDED, TRADITIONAL, thresholds=(0.99,))
    assert table.iloc[0]["n_high_risk"] == 0 and table.iloc[0]["n_missed"] == 0
    assert math.isnan(table.iloc[0]["miss_rate"])


def test_miss_rate_table_threshold_errors() -> None:
    with pytest.raises(ValueError, match=_msg("thresholds must be a non-empty sequence, got ().")):
        miss_rate_table(SEEDED, TRADITIONAL, thresholds=())
    with pytest.raises(ValueError, match=_msg("thresholds[1] must be a finite real number, got nan.")):
        miss_rate_table(SEEDED, TRADITIONAL, thresholds=(0.5, math.nan))


# --------------------------------------------------------------------------------------------------------------
# 6. plot_risk_scatter
# --------------------------------------------------------------------------------------------------------------


def _records(groups: tuple[str, ...] = ()) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for group in groups or (None,):
        for record in range(8):
            selection = "achilles" if record < 3 else "random"
            for game, shift in (("traditional", 0.0), ("model-seeded", 0.08)):
                value = float(np.clip(0.55 + 0.05 * record + shift + rng.normal(0, 0.02), 0, 1))
                row = {
                    "record": record,
                    "game": game,
                    "auc": value,
                    "auc_low": max(0.0, value - 0.05),
                    "auc_high": min(1.0, value + 0.05),
                    "selection": selection,
                }
                if group is not None:
                    row["group"] = group
                rows.append(row)
    return pd.DataFrame(rows)


PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_plot_writes_png(tmp_path: Path) -> None:
    out = plot_risk_scatter(_records(), tmp_path / "risk.png", title="Synthpop, Adult")
    assert out == tmp_path / "risk.png"
    data = out.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 1000


def test_plot_groups_other_selections_and_svg(tmp_path: Path) -> None:
    records = _records(("synthpop", "baynet", "privbayes_eps1", "privbayes_eps10"))
    records.loc[records["record"] == 7, "selection"] = "hand-picked"
    # a record with one game only is skipped; a group with no pair at all gets no subplot
    extra = pd.DataFrame(
        [
            {"record": 99, "game": "traditional", "auc": 0.5, "auc_low": 0.4, "auc_high": 0.6, "selection": "random"},
            {"record": 1, "game": "model-seeded", "auc": 1.0, "auc_low": 1.0, "auc_high": 1.0, "selection": "x"},
        ]
    ).assign(group=["synthpop", "lonely"])
    out = plot_risk_scatter(pd.concat([records, extra], ignore_index=True), tmp_path / "risk.SVG")
    text = out.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    assert "hand-picked" in text and "lonely" not in text
    assert "privbayes_eps10" in text


def test_plot_pdf_and_interval_not_containing_estimate(tmp_path: Path) -> None:
    records = _records()
    records.at[0, "auc_low"] = float(records["auc"].iloc[0]) + 0.01  # a percentile interval may miss its estimate
    out = plot_risk_scatter(records, str(tmp_path / "risk.pdf"))
    assert out.read_bytes().startswith(b"%PDF")


def test_plot_errors(tmp_path: Path) -> None:
    records = _records()
    with pytest.raises(ValueError, match=re.escape("path must end in .png, .pdf or .svg, got ")):
        plot_risk_scatter(records, tmp_path / "risk.jpg")
    with pytest.raises(ValueError, match=re.escape("records must have the columns")):
        plot_risk_scatter(records.drop(columns="selection"), tmp_path / "risk.png")
    only_one_game = records[records["game"] == "traditional"]
    with pytest.raises(ValueError, match="^" + re.escape("records must contain at least one record with both")):
        plot_risk_scatter(only_one_game, tmp_path / "risk.png")
    split = records.copy()
    split.loc[split["game"] == "model-seeded", "record"] += 100  # no record id in both games
    with pytest.raises(ValueError, match="^" + re.escape("records must contain at least one record with both")):
        plot_risk_scatter(split, tmp_path / "risk.png")
    duplicated = pd.concat([records, records.iloc[[0]]], ignore_index=True)
    with pytest.raises(
        ValueError,
        match=_msg(
            "records must have one row per (record, game) in each group, got record 0 twice in game 'traditional'."
        ),
    ):
        plot_risk_scatter(duplicated, tmp_path / "risk.png")
    with pytest.raises(ValueError, match=re.escape("twice in game 'traditional', group 'g'.")):
        plot_risk_scatter(duplicated.assign(group="g"), tmp_path / "risk.png")
    mixed = records.copy()
    mixed.loc[1, "selection"] = "achilles" if mixed.loc[1, "selection"] == "random" else "random"
    with pytest.raises(
        ValueError, match="^" + re.escape("selection must be the same in both games for each record, got")
    ):
        plot_risk_scatter(mixed, tmp_path / "risk.png")
    not_finite = records.copy()
    not_finite.at[3, "auc_high"] = math.nan
    with pytest.raises(
        ValueError,
        match=_msg("records must have finite numbers in 'auc_high', got nan for record 1 in game 'model-seeded'."),
    ):
        plot_risk_scatter(not_finite, tmp_path / "risk.png")
    assert not list(tmp_path.iterdir())
