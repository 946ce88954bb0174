"""Synthpop: sequential CART synthesis with the semantics of R's ``synthpop::syn(method = "cart")`` (SPEC §7).

The columns are synthesised one at a time in the visit sequence.  The first visited column is a bootstrap sample of
its observed values; every later column is drawn from a classification or regression tree fitted on the real data
(y = the column, x = its predictors), by pushing the already-synthesised rows through the tree and copying, for each
synthetic row, the y value of a training row drawn uniformly from the leaf it reaches (R's ``syn.cart``).  The trees
are grown as R's ``rpart`` grows them with synthpop's settings (``minbucket = 5``, so ``minsplit = 15``,
``cp = 1e-8``, ``maxdepth = 30``); see :mod:`privgame.mechanisms.synth._cart` for the split search and the
complexity-parameter rule.

Where this implementation knowingly differs from R (synthpop 1.9-2, rpart 4.1.27)
---------------------------------------------------------------------------------
* Multi-class categorical targets with a categorical predictor: rpart searches all ``2^(m-1) - 1`` groupings of the
  m categories present in a node.  We do the same while ``2^(m-1) * n_classes <= 2^21`` (any m <= 16 with up to 64
  classes, which covers every node of Adult), and above that take the best of the orderings by each class's
  proportion and by the first principal component of the class-proportion vectors (Coppersmith, Hong & Hosking
  1999): exact when at most two classes are present in the node, a heuristic otherwise (see
  :mod:`privgame.mechanisms.synth._cart`).
  Numeric or binary targets are split optimally, as rpart does (categories ordered by mean / class rate).
* A synthetic row whose categorical value was not seen at a node (no training row of that node had it) walks down
  at random, to each child with probability proportional to the child's training rows.  rpart would first try up to
  five surrogate splits, then send the row to the larger child (and synthpop walks down uniformly at random where
  rpart stops).  There are no missing values here (Adult's '?' is a category), so surrogates play no other role,
  and they are not computed.
* Ties between equally good splits are broken as rpart breaks them (first predictor in data-column order, smallest
  threshold, first grouping in Gray-code order), but improvements are computed in a different floating-point order,
  so near-ties may resolve differently.
* Numbers: numeric columns are modelled as float64 (as R's doubles) and donors' values are copied exactly, so int64
  columns stay integers.  Ordered categoricals are ordinal predictors (split on their codes), as rpart treats
  ordered factors; as targets they are classes.
* synthpop's ``remove.lindep.syn`` is applied before each tree, as in R (a predictor with variance ``<= 1e-5`` or
  correlation ``>= 0.99999`` with y, categorical columns as their codes, is dropped, then collinear predictors are
  dropped while the smallest/largest eigenvalue ratio of their correlation matrix is below ``1e-5``).  If no
  predictor is left the column is bootstrapped (R may stop there).
* Categorical targets: R samples each synthetic value from the class proportions of the row's leaf; we copy the
  value of a training row drawn uniformly from the leaf, which has the same distribution.
* Not computed, as they do not change the fitted tree: rpart's 10-fold cross-validation (synthpop leaves it on; it
  only fills the cp table), competitor splits and surrogate splits.
* ``smoothing="density"`` follows ``syn.smooth``: values whose frequency exceeds 70 % are not smoothed, nor top-coded
  maxima; the bandwidth is R's ``bw.SJ`` (``density(..., width = "SJ")``: Sheather-Jones "solve-the-equation",
  binned as R does), its root found by Brent's method to R's tolerance; Gaussian noise is added, and the values are
  clipped to ``[min(y), max(y) + bandwidth]`` (``max(y)`` when top-coded) and rounded to the data's decimal places.
  Departures: (i) R's top-coding exclusion indexes the wrong vector (``ys[-which(ysyn == max(yobs))]``) and, when no
  synthetic value equals the observed maximum, smooths nothing; we exclude the synthetic values equal to the
  observed maximum, as intended.  (ii) R's ``decimalplaces()`` prints ``x - floor(x)`` to 15 significant digits,
  so it finds 15 or 16 places for most non-integers (``10.3 - 10`` prints as ``0.300000000000001``) and hardly
  rounds float columns; we round to the decimal places the values have (integer columns: 0 in both).  (iii) Where
  R stops with an error we skip smoothing (fewer than two values to smooth) or fall back to ``bw.nrd0`` (a sample
  "too sparse" for ``bw.SJ``, e.g. one with a zero interquartile range, or constant values).
* The visit sequence must contain every column (R keeps unsynthesised columns as real values, which would publish
  them); predictors must be visited before the column they predict (R would otherwise read unsynthesised values).
* Rows are synthesised with numpy's Generator, so the output cannot match R's stream value for value.

References
----------
.. [1] B. Nowok, G. M. Raab, C. Dibben. synthpop: Bespoke Creation of Synthetic Data in R. J. Stat. Softw. 74(11),
   2016.
.. [2] J. P. Reiter. Using CART to generate partially synthetic public use microdata. J. Off. Stat. 21(3), 2005.
.. [3] T. M. Therneau, E. J. Atkinson. An Introduction to Recursive Partitioning Using the RPART Routines (rpart
   vignette), 2023.
.. [4] D. Coppersmith, S. J. Hong, J. R. M. Hosking. Partitioning nominal attributes in decision trees. Data Min.
   Knowl. Discov. 3, 1999.
.. [5] S. J. Sheather, M. C. Jones. A reliable data-based bandwidth selection method for kernel density estimation.
   JRSS B 53(3), 1991.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Hashable, Iterable, Mapping, Set
from dataclasses import dataclass
from typing import Any, ClassVar

import numba
import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import optimize

from privgame.analysis._checks import check_int, check_real
from privgame.mechanisms._base import Mechanism
from privgame.mechanisms.synth._cart import MAX_DEPTH, fit_cart

__all__ = ["Synthpop"]

METHODS = ("cart", "sample")
SMOOTHING = ("none", "density")

_LINDEP_EPS = 1e-5
_LINDEP_MAXCOR = 0.99999


@dataclass(frozen=True, slots=True)
class Synthpop(Mechanism):
    """Sequential CART synthesis, as R's ``synthpop::syn()`` with ``method = "cart"``.

    Parameters
    ----------
    n_rows : int or None, default=None
        Rows of the synthetic table (``>= 1``); ``None``: as many as the input.
    visit_sequence : tuple of str or None, default=None
        The order in which columns are synthesised; it must name every column once.  ``None``: left to right.
    predictor_matrix : tuple of (str, tuple of str) or None, default=None
        ``(column, predictors)`` pairs (a mapping is accepted and converted): the predictors of ``column``'s tree,
        each visited before it.  Columns not listed are predicted from every column visited before them (synthpop's
        default).  Predictors enter the tree in the data's column order, which breaks ties between equal splits.
    methods : tuple of (str, str) or None, default=None
        ``(column, method)`` pairs (a mapping is accepted), method ``"cart"`` or ``"sample"`` (a bootstrap of the
        column's observed values, ignoring predictors).  Unlisted columns use ``"cart"``; the first visited column
        always uses ``"sample"``, as in synthpop.
    minbucket : int, default=5
        Fewest training rows in a leaf (rpart's ``minbucket``, synthpop's ``cart.minbucket``), ``>= 1``.
    minsplit : int or None, default=None
        Fewest rows of a node that may be split (``>= 1``); ``None``: ``3 * minbucket``, as rpart sets it.
    cp : float, default=1e-8
        rpart's complexity parameter (synthpop's ``cart.cp``), ``>= 0``: a split must reduce the tree's risk by
        ``cp`` times the root's risk (sum of squares, or misclassified rows for a categorical target).
    smoothing : {"none", "density"}, default="none"
        ``"density"`` adds Gaussian kernel noise to numeric columns after their synthesis (synthpop's
        ``smoothing = "density"``; see the module notes).  Default: none, as in R.
    maxfaclevels : int, default=60
        As synthpop's ``maxfaclevels`` (``>= 1``): a categorical column with more categories is refused when it is
        synthesised by CART or used as a predictor of a CART column (unless it is itself sampled).

    Notes
    -----
    Input: a DataFrame of numeric (numpy integer or float), boolean and categorical (``CategoricalDtype``) columns,
    with no missing values and at least one row; object/string columns must be converted to ``category`` first.
    Booleans are classes (as R's logicals); ordered categoricals are ordinal predictors and classes as targets.  Output:
    the same columns in the same order with the same dtypes (category lists included), ``n_rows`` rows, a fresh
    ``RangeIndex``; reproducible from ``rng``.  Numeric values are copied from real rows ("donors"), unless
    smoothed: synthpop's known disclosure risk, which record-level membership games measure.  No privacy claim.
    The module docstring lists every known difference from R.

    Examples
    --------
    >>> df = pd.DataFrame({"a": pd.Categorical(list("xyxyxyxyxyxyxyxyxyxy")), "b": np.arange(20)})
    >>> out = Synthpop().release(df, rng=np.random.default_rng(0))
    >>> out.shape, list(out.dtypes.astype(str))
    ((20, 2), ['category', 'int64'])
    """

    name: ClassVar[str] = "synthpop"
    input_kind: ClassVar[str] = "table"
    release_kind: ClassVar[str] = "table"

    n_rows: int | None = None
    visit_sequence: tuple[str, ...] | None = None
    # a mapping is accepted too (what a TOML table gives), and normalised to the sorted pairs
    predictor_matrix: tuple[tuple[str, tuple[str, ...]], ...] | Mapping[str, tuple[str, ...]] | None = None
    methods: tuple[tuple[str, str], ...] | Mapping[str, str] | None = None
    minbucket: int = 5
    minsplit: int | None = None
    cp: float = 1e-8
    smoothing: str = "none"
    maxfaclevels: int = 60

    def __post_init__(self) -> None:
        if self.n_rows is not None:
            object.__setattr__(self, "n_rows", check_int("n_rows", self.n_rows, low=1))
        if self.visit_sequence is not None:
            object.__setattr__(self, "visit_sequence", _name_tuple("visit_sequence", self.visit_sequence))
            if len(self.visit_sequence) == 0:
                raise ValueError("visit_sequence must name at least one column, got ().")
        if self.predictor_matrix is not None:
            pairs = _pairs("predictor_matrix", self.predictor_matrix)
            matrix = []
            for column, predictors in pairs:
                preds = _name_tuple(f"predictor_matrix[{column!r}]", predictors)
                if column in preds:
                    raise ValueError(f"predictor_matrix[{column!r}] must not contain the column itself, got {preds!r}.")
                matrix.append((column, preds))
            object.__setattr__(self, "predictor_matrix", tuple(matrix))
        if self.methods is not None:
            pairs = _pairs("methods", self.methods)
            for column, method in pairs:
                if method not in METHODS:
                    raise ValueError(f"methods[{column!r}] must be one of {list(METHODS)}, got {method!r}.")
            object.__setattr__(self, "methods", tuple(pairs))
        object.__setattr__(self, "minbucket", check_int("minbucket", self.minbucket, low=1))
        if self.minsplit is not None:
            object.__setattr__(self, "minsplit", check_int("minsplit", self.minsplit, low=1))
        object.__setattr__(self, "cp", check_real("cp", self.cp, low=0.0))
        object.__setattr__(self, "maxfaclevels", check_int("maxfaclevels", self.maxfaclevels, low=1))
        if not isinstance(self.smoothing, str) or self.smoothing not in SMOOTHING:
            raise ValueError(f"smoothing must be one of {list(SMOOTHING)}, got {self.smoothing!r}.")

    @property
    def effective_minsplit(self) -> int:
        """``minsplit``, or ``3 * minbucket`` when it is ``None`` (rpart's rule when only minbucket is given)."""
        return 3 * self.minbucket if self.minsplit is None else self.minsplit

    def privacy_claim(self) -> None:
        return None

    def release(self, data: Any, *, rng: np.random.Generator) -> pd.DataFrame:
        """Synthesise a table like ``data`` (see the class notes for what is accepted and returned)."""
        real = _read_table(data)
        columns = list(real)
        visit, predictors_of, method_of = self._plan(real, columns)
        n = len(data)
        m = n if self.n_rows is None else self.n_rows
        position = {c: i for i, c in enumerate(columns)}
        in_trees = {p for c in visit if method_of[c] == "cart" for p in predictors_of[c]}
        design = _Design(real, [c for c in columns if c in in_trees], m)
        lindep = _LindepStats(real, columns)
        synthetic: dict[Hashable, NDArray[Any]] = {}

        for column in visit:
            target = real[column]
            predictors = list(predictors_of[column])
            if method_of[column] == "cart" and predictors:
                predictors = _remove_lindep(real, predictors, target, lindep)
            if method_of[column] == "sample" or not predictors:
                donors = rng.integers(0, n, size=m)
            else:
                predictors.sort(key=position.__getitem__)
                donors = self._cart_donors(target, predictors, design, rng)
            values = target.values[donors]
            if self.smoothing == "density" and target.kind == "numeric":
                values = _smooth_density(values, target, rng)
            synthetic[column] = values
            design.add_synthetic(column, values)

        # built on positions, then labelled: the same frame as pd.DataFrame({c: ...}, columns=pd.Index(columns)),
        # without that constructor's look-up of every label in a second index of the dict's keys
        out = pd.DataFrame(dict(enumerate(real[c].output(synthetic[c]) for c in columns)))
        out.columns = pd.Index(columns)
        return out

    # -----------------------------------------------------------------------------------------------------------
    def _plan(
        self, real: dict[Hashable, _Column], columns: list[Hashable]
    ) -> tuple[list[Hashable], dict[Hashable, list[Hashable]], dict[Hashable, str]]:
        known = set(columns)
        if self.visit_sequence is None:
            visit: list[Hashable] = list(columns)
        else:
            visit = list(self.visit_sequence)
            unknown = [c for c in visit if c not in known]
            if unknown:
                raise ValueError(f"visit_sequence names columns that are not in the data: {unknown!r}.")
            missing = [c for c in columns if c not in set(visit)]
            if missing:
                raise ValueError(
                    f"visit_sequence must contain every column of the data (unsynthesised columns would be released "
                    f"as they are), missing {missing!r}."
                )
        rank = {c: i for i, c in enumerate(visit)}
        predictors_of = {c: list(visit[: rank[c]]) for c in visit}
        matrix = typing.cast(tuple[tuple[str, tuple[str, ...]], ...], self.predictor_matrix or ())  # pairs by now
        for column, preds in matrix:
            if column not in known:
                raise ValueError(f"predictor_matrix names a column that is not in the data: {column!r}.")
            unknown = [p for p in preds if p not in known]
            if unknown:
                raise ValueError(f"predictor_matrix[{column!r}] names columns that are not in the data: {unknown!r}.")
            late = [p for p in preds if rank[p] > rank[column]]
            if late:
                raise ValueError(
                    f"predictor_matrix[{column!r}] must only use columns visited before {column!r}, got {late!r}."
                )
            predictors_of[column] = list(preds)
        method_of = {c: "cart" for c in visit}
        for column, method in typing.cast(tuple[tuple[str, str], ...], self.methods or ()):
            if column not in known:
                raise ValueError(f"methods names a column that is not in the data: {column!r}.")
            method_of[column] = method
        method_of[visit[0]] = "sample"
        in_model = {c for c in visit if method_of[c] == "cart" and predictors_of[c]}
        in_model |= {p for c in in_model for p in predictors_of[c]}
        for col in visit:
            dtype = real[col].dtype
            levels = len(dtype.categories) if isinstance(dtype, pd.CategoricalDtype) else 0
            if levels > self.maxfaclevels and col in in_model and method_of[col] != "sample":
                raise ValueError(
                    f"column {col!r} has {levels} categories, more than maxfaclevels={self.maxfaclevels} (as "
                    f"synthpop, which stops here): merge categories, drop it from the predictor_matrix, sample it "
                    f'(methods={{{col!r}: "sample"}}) or raise maxfaclevels.'
                )
        return visit, predictors_of, method_of

    def _cart_donors(
        self, target: _Column, predictors: list[Hashable], design: _Design, rng: np.random.Generator
    ) -> NDArray[np.int64]:
        # the predictors' rows of the release's stacked arrays, in the order given (which breaks ties)
        num_rows: list[int] = []
        cat_rows: list[int] = []
        var_kind: list[int] = []
        var_pos: list[int] = []
        for column in predictors:
            kind, row = design.slot[column]
            rows = num_rows if kind == 0 else cat_rows
            var_kind.append(kind)
            var_pos.append(len(rows))
            rows.append(row)
        tree = fit_cart(
            target.class_codes if target.is_class else target.num,
            classification=target.is_class,
            n_classes=target.n_classes,
            xnum=_rows(design.xnum, num_rows),
            sidx=_rows(design.sidx, num_rows),
            xcat=_rows(design.xcat, cat_rows),
            ncat=_rows(design.ncat, cat_rows),
            var_kind=np.array(var_kind, dtype=np.int8),
            var_pos=np.array(var_pos, dtype=np.int64),
            minbucket=self.minbucket,
            minsplit=self.effective_minsplit,
            cp=self.cp,
            max_depth=MAX_DEPTH,
        )
        u_walk, u_donor = rng.random((2, design.m))  # one call, the same draws as two in a row
        return tree.donors(_rows(design.syn_num, num_rows), _rows(design.syn_cat, cat_rows), u_walk, u_donor)


# ---------------------------------------------------------------------------------------------------------------
# columns
# ---------------------------------------------------------------------------------------------------------------
class _Column:
    """One real column in the forms the trees need (computed lazily, once per release)."""

    def __init__(self, series: pd.Series) -> None:
        dtype = self.dtype = series.dtype
        if isinstance(dtype, pd.CategoricalDtype):
            self.kind = "ordered" if dtype.ordered else "categorical"
            self.values: NDArray[Any] = series.array.codes.astype(np.int64)  # the Categorical's codes (no Series)
            self.n_levels = len(dtype.categories)
        elif dtype.kind == "b" if isinstance(dtype, np.dtype) else pd.api.types.is_bool_dtype(dtype):
            self.kind = "bool"
            self.values = series.to_numpy(dtype=bool)
            self.n_levels = 2
        else:
            self.kind = "numeric"
            self.values = series.to_numpy()
            self.n_levels = 0
        self.split_numeric = self.kind in ("numeric", "ordered")
        self.is_class = self.kind != "numeric"
        self._num: NDArray[np.float64] | None = None
        self._order: NDArray[np.int64] | None = None
        self._class: tuple[NDArray[np.int64], int] | None = None

    @property
    def num(self) -> NDArray[np.float64]:
        """Values (numeric) or codes (categorical) as float64."""
        if self._num is None:
            self._num = np.ascontiguousarray(self.values, dtype=np.float64)
        return self._num

    @property
    def codes(self) -> NDArray[np.int64]:
        return np.ascontiguousarray(self.values, dtype=np.int64)

    @property
    def order(self) -> NDArray[np.int64]:
        """Row order sorting the column ascending (stable), computed once."""
        if self._order is None:
            order = _counting_order(self.num)  # empty unless the values are whole numbers in a short range
            self._order = order if order.shape[0] else np.argsort(self.num, kind="stable").astype(np.int64)
        return self._order

    def _classes(self) -> tuple[NDArray[np.int64], int]:
        if self._class is None:
            codes = self.codes
            if self.is_class:  # codes in [0, n_levels): np.unique's inverse without its sort
                dense, n_present = _dense_codes(codes, self.n_levels)
                self._class = dense, int(n_present)
            else:
                present, dense = np.unique(codes, return_inverse=True)
                self._class = dense.astype(np.int64), int(present.shape[0])
        return self._class

    @property
    def class_codes(self) -> NDArray[np.int64]:
        """Codes of the categories present, renumbered densely (R's ``factor(y)`` drops unused levels)."""
        return self._classes()[0]

    @property
    def n_classes(self) -> int:
        return self._classes()[1] if self.is_class else 0

    @property
    def decimals(self) -> int:
        """Decimal places of the data (at most 15), for rounding smoothed values; 0 for integer dtypes."""
        if np.issubdtype(self.values.dtype, np.integer):
            return 0
        distinct = np.unique(self.num)
        for places in range(16):
            scaled = distinct * 10.0**places
            if np.all(np.abs(scaled - np.round(scaled)) <= 1e-6):
                return places
        return 15

    def output(self, values: NDArray[Any]) -> Any:
        """Synthetic ``values`` (as in :attr:`values`) in the column's dtype, as an array (a DataFrame is built
        faster from arrays than from Series)."""
        if self.kind in ("categorical", "ordered"):
            assert isinstance(self.dtype, pd.CategoricalDtype)
            return pd.Categorical.from_codes(values, dtype=self.dtype, validate=False)  # codes of real rows
        if isinstance(self.dtype, np.dtype):
            return values.astype(self.dtype, copy=False)
        return pd.Series(values).astype(self.dtype)  # an extension dtype, e.g. pandas' nullable boolean


@numba.njit(cache=True)
def _counting_order(x: NDArray[np.float64]) -> NDArray[np.int64]:
    """``np.argsort(x, kind="stable")`` by a counting sort, for whole numbers spanning at most ``4 n + 256`` values
    (ages, hours, codes); an empty array otherwise.  The keys ``x - min(x)`` are then exact, distinct integers."""
    n = x.shape[0]
    lo = hi = x[0]
    for value in x:
        lo = min(lo, value)
        hi = max(hi, value)
    if not hi - lo <= 4 * n + 256:  # also NaN or infinite
        return np.empty(0, np.int64)
    start = np.zeros(np.int64(hi - lo) + 2, np.int64)
    for value in x:
        if value != np.floor(value):
            return np.empty(0, np.int64)
        start[np.int64(value - lo) + 1] += 1
    for k in range(start.shape[0] - 1):
        start[k + 1] += start[k]
    order = np.empty(n, np.int64)
    for i in range(n):  # rows in order within each value: stable
        key = np.int64(x[i] - lo)
        order[start[key]] = i
        start[key] += 1
    return order


@numba.njit(cache=True)
def _dense_codes(codes: NDArray[np.int64], n_levels: int) -> tuple[NDArray[np.int64], int]:
    """``codes`` (in ``[0, n_levels)``) renumbered over the levels present, and their number; ``codes`` itself when
    every level is present."""
    rank = np.zeros(n_levels, np.int64)
    for code in codes:
        rank[code] = 1
    n_present = 0
    for k in range(n_levels):
        present = rank[k]
        rank[k] = n_present  # the number of present levels below k
        n_present += present
    if n_present == n_levels:
        return codes, n_present
    dense = np.empty_like(codes)
    for i in range(codes.shape[0]):
        dense[i] = rank[codes[i]]
    return dense, n_present


class _Design:
    """The tree inputs of one release: the real predictors stacked once, the synthetic ones as they are made.

    Numeric and ordered columns are rows of ``xnum`` (values as float64), ``sidx`` (their stable ascending row
    order) and ``syn_num``; the other columns (categorical, boolean) rows of ``xcat`` (int64 codes), ``ncat`` (number
    of levels) and ``syn_cat``.  ``slot[column]`` is ``(0, row)`` or ``(1, row)`` accordingly; a tree takes its
    predictors' rows (:func:`_rows`), as :func:`fit_cart` and :meth:`CartTree.donors` expect; nothing writes to
    them (:func:`fit_cart` partitions a copy of ``sidx``).
    """

    def __init__(self, real: dict[Hashable, _Column], columns: list[Hashable], m: int) -> None:
        self.m = m
        self.slot: dict[Hashable, tuple[int, int]] = {}
        num: list[_Column] = []
        cat: list[_Column] = []
        for column in columns:
            col = real[column]
            group = num if col.split_numeric else cat
            self.slot[column] = (0 if col.split_numeric else 1, len(group))
            group.append(col)
        n = next(iter(real.values())).values.shape[0]
        self.xnum = _stack([col.num for col in num], n, np.float64)
        self.sidx = _stack([col.order for col in num], n, np.int64)
        self.xcat = _stack([col.codes for col in cat], n, np.int64)
        self.ncat = np.array([col.n_levels for col in cat], dtype=np.int64)
        self.syn_num = np.empty((len(num), m), dtype=np.float64)
        self.syn_cat = np.empty((len(cat), m), dtype=np.int64)

    def add_synthetic(self, column: Hashable, values: NDArray[Any]) -> None:
        """Record a synthesised column (values as in :attr:`_Column.values`) if a tree may use it."""
        if column in self.slot:
            kind, row = self.slot[column]
            if kind == 0:
                self.syn_num[row] = values  # numeric values or ordered codes, as float64
            else:
                self.syn_cat[row] = values  # codes (booleans as 0/1)


def _rows(array: NDArray[Any], rows: list[int]) -> NDArray[Any]:
    """``array[rows]``; a view when the rows are consecutive (as all columns before the target are, by default)."""
    if rows and rows[-1] - rows[0] == len(rows) - 1:  # rows increase (predictors in column order): consecutive
        return array[rows[0] : rows[-1] + 1]
    return array[rows]


def _stack(arrays: list[NDArray[Any]], n: int, dtype: type) -> NDArray[Any]:
    if not arrays:
        return np.zeros((0, n), dtype=dtype)
    return np.ascontiguousarray(np.stack(arrays), dtype=dtype)


# ---------------------------------------------------------------------------------------------------------------
# synthpop's remove.lindep.syn
# ---------------------------------------------------------------------------------------------------------------
class _LindepStats:
    """Statistics of all real columns that ``remove.lindep.syn`` needs, computed once per release, on first use.

    Each is the same float computation, column by column, as on the predictors alone: numpy reduces a C-ordered
    ``(n, p)`` array along axis 0 row after row, independently per column, whatever ``p >= 2`` is (a single column
    is summed pairwise instead, so one predictor takes the direct route), as :func:`_centre` and :func:`_passes` do;
    and it reduces each row of a C-ordered ``(p, n)`` array along axis 1 as that row alone (pairwise), which
    centres every column as a target at once.  ``passes[t, j]``: predictor ``j`` of target ``t`` passes the first
    test (variance and correlation).  ``corr`` is an approximate correlation matrix, used only to certify that the
    eigenvalue test cannot drop a predictor.
    """

    def __init__(self, real: dict[Hashable, _Column], columns: list[Hashable]) -> None:
        self._real = real
        self._columns = columns
        self._ready = False

    def _compute(self) -> None:
        columns = [self._real[c] for c in self._columns]
        x = np.empty((len(columns), columns[0].values.shape[0]), np.float64)  # (p, n): each column's num
        for i, col in enumerate(columns):
            x[i] = col.values
        self.position = {c: i for i, c in enumerate(self._columns)}
        self.row_of = {col: i for i, col in enumerate(columns)}  # a _Column (compared by identity) -> its row
        xc, xct, sumsq = _centre(x)
        y = np.empty_like(x)  # each column as a target, as _response has it
        for i, col in enumerate(columns):
            y[i] = col.class_codes if col.is_class else col.num
        yc = y - y.mean(axis=1)[:, None]
        yy = (yc * yc).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # columns that are no predictor too
            # = x.var(axis=0, ddof=1) to the bit: numpy's var sums the same squared deviations from the same mean
            self.var = sumsq / (x.shape[1] - 1)
            gram = _gram(xct)
            scale = np.sqrt(np.diag(gram))
            self.corr = gram / np.outer(scale, scale)
        self.passes = _passes(xc, yc, yy, sumsq, self.var)
        # Every predictor set that reaches the eigenvalue test holds columns of variance > eps only, and the
        # eigenvalues of a principal submatrix interlace the matrix's (Cauchy): the smallest is no smaller, the
        # largest no larger.  When the matrix of all those columns passes the certificate, so does every such set.
        free = np.flatnonzero(self.var > _LINDEP_EPS)
        self.all_certified = free.shape[0] < 2 or _certified(self.corr[free[:, None], free])
        self._ready = True

    def kept(self, predictors: list[Hashable], target: _Column) -> list[Hashable] | None:
        """``remove_lindep``'s answer for two or more predictors and rows, or ``None`` where it must run in full."""
        if not self._ready:
            self._compute()
        idx = np.array([self.position[c] for c in predictors], dtype=np.int64)
        kept = np.flatnonzero(self.passes[self.row_of[target], idx])
        if kept.shape[0] > 1 and not self.all_certified:
            sel = idx[kept]
            if not _certified(self.corr[sel[:, None], sel]):
                return None
        return [predictors[i] for i in kept]


def _certified(corr: NDArray[np.float64]) -> bool:
    """Whether ``remove_lindep``'s eigenvalue test keeps every column of this approximate correlation matrix.

    The full test computes eigh(corrcoef(kept predictors)) and drops one when w[0] / w[-1] < 1e-5.  Both correlation
    matrices are dot products of the same centred columns, equal up to ~n * eps, which moves an eigenvalue by far
    less than 1e-5 * w[-1] (w[-1] >= 1: the trace is the number of predictors), so w[0] > 2e-5 * w[-1] here means
    that the full test keeps them all; otherwise it decides.  That is checked without the eigenvalues: w[-1] is at
    most the largest absolute row sum r (Gershgorin), and w[0] > 2e-5 * r when ``corr - 2e-5 * r * I`` has a
    Cholesky factorisation (its rounding errors, of order p^2 * eps, are far below these margins).
    """
    if not np.isfinite(corr).all():
        return False
    return _positive_definite(corr, 2.0 * _LINDEP_EPS * float(np.abs(corr).sum(axis=1).max()))


@numba.njit(cache=True)
def _positive_definite(a: NDArray[np.float64], shift: float) -> bool:
    """Whether the Cholesky factorisation of ``a - shift * I`` (symmetric, lower triangle read) finds positive
    pivots, i.e. the matrix is positive definite."""
    p = a.shape[0]
    low = np.zeros((p, p), np.float64)
    for j in range(p):
        pivot = a[j, j] - shift
        for k in range(j):
            pivot -= low[j, k] * low[j, k]
        if not pivot > 0.0:
            return False
        low[j, j] = np.sqrt(pivot)
        for i in range(j + 1, p):
            total = a[i, j]
            for k in range(j):
                total -= low[i, k] * low[j, k]
            low[i, j] = total / low[j, j]
    return True


@numba.njit(cache=True, error_model="numpy")
def _centre(
    x: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The columns centred, ``(n, p)`` and ``(p, n)``, and their sums of squares, for ``x`` of shape ``(p, n >= 1)``.

    To the bit ``xc = xs - xs.mean(axis=0)`` and ``(xc * xc).sum(axis=0)`` for ``xs = x.T`` C-ordered: numpy sums
    along axis 0 row after row (from row 0, one rounded sum per row) and divides by n, as here (0 / 0 is NaN:
    ``error_model="numpy"``); this loop only spares the temporary arrays and the slow strided reductions.
    """
    p, n = x.shape
    sums = x[:, 0].copy()
    for i in range(1, n):
        for j in range(p):
            sums[j] += x[j, i]
    mean = sums / n
    xc = np.empty((n, p), np.float64)
    xct = np.empty((p, n), np.float64)
    sumsq = np.empty(p, np.float64)
    for i in range(n):
        for j in range(p):
            d = x[j, i] - mean[j]
            xc[i, j] = d
            xct[j, i] = d
            sumsq[j] = d * d if i == 0 else sumsq[j] + d * d
    return xc, xct, sumsq


@numba.njit(cache=True, fastmath={"reassoc", "nsz", "contract"})
def _gram(xct: NDArray[np.float64]) -> NDArray[np.float64]:
    """``xct @ xct.T``, summed in any order (so vectorised; NaN and infinity still propagate), for ``corr`` only."""
    p, n = xct.shape
    gram = np.empty((p, p), np.float64)
    for a in range(p):
        for b in range(a, p):
            total = 0.0
            for i in range(n):
                total += xct[a, i] * xct[b, i]
            gram[a, b] = total
            gram[b, a] = total
    return gram


@numba.njit(cache=True, error_model="numpy")
def _passes(
    xc: NDArray[np.float64],
    yc: NDArray[np.float64],
    yy: NDArray[np.float64],
    sumsq: NDArray[np.float64],
    var: NDArray[np.float64],
) -> NDArray[np.bool_]:
    """``remove_lindep``'s first test of predictor ``j`` for target ``t``, for all pairs, with numpy's floats.

    That is ``var[j] > eps and not cor >= maxcor`` with ``cor = (xc * yc[t][:, None]).sum(axis=0)[j] /
    sqrt(sumsq[j] * yy[t])`` for a C-ordered ``xc`` of two or more rows.  numpy sums that product row after row
    (from row 0, one rounded product and one rounded sum per row), as here, and the rest is one IEEE operation per
    value (``error_model="numpy"``: 0 / 0 is NaN, which keeps the predictor, as in numpy and R); this loop only
    spares the temporary arrays and the slow strided reductions.
    """
    n, p = xc.shape
    n_targets = yc.shape[0]
    dots = np.empty((n_targets, p), np.float64)
    for t in range(n_targets):
        for j in range(p):
            dots[t, j] = xc[0, j] * yc[t, 0]
    for i in range(1, n):
        for t in range(n_targets):
            v = yc[t, i]
            for j in range(p):
                dots[t, j] += xc[i, j] * v
    passes = np.empty((n_targets, p), np.bool_)
    for t in range(n_targets):
        for j in range(p):
            cor = dots[t, j] / np.sqrt(sumsq[j] * yy[t])
            passes[t, j] = var[j] > _LINDEP_EPS and not cor >= _LINDEP_MAXCOR
    return passes


def _response(target: _Column) -> NDArray[np.float64]:
    """The target as ``remove.lindep.syn`` correlates it: its values, or its class codes, as float64."""
    return target.class_codes.astype(np.float64) if target.is_class else target.num


def _remove_lindep(
    real: dict[Hashable, _Column], predictors: list[Hashable], target: _Column, stats: _LindepStats | None = None
) -> list[Hashable]:
    """Drop constant, y-duplicating and collinear predictors as ``remove.lindep.syn`` does.

    ``stats`` (the release's column statistics) gives the same answer faster where it can.
    """
    if stats is not None and len(predictors) > 1 and target.values.shape[0] > 1:
        fast = stats.kept(predictors, target)
        if fast is not None:
            return fast
    y = _response(target)
    x = np.stack([real[c].num for c in predictors], axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        # R: var() of a single row is NA, which drops the predictor (numpy would warn and return NaN)
        keep = x.var(axis=0, ddof=1) > _LINDEP_EPS if x.shape[0] > 1 else np.zeros(x.shape[1], dtype=bool)
        xc = x - x.mean(axis=0)
        yc = y - y.mean()
        cor = (xc * yc[:, None]).sum(axis=0) / np.sqrt((xc * xc).sum(axis=0) * (yc * yc).sum())
    keep &= ~(cor >= _LINDEP_MAXCOR)  # R: NA correlations (constant y) keep the predictor
    kept = np.flatnonzero(keep)
    while kept.shape[0] > 1:
        corr = np.corrcoef(x[:, kept], rowvar=False)
        w, vecs = np.linalg.eigh(corr)  # ascending: w[0] smallest, w[-1] largest
        if not w[0] / w[-1] < _LINDEP_EPS:
            break
        kept = np.delete(kept, int(np.argmax(np.abs(vecs[:, 0]))))
    return [predictors[i] for i in kept]


# ---------------------------------------------------------------------------------------------------------------
# synthpop's syn.smooth(smoothing = "density") with R's bw.SJ
# ---------------------------------------------------------------------------------------------------------------
def _smooth_density(values: NDArray[Any], target: _Column, rng: np.random.Generator) -> NDArray[Any]:
    y_obs = target.num
    y = np.asarray(values, dtype=np.float64).copy()
    distinct, counts = np.unique(y, return_counts=True)
    smooth = np.ones(y.shape[0], dtype=bool)
    top = int(np.argmax(counts))
    if counts[top] / y.shape[0] > 0.7:
        smooth &= y != distinct[top]
    max_y: float | None = None
    if distinct.shape[0] >= 2 and 10 * counts[-2] < counts[-1] - counts[-2]:  # top-coded data
        max_y = float(y_obs.max())
        smooth &= y != max_y
    index = np.flatnonzero(smooth)
    if index.shape[0] < 2:
        return values
    bandwidth = _bandwidth(y[index])
    noisy = rng.normal(y[index], bandwidth)
    upper = float(y_obs.max()) + bandwidth if max_y is None else max_y
    noisy = np.maximum(np.minimum(noisy, upper), float(y_obs.min()))
    y[index] = np.round(noisy, target.decimals)
    return y.astype(target.values.dtype) if np.issubdtype(target.values.dtype, np.integer) else y


def _bandwidth(x: NDArray[np.float64]) -> float:
    """R's ``bw.SJ(x)`` ("ste"); ``bw.nrd0(x)`` where R's ``bw.SJ`` stops with an error."""
    try:
        return bw_sj(x)
    except ValueError:
        return bw_nrd0(x)


def bw_nrd0(x: NDArray[np.float64]) -> float:
    """R's ``bw.nrd0``: Silverman's rule of thumb, ``0.9 min(sd, IQR / 1.34) n^(-1/5)``."""
    hi = float(np.std(x, ddof=1))
    q75, q25 = np.quantile(x, [0.75, 0.25])
    lo = min(hi, float(q75 - q25) / 1.34)
    if not lo:
        lo = hi or abs(float(x[0])) or 1.0
    return 0.9 * lo * x.shape[0] ** -0.2


_DELMAX = 1000.0


def _phi(cnt: NDArray[np.float64], d: float, h: float, n: int, order: int) -> float:
    delta = (np.arange(cnt.shape[0]) * d / h) ** 2
    keep = delta < _DELMAX
    delta, c = delta[keep], cnt[keep]
    if order == 4:
        total = 2.0 * float(np.sum(np.exp(-delta / 2) * (delta * delta - 6 * delta + 3) * c)) + 3.0 * n
        return total / (n * (n - 1.0) * h**5) / math.sqrt(2 * math.pi)
    poly = delta**3 - 15 * delta**2 + 45 * delta - 15
    total = 2.0 * float(np.sum(np.exp(-delta / 2) * poly * c)) - 15.0 * n
    return total / (n * (n - 1.0) * h**7) / math.sqrt(2 * math.pi)


def bw_sj(x: NDArray[np.float64], nb: int = 1000) -> float:
    """R's ``bw.SJ(x, method = "ste")``: Sheather & Jones' solve-the-equation bandwidth, with R's binning.

    Raises
    ------
    ValueError
        Where R stops: fewer than two points, constant data, or a sample too sparse for the functionals.
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    if n < 2:
        raise ValueError("bw_sj needs at least 2 data points.")
    span = float(x.max() - x.min())
    if span == 0.0:
        raise ValueError("bw_sj: data are constant.")
    d = span * 1.01 / nb
    if n > nb / 2:  # R bins the values, then counts pairs by bin distance
        xx = np.trunc(np.abs(x) / d) * np.sign(x)
        xx = (xx - xx.min() + 1).astype(np.int64)
        bins = np.bincount(xx, minlength=nb + 1)[1 : nb + 1].astype(np.float64)
        cnt = np.correlate(bins, bins, mode="full")[nb - 1 :].copy()
        cnt[0] = float(np.sum(bins * (bins - 1))) / 2.0
    else:
        ii = np.trunc(x / d).astype(np.int64)
        diff = np.abs(ii[:, None] - ii[None, :])[np.tril_indices(n, -1)]
        cnt = np.bincount(diff, minlength=nb)[:nb].astype(np.float64)
    sd = float(np.std(x, ddof=1))
    q75, q25 = np.quantile(x, [0.75, 0.25])
    scale = min(sd, float(q75 - q25) / 1.349)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a = 1.24 * scale * n ** (-1 / 7)
        b = 1.23 * scale * n ** (-1 / 9)
        c1 = 1 / (2 * math.sqrt(math.pi) * n)
        td = -_phi(cnt, d, b, n, 6) if b > 0 else math.nan
        if not (math.isfinite(td) and td > 0):
            raise ValueError("bw_sj: sample is too sparse to find TD.")
        alph2 = 1.357 * (_phi(cnt, d, a, n, 4) / td) ** (1 / 7)
        if not math.isfinite(alph2):
            raise ValueError("bw_sj: sample is too sparse to find alph2.")

        def fsd(h: float) -> float:
            return float((c1 / _phi(cnt, d, alph2 * h ** (5 / 7), n, 4)) ** (1 / 5) - h)

        hmax = 1.144 * scale * n ** (-1 / 5)
        lower, upper = 0.1 * hmax, hmax
        itry = 1
        while fsd(lower) * fsd(upper) > 0:
            if itry > 99:
                raise ValueError("bw_sj: no solution in the specified range of bandwidths.")
            if itry % 2:
                upper *= 1.2
            else:
                lower /= 1.2
            itry += 1
        return float(optimize.brentq(fsd, lower, upper, xtol=0.1 * lower))


# ---------------------------------------------------------------------------------------------------------------
# argument checks
# ---------------------------------------------------------------------------------------------------------------
def _name_tuple(name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str | bytes | Mapping | Set) or not isinstance(value, Iterable):  # ordered names only
        raise TypeError(f"{name} must be a tuple of column names, got {value!r}.")
    names = tuple(value)
    for item in names:
        if not isinstance(item, str):
            raise TypeError(f"{name} must hold column names (strings), got {item!r}.")
    if len(set(names)) != len(names):
        raise ValueError(f"{name} must not repeat a column, got {names!r}.")
    return names


def _pairs(name: str, value: Any) -> list[tuple[Any, Any]]:
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a mapping or a tuple of (column, value) pairs, got {value!r}.")
    else:
        items = []
        for pair in value:
            if isinstance(pair, str | bytes) or not isinstance(pair, tuple | list) or len(pair) != 2:
                raise TypeError(f"{name} must hold (column, value) pairs, got {pair!r}.")
            items.append((pair[0], pair[1]))
    columns = [c for c, _ in items]
    for column in columns:
        if not isinstance(column, str):
            raise TypeError(f"{name} must name columns by strings, got {column!r}.")
    if len(set(columns)) != len(columns):
        raise ValueError(f"{name} must list each column once, got {columns!r}.")
    return sorted(items, key=lambda item: str(item[0]))


def _read_table(data: Any) -> dict[Hashable, _Column]:
    """Check the input table and read each column once (see the class notes for what is accepted)."""
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"data must be a pandas DataFrame, got {type(data).__name__}.")
    if data.shape[0] < 1 or data.shape[1] < 1:
        raise ValueError(f"data must have at least one row and one column, got shape {data.shape}.")
    columns: list[Hashable] = list(data.columns)
    if len(set(columns)) != len(columns):
        raise ValueError(f"data must have distinct column names, got {columns!r}.")
    real: dict[Hashable, _Column] = {}
    for column, series in data.items():
        dtype = series.dtype
        if isinstance(dtype, np.dtype) and dtype.kind in "biuf":
            pass  # numpy booleans and real numbers, as the tests below classify them (floats: NaN checked below)
        elif isinstance(dtype, pd.CategoricalDtype):
            if series.array.codes.min() < 0:  # a missing value is the code -1
                raise ValueError(f"column {column!r} must not contain missing values (make them a category).")
        elif pd.api.types.is_bool_dtype(dtype):
            if not isinstance(dtype, np.dtype) and series.isna().any():  # numpy's booleans cannot be missing
                raise ValueError(f"column {column!r} must not contain missing values.")
        elif pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype):
            if isinstance(dtype, pd.api.extensions.ExtensionDtype):
                raise TypeError(
                    f"column {column!r} has the nullable dtype {dtype}; convert it to a numpy dtype "
                    f"(e.g. int64 or float64) first."
                )
        else:
            hint = (
                " Convert text columns to pandas 'category' first (data[c].astype('category'))."
                if pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)
                else ""
            )
            raise TypeError(f"column {column!r} must be numeric, boolean or categorical, got dtype {dtype}.{hint}")
        col = _Column(series)
        # integers are finite as float64 (up to 2^64), floats are checked as float64 (the trees' form)
        if col.kind == "numeric" and dtype.kind == "f" and not np.isfinite(col.num).all():
            raise ValueError(f"column {column!r} must hold finite values (no NaN or infinity).")
        real[column] = col
    return real
