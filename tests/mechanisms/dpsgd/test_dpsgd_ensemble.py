"""Tests of privgame.mechanisms.dpsgd.sgd.train_ensemble: K models at once equal K separate runs."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import Tensor, nn  # noqa: E402

from privgame.mechanisms.dpsgd.models import digits_cnn, mlp  # noqa: E402
from privgame.mechanisms.dpsgd.sgd import DPSGDConfig, make_generator, train, train_ensemble  # noqa: E402

F64 = torch.float64
TOL = 1e-10


def _data(n: int, d: int, classes: int, seed: int = 0) -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g, dtype=F64), torch.randint(0, classes, (n,), generator=g)


def _mlp(generator: torch.Generator) -> nn.Module:
    return mlp([6, 12, 12, 3], generator=generator, dtype=F64)


def _layer_norm_model(generator: torch.Generator) -> nn.Module:
    model = nn.Sequential(
        mlp([6, 8], generator=generator, dtype=F64), nn.LayerNorm(8).double(), nn.Tanh(),
        mlp([8, 3], generator=generator, dtype=F64),
    )  # fmt: skip
    with torch.no_grad():
        model[1].weight.copy_(1.0 + 0.1 * torch.randn(8, generator=generator, dtype=F64))
    return model


class _GatedBlock(nn.Module):
    """A module with a parameter of its own AND a child layer with parameters: its per-example path re-runs the
    child, which must be model k's in an ensemble."""

    def __init__(self, generator: torch.Generator) -> None:
        super().__init__()
        self.inner = mlp([6, 5], generator=generator, dtype=F64)
        self.gate = nn.Parameter(torch.rand(5, generator=generator, dtype=F64) + 0.5)

    def forward(self, x: Tensor) -> Tensor:
        return torch.tanh(self.inner(x)) * self.gate


class _BareParameter(nn.Module):
    """A model with a bare parameter used in forward (the top level has a parameter of its own)."""

    def __init__(self, generator: torch.Generator) -> None:
        super().__init__()
        self.block = _GatedBlock(generator)
        self.head = mlp([5, 3], generator=generator, dtype=F64)
        self.shift = nn.Parameter(0.1 * torch.randn(3, generator=generator, dtype=F64))

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.block(x)) + self.shift


def _cnn(generator: torch.Generator) -> nn.Module:
    return digits_cnn(generator=generator, channels=(3, 4), dtype=F64)


def _separate_and_ensemble(
    make: Callable[[torch.Generator], nn.Module], x: Tensor, y: Tensor, config: DPSGDConfig, seeds: list
) -> tuple[list[nn.Module], list[nn.Module], list[list[Tensor]], list[Tensor]]:
    separate, separate_masks = [], []
    for seed in seeds:
        gen = make_generator(seed)
        masks: list[Tensor] = []
        separate.append(
            train(make(gen), x, y, config, generator=gen, callback=lambda s, m, b, into=masks: into.append(b))
        )
        separate_masks.append(masks)
    ensemble_masks: list[Tensor] = []
    ensemble = train_ensemble(
        make, x, y, config, generators=[make_generator(s) for s in seeds],
        callback=lambda s, params, b: ensemble_masks.append(b),
    )  # fmt: skip
    return separate, ensemble, separate_masks, ensemble_masks


@pytest.mark.parametrize(
    ("make", "d", "classes", "n", "steps"),
    [(_mlp, 6, 3, 80, 25), (_layer_norm_model, 6, 3, 40, 10), (_cnn, 64, 10, 30, 5), (_BareParameter, 6, 3, 40, 6)],
    ids=["mlp", "layernorm-fallback", "cnn", "own-parameter-and-children"],
)
def test_ensemble_of_three_equals_three_separate_runs(make, d: int, classes: int, n: int, steps: int) -> None:
    x, y = _data(n, d, classes)
    config = DPSGDConfig(
        sampling_rate=0.1,
        noise_multiplier=0.9,
        clip_norm=0.3,
        steps=steps,
        learning_rate=0.2,
        momentum=0.7,
        weight_decay=0.001,
        device="cpu",
    )
    seeds = list(np.random.SeedSequence(99).spawn(3))
    separate, ensemble, separate_masks, ensemble_masks = _separate_and_ensemble(make, x, y, config, seeds)
    assert len(ensemble) == 3
    for k in range(3):
        for step in range(steps):
            assert torch.equal(ensemble_masks[step][k], separate_masks[k][step])
        for (name, p), q in zip(separate[k].named_parameters(), ensemble[k].parameters(), strict=True):
            torch.testing.assert_close(q.detach(), p.detach(), rtol=0, atol=TOL, msg=f"model {k} {name}")
    # the three models really differ (own seeds), and the batches differ in size between models at some step
    assert not torch.equal(next(ensemble[0].parameters()), next(ensemble[1].parameters()))
    sizes = torch.stack(ensemble_masks).sum(2)  # (steps, K)
    assert bool((sizes.max(1).values != sizes.min(1).values).any())


def test_ensemble_with_empty_batches_for_some_models_equals_separate_runs() -> None:
    x, y = _data(20, 6, 3, seed=4)
    config = DPSGDConfig(
        sampling_rate=0.05, noise_multiplier=1.0, clip_norm=0.5, steps=30, learning_rate=0.1, device="cpu"
    )
    seeds = [1, 2, 3]
    separate, ensemble, _, masks = _separate_and_ensemble(_mlp, x, y, config, seeds)
    sizes = torch.stack(masks).sum(2)
    # some steps where one model's batch is empty while another's is not, and some where all are empty
    assert bool(((sizes == 0).any(1) & (sizes > 0).any(1)).any())
    for k in range(3):
        for p, q in zip(separate[k].parameters(), ensemble[k].parameters(), strict=True):
            torch.testing.assert_close(q.detach(), p.detach(), rtol=0, atol=TOL)


