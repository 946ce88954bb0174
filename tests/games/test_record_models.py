"""The record-level games played on trained models with LiRA: what the mechanism and the attack are given."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

from privgame.attacks.lira import LiRA
from privgame.games._base import AnalysisSettings, TrialContext
from privgame.games.record import ModelSeededRecordGame, RecordGames
from privgame.mechanisms.training import LogisticRegressionClassifier, TrainingData
from privgame.mechanisms.training.models import TrainedModel

SMALL: dict[str, Any] = {
    "dataset_size": 60,
    "auxiliary_size": 300,
    "evaluation_size": 300,
    "rounds": 8,
    "vulnerable_targets": 1,
    "random_targets": 1,
    "n_boot": 40,
}
SEED = np.random.SeedSequence(5, spawn_key=(0, 0))
SEEN: list[TrainingData] = []


@dataclass(frozen=True, slots=True)
class RecordingModel(TrainedModel):
    """Logistic regression that remembers every training input (in-process only)."""

    name: ClassVar[str] = "recording-model"

    def privacy_claim(self) -> None:
        return None

    def train(self, pool: Any, masks: np.ndarray, rngs: Any, *, sizes: Any) -> list[Any]:
        SEEN.extend(pool.with_include(m, size=s) for m, s in zip(masks, sizes, strict=True))
        return LogisticRegressionClassifier(epochs=1, batch_size=30).train(pool, masks, rngs, sizes=sizes)


def test_lira_plays_both_record_games_on_a_model():
    game = RecordGames(**SMALL)
    attack = LiRA(n_shadows=4)
    assert game.incompatibility(LogisticRegressionClassifier(), attack) is None
    outcome = game.play(LogisticRegressionClassifier(epochs=2, batch_size=30), attack, seed=SEED)
    assert outcome.scores.shape == (16,) and np.isfinite(outcome.scores).all()
    rows = game.record_rows(outcome, AnalysisSettings(), seed=SEED)
    assert [r["game"] for r in rows] == ["traditional", "model-seeded"]
    assert all(0.0 <= r["auc"] <= 1.0 for r in rows)


@pytest.mark.parametrize("neighbours", ["replace", "add-remove"])
def test_every_training_set_has_the_public_size_and_the_worlds_hold_the_target_or_not(neighbours):
    SEEN.clear()
    game = ModelSeededRecordGame(**SMALL, neighbours=neighbours)
    game.play(RecordingModel(), LiRA(n_shadows=4), seed=SEED)
    n = SMALL["dataset_size"]
    assert len(SEEN) == 4 + SMALL["rounds"]  # the attack's shadows, then the rounds
    assert all(d.public_size == n for d in SEEN)  # also the add/remove world's n − 1 records: n is public
    sizes = sorted({d.n_train for d in SEEN})
    assert sizes == ([n] if neighbours == "replace" else [n - 1, n])


def test_a_model_game_refuses_columns_and_a_table_attack():
    from privgame.attacks import ClosestDistance

    game = RecordGames(**SMALL, columns=("age", "sex", "income"))
    assert "columns must be left out for a trained model" in str(
        game.incompatibility(LogisticRegressionClassifier(), LiRA())
    )
    reason = RecordGames(**SMALL).incompatibility(LogisticRegressionClassifier(), ClosestDistance())
    assert reason is not None and "scores releases of kind ['table']" in reason


def test_rounds_and_shadows_of_a_model_go_through_the_cache(tmp_path):
    from privgame.core.cache import ArtefactCache

    cache = ArtefactCache(tmp_path)
    game = ModelSeededRecordGame(**SMALL)
    mechanism = LogisticRegressionClassifier(epochs=1, batch_size=30)
    first = game.play(mechanism, LiRA(n_shadows=4), seed=SEED, context=TrialContext(cache=cache))
    entries = len(list(tmp_path.rglob("*.npz")))
    assert entries == 4 + SMALL["rounds"]
    again = game.play(mechanism, LiRA(n_shadows=4), seed=SEED, context=TrialContext(cache=cache))
    assert len(list(tmp_path.rglob("*.npz"))) == entries
    np.testing.assert_array_equal(first.scores, again.scores)
