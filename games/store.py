"""The results directory: what a run writes, and how an interrupted run is resumed.

Layout (documented for users in ``docs/results.md``)::

    OUT/
      config.toml           the config file as given (bytes)
      manifest.json         format version, config hash, parsed config, grid, analytic ε per grid point
      trials/trial-NNNNNN.parquet   one row per finished trial (the completion marker)
      raw/trial-NNNNNN.npz          that trial's raw arrays: scores, membership, extras
      records/trial-NNNNNN.parquet  that trial's per-record rows (record-level games only)
      progress/trial-NNNNNN.json    mechanism runs done in a trial still running (progress lines only)
      results.parquet       all rows in trial order, rewritten whenever a run completes
      records.parquet       all per-record rows (record, game, risk metrics, intervals), if any

Every file is written to a temporary name and renamed into place, so a killed run leaves no partial file; the
raw arrays and per-record rows are written before the row, so a row always has them.  On resume, a trial whose
row exists is skipped, and any other trial is (re)played from its own seed: the final results equal an
uninterrupted run's.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from games._base import TrialOutcome

__all__ = ["FORMAT_VERSION", "ResultsStore", "StoreError"]

FORMAT_VERSION = 1
_MANIFEST = "manifest.json"
_OWNED = ("config.toml", _MANIFEST, "trials", "raw", "records", "progress", "results.parquet", "records.parquet")


class StoreError(ValueError):
    """The results directory cannot be used as asked (another config's results, not a results directory)."""


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


class ResultsStore:
    """A results directory (see the module docstring for its layout)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    # -- creation and resumption ---------------------------------------------------------------------------
    @classmethod
    def open_for_run(
        cls, root: str | Path, manifest: Mapping[str, Any], config_bytes: bytes, *, force: bool = False
    ) -> ResultsStore:
        """Create the directory, or reopen it to resume the same config.

        Raises
        ------
        StoreError
            If it holds results of a different config (unless ``force``, which deletes them first), or is a
            non-empty directory that is not a privgame results directory.
        """
        store = cls(root)
        path = store.root
        if path.exists() and not path.is_dir():
            raise StoreError(f"--out {str(path)!r} exists and is not a directory.")
        if path.is_dir() and any(path.iterdir()):
            if not (path / _MANIFEST).exists():
                raise StoreError(
                    f"--out {str(path)!r} is not empty and holds no privgame results (no {_MANIFEST}); "
                    "choose another directory."
                )
            if force:
                store.clear()
            else:
                old = store.manifest()
                if old.get("config_hash") != manifest["config_hash"]:
                    raise StoreError(
                        f"--out {str(path)!r} holds results of a different config "
                        f"(experiment {old.get('config', {}).get('experiment', {}).get('name')!r}, "
                        f"hash {str(old.get('config_hash'))[:12]}, this one {manifest['config_hash'][:12]}); "
                        "use --force to delete them and start over, or choose another --out."
                    )
        for sub in ("trials", "raw", "records", "progress"):
            (path / sub).mkdir(parents=True, exist_ok=True)
            for stale in (path / sub).glob(".*.tmp"):  # left by a run killed while writing
                stale.unlink(missing_ok=True)
        for stale in (path / "progress").glob("trial-*.json"):  # counts of trials that a killed run left running
            stale.unlink(missing_ok=True)
        if not (path / _MANIFEST).exists():
            _atomic_write(path / "config.toml", lambda p: p.write_bytes(config_bytes))
            _atomic_write(path / _MANIFEST, lambda p: p.write_text(json.dumps(dict(manifest), indent=2, default=str)))
        return store

    def clear(self) -> None:
        """Delete everything a run wrote (and nothing else)."""
        for name in _OWNED:
            target = self.root / name
            if target.is_dir():
                shutil.rmtree(target)
            else:
                target.unlink(missing_ok=True)

    # -- reading -------------------------------------------------------------------------------------------
    def manifest(self) -> dict[str, Any]:
        path = self.root / _MANIFEST
        if not path.exists():
            raise StoreError(f"{str(self.root)!r} is not a privgame results directory (no {_MANIFEST}).")
        data: dict[str, Any] = json.loads(path.read_text())
        if data.get("format") != FORMAT_VERSION:
            raise StoreError(
                f"{str(self.root)!r} has results format {data.get('format')!r}; expected {FORMAT_VERSION}."
            )
        return data

    def done(self) -> set[int]:
        """Indices of the trials whose rows are written."""
        return {int(p.stem.split("-")[1]) for p in (self.root / "trials").glob("trial-*.parquet")}

    def rows(self) -> pd.DataFrame:
        """Every written row, in trial order."""
        paths = sorted((self.root / "trials").glob("trial-*.parquet"))
        if not paths:
            return pd.DataFrame()
        table = pa.concat_tables([pq.read_table(p) for p in paths], promote_options="default")
        return table.to_pandas().sort_values("trial", kind="stable").reset_index(drop=True)

    def records(self) -> pd.DataFrame:
        """Every written per-record row (with its ``trial`` and ``grid_point``), in trial order; empty if none."""
        done = self.done()
        paths = sorted(p for p in (self.root / "records").glob("trial-*.parquet") if int(p.stem.split("-")[1]) in done)
        if not paths:
            return pd.DataFrame()
        table = pa.concat_tables([pq.read_table(p) for p in paths], promote_options="default")
        return table.to_pandas().sort_values(["trial", "game"], kind="stable").reset_index(drop=True)

    def progress_path(self, trial: int) -> Path:
        """Where a running trial reports its finished mechanism runs."""
        return self.root / "progress" / f"trial-{trial:06d}.json"

    def load_outcome(self, trial: int) -> TrialOutcome:
        """The raw arrays of one trial."""
        with np.load(self._raw_path(trial), allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
        return TrialOutcome(scores=arrays.pop("scores"), membership=arrays.pop("membership"), arrays=arrays)

    # -- writing -------------------------------------------------------------------------------------------
    def write_trial(
        self,
        trial: int,
        row: Mapping[str, Any],
        outcome: TrialOutcome,
        records: list[Mapping[str, Any]] | None = None,
    ) -> None:
        """Write one trial's raw arrays and per-record rows, then its row (which marks it done)."""

        def write_raw(p: Path) -> None:
            with p.open("wb") as fh:
                arrays: dict[str, Any] = {"scores": outcome.scores, "membership": outcome.membership, **outcome.arrays}
                np.savez(fh, **arrays)

        _atomic_write(self._raw_path(trial), write_raw)
        if records:
            extra = {"trial": row["trial"], "grid_point": row["grid_point"]}
            rec = pa.Table.from_pylist([{**extra, **dict(r)} for r in records])
            _atomic_write(self.root / "records" / f"trial-{trial:06d}.parquet", lambda p: pq.write_table(rec, p))
        self.progress_path(trial).unlink(missing_ok=True)
        table = pa.Table.from_pylist([dict(row)])
        _atomic_write(self.root / "trials" / f"trial-{trial:06d}.parquet", lambda p: pq.write_table(table, p))

    def write_results(self) -> Path:
        """Consolidate every row into ``results.parquet`` (and every per-record row into ``records.parquet``)."""
        rows = self.rows()
        path = self.root / "results.parquet"
        _atomic_write(path, lambda p: rows.to_parquet(p, index=False))
        records = self.records()
        if not records.empty:
            _atomic_write(self.root / "records.parquet", lambda p: records.to_parquet(p, index=False))
        return path

    def _raw_path(self, trial: int) -> Path:
        return self.root / "raw" / f"trial-{trial:06d}.npz"
