"""The order-statistics one-run audit (analysis/order_stats.py): closed forms, the canonical channel simulated, the
discretisation against finer grids and the exact four-atom sum, soundness in the product model, bad input.

1. ē, the mean error of the most confident fraction of a channel's guesses: closed form for randomized response
   and the (ε, δ) channel, a simulation of the Gaussian channel.
2. The p-value: exact cases (δ = 0 is Steinke's binomial tail; every guess released), the upper Riemann sum
   above the exact four-atom value and above finer grids (the discretisation errs on the conservative side).
3. Bounds: Steinke's at δ = 0, monotone in v and confidence, above the f-DP audit's on the same counts, warnings.
4. Soundness in the product model (randomized response exactly; Gaussian canaries simulated; DP-SGD's PLD in the
   slow suite), and the same check failing a mismatched family.
5. Scores and errors.
"""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from scipy import special, stats

from privgame.analysis import fdp, one_run
from privgame.analysis.accounting import dpsgd_claim
from privgame.analysis.families import CurveFamily, family_for_claim, gaussian_family, pure_family
from privgame.analysis.order_stats import (
    OrderStatsAudit,
    audit_scores,
    epsilon_lower_bound,
    mean_error,
    p_value,
    reject,
)
from privgame.analysis.thresholds import Bonferroni, Explicit
from privgame.analysis.tradeoff import GaussianCurve, PLDCurve, PureDPCurve

# --------------------------------------------------------------------------------------------------------------
# 1. The mean error of the most confident guesses
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.0, 0.5, 2.0, 8.0])
def test_mean_error_of_randomized_response_is_its_error_rate_everywhere(eps):
    s = np.linspace(0.01, 1.0, 50)
    e, rate = mean_error(PureDPCurve(eps), s), 1.0 / (1.0 + math.exp(eps))
    # α is found from below to within 1e-12 of s: ē to within 1e-12 absolute, never above
    np.testing.assert_allclose(e, rate, rtol=0, atol=2e-12)
    assert np.all(e <= rate * (1 + 1e-15))


def test_mean_error_of_the_four_atom_channel():
    """With probability δ an output reveals the bit (no error); the rest is randomized response: the top fraction s
    holds the δ revealing outputs first, so ē(s) = (s − δ) / (s (1 + e^ε)) for s >= δ and 0 below."""
    eps, delta = 1.5, 0.01
    s = np.array([0.001, 0.005, 0.01, 0.02, 0.1, 0.5, 1.0])
    expected = np.where(s >= delta, (s - delta) / (s * (1 + math.exp(eps))), 0.0)
    np.testing.assert_allclose(mean_error(PureDPCurve(eps, delta), s), expected, rtol=1e-10, atol=1e-15)


def test_mean_error_matches_a_simulated_gaussian_channel():
    """N(0, 1) against N(μ, 1), bits fair: ordering the outputs by |x − μ/2| and keeping the top fraction s, the
    error rate among them is ē(s).  10⁶ simulated outputs; each tolerance is 6 standard errors."""
    mu, n = 1.0, 1_000_000
    rng = np.random.default_rng(20250908)
    bits = rng.random(n) < 0.5
    x = rng.normal(size=n) + mu * bits
    guess = x > mu / 2
    order = np.argsort(-np.abs(x - mu / 2))
    wrong = (guess != bits)[order]
    for s in (0.01, 0.1, 0.3, 0.6, 1.0):
        top = int(s * n)
        rate = wrong[:top].mean()
        expected = float(mean_error(GaussianCurve(mu), s))
        assert abs(rate - expected) < 6 * math.sqrt(expected * (1 - expected) / top), (s, rate, expected)


@pytest.mark.parametrize(
    "curve", [GaussianCurve(0.5), GaussianCurve(3.0), PLDCurve.from_dpsgd(1.0, 0.1, 20), PureDPCurve(1.0, 1e-3)]
)
def test_mean_error_is_rounded_down_and_decreasing(curve):
    """α from the lower end of its bracket: f(α) − α >= 1 − s at the α returned (never above the root), and ē
    falls as the fraction shrinks (the more confident guesses err less)."""
    s = np.linspace(1e-4, 1.0, 2001)
    e = mean_error(curve, s)
    alpha = e * s
    reachable = 1.0 - s <= curve.tradeoff(np.zeros(1))[0]  # below, the fraction is all revealing outputs: ē = 0
    assert np.all((curve.tradeoff(alpha) - alpha >= 1.0 - s - 1e-12)[reachable])
    assert np.all(e[~reachable] == 0.0)
    assert np.all(np.diff(e) >= -1e-12)


