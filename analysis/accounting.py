"""Analytic privacy guarantees, computed by ``dp_accounting`` (never by an accountant of our own).

A mechanism states its guarantee as a :class:`PrivacyClaim`: the ``dp_accounting`` ``DpEvent`` that describes
it, the neighbouring relation under which it holds, and the accountant to use.  ``claim.epsilon(delta)`` gives
the analytic ε at the experiment's δ.

References
----------
.. [1] Google differential privacy team. dp_accounting (PLD and RDP accountants).
   https://github.com/google/differential-privacy/tree/main/python/dp_accounting
.. [2] B. Balle, Y.-X. Wang. Improving the Gaussian Mechanism for Differential Privacy. ICML 2018,
   arXiv:1805.06530 (the exact Gaussian ε used by ``dp_accounting.get_epsilon_gaussian``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import dp_accounting
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant
from scipy import optimize, special

from privgame.analysis._checks import check_delta, check_int, check_real

if TYPE_CHECKING:
    from privgame.core.cache import ArtefactCache

__all__ = [
    "NeighbouringRelation",
    "PrivacyClaim",
    "balle_wang_epsilon",
    "dpsgd_claim",
    "dpsgd_epsilon",
    "dpsgd_noise_multiplier",
    "epsilon_for_event",
    "gaussian_claim",
    "gaussian_epsilon",
    "gaussian_noise_for_epsilon",
    "pure_composition_claim",
    "pure_composition_epsilon",
    "pure_event",
    "randomized_response_claim",
    "randomized_response_epsilon",
    "sampled_probability",
    "zcdp_claim",
    "zcdp_delta",
    "zcdp_rho",
]

NeighbouringRelation = dp_accounting.NeighboringRelation
Accountant = Literal["pld", "rdp"]


def epsilon_for_event(
    event: dp_accounting.DpEvent,
    delta: float,
    *,
    neighbouring: dp_accounting.NeighboringRelation = NeighbouringRelation.ADD_OR_REMOVE_ONE,
    accountant: Accountant = "pld",
    value_discretization_interval: float = 1e-4,
) -> float:
    """The ε at ``delta`` of a ``dp_accounting`` event.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        What the mechanism does.
    delta : float
        Target δ in [0, 1).
    neighbouring : dp_accounting.NeighboringRelation, default=ADD_OR_REMOVE_ONE
        The neighbouring relation of the guarantee.
    accountant : {"pld", "rdp"}, default="pld"
        PLD is tight up to its (pessimistic) discretisation; RDP is faster and looser.
    value_discretization_interval : float, default=1e-4
        Discretisation of the PLD accountant; the reported ε is pessimistic by at most about this much.

    Returns
    -------
    float
        ε (``inf`` where no finite ε holds at this δ, e.g. the Gaussian mechanism at δ = 0).

    Raises
    ------
    ValueError
        For a bad argument, an event the accountant does not support, a Gaussian event whose noise is so small
        that its ε is beyond the largest float (σ below about 5e-155), or an event whose noise is too small for
        the accountant to represent (the PLD grid of DP-SGD at σ = 1e-3 would take 38 GiB).

    Notes
    -----
    A single Gaussian event is evaluated by ``dp_accounting.get_epsilon_gaussian``, which is exact [2]_; where
    it fails to converge, by :func:`balle_wang_epsilon`, the same closed form solved in a well-conditioned
    variable.
    """
    d = check_delta(delta)
    if accountant not in ("pld", "rdp"):
        raise ValueError(f"accountant must be one of 'pld', 'rdp', got {accountant!r}.")
    check_real("value_discretization_interval", value_discretization_interval, low=0.0, low_open=True)
    if isinstance(event, dp_accounting.GaussianDpEvent) and neighbouring in (
        NeighbouringRelation.ADD_OR_REMOVE_ONE,
        NeighbouringRelation.REPLACE_SPECIAL,
    ):
        sigma = float(event.noise_multiplier)
        try:
            with warnings.catch_warnings():  # overflows on the way to a failure handled below
                warnings.simplefilter("ignore", RuntimeWarning)
                eps = float(dp_accounting.get_epsilon_gaussian(sigma, d))
        except (RuntimeError, ArithmeticError, ValueError):  # no convergence for tiny σ (e.g. 1e-300)
            eps = math.nan
        if math.isnan(eps) or (math.isinf(eps) and 0 < sigma < math.inf and d > 0):
            eps = balle_wang_epsilon(sigma, d)
        return eps
    if pure_event(event):
        # randomized response (and a composition of it) stands for pure ε-DP steps, stated under the relation the
        # mechanism claims: the dominating pair is the same under every relation, and dp_accounting's PLD knows
        # randomized response only as replace-one
        neighbouring = NeighbouringRelation.REPLACE_ONE
    acct: dp_accounting.PrivacyAccountant
    if accountant == "pld":
        acct = pld_privacy_accountant.PLDAccountant(
            neighbouring, value_discretization_interval=value_discretization_interval
        )
    else:
        acct = rdp_privacy_accountant.RdpAccountant(neighboring_relation=neighbouring)
    if not acct.supports(event):
        raise ValueError(f"the {accountant} accountant of dp_accounting does not support {event!r}.")
    if (
        accountant == "rdp"
        and neighbouring == NeighbouringRelation.REPLACE_ONE
        and not isinstance(event, dp_accounting.RandomizedResponseDpEvent | dp_accounting.ZCDpEvent)
    ):
        # dp_accounting's RDP accountant ignores REPLACE_ONE for Gaussian-based events (it keeps sensitivity 1
        # where replacing a record moves the sum by 2), which would understate ε.
        raise ValueError(
            "accountant 'rdp' cannot account REPLACE_ONE for this event (dp_accounting's RDP accountant would "
            "understate ε); use accountant='pld'."
        )
    try:
        acct.compose(event)
        return float(acct.get_epsilon(d))
    except (OverflowError, MemoryError) as exc:  # σ = 1e-3 (a PLD grid of 5e9 points, 38 GiB), or T = 1e9 steps
        raise ValueError(
            f"the {accountant} accountant of dp_accounting cannot account {event!r}: its privacy-loss distribution "
            "is too large to compute, the noise being too small or the compositions too many "
            f"({type(exc).__name__}: {exc})."
        ) from None


@dataclass(frozen=True, slots=True)
class PrivacyClaim:
    """A mechanism's analytic privacy guarantee.

    Attributes
    ----------
    event : dp_accounting.DpEvent
        The ``dp_accounting`` description of the mechanism.
    neighbouring : dp_accounting.NeighboringRelation
        The neighbouring relation under which the guarantee holds.
    accountant : {"pld", "rdp"}, default="pld"
        The accountant that turns the event into ε.
    value_discretization_interval : float, default=1e-4
        PLD discretisation (pessimistic by about this much).
    """

    event: dp_accounting.DpEvent
    neighbouring: dp_accounting.NeighboringRelation
    accountant: Accountant = "pld"
    value_discretization_interval: float = 1e-4

    def epsilon(self, delta: float) -> float:
        """The analytic ε at ``delta``."""
        return epsilon_for_event(
            self.event,
            delta,
            neighbouring=self.neighbouring,
            accountant=self.accountant,
            value_discretization_interval=self.value_discretization_interval,
        )


def randomized_response_claim(epsilon: float) -> PrivacyClaim:
    """The claim of binary randomized response that reports the truth with probability e^ε / (1 + e^ε).

    ``RandomizedResponseDpEvent(noise_parameter = 2 / (1 + e^ε), num_buckets = 2)`` under REPLACE_ONE (replacing the
    bit), accounted by PLD at discretisation 1e-9; ε ≈ 0 is a no-op event and ε = inf a non-private one.
    """
    eps = check_real("epsilon", epsilon, low=0.0, allow_inf=True)
    noise = 2.0 * float(special.expit(-eps))
    event: dp_accounting.DpEvent
    if noise >= 1.0:  # the output ignores the input (dp_accounting wants noise < 1)
        event = dp_accounting.NoOpDpEvent()
    elif noise <= 0.0:  # ε = inf: the truth is reported
        event = dp_accounting.NonPrivateDpEvent()
    else:
        event = dp_accounting.RandomizedResponseDpEvent(noise_parameter=noise, num_buckets=2)
    return PrivacyClaim(event=event, neighbouring=NeighbouringRelation.REPLACE_ONE, value_discretization_interval=1e-9)


def randomized_response_epsilon(epsilon: float, delta: float = 0.0) -> float:
    """ε at ``delta`` of binary randomized response with parameter ``epsilon`` (= ``epsilon`` at δ = 0)."""
    return randomized_response_claim(epsilon).epsilon(delta)


def gaussian_claim(sigma: float) -> PrivacyClaim:
    """The claim of the Gaussian mechanism with sensitivity 1 and noise σ (μ-GDP with μ = 1/σ), add/remove."""
    s = check_real("sigma", sigma, low=0.0, low_open=True)
    return PrivacyClaim(
        event=dp_accounting.GaussianDpEvent(noise_multiplier=s), neighbouring=NeighbouringRelation.ADD_OR_REMOVE_ONE
    )


def balle_wang_epsilon(sigma: float, delta: float) -> float:
    """Exact ε at ``delta`` of the Gaussian mechanism with sensitivity 1 and noise σ, for any σ > 0 [2]_.

    The analytic Gaussian mechanism of Balle & Wang (2018, Theorem 8): with μ = 1/σ, ε solves
    δ = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ).  Solved for a = μ/2 − ε/μ, using
    e^ε Φ(−μ/2 − ε/μ) = ½ e^(−a²/2) erfcx((μ − a)/√2), the equation reads
    Φ(a) − ½ e^(−a²/2) erfcx((μ − a)/√2) = δ, increasing in a, whose root lies in [Φ⁻¹(δ) − 1, min(μ/2, 40)]
    for every σ: nothing overflows or cancels where ``dp_accounting.get_epsilon_gaussian`` (which works in ε)
    stops converging.  Then ε = μ (μ/2 − a).

    Parameters
    ----------
    sigma : float
        σ > 0.
    delta : float
        δ in (0, 1); δ = 0 gives ``inf``.

    Returns
    -------
    float
        ε ≥ 0 (0 when the mechanism is (0, δ)-DP).

    Raises
    ------
    ValueError
        If σ is so small that ε exceeds the largest float (σ below about 5e-155): it cannot be accounted.

    Examples
    --------
    >>> round(balle_wang_epsilon(1.0, 1e-5), 6) == round(gaussian_epsilon(1.0, 1e-5), 6)
    True
    """
    s = check_real("sigma", sigma, low=0.0, low_open=True, allow_inf=True)
    d = check_delta(delta)
    if d == 0.0:
        return math.inf
    if math.isinf(s):
        return 0.0
    mu = 1.0 / s
    if math.isinf(mu):
        raise ValueError(f"sigma must be at least about 5e-155 to account (its ε at delta={d} overflows), got {s!r}.")

    def gap(a: float) -> float:
        return float(special.ndtr(a) - 0.5 * math.exp(-0.5 * a * a) * special.erfcx((mu - a) / math.sqrt(2.0))) - d

    top = min(mu / 2.0, 40.0)
    if gap(top) <= 0.0:  # δ covers even ε = 0 (the largest a)
        return 0.0
    bottom = float(special.ndtri(d)) - 1.0  # gap < 0 here: Φ(a) < δ and the second term is positive
    if bottom >= top:
        return 0.0
    a = float(optimize.brentq(gap, bottom, top, xtol=1e-15, rtol=4 * math.ulp(1.0), maxiter=500))
    eps = mu * (mu / 2.0 - a)
    if not math.isfinite(eps):
        digits = math.log10(mu) * 2.0 - math.log10(2.0)
        raise ValueError(
            f"sigma = {s!r} is too small to account: its ε at delta = {d} is about 1e{digits:.0f}, beyond the "
            "largest float (about 1.8e308); use sigma >= 1e-154."
        )
    return max(eps, 0.0)


def gaussian_epsilon(sigma: float, delta: float) -> float:
    """Exact ε at ``delta`` of the Gaussian mechanism with sensitivity 1 and noise σ (Balle & Wang 2018)."""
    return gaussian_claim(sigma).epsilon(delta)


_gaussian_calibrations: dict[tuple[float, float], float] = {}
_GAUSSIAN_METHOD = "Balle-Wang inverted by Brent, xtol 1e-12, stepped up to the claim's own epsilon (v1)"
"""Part of every cached Gaussian calibration's key: a change of the search must not reuse old answers."""


