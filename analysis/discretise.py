"""Discretisation of tables into integer codes, and back: the shared front end of the binning generators.

A :class:`Discretisation` says how each column of a table becomes a small integer code and how a code becomes a
value again:

* a categorical column (pandas ``CategoricalDtype``) is coded by its category codes, and decoded to its
  categories;
* a numeric column (integer or float dtype) is cut into bins given by non-decreasing edges; a code is decoded to a
  value drawn uniformly within its bin (for an integer column: uniformly over the integers in the bin), so a decoded
  table has the original dtypes.  A bin may hold a single value (a point mass such as a capital gain of 0): that
  code decodes to exactly that value.

Two ways to choose the bins of numeric columns:

:func:`fixed_bins`
    equal-width bins over PUBLIC ranges ``(column, low, high)``, or per column the PUBLIC bins of :func:`public_bins`
    (explicit edges, single-value bins included, or one bin per integer).  It reads only the table's schema (column
    names, dtypes, category lists), never a value, so the domain leaks nothing: this is the one to use in
    differentially private generators (PrivBayes; SPEC §7: deriving the domain from the private data is a known DP
    violation).
:func:`quantile_bins`
    bins at the data's own quantiles (or the given public bins, stretched to the data's own minimum and maximum).
    **NOT PRIVATE: the edges are computed from the data.**  Use it only for non-private generators (BayNet) and for
    fidelity reports.

For both, the categorical domain is the column's category list, which the loaders take from public documentation
(:mod:`privgame.data`); a category list built from the private data (``astype("category")``) leaks the values
present in it, and that is the caller's responsibility.

Examples
--------
>>> import pandas as pd
>>> df = pd.DataFrame({"age": [17, 40, 90], "sex": pd.Categorical(["F", "M", "F"], categories=["F", "M"])})
>>> codes, bins = discretise(df, method="fixed", n_bins=4, ranges={"age": (17, 90)})
>>> codes.tolist()
[[0, 0], [1, 1], [3, 0]]
>>> [str(t) for t in bins.decode(codes, rng=np.random.default_rng(0)).dtypes]
['int64', 'category']
"""

from __future__ import annotations

import functools
import itertools
import math
import numbers
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:
    import pandas as pd

from privgame.analysis._checks import check_int
from privgame.core._memo import BoundedMemo

__all__ = [
    "INTEGERS",
    "MAX_VALUE_BINS",
    "BinSpec",
    "ColumnBins",
    "Discretisation",
    "PublicBins",
    "PublicRanges",
    "check_table",
    "discretise",
    "fixed_bins",
    "public_bins",
    "public_ranges",
    "quantile_bins",
]

PublicRanges = tuple[tuple[str, float, float], ...]
"""Public numeric ranges in canonical form: ``(column, low, high)`` triples sorted by column name."""

INTEGERS = "integers"
"""The bin specification "one bin per integer of the column's range" (see :func:`public_bins`)."""

MAX_VALUE_BINS = 10_000
"""The most bins that ``"integers"`` may give one column (a larger range needs explicit edges)."""

BinSpec = tuple[float, ...] | str
"""How one numeric column is binned: non-decreasing edges (a value given twice is a single-value bin) or
:data:`INTEGERS`."""

PublicBins = tuple[tuple[str, BinSpec], ...]
"""Public per-column bins in canonical form: ``(column, spec)`` pairs sorted by column (see :func:`public_bins`)."""

Method = Literal["fixed", "quantile"]


