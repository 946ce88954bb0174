"""The Gaussian fit (privgame.analysis.gaussian_fit): a parametric estimate of ε, not a bound.

The Gaussian pair's ε(δ) against μ-GDP's closed form (equal variances) and against a numerical integration of the
hockey-stick divergence (unequal variances); the properties the minimum over the parameter box relies on, and that
minimum against a 4-D search; the fit on well-specified scores with many canaries; the degenerate inputs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from privgame.analysis.gaussian_fit import KIND, GaussianFit, _box_minimum, gaussian_fit, hockey_stick, pair_epsilon
from privgame.analysis.tradeoff import gdp_epsilon


@pytest.mark.parametrize("mu", [0.05, 0.5, 1.0, 2.0, 4.0, 8.0])
@pytest.mark.parametrize("delta", [1e-2, 1e-5, 1e-8])
def test_equal_variances_are_mu_gdp(mu, delta):
    """σ_in = σ_out = σ: the pair is the Gaussian mechanism with μ = |Δ|/σ, ε from dp_accounting (Balle & Wang)."""
    sigma = 0.7
    assert pair_epsilon(delta, 3.0 + mu * sigma, sigma, 3.0, sigma) == pytest.approx(gdp_epsilon(mu, delta), rel=1e-9)


def _integrated(epsilon: float, mu_p: float, s_p: float, mu_q: float, s_q: float) -> float:
    """H_{e^ε}(P‖Q) = ∫ (p − e^ε q)_+ by the trapezoid rule on 4·10⁶ points over ±40 of the wider σ (an oracle that
    knows nothing of the roots; its error is below 1e-10 here)."""
    from scipy import stats

    width = 40.0 * max(s_p, s_q)
    x = np.linspace(min(mu_p, mu_q) - width, max(mu_p, mu_q) + width, 4_000_001)
    gap = stats.norm.pdf(x, mu_p, s_p) - math.exp(epsilon) * stats.norm.pdf(x, mu_q, s_q)
    return float(np.trapezoid(np.maximum(gap, 0.0), x))


@pytest.mark.parametrize(
    ("mu_p", "s_p", "mu_q", "s_q"),
    [(1.0, 1.5, 0.0, 1.0), (1.0, 0.6, 0.0, 1.0), (-2.0, 1.0, 0.5, 2.0), (0.0, 1.3, 0.0, 1.0), (3.0, 1.0, 0.0, 1.0)],
)
@pytest.mark.parametrize("epsilon", [0.0, 0.5, 2.0])
def test_hockey_stick_against_numerical_integration(mu_p, s_p, mu_q, s_q, epsilon):
    """Half-line (equal σ), the complement of an interval (wider P) and an interval (narrower P), and d = 0."""
    assert hockey_stick(epsilon, mu_p, s_p, mu_q, s_q) == pytest.approx(
        _integrated(epsilon, mu_p, s_p, mu_q, s_q), abs=1e-9
    )


@pytest.mark.parametrize("delta", [1e-3, 1e-6])
@pytest.mark.parametrize(("mu_in", "s_in", "mu_out", "s_out"), [(1.0, 1.4, 0.0, 1.0), (2.0, 0.8, 0.3, 1.1)])
def test_pair_epsilon_is_the_smallest_epsilon_with_both_directions_at_most_delta(delta, mu_in, s_in, mu_out, s_out):
    eps = pair_epsilon(delta, mu_in, s_in, mu_out, s_out)
    both = (hockey_stick(eps, mu_in, s_in, mu_out, s_out), hockey_stick(eps, mu_out, s_out, mu_in, s_in))
    assert max(both) == pytest.approx(delta, rel=1e-6)  # one direction is tight
    assert max(both) <= delta * (1 + 1e-6)
    below = eps - 1e-4
    assert max(hockey_stick(below, mu_in, s_in, mu_out, s_out), hockey_stick(below, mu_out, s_out, mu_in, s_in)) > delta
    # the same pair swapped, shifted, scaled or reflected has the same ε
    assert pair_epsilon(delta, mu_out, s_out, mu_in, s_in) == pytest.approx(eps, rel=1e-10)
    assert pair_epsilon(delta, 3 * mu_in + 5, 3 * s_in, 3 * mu_out + 5, 3 * s_out) == pytest.approx(eps, rel=1e-9)
    assert pair_epsilon(delta, -mu_in, s_in, -mu_out, s_out) == pytest.approx(eps, rel=1e-10)


def test_unequal_variances_give_epsilon_above_the_equal_variance_one_at_small_delta():
    """The wider side's tails make the likelihood ratio unbounded: at the same means a variance ratio of 1.2 raises
    ε at δ = 1e-8, and it grows without bound as δ falls (finite at every δ > 0)."""
    equal = pair_epsilon(1e-8, 1.0, 1.0, 0.0, 1.0)
    wider = pair_epsilon(1e-8, 1.0, 1.2, 0.0, 1.0)
    assert wider > equal + 1.0
    assert pair_epsilon(1e-12, 1.0, 1.2, 0.0, 1.0) > wider
    assert pair_epsilon(0.5, 0.0, 1.0, 0.0, 1.0) == 0.0  # the same Gaussian: ε = 0
    assert pair_epsilon(1e-8, 0.0, 1.0, 0.0, 1.0) == 0.0


def test_far_apart_pairs_are_inf():
    """ε above 700 (e^ε overflows past 709) is reported as inf."""
    assert pair_epsilon(1e-8, 20.0, 3.3, 0.0, 1.0) == math.inf
    assert math.isfinite(pair_epsilon(1e-8, 15.0, 1.0, 0.0, 1.0))


@pytest.mark.parametrize("delta", [1e-2, 1e-5, 1e-8])
def test_epsilon_grows_with_the_gap_and_with_the_variance_ratio(delta):
    """What the box minimum relies on (gaussian_fit, Notes): at a fixed σ ratio r, ε grows with the mean gap d; at
    d = 0 it grows with |log r| (checked on grids of r in [0.3, 3.3] and d in [0, 6])."""
    for r in np.geomspace(0.3, 3.3, 13):
        values = np.array([pair_epsilon(delta, d, r, 0.0, 1.0) for d in np.linspace(0.0, 6.0, 49)])
        finite = values[np.isfinite(values)]
        assert np.all(np.diff(finite) >= -1e-9), r
        assert np.all(np.isfinite(values[: finite.size]))  # any inf is at the far end
    at_zero = [pair_epsilon(delta, 0.0, r, 0.0, 1.0) for r in np.geomspace(1.0, 4.0, 25)]
    assert np.all(np.diff(at_zero) >= -1e-9)
    assert pair_epsilon(delta, 0.0, 2.0, 0.0, 1.0) == pytest.approx(pair_epsilon(delta, 0.0, 0.5, 0.0, 1.0))


@pytest.mark.parametrize("case", range(4))
def test_box_minimum_is_a_brute_force_minimum(case):
    """The box minimum (two σ faces at the closest means) is at most the minimum of a 5⁴ grid over the box, corners
    included, and no multi-start bounded 4-D minimiser finds a smaller ε."""
    from scipy import optimize

    rng = np.random.default_rng(case)
    mu_in, mu_out = rng.normal(1.0, 0.5), rng.normal(0.0, 0.5)
    s_in, s_out = rng.uniform(0.5, 1.5, size=2)
    box = [
        (mu_in - 0.2, mu_in + 0.2),
        (s_in * 0.8, s_in * 1.3),
        (mu_out - 0.2, mu_out + 0.2),
        (s_out * 0.8, s_out * 1.3),
    ]
    delta = 1e-5
    fast = _box_minimum(delta, *box)

    def f(p: np.ndarray) -> float:
        return pair_epsilon(delta, float(p[0]), float(p[1]), float(p[2]), float(p[3]))

    axes = [np.linspace(low, high, 5) for low, high in box]
    grid = min(f(np.array(p)) for p in np.array(np.meshgrid(*axes)).reshape(4, -1).T)
    assert fast <= grid + 1e-9
    for _ in range(4):
        start = np.array([rng.uniform(low, high) for low, high in box])
        found = optimize.minimize(f, start, bounds=box, method="L-BFGS-B")
        assert fast <= float(found.fun) + 1e-6


def test_box_minimum_without_a_gap_is_zero_where_the_sigma_intervals_overlap():
    assert _box_minimum(1e-5, (0.0, 1.0), (0.9, 1.1), (0.5, 1.5), (1.0, 1.2)) == 0.0
    # disjoint σ intervals: the ratio nearest 1, 1.1/1.3, at equal means
    value = _box_minimum(1e-5, (0.0, 1.0), (0.9, 1.1), (0.5, 1.5), (1.3, 1.5))
    assert value == pytest.approx(pair_epsilon(1e-5, 0.0, 1.1, 0.0, 1.3)) and value > 0.0


def test_well_specified_scores_with_many_canaries_are_close_to_the_true_epsilon():
    """The Gaussian mechanism with σ = 0.5 (2-GDP, ε = 9.997 at δ = 1e-5), m = 100,000 canaries.

    Sizing, measured over 200 seeds: the estimate at 0.95 over the truth has mean 0.979 and standard deviation
    0.0045 (range 0.967-0.992): the box's intervals, about ±1.1 % on each side's mean gap and σ, lower it by 2 %;
    0.95 and 1.0 are 6.4 and 4.7 standard deviations away.  The plug-in's ratio has mean 1.012 (unequal fitted σ
    raise ε at small δ), standard deviation 0.009, range 0.993-1.042, right-skewed like a χ²₁: above 1.07 with
    probability about 5e-6.  So a correct fit fails here with probability well under 1e-3, whatever the seed."""
    truth = gdp_epsilon(2.0, 1e-5)
    rng = np.random.default_rng(5)
    member = rng.random(100_000) < 0.5
    scores = member + rng.normal(0.0, 0.5, member.size)
    fit = gaussian_fit(scores[member], scores[~member], delta=1e-5, confidence=0.95)
    assert 0.95 < fit.epsilon_estimate / truth <= 1.0
    assert abs(fit.epsilon_point / truth - 1.0) < 0.07
    assert fit.epsilon_estimate <= fit.epsilon_point
    assert fit.mu_in_interval[0] < fit.mu_in < fit.mu_in_interval[1]
    assert fit.sigma_out_interval[0] < fit.sigma_out < fit.sigma_out_interval[1]
    assert (fit.n_in, fit.n_out) == (int(member.sum()), int((~member).sum()))
    assert fit.kind == GaussianFit.kind == KIND == "estimate (parametric, not a confidence bound)"


def test_a_higher_confidence_gives_a_lower_estimate():
    rng = np.random.default_rng(2)
    a, b = rng.normal(1.0, 1.0, 300), rng.normal(0.0, 1.0, 300)
    estimates = [gaussian_fit(a, b, delta=1e-5, confidence=c).epsilon_estimate for c in (0.5, 0.7, 0.95, 0.999)]
    assert np.all(np.diff(estimates) < 0.0)
    assert gaussian_fit(a, b, delta=1e-5, confidence=0.95).epsilon_point > estimates[0]


@pytest.mark.parametrize(
    ("a", "b", "kwargs", "message"),
    [
        ([1.0], [0.0, 1.0], {}, "in_scores must hold at least 2 scores to fit a Gaussian .*got 1"),
        ([0.0, 1.0], [], {}, "out_scores must hold at least 2 scores .*got 0"),
        ([0.0, np.nan], [0.0, 1.0], {}, "in_scores must be finite, got nan"),
        ([0.0, 1.0], [np.inf, 1.0], {}, "out_scores must be finite, got inf"),
        ([0.0, 1.0], [0.5, 1.0], {"delta": 0.0}, "delta must be"),
        ([0.0, 1.0], [0.5, 1.0], {"delta": 1e-5, "confidence": 1.0}, "confidence must be"),
        ([[0.0, 1.0]], [0.5, 1.0], {}, "in_scores must be a 1-d array"),
    ],
)
def test_bad_inputs_are_one_line(a, b, kwargs, message):
    with pytest.raises(ValueError, match=message) as info:
        gaussian_fit(a, b, **{"delta": 1e-5, **kwargs})
    assert "\n" not in str(info.value)


def test_pair_and_hockey_stick_errors():
    with pytest.raises(ValueError, match="sigma_p must be"):
        hockey_stick(1.0, 0.0, 0.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="epsilon must be"):
        hockey_stick(-1.0, 0.0, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="delta must be"):
        pair_epsilon(0.0, 0.0, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="mu_p must be"):
        pair_epsilon(1e-5, math.nan, 1.0, 1.0, 1.0)


def test_zero_variance_is_a_point_mass_with_a_warning():
    """A side whose scores are all equal is fitted by a point mass: ε = inf against anything else, 0 against the same
    point mass (randomized response at ε = inf: every member scores 1, every non-member 0)."""
    with pytest.warns(UserWarning, match="in_scores and out_scores: every score is the same.*inf"):
        fit = gaussian_fit([1.0, 1.0, 1.0], [0.0, 0.0], delta=1e-5)
    assert fit.epsilon_estimate == fit.epsilon_point == math.inf
    with pytest.warns(UserWarning, match="out_scores: every score is the same"):
        assert gaussian_fit([0.0, 1.0, 2.0], [1.0, 1.0], delta=1e-5).epsilon_estimate == math.inf
    with pytest.warns(UserWarning, match="estimate is 0"):
        assert gaussian_fit([2.0, 2.0], [2.0, 2.0], delta=1e-5).epsilon_point == 0.0
