"""A missing or unknown value matches nothing: categorical code −1 and numeric NaN, in every attack that compares."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privgame.attacks._tables import TableSchema
from privgame.attacks.distance import mixed_distances
from privgame.attacks.queries import match_masks, superset_counts

AUX = pd.DataFrame({"c": pd.Categorical(list("abab"), categories=list("ab")), "x": [1.0, 2.0, 3.0, 4.0]})
SCHEMA = TableSchema.of(AUX)
# a release with a missing category (None) twice and two values outside the schema's categories
RELEASE = pd.DataFrame({"c": ["a", None, None, "zz", "yy", "b"], "x": [1.0, 2.0, np.nan, 3.0, 4.0, np.nan]})


def _target(c: object, x: float) -> pd.DataFrame:
    return pd.DataFrame({"c": [c], "x": [x]})


def test_codes_of_missing_and_unknown_categories_are_minus_one():
    codes = SCHEMA.codes(RELEASE)
    assert codes[:, 0].tolist() == [0, -1, -1, -1, -1, 1]
    assert np.isnan(codes[[2, 5], 1]).all()


@pytest.mark.parametrize("rule", ["ge", "eq"])
@pytest.mark.parametrize("value", ["zz", None])
def test_an_unknown_or_missing_target_category_matches_no_row(rule, value):
    # issue 22 (6): a −1 target used to match every −1 row (4 here: two missing, two unknown)
    codes, target = SCHEMA.codes(RELEASE), SCHEMA.codes(_target(value, 2.0))[0]
    counts = superset_counts(match_masks(codes, target, ~SCHEMA.categorical, rule), 2)
    assert counts[0b01] == 0 and counts[0b11] == 0
    assert counts[0] == len(RELEASE)


@pytest.mark.parametrize("rule", ["ge", "eq"])
def test_missing_and_unknown_rows_match_no_known_target(rule):
    codes, target = SCHEMA.codes(RELEASE), SCHEMA.codes(_target("a", 1.0))[0]
    counts = superset_counts(match_masks(codes, target, ~SCHEMA.categorical, rule), 2)
    assert counts[0b01] == 1  # only the literal 'a'


@pytest.mark.parametrize("rule", ["ge", "eq"])
def test_numeric_nan_matches_nothing(rule):
    codes = SCHEMA.codes(RELEASE)
    numeric = ~SCHEMA.categorical
    masks = match_masks(codes, SCHEMA.codes(_target("a", 1.0))[0], numeric, rule)
    assert not (masks[[2, 5]] & 0b10).any()  # a NaN row value matches no target value
    nan_target = SCHEMA.codes(_target("a", np.nan))[0]
    assert not (match_masks(codes, nan_target, numeric, rule) & 0b10).any()  # a NaN target matches no row


def test_a_missing_target_category_is_at_distance_one_from_a_missing_row():
    codes, target = SCHEMA.codes(RELEASE), SCHEMA.codes(_target(None, 2.0))[0]
    distances = mixed_distances(codes, target, SCHEMA)
    assert distances[1] == 1.0  # a missing category never equals another missing one
    assert distances[3] == pytest.approx(1.0 + 1 / 3)


def test_a_numeric_nan_is_at_the_largest_scaled_distance_not_nan():
    codes, target = SCHEMA.codes(RELEASE), SCHEMA.codes(_target("a", 2.0))[0]
    distances = mixed_distances(codes, target, SCHEMA)
    assert np.isfinite(distances).all()
    assert distances[2] == 2.0 and distances[5] == 2.0  # category differs (1) and NaN differs by the cap (1)
    nan_target = SCHEMA.codes(_target("a", np.nan))[0]
    assert mixed_distances(codes, nan_target, SCHEMA)[0] == 1.0


def test_one_hot_puts_a_missing_or_unknown_category_in_no_column():
    onehot = SCHEMA.one_hot(RELEASE)
    assert onehot[:, :2].tolist() == [[1, 0], [0, 0], [0, 0], [0, 0], [0, 0], [0, 1]]


@pytest.mark.parametrize("rule", ["ge", "eq", "both"])
def test_counting_query_features_of_a_missing_target_are_zero_under_every_rule(rule):
    from privgame.attacks.knowledge import BlackBox, Knowledge
    from privgame.attacks.queries import CountingQueries
    from privgame.mechanisms.synth import Synthpop

    knowledge = Knowledge(AUX, _target("zz", np.nan), 2, BlackBox(Synthpop()))
    features = CountingQueries(numeric_match=rule).featuriser(knowledge, rng=np.random.default_rng(0))(RELEASE)
    assert features.shape == ((6,) if rule == "both" else (3,)) and not features.any()
