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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import dp_accounting
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant
from scipy import special

from analysis._checks import check_delta, check_int, check_real

__all__ = [
    "NeighbouringRelation",
    "PrivacyClaim",
    "dpsgd_claim",
    "dpsgd_epsilon",
    "dpsgd_noise_multiplier",
    "epsilon_for_event",
    "gaussian_claim",
    "gaussian_epsilon",
    "pure_composition_claim",
    "pure_composition_epsilon",
    "randomized_response_claim",
    "randomized_response_epsilon",
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

    Notes
    -----
    A single Gaussian event is evaluated by ``dp_accounting.get_epsilon_gaussian``, which is exact [2]_.
    """
    d = check_delta(delta)
    if accountant not in ("pld", "rdp"):
        raise ValueError(f"accountant must be one of 'pld', 'rdp', got {accountant!r}.")
    check_real("value_discretization_interval", value_discretization_interval, low=0.0, low_open=True)
    if isinstance(event, dp_accounting.GaussianDpEvent) and neighbouring in (
        NeighbouringRelation.ADD_OR_REMOVE_ONE,
        NeighbouringRelation.REPLACE_SPECIAL,
    ):
        return float(dp_accounting.get_epsilon_gaussian(event.noise_multiplier, d))
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
        and not isinstance(event, dp_accounting.RandomizedResponseDpEvent)
    ):
        # dp_accounting's RDP accountant ignores REPLACE_ONE for Gaussian-based events (it keeps sensitivity 1
        # where replacing a record moves the sum by 2), which would understate ε.
        raise ValueError(
            "accountant 'rdp' cannot account REPLACE_ONE for this event (dp_accounting's RDP accountant would "
            "understate ε); use accountant='pld'."
        )
    acct.compose(event)
    return float(acct.get_epsilon(d))


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


def gaussian_epsilon(sigma: float, delta: float) -> float:
    """Exact ε at ``delta`` of the Gaussian mechanism with sensitivity 1 and noise σ (Balle & Wang 2018)."""
    return gaussian_claim(sigma).epsilon(delta)


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


def pure_composition_claim(epsilons: Sequence[float]) -> PrivacyClaim:
    """The claim of a sequence of pure ε_i-DP steps (e.g. PrivBayes's exponential mechanisms and Laplace counts).

    Binary randomized response at ε_i is the dominating pair of every ε_i-DP mechanism (its trade-off curve is the
    pure (ε_i, 0) curve), so the composition of the ε_i-RR events, accounted by PLD, bounds the composition of any
    ε_i-DP steps: Σ ε_i at δ = 0 (basic composition; Zhang et al., PrivBayes, TODS 2017), and the optimal
    composition of Kairouz, Oh and Viswanath (ICML 2015) at δ > 0.
    """
    eps = [check_real("epsilon", e, low=0.0, low_open=True) for e in epsilons]
    if not eps:
        raise ValueError("epsilons must hold at least one ε, got an empty sequence.")
    event = dp_accounting.ComposedDpEvent([randomized_response_claim(e).event for e in eps])
    return PrivacyClaim(event=event, neighbouring=NeighbouringRelation.REPLACE_ONE, value_discretization_interval=1e-9)


def pure_composition_epsilon(epsilons: Sequence[float], delta: float = 0.0) -> float:
    """ε at ``delta`` of the composition of pure ε_i-DP steps (Σ ε_i at δ = 0), through ``dp_accounting``."""
    return pure_composition_claim(epsilons).epsilon(delta)


def dpsgd_noise_multiplier(
    target_epsilon: float,
    delta: float,
    sampling_rate: float,
    steps: int,
    *,
    accountant: Accountant = "pld",
    tol: float = 1e-4,
) -> float:
    """The smallest noise multiplier σ for which DP-SGD with (q, T) is (target ε, δ)-DP, by ``dp_accounting``.

    Uses ``dp_accounting.calibrate_dp_mechanism`` (Brent's method on the accountant's ε); the returned σ is
    rounded UP to within ``tol``, so ``dpsgd_epsilon(σ, q, T, δ) <= target_epsilon`` holds.

    Raises
    ------
    ValueError
        For a non-positive target ε, δ outside (0, 1), q outside (0, 1], or T < 1.
    """
    eps = check_real("target_epsilon", target_epsilon, low=0.0, low_open=True)
    d = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    q = check_real("sampling_rate", sampling_rate, low=0.0, high=1.0, low_open=True)
    t = check_int("steps", steps, low=1)
    check_real("tol", tol, low=0.0, low_open=True)

    def make_accountant() -> dp_accounting.PrivacyAccountant:
        if accountant == "pld":
            return pld_privacy_accountant.PLDAccountant(NeighbouringRelation.ADD_OR_REMOVE_ONE)
        return rdp_privacy_accountant.RdpAccountant(neighboring_relation=NeighbouringRelation.ADD_OR_REMOVE_ONE)

    def make_event(sigma: float) -> dp_accounting.DpEvent:
        return dpsgd_claim(sigma, q, t, accountant=accountant).event

    sigma = float(
        dp_accounting.calibrate_dp_mechanism(
            make_accountant,
            make_event,
            eps,
            d,
            dp_accounting.LowerEndpointAndGuess(0.25, 1.0),  # below σ ≈ 0.25 the PLD grid explodes
            tol=tol / 2,
        )
    )
    sigma += tol / 2  # calibrate returns within tol/2 of the smallest valid σ: step to its safe side
    return sigma