# --------------------------------------------------------------------------------------------------------------
# 2. The p-value
# --------------------------------------------------------------------------------------------------------------


def test_pure_p_value_at_delta_zero_is_the_binomial_tail():
    m, r, v, eps = 2000, 300, 250, 1.2
    expected = stats.binom.sf(v - 1, r, math.exp(eps) / (1 + math.exp(eps)))
    assert p_value(PureDPCurve(eps), m, r, v) == pytest.approx(expected, rel=1e-10)


def test_every_guess_released_is_one_binomial_tail():
    """r = m: the most confident discarded guess is at W = 0 and every guess errs with the channel's error rate."""
    mu, m, v = 0.8, 5000, 3000
    expected = stats.binom.sf(v - 1, m, special.ndtr(mu / 2))
    assert p_value(GaussianCurve(mu), m, m, v) == pytest.approx(expected, rel=1e-9)


def _as_generic(curve: PureDPCurve) -> PLDCurve:
    """The same (ε, δ) curve as a one-point PLD curve: the p-value then takes the Riemann sum, not the exact one."""
    return PLDCurve((curve.epsilon,), (curve.delta,))


@pytest.mark.parametrize(("eps", "delta", "m", "r", "v"), [(1.0, 1e-3, 5000, 500, 420), (2.0, 1e-4, 20000, 2000, 1830)])
def test_riemann_sums_bracket_the_exact_four_atom_p_value(eps, delta, m, r, v):
    curve = PureDPCurve(eps, delta)
    exact = p_value(curve, m, r, v)
    generic = _as_generic(curve)
    upper, lower = p_value(generic, m, r, v), p_value(generic, m, r, v, lower=True)
    assert lower <= exact <= upper
    assert upper <= exact * 1.02 + 1e-15  # and close: the discretisation costs little


@pytest.mark.parametrize(
    ("curve", "m", "r", "v"),
    [
        (GaussianCurve(1.0), 5000, 500, 470),
        (GaussianCurve(1.5), 10**6, 20000, 19830),
        (PLDCurve.from_dpsgd(0.9, 0.1, 50), 5000, 500, 475),
    ],
)
def test_the_discretisation_errs_on_the_conservative_side(curve, m, r, v):
    """Upper sums at every resolution lie above the lower sum of the finest grid (the true value is between), and
    a finer grid gives nearly the same p-value (within 1 % of itself from 25 to 400 cells per logit unit)."""
    finest_lower = p_value(curve, m, r, v, resolution=400, lower=True)
    uppers = [p_value(curve, m, r, v, resolution=res) for res in (25, 50, 100, 400)]
    assert all(u >= finest_lower for u in uppers)
    assert 1e-3 < finest_lower < 0.5  # a p-value where the discretisation matters
    assert max(uppers) <= finest_lower * 1.01
    assert p_value(curve, m, r, v, resolution=400) <= finest_lower * 1.002


def test_p_value_grows_with_the_parameter_and_falls_with_correct_guesses():
    m, r = 5000, 500
    values = [p_value(GaussianCurve(mu), m, r, 460) for mu in (0.2, 0.5, 1.0, 1.5, 2.0)]
    assert values == sorted(values)
    by_v = [p_value(GaussianCurve(1.0), m, r, v) for v in (440, 460, 480, 500)]
    assert by_v == sorted(by_v, reverse=True)


def test_nothing_to_test_gives_p_value_one():
    assert p_value(GaussianCurve(1.0), 100, 0, 0) == 1.0
    assert p_value(GaussianCurve(1.0), 100, 10, 0) == 1.0


# --------------------------------------------------------------------------------------------------------------
# 3. Bounds
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("m", "r", "v"), [(1000, 1000, 700), (10_000, 500, 480), (5000, 5000, 3500)])
def test_pure_family_at_delta_zero_is_steinkes_bound(m, r, v):
    ours = epsilon_lower_bound(m, r, v, family="pure").epsilon
    assert ours == pytest.approx(one_run.epsilon_lower_bound(m, r, v), abs=1e-6)
    assert ours <= one_run.epsilon_lower_bound(m, r, v) + 1e-12  # the tolerance is taken off, never added


