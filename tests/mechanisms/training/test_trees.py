"""Gradient-boosted trees: the array release scores as scikit-learn does; reproducibility, batching, checks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy.special import expit, softmax
from sklearn.ensemble import HistGradientBoostingClassifier  # loaded before the fixture limits its OpenMP threads
from threadpoolctl import threadpool_limits

import privgame.mechanisms.training.trees as trees_module
from privgame.mechanisms.training.data import TrainingData
from privgame.mechanisms.training.release import TreeEnsembleRelease, decode_release
from privgame.mechanisms.training.trees import GradientBoostedTrees, tree_release

N, D = 300, 5


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny ensembles gain nothing from OpenMP threads, and on a loaded 2-core machine their spinning made one fit
    take 30 s (measured)."""
    with threadpool_limits(limits=1):
        yield


def _pool(seed: int, n_classes: int, n: int = N) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, D)).astype(np.float32)
    x[:, 3] = rng.integers(0, 4, n)  # a feature with few values: splits on exact ties
    signal = x[:, 0] + 0.7 * x[:, 1] * x[:, 2] + 0.3 * x[:, 3] + rng.normal(0, 0.5, n)
    cuts = np.quantile(signal, np.linspace(0, 1, n_classes + 1)[1:-1])
    return x, np.digitize(signal, cuts).astype(np.int64)


