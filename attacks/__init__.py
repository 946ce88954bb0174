"""Attacks: turn a mechanism's release into membership scores (higher = member).

Attacks with nothing to learn score directly; shadow-modelling attacks (``needs = "auxiliary"``) are fitted on
an :class:`attacks.knowledge.Knowledge` and return a separate fitted object.  The public names are imported on
first use (:mod:`analysis._lazy`).
"""

from typing import TYPE_CHECKING

from analysis._lazy import attach

if TYPE_CHECKING:
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

__getattr__, __dir__ = attach(
    __name__,
    {
        "Attack": "attacks._base:Attack",
        "BlackBox": "attacks.knowledge:BlackBox",
        "ClosestDistance": "attacks.distance:ClosestDistance",
        "CountingQueries": "attacks.queries:CountingQueries",
        "ExactCopies": "attacks.distance:ExactCopies",
        "FittedAttack": "attacks._base:FittedAttack",
        "Groundhog": "attacks.groundhog:Groundhog",
        "Identity": "attacks.identity:Identity",
        "Knowledge": "attacks.knowledge:Knowledge",
        "NegativeLoss": "attacks.loss:NegativeLoss",
    },
)
