"""Tests of DPSGDConfig, the model factories and the device/generator helpers of privgame.mechanisms.dpsgd."""

from __future__ import annotations

import dataclasses
import math
import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from privgame.analysis.accounting import dpsgd_claim  # noqa: E402
from privgame.mechanisms.dpsgd import (  # noqa: E402
    DPSGDConfig,
    digits_cnn,
    init_parameters,
    logistic_regression,
    make_generator,
    mlp,
    resolve_device,
)

GOOD = {"sampling_rate": 0.01, "noise_multiplier": 1.0, "clip_norm": 1.0, "steps": 100, "learning_rate": 0.1}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sampling_rate", 0.0),
        ("sampling_rate", -0.1),
        ("sampling_rate", 1.5),
        ("sampling_rate", math.nan),
        ("noise_multiplier", -0.5),
        ("noise_multiplier", math.inf),
        ("noise_multiplier", math.nan),
        ("clip_norm", 0.0),
        ("clip_norm", -1.0),
        ("clip_norm", math.inf),
        ("steps", 0),
        ("steps", -3),
        ("learning_rate", 0.0),
        ("momentum", 1.0),
        ("momentum", -0.1),
        ("weight_decay", -1.0),
    ],
)
def test_bad_values_raise_value_error_naming_the_field(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=rf"^{field} must be .*, got {value!r}\.$"):
        DPSGDConfig(**{**GOOD, field: value})


@pytest.mark.parametrize(
    ("field", "value"),
    [("sampling_rate", "0.1"), ("noise_multiplier", None), ("clip_norm", True), ("steps", 10.0), ("device", 0)],
)
def test_bad_types_raise_type_error_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(TypeError, match=rf"^{field} must be "):
        DPSGDConfig(**{**GOOD, field: value})


def test_bad_device_string_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^device must be 'auto' or a torch device string"):
        DPSGDConfig(**GOOD, device="gpu please")


def test_config_is_frozen_picklable_and_normalised() -> None:
    config = DPSGDConfig(**{**GOOD, "steps": np.int64(100), "clip_norm": 2})
    assert type(config.steps) is int and type(config.clip_norm) is float
    assert pickle.loads(pickle.dumps(config)) == config
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.steps = 3  # type: ignore[misc]
    assert config.expected_batch_size(300) == pytest.approx(3.0)


def test_privacy_claim_is_dp_accountings_dpsgd_claim() -> None:
    config = DPSGDConfig(sampling_rate=256 / 60000, noise_multiplier=1.1, clip_norm=1.0, steps=14062, learning_rate=1)
    claim = config.privacy_claim()
    assert claim == dpsgd_claim(1.1, 256 / 60000, 14062)
    assert claim.epsilon(1e-5) == pytest.approx(2.3817, abs=2e-3)  # SPEC §6
    assert DPSGDConfig(**{**GOOD, "noise_multiplier": 0.0}).privacy_claim() is None


# ---------------------------------------------------------------- devices and generators


def test_auto_device_is_cuda_when_available_else_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto").type == "cuda"
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")
    with pytest.raises(TypeError, match=r"^device must be"):
        resolve_device(3)  # type: ignore[arg-type]


def test_make_generator_from_seed_sequence_is_reproducible_and_distinct() -> None:
    a, b = np.random.SeedSequence(5).spawn(2)
    draw = lambda s: torch.rand(4, generator=make_generator(s))  # noqa: E731
    assert torch.equal(draw(np.random.SeedSequence(5).spawn(2)[0]), draw(a))
    assert not torch.equal(draw(a), draw(b))
    assert torch.equal(draw(7), draw(7))
    with pytest.raises(ValueError, match=r"^seed must be an integer in \[0, 2\*\*64\)"):
        make_generator(-1)
    with pytest.raises(TypeError, match=r"^seed must be an int or a numpy.random.SeedSequence"):
        make_generator(1.5)  # type: ignore[arg-type]


# ---------------------------------------------------------------- models


def test_models_have_the_documented_shapes() -> None:
    g = make_generator(0)
    assert logistic_regression(5, 3, generator=g)(torch.zeros(2, 5)).shape == (2, 3)
    net = mlp([108, 256, 256, 2], generator=g)
    assert net(torch.zeros(4, 108)).shape == (4, 2)
    assert sum(p.numel() for p in net.parameters()) == 108 * 256 + 256 + 256 * 256 + 256 + 256 * 2 + 2
    cnn = digits_cnn(generator=g)
    assert cnn(torch.zeros(3, 64)).shape == (3, 10)
    assert cnn(torch.zeros(3, 1, 8, 8)).shape == (3, 10)
    assert mlp([3, 4], generator=g, dtype=torch.float64)[0].weight.dtype == torch.float64


def test_models_are_initialised_from_the_generator_only() -> None:
    state = torch.random.get_rng_state()
    a = mlp([5, 7, 2], generator=make_generator(3))
    b = mlp([5, 7, 2], generator=make_generator(3))
    c = mlp([5, 7, 2], generator=make_generator(4))
    assert torch.equal(state, torch.random.get_rng_state())
    for p, q, r in zip(a.parameters(), b.parameters(), c.parameters(), strict=True):
        assert torch.equal(p, q) and not torch.equal(p, r)
    # PyTorch's default scale: weights in ±1/√fan_in
    w = a[0].weight.detach()
    assert float(w.abs().max()) <= 1 / math.sqrt(5) and float(w.abs().max()) > 0.5 / math.sqrt(5)


def test_model_factory_errors() -> None:
    g = make_generator(0)
    with pytest.raises(ValueError, match=r"^sizes must hold at least two widths"):
        mlp([3], generator=g)
    with pytest.raises(ValueError, match=r"^sizes\[1\] must be an integer >= 1, got 0\.$"):
        mlp([3, 0], generator=g)
    with pytest.raises(ValueError, match=r"^activation must be one of"):
        mlp([3, 2], generator=g, activation="swish")
    with pytest.raises(ValueError, match=r"^n_classes must be an integer >= 2"):
        logistic_regression(3, 1, generator=g)
    with pytest.raises(TypeError, match=r"^generator must be a torch.Generator"):
        mlp([3, 2], generator=0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^dtype must be a floating torch.dtype"):
        mlp([3, 2], generator=g, dtype=torch.int64)
    with pytest.raises(TypeError, match=r"cannot initialise a Bilinear"):
        init_parameters(torch.nn.Bilinear(2, 2, 2), generator=g)
