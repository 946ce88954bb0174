"""Configs that were accepted and then failed every trial (issue 33): each one now either runs or is refused when
the config is read, in one line with exit status 2, before any trial or results directory."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from privgame.engine.config import ConfigError, load_config, parse_config
from privgame.games._base import AnalysisSettings

SEED = np.random.SeedSequence(33, spawn_key=(0, 0))


def _sections(game: dict[str, Any], mechanism: dict[str, Any], attack: dict[str, Any]) -> dict[str, Any]:
    return {"experiment": {"seed": 1, "repetitions": 1}, "game": game, "mechanism": mechanism, "attack": attack}


def _toml(sections: dict[str, Any]) -> str:
    from tests.conftest import toml_value

    lines = []
    for name, table in sections.items():
        lines.append(f"[{name}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


LIRA = {"name": "lira", "data": "adult", "pool_size": 200, "n_models": 8, "n_boot": 10}
LOGISTIC = {"name": "logistic-regression", "epochs": 1}


# -- 1. an empty list is one value of a sequence parameter --------------------------------------------------------
def test_an_empty_list_is_no_hidden_layer_not_an_empty_sweep():
    config = parse_config(_sections(LIRA, {"name": "mlp", "hidden": [], "epochs": 1}, {"name": "lira"}))
    assert [p.mechanism.hidden for p in config.grid] == [()]
    # a list of lists still sweeps, the empty one included
    swept = parse_config(_sections(LIRA, {"name": "mlp", "hidden": [[], [16]], "epochs": 1}, {"name": "lira"}))
    assert [p.mechanism.hidden for p in swept.grid] == [(), (16,)]
    # the DP-SGD networks' documented default, written out
    blackbox = {"name": "dpsgd-mlp", "noise_multiplier": 1.0, "steps": 2, "hidden": []}
    assert parse_config(_sections(LIRA, blackbox, {"name": "lira"})).grid[0].mechanism.hidden == ()
    # a parameter that is not a sequence: an empty list is still an empty sweep
    with pytest.raises(ConfigError, match=r"\[mechanism\] epochs is an empty list; a sweep needs at least one value"):
        parse_config(_sections(LIRA, {"name": "mlp", "epochs": []}, {"name": "lira"}))


def test_an_mlp_without_hidden_layers_trains_one_linear_layer():
    from privgame.mechanisms.training import MLPClassifier
    from privgame.mechanisms.training.data import TrainingData

    rng = np.random.default_rng(0)
    x = rng.random((40, 5)).astype(np.float32)
    data = TrainingData(x, (x[:, 0] > 0.5).astype(np.int64), np.ones(40, dtype=bool))
    release = MLPClassifier(hidden=(), epochs=1).release(data, rng=np.random.default_rng(1))
    assert [w.shape for w in release.weights] == [(5, 2)]


# -- 2. LiRA's calibrated TPRs need 6 models, whatever the attack ---------------------------------------------------
@pytest.mark.parametrize("attack", [{"name": "lira", "fix_variance": True}, {"name": "rmia"}])
def test_fewer_than_six_models_are_refused_for_any_attack(run_refused, attack):
    run_refused(
        _toml(_sections({**LIRA, "n_models": 4}, LOGISTIC, attack)),
        "n_models must be at least 6 for the game's calibrated TPRs",
        "got 4",
    )


def test_six_models_are_enough_and_four_cannot_be_calibrated():
    from privgame.attacks.lira import LiRA
    from privgame.games.lira import LiRAGame
    from privgame.mechanisms.training import LogisticRegressionClassifier

    model, attack = LogisticRegressionClassifier(epochs=1), LiRA(fix_variance=True)
    six = LiRAGame(pool_size=60, n_models=6, n_boot=40)
    assert six.incompatibility(model, attack) is None
    row = six.analyse_trial(six.play(model, attack, seed=SEED), AnalysisSettings(), seed=SEED)
    assert 0.0 <= row["tpr_pp_t_0.1"] <= 1.0
    four = LiRAGame(pool_size=60, n_models=4, n_boot=40)  # why 4 is refused: no OUT pair has a σ
    with pytest.raises(ValueError, match="at least one standardisable OUT pair"):
        four.analyse_trial(four.play(model, attack, seed=SEED), AnalysisSettings(), seed=SEED)


# -- 3 and 6. labels of more than two classes --------------------------------------------------------------------
def test_lira_plays_the_ten_digits():
    from privgame.attacks.lira import LiRA
    from privgame.games.lira import LiRAGame
    from privgame.mechanisms.training import LogisticRegressionClassifier

    game = LiRAGame(data="digits", pool_size=60, n_models=6, n_boot=40)
    outcome = game.play(LogisticRegressionClassifier(epochs=1), LiRA(), seed=SEED)
    assert np.isfinite(outcome.scores).all()
    assert 0.0 <= game.analyse_trial(outcome, AnalysisSettings(), seed=SEED)["auc"] <= 1.0


def test_lira_plays_an_integer_label_of_three_classes_from_a_file(tmp_path):
    rng = np.random.default_rng(3)
    ages, sexes, grades = rng.integers(18, 90, 200), rng.choice(["F", "M"], 200), rng.integers(1, 4, 200)
    rows = ["age,sex,grade"] + [f"{a},{s},{g}" for a, s, g in zip(ages, sexes, grades, strict=True)]
    (tmp_path / "clinic.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "clinic.domain.toml").write_text(
        '[columns.age]\nkind = "int"\nrange = [18, 99]\n[columns.sex]\nkind = "category"\ncategories = ["F", "M"]\n'
        '[columns.grade]\nkind = "int"\nrange = [1, 3]\n'
    )
    sections = _sections(
        {"name": "lira", "pool_size": 60, "n_models": 6, "n_boot": 40}, LOGISTIC, {"name": "lira", "online": False}
    )
    sections["data"] = {"path": "clinic.csv", "domain": "clinic.domain.toml", "label": "grade"}
    (tmp_path / "c.toml").write_text(_toml(sections))
    point = load_config(tmp_path / "c.toml").grid[0]
    outcome = point.game.play(point.mechanism, point.attack, seed=SEED)
    assert np.isfinite(outcome.scores).all()


def test_a_record_game_plays_the_ten_digits_and_its_shadows_have_every_class():
    from privgame.attacks.lira import LiRA
    from privgame.games.record import ModelSeededRecordGame, _Encoder
    from privgame.mechanisms.training import LogisticRegressionClassifier

    assert _Encoder("digits").n_classes == 10
    game = ModelSeededRecordGame(
        data="digits", dataset_size=10, auxiliary_size=20, evaluation_size=20, rounds=2, random_targets=1,
        vulnerable_targets=0, n_boot=10,
    )  # fmt: skip
    outcome = game.play(LogisticRegressionClassifier(epochs=1), LiRA(n_shadows=2, fix_variance=True), seed=SEED)
    assert np.isfinite(outcome.scores).all()


# -- 4. PrivBayes in a record game without public ranges --------------------------------------------------------
def test_privbayes_without_ranges_is_refused_before_any_run(run_refused):
    game = {"name": "record-model-seeded", "dataset_size": 50, "rounds": 2, "vulnerable_targets": 1}
    run_refused(
        _toml(_sections(game, {"name": "privbayes", "epsilon": 1.0}, {"name": "closest-distance", "n_shadows": 2})),
        "mechanism 'privbayes' cannot synthesise the 'adult' table: numeric column 'age' needs a public range",
        "ranges = {",
    )


def test_privbayes_with_the_public_ranges_can_discretise_the_table():
    from privgame.data import public_domain
    from privgame.data.features import population_table
    from privgame.mechanisms.synth.privbayes import PrivBayes

    sample = population_table("adult").iloc[:1]
    assert PrivBayes(epsilon=1.0, ranges=public_domain("adult").ranges).table_problem(sample) is None
    assert "needs a public range" in str(PrivBayes(epsilon=1.0).table_problem(sample))


# -- 5. the record games' smallest D ------------------------------------------------------------------------------
def test_a_released_dataset_smaller_than_the_achilles_neighbourhood_is_refused(run_refused):
    game = {"name": "record", "dataset_size": 4, "auxiliary_size": 4, "evaluation_size": 4, "vulnerable_targets": 1}
    attack = {"name": "closest-distance", "n_shadows": 2}
    run_refused(
        _toml(_sections({**game, "random_targets": 0}, {"name": "synthpop"}, attack)),
        "dataset_size must be at least 5",
        "got 4",
    )
    five = {**game, "dataset_size": 5, "auxiliary_size": 5, "evaluation_size": 5, "random_targets": 0}
    assert parse_config(_sections(five, {"name": "synthpop"}, attack)).grid[0].game.dataset_size == 5


# -- 7. a network too large for memory ----------------------------------------------------------------------------
def test_a_network_too_large_for_memory_is_refused_with_its_widths():
    # read only, never run: were it accepted, its first trial would exhaust the machine's memory
    huge = {"name": "mlp", "hidden": [65536] * 8, "epochs": 1}
    with pytest.raises(ConfigError, match=r"needs about [0-9.]+ TiB of memory") as info:
        parse_config(_sections(LIRA, huge, {"name": "lira"}))
    assert "mechanism.hidden = [65,536, " in str(info.value) and "\n" not in str(info.value)


def test_the_memory_estimate_grows_with_the_network_and_the_models_trained_at_once():
    from privgame.attacks.lira import LiRA
    from privgame.games.lira import LiRAGame
    from privgame.mechanisms.training import MLPClassifier

    wide = MLPClassifier(hidden=(4096, 4096))
    assert wide.model_bytes() >= 24 * 4096 * 4096  # six float32 copies of the middle layer's weights
    assert wide.memory_bytes(100) > MLPClassifier(hidden=(64,)).memory_bytes(100) + 20 * 4096 * 4096
    one, many = (LiRAGame(pool_size=200, n_models=64, batch=b).trial_bytes(wide, LiRA()) for b in (1, 64))
    assert many - one == 63 * wide.model_bytes()


# -- 8. a CUDA device this machine does not have -----------------------------------------------------------------
def test_a_missing_cuda_device_is_refused_from_the_config(run_refused):
    run_refused(
        _toml(_sections(LIRA, {**LOGISTIC, "device": "cuda:99"}, {"name": "lira"})), "device must be", "'cuda:99'"
    )


@pytest.mark.parametrize("mechanism", ["mlp", "dpsgd-mlp"])
def test_cuda_devices_are_checked_against_the_machine(monkeypatch, mechanism):
    torch = pytest.importorskip("torch")
    from privgame.engine.registry import MECHANISMS

    cls = MECHANISMS.get(mechanism)
    extra = {"noise_multiplier": 1.0} if mechanism == "dpsgd-mlp" else {}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    for device in ("cuda", "cuda:0", "cuda:99"):
        with pytest.raises(ValueError, match=rf"no CUDA device .*got '{device}'"):
            cls(device=device, **extra)
    assert cls(device="auto", **extra).device == "auto"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    with pytest.raises(ValueError, match=r"one of cuda:0 to cuda:1 \(this machine has 2 CUDA devices\), got 'cuda:99'"):
        cls(device="cuda:99", **extra)
    assert [cls(device=d, **extra).device for d in ("cuda", "cuda:0", "cuda:1")] == ["cuda", "cuda:0", "cuda:1"]


# -- 9. a CNN on a table ------------------------------------------------------------------------------------------
PANORAMIA = {
    "name": "panoramia",
    "data": "adult",
    "train_size": 600,
    "generator_rows": 200,
    "m": 200,
    "helper_rows": 200,
    "o1_candidates": 0,
}


def test_panoramia_with_a_cnn_classifier_is_refused_where_its_inputs_are_no_images(run_refused):
    sections = _sections(PANORAMIA, {"name": "mlp", "epochs": 1}, {"name": "classifier-mia"})
    sections["attack.classifier"] = {"name": "cnn", "image": [1, 9, 12]}  # 108 columns: the encoded table's width
    run_refused(_toml(sections), "the classifier of attack 'classifier-mia'", "mechanism 'cnn' reads images")


def test_a_cnn_on_a_table_is_refused_even_when_its_image_has_the_tables_width():
    from privgame.attacks.classifier import ClassifierMIA
    from privgame.games.panoramia import PanoramiaGame
    from privgame.mechanisms.training import CNNClassifier, MLPClassifier

    table = PanoramiaGame(**{k: v for k, v in PANORAMIA.items() if k != "name"})
    reason = table.incompatibility(CNNClassifier(image=(1, 9, 12)), ClassifierMIA())
    assert reason is not None and "reads its records as images, and the data set serves none" in reason
    digits = PanoramiaGame(data="digits", train_size=600, generator_rows=200, m=200, helper_rows=200, o1_candidates=0)
    assert "must be the data's images, [1, 8, 8]" in str(
        digits.incompatibility(CNNClassifier(image=(1, 4, 16)), ClassifierMIA())
    )
    cnn = CNNClassifier(epochs=1)
    assert "signal = 'loss'" in str(digits.classifier_problem(ClassifierMIA(classifier=cnn)))
    assert digits.classifier_problem(ClassifierMIA(classifier=cnn, signal="none")) is None  # the images alone
    assert digits.classifier_problem(ClassifierMIA(classifier=MLPClassifier(), signal="logits")) is None


# -- 11. more white-box canaries than a built-in model's coordinates ---------------------------------------------
WHITEBOX_GAME = {"name": "one-run", "m": 40, "k_pos": 5, "k_neg": 5, "data": "digits", "train_rows": 100}


@pytest.mark.parametrize(
    "mechanism",
    [{"name": "dpsgd-whitebox", "canary_layout": "reserved", "sampling_rate": 0.1}],
)
def test_more_reserved_canaries_than_coordinates_are_refused_naming_them(run_refused, tmp_path, mechanism):
    # (opacus-whitebox and dpsgd-loop reserve none: their canaries have a layer of their own)
    rows = ["a,b,y"] + [f"{i % 7},{i % 5},{i % 2}" for i in range(120)]
    (tmp_path / "tiny.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "tiny.domain.toml").write_text(
        '[columns.a]\nkind = "int"\nrange = [0, 6]\n[columns.b]\nkind = "int"\nrange = [0, 4]\n'
        '[columns.y]\nkind = "int"\nrange = [0, 1]\n'
    )
    sections = _sections(
        {k: v for k, v in WHITEBOX_GAME.items() if k != "data"},
        {**mechanism, "noise_multiplier": 1.0, "steps": 2, "clip_norm": 1.0, "learning_rate": 0.1},
        {"name": "identity"},
    )
    sections = {"experiment": sections["experiment"], "data": {"path": str(tmp_path / "tiny.csv"),
                "domain": str(tmp_path / "tiny.domain.toml"), "label": "y"}, **sections}  # fmt: skip
    run_refused(_toml(sections), "m must be at most the 6 trainable coordinates of model 'logistic'", "got 40")


def test_the_built_in_models_coordinates_are_counted_as_torch_builds_them():
    torch = pytest.importorskip("torch")
    from privgame.mechanisms.dpsgd.models import logistic_regression, mlp
    from privgame.mechanisms.dpsgd.whitebox import _HIDDEN, builtin_coordinates

    g = torch.Generator().manual_seed(0)
    for features, classes in ((2, 2), (64, 10)):
        nets = {
            "logistic": logistic_regression(features, classes, generator=g),
            "mlp": mlp((features, _HIDDEN, classes), generator=g),
        }
        for name, net in nets.items():
            assert builtin_coordinates(name, features, classes) == sum(p.numel() for p in net.parameters())


# -- 12. a DataFrame given to the Python API ---------------------------------------------------------------------
def test_a_dataframe_in_the_python_api_is_summarised_on_one_line(tmp_path):
    pd = pytest.importorskip("pandas")
    import privgame

    frame = pd.DataFrame({"a": [1, 2, 3], "b": [4, 5, 6]})
    config = _sections({"name": "one-run", "m": 10, "k_pos": 1, "k_neg": 1}, {"name": "randomized-response",
                       "epsilon": 1.0}, {"name": "identity"})  # fmt: skip
    calls = {
        "a DataFrame of shape (3, 2)": [
            lambda: privgame.run(frame, progress=False),
            lambda: privgame.run(config, out=frame, progress=False),
            lambda: privgame.run(config, n_jobs=frame, progress=False),
            lambda: privgame.run(config, repetitions=frame, progress=False),
            lambda: privgame.run(config, progress=frame),
            lambda: privgame.load(frame),
            lambda: privgame.run({**config, "mechanism": {"name": "randomized-response", "epsilon": frame}}),
        ],
        "a Series of shape (3,)": [lambda: privgame.run({**config, "game": {**config["game"], "m": frame["a"]}})],
    }
    for summary, runs in calls.items():
        for call in runs:
            with pytest.raises((TypeError, ValueError)) as info:
                call()
            assert "\n" not in str(info.value) and summary in str(info.value), str(info.value)
    with pytest.raises(ConfigError, match=r"^\[mechanism\] epsilon must be a value TOML holds"):
        privgame.run({**config, "mechanism": {"name": "randomized-response", "epsilon": frame}})
    assert not any(Path(tmp_path).iterdir())
    assert "pandas" in sys.modules


# -- 13. a split of one canary ----------------------------------------------------------------------------------
def test_a_split_of_a_single_canary_is_refused_and_a_lopsided_split_runs(run_refused, tmp_path):
    """A split needs a canary to choose the threshold on and one to bound on: at m = 1 every trial failed. At a
    fraction near 0 or 1 a split of a few canaries often left a part empty, and that trial failed on every rerun;
    such a split is now drawn again (privgame.analysis.thresholds.Split)."""
    from privgame.engine.cli import main

    def text(m: int, fraction: float) -> str:
        game = {"name": "one-run", "m": m, "k_pos": 1, "k_neg": 0}
        sections = {**_sections(game, {"name": "gaussian", "sigma": 1.0}, {"name": "identity"})}
        return _toml(sections) + f'[analysis]\nthreshold = {{rule = "split", fraction = {fraction}}}\n'

    run_refused(text(1, 0.5), "[analysis] threshold 'split' needs at least 2 canaries", "got m = 1")
    for fraction in (0.01, 0.99):
        config = tmp_path / f"lopsided-{fraction}.toml"
        config.write_text(text(20, fraction).replace("repetitions = 1", "repetitions = 10"))
        out = tmp_path / f"out-{fraction}"
        assert main(["run", str(config), "--out", str(out), "--no-progress"]) == 0
        assert not list((out / "failures").iterdir())
