"""Tests of the one-run f-DP audit (Mahloujifar, Melis, Chaudhuri 2024, arXiv:2410.22235, Algorithm 3).

The curves and families it searches are tested in ``test_tradeoff.py`` and ``test_families.py``.

Independent references:

* a slow re-implementation of Algorithm 3 exactly as SPEC §1 states it (full arrays, no early stop), for the
  rejection test and for the vectorised piecewise-linear path;
* jax_privacy's parametrisation of the Gaussian family by ε (μ = 1/σ(ε, δ) from ``dp_accounting``), which must give
  the same ε as ours (indexed by μ, converted by :func:`gdp_epsilon`);
* ``dp_accounting.get_epsilon_gaussian`` for the GDP → (ε, δ) conversion;
* Steinke et al.'s bound (:mod:`privgame.analysis.one_run`), which is exact for randomized response at δ = 0 and
therefore an
  upper limit for the pure-DP f-DP bound;
* exact coverage for randomized response (the bound is monotone in v, so its violation probability is a binomial
  tail), and Monte-Carlo coverage for randomized response and the idealised Gaussian mechanism.
"""

from __future__ import annotations

import math
import pickle
import warnings

import dp_accounting
import numpy as np
import pytest
from scipy import optimize, special, stats

from privgame.analysis import fdp, one_run
from privgame.analysis.accounting import dpsgd_claim
from privgame.analysis.families import CurveFamily, dpsgd_family, family_for_claim
from privgame.analysis.fdp import FdpAudit, epsilon_lower_bound, reject
from privgame.analysis.tradeoff import GaussianCurve, PLDCurve, PureDPCurve, TradeOffCurve, gdp_epsilon

# --------------------------------------------------------------------------------------------------------------
# Slow reference: Algorithm 3 as stated in SPEC §1 (and PrivacyGuard's ``rh_with_cap``, plus jax_privacy's cap at 1)
# --------------------------------------------------------------------------------------------------------------


def reference_margin(g, m, c_cap, c, tau, k=2):
    """``r_0 + h_0 - c_cap/m`` with every r_i, h_i stored and no early stop."""
    r = [0.0] * (c + 1)
    h = [0.0] * (c + 1)
    r[c] = tau * c / m
    h[c] = tau * (c_cap - c) / m
    for i in range(c - 1, -1, -1):
        h[i] = max(h[i + 1], (k - 1) * g(r[i + 1]))
        r[i] = min(1.0, r[i + 1] + (i / (c_cap - i)) * (h[i] - h[i + 1]))
    return r[0] + h[0] - c_cap / m


def reference_pure_g(eps, delta):
    def g(y):
        return max(0.0, (y - delta) * math.exp(-eps), 1.0 - delta - math.exp(eps) * (1.0 - y))

    return g


def reference_gaussian_g(mu):
    def g(y):
        return float(special.ndtr(special.ndtri(y) - mu))

    return g


def rr_expected_count(r, eps):
    return round(r * math.exp(eps) / (1.0 + math.exp(eps)))


# --------------------------------------------------------------------------------------------------------------
# 1. Deterministic cases
# --------------------------------------------------------------------------------------------------------------


def test_spec_value_gaussian_family_on_randomized_response():
    # SPEC §1: true ε = 1, m = r = 10^4, v = expected count 10^4 · e/(1+e) = 7310.6 -> 7311, δ = 1e-5 -> 1.646.
    res = epsilon_lower_bound(10_000, 10_000, 7311, family="gaussian", delta=1e-5)
    assert res.epsilon == pytest.approx(1.646, abs=5e-4)
    assert res.parameter == pytest.approx(0.42097, abs=1e-5)
    assert res.parameter_name == "mu"
    assert res.family == "gaussian"
    assert res.epsilon > 1.0  # the wrong family overshoots the true ε of randomized response


