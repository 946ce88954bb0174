"""White-box audits of DP-SGD code privgame does not run: a training loop (yours, Opacus's, privgame's) with
canaries as training rows, handed to it before its sampling and its clipping.

``dpsgd-loop`` trains the game's rows and m canary rows (:mod:`privgame.mechanisms.dpsgd.canary_rows`) with the
loop named by ``loop`` (:mod:`privgame.mechanisms.dpsgd.loop`: ``"privgame"``, ``"opacus"``, ``"opacus-ghost"`` or
``"package.module:function"``); ``opacus-whitebox`` is the same with Opacus's ``PrivacyEngine`` (``grad_sample_mode``
"hooks" or "ghost").  privgame does not fork or patch the code under audit: the canaries are rows of its data set,
sampled by its sampler, differentiated by its per-sample machinery (Opacus's hooks), clipped by its clipping
(Opacus: factor C / (‖g‖ + 10⁻⁶), at most 1) and noised by its noise.  A member canary's raw gradient has norm
``canary_scale`` · C, so a clipping that is not at C shows.

The release is each canary's summed descent θ_c,0 − θ_c,T along its coordinate of the canary layer.  The claim is
privgame's PLD at (q, σ, T) (:func:`privgame.analysis.accounting.dpsgd_claim`, add/remove-one); for Opacus, its own
RDP accountant's ε at the same δ is stored beside it (``derived_parameters``: ``opacus_epsilon``).

Seeds: the model is built from the release's initialisation stream; the loop gets the training stream as its
``torch.Generator`` (Opacus's loop draws its loader's and its noise's generators from it), so the same seed gives
the same release.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from numpy.typing import NDArray
from torch import nn

from privgame.analysis._checks import check_int, check_real
from privgame.mechanisms._base import check_runs
from privgame.mechanisms.dpsgd.canary_rows import LAYERS, CanaryLoss, CanaryRows
from privgame.mechanisms.dpsgd.loop import TrainingLoop, _opacus, opacus_batch_size, opacus_steps
from privgame.mechanisms.dpsgd.models import logistic_regression, mlp
from privgame.mechanisms.dpsgd.parameters import DPSGDParameters
from privgame.mechanisms.dpsgd.user_model import ModelFactory, check_model, is_import_path
from privgame.mechanisms.dpsgd.whitebox import _HIDDEN, _MODELS, _generators
from privgame.mechanisms.training.canaries import CanaryMechanism, as_canary_data

__all__ = ["LoopWhiteBox", "OpacusWhiteBox", "opacus_batch_size", "opacus_epsilon"]

_GRAD_SAMPLE_MODES = {"hooks": "opacus", "ghost": "opacus-ghost"}


def opacus_epsilon(noise_multiplier: float, sampling_rate: float, steps: int, delta: float) -> float:
    """Opacus's own RDP accountant's ε after T steps at (q, σ), at δ."""
    from opacus.accountants import RDPAccountant

    accountant = RDPAccountant()
    accountant.history = [(noise_multiplier, sampling_rate, steps)]
    return float(accountant.get_epsilon(delta))


@dataclass(frozen=True, slots=True)
class LoopWhiteBox(DPSGDParameters, CanaryMechanism):
    """The game's rows and m canary rows trained by a DP-SGD loop; releases each canary's summed descent.

    Parameters
    ----------
    epsilon, noise_multiplier, delta, sampling_rate, steps, clip_norm, learning_rate, momentum
        As :class:`privgame.mechanisms.dpsgd.parameters.DPSGDParameters`: what the loop is given and the claim is
        computed for.  Only ``normalisation = "expected"``.
    loop : str, default="privgame"
        The training loop (:class:`privgame.mechanisms.dpsgd.loop.TrainingLoop`): ``"privgame"``, ``"opacus"``,
        ``"opacus-ghost"``, or a user's ``"package.module:function"`` (the contract of
        :mod:`privgame.mechanisms.dpsgd.loop`).
    model : {"logistic", "mlp"} or str, default="logistic"
        As :class:`privgame.mechanisms.dpsgd.whitebox.DPSGDWhiteBox` (a factory path for any Module), float64.
    canary_scale : float, default=4.0
        A member canary's raw gradient norm in units of C (``>= 1``): a correct clipping brings it to C.
    canary_layer : {"weight", "sequence-bias"}, default="weight"
        Where the canaries' coordinates live (:mod:`privgame.mechanisms.dpsgd.canary_rows`): the weight of a
        linear layer on a one-hot input, or the bias of a linear layer on a sequence of ``canary_positions``.
    canary_positions : int, default=16
        T of the ``"sequence-bias"`` layer (``>= 1``).

    Notes
    -----
    Neighbouring relation: add/remove one example (a canary); claim: DP-SGD's PLD at (q, σ, T).  The data set the
    loop trains on has N + m rows whatever the membership (a non-member canary row has a zero gradient), so a
    divisor qN' the loop uses reveals nothing.  Each canary is an independent channel
    (:mod:`privgame.mechanisms.dpsgd.canary_rows`) IF the loop clips and noises each example and coordinate
    separately, which privgame cannot check in a loop it does not run: the class declares the canaries dependent,
    so the order-statistics bound needs ``allow_dependent_canaries`` (Steinke's and the f-DP bounds need no
    independence).  ``opacus-whitebox`` (Opacus's own per-example clipping and per-coordinate noise) declares them
    independent.  Memory and time: the canary
    layer sees a (B, m) input per batch, O(B·m); use ``dpsgd-whitebox``'s separate layout for 10⁶ canaries.
    """

    name: ClassVar[str] = "dpsgd-loop"
    input_kind: ClassVar[str] = "canary-dataset"
    release_kind: ClassVar[str] = "per-canary-values"
    canary_examples: ClassVar[bool] = False
    canary_dependence: ClassVar[str | None] = (
        "a DP-SGD loop privgame does not run may couple the canary rows (a rescaling of the whole noisy update, a "
        "learning rate driven by the loss), and nothing checks that it clips and noises each example and "
        "coordinate separately"
    )

    loop: str = "privgame"
    model: str = "logistic"
    canary_scale: float = 4.0
    canary_layer: str = "weight"
    canary_positions: int = 16

    def __post_init__(self) -> None:
        DPSGDParameters.__post_init__(self)
        TrainingLoop(self.loop)
        if not isinstance(self.canary_layer, str) or self.canary_layer not in LAYERS:
            raise ValueError(f"canary_layer must be one of {', '.join(LAYERS)}, got {self.canary_layer!r}.")
        check_int("canary_positions", self.canary_positions, low=1, high=4096)
        if is_import_path(self.model):
            ModelFactory(self.model)
        elif self.model not in _MODELS:
            raise ValueError(
                f"model must be one of {', '.join(_MODELS)} or a factory 'package.module:function', got {self.model!r}."
            )
        object.__setattr__(self, "canary_scale", check_real("canary_scale", self.canary_scale, low=1.0))
        if self.normalisation != "expected":
            raise ValueError(
                f"normalisation must be 'expected' for {self.name} (the loop's own divisor), got "
                f"{self.normalisation!r}."
            )
        if self.loop in ("opacus", "opacus-ghost"):
            _opacus()
            if opacus_steps(self.sampling_rate) is None:
                raise ValueError(
                    f"sampling_rate must be 1/k for an integer k (Opacus samples at 1/len(loader)), got "
                    f"{self.sampling_rate}."
                )

    def canary_problem(self, m: int, *, features: int, classes: int, rows: int | None = None) -> str | None:
        """The user model's contract (no coordinate reserved: the canaries have a layer of their own), and for
        Opacus's loops a sampling rate it can realise on the N + m rows; None when they hold."""
        if self.loop in ("opacus", "opacus-ghost") and rows is not None:
            if opacus_batch_size(rows + m, self.sampling_rate) is None:
                return (
                    f"sampling_rate must be 1/k for an integer k that Opacus realises on the {rows + m:,} rows "
                    f"(train_rows = {rows:,} and m = {m:,} canary rows; its rate is 1/len(loader)), got "
                    f"{self.sampling_rate} (change train_rows or m)"
                )
        if not is_import_path(self.model):
            return None
        try:
            check_model(self.model, (features,), classes, 0)
        except ValueError as exc:
            return str(exc).rstrip(".")
        return None

    def release(self, data: Any, *, rng: np.random.Generator) -> NDArray[np.float64]:
        """Train once with the loop on the rows and the canary rows; return each canary's summed descent."""
        data = as_canary_data("data", data)
        rows = CanaryRows(
            data.rows.x,
            data.rows.y,
            data.membership,
            self.canary_scale * self.clip_norm,
            layer=self.canary_layer,
            positions=self.canary_positions,
        )
        device = self.torch_device
        init_gen, train_gen, _, _ = _generators(rng, device)
        model = rows.model(self._build_model(data.rows.x.shape[1], data.rows.n_classes, init_gen).to(device))
        x, y = (t.to(device) for t in rows.tensors())
        before = model.coordinates()
        TrainingLoop(self.loop).run(self.loop_run(model, x, y, CanaryLoss(), train_gen))
        return (before - model.coordinates()).numpy().copy()

    def release_runs(self, data: Sequence[Any], *, rngs: Sequence[np.random.Generator]) -> list[NDArray[np.float64]]:
        """K releases one after the other (the loop trains one model at a time)."""
        check_runs(data, rngs)
        return [self.release(d, rng=r) for d, r in zip(data, rngs, strict=True)]

    def canary_bytes(self, m: int, *, rows: int, features: int, classes: int) -> int:
        """The rows and canary rows (float64, twice), the model's coordinates and a batch's per-sample gradients
        (about b + 8 copies of the model and the canary layer), the batch's (B, m) canary inputs."""
        if is_import_path(self.model):
            size = check_model(self.model, (features,), classes, 0)
        else:
            width = classes if self.model == "logistic" else _HIDDEN
            size = (features + 1) * width + ((width + 1) * classes if self.model == "mlp" else 0)
        batch = max(1, math.ceil(self.sampling_rate * (rows + m)))
        positions = self.canary_positions if self.canary_layer == "sequence-bias" else 1  # (B, T, m) activations
        return 8 * (2 * (rows + m) * (features + 1) + (batch + 8) * (size + m) + 4 * batch * positions * m)

    def _build_model(self, features: int, classes: int, generator: torch.Generator) -> nn.Module:
        if is_import_path(self.model):
            return ModelFactory(self.model).build((features,), classes, generator=generator, dtype=torch.float64)
        if self.model == "logistic":
            return logistic_regression(features, classes, generator=generator, dtype=torch.float64)
        return mlp((features, _HIDDEN, classes), generator=generator, dtype=torch.float64)


@dataclass(frozen=True, slots=True)
class OpacusWhiteBox(LoopWhiteBox):
    """The rows and m canary rows trained by Opacus's PrivacyEngine; releases each canary's summed descent.

    ``dpsgd-loop`` with Opacus as the loop, ``grad_sample_mode`` "hooks" or "ghost".

    Parameters
    ----------
    grad_sample_mode : {"hooks", "ghost"}, default="hooks"
        Opacus's per-sample gradients (materialised by its hooks) or its fast gradient clipping (ghost norms and a
        second backward pass).  ``sampling_rate`` must be 1/k for a k Opacus realises on the rows plus canaries.
    """

    name: ClassVar[str] = "opacus-whitebox"
    # Opacus clips each example and noises each coordinate itself: each canary row is an independent channel
    canary_dependence: ClassVar[str | None] = None

    grad_sample_mode: str = "hooks"

    def __post_init__(self) -> None:
        if not isinstance(self.grad_sample_mode, str) or self.grad_sample_mode not in _GRAD_SAMPLE_MODES:
            raise ValueError(
                f"grad_sample_mode must be one of {', '.join(_GRAD_SAMPLE_MODES)}, got {self.grad_sample_mode!r}."
            )
        if self.loop not in ("privgame", _GRAD_SAMPLE_MODES[self.grad_sample_mode]):
            raise ValueError(
                f"loop must be left out for opacus-whitebox (grad_sample_mode {self.grad_sample_mode!r} chooses "
                f"Opacus's loop; dpsgd-loop takes any loop), got {self.loop!r}."
            )
        _opacus()
        object.__setattr__(self, "loop", _GRAD_SAMPLE_MODES[self.grad_sample_mode])
        LoopWhiteBox.__post_init__(self)

    def derived_parameters(self) -> dict[str, float]:
        """σ when calibrated from ε, and Opacus's own RDP accountant's ε at δ (``opacus_epsilon``)."""
        return {
            **DPSGDParameters.derived_parameters(self),
            "opacus_epsilon": opacus_epsilon(self.sigma, self.sampling_rate, self.steps, self.delta),
        }

    def derives_parameters(self) -> bool:
        return True
