"""Tests of the one-run audit (Steinke, Nasr, Jagielski 2023, arXiv:2305.08846, Thm 5.2 / App. D).

Three independent references check :mod:`privgame.analysis.one_run`:

* the paper's published numbers;
* a slow, naive re-implementation of Appendix D (the p-value loop, and an ε search that scans a fine grid from 0
  for the first point where p >= β and then bisects to 1e-10), which finds the *first* crossing even if the
  p-value were not monotone in ε;
* a 40-digit mpmath oracle for the p-value (pmf from exact log-gamma, sums in mpmath, truncation bounded by a
  rigorous geometric remainder).

The soundness test simulates randomized response at a known ε and checks, with a binomial test, that the bound
exceeds the true ε no more often than 1 − confidence; a meta-test shows that this check rejects broken estimators,
and a two-sided test compares the violation count with its exact prediction for these audits.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings

import mpmath
import numpy as np
import pytest
from scipy import stats

from privgame.analysis.one_run import (
    OneRunAudit,
    audit_top_k,
    count_correct,
    epsilon_lower_bound,
    guesses_top_k,
    p_value,
)

# --------------------------------------------------------------------------------------------------------------
# 1. Published values (arXiv:2305.08846, Sections 5-6 and Appendix D)
# --------------------------------------------------------------------------------------------------------------

PUBLISHED_BOUNDS = [
    # (m, r, v, delta, confidence, epsilon lower bound rounded to 3 decimals)
    (100, 100, 75, 0.0, 0.95, 0.702),
    (100, 100, 75, 1e-4, 0.95, 0.699),
    (1000, 100, 75, 1e-4, 0.95, 0.673),
    (10_000, 10_000, 9_820, 0.0, 0.95, 3.874),  # 3.87 in the paper
]


@pytest.mark.parametrize(("m", "r", "v", "delta", "confidence", "expected"), PUBLISHED_BOUNDS)
def test_epsilon_lower_bound_matches_published_values(m, r, v, delta, confidence, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # m = 1000, δ = 1e-4 warns that 2mδ is large
        got = epsilon_lower_bound(m, r, v, delta=delta, confidence=confidence)
    assert got == pytest.approx(expected, abs=5e-4)


def test_p_value_matches_published_value_at_ln3():
    assert p_value(100, 100, 75, math.log(3)) == pytest.approx(0.553, abs=5e-4)


# --------------------------------------------------------------------------------------------------------------
# 2. Naive reference implementation of Appendix D
# --------------------------------------------------------------------------------------------------------------


def naive_p_value(m, r, v, eps, delta, i_min=1):
    """The paper's ``p_value_DP_audit``, vectorised over an array of ε (and over i via a running sum).

    For each ε: q = 1/(1 + e^-ε); tail = P[Bin(r, q) >= v]; running sum over i = 1..v of pmf(v - i);
    alpha = max(sum / i); p = min(1, tail + alpha·δ·2m).  ``i_min`` restricts the maximum to i >= i_min.
    """
    eps = np.atleast_1d(np.asarray(eps, dtype=float))
    q = 1.0 / (1.0 + np.exp(-eps))
    tail = stats.binom.sf(v - 1, r, q)
    alpha = np.zeros_like(eps)
    if delta > 0 and v >= i_min:
        i = np.arange(1, v + 1)
        pmf = stats.binom.pmf(v - i[None, :], r, q[:, None])
        running = np.cumsum(pmf, axis=1)
        alpha = np.max(running[:, i_min - 1 :] / i[i_min - 1 :], axis=1)
    return np.minimum(1.0, tail + alpha * delta * 2.0 * m)


def naive_epsilon_lower_bound(m, r, v, delta, confidence, i_min=1, step=1e-3, chunk=400, eps_cap=40.0):
    """First crossing of p(ε) >= β: scan a grid of step ``step`` from 0, then bisect the bracketing cell to 1e-10.

    Sound even for a non-monotone p-value (up to bumps narrower than ``step``).
    """
    beta = 1.0 - confidence
    start = 0.0
    while start < eps_cap:
        grid = start + step * np.arange(chunk + 1)
        hit = naive_p_value(m, r, v, grid, delta, i_min) >= beta
        if hit.any():
            j = int(np.argmax(hit))
            if j == 0:
                assert start == 0.0  # the previous chunk's last point was below β
                return 0.0
            lo, hi = float(grid[j - 1]), float(grid[j])
            while hi - lo > 1e-10:
                mid = 0.5 * (lo + hi)
                if naive_p_value(m, r, v, mid, delta, i_min)[0] >= beta:
                    hi = mid
                else:
                    lo = mid
            return 0.5 * (lo + hi)
        start = float(grid[-1])
    raise AssertionError(f"p-value never reached β below ε = {eps_cap}")


def _random_cases():
    """~40 seeded (m, r, v, δ, confidence); the last 14 have 2mδ > 1, where the module's special
    first-crossing argument (windows i < 2mδ) is used."""
    rng = np.random.default_rng(20230508)
    cases = []
    for _ in range(26):
        m = int(np.exp(rng.uniform(np.log(50), np.log(20_000))))
        r = int(rng.integers(10, min(m, 600) + 1))
        v = int(rng.integers(math.ceil(0.55 * r), r + 1))
        delta = float(rng.choice([0.0, 0.0, 1e-6, 1e-5, 1e-4]))
        confidence = float(rng.choice([0.2, 0.5, 0.8, 0.9, 0.95, 0.99]))
        cases.append((m, r, v, delta, confidence))
    for _ in range(14):
        m = int(rng.choice([1000, 5000, 20_000]))
        delta = float(rng.choice([1e-3, 5e-3])) if m < 20_000 else 1e-4
        r = int(rng.integers(50, 600))
        v = int(rng.integers(math.ceil(0.6 * r), r + 1))
        confidence = float(rng.choice([0.2, 0.2, 0.5, 0.95]))
        cases.append((m, r, v, delta, confidence))
    return cases


RANDOM_CASES = _random_cases()


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(("m", "r", "v", "delta", "confidence"), RANDOM_CASES)
def test_epsilon_lower_bound_agrees_with_naive_first_crossing(m, r, v, delta, confidence):
    expected = naive_epsilon_lower_bound(m, r, v, delta, confidence)
    got = epsilon_lower_bound(m, r, v, delta=delta, confidence=confidence)
    assert got == pytest.approx(expected, abs=1e-6)
    if got > 0:
        # The module's answer really is a crossing: rejected just below, not rejected just above.
        beta = 1.0 - confidence
        assert naive_p_value(m, r, v, got - 1e-6, delta)[0] < beta
        assert naive_p_value(m, r, v, got + 1e-6, delta)[0] >= beta


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_random_cases_exercise_crossings_before_the_large_window_crossing():
    """Guard on the test above: among the 2mδ > 1 cases, some have a first crossing (of a window i < 2mδ) strictly
    before the crossing of the windows i >= 2mδ, so that a "last/other crossing" bug would be caught there."""
    earlier = 0
    for m, r, v, delta, confidence in RANDOM_CASES:
        c = 2 * m * delta
        if c <= 1:
            continue
        first = naive_epsilon_lower_bound(m, r, v, delta, confidence)
        large_windows_only = naive_epsilon_lower_bound(m, r, v, delta, confidence, i_min=math.ceil(c))
        if first > 0 and large_windows_only > first + 1e-4:
            earlier += 1
    assert earlier >= 3


# --------------------------------------------------------------------------------------------------------------
# 3. p-value against a 40-digit mpmath oracle
# --------------------------------------------------------------------------------------------------------------

_ORACLE_DPS = 40
_NEGLIGIBLE = mpmath.mpf(10) ** -45  # relative truncation of every oracle sum


@functools.cache
def oracle_p_value(m, r, v, eps, delta):
    """min(1, P[B >= v] + 2mδ · max_{i=1..v} P[v-i <= B < v] / i), B ~ Binomial(r, e^ε/(1+e^ε)), in mpmath.

    Each pmf value comes from exact log-gamma; sums are accumulated in mpmath and truncated only when a geometric
    bound on the remainder (pmf ratios are monotone beyond the mode) is below 1e-45 of the sum.  In α, the running
    sum over k = v-1, v-2, ... stops once even the whole remaining mass could not raise the maximum.
    """
    with mpmath.workdps(_ORACLE_DPS):
        e = mpmath.mpf(eps)  # the float ε, exactly
        q = 1 / (1 + mpmath.exp(-e))
        p_fail = 1 / (1 + mpmath.exp(e))
        log_q, log_f = mpmath.log(q), mpmath.log(p_fail)
        lg_r = mpmath.loggamma(r + 1)

        def pmf(k):
            return mpmath.exp(lg_r - mpmath.loggamma(k + 1) - mpmath.loggamma(r - k + 1) + k * log_q + (r - k) * log_f)

        def up_ratio(k):  # pmf(k + 1) / pmf(k)
            return (r - k) * q / ((k + 1) * p_fail)

        def down_ratio(k):  # pmf(k - 1) / pmf(k)
            return k * p_fail / ((r - k + 1) * q)

        mode = min(int(mpmath.floor((r + 1) * q)), r)

        def sum_up(k):  # sum_{j >= k} pmf(j) for k > mode, where the terms decrease
            s = mpmath.mpf(0)
            while True:
                t = pmf(k)
                s += t
                rho = up_ratio(k)
                if k == r or (rho < 1 and t * rho / (1 - rho) < _NEGLIGIBLE * s):
                    return s
                k += 1

        def sum_down(k):  # sum_{j <= k} pmf(j) for k <= mode, where the terms decrease as j decreases
            s = mpmath.mpf(0)
            while True:
                t = pmf(k)
                s += t
                rho = down_ratio(k)
                if k == 0 or (rho < 1 and t * rho / (1 - rho) < _NEGLIGIBLE * s):
                    return s
                k -= 1

        if v == 0:
            tail = mpmath.mpf(1)
        elif v > mode:
            tail = sum_up(v)
        else:
            tail = 1 - sum_down(v - 1)

        alpha = mpmath.mpf(0)
        if delta > 0 and v > 0:
            k = v - 1
            if k - mode > 100_000:
                raise NotImplementedError("oracle kept fast: v - 1 too far above the mode")
            s = mpmath.mpf(0)
            while True:
                t = pmf(k)
                s += t
                i = v - k
                alpha = max(alpha, s / i)
                if k == 0:
                    break
                rho = down_ratio(k)
                if k <= mode and rho < 1:
                    remainder = t * rho / (1 - rho)  # bounds sum_{j < k} pmf(j)
                    if (s + remainder) / (i + 1) <= alpha:  # no later window i' > i can beat alpha
                        break
                k -= 1
        return min(mpmath.mpf(1), tail + alpha * 2 * m * mpmath.mpf(delta))


ORACLE_CASES = [
    # (m, r, v, ε, δ)
    (100, 100, 75, math.log(3), 0.0),
    (100, 100, 75, 0.7, 1e-4),
    (1000, 100, 75, 0.5, 1e-4),
    (200, 200, 110, 0.3, 1e-3),  # v below the mode: α is the shortest window
    (50, 50, 50, 1.0, 1e-3),
    # r = 10^5: v about 5 sd above the mean
    (100_000, 100_000, 52_000, 0.05, 0.0),
    (100_000, 100_000, 52_000, 0.05, 1e-6),
    # r = 10^6: v above the mean (4 sd), below the mean, far (8 sd) in the tail
    (1_000_000, 1_000_000, 504_000, 0.01, 0.0),
    (1_000_000, 1_000_000, 504_000, 0.01, 1e-7),
    (1_000_000, 1_000_000, 502_000, 0.01, 1e-4),
    (1_000_000, 1_000_000, 506_500, 0.01, 1e-9),
    # large ε, where 1 - q = expit(-ε) is tiny and v is close to r
    (1000, 1000, 1000, 8.0, 1e-4),
    (100_000, 100_000, 99_990, 8.0, 0.0),  # tail ~2e-6
    (100_000, 100_000, 99_990, 8.0, 1e-4),  # α·2mδ dominates
    (100, 100, 100, 12.0, 1e-3),
    (1_000_000, 1_000_000, 999_982, 10.0, 0.0),
    (1_000_000, 1_000_000, 999_999, 12.0, 0.0),
    (1_000_000, 1_000_000, 999_999, 12.0, 1e-8),
    (1_000_000, 1_000_000, 1_000_000, 12.0, 1e-7),
]


@pytest.mark.parametrize(("m", "r", "v", "eps", "delta"), ORACLE_CASES)
def test_p_value_matches_mpmath_oracle(m, r, v, eps, delta):
    expected = oracle_p_value(m, r, v, eps, delta)
    assert expected < 1  # otherwise the clamp would hide the comparison
    got = p_value(m, r, v, eps, delta)
    assert abs(got - float(expected)) <= 1e-12 * float(expected), (got, float(expected))


def test_p_value_oracle_cases_make_alpha_visible():
    """Guard on the oracle cases: wherever δ > 0 the α term is at least 1e-4 of p, so the 1e-12 comparison of p
    also checks α to 1e-8 relative (and to 1e-12 where α dominates)."""
    shares = []
    for m, r, v, eps, delta in ORACLE_CASES:
        if delta > 0:
            with_alpha, tail = oracle_p_value(m, r, v, eps, delta), oracle_p_value(m, r, v, eps, 0.0)
            shares.append(float((with_alpha - tail) / with_alpha))
    assert min(shares) >= 1e-4
    assert sum(s > 0.5 for s in shares) >= 4


# --------------------------------------------------------------------------------------------------------------
# 4. Errors
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("m", "r", "v", "error", "match"),
    [
        (100, 10, 11, ValueError, r"^v \(the number of correct guesses\) must be at most r"),
        (10, 11, 5, ValueError, r"^r \(the number of guesses\) must be at most m"),
        (0, 0, 0, ValueError, r"^m must be an integer >= 1"),
        (-5, 0, 0, ValueError, r"^m must be an integer >= 1"),
        (100, -1, 0, ValueError, r"^r must be an integer >= 0"),
        (100, 10, -1, ValueError, r"^v must be an integer >= 0"),
        (100.0, 10, 5, TypeError, r"^m must be an integer"),
        (100, 10.0, 5, TypeError, r"^r must be an integer"),
        (100, 10, np.float64(5), TypeError, r"^v must be an integer"),
        (100, 10, "5", TypeError, r"^v must be an integer"),
        (True, 1, 1, TypeError, r"^m must be an integer"),
    ],
)
def test_bad_counts_raise_naming_the_field(m, r, v, error, match):
    with pytest.raises(error, match=match):
        p_value(m, r, v, 1.0)
    with pytest.raises(error, match=match):
        epsilon_lower_bound(m, r, v)


@pytest.mark.parametrize("eps", [-0.1, -1e-300, math.nan, math.inf, -math.inf])
def test_bad_epsilon_raises_value_error(eps):
    with pytest.raises(ValueError, match=r"^epsilon must be (finite and )?>= 0"):
        p_value(100, 100, 75, eps)


def test_non_real_epsilon_raises_type_error():
    with pytest.raises(TypeError, match=r"^epsilon must be a real number"):
        p_value(100, 100, 75, "1.0")


@pytest.mark.parametrize("delta", [-1e-9, 1.0, 1.5, math.nan, math.inf])
def test_bad_delta_raises_value_error(delta):
    match = r"^delta must be (finite and )?in \[0, 1\)"
    with pytest.raises(ValueError, match=match):
        p_value(100, 100, 75, 1.0, delta)
    with pytest.raises(ValueError, match=match):
        epsilon_lower_bound(100, 100, 75, delta=delta)
    with pytest.raises(ValueError, match=match):
        audit_top_k([0.0, 1.0], [0, 1], k_pos=1, k_neg=1, rng=np.random.default_rng(0), delta=delta)


@pytest.mark.parametrize("confidence", [0.0, 1.0, -0.5, 1.5, math.nan, math.inf])
def test_bad_confidence_raises_value_error(confidence):
    match = r"^confidence must be (finite and )?in \(0, 1\)"
    with pytest.raises(ValueError, match=match):
        epsilon_lower_bound(100, 100, 75, confidence=confidence)
    with pytest.raises(ValueError, match=match):
        audit_top_k([0.0, 1.0], [0, 1], k_pos=1, k_neg=1, rng=np.random.default_rng(0), confidence=confidence)


def test_top_k_counts_exceeding_m_raise():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"^k_pos \+ k_neg must be at most m = 4"):
        guesses_top_k([0.1, 0.2, 0.3, 0.4], 3, 2, rng=rng)
    with pytest.raises(ValueError, match=r"^k_pos \+ k_neg must be at most m = 4"):
        audit_top_k([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1], k_pos=2, k_neg=3, rng=rng)


@pytest.mark.parametrize(
    ("k_pos", "k_neg", "error", "match"),
    [
        (-1, 1, ValueError, r"^k_pos must be an integer >= 0"),
        (1, -1, ValueError, r"^k_neg must be an integer >= 0"),
        (1.0, 1, TypeError, r"^k_pos must be an integer"),
        (1, 1.5, TypeError, r"^k_neg must be an integer"),
    ],
)
def test_bad_top_k_counts_raise_naming_the_field(k_pos, k_neg, error, match):
    with pytest.raises(error, match=match):
        guesses_top_k([0.1, 0.2, 0.3, 0.4], k_pos, k_neg, rng=np.random.default_rng(0))


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_scores_raise(bad):
    scores = [0.1, bad, 0.3]
    with pytest.raises(ValueError, match=r"^scores must be finite"):
        guesses_top_k(scores, 1, 1, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"^scores must be finite"):
        audit_top_k(scores, [0, 1, 0], k_pos=1, k_neg=1, rng=np.random.default_rng(0))


def test_wrong_shapes_raise():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"^scores must be a 1-d array"):
        guesses_top_k(np.zeros((2, 3)), 1, 1, rng=rng)
    with pytest.raises(ValueError, match=r"^scores must be a 1-d array"):
        guesses_top_k(np.float64(1.0), 0, 0, rng=rng)
    with pytest.raises(ValueError, match=r"^membership must be a 1-d array of length 3"):
        audit_top_k([0.1, 0.2, 0.3], [0, 1], k_pos=1, k_neg=1, rng=rng)
    with pytest.raises(ValueError, match=r"^membership must be a 1-d array of length 3"):
        audit_top_k([0.1, 0.2, 0.3], [[0, 1, 0]], k_pos=1, k_neg=1, rng=rng)
    with pytest.raises(ValueError, match=r"^membership must be a 1-d array of length 3"):
        count_correct([1, 0, -1], [0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"^guesses must be a 1-d array"):
        count_correct([[1, 0, -1]], [0, 1, 0])


def test_bad_guess_and_membership_values_raise():
    with pytest.raises(ValueError, match=r"^guesses must be a 1-d array of -1, 0 and \+1"):
        count_correct([1, 2, -1], [0, 1, 0])
    with pytest.raises(ValueError, match=r"^membership must hold only 0/1"):
        count_correct([1, 0, -1], [0, 2, 0])


@pytest.mark.parametrize("rng", [0, np.random.RandomState(0), None, np.random.SeedSequence(0)])
def test_rng_must_be_a_generator(rng):
    with pytest.raises(TypeError, match=r"^rng must be a numpy\.random\.Generator"):
        guesses_top_k([0.1, 0.2, 0.3], 1, 1, rng=rng)
    with pytest.raises(TypeError, match=r"^rng must be a numpy\.random\.Generator"):
        audit_top_k([0.1, 0.2, 0.3], [0, 1, 0], k_pos=1, k_neg=1, rng=rng)


# --------------------------------------------------------------------------------------------------------------
# 5. Warnings
# --------------------------------------------------------------------------------------------------------------


def test_too_few_guesses_warns_and_returns_zero():
    # 3 correct out of 3 has p = 1/8 > 0.05 at ε = 0: no positive bound is possible.
    with pytest.warns(UserWarning, match="no positive ε lower bound is possible"):
        assert epsilon_lower_bound(100, 3, 3, confidence=0.95) == 0.0
    with pytest.warns(UserWarning, match="no positive ε lower bound is possible"):
        result = audit_top_k([0.0, 1.0, 2.0, 3.0], [0, 0, 1, 1], k_pos=2, k_neg=1, rng=np.random.default_rng(0))
    assert result.epsilon == 0.0


def test_zero_bound_from_poor_guesses_does_not_warn():
    # Enough guesses for a positive bound, but too few correct: 0 without a warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert epsilon_lower_bound(100, 100, 50) == 0.0
        assert epsilon_lower_bound(100, 100, 100, delta=1e-6) > 0.0


def test_large_two_m_delta_warns():
    with pytest.warns(UserWarning, match="δ term of the p-value"):
        bound = epsilon_lower_bound(5000, 1000, 800, delta=1e-3)
    assert 0.0 < bound < epsilon_lower_bound(5000, 1000, 800)


# --------------------------------------------------------------------------------------------------------------
# 6. Guessing rule, counting, the audit result
# --------------------------------------------------------------------------------------------------------------


def test_guesses_top_k_counts_and_cuts():
    rng = np.random.default_rng(1)
    scores = rng.integers(0, 5, size=200).astype(float)  # many ties at both cuts
    for k_pos, k_neg in [(0, 0), (30, 70), (100, 100), (200, 0), (0, 200), (1, 199)]:
        g = guesses_top_k(scores, k_pos, k_neg, rng=rng)
        assert g.dtype == np.int8 and g.shape == scores.shape
        assert np.count_nonzero(g == 1) == k_pos
        assert np.count_nonzero(g == -1) == k_neg
        assert np.count_nonzero(g == 0) == 200 - k_pos - k_neg
        if 0 < k_pos < 200:
            assert scores[g == 1].min() >= scores[g != 1].max()
        if 0 < k_neg < 200:
            assert scores[g == -1].max() <= scores[g != -1].min()


def test_guesses_top_k_is_reproducible_and_ties_depend_on_seed():
    scores = np.array([0.0] * 10 + [1.0] * 10 + [2.0] * 2)
    first = guesses_top_k(scores, 7, 3, rng=np.random.default_rng(123))
    again = guesses_top_k(scores, 7, 3, rng=np.random.default_rng(123))
    np.testing.assert_array_equal(first, again)
    # The two 2.0s are always members; the other 5 member guesses and the 3 non-member guesses are tied choices.
    choices = set()
    for seed in range(20):
        g = guesses_top_k(scores, 7, 3, rng=np.random.default_rng(seed))
        assert np.all(g[20:] == 1)
        choices.add((tuple(np.flatnonzero(g == 1)), tuple(np.flatnonzero(g == -1))))
    assert len(choices) >= 10  # 252 · 120 equally likely choices: 20 seeds give < 10 distinct with tiny probability


def test_guesses_top_k_spreads_tied_guesses_uniformly():
    """All scores equal: each index is guessed +1 w.p. k_pos/m and −1 w.p. k_neg/m.

    Chi-square on the per-index counts (Bonferroni: 5e-4 per sign).  Per trial the guesses are drawn without
    replacement, so the per-index counts are less variable than multinomial ones and the chi-square test is
    conservative: a false failure has probability <= 1e-3.
    """
    m, k_pos, k_neg, trials = 12, 3, 5, 2000
    rng = np.random.default_rng(99)
    pos = np.zeros(m)
    neg = np.zeros(m)
    for _ in range(trials):
        g = guesses_top_k(np.full(m, 0.5), k_pos, k_neg, rng=rng)
        pos += g == 1
        neg += g == -1
    assert stats.chisquare(pos, np.full(m, trials * k_pos / m)).pvalue > 5e-4
    assert stats.chisquare(neg, np.full(m, trials * k_neg / m)).pvalue > 5e-4


def test_count_correct_on_hand_made_examples():
    assert count_correct([1, -1, 0, 1, -1], [1, 0, 1, 0, 1]) == (4, 2)
    assert count_correct([1, -1, 0, 1, -1], [True, False, True, True, False]) == (4, 4)
    assert count_correct([0, 0, 0], [1, 0, 1]) == (0, 0)
    assert count_correct(np.array([-1, -1, 1], dtype=np.int8), np.array([1, 1, 0])) == (3, 0)
    assert count_correct([], []) == (0, 0)


def test_audit_top_k_with_perfect_scores():
    rng = np.random.default_rng(5)
    membership = rng.random(300) < 0.5
    scores = membership.astype(float) + 0.0  # perfect (and tied within each class)
    k_pos, k_neg = 90, 80
    result = audit_top_k(scores, membership, k_pos=k_pos, k_neg=k_neg, rng=rng, delta=1e-6, confidence=0.9)
    assert isinstance(result, OneRunAudit)
    assert (result.m, result.r, result.v) == (300, k_pos + k_neg, k_pos + k_neg)
    assert (result.k_pos, result.k_neg, result.delta, result.confidence) == (k_pos, k_neg, 1e-6, 0.9)
    assert result.epsilon == epsilon_lower_bound(300, 170, 170, delta=1e-6, confidence=0.9)
    assert result.epsilon > 1.0
    assert result.p_value(1.0) == p_value(300, 170, 170, 1.0, 1e-6)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.epsilon = 0.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.v = 0  # type: ignore[misc]


def test_audit_top_k_counts_match_guesses():
    rng = np.random.default_rng(8)
    membership = rng.random(500) < 0.5
    scores = membership + rng.normal(0.0, 1.0, 500)
    result = audit_top_k(scores, membership, k_pos=100, k_neg=150, rng=np.random.default_rng(3))
    g = guesses_top_k(scores, 100, 150, rng=np.random.default_rng(3))
    assert (result.r, result.v) == count_correct(g, membership)
    assert result.epsilon == epsilon_lower_bound(500, result.r, result.v)


# --------------------------------------------------------------------------------------------------------------
# 7. Soundness (STYLE.md): the bound exceeds the true ε at most 1 − confidence of the time
# --------------------------------------------------------------------------------------------------------------

SOUNDNESS_SEED = 0x5EED_0E2A
SOUNDNESS_R = 500
TRUE_EPS = 1.0
M_CANARIES = 1000


@functools.cache
def randomized_response_audits(confidence: float) -> tuple[OneRunAudit, ...]:
    """R seeded one-run audits of randomized response at ε = 1 with identity scores, k₊ = k₋ = m/2.

    This is near the worst case for the bound: each guess is right independently with probability q = e^ε/(1+e^ε),
    except the few guessed against their release by the forced cut (see :func:`exact_violation_probability`), so
    the violation rate is somewhat below 1 − confidence (about 2.2% at 0.95, 18% at 0.7).
    """
    q = math.exp(TRUE_EPS) / (1.0 + math.exp(TRUE_EPS))
    audits = []
    for child in np.random.SeedSequence(SOUNDNESS_SEED).spawn(SOUNDNESS_R):
        data_seed, tie_seed = child.spawn(2)
        data = np.random.default_rng(data_seed)
        membership = data.random(M_CANARIES) < 0.5
        keep = data.random(M_CANARIES) < q
        release = np.where(keep, membership, ~membership)
        audits.append(
            audit_top_k(
                release.astype(float),
                membership,
                k_pos=M_CANARIES // 2,
                k_neg=M_CANARIES // 2,
                rng=np.random.default_rng(tie_seed),
                confidence=confidence,
            )
        )
    return tuple(audits)


def violation_test_pvalue(violations: int, confidence: float) -> float:
    return float(stats.binomtest(violations, SOUNDNESS_R, 1.0 - confidence, alternative="greater").pvalue)


@pytest.mark.parametrize("confidence", [0.95, 0.7])
def test_one_run_bound_is_sound_on_randomized_response(confidence):
    audits = randomized_response_audits(confidence)
    violations = sum(a.epsilon > TRUE_EPS for a in audits)
    assert violation_test_pvalue(violations, confidence) > 1e-3, violations


def exact_violation_probability(confidence: float) -> float:
    """P[bound > ε] for the simulated audits, computed exactly (with δ = 0).

    The releases are uniform and independent of which canaries kept their bit, so with N₁ releases equal to 1 the
    top-k rule guesses against the release for f = |N₁ − m/2| canaries and v ~ Bin(m − f, q) + Bin(f, 1 − q).  The
    bound exceeds ε = 1 iff P[Bin(m, q) >= v] < β (computed here with scipy directly), i.e. iff v >= v*.
    """
    q = math.exp(TRUE_EPS) / (1.0 + math.exp(TRUE_EPS))
    ks = np.arange(M_CANARIES + 1)
    v_star = int(np.argmax(stats.binom.sf(ks - 1, M_CANARIES, q) < 1.0 - confidence))
    n_ones = ks[stats.binom.pmf(ks, M_CANARIES, 0.5) > 1e-18]  # the rest holds < 1e-15 of the mass
    total = 0.0
    for n1 in n_ones:
        f = abs(int(n1) - M_CANARIES // 2)
        v_pmf = np.convolve(
            stats.binom.pmf(np.arange(M_CANARIES - f + 1), M_CANARIES - f, q),
            stats.binom.pmf(np.arange(f + 1), f, 1.0 - q),
        )
        total += stats.binom.pmf(n1, M_CANARIES, 0.5) * v_pmf[v_star:].sum()
    return float(total)


@pytest.mark.parametrize("confidence", [0.95, 0.7])
def test_violation_rate_matches_its_exact_prediction(confidence):
    """Two-sided: the bound is neither less sound nor less powerful than the theory predicts for these audits
    (about 2.2% violations at 0.95 and 18% at 0.7 — below 1 − confidence, as the forced k₊ = k₋ = m/2 cut
    guesses against the release for a few canaries).  An estimator returning 0 always would fail here."""
    audits = randomized_response_audits(confidence)
    violations = sum(a.epsilon > TRUE_EPS for a in audits)
    expected_rate = exact_violation_probability(confidence)
    assert 0.0 < expected_rate < 1.0 - confidence
    assert stats.binomtest(violations, SOUNDNESS_R, expected_rate).pvalue > 1e-3, (violations, expected_rate)


def point_estimate(audit: OneRunAudit) -> float:
    """ε̂ = ln(v / (r − v)): no confidence at all, it exceeds the true ε about a third of the time here."""
    return math.log(audit.v / (audit.r - audit.v)) if audit.v < audit.r else math.inf


def bound_with_beta_and_confidence_swapped(audit: OneRunAudit) -> float:
    """A plausible bug: the bound computed at confidence β = 1 − confidence instead of 1 − β."""
    return epsilon_lower_bound(audit.m, audit.r, audit.v, delta=audit.delta, confidence=1.0 - audit.confidence)


@pytest.mark.parametrize(
    ("confidence", "broken_estimator"),
    [
        (0.95, point_estimate),
        (0.95, bound_with_beta_and_confidence_swapped),
        (0.7, bound_with_beta_and_confidence_swapped),
    ],
)
def test_soundness_check_rejects_broken_estimators(confidence, broken_estimator):
    """Meta-test: the soundness check above has the power to catch an unsound estimator on the same simulations.

    (The point estimate is only checked at 0.95: with k₊ = k₋ = m/2 it exceeds ε = 1 in about 32% of the audits,
    which a check at confidence 0.7, i.e. 30% allowed, rightly cannot tell apart with R = 500.)
    """
    audits = randomized_response_audits(confidence)
    violations = sum(broken_estimator(a) > TRUE_EPS for a in audits)
    assert violation_test_pvalue(violations, confidence) <= 1e-3, violations


@pytest.mark.parametrize("confidence", [0.95, 0.7])
def test_sound_and_nearly_exact_in_the_worst_case(confidence: float) -> None:
    """Guessing each canary's randomized-response output makes v exactly Binomial(r, e^ε/(1+e^ε)): the worst case
    of Theorem 5.2 with δ = 0, where the violation rate must be close to, and not above, 1 − confidence."""
    eps, r, n_audits = 1.0, 1000, 2000
    rng = np.random.default_rng(np.random.SeedSequence(424242))
    vs = rng.binomial(r, 1 / (1 + math.exp(-eps)), size=n_audits)
    violations = sum(epsilon_lower_bound(r, r, int(v), confidence=confidence) > eps for v in vs)
    beta = 1 - confidence
    assert stats.binomtest(violations, n_audits, beta, alternative="greater").pvalue > 1e-3
    # the bound is not needlessly loose either: discreteness of v costs little at r = 1000
    assert stats.binomtest(violations, n_audits, 0.8 * beta, alternative="less").pvalue > 1e-3


def test_the_unchecked_binomial_equals_scipys_public_one_bit_for_bit():
    """The p-value calls Boost's binomial ufuncs directly (stats.binom's argument checks cost ~8x the work); on
    every range the callers use they give stats.binom's numbers exactly."""
    from scipy import stats

    from privgame.analysis import one_run

    rng = np.random.default_rng(5)
    for r in (1, 2, 57, 1000, 123_457, 10**6):
        for p_fail in (1e-300, 1e-12, 1e-5, 0.01, 0.3, 0.5, 0.9, 1.0 - 1e-9, 1.0):
            ws = np.unique(np.concatenate([[0, r], rng.integers(0, r + 1, size=30)]))
            np.testing.assert_array_equal(one_run._w_pmf(ws, r, p_fail), stats.binom.pmf(ws, r, p_fail))
            for w in ws[:5]:
                assert float(one_run._boost_cdf(float(w), float(r), p_fail)) == float(stats.binom.cdf(w, r, p_fail))
