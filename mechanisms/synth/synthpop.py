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
        columns = _check_table(data)
        visit, predictors_of, method_of = self._plan(data, columns)
        n = len(data)
        m = n if self.n_rows is None else self.n_rows
        real = {c: _Column(data[c]) for c in columns}
        position = {c: i for i, c in enumerate(columns)}
        synthetic: dict[Hashable, _Synth] = {}
        lindep = _LindepStats(real, columns)

        for column in visit:
            target = real[column]
            predictors = list(predictors_of[column])
            if method_of[column] == "cart" and predictors:
                predictors = _remove_lindep(real, predictors, target, lindep)
            if method_of[column] == "sample" or not predictors:
                donors = rng.integers(0, n, size=m)
            else:
                predictors.sort(key=position.__getitem__)
                donors = self._cart_donors(
                    target, [real[c] for c in predictors], [synthetic[c] for c in predictors], rng
                )
            values = target.values[donors]
            if self.smoothing == "density" and target.kind == "numeric":
                values = _smooth_density(values, target, rng)
            synthetic[column] = _Synth.of(target, values)

        return pd.DataFrame({c: synthetic[c].output(real[c]) for c in columns}, columns=pd.Index(columns))

    # -----------------------------------------------------------------------------------------------------------
    def _plan(
        self, data: pd.DataFrame, columns: list[Hashable]
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
            dtype = data[col].dtype
            levels = len(dtype.categories) if isinstance(dtype, pd.CategoricalDtype) else 0
            if levels > self.maxfaclevels and col in in_model and method_of[col] != "sample":
                raise ValueError(
                    f"column {col!r} has {levels} categories, more than maxfaclevels={self.maxfaclevels} (as "
                    f"synthpop, which stops here): merge categories, drop it from the predictor_matrix, sample it "
                    f'(methods={{{col!r}: "sample"}}) or raise maxfaclevels.'
                )
        return visit, predictors_of, method_of

    def _cart_donors(
        self, target: _Column, real_x: list[_Column], syn_x: list[_Synth], rng: np.random.Generator
    ) -> NDArray[np.int64]:
        n = int(target.values.shape[0])
        m = int(syn_x[0].num.shape[0])
        var_kind = np.empty(len(real_x), np.int8)
        var_pos = np.empty(len(real_x), np.int64)
        num_real: list[NDArray[np.float64]] = []
        num_order: list[NDArray[np.int64]] = []
        num_syn: list[NDArray[np.float64]] = []
        cat_real: list[NDArray[np.int64]] = []
        cat_syn: list[NDArray[np.int64]] = []
        ncat: list[int] = []
        for v, (col, syn) in enumerate(zip(real_x, syn_x, strict=True)):
            if col.split_numeric:
                var_kind[v], var_pos[v] = 0, len(num_real)
                num_real.append(col.num)
                num_order.append(col.order)
                num_syn.append(syn.num)
            else:
                var_kind[v], var_pos[v] = 1, len(cat_real)
                cat_real.append(col.codes)
                cat_syn.append(syn.codes)
                ncat.append(col.n_levels)
        tree = fit_cart(
            target.class_codes if target.is_class else target.num,
            classification=target.is_class,
            n_classes=target.n_classes,
            xnum=_stack(num_real, n, np.float64),
            sidx=_stack(num_order, n, np.int64),
            xcat=_stack(cat_real, n, np.int64),
            ncat=np.asarray(ncat, dtype=np.int64),
            var_kind=var_kind,
            var_pos=var_pos,
            minbucket=self.minbucket,
            minsplit=self.effective_minsplit,
            cp=self.cp,
            max_depth=MAX_DEPTH,
        )
        u_walk = rng.random(m)
        u_donor = rng.random(m)
        leaves = tree.apply(_stack(num_syn, m, np.float64), _stack(cat_syn, m, np.int64), u_walk)
        return tree.sample_donors(leaves, u_donor)


# ---------------------------------------------------------------------------------------------------------------
# columns
# ---------------------------------------------------------------------------------------------------------------
class _Column:
    """One real column in the forms the trees need (computed lazily, once per release)."""

    def __init__(self, series: pd.Series) -> None:
        self.dtype = series.dtype
        if isinstance(series.dtype, pd.CategoricalDtype):
            self.kind = "ordered" if series.dtype.ordered else "categorical"
            self.values: NDArray[Any] = series.cat.codes.to_numpy(dtype=np.int64)
            self.n_levels = len(series.dtype.categories)
        elif pd.api.types.is_bool_dtype(series.dtype):
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
            self._order = np.argsort(self.num, kind="stable").astype(np.int64)
        return self._order

    def _classes(self) -> tuple[NDArray[np.int64], int]:
        if self._class is None:
            codes = self.codes
            if self.is_class:  # codes in [0, n_levels): np.unique's inverse without its sort
                seen = np.bincount(codes, minlength=self.n_levels) > 0
                rank = np.cumsum(seen, dtype=np.int64) - 1
                self._class = rank[codes], int(rank[-1]) + 1
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


@dataclass(frozen=True)
class _Synth:
    """One synthesised column: its values in the input's representation, and as tree inputs."""

    values: NDArray[Any]
    num: NDArray[np.float64]
    codes: NDArray[np.int64]

    @classmethod
    def of(cls, column: _Column, values: NDArray[Any]) -> _Synth:
        num = np.ascontiguousarray(values, dtype=np.float64)
        codes = np.ascontiguousarray(values, dtype=np.int64) if column.kind != "numeric" else np.zeros(0, np.int64)
        return cls(values, num, codes)

    def output(self, column: _Column) -> Any:
        """The values in ``column``'s dtype, as an array (a DataFrame is built faster from arrays than Series)."""
        if column.kind in ("categorical", "ordered"):
            assert isinstance(column.dtype, pd.CategoricalDtype)
            return pd.Categorical.from_codes(self.values, dtype=column.dtype)
        if isinstance(column.dtype, np.dtype):
            return self.values.astype(column.dtype)
        return pd.Series(self.values).astype(column.dtype)  # an extension dtype, e.g. pandas' nullable boolean


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
    is summed pairwise instead, so one predictor takes the direct route).  ``corr`` is an approximate correlation
    matrix, used only to certify that the eigenvalue test cannot drop a predictor.
    """

    def __init__(self, real: dict[Hashable, _Column], columns: list[Hashable]) -> None:
        self._real = real
        self._columns = columns
        self._ready = False

    def _compute(self) -> None:
        x = np.stack([self._real[c].num for c in self._columns], axis=1)
        self.position = {c: i for i, c in enumerate(self._columns)}
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # columns that are no predictor too
            self.var = x.var(axis=0, ddof=1)
            self.xc = x - x.mean(axis=0)
            self.sumsq = (self.xc * self.xc).sum(axis=0)
            gram = self.xc.T @ self.xc
            scale = np.sqrt(np.diag(gram))
            self.corr = gram / np.outer(scale, scale)
        self._ready = True

    def kept(self, predictors: list[Hashable], y: NDArray[np.float64]) -> list[Hashable] | None:
        """``remove_lindep``'s answer for two or more predictors and rows, or ``None`` where it must run in full."""
        if not self._ready:
            self._compute()
        idx = np.array([self.position[c] for c in predictors], dtype=np.int64)
        with np.errstate(invalid="ignore", divide="ignore"):
            yc = y - y.mean()
            cor = _column_dots(self.xc, yc)[idx] / np.sqrt(self.sumsq[idx] * (yc * yc).sum())
        keep = (self.var[idx] > _LINDEP_EPS) & ~(cor >= _LINDEP_MAXCOR)
        kept = np.flatnonzero(keep)
        if kept.shape[0] > 1:
            # The full test computes eigh(corrcoef(kept predictors)) and drops one when w[0] / w[-1] < 1e-5.  Both
            # correlation matrices are dot products of the same centred columns, equal up to ~n * eps, which moves
            # an eigenvalue by far less than 1e-5 * w[-1] (w[-1] >= 1: the trace is the number of predictors), so
            # w[0] > 2e-5 * w[-1] here means that the full test keeps them all; otherwise it decides.
            corr = self.corr[np.ix_(idx[kept], idx[kept])]
            if not np.isfinite(corr).all():
                return None
            w = np.linalg.eigvalsh(corr)
            if not w[0] > 2.0 * _LINDEP_EPS * w[-1]:
                return None
        return [predictors[i] for i in kept]


