"""The Python API (privgame.run, privgame.load, Results): the same directory as the command, the temporary
directory's life, each reading method, and every error path in one line."""

from __future__ import annotations

import copy
import gc
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import matplotlib.figure
import numpy as np
import pandas as pd
import pytest

import privgame
import privgame.engine.api
from privgame.engine.cli import main
from privgame.engine.config import ConfigError, parse_config
from privgame.engine.report import records_results, summarise_results
from privgame.engine.runner import TrialsFailed
from privgame.engine.store import ResultsStore, StoreError, drop_timings

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = ROOT / "tests" / "plugins"
HEAVY = ("torch", "dp_accounting", "sklearn", "numba", "scipy.stats", "pandas", "matplotlib", "numpy")


def small(**sections: dict[str, Any]) -> dict[str, Any]:
    """A one-run audit of randomized response at two ε, 3 repetitions (about 0.1 s a trial)."""
    config: dict[str, Any] = {
        "experiment": {"name": "small", "seed": 7, "repetitions": 3},
        "game": {"name": "one-run", "m": 2000, "k_pos": 500, "k_neg": 500},
        "mechanism": {"name": "randomized-response", "epsilon": [1.0, 2.0]},
        "attack": {"name": "identity"},
        "analysis": {"confidence": 0.95, "delta": 0.0},
    }
    for name, values in sections.items():
        config.setdefault(name, {}).update(values)
    return config