def gaussian_noise_for_epsilon(
    target_epsilon: float, delta: float, *, cache: ArtefactCache | Literal["default"] | None = "default"
) -> float:
    """The smallest noise σ at which the Gaussian mechanism with sensitivity 1 is (target ε, δ)-DP: the analytic
    Gaussian mechanism of Balle and Wang [2]_ (their exact δ(ε) of Theorem 8, :func:`balle_wang_epsilon`, inverted
    in σ), rather than the classical σ = √(2 ln(1.25/δ))/ε, which is loose and holds only for ε < 1.

    Brent's method finds σ to 1e-12; σ is then raised by relative steps of 1e-12 (doubling) until the claim's
    own ε (:func:`gaussian_epsilon`, ``dp_accounting``'s) is at most the target, so the mechanism never claims more
    than asked.  Calibrated once per (ε, δ) in a process and, by default, kept in the artefact cache on disk; a
    damaged entry, or one that is not this calibration (too little noise, or more than the smallest σ by over a
    relative 1e-9), is recomputed.

    Parameters
    ----------
    target_epsilon : float
        ε > 0.
    delta : float
        δ in (0, 1) (at δ = 0 no finite σ gives a finite ε).
    cache : ArtefactCache, "default" or None, default="default"
        As in :func:`dpsgd_noise_multiplier`.

    Returns
    -------
    float
        σ with ``gaussian_epsilon(σ, delta) <= target_epsilon``.

    Examples
    --------
    >>> sigma = gaussian_noise_for_epsilon(1.0, 1e-5, cache=None)
    >>> round(sigma, 4), gaussian_epsilon(sigma, 1e-5) <= 1.0
    (3.7306, True)
    """
    eps = check_real("target_epsilon", target_epsilon, low=0.0, low_open=True)
    if isinstance(delta, int | float) and not isinstance(delta, bool) and delta == 0:
        raise ValueError(
            "delta must be in (0, 1) to calibrate the Gaussian mechanism's noise for an epsilon (at delta = 0 no "
            "noise gives a finite epsilon), got 0."
        )
    d = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    memo = (eps, d)
    if memo in _gaussian_calibrations:
        return _gaussian_calibrations[memo]
    store, key = _gaussian_cache(cache, memo)
    hit = _read_sigma(store, key)
    # taken only if it is the calibration: its claim within the target, and 1e-9 less noise's beyond it (an entry
    # from a stranger claims neither more than asked nor, with more noise, silently less)
    if hit is not None and gaussian_epsilon(hit, d) <= eps < gaussian_epsilon(hit * (1.0 - 1e-9), d):
        _gaussian_calibrations[memo] = hit
        return hit
    sigma = _smallest_sigma(lambda s: balle_wang_epsilon(s, d), eps, guess=1.0, xtol=1e-12)
    step = 1e-12
    while gaussian_epsilon(sigma, d) > eps:  # the claim's own ε, not the inversion's, decides
        sigma *= 1.0 + step
        step *= 2.0
    _gaussian_calibrations[memo] = sigma
    _write_sigma(store, key, {"sigma": sigma, "target_epsilon": eps, "delta": d})
    return sigma


