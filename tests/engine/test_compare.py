"""Several attacks on the same targets: ``[[attack]]`` tables in a config (privgame/engine/config.py), the per-record
AUCs of
the lira game, and the side-by-side comparison (privgame/engine/compare.py, ``privgame report --compare``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from privgame.engine.cli import main
from privgame.engine.compare import compare_attacks
from privgame.engine.config import ConfigError, load_config, parse_config, stored_games
from privgame.engine.runner import run_experiment

HEAD = '[experiment]\nname = "cmp"\nseed = 7\nrepetitions = 1\n'
GAME = '[game]\nname = "lira"\ndata = "adult"\npool_size = 300\nn_models = 12\nn_boot = 20\n'
MECHANISM = '[mechanism]\nname = "logistic-regression"\nepochs = 2\n'
ATTACKS = (
    '[[attack]]\nname = "lira"\nonline = [true, false]\n'
    '[[attack]]\nname = "rmia"\nreferences = [2, 4]\n'
    '[[attack]]\nname = "rmia"\nonline = true\n'
)


def _config(tmp_path: Path, attacks: str = ATTACKS, game: str = GAME) -> Path:
    path = tmp_path / "cmp.toml"
    path.write_text(HEAD + game + MECHANISM + attacks)
    return path


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("compare")
    run_experiment(load_config(_config(root)), root / "out", progress=False)
    return root / "out"


def test_attack_tables_make_one_grid_of_every_tables_points(tmp_path):
    config = load_config(_config(tmp_path))
    assert [p.attack.name for p in config.grid] == ["lira", "lira", "rmia", "rmia", "rmia"]
    assert config.attack_points == (2, 2, 1)
    assert config.swept == ("attack.name", "attack.online", "attack.references")
    assert config.grid[0].params == {"attack.name": "lira", "attack.online": True}
    assert config.grid[3].params == {"attack.name": "rmia", "attack.references": 4}
    assert config.grid[4].params == {"attack.name": "rmia", "attack.online": True}
    assert len({p.game for p in config.grid}) == 1  # one game: the same pool and models for every attack


def test_a_single_attack_table_is_unchanged(tmp_path):
    """[attack] as before: no attack.name column, no attack_points, the same hash as a one-entry sweep of old."""
    one = load_config(_config(tmp_path, '[attack]\nname = "rmia"\nreferences = [2, 4]\n'))
    assert one.swept == ("attack.references",) and one.attack_points == ()
    listed = load_config(_config(tmp_path, '[[attack]]\nname = "rmia"\nreferences = [2, 4]\n'))
    assert listed.normalised == one.normalised  # what determines the results is the same
    assert listed.swept == ("attack.name", "attack.references")


def test_game_sweeps_are_outer_inside_each_attack_table(tmp_path):
    game = GAME.replace("n_models = 12", "n_models = [12, 16]")
    config = load_config(_config(tmp_path, game=game))
    order = [
        (p.game.n_models, p.attack.name, p.params.get("attack.online"), p.params.get("attack.references"))
        for p in config.grid
    ]
    assert order[:4] == [
        (12, "lira", True, None),
        (12, "lira", False, None),
        (16, "lira", True, None),
        (16, "lira", False, None),
    ]
    assert config.attack_points == (4, 4, 2)
    _, games = stored_games(config.raw, config.swept, attack_points=list(config.attack_points))
    assert [g.n_models for g in games] == [p.game.n_models for p in config.grid]


@pytest.mark.parametrize(
    ("attacks", "message"),
    [
        ("attack = []\n", "1 to 64 attack tables"),
        ("attack = [1, 2]\n", "entry 1 must be a table"),
        ('[[attack]]\nname = "lira"\n[[attack]]\nname = "nope"\n', "nope"),
        ('[[attack]]\nname = "lira"\n[[attack]]\nonline = true\n', "name is missing"),
        ('[[attack]]\nname = "rmia"\nreferences = [3]\nonline = true\n', "even"),
        ("".join(f'[[attack]]\nname = "rmia"\ngamma = {1 + i}\n' for i in range(65)), "1 to 64"),
    ],
)
def test_bad_attack_tables_are_one_line_with_exit_status_2(attacks, message, tmp_path, capsys):
    path = tmp_path / "bad.toml"
    text = HEAD + GAME + MECHANISM
    # an inline array of non-tables must sit before the tables that follow it in TOML: put it at the top level
    path.write_text(attacks + text if attacks.startswith("attack =") else text + attacks)
    with pytest.raises(ConfigError, match=message):
        load_config(path)
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], lines
    assert not (tmp_path / "out").exists()


def test_the_grid_size_counts_every_tables_points(tmp_path):
    many = '[[attack]]\nname = "rmia"\ngamma = [' + ", ".join(str(1 + i / 1000) for i in range(60_000)) + "]\n"
    with pytest.raises(ConfigError, match="120,000 grid points"):
        parse_config(
            {
                "experiment": {"name": "g", "seed": 1},
                "game": {"name": "lira", "pool_size": 300, "n_models": 12},
                "mechanism": {"name": "logistic-regression"},
                "attack": [{"name": "rmia", "gamma": [1 + i / 1000 for i in range(60_000)]}] * 2,
            }
        )
    assert many  # the same grid as TOML text would be 120,000 points as well


def test_every_attack_plays_the_same_models(compared):
    from privgame.engine.store import ResultsStore

    store = ResultsStore(compared)
    confidences = [store.load_outcome(t).arrays["confidence"] for t in range(5)]
    for other in confidences[1:]:
        np.testing.assert_array_equal(other, confidences[0])
    memberships = {store.load_outcome(t).membership.tobytes() for t in range(5)}
    assert len(memberships) == 1


def test_the_lira_games_record_aucs_are_each_records_auc_over_the_models(compared):
    from privgame.analysis.record_risk import auc
    from privgame.engine.store import ResultsStore

    store = ResultsStore(compared)
    outcome = store.load_outcome(2)
    records = store.records()
    mine = records[records["trial"] == 2].set_index("record")
    m, n = (int(v) for v in outcome.arrays["shape"])
    scores, member = outcome.scores.reshape(m, n), outcome.membership.reshape(m, n)
    for i in (0, 17, n - 1):
        record = int(outcome.arrays["pool"][i])
        assert mine.loc[record, "auc"] == pytest.approx(auc(scores[:, i], member[:, i]), abs=1e-12)
        assert mine.loc[record, "rounds"] == m


def test_record_aucs_leave_out_unscored_pairs_and_mark_a_side_without_scores():
    from privgame.games.lira import record_aucs

    scores = np.array([[3.0, 1.0], [1.0, 2.0], [2.0, 0.0], [0.0, 5.0]])
    member = np.array([[True, True], [True, True], [False, False], [False, False]])
    valid = np.array([[True, False], [True, False], [True, True], [False, True]])
    got = record_aucs(scores, member, valid)
    assert got[0] == pytest.approx(0.5)  # members 3, 1 against non-member 2 (0.75 if the unscored 0 counted)
    assert np.isnan(got[1])  # no scored member


def test_the_comparison_puts_every_attack_side_by_side(compared):
    from privgame.analysis.calibration import pooled_auc
    from privgame.engine.store import ResultsStore

    table, only = compare_attacks(str(compared), risk=0.75)
    assert list(table["attack.name"]) == ["lira", "lira", "rmia", "rmia", "rmia"]
    assert {
        "auc_pooled",
        "tpr_0.001",
        "fpr_0.001",
        "tpr_0.1",
        "fpr_0.1",
        "at_risk",
        "only_this",
        "seconds",
        "seconds_attack",
        "auc_record_mean",
    } <= set(table.columns)
    store = ResultsStore(compared)
    outcome = store.load_outcome(3)
    assert table["auc_pooled"].iloc[3] == pytest.approx(pooled_auc(outcome.scores, outcome.membership))
    assert (table["fpr_0.1"] <= 0.1).all()
    records = store.records()
    for point, row in table.iterrows():
        aucs = records[records["grid_point"] == point]["auc"]
        assert row["at_risk"] == int((aucs >= 0.75).sum())
        assert row["auc_record_mean"] == pytest.approx(aucs.mean())
    # a record found by one attack only is below the risk under every other attack
    assert table["only_this"].sum() == len(only)
    for _, row in only.iterrows():
        others = records[(records["record"] == row["record"]) & (records["grid_point"] != row["grid_point"])]
        assert (others["auc"] < 0.75).all() and row["best_other_auc"] == pytest.approx(others["auc"].max())


def test_report_compare_prints_the_table_and_the_records_found_by_one_attack(compared, tmp_path, capsys):
    out = tmp_path / "compare.csv"
    assert main(["report", str(compared), "--compare", "--risk", "0.75", "--format", "csv", "--output", str(out)]) == 0
    assert "records at risk under one attack only" in capsys.readouterr().err
    header = "grid_point,attack.name,attack.online,attack.references,game,auc_pooled"
    assert out.read_text().splitlines()[0].startswith(header)
    assert main(["report", str(compared), "--compare", "--records", "--risk", "0.75", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith("record,auc,best_other_auc")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--risk", "0.9"], "--risk needs --compare"),
        (["--compare", "--risk", "0.5"], "risk must be in (0.5, 1]"),
        (["--compare", "--risk", "nan"], "risk"),
        (["--compare", "--plot", "x.png"], "--compare draws only with --baseline"),
    ],
)
def test_bad_compare_options_are_one_line_with_exit_status_2(compared, args, message, capsys):
    assert main(["report", str(compared), *args]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], lines


def test_a_manifest_without_its_attack_points_is_refused_in_one_line(compared, tmp_path, capsys):
    """A stranger's (or a damaged) results directory: [[attack]] tables but no attack_points, or wrong ones."""
    for bad in (None, [2, 2], [2, 2, "x"], [2, 2, 2]):
        copy = tmp_path / f"copy{len(str(bad))}"
        shutil.copytree(compared, copy)
        manifest = json.loads((copy / "manifest.json").read_text())
        if bad is None:
            del manifest["attack_points"]
        else:
            manifest["attack_points"] = bad
        (copy / "manifest.json").write_text(json.dumps(manifest))
        assert main(["report", str(copy)]) == 2
        lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        said = "grid must list the 6 grid points" if bad == [2, 2, 2] else "attack_points"
        assert len(lines) == 1 and said in lines[0], (bad, lines)