def _fit_capturing(mech: GradientBoostedTrees, data: TrainingData, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    """The release and the fitted HistGradientBoostingClassifier it was converted from."""
    fitted: list[Any] = []

    def capture(model: Any, n_features: int, n_classes: int) -> TreeEnsembleRelease:
        fitted.append(model)
        return tree_release(model, n_features, n_classes)

    monkeypatch.setattr(trees_module, "tree_release", capture)
    release = mech.release(data, rng=np.random.default_rng(7))
    (model,) = fitted
    return release, model


def _queries(x: np.ndarray, release: TreeEnsembleRelease, seed: int) -> np.ndarray:
    """The pool, fresh records, and records placed exactly on split thresholds (as float32) and just beside them."""
    rng = np.random.default_rng(seed)
    fresh = rng.normal(0, 1.5, size=(200, D)).astype(np.float32)
    splits = ~release.leaf
    feature, threshold = release.feature[splits], release.threshold[splits]
    pick = rng.choice(feature.size, size=100)
    on = x[rng.choice(x.shape[0], size=100)].copy()
    at = threshold[pick].astype(np.float32)
    on[np.arange(100), feature[pick]] = at
    above = on.copy()
    above[np.arange(100), feature[pick]] = np.nextafter(at, np.float32(np.inf))
    return np.concatenate([x, fresh, on, above])


@pytest.mark.parametrize("max_depth", [None, 2])
def test_binary_release_equals_sklearn_decision_function(max_depth, monkeypatch):
    x, y = _pool(0, 2)
    data = TrainingData(x, y, np.arange(N) < 200)
    mech = GradientBoostedTrees(max_iter=30, max_leaf_nodes=8, max_depth=max_depth, min_samples_leaf=5)
    release, model = _fit_capturing(mech, data, monkeypatch)
    assert isinstance(release, TreeEnsembleRelease) and model.n_trees_per_iteration_ == 1
    q = _queries(x, release, 1)
    raw = release.raw(q)
    assert raw.shape == (q.shape[0], 1)
    np.testing.assert_allclose(raw[:, 0], model.decision_function(q), rtol=0, atol=1e-12)
    np.testing.assert_allclose(release.probabilities(q)[:, 1], model.predict_proba(q)[:, 1], rtol=0, atol=1e-12)
    np.testing.assert_allclose(release.probabilities(q)[:, 1], expit(raw[:, 0]), rtol=0, atol=1e-12)


def test_multiclass_release_equals_sklearn_decision_function(monkeypatch):
    x, y = _pool(2, 3)
    data = TrainingData(x, y, np.arange(N) < 200, n_classes=3)
    mech = GradientBoostedTrees(max_iter=20, max_leaf_nodes=8, min_samples_leaf=5)
    release, model = _fit_capturing(mech, data, monkeypatch)
    assert model.n_trees_per_iteration_ == 3 and release.n_classes == 3
    q = _queries(x, release, 3)
    np.testing.assert_allclose(release.raw(q), model.decision_function(q), rtol=0, atol=1e-12)
    np.testing.assert_allclose(release.logits(q), model.decision_function(q), rtol=0, atol=1e-12)
    np.testing.assert_allclose(release.probabilities(q), model.predict_proba(q), rtol=0, atol=1e-12)
    np.testing.assert_allclose(release.probabilities(q), softmax(release.raw(q), axis=1), rtol=0, atol=1e-12)


def test_release_round_trips_and_learns():
    x, y = _pool(4, 2)
    train = np.arange(N) < 200
    release = GradientBoostedTrees(max_iter=30, max_leaf_nodes=8, min_samples_leaf=5).release(
        TrainingData(x, y, train), rng=np.random.default_rng(0)
    )
    again = decode_release(release.to_arrays())
    np.testing.assert_array_equal(again.logits(x), release.logits(x))
    # a sanity check that the trees are trees of this problem: better than chance on 100 held-out records.  Measured
    # accuracy 0.76-0.84 over five pools; its sd is about 0.04, so 0.65 lies > 3.5 sd below (fails w.p. < 1e-3)
    assert (release.logits(x).argmax(axis=1) == y)[~train].mean() > 0.65


def test_same_rng_same_trees_another_rng_other_trees():
    x, y = _pool(5, 2)
    data = TrainingData(x, y, np.arange(N) < 200)
    mech = GradientBoostedTrees(max_iter=10, max_leaf_nodes=8, min_samples_leaf=5, max_features=0.4)
    a, b, c = (mech.release(data, rng=np.random.default_rng(s)) for s in (1, 1, 2))
    for name, arr in a.to_arrays().items():
        np.testing.assert_array_equal(b.to_arrays()[name], arr)
    # features per split are drawn from the rng: another rng draws other features (2 of 5 per split, 70 splits)
    assert not np.array_equal(a.logits(x), c.logits(x))
    # all features at every split: the training is deterministic given the data
    full = GradientBoostedTrees(max_iter=10, max_leaf_nodes=8, min_samples_leaf=5, max_features=1.0)
    np.testing.assert_array_equal(
        full.release(data, rng=np.random.default_rng(1)).logits(x),
        full.release(data, rng=np.random.default_rng(2)).logits(x),
    )


def test_release_runs_equals_separate_releases():
    x, y = _pool(6, 2)
    masks = [np.random.default_rng(k).random(N) < p for k, p in enumerate((0.5, 0.3, 0.5))]
    data = [TrainingData(x, y, m) for m in masks]
    mech = GradientBoostedTrees(max_iter=10, max_leaf_nodes=8, min_samples_leaf=5)
    seeds = np.random.SeedSequence(8).spawn(3)
    batched = mech.release_runs(data, rngs=[np.random.default_rng(s) for s in seeds])
    for d, s, got in zip(data, seeds, batched, strict=True):
        np.testing.assert_array_equal(got.logits(x), mech.release(d, rng=np.random.default_rng(s)).logits(x))
    assert not np.array_equal(batched[0].logits(x), batched[1].logits(x))
    assert mech.privacy_claim() is None


def test_training_rows_must_hold_every_class():
    x, y = _pool(9, 3)
    mech = GradientBoostedTrees(max_iter=3, min_samples_leaf=5)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="the training rows must hold at least two classes for gradient-boosted"):
        mech.release(TrainingData(x, y, y == 1, n_classes=3), rng=rng)
    with pytest.raises(ValueError, match="the training rows must hold all 3 classes for gradient-boosted trees, got 2"):
        mech.release(TrainingData(x, y, y != 2, n_classes=3), rng=rng)
    x2, y2 = _pool(9, 2)
    with pytest.raises(ValueError, match="the training rows must hold all 4 classes for gradient-boosted trees, got 3"):
        mech.release(TrainingData(x, y, np.ones(N, dtype=bool), n_classes=4), rng=rng)
    # two of three classes is refused, two of two is fine
    assert mech.release(TrainingData(x2, y2, np.ones(N, dtype=bool)), rng=rng).n_classes == 2


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"max_iter": 0}, ValueError, r"max_iter must be an integer in \[1, 100000\], got 0\."),
        ({"max_iter": 10.0}, TypeError, r"max_iter must be an integer, got 10\.0\."),
        ({"learning_rate": 0.0}, ValueError, r"learning_rate must be > 0, got 0\.0\."),
        ({"max_leaf_nodes": 1}, ValueError, r"max_leaf_nodes must be an integer in \[2, .+\], got 1\."),
        ({"max_depth": 0}, ValueError, r"max_depth must be an integer in \[1, 64\], got 0\."),
        ({"max_depth": 2.5}, TypeError, r"max_depth must be an integer, got 2\.5\."),
        ({"min_samples_leaf": 0}, ValueError, r"min_samples_leaf must be an integer >= 1, got 0\."),
        ({"l2_regularization": -1.0}, ValueError, r"l2_regularization must be >= 0, got -1\.0\."),
        ({"max_features": 0.0}, ValueError, r"max_features must be in \(0, 1\], got 0\.0\."),
        ({"max_features": 1.5}, ValueError, r"max_features must be in \(0, 1\], got 1\.5\."),
        ({"max_features": float("nan")}, ValueError, r"max_features must be in \(0, 1\], got nan\."),
    ],
)
def test_parameters_are_checked(kwargs, error, match):
    with pytest.raises(error, match=match):
        GradientBoostedTrees(**kwargs)


def test_non_numeric_splits_are_refused():
    """The converter reads numeric splits only: a model with a categorical split is refused, not mis-scored."""
    x, y = _pool(10, 2)
    model = HistGradientBoostingClassifier(max_iter=3, categorical_features=[3], random_state=0).fit(x, y)
    with pytest.raises(ValueError, match="tree_release needs numeric splits only, got a categorical split"):
        tree_release(model, D, 2)
