"""The order-statistics one-run audit of Xiang, Wang, Xiao, Tian and Wang (2025), "Tight Privacy Audit in One Run".

Same game as :mod:`privgame.analysis.one_run` (m canaries, each included independently with probability 1/2, one run of
the mechanism, the auditor releases r guesses — its most confident ones — and abstains on the rest, v released guesses
correct), but a sharper test, valid under a stronger hypothesis: **every canary's bit passes through its own,
independent copy of a channel (P_θ, Q_θ)** whose trade-off curve is a member f_θ of a one-parameter family (the
*product model*).

.. warning::

   **Sound only where the canaries are independent channels.**  When canaries can interact (black-box canaries in
   one trained model, a synthetic-data generator, PANORAMIA's pairs, any mechanism with shared randomness) this is
   not a valid test of "the mechanism is f_θ-DP for each canary": a mechanism that is exactly 1-GDP per canary but
   shares one coin among them makes it report ε far above the truth far more often than its confidence allows
   (:mod:`privgame.games.validity` plays it).  privgame's white-box Dirac DP-SGD, randomized response per canary and the
   Gaussian mechanism per coordinate are product models by construction; a mechanism declares it through
   ``Mechanism.canary_dependence`` and :mod:`privgame.analysis.estimators` refuses the estimator elsewhere.

The test, for a symmetric trade-off curve f (the channel's canonical form: each canary's output summarised by the
optimal guess and its confidence):

- the confidence quantiles U_1..U_m of the m canaries are i.i.d. uniform (ties broken at random), and a canary
  at quantile u is guessed wrongly with probability e(u), decreasing in u;
- the most confident discarded guess sits at W = U_(m−r) ~ Beta(m − r, r + 1); given W = w the r released
  quantiles are i.i.d. uniform on (w, 1], so the number of mistakes is Binomial(r, ē(w)), ē(w) the mean error
  above w;
- for a symmetric f, the most confident fraction s of the outputs holds error mass α(s) where ``f(α) − α = 1 − s``
  (the likelihood-ratio test of level α guesses "member" on mass (α + 1 − f(α))/2 and, by symmetry, "non-member"
  on as much, wrongly on α/2 each), so ``ē(w) = α(1 − w) / (1 − w)``;
- the p-value of v correct (k = r − v mistakes) is ``E_W[P(Bin(r, ē(W)) <= k)]``; the bound is the largest θ
  rejected at significance τ, converted to ε at δ as the family says.

Where the channel is discrete the p-value is exact: the (ε, δ) channel ("four atoms": with probability δ an output
that reveals the bit, otherwise randomized response at ε) gives ``Σ_c P(Bin(m, δ) = c) P(Bin(r − min(c, r),
1/(1 + e^ε)) <= k)``.  Elsewhere (μ-GDP, DP-SGD's PLD) the expectation over W is an upper Riemann sum — see
:func:`p_value` — so the discretisation can only over-state the p-value, i.e. reject less: it errs on the
conservative side.

References
----------
.. [1] Z. Xiang, T. Wang, H. Xiao, Y. Tian, D. Wang. Tight Privacy Audit in One Run. arXiv:2509.08704, 2025.
.. [2] J. Dong, A. Roth, W. J. Su. Gaussian Differential Privacy. JRSS-B 2022, arXiv:1905.02383 (trade-off curves,
   the canonical channel of an f-DP mechanism).
.. [3] P. Kairouz, S. Oh, P. Viswanath. The Composition Theorem for Differential Privacy. ICML 2015,
   arXiv:1311.0776 (the four-atom channel dominates every (ε, δ)-DP channel).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, special, stats

from privgame.analysis._checks import check_confidence, check_counts, check_delta, check_int
from privgame.analysis._counting import ascending, choose_and_count, guess_counts
from privgame.analysis._result import AuditResult, prepare_one_run, result_from_choice
from privgame.analysis.families import CurveFamily, resolve_family
from privgame.analysis.thresholds import ThresholdStrategy
from privgame.analysis.tradeoff import GaussianCurve, PureDPCurve, TradeOffCurve

__all__ = ["OrderStatsAudit", "audit_scores", "epsilon_lower_bound", "mean_error", "p_value", "reject"]

METHOD = "one-run order-statistics audit (Xiang, Wang, Xiao, Tian, Wang 2025, arXiv:2509.08704), product model"

#: The resolution of the expectation over W: cells of probability at most min(u, 1 − u) / RESOLUTION in the
#: confidence quantile u, from u = 1e-15 to 1 − 1e-15 (about 3,450 cells, of which the sum evaluates those where
#: the integrand rises); the p-value is over-stated by at most about 1 / RESOLUTION of itself plus 1e-15 (measured:
#: 0.1-0.5 % against the lower sum of a grid eight times finer, at most 0.72 % against Gauss–Legendre integration).
RESOLUTION = 50
_TAIL = 1e-15
_ALPHA_TOL = 1e-12  # α is found to within 1e-12 of the fraction s (from below)
_ITERATIONS = 60  # regula-falsi steps at most when solving y + f̄⁻¹(y) = s (a smooth curve needs about ten)
_STRIDE = 16  # the upper sum evaluates every 16th level first, then refines where it matters
_SLACK = 1e-3  # ... until the stretches left coarse over-state the p-value by at most 0.1 % of itself
_POOL = 2**20  # the four-atom sum runs over at most this many counts c of revealing outputs, around mδ


def mean_error(curve: TradeOffCurve, s: ArrayLike) -> NDArray[np.float64]:
    """ē, the mean error of the most confident fraction ``s`` of a symmetric channel's guesses, rounded down.

    Parameters
    ----------
    curve : TradeOffCurve
        The channel's (symmetric) trade-off curve f.
    s : array-like of floats in [0, 1]
        Fractions of the outputs, the most confident first (``s = 1 − w`` for the quantile w of the most
        confident discarded guess).

    Returns
    -------
    ndarray of the same shape
        ``α(s) / s`` where ``f(α) − α = 1 − s`` (0 where s = 0).  α is found as ``f̄⁻¹(y)`` for the root y of
        ``y + f̄⁻¹(y) = s`` (increasing in y), by a bracketing search keeping the side where ``y + f̄⁻¹(y) <= s``: the α
        returned is never above the true one, so neither is ē — an error rate rounded down makes a p-value
        rounded up.

    Examples
    --------
    Randomized response at ε = 1 errs with probability 1/(1 + e) on every output:

    >>> round(float(mean_error(PureDPCurve(1.0), 1.0)), 6), round(1 / (1 + math.e), 6)
    (0.268941, 0.268941)
    """
    if not isinstance(curve, TradeOffCurve):
        raise TypeError(f"curve must be a TradeOffCurve, got {curve!r}.")
    target = np.asarray(s, dtype=np.float64)
    if not np.all((target >= 0.0) & (target <= 1.0)):
        bad = target[~((target >= 0.0) & (target <= 1.0))].flat[0]
        raise ValueError(f"s must lie in [0, 1], got {float(bad)!r}.")
    return _mean_error(curve, target.ravel()).reshape(target.shape)


def _mean_error(curve: TradeOffCurve, s: NDArray[np.float64]) -> NDArray[np.float64]:
    """:func:`mean_error` of a flat array already checked."""
    alpha = _alpha(curve, s)
    return np.clip(np.divide(alpha, s, out=np.zeros_like(s), where=s > 0.0), 0.0, 1.0)


def _raw_inverse(curve: TradeOffCurve) -> Callable[[NDArray[np.float64]], NDArray[np.float64]]:
    """``curve.blowup_inverse`` without its argument checks (the search calls it on values in [0, 1] only): the
    Gaussian curve's closed form, a piecewise-linear curve's pieces, otherwise the method itself."""
    if isinstance(curve, GaussianCurve):
        mu, ndtr, ndtri = curve.mu, special.ndtr, special.ndtri
        return lambda y: np.asarray(ndtr(ndtri(y) - mu))
    pieces = curve.linear_pieces()
    if pieces is None:
        return curve.blowup_inverse
    breaks, slopes, pivots, values = (np.asarray(part, dtype=np.float64) for part in pieces)

    def inverse(y: NDArray[np.float64]) -> NDArray[np.float64]:
        j = np.searchsorted(breaks, y, side="right")
        return np.maximum(slopes[j] * (y - pivots[j]) + values[j], 0.0)

    return inverse


def _alpha(curve: TradeOffCurve, s: NDArray[np.float64]) -> NDArray[np.float64]:
    """α(s) with ``f(α) − α = 1 − s``, rounded down (see :func:`mean_error`).

    Regula falsi (the Illinois variant) on ``h(y) = y + f̄⁻¹(y) − s`` keeps a bracket ``h(lo) <= 0 < h(hi)`` of
    every root at once; it is exact in one step on a linear piece of f̄⁻¹ and superlinear on smooth curves.  The
    answer is ``f̄⁻¹(lo)``, the lower end, whatever the bracket's width: at most the true α.
    """
    inverse = _raw_inverse(curve)
    lo = np.zeros_like(s)
    hi = np.array(s, copy=True)  # y + f̄⁻¹(y) >= y, so the root is at most s
    h_lo = -s  # f̄⁻¹(0) = 0; h_lo and h_hi are Illinois's (scaled) values, gap the true −h(lo)
    h_hi = inverse(hi)
    gap = np.array(s, copy=True)
    settled = h_hi <= 0.0  # then y = s itself, α = f̄⁻¹(s) = 0
    lo = np.where(settled, hi, lo)
    side = np.zeros(s.shape, dtype=np.int8)
    for _ in range(_ITERATIONS):
        # h(root) − h(lo) = −h(lo) bounds f̄⁻¹(root) − f̄⁻¹(lo): α at lo is within 1e-12 s of the truth
        settled |= (gap <= _ALPHA_TOL * s) | (hi - lo <= 1e-15 * hi)
        if settled.all():
            break
        with np.errstate(invalid="ignore", divide="ignore"):
            x = hi - h_hi * (hi - lo) / (h_hi - h_lo)
        x = np.where(np.isfinite(x) & (x > lo) & (x < hi), x, 0.5 * (lo + hi))
        hx = x + inverse(x) - s
        left = (hx <= 0.0) & ~settled
        right = (hx > 0.0) & ~settled
        # Illinois: halve the stale end's value when the same end moves twice, so both ends converge
        h_hi = np.where(left & (side == 1), 0.5 * h_hi, h_hi)
        h_lo = np.where(right & (side == -1), 0.5 * h_lo, h_lo)
        lo, h_lo, gap = np.where(left, x, lo), np.where(left, hx, h_lo), np.where(left, -hx, gap)
        hi, h_hi = np.where(right, x, hi), np.where(right, hx, h_hi)
        side = np.where(left, 1, np.where(right, -1, side)).astype(np.int8)
    return np.minimum(inverse(lo), s)


@functools.lru_cache(maxsize=8)
def _levels(resolution: int) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Confidence-quantile levels u_j on a logit grid (step 1/resolution), with 1 − u_j and the cells' masses.

    Returns ``(u, one_minus_u, mass)``: ``mass[0]`` is P(U <= u_0), ``mass[j]`` P(u_{j-1} < U <= u_j) and the
    last entry P(U > u_last); each cell holds at most ``min(u, 1 − u) / resolution`` of the probability.
    """
    top = math.log((1.0 - _TAIL) / _TAIL)
    t = np.arange(-top, top + 0.5 / resolution, 1.0 / resolution)
    u, rest = special.expit(t), special.expit(-t)
    mass = np.empty(u.size + 1)
    mass[0] = u[0]
    mass[1:-1] = np.where(u[1:] <= 0.5, np.diff(u), -np.diff(rest))
    mass[-1] = rest[-1]
    for array in (u, rest, mass):
        array.setflags(write=False)
    return u, rest, mass


