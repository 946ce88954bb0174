"""Attacks: turn a mechanism's release into membership scores (higher = member).

Attacks with nothing to learn score directly; shadow-modelling attacks (``needs = "auxiliary"``) are fitted on
an :class:`privgame.attacks.knowledge.Knowledge` and return a separate fitted object.  The public names are imported on
first use (:mod:`privgame.core._lazy`).
"""

from typing import TYPE_CHECKING

from privgame.core._lazy import attach

if TYPE_CHECKING:
    from privgame.attacks._base import Attack, FittedAttack
    from privgame.attacks.distance import ClosestDistance, ExactCopies
    from privgame.attacks.groundhog import Groundhog
    from privgame.attacks.identity import Identity
    from privgame.attacks.knowledge import BlackBox, Knowledge
    from privgame.attacks.loss import NegativeLoss
    from privgame.attacks.queries import CountingQueries

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
        "Attack": "privgame.attacks._base:Attack",
        "BlackBox": "privgame.attacks.knowledge:BlackBox",
        "ClosestDistance": "privgame.attacks.distance:ClosestDistance",
        "CountingQueries": "privgame.attacks.queries:CountingQueries",
        "ExactCopies": "privgame.attacks.distance:ExactCopies",
        "FittedAttack": "privgame.attacks._base:FittedAttack",
        "Groundhog": "privgame.attacks.groundhog:Groundhog",
        "Identity": "privgame.attacks.identity:Identity",
        "Knowledge": "privgame.attacks.knowledge:Knowledge",
        "NegativeLoss": "privgame.attacks.loss:NegativeLoss",
    },
)
