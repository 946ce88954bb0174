"""The data sets privgame ships or wraps: UCI Adult, ProPublica's COMPAS, and scikit-learn's bundled sets.

Adult, COMPAS and the digits are also :class:`privgame.data.Dataset` instances (:func:`builtin_datasets`,
registered under ``"adult"``, ``"compas"`` and ``"digits"``), which is how every game reads them.

Adult and COMPAS are read from compressed copies shipped inside the package (``privgame/data/raw/``, found with
:mod:`importlib.resources`, so they work offline after an editable or a regular install); their provenance and
licences are in ``docs/datasets.md``.  Every loader parses once per process (``functools.cache``) and returns an
independent copy, so a caller may mutate what it gets.

Tabular loaders return categorical columns as :class:`pandas.CategoricalDtype` with a category list fixed from
*public* documentation, never read from the rows, and numeric columns as ``int64``.  The same public domain (category
lists, numeric ranges and the public bins of some numeric columns) is available without loading any rows from
:func:`public_domain`, for generators that must not derive their domain from the private sample (PrivBayes, SPEC §7).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

# The discretisation helper lives in analysis/ (mechanisms use it and may not import games); re-exported here so that
# a study finds data sets, their public domains and the binning in one place.
from privgame.analysis.discretise import (
    INTEGERS,
    ColumnBins,
    Discretisation,
    PublicBins,
    PublicRanges,
    discretise,
    fixed_bins,
    public_bins,
    public_ranges,
    quantile_bins,
)
from privgame.data.domain import PublicDomain
from privgame.data.shipped import (  # noqa: F401  (re-exported: the public facts beside their loaders)
    _ADULT_FILES,
    _COMPAS_FILE,
    _COMPAS_FILTER_COLUMNS,
    _DATA_DIR,
    _DATA_PACKAGE,
    _DOMAINS,
    ADULT_CATEGORIES,
    ADULT_COLUMNS,
    ADULT_PUBLIC_BINS,
    ADULT_PUBLIC_RANGES,
    ADULT_SPLITS,
    COMPAS_CATEGORIES,
    COMPAS_COLUMNS,
    COMPAS_PUBLIC_BINS,
    COMPAS_PUBLIC_RANGES,
    DIGITS_CATEGORIES,
    DIGITS_COLUMNS,
    DIGITS_PUBLIC_RANGES,
    MISSING,
    adult_public_ranges,
)

__all__ = [
    "ADULT_CATEGORIES",
    "ADULT_COLUMNS",
    "ADULT_PUBLIC_BINS",
    "ADULT_PUBLIC_RANGES",
    "ADULT_SPLITS",
    "COMPAS_CATEGORIES",
    "COMPAS_COLUMNS",
    "COMPAS_PUBLIC_BINS",
    "COMPAS_PUBLIC_RANGES",
    "DATASETS",
    "DIGITS_CATEGORIES",
    "DIGITS_COLUMNS",
    "DIGITS_PUBLIC_RANGES",
    "INTEGERS",
    "ColumnBins",
    "Discretisation",
    "PublicBins",
    "PublicDomain",
    "PublicRanges",
    "adult_public_ranges",
    "discretise",
    "fixed_bins",
    "load",
    "load_adult",
    "load_breast_cancer",
    "load_compas",
    "load_digits",
    "load_digits_table",
    "public_bins",
    "public_ranges",
    "quantile_bins",
]


def _data_file(filename: str) -> Any:
    """The shipped file ``privgame/data/raw/<filename>`` as an importlib.resources Traversable."""
    return resources.files(_DATA_PACKAGE).joinpath(_DATA_DIR, filename)


def _to_public_categorical(
    raw: pd.Series, categories: tuple[str, ...], *, column: str, source: str, strip_dot: bool = False
) -> pd.Categorical[Any]:
    """Recode a column parsed with inferred categories onto the public category list, refusing unknown values."""
    if not isinstance(raw.dtype, pd.CategoricalDtype):
        raw = raw.astype("category")
    codes = raw.cat.codes.to_numpy()
    if (codes < 0).any():
        raise ValueError(f"{source}: column {column!r} has {int((codes < 0).sum())} empty values.")
    labels = pd.Index(raw.cat.categories.astype(str)).str.strip()
    if strip_dot:
        labels = labels.str.removesuffix(".")
    mapping = pd.Index(categories).get_indexer(labels)
    used = np.zeros(len(labels), dtype=bool)
    used[codes] = True
    if (used & (mapping < 0)).any():
        unknown = sorted(set(labels[used & (mapping < 0)]))
        raise ValueError(f"{source}: column {column!r} has values outside its public domain: {unknown!r}.")
    return pd.Categorical.from_codes(mapping[codes], dtype=pd.CategoricalDtype(list(categories)))


def _parse_adult_file(split: str) -> pd.DataFrame:
    filename, skip = _ADULT_FILES[split]
    categories = dict(ADULT_CATEGORIES)
    numeric = {column for column, _, _ in ADULT_PUBLIC_RANGES}
    with _data_file(filename).open("rb") as handle:
        raw = pd.read_csv(
            handle,
            compression="gzip",
            header=None,
            names=list(ADULT_COLUMNS),
            skiprows=skip,
            skipinitialspace=True,
            skip_blank_lines=True,
            dtype={column: (np.int64 if column in numeric else "category") for column in ADULT_COLUMNS},
            engine="c",
        )
    columns: dict[str, Any] = {}
    for column in ADULT_COLUMNS:
        if column in numeric:
            columns[column] = raw[column].to_numpy(dtype=np.int64)
        else:
            columns[column] = _to_public_categorical(
                raw[column], categories[column], column=column, source=filename, strip_dot=column == "income"
            )
    return pd.DataFrame(columns, columns=list(ADULT_COLUMNS))


@functools.cache
def _adult_cached(split: str) -> pd.DataFrame:
    if split == "all":
        return pd.concat([_adult_cached("train"), _adult_cached("test")], ignore_index=True)
    return _parse_adult_file(split)


def load_adult(split: str = "train") -> pd.DataFrame:
    """Load UCI Adult (Census Income) from the copy shipped with privgame.

    Parameters
    ----------
    split : {"train", "test", "all"}, default="train"
        ``"train"`` is ``adult.data`` (32,561 rows), ``"test"`` is ``adult.test`` (16,281 rows), ``"all"`` is the
        training rows followed by the test rows (48,842 rows, index 0..48841).

    Returns
    -------
    pandas.DataFrame
        Rows in file order, columns :data:`ADULT_COLUMNS`.  The nine categorical columns are
        :class:`pandas.CategoricalDtype` (unordered) with the category lists of :data:`ADULT_CATEGORIES`: those of
        ``adult.names`` in its order, plus ``'?'`` (a missing value, kept as its own category) for ``workclass``,
        ``occupation`` and ``native_country``.  ``income`` is ``">50K"`` or ``"<=50K"`` in both splits (the test file's
        trailing ``'.'`` is removed).  The six numeric columns are ``int64``.  Each call returns a new copy.

    Raises
    ------
    ValueError
        If ``split`` is not one of the above, or if the shipped file holds a value outside the public domain.

    Notes
    -----
    The files are parsed once per process and cached; a call after the first costs one copy (under a millisecond).
    Public ranges of the numeric columns are :data:`ADULT_PUBLIC_RANGES`, public bins of four of them
    :data:`ADULT_PUBLIC_BINS`; see ``docs/datasets.md`` for the sources.  For a DP generator, bin with
    ``fixed_bins(frame, ADULT_PUBLIC_RANGES, n_bins, ADULT_PUBLIC_BINS)`` (re-exported from
    :mod:`privgame.analysis.discretise`).

    References
    ----------
    .. [1] B. Becker, R. Kohavi. Adult. UCI Machine Learning Repository, 1996. doi:10.24432/C5XW20.

    Examples
    --------
    >>> load_adult().shape
    (32561, 15)
    """
    if not isinstance(split, str) or split not in ADULT_SPLITS:
        raise ValueError(f"split must be one of {', '.join(map(repr, ADULT_SPLITS))}, got {split!r}.")
    return _adult_cached(split).copy(deep=True)


@functools.cache
def _compas_cached(propublica_filter: bool) -> pd.DataFrame:
    categories = dict(COMPAS_CATEGORIES)
    with _data_file(_COMPAS_FILE).open("rb") as handle:
        raw = pd.read_csv(
            handle,
            compression="gzip",
            usecols=[*COMPAS_COLUMNS, *_COMPAS_FILTER_COLUMNS],
            dtype={column: "category" for column in categories},
            engine="c",
        )
    if propublica_filter:
        days = raw["days_b_screening_arrest"]
        keep = (
            days.between(-30, 30)
            & (raw["is_recid"] != -1)
            & (raw["c_charge_degree"].astype(str) != "O")
            & (raw["score_text"].astype(str) != "N/A")
        )
        raw = raw.loc[keep.to_numpy()].reset_index(drop=True)
    columns: dict[str, Any] = {}
    for column in COMPAS_COLUMNS:
        if column in categories:
            columns[column] = _to_public_categorical(
                raw[column], categories[column], column=column, source=_COMPAS_FILE
            )
        else:
            columns[column] = raw[column].to_numpy(dtype=np.int64)
    return pd.DataFrame(columns, columns=list(COMPAS_COLUMNS))


def load_compas(*, propublica_filter: bool = False) -> pd.DataFrame:
    """Load ProPublica's COMPAS two-year recidivism data (``compas-scores-two-years.csv``), a column subset.

    Parameters
    ----------
    propublica_filter : bool, default=False
        Keep only the rows ProPublica's analysis keeps [1]_: COMPAS screening within 30 days of the arrest
        (``-30 <= days_b_screening_arrest <= 30``, which also drops its missing values), ``is_recid != -1``,
        ``c_charge_degree != "O"`` and ``score_text != "N/A"``: 6,172 rows.  By default all 7,214 rows.

    Returns
    -------
    pandas.DataFrame
        Rows in file order (index 0..n-1), columns :data:`COMPAS_COLUMNS`: demographics (``sex``, ``age``,
        ``age_cat``, ``race``), criminal history (``juv_fel_count``, ``juv_misd_count``, ``juv_other_count``,
        ``priors_count``), the current charge (``c_charge_degree``), the COMPAS recidivism score (``decile_score``,
        ``score_text``) and the outcome (``two_year_recid``).  Categorical columns are
        :class:`pandas.CategoricalDtype` with the lists of :data:`COMPAS_CATEGORIES`; numeric columns are ``int64``
        with public bounds :data:`COMPAS_PUBLIC_RANGES`.  Each call returns a new copy.

    Raises
    ------
    TypeError
        If ``propublica_filter`` is not a bool.
    ValueError
        If the shipped file holds a value outside the public domain.

    Notes
    -----
    The file's header repeats ``decile_score`` and ``priors_count`` (the copies are identical in every row); the first
    copy of each is used.  Identifying columns (names, dates of birth, case numbers) and the dates are left out; so
    are the violent-recidivism score and outcome, which duplicate the structure of the general ones.

    References
    ----------
    .. [1] J. Angwin, J. Larson, S. Mattu, L. Kirchner. Machine Bias. ProPublica, 2016; data and analysis at
       https://github.com/propublica/compas-analysis.

    Examples
    --------
    >>> load_compas().shape
    (7214, 12)
    """
    if not isinstance(propublica_filter, bool):
        raise TypeError(f"propublica_filter must be a bool, got {propublica_filter!r}.")
    return _compas_cached(propublica_filter).copy(deep=True)


@functools.cache
def _sklearn_cached(name: str) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    from sklearn import datasets as sk_datasets

    loader = {"digits": sk_datasets.load_digits, "breast_cancer": sk_datasets.load_breast_cancer}[name]
    features, labels = loader(return_X_y=True)
    x = np.ascontiguousarray(features, dtype=np.float64)
    y = np.ascontiguousarray(labels, dtype=np.int64)
    x.setflags(write=False)
    y.setflags(write=False)
    return x, y


def load_digits() -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """scikit-learn's bundled optical digits (UCI): 1,797 8x8 images of the digits 0-9.

    Returns
    -------
    X : ndarray of shape (1797, 64), float64
        Pixel intensities 0..16, row-major.
    y : ndarray of shape (1797,), int64
        The digit, 0..9.

    Each call returns new, writable arrays.
    """
    x, y = _sklearn_cached("digits")
    return x.copy(), y.copy()


def load_digits_table() -> pd.DataFrame:
    """scikit-learn's digits as a table: columns ``p0`` … ``p63`` (int64 pixels 0..16, row-major) and ``digit``
    (categorical, ``"0"`` … ``"9"``), with the dtypes of ``public_domain("digits")``, in load order.

    The table form lets the table generators (and PANORAMIA's game) treat images as records; the models read it
    through :func:`privgame.data.features.encode` (each pixel ÷ 16, the digit as the class).

    Examples
    --------
    >>> table = load_digits_table()
    >>> table.shape, str(table["digit"].iloc[0]), int(table["p3"].iloc[0])
    ((1797, 65), '0', 13)
    """
    x, y = _sklearn_cached("digits")
    table = pd.DataFrame(x.astype(np.int64), columns=list(DIGITS_COLUMNS[:-1]))
    table["digit"] = pd.Categorical.from_codes(y, dtype=pd.CategoricalDtype(list(DIGITS_CATEGORIES[0][1])))
    return table


def load_breast_cancer() -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """scikit-learn's bundled Wisconsin diagnostic breast cancer data: 569 tumours, 30 real features.

    Returns
    -------
    X : ndarray of shape (569, 30), float64
        The 30 features, unscaled.
    y : ndarray of shape (569,), int64
        scikit-learn's coding: 0 = malignant (212), 1 = benign (357).

    Each call returns new, writable arrays.
    """
    x, y = _sklearn_cached("breast_cancer")
    return x.copy(), y.copy()


_LOADERS: Mapping[str, Callable[..., Any]] = {
    "adult": load_adult,
    "compas": load_compas,
    "digits": load_digits,
    "breast_cancer": load_breast_cancer,
}

DATASETS: tuple[str, ...] = tuple(_LOADERS)
"""Names accepted by :func:`load`."""


def load(name: str, **kwargs: Any) -> Any:
    """Load a data set by name (what ``privgame synth --data NAME`` uses).

    Parameters
    ----------
    name : {"adult", "compas", "digits", "breast_cancer"}
        A name in :data:`DATASETS`; ``-`` may stand for ``_`` (``"breast-cancer"``).
    **kwargs
        Passed to the loader (``split=`` for Adult, ``propublica_filter=`` for COMPAS).

    Returns
    -------
    pandas.DataFrame or tuple of ndarray
        What the loader returns: a frame for the tabular sets, ``(X, y)`` for scikit-learn's.

    Raises
    ------
    TypeError
        If ``name`` is not a string, or a keyword is not accepted by that loader.
    ValueError
        If ``name`` is not a known data set (the message lists them).
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {name!r}.")
    key = name.strip().lower().replace("-", "_")
    if key not in _LOADERS:
        raise ValueError(f"Unknown data set {name!r}; known data sets: {', '.join(DATASETS)}.")
    return _LOADERS[key](**kwargs)
