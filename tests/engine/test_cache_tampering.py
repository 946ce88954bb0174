"""A damaged artefact-cache entry is detected and recomputed, never reused: a run on a tampered cache gives the
numbers of a run without one (issue 22).

Each case runs a tiny cached record-game experiment through the command, tampers with the cache's entries, and
runs it again into another directory: the second run must warn, and its rows (with their raw arrays' checksums)
must equal those of a ``--no-cache`` run.
"""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest

from privgame.engine.cli import main
from privgame.engine.store import drop_timings
from tests.conftest import TINY_MODEL_SEEDED


def _rows(out: Path) -> pd.DataFrame:
    return pd.read_parquet(out / "results.parquet").pipe(drop_timings)


def _run(config: Path, out: Path, *cache: str) -> pd.DataFrame:
    assert main(["run", str(config), "--out", str(out), "--no-progress", *cache]) == 0
    return _rows(out)


def _tables(cache: Path) -> list[Path]:
    """The cached tables, in either of their forms (privgame.core.cache: an npz frame, or Parquet)."""
    return sorted([*cache.glob("v1/frame/*/*.npz"), *cache.glob("v1/table/*/*.parquet")])


def _swap_all(cache: Path) -> None:
    """Every entry's payload and marker replaced by the next entry's: each checksum matches its payload, but every
    entry is another artefact."""
    entries = _tables(cache)
    assert len(entries) >= 2
    saved = [(p.read_bytes(), p.with_suffix(".sha256").read_bytes()) for p in entries]
    for k, path in enumerate(entries):
        payload, marker = saved[(k + 1) % len(saved)]
        path.write_bytes(payload)
        path.with_suffix(".sha256").write_bytes(marker)


def _truncate_all(cache: Path) -> None:
    for path in _tables(cache):
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _drop_payloads(cache: Path) -> None:
    """Markers left pointing at missing payloads."""
    for path in _tables(cache):
        path.unlink()


@pytest.mark.parametrize("tamper", [_swap_all, _truncate_all, _drop_payloads], ids=["swapped", "truncated", "missing"])
def test_a_tampered_cache_entry_is_recomputed_not_reused(tmp_path, tamper):
    config = tmp_path / "tiny.toml"
    config.write_text(TINY_MODEL_SEEDED)
    cache = tmp_path / "cache"
    clean = _run(config, tmp_path / "clean", "--no-cache")
    first = _run(config, tmp_path / "first", "--cache-dir", str(cache))
    pd.testing.assert_frame_equal(first, clean)
    tamper(cache)
    with pytest.warns(UserWarning, match="corrupted cache entry"):
        again = _run(config, tmp_path / "again", "--cache-dir", str(cache))
    pd.testing.assert_frame_equal(again, clean)
    # the damaged entries were replaced by good ones: a third run hits them all, silently, with the same numbers
    shutil.rmtree(tmp_path / "again")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        third = _run(config, tmp_path / "again", "--cache-dir", str(cache))
    pd.testing.assert_frame_equal(third, clean)


def _folders(cache: Path) -> None:
    """Every payload replaced by a folder of the same name (holding a file, so it is no empty folder)."""
    for path in _tables(cache):
        path.unlink()
        path.mkdir()
        (path / "keep").write_text("a stranger's file")


def _fifos(cache: Path) -> None:
    """Every payload and marker replaced by a FIFO: reading one would wait for a writer forever."""
    for path in _tables(cache):
        for item in (path, path.with_suffix(".sha256")):
            item.unlink()
            os.mkfifo(item)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs need a POSIX system")
@pytest.mark.parametrize("tamper", [_folders, _fifos], ids=["folder", "fifo"])
def test_a_cache_entry_that_is_no_file_is_recomputed_without_hanging(tmp_path, tamper, no_hang):
    config = tmp_path / "tiny.toml"
    config.write_text(TINY_MODEL_SEEDED)
    cache = tmp_path / "cache"
    clean = _run(config, tmp_path / "clean", "--no-cache")
    _run(config, tmp_path / "first", "--cache-dir", str(cache))
    tamper(cache)

    entries = len(_tables(cache))
    with pytest.warns(UserWarning, match="corrupted cache entry") as caught:
        again = _run(config, tmp_path / "again", "--cache-dir", str(cache))
    pd.testing.assert_frame_equal(again, clean)
    said = [str(w.message) for w in caught if "cache entry" in str(w.message)]
    assert len(said) == entries, said  # one warning per entry, which says what happened to it
    fate = "a folder in its place is left alone" if tamper is _folders else "it is deleted and will be regenerated"
    assert all(fate in message for message in said), said
    kept = [p / "keep" for p in _tables(cache) if p.is_dir()]
    assert all(p.read_text() == "a stranger's file" for p in kept)  # a folder in the cache is never deleted
    assert len(kept) == (entries if tamper is _folders else 0)
