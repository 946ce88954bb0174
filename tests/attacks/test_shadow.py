"""Shadow modelling and the adversary's knowledge: composition, balance, prefix stability, errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privgame.attacks import ClosestDistance, Groundhog
from privgame.attacks._tables import TableSchema
from privgame.attacks.distance import mixed_distances
from privgame.attacks.groundhog import groundhog_features
from privgame.attacks.knowledge import BlackBox, Knowledge, require_knowledge
from privgame.attacks.shadow import (
    best_threshold,
    fit_forest,
    forest_proba,
    shadow_dataset,
    shadow_features,
    standardise,
)
from privgame.mechanisms.synth import Synthpop


def _table(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "c": pd.Categorical(rng.choice(list("abc"), n), categories=list("abcd")),
            "x": rng.integers(0, 50, n),
        }
    )


AUX = _table(100)
TARGET = pd.DataFrame({"c": pd.Categorical(["d"], categories=list("abcd")), "x": [999]})
KNOWLEDGE = Knowledge(AUX, TARGET, 10, BlackBox(Synthpop()))


def test_shadows_hold_the_target_iff_labelled_and_have_n_rows():
    seed = np.random.SeedSequence(4)
    for i in range(8):
        data, label, _ = shadow_dataset(KNOWLEDGE, i, seed=seed)
        assert len(data) == 10 and label == 1 - i % 2
        assert ((data["x"] == 999).sum() == 1) == bool(label)


def test_shadows_are_prefix_stable_and_balanced():
    seed = np.random.SeedSequence(4)
    a, la = shadow_features(KNOWLEDGE, lambda t: np.array([t["x"].sum()]), 6, seed=seed)
    b, lb = shadow_features(KNOWLEDGE, lambda t: np.array([t["x"].sum()]), 4, seed=seed)
    assert np.array_equal(a[:4], b) and np.array_equal(la[:4], lb)
    assert la.sum() == 3


def test_shadow_errors():
    with pytest.raises(ValueError, match="n_shadows must be"):
        shadow_features(KNOWLEDGE, lambda t: np.zeros(1), 1, seed=np.random.SeedSequence(0))
    small = Knowledge(AUX.iloc[:5], TARGET, 10, BlackBox(Synthpop()))
    with pytest.raises(ValueError, match="at least dataset_size = 10 records"):
        shadow_features(small, lambda t: np.zeros(1), 2, seed=np.random.SeedSequence(0))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"auxiliary": "x"}, TypeError, "auxiliary must be a pandas DataFrame"),
        ({"targets": TARGET[["x"]]}, ValueError, "targets must have the auxiliary data's columns"),
        ({"targets": TARGET.iloc[:0]}, ValueError, "at least one record"),
        ({"dataset_size": 1}, ValueError, "dataset_size must be"),
        ({"oracle": Synthpop()}, TypeError, "oracle must be a BlackBox, got Synthpop"),
        ({"neighbours": "swap"}, ValueError, "neighbours must be one of"),
    ],
)
def test_knowledge_errors(kwargs, error, match):
    args = {"auxiliary": AUX, "targets": TARGET, "dataset_size": 10, "oracle": BlackBox(Synthpop()), **kwargs}
    with pytest.raises(error, match=match):
        Knowledge(**args)


def test_attacks_need_knowledge_and_oracle_needs_seed_sequences():
    with pytest.raises(TypeError, match=r"needs a privgame\.attacks\.knowledge\.Knowledge"):
        ClosestDistance().fit(None, rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match=r"needs a privgame\.attacks\.knowledge\.Knowledge"):
        require_knowledge({}, "groundhog")
    with pytest.raises(TypeError, match=r"seeds\[0\] must be a numpy\.random\.SeedSequence"):
        BlackBox(Synthpop()).release_many([AUX], seeds=[np.random.default_rng(0)])


def test_best_threshold_maximises_shadow_accuracy():
    scores = np.array([0.1, 0.2, 0.8, 0.9])
    assert best_threshold(scores, np.array([0, 0, 1, 1])) == 0.8
    assert best_threshold(np.zeros(4), np.array([0, 0, 0, 0])) == np.inf  # guess nobody


def test_mixed_distance_is_hamming_plus_scaled_numeric():
    schema = TableSchema.of(AUX)
    codes = schema.codes(AUX.iloc[:3])
    target = codes[0].copy()
    d = mixed_distances(codes, target, schema)
    assert d[0] == 0.0
    span = AUX["x"].max() - AUX["x"].min()
    expect = (codes[1, 0] != target[0]) + min(abs(codes[1, 1] - target[1]) / span, 1.0)
    assert d[1] == pytest.approx(expect)


def test_groundhog_features_have_a_fixed_width_and_no_nan():
    schema = TableSchema.of(AUX)
    numeric = np.array([False] * 4 + [True])
    f = groundhog_features(schema.one_hot(AUX), numeric, 10)
    g = groundhog_features(schema.one_hot(AUX.iloc[:3]), numeric, 10)  # a constant column: correlation 0
    assert f.shape == g.shape == (3 * 5 + 10 + 10,) and np.isfinite(f).all() and np.isfinite(g).all()
    with pytest.raises(ValueError, match="n_bins must be"):
        Groundhog(n_bins=0)


def test_forest_proba_is_the_forests_own_predict_proba_bit_for_bit():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(120, 30)).astype(np.float32)
    y = (x[:, 0] + 0.5 * rng.normal(size=120) > 0).astype(np.int8)
    forest = fit_forest(x, y, n_estimators=25, max_depth=4, rng=rng, n_jobs=2)
    rows = rng.normal(size=(7, 30))  # float64: converted like predict_proba converts it
    assert np.array_equal(forest_proba(forest, rows), forest.predict_proba(rows))
    assert np.array_equal(forest_proba(forest, rows[:1]), forest.predict_proba(rows[:1]))


def test_forest_proba_falls_back_to_predict_proba_for_other_classifiers():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(4)
    x = rng.normal(size=(50, 3))
    y = (x[:, 0] > 0).astype(int)
    model = LogisticRegression().fit(x, y)
    assert np.array_equal(forest_proba(model, x[:5]), model.predict_proba(x[:5]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_standardise_is_numpy_s_mean_std_and_division_to_the_bit(dtype):
    """The kernels add the rows in numpy's order (axis 0 of a C-ordered array: row after row, in float64): the
    same means, deviations and float32 features as numpy's expressions, on counts (mostly 0, as the counting
    queries'), on values whose sums round, with a constant column (scale 1) and with a row of NaN."""
    rng = np.random.default_rng(3)
    counts = (rng.random((300, 257)) < 0.2) * rng.integers(0, 1000, size=(300, 257))
    for x in (counts, rng.normal(size=(301, 129)) * np.exp(rng.normal(size=129) * 8)):
        x = x.astype(dtype)
        x[:, 5] = 3.0
        mean = x.mean(axis=0, dtype=np.float64)
        scale = x.std(axis=0, dtype=np.float64)
        scale[scale == 0] = 1.0
        expected = ((x - mean) / scale).astype(np.float32)
        got = standardise(x)
        for a, b in zip(got, (mean, scale, expected), strict=True):
            assert a.dtype == b.dtype and np.array_equal(a, b)
    x = rng.normal(size=(4, 3)).astype(dtype)
    x[2] = np.nan
    assert np.array_equal(
        standardise(x)[2],
        ((x - x.mean(axis=0, dtype=np.float64)) / x.std(axis=0, dtype=np.float64)).astype(np.float32),
        equal_nan=True,
    )
