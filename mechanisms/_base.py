"""The interface every mechanism implements.

A mechanism is a frozen, picklable dataclass whose fields are its parameters (validated in ``__post_init__``).
``release(data, rng=...)`` runs it once on the data a game hands it and returns what it publishes;
``privacy_claim()`` states its analytic guarantee (or ``None`` for non-private mechanisms).

Two class attributes let a game check compatibility before any work runs:

``input_kind``
    what ``release`` takes: ``"canary-bits"`` (a boolean array of m membership bits, one per canary), and, in
    later games, ``"dataset"`` (arrays ``(X, y)``) or ``"table"`` (a DataFrame).
``release_kind``
    what it publishes: ``"per-canary-values"`` (one number per canary), ``"model"``, ``"table"``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

from analysis.accounting import PrivacyClaim

__all__ = ["Mechanism", "PrivacyClaim"]


class Mechanism(ABC):
    """A randomised algorithm under audit."""

    __slots__ = ()

    name: ClassVar[str]
    input_kind: ClassVar[str]
    release_kind: ClassVar[str]

    @abstractmethod
    def release(self, data: Any, *, rng: np.random.Generator) -> Any:
        """Run the mechanism once on ``data`` with randomness from ``rng`` and return what it publishes."""

    @abstractmethod
    def privacy_claim(self) -> PrivacyClaim | None:
        """The analytic privacy guarantee, or ``None`` when the mechanism claims none."""
