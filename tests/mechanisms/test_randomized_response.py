"""Tests of privgame.mechanisms.randomized_response.RandomizedResponse."""

from __future__ import annotations

import itertools
import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.pld import pld_privacy_accountant
from scipy import stats

from privgame.analysis.accounting import NeighbouringRelation, PrivacyClaim
from privgame.mechanisms.randomized_response import RandomizedResponse

EPSILONS = [0.5, 1.0, 2.0, 4.0, 8.0]


def _bits(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random(n) < 0.5


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize("epsilon", [-1e-12, -1.0, -math.inf, math.nan])
def test_bad_epsilon_value_raises_value_error_naming_epsilon(epsilon: float) -> None:
    with pytest.raises(ValueError, match=r"^epsilon must be >= 0, got "):
        RandomizedResponse(epsilon=epsilon)


@pytest.mark.parametrize("epsilon", ["1", True, False, None, 1 + 0j])
def test_non_real_epsilon_raises_type_error(epsilon: object) -> None:
    with pytest.raises(TypeError, match=r"^epsilon must be a real number, got "):
        RandomizedResponse(epsilon=epsilon)  # type: ignore[arg-type]


def test_int_epsilon_is_stored_as_float() -> None:
    mech = RandomizedResponse(epsilon=1)
    assert mech.epsilon == 1.0
    assert type(mech.epsilon) is float


def test_numpy_epsilon_is_stored_as_builtin_float() -> None:
    mech = RandomizedResponse(epsilon=np.float32(0.5))
    assert type(mech.epsilon) is float
    assert mech.epsilon == 0.5


@pytest.mark.parametrize("epsilon", [0.0, math.inf])
def test_boundary_epsilons_are_accepted(epsilon: float) -> None:
    assert RandomizedResponse(epsilon=epsilon).epsilon == epsilon


def test_truth_probability() -> None:
    assert RandomizedResponse(epsilon=0.0).truth_probability == 0.5
    assert RandomizedResponse(epsilon=math.inf).truth_probability == 1.0
    assert RandomizedResponse(epsilon=2.0).truth_probability == pytest.approx(
        math.exp(2.0) / (1 + math.exp(2.0)), rel=1e-15
    )


# ---------------------------------------------------------------- dataclass behaviour


def test_hashable_and_equal_by_value() -> None:
    a, b = RandomizedResponse(epsilon=1), RandomizedResponse(epsilon=1.0)
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b, RandomizedResponse(epsilon=2.0)}) == 2


def test_class_attributes() -> None:
    assert RandomizedResponse.name == "randomized-response"
    assert RandomizedResponse.input_kind == "canary-bits"
    assert RandomizedResponse.release_kind == "per-canary-values"


# ---------------------------------------------------------------- release


@pytest.mark.parametrize("data", [_bits(1000), _bits(1000).astype(int), _bits(1000).astype(float), [1, 0, 1]])
def test_release_shape_and_dtype(data: object) -> None:
    out = RandomizedResponse(epsilon=1.0).release(data, rng=np.random.default_rng(1))
    assert isinstance(out, np.ndarray)
    assert out.dtype == np.float64
    assert out.shape == (len(data),)  # type: ignore[arg-type]
    assert set(np.unique(out)) <= {0.0, 1.0}


def test_release_empty() -> None:
    out = RandomizedResponse(epsilon=1.0).release(np.array([], dtype=bool), rng=np.random.default_rng(1))
    assert out.shape == (0,)
    assert out.dtype == np.float64


