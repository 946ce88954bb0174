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


def _parquet_table(n: int = 30) -> pd.DataFrame:
    """A table the frame form does not take (a text column), so it is stored as Parquet."""
    return _table(n).assign(s=lambda t: t["a"].astype(str))


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


@pytest.mark.parametrize("kind", ["frame", "table"])
@pytest.mark.parametrize("damage", ["truncate", "flip", "marker"])
def test_a_damaged_entry_is_reported_deleted_and_missed(tmp_path, damage, kind):
    cache = ArtefactCache(tmp_path)
    key = make_key(x=2)
    cache.put_table(key, _table() if kind == "frame" else _parquet_table())
    path = cache.path(kind, key)
    payload = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(payload[: len(payload) // 2])
    elif damage == "flip":
        path.write_bytes(payload[:-20] + bytes(b ^ 0xFF for b in payload[-20:]))
    else:
        path.with_suffix(".sha256").write_text("0" * 64)
    with pytest.warns(UserWarning, match="corrupted cache entry"):
        assert cache.get_table(key) is None
    assert not path.exists() and not cache.contains(kind, key)


def _put(cache: ArtefactCache, kind: str, key: str, value: int) -> None:
    if kind == "frame":
        assert cache.put_table(key, _table().assign(b=value))
    elif kind == "table":
        assert cache.put_table(key, _parquet_table().assign(b=value))
    elif kind == "arrays":
        cache.put_arrays(key, {"u": np.full(4, value)})
    else:
        cache.put_json(key, {"value": value})


def _value(cache: ArtefactCache, kind: str, key: str) -> int | None:
    if kind in ("frame", "table"):
        table = cache.get_table(key)
        return None if table is None else int(table["b"].iloc[0])
    if kind == "arrays":
        arrays = cache.get_arrays(key)
        return None if arrays is None else int(arrays["u"][0])
    value = cache.get_json(key)
    return None if value is None else int(value["value"])


@pytest.mark.parametrize("kind", ["frame", "table", "arrays", "json"])
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


@pytest.mark.parametrize("kind", ["frame", "table", "arrays", "json"])
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


@pytest.mark.parametrize("kind", ["frame", "table"])
def test_an_entry_without_its_marker_is_a_miss(tmp_path, kind):
    cache = ArtefactCache(tmp_path)
    key = make_key(x=3)
    cache.put_table(key, _table() if kind == "frame" else _parquet_table())
    assert cache.path(kind, key).exists()
    cache.path(kind, key).with_suffix(".sha256").unlink()  # a kill between the two writes
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


def test_each_form_checks_its_round_trip_once_per_schema(tmp_path, monkeypatch):
    import privgame.core.cache as cache_module
    from privgame.core._memo import BoundedMemo

    monkeypatch.setattr(cache_module, "_PARQUET_EXACT", BoundedMemo(64))
    monkeypatch.setattr(cache_module, "_FRAME_PLANS", BoundedMemo(64))
    reads, decodes = [], []
    real_read, real_decode = pd.read_parquet, cache_module._decode_frame
    monkeypatch.setattr(pd, "read_parquet", lambda *a, **k: reads.append(1) or real_read(*a, **k))
    monkeypatch.setattr(cache_module, "_decode_frame", lambda *a: decodes.append(1) or real_decode(*a))
    cache = ArtefactCache(tmp_path)
    base = _table()
    for i in range(3):  # the same schema, other values: checked once, and Parquet never consulted
        assert cache.put_table(make_key(i=i), base.assign(b=base["b"] + i))
    assert (len(decodes), len(reads)) == (1, 0)
    half = base.assign(c=base["c"].astype(np.float16))  # numeric, but float16 is not a frame dtype: Parquet
    for i in range(3):
        assert cache.put_table(make_key(i=5 + i), half.assign(b=half["b"] + i))
    assert (len(decodes), len(reads)) == (1, 1) and cache.contains("table", make_key(i=5))
    assert not cache.put_table(make_key(i=10), pd.DataFrame({"x": pd.Categorical([1, 2])}))
    assert not cache.put_table(make_key(i=11), pd.DataFrame({"x": pd.Categorical([2, 2], categories=[1, 2])}))
    assert len(reads) == 2
    for i in range(2):  # an object column: its values decide, checked every time (pandas 3 reads back str)
        cache.put_table(make_key(i=20 + i), pd.DataFrame({"s": ["a", str(i)]}, dtype=object))
    assert len(reads) == 4
    decodes.clear()
    for i in range(3):
        back = cache.get_table(make_key(i=i))
        pd.testing.assert_frame_equal(back, base.assign(b=base["b"] + i), check_exact=True)
    assert len(decodes) == 3 and len(reads) == 4


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


# -- tables in the frame form (npz) ------------------------------------------------------------------------------
def _adult() -> pd.DataFrame:
    from privgame.data import load_adult

    return load_adult("train").iloc[:200]


def _numeric() -> pd.DataFrame:
    extremes = {
        np.dtype(t): [np.iinfo(t).min, np.iinfo(t).max, 0, 1]
        for t in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
    }
    columns = {str(dtype): np.array(values, dtype=dtype) for dtype, values in extremes.items()}
    columns["float64"] = np.array([np.nan, -0.0, np.inf, 2.0**-1074])
    columns["float32"] = np.array([np.nan, -0.0, -np.inf, 1.5], dtype=np.float32)
    columns["bool"] = np.array([True, False, False, True])
    return pd.DataFrame(columns)


def _categoricals() -> pd.DataFrame:
    python_str = pd.StringDtype("python", na_value=np.nan)
    return pd.DataFrame(
        {
            "ordered": pd.Categorical(["lo", "hi", None, "mid"], categories=["lo", "mid", "hi"], ordered=True),
            "unused": pd.Categorical(["b", "b", "a", "b"], categories=["b", "a", "never"]),
            "missing": pd.Categorical([None] * 4, categories=["only"]),
            "empty": pd.Categorical([None] * 4, categories=pd.Index([], dtype=str)),
            "python": pd.Categorical(["x", "ÿ", "x", " "], categories=pd.Index(["x", "ÿ", " "], dtype=python_str)),
            "many": pd.Categorical([f"c{i}" for i in (0, 299, 5, 7)], categories=[f"c{i}" for i in range(300)]),
            "": np.arange(4),
        }
    )


def _object_names() -> pd.DataFrame:
    table = _table()
    table.columns = pd.Index(list(table.columns), dtype=object)
    return table.assign(a=table["a"].cat.set_categories(pd.Index(["x", "y", "z", "w"], dtype=object)))


def _synthpop() -> pd.DataFrame:
    return Synthpop().release(_adult().reset_index(drop=True), rng=np.random.default_rng(0))


FRAME_TABLES = {
    "adult": _adult,
    "synthpop": _synthpop,
    "numeric": _numeric,
    "categoricals": _categoricals,
    "no-rows": lambda: _categoricals().iloc[:0],
    "object-names-and-categories": _object_names,
}


@pytest.mark.parametrize("name", FRAME_TABLES)
def test_a_table_of_numbers_and_string_categories_is_a_frame_entry_read_back_exactly(tmp_path, name):
    table = FRAME_TABLES[name]()
    cache = ArtefactCache(tmp_path)
    key = make_key(table=name)
    assert cache.put_table(key, table)
    assert cache.contains("frame", key) and not cache.contains("table", key)
    assert cache.path("frame", key).suffix == ".npz"
    for _ in range(2):  # the second read finds its names and categories built already
        back = cache.get_table(key)
        expected = table.reset_index(drop=True)
        pd.testing.assert_frame_equal(back, expected, check_exact=True)
        assert back.columns.dtype == expected.columns.dtype and list(back.columns) == list(expected.columns)
        assert isinstance(back.index, pd.RangeIndex) and back.index.equals(pd.RangeIndex(len(table)))
        for column in table.columns:
            dtype, original = back[column].dtype, table[column].dtype
            assert dtype == original
            if isinstance(original, pd.CategoricalDtype):
                assert dtype.categories.dtype == original.categories.dtype and dtype.ordered == original.ordered
                assert list(dtype.categories) == list(original.categories)
                assert np.array_equal(back[column].cat.codes, table[column].cat.codes)
    if len(back):
        back.iloc[0, 0] = back.iloc[1, 0]  # an ordinary, writable table
    assert cache.hits == 2 and cache.misses == 0


def test_categories_in_another_order_are_another_table(tmp_path):
    """Unordered categoricals with the same categories in another order have equal dtypes in pandas, but the same
    codes mean other values: neither the read-back nor the content hash may mix them up."""
    first = pd.DataFrame({"x": pd.Categorical(["a", "b", "a"], categories=["a", "b"])})
    second = pd.DataFrame({"x": pd.Categorical(["b", "a", "b"], categories=["b", "a"])})  # the same codes
    assert content_hash(first) != content_hash(second)
    cache = ArtefactCache(tmp_path)
    for i, table in enumerate((first, second, first)):
        cache.put_table(make_key(i=i), table)
        pd.testing.assert_frame_equal(cache.get_table(make_key(i=i)), table, check_exact=True)
        assert list(cache.get_table(make_key(i=i))["x"].cat.categories) == list(table["x"].cat.categories)


def test_the_index_is_not_kept_and_a_second_read_shares_its_dtypes(tmp_path):
    cache = ArtefactCache(tmp_path)
    table = _table().set_axis(range(100, 130))
    cache.put_table(make_key(x=1), table)
    cache.put_table(make_key(x=2), table.iloc[::-1])
    one, two = cache.get_table(make_key(x=1)), cache.get_table(make_key(x=2))
    pd.testing.assert_frame_equal(one, table.reset_index(drop=True), check_exact=True)
    assert one["a"].dtype is two["a"].dtype  # rebuilt once, for entries whose categories are the same


@pytest.mark.parametrize(
    "table",
    [
        pd.DataFrame({"x": pd.Categorical([1, 2, 1]), "y": pd.Categorical(["a", "b", "a"])}),  # number categories
        pd.DataFrame({"x": pd.Categorical(pd.to_datetime(["2020-01-01", "2021-01-01"]))}),
        _table().rename_axis(columns="features"),  # a named column index
        _table().set_axis([0, 1, 2], axis=1),  # names that are not strings
    ],
    ids=["int-categories", "date-categories", "named-columns", "int-names"],
)
def test_a_table_neither_form_carries_is_not_cached(tmp_path, table):
    """Not the frame form (categories that are not strings, names that are not plain strings), and Parquet reads
    it back otherwise (a plain numeric column, unnamed or string column names), so it is not cached at all, as
    before the frame form: a hit could not equal it."""
    cache = ArtefactCache(tmp_path)
    key = make_key(x=1)
    assert not cache.put_table(key, table)
    assert not cache.contains("frame", key) and not cache.contains("table", key)
    assert cache.get_table(key) is None


@pytest.mark.parametrize(
    "change",
    [
        lambda t: t.assign(s=t["a"].astype(str)),  # a text column
        lambda t: t.assign(d=pd.Timestamp("2020-01-01")),  # a date
        lambda t: t.assign(c=t["c"].astype(np.float16)),  # a float16 column
        lambda t: t.assign(b=t["b"].astype("Int64")),  # a nullable integer column
    ],
    ids=["text", "date", "float16", "nullable"],
)
def test_other_tables_take_parquet_as_before(tmp_path, change):
    cache = ArtefactCache(tmp_path)
    key = make_key(x=1)
    table = change(_table())
    assert cache.put_table(key, table)
    assert cache.contains("table", key) and not cache.contains("frame", key)
    pd.testing.assert_frame_equal(cache.get_table(key), table, check_exact=True)


def test_names_or_categories_that_text_arrays_cannot_hold_take_parquet(tmp_path):
    """numpy's text arrays cut trailing NULs: such a schema fails the frame form's check once and takes Parquet."""
    cache = ArtefactCache(tmp_path)
    names = pd.DataFrame({"a": [1, 2], "a\0": [3, 4]})
    categories = pd.DataFrame({"x": pd.Categorical(["a", "a\0"])})
    for i, table in enumerate((names, categories)):
        assert cache.put_table(make_key(i=i), table)
        assert cache.contains("table", make_key(i=i)) and not cache.contains("frame", make_key(i=i))
        pd.testing.assert_frame_equal(cache.get_table(make_key(i=i)), table, check_exact=True)


def test_tables_read_back_do_not_share_what_can_be_changed(tmp_path):
    cache = ArtefactCache(tmp_path)
    cache.put_table(make_key(x=1), _table())
    one = cache.get_table(make_key(x=1))
    one.columns.name = "renamed"
    one.loc[0, "b"] = -1
    two = cache.get_table(make_key(x=1))
    assert two.columns.name is None and int(two.loc[0, "b"]) == int(_table().loc[0, "b"])


def test_a_parquet_entry_of_an_earlier_version_is_still_read(tmp_path):
    import io

    cache = ArtefactCache(tmp_path)
    key = make_key(x="old")
    buf = io.BytesIO()
    _table().to_parquet(buf, index=False)
    cache._put("table", key, buf.getvalue())  # as put_table wrote every table before the frame form
    pd.testing.assert_frame_equal(cache.get_table(key), _table(), check_exact=True)
    assert cache.hits == 1
    cache.put_table(key, _table().assign(b=7))  # a frame entry beside it is read first
    assert int(cache.get_table(key)["b"].iloc[0]) == 7


_UNPICKLED: list[str] = []


def _unpickle_trap(tag: str) -> str:
    _UNPICKLED.append(tag)
    return tag


class _Trap:
    """An object whose unpickling would record itself: a hostile entry's payload."""

    def __reduce__(self):
        return _unpickle_trap, ("unpickled",)


def _frame_arrays(table: pd.DataFrame | None = None) -> dict[str, np.ndarray]:
    from privgame.core.cache import _encode_frame, _frame_plan

    table = _table() if table is None else table
    return _encode_frame(table, _frame_plan(table))


def _npz(arrays: dict[str, np.ndarray], *, compressed: bool = False, pickles: bool = False) -> bytes:
    import io

    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, allow_pickle=pickles, **arrays)
    return buf.getvalue()


def _with(**changes: np.ndarray | None) -> bytes:
    arrays = _frame_arrays()
    for name, value in changes.items():
        if value is None:
            del arrays[name]
        else:
            arrays[name] = value
    return _npz(arrays)


def _layout(**cells: int) -> np.ndarray:
    """The layout of :func:`_table`'s frame entry with some cells changed (``r0c1=5``: row 0, column 1)."""
    layout = _frame_arrays()["layout"].copy()
    for cell, value in cells.items():
        row, column = cell[1:].split("c")
        layout[int(row), int(column)] = value
    return layout


def _codes(values: list[int]) -> np.ndarray:
    group = _frame_arrays()["int8"].copy()
    group[0, : len(values)] = values
    return group


HOSTILE = {
    "code-too-large": lambda: _with(int8=_codes([4])),  # "a" has 4 categories: codes -1..3
    "code-below-minus-one": lambda: _with(int8=_codes([-2])),
    "pickled-object-array": lambda: _npz({**_frame_arrays(), "strings": np.array([_Trap()] * 8)}, pickles=True),
    "pickled-extra-member": lambda: _npz({**_frame_arrays(), "x": np.array([_Trap()])}, pickles=True),
    "pickle-not-npz": lambda: __import__("pickle").dumps(_Trap()),
    "lengths-differ": lambda: _with(float64=np.zeros((1, 31))),
    "rows-differ-from-header": lambda: _with(layout=_layout(r0c1=29)),
    "not-an-npz": lambda: b"PAR1 this is no table",
    "a-single-npy": lambda: _npy(np.arange(3)),
    "compressed-members": lambda: _npz(_frame_arrays(), compressed=True),
    "extra-member": lambda: _with(extra=np.arange(3)),
    "member-not-npy": lambda: _raw_member(_npz(_frame_arrays()), "int64.npy", b"not an array"),
    "missing-member": lambda: _with(float64=None),
    "value-dtype-mismatch": lambda: _with(float64=np.zeros((1, 30), dtype=np.complex128)),
    "codes-not-integers": lambda: _with(layout=_layout(r1c1=10)),  # "a" declared float64
    "unknown-dtype-code": lambda: _with(layout=_layout(r2c1=99)),
    "unknown-format": lambda: _with(layout=_layout(r0c0=2)),
    "unknown-names-dtype": lambda: _with(layout=_layout(r0c2=7)),
    "negative-category-count": lambda: _with(layout=_layout(r1c2=-1)),
    "numeric-with-categories": lambda: _with(layout=_layout(r2c2=1)),
    "too-few-strings": lambda: _with(strings=np.array(["a", "b", "c"])),
    "too-many-strings": lambda: _with(strings=np.array(["a", "b", "c", "x", "y", "z", "w", "v"])),
    "strings-not-text": lambda: _with(strings=np.arange(7)),
    "repeated-names": lambda: _with(strings=np.array(["a", "a", "c", "x", "y", "z", "w"])),
    "repeated-categories": lambda: _with(strings=np.array(["a", "b", "c", "x", "x", "z", "w"])),
    "layout-not-int64": lambda: _with(layout=_frame_arrays()["layout"].astype(np.int32)),
    "layout-one-row": lambda: _with(layout=_frame_arrays()["layout"][:1]),
    "layout-2-d-not": lambda: _with(layout=np.zeros(4, dtype=np.int64)),
    "empty-file": lambda: b"",
}


def _raw_member(npz: bytes, name: str, payload: bytes) -> bytes:
    """``npz`` with its member ``name`` replaced by raw bytes (``np.load`` gives such a member back as bytes)."""
    import io
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(npz)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            target.writestr(
                info.filename.removesuffix(".npy") if info.filename == name else info.filename,
                payload if info.filename == name else source.read(info),
            )
    return out.getvalue()


def _npy(array: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_frame_entry_is_a_deleted_miss_and_never_unpickled(tmp_path, name):
    """An entry written by someone else, with a marker that matches it (a checksum detects damage, not an
    attacker): anything that is not exactly a frame entry is reported, deleted and missed, never unpickled."""
    cache = ArtefactCache(tmp_path)
    key = make_key(hostile=name)
    _UNPICKLED.clear()
    cache._put("frame", key, HOSTILE[name]())
    assert cache.contains("frame", key)
    with pytest.warns(UserWarning, match="corrupted cache entry"):
        assert cache.get_table(key) is None
    assert not cache.path("frame", key).exists() and not cache.contains("frame", key)
    assert _UNPICKLED == [] and cache.misses == 1 and cache.hits == 0
    assert cache.put_table(key, _table())  # regenerated
    pd.testing.assert_frame_equal(cache.get_table(key), _table(), check_exact=True)


def test_an_entry_is_decoded_with_its_own_categories_not_those_built_for_another(tmp_path):
    """The names and categories built for one entry are reused only for an entry that holds the very same ones:
    an entry laid out alike but holding other categories (a stranger's, or another table's) is decoded with its own."""
    cache = ArtefactCache(tmp_path)
    cache.put_table(make_key(x=1), _table())
    assert list(cache.get_table(make_key(x=1))["a"].cat.categories) == list("xyzw")
    cache._put("frame", make_key(x=2), _with(strings=np.array(["a", "b", "c", "p", "q", "r", "s"])))
    other = cache.get_table(make_key(x=2))
    assert list(other["a"].cat.categories) == list("pqrs")
    assert list(other["a"].cat.codes) == list(_table()["a"].cat.codes)


def test_the_hostile_entries_differ_from_a_valid_one_only_where_they_say():
    """The fixtures are valid but for their one change: a valid entry built the same way decodes."""
    from privgame.core.cache import _decode_frame, _load_stored_npz

    pd.testing.assert_frame_equal(_decode_frame(_load_stored_npz(_with())), _table(), check_exact=True)
    edge = _decode_frame(_load_stored_npz(_with(int8=_codes([3, -1]))))  # the extreme codes are valid
    assert edge["a"].iloc[0] == "w" and pd.isna(edge["a"].iloc[1])
    pd.testing.assert_frame_equal(edge.iloc[2:], _table().iloc[2:], check_exact=True)