@dataclass(frozen=True, slots=True)
class ColumnBins:
    """How one column is coded.

    Parameters
    ----------
    name : str
        The column's name.
    dtype : str
        ``"category"`` for a categorical column, else the numpy dtype name (``"int64"``, ``"float32"``, ...).
    edges : tuple of float, default=()
        Numeric columns: the ``n_codes + 1`` non-decreasing bin edges.  Bin ``j`` is ``[edges[j], edges[j+1])``;
        the last bin also holds its upper edge.  Integer columns get half-integer edges, so that every bin holds at
        least one integer (the single value ``v`` is the bin ``(v - 0.5, v + 0.5)``), and their edges increase
        strictly.  In a float column an edge may appear twice: ``edges[j] == edges[j+1] == v`` is the bin ``{v}``
        (it holds exactly ``v`` and decodes to it), and the bin after it is ``(v, edges[j+2])``.  A single
        degenerate bin ``(v, v)`` codes a constant column.
    categories : tuple, default=()
        Categorical columns: the category list (the code of a value is its position in it).
    ordered : bool, default=False
        Categorical columns: whether the ``CategoricalDtype`` is ordered.
    """

    name: str
    dtype: str
    edges: tuple[float, ...] = ()
    categories: tuple[Hashable, ...] = ()
    ordered: bool = False

    def __post_init__(self) -> None:
        if self.dtype == "category":
            if not self.categories or self.edges:
                raise ValueError(f"categorical column {self.name!r} needs categories and no edges.")
            return
        kind = np.dtype(self.dtype).kind
        if kind not in "iuf":
            raise ValueError(f"dtype of column {self.name!r} must be 'category', integer or float, got {self.dtype!r}.")
        edges = np.asarray(self.edges, dtype=np.float64)
        if edges.size < 2 or not np.all(np.isfinite(edges)) or np.any(np.diff(edges) < 0):
            raise ValueError(
                f"edges of column {self.name!r} must be >= 2 finite non-decreasing values, got {self.edges}."
            )
        if edges.size > 2 and kind in "iu" and np.any(np.diff(edges) <= 0):
            raise ValueError(f"edges of integer column {self.name!r} must increase strictly, got {self.edges}.")
        if edges.size > 2 and np.any(edges[2:] == edges[:-2]):
            raise ValueError(f"edges of column {self.name!r} must repeat no value more than twice, got {self.edges}.")
        if self.categories:
            raise ValueError(f"numeric column {self.name!r} takes no categories.")

    @property
    def kind(self) -> Literal["categorical", "integer", "float"]:
        """``"categorical"``, ``"integer"`` or ``"float"``."""
        if self.dtype == "category":
            return "categorical"
        return "float" if np.dtype(self.dtype).kind == "f" else "integer"

    @property
    def n_codes(self) -> int:
        """The number of codes (categories or bins)."""
        return len(self.categories) if self.dtype == "category" else len(self.edges) - 1

    @property
    def point_bins(self) -> tuple[int, ...]:
        """The codes of the single-value bins ``{v}`` given by a repeated edge (float columns; see ``edges``)."""
        return tuple(j for j in range(len(self.edges) - 1) if self.edges[j] == self.edges[j + 1])

    def encode(self, values: pd.Series) -> NDArray[np.int64]:
        """The codes of a column with this column's dtype (values outside the edges go to the end bins)."""
        if self.dtype == "category":
            return np.asarray(values.cat.codes, dtype=np.int64)
        inner = np.asarray(self.edges[1:-1], dtype=np.float64)
        x = np.asarray(values, dtype=np.float64)
        codes = np.searchsorted(inner, x, side="right").astype(np.int64)
        for j in self.point_bins:
            codes[x == self.edges[j]] = j
        return codes

    def decode(self, codes: NDArray[np.int64], rng: np.random.Generator) -> pd.Categorical | NDArray[Any]:
        """Values for ``codes``: categories, or values drawn uniformly within their bins (one uniform per row)."""
        import pandas as pd

        if self.dtype == "category":
            return pd.Categorical.from_codes(codes, dtype=_categorical_dtype(self.categories, self.ordered))
        edges = np.asarray(self.edges, dtype=np.float64)
        low, high = edges[codes], edges[codes + 1]
        u = rng.random(codes.shape[0])
        if self.kind == "float":
            return (low + u * (high - low)).astype(self.dtype)
        first = np.ceil(low)
        # the integers of [low, high), and of [low, high] in the last bin
        last = np.where(codes == self.n_codes - 1, np.floor(high), np.ceil(high) - 1.0)
        last = np.maximum(last, first)
        values = np.minimum(first + np.floor(u * (last - first + 1.0)), last)
        return values.astype(self.dtype)