def test_gaussian_family_matches_jax_privacy_parametrisation():
    """jax_privacy indexes the Gaussian curves by ε (μ = 1/σ(ε, δ)) and bisects in ε: same bound, other route."""
    m, r, v, delta, tau = 10_000, 10_000, 7311, 1e-5, 0.05

    def objective(eps):
        mu = 1.0 / dp_accounting.get_sigma_gaussian(eps, delta)
        return reference_margin(reference_gaussian_g(mu), m, r, v, tau)

    lo, hi = 0.5, 1.0
    while objective(hi) > 0:
        lo, hi = hi, 2 * hi
    jax_style = optimize.brentq(objective, lo, hi, xtol=1e-7)
    ours = epsilon_lower_bound(m, r, v, family="gaussian", delta=delta).epsilon
    assert ours == pytest.approx(jax_style, abs=1e-5)


def test_all_correct_gives_a_finite_positive_bound_below_steinke():
    for m in (100, 1000):
        res = epsilon_lower_bound(m, m, m, family="pure")
        steinke = one_run.epsilon_lower_bound(m, m, m)
        assert 0.0 < res.epsilon < math.inf
        assert res.epsilon <= steinke + 1e-6


def test_all_wrong_gives_zero_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = epsilon_lower_bound(1000, 200, 0, family="pure")
        assert res.epsilon == 0.0 and res.parameter == 0.0
        assert epsilon_lower_bound(1000, 200, 0, family="gaussian", delta=1e-5).epsilon == 0.0


@pytest.mark.parametrize(("family", "delta"), [("pure", 0.0), ("gaussian", 1e-5)])
def test_zero_guesses_gives_zero_with_warning(family, delta):
    with pytest.warns(UserWarning, match="no positive bound is possible"):
        res = epsilon_lower_bound(100, 0, 0, family=family, delta=delta)
    assert res.epsilon == 0.0 and res.parameter == 0.0


def test_too_few_guesses_warns():
    # 3 correct out of 3 cannot reject perfect privacy at 95 %: P[3 correct by chance] = 1/8.
    with pytest.warns(UserWarning, match="no positive bound is possible"):
        assert epsilon_lower_bound(100, 3, 3, family="pure").epsilon == 0.0


def test_chance_level_guesses_give_zero_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert epsilon_lower_bound(1000, 1000, 500, family="pure").epsilon == 0.0


def test_result_is_a_frozen_picklable_record():
    res = epsilon_lower_bound(1000, 1000, 731, family="pure", delta=1e-6, confidence=0.9)
    assert isinstance(res, FdpAudit)
    assert (res.m, res.r, res.v, res.delta, res.confidence, res.k) == (1000, 1000, 731, 1e-6, 0.9, 2)
    assert res.parameter == res.epsilon and res.parameter_name == "epsilon" and res.family == "pure"
    assert "2410.22235" in res.method
    with pytest.raises(AttributeError):
        res.epsilon = 0.0  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(res)) == res
    # recomputing from the record gives the same bound
    again = epsilon_lower_bound(res.m, res.r, res.v, family=res.family, delta=res.delta, confidence=res.confidence)
    assert again == res


# --------------------------------------------------------------------------------------------------------------
# 2. Algorithm 3 against the slow reference
# --------------------------------------------------------------------------------------------------------------


def _random_cases(seed, n):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        m = int(rng.choice([10, 50, 300, 2000]))
        r = int(rng.integers(0, m + 1))
        v = int(rng.binomial(r, rng.uniform(0.45, 1.0)))
        tau = float(rng.choice([0.05, 0.3, 1e-3]))
        k = int(rng.choice([2, 2, 3]))
        yield m, r, v, tau, k, rng


def test_reject_matches_reference_pure_and_gaussian():
    checked = 0
    for m, r, v, tau, k, rng in _random_cases(0, 250):
        eps, delta = float(rng.uniform(0.0, 5.0)), float(rng.choice([0.0, 1e-6, 1e-2]))
        mu = float(rng.uniform(0.0, 3.0))
        for curve, g in ((PureDPCurve(eps, delta), reference_pure_g(eps, delta)), (GaussianCurve(mu), None)):
            g = g or reference_gaussian_g(mu)
            ref = reference_margin(g, m, r, v, tau, k)
            if abs(ref) < 1e-12:
                continue  # on the boundary the two roundings may disagree
            assert reject(curve, m, r, v, tau, k) == (ref > 0), (m, r, v, tau, k, curve)
            checked += 1
    assert checked > 400


