"""A layer used twice in one forward pass (weight sharing) on every per-example path: the engine's single model
(``train``), its K-model ensemble (``train_ensemble``: ``vmap`` and the Linear-chain fast path) and Opacus's hooks
(``opacus-whitebox``).  Each example's gradient must be the sum of the layer's calls, clipped as one vector: checked
against autograd on each example alone, with a model whose two uses largely cancel, where clipping each use on its
own or keeping one use gives other norms (checked too)."""

from __future__ import annotations

import copy
import warnings

import pytest

torch = pytest.importorskip("torch")

from torch import Tensor, nn  # noqa: E402

from privgame.mechanisms.dpsgd.clipping import GhostClipper, cross_entropy, trainable_parameters  # noqa: E402
from privgame.mechanisms.dpsgd.devices import make_generator  # noqa: E402
from privgame.mechanisms.dpsgd.sgd import DPSGDConfig, train, train_ensemble  # noqa: E402
from privgame.mechanisms.dpsgd.user_model import ModelFactory, ModelNotice, check_model  # noqa: E402

F64 = torch.float64
TWICE = "torch_factories:linear_twice"  # head(lin(relu(lin(x))))
CANCELLING = "torch_factories:linear_twice_cancelling"  # head(lin(x) - 0.8 lin(x + 0.3 tanh(x)))
SEQUENTIAL = "torch_factories:sequential_twice"  # nn.Sequential(lin, Tanh, lin, head): one lin object twice
NORM = "torch_factories:norm_twice"  # head(norm(tanh(lin(norm(x))))): a LayerNorm (the per-example path) twice
SHARED = [TWICE, CANCELLING, SEQUENTIAL, NORM]
D, CLASSES, N = 5, 3, 8


def _build(path: str, seed: int, dtype: torch.dtype = F64) -> nn.Module:
    return ModelFactory(path).build((D,), CLASSES, generator=make_generator(seed, "cpu"), dtype=dtype)


def _data(seed: int = 0) -> tuple[Tensor, Tensor]:
    g = make_generator(seed, "cpu")
    return torch.randn(N, D, generator=g, dtype=F64), torch.randint(0, CLASSES, (N,), generator=g)


def _per_example(model: nn.Module, x: Tensor, y: Tensor) -> list[list[Tensor]]:
    """Reference: each example's gradient by autograd on that example alone (a batch of one)."""
    params = [p for _, p in trainable_parameters(model)]
    return [list(torch.autograd.grad(cross_entropy(model(x[i : i + 1]), y[i : i + 1]).sum(), params)) for i in range(N)]


def _norms(grads: list[list[Tensor]]) -> Tensor:
    return torch.stack([torch.sqrt(sum((g * g).sum() for g in example)) for example in grads])


def _clipped_sum(grads: list[list[Tensor]], factors: Tensor) -> list[Tensor]:
    return [sum(f * example[j] for f, example in zip(factors, grads, strict=True)) for j in range(len(grads[0]))]


def _median_norm(path: str, x: Tensor, y: Tensor, seed: int = 0) -> float:
    """A clipping norm that clips about half of the examples (both branches of the factor are exercised)."""
    return float(_norms(_per_example(_build(path, seed), x, y)).median())


def _one_step_config(clip_norm: float) -> DPSGDConfig:
    """q = 1, σ = 0, learning rate 1: the step is θ − (clipped sum) / N exactly."""
    return DPSGDConfig(
        sampling_rate=1.0, noise_multiplier=0.0, clip_norm=clip_norm, steps=1, learning_rate=1.0, device="cpu"
    )


def _engine_reference(model: nn.Module, x: Tensor, y: Tensor, clip_norm: float) -> list[Tensor]:
    grads = _per_example(model, x, y)
    return [s / N for s in _clipped_sum(grads, (clip_norm / _norms(grads)).clamp(max=1.0))]


def _flat_params(model: nn.Module) -> list[Tensor]:
    return [p.detach().clone() for _, p in trainable_parameters(model)]