@dataclass(frozen=True, slots=True)
class Discretisation:
    """How every column of a table is coded; ``encode`` turns a table into codes, ``decode`` codes into a table.

    Parameters
    ----------
    columns : tuple of ColumnBins
        One entry per column, in the table's column order.
    method : {"fixed", "quantile"}
        How the numeric bins were chosen (``"quantile"`` bins are derived from data and are not private).
    """

    columns: tuple[ColumnBins, ...]
    method: Method

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple(self.columns))
        if not self.columns or not all(isinstance(c, ColumnBins) for c in self.columns):
            raise TypeError("columns must be a non-empty sequence of ColumnBins.")
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"column names must be unique, got {names}.")
        if self.method not in ("fixed", "quantile"):
            raise ValueError(f"method must be one of 'fixed', 'quantile', got {self.method!r}.")

    @property
    def names(self) -> tuple[str, ...]:
        """The column names, in order."""
        return tuple(c.name for c in self.columns)

    @property
    def cardinalities(self) -> tuple[int, ...]:
        """The number of codes of each column."""
        return tuple(c.n_codes for c in self.columns)

    def encode(self, data: pd.DataFrame) -> NDArray[np.int64]:
        """Return the codes of ``data``, an int64 array of shape ``(n_rows, n_columns)``.

        ``data`` must have this discretisation's columns, in order, with the same dtypes kinds and category lists.
        Numeric values outside the bins are clipped into the end bins.

        Raises
        ------
        TypeError, ValueError
            If ``data`` is not a valid table (see :func:`check_table`) or does not match the columns.
        """
        import pandas as pd

        table = check_table("data", data)
        if tuple(table.columns) != self.names:
            raise ValueError(f"data must have the columns {list(self.names)}, got {list(table.columns)}.")
        out = np.empty((len(table), len(self.columns)), dtype=np.int64)
        for j, col in enumerate(self.columns):
            series = table.iloc[:, j]
            is_cat = isinstance(series.dtype, pd.CategoricalDtype)
            if is_cat != (col.dtype == "category"):
                raise ValueError(f"column {col.name!r} must be {_kind_text(col)}, got dtype {series.dtype}.")
            if is_cat and tuple(series.cat.categories) != col.categories:
                raise ValueError(
                    f"column {col.name!r} must have the categories {list(col.categories)}, "
                    f"got {list(series.cat.categories)}."
                )
            out[:, j] = col.encode(series)
        return out

    def decode(self, codes: ArrayLike, *, rng: np.random.Generator) -> pd.DataFrame:
        """Return the table of ``codes`` (shape ``(n_rows, n_columns)``), with the original columns and dtypes.

        Categorical codes become their categories; numeric codes become values drawn uniformly within their bins
        (uniformly over the integers in the bin for integer columns), one uniform per row of each numeric column,
        drawn from ``rng`` in column order.

        Raises
        ------
        ValueError
            If ``codes`` has the wrong shape or a code out of range.
        """
        import pandas as pd

        arr = np.asarray(codes)
        if arr.ndim != 2 or arr.shape[1] != len(self.columns) or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(
                f"codes must be an integer array of shape (n_rows, {len(self.columns)}), "
                f"got {arr.dtype} array of shape {arr.shape}."
            )
        arr = arr.astype(np.int64, copy=False)
        cards = np.asarray(self.cardinalities)
        if arr.size and (arr.min() < 0 or np.any(arr.max(axis=0) >= cards)):
            bad = int(np.argmax((arr < 0).any(axis=0) | (arr.max(axis=0) >= cards)))
            raise ValueError(
                f"codes of column {self.columns[bad].name!r} must lie in [0, {cards[bad] - 1}], "
                f"got values in [{arr[:, bad].min()}, {arr[:, bad].max()}]."
            )
        columns = {col.name: col.decode(arr[:, j], rng) for j, col in enumerate(self.columns)}
        return pd.DataFrame(columns, index=pd.RangeIndex(arr.shape[0]))


@functools.lru_cache(maxsize=256)
def _categorical_dtype(categories: tuple[Hashable, ...], ordered: bool) -> pd.CategoricalDtype:
    """The ``CategoricalDtype`` of a category list, built once (pandas validates the categories each time)."""
    import pandas as pd

    return pd.CategoricalDtype(categories=list(categories), ordered=ordered)


