"""A user's own PyTorch model for privgame's DP-SGD mechanisms (docs/extending.md, "A PyTorch model").

privgame calls ``factory(input_shape, n_classes, *, generator=...)`` and trains what it returns; every initial
weight is drawn from ``generator``, so one seed gives one model in every process.  The configs name it as
``model = "own_models:two_layer_mlp"`` with ``plugins = ["own_models"]`` (this file sits beside them).
"""

from __future__ import annotations

import math

import torch
from torch import nn


def two_layer_mlp(input_shape: tuple[int, ...], n_classes: int, *, generator: torch.Generator) -> nn.Module:
    """input → 512 → n_classes with a tanh between, PyTorch's default initialisation drawn from ``generator``."""
    model = nn.Sequential(nn.Linear(input_shape[0], 512), nn.Tanh(), nn.Linear(512, n_classes))
    with torch.no_grad():
        for layer in (model[0], model[2]):
            bound = 1.0 / math.sqrt(layer.in_features)  # nn.Linear's reset_parameters, from the generator
            layer.weight.uniform_(-bound, bound, generator=generator)
            layer.bias.uniform_(-bound, bound, generator=generator)
    return model
