"""Tests of privgame.mechanisms.dpsgd.sgd.train: sampling, noise, scaling, the update and reproducibility."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

torch = pytest.importorskip("torch")

from torch import Tensor, nn  # noqa: E402

from privgame.mechanisms.dpsgd.clipping import clipped_gradient_sum, cross_entropy, trainable_parameters  # noqa: E402
from privgame.mechanisms.dpsgd.models import logistic_regression, mlp  # noqa: E402
from privgame.mechanisms.dpsgd.sgd import DPSGDConfig, make_generator, poisson_mask, train  # noqa: E402

F64 = torch.float64


def _data(n: int, d: int, seed: int = 0, classes: int = 2) -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g, dtype=F64), torch.randint(0, classes, (n,), generator=g)


def _zero_loss(output: Tensor, target: Tensor) -> Tensor:
    """A per-example loss whose gradient is exactly zero: the update is the noise alone."""
    return 0.0 * output.sum(1)


def _flat(model: nn.Module) -> Tensor:
    return torch.cat([p.detach().reshape(-1) for _, p in trainable_parameters(model)])


def _two_sided_chi2_p(statistic: float, df: int) -> float:
    return 2.0 * min(stats.chi2.cdf(statistic, df), stats.chi2.sf(statistic, df))


# ---------------------------------------------------------------- noise and scaling


def _standardised_noise(config: DPSGDConfig, n: int, loss_fn, seed: int) -> tuple[np.ndarray, list[int]]:
    """Run ``config`` on a 20-feature, 5-class logistic regression; return Δθ · qN / (lr σ C) of every step."""
    x, y = _data(n, 20, seed=seed, classes=5)
    gen = make_generator(seed)
    model = logistic_regression(20, 5, generator=gen, dtype=F64)
    trajectory = [_flat(model)]
    sizes: list[int] = []

    def record(step: int, m: nn.Module, mask: Tensor) -> None:
        trajectory.append(_flat(m))
        sizes.append(int(mask.sum()))

    train(model, x, y, config, generator=gen, loss_fn=loss_fn, callback=record)
    deltas = torch.stack(trajectory).diff(dim=0)
    scale = config.expected_batch_size(n) / (config.learning_rate * config.noise_multiplier * config.clip_norm)
    return (-deltas * scale).numpy().ravel(), sizes


def test_noise_has_standard_deviation_sigma_c_on_the_sum_divided_by_qn() -> None:
    config = DPSGDConfig(
        sampling_rate=0.3, noise_multiplier=1.7, clip_norm=0.6, steps=80, learning_rate=0.05, device="cpu"
    )
    z, sizes = _standardised_noise(config, n=30, loss_fn=_zero_loss, seed=12)
    assert z.size == 80 * 105
    assert len(set(sizes)) > 3  # real, variable batches: a divisor |B_t| instead of qN would fail below
    # Σ z² ~ χ²(n) if the noise is N(0, σ²C²) per coordinate and the sum is divided by qN
    assert _two_sided_chi2_p(float(np.sum(z**2)), z.size) > 1e-3
    assert stats.kstest(z, "norm").pvalue > 1e-3


def test_noise_statistic_rejects_a_wrong_scale() -> None:
    """The same statistic on noise that is 5 % too large fails: the test above has teeth."""
    config = DPSGDConfig(
        sampling_rate=0.3, noise_multiplier=1.7, clip_norm=0.6, steps=80, learning_rate=0.05, device="cpu"
    )
    z, _ = _standardised_noise(config, n=30, loss_fn=_zero_loss, seed=12)
    assert _two_sided_chi2_p(float(np.sum((1.05 * z) ** 2)), z.size) < 1e-3


def test_empty_batches_still_add_noise() -> None:
    config = DPSGDConfig(
        sampling_rate=1e-12, noise_multiplier=0.8, clip_norm=2.0, steps=30, learning_rate=1e-12, device="cpu"
    )
    z, sizes = _standardised_noise(config, n=5, loss_fn=cross_entropy, seed=3)
    assert sizes == [0] * 30
    assert np.all(z != 0.0)
    assert _two_sided_chi2_p(float(np.sum(z**2)), z.size) > 1e-3


def test_noise_free_step_is_minus_lr_times_clipped_sum_over_qn() -> None:
    n = 50
    x, y = _data(n, 4, seed=5)
    gen = make_generator(8)
    model = mlp([4, 6, 2], generator=gen, dtype=F64)
    start = [p.detach().clone() for p in model.parameters()]
    masks: list[Tensor] = []
    config = DPSGDConfig(
        sampling_rate=0.2, noise_multiplier=0.0, clip_norm=0.05, steps=1, learning_rate=0.7, device="cpu"
    )
    train(model, x, y, config, generator=gen, callback=lambda s, m, mask: masks.append(mask.clone()))
    (mask,) = masks
    assert 0 < int(mask.sum()) < n
    reference = mlp([4, 6, 2], generator=torch.Generator().manual_seed(0), dtype=F64)
    with torch.no_grad():
        for p, s in zip(reference.parameters(), start, strict=True):
            p.copy_(s)
    sums, _ = clipped_gradient_sum(reference, cross_entropy, x[mask], y[mask], 0.05)
    for p, s, total in zip(model.parameters(), start, sums, strict=True):
        torch.testing.assert_close(p.detach(), s - 0.7 * total / (0.2 * n), rtol=0, atol=1e-12)


def test_full_batch_without_noise_or_clipping_is_torch_sgd_with_momentum_and_weight_decay() -> None:
    n = 40
    x, y = _data(n, 5, seed=2)
    gen = make_generator(4)
    model = mlp([5, 7, 2], generator=gen, dtype=F64)
    reference = mlp([5, 7, 2], generator=torch.Generator().manual_seed(1), dtype=F64)
    reference.load_state_dict(model.state_dict())
    config = DPSGDConfig(
        sampling_rate=1.0,
        noise_multiplier=0.0,
        clip_norm=1e6,
        steps=12,
        learning_rate=0.3,
        momentum=0.8,
        weight_decay=0.01,
        device="cpu",
    )
    train(model, x, y, config, generator=gen)
    opt = torch.optim.SGD(reference.parameters(), lr=0.3, momentum=0.8, weight_decay=0.01)
    for _ in range(12):
        opt.zero_grad()
        cross_entropy(reference(x), y).mean().backward()
        opt.step()
    for p, q in zip(model.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=0, atol=1e-10)


# ---------------------------------------------------------------- Poisson sampling


def test_batch_sizes_follow_binomial_and_inclusions_are_uniform() -> None:
    n, q, steps = 40, 0.15, 2500
    x, y = _data(n, 2, seed=9)
    gen = make_generator(np.random.SeedSequence(2024))
    model = logistic_regression(2, 2, generator=gen, dtype=F64)
    masks: list[Tensor] = []
    config = DPSGDConfig(sampling_rate=q, noise_multiplier=1.0, clip_norm=1.0, steps=steps, learning_rate=0.01)
    train(model, x, y, config, generator=gen, callback=lambda s, m, mask: masks.append(mask.clone()))
    m = torch.stack(masks).numpy()
    assert m.shape == (steps, n) and m.dtype == np.bool_
    # batch sizes against Binomial(n, q), bins merged so that every expected count is at least 5
    sizes = m.sum(1)
    pmf = stats.binom.pmf(np.arange(n + 1), n, q)
    edges = [0]
    acc = 0.0
    for k in range(n + 1):
        acc += pmf[k] * steps
        if acc >= 5 and (1 - stats.binom.cdf(k, n, q)) * steps >= 5:
            edges.append(k + 1)
            acc = 0.0
    edges.append(n + 1)
    observed = np.array([np.sum((sizes >= a) & (sizes < b)) for a, b in itertools.pairwise(edges)])
    expected = np.array([pmf[a:b].sum() * steps for a, b in itertools.pairwise(edges)])
    assert len(observed) >= 6
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    # each example's inclusion count ~ Binomial(steps, q), independently
    counts = m.sum(0)
    statistic = float(np.sum((counts - steps * q) ** 2 / (steps * q * (1 - q))))
    assert _two_sided_chi2_p(statistic, n) > 1e-3


def test_poisson_mask_with_rate_one_takes_every_example() -> None:
    assert bool(poisson_mask(17, 1.0, torch.Generator().manual_seed(0)).all())


# ---------------------------------------------------------------- reproducibility


def _run(seed: int | np.random.SeedSequence) -> nn.Module:
    x, y = _data(60, 6, seed=1)
    gen = make_generator(seed)
    model = mlp([6, 10, 2], generator=gen)
    config = DPSGDConfig(
        sampling_rate=0.2, noise_multiplier=1.1, clip_norm=0.5, steps=15, learning_rate=0.2, momentum=0.5
    )
    return train(model, x, y, config, generator=gen)


def test_same_seed_gives_bitwise_identical_parameters() -> None:
    a, b = _run(123), _run(123)
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q)
    c, d = _run(np.random.SeedSequence(7)), _run(np.random.SeedSequence(7))
    for p, q in zip(c.parameters(), d.parameters(), strict=True):
        assert torch.equal(p, q)


def test_different_seeds_give_different_parameters() -> None:
    a, b = _run(123), _run(124)
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        assert not torch.equal(p, q)


def test_training_does_not_touch_the_global_rng() -> None:
    state = torch.random.get_rng_state()
    _run(5)
    assert torch.equal(state, torch.random.get_rng_state())


def test_integer_inputs_reach_an_embedding_unchanged_and_runs_are_reproducible() -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 9, (40, 3), generator=g)
    y = torch.randint(0, 2, (40,), generator=g)
    config = DPSGDConfig(sampling_rate=0.25, noise_multiplier=1.0, clip_norm=0.5, steps=5, learning_rate=0.1)

    def run(seed: int) -> nn.Module:
        gen = make_generator(seed)
        model = nn.Sequential(nn.Embedding(9, 4), nn.Flatten(), nn.Linear(12, 2))
        with torch.no_grad():
            model[0].weight.copy_(torch.randn(9, 4, generator=gen))
            model[2].weight.uniform_(-0.3, 0.3, generator=gen)
            model[2].bias.zero_()
        return train(model, x, y, config, generator=gen)

    a, b = run(1), run(1)
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q)


# ---------------------------------------------------------------- it learns


def test_dpsgd_learns_the_digits() -> None:
    datasets = pytest.importorskip("sklearn.datasets")
    data = datasets.load_digits()
    x = torch.as_tensor(data.data / 16.0, dtype=torch.float32)
    y = torch.as_tensor(data.target)
    gen = make_generator(np.random.SeedSequence(1))
    model = mlp([64, 32, 10], generator=gen)
    config = DPSGDConfig(sampling_rate=0.05, noise_multiplier=1.0, clip_norm=1.0, steps=200, learning_rate=1.0)
    train(model, x, y, config, generator=gen)
    with torch.no_grad():
        accuracy = float((model(x).argmax(1) == y).double().mean())
    assert accuracy > 0.8  # chance is 0.1; σ = 1 at ε ≈ 2 (δ = 1e-5) still learns this easily
    assert math.isfinite(config.privacy_claim().epsilon(1e-5))


# ---------------------------------------------------------------- arguments


def test_generator_must_be_a_torch_generator_on_the_training_device() -> None:
    x, y = _data(10, 3)
    model = logistic_regression(3, 2, generator=torch.Generator(), dtype=F64)
    config = DPSGDConfig(sampling_rate=0.5, noise_multiplier=1.0, clip_norm=1.0, steps=1, learning_rate=0.1)
    with pytest.raises(TypeError, match=r"^generator must be a torch.Generator"):
        train(model, x, y, config, generator=np.random.default_rng(0))  # type: ignore[arg-type]


def test_mismatched_data_is_refused() -> None:
    x, y = _data(10, 3)
    model = logistic_regression(3, 2, generator=torch.Generator(), dtype=F64)
    config = DPSGDConfig(sampling_rate=0.5, noise_multiplier=1.0, clip_norm=1.0, steps=1, learning_rate=0.1)
    with pytest.raises(ValueError, match=r"^y must have one entry per row of x"):
        train(model, x, y[:9], config, generator=torch.Generator())
    with pytest.raises(TypeError, match=r"^config must be a DPSGDConfig"):
        train(model, x, y, {"sampling_rate": 0.5}, generator=torch.Generator())  # type: ignore[arg-type]


def test_numpy_inputs_are_accepted() -> None:
    x, y = _data(20, 3)
    gen = make_generator(0)
    model = logistic_regression(3, 2, generator=gen, dtype=F64)
    config = DPSGDConfig(sampling_rate=0.5, noise_multiplier=1.0, clip_norm=1.0, steps=3, learning_rate=0.1)
    train(model, x.numpy(), y.numpy(), config, generator=gen)
    gen2 = make_generator(0)
    model2 = logistic_regression(3, 2, generator=gen2, dtype=F64)
    train(model2, x, y, config, generator=gen2)
    for p, q in zip(model.parameters(), model2.parameters(), strict=True):
        assert torch.equal(p, q)
