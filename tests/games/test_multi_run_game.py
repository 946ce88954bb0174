"""The multi-run game: validation, balanced seeded membership, batching through release_runs, pooled analysis,
and (slow) soundness of the per-trial Clopper–Pearson bound end to end."""

from __future__ import annotations

import dataclasses
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from privgame.attacks import Identity, NegativeLoss
from privgame.engine.testing import check_component
from privgame.games import AnalysisSettings, MultiRunGame, TrialOutcome
from privgame.mechanisms import GaussianMechanism, RandomizedResponse
from privgame.mechanisms._base import check_runs

SEED = np.random.SeedSequence(321, spawn_key=(0, 2))


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"runs": 1}, ValueError, "runs must be an integer >= 2, got 1"),
        ({"runs": 4.0}, TypeError, "runs must be an integer, got 4.0"),
        ({"thresholds": 0}, ValueError, "thresholds must be an integer >= 1, got 0"),
    ],
)
def test_validation(kwargs, error, message):
    with pytest.raises(error, match=message):
        MultiRunGame(**kwargs)


def test_frozen_and_picklable():
    game = MultiRunGame(runs=10)
    with pytest.raises(dataclasses.FrozenInstanceError):
        game.runs = 5  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(game)) == game


@pytest.mark.parametrize("runs", [2, 7, 64])
def test_membership_is_balanced_shuffled_and_reproducible(runs):
    game = MultiRunGame(runs=runs)
    a = game.play(RandomizedResponse(epsilon=1.0), Identity(), seed=SEED)
    b = game.play(RandomizedResponse(epsilon=1.0), Identity(), seed=SEED)
    assert a.scores.shape == a.membership.shape == (runs,)
    assert a.membership.sum() == (runs + 1) // 2
    np.testing.assert_array_equal(a.scores, b.scores)
    np.testing.assert_array_equal(a.membership, b.membership)


def test_runs_are_independent_releases_of_one_canary():
    """Run j is mechanism.release([bit_j]) with the j-th child of the mechanism stream (whatever the batching)."""
    game = MultiRunGame(runs=6)
    mech = GaussianMechanism(sigma=1.0)
    outcome = game.play(mech, Identity(), seed=SEED)
    from privgame.games._base import role_seeds

    children = role_seeds(SEED, 3)[1].spawn(6)
    expected = [
        mech.release(np.array([b]), rng=np.random.default_rng(s))[0]
        for b, s in zip(outcome.membership, children, strict=True)
    ]
    np.testing.assert_array_equal(outcome.scores, expected)


def test_default_release_runs_loops_and_checks():
    mech = RandomizedResponse(epsilon=0.5)
    data = [np.array([True, False]), np.array([False, False])]
    runs = mech.release_runs(data, rngs=[np.random.default_rng(1), np.random.default_rng(2)])
    for d, seed, out in zip(data, (1, 2), runs, strict=True):
        np.testing.assert_array_equal(out, mech.release(d, rng=np.random.default_rng(seed)))
    with pytest.raises(ValueError, match="one rng per input, got 2 inputs and 1 rngs"):
        mech.release_runs(data, rngs=[np.random.default_rng(1)])
    with pytest.raises(TypeError, match=r"rngs\[0\] must be a numpy.random.Generator"):
        check_runs(data[:1], [3])


def test_trial_and_pooled_analysis():
    game = MultiRunGame(runs=200)
    settings = AnalysisSettings(confidence=0.95)
    mech = RandomizedResponse(epsilon=3.0)
    outcomes = [game.play(mech, Identity(), seed=s) for s in np.random.SeedSequence(5).spawn(4)]
    rows = []
    for t, (o, s) in enumerate(zip(outcomes, np.random.SeedSequence(5).spawn(4), strict=True)):
        metrics = game.analyse_trial(o, settings, seed=s)
        assert metrics["n_in"] == 100 and metrics["n_runs"] == 200
        assert 0.0 < metrics["epsilon_lb"] < 3.0
        rows.append({"trial": t, "epsilon_analytic": 3.0, **metrics})
    summary = game.summarise(pd.DataFrame(rows), settings, lambda t: outcomes[t])
    assert summary["n_runs"] == 800 and summary["n_trials"] == 4
    # pooling 800 runs beats every single trial's 200
    assert summary["epsilon_lb"] > summary["epsilon_lb_max"]
    assert summary["epsilon_lb"] < 3.0
    assert summary["tightness"] == pytest.approx(summary["epsilon_lb"] / 3.0)
    assert 0.0 < summary["fpr_ub"] < 0.1 and 0.0 < summary["fnr_ub"] < 0.1


def test_outcome_type():
    outcome = MultiRunGame(runs=4).play(RandomizedResponse(epsilon=1.0), Identity(), seed=SEED)
    assert isinstance(outcome, TrialOutcome)


