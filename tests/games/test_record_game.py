"""The record-level games (Krčo et al.): worlds, disjoint pools, known-risk generators, cache, resume, seeding."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privgame.attacks import ClosestDistance, CountingQueries, ExactCopies
from privgame.core.cache import ArtefactCache
from privgame.engine.config import ConfigError, load_config
from privgame.engine.runner import run_experiment
from privgame.engine.store import ResultsStore, drop_timings
from privgame.games._base import AnalysisSettings, TrialContext
from privgame.games.record import ModelSeededRecordGame, RecordGames, TraditionalRecordGame, record_setup

PLUGINS = Path(__file__).parents[1] / "plugins"
sys.path.insert(0, str(PLUGINS))
from known_risk_mechanisms import CopyTable, IgnoreInput  # noqa: E402  (importing registers nothing)


@pytest.fixture(scope="module", autouse=True)
def _plugin_registered():
    """The config plugin registers the test mechanisms; keep them registered for this module only."""
    from privgame.engine.registry import MECHANISMS

    __import__("record_test_mechanisms")
    for cls in (CopyTable, IgnoreInput):
        if cls.name not in MECHANISMS:
            MECHANISMS.register(cls)
    yield
    for cls in (CopyTable, IgnoreInput):
        MECHANISMS.unregister(cls.name)


COLUMNS = ("age", "workclass", "education", "sex", "hours_per_week", "income")
SMALL = {
    "columns": COLUMNS,
    "dataset_size": 50,
    "auxiliary_size": 400,
    "evaluation_size": 400,
    "rounds": 40,
    "vulnerable_targets": 1,
    "random_targets": 1,
}
SEED = np.random.SeedSequence(11, spawn_key=(0, 0))


class Recorder:
    """A mechanism wrapper that remembers every input it was run on (in-process only)."""

    def __init__(self) -> None:
        self.inputs: list[pd.DataFrame] = []


def _inputs_of(game, target_index: int = 0, relation_game: str | None = None):
    """The (ids, label) of every round of each game the trial plays, straight from the game's plan."""
    seed = np.random.SeedSequence(11, spawn_key=(0, target_index))
    setup = game.setup(seed)
    target = int(setup.targets[target_index])
    out = {}
    for g in game.played():
        labels, rounds = game._worlds(g, setup, target, int(seed.entropy))
        plans = list(rounds)
        out[g] = (labels, [ids for ids, _, _ in plans], [ref for _, _, ref in plans])
    return setup, target, out


def test_pools_are_disjoint_and_targets_are_released():
    game = RecordGames(**SMALL)
    setup = game.setup(SEED)
    parts = [set(setup.released), set(setup.auxiliary), set(setup.evaluation)]
    assert [len(p) for p in parts] == [50, 400, 400]
    assert not (parts[0] & parts[1]) and not (parts[0] & parts[2]) and not (parts[1] & parts[2])
    assert set(setup.targets) <= parts[0]
    assert list(setup.selection) == ["achilles", "random"]
    # the same experiment seed gives the same split, whatever the grid point
    other = record_setup(game, np.random.SeedSequence(11, spawn_key=(3, 1)))
    assert np.array_equal(other.released, setup.released) and np.array_equal(other.targets, setup.targets)


@pytest.mark.parametrize("neighbours", ["replace", "add-remove"])
def test_model_seeded_out_world_never_holds_the_target_and_dbar_is_fixed(neighbours):
    game = ModelSeededRecordGame(**SMALL, neighbours=neighbours)
    setup, target, plans = _inputs_of(game)
    labels, inputs, refs = plans["model-seeded"]
    assert labels.sum() == 20 and (~labels).sum() == 20
    dbar = set(setup.released) - {target}
    for b, ids, ref in zip(labels, inputs, refs, strict=True):
        assert len(set(ids)) == len(ids)
        if b:
            assert set(ids) == dbar | {target}
        else:
            assert target not in ids
            if neighbours == "replace":
                assert set(ids) == dbar | {ref} and ref in set(setup.evaluation)
            else:
                assert set(ids) == dbar
        assert list(ids[: len(dbar)]) == list(inputs[0][: len(dbar)])  # D̄ identical (same order) every round


