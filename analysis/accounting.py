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

from dataclasses import dataclass
from typing import Literal

import dp_accounting
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant

from analysis._checks import check_delta, check_real

__all__ = ["NeighbouringRelation", "PrivacyClaim", "epsilon_for_event"]

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