def test_ensemble_accepts_ready_models_and_reports_stacked_parameters() -> None:
    x, y = _data(30, 6, 3)
    config = DPSGDConfig(sampling_rate=0.2, noise_multiplier=1.0, clip_norm=1.0, steps=3, learning_rate=0.1)
    gens = [make_generator(s) for s in (5, 6)]
    models = [_mlp(g) for g in gens]
    seen: list[dict[str, Tensor]] = []
    trained = train_ensemble(
        models, x, y, config, generators=gens, callback=lambda s, params, b: seen.append(
            {k: v.clone() for k, v in params.items()})
    )  # fmt: skip
    assert trained[0] is models[0] and trained[1] is models[1]
    assert len(seen) == 3 and seen[-1]["0.weight"].shape == (2, 12, 6)
    torch.testing.assert_close(seen[-1]["0.weight"][1], models[1][0].weight.detach(), rtol=0, atol=0)


def test_ensemble_argument_errors() -> None:
    x, y = _data(30, 6, 3)
    config = DPSGDConfig(sampling_rate=0.2, noise_multiplier=1.0, clip_norm=1.0, steps=1, learning_rate=0.1)
    with pytest.raises(ValueError, match=r"^generators must hold at least one"):
        train_ensemble(_mlp, x, y, config, generators=[])
    gens = [make_generator(1), make_generator(2)]
    with pytest.raises(ValueError, match=r"^make_model must give one model per generator"):
        train_ensemble([_mlp(gens[0])], x, y, config, generators=gens)
    with pytest.raises(ValueError, match=r"^make_model must give models of one architecture"):
        train_ensemble([_mlp(gens[0]), mlp([6, 5, 3], generator=gens[1], dtype=F64)], x, y, config, generators=gens)
    with pytest.raises(TypeError, match=r"^generators\[1\] must be a torch.Generator"):
        train_ensemble(_mlp, x, y, config, generators=[gens[0], 3])  # type: ignore[list-item]


def test_include_excludes_rows_without_changing_the_stream() -> None:
    """Rows left out are never sampled; the rows kept see exactly the batches (and noise) of the full run."""
    x, y = _data(40, 6, 3, seed=2)
    config = DPSGDConfig(sampling_rate=0.3, noise_multiplier=1.0, clip_norm=0.5, steps=6, learning_rate=0.1)
    include = torch.ones((2, 40), dtype=torch.bool)
    include[0, 30:] = False
    include[1, :5] = False
    full_masks: list[Tensor] = []
    gens = [make_generator(s) for s in (8, 9)]
    train_ensemble(_mlp, x, y, config, generators=gens, callback=lambda s, p, b: full_masks.append(b.clone()))
    masks: list[Tensor] = []
    seeds = (8, 9)
    models = train_ensemble(
        _mlp, x, y, config, generators=[make_generator(s) for s in seeds], include=include,
        callback=lambda s, p, b: masks.append(b.clone()),
    )  # fmt: skip
    for full, kept in zip(full_masks, masks, strict=True):
        assert torch.equal(kept, full & include)
    for k, seed in enumerate(seeds):  # and each model equals train() with its own include row
        gen = make_generator(seed)
        alone = train(_mlp(gen), x, y, config, generator=gen, include=include[k])
        for p, q in zip(alone.parameters(), models[k].parameters(), strict=True):
            torch.testing.assert_close(q.detach(), p.detach(), rtol=0, atol=TOL)


def test_inject_adds_per_model_gradients_before_the_noise() -> None:
    x, y = _data(10, 6, 3)
    config = DPSGDConfig(sampling_rate=0.5, noise_multiplier=0.0, clip_norm=1.0, steps=1, learning_rate=1.0)
    gens = [make_generator(s) for s in (1, 2)]
    base = train_ensemble(_mlp, x, y, config, generators=gens)
    shapes = [p.shape for p in base[0].parameters()]
    extra = [torch.stack([torch.full(s, 1.0, dtype=F64), torch.full(s, 2.0, dtype=F64)]) for s in shapes]
    gens = [make_generator(s) for s in (1, 2)]
    injected = train_ensemble(_mlp, x, y, config, generators=gens, inject=lambda step: extra)
    for k in range(2):
        for p, q in zip(base[k].parameters(), injected[k].parameters(), strict=True):
            torch.testing.assert_close(p.detach() - q.detach(), torch.full_like(p, (k + 1) / 5.0), rtol=0, atol=TOL)


def test_include_errors() -> None:
    x, y = _data(10, 6, 3)
    config = DPSGDConfig(sampling_rate=0.5, noise_multiplier=1.0, clip_norm=1.0, steps=1, learning_rate=0.1)
    with pytest.raises(TypeError, match="include must be boolean"):
        train(_mlp(make_generator(0)), x, y, config, generator=make_generator(0), include=np.ones(10))
    with pytest.raises(ValueError, match=r"include must have shape \(10,\) or \(2, 10\), got \(3, 10\)"):
        train_ensemble(
            _mlp, x, y, config, generators=[make_generator(0), make_generator(1)],
            include=np.ones((3, 10), dtype=bool),
        )  # fmt: skip
