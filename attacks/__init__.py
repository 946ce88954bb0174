"""Attacks: turn a mechanism's release into membership scores (higher = member).

Attacks with nothing to learn score directly; shadow-modelling attacks (``needs = "auxiliary"``) are fitted on
an :class:`attacks.knowledge.Knowledge` and return a separate fitted object.
"""

from attacks._base import Attack, FittedAttack
from attacks.distance import ClosestDistance, ExactCopies
from attacks.groundhog import Groundhog
from attacks.identity import Identity
from attacks.knowledge import BlackBox, Knowledge
from attacks.loss import NegativeLoss
from attacks.queries import CountingQueries

__all__ = [
    "Attack",
    "BlackBox",
    "ClosestDistance",
    "CountingQueries",
    "ExactCopies",
    "FittedAttack",
    "Groundhog",
    "Identity",
    "Knowledge",
    "NegativeLoss",
]
