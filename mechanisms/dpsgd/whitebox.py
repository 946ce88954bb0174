"""DP-SGD with white-box Dirac gradient canaries, for the one-run audit (Steinke, Nasr, Jagielski 2023, §6).

The model trains on the rows the game gives it (:class:`privgame.mechanisms.training.canaries.CanaryData`: the
membership bits and the real training rows); it loads no data set of its own.

Canary i is a gradient that is zero except ``canary_scale`` · C (4C) at one coordinate c_i of the flattened
parameter vector (m canaries on m distinct coordinates).  A member canary (S_i = 1) is an example of the step: each
step it is sampled with probability q, like every training example, and when sampled its RAW gradient is handed to
the step's clipping function together with the batch's norms (:class:`privgame.mechanisms.dpsgd.sgd.DiracExamples`),
which brings it to C, and the clipped gradient joins the clipped sum before the noise.  A wrong clipping function
lets more through, and the release shows it.  The release is, per canary, Σ_t (θ_t − θ_{t+1})[c_i]: how far
training descended along the canary's coordinate, larger for members.  The sum telescopes to (θ_0 − θ_T)[c_i],
so only the m canary coordinates before and after training are read: no per-step recording is needed.

Two constructions of the same release (``canary_layout``): ``"dense"`` puts the canaries' coordinates in the model
(first-layer weights of ⌈m / width⌉ extra input features that are 0 for every real example); ``"separate"`` trains
the model on the real features alone and runs the canary coordinates' own update, which is all those weights ever
see, as an m-vector beside it (:func:`_canary_descent`).  Both give the release the same distribution; the separate
one needs O(m) memory instead of O(rows × m).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from numpy.typing import NDArray
from torch import Tensor, nn

from privgame.analysis._checks import check_real
from privgame.mechanisms._base import check_runs
from privgame.mechanisms.dpsgd.clipping import ClipFactors, clip_factors, trainable_parameters
from privgame.mechanisms.dpsgd.devices import make_generator
from privgame.mechanisms.dpsgd.models import logistic_regression, mlp
from privgame.mechanisms.dpsgd.parameters import DPSGDParameters
from privgame.mechanisms.dpsgd.sgd import DiracExamples, DPSGDConfig, _sgd_update, poisson_mask, train, train_ensemble
from privgame.mechanisms.dpsgd.user_model import (
    ModelFactory,
    check_model,
    is_import_path,
    reserved_coordinates,
    reserved_masks,
)
from privgame.mechanisms.training.canaries import CanaryMechanism, as_canary_data, stack_canary_runs
from privgame.mechanisms.training.data import TrainingData

__all__ = ["DPSGDWhiteBox", "ReleaseHooks"]

_MODELS = ("logistic", "mlp")
_LAYOUTS = ("dense", "separate", "reserved")
_HIDDEN = 32  # the MLP's hidden width


def builtin_coordinates(model: str, features: int, classes: int) -> int:
    """The trainable coordinates (weights and biases) of the built-in ``model`` ("logistic" or "mlp", inputs →
    32 → classes) on ``features`` inputs and ``classes`` outputs."""
    if model == "logistic":
        return (features + 1) * classes
    return (features + 1) * _HIDDEN + (_HIDDEN + 1) * classes


def reserved_problem(m: int, model: str, features: int, classes: int, *, hint: str) -> str | None:
    """Why the built-in ``model`` on rows of ``features`` features and ``classes`` classes has too few coordinates to
    reserve one per canary of ``m``, or ``None``; ``hint``: what else to use, besides a larger model."""
    size = builtin_coordinates(model, features, classes)
    if m <= size:
        return None
    larger = 'model = "mlp"' if model == "logistic" else "a larger model (a factory)"
    return (
        f"m must be at most the {size:,} trainable coordinates of model {model!r} on the game's rows ({features} "
        f"features, {classes} classes) to reserve one per white-box canary, got {m:,} (use {hint}, or {larger})"
    )


_Streams = tuple[torch.Generator, torch.Generator, torch.Generator, np.random.Generator]


def _generators(rng: np.random.Generator, device: Any = "cpu", canary_device: Any = None) -> _Streams:
    """A release's four streams (initialisation, training, canary sampling, and the separate layout's canary
    coordinates or the reserved layout's choice of them), from the release's rng.

    The initialisation stream is on the CPU whatever the device (the model is built there and moved, so θ_0 is
    the same on every device), the training stream on ``device``, the canary stream on ``canary_device`` (default
    ``device``: the step draws the canaries' Poisson samples where it trains, with no transfer per step).

    The i-th child of ``SeedSequence.spawn`` depends on i alone, so the first three are the streams the dense
    layout drew before the fourth existed: its releases are unchanged, and it never touches the fourth.  The
    fourth is a numpy generator: its ziggurat normals cost two thirds of torch's on the CPU (measured, 10⁶ float64
    normals: 9.6 ms and 14.6 ms), and the separate layout draws m of them per step.
    """
    seeds = np.random.SeedSequence(rng.integers(0, 2**63, size=4).tolist()).spawn(4)
    init_gen = make_generator(seeds[0], "cpu")
    train_gen = make_generator(seeds[1], device)
    canary_gen = make_generator(seeds[2], device if canary_device is None else canary_device)
    return init_gen, train_gen, canary_gen, np.random.default_rng(seeds[3])


def _flat(params: Sequence[Tensor]) -> Tensor:
    """The trainable parameters as one flattened vector (``trainable_parameters`` order), detached."""
    return torch.cat([p.detach().reshape(-1) for p in params])


def _init_bound(fan_in: int) -> float:
    """The bound b of U(−b, b), ``kaiming_uniform_(a=√5)``'s law for a weight of a layer with this fan-in
    (:func:`privgame.mechanisms.dpsgd.models.init_parameters`): √3 · gain / √fan_in = 1 / √fan_in."""
    return math.sqrt(3.0) * nn.init.calculate_gain("leaky_relu", math.sqrt(5)) / math.sqrt(fan_in)


def _canary_descent(
    start: Tensor, draws: Iterable[tuple[Tensor, Tensor]], config: DPSGDConfig, denom: float, raw: float
) -> Tensor:
    """θ_0 − θ_T of canary coordinates trained on their own: the update DP-SGD gives each of them, step by step.

    Parameters
    ----------
    start : Tensor of shape (m,), float64
        θ_0, the coordinates' initial values (not modified).
    draws : iterable of (Tensor of shape (m,), bool; Tensor of shape (m,), float64)
        Per step t, in order: which canaries are sampled AND members (their gradient is inserted), and the
        standard-normal noise z_t of their coordinates.
    config : DPSGDConfig
        C, σ, the learning rate, momentum and weight decay of the run.
    denom : float
        q·N, the divisor of every noisy gradient sum.
    raw : float
        A canary's raw gradient value (its norm) before clipping; the engine's clipping function
        (:func:`privgame.mechanisms.dpsgd.clipping.clip_factors`) clips it, as the dense layout's step does.

    Returns
    -------
    Tensor of shape (m,), float64
        θ_0 − θ_T.

    Notes
    -----
    Step t's noisy gradient of coordinate c is g_t[c] = (v·f(v)·1[sampled] + σC·z_t[c]) / qN, v the raw value and
    f the clipping factor (v·f(v) = C for v = 4C: exactly, since the factor is 1/4), the expression of
    :func:`privgame.mechanisms.dpsgd.sgd._noisy_step` on a coordinate whose clipped data gradient is 0; the step is
    :func:`privgame.mechanisms.dpsgd.sgd._sgd_update` itself (elementwise: momentum buffer and weight decay per
    coordinate), so the dense layout and this recursion do the same float64 operations on the same numbers.
    """
    theta = start.clone()
    buffers: list[Tensor | None] = [None]
    scale = config.noise_multiplier * config.clip_norm
    for sampled, z in draws:
        # (v·f(v)·1[sampled] + σC·z) / qN in place: the same float64 operations (addition commutes exactly)
        values = sampled.to(theta.dtype).mul_(raw)
        grad = z * scale
        grad += torch.where(sampled, values * clip_factors(values.abs(), config.clip_norm), 0.0)
        grad /= denom
        _sgd_update([theta], [grad], buffers, config)
    return start - theta


@dataclass(frozen=True, slots=True, eq=False)
class _Setup:
    """What a release with m canaries trains on: the inputs (padded in the dense layout) and the canaries'
    coordinates in the model (none in the separate layout); ``fan_in`` is the dense layout's first-layer fan-in."""

    m: int
    n_inputs: int
    n_classes: int
    coords: Tensor
    x: Tensor
    y: Tensor
    fan_in: int


