"""The data layer: every population a game can play on, as one object each, and where to find it by name.

- :mod:`games.datasets.dataset`: :class:`Dataset` (rows, public domain, label, size, what it serves) and the
  catalogue (:func:`register_dataset`, :func:`get_dataset`, :func:`check_data`, :func:`dataset_names`);
- :mod:`games.datasets.domain`: :class:`PublicDomain` (column order, categories, integer and float ranges, bins);
- :mod:`games.datasets.builtin`: the shipped sets (Adult, COMPAS, the digits) and their loaders;
- :mod:`games.datasets.features`: a population as model features, from the public domain alone;
- :mod:`games.datasets.canaries`: the canary games' training rows and canary examples.

Names are imported on first use (:mod:`analysis._lazy`).
"""

from typing import TYPE_CHECKING

from analysis._lazy import attach

if TYPE_CHECKING:
    from games.datasets.builtin import (
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
        public_domain,
        public_ranges,
        quantile_bins,
    )
    from games.datasets.dataset import (
        SERVES,
        Dataset,
        check_data,
        dataset_names,
        get_dataset,
        register_dataset,
        unregister_dataset,
    )
    from games.datasets.domain import PublicDomain
    from games.datasets.features import ModelArrays

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
        "public_domain",
        "public_ranges",
        "quantile_bins",
    ),
    "dataset": (
        "Dataset",
        "SERVES",
        "check_data",
        "dataset_names",
        "get_dataset",
        "register_dataset",
        "unregister_dataset",
    ),
    "domain": ("PublicDomain",),
    "features": ("ModelArrays",),
}
__getattr__, __dir__ = attach(
    __name__, {name: f"games.datasets.{module}:{name}" for module, names in _MODULES.items() for name in names}
)