def _read_sigma(store: ArtefactCache | None, key: str | None) -> float | None:
    """A calibrated σ the cache holds under ``key`` (a positive finite float), or None (none, or damaged)."""
    if store is None or key is None:
        return None
    hit = store.get_json(key)
    sigma = hit.get("sigma") if isinstance(hit, dict) else None
    return sigma if isinstance(sigma, float) and math.isfinite(sigma) and sigma > 0 else None


def _write_sigma(store: ArtefactCache | None, key: str | None, value: dict[str, Any]) -> None:
    """Keep a calibration in the cache; a full or read-only disk must not fail it (the cache saves time only)."""
    if store is None or key is None:
        return
    try:
        store.put_json(key, value)
    except OSError:
        pass


def _gaussian_cache(
    cache: ArtefactCache | Literal["default"] | None, memo: tuple[float, float]
) -> tuple[ArtefactCache | None, str | None]:
    """The cache to use for a Gaussian calibration and its key in it (``(None, None)``: none)."""
    return _calibration_entry(
        cache, artefact="gaussian-noise", target_epsilon=memo[0], delta=memo[1], method=_GAUSSIAN_METHOD
    )


def dpsgd_claim(
    noise_multiplier: float, sampling_rate: float, steps: int, *, accountant: Accountant = "pld"
) -> PrivacyClaim:
    """The claim of DP-SGD: T self-composed Poisson-subsampled Gaussian steps (Abadi et al. 2016), add/remove."""
    sigma = check_real("noise_multiplier", noise_multiplier, low=0.0, low_open=True)
    q = check_real("sampling_rate", sampling_rate, low=0.0, high=1.0, low_open=True)
    t = check_int("steps", steps, low=1)
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), t
    )
    return PrivacyClaim(event=event, neighbouring=NeighbouringRelation.ADD_OR_REMOVE_ONE, accountant=accountant)


