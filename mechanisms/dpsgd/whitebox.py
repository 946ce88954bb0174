"""DP-SGD with white-box Dirac gradient canaries, for the one-run audit (Steinke, Nasr, Jagielski 2023, §6).

The model trains on the rows the game gives it (:class:`mechanisms.training.canaries.CanaryData`: the membership
bits and the real training rows); it loads no data set of its own.

Canary i is a gradient that is zero except C at one coordinate c_i of the flattened parameter vector (m canaries
on m distinct coordinates).  A member canary (S_i = 1) is inserted as an already-clipped example: each step it is
sampled with probability q, like every training example, and when sampled its gradient is added to the clipped
sum before the noise.  The release is, per canary, Σ_t (θ_t − θ_{t+1})[c_i]: how far training descended along
the canary's coordinate, larger for members.  The sum telescopes to (θ_0 − θ_T)[c_i], so only the m canary
coordinates before and after training are read: no per-step recording is needed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from numpy.typing import NDArray
from torch import Tensor, nn

from mechanisms._base import check_runs
from mechanisms.dpsgd.clipping import trainable_parameters
from mechanisms.dpsgd.devices import make_generator
from mechanisms.dpsgd.models import logistic_regression, mlp
from mechanisms.dpsgd.parameters import DPSGDParameters
from mechanisms.dpsgd.sgd import poisson_mask, train, train_ensemble
from mechanisms.training.canaries import CanaryMechanism, as_canary_data, stack_canary_runs
from mechanisms.training.data import TrainingData

__all__ = ["DPSGDWhiteBox"]

_MODELS = ("logistic", "mlp")
_HIDDEN = 32  # the MLP's hidden width


def _generators(rng: np.random.Generator) -> tuple[torch.Generator, torch.Generator, torch.Generator]:
    """A release's three streams (initialisation, training, canary sampling), from the release's rng."""
    seeds = np.random.SeedSequence(rng.integers(0, 2**63, size=4).tolist()).spawn(3)
    init_gen, train_gen, canary_gen = (make_generator(s, "cpu") for s in seeds)
    return init_gen, train_gen, canary_gen


@dataclass(frozen=True, slots=True, eq=False)
class _Setup:
    """What a release with m canaries trains on: the padded inputs and the canaries' coordinates."""

    m: int
    n_inputs: int
    n_classes: int
    coords: Tensor
    x: Tensor
    y: Tensor

    def canary_gradients(self, values: Tensor, params: Sequence[Tensor], batch: int | None = None) -> list[Tensor]:
        """``values`` (m,) or (K, m) placed on the canaries' coordinates, split into per-parameter tensors."""
        sizes = [p.numel() for p in params]
        lead = () if batch is None else (batch,)
        vector = torch.zeros((*lead, sum(sizes)), dtype=torch.float64)
        vector[..., self.coords] = values
        chunks = vector.split(sizes, dim=-1)
        return [chunk.reshape(*lead, *p.shape) for chunk, p in zip(chunks, params, strict=True)]


