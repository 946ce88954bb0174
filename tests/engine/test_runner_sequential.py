"""The runner and report of a sequential audit ([analysis] sequential = true): a grid point whose claim is refuted
stops being played, the numbers do not depend on the workers, a resumed or extended run plays nothing past a stop,
and configs it cannot run on are refused."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
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


def test_an_unmatched_family_is_not_bet_on_and_alone_it_is_refused(write_config, tmp_path):
    """fdp_gaussian on randomized response is an unmatched family: its "bound" exceeds the true ε = 1 in most
    trials. Bet on, it refuted this true claim after two trials; the test bets on Steinke's bound alone."""
    analysis = {"delta": 1e-5, "allow_unmatched_family": True}
    sections = {
        "experiment": {"plugins": ["overclaiming_mechanisms"], "repetitions": 6, "seed": 0},
        "game": {"m": 1000, "k_pos": 100, "k_neg": 100},
        "mechanism": {"name": "test-overclaiming", "epsilon": 1.0, "claim": 1.0},
        "analysis": {"sequential": True, "estimators": ["steinke", "fdp_gaussian"], **analysis},
    }
    _run(write_config(sections), tmp_path / "r")
    table = _summary(tmp_path / "r")
    assert table["fdp_gaussian_unmatched.over_claim"].iloc[0] == 6  # it exceeds the true claim in every trial
    assert table["verdict"].tolist() == ["not refuted"] and table["sequential_trials"].tolist() == [6]
    sections["analysis"] = {"sequential": True, "estimators": ["fdp_gaussian"], **analysis}
    with pytest.raises(ConfigError, match=r"\[analysis\] sequential = true .*fdp_gaussian_unmatched.*not guaranteed"):
        load_config(write_config(sections, name="alone"))


def _overclaiming_at_6(write_config, name: str, sequential: bool) -> Path:
    """Randomized response at ε = 6 claiming 1, 9 repetitions at seed 1: its Steinke bounds are 4.19 (the ceiling
    of its 200 guesses), 3.73, then mostly 4.19: the two trials a sequential audit reads are below the ceiling,
    the nine together at it."""
    return write_config(
        {
            "experiment": {"plugins": ["overclaiming_mechanisms"], "repetitions": 9, "seed": 1},
            "game": {"m": 1000, "k_pos": 100, "k_neg": 100},
            "mechanism": {"name": "test-overclaiming", "epsilon": 6.0, "claim": 1.0},
            "analysis": {"sequential": sequential},
        },
        name=name,
    )


def test_the_ceiling_marker_and_the_ladder_read_the_trials_the_test_read(write_config, tmp_path):
    """A reanalysis with sequential = true of a run of 9 trials stores all 9 but reads 2 (as trials a worker played
    past a stop): the ceiling marker beside the median, and the ladder, are of those 2."""
    from privgame.analysis.ladder import ladder
    from privgame.engine.reanalyse import reanalyse
    from privgame.engine.report import ladder_results
    from privgame.engine.store import ResultsStore

    _run(_overclaiming_at_6(write_config, "fixed", False), tmp_path / "fixed")
    reanalyse(tmp_path / "fixed", tmp_path / "seq", {"sequential": True}, trust_plugins=True, progress=False)
    table = _summary(tmp_path / "seq")
    assert table["sequential_trials"].tolist() == [2]
    median, ceiling = table["epsilon_lb_median"].iloc[0], table["ceiling"].iloc[0]
    assert median < 0.99 * ceiling and not table["at_ceiling"].iloc[0]  # it said at_ceiling, from all 9 trials
    store = ResultsStore(tmp_path / "seq")
    first = [store.load_outcome(t) for t in (0, 1)]
    bounds = [ladder(o.scores[o.membership], o.scores[~o.membership], confidence=0.95, delta=0.0) for o in first]
    rungs = ladder_results(str(tmp_path / "seq"), trust_plugins=True).set_index("estimator")["epsilon"]
    expected = {k: np.array([b[k] for b in bounds], dtype=float) for k in bounds[0]}
    expected = {k: float(np.nanmedian(v)) if np.isfinite(v).any() else np.nan for k, v in expected.items()}
    assert rungs.to_dict() == pytest.approx(expected, nan_ok=True)


def test_a_stopped_run_can_be_reanalysed(write_config, tmp_path):
    """The trials past a stop were never played: a reanalysis reads what was (it said 'not run; finish the run
    first', which no run would do); with sequential = false it is refused, as a fixed-sample verdict on a count the
    data chose has no level."""
    from privgame.engine.reanalyse import reanalyse
    from privgame.engine.store import StoreError

    out = tmp_path / "r"
    _run(_config(write_config, repetitions=6), out)  # claim 1: stops after 2; claim 2: runs its 6
    reanalyse(out, tmp_path / "again", {}, trust_plugins=True, progress=False)
    pd.testing.assert_frame_equal(_summary(tmp_path / "again"), _summary(out))
    reanalyse(out, tmp_path / "c99", {"confidence": 0.99}, trust_plugins=True, progress=False)
    c99 = _summary(tmp_path / "c99")  # two trials above the claim refute it at 99 % too (E ≈ 0.3/α²)
    assert c99["verdict"].tolist() == ["refuted at 99 %", "not refuted"] and c99["sequential_trials"].tolist() == [2, 6]
    with pytest.raises(StoreError, match=r"sequential audit stopped.*sequential = true"):
        reanalyse(out, tmp_path / "fixed", {"sequential": False}, trust_plugins=True, progress=False)
    assert not (tmp_path / "fixed").exists()


def test_a_dry_run_after_a_stop_counts_no_trial_past_it(write_config, tmp_path, capsys):
    path = _config(write_config, repetitions=5)
    _run(path, tmp_path / "r")
    capsys.readouterr()
    assert main(["run", str(path), "--out", str(tmp_path / "r"), "--dry-run"]) == 0
    out = capsys.readouterr()
    text = out.out + out.err
    assert "7 done, 0 to run (3 not needed: the sequential audit refuted their claim)" in text, text