class _ReleasedFractions:
    """``1 − W`` at the levels of :func:`_levels`, computed as they are asked: W ~ Beta(m − r, r + 1), so
    1 − W ~ Beta(r + 1, m − r).  A bound's search asks the same few hundred levels at every parameter it tries."""

    __slots__ = ("m", "r", "rest", "values")

    def __init__(self, m: int, r: int, resolution: int) -> None:
        self.m, self.r = m, r
        self.rest = _levels(resolution)[1]
        self.values = np.full(self.rest.size, np.nan)

    def __getitem__(self, idx: NDArray[np.intp]) -> NDArray[np.float64]:
        missing = idx[np.isnan(self.values[idx])]
        if missing.size:
            # P(W <= w) = u  <=>  P(1 − W >= 1 − w) = u: 1 − w is the (1 − u)-quantile of Beta(r + 1, m − r).
            self.values[missing] = special.betaincinv(self.r + 1, self.m - self.r, self.rest[missing])
        return self.values[idx]


@functools.lru_cache(maxsize=1024)
def _released_fractions(m: int, r: int, resolution: int) -> _ReleasedFractions:
    return _ReleasedFractions(m, r, resolution)


@functools.lru_cache(maxsize=8)
def _stretches(resolution: int) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """The levels the upper sum evaluates first (every _STRIDE-th, and the last) and the mass between them."""
    _, rest, mass = _levels(resolution)
    n = rest.size
    coarse = np.unique(np.concatenate([np.arange(0, n, _STRIDE), [n - 1]]))
    stretch_mass = np.diff(np.cumsum(mass[:n])[coarse])  # cells coarse[i] + 1 .. coarse[i + 1]
    for array in (coarse, stretch_mass):
        array.setflags(write=False)
    return coarse, stretch_mass