def dpsgd_epsilon(
    noise_multiplier: float, sampling_rate: float, steps: int, delta: float, accountant: Accountant = "pld"
) -> float:
    """ε at ``delta`` of DP-SGD with Poisson sampling rate q, noise multiplier σ and T steps.

    Examples
    --------
    The reference of SPEC §6 (q = 256/60000, σ = 1.1, T = 14062, δ = 1e-5): PLD ≈ 2.38, RDP ≈ 2.60.

    >>> round(dpsgd_epsilon(1.1, 256 / 60000, 14062, 1e-5), 2)
    2.38
    >>> round(dpsgd_epsilon(1.1, 256 / 60000, 14062, 1e-5, accountant="rdp"), 2)
    2.6
    """
    return dpsgd_claim(noise_multiplier, sampling_rate, steps, accountant=accountant).epsilon(delta)


def pure_event(event: dp_accounting.DpEvent) -> bool:
    """Whether a ``dp_accounting`` event is pure ε-DP: randomized response, a no-op, or compositions of them."""
    if isinstance(event, dp_accounting.RandomizedResponseDpEvent | dp_accounting.NoOpDpEvent):
        return True
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return all(pure_event(e) for e in event.events)
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return pure_event(event.event)
    return False


def pure_composition_claim(
    epsilons: Sequence[float], neighbouring: dp_accounting.NeighboringRelation = NeighbouringRelation.REPLACE_ONE
) -> PrivacyClaim:
    """The claim of a sequence of pure ε_i-DP steps (e.g. PrivBayes's exponential mechanisms and Laplace counts),
    under ``neighbouring`` (replace-one by default; an external generator states its own).

    Binary randomized response at ε_i is the dominating pair of every ε_i-DP mechanism (its trade-off curve is the
    pure (ε_i, 0) curve), so the composition of the ε_i-RR events, accounted by PLD, bounds the composition of any
    ε_i-DP steps: Σ ε_i at δ = 0 (basic composition; Zhang et al., PrivBayes, TODS 2017), and the optimal
    composition of Kairouz, Oh and Viswanath (ICML 2015) at δ > 0.
    """
    eps = [check_real("epsilon", e, low=0.0, low_open=True) for e in epsilons]
    if not eps:
        raise ValueError("epsilons must hold at least one ε, got an empty sequence.")
    event = dp_accounting.ComposedDpEvent([randomized_response_claim(e).event for e in eps])
    return PrivacyClaim(event=event, neighbouring=neighbouring, value_discretization_interval=1e-9)


