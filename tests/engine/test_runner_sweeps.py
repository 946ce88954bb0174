"""Analysis sweeps and added repetitions: what the runner plays once, and what it never renumbers.

A list of ``confidence`` or ``delta`` in ``[analysis]`` makes grid points that analyse the same trials: each is
played once, and each point's rows equal a run of that single setting.  ``--repetitions N`` on a finished
directory adds trials and leaves the stored ones byte-identical; fewer than stored is refused with nothing written.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from privgame.engine.cli import main
from privgame.engine.config import ConfigError, load_config
from privgame.engine.plan import plan_trials, repetition_blocks, trial_index
from privgame.engine.reanalyse import reanalyse
from privgame.engine.report import summarise_results
from privgame.engine.runner import run_experiment
from privgame.engine.store import ResultsStore, StoreError, drop_timings

SWEEP = {"confidence": [0.9, 0.95], "delta": [0.0, 1e-5], "estimators": ["steinke", "fdp"]}
PLAY_COLUMNS = ("sha256_raw", "sha256_records")


def _status(argv: list[str]) -> int:
    """``privgame ARGV``'s exit status (argparse's usage errors exit through SystemExit)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def _digest(root: Path, sub: str) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((root / sub).glob("trial-*"))}


def _comparable(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows without what differs between equal trials of two runs: the trial's number and place, its time."""
    drop = ["trial", "grid_point", "seconds", "analysis.confidence", "analysis.delta"]
    return rows.drop(columns=[c for c in drop if c in rows.columns]).reset_index(drop=True)


def test_an_analysis_sweep_is_the_innermost_axis_and_shares_the_plays(write_config):
    config = load_config(write_config({"analysis": SWEEP}))
    assert config.swept == ("mechanism.epsilon", "analysis.confidence", "analysis.delta")
    assert len(config.grid) == 8 and [p.play for p in config.grid] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [(p.analysis.confidence, p.analysis.delta) for p in config.grid[:4]] == [
        (0.9, 0.0),
        (0.9, 1e-5),
        (0.95, 0.0),
        (0.95, 1e-5),
    ]
    assert all(p.params["analysis.confidence"] == p.analysis.confidence for p in config.grid)
    assert config.grid[0].mechanism is config.grid[3].mechanism
    assert len(config.plays) == 2 and len(config.normalised["grid"]) == 2
    assert config.normalised["analysis"]["confidence"] == [0.9, 0.95]
    seeds = {p.index: [t.seed.spawn_key for t in plan_trials(config) if t.grid_index == p.index] for p in config.grid}
    assert seeds[0] == seeds[3] == [(0, 0), (0, 1), (0, 2)] and seeds[4] == [(1, 0), (1, 1), (1, 2)]


def test_a_config_without_an_analysis_sweep_keeps_its_grid_and_hash(write_config):
    config = load_config(write_config())
    assert [p.play for p in config.grid] == [p.index for p in config.grid]
    assert config.normalised["analysis"] == {"confidence": 0.95, "delta": 0.0}
    assert [t.index for t in plan_trials(config)] == list(range(6))


def test_each_point_of_the_sweep_equals_a_run_of_its_own_setting_and_each_trial_is_played_once(
    write_config, tmp_path, monkeypatch
):
    from privgame.games.one_run import OneRunGame

    plays = []
    original = OneRunGame.play
    monkeypatch.setattr(OneRunGame, "play", lambda self, *a, **k: plays.append(1) or original(self, *a, **k))
    swept = run_experiment(load_config(write_config({"analysis": SWEEP})), tmp_path / "swept", progress=False)
    assert len(plays) == 6  # 2 plays × 3 repetitions, not 8 grid points × 3
    rows = swept.rows()
    for confidence in SWEEP["confidence"]:
        for delta in SWEEP["delta"]:
            single = {"confidence": confidence, "delta": delta, "estimators": SWEEP["estimators"]}
            alone = run_experiment(
                load_config(write_config({"analysis": single}, name="one")),
                tmp_path / f"{confidence}-{delta}",
                progress=False,
            ).rows()
            part = rows[(rows["analysis.confidence"] == confidence) & (rows["analysis.delta"] == delta)]
            pd.testing.assert_frame_equal(_comparable(part), _comparable(alone))
    # the points of a play store the same raw arrays
    assert rows.groupby(["mechanism.epsilon", "repetition"])["sha256_raw"].nunique().eq(1).all()


def test_an_analysis_sweep_resumes_and_reports_one_row_per_point(write_config, tmp_path):
    path = write_config({"analysis": SWEEP})
    store = run_experiment(load_config(path), tmp_path / "r", progress=False)
    first = store.rows().pipe(drop_timings)
    store.discard([1, 2, 13])  # siblings of a played trial whose other points are stored, and another
    run_experiment(load_config(path), tmp_path / "r", progress=False)
    pd.testing.assert_frame_equal(ResultsStore(store.root).rows().pipe(drop_timings), first)
    summary, swept = summarise_results(str(store.root))
    assert swept == ["mechanism.epsilon", "analysis.confidence", "analysis.delta"]
    assert len(summary) == 8 and (summary["n_trials"] == 3).all()
    wider = summary.set_index(["mechanism.epsilon", "analysis.confidence", "analysis.delta"])
    assert (
        wider.xs(0.9, level=1)["steinke.epsilon_lb_median"] > wider.xs(0.95, level=1)["steinke.epsilon_lb_median"]
    ).all()


def test_a_reanalysis_can_sweep_the_stored_trials(write_config, tmp_path):
    single = run_experiment(
        load_config(write_config({"analysis": {"estimators": SWEEP["estimators"]}})), tmp_path / "one", progress=False
    )
    again = reanalyse(
        single.root, tmp_path / "again", {"confidence": [0.9, 0.95], "delta": [0.0, 1e-5]}, progress=False
    )
    direct = run_experiment(load_config(write_config({"analysis": SWEEP}, name="s")), tmp_path / "s", progress=False)
    cut = lambda rows: rows.drop(columns=["seconds", *PLAY_COLUMNS])  # noqa: E731
    pd.testing.assert_frame_equal(cut(again.rows()), cut(direct.rows()))
    # and back: a swept directory reanalysed at one setting equals the single run
    back = reanalyse(direct.root, tmp_path / "back", {"confidence": 0.95, "delta": 0.0}, progress=False)
    pd.testing.assert_frame_equal(cut(back.rows()), cut(single.rows()))


@pytest.mark.parametrize(
    ("analysis", "message"),
    [
        ({"confidence": [0.9, 1.0]}, "confidence must"),
        ({"delta": []}, "delta is an empty list"),
        ({"delta": [1e-5, 1e-5]}, "lists the value 1e-05 twice"),
        ({"estimators": ["steinke"], "threshold": [0.5]}, "threshold cannot be swept"),
    ],
)
def test_bad_sweeps_are_refused_by_reanalyse_before_anything_is_written(write_config, tmp_path, analysis, message):
    store = run_experiment(load_config(write_config()), tmp_path / "r", progress=False)
    with pytest.raises(ConfigError, match=message):
        reanalyse(store.root, tmp_path / "out", analysis, progress=False)
    assert not (tmp_path / "out").exists()


# -- repetitions -----------------------------------------------------------------------------------------------


def test_trial_numbers_of_added_blocks_never_renumber_the_first():
    blocks = (3, 5, 6)
    numbers = [trial_index(g, j, 2, blocks) for g in range(2) for j in range(6)]
    assert sorted(numbers) == list(range(12))
    assert [trial_index(g, j, 2, blocks) for g in range(2) for j in range(3)] == [0, 1, 2, 3, 4, 5]
    assert [trial_index(g, j, 2, blocks) for g in range(2) for j in (3, 4)] == [6, 7, 8, 9]
    assert [trial_index(g, 5, 2, blocks) for g in range(2)] == [10, 11]
    with pytest.raises(ValueError, match="beyond"):
        trial_index(0, 6, 2, blocks)


@pytest.mark.parametrize("analysis", [{}, SWEEP], ids=["plain", "analysis-sweep"])
def test_added_repetitions_leave_the_stored_trials_byte_identical(write_config, tmp_path, analysis, capsys):
    path = write_config({"analysis": analysis})
    store = run_experiment(load_config(path), tmp_path / "r", progress=False)
    before = {sub: _digest(store.root, sub) for sub in ("trials", "raw")}
    old_rows = store.rows()
    run_experiment(load_config(path, repetitions=5), tmp_path / "r", progress=False)
    assert "adding repetitions 3 → 5" in capsys.readouterr().err
    after = {sub: _digest(store.root, sub) for sub in ("trials", "raw")}
    for sub in before:
        assert {k: after[sub][k] for k in before[sub]} == before[sub]
    rows = ResultsStore(store.root).rows()
    pd.testing.assert_frame_equal(rows[rows["trial"] < len(old_rows)].reset_index(drop=True), old_rows)
    manifest = ResultsStore(store.root).manifest()
    assert repetition_blocks(manifest) == (3, 5) and manifest["repetitions_added"][0]["from"] == 3
    # the added trials equal those of a fresh run with 5 repetitions (their seeds do not depend on the count)
    fresh = run_experiment(load_config(path, repetitions=5), tmp_path / "fresh", progress=False).rows()
    key = ["grid_point", "repetition"]
    pd.testing.assert_frame_equal(
        rows.sort_values(key).drop(columns=["trial", "seconds"]).reset_index(drop=True),
        fresh.sort_values(key).drop(columns=["trial", "seconds"]).reset_index(drop=True),
    )
    summary, _ = summarise_results(str(store.root))
    assert (summary["n_trials"] == 5).all()
    again = reanalyse(store.root, tmp_path / "again", {}, progress=False)  # the blocks travel with a reanalysis
    pd.testing.assert_frame_equal(again.rows(), ResultsStore(store.root).rows())
    assert repetition_blocks(again.manifest()) == (3, 5)


def test_fewer_repetitions_than_stored_are_refused_with_nothing_written(write_config, tmp_path, capsys):
    path = write_config()
    out = tmp_path / "r"
    assert main(["run", str(path), "--out", str(out), "--no-progress", "--repetitions", "4"]) == 0
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    digest = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert _status(["run", str(path), "--out", str(out), "--no-progress"]) == 2  # the config's 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds this experiment with 4 repetitions" in err and "--repetitions 4" in err
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == digest
    # the same number resumes; the dry run says what a run would do and changes nothing
    assert main(["run", str(path), "--out", str(out), "--no-progress", "--repetitions", "4"]) == 0
    assert json.loads((out / "manifest.json").read_text())["repetitions"] == 4


def test_dry_run_of_added_repetitions_counts_only_the_new_trials(write_config, tmp_path, capsys):
    path = write_config()
    out = tmp_path / "r"
    assert main(["run", str(path), "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["run", str(path), "--out", str(out), "--dry-run", "--repetitions", "5"]) == 0
    text = capsys.readouterr().out
    assert "trials: 10 (5 per grid point)" in text and "6 done, 4 to run" in text and "refused" not in text
    assert "a run would add repetitions: 3 → 5 per grid point" in text
    assert json.loads((out / "manifest.json").read_text())["repetitions"] == 3


@pytest.mark.parametrize("value", ["0", "-2", "x"])
def test_a_bad_repetitions_option_is_refused(write_config, tmp_path, capsys, value):
    assert _status(["run", str(write_config()), "--out", str(tmp_path / "r"), "--repetitions", value]) == 2
    assert not (tmp_path / "r").exists()
    assert capsys.readouterr().err.count("\n") == 1


def test_a_record_game_refuses_other_repetitions_than_its_targets(tmp_path):
    config = Path(__file__).parents[2] / "experiments" / "krco_adult_quick.toml"
    with pytest.raises(ConfigError, match="equal the game's"):
        load_config(config, repetitions=1000)


def test_a_manifest_with_broken_repetition_blocks_is_named(write_config, tmp_path):
    store = run_experiment(load_config(write_config()), tmp_path / "r", progress=False)
    manifest = json.loads((store.root / "manifest.json").read_text())
    for blocks in ([3, 2], [2], "3", [0, 3], [True]):
        (store.root / "manifest.json").write_text(json.dumps({**manifest, "repetition_blocks": blocks}))
        with pytest.raises(StoreError, match="repetition_blocks"):
            run_experiment(load_config(write_config(), repetitions=5), store.root, progress=False)
        with pytest.raises(StoreError, match="repetition_blocks"):
            reanalyse(store.root, tmp_path / "again", {}, progress=False)
        assert not (tmp_path / "again").exists()


def test_a_grid_too_large_to_build_is_refused_at_once(write_config):
    import time

    many = [0.5 + i * 1e-6 for i in range(400)]
    start = time.perf_counter()
    deltas = [round(i * 1e-6, 6) for i in range(20_000)]
    with pytest.raises(ConfigError, match="make 16,000,000 grid points \\(2 × 400 × 20,000\\)"):
        load_config(write_config({"analysis": {"confidence": many, "delta": deltas}}))
    assert time.perf_counter() - start < 30  # refused before any point is built (parsing the TOML is most of it)
    with pytest.raises(ConfigError, match="more than the 100,000"):
        load_config(
            write_config(
                {"mechanism": {"epsilon": [float(i + 1) for i in range(400)]}, "game": {"m": list(range(1000, 1300))}}
            )
        )


def test_an_analysis_that_fails_at_one_point_fails_only_its_trials(write_config, tmp_path, monkeypatch):
    from privgame.engine.runner import TrialsFailed
    from privgame.games.one_run import OneRunGame

    path = write_config({"analysis": SWEEP})
    original = OneRunGame.analyse

    def fragile(self, outcome, settings, *, seed):
        if settings.confidence == 0.9 and settings.delta == 1e-5:
            raise RuntimeError("estimator broke")
        return original(self, outcome, settings, seed=seed)

    monkeypatch.setattr(OneRunGame, "analyse", fragile)
    with pytest.raises(TrialsFailed) as info:
        run_experiment(load_config(path), tmp_path / "r", progress=False)
    config = load_config(path)
    broken = {
        t.index
        for t in plan_trials(config)
        if config.grid[t.grid_index].params["analysis.delta"] == 1e-5
        and config.grid[t.grid_index].params["analysis.confidence"] == 0.9
    }
    assert set(info.value.failed) == broken and len(broken) == 6
    store = ResultsStore(tmp_path / "r")
    assert set(store.failures()) == broken and len(store.done()) == 18
    monkeypatch.setattr(OneRunGame, "analyse", original)
    run_experiment(load_config(path), tmp_path / "r", progress=False)  # retried: played again for them alone
    fresh = run_experiment(load_config(path), tmp_path / "fresh", progress=False)
    cut = lambda rows: rows.pipe(drop_timings)  # noqa: E731
    pd.testing.assert_frame_equal(cut(ResultsStore(tmp_path / "r").rows()), cut(fresh.rows()))


def test_a_run_killed_while_adding_repetitions_resumes(write_config, tmp_path):
    from privgame.engine.runner import RunInterrupted

    path = write_config()
    store = run_experiment(load_config(path), tmp_path / "r", progress=False)
    before = _digest(store.root, "raw")
    written = []
    original = ResultsStore.write_trial

    def killed(self, trial, *args, **kwargs):
        if written:
            raise KeyboardInterrupt
        written.append(trial)
        return original(self, trial, *args, **kwargs)

    import unittest.mock

    with unittest.mock.patch.object(ResultsStore, "write_trial", killed), pytest.raises(RunInterrupted):
        run_experiment(load_config(path, repetitions=5), tmp_path / "r", progress=False)
    assert json.loads((store.root / "manifest.json").read_text())["repetition_blocks"] == [3, 5]
    assert len(ResultsStore(store.root).done()) == 7
    run_experiment(load_config(path, repetitions=5), tmp_path / "r", progress=False)
    assert len(ResultsStore(store.root).done()) == 10
    assert {k: v for k, v in _digest(store.root, "raw").items() if k in before} == before
    assert len(json.loads((store.root / "manifest.json").read_text())["repetitions_added"]) == 1
