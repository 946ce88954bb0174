"""Tests of privgame.mechanisms.dpsgd.clipping: clipped sums and per-example norms against a naive per-example loop."""

from __future__ import annotations

from collections.abc import Callable

import pytest

torch = pytest.importorskip("torch")

from torch import Tensor, nn  # noqa: E402

from privgame.mechanisms.dpsgd.clipping import (  # noqa: E402
    GhostClipper,
    clipped_gradient_sum,
    cross_entropy,
    trainable_parameters,
)
from privgame.mechanisms.dpsgd.models import digits_cnn, init_parameters, logistic_regression, mlp  # noqa: E402

F64 = torch.float64
TOL = 1e-10


def naive_clipped_sum(
    model: nn.Module, loss_fn: Callable[[Tensor, Tensor], Tensor], x: Tensor, y: Tensor, clip_norm: float
) -> tuple[list[Tensor], Tensor]:
    """Reference: autograd on each example alone, clip by min(1, C/‖g‖), add up."""
    params = [p for _, p in trainable_parameters(model)]
    sums = [torch.zeros_like(p) for p in params]
    norms = []
    for i in range(x.shape[0]):
        loss = loss_fn(model(x[i : i + 1]), y[i : i + 1]).sum()
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        grads = [torch.zeros_like(p) if g is None else g for g, p in zip(grads, params, strict=True)]
        norm = torch.sqrt(sum((g * g).sum() for g in grads))
        norms.append(norm)
        factor = min(1.0, clip_norm / norm.item()) if norm.item() > 0 else 1.0
        for total, g in zip(sums, grads, strict=True):
            total += factor * g
    return sums, torch.stack(norms)


class ElementwiseScale(nn.Module):
    """A custom layer with a parameter (x · w): no closed form, goes through the torch.func fallback."""

    def __init__(self, width: int, generator: torch.Generator) -> None:
        super().__init__()
        self.w = nn.Parameter(1.0 + 0.3 * torch.randn(width, generator=generator, dtype=F64))

    def forward(self, x: Tensor) -> Tensor:
        return x * self.w


class TwiceApplied(nn.Module):
    """One square Linear and one LayerNorm each used twice in a forward pass (weight sharing across calls)."""

    def __init__(self, generator: torch.Generator) -> None:
        super().__init__()
        self.inp = mlp([6, 5], generator=generator, dtype=F64)
        self.square = mlp([5, 5], generator=generator, dtype=F64)
        self.norm = nn.LayerNorm(5).double()
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.2 * torch.randn(5, generator=generator, dtype=F64))
        self.out = mlp([5, 3], generator=generator, dtype=F64)

    def forward(self, x: Tensor) -> Tensor:
        h = torch.tanh(self.norm(self.square(self.inp(x))))
        h = torch.tanh(self.norm(self.square(h)))
        return self.out(h)


class SequenceModel(nn.Module):
    """Linear layers on (B, T, d) inputs: per-example gradients sum over T positions."""

    def __init__(self, generator: torch.Generator) -> None:
        super().__init__()
        self.a = mlp([8, 8], generator=generator, dtype=F64)  # T = 3: T(8 + 8) < 64, Gram trick
        self.b = mlp([8, 2], generator=generator, dtype=F64)  # T = 3: T(8 + 2) > 16, materialised

    def forward(self, x: Tensor) -> Tensor:
        return self.b(torch.tanh(self.a(x.reshape(x.shape[0], 3, 8)))).sum(1)