def _binom_cdf(k: int, n: ArrayLike, p: ArrayLike) -> NDArray[np.float64]:
    """P(Bin(n, p) <= k), elementwise, = I_p(k + 1, n − k) complemented (1 where k >= n).

    Through ``betaincc`` rather than ``bdtr``: ``bdtr`` is NaN for n >= 2³¹ and for k > n, and ``betaincc`` keeps
    its accuracy for tiny p.
    """
    trials = np.asarray(n, dtype=np.float64)
    prob = np.asarray(p, dtype=np.float64)
    inside = k < trials
    safe = np.where(inside, trials, k + 1.0)  # keeps betaincc's second argument positive where the answer is 1
    return np.where(inside, special.betaincc(k + 1.0, safe - k, prob), 1.0)


@functools.lru_cache(maxsize=64)
def _revealing_counts(m: int, delta: float) -> tuple[int, NDArray[np.float64], float, float]:
    """c ~ Bin(m, δ), the revealing outputs, on a window around mδ: ``(first, P(c = first..), P(c < first),
    P(c > last))``, the window wide enough that both tails outside it hold less than 1e-18 (at most 2²⁰ values)."""
    pool = stats.binom(m, delta)
    mean = m * delta
    spread = 50.0 * math.sqrt(mean * (1.0 - delta)) + 60.0
    first = max(0, math.floor(mean - spread))
    last = min(m, math.ceil(mean + spread), first + _POOL - 1)
    pmf = np.asarray(pool.pmf(np.arange(first, last + 1)), dtype=np.float64)
    pmf.setflags(write=False)
    below = float(pool.cdf(first - 1)) if first > 0 else 0.0
    return first, pmf, below, float(pool.sf(last))