def check_table(name: str, data: Any) -> pd.DataFrame:
    """Check that ``data`` is a non-empty table that the binning generators support, and return it.

    Supported columns: pandas ``CategoricalDtype`` (string-like categories or any hashable values), numpy integer
    and float dtypes.  Missing values (NaN, a categorical code of -1) and infinite values are refused.

    Raises
    ------
    TypeError
        If ``data`` is not a DataFrame, a column name is not a ``str``, or a column has an unsupported dtype
        (object, string, bool, datetime, pandas' nullable extension types...).
    ValueError
        If it has no rows or no columns, duplicate column names, or missing / non-finite values.
    """
    import pandas as pd

    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame, got {type(data).__name__}.")
    if data.shape[0] == 0 or data.shape[1] == 0:
        raise ValueError(f"{name} must have at least one row and one column, got shape {data.shape}.")
    if not data.columns.is_unique:
        raise ValueError(f"{name} must have unique column names, got {list(data.columns)}.")
    unnamed = [column for column in data.columns if not isinstance(column, str)]
    if unnamed:
        # the codes are labelled by str(column): any other label would not survive the round trip
        raise TypeError(f"{name} must have str column names, got {unnamed[0]!r} ({type(unnamed[0]).__name__}).")
    for column, dtype in data.dtypes.items():
        if isinstance(dtype, pd.CategoricalDtype):
            if len(dtype.categories) == 0:
                raise ValueError(f"column {column!r} of {name} must have at least one category.")
            if np.any(np.asarray(data[column].cat.codes) < 0):
                raise ValueError(f"column {column!r} of {name} must have no missing values.")
        elif isinstance(dtype, np.dtype) and dtype.kind in "iu":
            continue
        elif isinstance(dtype, np.dtype) and dtype.kind == "f":
            if not np.all(np.isfinite(data[column].to_numpy())):
                raise ValueError(f"column {column!r} of {name} must have no missing or infinite values.")
        else:
            raise TypeError(
                f"column {column!r} of {name} must have a categorical, integer or float dtype, got {dtype}. "
                "Convert text columns to pandas.CategoricalDtype with the public category list."
            )
    return data


def public_ranges(ranges: Mapping[str, tuple[float, float]] | Iterable[tuple[str, float, float]]) -> PublicRanges:
    """Return public numeric ranges in canonical, hashable form: ``(column, low, high)`` triples sorted by column.

    Parameters
    ----------
    ranges : mapping of str to (low, high), or iterable of (column, low, high)
        Inclusive public bounds of numeric columns, e.g. :data:`privgame.data.ADULT_PUBLIC_RANGES`.

    Raises
    ------
    TypeError
        If ``ranges`` is neither form, or a bound is not a real number.
    ValueError
        If a column repeats, or a bound is not finite, or ``low >= high``.
    """
    if isinstance(ranges, Mapping):
        items: list[tuple[Any, ...]] = [
            (column, *bounds) if isinstance(bounds, tuple | list) else (column, bounds)
            for column, bounds in ranges.items()
        ]
    elif isinstance(ranges, Iterable) and not isinstance(ranges, str | bytes):
        items = [tuple(item) if isinstance(item, tuple | list) else (item,) for item in ranges]
    else:
        raise TypeError(f"ranges must be a mapping or a sequence of (column, low, high), got {type(ranges).__name__}.")
    out: dict[str, tuple[float, float]] = {}
    for item in items:
        if len(item) != 3 or not isinstance(item[0], str):
            raise TypeError(f"ranges: each range must be (column, low, high) with a str column, got {item!r}.")
        column, low, high = item
        for bound in (low, high):
            if isinstance(bound, bool) or not isinstance(bound, numbers.Real):
                raise TypeError(f"ranges: the bounds of column {column!r} must be real numbers, got {bound!r}.")
        lo, hi = float(low), float(high)
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ValueError(
                f"ranges: the range of column {column!r} must have finite low < high, got ({low!r}, {high!r})."
            )
        if column in out:
            raise ValueError(f"ranges must name each column once, got {column!r} twice.")
        out[column] = (lo, hi)
    return tuple((column, lo, hi) for column, (lo, hi) in sorted(out.items()))


