"""Reading a results directory runs none of its code: plugins named by a manifest are imported only when asked;
`report --records` carries the records' values."""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privgame.data import load
from privgame.engine.cli import main
from privgame.engine.config import ConfigError, load_config, stored_games
from privgame.engine.registry import GAMES, MECHANISMS
from privgame.engine.report import RecordValuesWarning, _record_values, records_results, summarise_results
from privgame.engine.runner import run_experiment
from privgame.engine.store import ResultsStore, StoreError
from tests.conftest import TINY_MODEL_SEEDED

EXPERIMENTS = Path(__file__).parents[2] / "experiments"

# A plugin that leaves a marker when imported; `{register}` adds the components it registers.
PLUGIN = """
from pathlib import Path
from typing import ClassVar
from dataclasses import dataclass

Path({marker!r}).write_text("imported")
{register}
"""

MECHANISM = """
from privgame.engine.registry import MECHANISMS
from privgame.mechanisms import RandomizedResponse


@dataclass(frozen=True, slots=True)
class PluginRR(RandomizedResponse):
    name: ClassVar[str] = "test-plugin-rr"


MECHANISMS.register(PluginRR)
"""

GAME = """
from privgame.games.one_run import OneRunGame
from privgame.engine.registry import GAMES


@dataclass(frozen=True, slots=True)
class PluginGame(OneRunGame):
    name: ClassVar[str] = "test-plugin-one-run"


GAMES.register(PluginGame)
"""


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """Write a plugin module to ``tmp_path`` (on sys.path); returns (name, marker).  Everything it registered and
    the module itself are removed again at the end."""
    monkeypatch.syspath_prepend(str(tmp_path))
    made: list[str] = []

    def write(name: str, register: str = "") -> tuple[str, Path]:
        marker = tmp_path / f"{name}.imported"
        (tmp_path / f"{name}.py").write_text(PLUGIN.format(marker=str(marker), register=register))
        made.append(name)
        return name, marker

    yield write
    for registry, component in ((MECHANISMS, "test-plugin-rr"), (GAMES, "test-plugin-one-run")):
        if component in registry:
            registry.unregister(component)
    for name in made:
        sys.modules.pop(name, None)


def _forget(name: str, marker: Path) -> None:
    """Undo the import a run did (as if the directory came from another machine)."""
    for registry, component in ((MECHANISMS, "test-plugin-rr"), (GAMES, "test-plugin-one-run")):
        if component in registry:
            registry.unregister(component)
    sys.modules.pop(name, None)
    marker.unlink()


def _run(config: Path, out: Path) -> Path:
    assert main(["run", str(config), "--out", str(out), "--no-progress"]) == 0
    return out


def test_report_imports_no_plugin_unless_trusted(plugin, write_config, tmp_path, capsys):
    name, marker = plugin("pg_test_marker_plugin", MECHANISM)
    config = write_config({"experiment": {"plugins": [name]}, "mechanism": {"name": "test-plugin-rr"}})
    out = _run(config, tmp_path / "out")
    assert marker.exists()  # the run imported the plugin its own config names
    _forget(name, marker)
    capsys.readouterr()

    # the mechanism comes from the plugin, yet the report needs only the (built-in) game
    assert main(["report", str(out), "--format", "csv"]) == 0
    untrusted = capsys.readouterr().out
    assert not marker.exists() and name not in sys.modules and "test-plugin-rr" not in MECHANISMS
    assert list(pd.read_csv(io.StringIO(untrusted))["mechanism.epsilon"]) == [1.0, 2.0]
    assert main(["report", str(out), "--format", "csv", "--ladder", str(tmp_path / "l.png")]) == 0
    assert main(["report", str(out), "--plot", str(tmp_path / "f.png")]) == 0
    assert not marker.exists() and name not in sys.modules
    capsys.readouterr()

    assert main(["report", str(out), "--format", "csv", "--trust-plugins"]) == 0
    assert marker.exists() and name in sys.modules
    assert capsys.readouterr().out == untrusted


