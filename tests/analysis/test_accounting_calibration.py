"""The exact Gaussian ε for any σ (Balle & Wang 2018, against a high-precision oracle) and DP-SGD's σ calibration:
any reachable target, from the safe side, once per (ε, δ, q, T) thanks to the in-process and on-disk caches."""

from __future__ import annotations

import math
from typing import Any

import dp_accounting
import mpmath
import pytest
from dp_accounting.pld import pld_privacy_accountant

from privgame.analysis import accounting
from privgame.analysis.accounting import (
    balle_wang_epsilon,
    dpsgd_epsilon,
    dpsgd_noise_multiplier,
    epsilon_for_event,
    gaussian_epsilon,
    sampled_probability,
)
from privgame.core.cache import ArtefactCache
from privgame.mechanisms import GaussianMechanism


def _oracle(sigma: float, delta: float) -> float:
    """Balle & Wang's ε by bisection on their equation in ε (Theorem 8), in 400-digit arithmetic.

    The bracket is the elementary one: ε ≥ 0, and Φ(μ/2 − ε/μ) ≤ δ once ε ≥ μ (μ/2 − Φ⁻¹(δ)).
    """
    with mpmath.workdps(400):
        mu = 1 / mpmath.mpf(sigma)
        d = mpmath.mpf(delta)

        def gap(e: Any) -> Any:
            return mpmath.ncdf(mu / 2 - e / mu) - mpmath.exp(e) * mpmath.ncdf(-mu / 2 - e / mu) - d

        if gap(0) <= 0:
            return 0.0
        z = -mpmath.sqrt(2) * mpmath.erfinv(1 - 2 * d)  # Φ⁻¹(δ)
        lo, hi = max(mpmath.mpf(0), mu * (mu / 2 - 40)), mu * (mu / 2 - z)
        for _ in range(120):  # 2^-120 of the bracket: far below a float's resolution of ε
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if gap(mid) > 0 else (lo, mid)
        return float((lo + hi) / 2)


@pytest.mark.parametrize("sigma", [1e3, 10.0, 1.0, 0.3, 0.01, 1e-5, 1e-10, 1e-100, 1e-150])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-9])
def test_balle_wang_matches_a_high_precision_oracle(sigma: float, delta: float) -> None:
    assert balle_wang_epsilon(sigma, delta) == pytest.approx(_oracle(sigma, delta), rel=1e-11, abs=1e-13)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 2.0, 10.0, 100.0])
def test_balle_wang_agrees_with_dp_accounting_where_it_converges(sigma: float) -> None:
    assert balle_wang_epsilon(sigma, 1e-5) == pytest.approx(dp_accounting.get_epsilon_gaussian(sigma, 1e-5), rel=1e-10)


def test_balle_wang_limits() -> None:
    assert balle_wang_epsilon(1.0, 0.0) == math.inf
    assert balle_wang_epsilon(math.inf, 1e-5) == 0.0
    assert balle_wang_epsilon(1e6, 1e-5) == 0.0  # (0, δ)-DP: the total variation 2Φ(μ/2) − 1 ≈ 4e-7 < δ
    assert dp_accounting.get_epsilon_gaussian(1e6, 1e-5) == 0


@pytest.mark.parametrize("sigma", [0.0, -1.0, math.nan])
def test_balle_wang_bad_sigma(sigma: float) -> None:
    with pytest.raises(ValueError, match=r"^sigma must be > 0"):
        balle_wang_epsilon(sigma, 1e-5)


@pytest.mark.parametrize(
    "call",
    [
        lambda: GaussianMechanism(sigma=1e-300).privacy_claim().epsilon(1e-5),
        lambda: gaussian_epsilon(1e-300, 1e-5),
        lambda: balle_wang_epsilon(1e-300, 1e-5),
        lambda: balle_wang_epsilon(1e-320, 1e-5),  # 1/σ itself overflows
    ],
)
def test_sigma_too_small_to_account_is_one_value_error(call: Any) -> None:
    with pytest.raises(ValueError, match=r"^sigma .*too small to account|^sigma must be at least about 5e-155"):
        call()


def test_smallest_sigma_that_accounts_is_finite() -> None:
    assert gaussian_epsilon(1e-154, 1e-5) == pytest.approx(5e307, rel=1e-6)