class ReleaseHooks:
    """A white-box release's hooks into training: gradients added after the clipping, a per-step watch, the score.

    The default adds nothing, watches nothing, and releases each canary's summed descent θ_0 − θ_T along its
    coordinate; :mod:`privgame.mechanisms.dpsgd.broken` overrides them to build its flawed steps and scores.
    """

    single: Callable[[int, nn.Module, Tensor], None] | None = None
    ensemble: Callable[[int, Mapping[str, Tensor], Tensor], None] | None = None

    def added(self, step: int) -> list[Tensor] | None:
        """Gradients added after the clipping at ``step`` (None: nothing; a broken step's reused noise)."""
        return None

    def release(self, before: Tensor, after: Tensor) -> list[NDArray[np.float64]]:
        """Per run (rows of (K, m) coordinates before and after training), the released per-canary values."""
        return [row.numpy().copy() for row in (before - after).cpu()]


@dataclass(frozen=True, slots=True)
class DPSGDWhiteBox(DPSGDParameters, CanaryMechanism):
    """DP-SGD on the game's rows with m Dirac gradient canaries; releases each canary's summed descent.

    The rows are the game's (its ``data``, the digits in the shipped configs; input ``"canary-dataset"``,
    :class:`privgame.mechanisms.training.canaries.CanaryData`): the mechanism loads no data set.  It takes no canary
    examples (``canary_examples = False``): its canaries are gradients.

    Parameters
    ----------
    epsilon, noise_multiplier, delta, sampling_rate, steps, clip_norm, learning_rate, momentum
        As :class:`privgame.mechanisms.dpsgd.parameters.DPSGDParameters`.
    model : {"logistic", "mlp"} or str, default="logistic"
        Logistic regression (inputs → classes) or an MLP (inputs → 32 → classes), float64; the classes are the
        rows' ``n_classes``.  Or any ``torch.nn.Module``: ``"package.module:factory"``, a function called as
        ``factory(input_shape, n_classes, *, generator=...)`` (:mod:`privgame.mechanisms.dpsgd.user_model`), trained in
        float64 with the ``"reserved"`` or ``"separate"`` layout.
    canary_layout : {"dense", "separate", "reserved"}, default="dense"
        Where the canaries' coordinates live: in the model, as first-layer weights of extra zero input features
        (``"dense"``, the built-in models only); in an m-vector trained beside a model of the real features
        alone (``"separate"``, memory O(m): a million canaries on two cores); or on m coordinates of the model's
        own flattened parameters, drawn at random per release and reserved (the data's clipped sum is 0 there;
        :func:`privgame.mechanisms.dpsgd.user_model.reserved_coordinates`), for any model.  The releases have the same
        distribution (Notes); the dense layout's are the stored results'.
    normalisation : {"expected", "none", "realised"}, default="expected"
        What the noisy sum is divided by (:class:`privgame.mechanisms.dpsgd.sgd.DPSGDConfig`); ``"realised"`` has no
        established claim (the analytic ε is then absent) and the separate layout does not run it.
    canary_scale : float, default=4.0
        A canary's raw gradient norm in units of C (``>= 1``): the canaries enter the step BEFORE its clipping
        (:class:`privgame.mechanisms.dpsgd.sgd.DiracExamples`), in the same call of the clipping function as the
        batch, which brings them to norm C.  A clipping function that clips wrong lets more than C through, and
        the audit sees it (:mod:`privgame.mechanisms.dpsgd.broken`).

    Notes
    -----
    Why raw canaries keep the audit sound: a canary is an example like any other, of gradient norm sC, clipped by
    the step; DP-SGD's claim covers every example after clipping, so it covers the canaries, and Steinke et al.'s
    bound needs nothing else.  The order-statistics bound also needs the canaries to be independent channels:
    each has its own coordinate, its own Poisson draws and its own noise, and the data never move it; clipping
    acts on each example separately, so a canary's clipped value (C) depends on nothing but its own norm.  With
    s = 4 the clipped value is exactly C in floating point (the factor C/4C is exactly 1/4), so the releases are
    bit for bit those of canaries inserted already clipped.
    Neighbouring relation: add/remove one example (a canary); analytic claim: DP-SGD with (q, σ, T) from
    ``dp_accounting`` (PLD).  The summed gradient is divided by q·N, N the number of real rows.  The model gets
    ⌈m / width⌉ extra input features, 0 for every real example; canary i owns one first-layer weight of those
    features (fixed in advance, independent of membership), so the data's gradients never touch the canaries'
    coordinates and each sees only its own insertions and the noise.  The canaries' sampling comes from its own
    stream of the mechanism's generator, so changing m does not change the noise drawn for the real examples.
    With q = 1 and T = 1 the release is the Gaussian mechanism on the membership bits up to the shared data
    gradient, the worst case in which the audit comes close to ε.

    The separate layout.  A canary's coordinate is a first-layer weight of an input feature that is 0 for every
    real example, so it changes neither the forward pass nor any real example's gradient or clipping norm, and
    its own clipped data gradient is 0.  Its update at step t is therefore exactly
    g_t = (C·1[sampled at t and member] + σC·z_t) / qN followed by the SGD step (momentum, weight decay) on that
    coordinate alone, with z_t standard normal and independent of everything else: the m coordinates evolve
    independently of the model and of each other.  The separate layout trains the model on the real features
    alone (the same :func:`train` / :func:`train_ensemble` calls and streams) and runs that recursion on an
    m-vector (:func:`_canary_descent`, which reuses ``_sgd_update``): the Poisson samples of the canaries are
    the dense layout's own draws (``poisson_mask(m, q, ·)`` from the canary stream), and θ_0 and the z_t come
    from a fourth stream of the release's generator (the dense layout's z_t are entries of the model's noise
    vector: other numbers, the same law).  θ_0 is drawn from the dense layout's law for those weights,
    U(±1/√(d + ⌈m / width⌉)) for d real features (``kaiming_uniform_(a=√5)`` at that fan-in).  This mechanism
    trains without weight decay, so θ_0 − θ_T = lr·Σ_t d_t (d_t the momentum buffer) does not depend on θ_0 at
    all, up to rounding; matching the law keeps the layouts equal in distribution if weight decay were added,
    which makes the release depend on θ_0.  The separate layout's model is initialised at its own fan-in d, not
    d + ⌈m / width⌉ (it has no padding); the model is not released, and no released value depends on it.
    Memory: the dense layout holds the padded inputs (2 · rows · (d + ⌈m / width⌉) float64) and about six
    copies of the first layer; the separate one holds the model of the real features and about a dozen float64
    m-vectors, 1 MB per ten thousand canaries.  The release is the same function of the same kinds of draws, so
    the privacy claim and the audit are those of the dense layout.

    References
    ----------
    .. [1] Steinke, Nasr, Jagielski. Privacy Auditing with One (1) Training Run. arXiv:2305.08846, §6.
    .. [2] Nasr et al. Tight Auditing of Differentially Private Machine Learning. USENIX Security 2023,
       arXiv:2302.07956 (Dirac gradient canaries).
    """

    name: ClassVar[str] = "dpsgd-whitebox"
    input_kind: ClassVar[str] = "canary-dataset"
    release_kind: ClassVar[str] = "per-canary-values"
    #: a release (a float64 vector) is cached by content (:mod:`privgame.mechanisms.cached`): all of its code is the
    #: dpsgd package and, for a model by factory path, the factory's module (:meth:`cache_code`)
    caches_canary_release: ClassVar[bool] = True
    canary_examples: ClassVar[bool] = False
    # each canary: its own coordinate, its own Poisson draws and noise, untouched by the data (see Notes)
    canary_dependence: ClassVar[str | None] = None

    model: str = "logistic"
    canary_layout: str = "dense"
    canary_scale: float = 4.0

    def __post_init__(self) -> None:
        DPSGDParameters.__post_init__(self)  # zero-argument super() is unavailable in slotted dataclasses
        object.__setattr__(self, "canary_scale", check_real("canary_scale", self.canary_scale, low=1.0))
        if is_import_path(self.model):
            ModelFactory(self.model)  # importable and callable, checked when the config is read
            if self.canary_layout == "dense":
                raise ValueError(
                    f"canary_layout must be 'reserved' or 'separate' for model {self.model!r}: the dense layout pads "
                    "the built-in models' first layer with canary features, got 'dense'."
                )
        elif self.model not in _MODELS:
            raise ValueError(
                f"model must be one of {', '.join(_MODELS)} or a factory 'package.module:function', got {self.model!r}."
            )
        if self.canary_layout not in _LAYOUTS:
            raise ValueError(f"canary_layout must be one of {', '.join(_LAYOUTS)}, got {self.canary_layout!r}.")
        if self.canary_layout == "separate" and self.normalisation == "realised":
            raise ValueError(
                "normalisation = 'realised' needs the real batch beside the canaries: use canary_layout 'dense' or "
                "'reserved', got 'separate'."
            )

    def cache_code(self) -> tuple[str, ...]:
        """The module of a model given by factory path (``model``): its source determines the release."""
        return (self.model.partition(":")[0],) if ":" in self.model else ()

    def canary_problem(self, m: int, *, features: int, classes: int, rows: int | None = None) -> str | None:
        """A user model's contract (:func:`privgame.mechanisms.dpsgd.user_model.check_model`) on the game's rows, with m
        reserved coordinates in the reserved layout (a built-in model's coordinates counted from its shape);
        ``None`` when it holds."""
        if not is_import_path(self.model):
            if self.canary_layout != "reserved":
                return None
            return reserved_problem(m, self.model, features, classes, hint='canary_layout = "separate"')
        try:
            check_model(self.model, (features,), classes, m if self.canary_layout == "reserved" else 0)
        except ValueError as exc:
            return str(exc).rstrip(".")
        return None

    def release(self, data: Any, *, rng: np.random.Generator) -> NDArray[np.float64]:
        """Train once with the member canaries; return each canary's summed descent along its coordinate."""
        data = as_canary_data("data", data)
        members = torch.as_tensor(data.membership)
        device = self.torch_device
        if self.canary_layout == "separate":  # the canary recursion on the CPU: the release is device-independent
            plain = self._plain_setup(data.rows, data.m)
            init_gen, train_gen, canary_gen, coordinate_gen = _generators(rng, device, "cpu")
            config = self.training_config()
            train(self._build_model(plain, init_gen), plain.x, plain.y, config, generator=train_gen)
            return self._separate_descent(plain, members, canary_gen, coordinate_gen, config)
        reserved = self.canary_layout == "reserved"
        setup = self._plain_setup(data.rows, data.m) if reserved else self._setup(data.rows, data.m)
        init_gen, train_gen, canary_gen, choice_gen = _generators(rng, device)
        model = self._build_model(setup, init_gen).to(device)
        params = [p for _, p in trainable_parameters(model)]
        chosen = reserved_coordinates(sum(p.numel() for p in params), setup.m, choice_gen) if reserved else setup.coords
        coords, members = chosen.to(device), members.to(device)

        hooks = self._hooks(params, coords, None, choice_gen)

        def inject(step: int) -> DiracExamples:
            sampled = poisson_mask(setup.m, self.sampling_rate, canary_gen) & members
            return DiracExamples(coords, self._canary_values(sampled), hooks.added(step))

        frozen = reserved_masks(chosen, params) if reserved else None
        before = _flat(params)[coords]
        train(
            model,
            setup.x,
            setup.y,
            self._release_config(setup.x.shape[0]),
            generator=train_gen,
            inject=inject,
            reserved=frozen,
            callback=hooks.single,
            clipping=self._clipping(),
        )
        return hooks.release(before[None], _flat(params)[coords][None])[0]

    def release_runs(self, data: Sequence[Any], *, rngs: Sequence[np.random.Generator]) -> list[NDArray[np.float64]]:
        """K independent releases trained at once (:func:`train_ensemble`), each equal to ``release(d, rng=r)``."""
        check_runs(data, rngs)
        if len(data) == 0:
            return []
        first, bits = stack_canary_runs(data)
        device = self.torch_device
        separate = self.canary_layout == "separate"
        gens = [_generators(r, device, "cpu" if separate else None) for r in rngs]
        members = torch.as_tensor(bits)
        if separate:
            plain = self._plain_setup(first.rows, first.m)
            config = self.training_config()
            plain_models = [self._build_model(plain, init) for init, _, _, _ in gens]
            train_ensemble(plain_models, plain.x, plain.y, config, generators=[g for _, g, _, _ in gens])
            # one run after the other: each run's streams give the numbers its own release() draws
            return [
                self._separate_descent(plain, members[k], canary_gen, coordinate_gen, config)
                for k, (_, _, canary_gen, coordinate_gen) in enumerate(gens)
            ]
        reserved = self.canary_layout == "reserved"
        setup = self._plain_setup(first.rows, first.m) if reserved else self._setup(first.rows, first.m)
        models = [self._build_model(setup, init).to(device) for init, _, _, _ in gens]
        template = [p for _, p in trainable_parameters(models[0])]
        k = len(models)
        size = sum(p.numel() for p in template)
        # (K, m): each run's own coordinates (reserved: drawn from its own stream) in the flattened parameters
        chosen = (
            torch.stack([reserved_coordinates(size, setup.m, choice) for _, _, _, choice in gens])
            if reserved
            else setup.coords.expand(k, -1)
        )
        coords, members = chosen.to(device), members.to(device)

        hooks = self._hooks(template, coords, k, *(choice for _, _, _, choice in gens))

        def inject(step: int) -> DiracExamples:
            sampled = torch.stack([poisson_mask(setup.m, self.sampling_rate, g) for _, _, g, _ in gens]) & members
            return DiracExamples(coords, self._canary_values(sampled), hooks.added(step))

        def coordinates() -> Tensor:  # (K, m): each model's canary coordinates
            rows = [_flat([p for _, p in trainable_parameters(m)]) for m in models]
            return torch.stack(rows).gather(1, coords)

        frozen = reserved_masks(chosen, template, lead=(k,)) if reserved else None
        before = coordinates()
        train_ensemble(
            models,
            setup.x,
            setup.y,
            self._release_config(setup.x.shape[0]),
            generators=[g for _, g, _, _ in gens],
            inject=inject,
            reserved=frozen,
            callback=hooks.ensemble,
            clipping=self._clipping(),
        )
        return hooks.release(before, coordinates())

    # ------------------------------------------------- what a variant of the step may change
    # (privgame.mechanisms.dpsgd.broken)
    def _release_config(self, n_rows: int) -> DPSGDConfig:
        """The training configuration of a release's dense or reserved layout (``n_rows`` real rows)."""
        return self.training_config()

    def _canary_values(self, sampled: Tensor) -> Tensor:
        """The canary gradients' RAW values on their coordinates: canary_scale · C where a member canary is
        sampled, else 0 (no example); the step's clipping brings them to C."""
        return sampled.to(torch.float64) * (self.canary_scale * self.clip_norm)

    def _clipping(self) -> ClipFactors:
        """The step's clipping function: the engine's own (a broken step passes a flawed one)."""
        return clip_factors

    def _hooks(
        self, params: Sequence[Tensor], coords: Tensor, batch: int | None, *streams: np.random.Generator
    ) -> ReleaseHooks:
        """How a release's steps are watched and scored: each canary's summed descent, nothing added."""
        return ReleaseHooks()

    def canary_bytes(self, m: int, *, rows: int, features: int, classes: int) -> int:
        """Dense layout: the inputs padded with ⌈m / width⌉ canary features (twice: data and batch) and about six
        copies of the first layer's weights (weights, gradient, noise, momentum, the canaries' gradient vector).
        Separate layout: the unpadded inputs and first layer alike, and about sixteen float64 m-vectors (θ_0, θ,
        momentum, gradient, the step's uniforms, noise and temporaries, the release)."""
        width = self._width(classes)
        if is_import_path(self.model):  # the model's coordinates, about eight copies (the dense count per weight)
            size = check_model(self.model, (features,), classes, m if self.canary_layout == "reserved" else 0)
            return 8 * (2 * rows * features + 8 * size) + 128 * m
        if self.canary_layout == "separate":
            return 8 * (2 * rows * features + 6 * width * features) + 128 * m
        n_inputs = features + max(1, math.ceil(m / width))
        return 8 * (2 * rows * n_inputs + 6 * width * n_inputs) + 64 * m

    def _width(self, classes: int) -> int:
        """The first layer's width: the classes (logistic regression) or the MLP's hidden width."""
        return classes if self.model == "logistic" else _HIDDEN

    def _build_model(self, setup: _Setup, generator: torch.Generator) -> nn.Module:
        """The chosen model for the (padded) inputs, initialised from ``generator`` (float64)."""
        if is_import_path(self.model):
            return ModelFactory(self.model).build(
                (setup.n_inputs,), setup.n_classes, generator=generator, dtype=torch.float64
            )
        if self.model == "logistic":
            return logistic_regression(setup.n_inputs, setup.n_classes, generator=generator, dtype=torch.float64)
        return mlp((setup.n_inputs, _HIDDEN, setup.n_classes), generator=generator, dtype=torch.float64)

    def _separate_descent(
        self,
        plain: _Setup,
        members: Tensor,
        canary_gen: torch.Generator,
        coordinate_gen: np.random.Generator,
        config: DPSGDConfig,
    ) -> NDArray[np.float64]:
        """The separate layout's release: the m canary coordinates trained on their own (class Notes).

        θ_0 ~ U(±b) at the dense layout's fan-in from ``coordinate_gen``, then per step the canaries' Poisson
        sample (the dense layout's draw from ``canary_gen``) and m standard normals from ``coordinate_gen``,
        into one buffer (:func:`_canary_descent` reads it before the next step); O(m) memory.
        """
        m = plain.m
        bound = _init_bound(plain.fan_in)
        start = torch.from_numpy(coordinate_gen.uniform(-bound, bound, size=m))
        noise = np.empty(m)

        def draws() -> Iterator[tuple[Tensor, Tensor]]:
            for _ in range(config.steps):
                sampled = poisson_mask(m, config.sampling_rate, canary_gen) & members
                yield sampled, torch.from_numpy(coordinate_gen.standard_normal(out=noise))

        denom = 1.0 if config.normalisation == "none" else config.expected_batch_size(plain.x.shape[0])
        descent = _canary_descent(start, draws(), config, denom, self.canary_scale * self.clip_norm)
        return descent.numpy().copy()

    def _plain_setup(self, rows: TrainingData, m: int) -> _Setup:
        """The separate layout's setup: the real rows unpadded, no canary coordinates in the model."""
        x, y = _tensors(rows)
        features = x.shape[1]
        fan_in = features + max(1, math.ceil(m / self._width(rows.n_classes)))  # the dense layout's first layer
        empty = torch.zeros(0, dtype=torch.long)
        return _Setup(m=m, n_inputs=features, n_classes=rows.n_classes, coords=empty, x=x, y=y, fan_in=fan_in)

    def _setup(self, rows: TrainingData, m: int) -> _Setup:
        # The canaries live on the first-layer weights of extra input features that are 0 for every real example,
        # so the data never moves their coordinates: each one sees only its canary and the noise.
        features, classes = rows.x.shape[1], rows.n_classes
        width = self._width(classes)
        extra = max(1, math.ceil(m / width))
        out, inp = np.meshgrid(np.arange(width), features + np.arange(extra), indexing="xy")
        coords = torch.as_tensor((out * (features + extra) + inp).reshape(-1)[:m])  # W[out, in] of the first layer
        x, y = _tensors(rows)
        x = torch.cat([x, torch.zeros(x.shape[0], extra, dtype=x.dtype)], dim=1)
        return _Setup(
            m=m, n_inputs=features + extra, n_classes=classes, coords=coords, x=x, y=y, fan_in=features + extra
        )


def _tensors(rows: TrainingData) -> tuple[Tensor, Tensor]:
    """The rows' features (float64) and labels (int64) as tensors, copies: the game's rows stay untouched."""
    x = torch.from_numpy(np.array(rows.x, dtype=np.float64))
    y = torch.from_numpy(np.array(rows.y, dtype=np.int64))
    return x, y
