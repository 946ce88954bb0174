"""Tabular records as model features, for a data set given by name: how the model games encode its records.

The encoding itself (public domain only; categories as indicators, numeric columns scaled by their public bounds;
the label apart) is :mod:`privgame.data.encoding`; this module finds the data set in the catalogue
(:mod:`privgame.data.catalogue`) and adds what the games ask of a named population: its table, its whole encoding,
its raw columns for a model that does its own preprocessing, and whether a model can read it.  Record ids are row
numbers of the population (:meth:`privgame.data.Dataset.table`).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from privgame.data.catalogue import dataset_names, get_dataset
from privgame.data.dataset import Dataset
from privgame.data.encoding import ModelArrays, count_features, encode_population

__all__ = [
    "ModelArrays",
    "encode",
    "feature_count",
    "model_arrays",
    "model_problem",
    "population_table",
    "raw_columns",
]


def _labelled(data: Any) -> Dataset:
    dataset = get_dataset(data)
    if dataset.label is None:
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
    return encode_population(table, _labelled(data))


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
    per process (callers must not modify it).  :meth:`privgame.data.Dataset.table`."""
    return get_dataset(data).table()


def model_arrays(data: Dataset | str) -> ModelArrays:
    """The whole ``data`` population (row order) encoded by :func:`encode`; cached per process."""
    return _labelled(data).features()


def feature_count(data: Dataset | str) -> int:
    """Columns of ``data``'s encoding, from its public domain alone (no record is read): one per category of a
    categorical column, one per numeric column, the label left out, as :func:`encode` lays them out."""
    return count_features(_labelled(data))


def model_problem(mechanism: object, data: Dataset | str) -> str | None:
    """Why the trained model ``mechanism`` cannot read the records of ``data`` (a CNN on a data set without images,
    or whose image is not the data's), or ``None``; asked by the model games when the config is read."""
    check = getattr(mechanism, "feature_problem", None)
    images = getattr(mechanism, "image_problem", None)  # only a model that reads images has one
    dataset = get_dataset(data)
    name = getattr(mechanism, "name", mechanism)
    problem = check(feature_count(dataset)) if callable(check) and dataset.label is not None else None
    if problem is not None:
        return f"mechanism '{name}': {problem} in {dataset.name!r}"
    # records of the right width need not be images: a table's encoded columns are no neighbouring pixels
    problem = images(dataset.image_shape if "images" in dataset.serves else None) if callable(images) else None
    if problem is not None:
        served = ", ".join(dataset_names("images")) or "none registered"
        return f"mechanism '{name}' on {dataset.name!r}: {problem} (data sets of images: {served})"
    return None
