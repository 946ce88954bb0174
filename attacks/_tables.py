"""Table encodings shared by the attacks on synthetic data: codes for matching, one-hot for statistics."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import NDArray

__all__ = ["TableSchema"]


@dataclass(frozen=True, eq=False)
class TableSchema:
    """The columns of a table as the attacker knows them (from its auxiliary data's dtypes).

    Attributes
    ----------
    columns : tuple of str
    categorical : ndarray of bool, shape (d,)
        Which columns are categorical (``CategoricalDtype`` or bool).
    categories : tuple of (tuple or None)
        Each categorical column's category list (``None`` for numeric columns).
    low, span : ndarray of shape (d,)
        Numeric columns' range on the auxiliary data (span 1 where constant or categorical), for scaling.
    """

    columns: tuple[str, ...]
    categorical: NDArray[np.bool_]
    categories: tuple[tuple[object, ...] | None, ...]
    low: NDArray[np.float64]
    span: NDArray[np.float64]
    # per column, the categorical dtypes seen with exactly the schema's categories (held, so never another object
    # at the same address): a release's columns share their dtype object, compared once instead of per table
    _matching: dict[int, list[pd.CategoricalDtype]] = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def of(cls, auxiliary: pd.DataFrame) -> TableSchema:
        cats: list[tuple[object, ...] | None] = []
        low, span = np.zeros(auxiliary.shape[1]), np.ones(auxiliary.shape[1])
        for j, c in enumerate(auxiliary.columns):
            dtype = auxiliary[c].dtype
            if isinstance(dtype, pd.CategoricalDtype):
                cats.append(tuple(dtype.categories))
            elif pd.api.types.is_bool_dtype(dtype):
                cats.append((False, True))
            elif pd.api.types.is_numeric_dtype(dtype):
                cats.append(None)
                values = auxiliary[c].to_numpy(dtype=np.float64)
                low[j] = values.min()
                span[j] = values.max() - values.min() or 1.0
            else:
                raise TypeError(f"column {c!r} must be categorical, boolean or numeric, got dtype {dtype}.")
        return cls(
            tuple(str(c) for c in auxiliary.columns), np.array([c is not None for c in cats]), tuple(cats), low, span
        )

    def check(self, table: pd.DataFrame) -> None:
        if not isinstance(table, pd.DataFrame):
            raise TypeError(f"the release must be a pandas DataFrame, got {type(table).__name__}.")
        if tuple(str(c) for c in table.columns) != self.columns:
            raise ValueError(f"the release must have the columns {list(self.columns)!r}, got {list(table.columns)!r}.")

    def codes(self, table: pd.DataFrame) -> NDArray[np.float64]:
        """``(n, d)`` float64: categorical columns as codes into the SCHEMA's category list, numeric columns as
        values.  The release's own category order is never trusted.

        A missing categorical value, or one outside the schema's categories, is −1; a missing numeric value is
        NaN.  Both match nothing, themselves included: :func:`privgame.attacks.queries.match_masks` never counts a −1 or
        NaN row or target as a match, :func:`privgame.attacks.distance.mixed_distances` counts it as differing (by 1),
        and :meth:`one_hot` puts a −1 in no category's column.
        """
        self.check(table)
        out = np.empty(table.shape, dtype=np.float64)
        for j, (c, col) in enumerate(table.items()):
            cats = self.categories[j]
            if cats is not None:
                same = isinstance(col.dtype, pd.CategoricalDtype) and self._same_categories(j, col.dtype)
                # get_indexer gives −1 for a missing or unknown value (pd.Categorical warns on unknown values)
                out[:, j] = col.array.codes if same else pd.Index(cats).get_indexer(pd.Index(col))
            elif pd.api.types.is_numeric_dtype(col.dtype) and not pd.api.types.is_bool_dtype(col.dtype):
                out[:, j] = col.to_numpy(dtype=np.float64, na_value=np.nan)
            else:
                raise TypeError(
                    f"column {c!r} of the release must be numeric, as in the auxiliary data, got {col.dtype}."
                )
        return out

    def _same_categories(self, j: int, dtype: pd.CategoricalDtype) -> bool:
        """Whether ``dtype``'s categories are column j's, in the schema's order (the codes then are the schema's)."""
        seen = self._matching.setdefault(j, [])
        if any(dtype is known for known in seen):
            return True
        if tuple(dtype.categories) != self.categories[j]:
            return False
        if len(seen) < 8:  # a few dtypes per column: a generator's own, the data's
            seen.append(dtype)
        return True

    def one_hot(self, table: pd.DataFrame) -> NDArray[np.float64]:
        """One-hot categorical columns (every public category, so widths never depend on the data) and numeric
        columns scaled by the auxiliary range."""
        codes = self.codes(table)
        parts = []
        for j, cats in enumerate(self.categories):
            if cats is None:
                parts.append(((codes[:, j] - self.low[j]) / self.span[j])[:, None])
            else:
                onehot = np.zeros((codes.shape[0], len(cats)))
                valid = codes[:, j] >= 0
                onehot[np.flatnonzero(valid), codes[valid, j].astype(np.intp)] = 1.0
                parts.append(onehot)
        return np.hstack(parts) if parts else np.zeros((codes.shape[0], 0))
