"""The contract every registered component keeps (one suite for all, as in dp_accounting and scikit-learn):
frozen, picklable, hashable dataclasses with a one-line description; mechanisms reproducible from their rng and
stating a claim.  A new built-in component must add an example here, or this suite fails."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pandas as pd
import pytest

from analysis.accounting import PrivacyClaim
from attacks import ClosestDistance, CountingQueries, ExactCopies, Groundhog, Identity, NegativeLoss
from attacks.knowledge import BlackBox, Knowledge
from games import MultiRunGame, OneRunGame
from games.record import ModelSeededRecordGame, RecordGames, TraditionalRecordGame
from games.registry import ATTACKS, GAMES, MECHANISMS, summary_line
from mechanisms import GaussianMechanism, RandomizedResponse
from mechanisms.dpsgd.blackbox import DPSGDBlackBox
from mechanisms.dpsgd.whitebox import DPSGDWhiteBox
from mechanisms.synth import BayNet, PrivBayes, Synthpop

EXAMPLES = {
    ("game", "one-run"): OneRunGame(m=100, k_pos=10, k_neg=10),
    ("game", "multi-run"): MultiRunGame(runs=4),
    ("game", "record-traditional"): TraditionalRecordGame(dataset_size=50, rounds=4),
    ("game", "record-model-seeded"): ModelSeededRecordGame(dataset_size=50, rounds=4, neighbours="add-remove"),
    ("game", "record"): RecordGames(dataset_size=50, rounds=4),
    ("mechanism", "randomized-response"): RandomizedResponse(epsilon=1.0),
    ("mechanism", "gaussian"): GaussianMechanism(sigma=1.0),
    ("mechanism", "dpsgd-whitebox"): DPSGDWhiteBox(noise_multiplier=1.0, steps=5, train_rows=100),
    ("mechanism", "dpsgd-blackbox"): DPSGDBlackBox(noise_multiplier=1.0, steps=5, train_rows=100),
    ("mechanism", "synthpop"): Synthpop(),
    ("mechanism", "baynet"): BayNet(k=2),
    ("mechanism", "privbayes"): PrivBayes(epsilon=1.0, k=1, ranges={"age": (17, 90)}),
    ("attack", "negative-loss"): NegativeLoss(),
    ("attack", "identity"): Identity(),
    ("attack", "tapas-queries"): CountingQueries(n_shadows=4, n_estimators=5),
    ("attack", "groundhog"): Groundhog(n_shadows=4, n_estimators=5),
    ("attack", "closest-distance"): ClosestDistance(n_shadows=4),
    ("attack", "exact-copies"): ExactCopies(n_shadows=4),
}
REGISTERED = [(r.kind, name) for r in (GAMES, MECHANISMS, ATTACKS) for name in r.names()]
_TABLE_RNG = np.random.default_rng(0)
BITS = {
    "canary-bits": _TABLE_RNG.random(200) < 0.5,
    "table": pd.DataFrame(
        {
            "age": _TABLE_RNG.integers(17, 91, 200),
            "sex": pd.Categorical(_TABLE_RNG.choice(["Female", "Male"], 200), categories=["Female", "Male"]),
            "grade": pd.Categorical(_TABLE_RNG.choice(list("abcd"), 200), categories=list("abcde")),
        }
    ),
}


def test_every_registered_component_has_an_example():
    assert sorted(REGISTERED) == sorted(EXAMPLES)


@pytest.mark.parametrize("key", sorted(EXAMPLES))
def test_frozen_picklable_hashable_described(key):
    component = EXAMPLES[key]
    assert dataclasses.is_dataclass(component) and type(component).__dataclass_params__.frozen
    for field in dataclasses.fields(component):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(component, field.name, getattr(component, field.name))
    clone = pickle.loads(pickle.dumps(component))
    assert clone == component and hash(clone) == hash(component)
    assert summary_line(type(component))
    assert type(component).name == key[1]


def _release_values(release):
    """A comparable view of a release (a model release through its canaries' losses, a table as numbers)."""
    if isinstance(release, pd.DataFrame):
        return np.column_stack(
            [release[c].cat.codes if release[c].dtype == "category" else release[c] for c in release]
        )
    return release.losses(np.arange(BITS["canary-bits"].size)) if hasattr(release, "losses") else release


@pytest.mark.parametrize("name", MECHANISMS.names())
def test_mechanism_reproducible_from_rng_and_states_a_claim(name):
    mechanism = EXAMPLES[("mechanism", name)]
    data = BITS[mechanism.input_kind]
    a = _release_values(mechanism.release(data, rng=np.random.default_rng(7)))
    b = _release_values(mechanism.release(data, rng=np.random.default_rng(7)))
    c = _release_values(mechanism.release(data, rng=np.random.default_rng(8)))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    claim = mechanism.privacy_claim()
    assert claim is None or isinstance(claim, PrivacyClaim)


@pytest.mark.parametrize("name", MECHANISMS.names())
def test_release_runs_equals_separate_releases(name):
    """Batched runs (the multi-run game's path) give what separate releases give, whatever the mechanism."""
    mechanism = EXAMPLES[("mechanism", name)]
    first = BITS[mechanism.input_kind]
    data = [first, ~first] if mechanism.input_kind == "canary-bits" else [first, first.iloc[::-1]]
    batched = mechanism.release_runs(data, rngs=[np.random.default_rng(3), np.random.default_rng(4)])
    for d, seed, release in zip(data, (3, 4), batched, strict=True):
        alone = mechanism.release(d, rng=np.random.default_rng(seed))
        np.testing.assert_allclose(_release_values(release), _release_values(alone), rtol=0, atol=1e-10)


RELEASES = {
    "per-canary-values": lambda: EXAMPLES[("mechanism", "randomized-response")].release(
        BITS["canary-bits"], rng=np.random.default_rng(1)
    ),
    "model-with-canaries": lambda: EXAMPLES[("mechanism", "dpsgd-blackbox")].release(
        BITS["canary-bits"], rng=np.random.default_rng(1)
    ),
}


@pytest.mark.parametrize("name", ATTACKS.names())
def test_attack_scores_are_float64_per_target(name):
    attack = EXAMPLES[("attack", name)]
    if attack.needs == "auxiliary":  # fitted on shadow tables, scores the one target it was fitted for
        table = BITS["table"]
        knowledge = Knowledge(table.iloc[:150], table.iloc[[199]], 20, BlackBox(EXAMPLES[("mechanism", "synthpop")]))
        fitted = attack.fit(knowledge, rng=np.random.default_rng(0))
        release = EXAMPLES[("mechanism", "synthpop")].release(table.iloc[150:170], rng=np.random.default_rng(1))
        targets = np.zeros(1, dtype=np.intp)
        scores = fitted.score(release, targets)
    else:
        fitted = attack.fit(None, rng=np.random.default_rng(0))
        (kind,) = sorted(attack.accepts)
        targets = np.arange(0, 200, 3)
        scores = fitted.score(RELEASES[kind](), targets)
    assert scores.dtype == np.float64 and scores.shape == targets.shape
    assert np.all(np.isfinite(scores))
    assert np.isfinite(float(fitted.threshold))