def public_bins(
    bins: Mapping[str, Any] | Iterable[tuple[str, Any]],
    ranges: Mapping[str, tuple[float, float]] | Iterable[tuple[str, float, float]] | None = None,
) -> PublicBins:
    """Return public per-column bins in canonical, hashable form: ``(column, spec)`` pairs sorted by column.

    A spec says how one numeric column is cut, in place of the equal-width bins of :func:`fixed_bins`:

    * edges ``(e_0, ..., e_m)``, non-decreasing real numbers within the column's range ``[low, high]``: the bins
      ``[low, e_0), [e_0, e_1), ..., [e_m, high]`` (``low`` and ``high`` are added when they are not already the
      first and last edge).  A value given twice is a bin of its own holding only that value: ``(0, 0, 100)`` gives
      ``{0}``, ``(0, 100)`` and ``[100, high]``.  For an integer column the edges must be integers and a bin holds
      the integers in it, so ``(0, 1, 100)`` gives ``{0}``, ``1..99`` and ``100..high``: a single-value bin decodes
      to exactly its value;
    * ``"integers"`` (:data:`INTEGERS`): one bin per integer of the range, for integer columns with a small range
      (at most :data:`MAX_VALUE_BINS` integers), so that every value decodes to itself.

    Like the ranges, the specs must be public: chosen from documentation or domain knowledge, never from the data.

    Parameters
    ----------
    bins : mapping of str to spec, or iterable of (column, spec)
        A spec is a sequence of real numbers (the edges) or the string ``"integers"``; edges become floats.
    ranges : mapping or iterable of (column, low, high), optional
        The public ranges (:func:`public_ranges`).  When given, every column of ``bins`` must have one, every edge
        must lie in it and ``"integers"`` must give between 1 and :data:`MAX_VALUE_BINS` bins.

    Returns
    -------
    PublicBins

    Raises
    ------
    TypeError
        If ``bins`` is neither form, a column is not a ``str``, or a spec is neither ``"integers"`` nor a sequence of
        real numbers.
    ValueError
        If a column repeats; if edges are empty, not finite, decreasing, or repeat a value more than twice; or (with
        ``ranges``) if a column has no range, an edge lies outside it, or ``"integers"`` would give no bin or more
        than :data:`MAX_VALUE_BINS`.

    Examples
    --------
    >>> public_bins({"hours": "integers", "gain": [0, 1, 100]}, {"gain": (0, 99999), "hours": (1, 99)})
    (('gain', (0.0, 1.0, 100.0)), ('hours', 'integers'))
    """
    if isinstance(bins, Mapping):
        items: list[tuple[Any, ...]] = [(column, spec) for column, spec in bins.items()]
    elif isinstance(bins, Iterable) and not isinstance(bins, str | bytes):
        items = [tuple(item) if isinstance(item, tuple | list) else (item,) for item in bins]
    else:
        raise TypeError(f"bins must be a mapping or a sequence of (column, spec), got {type(bins).__name__}.")
    bounds = None if ranges is None else {column: (lo, hi) for column, lo, hi in public_ranges(ranges)}
    out: dict[str, BinSpec] = {}
    for item in items:
        if len(item) != 2 or not isinstance(item[0], str):
            raise TypeError(f"bins: each entry must be (column, spec) with a str column, got {item!r}.")
        column, spec = item
        if column in out:
            raise ValueError(f"bins must name each column once, got {column!r} twice.")
        out[column] = _check_spec(column, spec)
        if bounds is not None:
            if column not in bounds:
                raise ValueError(
                    f"bins of column {column!r} must come with a public range (column, low, high), got none."
                )
            _check_spec_in_range(column, out[column], *bounds[column])
    return tuple(sorted(out.items()))


def _check_spec(column: str, spec: Any) -> BinSpec:
    if isinstance(spec, str):
        if spec != INTEGERS:
            raise ValueError(f"bins of column {column!r} must be {INTEGERS!r} or a sequence of edges, got {spec!r}.")
        return INTEGERS
    if not isinstance(spec, tuple | list | np.ndarray):
        raise TypeError(f"bins of column {column!r} must be {INTEGERS!r} or a sequence of edges, got {spec!r}.")
    for edge in spec:
        if isinstance(edge, bool | np.bool_) or not isinstance(edge, numbers.Real):
            raise TypeError(f"bins: edges of column {column!r} must be real numbers, got {edge!r}.")
    edges = tuple(float(edge) for edge in spec)
    if not edges or not all(math.isfinite(edge) for edge in edges):
        raise ValueError(f"bins: edges of column {column!r} must be one or more finite numbers, got {spec!r}.")
    if any(b < a for a, b in itertools.pairwise(edges)):
        raise ValueError(f"bins: edges of column {column!r} must be sorted (non-decreasing), got {spec!r}.")
    if any(a == c for a, c in zip(edges, edges[2:], strict=False)):
        raise ValueError(f"bins: edges of column {column!r} must repeat no value more than twice, got {spec!r}.")
    return edges


