"""The data layer: every population a game can play on, as one object each, and where to find it by name.

Its modules form a straight line, each importing only those before it:

- :mod:`privgame.data.domain`: :class:`PublicDomain` (column order, categories, integer and float ranges, bins);
- :mod:`privgame.data.encoding`: a population's records as model features, from the public domain alone
  (:class:`ModelArrays`);
- :mod:`privgame.data.dataset`: :class:`Dataset` (rows, public domain, label, size, what it serves);
- :mod:`privgame.data.shipped`: the built-ins' public facts (columns, categories, ranges, bins), read without a row;
- :mod:`privgame.data.builtin`: the loaders of the shipped sets (Adult, COMPAS, the digits), from ``raw/``;
- :mod:`privgame.data.catalogue`: the data sets by name (:func:`register_dataset`, :func:`get_dataset`,
  :func:`check_data`, :func:`dataset_names`, :func:`public_domain`), the built-ins included;
- :mod:`privgame.data.features`, :mod:`privgame.data.files`, :mod:`privgame.data.canaries`: what the games take
  from a data set named in a config (model features, a user's CSV/Parquet file, the canary games' rows).

Names are imported on first use (:mod:`privgame.core._lazy`).
"""

from typing import TYPE_CHECKING

from privgame.core._lazy import attach

if TYPE_CHECKING:
    from privgame.data.builtin import (
        ADULT_CATEGORIES,
        ADULT_COLUMNS,
        ADULT_PUBLIC_BINS,
        ADULT_PUBLIC_RANGES,
        ADULT_SPLITS,
        COMPAS_CATEGORIES,
        COMPAS_COLUMNS,
        COMPAS_PUBLIC_BINS,
        COMPAS_PUBLIC_RANGES,
        DATASETS,
        DIGITS_CATEGORIES,
        DIGITS_COLUMNS,
        DIGITS_PUBLIC_RANGES,
        INTEGERS,
        ColumnBins,
        Discretisation,
        PublicBins,
        PublicRanges,
        adult_public_ranges,
        discretise,
        fixed_bins,
        load,
        load_adult,
        load_breast_cancer,
        load_compas,
        load_digits,
        load_digits_table,
        public_bins,
        public_ranges,
        quantile_bins,
    )
    from privgame.data.catalogue import (
        check_data,
        dataset_names,
        get_dataset,
        public_domain,
        register_dataset,
        unregister_dataset,
    )
    from privgame.data.dataset import SERVES, Dataset
    from privgame.data.domain import PublicDomain
    from privgame.data.encoding import ModelArrays

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
    "SERVES",
    "ColumnBins",
    "Dataset",
    "Discretisation",
    "ModelArrays",
    "PublicBins",
    "PublicDomain",
    "PublicRanges",
    "adult_public_ranges",
    "check_data",
    "dataset_names",
    "discretise",
    "fixed_bins",
    "get_dataset",
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
    "register_dataset",
    "unregister_dataset",
]

_MODULES = {
    "builtin": (
        "ADULT_CATEGORIES",
        "ADULT_COLUMNS",
        "ADULT_PUBLIC_BINS",
        "ADULT_PUBLIC_RANGES",
        "ADULT_SPLITS",
        "COMPAS_CATEGORIES",
        "COMPAS_COLUMNS",
        "COMPAS_PUBLIC_BINS",
        "COMPAS_PUBLIC_RANGES",
        "ColumnBins",
        "DATASETS",
        "DIGITS_CATEGORIES",
        "DIGITS_COLUMNS",
        "DIGITS_PUBLIC_RANGES",
        "Discretisation",
        "INTEGERS",
        "PublicBins",
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
    ),
    "catalogue": (
        "check_data",
        "dataset_names",
        "get_dataset",
        "public_domain",
        "register_dataset",
        "unregister_dataset",
    ),
    "dataset": ("Dataset", "SERVES"),
    "domain": ("PublicDomain",),
    "encoding": ("ModelArrays",),
}
__getattr__, __dir__ = attach(
    __name__, {name: f"privgame.data.{module}:{name}" for module, names in _MODULES.items() for name in names}
)
