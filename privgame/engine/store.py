"""The results directory: what a run writes, how it is checked, and how an interrupted run is resumed.

Layout (documented for users in ``docs/results.md``)::

    OUT/
      manifest.json         format version, config hash, parsed and normalised config, grid, analytic ε per point
      config.toml           the config file as given (bytes)
      trials/trial-NNNNNN.parquet   one row per finished trial (the completion marker), with its files' SHA-256
      raw/trial-NNNNNN.npz          that trial's raw arrays: scores, membership, extras
      records/trial-NNNNNN.parquet  that trial's per-record rows (record-level games only)
      failures/trial-NNNNNN.json    a trial whose code raised: the error and its traceback
      progress/trial-NNNNNN.json    mechanism runs done in a trial still running (progress lines only)
      results.parquet       all rows in trial order, rewritten whenever a run completes
      records.parquet       all per-record rows (record, game, risk metrics, intervals), if any

Every file is written to a temporary name and renamed into place, so a killed run leaves no partial file.  The
manifest is written first, so a directory holding only privgame's names and no manifest can only be one whose
creation was interrupted (it is taken over; see :meth:`ResultsStore.open_for_run`).  A trial's raw arrays and
per-record rows are written before its row, and the row carries their SHA-256: a trial is finished only when its
row is readable and its files match those checksums (:meth:`ResultsStore.scan`).  A trial that is not finished —
never run, damaged, or failed — is played again on resume from its own seed, so the final results equal an
uninterrupted run's.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import reprlib
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from privgame.core.inputs import InputFileError, open_input, read_input
from privgame.core.outputs import OutputWriteError
from privgame.engine.config import config_hash
from privgame.games._base import TrialOutcome

__all__ = [
    "CHECKSUM_COLUMNS",
    "FORMAT_VERSION",
    "ResultsStore",
    "Scan",
    "StoreError",
    "config_differences",
    "describe_trials",
    "drop_timings",
    "writing",
]

FORMAT_VERSION = 1
_MANIFEST = "manifest.json"
_CONFIG = "config.toml"
_FILES = (_MANIFEST, _CONFIG, "results.parquet", "records.parquet")
_DIRS = ("trials", "raw", "records", "failures", "progress")
_OWNED = _FILES + _DIRS
#: the columns of a row that hold the SHA-256 of the trial's raw arrays and of its per-record rows ("": none)
CHECKSUM_COLUMNS = ("sha256_raw", "sha256_records")
_NPZ_DATE = (1980, 1, 1, 0, 0, 0)  # a fixed timestamp, so the same arrays always give the same bytes
# The most privgame reads of each file of a results directory (docs/results.md, "Limits"): far above what a run
# writes, so that only a file that is not privgame's (a link to /dev/zero, a huge stray file) is refused
MAX_MANIFEST_BYTES = 1 << 30  # manifest.json: a config of 100,000 grid points takes some tens of MiB
MAX_ROW_BYTES = 64 << 20  # trials/trial-NNNNNN.parquet: one row
MAX_RECORDS_BYTES = 4 << 30  # records/trial-NNNNNN.parquet: one trial's per-record rows
MAX_RAW_BYTES = 64 << 30  # raw/trial-NNNNNN.npz: one trial's raw arrays (a billion float64 scores is 8 GiB)
MAX_FAILURE_BYTES = 16 << 20  # failures/trial-NNNNNN.json: an error and its traceback
MAX_PROGRESS_BYTES = 1 << 10  # progress/trial-NNNNNN.json: {"done": n}
_LIMITS = {
    "trials": MAX_ROW_BYTES,
    "records": MAX_RECORDS_BYTES,
    "raw": MAX_RAW_BYTES,
    "failures": MAX_FAILURE_BYTES,
    "progress": MAX_PROGRESS_BYTES,
}


_RUN_REMEDY = "use --force to delete them and start over, or choose another --out"


class StoreError(ValueError):
    """The results directory cannot be used as asked (another config's results, not a results directory)."""


@contextlib.contextmanager
def writing(root: str | Path) -> Iterator[None]:
    """Hold the results directory ``root`` for one writer while the block runs: an exclusive lock on the directory
    itself (``flock``; no file is added), so that a second ``privgame run`` (or ``reanalyse``) into the same
    directory is refused in one line instead of mixing its trials, or its ``--force``, with this one's.

    The directory is made if missing (and removed again if the block fails leaving it empty).  Where the file
    system has no locks (some network file systems), the block runs without one.

    Raises
    ------
    StoreError
        If another process holds the directory.
    """
    path = Path(root)
    made = not path.exists()
    _mkdir(path)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StoreError(
                f"--out {str(path)!r} is being written by another privgame run (it holds the directory's lock); "
                "wait for it to end, or choose another --out."
            ) from None
        except (ImportError, OSError):  # no fcntl (Windows), or no locks on this file system
            pass
        try:
            yield
        except BaseException:
            if made:
                with contextlib.suppress(OSError):
                    path.rmdir()  # only if still empty
            raise
    finally:
        os.close(fd)  # releases the lock


def drop_timings(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` without its wall times (``seconds`` and the games' ``seconds_<name>``): what two runs of the same
    config must agree on exactly."""
    return rows.drop(columns=[c for c in rows.columns if c == "seconds" or str(c).startswith("seconds_")])


def describe_trials(trials: Sequence[int] | set[int], limit: int = 12) -> str:
    """Trial numbers for a message: ``"trials 1, 4, 7"``, the first ``limit`` then ``"… (40 in all)"``."""
    ordered = sorted(trials)
    shown = ", ".join(map(str, ordered[:limit]))
    more = f", … ({len(ordered)} in all)" if len(ordered) > limit else ""
    return f"trial{'s' if len(ordered) != 1 else ''} {shown}{more}"


def _trial_name(trial: int, suffix: str) -> str:
    return f"trial-{trial:06d}{suffix}"


def _trial_index(path: Path) -> int | None:
    """The trial number in a ``trial-NNNNNN.*`` name, or ``None`` for any other name."""
    stem = path.name.split(".", 1)[0]
    head, _, digits = stem.partition("-")
    return int(digits) if head == "trial" and digits.isdigit() else None


def _mkdir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputWriteError(path, "making the folder", exc) from None


def _atomic_write(path: Path, write: Any, action: str) -> None:
    """Write through ``write(tmp_path)`` to a temporary file in the same folder, then rename into place.

    Raises
    ------
    StoreError
        If ``path`` is a directory (which the rename could not replace, and privgame would not delete).
    privgame.core.outputs.OutputWriteError
        If the file cannot be written (a full disk, a permission): one line naming ``path``, ``action`` (what was
        being written, ``"writing trial 12's row"``) and the system's error; nothing is left in ``path``'s place.
    """
    if path.is_dir() and not path.is_symlink():
        raise StoreError(
            f"{str(path)!r} must be a file, got a directory; privgame deletes no folder it did not make: move it "
            "away and run again."
        )
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise OutputWriteError(path, action, exc) from None
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except OSError as exc:  # pyarrow's and numpy's write errors are OSErrors too
        Path(tmp).unlink(missing_ok=True)
        raise OutputWriteError(path, action, exc) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _is_our_tmp(name: str) -> bool:
    """Whether ``name`` is a temporary file :func:`_atomic_write` makes for one of the top-level files."""
    return name.endswith(".tmp") and name.startswith(tuple(f".{f}." for f in _FILES))


def _is_store_entry(path: Path) -> bool:
    """Whether an entry of one of a results directory's folders is one the store writes there: a trial's file
    (``trial-NNNNNN.*``), or the temporary file of one being written; a folder never is."""
    if not path.is_symlink() and not path.is_file():
        return False
    name = path.name
    return _trial_index(path) is not None or (name.startswith(".trial-") and name.endswith(".tmp"))


def _open(path: Path) -> BinaryIO:
    """A trial's file (its folder says which, and the most read of it), opened as every file privgame reads is:
    a regular file only, never a FIFO that would block the reader."""
    return open_input(path, what=f"{path.parent.name}/{path.name}", limit=_LIMITS.get(path.parent.name, MAX_RAW_BYTES))


def _unreadable(name: Any, exc: InputFileError) -> str:
    """What is wrong with a trial's file that the opener refused, for a damaged trial's notice."""
    why = {
        "missing": "is missing",
        "directory": "is a directory",
        "special": "is not a regular file (a FIFO, a device or a socket)",
        "too-large": "is larger than privgame reads for it",
    }
    return f"{name} {why.get(exc.reason, 'is unreadable')}"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with _open(path) as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _parquet(path: Path, payload: bytes, *, rows: int | None = None) -> pa.Table:
    """The table of ``payload``, the bytes of a trial's Parquet file ``path``, after its footer says it holds
    ``rows`` rows (any number: ``None``) and unpacks to at most the bytes privgame reads of the file: a few bytes of
    run-length code can stand for billions of rows, which would take every reader's memory and time.

    Raises
    ------
    ValueError
        Naming the file and what it holds, for a file that is not such a table.
    """
    footer = pq.ParquetFile(pa.BufferReader(payload)).metadata
    if rows is not None and footer.num_rows != rows:
        raise ValueError(f"{path.parent.name}/{path.name} holds {footer.num_rows:,} rows, not {rows}")
    limit = _LIMITS.get(path.parent.name, MAX_RAW_BYTES)
    unpacked = sum(footer.row_group(i).total_byte_size for i in range(footer.num_row_groups))
    if unpacked > limit:
        raise ValueError(
            f"{path.parent.name}/{path.name} unpacks to {unpacked:,} bytes, more than the {limit:,} privgame reads of "
            "it"
        )
    return pq.read_table(pa.BufferReader(payload))


def _read_parquet(path: Path) -> pa.Table:
    """A trial's Parquet file (its row, its per-record rows), read through :func:`_open` and :func:`_parquet`."""
    with _open(path) as fh:
        try:
            return _parquet(path, fh.read())
        except (ValueError, pa.ArrowException) as exc:  # ArrowInvalid is a ValueError too
            raise StoreError(f"{path}: {str(exc).rstrip('.')}.") from None


def _write_npz(path: Path, arrays: Mapping[str, Any]) -> None:
    """``numpy.savez`` with a fixed timestamp in every member, so equal arrays give equal bytes (and checksums);
    object arrays are refused rather than pickled."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, value in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_NPZ_DATE)
            with archive.open(info, "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, np.asanyarray(value), allow_pickle=False)


def _readable_npz(path: Path) -> bool:
    """Whether ``path`` is a whole ``.npz`` (every member's CRC checks); for rows written before checksums."""
    try:
        with _open(path) as fh, zipfile.ZipFile(fh) as archive:
            return archive.testzip() is None and all(n.endswith(".npy") for n in archive.namelist())
    except (OSError, zipfile.BadZipFile, ValueError):
        return False


class _BadArrays(ValueError):
    """An npz archive that is not a trial's arrays (see :func:`_npz_arrays`)."""


_NPY_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def _npz_arrays(path: Path, fh: BinaryIO) -> dict[str, Any]:
    """The arrays of the npz ``fh`` (the file ``path``), each read only after its header is checked against its
    member's size: a header may declare any shape, which would take the reader's memory before the data ran out.
    Members are stored uncompressed, as privgame writes them: a few compressed bytes may unpack to gigabytes.

    Raises
    ------
    _BadArrays
        Naming the member and what is wrong with it.
    """
    fh.seek(0)
    arrays = {}
    with zipfile.ZipFile(fh) as archive:
        members = archive.infolist()
        unpacked = sum(member.file_size for member in members)
        if unpacked > MAX_RAW_BYTES:
            raise _BadArrays(f"it unpacks to {unpacked:,} bytes, more than the {MAX_RAW_BYTES:,} privgame reads")
        for member in members:
            if not member.filename.endswith(".npy"):
                raise _BadArrays(f"its member {member.filename!r} is not an array (.npy)")
            if member.compress_type != zipfile.ZIP_STORED:
                raise _BadArrays(f"{member.filename} is compressed; privgame stores a trial's arrays uncompressed")
            with archive.open(member) as npy:
                version = np.lib.format.read_magic(npy)
                if version not in _NPY_HEADERS:
                    raise _BadArrays(f"{member.filename} has .npy format {version}, not one privgame writes")
                shape, _, dtype = _NPY_HEADERS[version](npy)
                size = math.prod(shape) * dtype.itemsize
                if dtype.hasobject:
                    raise _BadArrays(f"{member.filename} holds Python objects (a pickle), which privgame never loads")
                held = member.file_size - npy.tell()
                if size > held:
                    raise _BadArrays(f"{member.filename} declares {size:,} bytes of data, but holds {held:,}")
                npy.seek(0)
                arrays[member.filename.removesuffix(".npy")] = np.lib.format.read_array(npy, allow_pickle=False)
    return arrays


def _missing_arrays(path: Path) -> list[str] | None:
    """Which of the arrays every trial's raw file holds (``scores``, ``membership``) ``path`` lacks, read from the
    archive's index alone; ``None`` when it is missing or not a zip archive."""
    try:
        with _open(path) as fh, zipfile.ZipFile(fh) as archive:
            names = set(archive.namelist())
    except (OSError, zipfile.BadZipFile, ValueError):
        return None
    return [key for key in ("scores", "membership") if f"{key}.npy" not in names]


def _plain_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _flatten(config: Mapping[str, Any]) -> dict[str, Any]:
    """A config as ``"section.key" → value``, for saying which keys differ.

    A normalised config (its ``grid`` lists every point's components) gives each component parameter's distinct
    values in grid order (one value when it is not swept); a stored raw config (results written before configs
    were normalised) gives its sections' keys as written.
    """
    flat: dict[str, Any] = {}
    if "grid" in config:
        for key in ("seed", "repetitions", "plugins"):
            flat[f"experiment.{key}"] = config.get(key)
        for key, value in dict(config.get("analysis") or {}).items():
            flat[f"analysis.{key}"] = value
        grid = list(config.get("grid") or [])
        for section in ("game", "mechanism", "attack"):
            keys: dict[str, None] = {}
            for point in grid:
                keys.update(dict.fromkeys(point.get(section, {})))
            for key in keys:
                values: dict[str, Any] = {}
                for point in grid:
                    value = point.get(section, {}).get(key, "(absent)")
                    values.setdefault(_plain_key(value), value)
                distinct = list(values.values())
                flat[f"{section}.{key}"] = distinct[0] if len(distinct) == 1 else distinct
        return flat
    for section, table in config.items():
        if isinstance(table, Mapping):
            for key, value in table.items():
                if (section, key) not in (("experiment", "name"), ("experiment", "description")):
                    flat[f"{section}.{key}"] = value
    return flat


def config_differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The keys in which two configs differ, as ``"mechanism.epsilon: [1.0, 2.0] → [1.0, 4.0]"``.

    Parameters
    ----------
    old, new : mapping
        Normalised configs (:attr:`privgame.engine.config.ExperimentConfig.normalised`), or raw ones as stored by
        results written before configs were normalised.

    Returns
    -------
    list of str
        One entry per differing key, in the order of ``new``'s keys then ``old``'s; empty when the flattened
        values agree (the configs may still sweep their parameters in a different order).
    """
    a, b = _flatten(old), _flatten(new)
    show = lambda key, flat: json.dumps(flat[key], ensure_ascii=False, default=str) if key in flat else "(absent)"  # noqa: E731
    keys = list(dict.fromkeys([*b, *a]))
    return [
        f"{key}: {show(key, a)} → {show(key, b)}" for key in keys if _plain_key(a.get(key)) != _plain_key(b.get(key))
    ]


def _grid_shape(root: Path, manifest: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """The grid points and the repetitions per grid point of a results manifest, checked: what a trial's row
    indexes with its ``grid_point`` and ``repetition``; ``None`` for either that the manifest leaves out (a store
    opened with a partial manifest; a report refuses a manifest without its grid itself)."""
    path = root / _MANIFEST
    grid, repetitions = manifest.get("grid"), manifest.get("repetitions")
    if "grid" in manifest and not (isinstance(grid, list) and grid):
        raise StoreError(f"{path}: grid must list the grid points, got {reprlib.repr(grid)}.")
    if repetitions is not None and not (_is_index(repetitions, None) and int(repetitions) > 0):
        raise StoreError(f"{path}: repetitions must be a positive integer, got {reprlib.repr(repetitions)}.")
    return (len(grid) if isinstance(grid, list) else None), repetitions


def _is_index(value: Any, size: int | None) -> bool:
    """Whether ``value`` is an int (not a bool, not a float) from 0 to ``size - 1`` (any size: ``None``)."""
    if not isinstance(value, int) or isinstance(value, bool):
        return False
    return 0 <= value and (size is None or value < size)


@dataclass(frozen=True)
class Scan:
    """What a results directory holds, checked: see :meth:`ResultsStore.scan`.

    Attributes
    ----------
    rows : DataFrame
        The rows of the finished trials (row readable, files matching their checksums), in trial order.
    damaged : dict of int to str
        Trials with a row whose row or files are unreadable, missing or not matching their checksums: what is
        wrong with each.  They count as not run.
    failures : dict of int to dict
        Trials not finished whose last attempt raised: the content of their ``failures/trial-NNNNNN.json``.
    """

    rows: pd.DataFrame
    damaged: dict[int, str] = field(default_factory=dict)
    failures: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def finished(self) -> set[int]:
        return set() if self.rows.empty else {int(t) for t in self.rows["trial"]}


class ResultsStore:
    """A results directory (see the module docstring for its layout)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._scan: Scan | None = None

    # -- creation and resumption ---------------------------------------------------------------------------
    @classmethod
    def open_for_run(
        cls, root: str | Path, manifest: Mapping[str, Any], config_bytes: bytes, *, force: bool = False
    ) -> ResultsStore:
        """Create the directory, or reopen it to resume the same config.

        The manifest is written first (atomically), then the config copy and the sub-folders, so a run killed at
        any point leaves a directory that this method takes over: one with a manifest is resumed; one holding
        only privgame's names and no manifest (creation interrupted) is made afresh, and if it holds trial files
        (which no privgame run leaves without a manifest) ``force`` is needed to delete them.

        Parameters
        ----------
        root : str or Path
        manifest : mapping
            The run's manifest; ``config_hash`` identifies the experiment and ``normalised_config`` (with
            ``config``, the config as read) says how another one differs.
        config_bytes : bytes
            The config file as given, copied to ``config.toml``.
        force : bool, default=False
            Delete the results of a different config (or of a half-made directory) instead of refusing.

        Raises
        ------
        StoreError
            If it holds results of a different config (naming the keys that differ) and ``force`` is false, or is
            a non-empty directory that is not a privgame results directory (whatever ``force`` says).
        """
        store = cls(root)
        path = store.root
        store.check_open(manifest, force=force, config_bytes=config_bytes)
        if path.is_dir() and any(path.iterdir()) and (force or not (path / _MANIFEST).exists()):
            store.clear()  # another config's results (force), or a half-made directory that check_open let through
        _mkdir(path)
        for stale in path.glob(".*.tmp"):  # left by a run killed while writing
            stale.unlink(missing_ok=True)
        if not (path / _MANIFEST).exists():
            text = json.dumps(dict(manifest), indent=2, default=str)
            _atomic_write(path / _MANIFEST, lambda p: p.write_text(text), "writing the manifest")
        if not (path / _CONFIG).exists():
            _atomic_write(path / _CONFIG, lambda p: p.write_bytes(config_bytes), "writing the config's copy")
        for sub in _DIRS:
            _mkdir(path / sub)
            for stale in (path / sub).glob(".*.tmp"):
                stale.unlink(missing_ok=True)
        for stale in (path / "progress").glob("trial-*.json"):  # counts of trials that a killed run left running
            stale.unlink(missing_ok=True)
        return store

    @classmethod
    def previous_manifest(cls, root: str | Path) -> dict[str, Any] | None:
        """The manifest a results directory already holds, or ``None`` (no directory, no manifest, or one that
        cannot be read: :meth:`open_for_run` then says why the directory cannot be used)."""
        if not (Path(root) / _MANIFEST).is_file():
            return None
        try:
            return cls(root).manifest()
        except StoreError:
            return None

    def resume(self) -> set[int]:
        """The trials finished in this directory, once its damaged trials (a file missing or not matching its
        checksum) are discarded with a notice on stderr, so that they are played again."""
        damaged = self.damaged()
        if damaged:
            self._check_discardable(damaged)
            first = min(damaged)
            print(
                f"privgame: {len(damaged)} damaged trial{'s' if len(damaged) > 1 else ''} in {self.root} "
                f"({describe_trials(set(damaged))}; trial {first}: {damaged[first]}) will be run again.",
                file=sys.stderr,
            )
            self.discard(sorted(damaged))
        return self.done()

    def _check_discardable(self, trials: Mapping[int, str]) -> None:
        """Refuse to play again a damaged trial one of whose files is a directory: privgame never made it, and
        deleting it could lose what someone put there.

        Raises
        ------
        StoreError
            Naming the directory.
        """
        for trial in sorted(trials):
            row, records = (self.root / sub / _trial_name(trial, ".parquet") for sub in ("trials", "records"))
            for path in (row, self._raw_path(trial), records):
                if path.is_dir() and not path.is_symlink():
                    raise StoreError(
                        f"{str(path)!r}, trial {trial}'s file, must be a file, got a directory; privgame deletes no "
                        "folder it did not make: move it away and run again."
                    )

    def check_open(
        self,
        manifest: Mapping[str, Any],
        *,
        force: bool = False,
        more_repetitions: bool = False,
        remedy: str = _RUN_REMEDY,
        config_bytes: bytes | None = None,
    ) -> None:
        """Raise the :class:`StoreError` that :meth:`open_for_run` would raise for ``manifest``, writing nothing:
        what a command checks before any work (an analytic ε's calibration, a reanalysis's announcement).

        Parameters
        ----------
        manifest : mapping
            At least ``config_hash``, ``normalised_config`` and ``config`` of the run (see :meth:`open_for_run`).
        force : bool, default=False
            As :meth:`open_for_run`.
        more_repetitions : bool, default=False
            Also accept this experiment with other repetitions (``privgame run`` adds repetitions, or refuses to
            drop them, itself).
        remedy : str
            What the refusal of another config's results advises (``privgame reanalyse`` has no ``--force``).
        config_bytes : bytes or None, default=None
            The config copy the run will write: a ``config.toml`` without a manifest is taken over only when it holds
            exactly these bytes (the copy a killed run of this config made); otherwise it is someone's file.

        Raises
        ------
        StoreError
            If ``root`` is not a directory, holds another config's results (without ``force``), is a non-empty
            directory that is not a privgame results directory, or (without ``force``) one of its own names is a
            symbolic link; with ``force``, if its manifest is not privgame's or its folders hold files privgame
            did not write.
        """
        path = self.root
        if path.exists() and not path.is_dir():
            raise StoreError(f"--out {str(path)!r} exists and is not a directory.")
        if not path.is_dir() or not any(path.iterdir()):
            return
        if not force:
            self._linked_problem(remedy)
        if not os.path.lexists(path / _MANIFEST):
            self._half_made_problem(force, config_bytes)
        elif force:
            self._clear_problem()
        elif not force:
            if more_repetitions:
                old = self.manifest().get("normalised_config")
                new = manifest.get("normalised_config")
                if isinstance(old, Mapping) and isinstance(new, Mapping):
                    drop = lambda c: {k: v for k, v in c.items() if k != "repetitions"}  # noqa: E731
                    if config_hash(drop(old)) == config_hash(drop(new)):
                        return
            self.check_same_experiment(manifest, remedy=remedy)

    def check_same_experiment(self, manifest: Mapping[str, Any], *, remedy: str = _RUN_REMEDY) -> None:
        """Refuse (StoreError naming the keys that differ) unless this directory holds ``manifest``'s experiment."""
        old = self.manifest()
        if old.get("config_hash") == manifest["config_hash"]:
            return
        if isinstance(old.get("normalised_config"), Mapping):
            differences = config_differences(old["normalised_config"], manifest.get("normalised_config", {}))
        elif old.get("config_hash") == config_hash(manifest.get("config", {})):
            return  # written before configs were normalised, from a config that parses to the same values
        else:
            differences = config_differences(old.get("config", {}), manifest.get("config", {}))
        shown = "; ".join(differences[:6]) + (f"; and {len(differences) - 6} more" if len(differences) > 6 else "")
        what = shown or "the same values, swept in a different order (the grid points are numbered differently)"
        raise StoreError(f"--out {str(self.root)!r} holds results of a different config ({what}); {remedy}.")

    def rewrite_manifest(self, manifest: Mapping[str, Any]) -> None:
        """Replace the manifest (atomically) of a directory whose experiment gains repetitions: its trials stay as
        they are; the new manifest, written before any new trial, is what makes them part of it."""
        self.manifest()  # refuses what is not a results directory of this format
        text = json.dumps(dict(manifest), indent=2, default=str)
        _atomic_write(self.root / _MANIFEST, lambda p: p.write_text(text), "rewriting the manifest")

    def _linked_problem(self, remedy: str) -> None:
        """Refuse a directory one of whose own names is a symbolic link: resuming would write (and discard damaged
        trials) through it, outside the directory; ``--force`` removes the link alone (:meth:`clear`)."""
        for name in _OWNED:
            link = self.root / name
            if link.is_symlink():
                force = ""
                if remedy == _RUN_REMEDY:  # privgame reanalyse has no --force
                    force = ", or use --force, which removes the link and leaves what it points to alone"
                raise StoreError(
                    f"--out {str(self.root)!r}: its {name!r} is a symbolic link (to {os.readlink(link)!r}), and a "
                    f"results directory's files are written only inside it; remove the link{force}, or choose "
                    "another --out."
                )

    def _half_made_problem(self, force: bool, config_bytes: bytes | None) -> None:
        """A non-empty directory without a manifest: a half-made results directory may be cleared (it holds no
        trial files, or ``force``); anything else is refused: a file in its folders that privgame does not name,
        and a top-level file of privgame's name beside no trial file (someone's own ``config.toml`` or
        ``results.parquet``), unless it is a ``config.toml`` holding this very config (an older privgame wrote the
        copy before the manifest)."""
        path = self.root
        files = [p for sub in _DIRS if sub != "progress" for p in (path / sub).glob("trial-*")]
        ours = set(_OWNED) if files else set(_DIRS)  # trial files: the top-level files are a run's too
        if config_bytes is not None and self._holds_config(config_bytes):
            ours.add(_CONFIG)
        foreign = [p.name for p in path.iterdir() if p.name not in ours and not _is_our_tmp(p.name)]
        foreign += [str(p.relative_to(path)) for p in self._foreign_entries()]
        if foreign:
            raise StoreError(
                f"--out {str(path)!r} is not empty and holds no privgame results (no {_MANIFEST}; it holds "
                f"{sorted(foreign)[0]!r}); choose another directory."
            )
        if files and not force:
            raise StoreError(
                f"--out {str(path)!r} holds {len(files)} privgame trial files but no {_MANIFEST}, so nothing says "
                "which config they belong to; use --force to delete them and start over, or choose another --out."
            )

    def _holds_config(self, config_bytes: bytes) -> bool:
        """Whether the top-level ``config.toml`` is a regular file holding exactly ``config_bytes``."""
        try:
            return read_input(self.root / _CONFIG, what=_CONFIG, limit=len(config_bytes) + 1) == config_bytes
        except InputFileError:
            return False

    def _foreign_entries(self) -> list[Path]:
        """What the store's own folders hold that the store never writes there (a folder, a file not named as a
        trial's), which nothing may delete; a folder of ours that is a symbolic link is not looked into (only the
        link is ever removed)."""
        found: list[Path] = []
        for sub in _DIRS:
            folder = self.root / sub
            if folder.is_symlink() or not folder.is_dir():
                continue
            found += sorted(p for p in folder.iterdir() if not _is_store_entry(p))
        return found

    def _clear_problem(self) -> None:
        """Refuse to clear (``--force``) a directory that is not privgame's results: its manifest is not a privgame
        manifest, or its folders hold what the store never writes there.

        Raises
        ------
        StoreError
            Naming the file.
        """
        if os.path.lexists(self.root / _MANIFEST):
            try:
                self.manifest()
            except StoreError as exc:
                raise StoreError(
                    f"--out {str(self.root)!r}: its {_MANIFEST} is not a privgame manifest ({str(exc).rstrip('.')}); "
                    "--force deletes only privgame's results: choose another --out."
                ) from None
        foreign = self._foreign_entries()
        if foreign:
            raise StoreError(
                f"--out {str(self.root)!r} holds {str(foreign[0].relative_to(self.root))!r}, which privgame did not "
                f"write ({len(foreign)} such entr{'ies' if len(foreign) > 1 else 'y'} in its own folders); --force "
                "deletes only privgame's results: move them away, or choose another --out."
            )

    def clear(self) -> None:
        """Delete everything a run wrote (and nothing else): one of its names that is a symbolic link loses the link
        only, never what it points to; in its folders, only the files the store names (a folder left holding
        anything else is left in place).  The manifest goes last, so that a clear killed half-way leaves a results
        directory that ``--force`` clears again."""
        self._scan = None
        for name in (*_OWNED[1:], _OWNED[0]):
            target = self.root / name
            if target.is_symlink():
                target.unlink()
            elif target.is_dir():
                for entry in target.iterdir():
                    if _is_store_entry(entry):
                        entry.unlink(missing_ok=True)
                with contextlib.suppress(OSError):  # not empty: something appeared that is not ours
                    target.rmdir()
            else:
                target.unlink(missing_ok=True)
        for stale in self.root.glob(".*.tmp"):
            if _is_our_tmp(stale.name):
                stale.unlink(missing_ok=True)

    # -- reading -------------------------------------------------------------------------------------------
    def manifest(self) -> dict[str, Any]:
        """The parsed ``manifest.json``.

        Raises
        ------
        StoreError
            If there is none, it is not a regular file (a FIFO, a device), is larger than
            :data:`MAX_MANIFEST_BYTES`, is not a JSON object, or its format is not this version's.
        """
        path = self.root / _MANIFEST
        if not os.path.lexists(path):
            raise StoreError(f"{str(self.root)!r} is not a privgame results directory (no {_MANIFEST}).")
        try:
            data = json.loads(read_input(path, what=_MANIFEST, limit=MAX_MANIFEST_BYTES).decode("utf-8"))
        except InputFileError as exc:
            raise StoreError(str(exc)) from None
        except UnicodeDecodeError as exc:
            raise StoreError(f"{path}: not UTF-8 text (byte {exc.start}); not a privgame manifest.") from None
        except json.JSONDecodeError as exc:
            raise StoreError(
                f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}; not a privgame manifest."
            ) from None
        except RecursionError:  # arrays or objects nested thousands deep: no manifest privgame writes
            raise StoreError(f"{path}: JSON nested too deep for Python to read; not a privgame manifest.") from None
        if not isinstance(data, dict):
            raise StoreError(f"{path}: a manifest must be a JSON object, got {type(data).__name__}.")
        if data.get("format") != FORMAT_VERSION:
            raise StoreError(
                f"{str(self.root)!r} has results format {data.get('format')!r}; expected {FORMAT_VERSION}."
            )
        return data

    def scan(self) -> Scan:
        """Check every trial's files: which trials are finished, which damaged, which failed.

        A trial is finished when its row reads back and its raw arrays (and per-record rows, where its game has
        them) match the SHA-256 in its row; for rows written before checksums, when the files read back whole.
        The result is kept until this store writes again.

        Returns
        -------
        Scan
        """
        if self._scan is not None:
            return self._scan
        tables, damaged = [], {}
        for path in sorted((self.root / "trials").glob("trial-*.parquet")):
            trial = _trial_index(path)
            if trial is None:
                continue
            table, problem = self._check_trial(trial, path)
            if problem is None:
                tables.append(table)
            else:
                damaged[trial] = problem
        if tables:
            self._check_rows(tables)
            try:
                table = pa.concat_tables(tables, promote_options="default")
            except pa.ArrowException as exc:  # a column of one type in some rows, another in others: edited rows
                raise StoreError(f"{self.root / 'trials'}: the rows cannot be read as one table ({exc}).") from None
            rows = table.to_pandas().sort_values("trial", kind="stable").reset_index(drop=True)
        else:
            rows = pd.DataFrame()
        finished = set() if rows.empty else {int(t) for t in rows["trial"]}
        failures = {}
        for path in sorted((self.root / "failures").glob("trial-*.json")):
            trial = _trial_index(path)
            if trial is None or trial in finished:
                continue
            try:
                with _open(path) as fh:
                    info = json.loads(fh.read().decode("utf-8"))
            except InputFileError as exc:  # a FIFO or device here is not read: it would block the report
                info = {"trial": trial, "error": f"unreadable failure record: {_unreadable(path.name, exc)}"}
            except (OSError, ValueError, RecursionError):  # RecursionError: JSON nested thousands deep
                info = {"trial": trial, "error": f"unreadable failure record {path.name}"}
            failures[trial] = info if isinstance(info, dict) else {"trial": trial, "error": str(info)}
        self._scan = Scan(rows=rows, damaged=damaged, failures=failures)
        return self._scan

    def _check_rows(self, tables: Sequence[pa.Table]) -> None:
        """Refuse a finished trial's row whose trial, grid point or repetition is not one of the manifest's, or
        whose grid point and repetition another row has already: a report indexes the manifest's grid with them
        (a point beyond it has no parameters; a negative one would be read as counted from the end).

        Raises
        ------
        StoreError
            Naming the row's file, the field and its value.
        """
        n_grid, repetitions = _grid_shape(self.root, self.manifest())
        n_trials = None if n_grid is None or repetitions is None else n_grid * repetitions
        seen: dict[tuple[int, int], int] = {}
        for table in tables:
            row = table.to_pylist()[0]
            trial = row["trial"]
            name = self.root / "trials" / _trial_name(trial, ".parquet")
            limits = (
                ("trial", n_trials, "trials"),
                ("grid_point", n_grid, "grid points"),
                ("repetition", repetitions, "repetitions per grid point"),
            )
            for key, size, what in limits:
                if not _is_index(row.get(key), size):
                    within = "a non-negative integer" if size is None else f"an integer from 0 to {size - 1}"
                    raise StoreError(
                        f"{name}: {key} must be one of the manifest's {what} ({within}), "
                        f"got {reprlib.repr(row.get(key))}."
                    )
            pair = (row["grid_point"], row["repetition"])
            if pair in seen:
                raise StoreError(
                    f"{name}: (grid_point, repetition) must name one trial, got {pair!r}, which trial {seen[pair]} "
                    "has already."
                )
            seen[pair] = trial

    def _check_trial(self, trial: int, row_path: Path) -> tuple[pa.Table | None, str | None]:
        """The trial's row, or what is wrong with its row or files."""
        try:
            with _open(row_path) as fh:
                table = _parquet(row_path, fh.read(), rows=1)
            row = table.to_pylist()
        except InputFileError as exc:
            return None, _unreadable(row_path.relative_to(self.root), exc)
        except pa.ArrowException as exc:
            return None, f"{row_path.relative_to(self.root)} is unreadable ({type(exc).__name__})"
        except (OSError, ValueError) as exc:  # _parquet's: a footer of many rows, or of more bytes than a row
            return None, f"{row_path.relative_to(self.root)} is unreadable ({str(exc).rstrip('.')})"
        if len(row) != 1 or row[0].get("trial") != trial:
            return None, f"{row_path.relative_to(self.root)} is not trial {trial}'s row"
        raw = self._raw_path(trial)
        records = self.root / "records" / _trial_name(trial, ".parquet")
        expected = row[0].get(CHECKSUM_COLUMNS[0]), row[0].get(CHECKSUM_COLUMNS[1])
        for path, checksum in ((raw, expected[0]), (records, expected[1])):
            name = path.relative_to(self.root)
            if checksum is None:  # written before checksums: the files must at least read back whole
                if path == raw and not _readable_npz(path):
                    return None, f"{name} is missing or unreadable"
                continue
            if checksum == "":
                continue
            try:
                digest = _sha256(path)
            except InputFileError as exc:
                return None, _unreadable(name, exc)
            if digest != checksum:
                return None, f"{name} does not match its checksum"
        missing = _missing_arrays(raw)  # a checksum vouches for the bytes written, not that a trial wrote them
        if missing is None:
            return None, f"{raw.relative_to(self.root)} is missing or not an npz archive"
        if missing:
            return None, f"{raw.relative_to(self.root)} lacks the trial's {' and '.join(missing)}"
        return table, None

    def done(self) -> set[int]:
        """Indices of the finished trials (row and files present and matching; see :meth:`scan`)."""
        return self.scan().finished

    def damaged(self) -> dict[int, str]:
        """Trials with a row whose row or files are damaged, and what is wrong with each (see :meth:`scan`)."""
        return dict(self.scan().damaged)

    def failures(self) -> dict[int, dict[str, Any]]:
        """Trials not finished whose last attempt raised, with their failure records (see :meth:`scan`)."""
        return dict(self.scan().failures)

    def rows(self) -> pd.DataFrame:
        """The finished trials' rows, in trial order (damaged trials left out)."""
        return self.scan().rows

    def records(self) -> pd.DataFrame:
        """Every finished trial's per-record rows (with its ``trial`` and ``grid_point``), in trial order; empty if
        none."""
        done = self.done()
        paths = sorted(p for p in (self.root / "records").glob("trial-*.parquet") if _trial_index(p) in done)
        if not paths:
            return pd.DataFrame()
        table = pa.concat_tables([_read_parquet(p) for p in paths], promote_options="default")
        return table.to_pandas().sort_values(["trial", "game"], kind="stable").reset_index(drop=True)

    def progress_path(self, trial: int) -> Path:
        """Where a running trial reports its finished mechanism runs."""
        return self.root / "progress" / _trial_name(trial, ".json")

    def progress_done(self, trial: int) -> int:
        """The mechanism runs a running trial has reported done; 0 when its progress file is absent, being
        replaced, or not one privgame wrote (never blocking on a FIFO: the progress line's thread is joined)."""
        try:
            with _open(self.progress_path(trial)) as fh:
                return int(json.loads(fh.read())["done"])
        except (OSError, ValueError, KeyError, TypeError, RecursionError):  # RecursionError: "[[[[..." 1 KiB deep
            return 0

    def failure_path(self, trial: int) -> Path:
        """Where a trial whose code raised has its error and traceback."""
        return self.root / "failures" / _trial_name(trial, ".json")

    def load_outcome(self, trial: int) -> TrialOutcome:
        """The raw arrays of one trial (no pickle is ever loaded).

        Raises
        ------
        StoreError
            If the file cannot be read as arrays, lacks ``scores`` or ``membership``, or they are not a trial's
            outcome (one line naming the file).
        """
        path = self._raw_path(trial)
        arrays: dict[str, Any] | None = None
        try:
            with _open(path) as fh:
                if zipfile.is_zipfile(fh):
                    arrays = _npz_arrays(path, fh)
        except InputFileError as exc:
            raise StoreError(f"{path}: a trial's raw arrays cannot be read ({_unreadable('the file', exc)}).") from None
        except _BadArrays as exc:
            raise StoreError(f"{path}: a trial's raw arrays cannot be read ({exc}).") from None
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise StoreError(f"{path}: a trial's raw arrays cannot be read ({type(exc).__name__}).") from None
        if arrays is None:  # a lone .npy array under the trial's name, or any other file
            raise StoreError(f"{path}: a trial's raw arrays must be an npz archive (a zip of .npy arrays).")
        missing = [key for key in ("scores", "membership") if key not in arrays]
        if missing:
            raise StoreError(
                f"{path}: a trial's raw arrays must hold {' and '.join(missing)}, got only {sorted(arrays)!r}."
            )
        try:
            return TrialOutcome(scores=arrays.pop("scores"), membership=arrays.pop("membership"), arrays=arrays)
        except (TypeError, ValueError) as exc:
            raise StoreError(f"{path}: {str(exc).rstrip('.')}.") from None

    # -- writing -------------------------------------------------------------------------------------------
    def discard(self, trials: Sequence[int]) -> None:
        """Delete the files of ``trials`` (their row first, so they read as not run at every moment)."""
        self._scan = None
        for trial in trials:
            (self.root / "trials" / _trial_name(trial, ".parquet")).unlink(missing_ok=True)
            self._raw_path(trial).unlink(missing_ok=True)
            (self.root / "records" / _trial_name(trial, ".parquet")).unlink(missing_ok=True)

    def write_trial(
        self,
        trial: int,
        row: Mapping[str, Any],
        outcome: TrialOutcome,
        records: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        """Write one trial's raw arrays and per-record rows, then its row with their SHA-256 (which marks it done).

        Raises
        ------
        ValueError
            If an array of the outcome has dtype object (it would need a pickle).
        """
        self._scan = None
        arrays: dict[str, Any] = {"scores": outcome.scores, "membership": outcome.membership, **outcome.arrays}
        checksums = {column: "" for column in CHECKSUM_COLUMNS}

        def hashed(column: str, write: Any) -> Any:
            def go(p: Path) -> None:
                write(p)
                checksums[column] = _sha256(p)

            return go

        raw = hashed("sha256_raw", lambda p: _write_npz(p, arrays))
        _atomic_write(self._raw_path(trial), raw, f"writing trial {trial}'s raw arrays")
        if records:
            extra = {"trial": row["trial"], "grid_point": row["grid_point"]}
            rec = pa.Table.from_pylist([{**extra, **dict(r)} for r in records])
            path = self.root / "records" / _trial_name(trial, ".parquet")
            rows = hashed("sha256_records", lambda p: pq.write_table(rec, p))
            _atomic_write(path, rows, f"writing trial {trial}'s per-record rows")
        self.progress_path(trial).unlink(missing_ok=True)
        table = pa.Table.from_pylist([{**dict(row), **checksums}])
        row_path = self.root / "trials" / _trial_name(trial, ".parquet")
        _atomic_write(row_path, lambda p: pq.write_table(table, p), f"writing trial {trial}'s row")
        self.failure_path(trial).unlink(missing_ok=True)

    def write_failure(self, trial: int, failure: Mapping[str, Any]) -> Path:
        """Record that ``trial``'s code raised (``failure``: its error, traceback and where it sits); returns the
        file."""
        self._scan = None
        path = self.failure_path(trial)
        self.progress_path(trial).unlink(missing_ok=True)
        text = json.dumps(dict(failure), indent=2, default=str)
        action = f"writing trial {trial}'s failure record"
        _atomic_write(path, lambda p: p.write_text(text, encoding="utf-8"), action)
        return path

    def write_results(self) -> Path:
        """Consolidate every finished row into ``results.parquet`` (and every per-record row into
        ``records.parquet``)."""
        rows = self.rows()
        path = self.root / "results.parquet"
        _atomic_write(path, lambda p: rows.to_parquet(p, index=False), "gathering every trial's row")
        records = self.records()
        if not records.empty:
            _atomic_write(
                self.root / "records.parquet",
                lambda p: records.to_parquet(p, index=False),
                "gathering every trial's per-record rows",
            )
        return path

    def _raw_path(self, trial: int) -> Path:
        return self.root / "raw" / _trial_name(trial, ".npz")
