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


@pytest.mark.parametrize("sigma", ["1", True, 1j])
def test_non_real_sigma_raises_type_error(sigma: object) -> None:
    with pytest.raises(TypeError, match=r"^sigma must be a real number, got "):
        GaussianMechanism(sigma=sigma)  # type: ignore[arg-type]


def test_int_sigma_is_stored_as_float() -> None:
    mech = GaussianMechanism(sigma=2)
    assert mech.sigma == 2.0
    assert type(mech.sigma) is float


def test_tiny_sigma_is_accepted() -> None:
    assert GaussianMechanism(sigma=1e-300).sigma == 1e-300


# ---------------------------------------------------------------- configured by epsilon (analytic Gaussian)


@pytest.mark.parametrize(("epsilon", "delta"), [(0.5, 1e-5), (1.0, 1e-5), (4.0, 1e-6), (1.0, 0.1)])
def test_epsilon_calibrates_the_smallest_sigma_whose_claim_meets_it(epsilon: float, delta: float) -> None:
    """The claim's own ε at δ is at most the target, and 1e-9 less noise would exceed it: σ is the analytic
    Gaussian mechanism's (Balle & Wang 2018), not the classical √(2 ln(1.25/δ))/ε (about 30 % more at ε = 1)."""
    mech = GaussianMechanism(epsilon=epsilon, delta=delta)
    claim = mech.privacy_claim()
    assert claim.epsilon(delta) <= epsilon
    assert GaussianMechanism(sigma=mech.noise * (1 - 1e-9)).privacy_claim().epsilon(delta) > epsilon
    assert mech.sigma is None and mech.derives_parameters()
    assert mech.derived_parameters() == {"sigma": mech.noise}
    if epsilon < 1:
        assert mech.noise < math.sqrt(2 * math.log(1.25 / delta)) / epsilon


def test_epsilon_one_at_delta_1e5_is_sigma_3_7306() -> None:
    assert GaussianMechanism(epsilon=1.0, delta=1e-5).noise == pytest.approx(3.7306316, abs=1e-6)


def test_sigma_and_epsilon_release_the_same_when_their_noise_agrees() -> None:
    by_eps = GaussianMechanism(epsilon=1.0, delta=1e-5)
    by_sigma = GaussianMechanism(sigma=by_eps.noise)
    bits = _bits(100)
    np.testing.assert_array_equal(
        by_eps.release(bits, rng=np.random.default_rng(3)), by_sigma.release(bits, rng=np.random.default_rng(3))
    )
    assert not by_sigma.derives_parameters() and by_sigma.derived_parameters() == {}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "exactly one of sigma and epsilon must be given"),
        ({"sigma": 1.0, "epsilon": 1.0, "delta": 1e-5}, "exactly one of sigma and epsilon must be given"),
        ({"sigma": 1.0, "delta": 1e-5}, "delta is the δ of epsilon"),
        ({"epsilon": 1.0}, "delta must be given with epsilon"),
        ({"epsilon": 1.0, "delta": 0.0}, "delta must be"),
        ({"epsilon": 1.0, "delta": 1.0}, "delta must be"),
        ({"epsilon": 0.0, "delta": 1e-5}, "epsilon must be"),
        ({"epsilon": math.inf, "delta": 1e-5}, "epsilon must be"),
    ],
)
def test_bad_epsilon_settings_are_refused_in_one_line(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        GaussianMechanism(**kwargs)
    assert "\n" not in str(info.value)


def test_the_calibration_is_cached_on_disk(tmp_path) -> None:
    from privgame.analysis import accounting
    from privgame.core.cache import ArtefactCache

    cache = ArtefactCache(tmp_path / "c")
    first = accounting.gaussian_noise_for_epsilon(0.7, 1e-5, cache=cache)
    accounting._gaussian_calibrations.clear()
    assert list((tmp_path / "c").rglob("*")), "nothing was written to the cache"
    assert accounting.gaussian_noise_for_epsilon(0.7, 1e-5, cache=cache) == first


@pytest.mark.parametrize("factor", [0.5, 2.0])
def test_a_cached_sigma_that_is_not_the_calibration_is_recomputed(tmp_path, factor: float) -> None:
    """An entry a stranger wrote: half the σ would claim more than asked; twice the σ would silently audit a far
    more private mechanism than the configured epsilon (and it was taken)."""
    from privgame.analysis import accounting
    from privgame.core.cache import ArtefactCache

    cache = ArtefactCache(tmp_path / "c")
    first = accounting.gaussian_noise_for_epsilon(0.7, 1e-5, cache=cache)
    store, key = accounting._gaussian_cache(cache, (0.7, 1e-5))
    assert store is not None and key is not None
    store.put_json(key, {"sigma": first * factor, "target_epsilon": 0.7, "delta": 1e-5})
    accounting._gaussian_calibrations.clear()
    assert accounting.gaussian_noise_for_epsilon(0.7, 1e-5, cache=cache) == first


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
