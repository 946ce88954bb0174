"""Distance attacks on synthetic tables: the closest synthetic row to the target, and exact copies of its values.

Neither trains a classifier; each learns only its decision threshold, on shadow tables made from the auxiliary
data (the threshold maximising accuracy on the shadows), so that a game can report its accuracy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privgame.analysis._checks import check_int
from privgame.attacks._base import Attack
from privgame.attacks._tables import TableSchema
from privgame.attacks.knowledge import Knowledge, require_knowledge
from privgame.attacks.shadow import MAX_SHADOWS, attack_streams, best_threshold, shadow_features

__all__ = ["ClosestDistance", "ExactCopies", "FittedStatistic", "mixed_distances"]


def mixed_distances(
    codes: NDArray[np.float64], target: NDArray[np.float64], schema: TableSchema
) -> NDArray[np.float64]:
    """Per row: the number of categorical attributes that differ from the target, plus each numeric attribute's
    absolute difference scaled by the auxiliary range (capped at 1): Hamming distance on all-categorical tables.

    A missing or unknown value (categorical code −1, numeric NaN; :meth:`TableSchema.codes`), in the row or in
    the target, matches nothing: it differs by the most an attribute can, 1, even from another missing value."""
    diff = np.empty_like(codes)
    cat = schema.categorical
    diff[:, cat] = (codes[:, cat] != target[None, cat]) | (codes[:, cat] < 0)  # a −1 target differs from a −1 row
    num = ~cat
    # fmin, not minimum: a NaN difference becomes the cap 1 instead of making the whole distance NaN
    diff[:, num] = np.fmin(np.abs(codes[:, num] - target[None, num]) / schema.span[None, num], 1.0)
    distances: NDArray[np.float64] = diff.sum(axis=1)
    return distances


@dataclass(eq=False)
class FittedStatistic:
    """A fitted statistic attack: a score function of the release and a threshold learnt on shadows."""

    statistic: Any
    threshold: float

    def score(self, release: Any, targets: NDArray[np.intp]) -> NDArray[np.float64]:
        if len(targets) != 1 or int(targets[0]) != 0:
            raise ValueError(f"this attack is fitted for one target (index 0), got targets {targets!r}.")
        return np.array([float(self.statistic(release)[0])], dtype=np.float64)


def _fit_threshold(knowledge: Knowledge, statistic: Any, n_shadows: int, rng: np.random.Generator) -> FittedStatistic:
    (shadow_seed,) = attack_streams(rng, 1)
    scores, labels = shadow_features(knowledge, statistic, n_shadows, seed=shadow_seed)
    return FittedStatistic(statistic, best_threshold(scores[:, 0].astype(np.float64), labels))


@dataclass(frozen=True, slots=True)
class ClosestDistance(Attack):
    """Score = −(the smallest mixed distance from the target to a synthetic row): near copies suggest membership.

    Parameters
    ----------
    n_shadows : int, default=100
        Shadow tables on which the decision threshold is learnt (≥ 2).

    Notes
    -----
    Threat model: :mod:`privgame.attacks.knowledge`.  The distance counts differing categorical attributes and adds each
    numeric attribute's absolute difference scaled by the auxiliary data's range (at most 1): the Hamming distance
    of SPEC §7 on all-categorical tables.

    References
    ----------
    .. [1] T. Stadler, B. Oprisanu, C. Troncoso. Synthetic Data – Anonymisation Groundhog Day. USENIX Security
       2022, arXiv:2011.07018 (the distance-to-closest-record attack).
    """

    name: ClassVar[str] = "closest-distance"
    shadow_tables: ClassVar[bool] = True
    accepts: ClassVar[frozenset[str]] = frozenset({"table"})
    needs: ClassVar[str] = "auxiliary"

    n_shadows: int = 100

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_shadows", check_int("n_shadows", self.n_shadows, low=2, high=MAX_SHADOWS))

    def fit(self, knowledge: Any, *, rng: np.random.Generator) -> FittedStatistic:
        knowledge = require_knowledge(knowledge, self.name)
        schema = TableSchema.of(knowledge.auxiliary)
        target = schema.codes(knowledge.targets.iloc[[0]])[0]

        def statistic(release: Any) -> NDArray[np.float64]:
            return np.array([-float(mixed_distances(schema.codes(release), target, schema).min())])

        return _fit_threshold(knowledge, statistic, self.n_shadows, rng)


@dataclass(frozen=True, slots=True)
class ExactCopies(Attack):
    """Score = the number of synthetic rows that copy the target's exact value of one numeric column.

    Parameters
    ----------
    column : str or None, default=None
        The numeric column; ``None`` picks, per target, the numeric column whose target value is rarest in the
        auxiliary data (ties: the first such column).
    n_shadows : int, default=100
        Shadow tables on which the decision threshold is learnt (≥ 2).

    Notes
    -----
    Strong against Synthpop, whose CART leaves copy real donors' values (SPEC §7): a near-unique value (Adult's
    ``fnlwgt``) appears in the synthetic table almost only when its owner was in the input.
    """

    name: ClassVar[str] = "exact-copies"
    shadow_tables: ClassVar[bool] = True
    accepts: ClassVar[frozenset[str]] = frozenset({"table"})
    needs: ClassVar[str] = "auxiliary"

    column: str | None = None
    n_shadows: int = 100

    def __post_init__(self) -> None:
        if self.column is not None and (not isinstance(self.column, str) or not self.column):
            raise TypeError(f"column must be a column name or None, got {self.column!r}.")
        object.__setattr__(self, "n_shadows", check_int("n_shadows", self.n_shadows, low=2, high=MAX_SHADOWS))

    def table_incompatibility(self, table: pd.DataFrame) -> str | None:
        """Why this attack cannot run on tables with ``table``'s columns (checked before any work), or ``None``."""
        numeric = [c for c, cat in zip(table.columns, TableSchema.of(table).categorical, strict=True) if not cat]
        if not numeric:
            return f"attack '{self.name}' needs a numeric column; the table has none"
        if self.column is not None and self.column not in numeric:
            return f"attack '{self.name}': column must be one of the numeric columns {numeric!r}, got {self.column!r}"
        return None

    def choose_column(self, knowledge: Knowledge) -> str:
        schema = TableSchema.of(knowledge.auxiliary)
        numeric = [c for c, cat in zip(schema.columns, schema.categorical, strict=True) if not cat]
        if self.column is not None:
            if self.column not in numeric:
                raise ValueError(f"column must be one of the numeric columns {numeric!r}, got {self.column!r}.")
            return self.column
        if not numeric:
            raise ValueError("attack 'exact-copies' needs a numeric column; the table has none.")
        target = knowledge.targets.iloc[0]
        freq = [float((knowledge.auxiliary[c] == target[c]).mean()) for c in numeric]
        return numeric[int(np.argmin(freq))]

    def fit(self, knowledge: Any, *, rng: np.random.Generator) -> FittedStatistic:
        knowledge = require_knowledge(knowledge, self.name)
        column = self.choose_column(knowledge)
        value = knowledge.targets.iloc[0][column]

        def statistic(release: Any) -> NDArray[np.float64]:
            return np.array([float((release[column].to_numpy() == value).sum())])

        return _fit_threshold(knowledge, statistic, self.n_shadows, rng)