def _check_spec_in_range(column: str, spec: BinSpec, low: float, high: float) -> None:
    if isinstance(spec, str):
        count = math.floor(high) - math.ceil(low) + 1
        if not 1 <= count <= MAX_VALUE_BINS:
            raise ValueError(
                f"'integers' bins of column {column!r} must number 1 to {MAX_VALUE_BINS} (one per integer of its "
                f"range), got {count} for the range ({low!r}, {high!r}); give explicit edges instead."
            )
        return
    if not (low <= spec[0] and spec[-1] <= high):
        raise ValueError(
            f"bins: edges of column {column!r} must lie in its public range [{low!r}, {high!r}], got {spec!r}."
        )


def _spec_column_bins(name: str, dtype: np.dtype[Any], spec: BinSpec, low: float, high: float) -> ColumnBins:
    """The ColumnBins of a numeric column cut by ``spec`` (see :func:`public_bins`) over ``[low, high]``."""
    _check_spec_in_range(name, spec, low, high)
    integer = dtype.kind in "iu"
    if isinstance(spec, str):
        if not integer:
            raise ValueError(f"'integers' bins need an integer column, got column {name!r} of dtype {dtype}.")
        first = math.ceil(low)
        edges = np.arange(first, math.floor(high) + 2, dtype=np.float64) - 0.5
        return ColumnBins(name, str(dtype), edges=tuple(float(e) for e in edges))
    cuts = list(spec)
    if integer:
        if not all(e.is_integer() for e in cuts):
            raise ValueError(f"edges of integer column {name!r} must be integers, got {spec!r}.")
        low, high = float(math.ceil(low)), float(math.floor(high))
    full = ([low] if cuts[0] > low else []) + cuts + ([high] if cuts[-1] < high else [])
    if len(full) == 1:  # low == high == the one edge (a one-integer range, a constant column): the bin {low}
        full.append(high)
    if not integer:
        return ColumnBins(name, str(dtype), edges=tuple(float(e) for e in full))
    # integer bins: [f_j, f_{j+1} - 1], {v} for f_j == f_{j+1} == v, v + 1 onwards after such a bin; the last closed
    m = len(full) - 1
    lower: list[float] = []
    upper: list[float] = []
    for j in range(m):
        a, b = full[j], full[j + 1]
        if a == b:
            lo_j, hi_j = a, a
        else:
            lo_j = a + 1 if j > 0 and full[j - 1] == a else a
            hi_j = b if j == m - 1 else b - 1
        if lo_j > hi_j:
            raise ValueError(
                f"every bin of integer column {name!r} must hold an integer, got the empty bin {j} "
                f"between edges {a!r} and {b!r} of {tuple(full)!r}."
            )
        lower.append(lo_j)
        upper.append(hi_j)
    edges_int = [lo_j - 0.5 for lo_j in lower] + [upper[-1] + 0.5]
    return ColumnBins(name, str(dtype), edges=tuple(float(e) for e in edges_int))


def _check_bins_columns(table: pd.DataFrame, specs: PublicBins) -> dict[str, BinSpec]:
    import pandas as pd

    numeric = {str(c) for c, t in table.dtypes.items() if not isinstance(t, pd.CategoricalDtype)}
    for column, _ in specs:
        if column not in numeric:
            what = "a categorical column" if column in table.columns else "not a column of the data"
            raise ValueError(f"bins must name numeric columns of the data, got {column!r} ({what}).")
    return dict(specs)


