"""Your own data: a CSV or Parquet file with a domain file, named by a config's [data] table.

Bad data and domains end in one line naming the file, the column, the row and the value; the file's hash is part
of the experiment (an edited CSV is another experiment and a changed file is refused at trial time); the games
play on it in the parent and in the workers alike; ``privgame domain`` drafts a domain and says where it came from.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privgame.data.catalogue import _CATALOGUE
from privgame.data.files import (
    DRAFT_HEADER,
    DataFileError,
    FileSource,
    draft_domain,
    draft_text,
    read_domain,
    read_table,
)
from privgame.engine import runner
from privgame.engine.cli import main
from privgame.engine.config import ConfigError, load_config
from privgame.engine.runner import run_experiment
from privgame.engine.store import ResultsStore, drop_timings

DOMAIN = """
[columns.age]
kind = "int"
range = [18, 99]

[columns.sex]
kind = "category"
categories = ["F", "M"]

[columns.bmi]
kind = "float"
range = [10.0, 70.0]

[columns.diagnosis]
kind = "category"
categories = ["healthy", "sick"]
"""


def _write_data(folder: Path, n: int = 400, seed: int = 3) -> tuple[Path, Path]:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "sex": rng.choice(["F", "M"], n),
            "bmi": np.round(rng.normal(27, 5, n).clip(12, 60), 1),
            "diagnosis": rng.choice(["healthy", "sick"], n),
        }
    )
    data, domain = folder / "clinic.csv", folder / "clinic.domain.toml"
    frame.to_csv(data, index=False)
    domain.write_text(DOMAIN)
    return data, domain


RECORD = """
[experiment]
name = "own_data"
seed = 4

[data]
path = "clinic.csv"
domain = "clinic.domain.toml"
{extra}

[game]
name = "record-model-seeded"
dataset_size = 40
auxiliary_size = 80
evaluation_size = 80
rounds = 6
vulnerable_targets = 1
random_targets = 1
n_boot = 40

[mechanism]
name = "synthpop"