def _pure_p_value(m: int, r: int, k: int, epsilon: float, delta: float) -> float:
    """The four-atom channel's exact p-value of at most k mistakes (see the module docstring)."""
    wrong = float(special.expit(-epsilon))
    if delta == 0.0:
        return float(_binom_cdf(k, r, wrong))
    # c revealing outputs among the m canaries: the released guesses take min(c, r) of them, all right, so c >= r
    # passes for certain; the tails outside the table (each below 1e-18) are counted as passes too.
    first, pmf, below, above = _revealing_counts(m, delta)
    c = first + np.arange(pmf.size)
    inside = c < r
    passes = _binom_cdf(k, r - c[inside], wrong)
    beyond = float(pmf[~inside].sum())
    return min(1.0, float(np.dot(pmf[inside], passes)) + beyond + below + above)


def p_value(
    curve: TradeOffCurve, m: int, r: int, v: int, *, resolution: int = RESOLUTION, lower: bool = False
) -> float:
    """The p-value of v correct of the r most confident guesses among m, under "each canary is its own f-channel".

    Parameters
    ----------
    curve : TradeOffCurve
        The hypothesised per-canary trade-off curve f (symmetric, as every built-in curve is).
    m : int
        Canaries, each included independently with probability 1/2; ``m >= 1``.
    r : int
        Released guesses (the most confident ones; the rest abstain), ``0 <= r <= m``, fixed before the run.
    v : int
        Correct released guesses, ``0 <= v <= r``.
    resolution : int, default=RESOLUTION
        Cells of the expectation over W (see Notes); unused where the p-value is exact.
    lower : bool, default=False
        Return the LOWER Riemann sum instead (for tests of the discretisation: the exact value lies between).

    Returns
    -------
    float
        ``P[V' >= v]`` for V' the correct guesses of the optimal auditor of the canonical f-channel: exact for a
        :class:`~privgame.analysis.tradeoff.PureDPCurve` (the four-atom channel) and when every guess is released
        (r = m: W = 0); otherwise an upper bound within about 1/``resolution`` of itself.

    Notes
    -----
    ``g(w) = P(Bin(r, ē(w)) <= r − v)`` increases with w (ē decreases), so on cells ``(w_{j−1}, w_j]`` of W's
    distribution ``E[g(W)] <= Σ_j P(W in cell j) g(w_j)``.  The cells are equal steps of 1/``resolution`` in the
    logit of W's quantile, from 1e-15 to 1 − 1e-15 (the mass above counted with g = 1), so each holds at most
    ``min(u, 1 − u)/resolution`` of the probability; the sum exceeds the integral by at most the mass of the
    cells where g rises, about p/``resolution``.  ē itself is rounded down (:func:`mean_error`).
    """
    if not isinstance(curve, TradeOffCurve):
        raise TypeError(f"curve must be a TradeOffCurve, got {curve!r}.")
    m_, r_, v_ = check_counts(m, r, v)
    res = check_int("resolution", resolution, low=1)
    return _p_value(curve, m_, r_, r_ - v_, res, lower)