# ------------------------------------------------------------------------------------------- the contract accepts it
@pytest.mark.parametrize("path", SHARED)
def test_a_layer_used_twice_is_accepted_and_counted_once(path):
    check_model.cache_clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        size = check_model(path, (D,), CLASSES)
    assert size == (D * D + D) + (D * CLASSES + CLASSES) + (2 * D if path == NORM else 0)
    notices = [str(w.message) for w in caught if issubclass(w.category, ModelNotice)]
    # Linear keeps its closed form when used twice; the LayerNorm is noticed once, as any layer on that path
    assert len(notices) == (1 if path == NORM else 0)
    assert all("norm (LayerNorm) take the per-example path" in n for n in notices)


def test_one_parameter_in_two_modules_is_refused_in_one_line():
    check_model.cache_clear()
    with pytest.raises(ValueError, match=r"cannot be clipped per example: model must not share a parameter") as info:
        check_model("torch_factories:tied", (D,), CLASSES)
    assert "\n" not in str(info.value) and "b.weight shared with a.weight" in str(info.value)


# ------------------------------------------------------------------------- the comparison tells the wrong methods apart
def _uses_of(model: nn.Module, layer: nn.Linear, x: Tensor, y: Tensor) -> list[list[tuple[Tensor, Tensor]]]:
    """Per example, the (weight, bias) gradient of each call of ``layer`` alone: g_t a_tᵀ and g_t, with g_t the
    loss's gradient with respect to call t's output."""
    out = []
    for i in range(N):
        calls: list[tuple[Tensor, Tensor]] = []
        handle = layer.register_forward_hook(lambda _m, args, output, calls=calls: calls.append((args[0], output)))
        try:
            loss = cross_entropy(model(x[i : i + 1]), y[i : i + 1]).sum()
        finally:
            handle.remove()
        grads = torch.autograd.grad(loss, [output for _, output in calls])
        out.append([(g[0].outer(a[0]), g[0]) for (a, _), g in zip(calls, grads, strict=True)])
    return out


def test_the_two_uses_cancel_so_per_use_norms_or_one_use_would_fail_the_reference():
    model = _build(CANCELLING, 0)
    x, y = _data()
    grads = _per_example(model, x, y)
    uses = _uses_of(model, model.lin, x, y)
    head2 = torch.stack([sum((g * g).sum() for g in example[2:]) for example in grads])  # head.weight, head.bias
    for i, example in enumerate(uses):  # the uses add up to the example's gradient of lin
        assert len(example) == 2
        torch.testing.assert_close(example[0][0] + example[1][0], grads[i][0], rtol=0, atol=1e-12)
        torch.testing.assert_close(example[0][1] + example[1][1], grads[i][1], rtol=0, atol=1e-12)
    lin2 = torch.stack([(example[0] ** 2).sum() + (example[1] ** 2).sum() for example in grads])
    wrong = {
        "per-use norms": torch.stack([sum((w * w).sum() + (b * b).sum() for w, b in example) for example in uses]),
        "first use": torch.stack([(example[0][0] ** 2).sum() + (example[0][1] ** 2).sum() for example in uses]),
        "second use": torch.stack([(example[1][0] ** 2).sum() + (example[1][1] ** 2).sum() for example in uses]),
    }
    right = _norms(grads)
    for method, lin_term in wrong.items():  # lin's term at least 1.8² times the right one, so the norms differ
        assert torch.all(lin_term > 3.0 * lin2), method
        assert torch.all(torch.sqrt(head2 + lin_term) > (1 + 1e-3) * right), method
    with GhostClipper(model) as clipper:
        _, norms = clipper.clip(x, y, cross_entropy, 1.0)
    torch.testing.assert_close(norms, right, rtol=1e-10, atol=0)