def _case(name: str, seed: int = 0) -> tuple[nn.Module, Tensor, Tensor]:
    g = torch.Generator().manual_seed(seed)
    n = 9
    if name == "logistic":
        model: nn.Module = logistic_regression(7, 3, generator=g, dtype=F64)
        x = torch.randn(n, 7, generator=g, dtype=F64)
        y = torch.randint(0, 3, (n,), generator=g)
    elif name == "mlp":
        model = mlp([7, 16, 12, 3], generator=g, dtype=F64)
        x = torch.randn(n, 7, generator=g, dtype=F64)
        y = torch.randint(0, 3, (n,), generator=g)
    elif name == "cnn":
        model = digits_cnn(generator=g, channels=(4, 6), dtype=F64)
        x = torch.rand(n, 64, generator=g, dtype=F64)
        y = torch.randint(0, 10, (n,), generator=g)
    elif name == "fallback":
        model = nn.Sequential(
            mlp([7, 10], generator=g, dtype=F64),
            nn.LayerNorm(10).double(),
            nn.ReLU(inplace=True),
            ElementwiseScale(10, g),
            mlp([10, 3], generator=g, dtype=F64),
        )
        with torch.no_grad():
            model[1].weight.copy_(1.0 + 0.2 * torch.randn(10, generator=g, dtype=F64))
            model[1].bias.copy_(0.1 * torch.randn(10, generator=g, dtype=F64))
        x = torch.randn(n, 7, generator=g, dtype=F64)
        y = torch.randint(0, 3, (n,), generator=g)
    elif name == "shared":
        model = TwiceApplied(g)
        x = torch.randn(n, 6, generator=g, dtype=F64)
        y = torch.randint(0, 3, (n,), generator=g)
    elif name == "convs":
        model = nn.Sequential(
            nn.Unflatten(1, (2, 6, 6)),
            nn.Conv2d(2, 3, 3, stride=2, padding=1, bias=False),  # unfold path, strided, no bias
            nn.Tanh(),
            nn.Conv2d(3, 4, 2, dilation=1, padding="valid"),  # string padding: generic path
            nn.Tanh(),
            nn.Conv2d(4, 4, 1, groups=2),  # grouped: generic path
            nn.Flatten(2),
            nn.Conv1d(4, 2, 2),  # generic path
            nn.Flatten(),
            nn.Linear(6, 3),
        ).double()
        init_parameters(model, generator=g)
        x = torch.randn(n, 72, generator=g, dtype=F64)
        y = torch.randint(0, 3, (n,), generator=g)
    elif name == "embedding":
        model = nn.Sequential(nn.Embedding(11, 4), nn.Flatten(), nn.Tanh(), nn.Linear(12, 3)).double()
        with torch.no_grad():
            model[0].weight.copy_(torch.randn(11, 4, generator=g, dtype=F64))
        init_parameters(model[3], generator=g)
        x = torch.randint(0, 11, (n, 3), generator=g)
        y = torch.randint(0, 3, (n,), generator=g)
    elif name == "sequence":
        model = SequenceModel(g)
        x = torch.randn(n, 24, generator=g, dtype=F64)
        y = torch.randint(0, 2, (n,), generator=g)
    else:
        raise AssertionError(name)
    return model, x, y


CASES = ["logistic", "mlp", "cnn", "fallback", "shared", "sequence", "convs", "embedding"]


def _scale_of_norms(model: nn.Module, x: Tensor, y: Tensor) -> Tensor:
    return naive_clipped_sum(model, cross_entropy, x, y, 1.0)[1]


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("regime", ["all-clipped", "some-clipped", "none-clipped"])
def test_clipped_sum_and_norms_equal_naive_loop(name: str, regime: str) -> None:
    model, x, y = _case(name)
    norms_ref = _scale_of_norms(model, x, y)
    # choose C so that all, about half, or no examples are clipped
    clip_norm = {
        "all-clipped": 0.5 * norms_ref.min().item(),
        "some-clipped": norms_ref.median().item(),
        "none-clipped": 2.0 * norms_ref.max().item(),
    }[regime]
    sums, norms = clipped_gradient_sum(model, cross_entropy, x, y, clip_norm)
    ref_sums, ref_norms = naive_clipped_sum(model, cross_entropy, x, y, clip_norm)
    assert norms.shape == (x.shape[0],)
    torch.testing.assert_close(norms, ref_norms, rtol=0, atol=TOL)
    assert len(sums) == len(ref_sums) == len(trainable_parameters(model))
    for got, want, (pname, p) in zip(sums, ref_sums, trainable_parameters(model), strict=True):
        assert got.shape == p.shape, pname
        torch.testing.assert_close(got, want, rtol=0, atol=TOL, msg=pname)


def test_norms_are_not_all_equal_so_the_comparison_has_teeth() -> None:
    for name in CASES:
        model, x, y = _case(name)
        norms = _scale_of_norms(model, x, y)
        assert norms.max() > 1.05 * norms.min(), name


def test_digits_cnn_uses_both_conv_norm_methods_and_matches_on_real_digits() -> None:
    datasets = pytest.importorskip("sklearn.datasets")
    data = datasets.load_digits()
    x = torch.as_tensor(data.data[:12] / 16.0, dtype=F64)
    y = torch.as_tensor(data.target[:12])
    model = digits_cnn(generator=torch.Generator().manual_seed(3), dtype=F64)
    sums, norms = clipped_gradient_sum(model, cross_entropy, x, y, 0.1)
    ref_sums, ref_norms = naive_clipped_sum(model, cross_entropy, x, y, 0.1)
    torch.testing.assert_close(norms, ref_norms, rtol=0, atol=TOL)
    for got, want in zip(sums, ref_sums, strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=TOL)
    with GhostClipper(model) as clipper:
        assert [layer.kind for layer in clipper.layers] == ["conv2d", "conv2d", "linear"]


def test_fallback_layers_take_the_generic_path() -> None:
    model, _, _ = _case("fallback")
    with GhostClipper(model) as clipper:
        assert [layer.kind for layer in clipper.layers] == ["linear", "generic", "generic", "linear"]


