"""The data sets privgame ships or wraps: UCI Adult, ProPublica's COMPAS, and scikit-learn's bundled sets.

Adult and COMPAS are read from compressed copies shipped inside the package (``games/data/``, found with
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
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

# The discretisation helper lives in analysis/ (mechanisms use it and may not import games); re-exported here so that
# a study finds data sets, their public domains and the binning in one place.
from analysis.discretise import (
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
    "public_domain",
    "public_ranges",
    "quantile_bins",
]

_DATA_PACKAGE = "games"
_DATA_DIR = "data"

MISSING = "?"

ADULT_COLUMNS: tuple[str, ...] = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education_num",
    "marital_status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital_gain",
    "capital_loss",
    "hours_per_week",
    "native_country",
    "income",
)
"""Adult's 15 columns, in file order (``adult.names`` spells them with hyphens; we use underscores)."""

# Category lists copied from adult.names, in its order.  '?' (UCI's "Convert Unknown to '?'") is appended to the
# three attributes that UCI's documentation lists as having missing values (workclass, occupation, native-country);
# the tests check these lists against the shipped adult.names and check that every value in the data is in them.
ADULT_CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "workclass",
        (
            "Private",
            "Self-emp-not-inc",
            "Self-emp-inc",
            "Federal-gov",
            "Local-gov",
            "State-gov",
            "Without-pay",
            "Never-worked",
            MISSING,
        ),
    ),
    (
        "education",
        (
            "Bachelors",
            "Some-college",
            "11th",
            "HS-grad",
            "Prof-school",
            "Assoc-acdm",
            "Assoc-voc",
            "9th",
            "7th-8th",
            "12th",
            "Masters",
            "1st-4th",
            "10th",
            "Doctorate",
            "5th-6th",
            "Preschool",
        ),
    ),
    (
        "marital_status",
        (
            "Married-civ-spouse",
            "Divorced",
            "Never-married",
            "Separated",
            "Widowed",
            "Married-spouse-absent",
            "Married-AF-spouse",
        ),
    ),
    (
        "occupation",
        (
            "Tech-support",
            "Craft-repair",
            "Other-service",
            "Sales",
            "Exec-managerial",
            "Prof-specialty",
            "Handlers-cleaners",
            "Machine-op-inspct",
            "Adm-clerical",
            "Farming-fishing",
            "Transport-moving",
            "Priv-house-serv",
            "Protective-serv",
            "Armed-Forces",
            MISSING,
        ),
    ),
    ("relationship", ("Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried")),
    ("race", ("White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black")),
    ("sex", ("Female", "Male")),
    (
        "native_country",
        (
            "United-States",
            "Cambodia",
            "England",
            "Puerto-Rico",
            "Canada",
            "Germany",
            "Outlying-US(Guam-USVI-etc)",
            "India",
            "Japan",
            "Greece",
            "South",
            "China",
            "Cuba",
            "Iran",
            "Honduras",
            "Philippines",
            "Italy",
            "Poland",
            "Jamaica",
            "Vietnam",
            "Mexico",
            "Portugal",
            "Ireland",
            "France",
            "Dominican-Republic",
            "Laos",
            "Ecuador",
            "Taiwan",
            "Haiti",
            "Columbia",
            "Hungary",
            "Guatemala",
            "Nicaragua",
            "Scotland",
            "Thailand",
            "Yugoslavia",
            "El-Salvador",
            "Trinadad&Tobago",
            "Peru",
            "Hong",
            "Holand-Netherlands",
            MISSING,
        ),
    ),
    ("income", (">50K", "<=50K")),
)
"""Public category list of each categorical Adult column, as ``(column, categories)`` pairs in column order."""

ADULT_PUBLIC_RANGES: tuple[tuple[str, int, int], ...] = (
    # adult.names: extracted with AAGE > 16; the CPS top-codes age at 90.
    ("age", 17, 90),
    # No documented maximum: AFNLWGT > 1 at extraction; a round bound above every published record.
    ("fnlwgt", 0, 1_500_000),
    # The ordinal code of the 16 education levels listed in adult.names.
    ("education_num", 1, 16),
    # CPS income amounts in dollars; 99999 is the CPS top code.  The same bound is used for both columns.
    ("capital_gain", 0, 99_999),
    ("capital_loss", 0, 99_999),
    # adult.names: extracted with HRSWK > 0; the CPS top-codes usual hours at 99.
    ("hours_per_week", 1, 99),
)
"""Public inclusive ``(column, low, high)`` bounds of Adult's numeric columns (sources in ``docs/datasets.md``)."""

# Dollar size classes of the two CPS capital-income amounts: $0 (no such income: most people), round classes above it,
# and the CPS top code $99,999 as a bin of its own.  Integer edges: (0, 1, ...) makes {0} a bin (see public_bins).
_ADULT_DOLLARS = (0, 1, 1_000, 5_000, 10_000, 99_999, 99_999)