def test_dp_accounting_failure_falls_back_to_balle_wang(monkeypatch: pytest.MonkeyPatch) -> None:
    def fails(sigma: float, delta: float) -> float:
        raise RuntimeError("Failed to converge after 100 iterations.")

    monkeypatch.setattr(dp_accounting, "get_epsilon_gaussian", fails)
    got = epsilon_for_event(dp_accounting.GaussianDpEvent(1e-10), 1e-5)
    assert got == pytest.approx(_oracle(1e-10, 1e-5), rel=1e-12)


# -- σ calibration ------------------------------------------------------------------------------------------------


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """No calibration remembered by this process (the disk cache is the session's own, tests/conftest.py)."""
    monkeypatch.setattr(accounting, "_calibrations", {})


def _check_smallest(sigma: float, eps: float, delta: float, q: float, t: int, tol: float = 1e-4, **kw: Any) -> None:
    assert dpsgd_epsilon(sigma, q, t, delta, **kw) <= eps
    assert dpsgd_epsilon(sigma - tol, q, t, delta, **kw) > eps  # the smallest σ to within tol


def test_large_target_at_full_batch_is_bracketed(fresh: None) -> None:
    """ε = 30 needs σ ≈ 0.215, below the old search's fixed lower end of 0.25 (NoBracketIntervalFoundError)."""
    sigma = dpsgd_noise_multiplier(30.0, 1e-5, 1.0, 1, cache=None)
    _check_smallest(sigma, 30.0, 1e-5, 1.0, 1)


@pytest.mark.parametrize(("eps", "q", "t"), [(0.5, 0.2, 10), (4.0, 0.2, 10), (2.0, 1.0, 4)])
def test_calibration_is_the_smallest_sigma_from_the_safe_side(fresh: None, eps: float, q: float, t: int) -> None:
    _check_smallest(dpsgd_noise_multiplier(eps, 1e-5, q, t, cache=None), eps, 1e-5, q, t)


def test_rdp_calibration(fresh: None) -> None:
    sigma = dpsgd_noise_multiplier(2.0, 1e-5, 0.2, 10, accountant="rdp", cache=None)
    _check_smallest(sigma, 2.0, 1e-5, 0.2, 10, accountant="rdp")
    assert sigma > dpsgd_noise_multiplier(2.0, 1e-5, 0.2, 10, cache=None)  # RDP is looser: more noise


