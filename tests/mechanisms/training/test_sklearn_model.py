"""The ``sklearn`` mechanism: any scikit-learn classifier by import path, released as its answers on the records its
game queries (a ``LookupRelease`` in an npz, no pickle).

What is checked: the release is ``predict_proba`` itself on every stored record (RandomForest and a Pipeline, on
the encoded features and on the records' own columns), a record outside is refused in one line, seeds make the
model (same seed, same forest; another seed, another), the errors of a bad config (one line each), the cache
(a cached run equals a --no-cache run; the queries are part of the key), the three games that take it (LiRA end
to end, the record games, PANORAMIA's target, helper and classifier), a user CSV through a config's [data] table,
n_jobs = 1 and 2, and that ``privgame report`` imports no estimator while ``reanalyse`` refuses a foreign one
without ``--trust-plugins``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from privgame.core.cache import ArtefactCache
from privgame.data.features import model_arrays, population_table, raw_columns
from privgame.engine.config import ConfigError, parse_config
from privgame.engine.store import drop_timings
from privgame.mechanisms.cached import cached_release, release_key
from privgame.mechanisms.training import GradientBoostedTrees, SklearnModel, TrainingData, decode_release
from privgame.mechanisms.training.release import PROBABILITY_FLOOR, LookupRelease, UnscoredRecordError, row_digests

HERE = Path(__file__).parent
REPO = HERE.parents[2]
MEDICAL = REPO / "experiments" / "byo_quick" / "medical.csv"
MEDICAL_DOMAIN = REPO / "experiments" / "byo_quick" / "medical.domain.toml"
FOREST = SklearnModel(params={"n_estimators": 8, "max_depth": "None"})
PIPELINE = SklearnModel(estimator="sklearn_pipelines.scaled_logistic", params={"logisticregression__C": 0.5})
COLUMNS = SklearnModel(estimator="sklearn_pipelines.columns_logistic", features="raw")


def _adult(n: int = 400, queries: int = 0, seed: int = 0) -> tuple[TrainingData, np.ndarray]:
    """A pool of ``n`` Adult records, a random half included, ``queries`` further records declared, and frames."""
    arrays = model_arrays("adult")
    rng = np.random.default_rng(seed)
    ids = rng.choice(arrays.y.size, n + queries, replace=False)
    pool, extra = ids[:n], ids[n:]
    table = population_table("adult")
    data = TrainingData(
        arrays.x[pool],
        arrays.y[pool],
        rng.random(n) < 0.5,
        queries=arrays.x[extra] if queries else None,
        frame=raw_columns(table.iloc[pool], "adult"),
        query_frame=raw_columns(table.iloc[extra], "adult") if queries else None,
    )
    return data, ids


def _fitted(mechanism: SklearnModel, data: TrainingData, seed: int) -> Any:
    """The estimator itself, trained as the release trains it (the same rng, the same rows)."""
    model = mechanism.build(np.random.default_rng(seed))
    train = np.flatnonzero(data.include)
    if mechanism.features == "raw":
        model.fit(data.frame.iloc[train].reset_index(drop=True), data.y[train])
    else:
        model.fit(data.x[train], data.y[train])
    return model


def _every_row(data: TrainingData, raw: bool) -> Any:
    if raw:
        return pd.concat([data.frame, data.query_frame], ignore_index=True) if data.n_queries else data.frame
    return data.x if data.queries is None else np.concatenate([data.x, data.queries])


# -- the release is predict_proba on every stored record -------------------------------------------------------------
@pytest.mark.parametrize("mechanism", [FOREST, PIPELINE, COLUMNS], ids=["forest", "pipeline", "columns"])
def test_the_release_is_predict_proba_on_every_stored_record(mechanism):
    data, _ = _adult(400, queries=50)
    release = mechanism.release(data, rng=np.random.default_rng(5))
    assert isinstance(release, LookupRelease) and release.n_classes == 2
    rows = np.concatenate([data.x, data.queries])
    expected = _fitted(mechanism, data, 5).predict_proba(_every_row(data, mechanism.features == "raw"))
    # exactly predict_proba, on the pool and the queries alike; the logits are their logarithms (floored)
    np.testing.assert_array_equal(release.probabilities(rows), expected)
    floored = np.maximum(expected.astype(np.float64), PROBABILITY_FLOOR)  # a float32 model's values, in float64
    np.testing.assert_array_equal(release.logits(rows), np.log(floored))
    assert np.isfinite(release.confidence(rows, np.concatenate([data.y, np.zeros(50, dtype=int)]))).all()
    assert len(release) == np.unique(rows, axis=0).shape[0]  # one entry per distinct record


def test_a_forest_s_zero_votes_give_finite_scores_at_the_reference_s_cap():
    data, _ = _adult(300)
    release = FOREST.release(data, rng=np.random.default_rng(1))
    p = release.probabilities(data.x)
    confident = (p.max(axis=1) == 1.0) & data.include
    assert confident.any()  # a fully grown forest is certain about many of its training records
    y = p.argmax(axis=1)
    assert np.allclose(release.confidence(data.x[confident], y[confident]), -np.log(PROBABILITY_FLOOR))
    assert np.isfinite(release.losses(data.x, data.y)).all()


def test_a_record_outside_the_stored_ones_is_refused_in_one_line():
    data, ids = _adult(200, queries=10)
    release = FOREST.release(data, rng=np.random.default_rng(1))
    other = model_arrays("adult").x[np.setdiff1d(np.arange(400), ids)[:3]]
    assert not release.covers(other).any() and release.covers(data.queries).all()
    with pytest.raises(UnscoredRecordError, match="got 2 of 4 outside them, the first at row 1") as info:
        release.logits(np.concatenate([data.x[:1], other[:2], data.queries[:1]]))
    assert "\n" not in str(info.value) and "sklearn" in str(info.value)
    with pytest.raises(ValueError, match=r"x must have shape \(n, 108\)"):
        release.probabilities(data.x[:, :5])


@pytest.mark.parametrize("data", ["adult", "compas"])
def test_a_record_encoded_on_its_own_is_its_row_of_the_encoded_population(data):
    """What lets a record game's attack (which encodes its target alone) find the target in a round's release."""
    from privgame.data.features import encode

    table, full = population_table(data), model_arrays(data).x
    rows = np.random.default_rng(0).choice(len(table), 40, replace=False)
    alone = np.concatenate([encode(table.iloc[[i]], data).x for i in rows])
    np.testing.assert_array_equal(row_digests(alone), row_digests(full[rows]))


def test_a_record_is_found_by_its_float32_bytes_whatever_its_dtype_or_the_sign_of_zero():
    x = np.array([[0.0, 0.5], [-0.0, 0.5], [0.25, 1.0]], dtype=np.float32)
    d = row_digests(x)
    assert d.shape == (3, 16) and d.dtype == np.uint8
    assert (d[0] == d[1]).all() and not (d[0] == d[2]).all()
    np.testing.assert_array_equal(row_digests(x.astype(np.float64)), d)
    release = LookupRelease(d[[0, 2]], np.array([[0.3, 0.7], [1.0, 0.0]]), n_features=2)
    np.testing.assert_array_equal(release.probabilities(x), [[0.3, 0.7], [0.3, 0.7], [1.0, 0.0]])
    with pytest.raises(ValueError, match="digests must be distinct, got 1 repeated"):
        LookupRelease(d[[0, 1]], np.full((2, 2), 0.5), n_features=2)
    with pytest.raises(ValueError, match="table must hold probabilities in"):
        LookupRelease(d[[0, 2]], np.array([[0.5, 0.5], [2.0, -1.0]]), n_features=2)


# -- randomness ------------------------------------------------------------------------------------------------------
def test_the_same_seed_gives_the_same_forest_and_another_seed_another():
    data, _ = _adult(300)
    a, b, c = (FOREST.release(data, rng=np.random.default_rng(s)) for s in (3, 3, 4))
    np.testing.assert_array_equal(a.table, b.table)
    assert not np.array_equal(a.table, c.table)
    # a Pipeline's every random_state is drawn (here only LogisticRegression's, which lbfgs does not use)
    model = PIPELINE.build(np.random.default_rng(3))
    assert isinstance(model.get_params()["logisticregression__random_state"], int)
    assert model.get_params()["logisticregression__C"] == 0.5


def test_release_runs_are_separate_releases():
    data, _ = _adult(200)
    other = data.with_include(~data.include)
    runs = FOREST.release_runs([data, other], rngs=[np.random.default_rng(1), np.random.default_rng(2)])
    for run, d, s in zip(runs, (data, other), (1, 2), strict=True):
        np.testing.assert_array_equal(run.table, FOREST.release(d, rng=np.random.default_rng(s)).table)


# -- the records' own columns ----------------------------------------------------------------------------------------
def test_raw_features_need_the_frame_and_refuse_records_encoded_alike_with_different_columns():
    data, _ = _adult(100)
    bare = TrainingData(data.x, data.y, data.include)
    with pytest.raises(ValueError, match="features = 'raw' needs the records' own columns"):
        COLUMNS.release(bare, rng=np.random.default_rng(0))
    x = data.x.copy()
    x[1] = x[0]  # record 1 now encodes as record 0, its columns still its own
    clash = TrainingData(x, data.y, data.include, frame=data.frame)
    with pytest.raises(ValueError, match="got rows 0 and 1 of the pool and queries, which differ"):
        COLUMNS.release(clash, rng=np.random.default_rng(0))
    FOREST.release(clash, rng=np.random.default_rng(0))  # the encoded features alone have no such clash
    with pytest.raises(ValueError, match="query_frame must give the 3 queries' rows beside frame"):
        TrainingData(data.x, data.y, data.include, queries=data.x[:3], frame=data.frame)


def test_a_classifier_mia_classifier_must_read_encoded_features():
    from privgame.attacks.classifier import ClassifierMIA

    with pytest.raises(ValueError, match="classifier must read the encoded features"):
        ClassifierMIA(classifier=COLUMNS)
    assert ClassifierMIA(classifier=FOREST).classifier is FOREST


# -- the errors of a bad config --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"estimator": "sklearn.ensemble.RandomForestClassifer"}, "estimator must be an importable class, got"),
        ({"estimator": "no_such_package.Model"}, "No module named 'no_such_package'"),
        ({"estimator": "RandomForestClassifier"}, "estimator must be an import path 'package.module.Class'"),
        ({"estimator": "sklearn.ensemble"}, "estimator must name a class .*, got 'sklearn.ensemble'"),
        ({"estimator": "sklearn.ensemble.RandomForestRegressor"}, "estimator must be a classifier .*, a regressor"),
        ({"estimator": "sklearn.preprocessing.StandardScaler"}, "estimator must be a classifier"),
        ({"estimator": "sklearn.svm.SVC"}, "estimator must have predict_proba"),
        ({"params": {"n_estimator": 3}}, "params has no key 'n_estimator' for sklearn.ensemble.RandomForestClassifier"),
        ({"params": {"random_state": 3}}, "params must leave out 'random_state'"),
        ({"params": {"n_estimators": "ten"}}, "The 'n_estimators' parameter of RandomForestClassifier must be an int"),
        ({"params": {"class_weight": {"0": 1.0}}}, r"params\['class_weight'\] must be a number, a string"),
        ({"features": "columns"}, "features must be one of encoded, raw"),
    ],
)
def test_each_bad_estimator_or_parameter_is_one_line_when_the_config_is_read(params, match):
    with pytest.raises(ValueError, match=match) as info:
        SklearnModel(**params)
    assert "\n" not in str(info.value)
    sections = {
        "experiment": {"name": "bad", "seed": 1},
        "game": {"name": "lira", "pool_size": 100, "n_models": 6},
        "mechanism": {"name": "sklearn", **params},
        "attack": {"name": "lira"},
    }
    with pytest.raises(ConfigError, match=r"^\[mechanism\] sklearn: ") as info:
        parse_config(sections)
    assert "\n" not in str(info.value)


def test_none_is_the_string_none_lists_are_tuples_and_params_are_sorted_pairs():
    model = SklearnModel(params={"n_estimators": 4, "max_depth": "None", "max_features": "sqrt"})
    assert model.params == (("max_depth", None), ("max_features", "sqrt"), ("n_estimators", 4))
    assert model.build().get_params()["max_depth"] is None
    assert model == SklearnModel(params=model.params) and hash(model) == hash(SklearnModel(params=model.params))
    mlp = SklearnModel(estimator="sklearn.neural_network.MLPClassifier", params={"hidden_layer_sizes": [8, 4]})
    assert mlp.build().get_params()["hidden_layer_sizes"] == (8, 4)
    with pytest.raises(TypeError, match="estimator must be an import path such as"):
        SklearnModel(estimator=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="params must be one table of the estimator's parameters"):
        SklearnModel(params=[{"n_estimators": 5}, {"n_estimators": 6}])  # type: ignore[arg-type]


def test_estimator_and_features_sweep_as_any_parameter():
    sections = _lira_sections(
        {"estimator": ["sklearn.ensemble.RandomForestClassifier", "sklearn.tree.ExtraTreeClassifier"]}
    )
    config = parse_config(sections)
    assert config.swept == ("mechanism.estimator",)
    assert [p.mechanism.estimator for p in config.grid] == [
        "sklearn.ensemble.RandomForestClassifier",
        "sklearn.tree.ExtraTreeClassifier",
    ]
    assert config.normalised["grid"][1]["mechanism"] == {
        "name": "sklearn",
        "estimator": "sklearn.tree.ExtraTreeClassifier",
        "params": [],
        "features": "encoded",
    }


# -- the cache -------------------------------------------------------------------------------------------------------
def test_a_cached_release_is_the_fresh_one_and_the_queries_are_part_of_its_key(tmp_path):
    data, _ = _adult(200, queries=20)
    seed = np.random.SeedSequence(9)
    cache = ArtefactCache(tmp_path)
    fresh = cached_release(FOREST, data, seed=seed, cache=cache)
    again = cached_release(FOREST, data, seed=seed, cache=cache)
    assert cache.hits == 1 and isinstance(again, LookupRelease)
    np.testing.assert_array_equal(fresh.table, again.table)
    np.testing.assert_array_equal(fresh.digests, again.digests)
    np.testing.assert_array_equal(decode_release(fresh.to_arrays()).table, fresh.table)
    fewer = TrainingData(data.x, data.y, data.include, queries=data.queries[:10])
    assert release_key(FOREST, fewer, seed) != release_key(FOREST, data, seed)
    # a model that scores any record keeps its key whatever the queries (PANORAMIA's target across m)
    trees = GradientBoostedTrees(max_iter=3)
    assert release_key(trees, fewer, seed) == release_key(trees, data, seed)
    # the frame enters the key in raw mode only
    other_frame = data.frame.assign(age=data.frame["age"] + 1)
    moved = TrainingData(data.x, data.y, data.include, queries=data.queries, frame=other_frame,
                         query_frame=data.query_frame)  # fmt: skip
    assert release_key(FOREST, moved, seed) == release_key(FOREST, data, seed)
    assert release_key(COLUMNS, moved, seed) != release_key(COLUMNS, data, seed)
    assert COLUMNS.cache_code() == ("sklearn_pipelines",) and FOREST.cache_code() == ()


# -- the games -------------------------------------------------------------------------------------------------------
def _lira_sections(mechanism: dict[str, Any], data: dict[str, Any] | None = None) -> dict[str, Any]:
    sections: dict[str, Any] = {
        "experiment": {"name": "lira_sklearn", "seed": 5, "repetitions": 2},
        "game": {"name": "lira", "pool_size": 200, "n_models": 6, "n_boot": 40},
        "mechanism": {"name": "sklearn", **mechanism},
        "attack": {"name": "lira"},
    }
    if data is not None:
        sections["data"] = data
    return sections


def _rows(store: Any) -> pd.DataFrame:
    return store.rows().pipe(drop_timings).sort_values("trial").reset_index(drop=True)


def test_lira_end_to_end_a_cached_run_equals_a_fresh_one_and_n_jobs_do_not_matter(tmp_path, monkeypatch):
    from joblib.externals.loky import get_reusable_executor

    from privgame.engine import runner
    from privgame.engine.runner import run_experiment

    config = parse_config(_lira_sections({"params": {"n_estimators": 6, "max_depth": 8}}))
    cache = ArtefactCache(tmp_path / "cache")
    first = run_experiment(config, tmp_path / "cached", progress=False, cache=cache)
    assert cache.hits == 0
    second = run_experiment(config, tmp_path / "again", progress=False, cache=cache)
    assert cache.hits == 12  # every model of both repetitions answered from the cache
    fresh = run_experiment(config, tmp_path / "fresh", progress=False, cache=None)
    monkeypatch.setattr(runner, "PARENT_PLAYS_WHILE_WORKERS_START", False)  # the workers play every trial
    get_reusable_executor(max_workers=1).shutdown(wait=True, kill_workers=True)
    parallel = run_experiment(config, tmp_path / "parallel", n_jobs=2, progress=False, cache=None)
    for other in (second, fresh, parallel):
        pd.testing.assert_frame_equal(_rows(first), _rows(other))
        for trial in first.done():
            np.testing.assert_array_equal(first.load_outcome(trial).scores, other.load_outcome(trial).scores)
    row = _rows(first).iloc[0]
    assert 0.0 <= row["auc"] <= 1.0 and row["train_accuracy"] > row["test_accuracy"]


def test_lira_on_a_user_csv_with_a_forest_and_with_a_pipeline_on_its_columns(tmp_path):
    from privgame.engine.runner import run_experiment

    data = {"path": str(MEDICAL), "domain": str(MEDICAL_DOMAIN), "label": "diagnosis"}
    for i, mechanism in enumerate(
        [
            {"params": {"n_estimators": 6, "min_samples_leaf": 2}},
            {"estimator": "sklearn_pipelines.columns_logistic", "features": "raw"},
        ]
    ):
        config = parse_config(_lira_sections(mechanism, data), base_dir=tmp_path)
        assert config.data_source.name == "medical"
        store = run_experiment(config, tmp_path / f"run{i}", progress=False)
        outcome = store.load_outcome(0)
        assert outcome.arrays["confidence"].shape == (6, 200) and np.isfinite(outcome.scores).all()


@pytest.mark.filterwarnings("ignore:LiRA could not fit")  # four shadows of a certain forest: equal confidences
def test_the_record_games_query_a_round_s_model_and_the_shadows_on_the_target_only_in_their_pools():
    from privgame.attacks.lira import LiRA
    from privgame.games.record import RecordGames

    game = RecordGames(
        dataset_size=40, auxiliary_size=80, evaluation_size=80, rounds=4, vulnerable_targets=1, random_targets=0
    )
    for mechanism in (FOREST, COLUMNS):
        assert game.incompatibility(mechanism, LiRA(n_shadows=4)) is None
        outcome = game.play(mechanism, LiRA(n_shadows=4), seed=np.random.SeedSequence(2, spawn_key=(0,)))
        assert outcome.scores.shape == (8,) and np.isfinite(outcome.scores).all()


def test_panoramia_queries_its_target_and_helper_on_generated_and_held_out_records():
    from privgame.attacks.classifier import ClassifierMIA
    from privgame.games._base import AnalysisSettings
    from privgame.games.panoramia import PanoramiaGame

    small = {
        "train_size": 700,
        "generator_rows": 200,
        "m": 300,
        "helper_rows": 200,
        "o1_candidates": 200,
        "o1_guesses": 20,
        "thresholds": 10,
    }
    seed = np.random.SeedSequence(4, spawn_key=(0,))
    for target, helper in ((FOREST, FOREST), (COLUMNS, COLUMNS)):
        game = PanoramiaGame(**small, helper=helper)
        attack = ClassifierMIA(classifier=FOREST)  # the learned classifier a lookup release too
        assert game.incompatibility(target, attack) is None
        outcome = game.play(target, attack, seed=seed)
        row = game.analyse_trial(outcome, AnalysisSettings(), seed=seed)
        assert np.isfinite([row["c_lb"], row["target_heldout_accuracy"], row["helper_accuracy"]]).all()


# -- what reading results imports ------------------------------------------------------------------------------------
def test_report_imports_no_estimator_and_reanalyse_refuses_a_foreign_one_without_trust(tmp_path):
    from privgame.engine.config import ConfigError
    from privgame.engine.reanalyse import reanalysis_config
    from privgame.engine.runner import run_experiment

    sections = _lira_sections({"estimator": "sklearn_pipelines.scaled_logistic"})
    sections["experiment"]["repetitions"] = 1
    out = tmp_path / "run"
    run_experiment(parse_config(sections), out, progress=False)
    code = (
        "import sys\nfrom privgame.engine.cli import main\n"
        f"assert main(['report', {str(out)!r}, '--format', 'csv']) == 0\n"
        "assert 'sklearn_pipelines' not in sys.modules, 'report imported the estimator'\n"
        "assert 'privgame.mechanisms.training.sklearn_model' not in sys.modules, 'report built the mechanism'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    sys.modules.pop("sklearn_pipelines", None)
    with pytest.raises(ConfigError, match=r"estimator 'sklearn_pipelines.scaled_logistic' is named by .*--trust-plug"):
        reanalysis_config(out, {"confidence": 0.9})
    assert "sklearn_pipelines" not in sys.modules
    config, _ = reanalysis_config(out, {"confidence": 0.9}, trust_plugins=True)
    assert config.grid[0].mechanism.estimator == "sklearn_pipelines.scaled_logistic"


def test_memory_estimate_grows_with_the_forest():
    small, large = SklearnModel(params={"n_estimators": 10}), SklearnModel(params={"n_estimators": 100})
    assert 0 < small.memory_bytes(1000) < large.memory_bytes(1000) < large.memory_bytes(10_000)
    assert PIPELINE.memory_bytes(1000) < small.memory_bytes(1000)


def test_an_estimator_that_calls_sys_exit_is_one_line_not_a_silent_exit(tmp_path, monkeypatch):
    """An estimator path whose module or constructor calls ``sys.exit`` used to end ``privgame run`` at once, with
    status 0 and no word: it is a config error naming the path."""
    from privgame.mechanisms.training.sklearn_model import build_estimator

    (tmp_path / "exits_on_import.py").write_text("import sys\nsys.exit(3)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "exits_on_import", raising=False)
    with pytest.raises(ValueError, match=r"'exits_on_import:Model', whose import called sys.exit\(3\)"):
        build_estimator("exits_on_import:Model")
    with pytest.raises(ValueError, match=r"'privgame.engine.store:sys.exit', which called sys.exit\(None\)"):
        build_estimator("privgame.engine.store:sys.exit")