def fixed_bins(
    data: pd.DataFrame,
    ranges: Mapping[str, tuple[float, float]] | Iterable[tuple[str, float, float]],
    n_bins: int,
    bins: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None,
) -> Discretisation:
    """Equal-width bins over PUBLIC ranges, or PUBLIC per-column bins: the discretisation for DP generators.

    Only the schema of ``data`` is read (column names, dtypes and category lists), never a value.

    Parameters
    ----------
    data : DataFrame
        The table (or any table with the same schema).
    ranges : mapping of str to (low, high), or iterable of (column, low, high)
        Public inclusive bounds of every numeric column (entries for other columns are ignored).
    n_bins : int
        Bins per numeric column without an entry in ``bins``, ``>= 1``.
    bins : mapping or iterable of (column, spec), optional
        Public bins of some numeric columns (:func:`public_bins`: explicit edges, single-value bins included, or
        ``"integers"``), used instead of the ``n_bins`` equal-width bins; every column named must be a numeric column
        of ``data`` with a range in ``ranges``, and every edge must lie in that range.  ``None`` or empty: none.

    Returns
    -------
    Discretisation
        A column of ``bins`` is cut as its spec says.  Other float columns get ``n_bins`` bins of equal width over
        ``[low, high]``, other integer columns bins of near-equal numbers of consecutive integers over the integers
        of ``[low, high]``: ``min(n_bins, count)`` bins (so a range with at most ``n_bins`` integers gets one bin per
        value), with half-integer edges.  Values outside ``[low, high]`` are clipped into the end bins when encoded
        (and so decode to values inside the range).

    Raises
    ------
    TypeError, ValueError
        For an invalid table (:func:`check_table`), bad ``ranges`` (:func:`public_ranges`), ``bins``
        (:func:`public_bins`) or ``n_bins``; a ``ValueError`` names any numeric column that has no public range, a
        column of ``bins`` that is not a numeric column of ``data``, ``"integers"`` for a float column, a non-integer
        edge of an integer column, and a bin of an integer column that holds no integer.
    """
    table = check_table("data", data)
    # the type of n_bins too: 20.0 and True equal 20 and 1 as keys but are refused; a mapping or list argument
    # is not hashable, and its discretisation is computed every time
    key = (tuple(table.dtypes.items()), ranges, type(n_bins), n_bins, bins)
    return _FIXED_BINS.get(key, lambda: _fixed_bins(table, ranges, n_bins, bins))


_FIXED_BINS: BoundedMemo[Discretisation] = BoundedMemo(64)
"""The discretisations of the recent (schema, ranges, n_bins, bins) calls of :func:`fixed_bins` (they depend on
nothing else, and a generator run in a loop asks for the same one every time)."""


