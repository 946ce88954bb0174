"""Gradient-boosted trees (scikit-learn's histogram GBDT) as a trained-model mechanism, released as plain arrays."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from privgame.analysis._checks import check_int, check_real
from privgame.mechanisms._base import Mechanism
from privgame.mechanisms.training.data import TrainingData
from privgame.mechanisms.training.models import TrainedModel
from privgame.mechanisms.training.release import ModelRelease, TreeEnsembleRelease

__all__ = ["GradientBoostedTrees", "tree_release"]


def tree_release(model: Any, n_features: int, n_classes: int) -> TreeEnsembleRelease:
    """The fitted ``HistGradientBoostingClassifier``'s trees as a :class:`TreeEnsembleRelease` (no pickle).

    Reads the fitted predictors' node arrays (``feature_idx``, ``num_threshold``, ``left``, ``right``, ``value``,
    ``is_leaf``); features are numeric with no missing values (the model games' encoding), so a record goes left
    where ``x[feature] <= num_threshold``, as scikit-learn's predictor does.  A test checks the release's raw
    output against ``decision_function``.
    """
    trees = [(c, tree.nodes) for iteration in model._predictors for c, tree in enumerate(iteration)]
    width = max(len(nodes) for _, nodes in trees)
    t = len(trees)
    arrays: dict[str, Any] = {
        "feature": np.zeros((t, width), dtype=np.int32),
        "threshold": np.zeros((t, width), dtype=np.float64),
        "left": np.zeros((t, width), dtype=np.int32),
        "right": np.zeros((t, width), dtype=np.int32),
        "value": np.zeros((t, width), dtype=np.float64),
        "leaf": np.ones((t, width), dtype=bool),  # padding nodes are leaves nobody reaches
    }
    for i, (_, nodes) in enumerate(trees):
        if nodes["is_categorical"].any():
            raise ValueError("tree_release needs numeric splits only, got a categorical split.")
        k = len(nodes)
        arrays["feature"][i, :k] = nodes["feature_idx"]
        arrays["threshold"][i, :k] = nodes["num_threshold"]
        arrays["left"][i, :k] = nodes["left"]
        arrays["right"][i, :k] = nodes["right"]
        arrays["value"][i, :k] = nodes["value"]
        arrays["leaf"][i, :k] = nodes["is_leaf"].astype(bool)
    return TreeEnsembleRelease(
        **arrays,
        tree_class=np.array([c for c, _ in trees], dtype=np.int32),
        baseline=np.asarray(model._baseline_prediction, dtype=np.float64).reshape(-1),
        n_features=n_features,
        n_classes=n_classes,
    )


@dataclass(frozen=True, slots=True)
class GradientBoostedTrees(TrainedModel):
    """Gradient-boosted decision trees (scikit-learn's ``HistGradientBoostingClassifier``), non-private.

    Parameters
    ----------
    max_iter : int, default=100
        Boosting rounds (trees per class).
    learning_rate : float, default=0.1
    max_leaf_nodes : int, default=31
    max_depth : int or None, default=None
    min_samples_leaf : int, default=20
    l2_regularization : float, default=0.0
    max_features : float, default=0.8
        The share of features each split considers, drawn afresh per split from the release's rng (LightGBM's
        ``feature_fraction``); 1 makes the training deterministic given the data.

    Notes
    -----
    Input: a pool and an include-mask (:class:`privgame.mechanisms.training.data.TrainingData`); release: the trees as
    arrays (:class:`privgame.mechanisms.training.release.TreeEnsembleRelease`), scored by our own traversal.  No early
    stopping (it would hold out part of the training set).  Randomness: the features each split considers
    (``max_features``), from an int seed drawn from the release's rng.  No privacy claim; K releases train one
    after the other (trees do not batch).
    """

    name: ClassVar[str] = "gradient-boosted-trees"
    # trees do not batch: K runs are K releases, so the cache stores (and the progress line counts) each as it ends
    release_runs = Mechanism.release_runs

    max_iter: int = 100
    learning_rate: float = 0.1
    max_leaf_nodes: int = 31
    max_depth: int | None = None
    min_samples_leaf: int = 20
    l2_regularization: float = 0.0
    max_features: float = 0.8

    def __post_init__(self) -> None:
        check_int("max_iter", self.max_iter, low=1, high=100_000)
        check_real("learning_rate", self.learning_rate, low=0.0, low_open=True)
        check_int("max_leaf_nodes", self.max_leaf_nodes, low=2, high=1 << 20)
        if self.max_depth is not None:
            check_int("max_depth", self.max_depth, low=1, high=64)
        check_int("min_samples_leaf", self.min_samples_leaf, low=1)
        check_real("l2_regularization", self.l2_regularization, low=0.0)
        check_real("max_features", self.max_features, low=0.0, high=1.0, low_open=True)

    def privacy_claim(self) -> None:
        """None: a non-private model claims nothing."""
        return None

    def train(
        self, pool: Any, masks: np.ndarray, rngs: Sequence[np.random.Generator], *, sizes: Sequence[int]
    ) -> list[ModelRelease]:
        from sklearn.ensemble import HistGradientBoostingClassifier

        data: TrainingData = pool
        out: list[ModelRelease] = []
        for mask, rng in zip(masks, rngs, strict=True):
            model = HistGradientBoostingClassifier(
                max_iter=self.max_iter,
                learning_rate=self.learning_rate,
                max_leaf_nodes=self.max_leaf_nodes,
                max_depth=self.max_depth,
                min_samples_leaf=self.min_samples_leaf,
                l2_regularization=self.l2_regularization,
                max_features=self.max_features,
                early_stopping=False,
                random_state=int(rng.integers(2**31 - 1)),
            )
            labels = data.y[mask]
            if np.unique(labels).size < 2:
                raise ValueError("the training rows must hold at least two classes for gradient-boosted trees.")
            model.fit(data.x[mask], labels)
            # checked before the conversion, whose own shape check would otherwise answer first, unhelpfully
            if model.n_trees_per_iteration_ != (1 if data.n_classes == 2 else data.n_classes):
                raise ValueError(
                    f"the training rows must hold all {data.n_classes} classes for gradient-boosted trees, got "
                    f"{np.unique(labels).size}."
                )
            out.append(tree_release(model, data.x.shape[1], data.n_classes))
        return out
