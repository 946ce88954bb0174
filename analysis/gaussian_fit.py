"""A parametric ESTIMATE of ε, not a confidence bound: a Gaussian fitted to each side's canary scores.

In the manner of "Let's Ask Gauss" (Agrawal, Wei, Singh, Magdon-Ismail, Zikas, arXiv:2606.12733) [1]_: fit
N(μ_in, σ_in²) to the members' scores and N(μ_out, σ_out²) to the non-members', and read ε(δ) off the hockey-stick
divergence of that Gaussian pair.  The result is what ε would be *if the scores were exactly Gaussian*; it carries
no finite-sample guarantee for any other score distribution, and none even asymptotically unless the scores are
asymptotically Gaussian (the paper's setting: white-box DP-SGD, whose canary-aligned signals sum to a Gaussian by a
central limit theorem).  It is labelled :data:`KIND` wherever it is reported, has no verdict on a claim, and the
validity harness reports how often it exceeds the true ε without gating it (docs/estimators.md, "A parametric
estimate: the Gaussian fit").

What follows the paper, from its abstract and published summaries (its code has no licence and was not read):

- the model: one Gaussian per side, present (member) and absent (non-member) canaries, with their own means and
  their own variances (a "pair of one-dimensional Gaussians");
- the readout: ε at δ from the pair's hockey-stick divergence, computed exactly, not through a GDP approximation;
- confidence from intervals on the fitted parameters (SPEC §9), and no finite-sample claim.

What is ours (the paper's method section could not be read):

- the fit: the sample mean and the unbiased (``ddof=1``) standard deviation of each side;
- ε of the pair is the larger of its two directions, ``H_{e^ε}(P‖Q) <= δ`` and ``H_{e^ε}(Q‖P) <= δ`` (DP bounds
  both), each found by a monotone root-find on the closed form of :func:`hockey_stick` (the likelihood-ratio
  region of two Gaussians is a half-line, an interval, or the complement of one: normal CDFs at the quadratic's
  roots);
- the parameter intervals: Student-t for each mean and χ² for each standard deviation, each at level
  ``1 − (1 − confidence)/4`` (Bonferroni over the four), and the estimate at ``confidence`` is the SMALLEST ε of a
  Gaussian pair inside that box (:func:`gaussian_fit`, Notes).  Were the scores exactly Gaussian and independent
  given the membership, the box would hold the true parameters with probability >= ``confidence``, and the
  estimate would then be below the scores' ε with that probability; no such statement holds otherwise;
- degenerate fits: a side with zero variance is a point mass, so the pair's ε is ``inf`` (0 when both sides are
  the same constant); ε above 700 (``e^ε`` near the largest float) is reported as ``inf``.

References
----------
.. [1] A. Agrawal, Y. Wei, J. Singh, M. Magdon-Ismail, V. Zikas. Let's Ask Gauss: Improved One-Run Privacy
   Auditing. arXiv:2606.12733, 2026.
.. [2] B. Balle, Y.-X. Wang. Improving the Gaussian Mechanism for Differential Privacy. ICML 2018,
   arXiv:1805.06530 (the equal-variance case: ``δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)``).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from privgame.analysis._checks import check_confidence, check_real, check_scores

__all__ = ["KIND", "GaussianFit", "gaussian_fit", "hockey_stick", "pair_epsilon"]

KIND = "estimate (parametric, not a confidence bound)"
"""How the Gaussian fit is labelled in every table that shows it."""

MAX_EPSILON = 700.0
"""The largest ε computed (``e^ε`` overflows past 709); a pair whose ε at δ is larger is reported as ``inf``."""

_GRID = 17  # points per edge of the σ box searched before the local refinement


@dataclass(frozen=True, slots=True)
class GaussianFit:
    """The Gaussian fit of member and non-member scores and its ε estimates at δ.

    Attributes
    ----------
    epsilon_estimate : float
        The smallest ε(δ) of a Gaussian pair whose four parameters lie in their intervals at ``confidence``
        (:func:`gaussian_fit`): the paper's kind of figure, an estimate, not a bound.
    epsilon_point : float
        ε(δ) of the fitted pair itself (the plug-in estimate).
    mu_in, sigma_in, mu_out, sigma_out : float
        The fitted means and standard deviations (``ddof=1``).
    mu_in_interval, sigma_in_interval, mu_out_interval, sigma_out_interval : tuple of float
        Their intervals, each at level ``1 − (1 − confidence)/4``.
    n_in, n_out : int
    confidence : float
    delta : float
    """

    kind: ClassVar[str] = KIND
    method: ClassVar[str] = "Gaussian fit (Agrawal et al. 2026, arXiv:2606.12733): " + KIND

    epsilon_estimate: float
    epsilon_point: float
    mu_in: float
    sigma_in: float
    mu_out: float
    sigma_out: float
    mu_in_interval: tuple[float, float]
    sigma_in_interval: tuple[float, float]
    mu_out_interval: tuple[float, float]
    sigma_out_interval: tuple[float, float]
    n_in: int
    n_out: int
    confidence: float
    delta: float


def hockey_stick(epsilon: float, mu_p: float, sigma_p: float, mu_q: float, sigma_q: float) -> float:
    """The hockey-stick divergence ``H_{e^ε}(P‖Q) = sup_S P(S) − e^ε Q(S)`` of P = N(μ_p, σ_p²), Q = N(μ_q, σ_q²).

    Parameters
    ----------
    epsilon : float
        ε >= 0, at most :data:`MAX_EPSILON`.
    mu_p, sigma_p, mu_q, sigma_q : float
        Finite means and positive standard deviations.

    Returns
    -------
    float
        ``P(S) − e^ε Q(S)`` on ``S = {x : log p(x)/q(x) > ε}``.  After the change of variable z = (x − μ_q)/σ_q,
        Q = N(0, 1) and P = N(d, r²) with d = (μ_p − μ_q)/σ_q, r = σ_p/σ_q, and the log-likelihood ratio
        ``−log r − (z − d)²/(2r²) + z²/2`` is the quadratic ``A z² + B z + C'`` with ``A = (1 − 1/r²)/2``,
        ``B = d/r²``: S is a half-line (r = 1), the complement of the interval between its roots (r > 1) or that
        interval (r < 1); P(S) and Q(S) are normal CDFs at the roots.  With r = 1 this is Balle and Wang's
        ``Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)``, μ = |d| [2]_.

    Raises
    ------
    ValueError
        For ε outside [0, MAX_EPSILON], a non-finite mean or a standard deviation that is not positive and finite.
    """
    eps = check_real("epsilon", epsilon, low=0.0, high=MAX_EPSILON)
    d, r = _standardised(mu_p, sigma_p, mu_q, sigma_q)
    return _hockey(eps, d, r)


def pair_epsilon(delta: float, mu_in: float, sigma_in: float, mu_out: float, sigma_out: float) -> float:
    """ε at δ of the pair N(μ_in, σ_in²), N(μ_out, σ_out²): the smallest ε >= 0 whose hockey-stick divergence is at
    most δ in both directions.

    Parameters
    ----------
    delta : float
        δ in (0, 1).
    mu_in, sigma_in, mu_out, sigma_out : float
        Finite means and positive standard deviations.

    Returns
    -------
    float
        ``max(ε(P‖Q), ε(Q‖P))``, each the root of the decreasing ``H_{e^ε} − δ`` (Brent's method, ``xtol`` 1e-12);
        0 when the divergence at ε = 0 (the total variation) is already at most δ; ``inf`` above
        :data:`MAX_EPSILON`.  With σ_in = σ_out = σ this is μ-GDP's ε, μ = |μ_in − μ_out|/σ
        (:func:`privgame.analysis.tradeoff.gdp_epsilon`).

    Raises
    ------
    ValueError
        For δ outside (0, 1) (at δ = 0 two different Gaussians have ε = inf), or parameters as in
        :func:`hockey_stick`.
    """
    d_ = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    forward = _standardised(mu_in, sigma_in, mu_out, sigma_out)
    backward = _standardised(mu_out, sigma_out, mu_in, sigma_in)
    return max(_one_way(d_, *forward), _one_way(d_, *backward))


def gaussian_fit(in_scores: ArrayLike, out_scores: ArrayLike, *, delta: float, confidence: float = 0.95) -> GaussianFit:
    """Fit a Gaussian to each side's scores and estimate ε at δ from the pair (an estimate, not a bound).

    Parameters
    ----------
    in_scores : array-like of shape (n_in,)
        Scores of the member (present) canaries, finite, at least 2.
    out_scores : array-like of shape (n_out,)
        Scores of the non-member (absent) canaries, finite, at least 2.
    delta : float
        δ in (0, 1).
    confidence : float, default=0.95
        In (0, 1): the joint level of the four parameter intervals (each at ``1 − (1 − confidence)/4``).

    Returns
    -------
    GaussianFit
        ``epsilon_point``, ε(δ) of the fitted pair, and ``epsilon_estimate``, the smallest ε(δ) over the box of
        parameter intervals, with the fit and the intervals.

    Raises
    ------
    ValueError
        For non-finite scores, fewer than 2 scores on a side, δ outside (0, 1) or a confidence outside (0, 1).

    Warns
    -----
    UserWarning
        When a side's scores are all equal: its Gaussian is a point mass, and both estimates are ``inf`` (0 when
        both sides are the same constant).

    Notes
    -----
    Guarantee: none.  It is a parametric estimate (:data:`KIND`): exact for Gaussian scores, and biased, in either
    direction, for others (above the true ε on randomized response's 0/1 scores and on Laplace scores: the
    validity harness, docs/estimators.md).

    The minimum over the box.  ε(δ) of a pair depends on its parameters through d = |μ_in − μ_out|/σ_out and
    r = σ_in/σ_out only, and grows with d at fixed r (``test_epsilon_grows_with_the_gap`` checks it on a grid).
    So the means are set to the closest points of their intervals (gap g >= 0).  With g = 0, ε depends on r alone
    and is 0 when the σ intervals overlap, else smallest at the ratio nearest 1.  With g > 0, scaling both σ by
    t > 1 keeps r and lowers d, so the minimum lies on an upper face of the σ box (σ_in or σ_out at its upper
    end): each face is searched on a grid of 17 points and refined by a bounded scalar minimisation around the
    best of them.  ``test_box_minimum_is_a_brute_force_minimum`` compares it with a 4-D grid search.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> fit = gaussian_fit(rng.normal(2.0, 1.0, 20_000), rng.normal(0.0, 1.0, 20_000), delta=1e-5)
    >>> round(fit.epsilon_point, 1), round(fit.epsilon_estimate, 1)  # the truth, 2-GDP at δ = 1e-5: 10.0
    (10.4, 9.7)
    """
    a = check_scores("in_scores", in_scores)
    b = check_scores("out_scores", out_scores)
    for name, arr in (("in_scores", a), ("out_scores", b)):
        if arr.size < 2:
            raise ValueError(
                f"{name} must hold at least 2 scores to fit a Gaussian (a mean and a standard deviation), "
                f"got {arr.size}."
            )
    d_ = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    c = check_confidence(confidence)
    from scipy import stats

    level = 1.0 - (1.0 - c) / 8.0  # the upper quantile of each two-sided interval at 1 − (1 − c)/4
    sides = []
    for arr in (a, b):
        n = arr.size
        mu, sd = float(np.mean(arr)), float(np.std(arr, ddof=1))
        half = float(stats.t.ppf(level, n - 1)) * sd / math.sqrt(n)
        low_chi, high_chi = (float(stats.chi2.ppf(q, n - 1)) for q in (1.0 - level, level))
        sigma_iv = (sd * math.sqrt((n - 1) / high_chi), sd * math.sqrt((n - 1) / low_chi))
        sides.append((mu, sd, (mu - half, mu + half), sigma_iv))
    (mu_in, sd_in, mu_in_iv, s_in_iv), (mu_out, sd_out, mu_out_iv, s_out_iv) = sides
    if sd_in == 0.0 or sd_out == 0.0:
        same = sd_in == sd_out == 0.0 and mu_in == mu_out
        flat = " and ".join(n for n, s in (("in_scores", sd_in), ("out_scores", sd_out)) if s == 0.0)
        warnings.warn(
            f"{flat}: every score is the same, so the fitted Gaussian is a point mass and the Gaussian fit's ε "
            f"estimate is {0 if same else 'inf'}.",
            UserWarning,
            stacklevel=2,
        )
        point = estimate = 0.0 if same else math.inf
    else:
        point = pair_epsilon(d_, mu_in, sd_in, mu_out, sd_out)
        estimate = min(point, _box_minimum(d_, mu_in_iv, s_in_iv, mu_out_iv, s_out_iv))
    return GaussianFit(
        epsilon_estimate=estimate,
        epsilon_point=point,
        mu_in=mu_in,
        sigma_in=sd_in,
        mu_out=mu_out,
        sigma_out=sd_out,
        mu_in_interval=mu_in_iv,
        sigma_in_interval=s_in_iv,
        mu_out_interval=mu_out_iv,
        sigma_out_interval=s_out_iv,
        n_in=int(a.size),
        n_out=int(b.size),
        confidence=c,
        delta=d_,
    )


def _standardised(mu_p: float, sigma_p: float, mu_q: float, sigma_q: float) -> tuple[float, float]:
    """(|d|, r) of P against Q = N(0, 1) after z = (x − μ_q)/σ_q (the sign of d is a reflection: no change)."""
    for name, value in (("mu_p", mu_p), ("mu_q", mu_q)):
        check_real(name, value)
    for name, value in (("sigma_p", sigma_p), ("sigma_q", sigma_q)):
        check_real(name, value, low=0.0, low_open=True)
    return abs(mu_p - mu_q) / sigma_q, sigma_p / sigma_q


def _upper(x: float) -> float:
    from scipy import special

    return float(special.ndtr(-x))


def _lower(x: float) -> float:
    from scipy import special

    return float(special.ndtr(x))


def _between(low: float, high: float) -> float:
    """P(low < Z < high) for Z ~ N(0, 1), from the tail that keeps its digits."""
    if low > 0.0:
        return max(_upper(low) - _upper(high), 0.0)
    return max(_lower(high) - _lower(low), 0.0)


def _hockey(eps: float, d: float, r: float) -> float:
    """H_{e^ε}(N(d, r²) ‖ N(0, 1)), d >= 0, r > 0 (see :func:`hockey_stick`)."""
    gamma = math.exp(eps)
    a = 0.5 * (1.0 - 1.0 / (r * r))
    b = d / (r * r)
    c = -math.log(r) - d * d / (2.0 * r * r) - eps
    if a == 0.0:  # a half-line, z > −c/b (b > 0), or nothing (d = 0: the same distribution)
        if b == 0.0:
            return 0.0
        z0 = -c / b
        return max(_upper(z0 - d) - gamma * _upper(z0), 0.0)
    disc = b * b - 4.0 * a * c
    if disc <= 0.0:  # the quadratic has the sign of a everywhere: S is everything (a > 0) or nothing
        return max(1.0 - gamma, 0.0) if a > 0.0 else 0.0
    q = -0.5 * (b + math.copysign(math.sqrt(disc), b))  # the root formula without cancellation
    z1, z2 = sorted((q / a, c / q))
    if a > 0.0:  # S = (−∞, z1) ∪ (z2, ∞)
        p_s = _lower((z1 - d) / r) + _upper((z2 - d) / r)
        q_s = _lower(z1) + _upper(z2)
    else:  # S = (z1, z2)
        p_s = _between((z1 - d) / r, (z2 - d) / r)
        q_s = _between(z1, z2)
    return max(p_s - gamma * q_s, 0.0)


def _one_way(delta: float, d: float, r: float) -> float:
    """The smallest ε >= 0 with H_{e^ε}(N(d, r²) ‖ N(0, 1)) <= δ (H decreases in ε)."""
    if _hockey(0.0, d, r) <= delta:
        return 0.0
    high = 1.0
    while _hockey(high, d, r) > delta:
        if high >= MAX_EPSILON:
            return math.inf
        high = min(2.0 * high, MAX_EPSILON)
    from scipy import optimize

    return float(optimize.brentq(lambda e: _hockey(e, d, r) - delta, 0.0, high, xtol=1e-12, rtol=1e-12))


def _box_minimum(
    delta: float,
    mu_in_iv: tuple[float, float],
    s_in_iv: tuple[float, float],
    mu_out_iv: tuple[float, float],
    s_out_iv: tuple[float, float],
) -> float:
    """The smallest ε(δ) of a Gaussian pair with parameters in the box (see :func:`gaussian_fit`, Notes)."""
    gap = max(0.0, mu_in_iv[0] - mu_out_iv[1], mu_out_iv[0] - mu_in_iv[1])
    (in_low, in_high), (out_low, out_high) = s_in_iv, s_out_iv
    if gap == 0.0:  # ε depends on σ_in/σ_out alone: 0 where the intervals overlap, else the ratio nearest 1
        if in_high < out_low:
            return pair_epsilon(delta, 0.0, in_high, 0.0, out_low)
        if out_high < in_low:
            return pair_epsilon(delta, 0.0, in_low, 0.0, out_high)
        return 0.0
    from scipy import optimize

    best = math.inf
    faces = (
        (lambda s: pair_epsilon(delta, gap, in_high, 0.0, s), out_low, out_high),  # σ_in at its upper end
        (lambda s: pair_epsilon(delta, gap, s, 0.0, out_high), in_low, in_high),  # σ_out at its upper end
    )
    for f, low, high in faces:
        grid = np.linspace(low, high, _GRID)
        values = [f(float(s)) for s in grid]
        k = int(np.argmin(values))
        best = min(best, values[k])
        lo, hi = float(grid[max(k - 1, 0)]), float(grid[min(k + 1, _GRID - 1)])
        if hi > lo and math.isfinite(values[k]):
            found = optimize.minimize_scalar(f, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10 * hi})
            best = min(best, float(found.fun))
    return best
