"""Non-private trained models as mechanisms: the input is a pool and an include-mask, the release a model.

``input_kind = "dataset"`` (:class:`privgame.mechanisms.training.data.TrainingData`), ``release_kind = "model"``
(:class:`privgame.mechanisms.training.release.ModelRelease`); no privacy claim.  ``release_runs`` trains K models on K
include-masks of one pool in one batched pass where the model allows it (the networks), each equal to its own
``release``.  The DP-SGD classifier (:mod:`privgame.mechanisms.training.dpsgd`) and the gradient-boosted trees
(:mod:`privgame.mechanisms.training.trees`) share the base class here.
"""

from __future__ import annotations

import itertools
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from privgame.analysis._checks import check_int, check_real
from privgame.mechanisms._base import Mechanism, check_runs
from privgame.mechanisms.training.data import as_training_data, stack_masks
from privgame.mechanisms.training.release import ACTIVATIONS, ModelRelease

__all__ = ["LogisticRegressionClassifier", "MLPClassifier", "TrainedModel", "check_device", "torch_generators"]

MAX_EPOCHS = 100_000
MAX_WIDTH = 1 << 16


def torch_generators(rngs: Sequence[np.random.Generator], device: Any = "cpu") -> list[Any]:
    """One ``torch.Generator`` on ``device`` per release, seeded from the release's rng (four 63-bit words)."""
    from privgame.mechanisms.dpsgd.devices import make_generator

    return [make_generator(np.random.SeedSequence(r.integers(0, 2**63, size=4).tolist()), device) for r in rngs]


def check_device(value: Any) -> str:
    """``value`` if it names a device a model can train on here: "cpu", "auto" (CUDA when present, else the
    CPU), "cuda" or "cuda:<index>" of a CUDA device this machine has.

    The spelling is checked without importing torch, so that a CPU config is validated in a second; a CUDA
    device imports torch to ask whether it exists, so that a missing GPU is refused when the config is read rather
    than in every trial.

    Raises
    ------
    TypeError
        If ``value`` is not a string.
    ValueError
        If it is none of these spellings, or names a CUDA device this machine does not have.
    """
    if not isinstance(value, str):
        raise TypeError(f"device must be a string ('cpu', 'auto', 'cuda' or 'cuda:<index>'), got {value!r}.")
    head, _, index = value.partition(":")
    if value in ("cpu", "auto"):
        return value
    if value == "cuda" or (head == "cuda" and index.isdigit()):
        import torch

        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ValueError(
                f"device must be 'cpu' or 'auto' on this machine, which has no CUDA device "
                f"(torch.cuda.is_available() is False), got {value!r}."
            )
        if index and int(index) >= count:
            raise ValueError(
                f"device must be 'cpu', 'auto', 'cuda' or one of cuda:0 to cuda:{count - 1} (this machine has "
                f"{count} CUDA device{'s' if count > 1 else ''}), got {value!r}."
            )
        return value
    raise ValueError(f"device must be 'cpu', 'auto', 'cuda' or 'cuda:<index>', got {value!r}.")


@dataclass(frozen=True, slots=True)
class TrainedModel(Mechanism):
    """A model trained on the included records of a pool (not registered: the base of the model mechanisms)."""

    input_kind: ClassVar[str] = "dataset"
    release_kind: ClassVar[str] = "model"

    def release(self, data: Any, *, rng: np.random.Generator) -> ModelRelease:
        """Train one model on ``data``'s included records with randomness from ``rng``."""
        pool = as_training_data("data", data)
        return self.train(pool, pool.include[None, :], [rng], sizes=[pool.public_size])[0]

    def release_runs(self, data: Sequence[Any], *, rngs: Sequence[np.random.Generator]) -> list[ModelRelease]:
        """K models on K include-masks of one pool, each equal to ``release(d, rng=r)``."""
        check_runs(data, rngs)
        if len(data) == 0:
            return []
        pool, masks = stack_masks(data)
        return self.train(pool, masks, rngs, sizes=[d.public_size for d in data])

    @abstractmethod
    def train(
        self, pool: Any, masks: np.ndarray, rngs: Sequence[np.random.Generator], *, sizes: Sequence[int]
    ) -> list[ModelRelease]:
        """Train one model per row of ``masks`` (K, N) on ``pool`` (``sizes``: each run's public training size)."""

    def memory_bytes(self, n: int) -> int:
        """The pool as float32 features (about 128 per record: Adult one-hot) and a few working copies, and the
        training of one model (:meth:`model_bytes`)."""
        return 4 * 128 * 4 * n + self.model_bytes()

    def model_bytes(self) -> int:
        """Estimated bytes of each model a batched ``release_runs`` holds beside the pool while it trains (its
        parameters with their gradients and optimiser state, its activations, its release): 0 here; the games
        that train K models in one call add K times this to :meth:`memory_bytes`."""
        return 0

    def feature_problem(self, n_features: int) -> str | None:
        """Why this model cannot read records of ``n_features`` features, or ``None`` (any width, by default); a
        game asks before training."""
        return None

    def cache_inputs(self, data: Any) -> dict[str, Any]:
        """What of ``data`` beyond its pool, include-mask and public size determines a release, as cache-key parts
        (:func:`privgame.mechanisms.cached.release_key`): nothing, for a model that scores any record (its queries and
        frames do not change it)."""
        return {}

    def cache_code(self) -> tuple[str, ...]:
        """Modules outside ``mechanisms/`` whose source determines a release (their code fingerprints enter its
        cache key): none for the built-in trainers."""
        return ()

    def reads_columns(self) -> bool:
        """Whether the model trains on the records' own columns (``TrainingData.frame``) rather than ``x``."""
        return False


