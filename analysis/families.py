"""Families of trade-off curves indexed by one privacy parameter, and the family that matches a mechanism's claim.

The one-run f-DP audit (:mod:`privgame.analysis.fdp`) bounds the largest member of a family that the guesses reject.
That is a bound on the mechanism's ε only if its true trade-off curve lies in (or above) the family: pure ε for
randomized response and PrivBayes, μ-GDP for the Gaussian mechanism, the PLD of the subsampled Gaussian for DP-SGD.
Pairing a family with the wrong mechanism gives "bounds" above the true ε (the Gaussian family on randomized response
with true ε = 1 gives 1.646, SPEC §1).

References
----------
.. [1] S. Mahloujifar, L. Melis, K. Chaudhuri. Auditing f-Differential Privacy in One Run. ICML 2025,
   arXiv:2410.22235.
.. [2] J. Dong, A. Roth, W. J. Su. Gaussian Differential Privacy. JRSS-B 2022, arXiv:1905.02383.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from privgame.analysis._checks import check_delta, check_int, check_real
from privgame.analysis.tradeoff import GaussianCurve, PLDCurve, PureDPCurve, TradeOffCurve, dpsgd_pld, gdp_epsilon

__all__ = [
    "FAMILIES",
    "FAMILY_NAMES",
    "CurveFamily",
    "dpsgd_family",
    "dpsgd_parameters",
    "family_for_claim",
    "gaussian_family",
    "matched_family_name",
    "pure_family",
    "resolve_family",
    "unmatched_reason",
]


@dataclass(frozen=True, slots=True)
class CurveFamily:
    """A one-parameter family of trade-off curves, weaker (lower) as the parameter grows.

    Parameters
    ----------
    name : str
        Reported in :class:`FdpAudit`.
    curve : callable float -> TradeOffCurve
        The curve f_θ for θ in ``[0, max_parameter]``.  Must be nested: θ < θ' implies f_θ >= f_θ' pointwise, so
        that rejecting f_θ' implies rejecting f_θ (then the search for the largest rejected θ is a bisection).
        ``curve(0)`` should be the most private member (perfect privacy, ``f(α) = 1 - α``, for built-ins).
    epsilon : callable float -> float or None, default=None
        Converts θ to the ε reported as the bound; ``None`` when θ is ε itself.
    parameter_name : str, default="epsilon"
        What θ is called in reports ("epsilon", "mu", ...).
    max_parameter : float, default=100.0
        The search gives up above this value (returning it, with a warning).
    xtol : float, default=1e-10
        Absolute tolerance of the search for θ; the result is lowered by it, so it stays a rejected θ.
    delta : float or None, default=None
        The δ that ``epsilon`` refers to, reported in :class:`FdpAudit` (None: the ``delta`` passed to
        :func:`epsilon_lower_bound`).

    Examples
    --------
    A family of DP-SGD curves indexed by the inverse noise multiplier 1/σ (see :func:`dpsgd_family`):

    >>> fam = dpsgd_family(sampling_rate=0.01, steps=100, delta=1e-5)
    >>> fam.parameter_name
    'inverse_noise_multiplier'
    """

    name: str
    curve: Callable[[float], TradeOffCurve]
    epsilon: Callable[[float], float] | None = None
    parameter_name: str = "epsilon"
    max_parameter: float = 100.0
    xtol: float = 1e-10
    delta: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name must be a non-empty string, got {self.name!r}.")
        if not callable(self.curve):
            raise TypeError(f"curve must be a callable parameter -> TradeOffCurve, got {self.curve!r}.")
        if self.epsilon is not None and not callable(self.epsilon):
            raise TypeError(f"epsilon must be a callable parameter -> float or None, got {self.epsilon!r}.")
        object.__setattr__(
            self, "max_parameter", check_real("max_parameter", self.max_parameter, low=0.0, low_open=True)
        )
        object.__setattr__(self, "xtol", check_real("xtol", self.xtol, low=0.0, low_open=True))
        if self.delta is not None:
            object.__setattr__(self, "delta", check_real("delta", self.delta, low=0.0, high=1.0, high_open=True))

    def to_epsilon(self, parameter: float) -> float:
        """The ε reported for the parameter θ."""
        return float(parameter) if self.epsilon is None else float(self.epsilon(parameter))


def pure_family(delta: float = 0.0) -> CurveFamily:
    """(ε, δ)-DP curves at a fixed δ, indexed by ε: the family of randomized response (δ = 0)."""
    d = check_delta(delta)
    return CurveFamily(
        name="pure",
        curve=functools.partial(PureDPCurve, delta=d),
        parameter_name="epsilon",
        max_parameter=500.0,
        delta=d,
    )


def gaussian_family(delta: float) -> CurveFamily:
    """μ-GDP curves indexed by μ, reported as the GDP-derived ε at δ (requires δ > 0).

    The family of the Gaussian mechanism; for DP-SGD it is the central-limit approximation (use
    :func:`dpsgd_family` for the exact curve).  NOT for randomized response or Laplace noise: see the module note.
    """
    d = check_delta(delta)
    if d == 0.0:
        raise ValueError("delta must be > 0 for the Gaussian family (μ-GDP gives no finite ε at δ = 0), got 0.0.")
    return CurveFamily(
        name="gaussian",
        curve=GaussianCurve,
        epsilon=functools.partial(gdp_epsilon, delta=d),
        parameter_name="mu",
        max_parameter=40.0,
        delta=d,
    )


def dpsgd_family(
    sampling_rate: float,
    steps: int,
    *,
    delta: float,
    value_discretization_interval: float = 1e-3,
    grid_size: int = 2001,
) -> CurveFamily:
    """DP-SGD curves (PLD, ``dp_accounting``) indexed by ν = 1/σ, the inverse noise multiplier; ε at δ reported.

    Parameters
    ----------
    sampling_rate : float
        Poisson sampling probability q in (0, 1].
    steps : int
        Number of steps T >= 1.
    delta : float
        δ in (0, 1) at which ν converts to ε (PLD accountant).
    value_discretization_interval : float, default=1e-3
        PLD discretisation; each search step composes a PLD, so the search tolerance is 1e-4 in ν.
    grid_size : int, default=2001
        ε grid of each :class:`PLDCurve`.

    Notes
    -----
    ν = 0 is σ = ∞ (perfect privacy).  Larger ν is weaker privacy, as :class:`CurveFamily` requires.  The bound
    says "the mechanism is not the DP-SGD with noise multiplier 1/ν̂ or more", reported as that DP-SGD's ε at δ.
    """
    q = check_real("sampling_rate", sampling_rate, low=0.0, high=1.0, low_open=True)
    t = check_int("steps", steps, low=1)
    d = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    vdi = check_real("value_discretization_interval", value_discretization_interval, low=0.0, low_open=True)
    n = check_int("grid_size", grid_size, low=2)
    return CurveFamily(
        name=f"dpsgd(q={q:g}, T={t})",
        curve=functools.partial(_dpsgd_curve, sampling_rate=q, steps=t, vdi=vdi, grid_size=n),
        epsilon=functools.partial(_dpsgd_epsilon, sampling_rate=q, steps=t, vdi=vdi, delta=d),
        parameter_name="inverse_noise_multiplier",
        max_parameter=10.0,
        xtol=1e-4,
        delta=d,
    )


@functools.lru_cache(maxsize=256)
def _dpsgd_curve(nu: float, sampling_rate: float, steps: int, vdi: float, grid_size: int) -> TradeOffCurve:
    if nu == 0.0:
        return GaussianCurve(0.0)
    return PLDCurve.from_dpsgd(1.0 / nu, sampling_rate, steps, value_discretization_interval=vdi, grid_size=grid_size)


def _dpsgd_epsilon(nu: float, sampling_rate: float, steps: int, vdi: float, delta: float) -> float:
    if nu == 0.0:
        return 0.0
    return float(dpsgd_pld(1.0 / nu, sampling_rate, steps, vdi).get_epsilon_for_delta(delta))


#: The families selectable by name; each maps δ to a :class:`CurveFamily`.
FAMILIES: dict[str, Callable[[float], CurveFamily]] = {"gaussian": gaussian_family, "pure": pure_family}


def resolve_family(family: Any, delta: float) -> CurveFamily:
    """``family`` itself when a :class:`CurveFamily`, else the named family of :data:`FAMILIES` at ``delta``."""
    if isinstance(family, CurveFamily):
        return family
    if isinstance(family, str) and family in FAMILIES:
        return FAMILIES[family](delta)
    names = ", ".join(repr(n) for n in sorted(FAMILIES))
    raise ValueError(f"family must be one of {names} or a CurveFamily, got {family!r}.")


# The families a config names (``fdp_<name>``), and the one each kind of claim is matched to.
FAMILY_NAMES = ("pure", "gaussian", "pld")


def dpsgd_parameters(event: Any) -> tuple[float, float, int] | None:
    """``(σ, q, T)`` when the event is T self-composed steps of a Poisson-subsampled Gaussian (DP-SGD), else None."""
    import dp_accounting

    steps = 1
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        event, steps = event.event, int(event.count)
    if isinstance(event, dp_accounting.PoissonSampledDpEvent) and isinstance(
        event.event, dp_accounting.GaussianDpEvent
    ):
        return float(event.event.noise_multiplier), float(event.sampling_probability), steps
    return None


def matched_family_name(claim: Any) -> str | None:
    """The name of the family that contains a mechanism's own trade-off curve, from its ``PrivacyClaim``.

    ``"pure"`` for pure ε-DP events (randomized response, PrivBayes's composition of pure steps: the pure curve at
    ε(0) is their trade-off curve or below it), ``"gaussian"`` for the Gaussian mechanism (μ-GDP with μ = 1/σ),
    ``"pld"`` for DP-SGD (the PLD of its own q and T, indexed by the noise multiplier); None for anything else
    (no claim, or an event with no known family).
    """
    import dp_accounting

    from privgame.analysis.accounting import pure_event  # dp_accounting's accountants load only when asked

    if claim is None:
        return None
    event = claim.event
    if pure_event(event):
        return "pure"
    if isinstance(event, dp_accounting.GaussianDpEvent):
        return "gaussian"
    if dpsgd_parameters(event) is not None:
        return "pld"
    return None


def family_for_claim(name: str, claim: Any, delta: float) -> CurveFamily:
    """The family ``name`` (one of :data:`FAMILY_NAMES`) at ``delta``, built for the mechanism of ``claim``.

    ``"pld"`` needs a DP-SGD claim (its q and T define the family); the others need only δ (``"gaussian"``: δ > 0).

    Raises
    ------
    ValueError
        If the name is unknown, or ``"pld"`` is asked of a mechanism that is not DP-SGD.
    """
    if name not in FAMILY_NAMES:
        raise ValueError(f"family must be one of {', '.join(FAMILY_NAMES)}, got {name!r}.")
    if name != "pld":
        return FAMILIES[name](delta)
    found = dpsgd_parameters(claim.event) if claim is not None else None
    if found is None:
        raise ValueError(
            "the pld family is DP-SGD's own (its sampling rate and steps); this mechanism's claim is not DP-SGD."
        )
    _, q, steps = found
    return dpsgd_family(q, steps, delta=delta)


def unmatched_reason(name: str, claim: Any) -> str | None:
    """Why the family ``name`` may give a bound above the mechanism's ε, or None when it is sound for it.

    The pure family at δ is sound for every mechanism with a claim (an (ε, δ)-DP mechanism's curve lies above the
    (ε, δ) curve); any other family is sound only for the mechanism it is matched to (:func:`matched_family_name`).
    """
    if claim is None:
        return "the mechanism states no privacy claim, so no family is known to hold its trade-off curve"
    matched = matched_family_name(claim)
    if name == "pure" or name == matched:
        return None
    own = f"its own family is {matched!r}" if matched else "no family is known to hold its trade-off curve"
    return f"the {name!r} family does not contain this mechanism's trade-off curve ({own})"