@pytest.mark.parametrize(("family", "delta"), [("gaussian", 1e-5), ("pure", 1e-5)])
def test_tighter_than_the_fdp_audit_on_the_same_counts(family, delta):
    for m, r, v in [(5000, 500, 490), (10_000, 1000, 900)]:
        ours = epsilon_lower_bound(m, r, v, family=family, delta=delta).epsilon
        theirs = fdp.epsilon_lower_bound(m, r, v, family=family, delta=delta).epsilon
        assert ours >= theirs - 1e-9


def test_more_correct_and_lower_confidence_never_lower_the_bound():
    m, r = 5000, 500
    bounds = [epsilon_lower_bound(m, r, v, family="gaussian", delta=1e-5).parameter for v in (400, 450, 480, 500)]
    assert bounds == sorted(bounds)
    by_confidence = [
        epsilon_lower_bound(m, r, 470, family="gaussian", delta=1e-5, confidence=c).parameter for c in (0.99, 0.95, 0.7)
    ]
    assert by_confidence == sorted(by_confidence)


def test_the_returned_parameter_is_itself_rejected():
    for family, delta in (("gaussian", 1e-5), ("pure", 1e-4)):
        result = epsilon_lower_bound(5000, 500, 470, family=family, delta=delta)
        curve = resolve_curve(family, delta, result.parameter)
        assert reject(curve, 5000, 500, 470, 0.05)
        assert result.p_value <= 0.05


def resolve_curve(family: str, delta: float, theta: float):
    fam = gaussian_family(delta) if family == "gaussian" else pure_family(delta)
    return fam.curve(theta)


def test_all_wrong_gives_zero_and_no_possible_bound_warns():
    assert epsilon_lower_bound(1000, 100, 0, family="gaussian", delta=1e-5).epsilon == 0.0
    with pytest.warns(UserWarning, match="no positive bound is possible"):
        assert epsilon_lower_bound(1000, 2, 2, family="pure").epsilon == 0.0


def test_a_bound_at_the_family_limit_warns():
    capped = CurveFamily(name="gaussian, capped", curve=GaussianCurve, parameter_name="mu", max_parameter=2.0)
    with pytest.warns(UserWarning, match="max_parameter"):
        result = epsilon_lower_bound(10**6, 10**6, 10**6, family=capped)
    assert result.parameter == 2.0


@pytest.mark.parametrize(
    ("m", "r", "v", "family", "delta", "expected"),
    [
        (10**12, 10**12, 7 * 10**11, "pure", 0.0, math.log(0.7 / 0.3)),  # every guess released: ln(v / (r − v))
        (10**12, 10**6, 999_000, "pure", 1e-9, None),
        (10**12, 10**12, 7 * 10**11, "gaussian", 1e-5, None),
    ],
)
def test_a_trillion_canaries_is_answered_in_a_moment(m, r, v, family, delta, expected):
    """Sizes past 2³¹ (where scipy's bdtr gives NaN): the binomial tails go through betaincc."""
    result = epsilon_lower_bound(m, r, v, family=family, delta=delta)
    assert math.isfinite(result.epsilon) and result.epsilon > 0
    if expected is not None:
        assert result.epsilon == pytest.approx(expected, abs=1e-3)


def test_revealing_outputs_beyond_the_released_guesses_leave_no_bound():
    """10⁷ expected revealing outputs among 10¹² canaries, 10⁶ released: all could be revealing, so nothing is
    rejected (the four-atom channel passes every guess) and the warning says so."""
    with pytest.warns(UserWarning, match="no positive bound"):
        assert epsilon_lower_bound(10**12, 10**6, 10**6, family="pure", delta=1e-5).epsilon == 0.0


def test_many_revealing_outputs_are_summed_around_their_mean():
    """m·δ = 2·10⁶ revealing outputs expected, far fewer than the 4·10⁶ released: the evidence is overwhelming
    (the sum runs over a window around mδ, not from 0; it once returned 1 beyond 2²⁰ expected outputs)."""
    assert p_value(PureDPCurve(1.0, 0.02), 10**8, 4 * 10**6, 3_900_000) < 1e-12
    # the same window logic at a small size agrees with a direct sum over every count
    eps, delta, m, r, v = 1.0, 0.05, 400, 100, 90
    c = np.arange(m + 1)
    direct = np.sum(
        stats.binom.pmf(c, m, delta)
        * np.where(c >= r, 1.0, stats.binom.cdf(r - v, np.maximum(r - c, 0), 1 / (1 + math.e**eps)))
    )
    assert p_value(PureDPCurve(eps, delta), m, r, v) == pytest.approx(direct, rel=1e-9)


