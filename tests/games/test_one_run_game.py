"""The one-run game: validation, reproducibility, role streams, compatibility, analysis."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.one_run import epsilon_lower_bound
from attacks import Identity
from games import AnalysisSettings, OneRunGame, TrialOutcome
from mechanisms import GaussianMechanism, RandomizedResponse

SEED = np.random.SeedSequence(123, spawn_key=(0, 4))


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"m": 0, "k_pos": 0, "k_neg": 0}, ValueError, "m must be an integer >= 1, got 0"),
        ({"m": 10, "k_pos": 6, "k_neg": 5}, ValueError, r"k_pos \+ k_neg must be between 1 and m = 10"),
        ({"m": 10, "k_pos": 0, "k_neg": 0}, ValueError, r"k_pos \+ k_neg must be between 1 and m = 10"),
        ({"m": 10.0, "k_pos": 1, "k_neg": 1}, TypeError, "m must be an integer, got 10.0"),
        ({"m": 10, "k_pos": True, "k_neg": 1}, TypeError, "k_pos must be an integer, got True"),
    ],
)
def test_validation(kwargs, error, message):
    with pytest.raises(error, match=message):
        OneRunGame(**kwargs)


def test_frozen_and_picklable():
    game = OneRunGame(m=100, k_pos=10, k_neg=10)
    with pytest.raises(dataclasses.FrozenInstanceError):
        game.m = 5  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(game)) == game


def test_play_is_reproducible_and_seed_dependent():
    game = OneRunGame(m=1000, k_pos=100, k_neg=100)
    mech = GaussianMechanism(sigma=1.0)
    a = game.play(mech, Identity(), seed=SEED)
    b = game.play(mech, Identity(), seed=SEED)
    c = game.play(mech, Identity(), seed=np.random.SeedSequence(123, spawn_key=(0, 5)))
    np.testing.assert_array_equal(a.scores, b.scores)
    np.testing.assert_array_equal(a.membership, b.membership)
    assert not np.array_equal(a.membership, c.membership)


def test_membership_stream_independent_of_mechanism():
    game = OneRunGame(m=1000, k_pos=100, k_neg=100)
    a = game.play(GaussianMechanism(sigma=1.0), Identity(), seed=SEED)
    b = game.play(RandomizedResponse(epsilon=1.0), Identity(), seed=SEED)
    np.testing.assert_array_equal(a.membership, b.membership)


def test_membership_is_fair_coin():
    game = OneRunGame(m=100_000, k_pos=1, k_neg=0)
    outcome = game.play(RandomizedResponse(epsilon=1.0), Identity(), seed=SEED)
    assert stats.binomtest(int(outcome.membership.sum()), 100_000, 0.5).pvalue > 1e-3


def test_analyse_trial_matches_estimator():
    game = OneRunGame(m=1000, k_pos=300, k_neg=200)
    outcome = game.play(RandomizedResponse(epsilon=2.0), Identity(), seed=SEED)
    settings = AnalysisSettings(confidence=0.9, delta=0.0)
    metrics = game.analyse_trial(outcome, settings, seed=SEED)
    assert metrics["m"] == 1000 and metrics["r"] == 500
    assert metrics["epsilon_lb"] == pytest.approx(epsilon_lower_bound(1000, 500, int(metrics["v"]), confidence=0.9))
    assert game.analyse_trial(outcome, settings, seed=SEED) == metrics  # tie-breaking is seeded too


def test_incompatibility_message():
    game = OneRunGame(m=10, k_pos=1, k_neg=1)
    assert game.supports(RandomizedResponse(epsilon=1.0), Identity())

    @dataclasses.dataclass(frozen=True)
    class ModelOnly(Identity):
        accepts = frozenset({"model"})

    reason = game.incompatibility(RandomizedResponse(epsilon=1.0), ModelOnly())
    assert reason is not None and "scores releases of kind ['model']" in reason
    assert not game.supports(RandomizedResponse(epsilon=1.0), ModelOnly())


def test_summarise_columns():
    game = OneRunGame(m=10, k_pos=1, k_neg=1)
    rows = pd.DataFrame({"epsilon_lb": [1.0, 2.0, 4.0], "epsilon_analytic": [4.0] * 3})
    summary = game.summarise(rows, AnalysisSettings(), lambda i: None)  # type: ignore[arg-type,return-value]
    assert summary == {
        "epsilon_analytic": 4.0,
        "epsilon_lb_mean": pytest.approx(7 / 3),
        "epsilon_lb_median": 2.0,
        "epsilon_lb_min": 1.0,
        "epsilon_lb_max": 4.0,
        "tightness": 0.5,
        "n_trials": 3,
    }
    rows["epsilon_analytic"] = np.inf
    assert np.isnan(game.summarise(rows, AnalysisSettings(), lambda i: None)["tightness"])  # type: ignore[arg-type,return-value]


def test_trial_outcome_validation():
    with pytest.raises(ValueError, match="membership must be a 1-d array of length 2"):
        TrialOutcome(scores=np.zeros(2), membership=np.zeros(3, dtype=bool))
    with pytest.raises(ValueError, match="scores must be finite"):
        TrialOutcome(scores=np.array([0.0, np.nan]), membership=np.zeros(2, dtype=bool))
    with pytest.raises(ValueError, match="reserved names"):
        TrialOutcome(scores=np.zeros(2), membership=np.zeros(2, dtype=bool), arrays={"scores": np.zeros(2)})


def test_analysis_settings_validation():
    with pytest.raises(ValueError, match=r"confidence must be in \(0, 1\)"):
        AnalysisSettings(confidence=1.0)
    with pytest.raises(ValueError, match=r"delta must be in \[0, 1\)"):
        AnalysisSettings(delta=float("nan"))


GOLDEN_CONFIG = {
    "experiment": {"name": "golden", "seed": 2026, "repetitions": 2},
    "game": {"name": "one-run", "m": 500, "k_pos": 50, "k_neg": 50},
    "mechanism": {"name": "randomized-response", "epsilon": [1.0, 4.0]},
    "attack": {"name": "identity"},
    "analysis": {"confidence": 0.95, "delta": 0.0},
}


def test_golden_row_is_pinned_to_its_seed(stored_trial):
    """Trial 3 (grid point 1, repetition 1) as stored, recorded from the code on 2026-12-01.  A change here means
    the runner's seed spawning or the game's role-stream order changed: a breaking change for every stored result
    (the same config and seed would no longer replay them), to be made on purpose and announced, never silently."""
    row, outcome = stored_trial(GOLDEN_CONFIG, trial=3)
    assert (row["grid_point"], row["repetition"], row["spawn_key"]) == (1, 1, "1/1")
    assert (row["m"], row["r"], row["v"]) == (500, 100, 98)
    assert row["epsilon_lb"] == pytest.approx(2.7231823196361664, rel=1e-9)
    assert outcome.scores[:4].tolist() == [0.0, 1.0, 0.0, 1.0]
    assert outcome.membership[:10].astype(int).tolist() == [0, 1, 0, 1, 1, 1, 0, 1, 0, 0]
