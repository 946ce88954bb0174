"""The contract every registered component keeps (one suite for all, as in dp_accounting and scikit-learn).

The checks are :mod:`privgame.engine.testing`'s, the same a plugin's tests run (``tests/engine/test_testing.py`` shows
each one catching its fault on a broken component).  A new built-in component must add an example here, or this suite
fails."""

from __future__ import annotations

import sys
from pathlib import Path

from privgame.attacks import ClosestDistance, CountingQueries, ExactCopies, Groundhog, Identity, NegativeLoss
from privgame.attacks.classifier import ClassifierMIA
from privgame.attacks.density import DensityRatio
from privgame.attacks.ensemble import Ensemble
from privgame.attacks.lira import LiRA
from privgame.attacks.rmia import RMIA
from privgame.engine.registry import ATTACKS, GAMES, MECHANISMS
from privgame.engine.testing import checks_for, parametrize_with_checks
from privgame.games import MultiRunGame, OneRunGame
from privgame.games.lira import LiRAGame
from privgame.games.panoramia import PanoramiaGame
from privgame.games.record import ModelSeededRecordGame, RecordGames, TraditionalRecordGame
from privgame.mechanisms import GaussianMechanism, RandomizedResponse
from privgame.mechanisms.dpsgd.blackbox import DPSGDBlackBox
from privgame.mechanisms.dpsgd.broken import DPSGDBroken
from privgame.mechanisms.dpsgd.classifier import DPSGDClassifier
from privgame.mechanisms.dpsgd.opacus_engine import LoopWhiteBox, OpacusWhiteBox
from privgame.mechanisms.dpsgd.whitebox import DPSGDWhiteBox
from privgame.mechanisms.synth import BayNet, ExternalGenerator, GaussianMixtureGenerator, PrivBayes, Synthpop
from privgame.mechanisms.training import (
    CNNClassifier,
    GradientBoostedTrees,
    LogisticRegressionClassifier,
    MLPClassifier,
    SklearnModel,
)

RESAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "external_resample.py"