def test_result_is_a_frozen_picklable_record():
    result = epsilon_lower_bound(1000, 100, 90, family="pure")
    assert isinstance(result, OrderStatsAudit)
    assert pickle.loads(pickle.dumps(result)) == result
    with pytest.raises(AttributeError):
        result.epsilon = 1.0  # type: ignore[misc]


def test_idealised_gaussian_recovers_most_of_epsilon():
    """m = 10⁴ Gaussian canaries, every guess released (by the sign of x − μ/2), the expected count of correct
    guesses: the bound is at least 0.8 ε at ε = 1, 2, 4, 8 (δ = 1e-5)."""
    from scipy import optimize

    from privgame.analysis.tradeoff import gdp_epsilon

    m, delta = 10_000, 1e-5
    for eps in (1.0, 2.0, 4.0, 8.0):
        mu = optimize.brentq(lambda x, e=eps: gdp_epsilon(x, delta) - e, 1e-3, 20.0)
        v = round(m * special.ndtr(mu / 2))
        bound = epsilon_lower_bound(m, m, v, family="gaussian", delta=delta).epsilon
        assert 0.8 * eps <= bound <= eps, (eps, bound)


# --------------------------------------------------------------------------------------------------------------
# 4. Soundness in the product model
# --------------------------------------------------------------------------------------------------------------


def _by_count(counts, bound_of):
    cache = {int(c): bound_of(int(c)) for c in np.unique(counts)}
    return np.array([cache[int(c)] for c in counts])


@pytest.mark.parametrize("confidence", [0.95, 0.7])
def test_pure_family_exact_coverage_with_revealing_outputs(confidence):
    """The four-atom channel itself, simulated: every canary reveals its bit with probability δ, otherwise it is
    randomized response at ε; the r released guesses are the revealing ones first.  The bound exceeds ε exactly
    when v is at least the first violating count, whose probability is computed here exactly."""
    eps, delta, m, r = 1.0, 2e-3, 5000, 500
    v_star = next(
        v
        for v in range(r + 1)
        if epsilon_lower_bound(m, r, v, family="pure", delta=delta, confidence=confidence).epsilon > eps
    )
    assert p_value(PureDPCurve(eps, delta), m, r, v_star) <= 1 - confidence
    rng = np.random.default_rng(90817)
    trials = 400
    revealing = rng.binomial(m, delta, size=trials)
    rr = np.maximum(r - revealing, 0)
    counts = np.minimum(revealing, r) + rng.binomial(rr, math.exp(eps) / (1 + math.exp(eps)))
    violations = int(np.count_nonzero(counts >= v_star))
    assert stats.binomtest(violations, trials, 1 - confidence, alternative="greater").pvalue > 1e-3


def _gaussian_counts(rng, mu, m, k, trials):
    """Top-k and bottom-k guesses of m independent Gaussian canaries (x = bit + N(0, 1/μ²))."""
    members = rng.random((trials, m)) < 0.5
    scores = members + rng.normal(0.0, 1.0 / mu, size=(trials, m))
    order = np.argsort(scores, axis=1)
    rows = np.arange(trials)[:, None]
    return members[rows, order[:, -k:]].sum(axis=1) + (~members[rows, order[:, :k]]).sum(axis=1)


@pytest.mark.parametrize("confidence", [0.95, 0.7])
def test_gaussian_family_sound_on_independent_gaussian_canaries(confidence):
    """Each canary its own μ-GDP channel; the released guesses are the k most and k least member-like: the bound on
    μ exceeds the truth at most 1 − confidence of the time, and it is not vacuous."""
    mu, m, k, trials = 1.0, 1000, 100, 300
    counts = _gaussian_counts(np.random.default_rng(8704), mu, m, k, trials)
    bounds = _by_count(
        counts,
        lambda v: epsilon_lower_bound(m, 2 * k, v, family="gaussian", delta=1e-5, confidence=confidence).parameter,
    )
    violations = int(np.count_nonzero(bounds > mu))
    assert stats.binomtest(violations, trials, 1 - confidence, alternative="greater").pvalue > 1e-3
    assert np.median(bounds) > 0.6 * mu


