"""DP-SGD with white-box Dirac gradient canaries, for the one-run audit (Steinke, Nasr, Jagielski 2023, §6).

Canary i is a gradient that is zero except C at one coordinate c_i of the flattened parameter vector (m canaries
on m distinct coordinates).  A member canary (S_i = 1) is inserted as an already-clipped example: each step it is
sampled with probability q, like every training example, and when sampled its gradient is added to the clipped
sum before the noise.  The release is, per canary, Σ_t (θ_t − θ_{t+1})[c_i]: how far training descended along
the canary's coordinate, larger for members.  Only those m coordinates are recorded per step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from numpy.typing import NDArray
from torch import Tensor, nn

from analysis._checks import check_membership
from mechanisms.dpsgd.clipping import trainable_parameters
from mechanisms.dpsgd.devices import make_generator
from mechanisms.dpsgd.digits import DigitsDPSGD, load_digits_tensors
from mechanisms.dpsgd.train import poisson_mask, train

__all__ = ["DPSGDWhiteBox", "load_digits_tensors"]


@dataclass(frozen=True, slots=True)
class DPSGDWhiteBox(DigitsDPSGD):
    """DP-SGD on sklearn's digits with m Dirac gradient canaries; releases each canary's summed descent.

    Parameters
    ----------
    epsilon, noise_multiplier, delta, sampling_rate, steps, clip_norm, learning_rate, momentum, model, train_rows
        As :class:`mechanisms.dpsgd.digits.DigitsDPSGD`; a canary's gradient has norm exactly ``clip_norm``.

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
        model = self.build_model(64 + extra, init_gen)
        params = [p for _, p in trainable_parameters(model)]
        sizes = [p.numel() for p in params]
        rows, cols = np.meshgrid(np.arange(width), 64 + np.arange(extra), indexing="xy")
        coords = torch.as_tensor((rows * (64 + extra) + cols).reshape(-1)[:m])  # W[row, col] of the first layer
        x, y = load_digits_tensors(self.train_rows)
        x = torch.cat([x, torch.zeros(x.shape[0], extra, dtype=x.dtype)], dim=1)
        members = torch.as_tensor(bits)
        config = self.training_config()

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

    @property
    def expected_batch(self) -> float:
        """q · train_rows, the expected batch size the summed gradient is divided by."""
        return self.sampling_rate * self.train_rows
