"""Tests of privgame.analysis._checks: every branch and the message shape "{name} must be ..., got {value!r}."."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest

from privgame.analysis._checks import (
    check_confidence,
    check_delta,
    check_int,
    check_membership,
    check_real,
    check_scores,
)

NAN = math.nan
INF = math.inf

# (keyword arguments, constraint text in the message)
RANGES = [
    ({}, "a finite real number"),
    ({"low": 0.0}, ">= 0"),
    ({"low": 0.0, "low_open": True}, "> 0"),
    ({"high": 1.0}, "<= 1"),
    ({"high": 1.0, "high_open": True}, "< 1"),
    ({"low": 0.0, "high": 1.0}, "in [0, 1]"),
    ({"low": 0.0, "high": 1.0, "low_open": True}, "in (0, 1]"),
    ({"low": 0.0, "high": 1.0, "high_open": True}, "in [0, 1)"),
    ({"low": 0.0, "high": 1.0, "low_open": True, "high_open": True}, "in (0, 1)"),
    ({"low": -2.5, "high": 1e6}, "in [-2.5, 1000000]"),
    ({"low": 0.5, "high": 1e20}, "in [0.5, 1e+20]"),
]


def _msg(name: str, constraint: str, value: object) -> str:
    return "^" + re.escape(f"{name} must be {constraint}, got {value!r}.") + "$"


# ---------------------------------------------------------------- check_real


@pytest.mark.parametrize("value", [True, False, np.bool_(True), "1", b"1", None, 1j, [1.0], np.array([1.0])])
def test_check_real_refuses_non_reals(value: object) -> None:
    with pytest.raises(TypeError, match=_msg("x", "a real number", value)):
        check_real("x", value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(1, 1.0), (0.25, 0.25), (np.float32(0.5), 0.5), (np.int64(3), 3.0), (Fraction(1, 4), 0.25), (-0.0, 0.0)],
)
def test_check_real_returns_builtin_float(value: object, expected: float) -> None:
    out = check_real("x", value)
    assert type(out) is float
    assert out == expected


@pytest.mark.parametrize(("kwargs", "constraint"), RANGES)
@pytest.mark.parametrize("allow_inf", [False, True])
def test_nan_fails_every_range_check(kwargs: dict[str, object], constraint: str, allow_inf: bool) -> None:
    with pytest.raises(ValueError, match=_msg("x", constraint, NAN)):
        check_real("x", NAN, allow_inf=allow_inf, **kwargs)  # type: ignore[arg-type]


def test_numpy_nan_fails() -> None:
    with pytest.raises(ValueError, match=r"^x must be >= 0, got "):
        check_real("x", np.float64("nan"), low=0.0)


@pytest.mark.parametrize(("kwargs", "constraint"), RANGES)
@pytest.mark.parametrize("value", [INF, -INF])
def test_infinity_fails_unless_allowed(kwargs: dict[str, object], constraint: str, value: float) -> None:
    # Only the shape is checked: the constraint text for a refused infinity is the subject of an xfail below.
    with pytest.raises(ValueError, match="^" + re.escape("x must be ") + ".+" + re.escape(f", got {value!r}.") + "$"):
        check_real("x", value, **kwargs)  # type: ignore[arg-type]


def test_infinity_allowed_when_inside_the_interval() -> None:
    assert check_real("x", INF, allow_inf=True) == INF
    assert check_real("x", -INF, allow_inf=True) == -INF
    assert check_real("x", INF, low=0.0, allow_inf=True) == INF
    assert check_real("x", -INF, high=0.0, high_open=True, allow_inf=True) == -INF


def test_infinity_outside_the_interval_fails_even_when_allowed() -> None:
    with pytest.raises(ValueError, match=_msg("x", ">= 0", -INF)):
        check_real("x", -INF, low=0.0, allow_inf=True)
    with pytest.raises(ValueError, match=_msg("x", "in [0, 1]", INF)):
        check_real("x", INF, low=0.0, high=1.0, allow_inf=True)


@pytest.mark.parametrize(
    ("kwargs", "constraint", "inside", "outside"),
    [
        ({"low": 0.0}, ">= 0", [0.0, 1e300], [-1e-300, -1.0]),
        ({"low": 0.0, "low_open": True}, "> 0", [1e-300, 5.0], [0.0, -0.0, -1.0]),
        ({"high": 1.0}, "<= 1", [1.0, -1e300], [1.0000000000000002, 2.0]),
        ({"high": 1.0, "high_open": True}, "< 1", [0.9999999999999999, -5.0], [1.0, 2.0]),
        ({"low": 0.0, "high": 1.0}, "in [0, 1]", [0.0, 0.5, 1.0], [-0.1, 1.1]),
        ({"low": 0.0, "high": 1.0, "low_open": True, "high_open": True}, "in (0, 1)", [1e-9, 0.5], [0.0, 1.0]),
        ({"low": 0.0, "high": 1.0, "low_open": True}, "in (0, 1]", [1.0], [0.0]),
        ({"low": 0.0, "high": 1.0, "high_open": True}, "in [0, 1)", [0.0], [1.0]),
    ],
)
def test_check_real_bounds(
    kwargs: dict[str, object], constraint: str, inside: list[float], outside: list[float]
) -> None:
    for value in inside:
        assert check_real("param", value, **kwargs) == value  # type: ignore[arg-type]
    for value in outside:
        with pytest.raises(ValueError, match=_msg("param", constraint, value)):
            check_real("param", value, **kwargs)  # type: ignore[arg-type]


def test_message_uses_repr_of_the_original_value() -> None:
    with pytest.raises(ValueError, match=_msg("x", ">= 0", np.int64(-3))):
        check_real("x", np.int64(-3), low=0.0)


def test_message_for_refused_infinity_says_finite() -> None:
    with pytest.raises(ValueError, match=r"finite"):
        check_real("sigma", INF, low=0.0, low_open=True)


# ---------------------------------------------------------------- check_int


@pytest.mark.parametrize("value", [True, False, 3.0, 3.5, NAN, "3", None, np.float64(2.0)])
def test_check_int_refuses_non_integers(value: object) -> None:
    with pytest.raises(TypeError, match=_msg("n", "an integer", value)):
        check_int("n", value)


@pytest.mark.parametrize("value", [0, -5, 10**30, np.int64(7), np.uint8(255)])
def test_check_int_returns_builtin_int(value: object) -> None:
    out = check_int("n", value)
    assert type(out) is int
    assert out == int(value)  # type: ignore[call-overload]


@pytest.mark.parametrize(
    ("kwargs", "constraint", "inside", "outside"),
    [
        ({"low": 1}, ">= 1", [1, 10**9], [0, -1]),
        ({"high": 5}, "<= 5", [5, -10], [6]),
        ({"low": 1, "high": 5}, "in [1, 5]", [1, 3, 5], [0, 6]),
    ],
)
def test_check_int_bounds(kwargs: dict[str, int], constraint: str, inside: list[int], outside: list[int]) -> None:
    for value in inside:
        assert check_int("n", value, **kwargs) == value
    for value in outside:
        with pytest.raises(ValueError, match=_msg("n", "an integer " + constraint, value)):
            check_int("n", value, **kwargs)


# ---------------------------------------------------------------- check_confidence / check_delta


@pytest.mark.parametrize("value", [1e-12, 0.5, 0.95, 1 - 1e-12])
def test_check_confidence_accepts_the_open_unit_interval(value: float) -> None:
    assert check_confidence(value) == value


@pytest.mark.parametrize("value", [0.0, 1.0, 0, 1, -0.5, 1.5, NAN, INF, -INF])
def test_check_confidence_refuses_values_outside(value: float) -> None:
    with pytest.raises(ValueError, match=_msg("confidence", "in (0, 1)", value)):
        check_confidence(value)


@pytest.mark.parametrize("value", [True, "0.95", None])
def test_check_confidence_refuses_non_reals(value: object) -> None:
    with pytest.raises(TypeError, match=_msg("confidence", "a real number", value)):
        check_confidence(value)


@pytest.mark.parametrize("value", [0.0, 0, 1e-10, 0.5, 1 - 1e-16])
def test_check_delta_accepts_zero_up_to_one_excluded(value: float) -> None:
    assert check_delta(value) == value
    assert type(check_delta(value)) is float


@pytest.mark.parametrize("value", [-0.1, -1e-300, 1.0, 1, 2.0, NAN, INF])
def test_check_delta_refuses_values_outside(value: float) -> None:
    with pytest.raises(ValueError, match=_msg("delta", "in [0, 1)", value)):
        check_delta(value)


@pytest.mark.parametrize("value", [False, "0", None])
def test_check_delta_refuses_non_reals(value: object) -> None:
    with pytest.raises(TypeError, match=_msg("delta", "a real number", value)):
        check_delta(value)


# ---------------------------------------------------------------- check_scores


@pytest.mark.parametrize(
    "scores",
    [[1, 2, 3], np.array([1, 2, 3], dtype=np.int8), np.array([1.0, 2.0, 3.0], dtype=np.float32), (1.0, 2.0, 3.0)],
)
def test_check_scores_returns_float64(scores: object) -> None:
    out = check_scores("scores", scores)  # type: ignore[arg-type]
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])


def test_check_scores_accepts_booleans_and_empty() -> None:
    np.testing.assert_array_equal(check_scores("s", np.array([True, False])), [1.0, 0.0])
    assert check_scores("s", []).shape == (0,)


def test_check_scores_returns_a_copy() -> None:
    scores = np.array([1.0, 2.0])
    out = check_scores("s", scores)
    out[0] = 5.0
    assert scores[0] == 1.0


@pytest.mark.parametrize(("scores", "shape"), [(np.zeros((2, 3)), (2, 3)), (np.float64(1.0), ()), ([[1.0]], (1, 1))])
def test_check_scores_refuses_other_shapes(scores: object, shape: tuple[int, ...]) -> None:
    with pytest.raises(
        ValueError, match="^" + re.escape(f"scores must be a 1-d array, got an array of shape {shape}.")
    ):
        check_scores("scores", scores)  # type: ignore[arg-type]


@pytest.mark.parametrize("scores", [np.array(["a", "b"]), np.array([1.0, None], dtype=object), np.array([b"1"])])
def test_check_scores_refuses_non_numbers(scores: np.ndarray) -> None:
    with pytest.raises(TypeError, match="^" + re.escape(f"scores must hold real numbers, got dtype {scores.dtype}.")):
        check_scores("scores", scores)


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
def test_check_scores_refuses_complex() -> None:
    with pytest.raises(TypeError, match=r"^s must hold real numbers"):
        check_scores("s", np.array([1 + 2j, 3 + 0j]))


@pytest.mark.parametrize(
    ("scores", "bad", "index"),
    [([0.0, NAN, 1.0], NAN, 1), ([INF, 0.0], INF, 0), ([0.0, 1.0, -INF], -INF, 2), ([0.0, INF, NAN], INF, 1)],
)
def test_check_scores_refuses_non_finite(scores: list[float], bad: float, index: int) -> None:
    expected = f"scores must be finite, got {bad!r} at index {index}."
    with pytest.raises(ValueError, match="^" + re.escape(expected) + "$"):
        check_scores("scores", scores)


# ---------------------------------------------------------------- check_membership


@pytest.mark.parametrize(
    "membership",
    [[True, False, True], [1, 0, 1], np.array([1.0, 0.0, 1.0]), np.array([1, 0, 1], dtype=np.uint8)],
)
def test_check_membership_returns_bool(membership: object) -> None:
    out = check_membership("m", membership)  # type: ignore[arg-type]
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out, [True, False, True])
    np.testing.assert_array_equal(check_membership("m", membership, 3), [True, False, True])  # type: ignore[arg-type]


@pytest.mark.parametrize(("membership", "shape"), [(np.zeros((2, 2)), (2, 2)), (np.array(True), ())])
def test_check_membership_refuses_other_shapes(membership: np.ndarray, shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(f"m must be a 1-d array, got shape {shape}.") + "$"):
        check_membership("m", membership)


def test_check_membership_refuses_other_lengths() -> None:
    with pytest.raises(ValueError, match="^" + re.escape("m must be a 1-d array of length 3, got shape (2,).") + "$"):
        check_membership("m", [True, False], 3)
    with pytest.raises(ValueError, match=re.escape("of length 1, got shape (2, 1)")):
        check_membership("m", [[True], [False]], 1)


@pytest.mark.parametrize(
    ("membership", "detail"),
    [
        ([0, 2], "got 2 at index 1"),
        ([0.0, 0.5], "got 0.5 at index 1"),
        ([-1, 1], "got -1 at index 0"),
        ([0.0, NAN], "got nan at index 1"),
        (np.array(["0", "1"]), "got dtype <U1"),
        (np.array([True, None], dtype=object), "got dtype object"),
    ],
)
def test_check_membership_refuses_values_other_than_zero_one(membership: object, detail: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(f"m must hold only 0/1 or booleans, {detail}.") + "$"):
        check_membership("m", membership)  # type: ignore[arg-type]