ADULT_PUBLIC_BINS: tuple[tuple[str, tuple[int, ...] | str], ...] = (
    # The 16 education levels of adult.names, one bin each.
    ("education_num", INTEGERS),
    # {0}, 1-999, 1,000-4,999, 5,000-9,999, 10,000-99,998, {99,999}.
    ("capital_gain", _ADULT_DOLLARS),
    ("capital_loss", _ADULT_DOLLARS),
    # Five-hour bands 1-5, ..., 31-35, then 36-39, 40 alone (the standard full-time week of the US Fair Labor
    # Standards Act), 41-45, ..., 66-70, and ten-hour bands 71-80, 81-90, 91-99.
    ("hours_per_week", (1, 6, 11, 16, 21, 26, 31, 36, 40, 41, 46, 51, 56, 61, 66, 71, 81, 91, 99)),
)
"""Public bins of some of Adult's numeric columns, as ``(column, spec)`` pairs in column order (see
:func:`analysis.discretise.public_bins`): knowledge ASSUMED public (CPS coding, the 40-hour week), not read from the
rows; the reasons are in ``docs/datasets.md``.  The other numeric columns get equal-width bins over their range."""

ADULT_SPLITS: tuple[str, ...] = ("train", "test", "all")
_ADULT_FILES: Mapping[str, tuple[str, int]] = {
    # file name, lines to skip at the top (the test file starts with "|1x3 Cross validator")
    "train": ("adult.data.gz", 0),
    "test": ("adult.test.gz", 1),
}

COMPAS_COLUMNS: tuple[str, ...] = (
    "sex",
    "age",
    "age_cat",
    "race",
    "juv_fel_count",
    "juv_misd_count",
    "juv_other_count",
    "priors_count",
    "c_charge_degree",
    "decile_score",
    "score_text",
    "two_year_recid",
)
"""The subset of ProPublica's ``compas-scores-two-years.csv`` columns that :func:`load_compas` returns, in order."""

COMPAS_CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("sex", ("Female", "Male")),
    ("age_cat", ("Less than 25", "25 - 45", "Greater than 45")),
    ("race", ("African-American", "Asian", "Caucasian", "Hispanic", "Native American", "Other")),
    # F = felony, M = misdemeanour (ProPublica's analysis drops the 'O' ordinary traffic offences; this file has none).
    ("c_charge_degree", ("F", "M")),
    ("score_text", ("Low", "Medium", "High")),
)
"""Public category list of each categorical COMPAS column (the values ProPublica's published file uses)."""

COMPAS_PUBLIC_RANGES: tuple[tuple[str, int, int], ...] = (
    # COMPAS screens adult defendants; 100 is a round upper bound.
    ("age", 18, 100),
    # Counts have no documented maximum: round bounds above every published record.
    ("juv_fel_count", 0, 25),
    ("juv_misd_count", 0, 25),
    ("juv_other_count", 0, 25),
    ("priors_count", 0, 50),
    # Northpointe's decile scale.
    ("decile_score", 1, 10),
    # A 0/1 indicator.
    ("two_year_recid", 0, 1),
)
"""Public inclusive ``(column, low, high)`` bounds of the numeric COMPAS columns (sources in ``docs/datasets.md``)."""

_COMPAS_JUVENILE = (0, 1, 2, 3, 5, 10, 25)

COMPAS_PUBLIC_BINS: tuple[tuple[str, tuple[int, ...] | str], ...] = (
    # Counts: 0 (no record) alone, then small counts one by one and wider classes: {0}, {1}, {2}, 3-4, 5-9, 10-25.
    ("juv_fel_count", _COMPAS_JUVENILE),
    ("juv_misd_count", _COMPAS_JUVENILE),
    ("juv_other_count", _COMPAS_JUVENILE),
    # {0}, ..., {5}, 6-7, 8-9, 10-14, 15-19, 20-29, 30-50.
    ("priors_count", (0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50)),
    # Northpointe's ten deciles, one bin each.
    ("decile_score", INTEGERS),
)
"""Public bins of the COMPAS count and score columns, as ``(column, spec)`` pairs in column order: a count of 0 (no
record) is a bin of its own.  Assumed public, not read from the rows (``docs/datasets.md``)."""

_COMPAS_FILE = "compas-scores-two-years.csv.gz"
# Columns ProPublica's analysis filters rows on (compas-analysis notebook, "data cleaning").
_COMPAS_FILTER_COLUMNS = ("days_b_screening_arrest", "is_recid")