[attack]
name = "closest-distance"
n_shadows = 4
"""


def _config(folder: Path, extra: str = "") -> Path:
    path = folder / "own.toml"
    path.write_text(RECORD.format(extra=extra))
    return path


def _frame(out: Path) -> pd.DataFrame:
    return pd.read_parquet(out / "results.parquet").pipe(drop_timings)


def test_a_record_game_on_a_user_csv_is_identical_in_the_parent_and_in_the_workers(tmp_path, monkeypatch):
    _write_data(tmp_path)
    config = load_config(_config(tmp_path))
    assert config.data_source.size == 400 and config.data_source.domain.floats == ("bmi",)
    one = run_experiment(config, tmp_path / "one", n_jobs=1, progress=False)
    monkeypatch.setattr(runner, "PARENT_PLAYS_WHILE_WORKERS_START", False)  # the workers play every trial
    from joblib.externals.loky import get_reusable_executor

    get_reusable_executor(max_workers=1).shutdown(wait=True, kill_workers=True)
    two = run_experiment(config, tmp_path / "two", n_jobs=2, progress=False)
    pd.testing.assert_frame_equal(_frame(one.root), _frame(two.root))
    for trial in one.done():
        np.testing.assert_array_equal(one.load_outcome(trial).scores, two.load_outcome(trial).scores)
    manifest = ResultsStore(tmp_path / "one").manifest()
    assert manifest["data_source"]["sha256"] == config.data_source.sha256 and not manifest["data_source"]["draft"]


def test_the_file_hash_is_part_of_the_experiment_and_a_changed_file_is_refused(tmp_path):
    data, _ = _write_data(tmp_path)
    first = load_config(_config(tmp_path))
    data.write_text(
        data.read_text().replace("\n30,", "\n31,", 1)
        if "\n30," in data.read_text()
        else data.read_text() + "31,F,20.0,sick\n"
    )
    second = load_config(_config(tmp_path))
    assert first.hash != second.hash and first.data_source.sha256 != second.data_source.sha256
    # the rows are read again in a trial: a file edited after the config was read is refused there
    from privgame.data.files import _FileRows

    rows = _FileRows(first.data_source.path, first.data_source.domain, first.data_source.sha256)
    with pytest.raises(DataFileError, match="changed since the config was read"):
        rows()


def test_the_report_reads_a_user_data_directory_without_its_files(tmp_path, capsys):
    data, domain = _write_data(tmp_path)
    out = tmp_path / "out"
    assert main(["run", str(_config(tmp_path)), "--out", str(out), "--no-progress"]) == 0
    data.unlink()
    domain.unlink()
    _CATALOGUE.pop("clinic", None)  # as in a fresh process
    capsys.readouterr()
    assert main(["report", str(out), "--format", "csv"]) == 0
    assert "n_records" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (
            lambda t: t.replace("\n", "\n150,F,20.0,sick\n", 1),
            r"column 'age': row 0 has '150', outside its declared range \[18, 99\]",
        ),
        (
            lambda t: t.replace("\n", "\n40,X,20.0,sick\n", 1),
            r"column 'sex': row 0 has 'X', not one of its declared categories",
        ),
        (
            lambda t: t.replace("\n", "\n40.5,F,20.0,sick\n", 1),
            r"column 'age' is int: row 0 has '40.5', which is not an integer",
        ),
        (lambda t: t.replace("\n", "\n40,F,,sick\n", 1), r"column 'bmi' is empty at row 0"),
        (lambda t: t.replace("\n", "\n40,F,abc,sick\n", 1), r"column 'bmi': row 0 has 'abc', not a finite number"),
        (lambda t: t.replace("age,", "years,", 1), r"has no column 'age', which its domain declares"),
        (lambda t: t.split("\n", 1)[0] + "\n", r"has a header but no rows"),
        (lambda t: "", r"is empty"),
    ],
)
def test_bad_data_gets_one_line_naming_the_file_column_row_and_value(tmp_path, capsys, edit, match):
    data, _ = _write_data(tmp_path)
    data.write_text(edit(data.read_text()))
    with pytest.raises(ConfigError, match=match):
        load_config(_config(tmp_path))
    assert main(["run", str(_config(tmp_path)), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "clinic.csv" in err and not (tmp_path / "out").exists()


def test_a_column_the_domain_does_not_declare_and_a_non_utf8_file(tmp_path):
    data, _ = _write_data(tmp_path)
    frame = pd.read_csv(data).assign(extra=1)
    frame.to_csv(data, index=False)
    with pytest.raises(ConfigError, match="has the column 'extra', which its domain does not declare"):
        load_config(_config(tmp_path))
    data.write_bytes(b"age,sex,bmi,diagnosis\n40,F,20.0,sick\n" + b"\xff\xfe,F,1,sick\n")
    with pytest.raises(ConfigError, match=r"must be UTF-8 text, got byte 0xff at offset"):
        load_config(_config(tmp_path))


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("[columns.age\nkind = 1", "is not valid TOML"),
        ('[columns.age]\nkind = "number"\nrange = [0, 1]', "kind must be one of int, float, category, got 'number'"),
        ('[columns.age]\nkind = "int"\nrange = [0, 1.5]', "an int column's range must be two integers"),
        ('[columns.age]\nkind = "int"\nrange = [5, 1]', "range must have low <= high"),
        ('[columns.age]\nkind = "int"', r"range must be \[low, high\], two finite numbers, got None"),
        ('[columns.sex]\nkind = "category"\ncategories = []', "categories must be a non-empty list of strings"),
        ('[columns.sex]\nkind = "category"\ncategories = ["F", "F"]', "categories must be distinct"),
        (
            '[columns.sex]\nkind = "category"\ncategories = ["F"]\nrange = [0, 1]',
            "unknown key 'range' for kind 'category'",
        ),
        ("title = 1", "must hold one \\[columns.NAME\\] table per column"),
        ("[columns]", "declares no column"),
    ],
)
def test_a_bad_domain_file_gets_one_line(tmp_path, text, match):
    path = tmp_path / "d.domain.toml"
    path.write_text(text)
    with pytest.raises(DataFileError, match=match):
        read_domain(path)


def test_labels_that_cannot_train_a_model_are_refused(tmp_path):
    data, _ = _write_data(tmp_path)
    lira = 'label = "{label}"'
    with pytest.raises(ConfigError, match=r"\[data\] label must be a column of .*clinic.csv.* got 'outcome'"):
        load_config(_config(tmp_path, lira.format(label="outcome")))
    with pytest.raises(ConfigError, match="label 'bmi' must be a category or int column, not float"):
        load_config(_config(tmp_path, lira.format(label="bmi")))
    frame = pd.read_csv(data).assign(diagnosis="sick")
    frame.to_csv(data, index=False)
    with pytest.raises(ConfigError, match=r"label 'diagnosis' has 1 class in .*; a model game needs two or more"):
        load_config(_config(tmp_path, lira.format(label="diagnosis")))


def test_config_errors_of_the_data_table(tmp_path):
    _write_data(tmp_path, n=100)
    path = _config(tmp_path)
    text = path.read_text()
    cases = {
        text.replace('domain = "clinic.domain.toml"', 'domain = "clinic.domain.toml"\nsep = ";"'): "unknown key 'sep'",
        text.replace('domain = "clinic.domain.toml"\n', ""): "path needs domain",
        text.replace(
            'name = "record-model-seeded"', 'name = "record-model-seeded"\ndata = "adult"'
        ): "both name the data set",
        text.replace('path = "clinic.csv"', 'path = "missing.csv"'): "data file .*missing.csv.* does not exist",
        text.replace(
            'path = "clinic.csv"\ndomain = "clinic.domain.toml"', 'name = "texas"'
        ): r"\[data\] data must be one of",
        text.replace(
            'path = "clinic.csv"\ndomain = "clinic.domain.toml"', 'name = "adult"\nlabel = "income"'
        ): "describes your own file",
        text.replace('path = "clinic.csv"', "path = 5"): r"\[data\] path must be a non-empty string, got 5",
        text.replace('name = "adult"', ""): "",
    }
    for body, match in cases.items():
        if not match:
            continue
        path.write_text(body)
        with pytest.raises(ConfigError, match=match):
            load_config(path)
    # a data set smaller than the game's sizes: the sizes are named
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"dataset_size \+ auxiliary_size \+ evaluation_size must be at most the 100"):
        load_config(path)


def test_a_registered_name_in_the_data_table_plays_the_builtin(tmp_path):
    path = _config(tmp_path)
    text = path.read_text().replace('path = "clinic.csv"\ndomain = "clinic.domain.toml"', 'name = "compas"')
    path.write_text(text)
    config = load_config(path)
    assert config.grid[0].game.data == "compas" and config.data_source is None


def test_privgame_domain_drafts_a_domain_and_a_run_on_the_draft_says_so(tmp_path, capsys):
    data, domain = _write_data(tmp_path)
    assert main(["domain", str(data)]) == 0
    text = capsys.readouterr().out
    assert text.startswith(DRAFT_HEADER) and text == draft_text(data)
    drafted = read_domain_text(tmp_path, text)
    assert drafted.columns == ("age", "sex", "bmi", "diagnosis") and drafted.floats == ("bmi",)
    assert drafted == draft_domain(pd.read_csv(data), name=drafted.name)
    domain.write_text(text)
    config = load_config(_config(tmp_path))
    assert config.data_source.draft
    assert main(["run", str(_config(tmp_path)), "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["report", str(tmp_path / "out")]) == 0
    assert "is the draft `privgame domain` read from the data itself" in capsys.readouterr().err
    assert main(["domain", str(tmp_path / "nope.csv")]) == 2
    assert f"data file {str(tmp_path / 'nope.csv')!r} does not exist." in capsys.readouterr().err


def read_domain_text(folder: Path, text: str):
    path = folder / "draft.domain.toml"
    path.write_text(text)
    return read_domain(path, name="clinic")


def test_a_file_source_travels_as_json_and_reads_back_equal(tmp_path):
    _write_data(tmp_path)
    source = load_config(_config(tmp_path)).data_source
    assert FileSource.from_json(source.to_json()) == source
    with pytest.raises(DataFileError, match="not a data file's description"):
        FileSource.from_json({"name": "x"})


def test_parquet_data_files_read_as_their_csv(tmp_path):
    data, domain = _write_data(tmp_path)
    table = read_table(data, read_domain(domain))
    parquet = tmp_path / "clinic.parquet"
    pd.read_csv(data).to_parquet(parquet)
    pd.testing.assert_frame_equal(read_table(parquet, read_domain(domain)), table)


PLUGIN = """
import numpy as np
import pandas as pd