def _fixed_bins(
    table: pd.DataFrame,
    ranges: Mapping[str, tuple[float, float]] | Iterable[tuple[str, float, float]],
    n_bins: int,
    bins: Mapping[str, Any] | Iterable[tuple[str, Any]] | None,
) -> Discretisation:
    import pandas as pd

    n = check_int("n_bins", n_bins, low=1)
    bounds = {column: (lo, hi) for column, lo, hi in public_ranges(ranges)}
    specs = _check_bins_columns(table, public_bins(() if bins is None else bins))
    columns = []
    for column, dtype in table.dtypes.items():
        name = str(column)
        if isinstance(dtype, pd.CategoricalDtype):
            columns.append(_categorical_bins(name, dtype))
            continue
        if name not in bounds:
            raise ValueError(
                f"numeric column {name!r} needs a public range (column, low, high); deriving it from the data "
                "would not be private."
            )
        lo, hi = bounds[name]
        if dtype.kind != "f" and math.floor(hi) < math.ceil(lo):
            raise ValueError(f"the range of integer column {name!r} must hold an integer, got ({lo}, {hi}).")
        if name in specs:
            columns.append(_spec_column_bins(name, dtype, specs[name], lo, hi))
            continue
        if dtype.kind == "f":
            edges = np.linspace(lo, hi, n + 1)
        else:
            first, last = math.ceil(lo), math.floor(hi)
            count = last - first + 1
            m = min(n, count)
            edges = (first - 0.5 + (np.arange(m + 1) * count) // m).astype(np.float64)
        columns.append(ColumnBins(name, str(dtype), edges=tuple(float(e) for e in edges)))
    return Discretisation(tuple(columns), "fixed")


def quantile_bins(
    data: pd.DataFrame, n_bins: int, bins: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None
) -> Discretisation:
    """Bins at the data's quantiles.  NOT DIFFERENTIALLY PRIVATE: use only for non-private generators and reports.

    The bin edges of every numeric column are computed from the values in ``data``, so they reveal those values
    (the minimum and maximum exactly); a DP generator must use :func:`fixed_bins` with public ranges instead.

    Parameters
    ----------
    data : DataFrame
        The table whose numeric columns are binned.
    n_bins : int
        Target bins per numeric column, ``>= 1``; ties merge bins, so a column may get fewer.
    bins : mapping or iterable of (column, spec), optional
        Bins of some numeric columns (:func:`public_bins`), used instead of their quantile bins.  The range they
        cut is the column's own ``[min, max]`` in ``data``, stretched to the first and last edge when those lie
        outside it (also data-derived: not private).  ``"integers"`` gives one bin per integer from the minimum to
        the maximum (at most :data:`MAX_VALUE_BINS`).

    Returns
    -------
    Discretisation
        Float columns: edges at the ``n_bins + 1`` quantiles (``numpy.quantile``, linear), duplicates removed (a
        point mass shares its bin with the values above it); a constant column gets the single bin ``(v, v)``.
        Integer columns (half-integer edges, so every bin holds at least one integer): with at most ``n_bins``
        distinct values, a bin ``{v}`` for each value ``v`` (and bins for the gaps between them, which the data
        leave empty), so decoding gives back exactly the values; otherwise cut points at ``floor(q) + 0.5`` for
        the inner quantiles ``q``, outer edges ``min - 0.5`` and ``max + 0.5``, and a bin ``{v}`` of its own for
        every value that fills a whole quantile bin (two equal consecutive quantiles: a point mass such as 40
        hours a week, which would otherwise be spread over its neighbours by the uniform decoding).

    Raises
    ------
    TypeError, ValueError
        For an invalid table (:func:`check_table`), ``n_bins`` or ``bins`` (as in :func:`fixed_bins`).
    """
    import pandas as pd

    table = check_table("data", data)
    count = check_int("n_bins", n_bins, low=1)
    specs = _check_bins_columns(table, public_bins(() if bins is None else bins))
    probabilities = np.linspace(0.0, 1.0, count + 1)
    columns = []
    for column, dtype in table.dtypes.items():
        name = str(column)
        if isinstance(dtype, pd.CategoricalDtype):
            columns.append(_categorical_bins(name, dtype))
            continue
        values = table[column].to_numpy(dtype=np.float64)
        if name in specs:
            spec = specs[name]
            lo, hi = float(values.min()), float(values.max())
            if not isinstance(spec, str):
                lo, hi = min(lo, spec[0]), max(hi, spec[-1])
            columns.append(_spec_column_bins(name, dtype, spec, lo, hi))
            continue
        q = np.quantile(values, probabilities)
        if dtype.kind == "f":
            edges = np.unique(q).astype(np.float64)
            if edges.size == 1:
                edges = np.repeat(edges, 2)
        else:
            distinct = np.unique(values)
            if distinct.size <= count:
                edges = np.unique(np.concatenate((distinct - 0.5, distinct + 0.5)))
            else:
                masses = np.unique(q[1:][np.diff(q) == 0])
                inner = np.floor(q[1:-1]) + 0.5
                cuts = ([q[0] - 0.5], inner, masses - 0.5, masses + 0.5, [q[-1] + 0.5])
                edges = np.unique(np.concatenate(cuts))
        columns.append(ColumnBins(name, str(dtype), edges=tuple(float(e) for e in edges)))
    return Discretisation(tuple(columns), "quantile")


def discretise(
    data: pd.DataFrame,
    *,
    method: Method = "fixed",
    n_bins: int = 20,
    ranges: Mapping[str, tuple[float, float]] | Iterable[tuple[str, float, float]] | None = None,
    bins: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None,
) -> tuple[NDArray[np.int64], Discretisation]:
    """Discretise ``data``: return its codes (shape ``(n_rows, n_columns)``) and the :class:`Discretisation`.

    Parameters
    ----------
    data : DataFrame
    method : {"fixed", "quantile"}, default="fixed"
        ``"fixed"``: :func:`fixed_bins` over the public ``ranges`` (for DP generators).  ``"quantile"``:
        :func:`quantile_bins`, computed from the data (NOT private).
    n_bins : int, default=20
        Bins per numeric column.
    ranges : mapping or iterable of (column, low, high), optional
        Public ranges, required by ``"fixed"`` when ``data`` has numeric columns; ignored by ``"quantile"``.
    bins : mapping or iterable of (column, spec), optional
        Per-column bins (:func:`public_bins`) used instead of the equal-width or quantile bins of those columns.
    """
    if method == "fixed":
        found = fixed_bins(data, () if ranges is None else ranges, n_bins, bins)
    elif method == "quantile":
        found = quantile_bins(data, n_bins, bins)
    else:
        raise ValueError(f"method must be one of 'fixed', 'quantile', got {method!r}.")
    return found.encode(data), found


def _categorical_bins(name: str, dtype: pd.CategoricalDtype) -> ColumnBins:
    return ColumnBins(name, "category", categories=tuple(dtype.categories), ordered=bool(dtype.ordered))


def _kind_text(col: ColumnBins) -> str:
    return "categorical" if col.dtype == "category" else f"numeric ({col.dtype})"
