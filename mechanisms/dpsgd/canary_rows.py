"""White-box canaries as training rows: examples whose gradient IS the Dirac canary, for code privgame does not run.

A DP-SGD implementation under audit (Opacus, a researcher's own loop) samples, clips and noises its examples with
its own code.  To audit that code, the canaries must enter where its examples enter: as rows of its training set.
:class:`CanaryRows` builds

* the rows: the N real rows, each with one extra column ``-1``, then the m canary rows: real features 0 and the
  canary's index i in the extra column (label ``-1``);
* the model, :class:`CanaryModel`: the model under audit on the real features beside a canary layer θ_c ∈ R^m
  (``nn.Linear(m, 1, bias=False)``, initialised to 0) whose input is ``v_i · e_i`` for canary row i, 0 for a
  real row, where v_i is the canary's raw gradient value: ``canary_scale · C`` for a member, 0 for a non-member;
* the loss, :class:`CanaryLoss`: a real row's cross-entropy on the model's logits, a canary row's output of the
  canary layer (θ_c · v_i e_i = v_i θ_c[i]).

So a member canary row's per-example gradient is exactly v_i e_i on θ_c (norm ``canary_scale · C``) and 0 on every
parameter of the model under audit, a non-member's is 0 (an example with a zero gradient changes nothing: it is
absent), and a real row's gradient on θ_c is 0 (its canary input is 0).  The code under audit samples the canary
rows with its own sampler, computes their per-example gradients with its own hooks or ``torch.func``, clips them
with its own clipping (a correct one brings v_i to C) and adds its own noise, which also falls on θ_c.  The release
is each canary's descent θ_c,0[i] − θ_c,T[i], larger for members.

Why this is a sound and independent-canary audit: every canary is an example of the training set, and the claim
covers every example after clipping (the data set has N + m rows, the same for every membership vector, which the
sampling rate and any divisor see).  Canary i's coordinate θ_c[i] receives only its own clipped gradient (the data's
and the other canaries' gradients are 0 there) and its own noise coordinate, so given the training run's draws
the m releases are independent channels, as the order-statistics bound needs, as long as the code under audit
clips and noises each example and coordinate separately, which is exactly what the audit tests.

Two canary layers (``layer``): ``"weight"``, above; ``"sequence-bias"``, the bias b ∈ R^m of an ``nn.Linear(1, m)``
applied to a (B, T, 1) input of zeros (T = ``positions``), whose output summed over the T positions with weight
v_i / T on canary i is the canary row's loss: its per-example gradient is again v_i e_i (on b; 0 on the weight,
whose input is 0), made of T aligned per-position gradients (v_i / T) e_i.  It tests a per-sample norm of a layer
that sees sequences (Opacus PR #751: ghost clipping took the bias norm of a 3-D input as ‖Σ_t g_t g_tᵀ‖_F, v²/T
here, instead of ‖Σ_t g_t‖ = v).

What it cannot see: a flaw confined to a layer type other than the canary layer's, or to the real model's
gradients only (a clipping that skips some of the model's layers but clips the canary layer).  The canary layer
takes part in every per-example norm, so a clipping bound, a noise scale or a sampling rate that is wrong for
every example is seen.  A divisor by the realised batch size is not: the N + m rows and the number of canary rows
sampled do not depend on the membership (docs/dpsgd_variants.md audits that channel by the update's norm).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from numpy.typing import NDArray
from torch import Tensor, nn

__all__ = ["LAYERS", "CanaryLoss", "CanaryModel", "CanaryRows"]

#: the canary layers (module docstring)
LAYERS = ("weight", "sequence-bias")


class CanaryModel(nn.Module):
    """The model under audit beside the canary layer; input (B, d + 1): d real features, then the canary index
    (−1 for a real row); output (B, n_classes + 1): the model's logits, then the canary layer's output.

    Parameters
    ----------
    model : nn.Module
        Maps (B, d) to logits (B, n_classes).
    values : Tensor of shape (m,)
        Each canary's raw gradient value v_i (0 for a non-member).
    positions : int, default=0
        0: the ``"weight"`` canary layer; T ≥ 1: the ``"sequence-bias"`` layer over T positions.
    """

    def __init__(self, model: nn.Module, values: Tensor, positions: int = 0) -> None:
        super().__init__()
        self.model = model
        m = int(values.shape[0])
        self.positions = int(positions)
        kw: dict[str, Any] = {"dtype": values.dtype, "device": values.device}
        self.canaries = nn.Linear(m, 1, bias=False, **kw) if positions == 0 else nn.Linear(1, m, **kw)
        with torch.no_grad():
            for p in self.canaries.parameters():
                p.zero_()
        self.register_buffer("values", values.clone())

    def coordinates(self) -> Tensor:
        """θ_c, the canaries' coordinates (m,): a detached float64 copy on the CPU."""
        theta = self.canaries.weight[0] if self.positions == 0 else self.canaries.bias
        return theta.detach().to("cpu", torch.float64).clone()

    def forward(self, x: Tensor) -> Tensor:
        features, index = x[:, :-1], x[:, -1].to(torch.long)
        logits = self.model(features)
        values: Tensor = self.values  # type: ignore[assignment]  # a registered buffer
        # v_i e_i for canary row i, 0 for a real row (index −1); no data-dependent indexing, so vmap can run it
        positions = torch.arange(values.shape[0], device=index.device)
        onehot = (index.unsqueeze(1) == positions).to(values.dtype) * values
        if self.positions == 0:
            score = self.canaries(onehot)
        else:  # (B, T, m) = the bias at every position; weight v_i / T on canary i at each
            out = self.canaries(onehot.new_zeros((x.shape[0], self.positions, 1)))
            score = (out * (onehot / self.positions).unsqueeze(1)).sum((1, 2)).unsqueeze(1)
        return torch.cat([logits, score.to(logits.dtype)], dim=1)


