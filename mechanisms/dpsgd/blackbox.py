"""DP-SGD with black-box input-space canaries, for the one-run audit (Steinke, Nasr, Jagielski 2023, §6).

m canary examples are chosen in advance (mislabelled digits that are not in the training set, or out-of-
distribution noise images with random labels); each member canary (S_i = 1) joins the training set.  The release
is the final model together with the (public) canaries; the attack scores each canary by its negative loss under
that model (:class:`attacks.loss.NegativeLoss`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from torch import Tensor, nn

from analysis._checks import check_int, check_membership
from mechanisms.dpsgd.clipping import cross_entropy
from mechanisms.dpsgd.devices import make_generator
from mechanisms.dpsgd.digits import N_DIGITS, DigitsDPSGD, load_digits_tensors
from mechanisms.dpsgd.train import train, train_ensemble

__all__ = ["DPSGDBlackBox", "ModelRelease"]

_CANARIES = ("mislabel", "ood")


@dataclass(frozen=True, slots=True, eq=False)
class ModelRelease:
    """A trained model and the audited canaries (chosen by the auditor, so public)."""

    model: nn.Module
    canary_x: Tensor
    canary_y: Tensor

    def losses(self, targets: Any) -> np.ndarray:
        """Per-example cross-entropy of the model on the canaries ``targets``."""
        index = torch.as_tensor(np.asarray(targets, dtype=np.int64))
        with torch.no_grad():
            out = self.model(self.canary_x[index])
            return cross_entropy(out, self.canary_y[index]).numpy().astype(np.float64)


@dataclass(frozen=True, slots=True)
class DPSGDBlackBox(DigitsDPSGD):
    """DP-SGD on sklearn's digits with m input-space canaries; releases the final model.

    Parameters
    ----------
    epsilon, noise_multiplier, delta, sampling_rate, steps, clip_norm, learning_rate, momentum, model, train_rows
        As :class:`mechanisms.dpsgd.whitebox.DPSGDWhiteBox`.
    canary : {"mislabel", "ood"}, default="mislabel"
        Mislabelled digits from the rows after ``train_rows`` (label + 1 mod 10, so at most 1,797 − train_rows
        canaries), or uniform-noise images with uniformly random labels.
    canary_seed : int, default=0
        Seed of the canaries' choice (fixed in advance, independent of membership).

    Notes
    -----
    Neighbouring relation: add/remove one training example (a canary); analytic claim: DP-SGD with (q, σ, T) from
    ``dp_accounting`` (PLD).  The divisor qN uses the public N = train_rows + m/2 (the expected training-set size),
    never the realised number of member canaries.  Training runs on the real rows followed by all m canaries with
    the non-members excluded (``include``), so the random numbers drawn never depend on the membership vector.

    References
    ----------
    .. [1] Steinke, Nasr, Jagielski. Privacy Auditing with One (1) Training Run. arXiv:2305.08846, §6.
    """

    name: ClassVar[str] = "dpsgd-blackbox"
    input_kind: ClassVar[str] = "canary-bits"
    release_kind: ClassVar[str] = "model-with-canaries"

    canary: str = "mislabel"
    canary_seed: int = 0

    def __post_init__(self) -> None:
        DigitsDPSGD.__post_init__(self)  # zero-argument super() is unavailable in slotted dataclasses
        check_int("canary_seed", self.canary_seed, low=0)
        if self.canary not in _CANARIES:
            raise ValueError(f"canary must be one of {', '.join(_CANARIES)}, got {self.canary!r}.")

    def canaries(self, m: int) -> tuple[Tensor, Tensor]:
        """The m canaries (inputs, labels), a function of (canary, canary_seed, train_rows, m) only."""
        x, y = load_digits_tensors()
        rng = np.random.default_rng(self.canary_seed)
        if self.canary == "mislabel":
            spare = N_DIGITS - self.train_rows
            if m > spare:
                raise ValueError(f"m must be at most {spare} mislabelled canaries (1797 − train_rows), got {m}.")
            rows = self.train_rows + rng.permutation(spare)[:m]
            return x[rows], (y[rows] + 1) % 10
        return torch.as_tensor(rng.random((m, 64))), torch.as_tensor(rng.integers(0, 10, m))

    def release(self, data: Any, *, rng: np.random.Generator) -> ModelRelease:
        """Train once on the real rows plus the member canaries; release the model and the canaries."""
        bits = check_membership("data", data)
        x, y, canary_x, canary_y, dataset_size = self._table(bits.shape[0])
        init_gen, train_gen = _generators(rng)
        net = self.build_model(64, init_gen)
        include = torch.cat([torch.ones(self.train_rows, dtype=torch.bool), torch.as_tensor(bits)])
        train(net, x, y, self.training_config(dataset_size), generator=train_gen, include=include)
        net.eval()
        return ModelRelease(net, canary_x, canary_y)

    def release_runs(self, data: Sequence[Any], *, rngs: Sequence[np.random.Generator]) -> list[ModelRelease]:
        """K independent releases trained at once (:func:`train_ensemble`), each equal to ``release(d, rng=r)``."""
        bits = self.run_bits(data, rngs)
        if not bits:
            return []
        x, y, canary_x, canary_y, dataset_size = self._table(bits[0].shape[0])
        gens = [_generators(r) for r in rngs]
        include = torch.cat(
            [torch.ones((len(bits), self.train_rows), dtype=torch.bool), torch.as_tensor(np.stack(bits))], dim=1
        )
        nets = train_ensemble(
            [self.build_model(64, init) for init, _ in gens],
            x,
            y,
            self.training_config(dataset_size),
            generators=[g for _, g in gens],
            include=include,
        )
        for net in nets:
            net.eval()
        return [ModelRelease(net, canary_x, canary_y) for net in nets]

    def _table(self, m: int) -> tuple[Tensor, Tensor, Tensor, Tensor, int]:
        """The real rows followed by all m canaries (non-members are excluded by ``include``), and the public N."""
        canary_x, canary_y = self.canaries(m)
        x, y = load_digits_tensors(self.train_rows)
        return torch.cat([x, canary_x]), torch.cat([y, canary_y]), canary_x, canary_y, self.train_rows + max(1, m // 2)


def _generators(rng: np.random.Generator) -> tuple[torch.Generator, torch.Generator]:
    """A release's two streams (initialisation, training), from the release's rng."""
    init_seed, train_seed = np.random.SeedSequence(rng.integers(0, 2**63, size=4).tolist()).spawn(2)
    return make_generator(init_seed, "cpu"), make_generator(train_seed, "cpu")