def test_a_mismatched_family_fails_the_same_soundness_check():
    """The Gaussian family on randomized response (each canary independent, but its channel is not Gaussian): the
    check above catches it."""
    from scipy import optimize

    from privgame.analysis.tradeoff import gdp_epsilon

    eps, m, trials, delta = 1.0, 1000, 300, 1e-5
    mu = optimize.brentq(lambda x: gdp_epsilon(x, delta) - eps, 1e-3, 10.0)
    counts = np.random.default_rng(9).binomial(m, math.exp(eps) / (1 + math.exp(eps)), size=trials)
    violations = sum(reject(GaussianCurve(mu), m, m, int(v), 0.05) for v in counts)
    assert stats.binomtest(violations, trials, 0.05, alternative="greater").pvalue <= 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("confidence", [0.95, 0.7])
def test_pld_family_sound_on_independent_subsampled_gaussian_canaries(confidence):
    """White-box DP-SGD's canary scores (Bin(T, q)·bit + N(0, Tσ²), each canary its own): a violation is a rejection
    of the true member of the family (the rejected parameters are an interval from 0)."""
    sigma, q, steps, m, k, trials = 0.8, 0.5, 4, 1000, 100, 400
    claim = dpsgd_claim(sigma, q, steps)
    truth = family_for_claim("pld", claim, 1e-5).curve(1.0 / sigma)
    rng = np.random.default_rng(5150)
    members = rng.random((trials, m)) < 0.5
    scores = rng.binomial(steps, q, size=(trials, m)) * members + rng.normal(0, sigma * math.sqrt(steps), (trials, m))
    order = np.argsort(scores, axis=1)
    rows = np.arange(trials)[:, None]
    counts = members[rows, order[:, -k:]].sum(axis=1) + (~members[rows, order[:, :k]]).sum(axis=1)
    cache = {int(v): reject(truth, m, 2 * k, int(v), 1.0 - confidence) for v in np.unique(counts)}
    violations = sum(cache[int(v)] for v in counts)
    assert stats.binomtest(violations, trials, 1 - confidence, alternative="greater").pvalue > 1e-3


# --------------------------------------------------------------------------------------------------------------
# 5. Scores and errors
# --------------------------------------------------------------------------------------------------------------


def test_audit_scores_bounds_the_chosen_guesses():
    rng = np.random.default_rng(3)
    ins, outs = rng.normal(1.0, 1.0, 2500), rng.normal(0.0, 1.0, 2500)
    result = audit_scores(ins, outs, family="gaussian", delta=1e-5, threshold=Bonferroni(100))
    d = result.details
    again = epsilon_lower_bound(
        d["m"], d["r"], d["v"], family="gaussian", delta=1e-5, confidence=1 - result.beta_per_test
    )
    assert result.epsilon == pytest.approx(again.epsilon, rel=1e-6)
    assert "arXiv:2509.08704" in result.method
    two = audit_scores(ins, outs, family="gaussian", delta=1e-5, threshold=Explicit((-0.5, 1.5)), two_sided=True)
    assert two.details["r"] == int(
        np.sum(ins >= 1.5) + np.sum(outs >= 1.5) + np.sum(ins <= -0.5) + np.sum(outs <= -0.5)
    )


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: epsilon_lower_bound(10, 11, 0, family="pure"), ValueError, "r"),
        (lambda: epsilon_lower_bound(10, 5, 6, family="pure"), ValueError, "v"),
        (lambda: epsilon_lower_bound(10, 5, 2.5, family="pure"), TypeError, "v"),
        (lambda: epsilon_lower_bound(10, 5, 2, family="laplace"), ValueError, "family"),
        (lambda: epsilon_lower_bound(10, 5, 2, family="gaussian", delta=0.0), ValueError, "delta"),
        (lambda: epsilon_lower_bound(10, 5, 2, family="pure", confidence=1.0), ValueError, "confidence"),
        (lambda: mean_error(GaussianCurve(1.0), [0.5, 1.5]), ValueError, "s must lie in"),
        (lambda: mean_error("gaussian", 0.5), TypeError, "TradeOffCurve"),
        (lambda: p_value(GaussianCurve(1.0), 10, 5, 2, resolution=0), ValueError, "resolution"),
        (lambda: p_value("pure", 10, 5, 2), TypeError, "TradeOffCurve"),
        (lambda: reject(GaussianCurve(1.0), 10, 5, 2, 1.5), ValueError, "tau"),
        (lambda: audit_scores([np.nan], [0.0], family="pure"), ValueError, "in_scores"),
    ],
)
def test_bad_inputs_raise_one_line(call, error, match):
    with pytest.raises(error, match=match) as info:
        call()
    assert "\n" not in str(info.value)
