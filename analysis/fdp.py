"""The one-run f-DP audit of Mahloujifar, Melis and Chaudhuri (2024), "Auditing f-Differential Privacy in One Run".

Same game as :mod:`privgame.analysis.one_run` (m canaries, each included independently with probability 1/2, one run of
the mechanism, r guesses of which v are correct), but the hypothesis tested is a whole trade-off curve f rather than a
single (ε, δ) pair.  Algorithm 3 of [1]_ (guesses capped at r) decides whether v correct guesses out of r are too
many for an f-DP mechanism at significance τ; the lower bound is the largest member of a one-parameter family of
curves that is rejected.

.. warning::

   **The curve family must be the mechanism's own.**  The bound is a statement about one family of curves: "the
   mechanism is not f_θ-DP for any θ up to the bound".  It converts to a lower bound on ε only if the mechanism's true
   trade-off curve belongs to (or lies above) that family.  Use the pure/approximate-DP family for randomized
   response and other (ε, δ) mechanisms, the Gaussian or PLD family for Gaussian noise and DP-SGD.  Applying the
   Gaussian family to randomized response overshoots the true ε: with true ε = 1, m = r = 10⁴ and the expected 7311
   correct guesses, the GDP-derived ε at δ = 1e-5 is 1.646 (SPEC §1) — a "lower bound" above the truth.

References
----------
.. [1] S. Mahloujifar, L. Melis, K. Chaudhuri. Auditing f-Differential Privacy in One Run. ICML 2025.
   arXiv:2410.22235 (Algorithm 3, "audit with a cap on the number of guesses").
.. [2] J. Dong, A. Roth, W. J. Su. Gaussian Differential Privacy. JRSS-B 2022, arXiv:1905.02383 (trade-off
   curves, the (ε, δ) ↔ f-DP duality, μ-GDP and its δ(ε) curve, Corollary 2.13).
"""

from __future__ import annotations

import bisect
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize

from privgame.analysis._checks import check_confidence, check_counts, check_delta, check_int, check_real
from privgame.analysis._counting import ascending, choose_and_count, guess_counts
from privgame.analysis._result import AuditResult, prepare_one_run, result_from_choice
from privgame.analysis.families import CurveFamily, resolve_family
from privgame.analysis.thresholds import ThresholdStrategy
from privgame.analysis.tradeoff import Pieces, TradeOffCurve

__all__ = ["FdpAudit", "audit_scores", "epsilon_lower_bound", "reject"]

METHOD = "one-run f-DP audit (Mahloujifar, Melis, Chaudhuri 2024, arXiv:2410.22235, Algorithm 3)"


def _margin(g: Callable[[float], float], m: int, c_cap: int, c: int, tau: float, k: int) -> float:
    """``r_0 + h_0 - c_cap/m`` of Algorithm 3 (positive iff the curve is rejected), stopping as soon as it is known.

    r and h never decrease, so the loop returns once ``r + h`` exceeds ``c_cap/m`` (rejected: the margin returned
    is then a positive lower bound of the final one); and once ``(k-1) f̄⁻¹(r) <= h`` neither changes again.
    """
    limit = c_cap / m
    r = tau * c / m
    h = tau * (c_cap - c) / m
    scale = float(k - 1)
    for i in range(c - 1, -1, -1):
        gr = g(r) if k == 2 else scale * g(r)
        if gr <= h:
            break
        r += (i / (c_cap - i)) * (gr - h)
        if r > 1.0:
            r = 1.0
        h = gr
        if r + h > limit:
            break
    return r + h - limit


# Chunks of the vectorised recursion start at _CHUNK_MIN steps and grow fourfold up to _CHUNK_MAX while whole chunks
# stay on one linear piece; after a chunk that advanced fewer than _CHUNK_MIN steps, _CHUNK_MIN plain steps follow
# (many narrow pieces, as a PLD curve has, are cheaper to walk one step at a time).
_CHUNK_MIN = 32
_CHUNK_MAX = 1 << 16


