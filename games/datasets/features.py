"""Tabular records as model features: how the model games encode a data set's records for a classifier.

A record becomes a float32 vector from the PUBLIC domain only (:attr:`games.datasets.Dataset.domain`), never from
statistics of the data, so the encoding of a record is the same whichever records are in a training set and
reveals nothing about them:

- a categorical column becomes one indicator per public category (a missing value ``"?"`` is a category where the
  domain lists it; a value outside the categories encodes as all zeros);
- a numeric column with public bounds [lo, hi] becomes (v − lo)/(hi − lo), or, for the wide dollar-like integer
  columns (hi − lo > 1,000: Adult's ``fnlwgt``, ``capital_gain``, ``capital_loss``), log1p(v − lo)/log1p(hi − lo).

The label (:attr:`games.datasets.Dataset.label`) is not a feature.  With a ``positive`` value (Adult's ``">50K"``,
COMPAS's ``two_year_recid`` = 1) it is binary; otherwise the classes are its public categories in order (the
digits' ``digit``) or its integers from the low bound.  Record ids are row numbers of the population
(:meth:`games.datasets.Dataset.table`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

if TYPE_CHECKING:
    from games.datasets.dataset import Dataset

__all__ = [
    "ModelArrays",
    "encode",
    "feature_count",
    "model_arrays",
    "model_problem",
    "population_table",
    "raw_columns",
]

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


def _dataset(data: Any) -> Dataset:
    from games.datasets.dataset import get_dataset

    return get_dataset(data)


def _labelled(data: Any) -> Dataset:
    dataset = _dataset(data)
    if dataset.label is None:
        from games.datasets.dataset import dataset_names

        raise ValueError(
            f"data must be one of {', '.join(dataset_names('features'))} for a model (a data set with a label), "
            f"got {dataset.name!r}."
        )
    return dataset


def encode(table: pd.DataFrame, data: Dataset | str) -> ModelArrays:
    """Encode ``table`` (rows of the ``data`` population, its columns) with the public domain of ``data``.

    Raises
    ------
    ValueError
        If ``data`` has no label column, ``table`` lacks a column of the domain, or a label is outside its classes.
    """
    dataset = _labelled(data)
    label, positive, domain = dataset.label, dataset.positive, dataset.domain
    assert label is not None  # _labelled
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


def raw_columns(table: pd.DataFrame, data: Dataset | str) -> pd.DataFrame:
    """The rows of ``table`` as a model that does its own preprocessing reads them: the ``data`` set's columns in
    its domain's order, the label left out, rows numbered from 0 (``TrainingData.frame``, for ``sklearn`` with
    ``features = "raw"``).

    Raises
    ------
    ValueError
        If ``data`` has no label column, or ``table`` lacks a column of the domain.
    """
    dataset = _labelled(data)
    columns = [c for c in dataset.domain.columns if c != dataset.label]
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ValueError(f"table must have every column of {dataset.name!r}, got none named {missing[0]!r}.")
    return table[columns].reset_index(drop=True)


def population_table(data: Dataset | str) -> pd.DataFrame:
    """The whole ``data`` population, rows numbered from 0: the record ids of every model and record game; cached
    per process (callers must not modify it).  :meth:`games.datasets.Dataset.table`."""
    return _dataset(data).table()


def model_arrays(data: Dataset | str) -> ModelArrays:
    """The whole ``data`` population (row order) encoded by :func:`encode`; cached per process."""
    return _labelled(data).features()


def feature_count(data: Dataset | str) -> int:
    """Columns of ``data``'s encoding, from its public domain alone (no record is read): one per category of a
    categorical column, one per numeric column, the label left out, as :func:`encode` lays them out."""
    dataset = _labelled(data)
    cats = dict(dataset.domain.categories)
    return sum(len(cats[c]) if c in cats else 1 for c in dataset.domain.columns if c != dataset.label)


def model_problem(mechanism: object, data: Dataset | str) -> str | None:
    """Why the trained model ``mechanism`` cannot read the records of ``data`` (a CNN whose image is not the data's
    width), or ``None``; asked by the model games when the config is read."""
    check = getattr(mechanism, "feature_problem", None)
    dataset = _dataset(data)
    if not callable(check) or dataset.label is None:
        return None
    problem = check(feature_count(dataset))
    return (
        None
        if problem is None
        else f"mechanism '{getattr(mechanism, 'name', mechanism)}': {problem} in {dataset.name!r}"
    )