from privgame.data import Dataset, PublicDomain, register_dataset


def coin_rows():
    rng = np.random.default_rng(0)
    return pd.DataFrame({"a": pd.Categorical(rng.choice(["x", "y"], 600), categories=["x", "y"]),
                         "b": rng.integers(0, 10, 600)})


register_dataset(Dataset("test-coins", PublicDomain("test-coins", ("a", "b"), (("a", ("x", "y")),),
                                                    (("b", 0, 9),)), 600, coin_rows))
"""


def test_a_plugin_that_only_registers_a_data_set_works_in_the_workers(tmp_path, monkeypatch):
    (tmp_path / "pg_coins_data.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    path = _config(tmp_path)
    text = path.read_text().replace('path = "clinic.csv"\ndomain = "clinic.domain.toml"', 'name = "test-coins"')
    path.write_text(text.replace("seed = 4", 'seed = 4\nplugins = ["pg_coins_data"]'))
    try:
        config = load_config(path)
        monkeypatch.setattr(runner, "PARENT_PLAYS_WHILE_WORKERS_START", False)
        from joblib.externals.loky import get_reusable_executor

        get_reusable_executor(max_workers=1).shutdown(wait=True, kill_workers=True)
        store = run_experiment(config, tmp_path / "out", n_jobs=2, progress=False)
        assert store.done() == {0, 1} and not store.failures()
    finally:
        sys.modules.pop("pg_coins_data", None)


def test_a_domain_written_from_a_public_domain_reads_back_equal(tmp_path):
    """domain_text and read_domain are inverses, bins included ("integers", repeated edges): Adult's own domain."""
    from privgame.data import public_domain
    from privgame.data.files import domain_text

    adult = public_domain("adult")
    path = tmp_path / "adult.domain.toml"
    path.write_text(domain_text(adult))
    assert read_domain(path, name="adult") == adult


