"""Trade-off curves (privgame.analysis.tradeoff): each curve's blow-up inverse against its definition, the PLD curve of
one
Gaussian step against the Gaussian curve, the GDP → (ε, δ) conversion against ``dp_accounting``, and bad input."""

from __future__ import annotations

import math
import pickle

import dp_accounting
import numpy as np
import pytest

from privgame.analysis.tradeoff import GaussianCurve, PLDCurve, PureDPCurve, gdp_epsilon

Y = np.concatenate([np.logspace(-12, -1, 60), np.linspace(0.0, 1.0, 401)])


@pytest.mark.parametrize(
    "curve",
    [
        PureDPCurve(0.0),
        PureDPCurve(1.0),
        PureDPCurve(3.0, 1e-3),
        GaussianCurve(0.0),
        GaussianCurve(0.7),
        GaussianCurve(3.0),
        PLDCurve((0.0, 0.5, 1.0), (0.3, 0.1, 0.01)),
    ],
    ids=repr,
)
def test_blowup_inverse_is_the_generalised_inverse_of_one_minus_f(curve):
    g = curve.blowup_inverse(Y)
    assert np.all((g >= 0) & (g <= 1))
    assert np.all(np.diff(g[60:]) >= -1e-15)  # non-decreasing
    # 1 - f(g(y)) >= y, and any smaller level has less power
    assert np.all(1.0 - curve.tradeoff(g) >= Y - 1e-9)
    below = np.clip(g - 1e-6, 0.0, 1.0)
    mask = g > 1e-5
    assert np.all(1.0 - curve.tradeoff(below[mask]) < Y[mask] + 1e-9)
    scalar = curve.blowup_inverse_scalar()
    np.testing.assert_allclose([scalar(float(y)) for y in Y], g, rtol=1e-12, atol=1e-15)


def test_pure_curve_is_randomized_response_tradeoff():
    eps = 1.3
    alpha = np.linspace(0, 1, 101)
    expected = np.maximum.reduce([np.zeros_like(alpha), 1 - math.exp(eps) * alpha, math.exp(-eps) * (1 - alpha)])
    np.testing.assert_allclose(PureDPCurve(eps).tradeoff(alpha), expected, atol=1e-15)


@pytest.mark.parametrize("mu", [0.3, 1.0, 3.0])
def test_pld_curve_of_one_gaussian_step_equals_the_gaussian_curve(mu):
    pld_curve = PLDCurve.from_dpsgd(1.0 / mu, 1.0, 1)
    gauss = GaussianCurve(mu)
    g_pld, g_gauss = pld_curve.blowup_inverse(Y), gauss.blowup_inverse(Y)
    assert np.all(g_pld <= g_gauss + 1e-12)  # pessimistic PLD and a finite ε grid only weaken the claim
    np.testing.assert_allclose(g_pld, g_gauss, atol=1e-5)
    np.testing.assert_allclose(pld_curve.tradeoff(Y), gauss.tradeoff(Y), atol=1e-5)


def test_curves_are_frozen_hashable_and_picklable():
    curves = [
        (PureDPCurve(1.0, 1e-6), "epsilon"),
        (GaussianCurve(0.5), "mu"),
        (PLDCurve.from_dpsgd(1.0, 0.1, 3, grid_size=51), "epsilons"),
    ]
    for curve, name in curves:
        again = pickle.loads(pickle.dumps(curve))
        assert again == curve and hash(again) == hash(curve)
        np.testing.assert_array_equal(again.blowup_inverse(Y), curve.blowup_inverse(Y))
        with pytest.raises(AttributeError):
            setattr(curve, name, 0.5)


@pytest.mark.parametrize(("mu", "delta"), [(0.1, 1e-5), (0.42, 1e-5), (1.0, 1e-6), (3.0, 1e-10), (8.0, 1e-5)])
def test_gdp_epsilon_matches_dp_accounting(mu, delta):
    assert gdp_epsilon(mu, delta) == pytest.approx(dp_accounting.get_epsilon_gaussian(1.0 / mu, delta), abs=1e-8)


def test_gdp_epsilon_edges():
    assert gdp_epsilon(0.0, 1e-5) == 0.0
    assert gdp_epsilon(0.01, 0.5) == 0.0  # δ(0) = 2Φ(μ/2) - 1 < δ


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: PureDPCurve(-0.1), ValueError, "epsilon must be"),
        (lambda: PureDPCurve(float("inf")), ValueError, "epsilon must be"),
        (lambda: PureDPCurve(1.0, 1.0), ValueError, "delta must be in"),
        (lambda: GaussianCurve(float("nan")), ValueError, "mu must be"),
        (lambda: GaussianCurve(-1.0), ValueError, "mu must be"),
        (lambda: PLDCurve((0.0, 1.0), (0.1,)), ValueError, "same length"),
        (lambda: PLDCurve((float("nan"),), (0.1,)), ValueError, "epsilons must lie in"),
        (lambda: PLDCurve((1.0,), (1.5,)), ValueError, "deltas must lie in"),
        (lambda: GaussianCurve(1.0).blowup_inverse([0.5, 1.5]), ValueError, "y must lie in"),
        (lambda: PureDPCurve(1.0).blowup_inverse([float("nan")]), ValueError, "y must lie in"),
        (lambda: PureDPCurve(1.0).tradeoff([-0.1]), ValueError, "alpha must lie in"),
        (lambda: gdp_epsilon(1.0, 0.0), ValueError, "delta must be in"),
        (lambda: gdp_epsilon(float("inf"), 1e-5), ValueError, "mu must be"),
        (lambda: PLDCurve.from_dpsgd(0.0, 0.1, 10), ValueError, "noise_multiplier must be"),
        (lambda: PLDCurve.from_dpsgd(1.0, 1.5, 10), ValueError, "sampling_rate must be"),
        (lambda: PLDCurve.from_dpsgd(1.0, 0.1, 0), ValueError, "steps must be"),
    ],
)
def test_bad_inputs_raise(call, error, match):
    with pytest.raises(error, match=match):
        call()
