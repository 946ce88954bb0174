"""A data set as one object.

A :class:`Dataset` is everything a game needs of a population: its rows (record ids are their row numbers), its
public domain (:class:`privgame.data.domain.PublicDomain`), its label column for the model games, its size and what
it can serve (``"table"`` for the generators and the record games on tables, ``"features"`` for trained models and
the canary games, ``"images"`` for the image models).  Every game, ``privgame synth`` and the fidelity report read
data only through it.  The built-ins (Adult, COMPAS, the digits) are instances; the catalogue
(:mod:`privgame.data.catalogue`) finds a data set by name.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from privgame.data.domain import PublicDomain

if TYPE_CHECKING:
    import pandas as pd

    from privgame.data.encoding import ModelArrays

__all__ = ["SERVES", "Dataset"]

SERVES: tuple[str, ...] = ("table", "features", "images")
"""What a data set can serve: tables (generators, record games), features (trained models, canary games), images
(image models: the rows are square images, pixels row-major, then the label)."""


@dataclass(frozen=True, eq=False)
class Dataset:
    """A population: its rows, public domain, label, size, and what it serves.

    Parameters
    ----------
    name : str
        The name configs use (``[data] name`` or ``[game] data``).
    domain : PublicDomain
        The public domain of every column (in the rows' order).
    size : int
        The number of records.  Public (a config is checked against it without reading a row) and checked against
        the rows when they are loaded.
    rows : callable
        ``rows() -> DataFrame``: the population, rows numbered 0..size-1 (the record ids), the domain's columns and
        dtypes.  Called at most once per process (:meth:`table` caches it); a module-level function, so that the
        data set can be rebuilt by name in any process.
    label : str or None, default=None
        The label column of the model games (categorical, or integer); ``None``: the data set serves no features.
    positive : object or None, default=None
        For a binary label, its positive value (class 1); ``None``: the classes are the label's public categories in
        order (or its integers, low to high).
    serves : frozenset of str, default={"table"}
        Among :data:`SERVES`; ``"features"`` needs a ``label``, ``"images"`` an ``image_shape``.
    image_shape : tuple of (int, int) or None, default=None
        ``(height, width)`` of the images, for ``"images"``.
    train_split : int or None, default=None
        When the data set is published with a train/test split: its training rows are the first ``train_split``
        (Adult: 32,561), the rest its test rows.  ``privgame synth`` trains on the former and measures utility on
        the latter; without a split it takes the rows it did not train on.
    description : str, default=""
        One line for ``privgame list`` and error messages.
    """

    name: str
    domain: PublicDomain = field(repr=False)
    size: int
    rows: Callable[[], pd.DataFrame] = field(repr=False)
    label: str | None = None
    positive: Any = None
    serves: frozenset[str] = frozenset({"table"})
    image_shape: tuple[int, int] | None = None
    train_split: int | None = None
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"name must be a non-empty string, got {self.name!r}.")
        if not isinstance(self.domain, PublicDomain):
            raise TypeError(f"domain must be a PublicDomain, got {type(self.domain).__name__}.")
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1:
            raise ValueError(f"size must be an integer >= 1, got {self.size!r}.")
        if not callable(self.rows):
            raise TypeError(f"rows must be a callable returning the population's DataFrame, got {self.rows!r}.")
        serves = frozenset(self.serves)
        unknown = sorted(serves - set(SERVES))
        if unknown or not serves:
            raise ValueError(f"serves must be a non-empty set among {', '.join(SERVES)}, got {sorted(serves)!r}.")
        object.__setattr__(self, "serves", serves)
        if self.label is not None:
            if self.label not in self.domain.columns:
                raise ValueError(f"label must be a column of {self.name!r}, got {self.label!r}.")
            if self.label not in dict(self.domain.categories) and self.domain.is_float(self.label):
                raise ValueError(f"label {self.label!r} of {self.name!r} must be categorical or integer, not float.")
            if self.n_classes < 2:
                raise ValueError(f"label {self.label!r} of {self.name!r} must have at least 2 classes.")
        if "features" in serves and self.label is None:
            raise ValueError(f"data set {self.name!r} serves features: it needs a label column.")
        split = self.train_split
        if split is not None and (isinstance(split, bool) or not isinstance(split, int) or not 0 < split < self.size):
            raise ValueError(f"train_split must be an integer in [1, {self.size}) (below size), got {split!r}.")
        if "images" in serves:
            shape = self.image_shape
            if shape is None or len(shape) != 2 or min(shape) < 1:
                raise ValueError(f"data set {self.name!r} serves images: image_shape must be (height, width).")
            pixels = [c for c in self.domain.columns if c != self.label]
            if len(pixels) != shape[0] * shape[1]:
                raise ValueError(f"image_shape {shape} of {self.name!r} must hold its {len(pixels)} non-label columns.")

    # -- what a game asks ------------------------------------------------------------------------------------
    @property
    def columns(self) -> tuple[str, ...]:
        """Every column, in order."""
        return self.domain.columns

    @property
    def n_classes(self) -> int:
        """The classes a model of this data outputs (2 for a binary label); 0 without a label."""
        if self.label is None:
            return 0
        if self.positive is not None:
            return 2
        cats = dict(self.domain.categories)
        if self.label in cats:
            return len(cats[self.label])
        low, high = self.domain.range_of(self.label)
        return int(high) - int(low) + 1

    def table(self) -> pd.DataFrame:
        """The whole population, rows numbered from 0 (the record ids of every game); loaded once per process and
        shared: callers must not modify it (take a copy)."""
        return _table(self)

    def features(self) -> ModelArrays:
        """The whole population encoded for a classifier (:func:`privgame.data.encoding.encode_population`); once per
        process."""
        return _features(self)

    def encode(self, table: pd.DataFrame) -> ModelArrays:
        """Rows of this population (its columns) encoded from the public domain alone."""
        from privgame.data.encoding import encode_population

        return encode_population(table, self)

    def feature_count(self) -> int:
        """Columns of the encoding, from the public domain alone (no row read)."""
        from privgame.data.encoding import count_features

        return count_features(self)


@functools.lru_cache(maxsize=8)
def _table(dataset: Dataset) -> pd.DataFrame:
    import pandas as pd

    table = dataset.rows()
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"data set {dataset.name!r}: rows() must return a DataFrame, got {type(table).__name__}.")
    if tuple(str(c) for c in table.columns) != dataset.columns:
        raise ValueError(
            f"data set {dataset.name!r}: rows() must return the columns of its domain {list(dataset.columns)}, "
            f"got {list(table.columns)}."
        )
    if len(table) != dataset.size:
        raise ValueError(f"data set {dataset.name!r}: size is {dataset.size:,} but rows() returned {len(table):,}.")
    return table.reset_index(drop=True)


@functools.lru_cache(maxsize=4)
def _features(dataset: Dataset) -> ModelArrays:
    if dataset.label is None:
        raise ValueError(f"data set {dataset.name!r} has no label column: it serves no features.")
    return dataset.encode(dataset.table())
