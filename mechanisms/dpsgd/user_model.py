"""Any ``torch.nn.Module`` in privgame's DP-SGD engine: a model factory named by an import path.

The contract (docs/extending.md, "A PyTorch model")
---------------------------------------------------
``model = "package.module:factory"`` in a DP-SGD mechanism's config names a function called as::

    factory(input_shape: tuple[int, ...], n_classes: int, *, generator: torch.Generator) -> torch.nn.Module

``input_shape`` is one example's shape (``(d,)`` for a data set's encoded features), ``n_classes`` the data set's
classes; the module maps a batch ``(B, *input_shape)`` to logits ``(B, n_classes)``.  Every initial weight must
be drawn from ``generator`` (``nn.init.*_(…, generator=generator)``, or :func:`privgame.mechanisms.dpsgd.models.
init_parameters`), never from torch's global RNG: the same seed must give the same model in every process.
The examples of a batch must not interact (no batch normalisation in training mode) and the forward pass must not
draw random numbers (no dropout in training mode); a parameter may belong to one module only.  A module may call
one layer several times (weight sharing): its per-example gradient is the sum over the calls, clipped as part of
one vector on every path (the engine's single model and ensemble, Opacus's hooks;
``tests/mechanisms/dpsgd/test_weight_sharing.py``); one parameter registered in two modules (tied weights) is
refused.

:func:`check_model` builds the model when the config is read and refuses, in one line each, a factory that cannot
be imported or called, that returns no Module, a Module without trainable parameters, one the clipping engine
cannot clip (the three rules above), one whose output is not ``(B, n_classes)``, and one whose initial weights
do not follow the generator.  Layers the ghost-clipping engine has no closed form for (anything but ``Linear``
and ``Conv2d``) take its per-example path (``torch.func``'s ``vmap`` of the layer's ``vjp``, tested equal to a
naive per-example loop): a one-line notice names them and the cost.

White-box canaries on a user model: the ``"reserved"`` layout
------------------------------------------------------------
A Dirac canary is a gradient that is zero except at one coordinate of the flattened parameter vector
(:func:`reserved_coordinates`).  The m canary coordinates are drawn uniformly without replacement among all the
model's trainable coordinates (``trainable_parameters`` order, flattened), from a stream of the release's own
generator, so they are fixed before training and independent of the membership.  The engine then reserves them:
the data's clipped gradient sum is set to 0 on them at every step (``train(..., reserved=...)``) before the canary
gradients and the noise are added.

Why a canary coordinate must not be touched by real gradients: the audit's score for canary i is the descent
along its coordinate.  If real examples moved that coordinate, the score would carry their gradients, which (a)
depend on the model and on every other canary through the shared weights, so the canaries would no longer be
independent channels (the product model of :mod:`privgame.analysis.order_stats` would fail), and (b) add signal-free
variance that hides the canary.  Reserved, a coordinate sees exactly its own insertions and its own noise, as in
the built-in dense layout (whose coordinates are weights of input features that are 0 for every real example).
Zeroing coordinates of the clipped sum is a projection, which grows no example's contribution beyond norm C, so
the subsampled-Gaussian claim is unchanged; the price is that the real data never train those m weights (keep m
well below the model's parameter count: a notice says so past 25 %).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from privgame.mechanisms._imports import one_line, resolve_import

__all__ = [
    "FACTORY_EXAMPLE",
    "ModelFactory",
    "ModelNotice",
    "check_model",
    "is_import_path",
    "reserved_coordinates",
    "reserved_masks",
]

FACTORY_EXAMPLE = "mypackage.models:make_model"
#: past this share of the model's coordinates, reserving them for canaries is noticed (the data never train them)
RESERVED_SHARE_NOTICE = 0.25


class ModelNotice(UserWarning):
    """A one-line notice about a user model: layers on the per-example path, many reserved coordinates."""


def is_import_path(name: Any) -> bool:
    """Whether a ``model`` value names a factory (``"package.module:factory"``) rather than a built-in model."""
    return isinstance(name, str) and ":" in name


@dataclass(frozen=True, slots=True)
class ModelFactory:
    """A user's model factory, by its import path (the factory itself is imported when first used).

    Parameters
    ----------
    path : str
        ``"package.module:factory"``.

    Raises
    ------
    TypeError, ValueError
        One line: not a string, not importable, not callable.
    """

    path: str

    def __post_init__(self) -> None:
        self.factory()

    def factory(self) -> Callable[..., Any]:
        """The function the path names."""
        found = resolve_import(self.path, field="model", example=FACTORY_EXAMPLE, what="function")
        if not callable(found):
            raise ValueError(f"model must name a function (input_shape, n_classes, *, generator), got {self.path!r}.")
        return found

    def build(
        self, input_shape: Sequence[int], n_classes: int, *, generator: torch.Generator, dtype: torch.dtype
    ) -> nn.Module:
        """The factory's model for this shape and these classes, on the generator's device, in ``dtype``.

        Raises
        ------
        ValueError
            One line: the factory failed, returned no Module, or one without a trainable parameter.
        """
        shape = tuple(int(s) for s in input_shape)
        try:
            model = self.factory()(shape, int(n_classes), generator=generator)
        except Exception as exc:  # the user's own error, as one line
            raise ValueError(
                f"model {self.path!r} failed for input_shape={shape}, n_classes={n_classes}: {one_line(exc)}."
            ) from None
        if not isinstance(model, nn.Module):
            raise ValueError(f"model {self.path!r} must return a torch.nn.Module, got {type(model).__name__}.")
        if not any(p.requires_grad for p in model.parameters()):
            raise ValueError(f"model {self.path!r} must have at least one trainable parameter, got none.")
        return model.to(device=generator.device, dtype=dtype)


@functools.lru_cache(maxsize=32)
def check_model(path: str, input_shape: tuple[int, ...], n_classes: int, m: int = 0) -> int:
    """Build the model once as a release would and check the contract; return its number of trainable coordinates.

    Warns (:class:`ModelNotice`, one line each) when layers take the per-example path, and when ``m`` reserved
    canary coordinates are more than 25 % of the model's.  Cached per (path, shape, classes, m): the notice is
    given once per process.

    Raises
    ------
    ValueError
        One line, naming the path: each rule of the module docstring that the model breaks, or ``m`` above its
        number of trainable coordinates.
    """
    from privgame.mechanisms.dpsgd.clipping import GhostClipper, trainable_parameters
    from privgame.mechanisms.dpsgd.devices import make_generator

    factory = ModelFactory(path)
    built = [
        factory.build(input_shape, n_classes, generator=make_generator(12345, "cpu"), dtype=torch.float64)
        for _ in range(2)
    ]
    model = built[0]
    try:
        clipper = GhostClipper(model)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"model {path!r} cannot be clipped per example: {' '.join(str(exc).split())}") from None
    generic = [
        f"{layer.path or 'model'} ({type(layer.module).__name__})"
        for layer in clipper.layers
        if layer.kind == "generic"
    ]
    clipper.close()
    with torch.no_grad():
        try:
            out = model(torch.zeros((2, *input_shape), dtype=torch.float64))
        except Exception as exc:
            raise ValueError(
                f"model {path!r} cannot run on a batch of shape {(2, *input_shape)}: {one_line(exc)}."
            ) from None
    if not isinstance(out, Tensor) or tuple(out.shape) != (2, n_classes):
        got = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
        raise ValueError(f"model {path!r} must map (B, *{input_shape}) to logits (B, {n_classes}), got {got}.")
    _check_one_step(path, model, input_shape)
    first, second = (torch.cat([p.detach().reshape(-1) for _, p in trainable_parameters(b)]) for b in built)
    if not torch.equal(first, second):
        raise ValueError(
            f"model {path!r} must draw its initial weights from the generator it is given (two builds from one "
            "seed differ: it draws from torch's global RNG); use nn.init.*_(..., generator=generator) or "
            "privgame.mechanisms.dpsgd.models.init_parameters."
        )
    size = int(first.numel())
    if m > size:
        raise ValueError(
            f"m must be at most the {size:,} trainable coordinates of model {path!r} to reserve one per white-box "
            f'canary, got {m:,} (use canary_layout = "separate", or a larger model).'
        )
    if generic:
        warnings.warn(
            ModelNotice(
                f"model {path!r}: {', '.join(generic)} take the per-example path (vmap of the layer's vjp), which "
                "materialises B copies of those layers' gradients per step (Linear and Conv2d have closed forms)."
            ),
            stacklevel=2,
        )
    if m > RESERVED_SHARE_NOTICE * size:
        warnings.warn(
            ModelNotice(
                f"model {path!r}: its {m:,} reserved canary coordinates are {m / size:.0%} of its {size:,} "
                "coordinates, which the data never train."
            ),
            stacklevel=2,
        )
    return size


def _check_one_step(path: str, model: nn.Module, input_shape: tuple[int, ...]) -> None:
    """One clipped-gradient computation on a batch of two zero examples (label 0), with the clipping's hooks on:
    a layer they cannot take (one returning a tuple, called with keywords) is refused now, not in every trial.
    It computes no update: the model is unchanged."""
    from privgame.mechanisms.dpsgd.clipping import clipped_gradient_sum, cross_entropy

    x = torch.zeros((2, *input_shape), dtype=torch.float64)
    try:
        clipped_gradient_sum(model, cross_entropy, x, torch.zeros(2, dtype=torch.long), 1.0)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise ValueError(f"model {path!r} cannot be clipped per example: {one_line(exc)}.") from None


def reserved_coordinates(n_coordinates: int, m: int, rng: np.random.Generator) -> Tensor:
    """m distinct coordinates of a flattened parameter vector of length ``n_coordinates``, uniformly at random.

    Raises
    ------
    ValueError
        If m exceeds ``n_coordinates``.
    """
    if m > n_coordinates:
        raise ValueError(f"m must be at most the model's {n_coordinates:,} trainable coordinates, got {m:,}.")
    return torch.as_tensor(np.sort(rng.choice(n_coordinates, size=m, replace=False)), dtype=torch.long)


def reserved_masks(coordinates: Tensor, params: Sequence[Tensor], lead: tuple[int, ...] = ()) -> list[Tensor]:
    """Per parameter (one model's, unstacked), the boolean mask of the given flattened coordinates; with ``lead``
    = (K,) the coordinates are (K, m), one row per model, and each mask is (K, *shape)."""
    sizes = [p.numel() for p in params]
    flat = torch.zeros((*lead, sum(sizes)), dtype=torch.bool)
    flat.scatter_(-1, coordinates.reshape(*lead, -1), True)
    return [chunk.reshape(*lead, *p.shape) for chunk, p in zip(flat.split(sizes, dim=-1), params, strict=True)]