def test_traditional_dbar_is_fresh_and_never_overlaps_the_released_data():
    game = TraditionalRecordGame(**SMALL)
    setup, target, plans = _inputs_of(game)
    labels, inputs, _ = plans["traditional"]
    released, evaluation = set(setup.released), set(setup.evaluation)
    bases = []
    for b, ids in zip(labels, inputs, strict=True):
        base = set(ids[:-1])
        assert len(ids) == 50 and base <= evaluation and not (base & released)
        assert (ids[-1] == target) == bool(b)
        if not b:
            assert ids[-1] in evaluation and ids[-1] not in base
        bases.append(frozenset(base))
    assert len(set(bases)) == len(bases)  # a fresh D̄ every round


def _play(game, mechanism, attack, target_index=0, cache=None):
    seed = np.random.SeedSequence(11, spawn_key=(0, target_index))
    outcome = game.play(mechanism, attack, seed=seed, context=TrialContext(cache=cache))
    return outcome, game.record_rows(outcome, AnalysisSettings(), seed=seed)


def test_a_copying_generator_gives_auc_one_and_an_ignoring_one_auc_one_half():
    game = RecordGames(**SMALL)
    attack = ClosestDistance(n_shadows=20)
    _, rows = _play(game, CopyTable(), attack)
    for row in rows:
        assert row["auc"] == 1.0 and row["auc_low"] <= 1.0 <= row["auc_high"]
        assert row["accuracy"] == 1.0
        assert row["epsilon_lb"] > 0.5  # 20 + 20 rounds all correct: a positive sound bound
    _, rows = _play(game, IgnoreInput(), attack)
    for row in rows:
        assert row["auc_low"] <= 0.5 <= row["auc_high"]
        assert row["epsilon_lb"] == 0.0


def test_counting_queries_on_a_copying_generator_and_trial_row():
    game = RecordGames(**SMALL)
    outcome, rows = _play(game, CopyTable(), CountingQueries(n_shadows=20, n_estimators=20))
    assert {r["game"] for r in rows} == {"traditional", "model-seeded"}
    assert all(r["auc"] > 0.9 for r in rows)
    trial_row = game.analyse_trial(outcome, AnalysisSettings(), seed=np.random.SeedSequence(11, spawn_key=(0, 0)))
    assert trial_row["auc_traditional"] == next(r for r in rows if r["game"] == "traditional")["auc"]


def test_exact_copies_picks_the_rarest_numeric_column():
    game = RecordGames(**SMALL)
    setup = game.setup(SEED)
    knowledge = game.knowledge_for(setup, int(setup.targets[0]), CopyTable(), None)
    assert ExactCopies().choose_column(knowledge) in ("age", "hours_per_week")
    with pytest.raises(ValueError, match="column must be one of the numeric columns"):
        ExactCopies(column="sex").choose_column(knowledge)


def test_two_games_share_the_shadows_through_the_cache(tmp_path):
    cache = ArtefactCache(tmp_path / "cache")
    log = tmp_path / "calls.log"
    attack = ClosestDistance(n_shadows=20)
    common = {**SMALL, "vulnerable_targets": 1, "random_targets": 0}
    _play(TraditionalRecordGame(**common), CopyTable(log=str(log)), attack, cache=cache)
    first = len(log.read_text().split())
    assert first == 20 + 40
    _play(ModelSeededRecordGame(**common), CopyTable(log=str(log)), attack, cache=cache)
    assert len(log.read_text().split()) - first == 40  # its 20 shadows were cached by the other game
    # and everything again is free
    before = len(log.read_text().split())
    _, rows = _play(RecordGames(**common), CopyTable(log=str(log)), attack, cache=cache)
    assert len(log.read_text().split()) == before
    _, fresh = _play(RecordGames(**common), CopyTable(), attack, cache=None)
    assert rows == fresh  # a cached run gives exactly the uncached numbers


