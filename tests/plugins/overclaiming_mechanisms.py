"""A config plugin with a mechanism that claims less than it gives, for the sequential audit's runner tests.

``test-overclaiming`` is randomized response at ``epsilon`` on the canary bits whose claim is randomized response at
``claim``: with ``claim < epsilon`` its claim is false, and an audit should refute it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from privgame.analysis.accounting import PrivacyClaim
from privgame.engine.registry import MECHANISMS
from privgame.mechanisms import RandomizedResponse
from privgame.mechanisms._base import Mechanism


@dataclass(frozen=True, slots=True)
class Overclaiming(Mechanism):
    """Randomized response at ``epsilon`` claiming randomized response's ε = ``claim``."""

    name: ClassVar[str] = "test-overclaiming"
    input_kind: ClassVar[str] = "canary-bits"
    release_kind: ClassVar[str] = "per-canary-values"
    canary_dependence: ClassVar[str | None] = None

    epsilon: float = 2.0
    claim: float = 1.0

    def release(self, data: Any, *, rng: np.random.Generator) -> Any:
        return RandomizedResponse(epsilon=self.epsilon).release(data, rng=rng)

    def privacy_claim(self) -> PrivacyClaim | None:
        return RandomizedResponse(epsilon=self.claim).privacy_claim()


if Overclaiming.name not in MECHANISMS:
    MECHANISMS.register(Overclaiming)
