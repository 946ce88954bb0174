"""The content-addressed artefact cache: keys, hits, misses on every component, damage, bad directories."""

from __future__ import annotations

import dataclasses
import os
import stat

import numpy as np
import pandas as pd
import pytest

from privgame.core.cache import ArtefactCache, CacheError, content_hash, make_key, seed_identity
from privgame.mechanisms.cached import cached_release, release_key
from privgame.mechanisms.synth import PrivBayes, Synthpop


def _table(n: int = 30) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "a": pd.Categorical(rng.choice(list("xyz"), n), categories=list("xyzw")),
            "b": rng.integers(0, 100, n),
            "c": rng.random(n),
        }
    )


def test_key_is_order_insensitive_but_type_sensitive():
    assert make_key(a=1, b="x") == make_key(b="x", a=1)
    assert len({make_key(a=1), make_key(a=1.0), make_key(a="1"), make_key(a=True), make_key(a=(1,))}) == 5
    with pytest.raises(TypeError, match="cache key component"):
        make_key(a=object())


def test_content_hash_sees_values_order_dtypes_and_categories():
    t = _table()
    h = content_hash(t)
    assert content_hash(t.copy()) == h
    assert content_hash(t.set_axis(range(100, 130))) == h  # the index is not content
    assert content_hash(t.iloc[::-1].reset_index(drop=True)) != h  # row order is
    changed = t.copy()
    changed.loc[3, "b"] += 1
    assert content_hash(changed) != h
    assert content_hash(t.astype({"b": "int32"})) != h
    assert content_hash(t.assign(a=t["a"].cat.set_categories(list("xyz")))) != h
    assert content_hash(t.rename(columns={"c": "d"})) != h


def test_tables_arrays_and_json_round_trip(tmp_path):
    cache = ArtefactCache(tmp_path)
    t = _table()
    key = make_key(x=1)
    assert cache.get_table(key) is None
    cache.put_table(key, t)
    back = cache.get_table(key)
    pd.testing.assert_frame_equal(back, t)
    assert list(back["a"].cat.categories) == list("xyzw")  # unused categories survive
    cache.put_arrays(key, {"u": np.arange(5), "v": np.ones((2, 3))})
    arrays = cache.get_arrays(key)
    assert arrays is not None and np.array_equal(arrays["u"], np.arange(5))
    cache.put_json(key, {"sigma": 1.5})
    assert cache.get_json(key) == {"sigma": 1.5}
    with pytest.raises(TypeError, match="dtype object"):
        cache.put_arrays(key, {"o": np.array([object()])})


def test_every_key_component_misses(tmp_path):
    data = _table()
    seed = np.random.SeedSequence(3, spawn_key=(1, 2))
    base = release_key(Synthpop(), data, seed)
    other_data = data.copy()
    other_data.loc[0, "c"] = 0.5
    variants = [
        release_key(Synthpop(minbucket=6), data, seed),  # a parameter
        release_key(PrivBayes(epsilon=1.0, ranges=(("b", 0, 100), ("c", 0, 1))), data, seed),  # the class
        release_key(Synthpop(), other_data, seed),  # the input's content
        release_key(Synthpop(), data, np.random.SeedSequence(4, spawn_key=(1, 2))),  # the entropy
        release_key(Synthpop(), data, np.random.SeedSequence(3, spawn_key=(1, 3))),  # the spawn key
        release_key(Synthpop(), data.iloc[:29], seed),  # the size
        release_key(Synthpop(n_rows=10), data, seed),  # the output size
    ]
    assert base is not None and len({base, *variants}) == len(variants) + 1


def test_the_version_is_part_of_the_key(monkeypatch):
    import privgame.mechanisms.cached as cached

    data, seed = _table(), np.random.SeedSequence(1)
    before = release_key(Synthpop(), data, seed)
    monkeypatch.setattr(cached, "privgame_version", lambda: "999.0")
    assert release_key(Synthpop(), data, seed) != before


def test_cached_release_equals_a_fresh_one_and_hits(tmp_path):
    cache = ArtefactCache(tmp_path)
    data, seed = _table(), np.random.SeedSequence(9)
    fresh = Synthpop().release(data, rng=np.random.default_rng(np.random.SeedSequence(9)))
    first = cached_release(Synthpop(), data, seed=seed, cache=cache)
    second = cached_release(Synthpop(), data, seed=seed, cache=cache)
    pd.testing.assert_frame_equal(first, fresh)
    pd.testing.assert_frame_equal(second, fresh)
    assert cache.hits == 1 and cache.misses == 1


