"""The density-ratio attack on synthetic tables (attacks/density.py): the estimator, its edge cases, a copy found
and an input-blind generator not, and one-line refusals."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pytest

from attacks._tables import TableSchema
from attacks.density import DensityRatio, log_kernel_density
from attacks.distance import mixed_distances
from attacks.knowledge import BlackBox, Knowledge
from mechanisms._base import Mechanism

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "games" / "plugins"))
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
class _Blind(Mechanism):
    """Releases 20 fresh draws from the population, whatever its input (perfect privacy)."""

    name: ClassVar[str] = "blind"
    input_kind: ClassVar[str] = "table"
    release_kind: ClassVar[str] = "table"

    def release(self, data: Any, *, rng: np.random.Generator) -> pd.DataFrame:
        return _table(20, seed=int(rng.integers(2**31)))

    def privacy_claim(self) -> None:
        return None


def test_the_log_density_is_the_mean_kernel_of_the_mixed_distance():
    schema = TableSchema.of(AUX)
    codes = schema.codes(AUX.iloc[:30])
    target = schema.codes(TARGET)[0]
    naive = math.log(np.mean(np.exp(-mixed_distances(codes, target, schema) / 0.7)))
    assert log_kernel_density(codes, target, schema, 0.7) == pytest.approx(naive, rel=1e-12)
    assert log_kernel_density(codes[:0], target, schema, 0.7) == -2 / 0.7  # no row: the kernel's least value


def _auc(attack: DensityRatio, mechanism: Mechanism, rounds: int = 40) -> float:
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


def test_a_copying_generator_is_found_and_an_input_blind_one_is_not():
    """The copy puts the rare target (category d, never in the auxiliary data) in the release: AUC 1.  A generator
    that ignores its input gives the two worlds one law: AUC within 3 standard errors of 1/2 (20 × 20 pairs)."""
    assert _auc(DensityRatio(n_shadows=10), CopyTable()) == 1.0
    assert abs(_auc(DensityRatio(n_shadows=10), _Blind()) - 0.5) < 3 * math.sqrt(1 / 12 * (1 / 20 + 1 / 20))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"bandwidth": 0.0}, "bandwidth"),
        ({"bandwidth": float("nan")}, "bandwidth"),
        ({"bandwidth": 1e12}, "bandwidth"),
        ({"n_shadows": 1}, "n_shadows"),
    ],
)
def test_bad_parameters_are_refused_in_one_line(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message) as info:
        DensityRatio(**kwargs)
    assert "\n" not in str(info.value)


def test_it_needs_the_adversarys_knowledge():
    with pytest.raises(TypeError, match=r"needs an attacks\.knowledge\.Knowledge"):
        DensityRatio().fit(None, rng=np.random.default_rng(0))