def test_report_of_a_directory_naming_an_unknown_plugin(write_config, tmp_path, capsys):
    out = _run(write_config(), tmp_path / "out")
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["config"]["experiment"]["plugins"] = ["pg_no_such_plugin_xyz"]
    manifest_path.write_text(json.dumps(manifest))
    before = set(sys.modules)
    assert main(["report", str(out)]) == 0
    assert not {m for m in set(sys.modules) - before if m.startswith("pg_")}
    capsys.readouterr()
    assert main(["report", str(out), "--trust-plugins"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("privgame: error: ") and err.count("\n") == 1
    assert "cannot import 'pg_no_such_plugin_xyz'" in err and "--trust-plugins" in err


def test_report_names_the_plugins_a_plugin_game_needs(plugin, write_config, tmp_path, capsys):
    name, marker = plugin("pg_test_game_plugin", GAME)
    config = write_config({"experiment": {"plugins": [name]}, "game": {"name": "test-plugin-one-run"}})
    out = _run(config, tmp_path / "out")
    _forget(name, marker)
    capsys.readouterr()

    assert main(["report", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("privgame: error: ")
    for part in ("'test-plugin-one-run'", f"'{name}'", "--trust-plugins", "--plugins MODULE"):
        assert part in err
    assert not marker.exists() and name not in sys.modules

    assert main(["report", str(out), "--format", "csv", "--plugins", name]) == 0
    assert marker.exists()
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(table["n_trials"]) == [3, 3]


def test_report_plugins_that_cannot_be_imported(write_config, tmp_path, capsys):
    out = _run(write_config(), tmp_path / "out")
    capsys.readouterr()
    assert main(["report", str(out), "--plugins", "pg_missing_module_xyz"]) == 2
    assert "--plugins: cannot import 'pg_missing_module_xyz'" in capsys.readouterr().err


def test_report_of_an_unregistered_game_without_plugins(write_config, tmp_path):
    out = _run(write_config(), tmp_path / "out")
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["config"]["game"]["name"] = "no-such-game"
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(StoreError, match=r"manifest\.json: \[game\] game name must be one of .*, got 'no-such-game'"):
        summarise_results(str(out))


def test_report_of_a_manifest_whose_grid_does_not_match(write_config, tmp_path):
    out = _run(write_config(), tmp_path / "out")
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["grid"] = manifest["grid"][:1]
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(StoreError, match=r"grid must list the 2 grid points of its config, got 1"):
        summarise_results(str(out))


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"game": {"k_pos": [100, 500], "k_neg": [200, 300]}, "mechanism": {"epsilon": [1, 2, 4]}},
        {
            "game": {"name": "multi-run", "runs": [4, 6], "thresholds": 3},
            "mechanism": {"name": "gaussian", "sigma": [1, 2]},
        },
        {"mechanism": {"epsilon": [1.0, 2.0]}, "analysis": {"confidence": [0.9, 0.95], "delta": [0.0, 1e-5]}},
    ],
    ids=["mechanism-sweep", "game-and-mechanism-sweeps", "multi-run", "analysis-sweep"],
)
def test_stored_games_equal_the_parsed_config(write_config, overrides):
    drop = ("game.m", "game.k_pos", "game.k_neg", "mechanism.epsilon") if "runs" in overrides.get("game", {}) else ()
    config = load_config(write_config(overrides, drop=drop))
    analyses, games = stored_games(json.loads(json.dumps(config.raw)), list(config.swept))
    assert games == tuple(point.game for point in config.grid)
    assert analyses == tuple(point.analysis for point in config.grid)


@pytest.mark.parametrize("name", ["quickstart.toml", "krco_adult_quick.toml"])
def test_stored_games_of_the_experiments(name):
    config = load_config(EXPERIMENTS / name)
    expected = (tuple(p.analysis for p in config.grid), tuple(p.game for p in config.grid))
    assert stored_games(config.raw, config.swept) == expected


def test_stored_games_errors(write_config):
    raw = dict(load_config(write_config()).raw)
    with pytest.raises(ConfigError, match=r"swept parameter 'mechanism.sigma' has no list of values"):
        stored_games(raw, ["mechanism.sigma"])
    with pytest.raises(ConfigError, match=r"must hold a \[game\] table"):
        stored_games({"experiment": {}}, [])
    with pytest.raises(ConfigError, match=r"\[game\] one-run: "):
        stored_games({**raw, "game": {**raw["game"], "k_pos": -1}}, ["mechanism.epsilon"])


# A game whose summary needs a registration made by a second, side-effect-only plugin (pg_side_registration).
NEEDY_GAME = """
NEEDED: dict = {}


@dataclass(frozen=True, slots=True)
class NeedyGame(OneRunGame):
    name: ClassVar[str] = "test-plugin-one-run"

    def summarise(self, rows, settings, load_outcome):
        NEEDED["registered"]  # what pg_side_registration adds when imported
        return OneRunGame.summarise(self, rows, settings, load_outcome)


GAMES.register(NeedyGame)
"""


def test_report_failing_for_want_of_a_manifest_plugin_names_both_options(plugin, tmp_path, write_config, capsys):
    """The game's plugin is imported with --plugins, but its summary needs what the manifest's other plugin (a
    side-effect-only one) registers: the one line names that plugin, --trust-plugins and --plugins."""
    name, marker = plugin("pg_needy_game", GAME.replace("GAMES.register(PluginGame)", "") + NEEDY_GAME)
    (tmp_path / "pg_side_registration.py").write_text(f"import {name}\n{name}.NEEDED['registered'] = True\n")
    config = write_config(
        {"experiment": {"plugins": [name, "pg_side_registration"]}, "game": {"name": "test-plugin-one-run"}}
    )
    out = _run(config, tmp_path / "out")
    _forget(name, marker)
    sys.modules.pop("pg_side_registration", None)
    capsys.readouterr()
    try:
        assert main(["report", str(out), "--plugins", name]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("privgame: error: ")
        for part in ("'pg_side_registration'", "--trust-plugins", "--plugins MODULE", "KeyError"):
            assert part in err, err
        assert f"'{name}'" not in err.split("names the plugins")[1]  # the one imported is not listed as missing
        assert main(["report", str(out), "--format", "csv", "--trust-plugins"]) == 0
    finally:
        sys.modules.pop("pg_side_registration", None)


# -- report --records: the records' values beside their metrics ----------------------------------------------------
# TINY_MODEL_SEEDED playing both games on two targets: 2 trials, 4 (record, game) rows, in about 2 s.
def population_table(data: str) -> pd.DataFrame:
    """The population as shipped, rows numbered from 0 (Adult: train then test): what record ids index."""
    return load(data, split="all").reset_index(drop=True)


TINY_RECORDS = TINY_MODEL_SEEDED.replace('name = "record-model-seeded"', 'name = "record"').replace(
    "random_targets = 0", "random_targets = 1"
)
VALUE_COLUMNS = ["value.age", "value.sex", "value.race"]  # the config's columns = ["age", "sex", "race"]


@pytest.fixture(scope="module")
def records_run(tmp_path_factory) -> Path:
    """One tiny record run shared by the tests below (each copies it before changing anything)."""
    root = tmp_path_factory.mktemp("records")
    config = root / "tiny.toml"
    config.write_text(TINY_RECORDS)
    run_experiment(load_config(config), root / "out", progress=False)
    return root / "out"


def test_records_carry_the_population_rows_of_their_ids(records_run):
    stored = ResultsStore(records_run).records()
    table = records_results(str(records_run))
    metrics = list(stored.drop(columns=["grid_point"]).columns)
    assert list(table.columns) == metrics + VALUE_COLUMNS  # the metrics unchanged and first, the values after
    pd.testing.assert_frame_equal(table[metrics], stored.drop(columns=["grid_point"]))
    expected = population_table("adult").loc[stored["record"], ["age", "sex", "race"]].reset_index(drop=True)
    pd.testing.assert_frame_equal(table[VALUE_COLUMNS], expected.add_prefix("value."))
    assert isinstance(table["value.sex"].dtype, pd.CategoricalDtype)  # printed as its labels


def test_records_csv_is_one_row_per_record_and_game_and_tables_print_labels(records_run, capsys):
    assert main(["report", str(records_run), "--records", "--format", "csv"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    table = pd.read_csv(io.StringIO(out))
    assert len(table) == 4 and not table.duplicated(["record", "game"]).any()
    assert set(table["game"]) == {"traditional", "model-seeded"} and table["record"].nunique() == 2
    population = population_table("adult")
    for row in table.itertuples(index=False):
        record = population.loc[row.record]
        assert (row[-3], row[-2], row[-1]) == (record["age"], record["sex"], record["race"])
    assert main(["report", str(records_run), "--records", "--format", "markdown"]) == 0
    header, _, *rows = capsys.readouterr().out.splitlines()
    assert header.endswith("| claim_applies | value.age | value.sex | value.race |")
    labels = [row.split(" | ")[-2] for row in rows]
    assert labels == [str(population.loc[r, "sex"]) for r in table["record"]] and set(labels) <= {"Male", "Female"}


def test_value_columns_are_prefixed_so_a_data_column_never_clashes_with_a_metric(records_run, monkeypatch):
    import privgame.engine.report

    def clashing(game, ids):  # a data set whose columns are named like the metrics
        return pd.DataFrame({"record": ids + 1000, "auc": "a label", "game": 7})

    monkeypatch.setattr(privgame.engine.report, "_record_values", clashing)
    stored = ResultsStore(records_run).records().drop(columns=["grid_point"])
    table = records_results(str(records_run))
    assert list(table.columns) == [*stored.columns, "value.record", "value.auc", "value.game"]
    pd.testing.assert_frame_equal(table[list(stored.columns)], stored)
    assert (table["value.record"] == stored["record"] + 1000).all() and (table["value.auc"] == "a label").all()


def test_records_of_a_data_set_this_install_lacks_report_without_values(records_run, tmp_path, capsys):
    out = tmp_path / "stranger"
    shutil.copytree(records_run, out)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["config"]["game"]["data"] = "texas"  # a name this install has no data set for
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.warns(RecordValuesWarning, match=r"values are left out \(.*'texas'.*\)"):
        table = records_results(str(out))
    stored = ResultsStore(records_run).records().drop(columns=["grid_point"])
    pd.testing.assert_frame_equal(table, stored)
    assert main(["report", str(out), "--records", "--format", "csv"]) == 0
    text, err = capsys.readouterr()
    assert err.startswith("privgame: the records' values are left out (") and err.count("\n") == 1
    assert "'texas'" in err and "Traceback" not in err
    assert list(pd.read_csv(io.StringIO(text)).columns) == list(stored.columns)


def test_record_values_of_a_model_game_are_every_column_and_ids_must_be_rows():
    from privgame.games.record import ModelSeededRecordGame

    game = ModelSeededRecordGame(dataset_size=60, auxiliary_size=300, evaluation_size=300, rounds=8)
    population = population_table("adult")
    ids = np.array([5, 0, len(population) - 1])
    values = _record_values(game, ids)
    assert "income" in values.columns  # the label too: a model game trains on every column
    pd.testing.assert_frame_equal(values, population.iloc[ids].reset_index(drop=True))
    with pytest.raises(ValueError, match=r"record ids must be rows of the 'adult' population \(0 to 48841\)"):
        _record_values(game, np.array([0, len(population)]))


def test_grid_points_on_different_columns_leave_the_columns_they_lack_empty():
    from types import SimpleNamespace

    from privgame.engine.report import _values_of

    games = (
        SimpleNamespace(name="record", data="adult", columns=("age", "sex")),
        SimpleNamespace(name="record", data="adult", columns=("age", "race")),
    )
    values = _values_of(games, np.array([0, 1, 0]), np.array([3, 4, 5]))
    population = population_table("adult")
    assert list(values.columns) == ["age", "sex", "race"]
    assert values["age"].tolist() == population["age"].iloc[[3, 4, 5]].tolist()
    assert all(isinstance(v, int | np.integer) for v in values["age"])  # printed 39, not 39.000
    assert values["sex"].iloc[[0, 2]].tolist() == population["sex"].iloc[[3, 5]].tolist()
    assert pd.isna(values["sex"].iloc[1]) and pd.isna(values["race"].iloc[0]) and pd.isna(values["race"].iloc[2])
    assert values["race"].iloc[1] == population["race"].iloc[4]


# -- report --records --sort/--top, --columns ----------------------------------------------------------------------
def _csv(capsys) -> pd.DataFrame:
    captured = capsys.readouterr()
    assert captured.err == ""
    return pd.read_csv(io.StringIO(captured.out))


def test_records_sorted_by_a_column_and_cut_at_top_keep_their_values(records_run, capsys):
    full = records_results(str(records_run))
    assert main(["report", str(records_run), "--records", "--sort", "auc", "--top", "3", "--format", "csv"]) == 0
    table = _csv(capsys)
    expected = full.sort_values("auc", ascending=False, kind="stable").head(3)
    assert table["auc"].tolist() == pytest.approx(expected["auc"].tolist())
    assert table["auc"].is_monotonic_decreasing and len(table) == 3
    assert table[["record", "game"]].values.tolist() == expected[["record", "game"]].values.tolist()
    population = population_table("adult")
    assert table["value.age"].tolist() == population.loc[table["record"], "age"].tolist()  # the values follow
    # --top alone keeps the stored order; more than the table has keeps it whole
    assert main(["report", str(records_run), "--records", "--top", "1", "--format", "csv"]) == 0
    assert _csv(capsys)[["record", "game"]].values.tolist() == full[["record", "game"]].head(1).values.tolist()
    assert main(["report", str(records_run), "--records", "--sort", "rounds", "--top", "99", "--format", "csv"]) == 0
    assert len(_csv(capsys)) == len(full) == 4


def test_columns_select_and_order_in_every_format_with_records_and_the_summary(records_run, capsys):
    argv = ["report", str(records_run), "--records", "--sort", "auc", "--top", "2"]
    assert main([*argv, "--columns", "auc,record", "--columns", " value.sex", "--format", "csv"]) == 0
    table = _csv(capsys)
    assert list(table.columns) == ["auc", "record", "value.sex"] and table["auc"].is_monotonic_decreasing
    assert main([*argv, "--columns", "record,auc", "--format", "markdown"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| record | auc |" and len(lines) == 4
    assert main([*argv, "--columns", "record,auc", "--format", "latex"]) == 0
    assert "record & auc \\\\" in capsys.readouterr().out
    assert main([*argv, "--columns", "game,record"]) == 0
    assert capsys.readouterr().out.split()[:2] == ["game", "record"]
    # the summary: any column --format csv has, the plain table's brief choice set aside
    full, _ = summarise_results(str(records_run))
    assert main(["report", str(records_run), "--columns", "miss_rate_0.6.n,n_records", "--format", "csv"]) == 0
    summary = _csv(capsys)
    assert list(summary.columns) == ["miss_rate_0.6.n", "n_records"]
    assert summary.values.tolist() == full[["miss_rate_0.6.n", "n_records"]].values.tolist()
    assert main(["report", str(records_run), "--columns", "rmsd"]) == 0
    captured = capsys.readouterr()
    assert captured.out.split()[0] == "rmsd" and "more columns" not in captured.err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--records", "--sort", "game"],
            "--sort must name a numeric column, got 'game', which is not numeric; valid: trial, record, "
            "vulnerability, rounds, auc, auc_low, auc_high, ",
        ),
        (["--records", "--sort", "risk"], "--sort must name a numeric column, got 'risk', which is not a column of "),
        (["--records", "--sort", "claim_applies"], "got 'claim_applies', which is not numeric"),  # a boolean
        (["--sort", "auc"], "--sort needs --records (it orders and cuts the per-record rows)."),
        (["--top", "5"], "--top needs --records (it orders and cuts the per-record rows)."),
        (["--records", "--top", "0"], "--top must be a positive integer, got 0."),
        (["--records", "--top", "-2"], "--top must be a positive integer, got -2."),
        (["--records", "--top", "five"], "argument --top: invalid int value: 'five'"),
        (
            ["--records", "--columns", "auc,nope"],
            "--columns must name columns of the table, got 'nope'; valid: trial, record, game, ",
        ),
        (["--columns", "auc"], "--columns must name columns of the table, got 'auc'; valid: epsilon_analytic, "),
        (
            ["--records", "--columns", "auc", "--columns", "auc"],
            "--columns must name each column once, got 'auc' twice.",
        ),
        (["--records", "--columns", "auc,"], "--columns must name columns of the table, got ''; valid: "),
    ],
)
def test_bad_sort_top_and_columns_are_one_line(records_run, capsys, argv, message):
    try:
        status = main(["report", str(records_run), *argv])
    except SystemExit as exc:  # argparse's own refusals exit
        status = exc.code
    assert status == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("privgame: error: ") and captured.out == ""
    assert message in lines[0]


def test_records_sort_top_and_columns_from_python(records_run):
    import privgame

    results = privgame.load(records_run)
    full = results.records()
    riskiest = results.records(sort="auc", top=2, columns=["record", "game", "auc", "value.age"])
    expected = full.sort_values("auc", ascending=False, kind="stable").head(2)[["record", "game", "auc", "value.age"]]
    pd.testing.assert_frame_equal(riskiest, expected.reset_index(drop=True))
    with pytest.raises(ValueError, match=r"^sort must name a numeric column, got 'game', which is not numeric; valid"):
        results.records(sort="game")
    with pytest.raises(ValueError, match=r"^top must be a positive integer, got 0\.$"):
        results.records(top=0)
    with pytest.raises(TypeError, match=r"^top must be a positive integer, got 2\.5\.$"):
        results.records(top=2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^columns must name columns of the table, got 'nope'; valid: trial, "):
        results.records(columns=["nope"])
    with pytest.raises(TypeError, match=r"^columns must be a list of column names, got 'auc'\.$"):
        results.records(columns="auc")


def test_docs_results_names_every_column_a_record_game_reports(records_run):
    """Every column of a record game's summary, per-record table and stored rows is named in docs/results.md (a
    `<game>`, `<t>` or `<column>` placeholder standing for its part)."""
    import re

    text = (Path(__file__).parents[2] / "docs" / "results.md").read_text()

    def documented(column: str) -> bool:
        spellings = {
            column,
            re.sub(r"(traditional|model_seeded)$", "<game>", column),
            re.sub(r"_0\.\d+(?=(\.n)?$)", "_<t>", column),
            re.sub(r"^value\..*", "value.<column>", column),
        }
        return any(f"`{name}`" in text for name in spellings)

    summary, _ = summarise_results(str(records_run))
    records = records_results(str(records_run))
    stored = ResultsStore(records_run).rows()
    for table in (summary, records, stored):
        missing = [c for c in table.columns if not documented(str(c))]
        assert missing == [], missing


def test_top_rows_orders_from_the_largest_nan_last_ties_in_stored_order():
    from privgame.engine.report import select_columns, top_rows

    table = pd.DataFrame({"id": [0, 1, 2, 3, 4], "risk": [0.5, np.nan, 0.9, 0.5, 0.7], "flag": [True] * 5})
    assert top_rows(table, "risk")["id"].tolist() == [2, 4, 0, 3, 1]
    assert top_rows(table, "risk", 2)["id"].tolist() == [2, 4] and top_rows(table, None, 2)["id"].tolist() == [0, 1]
    assert top_rows(table, "risk", 2).index.tolist() == [0, 1]
    with pytest.raises(
        ValueError, match=r"^s must name a numeric column, got 'flag', which is not numeric; valid: id, risk\.$"
    ):
        top_rows(table, "flag", names=("s", "t"))
    with pytest.raises(TypeError, match=r"^sort must be a column name \(a string\), got 3\.$"):
        top_rows(table, 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^top must be a positive integer, got True\.$"):
        top_rows(table, None, True)
    with pytest.raises(ValueError, match=r"^columns must name at least one column; valid: id, risk, flag\.$"):
        select_columns(table, [])


# -- ceilings in the report, and the ladder's order-statistics audit -------------------------------------------
def _ceiling_run(write_config, tmp_path, analysis, name="ceil"):
    """RR at ε = 1 (far below its guesses' ceiling) and ε = 20 (every one of 1000 guesses right: at it)."""
    overrides = {"mechanism": {"epsilon": [1.0, 20.0]}, "experiment": {"repetitions": 3}}
    if analysis:
        overrides["analysis"] = analysis
    return run_experiment(load_config(write_config(overrides, name=name)), tmp_path / name, progress=False).root


def test_report_shows_each_estimators_ceiling_beside_its_median_and_marks_bounds_at_it(write_config, tmp_path):
    from privgame.engine.report import CEILING_MARKER, CEILING_NOTE, brief_summary, ceiling_note

    root = _ceiling_run(write_config, tmp_path, {"estimators": ["steinke", "fdp", "order_stats"]})
    summary, swept = summarise_results(str(root))
    for label in ("steinke", "fdp_pure", "order_stats_pure"):
        assert summary[f"{label}.at_ceiling"].tolist() == [False, True]
        ceiling = summary[f"{label}.ceiling"]
        assert (ceiling > summary[f"{label}.epsilon_lb_median"] * 1.5).iloc[0]  # ε = 1: far below
        assert summary[f"{label}.epsilon_lb_median"].iloc[1] == ceiling.iloc[1]  # 1000 of 1000 right
    table, _ = brief_summary(str(root), summary, swept)
    columns = list(table.columns)
    at = columns.index("steinke.epsilon_lb_median")
    assert columns[at + 1 : at + 3] == ["steinke.ceiling", "steinke.at_ceiling"]
    assert table["steinke.at_ceiling"].tolist() == ["below", CEILING_MARKER]  # never a blank cell
    assert ceiling_note(summary) == ceiling_note(table) == CEILING_NOTE
    assert "docs/estimators.md#ceilings" in CEILING_NOTE and "more canaries or more guesses" in CEILING_NOTE
    assert main(["report", str(root)]) == 0


def test_the_games_own_bound_is_marked_at_its_ceiling_too(write_config, tmp_path, capsys):
    from privgame.analysis.one_run import epsilon_lower_bound

    root = _ceiling_run(write_config, tmp_path, None, name="own")
    summary, _ = summarise_results(str(root))
    assert summary["at_ceiling"].tolist() == [False, True]
    assert summary["ceiling"].tolist() == [epsilon_lower_bound(2000, 1000, 1000, delta=0.0, confidence=0.95)] * 2
    capsys.readouterr()
    assert main(["report", str(root)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert ">=99% of ceiling" in lines[2] and ">=99% of ceiling" not in lines[1]


def test_a_report_of_rows_stored_before_ceilings_has_no_marker(write_config, tmp_path, monkeypatch, capsys):
    from privgame.engine.report import brief_summary, ceiling_note

    root = _ceiling_run(write_config, tmp_path, {"estimators": ["steinke", "fdp"]}, name="old")
    rows = ResultsStore.rows

    def without_ceilings(self):
        stored = rows(self)
        return stored.drop(columns=[c for c in stored.columns if c.endswith(".ceiling")])

    monkeypatch.setattr(ResultsStore, "rows", without_ceilings)
    summary, swept = summarise_results(str(root))
    assert "steinke.epsilon_lb_median" in summary.columns and not any("ceiling" in c for c in summary.columns)
    table, _ = brief_summary(str(root), summary, swept)
    assert not any("ceiling" in c for c in table.columns) and ceiling_note(summary) is None
    assert main(["report", str(root)]) == 0 and main(["report", str(root), "--format", "csv"]) == 0


def test_the_ladder_shows_the_order_statistics_audit_on_independent_canaries(write_config, tmp_path):
    from privgame.analysis.ladder import PRODUCT_MODEL
    from privgame.engine.report import ladder_results

    root = _ceiling_run(write_config, tmp_path, None, name="lad")
    table = ladder_results(str(root))
    assert "note" not in table.columns  # randomized response: each canary its own coin
    shown = table[table["estimator"].isin(PRODUCT_MODEL)]
    assert len(shown) == 2 * len(PRODUCT_MODEL)
    pure = shown[shown["estimator"] == PRODUCT_MODEL[0]]["epsilon"].to_numpy()
    assert 0.0 < pure[0] <= 1.0 < pure[1]


def test_the_ladder_omits_the_order_statistics_audit_where_canaries_interact(write_config, tmp_path, monkeypatch):
    from privgame.analysis.ladder import PRODUCT_MODEL
    from privgame.engine.report import ladder_results
    from privgame.mechanisms.randomized_response import RandomizedResponse

    root = _ceiling_run(write_config, tmp_path, None, name="dep")
    reason = "its canaries share one coin, which couples their outputs"
    monkeypatch.setattr(RandomizedResponse, "canary_dependence", reason)
    table = ladder_results(str(root))
    hidden = table[table["estimator"].isin(PRODUCT_MODEL)]
    assert len(hidden) == 2 * len(PRODUCT_MODEL) and hidden["epsilon"].isna().all()
    assert all(reason in note and "independent channel" in note for note in hidden["note"])
    others = table[~table["estimator"].isin(PRODUCT_MODEL)]
    assert (others["note"] == "").all() and others.loc[others["estimator"] == "one-run (Steinke)", "epsilon"].gt(
        0
    ).all()


def test_a_mechanism_not_registered_here_is_not_taken_to_have_independent_canaries():
    from privgame.engine.report import _canary_dependence

    manifest = {"config": {"mechanism": {"name": "test-nowhere"}}}
    assert "'test-nowhere' is not registered here" in _canary_dependence(manifest, {"params": {}})
    assert _canary_dependence({"config": {"mechanism": {"name": "randomized-response"}}}, {"params": {}}) is None
