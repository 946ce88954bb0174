"""Tabular records as model features: the encoding itself, from a data set's public domain alone.

A record becomes a float32 vector from the PUBLIC domain only (:attr:`privgame.data.Dataset.domain`), never from
statistics of the data, so the encoding of a record is the same whichever records are in a training set and
reveals nothing about them:

- a categorical column becomes one indicator per public category (a missing value ``"?"`` is a category where the
  domain lists it; a value outside the categories encodes as all zeros);
- a numeric column with public bounds [lo, hi] becomes (v − lo)/(hi − lo), or, for the wide dollar-like integer
  columns (hi − lo > 1,000: Adult's ``fnlwgt``, ``capital_gain``, ``capital_loss``), log1p(v − lo)/log1p(hi − lo).

The label (:attr:`privgame.data.Dataset.label`) is not a feature.  With a ``positive`` value (Adult's ``">50K"``,
COMPAS's ``two_year_recid`` = 1) it is binary; otherwise the classes are its public categories in order (the
digits' ``digit``) or its integers from the low bound.  Record ids are row numbers of the population
(:meth:`privgame.data.Dataset.table`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privgame.data.domain import PublicDomain

__all__ = ["ModelArrays", "Population", "count_features", "encode_population"]


class Population(Protocol):
    """What the encoding reads of a data set (:class:`privgame.data.dataset.Dataset` has it): its public domain and
    label, never a row."""

    @property
    def name(self) -> str: ...
    @property
    def domain(self) -> PublicDomain: ...
    @property
    def label(self) -> str | None: ...
    @property
    def positive(self) -> Any: ...
    @property
    def n_classes(self) -> int: ...


_WIDE = 1_000


@dataclass(frozen=True, eq=False)
class ModelArrays:
    """A population encoded for a classifier.

    Attributes
    ----------
    x : ndarray of shape (N, d), float32
    y : ndarray of shape (N,), int64
        1 for a binary label column's positive value; else the class's position.
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


def encode_population(table: pd.DataFrame, dataset: Population) -> ModelArrays:
    """Encode ``table`` (rows of ``dataset``, its columns) with the public domain of ``dataset``, which has a label.

    :func:`privgame.data.features.encode` is the same for a data set given by name.

    Raises
    ------
    ValueError
        If ``table`` lacks a column of the domain, or a label is outside its classes.
    """
    label, positive, domain = dataset.label, dataset.positive, dataset.domain
    if label is None:
        raise ValueError(f"data set {dataset.name!r} has no label column: it serves no features.")
    missing = [c for c in domain.columns if c not in table.columns]
    if missing:
        raise ValueError(f"table must have every column of {dataset.name!r}, got none named {missing[0]!r}.")
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
            wide = hi - lo > _WIDE and not domain.is_float(column)
            scaled = np.log1p(v) / np.log1p(hi - lo) if wide else v / (hi - lo if hi > lo else 1)
            blocks.append(scaled.astype(np.float32)[:, None])
            names.append(column)
    n_classes = dataset.n_classes
    if positive is not None:
        y = (table[label].astype(object).to_numpy() == positive).astype(np.int64)
    elif label in cats:
        classes = list(cats[label])
        codes = pd.Index(classes).get_indexer(pd.Index(table[label].astype(str)))
        if codes.size and codes.min() < 0:
            bad = table[label].iloc[int(np.argmin(codes))]
            raise ValueError(f"{label} must be one of {', '.join(classes)} in a {dataset.name!r} table, got {bad!r}.")
        y = codes.astype(np.int64)
    else:
        low, _ = domain.range_of(label)
        y = table[label].to_numpy(dtype=np.int64) - int(low)
        if y.size and (y.min() < 0 or y.max() >= n_classes):
            bad = table[label].iloc[int(np.argmax((y < 0) | (y >= n_classes)))]
            raise ValueError(
                f"{label} must be an integer in its public range in a {dataset.name!r} table, got {bad!r}."
            )
    x = np.hstack(blocks) if blocks else np.zeros((len(table), 0), dtype=np.float32)
    return ModelArrays(x=np.ascontiguousarray(x), y=y, features=tuple(names), label=label, n_classes=n_classes)


def count_features(dataset: Population) -> int:
    """Columns of ``dataset``'s encoding, from its public domain alone (no record is read): one per category of a
    categorical column, one per numeric column, the label left out, as :func:`encode_population` lays them out."""
    cats = dict(dataset.domain.categories)
    return sum(len(cats[c]) if c in cats else 1 for c in dataset.domain.columns if c != dataset.label)