# ---------------------------------------------------------------------------------------------- the engine, one model
@pytest.mark.parametrize("path", SHARED)
def test_single_model_step_equals_the_naive_clipped_step(path):
    x, y = _data()
    clip_norm = _median_norm(path, x, y)
    model = _build(path, 0)
    with GhostClipper(model) as clipper:
        _, norms = clipper.clip(x, y, cross_entropy, clip_norm)
    torch.testing.assert_close(norms, _norms(_per_example(model, x, y)), rtol=1e-10, atol=0)
    before, want = _flat_params(model), _engine_reference(model, x, y, clip_norm)
    train(model, x, y, _one_step_config(clip_norm), generator=make_generator(1, "cpu"))
    for b, a, w in zip(before, _flat_params(model), want, strict=True):
        torch.testing.assert_close(b - a, w, rtol=1e-9, atol=1e-12)


# -------------------------------------------------------------------------------------------- the engine, K models
@pytest.mark.parametrize("dtype", [F64, torch.float32])
@pytest.mark.parametrize("path", SHARED)
def test_ensemble_step_equals_each_models_naive_clipped_step(path, dtype):
    x, y = _data()
    clip_norm = _median_norm(path, x, y)
    models = [_build(path, seed, dtype) for seed in range(3)]
    with GhostClipper(models[0]) as clipper:  # the Sequential takes the batched-matmul chain, the others vmap
        assert (clipper._chain is not None) == (path == SEQUENTIAL)
    before = [_flat_params(m) for m in models]
    wants = [_engine_reference(_build(path, seed), x, y, clip_norm) for seed in range(3)]  # in float64
    gens = [make_generator(10 + k, "cpu") for k in range(3)]
    train_ensemble(models, x, y, _one_step_config(clip_norm), generators=gens)
    tol = {"rtol": 1e-9, "atol": 1e-12} if dtype == F64 else {"rtol": 1e-4, "atol": 1e-5}
    for model, b, want in zip(models, before, wants, strict=True):
        for p0, p1, w in zip(b, _flat_params(model), want, strict=True):
            torch.testing.assert_close((p0 - p1).to(F64), w, **tol)


# ------------------------------------------------------------------------------------------------------------ Opacus
@pytest.mark.parametrize("path", SHARED)
def test_opacus_per_sample_gradients_and_clipped_sum_equal_the_naive_loop(path):
    """Through ``PrivacyEngine.make_private`` as ``opacus-whitebox`` calls it (Poisson sampling, here at rate 1,
    mean loss): Opacus's ``grad_sample`` of each parameter is each example's own gradient (both calls summed), and
    the clipped sum its ``add_noise`` sees is the naive sum with Opacus's factor min(1, C / (‖g‖ + 10⁻⁶))."""
    opacus = pytest.importorskip("opacus")
    x, y = _data()
    clip_norm = _median_norm(path, x, y)
    model = _build(path, 0)
    grads = _per_example(copy.deepcopy(model), x, y)
    want_sums = _clipped_sum(grads, (clip_norm / (_norms(grads) + 1e-6)).clamp(max=1.0))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=N)  # Opacus's rate: 1
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Secure RNG turned off")
        engine = opacus.PrivacyEngine(accountant="rdp", secure_mode=False)
    private, optimizer, dp_loader = engine.make_private(
        module=model,
        optimizer=torch.optim.SGD(model.parameters(), lr=1.0),
        data_loader=loader,
        noise_multiplier=0.0,
        max_grad_norm=clip_norm,
        poisson_sampling=True,
        noise_generator=make_generator(2, "cpu"),
    )
    seen: list[Tensor] = []
    noise = optimizer.add_noise

    def add_noise() -> None:
        seen.extend(p.summed_grad.clone() for p in optimizer.params)
        noise()

    optimizer.add_noise = add_noise
    xb, yb = next(iter(dp_loader))
    assert torch.equal(xb, x) and torch.equal(yb, y)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        nn.CrossEntropyLoss()(private(xb), yb).backward()
    optimizer.step()
    for j, p in enumerate(optimizer.params):
        assert isinstance(p.grad_sample, Tensor)  # one tensor: the two calls summed, not stacked as more examples
        torch.testing.assert_close(p.grad_sample, torch.stack([g[j] for g in grads]), rtol=1e-9, atol=1e-12)
    assert len(seen) == len(want_sums)
    for got, want in zip(seen, want_sums, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-12)
