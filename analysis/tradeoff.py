"""Trade-off curves: the f of f-DP, for pure/approximate DP, Gaussian DP and DP-SGD's PLD.

A mechanism is f-DP [1]_ when every test between its outputs on two neighbouring inputs has type-II error at least
f(type-I error).  The one-run f-DP audit (:mod:`privgame.analysis.fdp`) uses a curve only through the inverse of its
blow-up ``f̄(x) = 1 - f(x)``; the families it searches over are in :mod:`privgame.analysis.families`.

References
----------
.. [1] J. Dong, A. Roth, W. J. Su. Gaussian Differential Privacy. JRSS-B 2022, arXiv:1905.02383 (trade-off
   curves, the (ε, δ) ↔ f-DP duality, μ-GDP and its δ(ε) curve, Corollary 2.13).
.. [2] S. Mahloujifar, L. Melis, K. Chaudhuri. Auditing f-Differential Privacy in One Run. ICML 2025,
   arXiv:2410.22235 (the curves the audit takes, and the PLD of DP-SGD as a curve).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

import dp_accounting
import numpy as np
from dp_accounting.pld import privacy_loss_distribution
from numpy.typing import ArrayLike, NDArray
from scipy import special

from privgame.analysis._checks import check_delta, check_int, check_real

__all__ = ["GaussianCurve", "PLDCurve", "Pieces", "PureDPCurve", "TradeOffCurve", "dpsgd_pld", "gdp_epsilon"]

Pieces = tuple[list[float], list[float], list[float], list[float]]


def _check_unit_interval(name: str, y: ArrayLike) -> NDArray[np.float64]:
    arr = np.asarray(y, dtype=np.float64)
    if not np.all((arr >= 0.0) & (arr <= 1.0)):  # written so that NaN fails
        bad = arr[~((arr >= 0.0) & (arr <= 1.0))].flat[0]
        raise ValueError(f"{name} must lie in [0, 1], got {float(bad)!r}.")
    return arr


class TradeOffCurve(ABC):
    """A symmetric trade-off curve f: the smallest type-II error at type-I error α of any test between neighbours.

    A mechanism is f-DP [2]_ when every test between the outputs on two neighbouring inputs has type-II error at
    least f(type-I error).  The audit uses f only through the inverse of its *blow-up* ``f̄(x) = 1 - f(x)``: the
    largest power of a test of level x is ``f̄(x)``, so a test of power y has level at least ``f̄⁻¹(y)``.

    Subclasses implement :meth:`blowup_inverse` (vectorised) and :meth:`tradeoff`; they may override
    :meth:`blowup_inverse_scalar` with a fast scalar version, which is what Algorithm 3 calls in its loop.
    """

    __slots__ = ()

    @abstractmethod
    def blowup_inverse(self, y: ArrayLike) -> NDArray[np.float64]:
        """``f̄⁻¹(y) = inf {x in [0, 1] : 1 - f(x) >= y}``, elementwise, for y in [0, 1].

        Parameters
        ----------
        y : array-like of floats in [0, 1]

        Returns
        -------
        ndarray of the same shape, in [0, 1]
        """

    @abstractmethod
    def tradeoff(self, alpha: ArrayLike) -> NDArray[np.float64]:
        """The trade-off curve f(α), elementwise, for α in [0, 1]."""

    def blowup_inverse_scalar(self) -> Callable[[float], float]:
        """A scalar version of :meth:`blowup_inverse`, without argument checks (Algorithm 3 calls it in a loop).

        The default wraps :meth:`blowup_inverse`; built-in curves return a faster closure.
        """

        def g(y: float) -> float:
            return float(self.blowup_inverse(np.array([y]))[0])

        return g

    def linear_pieces(self) -> Pieces | None:
        """``f̄⁻¹`` as a piecewise-linear function on [0, 1], or None when it is not one.

        Returns ``(breaks, slopes, pivots, values)``: on ``[breaks[j-1], breaks[j]]`` (open-ended at both ends),
        ``f̄⁻¹(y) = max(0, slopes[j] (y - pivots[j]) + values[j])``.  Lets Algorithm 3 run a linear stretch of its
        recursion as one vectorised product (see :func:`reject`).
        """
        return None


@dataclass(frozen=True, slots=True)
class PureDPCurve(TradeOffCurve):
    """The trade-off curve of (ε, δ)-DP: ``f(α) = max(0, 1 - δ - e^ε α, e^{-ε} (1 - δ - α))``.

    Randomized response with parameter ε has exactly this curve with δ = 0.

    Parameters
    ----------
    epsilon : float
        ε >= 0, finite (at most 700 so that e^ε stays finite).
    delta : float, default=0.0
        δ in [0, 1).

    Notes
    -----
    ``f̄⁻¹(y) = max(0, (y - δ) e^{-ε}, 1 - δ - e^ε (1 - y))`` — the blow-up ``1 - f`` is the minimum of two
    increasing lines and the constant 1, so its (generalised) inverse is the maximum of their inverses.
    """

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_real("epsilon", self.epsilon, low=0.0, high=700.0))
        object.__setattr__(self, "delta", check_delta(self.delta))

    def blowup_inverse(self, y: ArrayLike) -> NDArray[np.float64]:
        arr = _check_unit_interval("y", y)
        low = (arr - self.delta) * math.exp(-self.epsilon)
        high = (1.0 - self.delta) - math.exp(self.epsilon) * (1.0 - arr)
        return np.maximum(np.maximum(low, high), 0.0)

    def tradeoff(self, alpha: ArrayLike) -> NDArray[np.float64]:
        a = _check_unit_interval("alpha", alpha)
        one = 1.0 - self.delta
        return np.maximum(np.maximum(one - math.exp(self.epsilon) * a, math.exp(-self.epsilon) * (one - a)), 0.0)

    def blowup_inverse_scalar(self) -> Callable[[float], float]:
        d, one, shrink, grow = self.delta, 1.0 - self.delta, math.exp(-self.epsilon), math.exp(self.epsilon)

        def g(y: float) -> float:
            low = (y - d) * shrink
            high = one - grow * (1.0 - y)
            best = low if low > high else high
            return best if best > 0.0 else 0.0

        return g

    def linear_pieces(self) -> Pieces:
        return _upper_envelope(
            np.array([math.exp(-self.epsilon), math.exp(self.epsilon), 0.0]),
            np.array([self.delta, 1.0, 0.0]),
            np.array([0.0, 1.0 - self.delta, 0.0]),
        )


@dataclass(frozen=True, slots=True)
class GaussianCurve(TradeOffCurve):
    """The μ-GDP trade-off curve ``G_μ(α) = Φ(Φ⁻¹(1 - α) - μ)`` [2]_: testing N(0, 1) against N(μ, 1).

    The Gaussian mechanism with sensitivity Δ and noise σ is exactly μ-GDP with μ = Δ/σ.

    Parameters
    ----------
    mu : float
        μ >= 0, finite; μ = 0 is perfect privacy.

    Notes
    -----
    ``f̄(x) = Φ(Φ⁻¹(x) + μ)`` and ``f̄⁻¹(y) = Φ(Φ⁻¹(y) - μ)``.
    """

    mu: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "mu", check_real("mu", self.mu, low=0.0))

    def blowup_inverse(self, y: ArrayLike) -> NDArray[np.float64]:
        arr = _check_unit_interval("y", y)
        return np.asarray(special.ndtr(special.ndtri(arr) - self.mu), dtype=np.float64)

    def tradeoff(self, alpha: ArrayLike) -> NDArray[np.float64]:
        a = _check_unit_interval("alpha", alpha)
        # Φ⁻¹(1 - α) = -Φ⁻¹(α), exact for small α.
        return np.asarray(special.ndtr(-special.ndtri(a) - self.mu), dtype=np.float64)

    def blowup_inverse_scalar(self) -> Callable[[float], float]:
        mu, ndtr, ndtri = self.mu, special.ndtr, special.ndtri

        def g(y: float) -> float:
            return float(ndtr(ndtri(y) - mu))

        return g


def _upper_envelope(slopes: NDArray[np.float64], pivots: NDArray[np.float64], values: NDArray[np.float64]) -> Pieces:
    """Upper envelope on [0, 1] of the lines ``y -> s (y - p) + q``: its breakpoints and the lines between them.

    Returns ``(breaks, s, p, q)`` as lists: line ``k`` is the maximum on ``[breaks[k-1], breaks[k]]``.  The
    breakpoints are computed in slope/intercept form; near a breakpoint both neighbouring lines are within rounding
    of each other, and every line is below the envelope, so evaluating a neighbour instead errs low (conservative).
    """
    intercepts = values - slopes * pivots
    order = np.lexsort((intercepts, slopes))  # by slope, then intercept: the last of equal slopes is the highest
    a_sorted = slopes[order]
    keep = np.append(a_sorted[1:] != a_sorted[:-1], True)
    idx = order[keep]
    hull: list[int] = []
    for j in idx.tolist():
        aj, bj = slopes[j], intercepts[j]
        while len(hull) >= 2:
            a1, b1 = slopes[hull[-2]], intercepts[hull[-2]]
            a2, b2 = slopes[hull[-1]], intercepts[hull[-1]]
            # hull[-1] is never the maximum if line j overtakes hull[-2] no later than hull[-1] does (compared as
            # crossing abscissae, not cross-multiplied: slopes up to e^700 would overflow a product).
            if (b1 - bj) / (aj - a1) <= (b1 - b2) / (a2 - a1):
                hull.pop()
            else:
                break
        hull.append(j)
    breaks = [(intercepts[i] - intercepts[k]) / (slopes[k] - slopes[i]) for i, k in itertools.pairwise(hull)]
    # Keep only the lines that are the maximum somewhere in [0, 1].
    first = bisect.bisect_right(breaks, 0.0)
    last = bisect.bisect_right(breaks, 1.0)
    lines = hull[first : last + 1]
    breaks = breaks[first:last]
    return (
        [float(b) for b in breaks],
        [float(slopes[i]) for i in lines],
        [float(pivots[i]) for i in lines],
        [float(values[i]) for i in lines],
    )


@dataclass(frozen=True, slots=True)
class PLDCurve(TradeOffCurve):
    """The trade-off curve implied by a set of (ε_j, δ_j) guarantees that a mechanism satisfies simultaneously.

    A mechanism that is (ε_j, δ_j)-DP for every j is f-DP with ``f = max_j f_{ε_j, δ_j}`` [2]_ (the (ε, δ) curves
    are those of :class:`PureDPCurve`).  With the δ(ε) curve of a privacy-loss distribution (PLD) on a grid of ε,
    this is the PLD's trade-off curve up to the grid; it is exactly the Gaussian curve's in the limit of a fine grid
    for a single Gaussian step.

    Parameters
    ----------
    epsilons : sequence of float
        ε_j >= 0, finite, at most 700.
    deltas : sequence of float
        δ_j in [0, 1], the same length.

    Notes
    -----
    Formal guarantee: the curve is below the mechanism's true curve whenever every (ε_j, δ_j) holds — a coarser
    grid, or a pessimistic δ(ε) (as ``dp_accounting``'s PLD gives), only lowers it, i.e. weakens the hypothesis
    the audit tests, which keeps the audit sound.

    ``f̄⁻¹ = max_j f̄⁻¹_{ε_j, δ_j}`` because ``f̄ = min_j f̄_{ε_j, δ_j}``: a convex piecewise-linear function, stored
    as the upper envelope of its lines and evaluated by binary search.
    """

    epsilons: tuple[float, ...]
    deltas: tuple[float, ...]
    _breaks: list[float] = field(init=False, repr=False, compare=False)
    _slopes: list[float] = field(init=False, repr=False, compare=False)
    _pivots: list[float] = field(init=False, repr=False, compare=False)
    _values: list[float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        eps = np.asarray(self.epsilons, dtype=np.float64).ravel()
        dls = np.asarray(self.deltas, dtype=np.float64).ravel()
        if eps.size == 0 or eps.shape != dls.shape:
            raise ValueError(
                f"epsilons and deltas must be non-empty and of the same length, got {eps.size} and {dls.size}."
            )
        if not np.all((eps >= 0.0) & (eps <= 700.0)):
            bad = eps[~((eps >= 0.0) & (eps <= 700.0))][0]
            raise ValueError(f"epsilons must lie in [0, 700], got {float(bad)!r}.")
        if not np.all((dls >= 0.0) & (dls <= 1.0)):
            bad = dls[~((dls >= 0.0) & (dls <= 1.0))][0]
            raise ValueError(f"deltas must lie in [0, 1], got {float(bad)!r}.")
        object.__setattr__(self, "epsilons", tuple(eps.tolist()))
        object.__setattr__(self, "deltas", tuple(dls.tolist()))
        # Lines of f̄⁻¹: (y - δ) e^{-ε} (pivot δ, value 0), e^{ε} (y - 1) + 1 - δ (pivot 1, value 1 - δ), and 0.
        slopes = np.concatenate([np.exp(-eps), np.exp(eps), [0.0]])
        pivots = np.concatenate([dls, np.ones_like(eps), [0.0]])
        values = np.concatenate([np.zeros_like(eps), 1.0 - dls, [0.0]])
        breaks, s, p, q = _upper_envelope(slopes, pivots, values)
        object.__setattr__(self, "_breaks", breaks)
        object.__setattr__(self, "_slopes", s)
        object.__setattr__(self, "_pivots", p)
        object.__setattr__(self, "_values", q)

    @classmethod
    def from_pld(
        cls,
        pld: privacy_loss_distribution.PrivacyLossDistribution,
        epsilons: ArrayLike | None = None,
        *,
        grid_size: int = 2001,
    ) -> PLDCurve:
        """The trade-off curve of a ``dp_accounting`` privacy-loss distribution, from its δ(ε) on a grid of ε.

        Parameters
        ----------
        pld : dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution
            Its ``get_delta_for_epsilon`` gives δ(ε) (the maximum over both directions of the neighbouring
            relation, pessimistic when the PLD was built with ``pessimistic_estimate=True``).
        epsilons : array-like of float or None, default=None
            The grid of ε; by default ``grid_size`` evenly spaced points from 0 to the ε at δ = 1e-12 (capped at 50).
        grid_size : int, default=2001
            Number of grid points when ``epsilons`` is None.
        """
        if epsilons is None:
            n = check_int("grid_size", grid_size, low=2)
            top = float(pld.get_epsilon_for_delta(1e-12))
            top = 50.0 if not math.isfinite(top) else min(max(top, 1e-3), 50.0)
            grid = np.linspace(0.0, top, n)
        else:
            grid = np.asarray(epsilons, dtype=np.float64).ravel()
        deltas = np.minimum(np.asarray(pld.get_delta_for_epsilon(grid), dtype=np.float64), 1.0)
        return cls(tuple(grid.tolist()), tuple(deltas.tolist()))

    @classmethod
    def from_dpsgd(
        cls,
        noise_multiplier: float,
        sampling_rate: float,
        steps: int,
        *,
        value_discretization_interval: float = 1e-3,
        grid_size: int = 2001,
    ) -> PLDCurve:
        """The trade-off curve of DP-SGD (Poisson-subsampled Gaussian, composed ``steps`` times), add/remove-one.

        Parameters
        ----------
        noise_multiplier : float
            σ > 0: the noise standard deviation in units of the clipping norm.
        sampling_rate : float
            Poisson sampling probability q in (0, 1].
        steps : int
            Number of steps T >= 1.
        value_discretization_interval : float, default=1e-3
            Discretisation of the pessimistic PLD (``dp_accounting``); smaller is tighter and slower.
        grid_size : int, default=2001
            Number of ε grid points (see :meth:`from_pld`).
        """
        pld = dpsgd_pld(
            check_real("noise_multiplier", noise_multiplier, low=0.0, low_open=True),
            check_real("sampling_rate", sampling_rate, low=0.0, high=1.0, low_open=True),
            check_int("steps", steps, low=1),
            check_real("value_discretization_interval", value_discretization_interval, low=0.0, low_open=True),
        )
        return cls.from_pld(pld, grid_size=grid_size)

    def blowup_inverse(self, y: ArrayLike) -> NDArray[np.float64]:
        arr = _check_unit_interval("y", y)
        k = np.searchsorted(np.asarray(self._breaks), arr, side="right")
        s, p, q = np.asarray(self._slopes)[k], np.asarray(self._pivots)[k], np.asarray(self._values)[k]
        return np.maximum(s * (arr - p) + q, 0.0)

    def tradeoff(self, alpha: ArrayLike) -> NDArray[np.float64]:
        a = _check_unit_interval("alpha", alpha)
        eps = np.asarray(self.epsilons)
        one = 1.0 - np.asarray(self.deltas)
        flat = a.reshape(-1, 1)
        out = np.zeros(flat.shape[0])
        for start in range(0, eps.size, 512):  # chunks keep the (len(alpha), chunk) temporaries small
            e, o = eps[start : start + 512], one[start : start + 512]
            both = np.maximum(o - np.exp(e) * flat, np.exp(-e) * (o - flat))
            out = np.maximum(out, both.max(axis=1))
        return out.reshape(a.shape)

    def blowup_inverse_scalar(self) -> Callable[[float], float]:
        breaks, s, p, q, find = self._breaks, self._slopes, self._pivots, self._values, bisect.bisect_right

        def g(y: float) -> float:
            k = find(breaks, y)
            value = s[k] * (y - p[k]) + q[k]
            return value if value > 0.0 else 0.0

        return g

    def linear_pieces(self) -> Pieces:
        return self._breaks, self._slopes, self._pivots, self._values


@functools.lru_cache(maxsize=64)
def dpsgd_pld(
    noise_multiplier: float, sampling_rate: float, steps: int, value_discretization_interval: float
) -> privacy_loss_distribution.PrivacyLossDistribution:
    """The PLD of T self-composed Poisson-subsampled Gaussian steps (DP-SGD), memoised (one composition costs ~1 s)."""
    pld = privacy_loss_distribution.from_gaussian_mechanism(
        noise_multiplier,
        sampling_prob=sampling_rate,
        value_discretization_interval=value_discretization_interval,
    )
    return pld.self_compose(steps) if steps > 1 else pld


def gdp_epsilon(mu: float, delta: float) -> float:
    """The ε at which μ-GDP implies (ε, δ)-DP: the root of ``δ(ε) = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2)``.

    Parameters
    ----------
    mu : float
        μ >= 0, finite.
    delta : float
        δ in (0, 1).

    Returns
    -------
    float
        The smallest ε >= 0 with δ(ε) <= δ (Corollary 2.13 of [2]_); 0 when μ = 0 or δ >= δ(0).

    Notes
    -----
    μ-GDP is the Gaussian mechanism with sensitivity 1 and noise 1/μ, so this is
    ``dp_accounting.get_epsilon_gaussian(1/μ, δ)`` (exact, Balle & Wang 2018).
    """
    m = check_real("mu", mu, low=0.0)
    d = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    if m == 0.0:
        return 0.0
    return float(dp_accounting.get_epsilon_gaussian(1.0 / m, d))