def test_a_bad_estimate_still_gives_the_smallest_sigma(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    exact = accounting.balle_wang_epsilon
    monkeypatch.setattr(accounting, "balle_wang_epsilon", lambda s, d: exact(s, d) + 0.3)  # estimate too large
    sigma = dpsgd_noise_multiplier(2.0, 1e-5, 1.0, 1, cache=None)
    _check_smallest(sigma, 2.0, 1e-5, 1.0, 1)


def test_delta_covering_the_sampling_chance_is_refused(fresh: None) -> None:
    assert sampled_probability(1e-6, 1) == pytest.approx(1e-6)
    assert sampled_probability(1.0, 3) == 1.0
    with pytest.raises(ValueError, match=r"^delta must be below 1 - \(1 - q\)\^T = 1e-06 .*got 1e-05"):
        dpsgd_noise_multiplier(1.0, 1e-5, 1e-6, 1, cache=None)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"accountant": "exact"}, ValueError, "accountant must be one of 'pld', 'rdp', got 'exact'"),
        ({"tol": 0.0}, ValueError, "tol must be > 0"),
        ({"cache": "/tmp/somewhere"}, TypeError, "cache must be an ArtefactCache, 'default' or None"),
    ],
)
def test_bad_arguments(fresh: None, kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        dpsgd_noise_multiplier(1.0, 1e-5, 0.5, 2, **kwargs)


def _entries(cache: ArtefactCache) -> list[Any]:
    return sorted((cache.root / "v1" / "json").rglob("*.json"))


def test_calibration_is_cached_on_disk(fresh: None, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ArtefactCache(tmp_path / "cache")
    sigma = dpsgd_noise_multiplier(2.0, 1e-5, 1.0, 2, cache=cache)
    (entry,) = _entries(cache)
    monkeypatch.setattr(accounting, "_calibrations", {})  # a new process, in effect

    def must_not_run(*args: Any) -> float:
        raise AssertionError("recalibrated although the cache holds the answer")

    monkeypatch.setattr(accounting, "_calibrate_dpsgd", must_not_run)
    assert dpsgd_noise_multiplier(2.0, 1e-5, 1.0, 2, cache=cache) == sigma
    assert dpsgd_noise_multiplier(2.0, 1e-5, 1.0, 2, cache=cache) == sigma  # and now from this process's memory
    with pytest.raises(AssertionError, match="recalibrated"):  # another (ε, δ, q, T) is another entry
        dpsgd_noise_multiplier(2.0, 1e-5, 1.0, 3, cache=cache)
    assert entry.exists()


def test_default_cache_is_the_default_cache_dir(fresh: None, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRIVGAME_CACHE_DIR", str(tmp_path / "default"))
    dpsgd_noise_multiplier(2.0, 1e-5, 1.0, 2)
    assert len(_entries(ArtefactCache(tmp_path / "default"))) == 1


def test_no_cache_writes_nothing(fresh: None, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRIVGAME_CACHE_DIR", str(tmp_path / "default"))
    dpsgd_noise_multiplier(2.0, 1e-5, 1.0, 2, cache=None)
    assert not (tmp_path / "default").exists()


def test_unusable_default_cache_is_skipped(fresh: None, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "file").write_text("not a directory")
    monkeypatch.setenv("PRIVGAME_CACHE_DIR", str(tmp_path / "file"))
    sigma = dpsgd_noise_multiplier(2.0, 1e-5, 1.0, 2)
    _check_smallest(sigma, 2.0, 1e-5, 1.0, 2)


def test_damaged_entry_is_recomputed(fresh: None, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = ArtefactCache(tmp_path / "cache")
    sigma = dpsgd_noise_multiplier(2.0, 1e-5, 1.0, 2, cache=cache)
    (entry,) = _entries(cache)
    entry.write_text('{"sigma": 0.001}')  # edited: its checksum no longer matches
    monkeypatch.setattr(accounting, "_calibrations", {})
    with pytest.warns(UserWarning, match="corrupted cache entry"):
        assert dpsgd_noise_multiplier(2.0, 1e-5, 1.0, 2, cache=cache) == sigma
    (again,) = _entries(cache)
    assert '"sigma": 0.001' not in again.read_text()  # the recomputed answer replaced it


@pytest.mark.parametrize("stored", [{"sigma": -1.0}, {"sigma": "1.5"}, {"sigma": math.nan}, [1.5], {"other": 1.0}])
def test_entry_without_a_valid_sigma_is_recomputed(
    fresh: None, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, stored: Any
) -> None:
    cache = ArtefactCache(tmp_path / "cache")
    sigma = dpsgd_noise_multiplier(2.0, 1e-5, 1.0, 2, cache=cache)
    (entry,) = _entries(cache)
    cache.put_json(entry.stem, stored)  # a well-formed entry holding nonsense
    monkeypatch.setattr(accounting, "_calibrations", {})
    assert dpsgd_noise_multiplier(2.0, 1e-5, 1.0, 2, cache=cache) == sigma
    assert cache.get_json(entry.stem)["sigma"] == sigma


def test_dpsgd_noise_too_small_for_the_pld_grid_is_one_value_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """dp_accounting raises OverflowError at σ = 1e-300, and MemoryError at σ = 1e-3 (a 38 GiB grid, simulated
    here: a machine with that much memory would try)."""
    with pytest.raises(ValueError, match=r"^the pld accountant of dp_accounting cannot account .*OverflowError"):
        dpsgd_epsilon(1e-300, 0.1, 10, 1e-5)

    def no_memory(self: Any, event: Any, count: int = 1) -> Any:
        raise MemoryError("Unable to allocate 38.0 GiB for an array with shape (5097432778,) and data type int64")

    monkeypatch.setattr(pld_privacy_accountant.PLDAccountant, "compose", no_memory)
    with pytest.raises(ValueError, match=r"compositions too many \(MemoryError: Unable to allocate 38"):
        dpsgd_epsilon(1e-3, 0.1, 10, 1e-5)