@pytest.mark.parametrize("damage", ["truncate", "flip", "marker"])
def test_a_damaged_entry_is_reported_deleted_and_missed(tmp_path, damage):
    cache = ArtefactCache(tmp_path)
    key = make_key(x=2)
    cache.put_table(key, _table())
    path = cache.path("table", key)
    payload = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(payload[: len(payload) // 2])
    elif damage == "flip":
        path.write_bytes(payload[:-20] + bytes(b ^ 0xFF for b in payload[-20:]))
    else:
        path.with_suffix(".sha256").write_text("0" * 64)
    with pytest.warns(UserWarning, match="corrupted cache entry"):
        assert cache.get_table(key) is None
    assert not path.exists() and not cache.contains("table", key)


def _put(cache: ArtefactCache, kind: str, key: str, value: int) -> None:
    if kind == "table":
        cache.put_table(key, _table().assign(b=value))
    elif kind == "arrays":
        cache.put_arrays(key, {"u": np.full(4, value)})
    else:
        cache.put_json(key, {"value": value})


def _value(cache: ArtefactCache, kind: str, key: str) -> int | None:
    if kind == "table":
        table = cache.get_table(key)
        return None if table is None else int(table["b"].iloc[0])
    if kind == "arrays":
        arrays = cache.get_arrays(key)
        return None if arrays is None else int(arrays["u"][0])
    value = cache.get_json(key)
    return None if value is None else int(value["value"])


@pytest.mark.parametrize("kind", ["table", "arrays", "json"])
def test_an_entry_copied_over_another_with_its_marker_is_detected(tmp_path, kind):
    """Entry A's payload and marker copied over entry B's: the checksum matches the payload, but the marker names
    A, so B is reported, deleted and missed, never answered with A's artefact."""
    cache = ArtefactCache(tmp_path)
    a, b = make_key(x="a"), make_key(x="b")
    _put(cache, kind, a, 1)
    _put(cache, kind, b, 2)
    path_a, path_b = cache.path(kind, a), cache.path(kind, b)
    path_b.write_bytes(path_a.read_bytes())
    path_b.with_suffix(".sha256").write_bytes(path_a.with_suffix(".sha256").read_bytes())
    with pytest.warns(UserWarning, match=rf"corrupted cache entry .*its marker names the entry '{kind}/{a}'"):
        assert _value(cache, kind, b) is None
    assert not path_b.exists() and not cache.contains(kind, b)
    assert _value(cache, kind, a) == 1  # the original is untouched


@pytest.mark.parametrize("kind", ["table", "arrays", "json"])
@pytest.mark.parametrize("damage", ["truncate", "missing", "old-marker"])
def test_truncated_missing_or_unnamed_payloads_are_missed(tmp_path, kind, damage):
    cache = ArtefactCache(tmp_path)
    key = make_key(x="c")
    _put(cache, kind, key, 3)
    path = cache.path(kind, key)
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "missing":
        path.unlink()  # the marker points at nothing
    else:  # a marker with the checksum alone (no entry named): cannot be told from another entry's
        marker = path.with_suffix(".sha256")
        marker.write_text(marker.read_text().split()[0])
    with pytest.warns(UserWarning, match="corrupted cache entry"):
        assert _value(cache, kind, key) is None
    assert not cache.contains(kind, key)
    _put(cache, kind, key, 3)
    assert _value(cache, kind, key) == 3


def test_an_entry_without_its_marker_is_a_miss(tmp_path):
    cache = ArtefactCache(tmp_path)
    key = make_key(x=3)
    cache.put_table(key, _table())
    cache.path("table", key).with_suffix(".sha256").unlink()  # a kill between the two writes
    assert cache.get_table(key) is None


def test_bad_cache_directories(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(CacheError, match="must be a directory, got the file"):
        ArtefactCache(f)
    with pytest.raises(CacheError, match="must be a writable directory"):
        ArtefactCache(f / "sub")
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
        with pytest.raises(CacheError, match="must be a writable directory"):
            ArtefactCache(ro)


def test_keys_must_be_digests(tmp_path):
    cache = ArtefactCache(tmp_path)
    with pytest.raises(ValueError, match="SHA-256 hex digest"):
        cache.get_table("../../etc/passwd")
    with pytest.raises(ValueError, match="kind must be one of"):
        cache.path("pickle", make_key(x=1))


def test_seed_identity_and_pickling(tmp_path):
    import pickle

    s = np.random.SeedSequence(5, spawn_key=(1,))
    assert seed_identity(s)["spawn_key"] == [1]
    cache = pickle.loads(pickle.dumps(ArtefactCache(tmp_path)))  # joblib sends it to workers
    assert cache.root == tmp_path


def test_the_code_is_part_of_the_key(monkeypatch):
    import privgame.mechanisms.cached as cached

    data, seed = _table(), np.random.SeedSequence(1)
    before = release_key(Synthpop(), data, seed)
    monkeypatch.setattr(cached, "code_fingerprint", lambda module: "edited")
    assert release_key(Synthpop(), data, seed) != before


@pytest.mark.parametrize("edited", ["privgame.mechanisms", "privgame.analysis"])
def test_an_edit_of_the_mechanisms_package_or_of_analysis_misses(monkeypatch, edited):
    # the generators use analysis/ (discretise, checks): an edit there may change a release, so it is in the key
    import privgame.mechanisms.cached as cached
    from privgame.core.cache import code_fingerprint

    data, seed = _table(), np.random.SeedSequence(1)
    before = release_key(Synthpop(), data, seed)
    monkeypatch.setattr(
        cached, "code_fingerprint", lambda module: "edited" if module.startswith(edited) else code_fingerprint(module)
    )
    assert release_key(Synthpop(), data, seed) != before


def test_ordered_and_numeric_categories_and_column_name_types_differ():
    a = pd.DataFrame({"x": pd.Categorical([1, 2])})
    b = pd.DataFrame({"x": pd.Categorical(["1", "2"])})
    c = pd.DataFrame({"x": pd.Categorical(["1", "2"], ordered=True)})
    d = pd.DataFrame({0: [1, 2]})
    e = pd.DataFrame({"0": [1, 2]})
    assert len({content_hash(t) for t in (a, b, c)}) == 3 and content_hash(d) != content_hash(e)
    assert make_key(m={1: 2}) != make_key(m={"1": 2})


def test_a_table_parquet_cannot_carry_exactly_is_not_cached(tmp_path):
    cache = ArtefactCache(tmp_path)
    key = make_key(x=4)
    assert not cache.put_table(key, pd.DataFrame({"x": pd.Categorical([1, 2, 1])}))  # numbers as categories
    assert cache.get_table(key) is None
    assert cache.put_table(key, _table())


def test_the_parquet_round_trip_is_checked_once_per_numeric_schema(tmp_path, monkeypatch):
    import privgame.core.cache as cache_module
    from privgame.core._memo import BoundedMemo

    monkeypatch.setattr(cache_module, "_PARQUET_EXACT", BoundedMemo(64))
    reads = []
    real = pd.read_parquet
    monkeypatch.setattr(pd, "read_parquet", lambda *a, **k: reads.append(1) or real(*a, **k))
    cache = ArtefactCache(tmp_path)
    base = _table()
    for i in range(3):  # the same schema, other values: checked once
        assert cache.put_table(make_key(i=i), base.assign(b=base["b"] + i))
    assert len(reads) == 1
    assert not cache.put_table(make_key(i=10), pd.DataFrame({"x": pd.Categorical([1, 2])}))
    assert not cache.put_table(make_key(i=11), pd.DataFrame({"x": pd.Categorical([2, 2], categories=[1, 2])}))
    assert len(reads) == 2
    for i in range(2):  # an object column: its values decide, checked every time (pandas 3 reads back str)
        cache.put_table(make_key(i=20 + i), pd.DataFrame({"s": ["a", str(i)]}, dtype=object))
    assert len(reads) == 4
    for i in range(3):
        back = cache.get_table(make_key(i=i))
        pd.testing.assert_frame_equal(back, base.assign(b=base["b"] + i))


def test_default_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    from privgame.core.cache import default_cache_dir

    monkeypatch.setenv("PRIVGAME_CACHE_DIR", str(tmp_path / "explicit"))
    assert default_cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("PRIVGAME_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "privgame"


def test_key_ignores_fields_outside_equality():
    """Derived fields (compare=False, e.g. a σ calibrated on first use) must not change a component's key."""

    @dataclasses.dataclass(frozen=True)
    class Component:
        p: float
        derived: float | None = dataclasses.field(default=None, compare=False)

    assert make_key(c=Component(1.0)) == make_key(c=Component(1.0, derived=3.0))
    assert make_key(c=Component(1.0)) != make_key(c=Component(2.0))


# -- what code_fingerprint hashes -------------------------------------------------------------------------------
def _fingerprint(module: str) -> str:
    from privgame.core.cache import code_fingerprint

    return code_fingerprint.__wrapped__(module)  # type: ignore[attr-defined]  # past the per-process memo


def test_a_plugin_module_is_hashed_alone_not_its_project_folder(tmp_path, monkeypatch, recwarn):
    """A single-file plugin in a project folder: an editor's dangling lock link (``.#x.py``) beside it does not fail
    the key, and a ``.venv`` beside it is not hashed (an edit there changes nothing), but the plugin's own file is."""
    plugin = tmp_path / "pg_fingerprint_plugin.py"
    plugin.write_text("X = 1\n")
    (tmp_path / ".#pg_fingerprint_plugin.py").symlink_to(tmp_path / "user@host.1234")  # dangling, as Emacs makes
    site = tmp_path / ".venv" / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    many = site / "many.py"
    many.write_text("Y = 1\n")
    (tmp_path / "other_script.py").write_text("Z = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = _fingerprint("pg_fingerprint_plugin")
    many.write_text("Y = 2\n")
    (tmp_path / "other_script.py").write_text("Z = 2\n")
    assert _fingerprint("pg_fingerprint_plugin") == before
    plugin.write_text("X = 2\n")
    assert _fingerprint("pg_fingerprint_plugin") != before
    assert not [w for w in recwarn if "fingerprint" in str(w.message)]  # nothing unreadable was even looked at


def test_a_package_is_hashed_with_its_sub_packages_only(tmp_path, monkeypatch):
    pkg = tmp_path / "pg_fingerprint_pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "data").mkdir()
    (pkg / ".hidden").mkdir()
    for path in (pkg / "__init__.py", pkg / "mod.py", pkg / "sub" / "__init__.py", pkg / "sub" / "x.py"):
        path.write_text("A = 1\n")
    (pkg / "data" / "y.py").write_text("B = 1\n")  # a folder without __init__.py: not part of the package
    (pkg / ".hidden" / "z.py").write_text("C = 1\n")
    (pkg / ".#mod.py").write_text("D = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = _fingerprint("pg_fingerprint_pkg.mod")
    for untracked in (pkg / "data" / "y.py", pkg / ".hidden" / "z.py", pkg / ".#mod.py"):
        untracked.write_text("edited = True\n")
    assert _fingerprint("pg_fingerprint_pkg.mod") == before
    (pkg / "sub" / "x.py").write_text("A = 2\n")  # a sibling sub-package's module: the package's code
    after = _fingerprint("pg_fingerprint_pkg.mod")
    assert after != before
    (pkg / "__init__.py").write_text("A = 2\n")
    assert _fingerprint("pg_fingerprint_pkg.mod") != after


def test_an_unreadable_file_of_a_package_is_skipped_with_one_warning(tmp_path, monkeypatch):
    pkg = tmp_path / "pg_fingerprint_broken"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text("A = 1\n")
    broken = pkg / "broken.py"
    broken.symlink_to(tmp_path / "gone.py")  # dangling: reading it raises
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(UserWarning, match=r"cannot read .*broken\.py.*left out of the code fingerprint") as caught:
        first = _fingerprint("pg_fingerprint_broken.mod")
        assert _fingerprint("pg_fingerprint_broken.mod") == first
    assert sum("broken.py" in str(w.message) for w in caught) == 1  # once, naming the file
    (pkg / "mod.py").write_text("A = 2\n")
    assert _fingerprint("pg_fingerprint_broken.mod") != first


def test_privgame_packages_are_fingerprinted_by_their_package_source():
    """mechanisms/cached.py keys a release by its mechanism's package and by analysis/: each covers its package's
    files (an edit of any of them misses), and differs between packages."""
    from pathlib import Path

    import privgame.analysis.discretise as discretise_module
    from privgame.core.cache import _package_sources

    analysis_dir = Path(discretise_module.__file__).parent
    assert {p.name for p in _package_sources(analysis_dir)} >= {"fidelity.py", "discretise.py", "_checks.py"}
    root = analysis_dir.parent
    mechanisms = {p.relative_to(root).as_posix() for p in _package_sources(root / "mechanisms")}
    assert {"mechanisms/cached.py", "mechanisms/synth/baynet.py", "mechanisms/training/data.py"} <= mechanisms
    assert _fingerprint("privgame.mechanisms.synth.baynet") != _fingerprint("privgame.analysis.discretise")