def test_convolutions_take_the_documented_paths() -> None:
    model, _, _ = _case("convs")
    with GhostClipper(model) as clipper:
        assert [layer.kind for layer in clipper.layers] == ["conv2d", "generic", "generic", "generic", "linear"]


def test_weights_multiply_each_clipped_gradient() -> None:
    model, x, y = _case("mlp")
    w = torch.tensor([1, 0, 1, 1, 0, 0, 1, 1, 1], dtype=F64)
    sums, _ = clipped_gradient_sum(model, cross_entropy, x, y, 0.3, weights=w)
    keep = w.bool()
    ref, _ = naive_clipped_sum(model, cross_entropy, x[keep], y[keep], 0.3)
    for got, want in zip(sums, ref, strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=TOL)


def test_empty_batch_gives_zero_sums_and_no_norms() -> None:
    model, x, y = _case("mlp")
    sums, norms = clipped_gradient_sum(model, cross_entropy, x[:0], y[:0], 1.0)
    assert norms.shape == (0,)
    for s, (_, p) in zip(sums, trainable_parameters(model), strict=True):
        assert s.shape == p.shape and torch.count_nonzero(s) == 0


def test_frozen_parameters_are_left_out_and_nothing_is_written_to_the_model() -> None:
    model, x, y = _case("mlp")
    model[0].bias.requires_grad_(False)
    before = [p.detach().clone() for p in model.parameters()]
    sums, norms = clipped_gradient_sum(model, cross_entropy, x, y, 0.2)
    ref_sums, ref_norms = naive_clipped_sum(model, cross_entropy, x, y, 0.2)
    assert len(sums) == len(list(model.parameters())) - 1
    torch.testing.assert_close(norms, ref_norms, rtol=0, atol=TOL)
    for got, want in zip(sums, ref_sums, strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=TOL)
    for p, b in zip(model.parameters(), before, strict=True):
        assert torch.equal(p, b) and p.grad is None
    assert not any(m._forward_hooks for m in model.modules())  # hooks removed


def test_float32_agrees_with_float64() -> None:
    model, x, y = _case("mlp")
    sums64, norms64 = clipped_gradient_sum(model, cross_entropy, x, y, 0.3)
    model32 = model.float()
    sums32, norms32 = clipped_gradient_sum(model32, cross_entropy, x.float(), y, 0.3)
    torch.testing.assert_close(norms32.double(), norms64, rtol=1e-5, atol=1e-6)
    for a, b in zip(sums32, sums64, strict=True):
        torch.testing.assert_close(a.double(), b, rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------- refusals


def test_batch_norm_in_training_mode_is_refused() -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    with pytest.raises(ValueError, match=r"^model must not mix examples of a batch, got BatchNorm1d"):
        clipped_gradient_sum(model, cross_entropy, torch.randn(4, 3), torch.zeros(4, dtype=torch.long), 1.0)


def test_dropout_in_training_mode_is_refused() -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5), nn.Linear(4, 2))
    with pytest.raises(ValueError, match=r"^model must be deterministic, got Dropout"):
        clipped_gradient_sum(model, cross_entropy, torch.randn(4, 3), torch.zeros(4, dtype=torch.long), 1.0)


def test_parameter_shared_between_modules_is_refused() -> None:
    a, b = nn.Linear(3, 3), nn.Linear(3, 2)
    c = nn.Linear(3, 3)
    c.weight = a.weight
    model = nn.Sequential(a, c, b)
    with pytest.raises(ValueError, match=r"^model must not share a parameter between modules"):
        clipped_gradient_sum(model, cross_entropy, torch.randn(4, 3), torch.zeros(4, dtype=torch.long), 1.0)


def test_reduced_loss_is_refused() -> None:
    model, x, y = _case("mlp")

    def mean_loss(out: Tensor, target: Tensor) -> Tensor:
        return cross_entropy(out, target).mean()

    with pytest.raises(ValueError, match=r"^loss_fn must return one loss per example"):
        clipped_gradient_sum(model, mean_loss, x, y, 1.0)


