"""A table generator of your own, as a config plugin: ``local-randomiser`` (ε-DP) and ``exact-copy`` (no privacy).

``local-randomiser`` randomises every record on its own, each of its d columns with ε/d: a category by k-ary
randomized response, a number by Laplace noise scaled to its public range.  ``exact-copy`` releases its input
unchanged: deterministic by design, the record games' worst case.  Registered when imported:
``[experiment] plugins = ["extending_generator"]``.  docs/extending.md, section 2.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from privgame.analysis.accounting import PrivacyClaim, pure_composition_claim
from privgame.analysis.discretise import PublicRanges, public_ranges
from privgame.engine.registry import MECHANISMS
from privgame.mechanisms import Mechanism


@MECHANISMS.register
@dataclass(frozen=True, slots=True)
class LocalRandomiser(Mechanism):
    """Randomises each record on its own: k-ary randomized response per category, Laplace noise per number.

    Parameters
    ----------
    epsilon : float, default=1.0
        The ε of a whole record; each of its d columns gets ε/d.
    ranges : mapping of str to (low, high), or sequence of (column, low, high)
        The PUBLIC inclusive range of every numeric column (the Laplace noise's scale, and where the noisy values
        are clipped back to); a numeric column without one is refused, never ranged from the data.

    Notes
    -----
    Privacy: ε-DP under replace-one (each record's d randomisations compose to ε; the released rows are shuffled).
    A category with k public values (its ``CategoricalDtype``) is replaced by a uniform draw from all k with
    probability k / (e^{ε/d} + k − 1); a number v in [lo, hi] becomes v + Laplace((hi − lo) d / ε), clipped to
    [lo, hi] and rounded in an integer column (post-processing).  Randomness: all from ``rng``.
    """

    name: ClassVar[str] = "local-randomiser"
    input_kind: ClassVar[str] = "table"
    release_kind: ClassVar[str] = "table"

    epsilon: float = 1.0
    ranges: PublicRanges | Mapping[str, tuple[float, float]] = ()

    def __post_init__(self) -> None:
        # frozen dataclass: validated (and normalised) here, the only place it is built
        if isinstance(self.epsilon, bool) or not isinstance(self.epsilon, int | float):
            raise TypeError(f"epsilon must be a number, got {self.epsilon!r}.")
        if not 0 < self.epsilon < math.inf:  # NaN fails too
            raise ValueError(f"epsilon must be positive and finite, got {self.epsilon!r}.")
        object.__setattr__(self, "epsilon", float(self.epsilon))
        object.__setattr__(self, "ranges", public_ranges(self.ranges))  # hashable (column, low, high) triples

    def release(self, data: pd.DataFrame, *, rng: np.random.Generator) -> pd.DataFrame:
        per_column = self.epsilon / data.shape[1]
        ranges = {column: (low, high) for column, low, high in self.ranges}
        out = {}
        for column in data.columns:
            values = data[column]
            if isinstance(values.dtype, pd.CategoricalDtype):
                k = len(values.cat.categories)
                codes = values.cat.codes.to_numpy().copy()
                redraw = rng.random(len(codes)) < k / (math.exp(per_column) + k - 1)
                codes[redraw] = rng.integers(0, k, int(redraw.sum()))
                out[column] = pd.Categorical.from_codes(codes, dtype=values.dtype)
                continue
            if column not in ranges:
                raise ValueError(f"ranges must give the public range of numeric column {column!r}, got none.")
            low, high = ranges[column]
            v = values.to_numpy(dtype=np.float64)
            if v.size and not (low <= v.min() and v.max() <= high):
                raise ValueError(f"{column} must lie in its public range [{low}, {high}], got {v.min()}..{v.max()}.")
            noisy = np.clip(v + rng.laplace(0.0, (high - low) / per_column, len(v)), low, high)
            out[column] = noisy if values.dtype.kind == "f" else np.rint(noisy).astype(values.dtype)
        table = pd.DataFrame(out)
        return table.iloc[rng.permutation(len(table))].reset_index(drop=True)

    def privacy_claim(self) -> PrivacyClaim:
        return pure_composition_claim([self.epsilon])  # pure ε-DP, replace-one (dp_accounting's events)


@MECHANISMS.register
@dataclass(frozen=True, slots=True)
class ExactCopy(Mechanism):
    """Releases its input table unchanged (not private: every record is published)."""

    name: ClassVar[str] = "exact-copy"
    input_kind: ClassVar[str] = "table"
    release_kind: ClassVar[str] = "table"
    deterministic: ClassVar[bool] = True  # it ignores rng by design: the contract checks that it does

    def release(self, data: pd.DataFrame, *, rng: np.random.Generator) -> pd.DataFrame:
        return data.reset_index(drop=True).copy()

    def privacy_claim(self) -> None:
        return None
