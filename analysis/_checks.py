"""Argument checks shared by every package.

Messages follow one shape, ``"{name} must be {constraint}, got {value!r}."``, so that a config error, a direct
API call and a test all read the same.  Comparisons are written so that NaN fails them.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "UNSTATED_DEPENDENCE",
    "check_confidence",
    "check_counts",
    "check_delta",
    "check_int",
    "check_member_matrix",
    "check_membership",
    "check_real",
    "check_score_matrix",
    "check_scores",
]


#: Why canaries are taken to be dependent where nobody said otherwise (``Mechanism.canary_dependence``'s default):
#: the order-statistics audit (:mod:`privgame.analysis.order_stats`) is refused on it.
UNSTATED_DEPENDENCE = (
    "the mechanism does not declare its canaries independent channels (canary_dependence = None declares that each "
    "canary's output depends on its own bit alone, through randomness of its own)"
)


def check_real(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    allow_inf: bool = False,
) -> float:
    """Return ``value`` as a float after checking its type and range.

    Parameters
    ----------
    name : str
        The parameter's name, used in the message.
    value : object
        The value to check; ``bool`` is refused (it is an ``int`` to Python, never a probability to us).
    low, high : float or None, default=None
        Bounds of the allowed interval; ``None`` leaves that side open.
    low_open, high_open : bool, default=False
        Whether the bound itself is excluded.
    allow_inf : bool, default=False
        Accept ``+inf``/``-inf`` when they lie in the interval.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If ``value`` is NaN, infinite (unless allowed) or outside the interval.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}.")
    x = float(value)
    constraint = _interval_text(low, high, low_open, high_open)
    in_interval = not math.isnan(x)
    if in_interval and low is not None:
        in_interval = x > low if low_open else x >= low
    if in_interval and high is not None:
        in_interval = x < high if high_open else x <= high
    if not in_interval:
        raise ValueError(f"{name} must be {constraint}, got {value!r}.")
    if math.isinf(x) and not allow_inf:
        finite = "finite" if constraint == "a finite real number" else f"finite and {constraint}"
        raise ValueError(f"{name} must be {finite}, got {value!r}.")
    return x


def check_int(name: str, value: Any, *, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as an int after checking that it is an integer in ``[low, high]``.

    Raises
    ------
    TypeError
        If ``value`` is not an integer (floats such as ``3.0`` are refused too: a count is a count).
    ValueError
        If it lies outside ``[low, high]``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}.")
    x = int(value)
    if (low is not None and x < low) or (high is not None and x > high):
        raise ValueError(f"{name} must be an integer {_interval_text(low, high, False, False)}, got {value!r}.")
    return x


def check_counts(m: Any, r: Any, v: Any) -> tuple[int, int, int]:
    """Check a one-run audit's counts: m >= 1 canaries, 0 <= r <= m guesses, 0 <= v <= r correct ones."""
    m_ = check_int("m", m, low=1)
    r_ = check_int("r", r, low=0)
    v_ = check_int("v", v, low=0)
    if r_ > m_:
        raise ValueError(f"r (the number of guesses) must be at most m = {m_}, got {r_}.")
    if v_ > r_:
        raise ValueError(f"v (the number of correct guesses) must be at most r = {r_}, got {v_}.")
    return m_, r_, v_


def check_confidence(confidence: Any) -> float:
    """Check a confidence level, which must lie in the open interval (0, 1)."""
    return check_real("confidence", confidence, low=0.0, high=1.0, low_open=True, high_open=True)


def check_delta(delta: Any) -> float:
    """Check a DP delta, which must lie in [0, 1)."""
    return check_real("delta", delta, low=0.0, high=1.0, high_open=True)