def test_a_drafted_domain_of_categories_with_control_characters_reads_back(tmp_path, capsys):
    """A category holding a NUL, a carriage return, an escape or DEL used to be written raw into the draft, which
    TOML forbids: privgame's own domain file was refused by privgame ("Illegal character '\\x00'")."""
    import tomllib

    from privgame.data.files import _string

    odd = ["x\x00", "\x1b[31m", "del\x7f", 'q"\\', "tab\tnew\nline"]
    data = tmp_path / "odd.csv"
    pd.DataFrame({"c": odd, "n": range(len(odd))}).to_csv(data, index=False)
    assert main(["domain", str(data)]) == 0
    drafted = read_domain_text(tmp_path, capsys.readouterr().out)
    assert dict(drafted.categories)["c"] == tuple(sorted(odd))
    every = "".join(map(chr, range(0x80)))  # a carriage return too, which a CSV cell does not keep
    assert tomllib.loads(f"k = {_string(every)}")["k"] == every


def test_a_run_on_a_user_csv_killed_mid_target_resumes_to_the_same_records(tmp_path):
    """SIGKILL in the middle of the first target, then the same command again: the records equal a clean run's."""
    import signal
    import subprocess
    import time

    plugins = Path(__file__).resolve().parents[1] / "plugins"
    _write_data(tmp_path)
    log, out = tmp_path / "calls.log", tmp_path / "out"
    path = _config(tmp_path)
    text = path.read_text().replace("seed = 4", 'seed = 4\nplugins = ["record_test_mechanisms"]')
    text = text.replace('name = "synthpop"', f'name = "test-copy-table"\nlog = "{log}"\nsleep = 0.05')
    path.write_text(text)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "privgame.engine.cli", "run", str(path), "--out", str(out), "--no-progress"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (log.exists() and len(log.read_text().split()) >= 8):
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert len(log.read_text().split()) < 2 * (4 + 6), "the run finished before it could be killed"
    resumed = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert resumed.returncode == 0, resumed.stderr
    clean = subprocess.run(
        [*cmd[:-3], "--out", str(tmp_path / "clean"), "--no-progress"], env=env, capture_output=True, timeout=300
    )
    assert clean.returncode == 0
    pd.testing.assert_frame_equal(ResultsStore(out).records(), ResultsStore(tmp_path / "clean").records())


