"""DP-SGD on the model games' MLP: a private trained-model mechanism (input: a pool and an include-mask)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch

from mechanisms.dpsgd.devices import resolve_device
from mechanisms.dpsgd.models import mlp
from mechanisms.dpsgd.parameters import DPSGDParameters
from mechanisms.dpsgd.sgd import train_ensemble
from mechanisms.training.data import TrainingData
from mechanisms.training.models import TrainedModel, check_device, torch_generators
from mechanisms.training.network import network_release
from mechanisms.training.release import ACTIVATIONS, ModelRelease

__all__ = ["DPSGDClassifier"]


@dataclass(frozen=True, slots=True)
class DPSGDClassifier(DPSGDParameters, TrainedModel):
    """The MLP of ``mlp`` (or logistic regression) trained with DP-SGD on the included records of a pool.

    Parameters
    ----------
    hidden : tuple of int, default=(64,)
        Hidden widths (``()``: logistic regression); architecture and initialisation as
        :class:`mechanisms.training.models.MLPClassifier`.
    activation : {"relu", "tanh", "elu", "gelu"}, default="relu"
    epsilon, noise_multiplier, delta, steps, clip_norm, momentum
        As :class:`mechanisms.dpsgd.parameters.DPSGDParameters`.
    sampling_rate : float, default=0.02
        Poisson rate q (about 64 of 3,000 training rows per step).
    learning_rate : float, default=0.1
    device : {"cpu", "auto", "cuda", "cuda:<index>"}, default="cpu"
        Where to train, as :class:`mechanisms.training.models.MLPClassifier`'s.

    Notes
    -----
    Neighbouring relation: add/remove one training record; analytic claim: DP-SGD with (q, σ, T) from
    ``dp_accounting`` (PLD).  The divisor qN uses the PUBLIC training-set size (``TrainingData.size``, which the
    games set to the dataset size n, also in a world with n − 1 records), never the realised count.  K releases
    on one pool train in one batched pass (:func:`mechanisms.dpsgd.sgd.train_ensemble` with a (K, N) mask), each
    equal to its own training.
    """

    name: ClassVar[str] = "dpsgd-mlp"

    sampling_rate: float = 0.02
    learning_rate: float = 0.1
    hidden: tuple[int, ...] = (64,)
    activation: str = "relu"
    device: str = "cpu"

    def __post_init__(self) -> None:
        DPSGDParameters.__post_init__(self)
        check_device(self.device)
        if not isinstance(self.hidden, tuple | list):
            raise TypeError(f"hidden must be a list of layer widths, got {self.hidden!r}.")
        from analysis._checks import check_int

        object.__setattr__(
            self, "hidden", tuple(check_int(f"hidden[{i}]", w, low=1, high=1 << 16) for i, w in enumerate(self.hidden))
        )
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {self.activation!r}.")

    def train(
        self, pool: Any, masks: np.ndarray, rngs: Sequence[np.random.Generator], *, sizes: Sequence[int]
    ) -> list[ModelRelease]:
        data: TrainingData = pool
        device = resolve_device(self.device)
        x = torch.tensor(data.x, device=device)  # copies: the pool's arrays may be read-only (torch warns on those)
        y = torch.tensor(data.y, device=device)
        widths = (data.x.shape[1], *self.hidden, data.n_classes)
        gens = torch_generators(rngs, device)
        out: list[ModelRelease | None] = [None] * len(gens)
        public = np.asarray(sizes)
        for size in np.unique(public):
            group = np.flatnonzero(public == size)
            models = [mlp(widths, generator=gens[k], activation=self.activation) for k in group]
            trained = train_ensemble(
                models,
                x,
                y,
                dataclasses.replace(self.training_config(int(size)), device=str(device)),
                generators=[gens[k] for k in group],
                include=torch.from_numpy(masks[group]).to(device),
            )
            for k, net in zip(group, trained, strict=True):
                linears = [m for m in net.modules() if isinstance(m, torch.nn.Linear)]
                out[k] = network_release([(m.weight.detach().T, m.bias.detach()) for m in linears], self.activation)
        return [r for r in out if r is not None]