@pytest.mark.slow
@pytest.mark.parametrize("confidence", [0.95, 0.7])
def test_trial_bound_soundness_on_randomized_response(confidence):
    """Over R = 400 trials of 400 runs each, the count of per-trial bounds above ε = 1 passes the binomial test of
    STYLE.md (randomized response with the identity attack is the worst case of a one-canary test)."""
    game = MultiRunGame(runs=400, thresholds=1)
    settings = AnalysisSettings(confidence=confidence)
    violations = 0
    r = 400
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in np.random.SeedSequence(20261130).spawn(r):
            outcome = game.play(RandomizedResponse(epsilon=1.0), Identity(), seed=seed)
            violations += game.analyse_trial(outcome, settings, seed=seed)["epsilon_lb"] > 1.0
    p = stats.binomtest(violations, r, 1 - confidence, alternative="greater").pvalue
    assert p > 1e-3, f"{violations}/{r} bounds above ε = 1 at confidence {confidence}"


@pytest.mark.slow
def test_point_estimate_is_caught():
    """Meta-test: the same check rejects the empirical ε̂ = ln((1 − FNR)/FPR) without confidence intervals."""
    game = MultiRunGame(runs=400)
    violations = 0
    r = 400
    for seed in np.random.SeedSequence(20261130).spawn(r):
        outcome = game.play(RandomizedResponse(epsilon=1.0), Identity(), seed=seed)
        guess = outcome.scores > 0.5
        fpr = guess[~outcome.membership].mean()
        fnr = (~guess[outcome.membership]).mean()
        violations += np.log((1 - fnr) / fpr) > 1.0
    assert stats.binomtest(violations, r, 0.05, alternative="greater").pvalue <= 1e-3


GOLDEN_CONFIG = {
    "experiment": {"name": "golden", "seed": 2026, "repetitions": 2},
    "game": {"name": "multi-run", "runs": 64, "thresholds": 10},
    "mechanism": {"name": "gaussian", "sigma": [0.25, 1.0]},
    "attack": {"name": "identity"},
    "analysis": {"confidence": 0.95, "delta": 1e-5},
}


def test_golden_row_is_pinned_to_its_seed(stored_trial):
    """Trial 1 (grid point 0, repetition 1) as stored, recorded from the code on 2026-12-01.  A change here means
    the runner's seed spawning or the game's role-stream order (membership, mechanism runs, attack) changed: a
    breaking change for every stored result, to be made on purpose and announced, never silently."""
    row, outcome = stored_trial(GOLDEN_CONFIG, trial=1)
    assert (row["grid_point"], row["repetition"], row["spawn_key"]) == (0, 1, "0/1")
    assert (row["n_in"], row["n_runs"]) == (32, 64)
    assert row["epsilon_lb"] == pytest.approx(1.3769093078419359, rel=1e-9)
    expected = [-0.004646973174419824, 0.06227439719317325, 0.9228501074749105, 0.04731261648707269]
    np.testing.assert_allclose(outcome.scores[:4], expected, rtol=1e-12)
    assert outcome.membership[:10].astype(int).tolist() == [0, 0, 1, 0, 1, 0, 0, 1, 0, 0]


# -- canary-dataset mechanisms ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"data": "mnist"}, ValueError, "data must be one of adult, compas, digits"),
        ({"canary": "ood"}, ValueError, "canary must be omitted when data is"),
        (
            {"data": "digits", "train_rows": 1797, "canary": "mislabel"},
            ValueError,
            r"train_rows must be at most 1,796 to leave 1 of the 1,797 records of digits to mislabel as canaries, "
            r"got 1,797",
        ),
    ],
)
def test_data_validation(kwargs, error, message):
    with pytest.raises(error, match=message):
        MultiRunGame(**kwargs)


def test_data_incompatibility():
    reason = MultiRunGame(data="digits").incompatibility(RandomizedResponse(epsilon=1.0), Identity())
    assert reason is not None and "game.data must be omitted" in reason
    pytest.importorskip("torch")
    from privgame.mechanisms.dpsgd.blackbox import DPSGDBlackBox

    reason = MultiRunGame().incompatibility(DPSGDBlackBox(noise_multiplier=1.0), NegativeLoss())
    assert reason is not None and "game 'multi-run' needs data" in reason
    reason = MultiRunGame(data="digits").incompatibility(DPSGDBlackBox(noise_multiplier=1.0), NegativeLoss())
    assert reason is not None and "game 'multi-run' needs canary" in reason


def test_runs_share_the_rows_and_canary_with_their_own_bit():
    """Run j of a canary-dataset mechanism is its release on (bit_j, the game's rows, the one canary), with the
    j-th child of the mechanism stream, equal to the batched pass."""
    pytest.importorskip("torch")
    from privgame.data.canaries import canary_data
    from privgame.games._base import role_seeds
    from privgame.mechanisms.dpsgd.blackbox import DPSGDBlackBox

    game = MultiRunGame(runs=4, data="digits", train_rows=80, canary="mislabel", canary_seed=2)
    mech = DPSGDBlackBox(noise_multiplier=1.0, steps=3, sampling_rate=0.5)
    outcome = game.play(mech, NegativeLoss(), seed=SEED)
    children = role_seeds(SEED, 3)[1].spawn(4)
    for bit, child, score in zip(outcome.membership, children, outcome.scores, strict=True):
        data = canary_data(np.array([bit]), data="digits", train_rows=80, canary="mislabel", canary_seed=2)
        alone = mech.release(data, rng=np.random.default_rng(child))
        assert score == pytest.approx(NegativeLoss().score(alone, np.zeros(1, dtype=np.intp))[0], abs=1e-4)