def test_vectorised_piecewise_path_matches_scalar_loop():
    """Pure and PLD curves run linear stretches as one cumulative product; the scalar loop is the reference."""
    rejected = kept = 0
    for m, r, v, tau, k, rng in _random_cases(1, 150):
        m, r, v = 20 * m, 20 * r, 20 * v  # long recursions, so that chunks are exercised
        if rng.random() < 0.5:
            curve: TradeOffCurve = PureDPCurve(float(rng.uniform(0.0, 5.0)), float(rng.choice([0.0, 1e-6, 1e-2])))
        else:
            curve = PLDCurve.from_dpsgd(float(rng.uniform(0.4, 3.0)), float(rng.choice([1.0, 0.1])), 2, grid_size=101)
        pieces = curve.linear_pieces()
        assert pieces is not None
        scalar = fdp._margin(curve.blowup_inverse_scalar(), m, r, v, tau, k)
        vectorised = fdp._margin_pieces(pieces, m, r, v, tau, k)
        if abs(scalar) < 1e-12:
            continue
        assert (scalar > 0) == (vectorised > 0)
        if scalar <= 0:  # both ran to the end: the same number up to rounding
            assert vectorised == pytest.approx(scalar, rel=1e-9, abs=1e-15)
            kept += 1
        else:
            rejected += 1
    assert rejected > 20 and kept > 20


def test_reject_edge_cases():
    identity = PureDPCurve(0.0)
    assert not reject(identity, 100, 0, 0, 0.05)
    assert not reject(identity, 100, 100, 0, 0.05)
    assert not reject(identity, 100, 100, 50, 0.05)
    assert reject(identity, 100, 100, 100, 0.05)
    assert not reject(PureDPCurve(50.0), 100, 100, 100, 0.05)
    assert not reject(GaussianCurve(40.0), 100, 100, 100, 0.05)


# --------------------------------------------------------------------------------------------------------------
# 3. Agreement with Steinke et al. (pure family, randomized response counts)
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("m", [1000, 10_000])
@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0, 4.0])
def test_pure_family_close_to_and_never_above_steinke(m, eps):
    """At δ = 0 Steinke's test is exact for randomized response, so no valid test rejects more: f-DP <= Steinke.

    On the expected counts the two agree within a few percent, and both stay below the true ε.
    """
    v = rr_expected_count(m, eps)
    steinke = one_run.epsilon_lower_bound(m, m, v)
    ours = epsilon_lower_bound(m, m, v, family="pure").epsilon
    assert ours <= steinke + 1e-6
    assert ours >= 0.97 * steinke
    assert ours < eps and steinke < eps


@pytest.mark.parametrize(("m", "r", "v", "delta"), [(10_000, 10_000, 9_820, 1e-4), (100_000, 1000, 881, 1e-5)])
def test_pure_family_gains_over_steinke_when_the_delta_term_is_large(m, r, v, delta):
    # Steinke's p-value adds α·2mδ; once 2mδ >= 1 the f-DP analysis of the (ε, δ) curve loses less.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # one_run warns that the δ term is large
        steinke = one_run.epsilon_lower_bound(m, r, v, delta=delta)
    assert epsilon_lower_bound(m, r, v, family="pure", delta=delta).epsilon > steinke + 0.03


# --------------------------------------------------------------------------------------------------------------
# 4. Monotonicity
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("family", "delta"), [("pure", 0.0), ("pure", 1e-4), ("gaussian", 1e-5)])
@pytest.mark.parametrize(("m", "r"), [(200, 200), (2000, 300), (5000, 5000)])
def test_more_correct_guesses_never_lower_the_bound(family, delta, m, r):
    vs = np.unique(np.linspace(0, r, 40).astype(int))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        bounds = [epsilon_lower_bound(m, r, int(v), family=family, delta=delta).parameter for v in vs]
    assert np.all(np.diff(bounds) >= -1e-9)
    assert bounds[-1] > 0.0


