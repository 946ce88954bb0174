"""A content-addressed artefact cache: expensive, deterministic results stored under a hash of what made them.

An artefact (a shadow synthetic table, a feature matrix, a σ calibration) is stored under a key that is the
SHA-256 of the canonical JSON of everything that determines it: the producing component's class and parameters,
the privgame version, the content hash of its input data, the seed's entropy and spawn key, the sizes.  A change in
any of these gives another key, so a changed input always misses: a cache never answers for an artefact it did
not store (the failure mode most reported against LeakPro and Privacy Meter, SPEC §8).

Storage (``ROOT/v1/<kind>/<key[:2]>/<key>.<ext>``) is Parquet (tables), npz without pickles (arrays) or JSON,
never a pickle, so a cache directory from elsewhere can hold no code.  Each entry is written to a temporary name
and renamed into place, then its marker is written beside it (``<key>.sha256``, the completion marker: the
payload's SHA-256 and the entry it belongs to, ``<kind>/<key>``): a run killed at any moment leaves whole entries
or none, and a damaged entry (truncated, edited, its payload missing, or another entry's payload and marker copied
over it, whose checksum matches but whose marker names the other key) fails its check on read, is reported with a
warning, deleted and treated as a miss, so that it is regenerated.

This module is in ``analysis/`` because both ``mechanisms/`` and ``attacks/`` use it and may import nothing
else of ours; it imports nothing of ours itself.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import tempfile
import warnings
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
_KINDS = ("table", "arrays", "json")
_EXT = {"table": "parquet", "arrays": "npz", "json": "json"}


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
        for j in range(data.shape[1]):
            col = data.iloc[:, j].array
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
    """A hashable description of ``data``'s columns: name (with its type), dtype and the categories' dtype."""
    return tuple(
        (type(c), str(c), dtype, str(dtype.categories.dtype) if isinstance(dtype, pd.CategoricalDtype) else "")
        for c, dtype in zip(data.columns, data.dtypes, strict=True)
    )


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
        """The table stored under ``key``, or ``None`` (a miss, or a damaged entry now deleted)."""
        table: pd.DataFrame | None = self._get("table", key, lambda b: pd.read_parquet(io.BytesIO(b)))
        return table

    def put_table(self, key: str, table: pd.DataFrame) -> bool:
        """Store a table as Parquet, if it reads back identical (dtypes and category lists included).

        Returns whether it was stored: a table that Parquet cannot carry exactly (e.g. a categorical column whose
        categories are numbers, which reads back as a plain numeric column) is not cached, so a hit always
        equals the recomputed table.
        """
        buf = io.BytesIO()
        frame = table.reset_index(drop=True)
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
