"""Counting-query features: the zeta transform against brute force, sampled subsets, the attack's options."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from privgame.attacks._tables import TableSchema
from privgame.attacks.queries import CountingQueries, match_masks, sample_subsets, superset_counts


def _brute(codes, target, numeric, rule):
    d = codes.shape[1]
    out = np.zeros(1 << d, dtype=np.int64)
    for s in range(1 << d):
        ok = np.ones(codes.shape[0], dtype=bool)
        for j in range(d):
            if s >> j & 1:
                ok &= (codes[:, j] >= target[j]) if (numeric[j] and rule == "ge") else (codes[:, j] == target[j])
        out[s] = ok.sum()
    return out


@pytest.mark.parametrize("rule", ["ge", "eq"])
@pytest.mark.parametrize("seed", range(6))
def test_zeta_counts_equal_brute_force(rule, seed):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(1, 60)), int(rng.integers(1, 8))
    numeric = rng.random(d) < 0.5
    codes = np.where(numeric, rng.integers(0, 6, (n, d)), rng.integers(0, 3, (n, d))).astype(float)
    target = codes[rng.integers(n)] if rng.random() < 0.7 else rng.integers(0, 3, d).astype(float)
    got = superset_counts(match_masks(codes, target, numeric, rule), d)
    assert np.array_equal(got, _brute(codes, target, numeric, rule))
    assert got[0] == n


def test_counts_on_a_real_table_through_the_schema():
    rng = np.random.default_rng(1)
    table = pd.DataFrame(
        {"c": pd.Categorical(rng.choice(list("ab"), 40), categories=list("abc")), "x": rng.integers(0, 5, 40)}
    )
    schema = TableSchema.of(table)
    codes, target = schema.codes(table), schema.codes(table.iloc[[0]])[0]
    counts = superset_counts(match_masks(codes, target, ~schema.categorical, "ge"), 2)
    assert counts[1] == (table["c"] == table["c"][0]).sum()
    assert counts[2] == (table["x"] >= table["x"][0]).sum()
    assert counts[3] == ((table["c"] == table["c"][0]) & (table["x"] >= table["x"][0])).sum()


def test_sampled_subsets_have_the_asked_orders_and_are_capped():
    subsets = sample_subsets(6, (3, 20, 500), rng=np.random.default_rng(0))
    orders = [int(s).bit_count() for s in subsets]
    assert orders.count(1) == 3 and orders.count(2) == 15 and orders.count(3) == math.comb(6, 3)
    assert len(set(subsets.tolist())) == len(subsets)
    again = sample_subsets(6, (3, 20, 500), rng=np.random.default_rng(0))
    assert np.array_equal(subsets, again)


def test_match_rule_and_size_errors():
    with pytest.raises(ValueError, match="rule must be one of ge, eq, got 'both'"):
        match_masks(np.zeros((2, 2)), np.zeros(2), np.zeros(2, dtype=bool), "both")
    with pytest.raises(ValueError, match="rule must be one of ge, eq, got"):
        match_masks(np.zeros((2, 2)), np.zeros(2), np.zeros(2, dtype=bool), "gt")
    with pytest.raises(ValueError, match="at most 62 attributes"):
        match_masks(np.zeros((2, 63)), np.zeros(63), np.zeros(63, dtype=bool))


@pytest.mark.parametrize(
    ("params", "error", "match"),
    [
        ({"numeric_match": "gt"}, ValueError, "numeric_match must be one of ge, eq, both, got 'gt'"),
        ({"orders": ()}, TypeError, "orders must be a non-empty list"),
        ({"orders": (0, 0)}, ValueError, "at least one query"),
        ({"orders": (1, -1)}, ValueError, r"orders\[1\] must be"),
        ({"n_estimators": 0}, ValueError, "n_estimators must be"),
        ({"max_depth": 0}, ValueError, "max_depth must be"),
        ({"n_jobs": 0}, ValueError, "n_jobs must be"),
    ],
)
def test_attack_parameter_errors(params, error, match):
    with pytest.raises(error, match=match):
        CountingQueries(**params)


def test_all_subsets_refuses_too_many_columns():
    from privgame.attacks.knowledge import BlackBox, Knowledge
    from privgame.mechanisms.synth import Synthpop

    wide = pd.DataFrame({f"c{j}": np.arange(30) for j in range(17)})
    knowledge = Knowledge(wide, wide.iloc[[0]], 10, BlackBox(Synthpop()))
    with pytest.raises(ValueError, match="at most 16 columns"):
        CountingQueries().featuriser(knowledge, rng=np.random.default_rng(0))
    features = CountingQueries(subsets="sampled", orders=(2, 3)).featuriser(knowledge, rng=np.random.default_rng(0))
    assert features(wide).shape == (5,)


def test_brute_force_on_a_case_done_by_hand():
    codes = np.array([[0, 1], [0, 2], [1, 1]], dtype=float)
    counts = _brute(codes, np.array([0.0, 1.0]), np.array([False, True]), "ge")
    assert list(counts) == [3, 2, 3, 2]


def test_codes_follow_the_schema_not_the_release_category_order():
    table = pd.DataFrame({"c": pd.Categorical(list("ab"), categories=list("abc")), "x": [1, 2]})
    schema = TableSchema.of(table)
    shuffled = table.assign(c=pd.Categorical(list("ab"), categories=list("cba")))
    assert np.array_equal(schema.codes(shuffled), schema.codes(table))
    with pytest.raises(TypeError, match="must be numeric"):
        schema.codes(table.assign(x=["u", "v"]))


def test_sampled_counts_without_the_zeta_array_equal_it():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 3, (50, 6)).astype(float)
    numeric = np.zeros(6, dtype=bool)
    masks = match_masks(codes, codes[0], numeric, "eq")
    chosen = sample_subsets(6, (3, 5, 5), rng=rng)
    direct = ((masks[:, None] & chosen[None, :]) == chosen[None, :]).sum(axis=0)
    assert np.array_equal(direct, superset_counts(masks, 6)[chosen])


def _numeric_table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "c": pd.Categorical(rng.choice(list("ab"), n), categories=list("ab")),
            "x": rng.integers(1, 20, n),
            "y": rng.integers(1, 20, n),
        }
    )


def _knowledge(aux: pd.DataFrame, target: pd.DataFrame, n: int = 20):
    import sys
    from pathlib import Path

    from privgame.attacks.knowledge import BlackBox, Knowledge

    plugins = str(Path(__file__).parents[1] / "plugins")  # the record-game tests' known-risk generators
    if plugins not in sys.path:
        sys.path.insert(0, plugins)
    from known_risk_mechanisms import CopyTable

    return Knowledge(aux, target, n, BlackBox(CopyTable()))


@pytest.mark.parametrize(("subsets", "width"), [("all", 2 * 7), ("sampled", 2 * 4)])
def test_both_features_are_the_ge_features_then_the_eq_features(subsets, width):
    aux = _numeric_table(60, 0)
    knowledge = _knowledge(aux, aux.iloc[[3]])
    release = _numeric_table(25, 1)
    orders = (2, 2)
    features = {
        rule: CountingQueries(subsets=subsets, numeric_match=rule, orders=orders).featuriser(
            knowledge, rng=np.random.default_rng(5)
        )(release)
        for rule in ("ge", "eq", "both")
    }
    assert features["both"].shape == (width,)
    assert np.array_equal(features["both"], np.concatenate([features["ge"], features["eq"]]))
    assert not np.array_equal(features["ge"], features["eq"])  # x and y are numeric: the halves differ


def test_both_needs_twice_the_memory_of_one_rule():
    for subsets in ("all", "sampled"):
        one = CountingQueries(subsets=subsets, numeric_match="ge").memory_bytes(10, 5)
        assert CountingQueries(subsets=subsets, numeric_match="both").memory_bytes(10, 5) == 2 * one
    assert CountingQueries(numeric_match="eq").memory_bytes(10, 5) == 12 * 10 * 31


def test_both_separates_a_literal_copy_that_ge_cannot():
    # issue 22 (7): a target dominated (≥ on every numeric attribute, same category) by every reference record:
    # adding its copy or a reference's changes no "ge" count, so "ge" scores both worlds alike (AUC 1/2)
    aux = _numeric_table(200, 2)
    target = pd.DataFrame({"c": pd.Categorical(["a"], categories=list("ab")), "x": [0], "y": [0]})
    knowledge = _knowledge(aux, target)
    pool = _numeric_table(60, 3)
    dbar, references = pool.iloc[:19], pool[pool["c"] == "a"].iloc[19:29]
    worlds = [pd.concat([dbar, target], ignore_index=True)] * 10 + [
        pd.concat([dbar, references.iloc[[k]]], ignore_index=True) for k in range(10)
    ]
    labels = np.array([1] * 10 + [0] * 10)
    auc = {}
    for rule in ("ge", "eq", "both"):
        attack = CountingQueries(numeric_match=rule, n_shadows=40, n_estimators=20, max_depth=4)
        fitted = attack.fit(knowledge, rng=np.random.default_rng(0))
        scores = np.array([fitted.score(w, np.array([0]))[0] for w in worlds])
        auc[rule] = roc_auc_score(labels, scores)
    assert auc == {"ge": 0.5, "eq": 1.0, "both": 1.0}
