"""The public domain of a tabular data set: column order, category lists, integer and float ranges, public bins.

A domain is what an auditor may assume public about a data set's columns, without reading a row: the generators
that must not derive their domain from the private sample (PrivBayes, SPEC §7), the model encodings
(:mod:`privgame.data.features`) and the checks of a user's file (:mod:`privgame.data.files`) read it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from privgame.analysis.discretise import public_bins

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PublicDomain"]


@dataclass(frozen=True, slots=True)
class PublicDomain:
    """The public domain of a tabular data set: column order, category lists, numeric ranges and public bins.

    Hashable, so it (or its ``categories``/``ranges``/``bins`` tuples) can be a field of a frozen mechanism.

    Parameters
    ----------
    name : str
        The data set's name.
    columns : tuple of str
        All columns, in the data's order.
    categories : tuple of (str, tuple of str)
        ``(column, categories)`` for each categorical column, in column order.
    ranges : tuple of (str, number, number)
        ``(column, low, high)`` inclusive bounds for each numeric column, in column order: integers for an integer
        column, any finite reals for a float column.
    bins : tuple of (str, spec), default=()
        ``(column, spec)`` public bins of some numeric columns (:func:`privgame.analysis.discretise.public_bins`: edges
        within the column's range, a single-value bin such as ``{0}`` included, or ``"integers"``); the binning
        generators use them instead of equal-width bins (PrivBayes's and BayNet's ``bins``).  An integer column's
        edges are integers.
    floats : tuple of str, default=()
        The numeric columns that hold reals (``float64``); the other numeric columns hold integers (``int64``).
    """

    name: str
    columns: tuple[str, ...]
    categories: tuple[tuple[str, tuple[str, ...]], ...]
    ranges: tuple[tuple[str, Any, Any], ...]
    bins: tuple[tuple[str, tuple[Any, ...] | str], ...] = ()
    floats: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        categorical = [column for column, _ in self.categories]
        numeric = [column for column, _, _ in self.ranges]
        if sorted(categorical + numeric) != sorted(self.columns) or len(set(self.columns)) != len(self.columns):
            raise ValueError(
                f"columns must be the categorical and numeric columns, each once, got columns={self.columns!r}, "
                f"categorical={categorical!r}, numeric={numeric!r}."
            )
        unknown = [c for c in self.floats if c not in numeric]
        if unknown:
            raise ValueError(f"floats must name numeric columns, got {unknown[0]!r}.")
        for column, cats in self.categories:
            if len(cats) == 0 or len(set(cats)) != len(cats):
                raise ValueError(f"categories of {column!r} must be non-empty and distinct, got {cats!r}.")
        for column, low, high in self.ranges:
            integer = column not in self.floats
            for bound in (low, high):
                if isinstance(bound, bool) or not isinstance(bound, int | float) or not math.isfinite(bound):
                    raise ValueError(f"range of {column!r} must be finite numbers, got ({low!r}, {high!r}).")
                if integer and not float(bound).is_integer():
                    raise ValueError(
                        f"range of integer column {column!r} must have integer bounds, got ({low!r}, {high!r})."
                    )
            if not low <= high:
                raise ValueError(f"range of {column!r} must have low <= high, got ({low!r}, {high!r}).")
        for column, spec in public_bins(self.bins, self.ranges):
            if column in self.floats or isinstance(spec, str):
                continue
            if not all(edge.is_integer() for edge in spec):
                raise ValueError(f"edges of integer column {column!r} must be integers, got {spec!r}.")

    def categories_of(self, column: str) -> tuple[str, ...]:
        """The public category list of a categorical ``column``."""
        for name, cats in self.categories:
            if name == column:
                return cats
        raise KeyError(f"{column!r} is not a categorical column of {self.name!r}.")

    def range_of(self, column: str) -> tuple[Any, Any]:
        """The public inclusive ``(low, high)`` bounds of a numeric ``column``."""
        for name, low, high in self.ranges:
            if name == column:
                return low, high
        raise KeyError(f"{column!r} is not a numeric column of {self.name!r}.")

    def is_float(self, column: str) -> bool:
        """Whether the numeric ``column`` holds reals (else integers)."""
        return column in self.floats

    def dtypes(self) -> dict[str, pd.CategoricalDtype | np.dtype[Any]]:
        """The pandas dtype of every column, in column order: categorical, ``float64`` or ``int64``."""
        import pandas as pd

        cats = dict(self.categories)
        return {
            column: pd.CategoricalDtype(list(cats[column]))
            if column in cats
            else np.dtype(np.float64 if column in self.floats else np.int64)
            for column in self.columns
        }

    def restricted(self, columns: tuple[str, ...]) -> PublicDomain:
        """This domain on ``columns`` only (in that order), e.g. a game's subset of the attributes."""
        keep = set(columns)
        return PublicDomain(
            self.name,
            tuple(columns),
            tuple(sorted((c for c in self.categories if c[0] in keep), key=lambda c: columns.index(c[0]))),
            tuple(sorted((r for r in self.ranges if r[0] in keep), key=lambda r: columns.index(r[0]))),
            tuple(b for b in self.bins if b[0] in keep),
            tuple(c for c in self.floats if c in keep),
        )