def test_compare_needs_per_record_results(tmp_path, capsys):
    from privgame.engine.cli import main as cli

    config = tmp_path / "q.toml"
    config.write_text(
        '[experiment]\nname = "q"\nseed = 1\nrepetitions = 2\n'
        '[game]\nname = "one-run"\nm = 100\nk_pos = 50\nk_neg = 50\n'
        '[mechanism]\nname = "randomized-response"\nepsilon = 1.0\n[attack]\nname = "identity"\n'
    )
    assert cli(["run", str(config), "--out", str(tmp_path / "q"), "--no-progress"]) == 0
    capsys.readouterr()
    assert cli(["report", str(tmp_path / "q"), "--compare"]) == 2
    assert "holds no per-record results" in capsys.readouterr().err


def test_record_differences_pair_each_attack_with_the_baseline_on_the_same_models(compared):
    from privgame.analysis.record_risk import auc
    from privgame.engine.compare import record_differences
    from privgame.engine.store import ResultsStore

    records, summary = record_differences(str(compared), 2, n_boot=50)
    assert sorted(records["grid_point"].unique()) == [0, 1, 3, 4]
    store = ResultsStore(compared)
    base, other = store.load_outcome(2), store.load_outcome(3)
    m, n = (int(v) for v in base.arrays["shape"])
    member = base.membership.reshape(m, n)
    mine = records[records["grid_point"] == 3].set_index("record")
    for i in (0, 5, n - 1):
        record = int(base.arrays["pool"][i])
        a, b = other.scores.reshape(m, n)[:, i], base.scores.reshape(m, n)[:, i]
        expected = auc(a, member[:, i]) - auc(b, member[:, i])
        assert mine.loc[record, "difference"] == pytest.approx(expected, abs=1e-12)
        assert mine.loc[record, "low"] <= mine.loc[record, "difference"] <= mine.loc[record, "high"]
    row = summary[summary["grid_point"] == 3].iloc[0]
    assert row["mean_difference"] == pytest.approx(mine["difference"].mean())
    assert row["higher"] == int((mine["low"] > 0).sum()) and row["lower"] == int((mine["high"] < 0).sum())


