"""The artefact cache under concurrent writers and readers of one key, as Dask workers sharing a cache directory
are: separate processes hammering the same entry never read a partial or mixed entry."""

from __future__ import annotations

import multiprocessing
import warnings
from pathlib import Path

import pytest

from privgame.core.cache import ArtefactCache, make_key

KEY = make_key(test="concurrency")
ROUNDS = 60


def _hammer(root: str, value: str | None, rounds: int) -> tuple[list[str | None], int]:
    """Write ``value`` (``None``: only read) and read the key back, ``rounds`` times; the values read and the number
    of corrupted-entry warnings."""
    cache = ArtefactCache(root)
    seen: list[str | None] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(rounds):
            if value is not None:
                cache.put_json(KEY, {"v": value})
            got = cache.get_json(KEY)
            seen.append(None if got is None else got["v"])
    return seen, sum("corrupted cache entry" in str(w.message) for w in caught)


def _run(root: Path, values: list[str | None]) -> list[tuple[list[str | None], int]]:
    # fork where there is one (no re-import: the test stays quick); the processes share nothing but the directory
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with context.Pool(len(values)) as pool:
        return pool.starmap(_hammer, [(str(root), v, ROUNDS) for v in values])


@pytest.fixture
def big() -> tuple[str, str]:
    # large enough that a write is not one syscall: a torn read would show as a mixed value or a bad checksum
    return "a" * 300_000, "b" * 300_000


def test_same_artefact_from_many_writers_is_never_torn(tmp_path, big):
    a, _ = big
    ArtefactCache(tmp_path).put_json(KEY, {"v": a})
    results = _run(tmp_path, [a, a, a, None])
    for seen, warned in results:
        assert warned == 0 and seen == [a] * ROUNDS  # deterministic artefacts: every read is the artefact
    assert ArtefactCache(tmp_path).get_json(KEY) == {"v": a}
    assert not list(tmp_path.rglob("*.tmp"))  # every temporary file was renamed into place


def test_different_bytes_under_one_key_never_give_a_mixed_value(tmp_path, big):
    # not a case the cache should meet (its artefacts are deterministic), unless workers run different library
    # versions: then a reader may see a mismatch, which it reports and drops, but never returns a wrong value
    a, b = big
    results = _run(tmp_path, [a, b, None])
    for seen, _ in results:
        assert set(seen) <= {a, b, None}
    assert ArtefactCache(tmp_path).get_json(KEY) in ({"v": a}, {"v": b}, None)
