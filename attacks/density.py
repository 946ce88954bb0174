"""A density-ratio attack on synthetic tables, in the spirit of DOMIAS (van Breugel et al., AISTATS 2023).

A generator that overfits puts more synthetic mass near its training records than the population holds there.
DOMIAS scores a target by the ratio of two density estimates at it: of the synthetic data over that of reference
data from the population.  privgame's estimator is a kernel density on the mixed distance of
:func:`privgame.attacks.distance.mixed_distances` (categorical attributes that differ, plus each numeric attribute's
absolute difference scaled by the auxiliary range, capped at 1):

    p̂_S(t) = (1/|S|) Σ_{s ∈ S} exp(−D(t, s)/h),        score(t) = log p̂_S(t) − log p̂_A(t),

S the synthetic table, A the adversary's auxiliary (reference) records, h the ``bandwidth``.  The kernel is a
product over the attributes (exp(−1/h) per differing category, a capped Laplace kernel per numeric attribute), the
same for both densities, so its normalising constant cancels in the ratio.  An empty synthetic table has density
exp(−d/h) (d attributes: as if its one row differed in every attribute), the kernel's least value.  A missing value
differs from everything, as in the distance.

Like the distance attacks, it learns only its decision threshold, on shadow tables of the auxiliary data.

References
----------
.. [1] B. van Breugel, H. Sun, Z. Qian, M. van der Schaar. Membership Inference Attacks against Synthetic Data
   through Overfitting Detection. AISTATS 2023, arXiv:2302.12580.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from scipy import special

from privgame.analysis._checks import check_int, check_real
from privgame.attacks._base import Attack
from privgame.attacks._tables import TableSchema
from privgame.attacks.distance import FittedStatistic, _fit_threshold, mixed_distances
from privgame.attacks.knowledge import require_knowledge
from privgame.attacks.shadow import MAX_SHADOWS

__all__ = ["DensityRatio", "log_kernel_density"]


def log_kernel_density(
    codes: NDArray[np.float64], target: NDArray[np.float64], schema: TableSchema, bandwidth: float
) -> float:
    """``log((1/n) Σ_rows exp(−D(target, row)/h))`` (log-sum-exp), or ``−d/h`` for a table without rows."""
    if codes.shape[0] == 0:
        return -len(schema.columns) / bandwidth
    distances = mixed_distances(codes, target, schema)
    return float(special.logsumexp(-distances / bandwidth) - math.log(codes.shape[0]))


@dataclass(frozen=True, slots=True)
class DensityRatio(Attack):
    """Score = log of the synthetic data's kernel density at the target over the auxiliary data's.

    Parameters
    ----------
    bandwidth : float, default=0.5
        h > 0, in units of the mixed distance (one differing category is 1): small h counts near copies only,
        large h smooths towards the ratio of the two tables' sizes.
    n_shadows : int, default=100
        Shadow tables on which the decision threshold is learnt (≥ 2).

    Notes
    -----
    Threat model: :mod:`privgame.attacks.knowledge`; the auxiliary records are the reference data of the population.
    The estimator and its edge cases are in the module docstring.
    """

    name: ClassVar[str] = "density-ratio"
    shadow_tables: ClassVar[bool] = True
    accepts: ClassVar[frozenset[str]] = frozenset({"table"})
    needs: ClassVar[str] = "auxiliary"

    bandwidth: float = 0.5
    n_shadows: int = 100

    def __post_init__(self) -> None:
        object.__setattr__(self, "bandwidth", check_real("bandwidth", self.bandwidth, low=0.0, high=1e6, low_open=True))
        object.__setattr__(self, "n_shadows", check_int("n_shadows", self.n_shadows, low=2, high=MAX_SHADOWS))

    def fit(self, knowledge: Any, *, rng: np.random.Generator) -> FittedStatistic:
        knowledge = require_knowledge(knowledge, self.name)
        schema = TableSchema.of(knowledge.auxiliary)
        target = schema.codes(knowledge.targets.iloc[[0]])[0]
        h = self.bandwidth
        reference = log_kernel_density(schema.codes(knowledge.auxiliary), target, schema, h)

        def statistic(release: Any) -> NDArray[np.float64]:
            return np.array([log_kernel_density(schema.codes(release), target, schema, h) - reference])

        return _fit_threshold(knowledge, statistic, self.n_shadows, rng)