def _quick_config(tmp_path: Path, log: Path, sleep: float = 0.0, **game) -> Path:
    text = f"""
[experiment]
name = "record-test"
seed = 5
plugins = ["record_test_mechanisms"]

[game]
name = "record"
columns = {list(COLUMNS)!r}
dataset_size = 50
auxiliary_size = 400
evaluation_size = 400
rounds = {game.get("rounds", 20)}
vulnerable_targets = 1
random_targets = 1

[mechanism]
name = "test-copy-table"
log = "{log}"
sleep = {sleep}

[attack]
name = "closest-distance"
n_shadows = 20
""".replace("'", '"')
    path = tmp_path / "record.toml"
    path.write_text(text)
    return path


def test_n_jobs_one_and_two_give_identical_records(tmp_path):
    config = load_config(_quick_config(tmp_path, tmp_path / "log"))
    assert config.repetitions == 2  # one trial per target
    a = run_experiment(config, tmp_path / "a", n_jobs=1, progress=False)
    b = run_experiment(config, tmp_path / "b", n_jobs=2, progress=False)
    pd.testing.assert_frame_equal(a.records(), b.records())
    ra, rb = a.rows().pipe(drop_timings), b.rows().pipe(drop_timings)
    pd.testing.assert_frame_equal(ra, rb)
    assert (tmp_path / "a" / "records.parquet").exists()


