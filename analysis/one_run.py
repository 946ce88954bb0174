"""The one-run privacy audit of Steinke, Nasr and Jagielski (2023), "Privacy Auditing with One (1) Training Run".

m auditing examples (canaries) are each included independently with probability 1/2; the mechanism runs once; an
auditor guesses membership for r of them (abstaining on the rest) and gets v right.  If the mechanism is
(ε, δ)-DP, the number of correct guesses is dominated by Binomial(r, e^ε / (1 + e^ε)) up to a δ term (Theorem 5.2),
which gives a p-value for the hypothesis "(ε, δ)-DP" and, by inversion, a lower bound on ε.

References
----------
.. [1] T. Steinke, M. Nasr, M. Jagielski. Privacy Auditing with One (1) Training Run. NeurIPS 2023.
   arXiv:2305.08846 (Theorem 5.2 and Appendix D).
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

from privgame.analysis._checks import (
    check_confidence,
    check_counts,
    check_delta,
    check_int,
    check_membership,
    check_real,
    check_scores,
)
from privgame.analysis._counting import ascending, choose_and_count, guess_counts
from privgame.analysis._result import AuditResult, prepare_one_run, result_from_choice
from privgame.analysis.thresholds import (
    ThresholdStrategy,
    warn_delta_term,
)

__all__ = [
    "AuditResult",
    "OneRunAudit",
    "audit_scores",
    "audit_top_k",
    "best_of_bounds",
    "count_correct",
    "epsilon_lower_bound",
    "guesses_top_k",
    "p_value",
]

# Hoeffding: P[|Bin(r, q) - rq| >= t] <= 2 exp(-2 t^2 / r).  With t = sqrt(r * _HOEFFDING_LOG / 2) each tail holds
# less than 1e-20 of the mass, far below the 1e-12 relative accuracy promised for the p-value.
_HOEFFDING_LOG = math.log(1e20)


try:  # scipy's own (Boost's) binomial ufuncs, which stats.binom calls after checking its arguments (~8x the cost)
    from scipy.special._ufuncs import _binom_cdf as _boost_cdf
    from scipy.special._ufuncs import _binom_pmf as _boost_pmf
except ImportError:  # pragma: no cover - older or newer scipy: the public, checked path, the same numbers
    _boost_pmf, _boost_cdf = stats.binom.pmf, stats.binom.cdf


def _w_pmf(ws: NDArray[np.int64] | int, r: int, p_fail: float) -> NDArray[np.float64]:
    """pmf of ``W ~ Binomial(r, p_fail)`` at ``ws``, every one of which lies in ``[0, r]`` (the callers' ranges).

    Bit for bit ``stats.binom.pmf`` there (tested), without its per-call argument checks: the p-value's search
    calls it tens of thousands of times in an audit."""
    return np.clip(_boost_pmf(np.asarray(ws, dtype=np.float64), float(r), p_fail), 0.0, 1.0)  # as stats.binom


def _binom_pmf(ks: NDArray[np.int64] | int, r: int, p_fail: float) -> NDArray[np.float64]:
    """pmf of ``B ~ Binomial(r, 1 - p_fail)`` at ``ks``, evaluated as the pmf of ``W = r - B`` at ``r - ks``."""
    return _w_pmf(np.subtract(r, ks), r, p_fail)


def _alpha(r: int, v: int, p_fail: float, i_min: int = 1) -> float:
    """``max_{i = i_min..v} P[v - i <= B < v] / i`` for ``B ~ Binomial(r, 1 - p_fail)``.

    Works with the failures ``W = r - B ~ Binomial(r, p_fail)`` so that ``1 - q`` is never formed by subtraction
    (it is ``expit(-ε)``, exact even when ε is large).  The pmf of B rises up to its mode, so when ``v - 1`` is at
    or below the mode the best window is the shortest, ``i = i_min``; otherwise only the window [rq - t, rq + t] of
    Hoeffding's bound carries mass worth counting (anything outside holds < 1e-20), and the maximum over i is a
    vectorised scan of the running sums there, the winning sum recomputed by pairwise summation.
    """
    if i_min > v:
        return 0.0
    q = 1.0 - p_fail
    mode = math.floor((r + 1) * q)
    t = math.sqrt(r * _HOEFFDING_LOG / 2.0)
    low = max(0, math.floor(r * q - t))
    if v - 1 <= mode or v - 1 < low:
        window = _binom_pmf(np.arange(v - i_min, v), r, p_fail)
        return math.fsum(window.tolist()) / i_min
    high = min(v - 1, max(math.ceil(r * q + t), v - i_min))
    low = min(low, v - i_min)
    ks = np.arange(low, high + 1)
    pmf = _binom_pmf(ks, r, p_fail)
    # tail[j] = sum_{k >= ks[j]} pmf(k) (up to v - 1, the mass above `high` being negligible); window i = v - k.
    tail = np.cumsum(pmf[::-1])[::-1]
    n_ok = v - i_min - low + 1  # windows with i >= i_min end at k <= v - i_min
    j = int(np.argmax(tail[:n_ok] / (v - ks[:n_ok])))
    return float(np.sum(pmf[j:])) / (v - int(ks[j]))  # numpy's pairwise sum: error O(log n) ulps


# Below this many failures, P[W <= r - v] is summed from the pmf: scipy's (Boost's) binomial cdf, an incomplete beta
# ibetac(r - v + 1, v, p_fail), loses about r ulps when r - v is small (the regime of large ε), e.g. a relative error
# of 4.6e-11 for P[Bin(10^6, 1e-5) <= 1]; the pmf is accurate to a few ulps, and the sum is of positive terms.
_TAIL_SUM_MAX = 1000


def _tail(r: int, v: int, p_fail: float) -> float:
    """``P[B >= v]`` for ``B ~ Binomial(r, 1 - p_fail)``, as ``P[W <= r - v]``."""
    if v <= 0:
        return 1.0
    if r - v < _TAIL_SUM_MAX:
        return math.fsum(_w_pmf(np.arange(r - v + 1), r, p_fail).tolist())
    return float(np.clip(_boost_cdf(float(r - v), float(r), p_fail), 0.0, 1.0))  # as stats.binom


def _p_value(m: int, r: int, v: int, epsilon: float, delta: float, i_min: int = 1) -> float:
    p_fail = float(special.expit(-epsilon))  # 1 - q, accurate for large ε
    p = _tail(r, v, p_fail)
    if delta > 0.0:
        p += _alpha(r, v, p_fail, i_min) * delta * 2.0 * m
    return min(1.0, p)


def _h(m: int, r: int, v: int, epsilon: float, delta: float, i: int) -> float:
    """One term of the p-value's maximum: ``P[B >= v] + 2mδ · P[v - i <= B < v] / i``."""
    p_fail = float(special.expit(-epsilon))
    window = _binom_pmf(np.arange(v - i, v), r, p_fail)
    return min(1.0, _tail(r, v, p_fail) + 2.0 * m * delta * math.fsum(window.tolist()) / i)


def p_value(m: int, r: int, v: int, epsilon: float, delta: float = 0.0) -> float:
    """p-value of the hypothesis "the mechanism is (ε, δ)-DP" after v correct guesses out of r, with m canaries.

    Parameters
    ----------
    m : int
        Number of canaries (auditing examples), each included independently with probability 1/2.
    r : int
        Number of guesses made (canaries not abstained on), ``0 <= r <= m``.
    v : int
        Number of correct guesses, ``0 <= v <= r``.
    epsilon : float
        The ε of the null hypothesis, ``>= 0``.
    delta : float, default=0.0
        The δ of the null hypothesis, in [0, 1).

    Returns
    -------
    float
        ``min(1, P[Bin(r, q) >= v] + α · δ · 2m)`` with ``q = e^ε / (1 + e^ε)`` and
        ``α = max_{i=1..v} P[v - i <= Bin(r, q) < v] / i`` (α only when δ > 0).

    Raises
    ------
    TypeError
        If a count is not an integer or ε, δ not real numbers.
    ValueError
        If ``r > m``, ``v > r``, ``m < 1``, ε < 0 or not finite, or δ outside [0, 1).

    Notes
    -----
    Formal guarantee: if the mechanism is (ε, δ)-DP and the guesses are a post-processing of its output, then
    ``P[p_value(m, r, v, ε, δ) <= β] <= β`` for every β (Theorem 5.2 of [1]_).  The binomial tail and pmf come
    from scipy's (Boost) binomial distribution, evaluated at ``1 - q = expit(-ε)`` so that no precision is lost
    for large ε; the α term skips only mass below 1e-20, so the result is exact to about 1e-12 relative for r up
    to 10^6.

    References
    ----------
    .. [1] Steinke, Nasr, Jagielski. Privacy Auditing with One (1) Training Run. arXiv:2305.08846, Thm 5.2, App. D.

    Examples
    --------
    >>> round(p_value(100, 100, 75, math.log(3)), 3)
    0.553
    """
    m_, r_, v_ = check_counts(m, r, v)
    eps = check_real("epsilon", epsilon, low=0.0)
    return _p_value(m_, r_, v_, eps, check_delta(delta))


def epsilon_lower_bound(m: int, r: int, v: int, *, delta: float = 0.0, confidence: float = 0.95) -> float:
    """Lower bound on ε at the given confidence from v correct guesses out of r, with m canaries.

    Parameters
    ----------
    m, r, v : int
        Canaries, guesses made and correct guesses, ``0 <= v <= r <= m``, ``m >= 1``.
    delta : float, default=0.0
        The δ at which ε is bounded, in [0, 1).
    confidence : float, default=0.95
        ``1 - β``, in (0, 1).

    Returns
    -------
    float
        ``inf {ε >= 0 : p_value(m, r, v, ε, δ) >= β}``, i.e. the largest ε such that every smaller ε is rejected
        at significance β; 0 when ε = 0 itself is not rejected.

    Raises
    ------
    TypeError, ValueError
        As :func:`p_value`, and for a confidence outside (0, 1).

    Warns
    -----
    UserWarning
        When even r correct guesses out of r could not give a positive bound at this confidence, or when the δ term
        ``α · 2mδ`` takes up more than a tenth of the significance β at the bound (SPEC §1: keep 2mδ small).

    Notes
    -----
    Formal guarantee: for an (ε, δ)-DP mechanism, ``P[epsilon_lower_bound(...) > ε] <= 1 - confidence`` — the
    bound exceeds the true ε only if the true ε was rejected.

    The p-value need not be monotone in ε, so the bound is computed as the first crossing, which keeps the
    guarantee above.  Write ``c = 2mδ``, ``f = P[B >= v]`` and ``g_i = P[v - i <= B < v] / i``; the p-value is
    ``min(1, max_i (f + c·g_i))``.  For ``i >= c``, ``f + c·g_i = (1 - c/i) f + (c/i) P[B >= v - i]`` is a
    non-negative combination of functions increasing in ε, so their maximum is found by bracketing and Brent's
    method (absolute tolerance 1e-12).  For ``i < c`` (only when δ > 0), the derivative of ``f + c·g_i`` in q has
    the sign of ``(1 - c/i)·b(v-1) + (c/i)·b(v-i-1)`` (b the Binomial(r - 1, q) pmf), and ``b(v-i-1)/b(v-1)``
    decreases in q: each such term rises up to a known ε* and falls after it, so its first crossing below the
    running bound is found exactly as well.

    References
    ----------
    .. [1] Steinke, Nasr, Jagielski. Privacy Auditing with One (1) Training Run. arXiv:2305.08846, App. D.

    Examples
    --------
    >>> round(epsilon_lower_bound(100, 100, 75), 3)
    0.702
    """
    m_, r_, v_ = check_counts(m, r, v)
    d = check_delta(delta)
    beta = 1.0 - check_confidence(confidence)
    return _epsilon_lower_bound(m_, r_, v_, d, beta)


def _h_excess(m: int, r: int, v: int, delta: float, i: int, beta: float, epsilon: float) -> float:
    return _h(m, r, v, epsilon, delta, i) - beta


def _first_crossing(excess: Callable[[float], float], hi: float | None = None) -> float:
    """Smallest root of a function that is negative at 0 and increasing up to its first root.

    Without ``hi``, the bracket doubles from 1 until the function is non-negative.
    """
    lo = 0.0
    if hi is None:
        hi = 1.0
        while excess(hi) < 0.0:
            lo, hi = hi, 2.0 * hi
    return float(optimize.brentq(excess, lo, hi, xtol=1e-12, rtol=4 * np.finfo(float).eps))


def _epsilon_lower_bound(m: int, r: int, v: int, delta: float, beta: float) -> float:
    if _p_value(m, r, v, 0.0, delta) >= beta:
        if _p_value(m, r, r, 0.0, delta) >= beta:
            warnings.warn(
                f"no positive ε lower bound is possible at confidence {1 - beta:g} with r = {r} guesses "
                f"(m = {m}, δ = {delta:g}), even if all were correct; make more guesses.",
                UserWarning,
                stacklevel=3,
            )
        return 0.0
    c = 2.0 * m * delta
    # The p-value is max(P1, max_{i < c} h_i): P1 (windows i >= c) is increasing in ε, each h_i rises then falls.
    i0 = max(1, math.ceil(c))
    root = _first_crossing(lambda e: _p_value(m, r, v, e, delta, i0) - beta)
    if i0 > 1 and v > 1:
        js = np.arange(min(i0 - 1, v - 1))
        # log of C(r-1, v-1-i) / C(r-1, v-1) for i = 1..len(js): the ratio b(v-i-1) / b(v-1) at q = 1/2.
        log_ratio = np.cumsum(np.log((v - 1 - js) / (r - v + 1 + js)))
        for i in range(1, js.size + 1):
            # h_i increases in ε until b(v-i-1)/b(v-1) = 1 - i/c, i.e. until ε* below.
            eps_star = (float(log_ratio[i - 1]) - math.log1p(-i / c)) / i
            top = min(eps_star, root)
            if top > 0.0 and _h(m, r, v, top, delta, i) >= beta:
                root = _first_crossing(functools.partial(_h_excess, m, r, v, delta, i, beta), hi=top)
    if delta > 0.0:
        delta_term = _p_value(m, r, v, root, delta) - _p_value(m, r, v, root, 0.0)
        if delta_term > 0.1 * beta:
            warnings.warn(
                # no trial-specific number in the text, so that Python shows it once per (m, δ, significance)
                # rather than once per trial
                f"the δ term of the p-value (α·2mδ, with m = {m}, δ = {delta:g}) takes more than a tenth of the "
                f"significance {beta:g}: the bound is weakened; use fewer canaries or a smaller δ.",
                UserWarning,
                stacklevel=3,
            )
    return root


def guesses_top_k(scores: ArrayLike, k_pos: int, k_neg: int, *, rng: np.random.Generator) -> NDArray[np.int8]:
    """Guess "member" (+1) for the k₊ highest scores, "non-member" (−1) for the k₋ lowest, abstain (0) elsewhere.

    Ties at either cut are broken uniformly at random with ``rng``, which must be independent of membership.

    Parameters
    ----------
    scores : array-like of shape (m,)
        Attack scores, higher = more likely a member; must be finite.
    k_pos, k_neg : int
        Numbers of member and non-member guesses, ``k_pos + k_neg <= m``.
    rng : numpy.random.Generator
        Source of the tie-breaking order.

    Returns
    -------
    ndarray of shape (m,), dtype int8
    """
    s = check_scores("scores", scores)
    m = s.shape[0]
    kp = check_int("k_pos", k_pos, low=0)
    kn = check_int("k_neg", k_neg, low=0)
    if kp + kn > m:
        raise ValueError(f"k_pos + k_neg must be at most m = {m}, got {kp} + {kn} = {kp + kn}.")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {rng!r}.")
    order = np.lexsort(np.stack([rng.random(m), s]))  # ascending score, random order within ties
    guesses = np.zeros(m, dtype=np.int8)
    guesses[order[m - kp :]] = 1
    guesses[order[:kn]] = -1
    return guesses


def count_correct(guesses: ArrayLike, membership: ArrayLike) -> tuple[int, int]:
    """Return ``(r, v)``: the number of non-abstaining guesses and the number of correct ones.

    Parameters
    ----------
    guesses : array-like of shape (m,)
        +1 (member), −1 (non-member) or 0 (abstain).
    membership : array-like of shape (m,)
        True / 1 for members.
    """
    g = np.asarray(guesses)
    if g.ndim != 1 or not np.all(np.isin(g, (-1, 0, 1))):
        raise ValueError("guesses must be a 1-d array of -1, 0 and +1.")
    s = check_membership("membership", membership, g.shape[0])
    r = int(np.count_nonzero(g))
    v = int(np.count_nonzero((g == 1) & s) + np.count_nonzero((g == -1) & ~s))
    return r, v


@dataclass(frozen=True, slots=True)
class OneRunAudit:
    """Result of a one-run audit: the ε lower bound and everything needed to recompute it.

    Attributes
    ----------
    epsilon : float
        The lower bound on ε at ``confidence`` (Theorem 5.2 of arXiv:2305.08846).
    m, r, v : int
        Canaries, guesses made, correct guesses.
    k_pos, k_neg : int
        The guessing rule: the k₊ highest scores guessed "member", the k₋ lowest "non-member".
    delta : float
        The δ at which ε is bounded.
    confidence : float
        The confidence level ``1 - β``.
    """

    epsilon: float
    m: int
    r: int
    v: int
    k_pos: int
    k_neg: int
    delta: float
    confidence: float
    method: str = "one-run (Steinke et al. 2023, Thm 5.2)"

    def p_value(self, epsilon: float) -> float:
        """The p-value of "(ε, δ)-DP" for this audit's counts."""
        return p_value(self.m, self.r, self.v, epsilon, self.delta)


def audit_top_k(
    scores: ArrayLike,
    membership: ArrayLike,
    *,
    k_pos: int,
    k_neg: int,
    rng: np.random.Generator,
    delta: float = 0.0,
    confidence: float = 0.95,
) -> OneRunAudit:
    """One-run audit from scores with a guessing rule fixed in advance.

    Parameters
    ----------
    scores : array-like of shape (m,)
        One attack score per canary, higher = member.
    membership : array-like of shape (m,)
        The true inclusion bits S_i.
    k_pos, k_neg : int
        The k₊ highest scores are guessed "member", the k₋ lowest "non-member"; fixed before seeing the data.
    rng : numpy.random.Generator
        Breaks ties at the cuts; must be independent of membership (e.g. the attack's generator).
    delta : float, default=0.0
        δ of the audited guarantee.
    confidence : float, default=0.95
        Confidence of the lower bound.

    Returns
    -------
    OneRunAudit

    Notes
    -----
    Formal guarantee: when the mechanism is (ε, δ)-DP with respect to adding or removing one canary,
    ``P[result.epsilon > ε] <= 1 - confidence`` over the draw of membership and the mechanism's randomness.
    The rule must not depend on the membership labels: choosing k₊, k₋ after looking breaks the guarantee.
    """
    d = check_delta(delta)
    conf = check_confidence(confidence)
    guesses = guesses_top_k(scores, k_pos, k_neg, rng=rng)
    m = guesses.shape[0]
    r, v = count_correct(guesses, membership)
    eps = _epsilon_lower_bound(m, r, v, d, 1.0 - conf)
    return OneRunAudit(epsilon=eps, m=m, r=r, v=v, k_pos=int(k_pos), k_neg=int(k_neg), delta=d, confidence=conf)


def best_of_bounds(m: int, r: ArrayLike, v: ArrayLike, *, delta: float, beta: float) -> NDArray[np.float64]:
    """Lower bounds for many (r, v) tests at significance ``beta`` each, computing only those that can be the best.

    Returns an array with the bound of every test that could be the largest and 0 for the others, so its maximum
    (and argmax) is that of the full array.  For β < 1/2, a test's bound never exceeds the point estimate
    ln(v / (r − v)): at that ε, q = v/r and P[Bin(r, q) >= v] >= 1/2 > β (a binomial's median is its mean when
    the mean is an integer, and the δ term only adds), so tests are visited by decreasing point estimate and the
    scan stops once it falls below the best bound found.
    """
    rs = np.asarray(r, dtype=np.int64)
    vs = np.asarray(v, dtype=np.int64)
    out = np.zeros(rs.shape, dtype=np.float64)
    with np.errstate(divide="ignore"):
        estimate = np.where(vs >= rs, np.inf, np.log(vs) - np.log(np.maximum(rs - vs, 1)))
    estimate = np.where(rs > 0, estimate, -np.inf)
    best = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for i in np.argsort(-estimate, kind="stable"):
            if beta < 0.5 and estimate[i] <= best:
                break
            out[i] = _epsilon_lower_bound(m, int(rs[i]), int(vs[i]), delta, beta) if rs[i] > 0 else 0.0
            best = max(best, out[i])
    return out


def audit_scores(
    in_scores: ArrayLike,
    out_scores: ArrayLike,
    *,
    confidence: float = 0.95,
    delta: float = 0.0,
    threshold: ThresholdStrategy | None = None,
    two_sided: bool = False,
) -> AuditResult:
    """One-run audit from the scores of the included (member) and excluded canaries of ONE run.

    Parameters
    ----------
    in_scores : array-like of shape (n_in,)
        Scores of the canaries that were included (S_i = 1), higher = member.
    out_scores : array-like of shape (n_out,)
        Scores of the canaries that were left out (S_i = 0).  m = n_in + n_out.
    confidence : float, default=0.95
    delta : float, default=0.0
    threshold : ThresholdStrategy, default=Bonferroni(100)
        How the threshold is chosen (:mod:`privgame.analysis.thresholds`).  One-sided guessing takes one threshold t
        ("member" at scores ≥ t, abstain below); two-sided takes ``(t_low, t_high)``.
    two_sided : bool, default=False
        Also guess "non-member" for scores ≤ t_low (the k₋ lowest), as in the paper's audit.

    Returns
    -------
    AuditResult
        ``details`` holds m, r and v of the test behind the bound (the held-out part for a split).

    Notes
    -----
    Formal guarantee: if the mechanism is (ε, δ)-DP with respect to each canary and the canaries were included
    independently with probability 1/2, then ``P[result.epsilon > ε] <= 1 - confidence``, the threshold's search
    being paid for by the strategy (Theorem 5.2 of arXiv:2305.08846, union bound or split).  With δ > 0 the term
    2mδ is added to the p-value of every test: keep it well below the per-test significance (a warning says so).
    """
    ins, outs, conf, d, strategy = prepare_one_run(in_scores, out_scores, confidence, delta, threshold, two_sided)
    m = ins.size + outs.size
    counts = guess_counts(two_sided)

    def bounds(
        a: NDArray[np.float64], b: NDArray[np.float64], cands: Sequence[Any], beta: float
    ) -> NDArray[np.float64]:
        r, v = counts(ascending(a), ascending(b), cands)
        return best_of_bounds(a.size + b.size, r, v, delta=d, beta=beta)

    choice, r, v = choose_and_count(strategy, ins, outs, confidence=conf, two_sided=two_sided, bounds=bounds)
    message = warn_delta_term(m, d, choice.beta_per_test)
    if message:
        warnings.warn(message, UserWarning, stacklevel=2)
    return result_from_choice(
        choice,
        method=f"one-run{' two-sided' if two_sided else ''} (Steinke et al. 2023, arXiv:2305.08846)",
        n_in=ins.size,
        n_out=outs.size,
        confidence=conf,
        delta=d,
        details={"m": choice.in_scores.size + choice.out_scores.size, "r": r, "v": v},
    )
