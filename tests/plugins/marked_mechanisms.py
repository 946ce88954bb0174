"""A config plugin whose mechanism works only where a second, side-effect-only plugin has been imported.

``test-marked`` is randomized response on the canary bits that raises unless :data:`READY` is True.
``marking_plugin`` (the side-effect-only plugin) sets it when imported, and registers nothing.  Unpickling a trial
in a worker imports this module (the mechanism's class lives here) but never ``marking_plugin``: the runner must
import the config's plugins in every worker itself.  ``log`` appends the playing process's id to a file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from privgame.engine.registry import MECHANISMS
from privgame.mechanisms._base import Mechanism

READY = False  # set by importing marking_plugin


@dataclass(frozen=True, slots=True)
class Marked(Mechanism):
    """Randomized response (ε = ``epsilon``) that needs ``marking_plugin`` imported in the playing process."""

    name: ClassVar[str] = "test-marked"
    input_kind: ClassVar[str] = "canary-bits"
    release_kind: ClassVar[str] = "per-canary-values"

    epsilon: float = 1.0
    log: str = ""

    def release(self, data: Any, *, rng: np.random.Generator) -> NDArray[np.float64]:
        if self.log:
            with open(self.log, "a") as fh:
                fh.write(f"{os.getpid()}\n")
        if not READY:
            raise RuntimeError(f"the side-effect plugin marking_plugin was not imported in process {os.getpid()}")
        bits = np.asarray(data, dtype=bool)
        flip = rng.random(bits.shape[0]) < 1.0 / (1.0 + np.exp(self.epsilon))
        return (bits ^ flip).astype(np.float64)

    def privacy_claim(self) -> None:
        return None


if Marked.name not in MECHANISMS:
    MECHANISMS.register(Marked)