def test_in_place_change_of_a_recorded_input_is_refused() -> None:
    class Bad(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Linear(3, 3), nn.Linear(3, 2)

        def forward(self, x: Tensor) -> Tensor:
            h = torch.tanh(self.a(x))
            out = self.b(h)
            h.mul_(2.0)
            return out

    with pytest.raises(RuntimeError, match="modified in place"):
        clipped_gradient_sum(Bad(), cross_entropy, torch.randn(4, 3), torch.zeros(4, dtype=torch.long), 1.0)


@pytest.mark.parametrize("where", ["after a Linear", "on a layer's output inside a module"])
def test_an_output_changed_in_place_switches_to_probes_and_the_sums_stay_exact(where: str) -> None:
    """A single model takes each hooked layer's output gradient from the output itself (no probe); an output
    modified in place after its layer returned it (a ReLU(inplace=True) right after a Linear) holds another value,
    so the clipper gives that mode up for good and recomputes the step with probes: the sums still equal the naive
    loop's, on that step and the next."""
    g = torch.Generator().manual_seed(5)

    class InPlace(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = mlp([5, 7], generator=g, dtype=F64), mlp([7, 3], generator=g, dtype=F64)

        def forward(self, x: Tensor) -> Tensor:
            h = self.a(x)
            h.clamp_(min=0.0)
            return self.b(h)

    model: nn.Module = (
        nn.Sequential(nn.Linear(5, 7), nn.ReLU(inplace=True), nn.Linear(7, 3)).double()
        if where == "after a Linear"
        else InPlace()
    )
    init_parameters(model, generator=g)
    x, y = torch.randn(9, 5, generator=g, dtype=F64), torch.randint(0, 3, (9,), generator=g)
    ref_sums, ref_norms = naive_clipped_sum(model, cross_entropy, x, y, 0.3)
    with GhostClipper(model) as clipper:
        assert clipper._outputs_safe
        for _ in range(2):
            sums, norms = clipper.clip(x, y, cross_entropy, 0.3)
            torch.testing.assert_close(norms, ref_norms, rtol=0, atol=TOL)
            for got, want in zip(sums, ref_sums, strict=True):
                torch.testing.assert_close(got, want, rtol=0, atol=TOL)
            assert not clipper._outputs_safe


def test_a_model_without_in_place_changes_keeps_the_outputs_mode() -> None:
    model, x, y = _case("mlp")
    with GhostClipper(model) as clipper:
        clipper.clip(x, y, cross_entropy, 0.5)
        assert clipper._outputs_safe and clipper._calls == []


@pytest.mark.parametrize("clip_norm", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_clip_norm_is_refused(clip_norm: float) -> None:
    model, x, y = _case("logistic")
    with pytest.raises(ValueError, match=r"^clip_norm must be"):
        clipped_gradient_sum(model, cross_entropy, x, y, clip_norm)


def _stack(models: list[nn.Module]) -> dict[str, Tensor]:
    names = [n for n, _ in trainable_parameters(models[0])]
    return {n: torch.stack([dict(m.named_parameters())[n].detach() for m in models]) for n in names}


@pytest.mark.parametrize("activation", ["relu", "tanh", "gelu"])
@pytest.mark.parametrize("build", ["mlp", "logistic"])
def test_linear_chain_fast_path_equals_the_vmap_path(activation: str, build: str) -> None:
    """Plain Linear/activation chains take batched matmuls instead of vmap; both give the same sums (1e-10)."""
    gens = [torch.Generator().manual_seed(s) for s in range(3)]
    if build == "mlp":
        models = [mlp((5, 7, 6, 3), generator=g, activation=activation, dtype=F64) for g in gens]
    else:
        models = [logistic_regression(5, 3, generator=g, dtype=F64) for g in gens]
    g = torch.Generator().manual_seed(9)
    x = torch.randn(3, 8, 5, generator=g, dtype=F64) * 3
    y = torch.randint(0, 3, (3, 8), generator=g)
    weights = (torch.arange(8) < torch.tensor([[8], [5], [1]])).to(F64)
    with GhostClipper(models[0]) as clipper:
        assert clipper._chain is not None
        clipper.discover(x[0])
        fast, _ = clipper.clip_ensemble(_stack(models), x, y, cross_entropy, 0.5, weights)
        clipper._chain = None  # force the general vmap path
        slow, _ = clipper.clip_ensemble(_stack(models), x, y, cross_entropy, 0.5, weights)
    for a, b in zip(fast, slow, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=TOL)
    assert any(float(a.abs().max()) > 0 for a in fast)


def test_only_plain_linear_chains_take_the_fast_path() -> None:
    g = torch.Generator().manual_seed(0)

    class MySequential(nn.Sequential):
        pass

    frozen = mlp((4, 3, 2), generator=g, dtype=F64)
    frozen[0].bias.requires_grad_(False)
    cases = {
        "mlp": (mlp((4, 3, 2), generator=g, dtype=F64), True),
        "linear": (logistic_regression(4, 2, generator=g, dtype=F64), True),
        "in-place activation": (nn.Sequential(nn.ReLU(inplace=True), nn.Linear(4, 2).double()), False),
        "subclass": (MySequential(nn.Linear(4, 2).double()), False),
        "layer norm": (nn.Sequential(nn.Linear(4, 3).double(), nn.LayerNorm(3).double()), False),
        "frozen bias": (frozen, False),
        "cnn": (digits_cnn(generator=g, channels=(2, 2), dtype=F64), False),
    }
    for name, (model, fast) in cases.items():
        with GhostClipper(model) as clipper:
            assert (clipper._chain is not None) == fast, name