def test_resume_after_sigkill_mid_target_repeats_no_cached_generator_run(tmp_path):
    log, cache_dir, out = tmp_path / "calls.log", tmp_path / "cache", tmp_path / "out"
    path = _quick_config(tmp_path, log, sleep=0.05)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PLUGINS), os.environ.get("PYTHONPATH", "")])}
    cmd = [
        sys.executable,
        "-m",
        "privgame.engine.cli",
        "run",
        str(path),
        "--out",
        str(out),
        "--cache-dir",
        str(cache_dir),
    ]
    proc = subprocess.Popen([*cmd, "--no-progress"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # kill in the middle of the first target's 20 + 2 × 20 runs
        if log.exists() and len(log.read_text().split()) >= 35:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    calls_before = len(log.read_text().split())
    assert calls_before < 60, "the run finished its first target before it could be killed"
    cached = len(list(cache_dir.rglob("*.sha256")))
    assert cached >= calls_before - 1  # at most the run in flight was lost
    log.write_text("")
    store = run_experiment(load_config(path), out, cache=ArtefactCache(cache_dir), progress=False)
    total = 2 * (20 + 2 * 20)
    assert len(log.read_text().split()) == total - cached  # no cached run repeated
    clean = run_experiment(load_config(path), tmp_path / "clean", progress=False)
    pd.testing.assert_frame_equal(store.records(), clean.records())


def test_a_corrupted_cache_entry_is_detected_and_regenerated(tmp_path):
    cache = ArtefactCache(tmp_path / "cache")
    log = tmp_path / "calls.log"
    common = {**SMALL, "vulnerable_targets": 1, "random_targets": 0, "rounds": 4}
    _, rows = _play(ModelSeededRecordGame(**common), CopyTable(log=str(log)), ClosestDistance(n_shadows=4), cache=cache)
    entry = sorted((tmp_path / "cache").glob("v1/frame/*/*.npz"))[0]  # a generator's table (privgame.core.cache)
    entry.write_bytes(entry.read_bytes()[:100])  # truncated
    log.write_text("")
    with pytest.warns(UserWarning, match="corrupted cache entry"):
        _, again = _play(
            ModelSeededRecordGame(**common), CopyTable(log=str(log)), ClosestDistance(n_shadows=4), cache=cache
        )
    assert len(log.read_text().split()) == 1 and again == rows


def test_golden_row_is_pinned_to_its_seed():
    game = RecordGames(**{**SMALL, "rounds": 10})
    outcome, _ = _play(game, CopyTable(), ClosestDistance(n_shadows=6))
    setup = game.setup(SEED)
    assert int(setup.targets[0]) == GOLDEN_TARGET
    assert [round(float(x), 6) for x in outcome.scores[:4]] == GOLDEN_SCORES
    assert [int(x) for x in outcome.membership[:10]] == GOLDEN_LABELS


GOLDEN_TARGET = 35198
GOLDEN_SCORES = [-0.0, -1.287912, -2.015385, -2.0]
GOLDEN_LABELS = [1, 0, 0, 0, 1, 1, 0, 1, 1, 0]


# Trial 1 of each record game (the random target) as stored, recorded from the code on 2026-12-01, with BayNet and
# the closest-distance attack.  A change here means the runner's seed spawning, the population split, the target
# selection or the order of the game's role streams (attack, labels, rounds, analysis) changed: a breaking change
# for every stored result, to be made on purpose and announced, never silently.
GOLDEN_TRADITIONAL = {
    "auc_traditional": 0.62,
    "auc_low_traditional": 0.4445,
    "auc_high_traditional": 0.9754999999999999,
    "accuracy_traditional": 0.6,
    "epsilon_lb_traditional": 0.0,
}
GOLDEN_MODEL_SEEDED = {
    "auc_model_seeded": 0.68,
    "auc_low_model_seeded": 0.3245,
    "auc_high_model_seeded": 0.9464999999999999,
    "accuracy_model_seeded": 0.7,
    "epsilon_lb_model_seeded": 0.0,
}
TRADITIONAL_SCORES = [-0.06779661016949153, -0.01694915254237288, -0.06779661016949153, -0.13559322033898305]
TRADITIONAL_LABELS = [1, 1, 0, 0, 0, 1, 0, 1, 0, 1]
MODEL_SEEDED_SCORES = [-0.2542372881355932, -0.2033898305084746, -0.0, -0.2033898305084746]
MODEL_SEEDED_LABELS = [0, 1, 1, 0, 0, 1, 0, 1, 0, 1]


@pytest.mark.parametrize(
    ("game", "metrics", "scores", "labels"),
    [
        ("record-traditional", GOLDEN_TRADITIONAL, TRADITIONAL_SCORES, TRADITIONAL_LABELS),
        ("record-model-seeded", GOLDEN_MODEL_SEEDED, MODEL_SEEDED_SCORES, MODEL_SEEDED_LABELS),
        ("record", {**GOLDEN_TRADITIONAL, **GOLDEN_MODEL_SEEDED}, TRADITIONAL_SCORES, TRADITIONAL_LABELS),
    ],
)
def test_golden_stored_row_of_each_record_game(stored_trial, game, metrics, scores, labels):
    columns = ["age", "sex", "education", "income"]
    sizes = {"dataset_size": 40, "auxiliary_size": 200, "evaluation_size": 200}
    config = {
        "experiment": {"name": "golden", "seed": 2026},
        "game": {
            "name": game,
            "columns": columns,
            **sizes,
            "rounds": 10,
            "vulnerable_targets": 1,
            "random_targets": 1,
            "n_boot": 50,
        },
        "mechanism": {"name": "baynet", "k": 1},
        "attack": {"name": "closest-distance", "n_shadows": 6},
    }
    row, outcome = stored_trial(config, trial=1)
    assert (row["spawn_key"], row["record"], row["selection"]) == ("0/1", 45912, "random")
    assert row["vulnerability"] == pytest.approx(0.004462597577191052, rel=1e-9)
    assert {k: row[k] for k in metrics} == pytest.approx(metrics, rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(outcome.scores[:4], scores, rtol=1e-12)
    assert outcome.membership[:10].astype(int).tolist() == labels
    if game == "record":  # the model-seeded rounds follow the traditional ones
        np.testing.assert_allclose(outcome.scores[10:14], MODEL_SEEDED_SCORES, rtol=1e-12)
        assert outcome.membership[10:20].astype(int).tolist() == MODEL_SEEDED_LABELS


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"dataset_size": 40_000}, "auxiliary_size must be"),
        ({"dataset_size": 1000, "auxiliary_size": 30_000, "evaluation_size": 30_000}, "at most the 48,842 records"),
        ({"targets": (10**9,)}, "targets must be record ids"),
        ({"targets": (1, 1)}, "distinct"),
        ({"columns": ("age", "no_such")}, "columns must name columns"),
        ({"rounds": 1}, "rounds must be"),
        ({"rounds": 10**12}, "rounds must be"),
        ({"n_boot": 10**12}, "n_boot must be"),
        ({"vulnerable_targets": 0, "random_targets": 0}, "between 1 and dataset_size"),
        ({"data": "wine"}, r"data must be one of adult, compas, digits \(data sets that serve table\), got 'wine'"),
        ({"n_boot": 2}, "n_boot must be"),
        ({"columns": "age"}, "columns must be a list of column names"),
        ({"columns": ()}, "columns must be distinct and at least one"),
        ({"targets": "12"}, "targets must be a list of record ids"),
        ({"targets": ()}, "targets must name at least one record id"),
        ({"targets": (1.5,)}, r"targets\[0\] must be"),
        ({"rounds": float("nan")}, "rounds must be"),
    ],
)
def test_bad_game_parameters_fail_with_one_line(params, match):
    with pytest.raises((ValueError, TypeError), match=match):
        RecordGames(**{**SMALL, **params})


