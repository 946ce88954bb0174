"""Fidelity of a synthetic table to the real one: marginals, pairwise associations, utility and copies.

:func:`fidelity_report` compares a synthetic DataFrame with the real one it was generated from (and, for the
utility metrics, with a held-out real test set) on four kinds of metric, the ones used to judge tabular generators
in the synthetic-data literature [1]_ [2]_:

marginals
    per-column total-variation distance ``TV(p, q) = ½ Σ_v |p(v) − q(v)|`` between the real and the synthetic
    column's distribution; categorical columns over their values, numeric columns over bins cut at the REAL
    data's deciles (duplicate edges dropped; bins are closed on the right, so a column that is 0 in over 90 % of
    rows, such as Adult's ``capital_gain``, gets the bins "≤ 0" and "> 0"), missing values as a level of their own.
pairwise associations
    Cramér's V of every pair of columns (numeric columns binned as above) in each table, with Bergsma's bias
    correction [3]_ by default, and the absolute differences ``|V_synthetic − V_real|`` with their mean and maximum
    over the d(d − 1)/2 pairs.  The uncorrected V of independent columns is of order ``sqrt(df / n)`` (about 0.16 for
    Adult's education × a shuffled native_country at n = 1,000) and hides small differences; the corrected one is
    mostly below 0.1 there.
utility (train on synthetic, test on real)
    a logistic regression (one-hot categoricals with unknown levels ignored, standardised numerics, missing numerics
    imputed with the training median) trained on the synthetic data predicts the binary ``target`` of the real
    ``test`` table: accuracy and ROC AUC; the same model trained on the real table gives the baseline, so the
    gap is what the synthesis cost.
copies
    the fraction of synthetic rows equal, in every column, to some row of the real table (Synthpop's leaf-donor
    sampling copies values; a generator that memorises copies rows), beside the same fraction for the real test
    rows, which is the rate an independent sample from the population shows.

This module imports nothing from ``games``, ``mechanisms`` or ``attacks``: it works on any pair of DataFrames.

References
----------
.. [1] C. Esteban, S. L. Hyland, G. Rätsch. Real-valued (medical) time series generation with recurrent
   conditional GANs. arXiv:1706.02633, 2017 (train on synthetic, test on real).
.. [2] T. Stadler, B. Oprisanu, C. Troncoso. Synthetic Data — Anonymisation Groundhog Day. USENIX Security 2022,
   arXiv:2011.07018 (utility and privacy of Synthpop, BayNet and PrivBayes).  SDMetrics' TVComplement is the
   same marginal metric, as 1 − TV.
.. [3] W. Bergsma. A bias-correction for Cramér's V and Tschuprow's T. Journal of the Korean Statistical Society
   42(3), 2013.

Examples
--------
>>> import pandas as pd
>>> real = pd.DataFrame({"a": ["x", "y", "x", "y"], "b": [1, 2, 3, 4]})
>>> report = fidelity_report(real, real, target=None)
>>> report.tv_max, report.copy_fraction
(0.0, 1.0)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import sparse

__all__ = ["FidelityReport", "column_kind", "cramers_v", "fidelity_report"]

_DECILES = np.linspace(0.1, 0.9, 9)
_MAX_ITER = 1000  # logistic regression: ample for standardised features (lbfgs converges in < 100 on Adult)


@dataclass(frozen=True, slots=True)
class FidelityReport:
    """How closely a synthetic table matches the real one (see the module docstring for each metric).

    Attributes
    ----------
    columns : tuple of str
        The columns compared, in the real table's order.
    kinds : tuple of str
        ``"numeric"`` or ``"categorical"`` for each column.
    n_levels : tuple of int
        Bins (numeric) or distinct values (categorical, over both tables) of each column.
    tv : tuple of float
        Total-variation distance between the real and the synthetic marginal of each column, in [0, 1].
    cramers_v_real, cramers_v_synthetic : tuple of tuple of float
        The d × d matrices of Cramér's V in each table (1 on the diagonal by convention).
    bias_correction : bool
        Whether V has Bergsma's bias correction.
    copy_fraction : float
        Fraction of synthetic rows equal to some real row.
    holdout_copy_fraction : float
        Fraction of test rows equal to some real row (NaN without a test table).
    target : str or None
        The column predicted for the utility metrics (None when they were not computed).
    positive : object
        The target value counted as the positive class (None when not computed).
    tstr_accuracy, tstr_auc : float
        Accuracy and ROC AUC on the test table of the model trained on the synthetic table (NaN when not computed).
    trtr_accuracy, trtr_auc : float
        The same for the model trained on the real table: the baseline.
    n_real, n_synthetic, n_test : int
        Rows of each table (``n_test`` is 0 without a test table).
    """

    columns: tuple[str, ...]
    kinds: tuple[str, ...]
    n_levels: tuple[int, ...]
    tv: tuple[float, ...]
    cramers_v_real: tuple[tuple[float, ...], ...]
    cramers_v_synthetic: tuple[tuple[float, ...], ...]
    bias_correction: bool
    copy_fraction: float
    holdout_copy_fraction: float
    target: str | None
    positive: Any
    tstr_accuracy: float
    tstr_auc: float
    trtr_accuracy: float
    trtr_auc: float
    n_real: int
    n_synthetic: int
    n_test: int

    @property
    def tv_distances(self) -> pd.Series:
        """The per-column TV distances as a Series indexed by column."""
        return pd.Series(self.tv, index=list(self.columns), name="tv", dtype=float)

    @property
    def tv_mean(self) -> float:
        return float(np.mean(self.tv))

    @property
    def tv_max(self) -> float:
        return float(np.max(self.tv))

    def cramers_v(self, which: str = "diff") -> pd.DataFrame:
        """A Cramér's V matrix as a DataFrame: ``"real"``, ``"synthetic"`` or ``"diff"`` (|synthetic − real|,
        0 on the diagonal)."""
        if which == "real":
            values = np.array(self.cramers_v_real, dtype=float)
        elif which == "synthetic":
            values = np.array(self.cramers_v_synthetic, dtype=float)
        elif which == "diff":
            values = self._v_diff()
        else:
            raise ValueError(f"which must be one of 'real', 'synthetic', 'diff', got {which!r}.")
        return pd.DataFrame(values, index=list(self.columns), columns=list(self.columns))

    @property
    def cramers_v_diff(self) -> pd.DataFrame:
        """``|V_synthetic − V_real|`` for every pair of columns (0 on the diagonal)."""
        return self.cramers_v("diff")

    @property
    def v_diff_mean(self) -> float:
        """Mean of ``|V_synthetic − V_real|`` over the d(d − 1)/2 pairs (NaN for a single column)."""
        pairs = self._pairs()
        return float(pairs.mean()) if pairs.size else math.nan

    @property
    def v_diff_max(self) -> float:
        """Maximum of ``|V_synthetic − V_real|`` over the pairs (NaN for a single column)."""
        pairs = self._pairs()
        return float(pairs.max()) if pairs.size else math.nan

    def _v_diff(self) -> NDArray[np.float64]:
        diff = np.abs(np.array(self.cramers_v_synthetic, dtype=float) - np.array(self.cramers_v_real, dtype=float))
        np.fill_diagonal(diff, 0.0)
        return diff

    def _pairs(self) -> NDArray[np.float64]:
        return self._v_diff()[np.triu_indices(len(self.columns), k=1)]

    def summary(self) -> dict[str, Any]:
        """The headline numbers as a flat dict of plain Python values (JSON-serialisable)."""
        worst_pair = None
        if len(self.columns) > 1:
            rows, cols = np.triu_indices(len(self.columns), k=1)
            worst = int(np.argmax(self._pairs()))
            worst_pair = f"{self.columns[rows[worst]]} × {self.columns[cols[worst]]}"
        return {
            "n_real": self.n_real,
            "n_synthetic": self.n_synthetic,
            "n_test": self.n_test,
            "tv_mean": self.tv_mean,
            "tv_max": self.tv_max,
            "tv_max_column": self.columns[int(np.argmax(self.tv))],
            "cramers_v_diff_mean": self.v_diff_mean,
            "cramers_v_diff_max": self.v_diff_max,
            "cramers_v_diff_max_pair": worst_pair,
            "target": self.target,
            "positive": None if self.positive is None else _plain(self.positive),
            "tstr_accuracy": self.tstr_accuracy,
            "tstr_auc": self.tstr_auc,
            "trtr_accuracy": self.trtr_accuracy,
            "trtr_auc": self.trtr_auc,
            "copy_fraction": self.copy_fraction,
            "holdout_copy_fraction": self.holdout_copy_fraction,
        }

    def to_frame(self) -> pd.DataFrame:
        """One row per column: kind, levels, TV distance and the mean and max ``|ΔV|`` of its pairs."""
        diff = self._v_diff()
        d = len(self.columns)
        others = ~np.eye(d, dtype=bool)
        mean = [float(diff[i][others[i]].mean()) if d > 1 else math.nan for i in range(d)]
        worst = [float(diff[i][others[i]].max()) if d > 1 else math.nan for i in range(d)]
        return pd.DataFrame(
            {
                "kind": list(self.kinds),
                "levels": list(self.n_levels),
                "tv": list(self.tv),
                "v_diff_mean": mean,
                "v_diff_max": worst,
            },
            index=pd.Index(list(self.columns), name="column"),
        )

    def to_dict(self) -> dict[str, Any]:
        """Everything, JSON-serialisable: the summary, the per-column table and the three V matrices."""
        frame = self.to_frame()
        return {
            "summary": self.summary(),
            "columns": {
                str(col): {k: _plain(v) for k, v in row.items()} for col, row in frame.to_dict(orient="index").items()
            },
            "cramers_v_bias_correction": self.bias_correction,
            "cramers_v_real": _matrix_dict(self.columns, self.cramers_v_real),
            "cramers_v_synthetic": _matrix_dict(self.columns, self.cramers_v_synthetic),
        }

    def __str__(self) -> str:
        s = self.summary()
        lines = [
            f"fidelity of {self.n_synthetic} synthetic rows to {self.n_real} real rows"
            + (f" (test: {self.n_test} rows)" if self.n_test else ""),
            f"  marginal TV distance    mean {s['tv_mean']:.4f}   max {s['tv_max']:.4f} ({s['tv_max_column']})",
        ]
        if len(self.columns) > 1:
            lines.append(
                f"  Cramér's V |diff|       mean {s['cramers_v_diff_mean']:.4f}   max {s['cramers_v_diff_max']:.4f} "
                f"({s['cramers_v_diff_max_pair']})" + ("" if self.bias_correction else "  [uncorrected V]")
            )
        if self.target is not None:
            lines.append(
                f"  predict {self.target} = {self.positive}:  train on synthetic: accuracy {self.tstr_accuracy:.4f}  "
                f"AUC {self.tstr_auc:.4f}   train on real: accuracy {self.trtr_accuracy:.4f}  AUC {self.trtr_auc:.4f}"
            )
        lines.append(
            f"  exact copies of real rows: {self.copy_fraction:.4f} of synthetic rows"
            + ("" if math.isnan(self.holdout_copy_fraction) else f" ({self.holdout_copy_fraction:.4f} of test rows)")
        )
        table = self.to_frame().to_string(float_format=lambda x: f"{x:.4f}")
        return "\n".join(lines) + "\n\n" + table


def column_kind(name: Hashable, series: pd.Series) -> str:
    """``"numeric"`` for int/float columns, ``"categorical"`` for category, string, object and bool columns.

    Raises
    ------
    TypeError
        For any other dtype (datetimes, timedeltas, complex, ...).
    """
    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(dtype):
        return "categorical"
    if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype):
        return "numeric"
    if pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype):
        return "categorical"
    raise TypeError(
        f"column {name!r} must be numeric (int, float) or categorical (category, string, object, bool), "
        f"got dtype {dtype}."
    )


def cramers_v(x: Any, y: Any, *, bias_correction: bool = True) -> float:
    """Cramér's V between two discrete variables (sequences of hashable values of equal length).

    ``V = sqrt(φ² / (min(r, c) − 1))`` with ``φ² = χ² / n`` of the r × c contingency table of the observed values;
    with ``bias_correction`` (Bergsma 2013), ``φ²`` is replaced by ``max(0, φ² − (r − 1)(c − 1)/(n − 1))`` and r, c
    by ``r − (r − 1)²/(n − 1)``, ``c − (c − 1)²/(n − 1)``.  V is 0 when either variable is constant.

    Examples
    --------
    >>> cramers_v(["a", "a", "b", "b"], [1, 1, 2, 2], bias_correction=False)
    1.0
    """
    xs, ys = np.asarray(x, dtype=object), np.asarray(y, dtype=object)
    if xs.ndim != 1 or xs.shape != ys.shape or xs.size == 0:
        raise ValueError(f"x and y must be non-empty 1-d sequences of equal length, got shapes {xs.shape}, {ys.shape}.")
    cx, lx = pd.factorize(xs, use_na_sentinel=False)
    cy, ly = pd.factorize(ys, use_na_sentinel=False)
    return _cramers_v_codes(cx, len(lx), cy, len(ly), bias_correction)


def fidelity_report(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    *,
    test: pd.DataFrame | None = None,
    target: str | None = "income",
    positive: Any = None,
    bias_correction: bool = True,
) -> FidelityReport:
    """Compare a synthetic table with the real one it was generated from.

    Parameters
    ----------
    real : DataFrame
        The real (training) table.
    synthetic : DataFrame
        The synthetic table: the same columns (any order) with the same kinds (numeric or categorical).
    test : DataFrame or None, default=None
        A held-out real table with the same columns; needed for the utility metrics and the holdout copy rate.
    target : str or None, default="income"
        The binary column the utility metrics predict (Adult's income); ``None`` skips them.  They are computed
        when both ``test`` and ``target`` are given.
    positive : object, default=None
        The target value of the positive class for the AUC; ``None`` takes the greater of the two values in sort
        order (``">50K"`` for Adult's ``income``, 1 for 0/1, True for booleans).
    bias_correction : bool, default=True
        Bergsma's bias correction of Cramér's V (see :func:`cramers_v`).

    Returns
    -------
    FidelityReport

    Raises
    ------
    TypeError
        If a table is not a DataFrame, a column's dtype is unsupported, or a column is numeric in one table and
        categorical in another.
    ValueError
        If a table is empty, the tables' columns differ, or (with ``test`` and ``target``) the target is missing,
        not binary, has missing values, the test table lacks one of its two classes, there is no feature column,
        or ``positive`` is not one of its values.

    Notes
    -----
    A synthetic target with a single class (a degenerate generator) trains a constant predictor: its accuracy is
    the test rate of that class and its AUC 0.5.  Copies are found by comparing whole rows exactly (categorical
    values as values, numeric ones as float64, missing equal to missing), not by hashing, so there are no false
    matches.
    """
    real = _check_frame("real", real)
    columns = tuple(real.columns)
    synthetic = _check_frame("synthetic", synthetic, columns)
    if test is not None:
        test = _check_frame("test", test, columns)
    if not isinstance(bias_correction, bool):
        raise TypeError(f"bias_correction must be a bool, got {bias_correction!r}.")
    kinds = tuple(column_kind(c, real[c]) for c in columns)
    for frame_name, frame in (("synthetic", synthetic), ("test", test)):
        if frame is None:
            continue
        for col, kind in zip(columns, kinds, strict=True):
            other = column_kind(col, frame[col])
            if other != kind:
                raise TypeError(f"column {col!r} is {kind} in the real table but {other} in the {frame_name} table.")

    do_utility = test is not None and target is not None
    if do_utility:
        assert test is not None and target is not None  # for mypy
        positive = _check_target(real, synthetic, test, target, positive)

    frames = [real, synthetic] if test is None else [real, synthetic, test]
    codes, levels = _encode(frames, columns, kinds)
    n_real, n_syn = len(real), len(synthetic)
    tv = []
    for j in range(len(columns)):
        p = np.bincount(codes[0][:, j], minlength=levels[j]) / n_real
        q = np.bincount(codes[1][:, j], minlength=levels[j]) / n_syn
        tv.append(float(0.5 * np.abs(p - q).sum()))
    v_real = _v_matrix(codes[0], levels, bias_correction)
    v_syn = _v_matrix(codes[1], levels, bias_correction)

    keys = [_row_keys(frame, columns, kinds, c) for frame, c in zip(frames, codes, strict=True)]
    real_rows = set(keys[0])
    copy_fraction = sum(k in real_rows for k in keys[1]) / n_syn
    holdout = math.nan if test is None else sum(k in real_rows for k in keys[2]) / len(test)

    tstr_acc = tstr_auc = trtr_acc = trtr_auc = math.nan
    if do_utility:
        assert test is not None and target is not None
        features = [c for c in columns if c != target]
        feature_kinds = [k for c, k in zip(columns, kinds, strict=True) if c != target]
        y_test = _labels(test[target], positive)
        tstr_acc, tstr_auc = _utility(synthetic, test, features, feature_kinds, target, positive, y_test)
        trtr_acc, trtr_auc = _utility(real, test, features, feature_kinds, target, positive, y_test)

    return FidelityReport(
        columns=tuple(str(c) for c in columns),
        kinds=kinds,
        n_levels=tuple(int(n) for n in levels),
        tv=tuple(tv),
        cramers_v_real=_tuples(v_real),
        cramers_v_synthetic=_tuples(v_syn),
        bias_correction=bias_correction,
        copy_fraction=float(copy_fraction),
        holdout_copy_fraction=float(holdout),
        target=target if do_utility else None,
        positive=positive if do_utility else None,
        tstr_accuracy=tstr_acc,
        tstr_auc=tstr_auc,
        trtr_accuracy=trtr_acc,
        trtr_auc=trtr_auc,
        n_real=n_real,
        n_synthetic=n_syn,
        n_test=0 if test is None else len(test),
    )


def _check_frame(name: str, frame: Any, columns: Sequence[Hashable] | None = None) -> pd.DataFrame:
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame, got {type(frame).__name__}.")
    if frame.shape[0] == 0 or frame.shape[1] == 0:
        raise ValueError(f"{name} must have at least one row and one column, got shape {frame.shape}.")
    if frame.columns.has_duplicates:
        dup = frame.columns[frame.columns.duplicated()][0]
        raise ValueError(f"{name} has the column {dup!r} more than once.")
    if columns is None:
        return frame
    missing = [c for c in columns if c not in frame.columns]
    extra = [c for c in frame.columns if c not in columns]
    if missing or extra:
        raise ValueError(
            f"{name} must have the real table's columns; missing: {missing or 'none'}, extra: {extra or 'none'}."
        )
    return frame[list(columns)]


def _check_target(real: pd.DataFrame, synthetic: pd.DataFrame, test: pd.DataFrame, target: str, positive: Any) -> Any:
    if target not in real.columns:
        raise ValueError(f"target must be one of the columns {list(real.columns)}, got {target!r}.")
    if real.shape[1] < 2:
        raise ValueError(f"the utility metrics need at least one feature column besides the target {target!r}.")
    for name, frame in (("real", real), ("synthetic", synthetic), ("test", test)):
        if frame[target].isna().any():
            raise ValueError(f"target {target!r} has missing values in the {name} table.")
    values = list(pd.unique(np.concatenate([_objects(real[target]), _objects(test[target])])))
    if len(values) != 2:
        raise ValueError(
            f"target {target!r} must be binary: the real and test tables hold {len(values)} distinct values "
            f"({', '.join(map(repr, values[:5]))}{', ...' if len(values) > 5 else ''})."
        )
    unknown = [v for v in pd.unique(_objects(synthetic[target])) if v not in values]
    if unknown:
        raise ValueError(f"target {target!r} of the synthetic table holds {unknown[0]!r}, not one of {values}.")
    if len(pd.unique(_objects(test[target]))) < 2:
        raise ValueError(f"the test table must hold both values of target {target!r} for the AUC, got only one.")
    if positive is None:
        try:
            return sorted(values)[-1]
        except TypeError:
            return sorted(values, key=str)[-1]
    if positive not in values:
        raise ValueError(f"positive must be one of the target's values {values}, got {positive!r}.")
    return positive


def _objects(series: pd.Series) -> NDArray[np.object_]:
    return np.asarray(series.astype(object), dtype=object)


def _labels(series: pd.Series, positive: Any) -> NDArray[np.bool_]:
    return np.array([v == positive for v in _objects(series)], dtype=bool)


def _encode(
    frames: Sequence[pd.DataFrame], columns: Sequence[Hashable], kinds: Sequence[str]
) -> tuple[list[NDArray[np.int64]], list[int]]:
    """Integer codes of every cell, consistent across the frames: numeric columns binned at the real deciles,
    categorical ones factorised over all frames; missing values get a level of their own."""
    sizes = [len(f) for f in frames]
    out = [np.empty((n, len(columns)), dtype=np.int64) for n in sizes]
    levels = []
    for j, (col, kind) in enumerate(zip(columns, kinds, strict=True)):
        if kind == "numeric":
            real_values = frames[0][col].to_numpy(dtype=float, na_value=np.nan)
            finite = real_values[~np.isnan(real_values)]
            edges = np.unique(np.quantile(finite, _DECILES)) if finite.size else np.empty(0)
            for k, frame in enumerate(frames):
                x = frame[col].to_numpy(dtype=float, na_value=np.nan)
                code = np.searchsorted(edges, x, side="left")  # right-closed bins: x <= edges[0] is bin 0
                code[np.isnan(x)] = edges.size + 1
                out[k][:, j] = code
            levels.append(edges.size + 2)
        else:
            values = np.concatenate([_objects(f[col]) for f in frames])
            code, uniques = pd.factorize(values, use_na_sentinel=False)
            for k, piece in enumerate(np.split(code, np.cumsum(sizes)[:-1])):
                out[k][:, j] = piece
            levels.append(len(uniques))
    return out, levels


def _cramers_v_codes(cx: NDArray[np.intp], lx: int, cy: NDArray[np.intp], ly: int, bias_correction: bool) -> float:
    table = np.bincount(cx.astype(np.int64) * ly + cy, minlength=lx * ly).reshape(lx, ly).astype(float)
    table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    r, c = table.shape
    if min(r, c) < 2:
        return 0.0
    n = table.sum()
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / n
    phi2 = float(((table - expected) ** 2 / expected).sum() / n)
    if bias_correction:
        phi2 = max(0.0, phi2 - (r - 1) * (c - 1) / (n - 1))
        denom = min(r - (r - 1) ** 2 / (n - 1), c - (c - 1) ** 2 / (n - 1)) - 1
    else:
        denom = min(r, c) - 1
    if denom <= 0:
        return 0.0
    return float(min(1.0, math.sqrt(phi2 / denom)))


def _v_matrix(codes: NDArray[np.int64], levels: Sequence[int], bias_correction: bool) -> NDArray[np.float64]:
    d = codes.shape[1]
    v = np.eye(d)
    for i in range(d):
        for j in range(i + 1, d):
            v[i, j] = v[j, i] = _cramers_v_codes(codes[:, i], levels[i], codes[:, j], levels[j], bias_correction)
    return v


def _row_keys(
    frame: pd.DataFrame, columns: Sequence[Hashable], kinds: Sequence[str], codes: NDArray[np.int64]
) -> list[bytes]:
    """One exact byte key per row: categorical cells by their shared code, numeric cells as float64."""
    cells = np.empty((len(frame), len(columns)), dtype=np.float64)
    for j, (col, kind) in enumerate(zip(columns, kinds, strict=True)):
        if kind == "numeric":
            x = frame[col].to_numpy(dtype=float, na_value=np.nan) + 0.0  # + 0.0 turns -0.0 into 0.0
            x[np.isnan(x)] = np.nan  # one NaN bit pattern
            cells[:, j] = x
        else:
            cells[:, j] = codes[:, j]
    cells = np.ascontiguousarray(cells)
    return [row.tobytes() for row in cells]


def _design(
    frame: pd.DataFrame, features: Sequence[str], kinds: Sequence[str]
) -> tuple[NDArray[np.object_], NDArray[np.float64]]:
    cat = [c for c, k in zip(features, kinds, strict=True) if k == "categorical"]
    num = [c for c, k in zip(features, kinds, strict=True) if k == "numeric"]
    x_cat = np.empty((len(frame), len(cat)), dtype=object)
    for j, col in enumerate(cat):
        x_cat[:, j] = [str(v) for v in _objects(frame[col])]
    x_num = np.column_stack([frame[c].to_numpy(dtype=float, na_value=np.nan) for c in num]) if num else None
    return x_cat, (np.empty((len(frame), 0)) if x_num is None else x_num)


def _utility(
    train: pd.DataFrame,
    test: pd.DataFrame,
    features: Sequence[str],
    kinds: Sequence[str],
    target: str,
    positive: Any,
    y_test: NDArray[np.bool_],
) -> tuple[float, float]:
    """Accuracy and ROC AUC on ``test`` of a logistic regression trained on ``train``."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    y_train = _labels(train[target], positive)
    if y_train.all() or not y_train.any():  # one class: a constant predictor
        return float(np.mean(y_test == y_train[0])), 0.5
    cat_train, num_train = _design(train, features, kinds)
    cat_test, num_test = _design(test, features, kinds)
    blocks_train, blocks_test = [], []
    if cat_train.shape[1]:
        encoder = OneHotEncoder(handle_unknown="ignore")
        blocks_train.append(encoder.fit_transform(cat_train))
        blocks_test.append(encoder.transform(cat_test))
    if num_train.shape[1]:
        if np.isnan(num_train).any() or np.isnan(num_test).any():
            with warnings.catch_warnings():  # an all-missing column has no median: it is filled with 0
                warnings.simplefilter("ignore", RuntimeWarning)
                fill = np.nan_to_num(np.nanmedian(num_train, axis=0))
            num_train = np.where(np.isnan(num_train), fill, num_train)
            num_test = np.where(np.isnan(num_test), fill, num_test)
        scaler = StandardScaler()
        blocks_train.append(sparse.csr_matrix(scaler.fit_transform(num_train)))
        blocks_test.append(sparse.csr_matrix(scaler.transform(num_test)))
    x_train = sparse.hstack(blocks_train, format="csr")
    x_test = sparse.hstack(blocks_test, format="csr")
    model = LogisticRegression(max_iter=_MAX_ITER)
    model.fit(x_train, y_train)
    scores = model.predict_proba(x_test)[:, list(model.classes_).index(True)]
    accuracy = float(np.mean((scores >= 0.5) == y_test))
    return accuracy, float(roc_auc_score(y_test, scores))


def _tuples(matrix: NDArray[np.float64]) -> tuple[tuple[float, ...], ...]:
    return tuple(tuple(float(v) for v in row) for row in matrix)


def _matrix_dict(columns: Sequence[str], matrix: Sequence[Sequence[float]]) -> dict[str, dict[str, float]]:
    return {a: {b: float(v) for b, v in zip(columns, row, strict=True)} for a, row in zip(columns, matrix, strict=True)}


def _plain(value: Any) -> Any:
    """A JSON-friendly Python scalar (numpy scalars unwrapped; NaN kept as float)."""
    if isinstance(value, np.generic):
        return value.item()
    return value
