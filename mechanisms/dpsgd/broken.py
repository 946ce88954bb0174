"""Broken DP-SGD, on purpose: the mistakes a one-run audit must catch, each with the claim the broken code reports.

``dpsgd-broken`` is :class:`privgame.mechanisms.dpsgd.whitebox.DPSGDWhiteBox` (its dense or reserved layout, any model)
with one flaw in its step, and the claim of the correct step: DP-SGD's PLD at (q, σ, T), add/remove-one.  An
audit whose lower bound exceeds that claim at 95 % refutes it (``experiments/catch_broken_dpsgd.toml``).

The flaws (``flaw``; docs/dpsgd_variants.md has the catalogue, its sources and the measured table):

``"none"``
    The correct step (the white-box mechanism itself): the control, never refuted beyond the confidence level.
``"noise_for_mean"``
    The noise is calibrated to the batch MEAN's sensitivity C/(qN) but added to the SUM: its standard deviation
    is σC/(qN) instead of σC, so σ is in effect divided by qN.  (A common slip when the code averages first and
    reads "σ · sensitivity" off the mean, then scales back.)
``"unclipped"``
    The clipping function computes no factor: every example (data and canaries) enters the sum at its raw norm
    (as a factor applied to a copy, or a ``clamp`` on the wrong tensor would).  A canary of raw norm
    ``canary_scale`` · C moves its coordinate by that much against noise σC.
``"clip_mismatch"``
    The clipping function clips at ``canary_scale`` · C while the noise keeps the standard deviation σC the
    claim is computed for: the clipping bound and the noise's sensitivity come from two different settings.
    Opacus's pull request #664 (2024) fixed this kind of slip: with fast gradient clipping its privacy engine
    did not pass ``max_grad_norm`` to the clipping, which used another bound than the one the noise was scaled
    to.

Both are bugs in the clipping function the engine's step calls (:func:`privgame.mechanisms.dpsgd.clipping.
clip_factors` replaced), and the canaries are the correct step's: raw gradients of norm ``canary_scale`` · C
handed to that function with the batch (:class:`privgame.mechanisms.dpsgd.sgd.DiracExamples`).  No canary value is
written by hand: the audit sees what the clipping lets through.  The former name ``"unclipped_canary"`` is refused
with a pointer to ``"unclipped"``.
``"reused_noise"``
    One noise vector is drawn once and added at every step (a generator re-seeded each step, or a noise buffer
    cached across steps).  Every iterate is released in the white-box threat model that DP-SGD's analysis
    covers, and the difference of two steps' gradients cancels the noise: the score ``"step_changes"``
    (Σ_t |g_t − g_{t−1}|, g_t = (u_t − μ·u_{t−1}) / lr the step-t noisy gradient along the canary's coordinate,
    recovered from the descents u_t and the public momentum μ) reads the canary's insertions exactly.
``"realised_batch"``
    The noisy sum is divided by the realised batch size |B_t| and the run is accounted as the subsampled
    Gaussian mechanism (normalisation "realised" of :class:`privgame.mechanisms.dpsgd.sgd.DPSGDConfig`).  Whether this
    leaks beyond the claim depends on the regime (docs/dpsgd_variants.md): per coordinate the signal-to-noise
    ratio C/σC of an inserted canary is the correct step's, so a per-canary audit sees no difference; the leak
    is the batch size itself, read off the norm of the whole update.

``score``: ``"descent"`` (the white-box mechanism's release, θ_0 − θ_T along each canary's coordinate) or
``"step_changes"``; ``"auto"`` is ``"step_changes"`` for ``reused_noise`` and ``"descent"`` otherwise.  Both are
post-processing of the iterates, so either is a sound audit of any step.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
from numpy.typing import NDArray
from torch import Tensor, nn

from privgame.analysis.accounting import PrivacyClaim, dpsgd_claim
from privgame.mechanisms.dpsgd.clipping import ClipFactors, clip_factors, trainable_parameters
from privgame.mechanisms.dpsgd.devices import make_generator
from privgame.mechanisms.dpsgd.sgd import DPSGDConfig
from privgame.mechanisms.dpsgd.whitebox import DPSGDWhiteBox, ReleaseHooks

__all__ = ["FLAWS", "SCORES", "DPSGDBroken"]

#: each flaw and what it breaks (one line, for ``privgame list`` and the report)
FLAWS: dict[str, str] = {
    "none": "the correct step (control)",
    "noise_for_mean": "noise of std σC/(qN), calibrated to the mean, added to the sum",
    "unclipped": "the clipping function lets every gradient through unclipped",
    "clip_mismatch": "the clipping function clips at canary_scale · C while the noise is scaled to C",
    "reused_noise": "one noise vector drawn once and added at every step",
    "realised_batch": "the noisy sum divided by the realised batch size, accounted as subsampled Gaussian",
}
SCORES = ("auto", "descent", "step_changes")


@dataclass(frozen=True, slots=True)
class DPSGDBroken(DPSGDWhiteBox):
    """DP-SGD with white-box Dirac canaries and one deliberate flaw in its step; claims the correct step's ε.

    Parameters
    ----------
    epsilon, noise_multiplier, delta, sampling_rate, steps, clip_norm, learning_rate, momentum, model, canary_layout
        As :class:`privgame.mechanisms.dpsgd.whitebox.DPSGDWhiteBox` (layouts ``"dense"`` and ``"reserved"``: the flaws
        act in the engine's step).  ``normalisation`` stays ``"expected"``: the ``realised_batch`` flaw sets it.
    flaw : str, default="none"
        One of :data:`FLAWS` (module docstring).
    canary_scale : float, default=4.0
        As :class:`privgame.mechanisms.dpsgd.whitebox.DPSGDWhiteBox`: the canaries' raw gradient norm in units of C;
        the correct step clips it to C, ``unclipped`` does not, ``clip_mismatch`` clips at this multiple of C.
    score : {"auto", "descent", "step_changes"}, default="auto"
        The per-canary statistic of the released iterates (module docstring).

    Notes
    -----
    Claim: DP-SGD's PLD at (q, σ, T), add/remove-one, whatever the flaw: the claim the broken code would report.
    The canaries stay independent channels for every flaw but ``realised_batch``, whose divisor every canary
    shares; the declaration is per class (a report reads it from the registered class), so the class declares the
    dependence for all its flaws: the order-statistics bound needs ``allow_dependent_canaries`` here.
    """

    name: ClassVar[str] = "dpsgd-broken"
    canary_dependence: ClassVar[str | None] = (
        "with flaw 'realised_batch' every canary's step shares one divisor, the realised batch size (declared for "
        "every flaw of dpsgd-broken)"
    )

    flaw: str = "none"
    score: str = "auto"

    def __post_init__(self) -> None:
        DPSGDWhiteBox.__post_init__(self)
        if self.flaw == "unclipped_canary":
            raise ValueError(
                "flaw 'unclipped_canary' is now 'unclipped': a clipping function that lets every gradient through, "
                "seen by canaries handed to it before the clipping."
            )
        if not isinstance(self.flaw, str) or self.flaw not in FLAWS:
            raise ValueError(f"flaw must be one of {', '.join(FLAWS)}, got {self.flaw!r}.")
        if self.flaw in ("unclipped", "clip_mismatch") and self.canary_scale <= 1.0:
            raise ValueError(
                f"canary_scale must be above 1 for flaw {self.flaw!r} (a canary within the bound is clipped by no "
                f"clipping function: the flaw would not show), got {self.canary_scale}."
            )
        if not isinstance(self.score, str) or self.score not in SCORES:
            raise ValueError(f"score must be one of {', '.join(SCORES)}, got {self.score!r}.")
        if self.canary_layout == "separate":
            raise ValueError(
                "canary_layout must be 'dense' or 'reserved' for dpsgd-broken (its flaws act in the engine's step), "
                "got 'separate'."
            )
        if self.normalisation != "expected":
            raise ValueError(
                f"normalisation must stay 'expected' for dpsgd-broken (flaw = 'realised_batch' divides by the "
                f"realised batch size), got {self.normalisation!r}."
            )

    @property
    def statistic(self) -> str:
        """The score in use: ``score``, with ``"auto"`` resolved for the flaw."""
        if self.score != "auto":
            return self.score
        return "step_changes" if self.flaw == "reused_noise" else "descent"

    def privacy_claim(self) -> PrivacyClaim:
        """The correct step's claim, DP-SGD's PLD at (q, σ, T): what the broken code would report."""
        return dpsgd_claim(self.sigma, self.sampling_rate, self.steps)

    def _release_config(self, n_rows: int) -> DPSGDConfig:
        config = self.training_config()
        if self.flaw == "noise_for_mean":
            return dataclasses.replace(config, noise_multiplier=self.sigma / config.expected_batch_size(n_rows))
        if self.flaw == "reused_noise":  # the engine adds none: the hooks add the one vector at every step
            return dataclasses.replace(config, noise_multiplier=0.0)
        if self.flaw == "realised_batch":
            return dataclasses.replace(config, normalisation="realised")
        return config

    def _clipping(self) -> ClipFactors:
        if self.flaw == "unclipped":
            return _unclipped
        if self.flaw == "clip_mismatch":
            return functools.partial(_clip_at_multiple, scale=self.canary_scale)
        return clip_factors

    def _hooks(
        self, params: Sequence[Tensor], coords: Tensor, batch: int | None, *streams: np.random.Generator
    ) -> ReleaseHooks:
        noise = None
        if self.flaw == "reused_noise":
            # per run, one standard-normal vector over every trainable coordinate, from a stream of the run's own
            # (drawn after the reserved layout's choice of coordinates, so that choice is the correct step's)
            size = sum(p.numel() for p in params)
            gens = [make_generator(int(s.integers(2**63)), "cpu") for s in streams]
            scale = self.sigma * self.clip_norm
            noise = torch.stack([torch.randn(size, generator=g, dtype=torch.float64) for g in gens]) * scale
            noise = noise.to(coords.device)  # drawn on the CPU (the same vector on every device), added where trained
        return _BrokenHooks(
            params, coords, batch, noise, watch=self.statistic == "step_changes", momentum=self.momentum
        )


def _unclipped(norms: Tensor, clip_norm: float) -> Tensor:
    """The ``unclipped`` flaw's clipping function: a factor of 1 for every example."""
    return torch.ones_like(norms)


def _clip_at_multiple(norms: Tensor, clip_norm: float, *, scale: float) -> Tensor:
    """The ``clip_mismatch`` flaw's clipping function: the correct one, at the bound ``scale`` · C (the noise stays
    σC)."""
    return clip_factors(norms, scale * clip_norm)


class _BrokenHooks(ReleaseHooks):
    """The reused noise vector added at every step, and the per-step watch of the step-changes score."""

    def __init__(
        self,
        params: Sequence[Tensor],
        coords: Tensor,
        batch: int | None,
        noise: Tensor | None,
        *,
        watch: bool,
        momentum: float = 0.0,
    ) -> None:
        self._params = list(params)
        self._momentum = momentum
        self._coords = coords
        self._batch = batch
        self._noise = noise
        self._seen: list[Tensor] = []
        self.single = self._single if watch else None
        self.ensemble = self._ensemble if watch else None

    def added(self, step: int) -> list[Tensor] | None:
        if self._noise is None:
            return None
        sizes = [p.numel() for p in self._params]
        lead = () if self._batch is None else (self._batch,)
        noise = self._noise[0] if self._batch is None else self._noise
        chunks = noise.split(sizes, dim=-1)
        return [z.reshape(*lead, *p.shape) for z, p in zip(chunks, self._params, strict=True)]

    def _single(self, step: int, model: nn.Module, mask: Tensor) -> None:
        flat = torch.cat([p.detach().reshape(-1) for _, p in trainable_parameters(model)])
        self._seen.append(flat[self._coords].clone()[None])

    def _ensemble(self, step: int, params: Mapping[str, Tensor], masks: Tensor) -> None:
        k = masks.shape[0]
        flat = torch.cat([v.detach().reshape(k, -1) for v in params.values()], dim=1)
        self._seen.append(flat.gather(1, self._coords).clone())

    def release(self, before: Tensor, after: Tensor) -> list[NDArray[np.float64]]:
        if not self._seen:
            return ReleaseHooks.release(self, before, after)
        path = torch.stack([before, *self._seen])  # (T + 1, K, m): θ_0, θ_1, …, θ_T on the canaries' coordinates
        steps = path[:-1] - path[1:]  # u_t = lr·d_t, each step's descent (d_t the momentum buffer)
        # the public momentum μ undone: d_t = μ·d_{t−1} + g_t, so lr·g_t = u_t − μ·u_{t−1} (d_0 = 0)
        grads = torch.cat([steps[:1], steps[1:] - self._momentum * steps[:-1]])
        changes = (grads[1:] - grads[:-1]).abs().sum(0)  # Σ_t |g_t − g_{t−1}|, up to the factor lr
        return [row.numpy().copy() for row in changes.cpu()]
