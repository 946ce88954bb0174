"""The catalogue: every data set a config can name, found by name.

The built-ins (Adult, COMPAS, the digits) are :class:`~privgame.data.dataset.Dataset` instances made here from their
public facts (:mod:`privgame.data.shipped`); their rows come from the loaders of :mod:`privgame.data.builtin`,
imported only when a row is needed, so that naming or listing a data set (``privgame list``, checking a config)
imports no pandas.  A plugin adds its own with :func:`register_dataset`, and since every worker imports the config's
plugins before its first trial (``privgame.engine.runner``), a data set registered by a plugin works at any
``--n-jobs`` and on a cluster.

The data layer is a straight line: ``domain`` → ``encoding`` → ``dataset`` → ``shipped`` → ``builtin`` →
``catalogue`` → ``features``, ``files``, ``canaries``; no module imports one after it.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from privgame.data.dataset import Dataset
from privgame.data.domain import PublicDomain
from privgame.data.shipped import _DOMAINS

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "builtin_datasets",
    "check_data",
    "dataset_names",
    "get_dataset",
    "public_domain",
    "register_dataset",
    "unregister_dataset",
]


def _adult_rows() -> pd.DataFrame:
    from privgame.data.builtin import load_adult

    return load_adult("all")


def _compas_rows() -> pd.DataFrame:
    from privgame.data.builtin import load_compas

    return load_compas()


def _digits_rows() -> pd.DataFrame:
    from privgame.data.builtin import load_digits_table

    return load_digits_table()


def builtin_datasets() -> tuple[Any, ...]:
    """The shipped populations as :class:`privgame.data.Dataset` objects (no row is read to build them).

    Record ids are row numbers: Adult's training rows then its test rows (48,842), COMPAS's two-year file as
    ProPublica published it (7,214), the digits in scikit-learn's order (1,797).  Adult's label is ``income``
    (positive ``">50K"``), COMPAS's ``two_year_recid`` (positive 1), the digits' the ``digit`` (10 classes).
    """
    both = frozenset({"table", "features"})
    return (
        Dataset(
            "adult",
            _DOMAINS["adult"],
            48_842,
            _adult_rows,
            label="income",
            positive=">50K",
            serves=both,
            train_split=32_561,
            description="UCI Adult (census income), train then test rows",
        ),
        Dataset(
            "compas",
            _DOMAINS["compas"],
            7_214,
            _compas_rows,
            label="two_year_recid",
            positive=1,
            serves=both,
            description="ProPublica COMPAS, two-year recidivism",
        ),
        Dataset(
            "digits",
            _DOMAINS["digits"],
            1_797,
            _digits_rows,
            label="digit",
            serves=both | {"images"},
            image_shape=(8, 8),
            description="scikit-learn's 8x8 digits, 64 pixel columns and the digit",
        ),
    )


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
    if name in _DOMAINS:
        return _DOMAINS[name]
    if name in dataset_names():
        return get_dataset(name).domain
    raise ValueError(f"name must be one of {', '.join(map(repr, dataset_names()))}, got {name!r}.")


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
    >>> from privgame.data import Dataset, PublicDomain, register_dataset
    >>> def coins() -> pd.DataFrame:
    ...     return pd.DataFrame({"side": pd.Categorical(["H", "T", "T"], categories=["H", "T"]), "n": [1, 2, 3]})
    >>> domain = PublicDomain("coins", ("side", "n"), (("side", ("H", "T")),), (("n", 0, 10),))
    >>> _ = register_dataset(Dataset("doc-coins", domain, 3, coins, label="side", serves={"table", "features"}))
    >>> get_dataset("doc-coins").features().x.shape
    (3, 1)
    """
    if not isinstance(dataset, Dataset):
        raise TypeError(f"dataset must be a privgame.data.Dataset, got {type(dataset).__name__}.")
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


def get_dataset(name: str | Dataset) -> Dataset:
    """The data set registered as ``name`` (a :class:`Dataset` given instead is returned as it is).

    Raises
    ------
    TypeError
        If ``name`` is neither a string nor a Dataset.
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
    for dataset in builtin_datasets():
        _CATALOGUE.setdefault(dataset.name, dataset)