def pure_composition_epsilon(epsilons: Sequence[float], delta: float = 0.0) -> float:
    """ε at ``delta`` of the composition of pure ε_i-DP steps (Σ ε_i at δ = 0), through ``dp_accounting``."""
    return pure_composition_claim(epsilons).epsilon(delta)


def zcdp_claim(rho: float, neighbouring: dp_accounting.NeighboringRelation) -> PrivacyClaim:
    """The claim of a ρ-zCDP mechanism under ``neighbouring`` (Bun and Steinke 2016): ``ZCDpEvent(rho)`` through
    dp_accounting's RDP accountant, which turns (α, αρ)-RDP into (ε, δ).

    The stated ρ already holds under the stated relation (the generator's authors set its noise for it), so the
    accountant's handling of neighbouring relations does not enter.
    """
    r = check_real("rho", rho, low=0.0, low_open=True)
    return PrivacyClaim(event=dp_accounting.ZCDpEvent(rho=r), neighbouring=neighbouring, accountant="rdp")


def _zcdp_log_delta(rho: float, epsilon: float) -> float:
    """log of :func:`zcdp_delta` before its cap at 1 (finite where δ itself underflows)."""

    def log_delta(alpha: float) -> float:
        return (alpha - 1.0) * (alpha * rho - epsilon) + alpha * math.log1p(-1.0 / alpha) - math.log(alpha - 1.0)

    # the exponent is convex in α, its minimum near (ε + 1) / (2ρ): searched on a bracket that holds it
    high = max(4.0, 2.0 * (epsilon + 1.0) / (2.0 * rho) + 2.0)
    found = optimize.minimize_scalar(log_delta, bounds=(1.0 + 1e-9, high), method="bounded", options={"xatol": 1e-10})
    return min(float(found.fun), log_delta(high))


