"""σ of the DP-SGD canary mechanisms: calibrated from ε when first needed (never when built), then carried along
(pickled to workers, ignored by equality, hashing and cache keys)."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

pytest.importorskip("torch")

from privgame.analysis import accounting
from privgame.core.cache import make_key
from privgame.mechanisms.dpsgd.blackbox import DPSGDBlackBox
from privgame.mechanisms.dpsgd.whitebox import DPSGDWhiteBox


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Every calibration the mechanisms ask for (the real one still runs)."""
    seen: list[tuple[Any, ...]] = []
    real = accounting.dpsgd_noise_multiplier

    def spy(*args: Any, **kwargs: Any) -> float:
        seen.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr("privgame.mechanisms.dpsgd.parameters.dpsgd_noise_multiplier", spy)
    return seen


@pytest.mark.parametrize("cls", [DPSGDWhiteBox, DPSGDBlackBox])
def test_building_does_not_calibrate_and_first_use_does_once(cls: Any, calls: list[tuple[Any, ...]]) -> None:
    mech = cls(epsilon=2.0, sampling_rate=1.0, steps=1)
    assert calls == []
    sigma = mech.sigma
    assert calls == [(2.0, 1e-5, 1.0, 1)]
    assert mech.sigma == sigma and mech.training_config().noise_multiplier == sigma and len(calls) == 1
    assert mech.derived_parameters() == {"sigma": sigma}
    assert accounting.dpsgd_epsilon(sigma, 1.0, 1, 1e-5) <= 2.0


def test_sigma_travels_with_the_mechanism_and_does_not_change_its_identity(calls: list[tuple[Any, ...]]) -> None:
    fresh = DPSGDWhiteBox(epsilon=2.0, sampling_rate=1.0, steps=1)
    done = DPSGDWhiteBox(epsilon=2.0, sampling_rate=1.0, steps=1)
    key_before = make_key(mechanism=done)
    sigma = done.sigma
    assert fresh == done and hash(fresh) == hash(done)
    assert make_key(mechanism=done) == key_before == make_key(mechanism=fresh)
    clone = pickle.loads(pickle.dumps(done))  # what a worker receives
    assert clone == done and clone.sigma == sigma and len(calls) == 1  # no calibration in the worker
    assert "_sigma" not in repr(done) and "sigma" not in repr(done).replace("noise_multiplier", "")


def test_noise_multiplier_is_sigma_and_derives_nothing(calls: list[tuple[Any, ...]]) -> None:
    mech = DPSGDWhiteBox(noise_multiplier=1.3)
    assert mech.sigma == 1.3 and mech.derived_parameters() == {} and calls == []


def test_target_no_sigma_reaches_is_refused_when_built(calls: list[tuple[Any, ...]]) -> None:
    with pytest.raises(ValueError, match=r"^delta must be below 1 - \(1 - sampling_rate\)\^steps = 1e-06 .*got 1e-05"):
        DPSGDWhiteBox(epsilon=1.0, sampling_rate=1e-6, steps=1)
    assert calls == []
