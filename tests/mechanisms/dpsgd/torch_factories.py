"""Model factories for the user-model tests (imported by path, as a user's plugin module is)."""

from __future__ import annotations

import torch
from torch import nn

from privgame.mechanisms.dpsgd.models import init_parameters


def two_layer_mlp(input_shape: tuple[int, ...], n_classes: int, *, generator: torch.Generator) -> nn.Module:
    """A 2-layer MLP (input → 16 → classes), initialised from the generator."""
    model = nn.Sequential(nn.Linear(input_shape[0], 16), nn.Tanh(), nn.Linear(16, n_classes))
    return init_parameters(model, generator=generator)


def wide_mlp(input_shape: tuple[int, ...], n_classes: int, *, generator: torch.Generator) -> nn.Module:
    """A 2-layer MLP (input → 64 → classes), initialised from the generator."""
    model = nn.Sequential(nn.Linear(input_shape[0], 64), nn.ReLU(), nn.Linear(64, n_classes))
    return init_parameters(model, generator=generator)


class _Gated(nn.Module):
    """A layer the ghost-clipping engine has no closed form for (its own parameters in an elementwise gate)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.gate = nn.Parameter(torch.zeros(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(self.gate)


def gated_mlp(input_shape: tuple[int, ...], n_classes: int, *, generator: torch.Generator) -> nn.Module:
    """An MLP with a custom gated layer (the per-example path) and a LayerNorm."""
    d = input_shape[0]
    model = nn.Sequential(nn.Linear(d, 8), _Gated(8), nn.LayerNorm(8), nn.Linear(8, n_classes))
    for module in (model[0], model[3]):
        init_parameters(module, generator=generator)
    with torch.no_grad():
        model[1].gate.uniform_(-1, 1, generator=generator)
    return model


class _Projected(nn.Module):
    """A fixed random projection (a parameter without a gradient) and a fixed shift (a buffer), both drawn from the
    generator, then a trained linear layer: state that DP-SGD never changes but the release must carry."""

    def __init__(self, d: int, n_classes: int, generator: torch.Generator) -> None:
        super().__init__()
        self.projection = nn.Parameter(torch.randn(d, 12, generator=generator), requires_grad=False)
        self.register_buffer("shift", torch.rand(12, generator=generator))
        self.head = init_parameters(nn.Linear(12, n_classes), generator=generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(x @ self.projection + self.shift))


def projected(input_shape: tuple[int, ...], n_classes: int, *, generator: torch.Generator) -> nn.Module:
    """A frozen random projection to 12 features and a trained linear layer (state beyond the trained weights)."""
    return _Projected(input_shape[0], n_classes, generator)


def global_rng(input_shape: tuple[int, ...], n_classes: int, *, generator: torch.Generator) -> nn.Module:
    """Ignores the generator: PyTorch's default initialisation from the global RNG."""
    return nn.Linear(input_shape[0], n_classes)


def with_batchnorm(input_shape: tuple[int, ...], n_classes: int, *, generator: torch.Generator) -> nn.Module:
    """Mixes the examples of a batch."""
    model = nn.Sequential(nn.Linear(input_shape[0], 4), nn.BatchNorm1d(4), nn.Linear(4, n_classes))
    init_parameters(model[0], generator=generator)
    init_parameters(model[2], generator=generator)
    return model


def wrong_output(input_shape: tuple[int, ...], n_classes: int, *, generator: torch.Generator) -> nn.Module:
    """Logits of the wrong width."""
    return init_parameters(nn.Linear(input_shape[0], n_classes + 1), generator=generator)


def frozen(input_shape: tuple[int, ...], n_classes: int, *, generator: torch.Generator) -> nn.Module:
    """No trainable parameter."""
    model = nn.Linear(input_shape[0], n_classes)
    model.requires_grad_(False)
    return model


def not_a_module(input_shape: tuple[int, ...], n_classes: int, *, generator: torch.Generator) -> object:
    """Returns no Module."""
    return "a string"


def raises(input_shape: tuple[int, ...], n_classes: int, *, generator: torch.Generator) -> nn.Module:
    """The factory's own error."""
    raise RuntimeError("out of\nideas")


NOT_CALLABLE = 3