def test_bad_neighbours_and_attack_options():
    with pytest.raises(ValueError, match="neighbours must be one of replace, add-remove"):
        ModelSeededRecordGame(neighbours="swap")
    with pytest.raises(ValueError, match="subsets must be one of all, sampled"):
        CountingQueries(subsets="some")
    with pytest.raises(ValueError, match="numeric_match must be one of ge, eq"):
        CountingQueries(numeric_match="gt")
    with pytest.raises(ValueError, match="n_shadows must be"):
        CountingQueries(n_shadows=1)
    with pytest.raises(ValueError, match="n_shadows must be"):
        ClosestDistance(n_shadows=10**12)


def test_config_errors_before_any_generator_runs(tmp_path):
    log = tmp_path / "log"
    path = _quick_config(tmp_path, log)
    text = path.read_text()
    path.write_text(text.replace("[experiment]", "[experiment]\nrepetitions = 5"))
    with pytest.raises(ConfigError, match="repetitions must be omitted or equal the game's 2 targets"):
        load_config(path)
    path.write_text(text.replace('name = "closest-distance"\nn_shadows = 20', 'name = "identity"'))
    with pytest.raises(ConfigError, match="incompatible components: attack 'identity' scores releases of kind"):
        load_config(path)
    path.write_text(text.replace("rounds = 20", "rounds = 1"))
    with pytest.raises(ConfigError, match="rounds must be"):
        load_config(path)
    assert not log.exists()


def test_one_run_game_refuses_an_attack_that_needs_auxiliary_data():
    from dataclasses import dataclass
    from typing import ClassVar

    from privgame.attacks import Identity
    from privgame.games.one_run import OneRunGame
    from privgame.mechanisms import RandomizedResponse

    @dataclass(frozen=True, slots=True)
    class ShadowIdentity(Identity):
        needs: ClassVar[str] = "auxiliary"

    game = OneRunGame(m=10, k_pos=1, k_neg=1)
    reason = game.incompatibility(RandomizedResponse(epsilon=1.0), ShadowIdentity())
    assert reason is not None and "needs auxiliary knowledge" in reason and "record-level games" in reason
    assert game.incompatibility(RandomizedResponse(epsilon=1.0), Identity()) is None


def test_results_store_reports_records(tmp_path):
    config = load_config(_quick_config(tmp_path, tmp_path / "log"))
    run_experiment(config, tmp_path / "r", progress=False)
    records = ResultsStore(tmp_path / "r").records()
    assert set(records["game"]) == {"traditional", "model-seeded"} and len(records) == 4
    assert {"record", "auc", "auc_low", "auc_high", "accuracy", "epsilon_lb", "tpr_at_fpr_0.01"} <= set(records)