def zcdp_delta(rho: float, epsilon: float) -> float:
    """The δ at which ρ-zCDP gives ε-DP, by the conversion of Canonne, Kamath and Steinke [3]_ (Prop. 12, the one
    mbi's ``cdp_delta`` and the MST/AIM papers use): ``inf over α > 1 of exp((α − 1)(αρ − ε)) (1 − 1/α)^α / (α − 1)``.

    References
    ----------
    .. [3] C. Canonne, G. Kamath, T. Steinke. The Discrete Gaussian for Differential Privacy. NeurIPS 2020,
       arXiv:2004.00010.
    """
    r = check_real("rho", rho, low=0.0, low_open=True)
    eps = check_real("epsilon", epsilon, low=0.0)
    return float(min(1.0, math.exp(_zcdp_log_delta(r, eps))))


def zcdp_rho(epsilon: float, delta: float) -> float:
    """The largest ρ whose ρ-zCDP gives (ε, δ)-DP by :func:`zcdp_delta`'s conversion: what MST and AIM (mbi)
    spend when asked for (ε, δ)."""
    eps = check_real("epsilon", epsilon, low=0.0, low_open=True)
    log_d = math.log(check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True))

    def excess(r: float) -> float:
        return _zcdp_log_delta(r, eps) - log_d

    high = eps + 1.0
    while excess(high) < 0.0:  # a large δ: the bracket grows until ρ-zCDP no longer gives (ε, δ)
        high *= 2.0
        if high > 1e12:
            raise ValueError(f"no finite ρ is the largest whose zCDP gives ({eps}, {math.exp(log_d)})-DP.")
    rho = float(optimize.brentq(excess, 1e-12, high, xtol=1e-15, rtol=1e-12))
    for _ in range(64):  # the root's side that keeps δ: the ρ returned must give (ε, δ)
        if excess(rho) <= 0.0:
            break
        rho = math.nextafter(rho, 0.0) if rho < 1e-6 else rho * (1.0 - 1e-12)
    return rho


_CALIBRATION_METHOD = "coarse PLD 1e-3, then verified at the claim's PLD 1e-4 (v2)"
"""Part of every cached calibration's key: a change of the search below must not reuse old answers."""
_COARSE_INTERVAL = 1e-3
_calibrations: dict[tuple[float, float, float, int, str, float], float] = {}
"""σ calibrations of this process (the disk cache serves other processes and later runs)."""


def sampled_probability(sampling_rate: float, steps: int) -> float:
    """1 − (1 − q)^T: the chance that Poisson sampling at rate q picks a given record in at least one of T steps.

    At δ at least this, DP-SGD is (0, δ)-DP whatever its noise (the total variation between neighbouring runs
    is at most this), so no noise multiplier is needed for any ε.
    """
    q = check_real("sampling_rate", sampling_rate, low=0.0, high=1.0, low_open=True)
    t = check_int("steps", steps, low=1)
    return 1.0 if q == 1.0 else -math.expm1(t * math.log1p(-q))