def _one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    text = str(exc.value)
    assert "\n" not in text and text.endswith("."), text
    return text


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small experiment run once by the command, into a directory the tests only read."""
    out = tmp_path_factory.mktemp("cli") / "small"
    path = out.parent / "small.toml"
    path.write_text(_toml(small()))
    assert main(["run", str(path), "--out", str(out), "--no-progress", "--no-cache"]) == 0
    return out


def _toml(config: dict[str, Any]) -> str:
    from privgame.engine._toml import dumps

    return dumps(config)


# -- start-up ------------------------------------------------------------------------------------------------------


def _imported_after(code: str) -> list[str]:
    script = f"import json, sys\n{code}\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_import_privgame_and_its_names_import_nothing_heavy():
    assert _imported_after("import privgame") == []
    assert _imported_after("import privgame\nprivgame.run, privgame.load, privgame.Results") == []


def test_a_fresh_interpreter_runs_a_dict_config_and_leaves_nothing_behind(tmp_path):
    """The installed package (the venv's, from another folder than the checkout), end to end: the temporary
    directory exists while the results are alive and is gone after a normal exit without close()."""
    code = textwrap.dedent(
        f"""
        import privgame
        r = privgame.run({small()!r}, progress=False)
        print(r.path)
        print(r.summary()[["mechanism.epsilon", "n_trials"]].to_json(orient="records"))
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    path, table = done.stdout.strip().splitlines()
    assert Path(path).name.startswith("privgame-small-")
    assert json.loads(table) == [{"mechanism.epsilon": 1.0, "n_trials": 3}, {"mechanism.epsilon": 2.0, "n_trials": 3}]
    assert not Path(path).exists()
    assert done.stderr == ""  # no progress bar where stderr is not a terminal


# -- run: the same results as the command ----------------------------------------------------------------------


def _same_rows(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a.pipe(drop_timings), b.pipe(drop_timings))


def test_a_dict_config_gives_the_commands_results(finished):
    with privgame.run(small(), progress=False, cache=False) as results:
        assert results.temporary and not results.closed and results.path.is_dir()
        expected, _ = summarise_results(str(finished))
        pd.testing.assert_frame_equal(results.summary(), expected)
        _same_rows(results.trials(), ResultsStore(finished).rows())
        assert results.name == "small" and results.config == small()
        path = results.path
    assert results.closed and not path.exists()


def test_a_file_config_gives_the_commands_results_and_its_bytes(finished, tmp_path):
    path = tmp_path / "small.toml"
    path.write_text("# a comment kept in the copy\n" + _toml(small()))
    results = privgame.run(path, tmp_path / "out", progress=False)
    assert not results.temporary and results.path == (tmp_path / "out").absolute()
    assert (results.path / "config.toml").read_bytes() == path.read_bytes()
    _same_rows(results.trials(), ResultsStore(finished).rows())
    assert privgame.run(str(path), tmp_path / "out", progress=False).summary().equals(results.summary())  # resumed
    results.close()  # a directory you named is kept
    assert results.path.is_dir() and not results.closed


def test_a_dict_configs_copy_is_toml_the_command_resumes(tmp_path, capsys):
    """config.toml of a dict config is a TOML file with the same config: the command resumes the directory
    from it (the same normalised config), with nothing left to run."""
    out = tmp_path / "out"
    explicit = {"threshold": {"rule": "explicit", "at": [0.4, 0.6]}, "two_sided": True}
    config = small(game={"k_pos": 400}, analysis=explicit)
    privgame.run(config, out, progress=False)
    copy_path = out / "config.toml"
    assert copy_path.read_text().startswith("# Written by privgame.run")
    assert main(["run", str(copy_path), "--out", str(out), "--no-progress"]) == 0
    assert "6 trials" in capsys.readouterr().out
    assert len(ResultsStore(out).rows()) == 6


def test_an_experiment_config_with_more_repetitions_adds_them(tmp_path):
    out = tmp_path / "out"
    first = privgame.run(parse_config(small()), out, progress=False).trials()
    more = privgame.run(parse_config(small()), out, repetitions=5, progress=False)
    rows = more.trials()
    assert len(rows) == 10 and more.summary()["n_trials"].tolist() == [5, 5]
    _same_rows(rows[rows["trial"].isin(first["trial"])].reset_index(drop=True), first)  # the first 6 kept


def test_numpy_values_and_tuples_read_as_toml_values_and_the_dict_is_left_alone(tmp_path):
    config = small(mechanism={"epsilon": np.array([1.0, 2.0])}, game={"m": np.int64(2000)})
    config["analysis"].update(threshold={"rule": "explicit", "at": (0.4, 0.6)}, two_sided=True)
    before = copy.deepcopy(config)
    results = privgame.run(config, tmp_path / "a", progress=False)
    plain = small(analysis={"threshold": {"rule": "explicit", "at": [0.4, 0.6]}, "two_sided": True})
    same = privgame.run(plain, tmp_path / "b", progress=False)
    assert results.summary().equals(same.summary())
    assert (tmp_path / "a" / "config.toml").read_text() == (tmp_path / "b" / "config.toml").read_text()
    assert config["game"]["m"] == before["game"]["m"] and config["analysis"] == before["analysis"]


def test_out_holding_another_experiment_is_refused_unless_force(tmp_path):
    out = tmp_path / "out"
    privgame.run(small(), out, progress=False)
    other = small(experiment={"seed": 8})
    with pytest.raises(StoreError) as exc:
        privgame.run(other, out, progress=False)
    assert _one_line(exc) == (
        f"out {str(out)!r} holds results of a different config (experiment.seed: 7 → 8); use force=True to delete "
        "them and start over, or choose another out."
    )
    assert privgame.run(other, out, force=True, progress=False).config["experiment"]["seed"] == 8


def test_fewer_repetitions_than_stored_is_refused_in_this_apis_words(tmp_path):
    out = tmp_path / "out"
    privgame.run(small(), out, repetitions=4, progress=False)
    with pytest.raises(StoreError) as exc:
        privgame.run(small(), out, progress=False)
    assert _one_line(exc) == (
        f"out {str(out)!r} holds this experiment with 4 repetitions per grid point; 3 would drop trials: give "
        "repetitions=4 or more (more adds repetitions)."
    )


def test_the_temporary_directory_goes_with_the_results_object():
    results = privgame.run(small(), progress=False)
    path = results.path
    assert path.is_dir()
    del results
    gc.collect()
    assert not path.exists()


def test_a_failed_run_deletes_its_temporary_directory_and_shows_the_first_failure(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS))
    made: list[Path] = []
    mkdtemp = privgame.engine.api.tempfile.mkdtemp

    def spy(*args: Any, **kwargs: Any) -> str:
        made.append(Path(mkdtemp(*args, **kwargs)))
        return str(made[-1])

    monkeypatch.setattr(privgame.engine.api.tempfile, "mkdtemp", spy)
    config = small(experiment={"plugins": ["faulty_mechanisms"]}, mechanism={"name": "test-faulty", "fail": 0.5})
    try:
        with pytest.raises(TrialsFailed) as exc:
            privgame.run(config, progress=False)
    finally:
        from privgame.engine.registry import MECHANISMS

        sys.modules.pop("faulty_mechanisms", None)
        if "test-faulty" in MECHANISMS:
            MECHANISMS.unregister("test-faulty")
    assert len(made) == 1 and not made[0].exists()
    (note,) = exc.value.__notes__
    assert "temporary directory, now deleted; the first failure, trial" in note and "deliberate failure" in note


