"""The ensemble attack on synthetic tables (attacks/ensemble.py): its features are the families' own, stacked;
a copy found and an input-blind generator not; one-line refusals."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from synthetic_worlds import AUX, TARGET, Blind, CopyTable, attack_auc

from privgame.attacks._tables import TableSchema
from privgame.attacks.density import log_kernel_density
from privgame.attacks.distance import mixed_distances
from privgame.attacks.ensemble import Ensemble
from privgame.attacks.groundhog import groundhog_features
from privgame.attacks.knowledge import BlackBox, Knowledge
from privgame.attacks.queries import CountingQueries


def _knowledge(mechanism=None) -> Knowledge:
    return Knowledge(AUX, TARGET, 10, BlackBox(mechanism or CopyTable()))


def test_the_features_are_each_familys_own_in_order():
    knowledge = _knowledge()
    release = AUX.iloc[:25].reset_index(drop=True)
    got = Ensemble().featuriser(knowledge, rng=np.random.default_rng(3))(release)
    schema = TableSchema.of(AUX)
    target = schema.codes(TARGET)[0]
    queries = CountingQueries(numeric_match="both").featuriser(knowledge, rng=np.random.default_rng(3))(release)
    numeric = np.array([False] * 4 + [True])  # c one-hot on a, b, c, d; then x
    groundhog = groundhog_features(schema.one_hot(release), numeric, 10)
    gaps = np.sort(mixed_distances(schema.codes(release), target, schema))
    density = log_kernel_density(schema.codes(release), target, schema, 0.5) - log_kernel_density(
        schema.codes(AUX), target, schema, 0.5
    )
    expected = np.concatenate([queries, groundhog, [gaps[0], gaps[:5].mean(), np.sum(gaps == 0)], [density]])
    np.testing.assert_allclose(got, expected.astype(np.float32), rtol=1e-6)
    only = Ensemble(features=("density", "distance")).featuriser(knowledge, rng=np.random.default_rng(3))(release)
    np.testing.assert_allclose(only, expected[-4:].astype(np.float32), rtol=1e-6)  # stacked in the fixed order


def test_the_distance_features_see_an_exact_copy_and_an_empty_table():
    knowledge = _knowledge()
    featurise = Ensemble(features=("distance",)).featuriser(knowledge, rng=np.random.default_rng(0))
    with_copies = pd.concat([AUX.iloc[:5], TARGET, TARGET], ignore_index=True)
    np.testing.assert_array_equal(featurise(with_copies)[[0, 2]], [0.0, 2.0])
    np.testing.assert_array_equal(featurise(AUX.iloc[:0]), [2.0, 2.0, 0.0])  # 2 attributes: the farthest, no copy


def test_a_copying_generator_is_found_and_an_input_blind_one_is_not():
    """AUC 1 on the copy; within 3 standard errors of 1/2 (20 × 20 pairs) on the generator that ignores its input."""
    attack = Ensemble(n_shadows=20, n_estimators=20)
    assert attack_auc(attack, CopyTable()) == 1.0
    assert abs(attack_auc(attack, Blind()) - 0.5) < 3 * math.sqrt(1 / 12 * (1 / 20 + 1 / 20))


def test_it_trains_on_the_same_shadow_tables_as_tapas():
    """Stream 0 of the attack's generator builds the shadows of every shadow attack: the ensemble's counting
    features on its shadows are TAPAS's own (same target, knowledge and generator)."""
    from privgame.attacks.shadow import attack_streams, shadow_features

    knowledge = _knowledge(Blind())
    ensemble = Ensemble(features=("queries",), numeric_match="ge", n_shadows=6)
    tapas = CountingQueries(numeric_match="ge", n_shadows=6)
    features = []
    for attack in (ensemble, tapas):
        shadow_seed, feature_seed, _ = attack_streams(np.random.default_rng(11), 3)
        featurise = attack.featuriser(knowledge, rng=np.random.default_rng(feature_seed))
        features.append(shadow_features(knowledge, featurise, 6, seed=shadow_seed))
    np.testing.assert_array_equal(features[0][0], features[1][0])
    np.testing.assert_array_equal(features[0][1], features[1][1])


def test_the_queries_limits_are_the_ensembles():
    wide = pd.DataFrame({f"c{i}": pd.Categorical(["a"]) for i in range(17)})
    assert "attack 'ensemble'" in Ensemble().table_incompatibility(wide)
    assert Ensemble(features=("groundhog",)).table_incompatibility(wide) is None
    assert Ensemble().memory_bytes(10, 3) == CountingQueries(numeric_match="both").memory_bytes(10, 3)
    assert Ensemble(features=("density",)).memory_bytes(10, 3) == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"features": ()}, "non-empty"),
        ({"features": "queries"}, "non-empty list"),
        ({"features": ("queries", "lira")}, "lira"),
        ({"features": ("density", "density")}, "once"),
        ({"numeric_match": "gt"}, "numeric_match"),
        ({"bandwidth": -1.0}, "bandwidth"),
        ({"n_bins": 0}, "n_bins"),
        ({"n_shadows": 1}, "n_shadows"),
        ({"orders": ()}, "orders"),
    ],
)
def test_bad_parameters_are_refused_in_one_line(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message) as info:
        Ensemble(**kwargs)
    assert "\n" not in str(info.value)


def test_a_bad_ensemble_parameter_in_a_config_is_one_line_with_exit_status_2(run_refused):
    run_refused(
        '[experiment]\nname = "e"\nseed = 1\n'
        '[game]\nname = "record"\ndata = "adult"\ndataset_size = 100\nauxiliary_size = 1000\n'
        "evaluation_size = 1000\nrounds = 4\nvulnerable_targets = 1\nrandom_targets = 0\n"
        '[mechanism]\nname = "synthpop"\n'
        '[attack]\nname = "ensemble"\nfeatures = ["queries", "nope"]\n',
        "nope",
    )