def _p_value(curve: TradeOffCurve, m: int, r: int, k: int, resolution: int, lower: bool = False) -> float:
    if r == 0 or k >= r:
        return 1.0
    if isinstance(curve, PureDPCurve):
        return _pure_p_value(m, r, k, curve.epsilon, curve.delta)
    if r == m:  # every guess released: W = 0, ē(0) the channel's error rate
        return float(_binom_cdf(k, r, float(mean_error(curve, 1.0))))
    if isinstance(curve, GaussianCurve) and curve.mu == 0.0:  # perfect privacy: every guess a fair coin
        return float(_binom_cdf(k, r, 0.5))
    _, rest, mass = _levels(resolution)

    fractions = _released_fractions(m, r, resolution)

    def passes(idx: NDArray[np.intp]) -> NDArray[np.float64]:
        return _binom_cdf(k, r, _mean_error(curve, fractions[idx]))

    n = rest.size
    if lower:  # every cell at its lower end (the one below u_0 at w = 0): the whole grid, for tests
        at_zero = float(_binom_cdf(k, r, float(mean_error(curve, 1.0))))
        return float(np.dot(mass, np.concatenate([[at_zero], passes(np.arange(n))])))
    # Upper sum: cell j (from u_{j−1} to u_j; cell 0 below u_0) at g(u_j), the cell above u_last at 1.  g is first
    # evaluated every _STRIDE levels; a stretch between two of those is given its upper end's value unless that
    # over-states the sum by a share worth refining — the stretches are refined largest gap first, until what is
    # left unrefined is at most _SLACK of the stretches' lower sum.
    coarse, stretch_mass = _stretches(resolution)
    g_coarse = passes(coarse)
    gaps = stretch_mass * (g_coarse[1:] - g_coarse[:-1])
    floor = _SLACK * (float(mass[0] * g_coarse[0]) + float(np.dot(stretch_mass, g_coarse[:-1])))
    order = np.argsort(gaps)  # smallest first: these stay coarse while their total is within the slack
    keep_coarse = np.zeros(gaps.size, dtype=bool)
    keep_coarse[order] = np.cumsum(gaps[order]) <= floor
    total = float(mass[0] * g_coarse[0]) + float(mass[-1])
    total += float(np.dot(stretch_mass[keep_coarse], g_coarse[1:][keep_coarse]))
    refine = np.flatnonzero(~keep_coarse)
    if refine.size:
        idx = np.concatenate([np.arange(coarse[i] + 1, coarse[i + 1] + 1) for i in refine])
        total += float(np.dot(mass[idx], passes(idx)))
    return min(1.0, total)