def test_higher_confidence_and_larger_alphabet_move_the_bound_the_right_way():
    m, v = 1000, 731
    bounds = [epsilon_lower_bound(m, m, v, family="pure", confidence=c).epsilon for c in (0.5, 0.8, 0.95, 0.999)]
    assert np.all(np.diff(bounds) < 0)
    # the same number of correct guesses among k = 3 candidates is stronger evidence than among 2
    assert (
        epsilon_lower_bound(m, m, v, family="pure", k=3).epsilon > epsilon_lower_bound(m, m, v, family="pure").epsilon
    )


def test_rejection_is_monotone_in_the_parameter():
    grid = np.linspace(0.0, 5.0, 201)
    for m, r, v, tau, k, _ in _random_cases(2, 40):
        for make in (PureDPCurve, GaussianCurve):
            rejected = np.array([reject(make(float(p)), m, r, v, tau, k) for p in grid])
            # rejected on an initial interval, kept afterwards
            assert not np.any(~rejected[:-1] & rejected[1:]), (m, r, v, tau, k, make)


# --------------------------------------------------------------------------------------------------------------
# 5. Soundness
# --------------------------------------------------------------------------------------------------------------


def _bounds_by_count(counts, bound_of):
    cache = {int(c): bound_of(int(c)) for c in np.unique(counts)}
    return np.array([cache[int(c)] for c in counts])


@pytest.mark.parametrize("confidence", [0.95, 0.7])
def test_pure_family_exact_coverage_on_randomized_response(confidence):
    """The bound is monotone in v, so P[bound > ε] = P[Bin(r, q) >= v*] for the first violating count v*."""
    eps, m = 1.0, 1000
    q = math.exp(eps) / (1 + math.exp(eps))
    v_star = next(
        v for v in range(m + 1) if epsilon_lower_bound(m, m, v, family="pure", confidence=confidence).epsilon > eps
    )
    assert stats.binom.sf(v_star - 1, m, q) <= 1 - confidence


def _rr_violations(rng, estimator, eps=1.0, m=1000, trials=500):
    q = math.exp(eps) / (1 + math.exp(eps))
    counts = rng.binomial(m, q, size=trials)
    return int(np.count_nonzero(_bounds_by_count(counts, estimator) > eps))


@pytest.mark.parametrize("confidence", [0.95, 0.7])
def test_pure_family_sound_on_simulated_randomized_response(confidence):
    rng = np.random.default_rng(20240207)
    violations = _rr_violations(
        rng, lambda v: epsilon_lower_bound(1000, 1000, v, family="pure", confidence=confidence).epsilon
    )
    assert stats.binomtest(violations, 500, 1 - confidence, alternative="greater").pvalue > 1e-3


def test_soundness_check_catches_a_point_estimate():
    rng = np.random.default_rng(7)
    violations = _rr_violations(rng, lambda v: math.log(max(v, 1) / max(1000 - v, 1)))
    assert stats.binomtest(violations, 500, 0.05, alternative="greater").pvalue <= 1e-3


@pytest.mark.parametrize("confidence", [0.95, 0.7])
def test_gaussian_family_sound_on_the_gaussian_mechanism(confidence):
    """Scores S_i + N(0, 1/μ²): μ-GDP in each membership bit; guess the top k and bottom k, k fixed in advance."""
    mu, m, k, trials = 1.0, 1000, 100, 300
    rng = np.random.default_rng(31337)
    members = rng.random((trials, m)) < 0.5
    scores = members + rng.normal(0.0, 1.0 / mu, size=(trials, m))
    order = np.argsort(scores, axis=1)
    rows = np.arange(trials)[:, None]
    correct = members[rows, order[:, -k:]].sum(axis=1) + (~members[rows, order[:, :k]]).sum(axis=1)
    bounds = _bounds_by_count(
        correct,
        lambda v: epsilon_lower_bound(m, 2 * k, v, family="gaussian", delta=1e-5, confidence=confidence).parameter,
    )
    violations = int(np.count_nonzero(bounds > mu))
    assert stats.binomtest(violations, trials, 1 - confidence, alternative="greater").pvalue > 1e-3
    assert np.median(bounds) > 0.3 * mu  # and the audit is not vacuous


