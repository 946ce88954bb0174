"""A trained model of your own, as a config plugin: ``sk-mlp``, scikit-learn's ``MLPClassifier``.

The fitted network is released as a :class:`privgame.mechanisms.training.NetworkRelease` built from its weights: plain
arrays, so the artefact cache stores it (an npz, no pickle) and every attack on a model reads it through the
:class:`privgame.mechanisms.training.ModelRelease` protocol.  Registered when imported:
``[experiment] plugins = ["extending_model"]``.  docs/extending.md, section 3.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from privgame.engine.registry import MECHANISMS
from privgame.mechanisms.training import ModelRelease, NetworkRelease, TrainedModel, TrainingData


def fit_mlp(
    x: np.ndarray,
    y: np.ndarray,
    n_classes: int,
    *,
    hidden: tuple[int, ...],
    epochs: int,
    alpha: float,
    rng: np.random.Generator,
) -> NetworkRelease:
    """An MLP (ReLU) fitted by Adam on ``(x, y)`` for ``epochs`` passes, as a network with ``n_classes`` logits."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier  # imported when a model trains, not when the plugin loads

    if np.unique(y).size != n_classes:
        raise ValueError(f"the training rows must hold all {n_classes} classes, got {np.unique(y).size}.")
    model = MLPClassifier(
        hidden_layer_sizes=hidden,
        alpha=alpha,
        learning_rate_init=0.01,
        max_iter=epochs,
        n_iter_no_change=epochs,  # exactly `epochs` passes: no stop on a plateau
        random_state=int(rng.integers(2**31 - 1)),  # scikit-learn takes an int seed: drawn from the game's rng
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # "maximum iterations reached": what was asked for
        model.fit(x, y)
    weights = [w.astype(np.float32) for w in model.coefs_]
    biases = [b.astype(np.float32) for b in model.intercepts_]
    if n_classes == 2:  # one logistic output z: the logits (0, z) give the same probabilities
        weights[-1] = np.hstack([np.zeros_like(weights[-1]), weights[-1]])
        biases[-1] = np.concatenate([np.zeros(1, dtype=np.float32), biases[-1]])
    return NetworkRelease(weights=tuple(weights), biases=tuple(biases), activation="relu")


def check_mlp(hidden: object, epochs: object, alpha: object) -> tuple[tuple[int, ...], int, float]:
    """The MLP's parameters, checked (the config shows these errors) and normalised."""
    if not isinstance(hidden, tuple | list) or not all(
        isinstance(w, int) and not isinstance(w, bool) and 1 <= w <= 4096 for w in hidden
    ):
        raise ValueError(f"hidden must be a list of layer widths in [1, 4096], got {hidden!r}.")
    if isinstance(epochs, bool) or not isinstance(epochs, int) or not 1 <= epochs <= 100_000:
        raise ValueError(f"epochs must be an integer in [1, 100000], got {epochs!r}.")
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 <= alpha < 1e6:
        raise ValueError(f"alpha must be a number in [0, 1e6), got {alpha!r}.")
    return tuple(hidden), epochs, float(alpha)


@MECHANISMS.register
@dataclass(frozen=True, slots=True)
class SklearnMLP(TrainedModel):
    """scikit-learn's MLP classifier trained on the included records (non-private).

    Parameters
    ----------
    hidden : tuple of int, default=(64,)
        Hidden layer widths; ``()`` is logistic regression.
    epochs : int, default=200
        Passes over the training records, each in an order drawn from the release's rng.
    alpha : float, default=1e-4
        L2 penalty.
    """

    name: ClassVar[str] = "sk-mlp"

    hidden: tuple[int, ...] = (64,)
    epochs: int = 200
    alpha: float = 1e-4

    def __post_init__(self) -> None:
        hidden, epochs, alpha = check_mlp(self.hidden, self.epochs, self.alpha)
        object.__setattr__(self, "hidden", hidden)  # a TOML list becomes a (hashable) tuple
        object.__setattr__(self, "epochs", epochs)
        object.__setattr__(self, "alpha", alpha)

    def train(
        self, pool: TrainingData, masks: np.ndarray, rngs: Sequence[np.random.Generator], *, sizes: Sequence[int]
    ) -> list[ModelRelease]:
        # one model per include-mask (K masks: the K runs of release_runs), each from its own rng
        fit = {"hidden": self.hidden, "epochs": self.epochs, "alpha": self.alpha}
        return [
            fit_mlp(pool.x[mask], pool.y[mask], pool.n_classes, **fit, rng=rng)
            for mask, rng in zip(masks, rngs, strict=True)
        ]

    def privacy_claim(self) -> None:
        return None  # non-private: the game's ε lower bound stands alone
