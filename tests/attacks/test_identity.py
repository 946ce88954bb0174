"""Tests of privgame.attacks.identity.Identity."""

from __future__ import annotations

import dataclasses
import math
import pickle

import numpy as np
import pytest

from privgame.attacks.identity import Identity
from privgame.mechanisms.gaussian import GaussianMechanism
from privgame.mechanisms.randomized_response import RandomizedResponse


def test_score_returns_released_values_at_targets() -> None:
    release = np.array([0.5, -1.25, 3.0, 7.0])
    targets = np.array([2, 0, 0, 3], dtype=np.intp)
    scores = Identity().score(release, targets)
    assert scores.dtype == np.float64
    assert scores.shape == (4,)
    np.testing.assert_array_equal(scores, [3.0, 0.5, 0.5, 7.0])


@pytest.mark.parametrize(
    "release", [np.array([0, 1, 1, 0]), np.array([False, True, True, False]), [0, 1, 1, 0], np.float32([0, 1, 1, 0])]
)
def test_score_converts_to_float64(release: object) -> None:
    scores = Identity().score(release, np.arange(4))
    assert scores.dtype == np.float64
    np.testing.assert_array_equal(scores, [0.0, 1.0, 1.0, 0.0])


def test_score_with_no_targets_is_empty_float64() -> None:
    scores = Identity().score(np.array([1.0, 2.0]), np.array([], dtype=np.intp))
    assert scores.shape == (0,)
    assert scores.dtype == np.float64


def test_score_does_not_alias_the_release() -> None:
    release = np.array([1.0, 2.0, 3.0])
    scores = Identity().score(release, np.arange(3))
    scores[0] = 99.0
    assert release[0] == 1.0


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_release_raises(bad: float) -> None:
    with pytest.raises(ValueError, match=r"^release must be finite, got "):
        Identity().score(np.array([0.0, bad, 1.0]), np.array([0]))


def test_non_1d_release_raises() -> None:
    with pytest.raises(ValueError, match=r"^release must be a 1-d array"):
        Identity().score(np.zeros((2, 2)), np.array([0]))


def test_fit_returns_the_attack_itself() -> None:
    attack = Identity()
    assert attack.fit(None, rng=np.random.default_rng(0)) is attack
    assert attack.fit({"anything": 1}, rng=np.random.default_rng(1)) is attack


def test_frozen() -> None:
    assert Identity.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert dataclasses.fields(Identity) == ()
    attack = Identity()
    # Identity has no fields, so on Python 3.11 the frozen __setattr__ of a slots=True dataclass falls through to a
    # broken super() call (TypeError) rather than FrozenInstanceError; what matters is that nothing can be set.
    with pytest.raises((dataclasses.FrozenInstanceError, TypeError, AttributeError)):
        attack.learned = 1.0  # type: ignore[attr-defined]
    assert not hasattr(attack, "learned")
    with pytest.raises((dataclasses.FrozenInstanceError, TypeError, AttributeError)):
        attack.threshold = 1.0  # type: ignore[misc]
    assert attack.threshold == 0.5  # its own fitted attack: the fixed decision threshold of privgame.attacks._base


def test_pickle_round_trip() -> None:
    attack = Identity()
    clone = pickle.loads(pickle.dumps(attack))
    assert clone == attack
    assert isinstance(clone, Identity)


def test_name_and_accepts() -> None:
    assert Identity.name == "identity"
    assert isinstance(Identity.accepts, frozenset)
    assert "per-canary-values" in Identity.accepts


@pytest.mark.parametrize("mech", [RandomizedResponse(epsilon=1.0), GaussianMechanism(sigma=1.0)])
def test_scores_the_release_of_the_bit_mechanisms(mech: RandomizedResponse | GaussianMechanism) -> None:
    assert mech.release_kind in Identity.accepts
    bits = np.arange(10) % 2 == 0
    release = mech.release(bits, rng=np.random.default_rng(0))
    targets = np.array([9, 1, 4], dtype=np.intp)
    np.testing.assert_array_equal(Identity().score(release, targets), release[targets])
