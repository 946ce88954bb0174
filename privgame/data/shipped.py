"""The public facts of the shipped data sets, read without a row: columns, categories, ranges, bins, sizes.

The catalogue (:mod:`privgame.data.catalogue`) makes them :class:`privgame.data.Dataset` objects; this module
imports neither pandas nor any module of the data layer but the domain.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from privgame.data.domain import PublicDomain

INTEGERS = "integers"  # privgame.analysis.discretise.INTEGERS (a bin per integer), spelt here to import nothing heavy

if TYPE_CHECKING:
    pass

_DATA_PACKAGE = "privgame.data"
_DATA_DIR = "raw"

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
:func:`privgame.analysis.discretise.public_bins`): knowledge ASSUMED public (CPS coding, the 40-hour week), not read
from the
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


def adult_public_ranges() -> tuple[tuple[str, int, int], ...]:
    """Return :data:`ADULT_PUBLIC_RANGES`, the public inclusive ``(column, low, high)`` bounds of Adult's numeric
    columns (a hashable tuple, usable as a mechanism parameter)."""
    return ADULT_PUBLIC_RANGES
