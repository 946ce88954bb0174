"""Target-specific counting queries into a classifier: the TAPAS query attack and its all-subsets variant.

A query is a subset S of the attributes; its value on a synthetic table is the number of rows that match the
target on every attribute of S (``==`` for categorical attributes; ``≥``, ``==`` or each in turn for numeric ones,
as ``numeric_match`` says).  TAPAS (Houssiau et al. 2022) samples queries by order (20 of order 1, 500 of order 2,
500 of order 3 by default); the variant Krčo et al. (2025) used from Imperial's code takes ALL 2^d − 1 subsets.
Both are computed from one pass: each row's *match mask* (bit j set when the row matches the target on attribute
j) is histogrammed over the 2^d masks, and a superset-sum (zeta) transform turns the histogram into the count of
every subset at once, ``count(S) = Σ_{M ⊇ S} hist(M)``, in d · 2^(d−1) additions — never one query at a time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privgame.analysis._checks import check_int
from privgame.attacks._base import Attack, FittedAttack
from privgame.attacks._tables import TableSchema
from privgame.attacks.knowledge import Knowledge, require_knowledge
from privgame.attacks.shadow import check_forest_params, fit_featurised

__all__ = ["MAX_ALL_SUBSETS_COLUMNS", "CountingQueries", "match_masks", "sample_subsets", "superset_counts"]

SUBSETS = ("all", "sampled")
NUMERIC_MATCH = ("ge", "eq", "both")
MATCH_RULES = ("ge", "eq")  # the rules of one match mask; numeric_match = "both" counts under each of them
MAX_ALL_SUBSETS_COLUMNS = 16  # 2^16 − 1 float32 features × 1,000 shadows is 262 MB already


def match_masks(
    codes: NDArray[np.float64], target: NDArray[np.float64], numeric: NDArray[np.bool_], rule: str = "ge"
) -> NDArray[np.int64]:
    """Per row, the bit mask of the attributes on which it matches the target.

    Parameters
    ----------
    codes : ndarray of shape (n, d)
        The table: categorical attributes as codes, numeric attributes as values (:class:`TableSchema.codes`).
    target : ndarray of shape (d,)
        The target in the same encoding.
    numeric : ndarray of bool, shape (d,)
        Which attributes are numeric.
    rule : {"ge", "eq"}, default="ge"
        A numeric attribute matches when the row's value is ``≥`` (or ``==``) the target's.

    Notes
    -----
    A missing or unknown value matches nothing, itself included, whether in the row or in the target: a
    categorical code −1 (see :meth:`TableSchema.codes`) never matches, nor does a numeric NaN (under either rule).
    """
    if rule not in MATCH_RULES:
        raise ValueError(f"rule must be one of {', '.join(MATCH_RULES)}, got {rule!r}.")
    d = codes.shape[1]
    if d > 62:
        raise ValueError(f"match masks need at most 62 attributes, got {d}.")
    match = codes == target[None, :]  # NaN == NaN is False: a numeric NaN never matches
    if rule == "ge" and numeric.any():
        match[:, numeric] = codes[:, numeric] >= target[None, numeric]
    categorical = ~numeric
    # −1 == −1 would match a missing row to a missing target; a valid code is ≥ 0, so a −1 target matches nothing
    match[:, categorical] &= codes[:, categorical] >= 0
    weights = np.left_shift(np.int64(1), np.arange(d, dtype=np.int64))
    return match.astype(np.int64) @ weights


def superset_counts(masks: NDArray[np.int64], d: int) -> NDArray[np.int64]:
    """``counts[S]`` = number of rows whose mask contains every bit of S, for all 2^d subsets S (zeta transform)."""
    counts = np.bincount(masks, minlength=1 << d).astype(np.int64)
    for j in range(d):
        view = counts.reshape(-1, 2, 1 << j)
        view[:, 0, :] += view[:, 1, :]
    return counts


def sample_subsets(d: int, orders: tuple[int, ...], *, rng: np.random.Generator) -> NDArray[np.int64]:
    """Distinct attribute subsets as bit masks: ``orders[k-1]`` random subsets of order k (capped at C(d, k))."""
    chosen: list[int] = []
    for k, wanted in enumerate(orders, start=1):
        if k > d or wanted == 0:
            continue
        total = math.comb(d, k)
        if wanted >= total:  # every subset of this order, in a fixed order
            chosen.extend(m for m in range(1, 1 << d) if m.bit_count() == k)
            continue
        seen: set[int] = set()
        while len(seen) < wanted:
            seen.add(int(sum(1 << int(j) for j in rng.choice(d, size=k, replace=False))))
        chosen.extend(sorted(seen))
    return np.array(chosen, dtype=np.int64)


@dataclass(frozen=True, slots=True)
class CountingQueries(Attack):
    """TAPAS-style target-specific counting queries into a RandomForest, trained on shadow synthetic tables.

    Parameters
    ----------
    subsets : {"all", "sampled"}, default="all"
        ``"all"``: every one of the 2^d − 1 attribute subsets (Krčo et al.'s variant; d ≤ 16);
        ``"sampled"``: ``orders[k-1]`` random subsets of each order k (TAPAS).
    numeric_match : {"ge", "eq", "both"}, default="ge"
        When a numeric attribute matches the target.  ``"ge"``: the row's value is ≥ the target's (Krčo et al.'s
        reproduction); the counts see the order (dominance) structure around the target, but hardly see one copy
        of a target that many rows dominate, and not at all against a reference record that dominates it (≥ on
        every numeric attribute, equal on the categorical ones), which adds 1 to every count just as the copy
        does.  ``"eq"``: the row's value equals the target's; the counts see exact copies and near-duplicates
        that share the target's numeric values.  ``"both"``: the ``"ge"`` counts and the ``"eq"`` counts side by
        side, so the forest can use either (twice the features).
    orders : tuple of int, default=(20, 500, 500)
        Queries per order for ``"sampled"`` (capped by the number of subsets of that order).
    n_shadows : int, default=1000
        Shadow synthetic tables to train on (≥ 2; half with the target, half with a reference record).
    n_estimators : int, default=100
    max_depth : int or None, default=10
        The RandomForest's settings (Krčo et al.: 100 trees, depth 10).
    n_jobs : int, default=1
        Threads of the forest.

    Notes
    -----
    Threat model: :mod:`privgame.attacks.knowledge` (auxiliary data, the target, n, black-box generator access).  The
    features of a table are the counts of its rows matching the target on each chosen subset, standardised on the
    shadows: one count per subset (2^d − 1 for ``"all"``, in increasing order of the subset's bit mask), or, for
    ``numeric_match = "both"``, the ``"ge"`` counts of every chosen subset followed by its ``"eq"`` counts in the
    same order (2 · (2^d − 1) for ``"all"``; on a subset of categorical attributes only, the two counts are
    equal).  A missing or unknown value matches nothing (:func:`match_masks`).  The score is the forest's
    probability that the target was in the generator's input; the decision threshold is 0.5.

    References
    ----------
    .. [1] F. Houssiau, J. Jordon, S. N. Cohen, O. Daniel, A. Elliott, J. Geddes, C. Mole, C. Rangel-Smith,
       L. Szpruch. TAPAS: a Toolbox for Adversarial Privacy Auditing of Synthetic Data. arXiv:2211.06550.
    .. [2] N. Krčo, F. Guépin, M. Meeus, B. Kulynych, Y.-A. de Montjoye. Lost in the Averages: Reassessing
       Record-Specific Privacy Risk Evaluation. arXiv:2405.15423.
    """

    name: ClassVar[str] = "tapas-queries"
    shadow_tables: ClassVar[bool] = True
    accepts: ClassVar[frozenset[str]] = frozenset({"table"})
    needs: ClassVar[str] = "auxiliary"

    subsets: str = "all"
    numeric_match: str = "ge"
    orders: tuple[int, ...] = (20, 500, 500)
    n_shadows: int = 1000
    n_estimators: int = 100
    max_depth: int | None = 10
    n_jobs: int = 1

    def __post_init__(self) -> None:
        if self.subsets not in SUBSETS:
            raise ValueError(f"subsets must be one of {', '.join(SUBSETS)}, got {self.subsets!r}.")
        if self.numeric_match not in NUMERIC_MATCH:
            raise ValueError(f"numeric_match must be one of {', '.join(NUMERIC_MATCH)}, got {self.numeric_match!r}.")
        if not isinstance(self.orders, tuple | list) or not self.orders:
            raise TypeError(f"orders must be a non-empty list of query counts per order, got {self.orders!r}.")
        object.__setattr__(
            self, "orders", tuple(check_int(f"orders[{k}]", v, low=0) for k, v in enumerate(self.orders))
        )
        if sum(self.orders) == 0:
            raise ValueError(f"orders must ask for at least one query, got {self.orders!r}.")
        check_forest_params(self)

    def match_rules(self) -> tuple[str, ...]:
        """The :func:`match_masks` rules whose counts are the features, in the order of the features."""
        return MATCH_RULES if self.numeric_match == "both" else (self.numeric_match,)

    def memory_bytes(self, n_releases: int, n_columns: int) -> int:
        """The feature matrix (float64, plus the forest's float32 copy) of ``n_releases`` tables."""
        if self.subsets == "all":
            n_queries = (1 << min(n_columns, 62)) - 1
        else:
            n_queries = sum(min(v, math.comb(n_columns, k)) for k, v in enumerate(self.orders, start=1))
        return 12 * n_releases * n_queries * len(self.match_rules())

    def table_incompatibility(self, table: pd.DataFrame) -> str | None:
        """Why this attack cannot run on tables with ``table``'s columns (checked before any work), or ``None``."""
        d = table.shape[1]
        if self.subsets == "all" and d > MAX_ALL_SUBSETS_COLUMNS:
            return (
                f"attack '{self.name}' with subsets = 'all' needs at most {MAX_ALL_SUBSETS_COLUMNS} columns "
                f"(2^d − 1 queries), got {d}; use subsets = 'sampled' or fewer columns"
            )
        if d > 62:
            return f"attack '{self.name}' needs at most 62 columns, got {d}"
        return None

    def featuriser(self, knowledge: Knowledge, *, rng: np.random.Generator, target: int = 0) -> Any:
        """The release → counts function for one target (the sampled subsets are drawn from ``rng``)."""
        schema = TableSchema.of(knowledge.auxiliary)
        d = len(schema.columns)
        if self.subsets == "all" and d > MAX_ALL_SUBSETS_COLUMNS:
            raise ValueError(
                f"subsets = 'all' needs at most {MAX_ALL_SUBSETS_COLUMNS} columns (2^d − 1 queries), got d = {d}; "
                "use subsets = 'sampled'."
            )
        target_codes = schema.codes(knowledge.targets.iloc[[target]])[0]
        numeric = ~schema.categorical
        chosen = None if self.subsets == "all" else sample_subsets(d, self.orders, rng=rng)
        rules = self.match_rules()

        def counts(masks: NDArray[np.int64]) -> NDArray[np.float32]:
            if chosen is None:
                return superset_counts(masks, d)[1:].astype(np.float32)
            # a few subsets of many attributes: count them directly, never allocating 2^d counts
            return ((masks[:, None] & chosen[None, :]) == chosen[None, :]).sum(axis=0).astype(np.float32)

        def featurise(release: Any) -> NDArray[np.float32]:
            codes = schema.codes(release)
            return np.concatenate([counts(match_masks(codes, target_codes, numeric, rule)) for rule in rules])

        return featurise

    def fit(self, knowledge: Any, *, rng: np.random.Generator) -> FittedAttack:
        return fit_featurised(self, require_knowledge(knowledge, self.name), rng)
