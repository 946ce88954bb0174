"""DP-SGD on the model games' MLP, or on a user's torch model: a private trained-model mechanism (input: a pool and
an include-mask)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch

from privgame.mechanisms.dpsgd.devices import resolve_device
from privgame.mechanisms.dpsgd.models import mlp
from privgame.mechanisms.dpsgd.parameters import DPSGDParameters
from privgame.mechanisms.dpsgd.sgd import train_ensemble
from privgame.mechanisms.dpsgd.user_model import ModelFactory, check_model, is_import_path
from privgame.mechanisms.training.data import TrainingData
from privgame.mechanisms.training.models import TrainedModel, torch_generators
from privgame.mechanisms.training.network import network_release
from privgame.mechanisms.training.release import ACTIVATIONS, ModelRelease, ModuleRelease

__all__ = ["DPSGDClassifier", "check_factory"]

_HIDDEN = (64,)  # the default hidden widths


def check_factory(model: Any, network: dict[str, tuple[Any, Any]]) -> None:
    """Check a DP-SGD mechanism's ``model`` (``None`` or a factory's import path, importable and callable) and,
    with a factory, that the built-in network's parameters ``network`` (name: (value, default)) are left out.

    Raises
    ------
    TypeError, ValueError
        One line, naming the field and its value.
    """
    if model is None:
        return
    if not is_import_path(model):
        error = ValueError if isinstance(model, str) else TypeError
        raise error(f"model must be None (the built-in network) or a factory 'package.module:function', got {model!r}.")
    ModelFactory(model)  # importable and callable, checked when the config is read
    changed = {name: value for name, (value, default) in network.items() if _normal(value) != default}
    if changed:
        raise ValueError(
            f"{' and '.join(changed)} must be left out with model {model!r} (the factory replaces the built-in "
            f"network), got {', '.join(f'{name}={value!r}' for name, value in changed.items())}."
        )


def _normal(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _shared_state(models: dict[int, torch.nn.Module]) -> list[list[int]]:
    """The models' keys in groups of equal state beyond the trainable parameters (parameters without a gradient,
    buffers), in order of first appearance.

    ``train_ensemble`` runs every model's forward pass with the first model's module, so only models that differ in
    their trainable parameters alone may train together: the built-in MLP has no other state (one group, as
    before); a factory's module whose frozen weights are drawn from its generator trains alone.
    """
    groups: dict[bytes, list[int]] = {}
    for k, net in models.items():
        state = [p for p in net.parameters() if not p.requires_grad] + list(net.buffers())
        key = b"".join(t.detach().cpu().numpy().tobytes() for t in state)
        groups.setdefault(key, []).append(k)
    return list(groups.values())


@dataclass(frozen=True, slots=True)
class DPSGDClassifier(DPSGDParameters, TrainedModel):
    """The MLP of ``mlp`` (or logistic regression) trained with DP-SGD on the included records of a pool.

    Parameters
    ----------
    hidden : tuple of int, default=(64,)
        Hidden widths (``()``: logistic regression); architecture and initialisation as
        :class:`privgame.mechanisms.training.models.MLPClassifier`.  Left out with ``model``.
    activation : {"relu", "tanh", "elu", "gelu"}, default="relu"
        Left out with ``model``.
    epsilon, noise_multiplier, delta, steps, clip_norm, momentum
        As :class:`privgame.mechanisms.dpsgd.parameters.DPSGDParameters`.
    sampling_rate : float, default=0.02
        Poisson rate q (about 64 of 3,000 training rows per step).
    learning_rate : float, default=0.1
    device : {"cpu", "auto", "cuda", "cuda:<index>"}, default="cpu"
        Where to train, as :class:`privgame.mechanisms.training.models.MLPClassifier`'s.
    loop : str or None, default=None
        ``None``: privgame's engine trains K releases at once.  Or a DP-SGD training loop, built in or the user's
        ``"package.module:function"`` (:mod:`privgame.mechanisms.dpsgd.loop`), given each release's included rows
        (and ``dataset_size``, the public N); the releases train one after the other.
    model : str or None, default=None
        ``None``: the built-in MLP of ``hidden`` and ``activation``.  Or a user's ``torch.nn.Module`` by its factory,
        ``"package.module:factory"``, called as ``factory((d,), n_classes, generator=...)`` for records of d
        encoded features (the contract of :mod:`privgame.mechanisms.dpsgd.user_model`; importing it runs that module's
        code, as a plugin).  Checked when the mechanism is built (importable, callable; ``hidden`` and
        ``activation`` refused unless left at their defaults) and before training (the rest of the contract,
        :func:`privgame.mechanisms.dpsgd.user_model.check_model`, one line each); trained in float32 by the same
        :func:`privgame.mechanisms.dpsgd.sgd.train_ensemble` call, released as a
        :class:`privgame.mechanisms.training.release.ModuleRelease` (the factory's path and the trained parameters).

    Notes
    -----
    Neighbouring relation: add/remove one training record; analytic claim: DP-SGD with (q, σ, T) from
    ``dp_accounting`` (PLD).  The divisor qN uses the PUBLIC training-set size (``TrainingData.size``, which the
    games set to the dataset size n, also in a world with n − 1 records), never the realised count.  K releases
    on one pool train in one batched pass (:func:`privgame.mechanisms.dpsgd.sgd.train_ensemble` with a (K, N) mask),
    each equal to its own training.
    """

    name: ClassVar[str] = "dpsgd-mlp"

    sampling_rate: float = 0.02
    learning_rate: float = 0.1
    hidden: tuple[int, ...] = _HIDDEN
    activation: str = "relu"
    model: str | None = None
    loop: str | None = None

    def __post_init__(self) -> None:
        DPSGDParameters.__post_init__(self)  # checks device too
        if self.loop is not None:
            from privgame.mechanisms.dpsgd.loop import TrainingLoop

            TrainingLoop(self.loop)
            if self.loop in ("opacus", "opacus-ghost"):
                raise ValueError(
                    f"loop must be 'privgame' or your own in black-box and record audits (loop {self.loop!r} "
                    "samples at 1/len(loader) over the rows it is given, and here their number depends on the "
                    f"membership; audit Opacus white-box: opacus-whitebox), got {self.loop!r}."
                )
        if not isinstance(self.hidden, tuple | list):
            raise TypeError(f"hidden must be a list of layer widths, got {self.hidden!r}.")
        from privgame.analysis._checks import check_int

        object.__setattr__(
            self, "hidden", tuple(check_int(f"hidden[{i}]", w, low=1, high=1 << 16) for i, w in enumerate(self.hidden))
        )
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {self.activation!r}.")
        check_factory(self.model, {"hidden": (self.hidden, _HIDDEN), "activation": (self.activation, "relu")})

    def cache_code(self) -> tuple[str, ...]:
        """The modules of the factory (``model``) and of the user's ``loop``: their sources determine the release."""
        paths = [p for p in (self.model, self.loop) if p is not None and ":" in p]
        return tuple(p.partition(":")[0] for p in paths)

    def train(
        self, pool: Any, masks: np.ndarray, rngs: Sequence[np.random.Generator], *, sizes: Sequence[int]
    ) -> list[ModelRelease]:
        data: TrainingData = pool
        device = resolve_device(self.device)
        x = torch.tensor(data.x, device=device)  # copies: the pool's arrays may be read-only (torch warns on those)
        y = torch.tensor(data.y, device=device)
        widths = (data.x.shape[1], *self.hidden, data.n_classes)
        shape = (int(data.x.shape[1]),)
        if self.model is not None:
            check_model(self.model, shape, data.n_classes)  # the contract, one line, before any training
        gens = torch_generators(rngs, device)
        if self.loop is not None:
            return [
                self._release(self._train_loop(x[rows], y[rows], widths, g, size), shape, data.n_classes)
                for rows, g, size in zip(torch.from_numpy(masks).to(device), gens, sizes, strict=True)
            ]
        out: list[ModelRelease | None] = [None] * len(gens)
        public = np.asarray(sizes)
        for size in np.unique(public):
            built = {int(k): self._build(widths, gens[k]) for k in np.flatnonzero(public == size)}
            for group in _shared_state(built):
                trained = train_ensemble(
                    [built[k] for k in group],
                    x,
                    y,
                    self.training_config(int(size)),  # on self.device, resolved
                    generators=[gens[k] for k in group],
                    include=torch.from_numpy(masks[group]).to(device),
                )
                for k, net in zip(group, trained, strict=True):
                    out[k] = self._release(net, shape, data.n_classes)
        return [r for r in out if r is not None]

    def _train_loop(
        self, x: torch.Tensor, y: torch.Tensor, widths: tuple[int, ...], gen: torch.Generator, size: int
    ) -> torch.nn.Module:
        """One release trained by ``loop`` (:mod:`privgame.mechanisms.dpsgd.loop`) on its included rows ``x``,
        ``y``, with the public training-set size ``size``."""
        from privgame.mechanisms.dpsgd.loop import TrainingLoop

        assert self.loop is not None  # the caller checked
        run = self.loop_run(self._build(widths, gen), x, y, torch.nn.CrossEntropyLoss(reduction="none"), gen, int(size))
        return TrainingLoop(self.loop).run(run)

    def _build(self, widths: tuple[int, ...], generator: torch.Generator) -> torch.nn.Module:
        """The network to train, initialised from ``generator`` (float32): the factory's, or the built-in MLP."""
        if self.model is None:
            return mlp(widths, generator=generator, activation=self.activation)
        return ModelFactory(self.model).build(widths[:1], widths[-1], generator=generator, dtype=torch.float32)

    def _release(self, net: torch.nn.Module, shape: tuple[int, ...], n_classes: int) -> ModelRelease:
        """The trained network as released: a ModuleRelease of the factory's module, or the MLP's NetworkRelease."""
        if self.model is not None:
            return ModuleRelease.from_module(net, model=self.model, input_shape=shape, n_classes=n_classes)
        linears = [m for m in net.modules() if isinstance(m, torch.nn.Linear)]
        return network_release([(m.weight.detach().T, m.bias.detach()) for m in linears], self.activation)