class CanaryLoss(nn.Module):
    """Per example: the cross-entropy of a real row (label ≥ 0), the canary layer's output for a canary row (label
    −1).  ``reduction`` as ``nn.CrossEntropyLoss`` ("none", "mean", "sum"): Opacus sets it."""

    def __init__(self, reduction: str = "none") -> None:
        super().__init__()
        self.reduction = reduction

    def forward(self, output: Tensor, target: Tensor) -> Tensor:
        logits, score = output[:, :-1], output[:, -1]
        real = target >= 0
        ce = F.cross_entropy(logits, target.clamp(min=0), reduction="none")
        losses = torch.where(real, ce, score)
        if self.reduction == "mean":
            return losses.mean()
        if self.reduction == "sum":
            return losses.sum()
        return losses


@dataclass(frozen=True, slots=True, eq=False)
class CanaryRows:
    """The rows, the wrapped model and the loss of a white-box audit through code privgame does not run.

    Parameters
    ----------
    x : array of shape (N, d)
        The real rows' features.
    y : array of shape (N,)
        Their labels (class indices).
    membership : array of shape (m,), bool
        Which canaries are members.
    raw : float
        A member canary's raw gradient norm (``canary_scale · C``).
    layer : {"weight", "sequence-bias"}, default="weight"
    positions : int, default=16
        T of the ``"sequence-bias"`` layer.
    dtype : torch.dtype, default=torch.float64
    """

    x: NDArray[Any]
    y: NDArray[Any]
    membership: NDArray[np.bool_]
    raw: float
    layer: str = "weight"
    positions: int = 16
    dtype: torch.dtype = torch.float64

    @property
    def m(self) -> int:
        return len(self.membership)

    def tensors(self) -> tuple[Tensor, Tensor]:
        """The N real rows then the m canary rows: features (N + m, d + 1) and labels (N + m,)."""
        x = torch.from_numpy(np.array(self.x, dtype=np.float64)).to(self.dtype)
        n, d = x.shape
        real = torch.cat([x, torch.full((n, 1), -1.0, dtype=self.dtype)], dim=1)
        canary = torch.zeros((self.m, d + 1), dtype=self.dtype)
        canary[:, -1] = torch.arange(self.m, dtype=self.dtype)
        labels = torch.cat(
            [torch.from_numpy(np.array(self.y, dtype=np.int64)), torch.full((self.m,), -1, dtype=torch.long)]
        )
        return torch.cat([real, canary]), labels

    def model(self, model: nn.Module) -> CanaryModel:
        """``model`` beside the canary layer (θ_c = 0), on ``model``'s device; the rows (:meth:`tensors`) must be in
        the model's dtype (``dtype``).

        Raises
        ------
        ValueError
            If the model's floating parameters are not in ``dtype``."""
        first = next(iter(model.parameters()))
        device = first.device
        if first.is_floating_point() and first.dtype != self.dtype:
            raise ValueError(f"dtype must be the model's ({first.dtype}) for its canary rows, got {self.dtype}.")
        values = torch.as_tensor(np.asarray(self.membership, dtype=bool)).to(self.dtype) * self.raw
        return CanaryModel(model, values.to(device), 0 if self.layer == "weight" else self.positions)