@numba.njit(cache=True)
def _column_dots(xc: NDArray[np.float64], yc: NDArray[np.float64]) -> NDArray[np.float64]:
    """``(xc * yc[:, None]).sum(axis=0)`` for a C-ordered ``xc`` of two or more rows, with numpy's float operations.

    numpy sums that product row after row (from row 0, one rounded product and one rounded sum per row), as here;
    this loop only spares it the temporary array and the slow strided reduction.
    """
    n, p = xc.shape
    out = np.empty(p, np.float64)
    for j in range(p):
        out[j] = xc[0, j] * yc[0]
    for i in range(1, n):
        for j in range(p):
            out[j] += xc[i, j] * yc[i]
    return out


def _remove_lindep(
    real: dict[Hashable, _Column], predictors: list[Hashable], target: _Column, stats: _LindepStats | None = None
) -> list[Hashable]:
    """Drop constant, y-duplicating and collinear predictors as ``remove.lindep.syn`` does.

    ``stats`` (the release's column statistics) gives the same answer faster where it can.
    """
    y = target.class_codes.astype(np.float64) if target.is_class else target.num
    if stats is not None and len(predictors) > 1 and y.shape[0] > 1:
        fast = stats.kept(predictors, y)
        if fast is not None:
            return fast
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


def _check_table(data: Any) -> list[Hashable]:
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"data must be a pandas DataFrame, got {type(data).__name__}.")
    if data.shape[0] < 1 or data.shape[1] < 1:
        raise ValueError(f"data must have at least one row and one column, got shape {data.shape}.")
    columns: list[Hashable] = list(data.columns)
    if len(set(columns)) != len(columns):
        raise ValueError(f"data must have distinct column names, got {columns!r}.")
    for column in columns:
        series = data[column]
        dtype = series.dtype
        if isinstance(dtype, pd.CategoricalDtype):
            if series.isna().any():
                raise ValueError(f"column {column!r} must not contain missing values (make them a category).")
        elif pd.api.types.is_bool_dtype(dtype):
            if series.isna().any():
                raise ValueError(f"column {column!r} must not contain missing values.")
        elif pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype):
            if isinstance(dtype, pd.api.extensions.ExtensionDtype):
                raise TypeError(
                    f"column {column!r} has the nullable dtype {dtype}; convert it to a numpy dtype "
                    f"(e.g. int64 or float64) first."
                )
            if not np.all(np.isfinite(series.to_numpy(dtype=np.float64))):
                raise ValueError(f"column {column!r} must hold finite values (no NaN or infinity).")
        else:
            hint = (
                " Convert text columns to pandas 'category' first (data[c].astype('category'))."
                if pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)
                else ""
            )
            raise TypeError(f"column {column!r} must be numeric, boolean or categorical, got dtype {dtype}.{hint}")
    return columns
