"""Two worlds for the table attacks' tests: a small population with a rare target, a generator that copies its
input and one that ignores it, and the AUC of a fitted attack on fresh releases with and without the target."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from privgame.attacks.knowledge import BlackBox, Knowledge
from privgame.mechanisms._base import Mechanism

__all__ = ["AUX", "TARGET", "Blind", "CopyTable", "attack_auc"]

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins"))
try:
    from known_risk_mechanisms import CopyTable  # releases its input rows, shuffled
finally:
    sys.path.pop(0)


def _table(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {"c": pd.Categorical(rng.choice(list("abc"), n), categories=list("abcd")), "x": rng.integers(0, 50, n)}
    )


AUX = _table(200)
TARGET = pd.DataFrame({"c": pd.Categorical(["d"], categories=list("abcd")), "x": [49]})


@dataclass(frozen=True, slots=True)
class Blind(Mechanism):
    """Releases 20 fresh draws from the population, whatever its input (perfect privacy)."""

    name: ClassVar[str] = "blind"
    input_kind: ClassVar[str] = "table"
    release_kind: ClassVar[str] = "table"

    def release(self, data: Any, *, rng: np.random.Generator) -> pd.DataFrame:
        return _table(20, seed=int(rng.integers(2**31)))

    def privacy_claim(self) -> None:
        return None


def attack_auc(attack: Any, mechanism: Mechanism, rounds: int = 40) -> float:
    """The fitted attack's AUC on fresh releases with and without the target (10 records beside it)."""
    fitted = attack.fit(Knowledge(AUX, TARGET, 10, BlackBox(mechanism)), rng=np.random.default_rng(0))
    rng = np.random.default_rng(1)
    scores, labels = [], []
    for r in range(rounds):
        rows = AUX.iloc[rng.choice(len(AUX), 10, replace=False)]
        member = r % 2 == 0
        data = pd.concat([rows.iloc[:9], TARGET] if member else [rows], ignore_index=True)
        scores.append(fitted.score(mechanism.release(data, rng=rng), np.zeros(1, dtype=np.intp))[0])
        labels.append(member)
    s, b = np.asarray(scores), np.asarray(labels)
    return float(np.mean(s[b][:, None] > s[~b][None, :]) + 0.5 * np.mean(s[b][:, None] == s[~b][None, :]))
