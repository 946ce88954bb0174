"""A content-addressed artefact cache: expensive, deterministic results stored under a hash of what made them.

An artefact (a shadow synthetic table, a feature matrix, a σ calibration) is stored under a key that is the
SHA-256 of the canonical JSON of everything that determines it: the producing component's class and parameters,
the privgame version, the content hash of its input data, the seed's entropy and spawn key, the sizes.  A change in
any of these gives another key, so a changed input always misses: a cache never answers for an artefact it did
not store (the failure mode most reported against LeakPro and Privacy Meter, SPEC §8).

Storage (``ROOT/v1/<kind>/<key[:2]>/<key>.<ext>``) is an uncompressed npz of plain arrays (kind ``frame``: tables
whose columns are all numeric or categorical with string categories, such as the generators' synthetic tables,
written and read back several times faster than as Parquet, as nothing is converted), Parquet (kind ``table``: any
other table, and the tables stored by earlier versions), an npz (``arrays``) or JSON (``json``); every npz is read
with ``allow_pickle=False``.  Nothing is a pickle, so a cache directory from elsewhere can hold no code.  Each entry
is written to a temporary name and renamed into place, then its marker is written beside it (``<key>.sha256``, the
completion marker: the payload's SHA-256 and the entry it belongs to, ``<kind>/<key>``): a run killed at any moment
leaves whole entries or none, and a damaged entry (truncated, edited, its payload missing, or another entry's
payload and marker copied over it, whose checksum matches but whose marker names the other key) fails its check on
read, is reported with a warning, deleted and treated as a miss, so that it is regenerated.  A frame entry is also
checked array by array when it is decoded (``_decode_frame``): one that is not exactly what this module writes is a
damaged entry too.

This module is in ``privgame.core``, the bottom layer, because ``mechanisms``, ``attacks`` and ``analysis`` all use
it; it imports nothing of ours outside ``privgame.core``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import tempfile
import warnings
import zipfile
from collections.abc import Callable, Mapping
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privgame.core._memo import BoundedMemo
from privgame.core.inputs import read_input

__all__ = [
    "ArtefactCache",
    "CacheError",
    "code_fingerprint",
    "content_hash",
    "default_cache_dir",
    "make_key",
    "privgame_version",
    "seed_identity",
]

_LAYOUT = "v1"
_KINDS = ("frame", "table", "arrays", "json")
# a table is stored as a "frame" (npz) when its columns allow it, else as a "table" (Parquet): get_table reads either
_EXT = {"frame": "npz", "table": "parquet", "arrays": "npz", "json": "json"}


class CacheError(ValueError):
    """The cache directory cannot be used (it is a file, or not writable)."""


@cache
def privgame_version() -> str:
    """The installed privgame version (part of every key: a new version may compute artefacts differently)."""
    try:
        return metadata.version("privgame")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree without install
        return "unknown"


# opacus: a loop or a mechanism that trains through Opacus computes what the installed version computes (its
# released bugs differ: experiments/released_bugs.py)
_LIBRARIES = ("numpy", "pandas", "scipy", "scikit-learn", "numba", "pyarrow", "torch", "opacus")


@cache
def code_fingerprint(module: str) -> str:
    """SHA-256 of the source of ``module``'s package (or of the module's own file) and of the versions of the
    numerical libraries.

    The source hashed is that of the regular package holding ``module`` (every ``.py`` file of its folder and of
    its sub-packages, the folders below it that have an ``__init__.py``; hidden files and folders are skipped), so
    an edit anywhere in, say, ``mechanisms/synth/`` changes the fingerprint of ``privgame.mechanisms.synth.baynet``.  A
    module that is not in a regular package (a plugin ``my_plugin.py`` in a project folder) is hashed alone: the
    folder it sits in is not its code (it may hold a ``.venv`` of thousands of files, or an editor's dangling lock
    link).  A file that cannot be read is left out with a warning (once per file) rather than failing every run.

    Part of every release key: an editable install keeps its version number while its code changes, and numpy's
    streams or a library's numerics may change with an upgrade, so the version alone would let a stale artefact
    answer for code that now computes something else (SPEC §8).

    Parameters
    ----------
    module : str
        A module's dotted name, e.g. ``type(mechanism).__module__``.

    Returns
    -------
    str
        The fingerprint, a SHA-256 hex digest (memoised per process).
    """
    import importlib.util

    h = hashlib.sha256(module.encode())
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):  # e.g. "__main__": nothing on disk to hash beyond the name
        spec = None
    origin = Path(spec.origin) if spec is not None and spec.origin else None
    if origin is not None and origin.is_file():
        folder = origin.parent
        files = _package_sources(folder) if (folder / "__init__.py").is_file() else [origin]
        for path in files:
            try:
                payload = path.read_bytes()
            except OSError as exc:  # e.g. a dangling link, a file without read permission
                _warn_unreadable(path, exc)
                continue
            h.update(str(path.relative_to(folder)).encode())
            h.update(payload)
    for lib in _LIBRARIES:
        try:
            h.update(f"{lib}={metadata.version(lib)}".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{lib}=absent".encode())
    return h.hexdigest()


def _package_sources(folder: Path) -> list[Path]:
    """The ``.py`` files of the package ``folder`` and of its sub-packages (folders with an ``__init__.py``, not
    followed through links), hidden files and folders left out, in sorted order of their paths within ``folder``."""
    found: list[Path] = []
    pending = [folder]
    while pending:
        current = pending.pop()
        try:
            entries = list(current.iterdir())
        except OSError as exc:
            _warn_unreadable(current, exc)
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.suffix == ".py" and not entry.is_dir():
                found.append(entry)
            elif entry.is_dir() and not entry.is_symlink() and (entry / "__init__.py").is_file():
                pending.append(entry)
    return sorted(found, key=lambda p: p.relative_to(folder).parts)


_WARNED_UNREADABLE: set[str] = set()


def _warn_unreadable(path: Path, exc: OSError) -> None:
    """Warn, once per path and process, that ``path`` is left out of a code fingerprint."""
    if str(path) in _WARNED_UNREADABLE:
        return
    _WARNED_UNREADABLE.add(str(path))
    warnings.warn(
        f"cannot read {str(path)!r} ({exc.strerror or exc}); it is left out of the code fingerprint of the artefact "
        "cache's keys, so an edit of it does not invalidate cached artefacts.",
        stacklevel=3,
    )


def default_cache_dir() -> Path:
    """``$PRIVGAME_CACHE_DIR``, else ``$XDG_CACHE_HOME/privgame``, else ``~/.cache/privgame``."""
    explicit = os.environ.get("PRIVGAME_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "privgame"


def _canonical(value: Any) -> Any:
    """A JSON-able, type-tagged form of ``value`` in which different values never collide."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int | np.integer):
        return {"int": str(int(value))}
    if isinstance(value, float | np.floating):
        return {"float": float(value).hex()}
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, Mapping):
        items = [[_canonical(k), _canonical(v)] for k, v in value.items()]
        return {"map": sorted(items, key=lambda kv: json.dumps(kv, sort_keys=True))}
    if isinstance(value, tuple | list):
        return {"seq": [_canonical(v) for v in value]}
    if isinstance(value, pd.DataFrame | pd.Series | np.ndarray):
        return {"content": content_hash(value)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # fields outside equality are derived from the others (e.g. DP-SGD's σ, calibrated on first use): a
        # component's key must not depend on whether they are computed yet
        return {
            "class": f"{type(value).__module__}.{type(value).__qualname__}",
            "fields": [[f.name, _canonical(getattr(value, f.name))] for f in dataclasses.fields(value) if f.compare],
        }
    raise TypeError(f"a cache key component must be plain data, a dataclass, an array or a table, got {value!r}.")


def make_key(**components: Any) -> str:
    """SHA-256 (hex) of the canonical, type-tagged JSON of ``components`` (key order does not matter).

    ``1`` and ``1.0`` and ``"1"`` give different keys; tables and arrays enter by their :func:`content_hash`.
    """
    text = json.dumps(_canonical(components), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def content_hash(data: pd.DataFrame | pd.Series | NDArray[Any]) -> str:
    """SHA-256 of a table's or array's content: values in row order, column names, dtypes and category lists.

    The index is not part of it (a table's rows are its content; their labels are bookkeeping).
    """
    h = hashlib.sha256()
    if isinstance(data, pd.Series):
        data = data.to_frame()
    if isinstance(data, pd.DataFrame):
        h.update(json.dumps([data.shape[0], _schema(data)]).encode())
        for _, column in data.items():  # by position, as iloc (duplicate names included), without its indexing
            col = column.array
            values = col.codes if isinstance(col, pd.Categorical) else col.to_numpy()
            h.update(np.ascontiguousarray(values).tobytes() if values.dtype != object else str(list(values)).encode())
        return h.hexdigest()
    arr = np.asarray(data)
    if arr.dtype == object:
        raise TypeError("content_hash needs a numeric array, got dtype object.")
    h.update(json.dumps([arr.dtype.str, list(arr.shape)]).encode())
    h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


def _schema_signature(data: pd.DataFrame) -> tuple[tuple[Any, ...], ...]:
    """A hashable description of ``data``'s columns: name (with its type) and dtype, a categorical's categories in
    their order, with their dtype.

    Not the ``CategoricalDtype`` itself: two unordered ones with the same categories in another order are equal
    (and hash alike), but the same codes mean other values under them.
    """
    return tuple(
        (type(c), str(c), _categories_identity(dtype) if isinstance(dtype, pd.CategoricalDtype) else dtype)
        for c, dtype in zip(data.columns, data.dtypes, strict=True)
    )


def _categories_identity(dtype: pd.CategoricalDtype) -> tuple[Any, ...]:
    """What tells ``dtype``'s categories from any other's: their dtype, and their values in order, exactly (numbers
    by their bytes, so ``-0.0`` is not ``0.0``; objects with their types, so ``1`` is not ``1.0`` nor ``True``).

    Remembered per dtype object (a generator's releases share their input's dtypes): an entry holds its dtype, so
    the ``id`` it is found by cannot be another object's while it is kept.
    """
    known = _CATEGORIES_IDENTITIES.get(id(dtype))
    if known is not None and known[0] is dtype:
        return known[1]
    categories = dtype.categories
    values: Any
    if categories.dtype == object:
        values = tuple((type(x), x) for x in categories)
    elif isinstance(categories.dtype, np.dtype):
        values = categories.to_numpy().tobytes()
    else:
        values = tuple(categories.tolist())
    identity = ("category", bool(dtype.ordered), repr(categories.dtype), values)
    if len(_CATEGORIES_IDENTITIES) >= 256:
        _CATEGORIES_IDENTITIES.pop(next(iter(_CATEGORIES_IDENTITIES)))
    _CATEGORIES_IDENTITIES[id(dtype)] = (dtype, identity)
    return identity


_CATEGORIES_IDENTITIES: dict[int, tuple[pd.CategoricalDtype, tuple[Any, ...]]] = {}


def _schema(data: pd.DataFrame) -> list[list[Any]]:
    """The column names, dtypes and category lists of ``data`` as JSON-able lists (memoised per schema)."""

    def describe() -> list[list[Any]]:
        schema = []
        for c, dtype in zip(data.columns, data.dtypes, strict=True):
            entry: list[Any] = [type(c).__name__, str(c), repr(dtype)]
            if isinstance(dtype, pd.CategoricalDtype):
                cats = dtype.categories
                entry += [bool(dtype.ordered), str(cats.dtype), [[type(x).__name__, str(x)] for x in cats]]
            schema.append(entry)
        return schema

    return _SCHEMAS.get(_schema_signature(data), describe)


_SCHEMAS: BoundedMemo[list[list[Any]]] = BoundedMemo(64)


def _parquet_exact_schema(data: pd.DataFrame) -> bool:
    """Whether every column is numpy-numeric or categorical: then Parquet carries the table exactly or not
    depending on its schema alone (the values of such columns always survive)."""
    return all(
        isinstance(dtype, pd.CategoricalDtype) or (isinstance(dtype, np.dtype) and dtype.kind in "iuf")
        for dtype in data.dtypes
    )


_PARQUET_EXACT: BoundedMemo[bool] = BoundedMemo(64)
"""Per schema (see :func:`_parquet_exact_schema`): whether a table of it reads back from Parquet identical."""


# -- the frame form: a table as an uncompressed npz of plain arrays --------------------------------------------------
# Members: ``layout`` (int64: a header row, then one row per column), ``strings`` (the column names, then each
# categorical column's categories, in column order) and one 2-D array per numpy dtype in use, named by the dtype
# (``int64``, ``int8`` ...), whose rows are the columns of that dtype (values, or a categorical's codes) in column
# order.  As few members as that, because reading each costs tens of microseconds whatever its size.
#   header row: [_FRAME_FORMAT, number of rows, the column names' dtype (index into _STRING_DTYPES), 0]
#   column row: [form (_NUMERIC, _CATEGORICAL or _ORDERED), its array's dtype (index into _FRAME_DTYPES),
#                its number of categories, their dtype (index into _STRING_DTYPES)], the last two 0 when numeric
_FRAME_FORMAT = 1
_NUMERIC, _CATEGORICAL, _ORDERED = 0, 1, 2
_FRAME_DTYPES: tuple[np.dtype[Any], ...] = tuple(
    np.dtype(name)
    for name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64")
)
_FRAME_DTYPE_CODES = {dtype: code for code, dtype in enumerate(_FRAME_DTYPES)}
_CODES_DTYPES = frozenset(code for code, dtype in enumerate(_FRAME_DTYPES) if dtype.kind == "i")


def _string_dtypes() -> tuple[Any, ...]:
    """The dtypes of column names and categories that the frame form keeps, at fixed positions (their codes in
    files): ``object`` holding ``str`` (pandas 2), then pandas 3's ``str`` in each storage (``None`` where the installed
    pandas has no such dtype: an entry naming it is refused as damaged)."""
    dtypes: list[Any] = [np.dtype(object)]
    for storage in ("pyarrow", "python"):
        try:
            dtypes.append(pd.StringDtype(storage, na_value=np.nan))
        except (TypeError, ImportError):  # pragma: no cover - pandas < 2.3, or without pyarrow
            dtypes.append(None)
    return tuple(dtypes)


_STRING_DTYPES = _string_dtypes()

_FramePlan = tuple[int, "NDArray[np.str_]", tuple[tuple[int, int, int], ...]]
"""What a table's schema fixes in its frame form: the names' dtype code, ``strings``, and per column its form, number
of categories and their dtype code."""


def _known_string_dtype(code: int) -> bool:
    """Whether ``code`` (read from an entry) names one of ``_STRING_DTYPES`` that the installed pandas has."""
    return 0 <= code < len(_STRING_DTYPES) and _STRING_DTYPES[code] is not None


def _string_code(index: pd.Index) -> int | None:
    """The code of ``index``'s dtype in ``_STRING_DTYPES``, or ``None`` (another dtype, or objects not all ``str``)."""
    code = next((i for i, dtype in enumerate(_STRING_DTYPES) if dtype is not None and index.dtype == dtype), None)
    if code is None or (index.dtype == object and not all(isinstance(x, str) for x in index)):
        return None
    return code


def _plan_key(frame: pd.DataFrame) -> tuple[Any, ...] | None:
    """What decides a table's :data:`_FramePlan` (its schema, and the dtype of its column names), or ``None`` when
    something the frame form does not keep is set (attributes, a named or multi-level column index, no column)."""
    columns = frame.columns
    if type(columns) is not pd.Index or columns.name is not None or frame.attrs or frame.shape[1] == 0:
        return None
    return _schema_signature(frame), repr(columns.dtype)


def _frame_plan(frame: pd.DataFrame) -> _FramePlan | None:
    """``frame``'s :data:`_FramePlan`, or ``None`` when its columns do not fit the frame form."""
    names_code = _string_code(frame.columns)
    if names_code is None or not frame.columns.is_unique:
        return None
    strings: list[str] = list(frame.columns)
    columns = []
    for dtype in frame.dtypes:
        if isinstance(dtype, pd.CategoricalDtype):
            categories_code = _string_code(dtype.categories)
            if categories_code is None:
                return None
            strings += dtype.categories.tolist()
            columns.append((_ORDERED if dtype.ordered else _CATEGORICAL, len(dtype.categories), categories_code))
        elif dtype in _FRAME_DTYPE_CODES:
            columns.append((_NUMERIC, 0, 0))
        else:
            return None
    return names_code, np.array(strings, dtype=str), tuple(columns)


def _encode_frame(frame: pd.DataFrame, plan: _FramePlan) -> dict[str, NDArray[Any]]:
    """The npz members of ``frame`` (see above), whose schema gave ``plan``."""
    names_code, strings, columns = plan
    layout = [[_FRAME_FORMAT, len(frame), names_code, 0]]
    groups: dict[int, list[NDArray[Any]]] = {}
    # numbered columns: iterating over a frame whose names are pyarrow strings spends most of its time on the names
    numbered = frame.set_axis(pd.RangeIndex(len(columns)), axis=1)
    for (_, column), (form, size, categories_code) in zip(numbered.items(), columns, strict=True):
        values = column.to_numpy() if form == _NUMERIC else column.array.codes
        code = _FRAME_DTYPE_CODES[values.dtype]  # codes: int8 to int64, as pandas makes them
        layout.append([form, code, size, categories_code])
        groups.setdefault(code, []).append(values)
    arrays = {"layout": np.array(layout, dtype=np.int64), "strings": strings}
    for code, rows in groups.items():
        arrays[_FRAME_DTYPES[code].name] = np.stack(rows)
    return arrays


def _frame_payload(arrays: Mapping[str, NDArray[Any]]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, allow_pickle=False, **arrays)
    return buf.getvalue()


def _checked_plan(frame: pd.DataFrame) -> _FramePlan | None:
    """``frame``'s plan when a table of its schema reads back from the frame form identical, else ``None``.

    The values of numeric columns and the codes of categorical ones are stored bit for bit, so this depends on the
    schema alone (a column name or category that text arrays cannot hold, such as one ending in NUL, is caught here).
    """
    plan = _frame_plan(frame)
    if plan is None:
        return None
    payload = _frame_payload(_encode_frame(frame, plan))
    try:
        pd.testing.assert_frame_equal(_decode_frame(_load_stored_npz(payload)), frame, check_exact=True)
    except (AssertionError, ValueError):  # e.g. names "a" and "a\0", one name once NULs are cut
        return None
    return plan


_FRAME_PLANS: BoundedMemo[_FramePlan | None] = BoundedMemo(64)
"""Per :func:`_plan_key`: the checked plan of tables of that schema (``None``: they are stored as Parquet)."""


def _frame_schema(
    strings: NDArray[np.str_], body: list[list[int]], names_code: int
) -> tuple[pd.Index, list[pd.CategoricalDtype | None]]:
    """The column index and the categorical dtypes that ``strings`` and the column rows ``body`` describe."""
    k = len(body)
    names = strings[:k].tolist()
    if len(set(names)) != k:
        raise ValueError("its column names are not distinct")
    dtypes: list[pd.CategoricalDtype | None] = []
    start = k
    for form, _, size, categories_code in body:
        if form == _NUMERIC:
            dtypes.append(None)
            continue
        categories = pd.Index(strings[start : start + size].tolist(), dtype=_STRING_DTYPES[categories_code])
        start += size
        dtypes.append(pd.CategoricalDtype(categories, ordered=form == _ORDERED))  # refuses repeated categories
    return pd.Index(names, dtype=_STRING_DTYPES[names_code]), dtypes


_FRAME_SCHEMAS: BoundedMemo[tuple[pd.Index, list[pd.CategoricalDtype | None]]] = BoundedMemo(64)
"""Per exact content of an entry's layout (less its row count) and ``strings``: its column index and categorical
dtypes, built once.  Keyed by those bytes, so an entry is decoded with the names and categories it holds, never with
those of another entry."""


def _load_stored_npz(payload: bytes) -> dict[str, NDArray[Any]]:
    """The arrays of an npz whose members are all stored uncompressed (no decompression bomb), without pickles."""
    loaded = np.load(io.BytesIO(payload), allow_pickle=False)
    if not isinstance(loaded, np.lib.npyio.NpzFile):
        raise ValueError("it is not an npz")
    with loaded as data:
        if data.zip is None or any(info.compress_type != zipfile.ZIP_STORED for info in data.zip.infolist()):
            raise ValueError("it has compressed members")
        arrays = {name: data[name] for name in data.files}
    if not all(isinstance(array, np.ndarray) for array in arrays.values()):  # a member that is no .npy is bytes
        raise ValueError("it has a member that is not an array")
    return arrays


def _decode_frame(arrays: Mapping[str, NDArray[Any]]) -> pd.DataFrame:
    """The table that :func:`_encode_frame` made ``arrays`` of; anything else raises ``ValueError``.

    Every part is checked (the members, their dtypes and shapes, codes within their categories, names distinct
    strings, categories distinct), since an entry may come from someone else (docs/security.md).
    """
    layout, strings = arrays.get("layout"), arrays.get("strings")
    if layout is None or layout.dtype != np.int64 or layout.ndim != 2 or layout.shape[0] < 2 or layout.shape[1] != 4:
        raise ValueError("its layout is not a table's")
    if strings is None or strings.dtype.kind != "U" or strings.ndim != 1:
        raise ValueError("its strings are not a text array")
    (version, n, names_code, spare), *body = layout.tolist()
    if version != _FRAME_FORMAT or n < 0 or spare != 0 or not _known_string_dtype(names_code):
        raise ValueError(f"its header {[version, n, names_code, spare]} is not a table's")
    n_strings = len(body)
    members: dict[int, list[int]] = {}  # per dtype code, its columns
    for j, (form, code, size, categories_code) in enumerate(body):
        if form == _NUMERIC:
            valid = 0 <= code < len(_FRAME_DTYPES) and size == categories_code == 0
        else:
            valid = form in (_CATEGORICAL, _ORDERED) and code in _CODES_DTYPES and 0 <= size <= len(strings)
            valid = valid and _known_string_dtype(categories_code)
            n_strings += size
        if not valid:
            raise ValueError(f"its column {j} is described as {[form, code, size, categories_code]}")
        members.setdefault(code, []).append(j)
    if n_strings != len(strings):
        raise ValueError(f"it holds {len(strings)} names and categories for {n_strings}")
    if set(arrays) != {"layout", "strings", *(_FRAME_DTYPES[code].name for code in members)}:
        raise ValueError(f"its members {sorted(arrays)} are not a table's")
    columns: list[NDArray[Any]] = [np.empty(0)] * len(body)
    for code, js in members.items():
        group = arrays[_FRAME_DTYPES[code].name]
        if group.dtype != _FRAME_DTYPES[code] or group.shape != (len(js), n):
            raise ValueError(
                f"its {_FRAME_DTYPES[code].name} array holds {group.dtype} of shape {group.shape}, not {len(js)} "
                f"columns of {n} rows"
            )
        for row, j in enumerate(js):
            columns[j] = group[row]
        coded = [row for row, j in enumerate(js) if body[j][0] != _NUMERIC]
        if n and coded:
            low, high = group[coded].min(axis=1), group[coded].max(axis=1)
            if (low < -1).any() or (high >= [body[js[row]][2] for row in coded]).any():
                raise ValueError("its category codes are out of range")
    key = (layout[1:].tobytes(), names_code, strings.dtype.str, strings.tobytes())
    names, dtypes = _FRAME_SCHEMAS.get(key, lambda: _frame_schema(strings, body, names_code))
    data = {
        j: values if dtype is None else pd.Categorical.from_codes(values, dtype=dtype, validate=False)
        for j, (values, dtype) in enumerate(zip(columns, dtypes, strict=True))
    }
    frame = pd.DataFrame(data)
    frame.columns = names.copy()  # its own Index object: setting a table's ``columns.name`` changes no other table
    return frame


def seed_identity(seed: np.random.SeedSequence) -> dict[str, Any]:
    """What identifies a ``SeedSequence``'s stream: its entropy, spawn key and pool size."""
    return {"entropy": seed.entropy, "spawn_key": list(seed.spawn_key), "pool_size": seed.pool_size}


MAX_ENTRY_BYTES = 16 << 30
"""The largest cache entry read back (16 GiB: a synthetic table or a model's parameters are far smaller)."""
MAX_MARKER_BYTES = 1 << 10
"""A completion marker is one line: a SHA-256 and the entry's name."""


def _discard(path: Path) -> bool:
    """Remove a damaged entry's file, link or other special file (a FIFO); return ``False`` when a folder is in its
    place: a folder is left alone (it may hold someone's files), and the entry stays a miss, recomputed each time."""
    if path.is_dir() and not path.is_symlink():
        return False
    path.unlink(missing_ok=True)
    return True


def _atomic_write_bytes(path: Path, payload: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class ArtefactCache:
    """A cache directory of content-addressed artefacts (see the module docstring).

    Parameters
    ----------
    root : str or Path
        The cache directory; created if needed.  It must be a writable directory.

    Raises
    ------
    CacheError
        If ``root`` is a file, cannot be created, or is not writable (checked at once, before any work).

    Notes
    -----
    Picklable (only the path is kept), so joblib workers and Dask workers share it when they share the file
    system.  Concurrent writers of the same key write the same bytes (artefacts are deterministic), and each
    write is an atomic rename, so they cannot corrupt an entry.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        if self.root.exists() and not self.root.is_dir():
            raise CacheError(f"--cache-dir must be a directory, got the file {str(self.root)!r}.")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe = tempfile.NamedTemporaryFile(dir=self.root, prefix=".probe.", delete=True)
            probe.close()
        except OSError as exc:
            raise CacheError(
                f"--cache-dir must be a writable directory, got {str(self.root)!r} ({exc.strerror or exc})."
            ) from None
        self.hits = 0
        self.misses = 0
        self._blocked: set[Path] = set()  # entries with a folder in their place (warned about once, when read)

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.root = Path(state["root"])
        self.hits = 0
        self.misses = 0
        self._blocked = set()

    def __repr__(self) -> str:
        return f"ArtefactCache({str(self.root)!r})"

    def path(self, kind: str, key: str) -> Path:
        """Where the entry ``key`` of ``kind`` lives (whether or not it exists)."""
        if kind not in _KINDS:
            raise ValueError(f"kind must be one of {', '.join(_KINDS)}, got {kind!r}.")
        if len(key) != 64 or any(ch not in "0123456789abcdef" for ch in key):
            raise ValueError(f"key must be a SHA-256 hex digest, got {key!r}.")
        return self.root / _LAYOUT / kind / key[:2] / f"{key}.{_EXT[kind]}"

    # -- generic entries -------------------------------------------------------------------------------------
    def _get(self, kind: str, key: str, decode: Callable[[bytes], Any]) -> Any | None:
        path = self.path(kind, key)
        marker = path.with_suffix(".sha256")
        if not os.path.lexists(marker):
            self.misses += 1
            return None
        try:
            # read as every input is (privgame.core.inputs): a FIFO or a device in the cache is refused, not waited on
            text = read_input(marker, what="cache marker", limit=MAX_MARKER_BYTES).decode("ascii")
            digest, _, owner = text.strip().partition(" ")
            if owner != f"{kind}/{key}":  # e.g. another entry's payload and marker copied over this one
                raise ValueError(f"its marker names the entry {owner[:80]!r}, not {kind}/{key}")
            payload = read_input(path, what="cache entry", limit=MAX_ENTRY_BYTES)
            if hashlib.sha256(payload).hexdigest() != digest:
                raise ValueError("its SHA-256 does not match")
            value = decode(payload)
        except Exception as exc:  # any damage: report, drop, regenerate
            removed = [_discard(damaged) for damaged in (marker, path)]
            fate = (
                "it is deleted and will be regenerated"
                if all(removed)
                else "a folder in its place is left alone, so the artefact is recomputed without being cached"
            )
            if not all(removed):
                self._blocked.add(path)
            warnings.warn(f"corrupted cache entry {path} ({' '.join(str(exc).split())}); {fate}.", stacklevel=3)
            self.misses += 1
            return None
        self.hits += 1
        return value

    def _put(self, kind: str, key: str, payload: bytes) -> None:
        path = self.path(kind, key)
        try:
            try:
                _atomic_write_bytes(path, payload)
            except FileNotFoundError:  # the first entry of its kind and prefix: the folder is made then, not probed
                path.parent.mkdir(parents=True, exist_ok=True)
                _atomic_write_bytes(path, payload)
            # the marker names its entry, so that a payload and marker copied over another key's fail on read
            marker = f"{hashlib.sha256(payload).hexdigest()} {kind}/{key}\n"
            _atomic_write_bytes(path.with_suffix(".sha256"), marker.encode())
        except OSError as exc:  # e.g. a folder in the entry's place: the artefact was computed, only not kept
            if path in self._blocked:
                return  # said when the entry was read
            warnings.warn(
                f"cannot store the cache entry {path} ({exc.strerror or exc}); the artefact is used without it.",
                stacklevel=3,
            )

    def contains(self, kind: str, key: str) -> bool:
        """Whether a complete entry exists (its integrity is checked only when it is read)."""
        return self.path(kind, key).with_suffix(".sha256").exists()

    # -- typed entries ---------------------------------------------------------------------------------------
    def get_table(self, key: str) -> pd.DataFrame | None:
        """The table stored under ``key``, or ``None`` (a miss, or a damaged entry now deleted).

        Read from the frame form (npz) when it is there, else from Parquet (tables the frame form does not carry,
        and entries written by earlier versions).
        """
        if os.path.lexists(self.path("frame", key).with_suffix(".sha256")):
            frame: pd.DataFrame | None = self._get("frame", key, lambda b: _decode_frame(_load_stored_npz(b)))
            return frame
        table: pd.DataFrame | None = self._get("table", key, lambda b: pd.read_parquet(io.BytesIO(b)))
        return table

    def put_table(self, key: str, table: pd.DataFrame) -> bool:
        """Store a table, if it reads back identical (dtypes, category lists and column names included).

        A table whose columns are all numeric (bool, integers, float32/64) or categorical with string categories,
        under distinct string names, is stored in the frame form (an uncompressed npz of plain arrays, fast to
        write and read); any other table as Parquet.  Its index is not kept: it reads back with a ``RangeIndex``.

        Returns whether it was stored: a table that neither form carries exactly (e.g. a categorical column whose
        categories are numbers, which Parquet reads back as a plain numeric column) is not cached, so a hit always
        equals the recomputed table.
        """
        key_of_plan = _plan_key(table)
        plan = None
        if key_of_plan is not None:
            plan = _FRAME_PLANS.get(key_of_plan, lambda: _checked_plan(table.reset_index(drop=True)))
        if plan is not None:
            self._put("frame", key, _frame_payload(_encode_frame(table, plan)))
            return True
        frame = table.reset_index(drop=True)
        buf = io.BytesIO()
        frame.to_parquet(buf, index=False)
        payload = buf.getvalue()

        # Whether Parquet carries a table exactly depends only on its schema when every column is numeric or
        # categorical (the values of such columns always survive), so the read-back check runs once per schema
        # for those; a table with another column (object, string, datetime ...) is checked every time.
        def reads_back() -> bool:
            try:
                pd.testing.assert_frame_equal(pd.read_parquet(io.BytesIO(payload)), frame, check_exact=True)
            except AssertionError:
                return False
            return True

        if _parquet_exact_schema(frame):
            verdict = _PARQUET_EXACT.get(_schema_signature(frame), reads_back)
        else:
            verdict = reads_back()
        if not verdict:
            return False
        self._put("table", key, payload)
        return True

    def get_arrays(self, key: str, *, decode: Callable[[dict[str, NDArray[Any]]], Any] | None = None) -> Any | None:
        """The arrays stored under ``key``, or ``None``; loaded with ``allow_pickle=False``.

        ``decode``, when given, turns the arrays into what is returned; it runs inside the entry's damage
        handling, so arrays it refuses (it raises) make a damaged entry: deleted, warned about, a miss.
        """

        def load(payload: bytes) -> Any:
            with np.load(io.BytesIO(payload), allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
            return arrays if decode is None else decode(arrays)

        return self._get("arrays", key, load)

    def put_arrays(self, key: str, arrays: Mapping[str, NDArray[Any]], *, compress: bool = True) -> None:
        """Store numeric arrays as an npz (compressed by default); object arrays are refused."""
        for name, arr in arrays.items():
            if np.asarray(arr).dtype == object:
                raise TypeError(f"array {name!r} has dtype object; the cache stores numeric arrays only.")
        buf = io.BytesIO()
        payload = {k: np.asarray(v) for k, v in arrays.items()}
        if compress:
            np.savez_compressed(buf, allow_pickle=False, **payload)
        else:
            np.savez(buf, allow_pickle=False, **payload)
        self._put("arrays", key, buf.getvalue())

    def get_json(self, key: str) -> Any | None:
        """The JSON value stored under ``key``, or ``None``."""
        return self._get("json", key, lambda b: json.loads(b.decode()))

    def put_json(self, key: str, value: Any) -> None:
        """Store a JSON-able value."""
        self._put("json", key, json.dumps(value, sort_keys=True).encode())
