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


class _LinearTwice(nn.Module):
    """One square Linear applied twice: ``head(lin(relu(lin(x))))`` (weight sharing across calls)."""

    def __init__(self, d: int, n_classes: int, generator: torch.Generator) -> None:
        super().__init__()
        self.lin = init_parameters(nn.Linear(d, d), generator=generator)
        self.head = init_parameters(nn.Linear(d, n_classes), generator=generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.lin(torch.relu(self.lin(x))))


def linear_twice(input_shape: tuple[int, ...], n_classes: int, *, generator: torch.Generator) -> nn.Module:
    """``head(lin(relu(lin(x))))`` with one square ``lin``: a layer used twice in the forward pass."""
    return _LinearTwice(input_shape[0], n_classes, generator)


class _Cancelling(nn.Module):
    """``head(lin(x) - 0.8 · lin(x + 0.3 tanh(x)))``: the two uses' gradients of ``lin`` point in nearly opposite
    directions (output gradients G and -0.8 G, inputs x and x + 0.3 tanh(x)), so they largely cancel: per
    coordinate the sum is at most 0.44 |x_j| |G| (0.2 |G| for the bias), the second use alone at least 0.8 |x_j| |G|
    (0.8 |G|), the first alone |x_j| |G| (|G|)."""

    def __init__(self, d: int, n_classes: int, generator: torch.Generator) -> None:
        super().__init__()
        self.lin = init_parameters(nn.Linear(d, d), generator=generator)
        self.head = init_parameters(nn.Linear(d, n_classes), generator=generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.lin(x) - 0.8 * self.lin(x + 0.3 * torch.tanh(x)))


def linear_twice_cancelling(input_shape: tuple[int, ...], n_classes: int, *, generator: torch.Generator) -> nn.Module:
    """A square ``lin`` used twice whose two gradient contributions partly cancel."""
    return _Cancelling(input_shape[0], n_classes, generator)


def sequential_twice(input_shape: tuple[int, ...], n_classes: int, *, generator: torch.Generator) -> nn.Module:
    """``nn.Sequential(lin, Tanh, lin, head)`` with one ``lin`` object twice: the ensemble's Linear-chain fast path."""
    d = input_shape[0]
    lin = init_parameters(nn.Linear(d, d), generator=generator)
    return nn.Sequential(lin, nn.Tanh(), lin, init_parameters(nn.Linear(d, n_classes), generator=generator))


class _NormTwice(nn.Module):
    """One LayerNorm (no closed form: the per-example path) applied twice: ``head(norm(tanh(lin(norm(x)))))``."""

    def __init__(self, d: int, n_classes: int, generator: torch.Generator) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d)
        with torch.no_grad():  # away from LayerNorm's ones and zeros, so that its gradients are generic
            self.norm.weight.uniform_(0.5, 1.5, generator=generator)
            self.norm.bias.uniform_(-0.5, 0.5, generator=generator)
        self.lin = init_parameters(nn.Linear(d, d), generator=generator)
        self.head = init_parameters(nn.Linear(d, n_classes), generator=generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(torch.tanh(self.lin(self.norm(x)))))


def norm_twice(input_shape: tuple[int, ...], n_classes: int, *, generator: torch.Generator) -> nn.Module:
    """A LayerNorm used twice in the forward pass (weight sharing on the per-example path)."""
    return _NormTwice(input_shape[0], n_classes, generator)


class _Tied(nn.Module):
    """Two Linear modules holding one weight parameter (tied weights): refused by the clipping engine."""

    def __init__(self, d: int, n_classes: int, generator: torch.Generator) -> None:
        super().__init__()
        self.a = init_parameters(nn.Linear(d, d), generator=generator)
        self.b = init_parameters(nn.Linear(d, d), generator=generator)
        self.b.weight = self.a.weight
        self.head = init_parameters(nn.Linear(d, n_classes), generator=generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.b(torch.relu(self.a(x))))


def tied(input_shape: tuple[int, ...], n_classes: int, *, generator: torch.Generator) -> nn.Module:
    """One weight parameter registered in two modules."""
    return _Tied(input_shape[0], n_classes, generator)


def global_rng(input_shape: tuple[int, ...], n_classes: int, *, generator: torch.Generator) -> nn.Module:
    """Ignores the generator: PyTorch's default initialisation from the global RNG."""
    return nn.Linear(input_shape[0], n_classes)


def with_batchnorm(input_shape: tuple[int, ...], n_classes: int, *, generator: torch.Generator) -> nn.Module:
    """Mixes the examples of a batch."""
    model = nn.Sequential(nn.Linear(input_shape[0], 4), nn.BatchNorm1d(4), nn.Linear(4, n_classes))
    init_parameters(model[0], generator=generator)
    init_parameters(model[2], generator=generator)
    return model


class _Attending(nn.Module):
    """Self-attention over the features as a sequence of one: nn.MultiheadAttention returns a tuple."""

    def __init__(self, d: int, n_classes: int, generator: torch.Generator) -> None:
        super().__init__()
        self.embed = init_parameters(nn.Linear(d, 8), generator=generator)
        self.attention = nn.MultiheadAttention(8, 2, batch_first=True)
        with torch.no_grad():
            self.attention.in_proj_weight.uniform_(-0.3, 0.3, generator=generator)
            self.attention.in_proj_bias.zero_()
        init_parameters(self.attention.out_proj, generator=generator)
        self.head = init_parameters(nn.Linear(8, n_classes), generator=generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x).unsqueeze(1)
        out, _ = self.attention(h, h, h)
        return self.head(out.squeeze(1))


def attention(input_shape: tuple[int, ...], n_classes: int, *, generator: torch.Generator) -> nn.Module:
    """A layer whose forward returns a tuple (nn.MultiheadAttention): the clipping's hooks cannot take it."""
    return _Attending(input_shape[0], n_classes, generator)


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