def check_scores(name: str, scores: ArrayLike) -> NDArray[np.float64]:
    """Return a 1-d float64 copy of ``scores``, refusing non-finite values and other shapes."""
    arr = np.asarray(scores)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-d array, got an array of shape {arr.shape}.")
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating) or arr.dtype == np.bool_):
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}.")
    out = arr.astype(np.float64)
    if not np.all(np.isfinite(out)):
        bad = float(out[~np.isfinite(out)][0])
        raise ValueError(f"{name} must be finite, got {bad!r} at index {int(np.argmin(np.isfinite(out)))}.")
    return out


def check_membership(name: str, membership: ArrayLike, n: int | None = None) -> NDArray[np.bool_]:
    """Return ``membership`` as a 1-d bool array (of length ``n`` if given); values must be 0/1 or booleans."""
    arr = np.asarray(membership)
    if arr.ndim != 1 or (n is not None and arr.shape[0] != n):
        length = "" if n is None else f" of length {n}"
        raise ValueError(f"{name} must be a 1-d array{length}, got shape {arr.shape}.")
    if arr.dtype != np.bool_:
        if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
            raise ValueError(f"{name} must hold only 0/1 or booleans, got dtype {arr.dtype}.")
        bad = ~((arr == 0) | (arr == 1))
        if np.any(bad):
            index = int(np.argmax(bad))
            raise ValueError(f"{name} must hold only 0/1 or booleans, got {arr[index].item()!r} at index {index}.")
        arr = arr.astype(bool)
    return arr


def _bound(value: float) -> str:
    """A bound as a message shows it: integers in full (2, 1048576), other numbers in ``g`` form."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else f"{value:g}"


def _interval_text(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    if low is None and high is None:
        return "a finite real number"
    if high is None:
        assert low is not None  # for mypy: both None returned above
        return f"{'>' if low_open else '>='} {_bound(low)}"
    if low is None:
        return f"{'<' if high_open else '<='} {_bound(high)}"
    return f"in {'(' if low_open else '['}{_bound(low)}, {_bound(high)}{')' if high_open else ']'}"


def check_score_matrix(
    scores: ArrayLike, member: ArrayLike, *, min_models: int = 2
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """The (M, N) score matrix of M models on N samples and its membership matrix, as float64 and bool, with
    M >= ``min_models`` and N >= 1 (LiRA's and the calibration's input)."""
    s = np.asarray(scores)
    m = np.asarray(member)
    if s.ndim != 2:
        raise ValueError(f"scores must be a 2-d array of shape (n_models, n_samples), got shape {s.shape}.")
    if m.shape != s.shape:
        raise ValueError(f"member must have the shape of scores {s.shape}, got shape {m.shape}.")
    if not (np.issubdtype(s.dtype, np.integer) or np.issubdtype(s.dtype, np.floating)):
        raise TypeError(f"scores must hold real numbers, got dtype {s.dtype}.")
    if s.shape[0] < min_models:
        raise ValueError(f"scores must have at least {min_models} models (rows), got {s.shape[0]}.")
    if s.shape[1] < 1:
        raise ValueError(f"scores must have at least 1 sample (column), got {s.shape[1]}.")
    out = np.asarray(s, dtype=np.float64)
    finite = np.isfinite(out)
    if not finite.all():
        j, x = (int(i) for i in np.argwhere(~finite)[0])
        raise ValueError(f"scores must be finite, got {float(out[j, x])!r} at (model {j}, sample {x}).")
    return out, check_member_matrix(m)


def check_member_matrix(m: NDArray[Any]) -> NDArray[np.bool_]:
    """A membership array as bool (booleans, or integers 0/1)."""
    if m.dtype == np.bool_:
        return m
    if not np.issubdtype(m.dtype, np.integer):
        raise TypeError(f"member must be a boolean array (or integers 0/1), got dtype {m.dtype}.")
    bad = (m != 0) & (m != 1)
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        where = f"(model {index[0]}, sample {index[1]})" if m.ndim == 2 else f"index {index}"
        raise ValueError(f"member must hold only 0/1 or booleans, got {m[index].item()!r} at {where}.")
    return m.astype(bool)