def reject(curve: TradeOffCurve, m: int, r: int, v: int, tau: float, *, resolution: int = RESOLUTION) -> bool:
    """Is "each canary is its own f-channel" rejected at significance τ after v correct of the r released guesses?

    Formal guarantee: in the product model — the m membership bits i.i.d. Bernoulli(1/2), each canary's output
    depending on its own bit only, through a channel that is f-DP, independently of the other canaries — and with
    the r released guesses the auditor's most confident (any post-processing of the output, r fixed in advance),
    ``P[reject] <= τ`` (Theorem of [1]_ on the order statistics of the confidences).  Not a valid test when the
    canaries' outputs are dependent.
    """
    m_, r_, v_ = check_counts(m, r, v)
    if not 0.0 < tau < 1.0:
        raise ValueError(f"tau must lie in (0, 1), got {tau!r}.")
    return _p_value(curve, m_, r_, r_ - v_, check_int("resolution", resolution, low=1)) <= tau


@dataclass(frozen=True, slots=True)
class OrderStatsAudit:
    """Result of an order-statistics one-run audit: the bound and everything needed to recompute it.

    Attributes
    ----------
    epsilon : float
        The lower bound on ε (``family.to_epsilon(parameter)``: ε itself for the pure family, the GDP-derived ε at
        δ for the Gaussian one, DP-SGD's ε at δ for the PLD one).
    parameter : float
        The largest rejected parameter of the family (0 when none is).
    parameter_name, family : str
    m, r, v : int
        Canaries, released guesses, correct released guesses.
    delta, confidence : float
    p_value : float
        The p-value of the reported parameter (at most ``1 − confidence``; 1 when nothing is rejected).
    method : str
    """

    epsilon: float
    parameter: float
    parameter_name: str
    family: str
    m: int
    r: int
    v: int
    delta: float
    confidence: float
    p_value: float
    method: str = METHOD


