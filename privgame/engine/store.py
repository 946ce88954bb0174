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

import hashlib
import json
import os
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

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


_RUN_REMEDY = "use --force to delete them and start over, or choose another --out"


class StoreError(ValueError):
    """The results directory cannot be used as asked (another config's results, not a results directory)."""


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
    path.mkdir(parents=True, exist_ok=True)


def _atomic_write(path: Path, write: Any) -> None:
    """Write through ``write(tmp_path)`` to a temporary file in the same folder, then rename into place."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _is_our_tmp(name: str) -> bool:
    """Whether ``name`` is a temporary file :func:`_atomic_write` makes for one of the top-level files."""
    return name.endswith(".tmp") and name.startswith(tuple(f".{f}." for f in _FILES))


def _sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


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
        with zipfile.ZipFile(path) as archive:
            return archive.testzip() is None and all(n.endswith(".npy") for n in archive.namelist())
    except (OSError, zipfile.BadZipFile, ValueError):
        return False


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
        store.check_open(manifest, force=force)
        if path.is_dir() and any(path.iterdir()) and (force or not (path / _MANIFEST).exists()):
            store.clear()  # another config's results (force), or a half-made directory that check_open let through
        _mkdir(path)
        for stale in path.glob(".*.tmp"):  # left by a run killed while writing
            stale.unlink(missing_ok=True)
        if not (path / _MANIFEST).exists():
            _atomic_write(path / _MANIFEST, lambda p: p.write_text(json.dumps(dict(manifest), indent=2, default=str)))
        if not (path / _CONFIG).exists():
            _atomic_write(path / _CONFIG, lambda p: p.write_bytes(config_bytes))
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
            first = min(damaged)
            print(
                f"privgame: {len(damaged)} damaged trial{'s' if len(damaged) > 1 else ''} in {self.root} "
                f"({describe_trials(set(damaged))}; trial {first}: {damaged[first]}) will be run again.",
                file=sys.stderr,
            )
            self.discard(sorted(damaged))
        return self.done()

    def check_open(
        self,
        manifest: Mapping[str, Any],
        *,
        force: bool = False,
        more_repetitions: bool = False,
        remedy: str = _RUN_REMEDY,
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

        Raises
        ------
        StoreError
            If ``root`` is not a directory, holds another config's results (without ``force``), or is a non-empty
            directory that is not a privgame results directory.
        """
        path = self.root
        if path.exists() and not path.is_dir():
            raise StoreError(f"--out {str(path)!r} exists and is not a directory.")
        if not path.is_dir() or not any(path.iterdir()):
            return
        if not (path / _MANIFEST).exists():
            self._half_made_problem(force)
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
        _atomic_write(self.root / _MANIFEST, lambda p: p.write_text(text))

    def _half_made_problem(self, force: bool) -> None:
        """A non-empty directory without a manifest: a half-made results directory may be cleared (it holds no
        trial files, or ``force``); anything else is refused."""
        path = self.root
        ours = set(_OWNED)
        foreign = [p.name for p in path.iterdir() if p.name not in ours and not _is_our_tmp(p.name)]
        if foreign:
            raise StoreError(
                f"--out {str(path)!r} is not empty and holds no privgame results (no {_MANIFEST}; it holds "
                f"{sorted(foreign)[0]!r}); choose another directory."
            )
        files = [p for sub in _DIRS if sub != "progress" for p in (path / sub).glob("trial-*")]
        if files and not force:
            raise StoreError(
                f"--out {str(path)!r} holds {len(files)} privgame trial files but no {_MANIFEST}, so nothing says "
                "which config they belong to; use --force to delete them and start over, or choose another --out."
            )

    def clear(self) -> None:
        """Delete everything a run wrote (and nothing else)."""
        self._scan = None
        for name in _OWNED:
            target = self.root / name
            if target.is_dir():
                shutil.rmtree(target)
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
            If there is none, it is not a JSON object, or its format is not this version's.
        """
        path = self.root / _MANIFEST
        if not path.is_file():
            raise StoreError(f"{str(self.root)!r} is not a privgame results directory (no {_MANIFEST}).")
        try:
            data = json.loads(path.read_bytes().decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise StoreError(f"{path}: not UTF-8 text (byte {exc.start}); not a privgame manifest.") from None
        except json.JSONDecodeError as exc:
            raise StoreError(
                f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}; not a privgame manifest."
            ) from None
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
            table = pa.concat_tables(tables, promote_options="default")
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
                info = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                info = {"trial": trial, "error": f"unreadable failure record {path.name}"}
            failures[trial] = info if isinstance(info, dict) else {"trial": trial, "error": str(info)}
        self._scan = Scan(rows=rows, damaged=damaged, failures=failures)
        return self._scan

    def _check_trial(self, trial: int, row_path: Path) -> tuple[pa.Table | None, str | None]:
        """The trial's row, or what is wrong with its row or files."""
        try:
            table = pq.read_table(row_path)
            row = table.to_pylist()
        except (OSError, ValueError, pa.ArrowException) as exc:
            return None, f"{row_path.relative_to(self.root)} is unreadable ({type(exc).__name__})"
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
            if not path.is_file():
                return None, f"{name} is missing"
            if _sha256(path) != checksum:
                return None, f"{name} does not match its checksum"
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
        table = pa.concat_tables([pq.read_table(p) for p in paths], promote_options="default")
        return table.to_pandas().sort_values(["trial", "game"], kind="stable").reset_index(drop=True)

    def progress_path(self, trial: int) -> Path:
        """Where a running trial reports its finished mechanism runs."""
        return self.root / "progress" / _trial_name(trial, ".json")

    def failure_path(self, trial: int) -> Path:
        """Where a trial whose code raised has its error and traceback."""
        return self.root / "failures" / _trial_name(trial, ".json")

    def load_outcome(self, trial: int) -> TrialOutcome:
        """The raw arrays of one trial (no pickle is ever loaded)."""
        with np.load(self._raw_path(trial), allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
        return TrialOutcome(scores=arrays.pop("scores"), membership=arrays.pop("membership"), arrays=arrays)

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

        _atomic_write(self._raw_path(trial), hashed("sha256_raw", lambda p: _write_npz(p, arrays)))
        if records:
            extra = {"trial": row["trial"], "grid_point": row["grid_point"]}
            rec = pa.Table.from_pylist([{**extra, **dict(r)} for r in records])
            path = self.root / "records" / _trial_name(trial, ".parquet")
            _atomic_write(path, hashed("sha256_records", lambda p: pq.write_table(rec, p)))
        self.progress_path(trial).unlink(missing_ok=True)
        table = pa.Table.from_pylist([{**dict(row), **checksums}])
        _atomic_write(self.root / "trials" / _trial_name(trial, ".parquet"), lambda p: pq.write_table(table, p))
        self.failure_path(trial).unlink(missing_ok=True)

    def write_failure(self, trial: int, failure: Mapping[str, Any]) -> Path:
        """Record that ``trial``'s code raised (``failure``: its error, traceback and where it sits); returns the
        file."""
        self._scan = None
        path = self.failure_path(trial)
        self.progress_path(trial).unlink(missing_ok=True)
        text = json.dumps(dict(failure), indent=2, default=str)
        _atomic_write(path, lambda p: p.write_text(text, encoding="utf-8"))
        return path

    def write_results(self) -> Path:
        """Consolidate every finished row into ``results.parquet`` (and every per-record row into
        ``records.parquet``)."""
        rows = self.rows()
        path = self.root / "results.parquet"
        _atomic_write(path, lambda p: rows.to_parquet(p, index=False))
        records = self.records()
        if not records.empty:
            _atomic_write(self.root / "records.parquet", lambda p: records.to_parquet(p, index=False))
        return path

    def _raw_path(self, trial: int) -> Path:
        return self.root / "raw" / _trial_name(trial, ".npz")