def _hidden(value: Any) -> tuple[int, ...]:
    if not isinstance(value, tuple | list):
        raise TypeError(f"hidden must be a list of layer widths, got {value!r}.")
    return tuple(check_int(f"hidden[{i}]", w, low=1, high=MAX_WIDTH) for i, w in enumerate(value))


@dataclass(frozen=True, slots=True)
class _Network(TrainedModel):
    """The parameters shared by the Adam-trained networks (documented on each)."""

    epochs: int = 20
    batch_size: int = 64
    learning_rate: float = 1e-3
    weight_decay: float = 0.0
    device: str = "cpu"

    def __post_init__(self) -> None:
        check_device(self.device)
        object.__setattr__(self, "epochs", check_int("epochs", self.epochs, low=1, high=MAX_EPOCHS))
        object.__setattr__(self, "batch_size", check_int("batch_size", self.batch_size, low=1))
        check_real("learning_rate", self.learning_rate, low=0.0, low_open=True)
        check_real("weight_decay", self.weight_decay, low=0.0)

    def privacy_claim(self) -> None:
        """None: a non-private model claims nothing."""
        return None

    def layers(self) -> tuple[tuple[int, ...], str]:
        """The hidden widths and the activation."""
        return (), "relu"

    def model_bytes(self) -> int:
        """One network's float32 parameters six times (weights, gradients, Adam's two moments, the initial layers
        and the release), on about 128 input features and up to 100 classes, and a batch's activations three
        times (forward, activation, backward)."""
        hidden, _ = self.layers()
        sizes = (128, *hidden, 100)
        params = sum((a + 1) * b for a, b in itertools.pairwise(sizes))
        return 4 * (6 * params + 3 * self.batch_size * sum(sizes[1:]))

    def train(
        self, pool: Any, masks: np.ndarray, rngs: Sequence[np.random.Generator], *, sizes: Sequence[int]
    ) -> list[ModelRelease]:
        from privgame.mechanisms.dpsgd.devices import resolve_device as resolve
        from privgame.mechanisms.training.network import train_networks

        hidden, activation = self.layers()
        return list(
            train_networks(
                pool,
                masks,
                torch_generators(rngs, resolve(self.device)),
                hidden=hidden,
                activation=activation,
                epochs=self.epochs,
                batch_size=self.batch_size,
                learning_rate=self.learning_rate,
                weight_decay=self.weight_decay,
            )
        )


@dataclass(frozen=True, slots=True)
class LogisticRegressionClassifier(_Network):
    """Multinomial logistic regression trained with Adam on mini-batches (non-private).

    Parameters
    ----------
    epochs : int, default=20
        Passes over the training rows, each in a fresh order.
    batch_size : int, default=64
    learning_rate : float, default=1e-3
        Adam's step size.
    weight_decay : float, default=0.0
        L2 penalty (Adam's ``weight_decay``).
    device : {"cpu", "auto", "cuda", "cuda:<index>"}, default="cpu"
        Where to train (``"auto"``: CUDA when present).  The CPU by default, so that a config gives the same models
        on every machine; a GPU's batched products round differently in the last bits, and the device is part of
        a cached model's key.

    Notes
    -----
    Input: a pool and an include-mask (:class:`privgame.mechanisms.training.data.TrainingData`); release: the trained
    model (:class:`privgame.mechanisms.training.release.NetworkRelease`, one linear layer).  No privacy claim.  K
    releases on one pool train in one batched pass.
    """

    name: ClassVar[str] = "logistic-regression"


@dataclass(frozen=True, slots=True)
class MLPClassifier(_Network):
    """A fully connected network trained with Adam on mini-batches (non-private).

    Parameters
    ----------
    hidden : tuple of int, default=(64,)
        Hidden layer widths.
    activation : {"relu", "tanh", "elu", "gelu"}, default="relu"
    epochs, batch_size, learning_rate, weight_decay, device
        As :class:`LogisticRegressionClassifier`; more epochs over-fit more (the knob of LiRA studies).

    Notes
    -----
    The architecture and initialisation are those of :func:`privgame.mechanisms.dpsgd.models.mlp`, which the DP-SGD
    classifier (``dpsgd-mlp``) trains privately.  No privacy claim.  K releases on one pool train in one batched
    pass, each equal to its own training.
    """

    name: ClassVar[str] = "mlp"

    hidden: tuple[int, ...] = (64,)
    activation: str = "relu"

    def __post_init__(self) -> None:
        _Network.__post_init__(self)
        object.__setattr__(self, "hidden", _hidden(self.hidden))
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {self.activation!r}.")

    def layers(self) -> tuple[tuple[int, ...], str]:
        return self.hidden, self.activation