def test_progress_defaults_to_a_terminal_or_a_jupyter_kernel(monkeypatch):
    from privgame.engine.api import _progress_default

    class Stream:
        def __init__(self, tty: bool) -> None:
            self.tty = tty

        def isatty(self) -> bool:
            return self.tty

    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    monkeypatch.setattr(sys, "stderr", Stream(True))
    assert _progress_default() is True
    monkeypatch.setattr(sys, "stderr", Stream(False))
    assert _progress_default() is False
    monkeypatch.setitem(sys.modules, "ipykernel", sys)  # any module object: only its presence is asked
    assert _progress_default() is True


# -- load and reading ------------------------------------------------------------------------------------------


def test_load_reads_a_finished_directory(finished):
    results = privgame.load(finished)
    assert not results.temporary and repr(results) == f"<privgame.Results 'small': {finished}>"
    pd.testing.assert_frame_equal(results.summary(), summarise_results(str(finished))[0])
    brief = results.summary(brief=True)
    assert list(brief.columns[:2]) == ["mechanism.epsilon", "epsilon_analytic"]
    assert len(results.trials()) == 6 and {"trial", "grid_point", "epsilon_lb"} <= set(results.trials())
    results.close()
    assert finished.is_dir() and len(results.trials()) == 6


def test_plot_returns_the_figure_report_plot_draws(finished, tmp_path):
    figure = privgame.load(finished).plot()
    assert isinstance(figure, matplotlib.figure.Figure)
    (ax,) = figure.axes
    line = next(line for line in ax.get_lines() if line.get_marker() == "o")
    np.testing.assert_allclose(line.get_ydata(), summarise_results(str(finished))[0]["epsilon_lb_median"])
    figure.savefig(tmp_path / "api.png")
    assert main(["report", str(finished), "--plot", str(tmp_path / "cli.png")]) == 0
    assert (tmp_path / "api.png").read_bytes() == (tmp_path / "cli.png").read_bytes()


def test_plot_into_axes_of_your_own(finished):
    own = matplotlib.figure.Figure()
    left, right = own.subplots(1, 2)
    assert privgame.load(finished).plot(ax=left) is own
    assert left.get_lines() and not right.get_lines() and own.get_suptitle() == ""
    with pytest.raises(TypeError, match=r"^ax must be a matplotlib Axes or None, got str\.$"):
        privgame.load(finished).plot(ax="left")  # type: ignore[arg-type]


def test_a_figure_of_several_panels_refuses_an_axes():
    from privgame.analysis.reporting import figure_roc_curves

    grid = np.array([0.01, 0.1, 1.0])
    panels = {"naive": {"a": (grid, grid)}, "post-processed": {"a": (grid, grid)}}
    assert len(figure_roc_curves(panels).axes) == 2
    with pytest.raises(ValueError) as exc:
        figure_roc_curves(panels, ax=matplotlib.figure.Figure().subplots())
    assert _one_line(exc).startswith("ax must be None for the ROC figure of 2 panels")


