"""The runner and report of a sequential audit ([analysis] sequential = true): a grid point whose claim is refuted
stops being played, the numbers do not depend on the workers, a resumed or extended run plays nothing past a stop,
and configs it cannot run on are refused."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from privgame.engine.cli import main
from privgame.engine.config import ConfigError, load_config
from privgame.engine.registry import MECHANISMS
from privgame.engine.report import summarise_results
from privgame.engine.runner import run_experiment

PLUGINS = Path(__file__).parents[1] / "plugins"
sys.path.insert(0, str(PLUGINS))  # the overclaiming_mechanisms plugin, for this process and its workers


@pytest.fixture(autouse=True)
def _forget_plugin():
    yield
    sys.modules.pop("overclaiming_mechanisms", None)
    if "test-overclaiming" in MECHANISMS:
        MECHANISMS.unregister("test-overclaiming")


def _config(write_config, repetitions: int = 12, **analysis) -> Path:
    """Randomized response at ε = 2 claiming 1 (false) and 2 (true), audited sequentially."""
    return write_config(
        {
            "experiment": {"plugins": ["overclaiming_mechanisms"], "repetitions": repetitions},
            "game": {"m": 1000, "k_pos": 100, "k_neg": 100},
            "mechanism": {"name": "test-overclaiming", "epsilon": 2.0, "claim": [1.0, 2.0]},
            "analysis": {"sequential": True, **analysis},
        }
    )


def _run(path: Path, out: Path, n_jobs: int = 1, repetitions: int | None = None):
    config = load_config(path, repetitions=repetitions)
    return run_experiment(config, out, config_bytes=path.read_bytes(), n_jobs=n_jobs, progress=False)


def _summary(out: Path) -> pd.DataFrame:
    table, _ = summarise_results(str(out), trust_plugins=True)
    return table


def test_a_refuted_point_stops_and_a_true_claim_runs_its_budget(write_config, tmp_path):
    store = _run(_config(write_config), tmp_path / "r")
    rows = store.rows()
    assert sorted(rows[rows["grid_point"] == 0]["repetition"]) == [0, 1]  # refuted after two, nothing more played
    assert len(rows[rows["grid_point"] == 1]) == 12
    table = _summary(tmp_path / "r")
    assert table["verdict"].tolist() == ["refuted at 95 %", "not refuted"]
    assert table["sequential_trials"].tolist() == [2, 12]
    assert table["n_trials"].tolist() == [2, 12]
    assert (table["sequential_budget"] == 12).all()
    assert table["sequential_e"].iloc[0] >= 20 > table["sequential_e"].iloc[1]


def test_the_report_is_the_same_whatever_the_workers(write_config, tmp_path):
    path = _config(write_config)
    _run(path, tmp_path / "one")
    _run(path, tmp_path / "two", n_jobs=2)
    cols = [c for c in _summary(tmp_path / "one").columns if "seconds" not in c]
    pd.testing.assert_frame_equal(_summary(tmp_path / "one")[cols], _summary(tmp_path / "two")[cols])


def test_a_resumed_or_extended_run_plays_nothing_past_a_stop(write_config, tmp_path):
    path = _config(write_config)
    out = tmp_path / "r"
    _run(path, out, repetitions=1)  # one trial each: nothing refuted yet (one trial's e-value is below 20)
    assert _summary(out)["verdict"].tolist() == ["not refuted", "not refuted"]
    store = _run(path, out)  # extended to 12: the false claim stops at its second repetition
    assert len(store.done()) == 2 + 12
    again = _run(path, out)  # resumed: the stop is read from the stored rows; no trial is played
    assert len(again.done()) == 2 + 12
    assert _summary(out)["verdict"].tolist() == ["refuted at 95 %", "not refuted"]


def test_the_cli_says_how_many_trials_it_played(write_config, tmp_path, capsys):
    path = _config(write_config, repetitions=5)
    assert main(["run", str(path), "--out", str(tmp_path / "r"), "--no-progress"]) == 0
    assert "7 of 10 trials (the sequential audit stopped where it refuted the claim)" in capsys.readouterr().out


def test_a_game_without_per_trial_bounds_is_refused(write_config):
    path = write_config(
        {"game": {"name": "multi-run", "runs": 10}, "analysis": {"sequential": True}},
        drop=("game.m", "game.k_pos", "game.k_neg"),
    )
    with pytest.raises(ConfigError, match=r"\[analysis\] sequential = true needs .*one-run.*multi-run"):
        load_config(path)


def test_sequential_must_be_true_or_false(write_config):
    with pytest.raises(ConfigError, match=r"\[analysis\] sequential must be true or false, got 'yes'"):
        load_config(write_config({"analysis": {"sequential": "yes"}}))
