"""DP-SGD with white-box Dirac gradient canaries, for the one-run audit (Steinke, Nasr, Jagielski 2023, §6).

Canary i is a gradient that is zero except C at one coordinate c_i of the flattened parameter vector (m canaries
on m distinct coordinates).  A member canary (S_i = 1) is inserted as an already-clipped example: each step it is
sampled with probability q, like every training example, and when sampled its gradient is added to the clipped
sum before the noise.  The release is, per canary, Σ_t (θ_t − θ_{t+1})[c_i]: how far training descended along
the canary's coordinate, larger for members.  Only those m coordinates are recorded per step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch
from numpy.typing import NDArray
from torch import Tensor, nn

from analysis._checks import check_int, check_membership, check_real
from analysis.accounting import PrivacyClaim, dpsgd_claim, dpsgd_noise_multiplier
from mechanisms._base import Mechanism
from mechanisms.dpsgd.clipping import trainable_parameters
from mechanisms.dpsgd.devices import make_generator
from mechanisms.dpsgd.models import logistic_regression, mlp
from mechanisms.dpsgd.train import DPSGDConfig, poisson_mask, train

__all__ = ["DPSGDWhiteBox", "load_digits_tensors"]

_MODELS = ("logistic", "mlp")


def load_digits_tensors(rows: int | None = None) -> tuple[Tensor, Tensor]:
    """scikit-learn's bundled 8×8 digits (1,797 images), pixels scaled to [0, 1], float64; the first ``rows``."""
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.as_tensor(data.data / 16.0, dtype=torch.float64)
    y = torch.as_tensor(data.target, dtype=torch.long)
    return (x, y) if rows is None else (x[:rows], y[:rows])


