"""A data set as one object, and the catalogue that finds it by name.

A :class:`Dataset` is everything a game needs of a population: its rows (record ids are their row numbers), its
public domain (:class:`games.datasets.domain.PublicDomain`), its label column for the model games, its size and what
it can serve (``"table"`` for the generators and the record games on tables, ``"features"`` for trained models and
the canary games, ``"images"`` for the image models).  Every game, ``privgame synth`` and the fidelity report read
data only through it.  The built-ins (Adult, COMPAS, the digits) are instances registered here; a plugin adds its
own with :func:`register_dataset`, and since every worker imports the config's plugins before its first trial
(``games.runner``), a data set registered by a plugin works at any ``--n-jobs`` and on a cluster.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from games.datasets.domain import PublicDomain

if TYPE_CHECKING:
    import pandas as pd

    from games.datasets.features import ModelArrays

__all__ = ["SERVES", "Dataset", "check_data", "dataset_names", "get_dataset", "register_dataset"]

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
        """The whole population encoded for a classifier (:func:`games.datasets.features.encode`); once per
        process."""
        return _features(self)

    def encode(self, table: pd.DataFrame) -> ModelArrays:
        """Rows of this population (its columns) encoded from the public domain alone."""
        from games.datasets.features import encode

        return encode(table, self)

    def feature_count(self) -> int:
        """Columns of the encoding, from the public domain alone (no row read)."""
        from games.datasets.features import feature_count

        return feature_count(self)


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


# ---------------------------------------------------------------------------------------------------- the catalogue

_CATALOGUE: dict[str, Dataset] = {}


def register_dataset(dataset: Dataset) -> Dataset:
    """Make ``dataset`` available to configs under its name (``[data] name = "..."`` or ``[game] data = "..."``).

    Call it from a plugin module (``[experiment] plugins``): every process that plays trials imports the plugins
    first, so the data set is found there too.  Registering the same name again replaces the data set with a
    warning when it comes from the same module-qualified ``rows`` function (a re-run notebook cell or a reloaded
    plugin); another data set under a taken name is refused.

    Parameters
    ----------
    dataset : Dataset

    Returns
    -------
    Dataset
        ``dataset`` itself.

    Raises
    ------
    TypeError
        If ``dataset`` is not a :class:`Dataset`.
    ValueError
        If its name is taken by another data set (a built-in included).

    Examples
    --------
    >>> import pandas as pd
    >>> from games.datasets import Dataset, PublicDomain, register_dataset
    >>> def coins() -> pd.DataFrame:
    ...     return pd.DataFrame({"side": pd.Categorical(["H", "T", "T"], categories=["H", "T"]), "n": [1, 2, 3]})
    >>> domain = PublicDomain("coins", ("side", "n"), (("side", ("H", "T")),), (("n", 0, 10),))
    >>> _ = register_dataset(Dataset("doc-coins", domain, 3, coins, label="side", serves={"table", "features"}))
    >>> get_dataset("doc-coins").features().x.shape
    (3, 1)
    """
    if not isinstance(dataset, Dataset):
        raise TypeError(f"dataset must be a games.datasets.Dataset, got {type(dataset).__name__}.")
    _builtins()
    old = _CATALOGUE.get(dataset.name)
    if old is not None:
        if _origin(old) != _origin(dataset) or old.name in _BUILTIN_NAMES:
            raise ValueError(
                f"data set name {dataset.name!r} is already registered (by {_origin(old)}); choose another name."
            )
        warnings.warn(f"data set {dataset.name!r} registered again: the new definition replaces it.", stacklevel=2)
    _CATALOGUE[dataset.name] = dataset
    return dataset


def _origin(dataset: Dataset) -> str:
    rows = dataset.rows
    return f"{getattr(rows, '__module__', '?')}.{getattr(rows, '__qualname__', type(rows).__qualname__)}"


def unregister_dataset(name: str) -> None:
    """Remove a data set registered by :func:`register_dataset` (for tests and interactive sessions)."""
    if name in _BUILTIN_NAMES:
        raise ValueError(f"data set {name!r} is a built-in; it cannot be removed.")
    get_dataset(name)
    del _CATALOGUE[name]


def get_dataset(name: str) -> Dataset:
    """The data set registered as ``name``.

    Raises
    ------
    TypeError
        If ``name`` is not a string.
    ValueError
        If no data set has that name (the message lists the registered ones).
    """
    if isinstance(name, Dataset):
        return name
    if not isinstance(name, str):
        raise TypeError(f"data must be a data set name, got {name!r}.")
    _builtins()
    if name not in _CATALOGUE:
        raise ValueError(f"data must be one of {', '.join(dataset_names())}, got {name!r}.")
    return _CATALOGUE[name]


def dataset_names(serving: str | None = None) -> tuple[str, ...]:
    """The registered data sets (built-ins first, then in registration order), those serving ``serving`` if given."""
    _builtins()
    return tuple(name for name, d in _CATALOGUE.items() if serving is None or serving in d.serves)


def check_data(data: Any, serving: str | Iterable[str]) -> Dataset:
    """The data set ``data`` names, refused in one line unless it serves ``serving`` (one kind, or all of several).

    Raises
    ------
    TypeError
        If ``data`` is not a string.
    ValueError
        If no data set has that name, or it does not serve what is asked; the message lists those that do.
    """
    kinds = (serving,) if isinstance(serving, str) else tuple(serving)
    if not isinstance(data, str | Dataset):
        raise TypeError(f"data must be a data set name, got {data!r}.")
    _builtins()
    able = [name for name, d in _CATALOGUE.items() if all(k in d.serves for k in kinds)]
    name = data.name if isinstance(data, Dataset) else data
    if name not in _CATALOGUE or name not in able:
        what = " and ".join(kinds)
        raise ValueError(f"data must be one of {', '.join(able)} (data sets that serve {what}), got {name!r}.")
    return _CATALOGUE[name]


_BUILTIN_NAMES: tuple[str, ...] = ("adult", "compas", "digits")


@functools.cache
def _builtins() -> None:
    """Register the shipped data sets (once; building them reads no row)."""
    from games.datasets import shipped

    for dataset in shipped.builtin_datasets():
        _CATALOGUE.setdefault(dataset.name, dataset)