PANORAMIA = """
[experiment]
name = "own_panoramia"
seed = 11

[data]
path = "{data}"
domain = "{domain}"
label = "diagnosis"

[game]
name = "panoramia"
train_size = 1200
generator_rows = 500
m = 400
helper_rows = 500
o1_candidates = 400
o1_guesses = 50

[game.generator]
name = "synthpop"

{models}

[attack]
name = "classifier-mia"
signal = "loss"

[attack.classifier]
name = "gradient-boosted-trees"
"""


TORCH_MODELS = """
[game.helper]
name = "mlp"
hidden = [16]
epochs = 5

[mechanism]
name = "mlp"
hidden = [32]
epochs = 10
"""
SKLEARN_MODELS = """
[game.helper]
name = "sklearn"
estimator = "sklearn.ensemble.RandomForestClassifier"
params = {n_estimators = 20, max_depth = "None"}

[mechanism]
name = "sklearn"
estimator = "sklearn.ensemble.RandomForestClassifier"
params = {n_estimators = 30, max_depth = "None"}
"""


@pytest.mark.parametrize("models", [TORCH_MODELS, SKLEARN_MODELS], ids=["mlp", "sklearn-forests"])
def test_panoramia_plays_on_a_user_csv_with_synthpop_as_its_generator(tmp_path, models):
    byo = Path(__file__).resolve().parents[2] / "experiments" / "byo_quick"
    path = tmp_path / "panoramia.toml"
    path.write_text(PANORAMIA.format(data=byo / "medical.csv", domain=byo / "medical.domain.toml", models=models))
    store = run_experiment(load_config(path), tmp_path / "out", progress=False)
    row = store.rows().iloc[0]
    assert row["m"] == 400 and 0.0 <= row["target_member_accuracy"] <= 1.0


def test_a_user_data_run_is_reanalysed_and_resumed_from_its_stored_config(tmp_path, capsys):
    """The stored config keeps [data] (its paths absolute) and [game] as written: reanalyse re-reads it, and the
    same command again resumes the same experiment (nothing to play)."""
    _write_data(tmp_path)
    out = tmp_path / "out"
    assert main(["run", str(_config(tmp_path)), "--out", str(out), "--no-progress"]) == 0
    stored = ResultsStore(out).manifest()["config"]
    assert "data" not in stored["game"] and Path(stored["data"]["path"]).is_absolute()
    assert main(["reanalyse", str(out), "--out", str(tmp_path / "again"), "--confidence", "0.9"]) == 0
    assert main(["run", str(_config(tmp_path)), "--out", str(out), "--no-progress"]) == 0
    assert ResultsStore(out).done() == {0, 1}