def epsilon_lower_bound(
    m: int,
    r: int,
    v: int,
    *,
    family: str | CurveFamily,
    delta: float = 0.0,
    confidence: float = 0.95,
) -> OrderStatsAudit:
    """Lower bound on ε from v correct of the r most confident guesses among m canaries, in the product model.

    .. warning::
       Valid only when every canary is its own independent channel (the module docstring); the family must contain
       that channel's trade-off curve, as for :func:`privgame.analysis.fdp.epsilon_lower_bound`.

    Parameters
    ----------
    m : int
        Canaries, each included independently with probability 1/2; ``m >= 1``.
    r : int
        Released guesses, ``0 <= r <= m``, the most confident of the auditor's, their number fixed in advance (or
        chosen on a split, or with a Bonferroni-corrected confidence).
    v : int
        Correct released guesses, ``0 <= v <= r``.
    family : {"pure", "gaussian"} or CurveFamily
        As :func:`privgame.analysis.fdp.epsilon_lower_bound` (``"pure"``: (ε, δ) at the given δ — exact here; a
        :func:`privgame.analysis.families.dpsgd_family` for DP-SGD).
    delta : float, default=0.0
    confidence : float, default=0.95

    Returns
    -------
    OrderStatsAudit

    Raises
    ------
    TypeError, ValueError
        For counts, δ, confidence or family as :func:`privgame.analysis.fdp.epsilon_lower_bound` refuses them.

    Warns
    -----
    UserWarning
        When even r correct guesses of r could not give a positive bound, or the search reaches the family's
        ``max_parameter``.

    Notes
    -----
    Formal guarantee: in the product model with every canary's channel f_θ-DP for a member θ of ``family``,
    ``P[result.parameter > θ] <= 1 − confidence`` (:func:`reject`, monotone in θ for a nested family: a larger θ
    has lower error rates ē, so a larger p-value).  The search brackets the largest rejected θ by doubling, then
    solves ``p(θ) = τ`` (Brent's method on the log p-value) and steps down by the tolerance until the returned θ
    is itself rejected.

    Cost: a p-value evaluates ē at a few hundred levels of W (every 16th of the grid, then the stretches where the
    integrand rises), each a bracketing search of about ten ``f̄⁻¹`` calls, independent of m; the pure family's is
    an exact sum over the revealing outputs (one term when δ = 0).  Measured on 2 cores: 0.1-0.2 s per bound for
    μ-GDP at any m, about 1 s per PLD composition for DP-SGD's family (shared with :mod:`privgame.analysis.fdp`'s
    cache).

    Examples
    --------
    With δ = 0 the pure family is randomized response and the test is Steinke et al.'s exactly:

    >>> round(epsilon_lower_bound(1000, 1000, 700, family="pure").epsilon, 4)
    0.732
    """
    m_, r_, v_ = check_counts(m, r, v)
    d = check_delta(delta)
    conf = check_confidence(confidence)
    return _audit(resolve_family(family, d), m_, r_, v_, d, conf)


def _audit(fam: CurveFamily, m_: int, r_: int, v_: int, d: float, conf: float, floor: float = 0.0) -> OrderStatsAudit:
    theta, p = _largest_rejected(fam, m_, r_, v_, 1.0 - conf, floor)
    return OrderStatsAudit(
        epsilon=fam.to_epsilon(theta) if theta > 0.0 else 0.0,
        parameter=theta,
        parameter_name=fam.parameter_name,
        family=fam.name,
        m=m_,
        r=r_,
        v=v_,
        delta=d if fam.delta is None else fam.delta,
        confidence=conf,
        p_value=p,
    )


def _largest_rejected(fam: CurveFamily, m: int, r: int, v: int, tau: float, floor: float = 0.0) -> tuple[float, float]:
    """The largest rejected θ and its p-value; ``floor`` is a θ known to be rejected (the search starts there)."""
    k = r - v
    xtol = max(fam.xtol, 1e-7)

    def p(theta: float, mistakes: int = k) -> float:
        value = _p_value(fam.curve(theta), m, r, mistakes, RESOLUTION)
        return value if value <= 1.0 else 1.0  # NaN (a custom curve's) rejects nothing

    if p(0.0) > tau:
        if p(0.0, 0) > tau:
            warnings.warn(
                f"no positive bound is possible at confidence {1 - tau:g} with r = {r} guesses (m = {m}, family "
                f"{fam.name!r}), even if all were correct; make more guesses.",
                UserWarning,
                stacklevel=3,
            )
        return 0.0, 1.0
    lo, p_lo = 0.0, p(0.0)
    if floor > 0.0 and (p_floor := p(floor)) <= tau:
        lo, p_lo = floor, p_floor
    step = min(1.0, fam.max_parameter) if lo == 0.0 else max(0.125 * lo, 10 * xtol)
    hi = min(lo + step, fam.max_parameter)
    while (p_hi := p(hi)) <= tau:
        if hi >= fam.max_parameter:
            warnings.warn(
                f"the curve at the family's max_parameter = {fam.max_parameter:g} is still rejected; the bound is "
                "capped there.",
                UserWarning,
                stacklevel=3,
            )
            return fam.max_parameter, p_hi
        lo, p_lo, step = hi, p_hi, 2.0 * step
        hi = min(lo + step, fam.max_parameter)
    log_tau = math.log(tau)

    def margin(theta: float) -> float:
        value = p(theta)
        return (math.log(value) if value > 0.0 else -745.0) - log_tau

    root = float(optimize.brentq(margin, lo, hi, xtol=xtol, rtol=4 * float(np.finfo(float).eps)))
    theta = max(lo, root - xtol)
    p_theta = p(theta) if theta > lo else p_lo
    while p_theta > tau and theta > lo:  # p rounds; step down until θ itself is rejected
        theta = max(lo, theta - 4 * xtol)
        p_theta = p(theta) if theta > lo else p_lo
    return theta, p_theta


