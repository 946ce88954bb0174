"""Small models for DP-SGD audits, initialised from an explicit generator.

Each factory builds its module on the ``meta`` device (so building draws nothing from the global torch RNG),
materialises it on the generator's device and initialises it with :func:`init_parameters`, which follows
PyTorch's default initialisation but draws from the given ``torch.Generator``.  The same generator state therefore
gives the same initial model.

None of these models mixes examples of a batch (no batch normalisation), as per-example clipping requires.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import TypeVar

import torch
from torch import nn

from privgame.analysis._checks import check_int
from privgame.mechanisms.training.release import check_channels, check_image

__all__ = ["conv_net", "digits_cnn", "init_parameters", "logistic_regression", "mlp"]

_ACTIVATIONS: dict[str, type[nn.Module]] = {"relu": nn.ReLU, "tanh": nn.Tanh, "elu": nn.ELU, "gelu": nn.GELU}
_CONVS = (nn.Conv1d, nn.Conv2d, nn.Conv3d)
_M = TypeVar("_M", bound=nn.Module)


def init_parameters(model: nn.Module, *, generator: torch.Generator) -> nn.Module:
    """Re-initialise every parameter of ``model`` in place with PyTorch's default scheme, drawing from ``generator``.

    Linear and convolution layers get ``kaiming_uniform_(a=√5)`` weights and U(−1/√fan_in, 1/√fan_in) biases (the
    ``reset_parameters`` of ``nn.Linear``/``nn.ConvNd``); ``LayerNorm`` and ``GroupNorm`` get ones and zeros.
    Modules are visited in ``model.modules()`` order, parameters in their declaration order.

    Parameters
    ----------
    model : nn.Module
        Its parameters must live on ``generator``'s device.
    generator : torch.Generator
        The source of every draw.

    Returns
    -------
    nn.Module
        ``model`` itself.

    Raises
    ------
    TypeError
        If a module with parameters of its own is none of the kinds above (initialise it yourself, from a
        generator, and skip this function).
    """
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {generator!r}.")
    with torch.no_grad():
        for module in model.modules():
            own = list(module.parameters(recurse=False))
            if not own:
                continue
            if isinstance(module, (nn.Linear, *_CONVS)):
                weight = module.weight
                nn.init.kaiming_uniform_(weight, a=math.sqrt(5), generator=generator)
                if module.bias is not None:
                    fan_in = weight[0].numel()
                    bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
                    nn.init.uniform_(module.bias, -bound, bound, generator=generator)
            elif isinstance(module, (nn.LayerNorm, nn.GroupNorm)):
                for name, p in module.named_parameters(recurse=False):
                    p.fill_(1.0 if name == "weight" else 0.0)
            else:
                raise TypeError(
                    f"init_parameters cannot initialise a {type(module).__name__} (it knows Linear, Conv1d/2d/3d, "
                    "LayerNorm, GroupNorm); initialise it from a torch.Generator yourself."
                )
    return model


def _materialise(build: _M, generator: torch.Generator, dtype: torch.dtype) -> _M:
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {generator!r}.")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}.")
    model = build.to_empty(device=generator.device).to(dtype)
    init_parameters(model, generator=generator)
    return model


def logistic_regression(
    n_features: int, n_classes: int = 2, *, generator: torch.Generator, dtype: torch.dtype = torch.float32
) -> nn.Module:
    """Multinomial logistic regression: one ``nn.Linear(n_features, n_classes)`` producing logits.

    Parameters
    ----------
    n_features : int
        Input dimension, ``>= 1``.
    n_classes : int, default=2
        Number of classes, ``>= 2``; use it with the cross-entropy loss (two classes give binary logistic
        regression in its over-parametrised softmax form).
    generator : torch.Generator
        Source of the initial weights; the model lives on its device.
    dtype : torch.dtype, default=torch.float32

    Returns
    -------
    nn.Module
    """
    d = check_int("n_features", n_features, low=1)
    k = check_int("n_classes", n_classes, low=2)
    with torch.device("meta"):
        build = nn.Linear(d, k)
    return _materialise(build, generator, dtype)


def mlp(
    sizes: Sequence[int], *, generator: torch.Generator, activation: str = "relu", dtype: torch.dtype = torch.float32
) -> nn.Sequential:
    """A fully connected network ``sizes[0] → sizes[1] → … → sizes[-1]`` with an activation between layers.

    Parameters
    ----------
    sizes : sequence of int
        Layer widths, input first, at least two entries, each ``>= 1``; e.g. ``(108, 256, 256, 2)``.
    generator : torch.Generator
        Source of the initial weights; the model lives on its device.
    activation : {"relu", "tanh", "elu", "gelu"}, default="relu"
    dtype : torch.dtype, default=torch.float32

    Returns
    -------
    nn.Sequential
        ``Linear, act, Linear, act, …, Linear`` (no activation after the last layer: it outputs logits).
    """
    widths = [check_int(f"sizes[{i}]", s, low=1) for i, s in enumerate(sizes)]
    if len(widths) < 2:
        raise ValueError(f"sizes must hold at least two widths (input and output), got {list(sizes)!r}.")
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}.")
    layers: list[nn.Module] = []
    with torch.device("meta"):
        for i, (a, b) in enumerate(itertools.pairwise(widths)):
            if i > 0:
                layers.append(_ACTIVATIONS[activation]())
            layers.append(nn.Linear(a, b))
        build = nn.Sequential(*layers)
    return _materialise(build, generator, dtype)


class _AsImage(nn.Module):
    """View a batch of flat rows as images of shape ``shape`` (C, H, W); images pass unchanged."""

    def __init__(self, shape: tuple[int, int, int]) -> None:
        super().__init__()
        self.shape = shape

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(x.shape[0], *self.shape)


def conv_net(
    image: Sequence[int],
    n_classes: int,
    *,
    generator: torch.Generator,
    channels: tuple[int, int] = (16, 32),
    activation: str = "tanh",
    dtype: torch.dtype = torch.float32,
) -> nn.Sequential:
    """A small CNN for images of shape ``image`` = (C, H, W) given as flat rows of C·H·W values, or as images.

    ``Conv2d(C, c1, 3, padding=1) → act → MaxPool(2) → Conv2d(c1, c2, 3, padding=1) → act → MaxPool(2) → Flatten →
    Linear(c2·⌊H/4⌋·⌊W/4⌋, n_classes)``.

    Parameters
    ----------
    image : sequence of three ints
        (channels, height, width); height and width at least 4.
    n_classes : int
        Outputs (logits), at least 2.
    generator : torch.Generator
        Source of the initial weights; the model lives on its device.
    channels : tuple of two ints, default=(16, 32)
    activation : {"relu", "tanh", "elu", "gelu"}, default="tanh"
    dtype : torch.dtype, default=torch.float32

    Returns
    -------
    nn.Sequential
    """
    shape = check_image(image)
    k = check_int("n_classes", n_classes, low=2)
    c1, c2 = check_channels(channels)
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}.")
    act = _ACTIVATIONS[activation]
    with torch.device("meta"):
        build = nn.Sequential(
            _AsImage(shape),
            nn.Conv2d(shape[0], c1, 3, padding=1),
            act(),
            nn.MaxPool2d(2),
            nn.Conv2d(c1, c2, 3, padding=1),
            act(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(c2 * (shape[1] // 4) * (shape[2] // 4), k),
        )
    return _materialise(build, generator, dtype)


def digits_cnn(
    *,
    generator: torch.Generator,
    channels: tuple[int, int] = (16, 32),
    activation: str = "tanh",
    dtype: torch.dtype = torch.float32,
) -> nn.Sequential:
    """A small CNN for sklearn's 8×8 digits (10 classes): :func:`conv_net` of (1, 8, 8).

    ``Conv2d(1, c1, 3, padding=1) → act → MaxPool(2) → Conv2d(c1, c2, 3, padding=1) → act → MaxPool(2) → Flatten →
    Linear(4·c2, 10)``.  Input: rows of 64 pixels (as ``load_digits().data``, scale them first, e.g. ÷ 16) or
    images of shape (n, 1, 8, 8).

    Parameters
    ----------
    generator : torch.Generator
        Source of the initial weights; the model lives on its device.
    channels : tuple of two ints, default=(16, 32)
    activation : {"relu", "tanh", "elu", "gelu"}, default="tanh"
        Bounded activations tend to train better under DP-SGD (Papernot et al. 2021, arXiv:2007.14191).
    dtype : torch.dtype, default=torch.float32

    Returns
    -------
    nn.Sequential
    """
    return conv_net((1, 8, 8), 10, generator=generator, channels=channels, activation=activation, dtype=dtype)