# --------------------------------------------------------------------------------------------------------------
# 6. Curves
# --------------------------------------------------------------------------------------------------------------


def test_pld_family_bound_matches_gaussian_family_for_one_gaussian_step():
    m, v, delta = 10_000, 7311, 1e-5
    gauss = epsilon_lower_bound(m, m, v, family="gaussian", delta=delta)
    pld = epsilon_lower_bound(m, m, v, family=dpsgd_family(1.0, 1, delta=delta))
    assert pld.parameter_name == "inverse_noise_multiplier"
    assert pld.delta == delta
    assert pld.parameter <= gauss.parameter + 1e-9
    assert pld.parameter == pytest.approx(gauss.parameter, abs=1e-3)
    assert pld.epsilon == pytest.approx(gauss.epsilon, abs=5e-3)


def test_custom_family_is_used_as_given():
    # μ-GDP indexed by 2μ: the bound on the parameter doubles, the reported ε is the same
    delta = 1e-5
    fam = CurveFamily(
        name="gaussian-2x",
        curve=lambda t: GaussianCurve(t / 2),
        epsilon=lambda t: gdp_epsilon(t / 2, delta),
        parameter_name="two_mu",
        delta=delta,
    )
    base = epsilon_lower_bound(2000, 2000, 1500, family="gaussian", delta=delta)
    res = epsilon_lower_bound(2000, 2000, 1500, family=fam)
    assert res.family == "gaussian-2x" and res.parameter_name == "two_mu" and res.delta == delta
    assert res.parameter == pytest.approx(2 * base.parameter, abs=1e-8)
    assert res.epsilon == pytest.approx(base.epsilon, abs=1e-7)


# --------------------------------------------------------------------------------------------------------------
# 7. Bad inputs
# --------------------------------------------------------------------------------------------------------------

GOOD = {"m": 100, "r": 100, "v": 75}


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"v": 101}, ValueError, "v .* must be at most r"),
        ({"r": 101}, ValueError, "r .* must be at most m"),
        ({"m": 0, "r": 0, "v": 0}, ValueError, "m must be"),
        ({"v": -1}, ValueError, "v must be"),
        ({"r": 100.0}, TypeError, "r must be an integer"),
        ({"v": True}, TypeError, "v must be an integer"),
        ({"confidence": 1.0}, ValueError, "confidence must be in"),
        ({"confidence": 0.0}, ValueError, "confidence must be in"),
        ({"confidence": float("nan")}, ValueError, "confidence must be in"),
        ({"confidence": float("inf")}, ValueError, "confidence must be in"),
        ({"delta": 1.0}, ValueError, "delta must be in"),
        ({"delta": -1e-9}, ValueError, "delta must be in"),
        ({"delta": float("nan")}, ValueError, "delta must be in"),
        ({"delta": float("inf")}, ValueError, "delta must be in"),
        ({"delta": "0"}, TypeError, "delta must be a real number"),
        ({"k": 1}, ValueError, "k must be"),
        ({"family": "laplace"}, ValueError, "family must be one of 'gaussian', 'pure' or a CurveFamily"),
        ({"family": None}, ValueError, "family must be one of"),
        ({"family": "gaussian", "delta": 0.0}, ValueError, "delta must be > 0 for the Gaussian family"),
    ],
)
def test_epsilon_lower_bound_rejects_bad_input(kwargs, error, match):
    args = {**GOOD, "family": "pure", **kwargs}
    with pytest.raises(error, match=match):
        epsilon_lower_bound(args.pop("m"), args.pop("r"), args.pop("v"), **args)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: reject(PureDPCurve(1.0), 100, 100, 75, 0.0), ValueError, "tau must be in"),
        (lambda: reject(PureDPCurve(1.0), 100, 100, 75, float("nan")), ValueError, "tau must be in"),
        (lambda: reject(PureDPCurve(1.0), 100, 100, 101, 0.05), ValueError, "must be at most r"),
        (lambda: reject(PureDPCurve(1.0), 100, 100, 75, 0.05, k=0), ValueError, "k must be"),
        (
            lambda: reject("pure", 100, 100, 75, 0.05),  # type: ignore[arg-type]
            TypeError,
            "curve must be a TradeOffCurve",
        ),
    ],
)
def test_bad_inputs_raise(call, error, match):
    with pytest.raises(error, match=match):
        call()


