"""The external generator: a program run as the generator, its failures named in one line, its output checked."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from privgame.analysis.accounting import NeighbouringRelation, zcdp_rho
from privgame.core.cache import ArtefactCache
from privgame.mechanisms.cached import cached_release_many, release_key
from privgame.mechanisms.synth.external import ExternalGenerator, ExternalGeneratorError, GeneratorStderr
from tests._external_toy import PROGRAM

RANGES = {"age": (17, 90), "hours": (1, 99)}


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "toy_generator.py"
    path.write_text(PROGRAM)
    return path


@pytest.fixture
def table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "age": rng.integers(17, 91, 60),
            "sex": pd.Categorical(rng.choice(["F", "M"], 60), categories=["F", "M"]),
            "hours": rng.uniform(1, 99, 60),
        }
    )


def one_run(program: Path, **kwargs: Any) -> ExternalGenerator:
    words = ["--train", "{train}", "--out", "{out}", "--seed", "{seed}", "--rows", "{rows}", "--schema", "{schema}"]
    return ExternalGenerator(command=[sys.executable, str(program), *words], ranges=RANGES, **kwargs)


def batch(program: Path, **kwargs: Any) -> ExternalGenerator:
    return ExternalGenerator(
        command=[sys.executable, str(program), "--jobs", "{jobs}"], batch=True, ranges=RANGES, **kwargs
    )


def test_release_is_the_programs_table_in_the_training_tables_dtypes(program: Path, table: pd.DataFrame) -> None:
    out = one_run(program).release(table, rng=np.random.default_rng(1))
    assert out.shape == table.shape
    assert list(out.dtypes) == list(table.dtypes)
    assert out["sex"].dtype == table["sex"].dtype
    assert set(out["age"]) <= set(table["age"])


def test_same_seed_same_table_and_batch_equals_single_runs(program: Path, table: pd.DataFrame) -> None:
    single = one_run(program)
    a = single.release(table, rng=np.random.default_rng(5))
    b = single.release(table, rng=np.random.default_rng(5))
    c = single.release(table, rng=np.random.default_rng(6))
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)
    runs = batch(program).release_runs([table, table], rngs=[np.random.default_rng(5), np.random.default_rng(6)])
    pd.testing.assert_frame_equal(runs[0], a)
    pd.testing.assert_frame_equal(runs[1], c)


def test_n_rows_and_parquet(program: Path, table: pd.DataFrame) -> None:
    out = one_run(program, n_rows=17, format="parquet").release(table, rng=np.random.default_rng(1))
    assert out.shape == (17, 3)
    assert list(out.dtypes) == list(table.dtypes)


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("crash", "the program exited with status 3; stderr: loading the model | ValueError: the generator broke"),
        ("nothing", "it wrote no synthetic-0.csv"),
        ("malformed", "synthetic-0.csv is not a readable CSV table"),
        ("empty", "synthetic-0.csv is empty"),
        ("outside", "synthetic-0.csv column 'age' row 3: value '150' is outside its public range 17..90"),
        ("category", "synthetic-0.csv column 'sex' row 5: value 'Unknown' is not one of its public categories"),
        ("fraction", "synthetic-0.csv column 'age' row 1: value '40.5' is not a whole number (an integer column)"),
        ("missing", "synthetic-0.csv column 'age' row 2: value '' is not a finite number"),
        ("columns", "synthetic-0.csv lacks column 'age' (expected 'age', 'sex', 'hours')"),
        ("rows", "synthetic-0.csv has 59 rows, 60 were asked for"),
        ("fifo", "synthetic-0.csv"),
        ("link", "synthetic-0.csv is a symbolic link, not a file it wrote"),
        ("exit", "the program exited with status 4 after writing its tables"),
    ],
)
def test_each_failure_is_one_line_naming_the_run(program: Path, table: pd.DataFrame, mode: str, message: str) -> None:
    words = ["--train", "{train}", "--out", "{out}", "--seed", "{seed}", "--rows", "{rows}", "--mode", "{mode}"]
    generator = ExternalGenerator(command=[sys.executable, str(program), *words], ranges=RANGES, params={"mode": mode})
    rng = np.random.default_rng(3)
    seed = int(np.random.default_rng(3).integers(0, 2**31 - 1))
    start = time.monotonic()
    with pytest.raises(ExternalGeneratorError) as caught:
        generator.release(table, rng=rng)
    assert time.monotonic() - start < 20  # a FIFO is refused, not waited on
    text = str(caught.value)
    assert "\n" not in text
    assert text.startswith(f"external generator run (seed {seed}): ")
    assert message in text
    assert isinstance(caught.value.__cause__, GeneratorStderr)


def test_a_hang_is_killed_with_its_children_at_the_time_limit(
    program: Path, table: pd.DataFrame, tmp_path: Path
) -> None:
    pidfile = tmp_path / "child.pid"
    words = ["--train", "{train}", "--out", "{out}", "--seed", "{seed}", "--mode", "hang", "--pidfile", str(pidfile)]
    generator = ExternalGenerator(command=[sys.executable, str(program), *words], ranges=RANGES, timeout=3)
    start = time.monotonic()
    with pytest.raises(
        ExternalGeneratorError, match=r"timed out after \d+\.\d s \(limit 3 s\); its processes were killed"
    ):
        generator.release(table, rng=np.random.default_rng(0))
    assert time.monotonic() - start < 15
    child = int(pidfile.read_text())
    for _ in range(50):  # the killed child is reaped by init
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail("the generator's child process outlived the time limit")


def test_a_missing_program_is_named(table: pd.DataFrame) -> None:
    generator = ExternalGenerator(command=["/nonexistent/generator", "{train}", "{out}", "{seed}"], ranges=RANGES)
    with pytest.raises(ExternalGeneratorError, match=r"cannot start '/nonexistent/generator'"):
        generator.release(table, rng=np.random.default_rng(0))


def test_batch_failure_names_its_run_and_keeps_the_runs_before_it_only_when_the_program_succeeded(
    program: Path, table: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    generator = batch(program)
    seeds = [np.random.SeedSequence(s) for s in (1, 2, 3)]

    def kept(cache: ArtefactCache) -> list[bool]:
        return [cache.get_table(str(release_key(generator, table, s))) is not None for s in seeds]

    # the program exits 0 but its second table is out of the domain: the first run is kept
    monkeypatch.setenv("TOY_MODE", "outside@1")
    cache = ArtefactCache(tmp_path / "cache")
    with pytest.raises(ExternalGeneratorError, match=r"run 2 of 3\): synthetic-1.csv column 'age' row 3"):
        cached_release_many(generator, [table] * 3, seeds=seeds, cache=cache)
    assert kept(cache) == [True, False, False]
    # the program fails at its second run: it may have been cut off mid-table, so none of its tables is kept
    monkeypatch.setenv("TOY_MODE", "crash@1")
    crashed = ArtefactCache(tmp_path / "crashed")
    with pytest.raises(ExternalGeneratorError, match=r"run 2 of 3\): the program exited with status 1"):
        cached_release_many(generator, [table] * 3, seeds=seeds, cache=crashed)
    assert kept(crashed) == [False, False, False]
    monkeypatch.setenv("TOY_MODE", "ok")
    again = cached_release_many(generator, [table] * 3, seeds=seeds, cache=cache)
    assert all(r.shape == table.shape for r in again)


def test_a_table_cut_short_by_a_time_out_is_not_kept(table: pd.DataFrame, tmp_path: Path) -> None:
    """A program killed while it writes may leave a table that reads as sound (its last number cut short)."""
    script = tmp_path / "slow.py"
    script.write_text(
        "import json, sys, time\n"
        "jobs = json.load(open(sys.argv[1]))['jobs']\n"
        "for job in jobs[:2]:\n"
        "    open(job['out'], 'w').write('age,sex,hours\\n' + '40,F,2.5\\n' * job['rows'])\n"
        "time.sleep(30)\n"
    )
    generator = ExternalGenerator(command=[sys.executable, str(script), "{jobs}"], batch=True, ranges=RANGES, timeout=1)
    seeds = [np.random.SeedSequence(s) for s in (1, 2, 3)]
    cache = ArtefactCache(tmp_path / "cache")
    with pytest.raises(ExternalGeneratorError, match=r"run 3 of 3\): timed out after"):
        cached_release_many(generator, [table] * 3, seeds=seeds, cache=cache)
    assert all(cache.get_table(str(release_key(generator, table, s))) is None for s in seeds)


def test_single_runs_are_cached_one_at_a_time(program: Path, table: pd.DataFrame, tmp_path: Path) -> None:
    generator = one_run(program)
    assert generator.batches_runs is False
    cache = ArtefactCache(tmp_path / "cache")
    seeds = [np.random.SeedSequence(s) for s in (1, 2)]
    first = cached_release_many(generator, [table] * 2, seeds=seeds, cache=cache)
    assert all(cache.get_table(str(release_key(generator, table, s))) is not None for s in seeds)
    again = cached_release_many(generator, [table] * 2, seeds=seeds, cache=cache)
    for a, b in zip(first, again, strict=True):
        pd.testing.assert_frame_equal(a, b)


def test_the_key_changes_with_the_programs_content(program: Path, table: pd.DataFrame) -> None:
    seed = np.random.SeedSequence(0)
    before = release_key(one_run(program), table, seed)
    program.write_text(PROGRAM + "\n# edited\n")
    after = release_key(one_run(program), table, seed)
    assert before is not None and after is not None and before != after


def test_environment_leads_the_path_and_privgames_python_settings_stay_home(
    program: Path, table: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = tmp_path / "env"
    (env / "bin").mkdir(parents=True)
    (env / "pyvenv.cfg").write_text("home = /usr/bin\n")
    launcher = env / "bin" / "toy"
    launcher.write_text(f'#!/bin/sh\nexec {sys.executable} {program} "$@"\n')
    launcher.chmod(0o755)
    monkeypatch.setenv("PYTHONPATH", "/privgame/site")
    monkeypatch.setenv("TOY_MODE", "env")
    generator = ExternalGenerator(
        command=["toy", "--train", "{train}", "--out", "{out}", "--seed", "{seed}", "--rows", "0"],
        environment=str(env),
        ranges=RANGES,
        n_rows=1,
    )
    with pytest.raises(ExternalGeneratorError) as caught:  # it writes 0 rows where 1 was asked, and says its env
        generator.release(table, rng=np.random.default_rng(0))
    assert f"stderr: - {env}" in str(caught.value)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"command": "python gen.py"}, TypeError, "command must be a non-empty list"),
        ({"command": []}, TypeError, "command must be a non-empty list"),
        ({"command": ["python", ""]}, TypeError, "every word must be a non-empty string"),
        ({"command": ["p", "{train}", "{out}"]}, ValueError, r"command must pass \{seed\}"),
        ({"command": ["p", "{train}", "{out}", "{seed}", "{nope}"]}, ValueError, r"unknown placeholder \{nope\}"),
        ({"command": ["p", "{train}", "{out}", "{seed}", "{jobs}"]}, ValueError, r"\{jobs\} needs batch = true"),
        ({"command": ["p", "{train}", "{out}", "{seed}"], "batch": True}, ValueError, r"with batch = true, use"),
        ({"command": ["p", "{train}", "{out}", "{seed:x}"]}, ValueError, "a placeholder is a bare name"),
        ({"command": ["p", "{train}", "{out}", "{seed.real}"]}, ValueError, "a placeholder is a bare name"),
        ({"command": ["p", "{train", "{out}", "{seed}"]}, ValueError, "is not a valid template"),
        ({"params": {"k": 2}}, ValueError, r"'k' is not passed to the program"),
        ({"params": {"seed": 2}}, ValueError, "is a placeholder privgame fills in itself"),
        ({"params": {"k": [1, 2]}}, TypeError, "must be a string, number or boolean"),
        ({"params": {"1k": 2}}, ValueError, "NAME an identifier"),
        ({"command": ["{env}/bin/p", "{train}", "{out}", "{seed}"]}, ValueError, "uses {env} but no environment"),
        ({"command": ["p", "{train}", "{out}", "{seed}", "{epsilon}"]}, ValueError, "uses {epsilon} but epsilon is"),
        ({"format": "xlsx"}, ValueError, "format must be one of csv, parquet"),
        ({"timeout": 0}, ValueError, "timeout"),
        ({"batch": 1}, TypeError, "batch must be true or false"),
        ({"claim": "approx"}, ValueError, "claim must be one of none, pure, zcdp"),
        ({"claim": "pure"}, ValueError, "claim = 'pure' needs epsilon"),
        ({"claim": "zcdp", "epsilon": 1.0}, ValueError, "claim = 'zcdp' needs either rho"),
        ({"claim": "zcdp", "rho": 0.1, "epsilon": 1.0, "delta": 1e-5}, ValueError, "not both"),
        ({"neighbours": "swap"}, ValueError, "neighbours must be one of"),
        ({"delta": 1.5}, ValueError, "delta"),
        ({"ranges": {"age": (5, 1)}}, ValueError, "finite low < high"),
    ],
)
def test_bad_parameters_are_refused_in_one_line(kwargs: dict[str, Any], error: type, match: str) -> None:
    base: dict[str, Any] = {"command": ["p", "{train}", "{out}", "{seed}"]}
    with pytest.raises(error, match=match):
        ExternalGenerator(**{**base, **kwargs})


def test_a_numeric_column_without_a_public_range_is_refused(program: Path, table: pd.DataFrame) -> None:
    generator = ExternalGenerator(
        command=[sys.executable, str(program), "--train", "{train}", "--out", "{out}", "--seed", "{seed}"],
        ranges={"age": (17, 90)},
    )
    with pytest.raises(ValueError, match="got none for 'hours'"):
        generator.release(table, rng=np.random.default_rng(0))


def test_claims() -> None:
    words = ["p", "{train}", "{out}", "{seed}"]
    assert ExternalGenerator(command=words).privacy_claim() is None
    pure = ExternalGenerator(command=words, claim="pure", epsilon=1.0, neighbours="add-remove").privacy_claim()
    assert pure is not None and pure.neighbouring == NeighbouringRelation.ADD_OR_REMOVE_ONE
    assert pure.epsilon(0.0) == pytest.approx(1.0)
    mst = ExternalGenerator(command=words, claim="zcdp", epsilon=1.0, delta=1e-5, neighbours="add-remove")
    assert mst.derived_parameters() == {"rho": pytest.approx(zcdp_rho(1.0, 1e-5))}
    claim = mst.privacy_claim()
    assert claim is not None and claim.epsilon(1e-5) == pytest.approx(1.0, abs=2e-3)
    given = ExternalGenerator(command=words, claim="zcdp", rho=0.5)
    assert given.derived_parameters() == {} and not given.derives_parameters()


def test_the_schema_holds_the_public_domain_only(program: Path, table: pd.DataFrame, tmp_path: Path) -> None:
    copy = tmp_path / "schema.json"
    words = ["-c", f"import shutil, sys; shutil.copy(sys.argv[1], {str(copy)!r}); sys.exit(2)", "{schema}"]
    generator = ExternalGenerator(command=[sys.executable, *words, "{train}", "{out}", "{seed}"], ranges=RANGES)
    with pytest.raises(ExternalGeneratorError):
        generator.release(table, rng=np.random.default_rng(0))
    import json

    schema = json.loads(copy.read_text())
    assert schema == {
        "format": "privgame-table-schema/1",
        "columns": [
            {"name": "age", "kind": "integer", "low": 17, "high": 90},
            {"name": "sex", "kind": "categorical", "categories": ["F", "M"]},
            {"name": "hours", "kind": "float", "low": 1.0, "high": 99.0},
        ],
    }


def test_a_command_named_by_an_untrusted_file_is_refused_unless_trusted() -> None:
    from privgame.core.trust import UntrustedImportError, names_from

    words = ["rm", "{train}", "{out}", "{seed}"]
    with (
        names_from("'results/manifest.json'", trusted=False),
        pytest.raises(
            UntrustedImportError, match=r"external generator command 'rm \{train\} \{out\} \{seed\}' is named by"
        ),
    ):
        ExternalGenerator(command=words)
    with names_from("'results/manifest.json'", trusted=True):
        assert ExternalGenerator(command=words).command == tuple(words)


@pytest.mark.parametrize(
    ("dtype", "written", "message"),
    [
        ("int8", "300", "does not fit the column's type (int8) exactly"),
        ("int64", "10000000000000000000", "does not fit the column's type (int64) exactly"),
        ("float32", "1e39", "does not fit the column's type (float32)"),
    ],
)
def test_a_value_beyond_the_columns_type_is_named(tmp_path: Path, dtype: str, written: str, message: str) -> None:
    from privgame.mechanisms.synth._external_io import TableFileError, read_table

    like = pd.DataFrame({"x": np.zeros(1, dtype=dtype)})
    spec = {"columns": [{"name": "x", "kind": "float" if "float" in dtype else "integer", "low": 0, "high": 1e40}]}
    path = tmp_path / "out.csv"
    path.write_text(f"x\n{written}\n")
    with pytest.raises(TableFileError, match=re.escape(f"out.csv column 'x' row 1: value '{written}' {message}")):
        read_table(path, like=like, schema=spec, rows=1, fmt="csv", limit=1 << 20)


def test_a_missing_or_boolean_parquet_value_is_named(tmp_path: Path) -> None:
    from privgame.mechanisms.synth._external_io import TableFileError, read_table

    like = pd.DataFrame({"c": pd.Categorical(["nan"], categories=["nan", "x"]), "n": [1.0]})
    spec = {
        "columns": [
            {"name": "c", "kind": "categorical", "categories": ["nan", "x"]},
            {"name": "n", "kind": "float", "low": 0.0, "high": 2.0},
        ]
    }
    path = tmp_path / "out.parquet"
    pd.DataFrame({"c": [None], "n": [1.0]}).to_parquet(path)
    with pytest.raises(TableFileError, match="column 'c' row 1: value '' is missing"):
        read_table(path, like=like, schema=spec, rows=1, fmt="parquet", limit=1 << 20)
    pd.DataFrame({"c": ["x"], "n": [True]}).to_parquet(path)
    with pytest.raises(TableFileError, match="column 'n' row 1: value 'True' is a bool value, not a float one"):
        read_table(path, like=like, schema=spec, rows=1, fmt="parquet", limit=1 << 20)
    pd.DataFrame({"c": ["x"] * 5, "n": [1.0] * 5}).to_parquet(path)
    with pytest.raises(TableFileError, match=r"out\.parquet has 5 rows, 1 were asked for"):
        read_table(path, like=like, schema=spec, rows=1, fmt="parquet", limit=1 << 20)


def test_privgames_own_virtual_environment_leaves_the_path(monkeypatch: pytest.MonkeyPatch) -> None:
    from privgame.mechanisms.synth.external import _environment

    own = str(Path(sys.prefix) / "bin")
    monkeypatch.setenv("PATH", os.pathsep.join([own, "/usr/bin"]))
    monkeypatch.setattr(sys, "base_prefix", "/somewhere/else")
    assert _environment(None)["PATH"].split(os.pathsep) == ["/usr/bin"]


def test_the_key_ignores_the_time_limit_and_unpassed_claims_but_not_what_the_program_reads(
    program: Path, table: pd.DataFrame, tmp_path: Path
) -> None:
    seed = np.random.SeedSequence(0)
    base = release_key(one_run(program), table, seed)
    assert release_key(one_run(program, timeout=5), table, seed) == base
    assert release_key(one_run(program, claim="pure", epsilon=2.0), table, seed) == base
    assert release_key(one_run(program, n_rows=7), table, seed) != base
    # a file named by a parameter or after "=" in a word is read by the program: its content is in the key
    extra = tmp_path / "model.txt"
    extra.write_text("a")
    words = [sys.executable, str(program), "--train", "{train}", "--out", "{out}", "--seed", "{seed}"]
    by_param = ExternalGenerator(command=[*words, "--mode", "{file}"], params={"file": str(extra)}, ranges=RANGES)
    by_option = ExternalGenerator(command=[*words, f"--config={extra}"], ranges=RANGES)
    before = [release_key(g, table, seed) for g in (by_param, by_option)]
    extra.write_text("b")
    assert [release_key(g, table, seed) for g in (by_param, by_option)] != before