def _record_config(game: str = "record") -> dict[str, Any]:
    """A record experiment of two targets on the plugin's table-copying mechanism (a few seconds)."""
    return {
        "experiment": {"name": "records", "seed": 5, "plugins": ["record_test_mechanisms"]},
        "game": {
            "name": game,
            "columns": ["age", "workclass", "education", "sex", "hours_per_week", "income"],
            "dataset_size": 50,
            "auxiliary_size": 400,
            "evaluation_size": 400,
            "rounds": 20,
            "vulnerable_targets": 1,
            "random_targets": 1,
        },
        "mechanism": {"name": "test-copy-table"},
        "attack": {"name": "closest-distance", "n_shadows": 20},
    }


@pytest.fixture
def record_plugin(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS))
    yield
    from privgame.engine.registry import MECHANISMS

    for name in ("test-copy-table", "test-ignore-input"):
        if name in MECHANISMS:
            MECHANISMS.unregister(name)
    sys.modules.pop("record_test_mechanisms", None)
    sys.modules.pop("known_risk_mechanisms", None)


def test_records_and_the_risk_scatter_of_a_record_game(record_plugin, tmp_path):
    results = privgame.run(_record_config(), tmp_path / "r", progress=False, cache_dir=tmp_path / "cache")
    records = results.records()
    pd.testing.assert_frame_equal(records, records_results(str(results.path)))
    assert set(records["game"]) == {"traditional", "model-seeded"} and len(records) == 4
    figure = results.plot()
    assert len(figure.axes) == 1 and figure.legends  # the selection legend beside the panel
    own = matplotlib.figure.Figure()
    ax = own.subplots()
    assert results.plot(ax=ax) is own and ax.get_legend() is not None and not own.legends


def test_plot_of_a_record_game_that_played_one_game_is_one_line(record_plugin, tmp_path):
    results = privgame.run(_record_config("record-model-seeded"), tmp_path / "r", progress=False, cache=False)
    with pytest.raises(ValueError) as exc:
        results.plot()
    assert _one_line(exc).startswith("plot() needs both record games (game 'record'")
    assert "got only 'model-seeded' rows" in str(exc.value)


# -- error paths, each one line ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "error", "start"),
    [
        (42, TypeError, "config must be a path to a TOML file, a dict of config sections or a "),
        (b"x.toml", TypeError, "config must be a path to a TOML file"),
        ("no/such/config.toml", ConfigError, "config file 'no/such/config.toml' does not exist."),
        ("", ConfigError, "the config path is empty"),
        ({**small(), "sweeps": {}}, ConfigError, "unknown section [sweeps]; allowed sections: experiment, "),
        ({"experiment": {"seed": 1}}, ConfigError, "missing section [game]."),
        (small(mechanism={"name": "nope"}), ConfigError, "[mechanism] mechanism name must be one of"),
    ],
)
def test_a_bad_config_is_one_line(config, error, start):
    with pytest.raises(error) as exc:
        privgame.run(config, progress=False)
    assert _one_line(exc).startswith(start)


def test_a_config_path_to_a_directory_is_one_line(tmp_path):
    with pytest.raises(ConfigError) as exc:
        privgame.run(tmp_path)
    assert _one_line(exc) == f"config path {str(tmp_path)!r} is a directory; give a TOML file."


def test_a_self_containing_dict_is_one_line():
    config = small()
    config["game"]["loop"] = config["game"]
    with pytest.raises(ConfigError) as exc:
        privgame.run(config)
    assert _one_line(exc).startswith("tables and lists must be nested at most 32 levels deep")


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"n_jobs": 0}, ValueError, "n_jobs must be a positive integer or -1, got 0 (-1: all cores)."),
        ({"repetitions": 0}, ValueError, "repetitions must be"),
        ({"repetitions": 2.5}, TypeError, "repetitions must be"),
        ({"progress": "yes"}, TypeError, "progress must be True or False, got 'yes'."),
        ({"force": 1}, TypeError, "force must be True or False, got 1."),
        ({"cache": False, "cache_dir": "c"}, ValueError, "cache_dir must be None when cache is False"),
        ({"out": 3}, TypeError, "out must be a path (str or os.PathLike) or None, got 3."),
        ({"out": ""}, ValueError, "out is empty; give a directory."),
    ],
)
def test_a_bad_argument_is_one_line(kwargs, error, message):
    with pytest.raises(error) as exc:
        privgame.run(small(), **kwargs)
    assert _one_line(exc).startswith(message)