def test_a_canary_dataset_game_keeps_the_component_contract():
    pytest.importorskip("torch")
    check_component(MultiRunGame(runs=4, data="digits", train_rows=50))


WHITEBOX_CONFIG = {
    "experiment": {"name": "golden-dpsgd", "seed": 2026, "repetitions": 2},
    "game": {"name": "multi-run", "runs": 8, "thresholds": 4, "data": "digits", "train_rows": 50},
    "mechanism": {"name": "dpsgd-whitebox", "noise_multiplier": 1.0, "sampling_rate": 0.5, "steps": 3, "model": "mlp"},
    "attack": {"name": "identity"},
    "analysis": {"confidence": 0.95, "delta": 1e-5},
}


def test_golden_dpsgd_whitebox_row_is_the_pre_port_codes(stored_trial):
    """Trial 1 of a small multi-run white-box DP-SGD config on the game's digits: the numbers the code gave when
    the mechanism loaded the digits itself (commit d997b3e), to the last bit."""
    pytest.importorskip("torch")
    row, outcome = stored_trial(WHITEBOX_CONFIG, trial=1)
    assert row["epsilon_lb"] == 0.0 and (row["n_in"], row["n_runs"]) == (4, 8)
    expected = [-0.03541254849241281, -0.015726977539694542, -0.018551352326684367, 0.023229820766368744]
    assert outcome.scores[:4].tolist() == expected
    assert outcome.membership.astype(int).tolist() == [0, 0, 0, 1, 1, 0, 1, 1]


# -- a DP-SGD multi-run trial's runs as tasks (privgame.engine.tasks) ----------------------------------------------
def _whitebox_game() -> tuple[MultiRunGame, object]:
    from privgame.mechanisms.dpsgd.whitebox import DPSGDWhiteBox

    game = MultiRunGame(runs=8, thresholds=10, data="digits", train_rows=120)
    mechanism = DPSGDWhiteBox(noise_multiplier=1.0, sampling_rate=0.2, steps=8, learning_rate=0.5)
    return game, mechanism


def test_dpsgd_runs_made_apart_in_pieces_are_the_runs_play_trains(tmp_path):
    from privgame.core.cache import ArtefactCache
    from privgame.games._base import TrialContext

    game, mechanism = _whitebox_game()
    assert game.separate_runs(mechanism, Identity()) == 8
    assert MultiRunGame(runs=8).separate_runs(RandomizedResponse(epsilon=1.0), Identity()) == 0  # cheap: no tasks
    cache = ArtefactCache(tmp_path / "cache")
    for runs in (range(0, 3), range(3, 4), range(4, 8)):
        game.make_runs(mechanism, Identity(), seed=SEED, runs=runs, context=TrialContext(cache=cache))
    assert len(list((tmp_path / "cache").glob("v1/arrays/*/*.npz"))) == 8
    writes = []
    original = cache.put_arrays
    cache.put_arrays = lambda *a, **k: (writes.append(1), original(*a, **k))[1]  # type: ignore[method-assign]
    read = game.play(mechanism, Identity(), seed=SEED, context=TrialContext(cache=cache))
    assert writes == [] and cache.hits == 8  # every run read, none trained
    fresh = game.play(mechanism, Identity(), seed=SEED)  # no cache: the batched release_runs of before
    np.testing.assert_array_equal(read.scores, fresh.scores)
    np.testing.assert_array_equal(read.membership, fresh.membership)
    with pytest.raises(ValueError, match=r"runs must be a non-empty range of run indices in \[0, 8\)"):
        game.make_runs(mechanism, Identity(), seed=SEED, runs=range(7, 9), context=TrialContext(cache=cache))


def test_a_cached_run_that_is_not_one_float_vector_is_damaged_and_trained_again(tmp_path):
    from privgame.core.cache import ArtefactCache
    from privgame.mechanisms.cached import cached_release, release_key

    game, mechanism = _whitebox_game()
    membership, data, seeds = game._runs(mechanism, SEED)
    cache = ArtefactCache(tmp_path / "cache")
    key = release_key(mechanism, data[0], seeds[0])
    other = int(np.flatnonzero(membership != membership[0])[0])
    assert key is not None and release_key(mechanism, data[other], seeds[0]) != key  # the bits are content
    cache.put_arrays(key, {"values": np.zeros((1, 1))})  # a stranger's entry of the wrong shape
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = cached_release(mechanism, data[0], seed=seeds[0], cache=cache)
    np.testing.assert_array_equal(value, mechanism.release(data[0], rng=np.random.default_rng(seeds[0])))
