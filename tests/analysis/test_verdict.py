"""One verdict per claim (privgame.analysis.verdict): the count chance allows, the binomial test's level over whole
experiments (worst case and Steinke et al.'s bound on randomized response), its power on a false claim, and its
refusals."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from scipy import stats

from privgame.analysis.one_run import epsilon_lower_bound
from privgame.analysis.verdict import (
    NO_CLAIM,
    NOT_REFUTED,
    allowed_exceedances,
    exceedance_p,
    pooled_verdict,
    refuted_label,
    verdict_columns,
)


@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.3])
def test_allowed_is_the_last_count_whose_tail_exceeds_the_level(alpha: float) -> None:
    for n in range(1, 301):
        allowed = allowed_exceedances(n, alpha)
        assert stats.binom.sf(allowed, n, alpha) <= alpha  # P(X >= allowed + 1) within the level
        assert allowed == 0 or stats.binom.sf(allowed - 1, n, alpha) > alpha  # one fewer would not be
    assert allowed_exceedances(0, alpha) == 0


def test_the_documented_counts() -> None:
    assert [allowed_exceedances(n, 0.05) for n in (1, 3, 20, 200)] == [0, 1, 3, 15]
    assert exceedance_p(4, 20, 0.05) == pytest.approx(stats.binom.sf(3, 20, 0.05))
    assert exceedance_p(0, 0, 0.05) == 1.0


def test_labels() -> None:
    assert refuted_label(0.95) == "refuted at 95 %"
    assert refuted_label(0.999) == "refuted at 99.9 %"
    assert pooled_verdict(2.0, 1.0, 0.95) == "refuted at 95 %"
    assert pooled_verdict(1.0, 1.0, 0.95) == NOT_REFUTED  # equal is not above
    assert pooled_verdict(2.0, math.nan, 0.95) == NO_CLAIM
    assert pooled_verdict(math.nan, 1.0, 0.95) == "no trials"


def test_missing_bounds_are_not_counted() -> None:
    out = verdict_columns([2.0, math.nan, 2.0], claim=1.0, confidence=0.95)
    assert (out["over_claim"], out["over_claim_allowed"]) == (2, allowed_exceedances(2, 0.05))
    assert out["verdict"] == "refuted at 95 %"
    assert verdict_columns([math.nan], claim=1.0, confidence=0.95)["verdict"] == "no trials"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": -1, "alpha": 0.05}, "n must be"),
        ({"n": 2.5, "alpha": 0.05}, "n must be"),
        ({"n": 5, "alpha": 0.0}, "alpha must be"),
        ({"n": 5, "alpha": 1.0}, "alpha must be"),
    ],
)
def test_bad_arguments_are_refused_in_one_line(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        allowed_exceedances(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("confidence", [0.0, 1.0, float("nan")])
def test_bad_confidence_is_refused(confidence: float) -> None:
    with pytest.raises(ValueError, match="confidence must be"):
        verdict_columns([1.0], claim=1.0, confidence=confidence)


def _level_is_kept(refuted: np.ndarray, alpha: float) -> None:
    """The share of refuted experiments is at most α beyond binomial noise (one-sided p > 1e-3)."""
    p = stats.binomtest(int(refuted.sum()), refuted.size, alpha, alternative="greater").pvalue
    assert p > 1e-3, (int(refuted.sum()), refuted.size)


@pytest.mark.parametrize("n", [1, 5, 20, 50])
def test_worst_case_level_over_many_experiments(n: int) -> None:
    """Trials whose bound exceeds a true claim with probability exactly α (the most a sound estimator allows): over
    4,000 simulated experiments of n trials, the verdict refutes in at most α of them; a count above zero as the
    verdict would refute in 1 − (1 − α)ⁿ (64 % at n = 20), which the same check catches."""
    rng = np.random.default_rng(2026)
    alpha = 0.05
    exceed = rng.random((4000, n)) < alpha
    bounds = np.where(exceed, 2.0, 0.5)
    refuted = np.array([verdict_columns(b, 1.0, 1 - alpha)["verdict"] != NOT_REFUTED for b in bounds])
    _level_is_kept(refuted, alpha)
    if n > 1:
        naive = exceed.any(axis=1)
        assert stats.binomtest(int(naive.sum()), naive.size, alpha, alternative="greater").pvalue < 1e-3


@functools.cache
def _steinke(m: int, v: int) -> float:
    return epsilon_lower_bound(m, m, v, confidence=0.95)


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_level_with_steinkes_bound_on_randomized_response(epsilon: float) -> None:
    """The quickstart's audit in closed form: randomized response at ε, m = 1,000 canaries, every one guessed by its
    released bit, so the correct guesses are Binomial(m, e^ε / (1 + e^ε)) and each trial's bound is Steinke et al.'s
    at 95 %.  Over 400 experiments of 20 trials on the true claim, the verdict refutes in at most 5 % (beyond
    binomial noise); on a claim of 0.6 ε, it refutes in most of them."""
    rng = np.random.default_rng(7)
    m, trials = 1000, 20
    p = math.exp(epsilon) / (1 + math.exp(epsilon))
    correct = rng.binomial(m, p, size=(400, trials))
    bounds = np.vectorize(_steinke)(m, correct)
    verdicts = [verdict_columns(b, epsilon, 0.95)["verdict"] for b in bounds]
    _level_is_kept(np.array([v != NOT_REFUTED for v in verdicts]), 0.05)
    false_claim = [verdict_columns(b, 0.6 * epsilon, 0.95)["verdict"] for b in bounds]
    assert np.mean([v == "refuted at 95 %" for v in false_claim]) > 0.9