def test_a_record_games_repetitions_name_the_keyword(record_plugin):
    with pytest.raises(ConfigError) as exc:
        privgame.run(_record_config(), repetitions=3)
    assert _one_line(exc).startswith("repetitions must be omitted or equal the game's 2 targets")


def test_out_that_is_a_file_is_one_line(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError) as exc:
        privgame.run(small(), tmp_path / "file")
    assert _one_line(exc) == f"out {str(tmp_path / 'file')!r} is a file, not a directory."


def test_load_of_what_is_not_a_results_directory_is_one_line(tmp_path):
    (tmp_path / "file").write_text("x")
    cases = {
        tmp_path / "missing": f"results directory {str(tmp_path / 'missing')!r} does not exist.",
        tmp_path / "file": f"{str(tmp_path / 'file')!r} is not a directory; give a results directory written by",
        tmp_path: f"{str(tmp_path)!r} is not a privgame results directory (no manifest.json).",
    }
    for path, start in cases.items():
        with pytest.raises(StoreError) as exc:
            privgame.load(path)
        assert _one_line(exc).startswith(start)
    with pytest.raises(TypeError, match=r"^path must be a results directory \(str or os.PathLike\), got 3\.$"):
        privgame.load(3)  # type: ignore[arg-type]


def test_load_with_a_plugin_that_cannot_be_imported_is_one_line(finished):
    with pytest.raises(ConfigError) as exc:
        privgame.load(finished, plugins=["no_such_plugin_module"])
    assert _one_line(exc).startswith("plugins: cannot import 'no_such_plugin_module'")
    with pytest.raises(TypeError, match=r"^plugins must be a sequence of module names"):
        privgame.load(finished, plugins="one_module")


def test_records_of_a_game_without_records_is_one_line(finished):
    with pytest.raises(StoreError) as exc:
        privgame.load(finished).records()
    assert _one_line(exc).startswith("records() needs a game that keeps per-record results")
    assert "this experiment's game is 'one-run'" in str(exc.value)


def test_closed_temporary_results_refuse_every_read():
    results = privgame.run(small(experiment={"repetitions": 1}), progress=False)
    results.close()
    results.close()  # again: nothing
    for read in (results.summary, results.records, results.trials, results.plot):
        with pytest.raises(ValueError) as exc:
            read()
        assert _one_line(exc).startswith("these results were closed and their temporary directory")
    assert repr(results).endswith("(temporary, deleted)>")


def test_damaged_trials_are_left_out_with_a_warning(tmp_path):
    results = privgame.run(small(), tmp_path / "out", progress=False)
    (tmp_path / "out" / "raw" / "trial-000001.npz").write_bytes(b"not the arrays")
    with pytest.warns(UserWarning, match=r"^1 damaged trial left out \(trial 1; trial 1: raw/trial-000001.npz"):
        table = results.summary()
    assert table["n_trials"].tolist() == [2, 3]


# -- the config copy as TOML -------------------------------------------------------------------------------------


def test_the_toml_copy_reads_back_as_the_same_table():
    import tomllib

    from privgame.engine._toml import dumps

    table = {
        "experiment": {"name": 'a "quoted" name\\ with\ttabs, \x7f and ε', "seed": 0},
        "game": {"name": "x", "values": [1, -2.5, 1e-05, 1e300, float("inf"), float("-inf")], "flag": True},
        "odd keys": {"a.b": {"inner key": [[1, 2], {"c": "d"}]}, "": "empty", "n": np.float64(0.1)},
    }
    text = dumps(table, header="two\nlines")
    assert text.startswith("# two\n# lines\n")
    back = tomllib.loads(text)
    assert back["experiment"] == table["experiment"] and back["odd keys"] == {**table["odd keys"], "n": 0.1}
    assert back["game"]["values"] == table["game"]["values"]
    assert np.isnan(tomllib.loads(dumps({"s": {"x": float("nan")}}))["s"]["x"])
    with pytest.raises(TypeError, match=r"^s\.x\[1\] must be a TOML value .* got None\.$"):
        dumps({"s": {"x": [1, None]}})