def _margin_pieces(pieces: Pieces, m: int, c_cap: int, c: int, tau: float, k: int) -> float:
    """:func:`_margin` for a piecewise-linear ``f̄⁻¹``, running each linear stretch as one vectorised product.

    Once one step has been taken, ``h = g(r_prev)`` with r_prev the r before that step.  While r_prev and the
    following r lie on one linear piece of ``g = (k-1) f̄⁻¹`` (slope S), ``g(r_i) - h_i = S (r_i - r_{i+1})``, so the
    increments obey ``Δr_i = S w_i Δr_{i+1}`` with ``w_i = i / (c_cap - i)``: a cumulative product.  A chunk is kept
    up to the first step whose input leaves the piece or whose output would need the cap at 1 (those are done one
    at a time); it ends the audit at the first step that rejects, or at the first step that leaves r unchanged
    (then the next step would find ``g(r) = h`` and stop).  Same recursion as the scalar loop, up to rounding.
    """
    breaks, slopes, pivots, values = pieces
    n_breaks = len(breaks)
    find = bisect.bisect_right
    scale = float(k - 1)
    limit = c_cap / m
    r = tau * c / m
    h = tau * (c_cap - c) / m
    r_prev = r
    i = c - 1
    plain = 1  # the first step is special (h is not yet g of anything); take it one at a time
    chunk = _CHUNK_MIN
    while i >= 0:
        if plain == 0:
            piece = find(breaks, r)
            slope = scale * slopes[piece]
            step = r - r_prev
            if find(breaks, r_prev) != piece or r >= 1.0 or step <= 0.0 or slope <= 0.0:
                plain = 1
                continue
            n = min(chunk, i + 1)
            js = np.arange(i, i - n, -1, dtype=np.float64)
            r_after = r + np.cumsum(step * np.cumprod(slope * js / (c_cap - js)))
            r_before = np.empty(n)
            r_before[0] = r
            r_before[1:] = r_after[:-1]
            h_after = h + slope * (r_before - r_prev)
            upper = breaks[piece] if piece < n_breaks else math.inf
            valid = (r_before <= upper) & (r_after <= 1.0)
            n_ok = n if valid.all() else int(np.argmin(valid))
            if n_ok > 0:
                done = (r_after[:n_ok] + h_after[:n_ok] > limit) | (r_after[:n_ok] == r_before[:n_ok])
                if done.any():
                    j = int(np.argmax(done))
                    return float(r_after[j] + h_after[j]) - limit
                i -= n_ok
                r, h, r_prev = float(r_after[n_ok - 1]), float(h_after[n_ok - 1]), float(r_before[n_ok - 1])
            if n_ok == n:
                chunk = min(4 * chunk, _CHUNK_MAX)
            else:
                chunk = _CHUNK_MIN
                plain = _CHUNK_MIN if n_ok < _CHUNK_MIN else 1
            continue
        piece = find(breaks, r)
        value = slopes[piece] * (r - pivots[piece]) + values[piece]
        gr = scale * value if value > 0.0 else 0.0
        if gr <= h:
            break
        r_prev = r
        r += (i / (c_cap - i)) * (gr - h)
        if r > 1.0:
            r = 1.0
        h = gr
        i -= 1
        if r + h > limit:
            break
        plain -= 1
    return r + h - limit


def _curve_margin(curve: TradeOffCurve, m: int, c_cap: int, c: int, tau: float, k: int) -> float:
    pieces = curve.linear_pieces()
    if pieces is None:
        return _margin(curve.blowup_inverse_scalar(), m, c_cap, c, tau, k)
    return _margin_pieces(pieces, m, c_cap, c, tau, k)