# --------------------------------------------------------------------------------------------------------------
# 8. The PLD family on its own mechanism, the subsampled Gaussian (issue 12), and a mismatched family caught
# --------------------------------------------------------------------------------------------------------------


def _subsampled_gaussian_counts(rng, sigma, q, steps, m, k, trials):
    """Correct top-k/bottom-k guesses of white-box DP-SGD's canary scores: a member's score sums its T steps'
    Poisson-sampled unit contributions and the noise, Bin(T, q) + N(0, T σ²); a non-member's is the noise alone."""
    members = rng.random((trials, m)) < 0.5
    scores = members * rng.binomial(steps, q, size=(trials, m)) + rng.normal(0.0, sigma * math.sqrt(steps), (trials, m))
    order = np.argsort(scores, axis=1)
    rows = np.arange(trials)[:, None]
    return members[rows, order[:, -k:]].sum(axis=1) + (~members[rows, order[:, :k]]).sum(axis=1)


@pytest.mark.slow
@pytest.mark.parametrize("confidence", [0.95, 0.7])
def test_pld_family_sound_on_the_subsampled_gaussian(confidence):
    """The family of the mechanism's own (q, T): the bound exceeds the true 1/σ exactly when Algorithm 3 rejects the
    true curve (the rejected set is an interval from 0), so each trial's violation is one rejection test."""
    sigma, q, steps, m, k, trials = 0.8, 0.5, 4, 1000, 100, 400
    claim = dpsgd_claim(sigma, q, steps)
    family = family_for_claim("pld", claim, 1e-5)
    truth = family.curve(1.0 / sigma)
    counts = _subsampled_gaussian_counts(np.random.default_rng(4242), sigma, q, steps, m, k, trials)
    violations = sum(reject(truth, m, 2 * k, int(v), 1.0 - confidence) for v in counts)
    assert stats.binomtest(violations, trials, 1 - confidence, alternative="greater").pvalue > 1e-3
    # not vacuous: the median trial's bound is a real fraction of the truth, reported as DP-SGD's ε at δ
    median = epsilon_lower_bound(m, 2 * k, int(np.median(counts)), family=family, confidence=confidence)
    assert 0.3 / sigma < median.parameter < 1.0 / sigma
    assert 0.0 < median.epsilon < claim.epsilon(1e-5)


def test_a_mismatched_family_fails_the_same_soundness_check():
    """The Gaussian family on randomized response at ε = 1 (SPEC §1's pitfall): its GDP-derived ε exceeds the true ε
    far more often than the 5 % promised, so the check that passes the matched families fails it."""
    eps, m, trials, delta = 1.0, 1000, 500, 1e-5
    mu = optimize.brentq(lambda x: gdp_epsilon(x, delta) - eps, 1e-3, 10.0)  # GDP-derived ε = true ε at this μ
    truth = GaussianCurve(mu)
    counts = np.random.default_rng(777).binomial(m, math.exp(eps) / (1 + math.exp(eps)), size=trials)
    violations = sum(reject(truth, m, m, int(v), 0.05) for v in counts)
    assert stats.binomtest(violations, trials, 0.05, alternative="greater").pvalue <= 1e-3
