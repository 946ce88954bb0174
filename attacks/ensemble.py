"""An ensemble shadow-modelling attack on synthetic tables: every feature privgame's table attacks compute, stacked
into one shadow classifier.

The features of a synthetic table, for one target t, are the concatenation of the families named in
``features`` (in this order):

- ``"queries"``: TAPAS's counting queries on t (:class:`privgame.attacks.queries.CountingQueries`), by default with
  ``numeric_match = "both"``: the ``"ge"`` counts (the order structure around t) and the ``"eq"`` counts (exact
  copies and near-duplicates), which ``"ge"`` alone misses when a reference record dominates t;
- ``"groundhog"``: Groundhog's per-column statistics, histograms and correlations
  (:func:`privgame.attacks.groundhog.groundhog_featuriser`);
- ``"distance"``: the mixed distance of t to its closest synthetic row, the mean of its 5 closest, and the
  number of rows at distance 0 (exact copies of t on every attribute)
  (:func:`privgame.attacks.distance.mixed_distances`);
- ``"density"``: the log density ratio of :class:`privgame.attacks.density.DensityRatio` at t.

A RandomForest learns from the features of shadow tables (half generated with t in the input, half without),
standardised on the shadows, as every shadow-modelling attack here does
(:class:`privgame.attacks.shadow.ShadowClassifier`). The shadows are built from the attack's stream 0, as those of the
other shadow attacks, so on the same target and knowledge the ensemble, TAPAS and Groundhog train on the same shadow
tables (and share them through the artefact cache).

References
----------
.. [1] F. Houssiau et al. TAPAS: a Toolbox for Adversarial Privacy Auditing of Synthetic Data. arXiv:2211.06550.
.. [2] T. Stadler, B. Oprisanu, C. Troncoso. Synthetic Data – Anonymisation Groundhog Day. USENIX Security 2022.
.. [3] B. van Breugel, H. Sun, Z. Qian, M. van der Schaar. Membership Inference Attacks against Synthetic Data
   through Overfitting Detection. AISTATS 2023.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privgame.analysis._checks import check_int, check_real
from privgame.attacks._base import Attack, FittedAttack
from privgame.attacks._tables import TableSchema
from privgame.attacks.density import log_kernel_density
from privgame.attacks.distance import mixed_distances
from privgame.attacks.groundhog import groundhog_featuriser
from privgame.attacks.knowledge import Knowledge, require_knowledge
from privgame.attacks.queries import CountingQueries
from privgame.attacks.shadow import check_forest_params, fit_featurised

__all__ = ["ENSEMBLE_FEATURES", "Ensemble"]

#: the feature families, in the order they are stacked
ENSEMBLE_FEATURES = ("queries", "groundhog", "distance", "density")
_CLOSEST = 5  # the distance family's mean of the closest rows


@dataclass(frozen=True, slots=True)
class Ensemble(Attack):
    """TAPAS counts (eq and ge), Groundhog, distances and the density ratio into one shadow classifier.

    Parameters
    ----------
    features : tuple of str, default=("queries", "groundhog", "distance", "density")
        The feature families stacked (see the module docstring), each at most once.
    subsets, numeric_match, orders
        The counting queries' (:class:`privgame.attacks.queries.CountingQueries`); ``numeric_match`` defaults to
        ``"both"``.
    n_bins : int, default=10
        Groundhog's histogram bins.
    bandwidth : float, default=0.5
        The density ratio's kernel bandwidth h.
    n_shadows : int, default=1000
        Shadow synthetic tables to train on (≥ 2; half with the target).
    n_estimators : int, default=100
    max_depth : int or None, default=10
    n_jobs : int, default=1
        The RandomForest's settings.

    Notes
    -----
    Threat model: :mod:`privgame.attacks.knowledge` (auxiliary data, the target, n, black-box generator access), as for
    each family alone.  Cost: the shadows of one TAPAS attack (the generator runs dominate), plus each family's
    features per table.
    """

    name: ClassVar[str] = "ensemble"
    shadow_tables: ClassVar[bool] = True
    accepts: ClassVar[frozenset[str]] = frozenset({"table"})
    needs: ClassVar[str] = "auxiliary"

    features: tuple[str, ...] = ENSEMBLE_FEATURES
    subsets: str = "all"
    numeric_match: str = "both"
    orders: tuple[int, ...] = (20, 500, 500)
    n_bins: int = 10
    bandwidth: float = 0.5
    n_shadows: int = 1000
    n_estimators: int = 100
    max_depth: int | None = 10
    n_jobs: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.features, str) or not isinstance(self.features, tuple | list) or not self.features:
            raise TypeError(
                f"features must be a non-empty list of {', '.join(ENSEMBLE_FEATURES)}, got {self.features!r}."
            )
        for name in self.features:
            if name not in ENSEMBLE_FEATURES:
                raise ValueError(f"features must name {', '.join(ENSEMBLE_FEATURES)}, got {name!r}.")
        if len(set(self.features)) != len(self.features):
            raise ValueError(f"features must name each family once, got {list(self.features)!r}.")
        object.__setattr__(self, "features", tuple(self.features))
        queries = self._queries()  # checks subsets, numeric_match and orders
        object.__setattr__(self, "orders", queries.orders)
        object.__setattr__(self, "bandwidth", check_real("bandwidth", self.bandwidth, low=0.0, high=1e6, low_open=True))
        object.__setattr__(self, "n_bins", check_int("n_bins", self.n_bins, low=1, high=10_000))
        check_forest_params(self)

    def _queries(self) -> CountingQueries:
        return CountingQueries(
            subsets=self.subsets, numeric_match=self.numeric_match, orders=self.orders, n_shadows=self.n_shadows
        )

    def memory_bytes(self, n_releases: int, n_columns: int) -> int:
        """The counting queries' feature matrix (the largest family) when they are stacked."""
        return self._queries().memory_bytes(n_releases, n_columns) if "queries" in self.features else 0

    def table_incompatibility(self, table: pd.DataFrame) -> str | None:
        """The counting queries' limits on the columns, when they are stacked."""
        if "queries" not in self.features:
            return None
        reason = self._queries().table_incompatibility(table)
        return None if reason is None else reason.replace("attack 'tapas-queries'", f"attack '{self.name}'")

    def featuriser(self, knowledge: Knowledge, *, rng: np.random.Generator) -> Any:
        """The release → stacked features function for the knowledge's target (index 0)."""
        schema = TableSchema.of(knowledge.auxiliary)
        target = schema.codes(knowledge.targets.iloc[[0]])[0]
        parts: list[Any] = []
        if "queries" in self.features:
            parts.append(self._queries().featuriser(knowledge, rng=rng))
        if "groundhog" in self.features:
            parts.append(groundhog_featuriser(schema, self.n_bins))
        if "distance" in self.features:

            def distances(release: Any) -> NDArray[np.float32]:
                codes = schema.codes(release)
                if codes.shape[0] == 0:  # no row: as far as the attributes allow, no copy
                    d = float(len(schema.columns))
                    return np.array([d, d, 0.0], dtype=np.float32)
                gaps = np.sort(mixed_distances(codes, target, schema))
                copies = float(np.sum(gaps == 0.0))
                return np.array([gaps[0], gaps[:_CLOSEST].mean(), copies], dtype=np.float32)

            parts.append(distances)
        if "density" in self.features:
            h = self.bandwidth
            reference = log_kernel_density(schema.codes(knowledge.auxiliary), target, schema, h)

            def density(release: Any) -> NDArray[np.float32]:
                ratio = log_kernel_density(schema.codes(release), target, schema, h) - reference
                return np.array([ratio], dtype=np.float32)

            parts.append(density)

        def featurise(release: Any) -> NDArray[np.float32]:
            return np.concatenate([np.asarray(part(release), dtype=np.float32) for part in parts])

        return featurise

    def fit(self, knowledge: Any, *, rng: np.random.Generator) -> FittedAttack:
        return fit_featurised(self, require_knowledge(knowledge, self.name), rng)
