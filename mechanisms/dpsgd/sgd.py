"""DP-SGD training exactly as analysed: Poisson sampling, per-example clipping, Gaussian noise on the sum.

One step t of :func:`train` (Abadi et al. [1]_, with the Poisson sampling of the analysis):

1. every one of the N training examples joins the batch B_t independently with probability q (one uniform draw
   per example from the run's generator; B_t may be empty);
2. per-example gradients are clipped to norm C and summed (:mod:`privgame.mechanisms.dpsgd.clipping`);
3. Gaussian noise N(0, σ²C² I) is added to the sum (also when B_t is empty), and the result is divided by the
   EXPECTED batch size qN (not |B_t|, which would leak the batch size);
4. an SGD step (optionally with momentum and weight decay, both post-processing of the noisy gradients and
   of parameters already released to the next step) updates the parameters.

After T steps this is the mechanism ``dp_accounting`` accounts as T self-composed Poisson-subsampled Gaussian
mechanisms (:func:`privgame.analysis.accounting.dpsgd_claim`): (ε, δ)-DP under add/remove-one neighbouring with the ε
that :meth:`DPSGDConfig.privacy_claim` gives.  Its guarantee assumes that each example's loss depends on that
example only (no batch normalisation: refused) and that the noise is Gaussian; torch's pseudo-random generators
and floating-point Gaussian samples are not cryptographically sound (cf. Mironov 2012), which does not matter for
auditing experiments.

Randomness: the run's ``torch.Generator`` (on the training device) gives, per step and in this order, the N
uniforms of the Poisson sample and then, in one call, the Gaussian noise of all trainable parameters as one
vector laid out in ``named_parameters`` order.  Models are initialised (by :mod:`privgame.mechanisms.dpsgd.models`) from
the same generator before training.

References
----------
.. [1] M. Abadi, A. Chu, I. Goodfellow, H. B. McMahan, I. Mironov, K. Talwar, L. Zhang. Deep Learning with
   Differential Privacy. CCS 2016, arXiv:1607.00133.
.. [2] A. Yousefpour et al. Opacus: User-Friendly Differential Privacy Library in PyTorch. arXiv:2109.12298
   (the same step: Poisson sampling, noise std σC on the summed clipped gradients, division by qN).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from privgame.analysis._checks import check_int, check_real
from privgame.analysis.accounting import Accountant, PrivacyClaim, dpsgd_claim
from privgame.mechanisms.dpsgd.clipping import (
    ClipFactors,
    GhostClipper,
    LossFn,
    clip_factors,
    cross_entropy,
    trainable_parameters,
)
from privgame.mechanisms.dpsgd.devices import check_generator, make_generator, resolve_device

__all__ = [
    "NORMALISATIONS",
    "DPSGDConfig",
    "DiracExamples",
    "EnsembleCallback",
    "StepCallback",
    "check_normalisation",
    "make_generator",
    "poisson_mask",
    "resolve_device",
    "train",
    "train_ensemble",
]

StepCallback = Callable[[int, nn.Module, Tensor], None]
"""``callback(step, model, batch_mask)`` after step ``step`` (0-based) has updated ``model``."""
EnsembleCallback = Callable[[int, Mapping[str, Tensor], Tensor], None]
"""``callback(step, params, batch_masks)``: params by name, each (K, ...); batch_masks (K, N)."""


@dataclass(frozen=True, slots=True)
class DPSGDConfig:
    """The parameters of a DP-SGD run.

    Parameters
    ----------
    sampling_rate : float
        Poisson sampling rate q in (0, 1]; the expected batch size is qN.
    noise_multiplier : float
        σ ``>= 0``: the noise added to the summed clipped gradients has standard deviation σC per coordinate.
        σ = 0 trains with clipping but no noise (no privacy claim).
    clip_norm : float
        C ``> 0``, the per-example gradient norm bound.
    steps : int
        T ``>= 1``, the number of noisy steps (one epoch is about 1/q steps).
    learning_rate : float
        ``> 0``.
    momentum : float, default=0.0
        Heavy-ball momentum in [0, 1), as ``torch.optim.SGD`` (buffer = momentum · buffer + gradient).
    weight_decay : float, default=0.0
        ``>= 0``, added as ``weight_decay · θ`` to the noisy gradient (as ``torch.optim.SGD``).
    device : str, default="auto"
        Where to train: ``"auto"`` (where the run's generator lives: :func:`make_generator` puts it on CUDA when
        asked for ``"auto"`` and CUDA is available), ``"cpu"``, ``"cuda"``, ``"cuda:1"``…
    dataset_size : int or None, default=None
        The public N of the divisor qN.  ``None`` uses the number of rows trained on; give it when that number
        depends on private data (e.g. canaries included by membership), so that the scaling reveals nothing.
    normalisation : {"expected", "none", "realised"}, default="expected"
        What the noisy sum is divided by: the expected batch size qN (the step above), nothing (the sum itself;
        the learning rate absorbs the constant), or the realised batch size max(|B_t|, 1).  The first two are
        post-processing by a public constant of the subsampled Gaussian mechanism, so :meth:`privacy_claim`
        holds for them under add/remove-one; the realised batch size depends on who is in the data set, and no
        claim is established for it (:data:`NORMALISATIONS`, docs/dpsgd_variants.md): :meth:`privacy_claim`
        returns ``None`` for it.

    Raises
    ------
    TypeError, ValueError
        From ``__post_init__``, naming the field, when a value has the wrong type or lies outside its range.

    Examples
    --------
    >>> config = DPSGDConfig(sampling_rate=256 / 60000, noise_multiplier=1.1, clip_norm=1.0, steps=14062,
    ...                      learning_rate=0.1)
    >>> round(config.privacy_claim().epsilon(1e-5), 2)
    2.38
    """

    sampling_rate: float
    noise_multiplier: float
    clip_norm: float
    steps: int
    learning_rate: float
    momentum: float = 0.0
    weight_decay: float = 0.0
    device: str = "auto"
    dataset_size: int | None = None
    normalisation: str = "expected"

    def __post_init__(self) -> None:
        checked = {
            "sampling_rate": check_real("sampling_rate", self.sampling_rate, low=0.0, high=1.0, low_open=True),
            "noise_multiplier": check_real("noise_multiplier", self.noise_multiplier, low=0.0),
            "clip_norm": check_real("clip_norm", self.clip_norm, low=0.0, low_open=True),
            "steps": check_int("steps", self.steps, low=1),
            "learning_rate": check_real("learning_rate", self.learning_rate, low=0.0, low_open=True),
            "momentum": check_real("momentum", self.momentum, low=0.0, high=1.0, high_open=True),
            "weight_decay": check_real("weight_decay", self.weight_decay, low=0.0),
        }
        for name, value in checked.items():
            object.__setattr__(self, name, value)
        if not isinstance(self.device, str):
            raise TypeError(f"device must be a string such as 'auto', 'cpu' or 'cuda', got {self.device!r}.")
        resolve_device(self.device)  # refuses strings torch cannot parse
        if self.dataset_size is not None:
            check_int("dataset_size", self.dataset_size, low=1)
        check_normalisation(self.normalisation)

    def privacy_claim(self, accountant: Accountant = "pld") -> PrivacyClaim | None:
        """The analytic guarantee (``dp_accounting``, add/remove-one), or ``None`` when σ = 0 (no privacy) or the
        normalisation has no established claim (``"realised"``)."""
        if self.noise_multiplier == 0.0 or NORMALISATIONS[self.normalisation] is not None:
            return None
        return dpsgd_claim(self.noise_multiplier, self.sampling_rate, self.steps, accountant=accountant)

    def expected_batch_size(self, n_examples: int) -> float:
        """qN, the divisor of every noisy gradient sum (N = ``dataset_size`` when given, else ``n_examples``)."""
        n = check_int("n_examples", n_examples, low=1) if self.dataset_size is None else self.dataset_size
        return self.sampling_rate * n


#: each normalisation of the noisy sum, with None where the subsampled-Gaussian claim holds (add/remove-one), or
#: the reason it has no established claim
NORMALISATIONS: dict[str, str | None] = {
    "expected": None,
    "none": None,
    "realised": (
        "dividing by the realised batch size makes the scale of every step depend on whether the record is in the "
        "batch; no analysis establishes the subsampled-Gaussian claim for it (Wang et al., arXiv:2605.15648)"
    ),
}


def check_normalisation(normalisation: Any) -> str:
    """``normalisation`` if it is one of :data:`NORMALISATIONS`; else one line naming them."""
    if not isinstance(normalisation, str) or normalisation not in NORMALISATIONS:
        raise ValueError(f"normalisation must be one of {', '.join(NORMALISATIONS)}, got {normalisation!r}.")
    return normalisation


@dataclass(frozen=True, slots=True, eq=False)
class DiracExamples:
    """What ``inject(step)`` may return instead: extra examples given by their RAW gradients, clipped by the step.

    Example j's gradient is zero except ``values[j]`` at the flattened coordinate ``coords[j]`` of the trainable
    parameters (:func:`privgame.mechanisms.dpsgd.clipping.trainable_parameters` order): a Dirac canary.  Its norm
    |values[j]| goes through the step's clipping function in the same call as the batch's norms, and its clipped
    gradient joins the clipped sum (after ``reserved`` is applied, so a canary may sit on a reserved coordinate).
    A value of 0 is no example (it adds nothing and is not counted).

    Attributes
    ----------
    coords : Tensor of shape (J,) or (K, J), int64
        Distinct coordinates (one row per model in :func:`train_ensemble`).
    values : Tensor of shape (J,) or (K, J)
        The raw gradient values, before clipping.
    added : sequence of Tensor, optional
        Gradients added after the clipping as they are (one per trainable parameter, (K, ...) stacks for K models):
        for the deliberately broken steps of :mod:`privgame.mechanisms.dpsgd.broken` only.
    """

    coords: Tensor
    values: Tensor
    added: Sequence[Tensor] | None = None


def poisson_mask(n_examples: int, sampling_rate: float, generator: torch.Generator) -> Tensor:
    """A Poisson sample: a boolean mask of length N, each entry True with probability q independently.

    Draws N float64 uniforms from ``generator`` (on its device); entry i is in the batch when u_i < q, so q = 1
    takes every example.  Float64 keeps the resolution (2⁻⁵³) far below any sampling rate in use.
    """
    u = torch.rand(n_examples, generator=generator, device=generator.device, dtype=torch.float64)
    return u < sampling_rate


def train(
    model: nn.Module,
    x: Any,
    y: Any,
    config: DPSGDConfig,
    *,
    generator: torch.Generator,
    loss_fn: LossFn = cross_entropy,
    callback: StepCallback | None = None,
    inject: Callable[[int], Sequence[Tensor] | DiracExamples | None] | None = None,
    include: Any = None,
    reserved: Sequence[Tensor] | None = None,
    clipping: ClipFactors = clip_factors,
) -> nn.Module:
    """Train ``model`` in place with DP-SGD.

    Parameters
    ----------
    model : nn.Module
        Trained in place and moved to ``config.device``; every parameter that requires a gradient is trained.
        Examples must not interact in the forward pass (see :mod:`privgame.mechanisms.dpsgd.clipping`).
    x : Tensor or array-like of shape (N, ...)
        Inputs; floating inputs are cast to the model's floating dtype, integer ones (token ids) kept.
    y : Tensor or array-like of shape (N, ...)
        Targets, as ``loss_fn`` wants them (class indices for :func:`cross_entropy`).
    config : DPSGDConfig
    generator : torch.Generator
        The run's randomness (Poisson samples and noise), on the training device; see :func:`make_generator`.
    loss_fn : callable, default=cross_entropy
        ``loss_fn(output, target)`` returns one loss per example (no reduction).
    callback : callable, optional
        ``callback(step, model, batch_mask)`` after each step's update, with ``step`` in 0..T−1 and
        ``batch_mask`` the (N,) boolean Poisson sample of that step.  Parameters before the first step are
        ``model``'s on entry.  It must not change the model (later steps update it in place: copy what you keep).
    inject : callable, optional
        ``inject(step)`` returns extra examples of the step: :class:`DiracExamples` (raw gradients, clipped by the
        step's clipping function together with the batch: white-box gradient canaries), or already-clipped
        gradients (one tensor per trainable parameter) added to the clipped sum before the noise, or None.  The
        analysis holds when each injected example is clipped (or contributes a gradient of norm at most C) and is
        included with probability q per step.
    include : Tensor or array-like of shape (N,), bool, optional
        Which rows of ``x`` are in the training set (default: all).  Every row still gets its Poisson uniform, so
        the randomness drawn does not depend on who is included: a row left out is simply never sampled.  This
        is how the canary mechanisms train on "the data plus the member canaries" with a stream of random
        numbers that is the same for every membership vector.
    reserved : sequence of Tensor, optional
        One boolean mask per trainable parameter: coordinates the data's clipped sum never moves (set to 0 before
        ``inject`` adds its gradients and the noise).  White-box canary coordinates inside a model
        (:mod:`privgame.mechanisms.dpsgd.user_model`).  The projection keeps every example's contribution within norm C,
        so the claim is unchanged.
    clipping : callable, default=clip_factors
        The clipping function ``factors(norms, clip_norm)`` applied to every example's gradient norm, the injected
        :class:`DiracExamples` included (:func:`privgame.mechanisms.dpsgd.clipping.clip_factors`); another one is
        a step under audit (:mod:`privgame.mechanisms.dpsgd.broken`).

    Returns
    -------
    nn.Module
        ``model``.

    Notes
    -----
    Neighbouring relation: add/remove one training example; analytic claim:
    ``config.privacy_claim()`` (T Poisson-subsampled Gaussian steps, ``dp_accounting``).  The empty batch is an
    ordinary step: the clipped sum is zero and the noise is added as always.
    """
    device = _prepare(config, [generator])
    check_generator("generator", generator, device)
    model.to(device)
    xs, ys = _as_tensors(x, y, model, device)
    n = xs.shape[0]
    keep = _include_mask(include, (n,), device)
    expected = config.sampling_rate * (n if config.dataset_size is None else config.dataset_size)
    named = trainable_parameters(model)
    params = [p for _, p in named]
    frozen = _reserved_masks(reserved, params, lead=())
    buffers: list[Tensor | None] = [None] * len(params)
    with GhostClipper(model, clipping) as clipper:
        for step in range(config.steps):
            mask = poisson_mask(n, config.sampling_rate, generator)
            if keep is not None:
                mask &= keep
            index = mask.nonzero().squeeze(1)
            extra = inject(step) if inject is not None else None
            dirac = extra if isinstance(extra, DiracExamples) else None
            sums, _, factors = clipper.clip_with(
                xs.index_select(0, index),
                ys.index_select(0, index),
                loss_fn,
                config.clip_norm,
                extra=None if dirac is None else dirac.values.abs(),
            )
            grads = _noisy_step(sums, params, frozen, extra, factors, config, [generator], expected, mask.sum(), ())
            _sgd_update(params, grads, buffers, config)
            if callback is not None:
                callback(step, model, mask)
    return model


def train_ensemble(
    make_model: Callable[[torch.Generator], nn.Module] | Sequence[nn.Module],
    x: Any,
    y: Any,
    config: DPSGDConfig,
    *,
    generators: Sequence[torch.Generator],
    loss_fn: LossFn = cross_entropy,
    callback: EnsembleCallback | None = None,
    inject: Callable[[int], Sequence[Tensor] | DiracExamples | None] | None = None,
    include: Any = None,
    reserved: Sequence[Tensor] | None = None,
    clipping: ClipFactors = clip_factors,
) -> list[nn.Module]:
    """Train K independent models at once with DP-SGD, one forward and one backward pass per step for all K.

    Model k is exactly the model :func:`train` would return for ``make_model(generators[k])`` with
    ``generator=generators[k]``: its own initialisation, Poisson samples and noise, all from its own generator
    (equal up to floating-point rounding of the batched matrix products).

    Parameters
    ----------
    make_model : callable or sequence of nn.Module
        ``make_model(generator)`` builds (and initialises, from the generator) one model; it is called once per
        generator, in order.  Or the K models themselves, all of one architecture.  The forward pass of model 0
        serves all K (only parameter names, shapes and dtypes are compared), so the models must differ in their
        parameter values only.
    x, y : Tensor or array-like of shape (N, ...)
        The training data, shared by the K models.
    config : DPSGDConfig
    generators : sequence of torch.Generator
        One per model (K ≥ 1), on the training device; e.g. ``[make_generator(s) for s in seed.spawn(K)]``.
    loss_fn : callable, default=cross_entropy
        One loss per example (no reduction); it is ``vmap``-ed over the models.
    callback : callable, optional
        ``callback(step, params, batch_masks)`` after each step: ``params`` maps every trained parameter's name to
        a (K, ...) tensor of the K models' current values (updated in place by later steps: clone what you keep),
        ``batch_masks`` is the (K, N) boolean Poisson samples.
    inject : callable, optional
        :func:`train`'s ``inject`` for K models at once: :class:`DiracExamples` with (K, J) coordinates and
        values, or per trainable parameter a (K, ...) tensor of already-clipped gradients (or None).
    include : Tensor or array-like of shape (N,) or (K, N), bool, optional
        Which rows of ``x`` are in each model's training set (default: all), as :func:`train`'s ``include``:
        the K models may train on different subsets of one table (with and without a target, for instance).
    reserved : sequence of Tensor, optional
        Per trainable parameter, a boolean mask of its shape or (K, ...) of the stacked shape: coordinates the
        data's clipped sums never move, as :func:`train`'s ``reserved``.
    clipping : callable, default=clip_factors
        The clipping function, as :func:`train`'s.

    Returns
    -------
    list of nn.Module
        The K trained models.

    Notes
    -----
    The K models' parameters are stacked along a first axis; the forward pass is ``vmap`` of
    ``functional_call`` over the models, each on its own Poisson batch, padded to the largest of the K batches
    with rows of weight 0 (rows that no clipped sum and no norm of a real example sees: examples do not
    interact, and a padded row's clipping factor is set to 0).  Clipped sums come from the same per-layer
    formulas as :func:`train`, with a model axis.  Each model is DP-SGD with ``config.privacy_claim()``.
    """
    gens = list(generators)
    if not gens:
        raise ValueError("generators must hold at least one torch.Generator, got an empty sequence.")
    device = _prepare(config, gens)
    for i, g in enumerate(gens):
        check_generator(f"generators[{i}]", g, device)
    if isinstance(make_model, nn.Module):
        raise TypeError("make_model must be a callable building one model from a generator, or a sequence of models.")
    if callable(make_model):
        models = [make_model(g) for g in gens]
    else:
        models = list(make_model)
        if len(models) != len(gens):
            raise ValueError(f"make_model must give one model per generator ({len(gens)}), got {len(models)}.")
    for i, m in enumerate(models):
        if not isinstance(m, nn.Module):
            raise TypeError(f"make_model must give torch.nn.Module objects, got {m!r} for model {i}.")
    for m in models:
        m.to(device)
    template = models[0]
    names = [name for name, _ in trainable_parameters(template)]
    for i, m in enumerate(models[1:], start=1):
        other = trainable_parameters(m)
        if [nm for nm, _ in other] != names or any(
            p.shape != q.shape or p.dtype != q.dtype
            for (_, p), (_, q) in zip(other, trainable_parameters(template), strict=True)
        ):
            raise ValueError(f"make_model must give models of one architecture; model {i} differs from model 0.")
    xs, ys = _as_tensors(x, y, template, device)
    n = xs.shape[0]
    keep = _include_mask(include, (len(gens), n), device)
    expected = config.sampling_rate * (n if config.dataset_size is None else config.dataset_size)
    with torch.no_grad():
        stacked = {
            name: torch.stack([dict(m.named_parameters())[name].detach() for m in models]).clone() for name in names
        }
    params = list(stacked.values())
    frozen = _reserved_masks(reserved, params, lead=(len(gens),))
    buffers: list[Tensor | None] = [None] * len(params)
    with GhostClipper(template, clipping) as clipper:
        clipper.discover(xs)
        for step in range(config.steps):
            masks = torch.stack([poisson_mask(n, config.sampling_rate, g) for g in gens])
            if keep is not None:
                masks &= keep
            counts = masks.sum(1)
            batch = int(counts.max())
            extra = inject(step) if inject is not None else None
            dirac = extra if isinstance(extra, DiracExamples) else None
            raw = None if dirac is None else dirac.values.abs()
            factors = None
            if batch > 0:
                # row k: model k's batch in increasing index order, then padding (row 0, weight 0)
                rows, cols = masks.nonzero(as_tuple=True)
                slots = masks.cumsum(1)[rows, cols] - 1
                order = torch.zeros((len(gens), batch), dtype=torch.long, device=device)
                order[rows, slots] = cols
                weights = (torch.arange(batch, device=device) < counts.unsqueeze(1)).to(params[0].dtype)
                sums, factors = clipper.clip_ensemble(
                    stacked, xs[order], ys[order], loss_fn, config.clip_norm, weights, extra=raw
                )
            else:
                sums = [torch.zeros_like(p) for p in params]
                factors = None if raw is None else clipping(raw, config.clip_norm)
            grads = _noisy_step(sums, params, frozen, extra, factors, config, gens, expected, counts, (len(gens),))
            _sgd_update(params, grads, buffers, config)
            if callback is not None:
                callback(step, stacked, masks)
    with torch.no_grad():
        for i, m in enumerate(models):
            current = dict(m.named_parameters())
            for name in names:
                current[name].copy_(stacked[name][i])
    return models


# ---------------------------------------------------------------------------------------------- helpers


def _prepare(config: DPSGDConfig, generators: Sequence[Any]) -> torch.device:
    """The training device: ``config.device``; ``"auto"`` trains where the (first) generator lives, so a CPU
    generator trains on the CPU on any machine and ``make_generator(seed, "auto")`` picks CUDA when present."""
    if not isinstance(config, DPSGDConfig):
        raise TypeError(f"config must be a DPSGDConfig, got {config!r}.")
    if config.device == "auto" and generators and isinstance(generators[0], torch.Generator):
        return generators[0].device
    return resolve_device(config.device)


def _as_tensors(x: Any, y: Any, model: nn.Module, device: torch.device) -> tuple[Tensor, Tensor]:
    floats = [p.dtype for p in model.parameters() if p.dtype.is_floating_point]
    dtype = floats[0] if floats else torch.get_default_dtype()
    xs = torch.as_tensor(np.asarray(x) if not isinstance(x, Tensor) else x).to(device=device)
    if xs.is_floating_point():  # integer inputs (token ids for an nn.Embedding) stay integers
        xs = xs.to(dtype)
    ys = torch.as_tensor(np.asarray(y) if not isinstance(y, Tensor) else y).to(device=device)
    if xs.dim() < 1 or xs.shape[0] < 1:
        raise ValueError(f"x must hold at least one example, got shape {tuple(xs.shape)}.")
    if ys.dim() < 1 or ys.shape[0] != xs.shape[0]:
        raise ValueError(f"y must have one entry per row of x ({xs.shape[0]}), got shape {tuple(ys.shape)}.")
    return xs, ys


def _include_mask(include: Any, shape: tuple[int, ...], device: torch.device) -> Tensor | None:
    """``include`` as a boolean tensor broadcastable to ``shape`` (None: every row is in)."""
    if include is None:
        return None
    keep = torch.as_tensor(np.asarray(include) if not isinstance(include, Tensor) else include).to(device=device)
    if keep.dtype != torch.bool:
        raise TypeError(f"include must be boolean, got dtype {keep.dtype}.")
    if keep.shape != torch.Size(shape) and keep.shape != torch.Size(shape[-1:]):
        raise ValueError(f"include must have shape {shape[-1:]} or {shape}, got {tuple(keep.shape)}.")
    return keep


def _reserved_masks(
    reserved: Sequence[Tensor] | None, params: Sequence[Tensor], lead: tuple[int, ...]
) -> Tensor | None:
    """``reserved`` checked against the parameters (each mask of a parameter's shape, or ``lead`` + it), as one
    flat mask (``lead`` + (d,)) in the layout of :func:`_flat`; None when there is none."""
    if reserved is None:
        return None
    masks = list(reserved)
    if len(masks) != len(params):
        raise ValueError(f"reserved must hold one mask per trainable parameter ({len(params)}), got {len(masks)}.")
    out = []
    for i, (r, p) in enumerate(zip(masks, params, strict=True)):
        shape = p.shape[len(lead) :]
        if not isinstance(r, Tensor) or r.dtype != torch.bool or r.shape not in (shape, torch.Size((*lead, *shape))):
            raise ValueError(f"reserved[{i}] must be a boolean tensor of shape {tuple(shape)}, got {r!r:.80}.")
        out.append(r.to(p.device).expand(p.shape))
    return _flat(out, lead)


def _flat(tensors: Sequence[Tensor], lead: tuple[int, ...]) -> Tensor:
    """One new tensor ``lead`` + (d,) holding the tensors (each ``lead`` + a parameter's shape) one after another,
    in their order: the layout of the step's noise vector (:func:`_noisy_step`)."""
    return torch.cat([t.reshape(*lead, -1) for t in tensors], dim=-1)


def _noisy_step(
    sums: list[Tensor],
    params: Sequence[Tensor],
    frozen: Tensor | None,
    extra: Sequence[Tensor] | DiracExamples | None,
    factors: Tensor | None,
    config: DPSGDConfig,
    generators: Sequence[torch.Generator],
    expected: float,
    realised: Tensor,
    lead: tuple[int, ...],
) -> list[Tensor]:
    """The step's noisy gradient, one view per parameter: (Σ clipped + extra examples + N(0, σ²C²)) / divisor.

    The clipped sums are laid out as one flat vector per model (:func:`_flat`, the noise vector's layout), and
    every later operation is one elementwise operation on it, in the order of the formula: the reserved
    coordinates set to 0 (a projection: no example's norm grows), the extra examples added (the clipped Dirac
    examples scattered into a zero vector first, then ``added``; or ``inject``'s already-clipped gradients), the
    noise σC·z added, the divisor applied.  Each coordinate sees the same float operations as when the parameters
    were handled one by one; the flat layout only saves the per-parameter calls.

    Model k's noise is ONE standard-normal vector for all its trainable parameters together (laid out in
    ``named_parameters`` order), drawn from generator k in a single call: :func:`train` (K = 1, ``lead`` = ())
    and :func:`train_ensemble` draw exactly the same numbers, and K models cost K draws per step, not
    K × (number of parameters) small ones.
    """
    flat = _flat(sums, lead)
    if frozen is not None:
        flat.masked_fill_(frozen, 0.0)
    injected: Any = 0
    if isinstance(extra, DiracExamples):
        injected = _add_dirac(flat, extra, factors)
    elif extra is not None:
        flat.add_(_flat(extra, lead))
    denom = _divisor(config, expected, realised + injected)
    if config.noise_multiplier != 0.0:
        noise = torch.empty_like(flat)
        if lead:
            for k, g in enumerate(generators):
                noise[k].normal_(generator=g)
        else:
            noise.normal_(generator=generators[0])
        flat.add_(noise.mul_(config.noise_multiplier * config.clip_norm))
    if isinstance(denom, Tensor):  # realised batch sizes: a scalar, or one per model
        denom = denom.to(flat.dtype).reshape(*lead, 1) if lead else denom.to(flat.dtype)
    flat.div_(denom)
    sizes = [p[0].numel() if lead else p.numel() for p in params]
    return [chunk.view(p.shape) for chunk, p in zip(flat.split(sizes, dim=-1), params, strict=True)]


def _add_dirac(flat: Tensor, dirac: DiracExamples, factors: Tensor | None) -> Tensor:
    """Add the clipped Dirac examples (and their ``added`` gradients) to the flat sums in place; return the number
    of examples (nonzero values, per model)."""
    assert factors is not None  # clip_with returns them whenever extra norms are given
    values = dirac.values.to(flat.dtype)
    # a value of 0 is no example: 0 whatever the clipping function makes of a zero norm
    clipped = torch.where(values != 0, values * factors.to(values.dtype), torch.zeros_like(values))
    vector = torch.zeros_like(flat)
    vector.scatter_add_(-1, dirac.coords.to(vector.device), clipped.to(vector.device))
    flat.add_(vector)
    if dirac.added is not None:
        flat.add_(_flat(dirac.added, tuple(flat.shape[:-1])))
    return (values != 0).sum(-1)


def _divisor(config: DPSGDConfig, expected: float, realised: Any) -> Any:
    """The step's divisor: qN, 1, or the realised batch size max(|B_t|, 1) ((K,) when K models train at once)."""
    if config.normalisation == "expected":
        return expected
    if config.normalisation == "none":
        return 1.0
    return torch.as_tensor(realised).clamp(min=1)


def _sgd_update(
    params: Sequence[Tensor], grads: Sequence[Tensor], buffers: list[Tensor | None], config: DPSGDConfig
) -> None:
    """``torch.optim.SGD``'s update (no dampening, no Nesterov), elementwise so that stacked models match."""
    with torch.no_grad():
        for i, (p, grad) in enumerate(zip(params, grads, strict=True)):
            d = grad if config.weight_decay == 0.0 else grad.add(p, alpha=config.weight_decay)
            if config.momentum != 0.0:
                buf = buffers[i]
                if buf is None:
                    buf = d.clone()
                    buffers[i] = buf
                else:
                    buf.mul_(config.momentum).add_(d)
                d = buf
            p.add_(d, alpha=-config.learning_rate)