def test_cli_run_report_records_and_plot(tmp_path, capsys):
    from privgame.engine.cli import main

    path = _quick_config(tmp_path, tmp_path / "log")
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--no-progress", "--cache-dir", str(tmp_path / "c")]) == 0
    capsys.readouterr()
    assert main(["report", str(out), "--format", "csv"]) == 0
    summary = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    assert {
        "n_records",
        "rmsd",
        "rmsd_noise",
        "miss_rate_0.6",
        "miss_rate_0.7",
        "miss_rate_0.8",
        "miss_rate_0.9",
    } <= set(summary)
    assert (summary["rmsd_noise"] >= 0).all()
    assert summary["n_records"].tolist() == [2]
    assert main(["report", str(out), "--records", "--format", "csv", "--plot", str(tmp_path / "s.png")]) == 0
    records = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    assert {"record", "game", "auc", "auc_low", "auc_high", "accuracy", "epsilon_lb"} <= set(records)
    assert len(records) == 4 and (tmp_path / "s.png").stat().st_size > 1000
    # each miss rate beside the number of records it rests on: those with model-seeded AUC >= t
    auc = records.pivot(index="record", columns="game", values="auc")
    columns = list(summary.columns)
    for t in (0.6, 0.7, 0.8, 0.9):
        assert columns[columns.index(f"miss_rate_{t:g}") + 1] == f"miss_rate_{t:g}.n"
        high = auc["model-seeded"] >= t
        assert summary[f"miss_rate_{t:g}.n"].tolist() == [int(high.sum())]
        rate = summary[f"miss_rate_{t:g}"].iloc[0]
        if high.any():
            assert rate == pytest.approx((auc["traditional"][high] < t).mean())
        else:
            assert math.isnan(rate)
    for fmt in ("table", "markdown", "latex"):
        assert main(["report", str(out), "--records", "--format", fmt]) == 0
        assert "model-seeded" in capsys.readouterr().out


def test_cli_records_of_a_non_record_game_and_bad_cache_dir(tmp_path, capsys, write_config):
    from privgame.engine.cli import main

    config = write_config()
    out = tmp_path / "one"
    assert main(["run", str(config), "--out", str(out), "--no-progress", "--no-cache"]) == 0
    capsys.readouterr()
    assert main(["report", str(out), "--records"]) == 2
    assert "holds no per-record results" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["run", str(config), "--out", str(tmp_path / "two"), "--cache-dir", str(blocker)]) == 2
    assert "--cache-dir" in (err := capsys.readouterr().err) and "is a file, not a directory" in err
    assert not (tmp_path / "two").exists()  # refused before the results directory is made


def test_the_attack_generator_does_not_reveal_the_game_seed():
    from privgame.games._base import keyed_seed
    from privgame.games.record import _opaque_rng

    seed = keyed_seed(2025, 0xA7, 17)
    rng = _opaque_rng(seed)
    assert np.array_equal(
        rng.integers(2**62, size=5), np.random.default_rng(keyed_seed(2025, 0xA7, 17)).integers(2**62, size=5)
    )
    assert 2025 not in np.atleast_1d(rng.bit_generator.seed_seq.entropy).tolist()

    seen = {}

    class Spy(ClosestDistance):
        def fit(self, knowledge, *, rng):
            seen["entropy"] = rng.bit_generator.seed_seq.entropy
            return super().fit(knowledge, rng=rng)

    _play(ModelSeededRecordGame(**{**SMALL, "rounds": 4}), CopyTable(), Spy(n_shadows=4))
    assert 11 not in np.atleast_1d(seen["entropy"]).tolist()


def test_add_remove_shadows_match_the_game_and_the_pair_refuses_it():
    from privgame.attacks.shadow import shadow_dataset

    game = ModelSeededRecordGame(**SMALL, neighbours="add-remove")
    setup = game.setup(SEED)
    knowledge = game.knowledge_for(setup, int(setup.targets[0]), CopyTable(), None)
    assert knowledge.neighbours == "add-remove"
    sizes = {label: len(data) for data, label, _ in (shadow_dataset(knowledge, i, seed=SEED) for i in range(4))}
    assert sizes == {1: 50, 0: 49}
    with pytest.raises(ValueError, match="neighbours must be 'replace' when both games are played"):
        RecordGames(**SMALL, neighbours="add-remove")