def _smallest_sigma(
    epsilon_of: Callable[[float], float], target: float, *, guess: float, xtol: float, step: float = 1.0
) -> float:
    """The smallest σ with ``epsilon_of(σ) <= target``, within ``xtol`` above it (ε decreasing in σ).

    Brackets the root from ``guess`` by steps whose ratio starts at 1 + ``step`` and doubles its excess up to 2
    (so a good guess costs few evaluations near it, a bad one still a logarithmic number), then Brent's method.
    """
    seen: dict[float, float] = {}

    def eps(sigma: float) -> float:
        if sigma not in seen:
            seen[sigma] = epsilon_of(sigma)
        return seen[sigma]

    ratio = 1.0 + step
    lo = hi = guess
    if eps(guess) > target:  # too little noise: go up (ε → 0 as σ → ∞, so this ends)
        for _ in range(200):
            lo, hi = hi, hi * ratio
            ratio = min(2.0, 1.0 + 2.0 * (ratio - 1.0))
            if eps(hi) <= target:
                break
        else:  # pragma: no cover - ε(σ) → 0 as σ → ∞ for every event calibrated here
            raise ValueError(f"no noise multiplier up to {hi:.3g} reaches target_epsilon {target}.")
    else:  # enough noise: go down until there is too little (reachable targets: ε → ∞ as σ → 0)
        for _ in range(200):
            hi, lo = lo, lo / ratio
            ratio = min(2.0, 1.0 + 2.0 * (ratio - 1.0))
            if eps(lo) > target:
                break
        else:
            raise ValueError(
                f"target_epsilon {target} is met by every noise multiplier down to {lo:.3g}; nothing to calibrate."
            )
    root = float(optimize.brentq(lambda s: eps(s) - target, lo, hi, xtol=xtol))
    while root < hi and eps(root) > target:  # brentq ends within xtol of the root, on either side
        root = min(hi, root + xtol)
    return root


def dpsgd_noise_multiplier(
    target_epsilon: float,
    delta: float,
    sampling_rate: float,
    steps: int,
    *,
    accountant: Accountant = "pld",
    tol: float = 1e-4,
    cache: ArtefactCache | Literal["default"] | None = "default",
) -> float:
    """The smallest noise multiplier σ for which DP-SGD with (q, T) is (target ε, δ)-DP, by ``dp_accounting``.

    Calibrated once per (ε, δ, q, T, accountant, tol): the answer is kept for the process and, by default, in
    the artefact cache on disk (:func:`privgame.core.cache.default_cache_dir`), so a config calibrates σ the first
    time it runs only.  A damaged cache entry is recomputed.

    The search: for q = 1, T steps are the Gaussian mechanism with noise σ/√T, inverted exactly
    (:func:`balle_wang_epsilon`); otherwise the PLD accountant at a coarse discretisation (1e-3, about ten times
    faster) finds σ by Brent's method from a bracket searched from σ = 1 in both directions (so any target
    works: ε → ∞ as σ → 0 and ε → 0 as σ → ∞).  The answer is then checked at the accuracy of the claim
    (:func:`dpsgd_epsilon`, PLD at 1e-4, or RDP): ε(σ) ≤ target and ε(σ − tol) > target; when the check fails,
    Brent's method runs on the claim's ε itself from that estimate.

    Parameters
    ----------
    target_epsilon : float
        ε > 0.
    delta : float
        δ in (0, 1), below :func:`sampled_probability` (q, T).
    sampling_rate : float
        q in (0, 1].
    steps : int
        T ≥ 1.
    accountant : {"pld", "rdp"}, default="pld"
    tol : float, default=1e-4
        The returned σ is at most ``tol`` above the smallest valid σ, never below it.
    cache : ArtefactCache, "default" or None, default="default"
        Where calibrations are kept across processes: an :class:`privgame.core.cache.ArtefactCache`, the default
        cache directory (skipped if it cannot be created), or ``None`` (this process only).

    Returns
    -------
    float
        σ with ``dpsgd_epsilon(σ, q, T, δ, accountant) <= target_epsilon``.

    Raises
    ------
    ValueError
        For a non-positive target ε, δ outside (0, 1), q outside (0, 1], T < 1, an unknown accountant, or a δ at
        least 1 − (1 − q)^T, where every σ gives ε = 0 (there is no smallest σ to find).
    """
    eps = check_real("target_epsilon", target_epsilon, low=0.0, low_open=True)
    d = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    q = check_real("sampling_rate", sampling_rate, low=0.0, high=1.0, low_open=True)
    t = check_int("steps", steps, low=1)
    if accountant not in ("pld", "rdp"):
        raise ValueError(f"accountant must be one of 'pld', 'rdp', got {accountant!r}.")
    check_real("tol", tol, low=0.0, low_open=True)
    sampled = sampled_probability(q, t)
    if d >= sampled:
        raise ValueError(
            f"delta must be below 1 - (1 - q)^T = {sampled:.6g} (the chance a record is sampled at all) to calibrate "
            f"a noise multiplier, got {d}: at this delta DP-SGD is (0, delta)-DP for every noise multiplier."
        )
    memo = (eps, d, q, t, accountant, float(tol))
    if memo in _calibrations:
        return _calibrations[memo]
    store, key = _calibration_cache(cache, memo)
    hit = _read_sigma(store, key)
    if hit is not None:
        _calibrations[memo] = hit
        return hit
    sigma = _calibrate_dpsgd(eps, d, q, t, accountant, tol)
    _calibrations[memo] = sigma
    _write_sigma(store, key, {"sigma": sigma, "target_epsilon": eps, "delta": d, "sampling_rate": q, "steps": t})
    return sigma