def test_a_positive_class_outside_the_label_and_a_folder_for_a_file_are_refused(tmp_path):
    data, _ = _write_data(tmp_path)
    with pytest.raises(ConfigError, match=r"positive must be one of the categories of 'diagnosis', got 'ill'"):
        load_config(_config(tmp_path, 'label = "diagnosis"\npositive = "ill"'))
    with pytest.raises(ConfigError, match=r"positive must be an integer in the range \[18, 99\] of 'age', got 'x'"):
        load_config(_config(tmp_path, 'label = "age"\npositive = "x"'))
    assert load_config(_config(tmp_path, 'label = "diagnosis"\npositive = "sick"')).data_source.positive == "sick"
    data.unlink()
    data.mkdir()
    with pytest.raises(ConfigError, match=r"clinic\.csv' is a directory; give a file\.$"):
        load_config(_config(tmp_path))


def test_a_worker_takes_the_parents_data_set_over_an_older_run_s_under_the_same_name(tmp_path):
    """A reused worker may hold another run's 'clinic' (another folder): the parent checked the name, so the
    worker's entry yields to the run's source (refused outside a worker: the name is taken)."""
    from privgame.data import get_dataset
    from privgame.data.files import register_source

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _write_data(tmp_path / "a", seed=1)
    _write_data(tmp_path / "b", seed=2)
    first = load_config(_config(tmp_path / "a")).data_source
    other = FileSource.from_json({**load_config(_config(tmp_path / "a")).data_source.to_json()})
    assert other == first
    second_path = _config(tmp_path / "b")
    with pytest.raises(ConfigError, match="name 'clinic' is taken by the data set"):
        load_config(second_path)
    _CATALOGUE.pop("clinic")
    second = load_config(second_path).data_source
    _CATALOGUE.pop("clinic")
    register_source(first)
    with pytest.raises(DataFileError, match="is taken"):
        register_source(second)
    register_source(second, authoritative=True)
    assert get_dataset("clinic").rows.sha256 == second.sha256


# -- what a data or domain file must be before it is parsed (issue 33) -------------------------------------------
def _cli(folder: Path, *args: str) -> tuple[int, str]:
    """``privgame *args`` in a child process stopped after 20 s: the exit status and stderr of a command that, if a
    refusal regressed, would read forever (a link to /dev/zero) or for minutes (a million columns)."""
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "privgame.engine.cli", *args], cwd=folder, capture_output=True, text=True, timeout=20
    )
    return done.returncode, done.stderr