def reject(curve: TradeOffCurve, m: int, r: int, v: int, tau: float, k: int = 2) -> bool:
    """Algorithm 3 of [1]_: is "the mechanism is f-DP" rejected at significance τ after v correct of r guesses?

    Parameters
    ----------
    curve : TradeOffCurve
        The hypothesised trade-off curve f.
    m : int
        Number of canaries, ``m >= 1``.
    r : int
        Number of guesses (the cap c' of [1]_), ``0 <= r <= m``, fixed before the run.
    v : int
        Number of correct guesses (c of [1]_), ``0 <= v <= r``.
    tau : float
        Significance τ in (0, 1).
    k : int, default=2
        Size of the guessing alphabet: 2 for membership; k > 2 for reconstruction among k candidates.

    Returns
    -------
    bool
        True when the curve is rejected.

    Notes
    -----
    Formal guarantee: if the mechanism is f-DP with respect to each canary's bit (or k-ary secret, drawn
    uniformly) and the r guesses are a post-processing of its output with r fixed in advance, then
    ``P[reject(f, m, r, V, τ)] <= τ`` over the canaries' randomness and the mechanism's (Theorem of [1]_ behind
    its Algorithm 3).

    The recursion (with ``g = (k - 1) f̄⁻¹``)::

        ρ = τ v / m ;  h = τ (r - v) / m
        for i = v - 1 down to 0:
            h' = max(h, g(ρ));  ρ = min(1, ρ + i / (r - i) · (h' - h));  h = h'
        reject  ⇔  ρ + h > r / m

    stops early when h no longer changes (nothing changes afterwards) or when ``ρ + h`` already exceeds ``r / m``
    (both only grow).  The cap ``min(1, ·)`` and the early stop follow jax_privacy (``_epsilon_one_run_fdp``);
    PrivacyGuard's ``audit_rh_with_cap`` has neither.  The early stop is exact; the cap can only make rejection
    rarer, and only matters once ρ would exceed 1, where ``ρ + h > r / m`` already holds unless h = 0.
    """
    if not isinstance(curve, TradeOffCurve):
        raise TypeError(f"curve must be a TradeOffCurve, got {curve!r}.")
    m_, r_, v_ = check_counts(m, r, v)
    t = check_real("tau", tau, low=0.0, high=1.0, low_open=True, high_open=True)
    k_ = check_int("k", k, low=2)
    return _curve_margin(curve, m_, r_, v_, t, k_) > 0.0