def test_a_config_toml_cannot_hold_gets_a_note_instead():
    from privgame.engine.api import _toml_bytes

    text = _toml_bytes({"experiment": {"name": "x", "seed": 1, "odd": None}}).decode()
    assert text.startswith("# Written by privgame.run from a config given in Python, which TOML cannot hold")
    assert all(line.startswith("#") for line in text.splitlines())


def test_compare_and_differences_put_several_attacks_side_by_side():
    config = {
        "experiment": {"name": "cmp", "seed": 3, "repetitions": 1},
        "game": {"name": "lira", "data": "adult", "pool_size": 200, "n_models": 8, "n_boot": 20},
        "mechanism": {"name": "logistic-regression", "epochs": 2},
        "attack": [{"name": "lira", "online": [True, False]}, {"name": "rmia", "references": 2}],
    }
    with privgame.run(config, progress=False) as results:
        table, only = results.compare(risk=0.75)
        assert table["attack.name"].tolist() == ["lira", "lira", "rmia"]
        assert len(only) == table["only_this"].sum()
        assert {"auc_pooled", "tpr_0.01", "fpr_0.01", "at_risk", "only_this"} <= set(table.columns)
        records, summary = results.differences(0, n_boot=20)
        assert summary["grid_point"].tolist() == [1, 2] and len(records) == 2 * 200
        with pytest.raises(StoreError) as exc:
            results.differences(9)
        assert _one_line(exc).startswith("baseline must be a finished grid point")


# -- figures: every estimator, the ladder, the attacks compared ----------------------------------------------------


def _legend_texts(figure: matplotlib.figure.Figure) -> list[str]:
    legend = figure.legends[0] if figure.legends else figure.axes[0].get_legend()
    return [text.get_text() for text in legend.get_texts()]


def test_plot_names_each_estimator_its_ceiling_the_trials_and_the_confidence(finished):
    figure = privgame.load(finished).plot()
    summary = summarise_results(str(finished))[0]
    assert _legend_texts(figure)[:2] == ["steinke", "steinke: ceiling (every guess right)"]  # the game's own bound
    (ax,) = figure.axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    np.testing.assert_allclose(lines["steinke: ceiling (every guess right)"].get_ydata(), summary["ceiling"])
    title = ax.get_title().splitlines()
    assert title[:2] == ["small", "n = 3 trials per ε, 95 % confidence"]
    assert "confidence" not in title[2]  # the context line does not say it twice


def test_ladder_returns_the_figure_report_ladder_draws(finished, tmp_path):
    figure = privgame.load(finished).ladder()
    # no [analysis] estimators: every ladder estimator on the stored scores
    assert isinstance(figure, matplotlib.figure.Figure) and "one-run (Steinke)" in _legend_texts(figure)
    figure.savefig(tmp_path / "api.png")
    assert main(["report", str(finished), "--ladder", str(tmp_path / "cli.png")]) == 0
    assert (tmp_path / "api.png").read_bytes() == (tmp_path / "cli.png").read_bytes()
    own = matplotlib.figure.Figure()
    assert privgame.load(finished).ladder(ax=own.subplots()) is own


def test_ladder_of_a_multi_run_audit_runs_every_estimator_on_the_scores(tmp_path):
    config = {
        "experiment": {"name": "multi", "seed": 1, "repetitions": 2},
        "game": {"name": "multi-run", "runs": 200, "thresholds": 10},
        "mechanism": {"name": "randomized-response", "epsilon": [1.0, 2.0]},
        "attack": {"name": "identity"},
    }
    results = privgame.run(config, tmp_path / "m", progress=False)
    figure = results.ladder()
    names = _legend_texts(figure)
    assert "multi-run Clopper-Pearson" in names and "analytic ε" in names
    figure.savefig(tmp_path / "api.png")
    assert main(["report", str(results.path), "--ladder", str(tmp_path / "cli.png")]) == 0
    assert (tmp_path / "api.png").read_bytes() == (tmp_path / "cli.png").read_bytes()
    assert _legend_texts(results.plot())[0] == "clopper_pearson"  # the game's own pooled bound