def _refused_everywhere(tmp_path, capsys, data: Path, message: str) -> None:
    """``data`` is refused with ``message``, one line and status 2, by ``privgame domain`` and by a run on it."""
    assert main(["domain", str(data)]) == 2
    assert capsys.readouterr().err == f"privgame: error: {message}\n"
    with pytest.raises(DataFileError, match=f"^{re.escape(message)}$"):
        read_table(data, read_domain(tmp_path / "clinic.domain.toml"))
    config = _config(tmp_path).read_text().replace('path = "clinic.csv"', f'path = "{data.name}"')
    (tmp_path / "own.toml").write_text(config)
    assert main(["run", str(tmp_path / "own.toml"), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    assert capsys.readouterr().err == f"privgame: error: {message.replace(str(data), str(data.resolve()))}\n"
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs are POSIX")
def test_a_fifo_as_data_or_domain_file_is_refused_at_once(tmp_path, capsys, no_hang):
    _, domain = _write_data(tmp_path)
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    assert main(["domain", str(fifo)]) == 2
    assert (
        capsys.readouterr().err
        == f"privgame: error: data file {str(fifo)!r} must be a regular file, got a pipe (FIFO).\n"
    )
    domain.unlink()
    os.mkfifo(domain)
    assert main(["run", str(_config(tmp_path)), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    assert capsys.readouterr().err == (
        f"privgame: error: domain file {str(domain)!r} must be a regular file, got a pipe (FIFO).\n"
    )
    assert not (tmp_path / "out").exists()


def test_a_link_to_dev_zero_as_data_or_domain_file_is_refused_at_once(tmp_path):
    _, domain = _write_data(tmp_path)
    (tmp_path / "zero.csv").symlink_to("/dev/zero")
    assert _cli(tmp_path, "domain", "zero.csv") == (
        2,
        "privgame: error: data file 'zero.csv' must be a regular file, got a device or socket.\n",
    )
    domain.unlink()
    domain.symlink_to("/dev/zero")
    _config(tmp_path)
    status, err = _cli(tmp_path, "run", "own.toml", "--out", "out", "--no-progress")
    assert (status, err) == (
        2,
        "privgame: error: domain file '/dev/zero' must be a regular file, got a device or socket.\n",
    )
    assert not (tmp_path / "out").exists()


def test_a_data_set_whose_file_became_a_fifo_is_refused_at_trial_time(tmp_path, no_hang):
    data, _ = _write_data(tmp_path)
    source = load_config(_config(tmp_path)).data_source
    from privgame.data.files import _FileRows

    data.unlink()
    os.mkfifo(data)
    with pytest.raises(DataFileError, match=r"clinic\.csv' must be a regular file, got a pipe \(FIFO\)\.$"):
        _FileRows(source.path, source.domain, source.sha256)()


def test_duplicate_column_names_are_refused_naming_them(tmp_path, capsys):
    _write_data(tmp_path)
    data = tmp_path / "dup.csv"
    # pandas would read the second 'age' as 'age.1', a column the file does not have
    data.write_text("age,sex,age,bmi,diagnosis,sex,sex\n40,F,41,20.0,sick,F,M\n")
    message = f"data file {str(data)!r}: column names must be distinct, got 'age' (2 times), 'sex' (3 times)."
    _refused_everywhere(tmp_path, capsys, data, message)
    parquet = tmp_path / "dup.parquet"
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(
        pa.Table.from_arrays([pa.array([40]), pa.array(["F"]), pa.array([41])], ["age", "sex", "age"]), parquet
    )
    message = f"data file {str(parquet)!r}: column names must be distinct, got 'age' (2 times)."
    _refused_everywhere(tmp_path, capsys, parquet, message)


@pytest.mark.parametrize(
    ("values", "kind"),
    [
        ([[1, 2], [3]], "list<element: int64>"),
        ([{"a": 1}, {"a": 2}], "struct<a: int64>"),
        ([b"\x00\x01", b"\x02"], "binary"),
        (
            __import__("pyarrow").array([[("k", 1)], [("k", 2)]], type=__import__("pyarrow").map_("string", "int64")),
            "map<string, int64 ('bmi')>",
        ),
    ],
)
def test_a_parquet_column_that_is_not_one_value_per_cell_is_refused(tmp_path, capsys, values, kind):
    import pyarrow as pa
    import pyarrow.parquet as pq

    _write_data(tmp_path)
    data = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"age": [40, 41], "bmi": values}), data)
    message = f"data file {str(data)!r}: column 'bmi' must hold one number or text per cell, got {kind}."
    _refused_everywhere(tmp_path, capsys, data, message)


def test_a_csv_wider_than_the_column_limit_is_refused_from_its_header_at_once(tmp_path, capsys, no_hang):
    from privgame.data.files import MAX_COLUMNS

    _write_data(tmp_path)
    data = tmp_path / "wide.csv"
    # a million columns (7 MB): pandas takes minutes and gigabytes on its header alone
    data.write_text(",".join(f"c{i}" for i in range(10**6)) + "\n" + ",".join("1" for _ in range(10**6)) + "\n")
    assert _cli(tmp_path, "domain", "wide.csv") == (
        2,
        f"privgame: error: data file 'wide.csv' must have at most {MAX_COLUMNS:,} columns, got 1,000,000.\n",
    )
    # one past the limit, in domain and in run; a quoted header is counted field by field, up to the limit
    data.write_text(",".join(f"c{i}" for i in range(MAX_COLUMNS + 1)) + "\n" + "1," * MAX_COLUMNS + "1\n")
    message = f"data file {str(data)!r} must have at most {MAX_COLUMNS:,} columns, got {MAX_COLUMNS + 1:,}."
    _refused_everywhere(tmp_path, capsys, data, message)
    data.write_text('"a,b",' + ",".join(f'"c{i}"' for i in range(MAX_COLUMNS)) + "\n")
    with pytest.raises(DataFileError, match=f"at most {MAX_COLUMNS:,} columns, got more than {MAX_COLUMNS:,}\\.$"):
        draft_text(data)
    # the same number of fields with commas inside quotes is within the limit
    data.write_text('"a,b",' + ",".join(f'"c,{i}"' for i in range(MAX_COLUMNS - 1)) + "\n")
    with pytest.raises(DataFileError, match="has a header but no rows"):
        draft_text(data)


def test_a_first_row_wider_than_the_header_is_refused_not_shifted(tmp_path, capsys, no_hang):
    _write_data(tmp_path)
    data = tmp_path / "shifted.csv"
    # pandas would make the extra leading field an index and shift every value one column to the right
    data.write_text("age,sex,bmi,diagnosis\n40,F,20.5,sick,\n41,M,22.0,healthy,\n")
    message = f"data file {str(data)!r}: row 0 has 5 fields, more than the 4 columns of its header."
    _refused_everywhere(tmp_path, capsys, data, message)
    data.write_text("age,sex,bmi,diagnosis\n" + ",".join("1" for _ in range(10**6)) + "\n")  # minutes for pandas
    assert _cli(tmp_path, "domain", "shifted.csv") == (
        2,
        "privgame: error: data file 'shifted.csv': row 0 has 1,000,000 fields, more than the 4 columns of its "
        "header.\n",
    )


def test_files_past_their_size_limit_are_refused_before_they_are_read(tmp_path, capsys, monkeypatch):
    from privgame.data import files

    data, domain = _write_data(tmp_path, n=5)
    monkeypatch.setattr(files, "MAX_DATA_BYTES", data.stat().st_size - 1)
    size = data.stat().st_size
    message = f"data file {str(data)!r} is {size} bytes, larger than the {size - 1} bytes privgame reads for it."
    _refused_everywhere(tmp_path, capsys, data, message)
    monkeypatch.undo()
    domain.write_text(DOMAIN + "#" * files.MAX_DOMAIN_BYTES)
    with pytest.raises(DataFileError, match=r"domain file .* larger than the 1 MiB privgame reads for it\.$"):
        read_domain(domain)


def test_a_domain_past_the_column_limit_or_nested_too_deep_is_refused(tmp_path):
    from privgame.data.files import MAX_COLUMNS

    domain = tmp_path / "d.domain.toml"
    domain.write_text("".join(f'[columns.c{i}]\nkind = "int"\nrange = [0, 1]\n' for i in range(MAX_COLUMNS + 1)))
    with pytest.raises(DataFileError, match=f"must declare at most {MAX_COLUMNS:,} columns, got {MAX_COLUMNS + 1:,}"):
        read_domain(domain)
    domain.write_text("x = " + "[" * 100_000 + "]" * 100_000)
    with pytest.raises(DataFileError, match="must nest its values a few levels deep"):
        read_domain(domain)


def test_the_limits_are_the_ones_docs_datasets_states():
    from privgame.data.files import MAX_COLUMNS, MAX_DATA_BYTES, MAX_DOMAIN_BYTES

    text = " ".join((Path(__file__).parents[2] / "docs" / "datasets.md").read_text().split())
    assert (MAX_DATA_BYTES, MAX_COLUMNS, MAX_DOMAIN_BYTES) == (4 << 30, 10_000, 1 << 20)
    assert "A data file, CSV or Parquet, is at most 4 GiB (`privgame.data.files.MAX_DATA_BYTES`)" in text
    assert "has at most 10,000 columns (`MAX_COLUMNS`;" in text
    assert "a domain file is at most 1 MiB (`MAX_DOMAIN_BYTES`) and declares at most 10,000 columns" in text