def test_record_differences_refuse_other_rounds_and_an_unknown_baseline(compared, monkeypatch):
    import dataclasses

    from privgame.engine.compare import record_differences
    from privgame.engine.store import ResultsStore, StoreError

    with pytest.raises(StoreError, match="must be a finished grid point"):
        record_differences(str(compared), 99)
    load = ResultsStore.load_outcome

    def other_rounds(self, trial):  # grid point 3 played other secrets than the baseline's
        outcome = load(self, trial)
        return dataclasses.replace(outcome, membership=~outcome.membership) if trial == 3 else outcome

    monkeypatch.setattr(ResultsStore, "load_outcome", other_rounds)
    with pytest.raises(StoreError, match="did not play the same rounds"):
        record_differences(str(compared), 2, n_boot=20)


def test_report_compare_baseline_prints_the_summary_or_the_records(compared, tmp_path, capsys):
    import io

    import pandas as pd

    assert main(["report", str(compared), "--compare", "--baseline", "2", "--format", "csv"]) == 0
    summary = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert {"mean_difference", "low", "high", "higher", "lower"} <= set(summary.columns) and len(summary) == 4
    assert main(["report", str(compared), "--compare", "--baseline", "2", "--records", "--format", "csv"]) == 0
    records = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(records) == 4 * 300
    figure = tmp_path / "differences.png"
    assert main(["report", str(compared), "--compare", "--baseline", "2", "--plot", str(figure)]) == 0
    assert figure.stat().st_size > 10_000 and "figure written to" in capsys.readouterr().err
    for args, message in (
        (["--baseline", "2"], "--baseline needs --compare"),
        (["--compare", "--baseline", "2", "--risk", "0.9"], "give one"),
        (["--compare", "--baseline", "7"], "must be a finished grid point"),
    ):
        assert main(["report", str(compared), *args]) == 2
        lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert len(lines) == 1 and message in lines[0], lines


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda m: m.update(grid=[]), "grid must list the 5 grid points"),
        (lambda m: m.update(grid="zzz"), "grid must list"),
        (lambda m: m["grid"].__setitem__(2, {"params": 5}), "grid point 2 must give its params as a table"),
    ],
)
def test_a_damaged_manifest_is_refused_in_one_line_by_both_comparisons(compared, tmp_path, capsys, damage, message):
    copy = tmp_path / "damaged"
    shutil.copytree(compared, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    damage(manifest)
    (copy / "manifest.json").write_text(json.dumps(manifest))
    for extra in ([], ["--baseline", "0"]):
        assert main(["report", str(copy), "--compare", *extra]) == 2
        lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert len(lines) == 1 and message in lines[0], lines


def test_a_points_label_names_its_swept_values(compared):
    from privgame.engine.compare import point_label
    from privgame.engine.store import StoreError

    assert point_label(str(compared), 3) == "name=rmia, references=4"
    assert point_label(str(compared), 0) == "name=lira, online=True"
    with pytest.raises(StoreError, match="grid point must be one of 0 to 4"):
        point_label(str(compared), 5)