@dataclass(frozen=True, slots=True)
class DPSGDWhiteBox(Mechanism):
    """DP-SGD on sklearn's digits with m Dirac gradient canaries; releases each canary's summed descent.

    Parameters
    ----------
    epsilon : float or None, default=None
        Target ε at ``delta``: the noise multiplier is the smallest σ whose PLD ε is at most this (computed once,
        here).  Exactly one of ``epsilon`` and ``noise_multiplier`` is given.
    noise_multiplier : float or None, default=None
        σ directly.
    delta : float, default=1e-5
        The δ at which ``epsilon`` calibrates σ.
    sampling_rate : float, default=0.1
        Poisson sampling rate q of examples and canaries.
    steps : int, default=100
        T.
    clip_norm : float, default=1.0
        C; a canary's gradient has norm exactly C.
    learning_rate : float, default=0.5
    momentum : float, default=0.0
    model : {"logistic", "mlp"}, default="logistic"
        Logistic regression 64 → 10 (650 parameters) or an MLP 64 → 32 → 10 (2,410).
    train_rows : int, default=1000
        Real training examples (the first rows of the digits), always included.

    Notes
    -----
    Neighbouring relation: add/remove one example (a canary); analytic claim: DP-SGD with (q, σ, T) from
    ``dp_accounting`` (PLD).  The model gets ⌈m / width⌉ extra input features, 0 for every real example; canary i
    owns one first-layer weight of those features (fixed in advance, independent of membership), so the data's
    gradients never touch the canaries' coordinates and each sees only its own insertions and the noise.  The
    canaries' sampling comes from its own stream of the mechanism's generator, so changing m does not change the
    noise drawn for the real examples.  With q = 1 and T = 1 the release is the Gaussian mechanism on the
    membership bits up to the shared data gradient, the worst case in which the audit comes close to ε.

    References
    ----------
    .. [1] Steinke, Nasr, Jagielski. Privacy Auditing with One (1) Training Run. arXiv:2305.08846, §6.
    .. [2] Nasr et al. Tight Auditing of Differentially Private Machine Learning. USENIX Security 2023,
       arXiv:2302.07956 (Dirac gradient canaries).
    """

    name: ClassVar[str] = "dpsgd-whitebox"
    input_kind: ClassVar[str] = "canary-bits"
    release_kind: ClassVar[str] = "per-canary-values"

    epsilon: float | None = None
    noise_multiplier: float | None = None
    delta: float = 1e-5
    sampling_rate: float = 0.1
    steps: int = 100
    clip_norm: float = 1.0
    learning_rate: float = 0.5
    momentum: float = 0.0
    model: str = "logistic"
    train_rows: int = 1000
    sigma: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        check_real("delta", self.delta, low=0.0, high=1.0, low_open=True, high_open=True)
        q = check_real("sampling_rate", self.sampling_rate, low=0.0, high=1.0, low_open=True)
        steps = check_int("steps", self.steps, low=1)
        check_real("clip_norm", self.clip_norm, low=0.0, low_open=True)
        check_real("learning_rate", self.learning_rate, low=0.0, low_open=True)
        check_real("momentum", self.momentum, low=0.0, high=1.0, high_open=True)
        check_int("train_rows", self.train_rows, low=1, high=1797)
        if self.model not in _MODELS:
            raise ValueError(f"model must be one of {', '.join(_MODELS)}, got {self.model!r}.")
        if (self.epsilon is None) == (self.noise_multiplier is None):
            raise ValueError(
                f"exactly one of epsilon and noise_multiplier must be given, got epsilon={self.epsilon!r}, "
                f"noise_multiplier={self.noise_multiplier!r}."
            )
        if self.epsilon is not None:
            eps = check_real("epsilon", self.epsilon, low=0.0, low_open=True)
            object.__setattr__(self, "epsilon", eps)
            sigma = dpsgd_noise_multiplier(eps, self.delta, q, steps)
        else:
            sigma = check_real("noise_multiplier", self.noise_multiplier, low=0.0, low_open=True)
        object.__setattr__(self, "sigma", sigma)

    def _build(self, n_inputs: int, generator: torch.Generator) -> nn.Module:
        if self.model == "logistic":
            return logistic_regression(n_inputs, 10, generator=generator, dtype=torch.float64)
        return mlp((n_inputs, 32, 10), generator=generator, dtype=torch.float64)

    def release(self, data: Any, *, rng: np.random.Generator) -> NDArray[np.float64]:
        """Train once with the member canaries; return each canary's summed descent along its coordinate."""
        bits = check_membership("data", data)
        m = bits.shape[0]
        seeds = np.random.SeedSequence(rng.integers(0, 2**63, size=4).tolist()).spawn(3)
        init_gen, train_gen, canary_gen = (make_generator(s, "cpu") for s in seeds)
        # The canaries live on the first-layer weights of extra input features that are 0 for every real example,
        # so the data never moves their coordinates: each one sees only its canary and the noise.
        width = 10 if self.model == "logistic" else 32
        extra = max(1, math.ceil(m / width))
        model = self._build(64 + extra, init_gen)
        params = [p for _, p in trainable_parameters(model)]
        sizes = [p.numel() for p in params]
        rows, cols = np.meshgrid(np.arange(width), 64 + np.arange(extra), indexing="xy")
        coords = torch.as_tensor((rows * (64 + extra) + cols).reshape(-1)[:m])  # W[row, col] of the first layer
        x, y = load_digits_tensors(self.train_rows)
        x = torch.cat([x, torch.zeros(x.shape[0], extra, dtype=x.dtype)], dim=1)
        members = torch.as_tensor(bits)
        config = DPSGDConfig(
            sampling_rate=self.sampling_rate,
            noise_multiplier=self.sigma,
            clip_norm=self.clip_norm,
            steps=self.steps,
            learning_rate=self.learning_rate,
            momentum=self.momentum,
            device="cpu",
        )

        def flat() -> Tensor:
            return params[0].detach().reshape(-1)[coords].clone()

        def inject(step: int) -> list[Tensor]:
            sampled = poisson_mask(m, self.sampling_rate, canary_gen) & members
            vector = torch.zeros(sum(sizes), dtype=torch.float64)
            vector[coords] = sampled.to(torch.float64) * self.clip_norm
            return [chunk.reshape(p.shape) for chunk, p in zip(vector.split(sizes), params, strict=True)]

        previous = [flat()]
        descent = torch.zeros(m, dtype=torch.float64)

        def record(step: int, model: nn.Module, mask: Tensor) -> None:
            now = flat()
            descent.add_(previous[0] - now)
            previous[0] = now

        train(model, x, y, config, generator=train_gen, callback=record, inject=inject)
        return descent.numpy().copy()

    def privacy_claim(self) -> PrivacyClaim:
        return dpsgd_claim(self.sigma, self.sampling_rate, self.steps)

    @property
    def expected_batch(self) -> float:
        """q · train_rows, the expected batch size the summed gradient is divided by."""
        return self.sampling_rate * self.train_rows