def test_a_split_with_an_empty_side_gives_the_zero_bound():
    from privgame.games.record import _record_bound

    scores, labels = np.array([0.1, 0.9]), np.array([False, True])
    bounds = {_record_bound(scores, labels, 0.95, 0.0, s) for s in range(40)}
    assert bounds == {0.0}  # two rounds: no split leaves both sides to choose and to bound on


def test_attack_table_checks_run_when_the_config_is_read(tmp_path):
    path = _quick_config(tmp_path, tmp_path / "log")
    text = path.read_text()
    path.write_text(text.replace('name = "closest-distance"\nn_shadows = 20', 'name = "exact-copies"\ncolumn = "sex"'))
    with pytest.raises(ConfigError, match="column must be one of the numeric columns"):
        load_config(path)


def test_summary_has_a_family_wise_bound_and_stale_progress_is_cleared(tmp_path):
    config = load_config(_quick_config(tmp_path, tmp_path / "log", rounds=60))
    out = tmp_path / "r"
    run_experiment(config, out, progress=False)
    (out / "progress" / "trial-000001.json").write_text('{"done": 99}')  # as a killed run leaves it
    run_experiment(config, out, progress=False)  # resuming: nothing to play
    assert not list((out / "progress").glob("*.json"))
    from privgame.engine.report import summarise_results

    summary, _ = summarise_results(str(out))
    assert {"epsilon_lb_traditional", "epsilon_lb_model_seeded"} <= set(summary)
    # a copying generator: every round right, so even at β/M (M = 2 records) the bound is positive
    assert summary["epsilon_lb_model_seeded"].iloc[0] > 0.5


