"""Table mechanisms with known record-level risk, for the record-game tests (importable as a config plugin).

``CopyTable`` releases its input rows (shuffled): the target is in the release iff it was in the input, so a
good attack reaches AUC 1.  ``IgnoreInput`` releases rows drawn from a fixed public table, whatever the input:
every attack has AUC 1/2.  Both can log each call to a file, so tests can count generator runs across processes,
and sleep, so a run can be killed in the middle of a target.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from privgame.mechanisms._base import Mechanism


def _log(path: str, seconds: float) -> None:
    if seconds:
        time.sleep(seconds)
    if path:
        with open(path, "a") as fh:
            fh.write("1\n")


@dataclass(frozen=True, slots=True)
class CopyTable(Mechanism):
    """Releases its input rows in a random order (a generator that memorises everything)."""

    name: ClassVar[str] = "test-copy-table"
    input_kind: ClassVar[str] = "table"
    release_kind: ClassVar[str] = "table"

    log: str = ""
    sleep: float = 0.0

    def release(self, data: Any, *, rng: np.random.Generator) -> pd.DataFrame:
        _log(self.log, self.sleep)
        return data.iloc[rng.permutation(len(data))].reset_index(drop=True)

    def privacy_claim(self) -> None:
        return None


@dataclass(frozen=True, slots=True)
class IgnoreInput(Mechanism):
    """Releases as many rows as its input, drawn from the first 500 Adult test rows (ignores its input)."""

    name: ClassVar[str] = "test-ignore-input"
    input_kind: ClassVar[str] = "table"
    release_kind: ClassVar[str] = "table"

    log: str = ""
    sleep: float = 0.0

    def release(self, data: Any, *, rng: np.random.Generator) -> pd.DataFrame:
        from privgame.data import load_adult

        _log(self.log, self.sleep)
        public = load_adult("test").iloc[:500][list(data.columns)]
        return public.iloc[rng.integers(0, 500, size=len(data))].reset_index(drop=True)

    def privacy_claim(self) -> None:
        return None