@dataclass(frozen=True, slots=True)
class PublicDomain:
    """The public domain of a tabular data set: column order, category lists, numeric ranges and public bins.

    Hashable, so it (or its ``categories``/``ranges``/``bins`` tuples) can be a field of a frozen mechanism.

    Parameters
    ----------
    name : str
        The data set's name.
    columns : tuple of str
        All columns, in the loader's order.
    categories : tuple of (str, tuple of str)
        ``(column, categories)`` for each categorical column, in column order.
    ranges : tuple of (str, int, int)
        ``(column, low, high)`` inclusive bounds for each numeric (``int64``) column, in column order.
    bins : tuple of (str, spec), default=()
        ``(column, spec)`` public bins of some numeric columns (:func:`analysis.discretise.public_bins`: integer
        edges within the column's range, a single-value bin such as ``{0}`` included, or ``"integers"``); the
        binning generators use them instead of equal-width bins (PrivBayes's and BayNet's ``bins``).
    """

    name: str
    columns: tuple[str, ...]
    categories: tuple[tuple[str, tuple[str, ...]], ...]
    ranges: tuple[tuple[str, int, int], ...]
    bins: tuple[tuple[str, tuple[int, ...] | str], ...] = ()

    def __post_init__(self) -> None:
        categorical = [column for column, _ in self.categories]
        numeric = [column for column, _, _ in self.ranges]
        if sorted(categorical + numeric) != sorted(self.columns) or len(set(self.columns)) != len(self.columns):
            raise ValueError(
                f"columns must be the categorical and numeric columns, each once, got columns={self.columns!r}, "
                f"categorical={categorical!r}, numeric={numeric!r}."
            )
        for column, cats in self.categories:
            if len(cats) == 0 or len(set(cats)) != len(cats):
                raise ValueError(f"categories of {column!r} must be non-empty and distinct, got {cats!r}.")
        for column, low, high in self.ranges:
            if not low <= high:
                raise ValueError(f"range of {column!r} must have low <= high, got ({low!r}, {high!r}).")
        for column, spec in public_bins(self.bins, self.ranges):
            if not isinstance(spec, str) and not all(edge.is_integer() for edge in spec):
                raise ValueError(f"edges of integer column {column!r} must be integers, got {spec!r}.")

    def categories_of(self, column: str) -> tuple[str, ...]:
        """The public category list of a categorical ``column``."""
        for name, cats in self.categories:
            if name == column:
                return cats
        raise KeyError(f"{column!r} is not a categorical column of {self.name!r}.")

    def range_of(self, column: str) -> tuple[int, int]:
        """The public inclusive ``(low, high)`` bounds of a numeric ``column``."""
        for name, low, high in self.ranges:
            if name == column:
                return low, high
        raise KeyError(f"{column!r} is not a numeric column of {self.name!r}.")

    def dtypes(self) -> dict[str, pd.CategoricalDtype | np.dtype[Any]]:
        """The pandas dtype of every column, in column order."""
        cats = dict(self.categories)
        return {
            column: pd.CategoricalDtype(list(cats[column])) if column in cats else np.dtype(np.int64)
            for column in self.columns
        }


DIGITS_COLUMNS: tuple[str, ...] = (*(f"p{i}" for i in range(64)), "digit")
"""scikit-learn's digits as a table (:func:`load_digits_table`): the 64 pixels row-major, then the class."""
DIGITS_CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (("digit", tuple("0123456789")),)
DIGITS_PUBLIC_RANGES: tuple[tuple[str, int, int], ...] = tuple((f"p{i}", 0, 16) for i in range(64))
"""Each pixel counts the set bits of a 4x4 block of the 32x32 scan: 0..16 by construction (UCI's description)."""

_DOMAINS: Mapping[str, PublicDomain] = {
    "adult": PublicDomain("adult", ADULT_COLUMNS, ADULT_CATEGORIES, ADULT_PUBLIC_RANGES, ADULT_PUBLIC_BINS),
    "compas": PublicDomain("compas", COMPAS_COLUMNS, COMPAS_CATEGORIES, COMPAS_PUBLIC_RANGES, COMPAS_PUBLIC_BINS),
    "digits": PublicDomain("digits", DIGITS_COLUMNS, DIGITS_CATEGORIES, DIGITS_PUBLIC_RANGES),
}


def public_domain(name: str) -> PublicDomain:
    """Return the public domain (categories, numeric ranges and public bins) of a tabular data set.

    Parameters
    ----------
    name : {"adult", "compas", "digits"}

    Returns
    -------
    PublicDomain

    Raises
    ------
    ValueError
        If ``name`` is not a tabular data set with a public domain.

    Examples
    --------
    >>> public_domain("adult").range_of("age")
    (17, 90)
    >>> dict(public_domain("adult").bins)["capital_gain"][:3]  # 0 is a bin of its own
    (0, 1, 1000)
    """
    if name not in _DOMAINS:
        raise ValueError(f"name must be one of {', '.join(map(repr, _DOMAINS))}, got {name!r}.")
    return _DOMAINS[name]


def adult_public_ranges() -> tuple[tuple[str, int, int], ...]:
    """Return :data:`ADULT_PUBLIC_RANGES`, the public inclusive ``(column, low, high)`` bounds of Adult's numeric
    columns (a hashable tuple, usable as a mechanism parameter)."""
    return ADULT_PUBLIC_RANGES


def _data_file(filename: str) -> Any:
    """The shipped file ``games/data/<filename>`` as an importlib.resources Traversable."""
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
    :mod:`analysis.discretise`).

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
    through :func:`games.features.encode` (each pixel ÷ 16, the digit as the class).

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