@dataclass(frozen=True, slots=True)
class DPSGDWhiteBox(DPSGDParameters, CanaryMechanism):
    """DP-SGD on the game's rows with m Dirac gradient canaries; releases each canary's summed descent.

    The rows are the game's (its ``data``, the digits in the shipped configs; input ``"canary-dataset"``,
    :class:`mechanisms.training.canaries.CanaryData`): the mechanism loads no data set.  It takes no canary
    examples (``canary_examples = False``): its canaries are gradients.

    Parameters
    ----------
    epsilon, noise_multiplier, delta, sampling_rate, steps, clip_norm, learning_rate, momentum
        As :class:`mechanisms.dpsgd.parameters.DPSGDParameters`; a canary's gradient has norm exactly
        ``clip_norm``.
    model : {"logistic", "mlp"}, default="logistic"
        Logistic regression (inputs → classes) or an MLP (inputs → 32 → classes), float64; the classes are the
        rows' ``n_classes``.

    Notes
    -----
    Neighbouring relation: add/remove one example (a canary); analytic claim: DP-SGD with (q, σ, T) from
    ``dp_accounting`` (PLD).  The summed gradient is divided by q·N, N the number of real rows.  The model gets
    ⌈m / width⌉ extra input features, 0 for every real example; canary i owns one first-layer weight of those
    features (fixed in advance, independent of membership), so the data's gradients never touch the canaries'
    coordinates and each sees only its own insertions and the noise.  The canaries' sampling comes from its own
    stream of the mechanism's generator, so changing m does not change the noise drawn for the real examples.
    With q = 1 and T = 1 the release is the Gaussian mechanism on the membership bits up to the shared data
    gradient, the worst case in which the audit comes close to ε.

    References
    ----------
    .. [1] Steinke, Nasr, Jagielski. Privacy Auditing with One (1) Training Run. arXiv:2305.08846, §6.
    .. [2] Nasr et al. Tight Auditing of Differentially Private Machine Learning. USENIX Security 2023,
       arXiv:2302.07956 (Dirac gradient canaries).
    """

    name: ClassVar[str] = "dpsgd-whitebox"
    input_kind: ClassVar[str] = "canary-dataset"
    release_kind: ClassVar[str] = "per-canary-values"
    canary_examples: ClassVar[bool] = False
    # each canary: its own coordinate, its own Poisson draws and noise, untouched by the data (see Notes)
    canary_dependence: ClassVar[str | None] = None

    model: str = "logistic"

    def __post_init__(self) -> None:
        DPSGDParameters.__post_init__(self)  # zero-argument super() is unavailable in slotted dataclasses
        if self.model not in _MODELS:
            raise ValueError(f"model must be one of {', '.join(_MODELS)}, got {self.model!r}.")

    def release(self, data: Any, *, rng: np.random.Generator) -> NDArray[np.float64]:
        """Train once with the member canaries; return each canary's summed descent along its coordinate."""
        data = as_canary_data("data", data)
        setup = self._setup(data.rows, data.m)
        init_gen, train_gen, canary_gen = _generators(rng)
        model = self._build_model(setup, init_gen)
        params = [p for _, p in trainable_parameters(model)]
        members = torch.as_tensor(data.membership)

        def inject(step: int) -> list[Tensor]:
            sampled = poisson_mask(setup.m, self.sampling_rate, canary_gen) & members
            return setup.canary_gradients(sampled.to(torch.float64) * self.clip_norm, params)

        before = params[0].detach().reshape(-1)[setup.coords].clone()
        train(model, setup.x, setup.y, self.training_config(), generator=train_gen, inject=inject)
        return (before - params[0].detach().reshape(-1)[setup.coords]).numpy().copy()

    def release_runs(self, data: Sequence[Any], *, rngs: Sequence[np.random.Generator]) -> list[NDArray[np.float64]]:
        """K independent releases trained at once (:func:`train_ensemble`), each equal to ``release(d, rng=r)``."""
        check_runs(data, rngs)
        if len(data) == 0:
            return []
        first, bits = stack_canary_runs(data)
        setup = self._setup(first.rows, first.m)
        gens = [_generators(r) for r in rngs]
        models = [self._build_model(setup, init) for init, _, _ in gens]
        members = torch.as_tensor(bits)
        template = [p for _, p in trainable_parameters(models[0])]
        k = len(models)

        def inject(step: int) -> list[Tensor]:
            sampled = torch.stack([poisson_mask(setup.m, self.sampling_rate, g) for _, _, g in gens]) & members
            return setup.canary_gradients(sampled.to(torch.float64) * self.clip_norm, template, batch=k)

        def coordinates() -> Tensor:  # (K, m): each model's canary coordinates of its first-layer weight
            return torch.stack([trainable_parameters(m)[0][1].detach().reshape(-1)[setup.coords] for m in models])

        before = coordinates()
        train_ensemble(
            models, setup.x, setup.y, self.training_config(), generators=[g for _, g, _ in gens], inject=inject
        )
        return [row.numpy().copy() for row in before - coordinates()]

    def canary_bytes(self, m: int, *, rows: int, features: int, classes: int) -> int:
        """The inputs padded with ⌈m / width⌉ canary features (twice: data and batch) and about six copies of
        the first layer's weights (weights, gradient, noise, momentum, the canaries' gradient vector)."""
        width = self._width(classes)
        n_inputs = features + max(1, math.ceil(m / width))
        return 8 * (2 * rows * n_inputs + 6 * width * n_inputs) + 64 * m

    def _width(self, classes: int) -> int:
        """The first layer's width: the classes (logistic regression) or the MLP's hidden width."""
        return classes if self.model == "logistic" else _HIDDEN

    def _build_model(self, setup: _Setup, generator: torch.Generator) -> nn.Module:
        """The chosen model for the padded inputs, initialised from ``generator`` (float64)."""
        if self.model == "logistic":
            return logistic_regression(setup.n_inputs, setup.n_classes, generator=generator, dtype=torch.float64)
        return mlp((setup.n_inputs, _HIDDEN, setup.n_classes), generator=generator, dtype=torch.float64)

    def _setup(self, rows: TrainingData, m: int) -> _Setup:
        # The canaries live on the first-layer weights of extra input features that are 0 for every real example,
        # so the data never moves their coordinates: each one sees only its canary and the noise.
        features, classes = rows.x.shape[1], rows.n_classes
        width = self._width(classes)
        extra = max(1, math.ceil(m / width))
        out, inp = np.meshgrid(np.arange(width), features + np.arange(extra), indexing="xy")
        coords = torch.as_tensor((out * (features + extra) + inp).reshape(-1)[:m])  # W[out, in] of the first layer
        x = torch.from_numpy(np.asarray(rows.x, dtype=np.float64))  # a copy: the game's rows stay untouched
        x = torch.cat([x, torch.zeros(x.shape[0], extra, dtype=x.dtype)], dim=1)
        y = torch.from_numpy(np.array(rows.y, dtype=np.int64))
        return _Setup(m=m, n_inputs=features + extra, n_classes=classes, coords=coords, x=x, y=y)
