"""Tabular records as model features: how the model games encode Adult and COMPAS for a classifier.

A record becomes a float32 vector from the PUBLIC domain only (:func:`games.datasets.public_domain`), never from
statistics of the data, so the encoding of a record is the same whichever records are in a training set and
reveals nothing about them:

- a categorical column becomes one indicator per public category (the missing value ``"?"`` is a category);
- a numeric column with public bounds [lo, hi] becomes (v − lo)/(hi − lo), or, for the wide dollar-like columns
  (hi − lo > 1,000: Adult's ``fnlwgt``, ``capital_gain``, ``capital_loss``), log1p(v − lo)/log1p(hi − lo).

The label is not a feature.  Adult's ``income`` (1 for ">50K") and COMPAS's ``two_year_recid`` are binary; the
digits' ``digit`` is the class 0..9 (its category's position).  Record ids are row numbers of the loaded population
(Adult's train then test split; the digits in scikit-learn's order).  The digits' table is scikit-learn's 8×8
images as 64 pixel columns (:func:`games.datasets.load_digits_table`), so each pixel becomes v / 16.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
from numpy.typing import NDArray

__all__ = [
    "LABELS",
    "POPULATION_SIZES",
    "ModelArrays",
    "encode",
    "feature_count",
    "model_arrays",
    "model_problem",
    "population_table",
]

LABELS: dict[str, tuple[str, object]] = {
    "adult": ("income", ">50K"),
    "compas": ("two_year_recid", 1),
    "digits": ("digit", None),  # None: a multi-class label, coded by its public category's position
}
POPULATION_SIZES = {"adult": 48_842, "compas": 7_214, "digits": 1_797}
"""Records of each population as shipped (a test checks them against the files), so that a config is checked without
loading and encoding the data (seconds of a report's start-up)."""

_WIDE = 1_000


@dataclass(frozen=True, eq=False)
class ModelArrays:
    """A population encoded for a classifier.

    Attributes
    ----------
    x : ndarray of shape (N, d), float32
    y : ndarray of shape (N,), int64
        1 for a binary label column's positive value; a multi-class label's category position.
    features : tuple of str
        The name of each column of ``x`` (``"age"``, ``"sex=Male"``, …).
    label : str
        The label column.
    n_classes : int, default=2
        The classes a model of this data outputs (the label's public categories; 2 for a binary label).
    """

    x: NDArray[np.float32]
    y: NDArray[np.int64]
    features: tuple[str, ...]
    label: str
    n_classes: int = 2


def encode(table: pd.DataFrame, data: str) -> ModelArrays:
    """Encode ``table`` (rows of the ``data`` population, its columns) with the public domain of ``data``.

    Raises
    ------
    ValueError
        If ``data`` has no label column here, or ``table`` lacks a column of the domain.
    """
    from games.datasets import public_domain

    if data not in LABELS:
        raise ValueError(f"data must be one of {', '.join(LABELS)} for a model, got {data!r}.")
    label, positive = LABELS[data]
    domain = public_domain(data)
    missing = [c for c in domain.columns if c not in table.columns]
    if missing:
        raise ValueError(f"table must have every column of {data!r}, got none named {missing[0]!r}.")
    cats = dict(domain.categories)
    blocks: list[NDArray[np.float32]] = []
    names: list[str] = []
    for column in domain.columns:
        if column == label:
            continue
        values = table[column]
        if column in cats:
            codes = pd.Categorical(values, categories=list(cats[column])).codes
            block = np.zeros((len(table), len(cats[column])), dtype=np.float32)
            known = codes >= 0
            block[np.flatnonzero(known), codes[known]] = 1.0
            blocks.append(block)
            names.extend(f"{column}={c}" for c in cats[column])
        else:
            lo, hi = domain.range_of(column)
            v = np.clip(values.to_numpy(dtype=np.float64), lo, hi) - lo
            scaled = np.log1p(v) / np.log1p(hi - lo) if hi - lo > _WIDE else v / max(hi - lo, 1)
            blocks.append(scaled.astype(np.float32)[:, None])
            names.append(column)
    n_classes = 2
    if positive is None:
        classes = list(cats[label])
        codes = pd.Index(classes).get_indexer(pd.Index(table[label].astype(str)))
        if codes.size and codes.min() < 0:
            bad = table[label].iloc[int(np.argmin(codes))]
            raise ValueError(f"{label} must be one of {', '.join(classes)} in a {data!r} table, got {bad!r}.")
        y, n_classes = codes.astype(np.int64), len(classes)
    else:
        y = (table[label].astype(object).to_numpy() == positive).astype(np.int64)
    return ModelArrays(
        x=np.ascontiguousarray(np.hstack(blocks)), y=y, features=tuple(names), label=label, n_classes=n_classes
    )


@lru_cache(maxsize=4)
def population_table(data: str) -> pd.DataFrame:
    """The whole ``data`` population as shipped (Adult's train then test split), rows numbered from 0: the record
    ids of every model and record game; cached per process (callers must not modify it)."""
    from games.datasets import load, load_digits_table

    if data == "digits":
        return load_digits_table()
    table: pd.DataFrame = load(data, split="all") if data == "adult" else load(data)
    return table.reset_index(drop=True)


@lru_cache(maxsize=2)
def model_arrays(data: str) -> ModelArrays:
    """The whole ``data`` population (load order) encoded by :func:`encode`; cached per process."""
    if data not in LABELS:
        raise ValueError(f"data must be one of {', '.join(LABELS)} for a model, got {data!r}.")
    return encode(population_table(data), data)


def feature_count(data: str) -> int:
    """Columns of ``data``'s encoding, from its public domain alone (no record is read): one per category of a
    categorical column, one per numeric column, the label left out, as :func:`encode` lays them out."""
    from games.datasets import public_domain

    if data not in LABELS:
        raise ValueError(f"data must be one of {', '.join(LABELS)} for a model, got {data!r}.")
    domain, label = public_domain(data), LABELS[data][0]
    cats = dict(domain.categories)
    return sum(len(cats[c]) if c in cats else 1 for c in domain.columns if c != label)


def model_problem(mechanism: object, data: str) -> str | None:
    """Why the trained model ``mechanism`` cannot read the records of ``data`` (a CNN whose image is not the data's
    width), or ``None``; asked by the model games when the config is read."""
    check = getattr(mechanism, "feature_problem", None)
    if not callable(check) or data not in LABELS:
        return None
    problem = check(feature_count(data))
    return None if problem is None else f"mechanism '{getattr(mechanism, 'name', mechanism)}': {problem} in {data!r}"