def audit_scores(
    in_scores: ArrayLike,
    out_scores: ArrayLike,
    *,
    family: str | CurveFamily,
    delta: float = 0.0,
    confidence: float = 0.95,
    threshold: ThresholdStrategy | None = None,
    two_sided: bool = False,
) -> AuditResult:
    """The order-statistics audit from the scores of the included and excluded canaries of ONE run.

    The guesses at a threshold are "member" at scores >= t (and "non-member" at scores <= t_low when two-sided);
    they are the most confident ones of a confidence ordering (distance beyond the threshold), the rest abstain.

    .. warning::
       Product model only (see the module docstring), and the family must be the mechanism's own.

    Parameters
    ----------
    in_scores, out_scores : array-like
        Scores of the included (member) and excluded canaries, higher = member; m = n_in + n_out.
    family : {"pure", "gaussian"} or CurveFamily
    delta : float, default=0.0
    confidence : float, default=0.95
    threshold : ThresholdStrategy, default=Bonferroni(100)
    two_sided : bool, default=False

    Returns
    -------
    AuditResult
        ``details``: m, r, v, ``parameter``, ``parameter_name``, ``family``.

    Notes
    -----
    Formal guarantee: in the product model, with each canary's curve in the family at its true parameter,
    ``P[result.epsilon > ε] <= 1 − confidence``; each threshold candidate is tested at the strategy's per-test
    significance (union bound or split).
    """
    ins, outs, conf, d, strategy = prepare_one_run(in_scores, out_scores, confidence, delta, threshold, two_sided)
    fam = resolve_family(family, d)
    counts = guess_counts(two_sided)
    audits: dict[tuple[int, int, int, float], OrderStatsAudit] = {}

    def audit(m: int, r: int, v: int, beta: float, floor: float = 0.0) -> OrderStatsAudit:
        key = (m, r, v, beta)
        if key not in audits:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                audits[key] = _audit(fam, m, r, v, d, 1.0 - beta, floor)
        return audits[key]

    def bounds(
        a: NDArray[np.float64], b: NDArray[np.float64], cands: Sequence[Any], beta: float
    ) -> NDArray[np.float64]:
        # Candidates by decreasing accuracy; one whose test does not reject the best parameter found so far cannot
        # beat it (rejection is monotone in the parameter), so it costs one p-value.
        r, v = counts(ascending(a), ascending(b), cands)
        size = a.size + b.size
        out = np.zeros(len(cands), dtype=np.float64)
        best = 0.0
        accuracy = np.where(r > 0, v / np.maximum(r, 1), -1.0)
        for i in np.argsort(-accuracy, kind="stable"):
            ri, vi = int(r[i]), int(v[i])
            if ri == 0 or (best > 0.0 and _p_value(fam.curve(best), size, ri, ri - vi, RESOLUTION) > beta):
                continue
            result = audit(size, ri, vi, beta, best)  # it rejects best: search from there
            out[i] = result.epsilon
            best = max(best, result.parameter)
        return out

    choice, r, v = choose_and_count(strategy, ins, outs, confidence=conf, two_sided=two_sided, bounds=bounds)
    size = choice.in_scores.size + choice.out_scores.size
    best = audit(size, r, v, choice.beta_per_test)
    return result_from_choice(
        choice,
        method=f"{METHOD}, family {fam.name}{', two-sided' if two_sided else ''}",
        n_in=ins.size,
        n_out=outs.size,
        confidence=conf,
        delta=d,
        details={
            "m": size,
            "r": r,
            "v": v,
            "parameter": best.parameter,
            "parameter_name": best.parameter_name,
            "family": fam.name,
        },
    )
