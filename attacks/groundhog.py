"""Groundhog (Stadler, Oprisanu, Troncoso 2022): summary statistics of the synthetic table into a classifier."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from privgame.analysis._checks import check_int
from privgame.attacks._base import Attack, FittedAttack
from privgame.attacks._tables import TableSchema
from privgame.attacks.knowledge import require_knowledge
from privgame.attacks.shadow import ShadowClassifier, attack_streams, check_forest_params

__all__ = ["Groundhog", "groundhog_features", "groundhog_featuriser"]


def groundhog_features(encoded: NDArray[np.float64], numeric: NDArray[np.bool_], n_bins: int) -> NDArray[np.float32]:
    """Per encoded column mean, median and variance; histograms of the numeric (scaled) columns; the upper triangle
    of the correlation matrix (0 where a column is constant)."""
    mean = encoded.mean(axis=0)
    median = np.median(encoded, axis=0)
    var = encoded.var(axis=0)
    hists = [
        np.histogram(np.clip(encoded[:, j], 0.0, 1.0), bins=n_bins, range=(0.0, 1.0))[0] / encoded.shape[0]
        for j in np.flatnonzero(numeric)
    ]
    centred = encoded - mean
    std = np.sqrt(var)
    with np.errstate(invalid="ignore", divide="ignore"):
        corr = (centred.T @ centred) / encoded.shape[0] / np.outer(std, std)
    corr[~np.isfinite(corr)] = 0.0
    upper = corr[np.triu_indices(encoded.shape[1], k=1)]
    return np.concatenate([mean, median, var, *hists, upper]).astype(np.float32)


def groundhog_featuriser(schema: TableSchema, n_bins: int) -> Any:
    """The release → :func:`groundhog_features` function of tables with ``schema`` (one-hot encoded, numeric
    columns scaled by the schema's ranges)."""
    numeric = np.concatenate(
        [[True] if cats is None else np.zeros(len(cats), dtype=bool) for cats in schema.categories]
    ).astype(bool)

    def featurise(release: Any) -> NDArray[np.float32]:
        return groundhog_features(schema.one_hot(release), numeric, n_bins)

    return featurise


@dataclass(frozen=True, slots=True)
class Groundhog(Attack):
    """Groundhog: per-column statistics, histograms and correlations of the synthetic table → RandomForest.

    Parameters
    ----------
    n_bins : int, default=10
        Histogram bins of each numeric column (scaled to [0, 1] by the auxiliary data's range).
    n_shadows : int, default=1000
        Shadow synthetic tables to train on (≥ 2).
    n_estimators : int, default=100
    max_depth : int or None, default=10
    n_jobs : int, default=1

    Notes
    -----
    Threat model: :mod:`privgame.attacks.knowledge`.  The table is one-hot encoded (every public category) with numeric
    columns scaled to [0, 1]; the features are each encoded column's mean, median and variance, the numeric
    columns' histograms and the upper triangle of the correlation matrix.  Unlike the counting queries these
    features are not specific to the target: Groundhog detects the target through its effect on the table's
    aggregate statistics.

    References
    ----------
    .. [1] T. Stadler, B. Oprisanu, C. Troncoso. Synthetic Data – Anonymisation Groundhog Day. USENIX Security
       2022, arXiv:2011.07018.
    """

    name: ClassVar[str] = "groundhog"
    shadow_tables: ClassVar[bool] = True
    accepts: ClassVar[frozenset[str]] = frozenset({"table"})
    needs: ClassVar[str] = "auxiliary"

    n_bins: int = 10
    n_shadows: int = 1000
    n_estimators: int = 100
    max_depth: int | None = 10
    n_jobs: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_bins", check_int("n_bins", self.n_bins, low=1))
        check_forest_params(self)

    def fit(self, knowledge: Any, *, rng: np.random.Generator) -> FittedAttack:
        knowledge = require_knowledge(knowledge, self.name)
        shadow_seed, forest_seed = attack_streams(rng, 2)
        featurise = groundhog_featuriser(TableSchema.of(knowledge.auxiliary), self.n_bins)
        return ShadowClassifier.from_shadows(
            knowledge, featurise, self, shadow_seed=shadow_seed, forest_seed=forest_seed
        )