def test_release_does_not_modify_its_input() -> None:
    bits = _bits(100)
    before = bits.copy()
    RandomizedResponse(epsilon=0.0).release(bits, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(bits, before)


@pytest.mark.parametrize(
    "data",
    [
        np.zeros((3, 2), dtype=bool),
        np.array(True),
        np.array([0, 1, 2]),
        np.array([0.0, 0.5, 1.0]),
        np.array([0, -1]),
        np.array([0.0, np.nan]),
        np.array(["0", "1"]),
    ],
)
def test_release_of_bad_data_raises(data: np.ndarray) -> None:
    with pytest.raises(ValueError, match=r"^data must "):
        RandomizedResponse(epsilon=1.0).release(data, rng=np.random.default_rng(0))


# ---------------------------------------------------------------- statistics


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_flip_frequency_matches_one_over_one_plus_e_eps(epsilon: float) -> None:
    n = 200_000
    bits = _bits(n, seed=11)
    out = RandomizedResponse(epsilon=epsilon).release(bits, rng=np.random.default_rng(12345))
    flips = int(np.count_nonzero(out != bits))
    p = 1.0 / (1.0 + math.exp(epsilon))
    assert stats.binomtest(flips, n, p).pvalue > 1e-3


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_flip_frequency_is_the_same_for_members_and_non_members(epsilon: float) -> None:
    n = 200_000
    bits = _bits(n, seed=21)
    out = RandomizedResponse(epsilon=epsilon).release(bits, rng=np.random.default_rng(22))
    p = 1.0 / (1.0 + math.exp(epsilon))
    for side in (bits, ~bits):
        flips = int(np.count_nonzero(out[side] != bits[side]))
        # Two tests: Bonferroni keeps the chance of a false failure <= 1e-3.
        assert stats.binomtest(flips, int(side.sum()), p).pvalue > 1e-3 / 2


def test_infinite_epsilon_never_flips() -> None:
    bits = _bits(100_000, seed=3)
    out = RandomizedResponse(epsilon=math.inf).release(bits, rng=np.random.default_rng(4))
    np.testing.assert_array_equal(out, bits.astype(np.float64))


def test_zero_epsilon_output_is_independent_of_input() -> None:
    n = 100_000
    mech = RandomizedResponse(epsilon=0.0)
    ones = mech.release(np.ones(n, dtype=bool), rng=np.random.default_rng(5))
    zeros = mech.release(np.zeros(n, dtype=bool), rng=np.random.default_rng(6))
    # Both must be Bernoulli(1/2); two tests at 1e-3 / 2 each.
    assert stats.binomtest(int(ones.sum()), n, 0.5).pvalue > 1e-3 / 2
    assert stats.binomtest(int(zeros.sum()), n, 0.5).pvalue > 1e-3 / 2


# ---------------------------------------------------------------- privacy claim


def test_privacy_claim_describes_the_mechanism() -> None:
    claim = RandomizedResponse(epsilon=1.0).privacy_claim()
    assert isinstance(claim, PrivacyClaim)
    assert claim.neighbouring == NeighbouringRelation.REPLACE_ONE
    assert claim.accountant == "pld"
    assert claim.value_discretization_interval == 1e-9
    assert isinstance(claim.event, dp_accounting.RandomizedResponseDpEvent)
    assert claim.event.num_buckets == 2
    assert claim.event.noise_parameter == pytest.approx(2.0 / (1.0 + math.e), rel=1e-15)


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_privacy_claim_epsilon_at_delta_zero_is_epsilon(epsilon: float) -> None:
    got = RandomizedResponse(epsilon=epsilon).privacy_claim().epsilon(0.0)
    assert abs(got - epsilon) <= 1e-6


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_privacy_claim_matches_dp_accounting_directly(epsilon: float) -> None:
    acct = pld_privacy_accountant.PLDAccountant(
        dp_accounting.NeighboringRelation.REPLACE_ONE, value_discretization_interval=1e-9
    )
    acct.compose(dp_accounting.RandomizedResponseDpEvent(2.0 / (1.0 + math.exp(epsilon)), 2))
    expected = acct.get_epsilon(0.0)
    got = RandomizedResponse(epsilon=epsilon).privacy_claim().epsilon(0.0)
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_privacy_claim_of_infinite_epsilon_is_infinite() -> None:
    assert RandomizedResponse(epsilon=math.inf).privacy_claim().epsilon(0.0) == math.inf


@pytest.mark.parametrize("epsilon", [0.0, 1e-17])
def test_privacy_claim_of_zero_epsilon_is_zero(epsilon: float) -> None:
    assert RandomizedResponse(epsilon=epsilon).privacy_claim().epsilon(0.0) == pytest.approx(0.0, abs=1e-6)


def test_privacy_claim_epsilon_does_not_increase_with_delta() -> None:
    claim = RandomizedResponse(epsilon=2.0).privacy_claim()
    values = [claim.epsilon(d) for d in (0.0, 1e-6, 1e-3, 0.1)]
    assert all(b <= a + 1e-9 for a, b in itertools.pairwise(values))
    assert values[-1] < values[0]
