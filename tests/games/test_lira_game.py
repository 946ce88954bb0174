"""The efficient LiRA game: the design of the halves, incremental models through the cache, the report's columns,
refusals before any training, and the golden row pinned to its seed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from privgame.attacks import Identity
from privgame.attacks.lira import LiRA
from privgame.core.cache import ArtefactCache
from privgame.games._base import AnalysisSettings, TrialContext
from privgame.games.lira import LiRAGame, lira_masks
from privgame.mechanisms import RandomizedResponse
from privgame.mechanisms.training import GradientBoostedTrees, LogisticRegressionClassifier

SEED = np.random.SeedSequence(2112, spawn_key=(0, 0))
SMALL: dict[str, Any] = {"pool_size": 300, "n_boot": 50}
MODEL = LogisticRegressionClassifier(epochs=3, batch_size=50, learning_rate=0.05)


def _counting(cache_root: Any) -> tuple[ArtefactCache, list[int]]:
    """A cache and a counter of the model entries written to it."""
    cache = ArtefactCache(cache_root)
    writes: list[int] = []
    original = cache.put_arrays

    def put(key: str, arrays: Any, **kw: Any) -> None:
        if set(arrays) != {"confidence", "correct"}:  # a model's answers on the pool are not a model
            writes.append(1)
        original(key, arrays, **kw)

    cache.put_arrays = put  # type: ignore[method-assign]
    return cache, writes


@pytest.mark.parametrize("m, n", [(4, 10), (6, 11 - 1), (32, 300)])
def test_halves_are_balanced_complementary_and_nested(m, n):
    masks = lira_masks(m, n, entropy=5, repetition=0)
    assert (masks.sum(axis=1) == n // 2).all()  # every model trains on N = N₊/2
    assert (masks.sum(axis=0) == m // 2).all()  # every record is IN exactly M/2 models
    assert (masks[0::2] == ~masks[1::2]).all()
    # a prefix of the models is the design with fewer models: M = 16 -> 64 adds models, never redraws
    assert np.array_equal(lira_masks(m + 4, n, 5, 0)[:m], masks)
    assert not np.array_equal(lira_masks(m, n, 5, 1), masks)  # another repetition, other halves


def test_play_stores_scores_of_every_pair_and_analysis_gives_the_report_columns():
    game = LiRAGame(**SMALL, n_models=8)
    outcome = game.play(MODEL, LiRA(), seed=SEED)
    assert outcome.scores.shape == (8 * 300,) and outcome.arrays["confidence"].shape == (8, 300)
    assert outcome.arrays["valid"].all() and np.isfinite(outcome.scores).all()
    row = game.analyse_trial(outcome, AnalysisSettings(), seed=SEED)
    for f in ("0.001", "0.01", "0.1"):
        for method in ("naive", "pp", "pp_t", "per_sample"):
            for rate in ("tpr", "fpr"):
                assert 0.0 <= row[f"{rate}_{method}_{f}"] <= 1.0
                assert row[f"{rate}_{method}_low_{f}"] <= row[f"{rate}_{method}_high_{f}"]
    assert row["n_models"] == 8 and row["n_samples"] == 300 and 0.0 <= row["auc"] <= 1.0
    assert row["fpr_naive_0.1"] <= 0.1  # the naive threshold's realised FPR never exceeds the nominal one
    assert row == game.analyse_trial(outcome, AnalysisSettings(), seed=SEED)


def test_record_rows_give_each_records_tpr_at_the_configured_fprs_with_the_realised_fpr():
    from privgame.analysis.calibration import calibration_report
    from privgame.analysis.record_risk import tpr_at_fpr

    game = LiRAGame(**SMALL, n_models=8, fprs=(0.01, 0.25, 0.5))
    outcome = game.play(MODEL, LiRA(), seed=SEED)
    rows = game.record_rows(outcome, AnalysisSettings(), seed=SEED)
    scores, member = outcome.scores.reshape(8, 300), outcome.membership.reshape(8, 300)
    assert len(rows) == 300 and [r["record"] for r in rows] == outcome.arrays["pool"].tolist()
    assert list(rows[0]) == [
        "record",
        "game",
        "rounds",
        "auc",
        *(f"{rate}_{f}" for f in ("0.01", "0.25", "0.5") for rate in ("tpr_at_fpr", "fpr_realised")),
    ]
    for x in (0, 7, 299):  # each record's own ROC over the 8 models, 4 of them IN
        for f in (0.01, 0.25, 0.5):
            expected = tpr_at_fpr(scores[:, x], member[:, x], f)
            assert (rows[x][f"tpr_at_fpr_{f:g}"], rows[x][f"fpr_realised_{f:g}"]) == expected
    for row in rows:
        assert row["fpr_realised_0.01"] == 0.0  # 4 OUT models: FPR 0.01 allows no false positive
        assert row["fpr_realised_0.25"] <= 0.25 and row["fpr_realised_0.5"] <= 0.5
    # their mean over the records is the game's mean per-sample TPR at each FPR, of the same scores
    table = calibration_report(scores, member, fprs=game.fprs, n_boot=0, require_pp=False).table
    for f, mean in zip(game.fprs, table["tpr_per_sample"], strict=True):
        assert np.mean([r[f"tpr_at_fpr_{f:g}"] for r in rows]) == pytest.approx(mean)


def test_more_models_train_only_the_new_ones_and_equal_training_all_at_once(tmp_path):
    cache, writes = _counting(tmp_path / "cache")
    small = LiRAGame(**SMALL, n_models=6, batch=4).play(MODEL, LiRA(), seed=SEED, context=TrialContext(cache=cache))
    assert len(writes) == 6
    grown = LiRAGame(**SMALL, n_models=10, batch=4).play(MODEL, LiRA(), seed=SEED, context=TrialContext(cache=cache))
    assert len(writes) == 10  # only the 4 new models trained
    fresh = LiRAGame(**SMALL, n_models=10, batch=10).play(MODEL, LiRA(), seed=SEED)
    np.testing.assert_array_equal(grown.arrays["confidence"][:6], small.arrays["confidence"])  # the cached six
    # trained in batches of 4 + 2 + 4 or of 10: the same models to the bit (the training contract, test_models.py)
    np.testing.assert_array_equal(grown.arrays["confidence"], fresh.arrays["confidence"])
    np.testing.assert_array_equal(grown.scores, fresh.scores)


def test_a_trial_reads_its_models_answers_from_the_cache_and_recomputes_a_damaged_one(tmp_path, monkeypatch):
    """Models made apart (a run task) leave their answers on the pool: the trial reads those, no forward pass, and
    plays what it plays without the cache; an answers entry that is not one is deleted and computed again."""
    from privgame.games import lira

    game = LiRAGame(**SMALL, n_models=6, batch=4)
    cache = ArtefactCache(tmp_path / "cache")
    game.make_runs(MODEL, LiRA(), seed=SEED, runs=range(0, 6), context=TrialContext(cache=cache))
    alone = game.play(MODEL, LiRA(), seed=SEED)
    computed: list[int] = []
    of = lira._Answers.of

    def counted(*args: Any) -> Any:
        computed.append(1)
        return of(*args)

    monkeypatch.setattr(lira._Answers, "of", counted)
    read = game.play(MODEL, LiRA(), seed=SEED, context=TrialContext(cache=cache))
    assert computed == []
    np.testing.assert_array_equal(read.scores, alone.scores)
    for name in ("confidence", "train_accuracy", "test_accuracy"):
        np.testing.assert_array_equal(read.arrays[name], alone.arrays[name])
    models = game._models(SEED)
    data = models.base.with_include(models.masks[2], size=models.base.size)
    key = lira._answers_key(MODEL, data, models.seeds[2])
    assert key is not None and cache.get_arrays(key) is not None
    cache.put_arrays(key, {"confidence": np.zeros(3), "correct": np.zeros(3, dtype=bool)})  # the wrong length
    with pytest.warns(UserWarning, match="corrupted cache entry"):
        again = game.play(MODEL, LiRA(), seed=SEED, context=TrialContext(cache=cache))
    assert computed == [1]  # model 2's answers, from its cached model
    np.testing.assert_array_equal(again.scores, alone.scores)


@pytest.mark.parametrize(
    "arrays",
    [
        {"confidence": np.zeros(300, dtype=np.float32), "correct": np.zeros(300, dtype=bool)},  # not float64
        {"confidence": np.zeros(300), "correct": np.zeros(300, dtype=np.int64)},  # not booleans
        {"confidence": np.zeros(300), "correct": np.zeros(300, dtype=bool), "extra": np.zeros(1)},
        {"confidence": np.zeros((300, 1)), "correct": np.zeros(300, dtype=bool)},  # not a vector
        {"confidence": np.zeros(300)},  # one missing
    ],
    ids=["float32", "int-correct", "extra-array", "matrix", "missing"],
)
def test_an_answers_entry_that_is_not_one_is_a_deleted_miss(tmp_path, arrays):
    from privgame.games import lira

    game = LiRAGame(**SMALL, n_models=6, batch=4)
    cache = ArtefactCache(tmp_path / "cache")
    game.make_runs(MODEL, LiRA(), seed=SEED, runs=range(0, 6), context=TrialContext(cache=cache))
    models = game._models(SEED)
    key = lira._answers_key(MODEL, models.base.with_include(models.masks[0], size=models.base.size), models.seeds[0])
    assert key is not None
    cache.put_arrays(key, arrays)
    with pytest.warns(UserWarning, match="corrupted cache entry"):
        read = game.play(MODEL, LiRA(), seed=SEED, context=TrialContext(cache=cache))
    np.testing.assert_array_equal(read.scores, game.play(MODEL, LiRA(), seed=SEED).scores)
    assert cache.get_arrays(key, decode=lambda a: lira._Answers.decode(a, 300)) is not None  # stored again


def test_a_changed_model_parameter_or_pool_misses_the_cache(tmp_path):
    cache, writes = _counting(tmp_path / "cache")
    game = LiRAGame(**SMALL, n_models=4)
    game.play(MODEL, LiRA(fix_variance=True), seed=SEED, context=TrialContext(cache=cache))
    other = LogisticRegressionClassifier(epochs=4, batch_size=50, learning_rate=0.05)
    game.play(other, LiRA(fix_variance=True), seed=SEED, context=TrialContext(cache=cache))
    assert len(writes) == 8
    LiRAGame(pool_size=302, n_boot=50, n_models=4).play(
        MODEL, LiRA(fix_variance=True), seed=SEED, context=TrialContext(cache=cache)
    )
    assert len(writes) == 12
    # the attack is not part of a model's key: another LiRA variant reuses the models
    game.play(MODEL, LiRA(fix_variance=True, online=False), seed=SEED, context=TrialContext(cache=cache))
    assert len(writes) == 12


def test_fpc_is_applied_only_when_the_attack_asks():
    game = LiRAGame(**SMALL, n_models=8)
    plain = game.play(MODEL, LiRA(), seed=SEED)
    corrected = game.play(MODEL, LiRA(fpc=True), seed=SEED)
    assert plain.arrays["fpc"][0] == 1.0 and corrected.arrays["fpc"][0] == 0.5
    np.testing.assert_array_equal(plain.arrays["confidence"], corrected.arrays["confidence"])
    assert not np.array_equal(plain.scores, corrected.scores)


def test_trees_play_too():
    game = LiRAGame(**SMALL, n_models=6, data="compas")
    outcome = game.play(GradientBoostedTrees(max_iter=5), LiRA(), seed=SEED)
    assert np.isfinite(outcome.scores).all()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"pool_size": 301}, "pool_size must be even"),
        ({"pool_size": 2}, "pool_size must be an integer"),
        ({"pool_size": 10**12}, "pool_size must be an integer"),
        ({"n_models": 7}, "n_models must be even"),
        ({"n_models": 2}, "n_models must be an integer"),
        ({"data": "wine"}, r"data must be one of adult, compas, digits \(data sets that serve features\)"),
        ({"fprs": (0.0, 0.1)}, r"fprs\[0\] must be"),
        ({"fprs": (0.1, 1.0)}, r"fprs\[1\] must be"),
        ({"fprs": (0.1, 0.1)}, "fprs must be distinct"),
        ({"fprs": ()}, "fprs must be a non-empty list"),
        ({"n_boot": -1}, "n_boot must be an integer"),
        ({"batch": 0}, "batch must be an integer"),
    ],
)
def test_bad_parameters_are_refused_with_the_field(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        LiRAGame(**{**SMALL, **kwargs})


def test_incompatible_partners_are_refused_before_any_training():
    game = LiRAGame(**SMALL, n_models=4)
    assert "needs a trained-model mechanism" in str(game.incompatibility(RandomizedResponse(epsilon=1.0), LiRA()))
    assert "plays an attack with an efficient leave-one-out evaluation" in str(game.incompatibility(MODEL, Identity()))
    reason = game.incompatibility(MODEL, LiRA())  # per-example variance needs 2 IN and 2 OUT others: M >= 6
    assert reason is not None and "n_models must be at least 6" in reason
    # a fixed variance needs fewer of the attack, but the calibrated TPRs standardise each OUT pair by the σ of
    # its record's M/2 − 1 other OUT models: M >= 6 whatever the attack
    reason = game.incompatibility(MODEL, LiRA(fix_variance=True))
    assert reason is not None and "n_models must be at least 6 for the game's calibrated TPRs" in reason
    assert LiRAGame(**SMALL, n_models=6).incompatibility(MODEL, LiRA(fix_variance=True)) is None


# The stored row of the quick LiRA experiment's config shrunk (logistic regression, 8 models on 300 Adult records),
# recorded from the code on 2026-12-01; the post-processed numbers re-recorded on 2026-12-02, when the sign of f_x
# stopped being estimated from the threshold's own shadows (fpr_pp_t_0.1 was 0.13 at nominal 0.1, now 0.0817).
# A change here means the pool, the halves, the models' streams, the training,
# LiRA's scores or the analysis changed: a breaking change for every stored result, made on purpose, never silently.
# The models train in float32 with batched products whose last bits may differ between CPU instruction sets, hence
# the 1e-5 tolerance on the scores (a changed stream moves them by far more).
GOLDEN = {
    "auc": 0.5420416666666666,
    "tpr_naive_0.1": 0.11166666666666666,
    "fpr_naive_0.1": 0.1,
    "tpr_pp_0.01": 0.14333333333333334,
    "fpr_pp_0.01": 0.0725,
    "tpr_pp_t_0.1": 0.20333333333333334,
    "fpr_pp_t_0.1": 0.08166666666666667,
    "tpr_per_sample_0.1": 0.355,
}
GOLDEN_SCORES = [0.3030148008937017, -4.1586466052937, 4.897257300602866, -0.6568433721968778]


def test_golden_stored_row(stored_trial):
    config = {
        "experiment": {"name": "golden", "seed": 2112},
        "game": {"name": "lira", "pool_size": 300, "n_models": 8, "n_boot": 50},
        "mechanism": {"name": "logistic-regression", "epochs": 3, "batch_size": 50, "learning_rate": 0.05},
        "attack": {"name": "lira"},
    }
    row, outcome = stored_trial(config)
    assert (row["spawn_key"], row["n_models"], row["n_samples"]) == ("0/0", 8, 300)
    assert {k: row[k] for k in GOLDEN} == pytest.approx(GOLDEN, rel=1e-9)
    np.testing.assert_allclose(outcome.scores[:4], GOLDEN_SCORES, rtol=1e-5)
    assert outcome.membership[:6].astype(int).tolist() == lira_masks(8, 300, 2112, 0)[0, :6].astype(int).tolist()


def test_report_csv_has_every_column_the_issue_names_and_the_plot_is_a_roc(tmp_path, capsys):
    import io

    import pandas as pd

    from privgame.engine.cli import main

    config = tmp_path / "lira.toml"
    config.write_text(
        '[experiment]\nname = "lira_tiny"\nseed = 3\n'
        '[game]\nname = "lira"\npool_size = 200\nn_models = [6, 8]\nn_boot = 40\n'
        '[mechanism]\nname = "logistic-regression"\nepochs = 2\nbatch_size = 50\n'
        '[attack]\nname = "lira"\n'
    )
    out = tmp_path / "runs"
    assert main(["run", str(config), "--out", str(out), "--no-progress", "--no-cache"]) == 0
    capsys.readouterr()
    assert main(["report", str(out), "--format", "csv"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert table["n_models"].tolist() == [6, 8]
    for f in ("0.001", "0.01", "0.1"):
        for method in ("naive", "pp", "pp_t", "per_sample"):
            assert {f"tpr_{method}_{f}", f"fpr_{method}_{f}"} <= set(table.columns)
    assert {"auc", "n_models"} <= set(table.columns)
    figure = tmp_path / "roc.png"
    assert main(["report", str(out), "--plot", str(figure)]) == 0
    captured = capsys.readouterr()
    assert figure.stat().st_size > 10_000 and "more columns (intervals, diagnostics) with --format csv" in captured.err
    lines = captured.out.splitlines()
    plain = lines[0].split()  # each attack's own numbers
    assert "tpr_naive_0.001" in plain and "tpr_pp_t_0.001" not in plain and "tpr_pp_t_low_0.001" not in plain
    shared = next(i for i, line in enumerate(lines) if line.startswith("calibration of the models'"))
    assert "tpr_pp_t_0.001" in lines[shared + 1].split()  # the models' calibration, once, under its title


def test_rmia_plays_on_the_same_models_and_scores_what_the_confidences_give():
    """RMIA in the efficient evaluation: the same M models (the confidences are LiRA's, bit for bit), the scores of
    :func:`privgame.attacks.rmia.leave_one_out_rmia` on them, no finite-population factor, and members above
    non-members."""
    from privgame.analysis.calibration import pooled_auc
    from privgame.attacks.rmia import RMIA, leave_one_out_rmia

    game = LiRAGame(**SMALL, n_models=8)
    lira = game.play(MODEL, LiRA(), seed=SEED)
    for online in (False, True):
        rmia = game.play(MODEL, RMIA(online=online), seed=SEED)
        np.testing.assert_array_equal(rmia.arrays["confidence"], lira.arrays["confidence"])
        member = rmia.membership.reshape(8, 300)
        expected = leave_one_out_rmia(rmia.arrays["confidence"], member, online=online)
        np.testing.assert_array_equal(rmia.scores, expected.scores.ravel())
        assert rmia.arrays["valid"].all() and rmia.arrays["fpc"][0] == 1.0
        assert pooled_auc(rmia.scores.reshape(8, 300), member) > 0.5
        row = game.analyse_trial(rmia, AnalysisSettings(), seed=SEED)
        assert 0.0 <= row["tpr_naive_0.01"] <= 1.0


def test_rmia_is_refused_where_no_reference_models_are_given_and_with_too_few_models():
    from privgame.attacks.rmia import RMIA
    from privgame.games.record import TraditionalRecordGame

    reason = TraditionalRecordGame().incompatibility(MODEL, RMIA())
    assert reason is not None and "needs models knowledge" in reason and "lira" in reason
    reason = LiRAGame(**SMALL, n_models=4).incompatibility(MODEL, RMIA())  # RMIA's own minimum, not the game's
    assert reason is not None and "n_models must be at least 6 for the game's calibrated TPRs" in reason
    assert LiRAGame(**SMALL, n_models=6).incompatibility(MODEL, RMIA()) is None
    with pytest.raises(ValueError, match="n_models"):
        LiRAGame(**SMALL, n_models=2)


# ------------------------------------------------------------- each attack's own numbers, the shared calibration, notes
def test_each_attack_row_has_its_own_per_record_tprs_and_the_calibration_is_shared():
    """Two attacks on the same models (LiRA online with per-example variances, RMIA): their AUC, naive and
    per-record TPRs come from their own scores and differ; the confidences' calibration is the models' (equal), a
    plain report prints it once under the attacks, titled as such, and notes the flat per-sample TPR at M = 8 and
    online per-example variances below 64 models."""
    import privgame
    from privgame.engine.report import shared_tables, summarise_results, summary_notes

    config = {
        "experiment": {"name": "two", "seed": 3, "repetitions": 1},
        "game": {"name": "lira", "data": "adult", "pool_size": 200, "n_models": 8, "n_boot": 40},
        "mechanism": {"name": "logistic-regression"},
        "attack": [{"name": "lira", "online": True, "fix_variance": False}, {"name": "rmia"}],
    }
    with privgame.run(config, cache=False) as results:
        root = str(results.path)
        summary, swept = summarise_results(root)
        lira, rmia = summary.iloc[0], summary.iloc[1]
        assert lira["online_per_example_variance"] == 1 and rmia["online_per_example_variance"] == 0
        assert lira["tpr_per_record_0.1"] != rmia["tpr_per_record_0.1"] or lira["auc"] != rmia["auc"]
        assert lira["tpr_pp_0.1"] == rmia["tpr_pp_0.1"] and lira["tpr_per_sample_0.1"] == rmia["tpr_per_sample_0.1"]
        records = results.records()
        own = records[records["attack.name"] == "lira"]["tpr_at_fpr_0.1"].mean()
        assert lira["tpr_per_record_0.1"] == pytest.approx(own)  # the mean of its own per-record rows
        [(title, shared)] = shared_tables(root, summary, swept)
        assert "calibration of the models' logit-scaled confidences" in title and len(shared) == 1
        assert "tpr_pp_0.1" in shared and "auc" not in shared
        notes = summary_notes(root, summary, swept)
        assert any("per-sample TPR" in n and "at every FPR" in n for n in notes)
        assert any("online LiRA with per-example variances at M = 8" in n for n in notes)


def test_a_report_prints_the_calibration_once_and_the_notes(tmp_path, capsys):
    from privgame.engine.cli import main

    path = tmp_path / "c.toml"
    path.write_text(
        '[experiment]\nname = "one"\nseed = 3\nrepetitions = 1\n'
        '[game]\nname = "lira"\ndata = "adult"\npool_size = 200\nn_models = 8\nn_boot = 40\n'
        '[mechanism]\nname = "logistic-regression"\n'
        '[[attack]]\nname = "lira"\nonline = true\n[[attack]]\nname = "rmia"\n'
    )
    assert main(["run", str(path), "--out", str(tmp_path / "r"), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["report", str(tmp_path / "r")]) == 0
    out, err = capsys.readouterr()
    head, _, tail = out.partition("calibration of the models' logit-scaled confidences")
    assert "tpr_naive_0.1" in head and "tpr_per_record_0.1" in head and "tpr_pp_0.1" not in head
    assert "tpr_pp_0.1" in tail and tail.count("\n") == 3  # title line's end, header, one set of models
    assert "note: online LiRA with per-example variances at M = 8" in err


def test_calibrations_that_differ_by_attack_are_not_merged():
    """LiRA with fpc = true standardises the models' confidences with its corrected variances, RMIA with none: the
    two calibrations of the same models differ. The shared table keeps each, named by its attack (it kept the
    first attack's alone per set of models, under a title saying every attack had it)."""
    import privgame
    from privgame.engine.report import shared_tables, summarise_results

    config = {
        "experiment": {"name": "fpc", "seed": 3, "repetitions": 1},
        "game": {"name": "lira", "data": "adult", "pool_size": 200, "n_models": [6, 8], "n_boot": 40},
        "mechanism": {"name": "logistic-regression"},
        "attack": [{"name": "lira", "fpc": True}, {"name": "rmia"}],
    }
    with privgame.run(config, cache=False) as results:
        root = str(results.path)
        summary, swept = summarise_results(root)
        assert summary.groupby("game.n_models")["tpr_pp_0.1"].nunique().tolist() == [2, 2]
        [(title, shared)] = shared_tables(root, summary, swept)
        assert len(shared) == 4 and "attack.name" in shared
        merged = summary.set_index(["game.n_models", "attack.name"])["tpr_pp_0.1"]
        assert shared.set_index(["game.n_models", "attack.name"])["tpr_pp_0.1"].to_dict() == merged.to_dict()
        assert "fpc" in title
