"""A config plugin with a mechanism that fails on purpose, for the runner's failure, kill and interrupt tests.

``test-faulty`` is randomized response on the canary bits that first draws one uniform number from its stream:
below ``fail`` it raises, below ``fail + exit`` it calls ``sys.exit(3)`` (what a careless plugin does), below
``fail + exit + kill`` it SIGKILLs its own process (as the OOM killer would) unless that process is
``spare_pid`` (the test's own), so which trials fail is fixed by their seeds.  ``only_if`` names a file: the
faults happen only while it exists, so a test can make a run fail and its resume succeed.  ``sleep`` makes each
trial that survives its faults last that long (a faulty trial fails at once, beside trials still running), and
``log`` appends the playing process's id (and its ``OMP_NUM_THREADS``) to a file, so a test can tell which
processes played trials.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from privgame.engine.registry import MECHANISMS
from privgame.mechanisms._base import Mechanism


@dataclass(frozen=True, slots=True)
class Faulty(Mechanism):
    """Randomized response (ε = ``epsilon``) that raises or exits on the seeds whose first draw says so."""

    name: ClassVar[str] = "test-faulty"
    input_kind: ClassVar[str] = "canary-bits"
    release_kind: ClassVar[str] = "per-canary-values"

    epsilon: float = 1.0
    fail: float = 0.0
    exit: float = 0.0
    only_if: str = ""
    sleep: float = 0.0
    log: str = ""
    kill: float = 0.0
    spare_pid: int = 0

    def release(self, data: Any, *, rng: np.random.Generator) -> NDArray[np.float64]:
        draw = rng.random()
        if self.log:
            with open(self.log, "a") as fh:
                fh.write(f"{os.getpid()} {os.environ.get('OMP_NUM_THREADS', '-')}\n")
        armed = not self.only_if or os.path.exists(self.only_if)
        if armed and draw < self.fail:
            raise RuntimeError(f"deliberate failure (draw {draw:.3f} < fail {self.fail})")
        if armed and draw < self.fail + self.exit:
            sys.exit(3)
        if armed and draw < self.fail + self.exit + self.kill and os.getpid() != self.spare_pid:
            os.kill(os.getpid(), signal.SIGKILL)  # what the kernel's OOM killer does
        if self.sleep:
            time.sleep(self.sleep)
        bits = np.asarray(data, dtype=bool)
        flip = rng.random(bits.shape[0]) < 1.0 / (1.0 + np.exp(self.epsilon))
        return (bits ^ flip).astype(np.float64)

    def privacy_claim(self) -> None:
        return None


if Faulty.name not in MECHANISMS:
    MECHANISMS.register(Faulty)