def _synthetic_record_outcome(record: int, rounds: int, signal: float, rng: np.random.Generator):
    """A record-game outcome of ``rounds`` rounds per game with Gaussian scores shifted by ``signal`` when IN."""
    from privgame.games._base import TrialOutcome
    from privgame.games.record import SELECTIONS

    labels = np.concatenate([rng.permutation(np.arange(rounds) < rounds // 2) for _ in range(2)])
    scores = rng.standard_normal(2 * rounds) + signal * labels
    return TrialOutcome(
        scores=scores,
        membership=labels,
        arrays={
            "game": np.repeat(np.arange(2, dtype=np.int8), rounds),
            "reference": np.zeros(2 * rounds, dtype=np.int64),
            "guess": scores >= signal / 2,
            "record": np.array([record], dtype=np.int64),
            "selection": np.array([SELECTIONS.index("random")], dtype=np.int8),
            "vulnerability": np.array([0.0]),
            "claim_applies": np.array([True, True]),
        },
    )


def test_the_summary_bound_is_the_largest_per_record_bound_at_beta_over_m():
    """The summary's ε_lb (each record's bound at β/M, the largest) uses each record's own split, so it never
    exceeds the largest per-record bound (at β): they used different random splits before, and a summary of 1.63
    stood beside a per-record maximum of 1.41."""
    from privgame.games.record import GAMES_PLAYED, _record_bound, _split_seed

    game = RecordGames(**{**SMALL, "rounds": 200, "n_boot": 40})
    settings = AnalysisSettings(confidence=0.95, delta=0.0)
    rng = np.random.default_rng(2026)
    for experiment in range(12):
        outcomes = [_synthetic_record_outcome(100 * experiment + r, 200, 2.0, rng) for r in range(4)]
        rows, records = [], []
        for trial, outcome in enumerate(outcomes):
            metrics, per_record = game.analyse(outcome, settings, seed=np.random.SeedSequence(7, spawn_key=(trial,)))
            rows.append({**metrics, "trial": trial, "epsilon_analytic": float("nan")})
            records.extend(per_record)
        summary = game.summarise(pd.DataFrame(rows), settings, outcomes.__getitem__)
        for code, name in enumerate(GAMES_PLAYED):
            suffix = name.replace("-", "_")
            per_record = [r["epsilon_lb"] for r in records if r["game"] == name]
            assert summary[f"epsilon_lb_{suffix}"] <= max(per_record)
            # and it is exactly the largest per-record bound at β/M, on the same splits
            beta_m = 0.05 / len(outcomes)
            again = []
            for o in outcomes:
                part = o.arrays["game"] == code
                seed = _split_seed(int(o.arrays["record"][0]), code)
                again.append(_record_bound(o.scores[part], o.membership[part], 1 - beta_m, 0.0, seed))
            assert summary[f"epsilon_lb_{suffix}"] == max(again)


# -- the runs as tasks (privgame.engine.tasks) -------------------------------------------------------------------
@pytest.mark.parametrize(
    "game_class, attack",
    [
        (RecordGames, ClosestDistance(n_shadows=20)),
        (TraditionalRecordGame, CountingQueries(n_shadows=20, n_estimators=10)),
        (ModelSeededRecordGame, ExactCopies(n_shadows=20)),
    ],
)
def test_runs_made_apart_in_any_pieces_are_every_run_play_makes(tmp_path, game_class, attack):
    log = tmp_path / "calls.log"
    game = game_class(**{**SMALL, "vulnerable_targets": 1, "random_targets": 0})
    mechanism = CopyTable(log=str(log))
    total = game.separate_runs(mechanism, attack)
    assert total == 20 + 40 * len(game.played()) == game.mechanism_runs(attack)
    cache = ArtefactCache(tmp_path / "cache")
    for runs in (range(0, 7), range(7, 30), range(30, total)):  # pieces across the shadows and the games' rounds
        game.make_runs(mechanism, attack, seed=SEED, runs=runs, context=TrialContext(cache=cache))
    assert len(log.read_text().split()) == total
    _, rows = _play(game, CopyTable(log=str(log)), attack, cache=cache)
    assert len(log.read_text().split()) == total  # the trial made none again: every run it needs was made apart
    _, fresh = _play(game, CopyTable(), attack, cache=None)
    assert rows == fresh


def test_separate_runs_leave_out_shadows_of_a_model_and_of_an_attack_that_builds_its_own():
    from privgame.attacks.lira import LiRA
    from privgame.mechanisms.training import LogisticRegressionClassifier

    game = RecordGames(**SMALL)
    assert game.separate_runs(LogisticRegressionClassifier(), ClosestDistance(n_shadows=20)) == 80  # rounds only
    assert game.separate_runs(CopyTable(), LiRA(n_shadows=16)) == 80  # LiRA's shadows are its own models
    with pytest.raises(ValueError, match=r"runs must be a non-empty range of run indices in \[0, 100\)"):
        game.make_runs(
            CopyTable(), ClosestDistance(n_shadows=20), seed=SEED, runs=range(90, 101), context=TrialContext()
        )


def test_a_record_game_s_runs_are_tasks_on_the_workers_with_the_records_of_one_process(tmp_path, monkeypatch):
    from privgame.engine import runner, tasks

    monkeypatch.setattr(runner, "PARENT_PLAYS_WHILE_WORKERS_START", False)
    ended: list[tasks.RunsTask] = []
    original = tasks.WorkQueue.finished
    monkeypatch.setattr(tasks.WorkQueue, "finished", lambda self, t, s: (ended.append(t), original(self, t, s))[1])
    config = load_config(_quick_config(tmp_path, tmp_path / "log"))
    alone = run_experiment(config, tmp_path / "alone", n_jobs=1, progress=False)
    # three workers for two targets: both are split (two or more workers would each take a target whole)
    spread = run_experiment(config, tmp_path / "spread", n_jobs=3, progress=False, cache=ArtefactCache(tmp_path / "c"))
    assert sorted((t.job, k) for t in ended for k in t.runs) == [(j, k) for j in range(2) for k in range(60)]
    pd.testing.assert_frame_equal(alone.records(), spread.records())
    pd.testing.assert_frame_equal(alone.rows().pipe(drop_timings), spread.rows().pipe(drop_timings))