@dataclass(frozen=True, slots=True)
class FdpAudit:
    """Result of a one-run f-DP audit: the bound and everything needed to recompute it.

    Attributes
    ----------
    epsilon : float
        The lower bound on ε: for the pure family the bound itself; for the Gaussian family the GDP-derived ε at
        ``delta`` (label it as such); for a custom family ``family.to_epsilon(parameter)``.
    parameter : float
        The largest rejected parameter of the family (ε, μ, ...).
    parameter_name : str
        What the parameter is ("epsilon", "mu", ...).
    family : str
        The family's name.
    m, r, v : int
        Canaries, guesses made, correct guesses.
    delta : float
        The δ of the pure family, or the δ at which the Gaussian μ is converted to ε.
    confidence : float
        ``1 - τ``.
    k : int
        Size of the guessing alphabet.
    method : str
        The algorithm and its reference.
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
    k: int = 2
    method: str = METHOD


def epsilon_lower_bound(
    m: int,
    r: int,
    v: int,
    *,
    family: str | CurveFamily,
    delta: float = 0.0,
    confidence: float = 0.95,
    k: int = 2,
) -> FdpAudit:
    """Lower bound on the privacy of a mechanism from v correct guesses out of r, with m canaries, by f-DP auditing.

    .. warning::

       **Use the mechanism's own family.**  ``family="pure"`` for randomized response and other (ε, δ)
       mechanisms; ``"gaussian"`` (or :func:`dpsgd_family`) for Gaussian noise and DP-SGD.  The Gaussian family
       applied to randomized response OVERSHOOTS the true ε (true ε = 1, m = r = 10⁴, v = 7311, δ = 1e-5 gives
       1.646): the result is then not a lower bound on anything the mechanism claims.

    Parameters
    ----------
    m : int
        Number of canaries, each included independently with probability 1/2; ``m >= 1``.
    r : int
        Number of guesses (not abstaining), ``0 <= r <= m``, fixed before the run (or chosen on a separate split,
        or with a Bonferroni-corrected confidence).
    v : int
        Number of correct guesses, ``0 <= v <= r``.
    family : {"pure", "gaussian"} or CurveFamily
        ``"pure"``: (ε, δ)-DP curves at the given δ, indexed by ε.  ``"gaussian"``: μ-GDP curves, indexed by μ and
        reported as the GDP-derived ε at δ (δ > 0 required).  A :class:`CurveFamily` for anything else (e.g.
        :func:`dpsgd_family`).
    delta : float, default=0.0
        δ in [0, 1): the δ of the pure curves, or where μ converts to ε; unused by a custom family.
    confidence : float, default=0.95
        ``1 - τ``, in (0, 1).
    k : int, default=2
        Size of the guessing alphabet (2 for membership).

    Returns
    -------
    FdpAudit
        ``parameter`` = the largest θ in the family whose curve Algorithm 3 rejects (0 when none is), and
        ``epsilon`` = its ε.

    Raises
    ------
    TypeError
        If a count or k is not an integer, or δ / confidence not real numbers.
    ValueError
        If ``m < 1``, ``r > m``, ``v > r``, a count is negative, confidence is outside (0, 1), δ outside [0, 1)
        (or δ = 0 with the Gaussian family), or the family is unknown.

    Warns
    -----
    UserWarning
        When even r correct guesses out of r could not give a positive bound at this confidence, or when the
        search reaches the family's ``max_parameter``.

    Notes
    -----
    Formal guarantee: if the mechanism is f_θ-DP for a member θ of ``family`` (with respect to each canary's
    membership bit), then ``P[result.parameter > θ] <= 1 - confidence``; since ``epsilon`` is increasing in θ,
    also ``P[result.epsilon > ε(θ)] <= 1 - confidence``.  The family must be nested (see :class:`CurveFamily`);
    rejection by Algorithm 3 is then monotone in θ — r_i grows with every h_j (Abel summation, the weights
    ``i / (r - i)`` increasing in i) and h_i with r_{i+1} and f̄⁻¹ — so the rejected set is an interval from 0 and
    the search (doubling bracket, then Brent's method on the margin ``r_0 + h_0 - r/m``) finds its end; the
    returned θ is moved down by the tolerance so that it is itself rejected.

    For pure DP at δ = 0, Steinke et al.'s test (:func:`privgame.analysis.one_run.epsilon_lower_bound`) is exact for
    randomized response, so this bound cannot exceed it (it is 0.2-1.5 % lower on expected counts); it gains when
    Steinke's δ term 2mδ is 1 or more, and with non-pure curves.

    Cost: Algorithm 3 runs O(√m) steps per search step near the bound (early stops); the pure and PLD curves run
    them as vectorised products along linear pieces.  Measured on 2 cores: 1-7 ms for m = r = 10⁴ and 1-20 ms for
    m = r = 10⁶ (pure or Gaussian); a DP-SGD (PLD) family costs one PLD composition per search step (about 1 s).

    References
    ----------
    .. [1] Mahloujifar, Melis, Chaudhuri. Auditing f-Differential Privacy in One Run. arXiv:2410.22235, Alg. 3.
    .. [2] Dong, Roth, Su. Gaussian Differential Privacy. arXiv:1905.02383.

    Examples
    --------
    >>> round(epsilon_lower_bound(10_000, 10_000, 7311, family="gaussian", delta=1e-5).epsilon, 3)
    1.646
    """
    m_, r_, v_ = check_counts(m, r, v)
    d = check_delta(delta)
    conf = check_confidence(confidence)
    k_ = check_int("k", k, low=2)
    fam = resolve_family(family, d)
    theta = _largest_rejected(fam, m_, r_, v_, 1.0 - conf, k_)
    return FdpAudit(
        epsilon=fam.to_epsilon(theta) if theta > 0.0 else 0.0,
        parameter=theta,
        parameter_name=fam.parameter_name,
        family=fam.name,
        m=m_,
        r=r_,
        v=v_,
        delta=d if fam.delta is None else fam.delta,
        confidence=conf,
        k=k_,
    )


def _largest_rejected(fam: CurveFamily, m: int, r: int, v: int, tau: float, k: int) -> float:
    def margin(theta: float, correct: int = v) -> float:
        return _curve_margin(fam.curve(theta), m, r, correct, tau, k)

    if margin(0.0) <= 0.0:
        if margin(0.0, r) <= 0.0:
            warnings.warn(
                f"no positive bound is possible at confidence {1 - tau:g} with r = {r} guesses (m = {m}, "
                f"family {fam.name!r}), even if all were correct; make more guesses.",
                UserWarning,
                stacklevel=3,
            )
        return 0.0
    lo, hi = 0.0, min(1.0, fam.max_parameter)
    while margin(hi) > 0.0:
        if hi >= fam.max_parameter:
            warnings.warn(
                f"the curve at the family's max_parameter = {fam.max_parameter:g} is still rejected; the bound "
                f"is capped there.",
                UserWarning,
                stacklevel=3,
            )
            return fam.max_parameter
        lo, hi = hi, min(2.0 * hi, fam.max_parameter)
    rtol = 4 * float(np.finfo(float).eps)
    root = float(optimize.brentq(margin, lo, hi, xtol=fam.xtol, rtol=rtol))
    return max(lo, root - fam.xtol - rtol * abs(root))


def audit_scores(
    in_scores: ArrayLike,
    out_scores: ArrayLike,
    *,
    family: str | CurveFamily,
    delta: float = 0.0,
    confidence: float = 0.95,
    threshold: ThresholdStrategy | None = None,
    two_sided: bool = False,
    k: int = 2,
) -> AuditResult:
    """f-DP one-run audit from the scores of the included and excluded canaries of ONE run.

    .. warning::
       The family must be the mechanism's own: ``"pure"`` for randomized response and other pure/approximate-DP
       mechanisms, ``"gaussian"`` (or a PLD family) for Gaussian noise and DP-SGD.  The Gaussian family applied to
       randomized response overshoots its true ε (true ε = 1, m = r = 10⁴, δ = 1e-5 → 1.646).

    Parameters
    ----------
    in_scores, out_scores : array-like
        Scores of the included (member) and excluded canaries, higher = member; m = n_in + n_out.
    family : {"pure", "gaussian"} or CurveFamily
    delta : float, default=0.0
    confidence : float, default=0.95
    threshold : ThresholdStrategy, default=Bonferroni(100)
        As for :func:`privgame.analysis.one_run.audit_scores` (one threshold, or ``(t_low, t_high)`` when two-sided).
    two_sided : bool, default=False
    k : int, default=2

    Returns
    -------
    AuditResult
        ``.epsilon`` the bound on ε (GDP-derived at δ for the Gaussian family); ``details``: m, r, v, ``parameter``
        (ε or μ) and ``family``.

    Notes
    -----
    Formal guarantee: if the mechanism's trade-off curve is at least the family's curve at its true parameter,
    ``P[result.epsilon > ε] <= 1 - confidence``; each threshold candidate is tested at the per-test significance of
    the strategy (Algorithm 3 of arXiv:2410.22235, union bound or split).
    """
    ins, outs, conf, d, strategy = prepare_one_run(in_scores, out_scores, confidence, delta, threshold, two_sided)
    fam = resolve_family(family, d)
    counts = guess_counts(two_sided)
    audits: dict[tuple[int, int, int, float], FdpAudit] = {}

    def audit(m: int, r: int, v: int, beta: float) -> FdpAudit:
        key = (m, r, v, beta)
        if key not in audits:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                audits[key] = epsilon_lower_bound(m, r, v, family=fam, delta=d, confidence=1.0 - beta, k=k)
        return audits[key]

    def bounds(
        a: NDArray[np.float64], b: NDArray[np.float64], cands: Sequence[Any], beta: float
    ) -> NDArray[np.float64]:
        # Visit candidates by decreasing accuracy; one that does not even reject the best parameter found so far
        # cannot beat it (rejection is monotone in the parameter), so it gets 0 after a single Algorithm-3 pass.
        r, v = counts(ascending(a), ascending(b), cands)
        size = a.size + b.size
        out = np.zeros(len(cands), dtype=np.float64)
        best = 0.0
        accuracy = np.where(r > 0, v / np.maximum(r, 1), -1.0)
        for i in np.argsort(-accuracy, kind="stable"):
            ri, vi = int(r[i]), int(v[i])
            if ri == 0 or (best > 0.0 and _curve_margin(fam.curve(best), size, ri, vi, beta, k) <= 0.0):
                continue
            result = audit(size, ri, vi, beta)
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
