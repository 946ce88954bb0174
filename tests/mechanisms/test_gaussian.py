"""Tests of privgame.mechanisms.gaussian.GaussianMechanism."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from scipy import stats

from privgame.analysis.accounting import NeighbouringRelation, PrivacyClaim
from privgame.mechanisms.gaussian import GaussianMechanism

SIGMAS = [0.5, 1.0, 2.0]


def _bits(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random(n) < 0.5


def _gdp_delta(epsilon: float, mu: float) -> float:
    """δ(ε) of μ-GDP, Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2), with the second term in log space."""
    a = stats.norm.cdf(-epsilon / mu + mu / 2)
    b = math.exp(epsilon + stats.norm.logcdf(-epsilon / mu - mu / 2))
    return float(a - b)


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize("sigma", [0.0, -0.0, -1.0, math.nan, math.inf, -math.inf])
def test_bad_sigma_value_raises_value_error_naming_sigma(sigma: float) -> None:
    with pytest.raises(ValueError, match=r"^sigma must be (finite and )?> 0, got "):
        GaussianMechanism(sigma=sigma)


@pytest.mark.parametrize("sigma", ["1", True, None, 1j])
def test_non_real_sigma_raises_type_error(sigma: object) -> None:
    with pytest.raises(TypeError, match=r"^sigma must be a real number, got "):
        GaussianMechanism(sigma=sigma)  # type: ignore[arg-type]


def test_int_sigma_is_stored_as_float() -> None:
    mech = GaussianMechanism(sigma=2)
    assert mech.sigma == 2.0
    assert type(mech.sigma) is float


def test_tiny_sigma_is_accepted() -> None:
    assert GaussianMechanism(sigma=1e-300).sigma == 1e-300


# ---------------------------------------------------------------- dataclass behaviour


def test_class_attributes() -> None:
    assert GaussianMechanism.name == "gaussian"
    assert GaussianMechanism.input_kind == "canary-bits"
    assert GaussianMechanism.release_kind == "per-canary-values"


# ---------------------------------------------------------------- release


@pytest.mark.parametrize("data", [_bits(1000), _bits(1000).astype(np.int8), [True, False]])
def test_release_shape_and_dtype(data: object) -> None:
    out = GaussianMechanism(sigma=1.0).release(data, rng=np.random.default_rng(0))
    assert isinstance(out, np.ndarray)
    assert out.dtype == np.float64
    assert out.shape == (len(data),)  # type: ignore[arg-type]
    assert np.all(np.isfinite(out))


@pytest.mark.parametrize(
    "data",
    [np.zeros((2, 2)), np.array(1.0), np.array([0, 2]), np.array([0.0, 0.3]), np.array([np.nan]), np.array(["1"])],
)
def test_release_of_bad_data_raises(data: np.ndarray) -> None:
    with pytest.raises(ValueError, match=r"^data must "):
        GaussianMechanism(sigma=1.0).release(data, rng=np.random.default_rng(0))


@pytest.mark.parametrize("sigma", [0.5, 2.0])
def test_noise_has_mean_zero_and_standard_deviation_sigma(sigma: float) -> None:
    n = 100_000
    bits = _bits(n, seed=31)
    noise = GaussianMechanism(sigma=sigma).release(bits, rng=np.random.default_rng(32)) - bits
    # Mean: z-test with known σ; variance: (n − 1) s² / σ² ~ χ²(n − 1).  Two tests at 1e-3 / 2 each.
    z = noise.mean() / (sigma / math.sqrt(n))
    assert 2 * stats.norm.sf(abs(z)) > 1e-3 / 2
    chi2 = (n - 1) * noise.var(ddof=1) / sigma**2
    p_var = 2 * min(stats.chi2.cdf(chi2, n - 1), stats.chi2.sf(chi2, n - 1))
    assert p_var > 1e-3 / 2


def test_noise_is_independent_of_the_bit() -> None:
    n = 100_000
    bits = _bits(n, seed=41)
    noise = GaussianMechanism(sigma=1.0).release(bits, rng=np.random.default_rng(42)) - bits
    # Welch's t-test between the noise of members and of non-members.
    assert stats.ttest_ind(noise[bits], noise[~bits], equal_var=False).pvalue > 1e-3


# ---------------------------------------------------------------- privacy claim


def test_privacy_claim_describes_the_mechanism() -> None:
    claim = GaussianMechanism(sigma=1.5).privacy_claim()
    assert isinstance(claim, PrivacyClaim)
    assert claim.event == dp_accounting.GaussianDpEvent(noise_multiplier=1.5)
    assert claim.neighbouring == NeighbouringRelation.ADD_OR_REMOVE_ONE


@pytest.mark.parametrize("sigma", SIGMAS)
def test_privacy_claim_matches_get_epsilon_gaussian(sigma: float) -> None:
    got = GaussianMechanism(sigma=sigma).privacy_claim().epsilon(1e-5)
    expected = dp_accounting.get_epsilon_gaussian(sigma, 1e-5)
    assert abs(got - expected) <= 1e-9


@pytest.mark.parametrize("sigma", SIGMAS)
def test_privacy_claim_is_infinite_at_delta_zero(sigma: float) -> None:
    assert GaussianMechanism(sigma=sigma).privacy_claim().epsilon(0.0) == math.inf


@pytest.mark.parametrize("sigma", SIGMAS)
@pytest.mark.parametrize("delta", [1e-5, 1e-3])
def test_privacy_claim_satisfies_the_gdp_closed_form(sigma: float, delta: float) -> None:
    epsilon = GaussianMechanism(sigma=sigma).privacy_claim().epsilon(delta)
    assert 0 < epsilon < math.inf
    assert _gdp_delta(epsilon, 1.0 / sigma) == pytest.approx(delta, rel=1e-8)


def test_gdp_closed_form_reference_value() -> None:
    # Independent check of the helper: 1-GDP at ε = 0 has δ = Φ(1/2) − Φ(−1/2) = 2Φ(1/2) − 1.
    assert _gdp_delta(0.0, 1.0) == pytest.approx(2 * stats.norm.cdf(0.5) - 1, rel=1e-14)
