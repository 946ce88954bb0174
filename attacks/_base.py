"""The interface every attack implements.

An attack is a frozen, picklable dataclass of its parameters.  ``fit(knowledge, rng=...)`` prepares it from what
the game lets the adversary know (shadow data, the mechanism's public description; ``None`` when there is nothing
to learn) and returns the fitted attack; ``score(release, targets)`` returns one float64 score per target,
higher meaning "more likely a member".  ``accepts`` lists the mechanisms' ``release_kind`` values it can score.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Self

import numpy as np
from numpy.typing import NDArray

__all__ = ["Attack"]


class Attack(ABC):
    """A membership-inference (or reconstruction) attack scoring targets from a release."""

    __slots__ = ()

    name: ClassVar[str]
    accepts: ClassVar[frozenset[str]]

    def fit(self, knowledge: Any, *, rng: np.random.Generator) -> Self:
        """Prepare the attack from the adversary's knowledge; the default has nothing to learn."""
        return self

    @abstractmethod
    def score(self, release: Any, targets: NDArray[np.intp]) -> NDArray[np.float64]:
        """Scores of shape ``(len(targets),)``, float64, higher = member."""
