"""Opacus under audit: the user's model trained by Opacus's ``PrivacyEngine``, with white-box Dirac canaries.

Opacus (Yousefpour et al., arXiv:2109.12298; the optional extra ``opacus``, version 1.6) trains the model with
its own per-sample gradients (hooks, which add up a module's calls per example when the model uses a layer twice:
tests/mechanisms/dpsgd/test_weight_sharing.py), its Poisson sampling (``DPDataLoader``: each example joins a
batch with probability 1/len(loader)), its clipping (factor C / (‖g‖ + 10⁻⁶), at most 1), its noise N(0, σ²C²) on
the summed clipped gradients and its normalisation (division by ``int(N · q)`` for ``loss_reduction = "mean"``).
privgame does not fork or patch Opacus's code: it wraps the one bound method of the optimizer object it is given,
``DPOptimizer.add_noise``, which Opacus calls after ``clip_and_accumulate`` (``p.summed_grad`` holds the clipped
sum) and before ``scale_grad``.  The wrapper

1. sets the reserved canary coordinates of ``p.summed_grad`` to 0 (the data never move them:
   :mod:`privgame.mechanisms.dpsgd.user_model`, "the reserved layout"), then
2. adds the sampled member canaries' gradients (C on each one's coordinate; each canary sampled with probability
   q per step from the release's canary stream, as the engine's), and
3. calls Opacus's own ``add_noise``.

The release is each canary's summed descent θ_0 − θ_T along its coordinate, as the engine's white-box mechanism.
The claim is privgame's PLD at (q, σ, T) (:func:`privgame.analysis.accounting.dpsgd_claim`, add/remove-one); Opacus's
own RDP accountant's ε at the same δ is stored beside it (``derived_parameters``: ``opacus_epsilon``).

Seeds: the model is built from the release's initialisation stream, Opacus's Poisson sampler and its noise get
torch generators of their own from the release's training stream, so the same seed gives the same release.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from numpy.typing import NDArray
from torch import nn

from privgame.mechanisms._base import check_runs
from privgame.mechanisms.dpsgd.clipping import trainable_parameters
from privgame.mechanisms.dpsgd.devices import make_generator
from privgame.mechanisms.dpsgd.models import logistic_regression, mlp
from privgame.mechanisms.dpsgd.parameters import DPSGDParameters
from privgame.mechanisms.dpsgd.sgd import poisson_mask
from privgame.mechanisms.dpsgd.user_model import (
    ModelFactory,
    check_model,
    is_import_path,
    reserved_coordinates,
    reserved_masks,
)
from privgame.mechanisms.dpsgd.whitebox import (
    _HIDDEN,
    _MODELS,
    _flat,
    _generators,
    _place,
    _tensors,
    reserved_problem,
)
from privgame.mechanisms.training.canaries import CanaryMechanism, as_canary_data

__all__ = ["OpacusWhiteBox", "opacus_batch_size", "opacus_epsilon"]


def _opacus() -> Any:
    """The ``opacus`` package, or one line saying how to install it."""
    try:
        import opacus
    except ImportError:
        raise ValueError(
            "mechanism 'opacus-whitebox' needs Opacus: pip install 'privgame[opacus]' (opacus 1.6)."
        ) from None
    return opacus


def opacus_batch_size(n_rows: int, sampling_rate: float) -> int | None:
    """The ``batch_size`` of the DataLoader for which Opacus samples at exactly ``sampling_rate`` (its rate is
    1 / len(loader) = 1 / ⌈N / batch_size⌉), or ``None`` when no batch size gives it."""
    steps = round(1.0 / sampling_rate)
    if steps < 1 or not math.isclose(1.0 / steps, sampling_rate, rel_tol=1e-12):
        return None
    for batch in (n_rows // steps, -(-n_rows // steps)):
        if batch >= 1 and -(-n_rows // batch) == steps:
            return batch
    return None


def opacus_epsilon(noise_multiplier: float, sampling_rate: float, steps: int, delta: float) -> float:
    """Opacus's own RDP accountant's ε after T steps at (q, σ), at δ."""
    from opacus.accountants import RDPAccountant

    accountant = RDPAccountant()
    accountant.history = [(noise_multiplier, sampling_rate, steps)]
    return float(accountant.get_epsilon(delta))


@dataclass(frozen=True, slots=True)
class OpacusWhiteBox(DPSGDParameters, CanaryMechanism):
    """The game's rows trained by Opacus's PrivacyEngine with m Dirac canaries; releases their descents.

    Parameters
    ----------
    epsilon, noise_multiplier, delta, sampling_rate, steps, clip_norm, learning_rate, momentum
        As :class:`privgame.mechanisms.dpsgd.parameters.DPSGDParameters`; ``sampling_rate`` must be 1/k for an integer
        k that Opacus can realise on the game's rows (a DataLoader batch size b with ⌈N / b⌉ = k), checked with
        the config.  Only ``normalisation = "expected"`` (Opacus's ``loss_reduction = "mean"``).
    model : {"logistic", "mlp"} or str, default="logistic"
        As :class:`privgame.mechanisms.dpsgd.whitebox.DPSGDWhiteBox` (a factory path for any Module), float64.

    Notes
    -----
    Neighbouring relation: add/remove one example (a canary); claim: DP-SGD's PLD at (q, σ, T).  The canary
    coordinates are the reserved layout's, so each canary is an independent channel (``canary_dependence`` is
    None).  Opacus divides by ``int(N · q)``, N the real rows; the engine by qN: equal when qN is an integer.
    """

    name: ClassVar[str] = "opacus-whitebox"
    input_kind: ClassVar[str] = "canary-dataset"
    release_kind: ClassVar[str] = "per-canary-values"
    canary_examples: ClassVar[bool] = False
    canary_dependence: ClassVar[str | None] = None  # reserved coordinates: see privgame.mechanisms.dpsgd.user_model

    model: str = "logistic"

    def __post_init__(self) -> None:
        DPSGDParameters.__post_init__(self)
        _opacus()
        if is_import_path(self.model):
            ModelFactory(self.model)
        elif self.model not in _MODELS:
            raise ValueError(
                f"model must be one of {', '.join(_MODELS)} or a factory 'package.module:function', got {self.model!r}."
            )
        steps = round(1.0 / self.sampling_rate)
        if not math.isclose(1.0 / steps, self.sampling_rate, rel_tol=1e-12):
            raise ValueError(
                f"sampling_rate must be 1/k for an integer k (Opacus samples at 1/len(loader)), got "
                f"{self.sampling_rate}."
            )
        if self.normalisation != "expected":
            raise ValueError(
                f"normalisation must be 'expected' for opacus-whitebox (Opacus's loss_reduction 'mean'), got "
                f"{self.normalisation!r}."
            )

    def derived_parameters(self) -> dict[str, float]:
        """σ when calibrated from ε, and Opacus's own RDP accountant's ε at δ (``opacus_epsilon``)."""
        return {
            **DPSGDParameters.derived_parameters(self),
            "opacus_epsilon": opacus_epsilon(self.sigma, self.sampling_rate, self.steps, self.delta),
        }

    def derives_parameters(self) -> bool:
        return True

    def canary_problem(self, m: int, *, features: int, classes: int) -> str | None:
        """The user model's contract (m reserved coordinates), or a built-in model's coordinates counted from its
        shape; nothing else depends on the rows' count here (the sampling rate's realisability is checked on the
        rows, in :meth:`release`, and by the game's config)."""
        if not is_import_path(self.model):
            return reserved_problem(m, self.model, features, classes, hint="fewer canaries")
        try:
            check_model(self.model, (features,), classes, m)
        except ValueError as exc:
            return str(exc).rstrip(".")
        return None

    def release(self, data: Any, *, rng: np.random.Generator) -> NDArray[np.float64]:
        """Train once with Opacus and the member canaries; return each canary's summed descent."""
        opacus = _opacus()
        data = as_canary_data("data", data)
        x, y = _tensors(data.rows)
        n, m = x.shape[0], data.m
        batch = opacus_batch_size(n, self.sampling_rate)
        if batch is None:
            raise ValueError(
                f"sampling_rate must be 1/k for an integer k that Opacus realises on {n} rows (its rate is "
                f"1/len(loader)), got {self.sampling_rate}."
            )
        init_gen, train_gen, canary_gen, choice_gen = _generators(rng)
        model = self._build_model(x.shape[1], data.rows.n_classes, init_gen)
        params = [p for _, p in trainable_parameters(model)]
        coords = reserved_coordinates(sum(p.numel() for p in params), m, choice_gen)
        frozen = reserved_masks(coords, params)
        members = torch.as_tensor(data.membership)
        before = _flat(params)[coords]
        loader_gen, noise_gen = (
            make_generator(int(s), "cpu") for s in torch.randint(0, 2**62, (2,), generator=train_gen)
        )
        loader = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(x, y), batch_size=batch, generator=loader_gen
        )
        optimizer = torch.optim.SGD(model.parameters(), lr=self.learning_rate, momentum=self.momentum)
        with warnings.catch_warnings():  # secure_mode off is the point here: seeded, reproducible releases
            warnings.filterwarnings("ignore", message="Secure RNG turned off")
            engine = opacus.PrivacyEngine(accountant="rdp", secure_mode=False)
        private, dp_optimizer, dp_loader = engine.make_private(
            module=model,
            optimizer=optimizer,
            data_loader=loader,
            noise_multiplier=self.sigma,
            max_grad_norm=self.clip_norm,
            poisson_sampling=True,
            noise_generator=noise_gen,
        )
        noise = dp_optimizer.add_noise  # Opacus's own, called by the wrapper below

        def add_noise() -> None:
            sampled = poisson_mask(m, self.sampling_rate, canary_gen) & members
            canaries = _place(coords, sampled.to(torch.float64) * self.clip_norm, params)
            for p, canary, mask in zip(dp_optimizer.params, canaries, frozen, strict=True):
                p.summed_grad = p.summed_grad.masked_fill(mask, 0.0) + canary
            noise()

        dp_optimizer.add_noise = add_noise
        loss_fn = nn.CrossEntropyLoss()
        private.train()
        with warnings.catch_warnings():  # Opacus's hooks on a first layer whose inputs need no gradient: expected
            warnings.filterwarnings("ignore", message="Full backward hook is firing")
            self._train(private, dp_optimizer, dp_loader, loss_fn)
        return (before - _flat(params)[coords]).numpy().copy()

    def _train(self, private: nn.Module, dp_optimizer: Any, dp_loader: Any, loss_fn: nn.Module) -> None:
        """T of Opacus's steps, across as many passes over its Poisson loader as they take."""
        step = 0
        while step < self.steps:
            for xb, yb in dp_loader:
                if step == self.steps:
                    break
                dp_optimizer.zero_grad()
                if xb.shape[0] > 0:
                    loss_fn(private(xb), yb).backward()
                else:  # an empty Poisson batch: Opacus's per-sample gradients of nothing, then its noise
                    _empty_grad_samples(dp_optimizer)
                dp_optimizer.step()
                step += 1

    def release_runs(self, data: Sequence[Any], *, rngs: Sequence[np.random.Generator]) -> list[NDArray[np.float64]]:
        """K releases one after the other (Opacus trains one model at a time)."""
        check_runs(data, rngs)
        return [self.release(d, rng=r) for d, r in zip(data, rngs, strict=True)]

    def canary_bytes(self, m: int, *, rows: int, features: int, classes: int) -> int:
        """The rows, the model's coordinates (with a batch of per-sample gradients, about b + 8 copies)."""
        if is_import_path(self.model):
            size = check_model(self.model, (features,), classes, m)
        else:
            width = classes if self.model == "logistic" else _HIDDEN
            size = (features + 1) * width + ((width + 1) * classes if self.model == "mlp" else 0)
        batch = max(1, math.ceil(self.sampling_rate * rows))
        return 8 * (2 * rows * features + (batch + 8) * size) + 128 * m

    def _build_model(self, features: int, classes: int, generator: torch.Generator) -> nn.Module:
        if is_import_path(self.model):
            return ModelFactory(self.model).build((features,), classes, generator=generator, dtype=torch.float64)
        if self.model == "logistic":
            return logistic_regression(features, classes, generator=generator, dtype=torch.float64)
        return mlp((features, _HIDDEN, classes), generator=generator, dtype=torch.float64)


def _empty_grad_samples(optimizer: Any) -> None:
    """Zero per-sample gradients of an empty batch, in the shape Opacus's clipping expects ((0, *shape))."""
    for p in optimizer.params:
        p.grad_sample = torch.zeros((0, *p.shape), dtype=p.dtype)