EXAMPLES = {
    ("game", "one-run"): OneRunGame(m=100, k_pos=10, k_neg=10),
    ("game", "multi-run"): MultiRunGame(runs=4),
    ("game", "record-traditional"): TraditionalRecordGame(dataset_size=50, rounds=4),
    ("game", "record-model-seeded"): ModelSeededRecordGame(dataset_size=50, rounds=4, neighbours="add-remove"),
    ("game", "record"): RecordGames(dataset_size=50, rounds=4),
    ("game", "lira"): LiRAGame(pool_size=200, n_models=6, n_boot=40),
    ("game", "panoramia"): PanoramiaGame(
        train_size=700,
        generator_rows=200,
        m=300,
        helper_rows=200,
        o1_candidates=200,
        o1_guesses=20,
        thresholds=10,
        helper=LogisticRegressionClassifier(epochs=2),
    ),
    ("mechanism", "randomized-response"): RandomizedResponse(epsilon=1.0),
    ("mechanism", "gaussian"): GaussianMechanism(sigma=1.0),
    # σ = 3 keeps the PLD accountant's ε fast (0.4 s a δ against 2.5 s at σ = 1)
    ("mechanism", "dpsgd-whitebox"): DPSGDWhiteBox(noise_multiplier=3.0, steps=5),
    ("mechanism", "dpsgd-broken"): DPSGDBroken(flaw="noise_for_mean", noise_multiplier=3.0, steps=5),
    ("mechanism", "opacus-whitebox"): OpacusWhiteBox(noise_multiplier=3.0, sampling_rate=0.5, steps=5, model="mlp"),
    ("mechanism", "dpsgd-loop"): LoopWhiteBox(noise_multiplier=3.0, sampling_rate=0.5, steps=5, model="mlp"),
    ("mechanism", "dpsgd-blackbox"): DPSGDBlackBox(noise_multiplier=3.0, steps=5, hidden=(8,)),
    ("mechanism", "logistic-regression"): LogisticRegressionClassifier(epochs=2),
    ("mechanism", "mlp"): MLPClassifier(hidden=(8,), epochs=2),
    ("mechanism", "gradient-boosted-trees"): GradientBoostedTrees(max_iter=5),
    ("mechanism", "sklearn"): SklearnModel(params={"n_estimators": 5, "max_depth": "None"}),
    ("mechanism", "cnn"): CNNClassifier(image=(1, 4, 4), channels=(2, 2), epochs=1),
    ("mechanism", "dpsgd-mlp"): DPSGDClassifier(noise_multiplier=3.0, steps=5, hidden=(8,)),
    ("mechanism", "synthpop"): Synthpop(),
    ("mechanism", "baynet"): BayNet(k=2),
    ("mechanism", "gaussian-mixture"): GaussianMixtureGenerator(components=2),
    ("mechanism", "privbayes"): PrivBayes(epsilon=1.0, k=1, ranges={"age": (17, 90)}),
    # a program as the generator: docs/examples/external_resample.py, standard library only, run by this Python
    ("mechanism", "external"): ExternalGenerator(
        command=[
            sys.executable,
            str(RESAMPLE),
            "--train",
            "{train}",
            "--out",
            "{out}",
            "--seed",
            "{seed}",
            "--rows",
            "{rows}",
        ],
        ranges={"age": (17, 90)},
    ),
    ("attack", "negative-loss"): NegativeLoss(),
    ("attack", "identity"): Identity(),
    ("attack", "lira"): LiRA(n_shadows=4),
    ("attack", "rmia"): RMIA(),
    ("attack", "density-ratio"): DensityRatio(n_shadows=4),
    ("attack", "ensemble"): Ensemble(n_shadows=4, n_estimators=5),
    ("attack", "classifier-mia"): ClassifierMIA(classifier=GradientBoostedTrees(max_iter=5)),
    ("attack", "tapas-queries"): CountingQueries(n_shadows=4, n_estimators=5),
    ("attack", "groundhog"): Groundhog(n_shadows=4, n_estimators=5),
    ("attack", "closest-distance"): ClosestDistance(n_shadows=4),
    ("attack", "exact-copies"): ExactCopies(n_shadows=4),
}
REGISTERED = [(r.kind, name) for r in (GAMES, MECHANISMS, ATTACKS) for name in r.names()]


def test_every_registered_component_has_an_example():
    assert sorted(REGISTERED) == sorted(EXAMPLES)
    for (kind, name), component in EXAMPLES.items():
        assert type(component).name == name
        assert {"game": GAMES, "mechanism": MECHANISMS, "attack": ATTACKS}[kind].get(name) is type(component)


def test_every_kind_gets_its_own_checks():
    """The suite below runs the kind's checks, not only the common ones (so a kind cannot silently drop out)."""
    names = {key[0]: {c.name for c in checks_for(EXAMPLES[key])} for key in EXAMPLES}
    assert {"check_release_reproducible", "check_release_runs", "check_privacy_claim"} <= names["mechanism"]
    assert {"check_attack_kinds", "check_attack_scores"} <= names["attack"]
    assert {"check_game_kinds", "check_game_play"} <= names["game"]
    assert all({"check_frozen", "check_picklable_hashable", "check_dataclass"} <= n for n in names.values())


IMAGES = {("mechanism", "cnn")}  # read image rows: their checks run on a pool of 4×4 images (below)


@parametrize_with_checks([EXAMPLES[key] for key in sorted(EXAMPLES) if key not in IMAGES])
def test_component_contract(component, check):
    check(component)


def _image_pool():
    import numpy as np

    from privgame.mechanisms.training.data import TrainingData

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 120)
    x = (rng.random((120, 16)) + y[:, None] * np.tile([1.0, 0.0], 8)).astype(np.float32)
    return TrainingData(x, y, rng.random(120) < 0.6)


@parametrize_with_checks([EXAMPLES[key] for key in sorted(IMAGES)], inputs={"dataset": _image_pool()})
def test_image_component_contract(component, check):
    check(component)