def test_ladder_of_chosen_estimators_over_an_analysis_sweep_refuses_an_axes(tmp_path):
    analysis = {"confidence": [0.9, 0.95], "estimators": ["steinke"]}
    results = privgame.run(small(analysis=analysis), tmp_path / "s", progress=False)
    figure = results.ladder()
    assert len(figure.axes) == 2 and "steinke" in _legend_texts(figure)  # their stored bounds, a panel per confidence
    with pytest.raises(ValueError) as exc:
        results.ladder(ax=matplotlib.figure.Figure().subplots())
    assert _one_line(exc).startswith("ax must be None for the estimator ladder of 2 panels")
    title = results.plot().axes[0].get_title()
    assert "90 %, 95 % confidence" in title


def test_compare_figure_draws_each_attacks_roc_curve_or_its_differences_from_a_baseline(tmp_path):
    config = {
        "experiment": {"name": "cmp", "seed": 3, "repetitions": 1},
        "game": {"name": "lira", "data": "adult", "pool_size": 200, "n_models": 8, "n_boot": 40},
        "mechanism": {"name": "logistic-regression", "epochs": 2},
        "attack": [{"name": "lira", "online": [True, False]}, {"name": "rmia", "references": 2}],
    }
    results = privgame.run(config, tmp_path / "cmp", progress=False, cache=False)
    table, _ = results.compare()
    figure = results.compare_figure()
    (ax,) = figure.axes
    assert ax.get_xscale() == ax.get_yscale() == "log" and ax.get_title() == "lira"
    names = [f"name={row['attack.name']}" for _, row in table.iterrows()]
    names[0] += ", online=True"
    names[1] += ", online=False"
    names[2] += ", references=2"
    expected = [f"{n} (AUC {auc:.3f})" for n, auc in zip(names, table["auc_pooled"], strict=True)]
    assert _legend_texts(figure) == [*expected, "chance (TPR = FPR)"]
    own = matplotlib.figure.Figure()
    assert results.compare_figure(ax=own.subplots()) is own
    differences = results.compare_figure(0, n_boot=40)
    (ax,) = differences.axes
    assert ax.get_title() == "lira" and "grid point 0" in differences.get_suptitle()
    assert len(_legend_texts(differences)) == 2  # the two attacks besides the baseline
    with pytest.raises(StoreError) as exc:
        results.compare_figure(9)
    assert _one_line(exc).startswith("baseline must be a finished grid point")
    with pytest.raises(TypeError, match=r"^baseline must be a grid point's index \(an integer\) or None, got "):
        results.compare_figure("0")  # type: ignore[arg-type]


def test_compare_figure_of_a_record_game_has_a_panel_per_game_and_refuses_an_axes(record_plugin, tmp_path):
    results = privgame.run(_record_config(), tmp_path / "r", progress=False, cache=False)
    figure = results.compare_figure()
    assert [ax.get_title() for ax in figure.axes] == ["traditional", "model-seeded"]
    with pytest.raises(ValueError) as exc:
        results.compare_figure(ax=matplotlib.figure.Figure().subplots())
    assert _one_line(exc).startswith("ax must be None for the ROC figure of 2 panels")


def test_compare_figure_with_no_curve_to_draw_says_so(finished, monkeypatch):
    import privgame.engine.compare as compare

    assert len(privgame.load(finished).compare_figure().axes) == 1  # an audit's canary scores: one panel
    members_only = {"": (np.ones(4), np.ones(4, dtype=bool))}
    monkeypatch.setattr(compare, "_pooled", lambda store, trials: members_only)
    with pytest.raises(ValueError) as exc:
        privgame.load(finished).compare_figure()
    assert _one_line(exc).endswith("holds no grid point with scores of both members and non-members: no ROC curve.")