def _calibration_cache(
    cache: ArtefactCache | Literal["default"] | None, memo: tuple[float, float, float, int, str, float]
) -> tuple[ArtefactCache | None, str | None]:
    """The cache to use and the calibration's key in it (``(None, None)``: none)."""
    eps, d, q, t, accountant, tol = memo
    return _calibration_entry(
        cache,
        artefact="dpsgd-noise-multiplier",
        target_epsilon=eps,
        delta=d,
        sampling_rate=q,
        steps=t,
        accountant=accountant,
        tol=tol,
        method=_CALIBRATION_METHOD,
    )


def _calibration_entry(
    cache: ArtefactCache | Literal["default"] | None, **fields: Any
) -> tuple[ArtefactCache | None, str | None]:
    """The cache a calibration uses (``"default"``: the default directory, skipped if it cannot be made) and its
    key: ``fields`` with the ``dp_accounting`` version and this module's code fingerprint; ``(None, None)``: none."""
    if cache is None:
        return None, None
    from importlib import metadata

    from privgame.core.cache import ArtefactCache, CacheError, code_fingerprint, default_cache_dir, make_key

    store: ArtefactCache
    if cache == "default":
        try:
            store = ArtefactCache(default_cache_dir())
        except CacheError:  # no writable default directory: calibrate without it
            return None, None
    elif isinstance(cache, ArtefactCache):
        store = cache
    else:
        raise TypeError(f"cache must be an ArtefactCache, 'default' or None, got {cache!r}.")
    try:
        dp_version = metadata.version("dp-accounting")
    except metadata.PackageNotFoundError:  # pragma: no cover - a source checkout of dp_accounting
        dp_version = "unknown"
    return store, make_key(**fields, dp_accounting=dp_version, code=code_fingerprint(__name__))


def _calibrate_dpsgd(eps: float, d: float, q: float, t: int, accountant: Accountant, tol: float) -> float:
    """The search of :func:`dpsgd_noise_multiplier`, without its checks and caches."""

    def claimed(sigma: float) -> float:  # exactly the ε the mechanism's claim will state
        return dpsgd_epsilon(sigma, q, t, d, accountant=accountant)

    if accountant == "rdp":
        return _smallest_sigma(claimed, eps, guess=1.0, xtol=tol / 2)
    if q == 1.0:  # T full-batch steps compose to one Gaussian with noise σ/√T, whose ε is exact and cheap
        estimate = math.sqrt(t) * _smallest_sigma(lambda s: balle_wang_epsilon(s, d), eps, guess=1.0, xtol=tol / 16)
    else:

        def coarse(sigma: float) -> float:
            event = dpsgd_claim(sigma, q, t).event
            return epsilon_for_event(event, d, value_discretization_interval=_COARSE_INTERVAL)

        estimate = _smallest_sigma(coarse, eps, guess=1.0, xtol=tol / 4)
    sigma = estimate + tol / 2
    if claimed(sigma) <= eps and (sigma - tol <= 0 or claimed(sigma - tol) > eps):
        return sigma
    return _smallest_sigma(claimed, eps, guess=estimate, xtol=tol / 2, step=0.01)
