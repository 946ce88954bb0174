"""Every DP-SGD mechanism on the device it is given: ``PRIVGAME_TEST_DEVICE=cuda pytest tests/mechanisms`` runs these
on a CUDA GPU (default: the CPU).  A generator is checked against the training device itself (type and index),
``"auto"`` trains where the generator lives, and a device the machine lacks is one line."""

from __future__ import annotations

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from privgame.data.canaries import canary_data  # noqa: E402
from privgame.mechanisms.dpsgd.blackbox import DPSGDBlackBox  # noqa: E402
from privgame.mechanisms.dpsgd.broken import DPSGDBroken  # noqa: E402
from privgame.mechanisms.dpsgd.devices import check_generator, make_generator, same_device  # noqa: E402
from privgame.mechanisms.dpsgd.models import mlp  # noqa: E402
from privgame.mechanisms.dpsgd.opacus_engine import LoopWhiteBox  # noqa: E402
from privgame.mechanisms.dpsgd.sgd import DPSGDConfig, train  # noqa: E402
from privgame.mechanisms.dpsgd.whitebox import DPSGDWhiteBox  # noqa: E402

DEVICE = os.environ.get("PRIVGAME_TEST_DEVICE", "cpu")
if DEVICE.startswith("cuda") and not torch.cuda.is_available():  # pragma: no cover - asked for a GPU, none here
    pytest.skip(f"PRIVGAME_TEST_DEVICE={DEVICE}: no CUDA device is available", allow_module_level=True)

BITS = np.arange(60) % 3 == 0
KW = dict(noise_multiplier=0.8, sampling_rate=0.2, steps=4, device=DEVICE)


def _digits(canary=None):
    return canary_data(BITS, data="digits", train_rows=40, canary=canary, canary_seed=0)


def test_same_device_compares_type_and_index():
    cuda0, cuda1 = torch.device("cuda", 0), torch.device("cuda", 1)
    assert not same_device(cuda0, cuda1)
    assert not same_device(torch.device("cpu"), cuda0)
    assert same_device(torch.device("cpu"), torch.device("cpu"))
    current = torch.cuda.current_device() if torch.cuda.is_available() else 0
    assert same_device(torch.device("cuda"), torch.device("cuda", current))


def test_a_generator_on_another_device_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"must live on the training device \(cuda:1\), got a generator on cpu"):
        check_generator("generator", make_generator(0, "cpu"), torch.device("cuda", 1))


def test_auto_trains_where_the_generator_lives():
    """DPSGDConfig(device="auto") with a CPU generator trains on the CPU on any machine (a CUDA machine too)."""
    config = DPSGDConfig(sampling_rate=0.5, noise_multiplier=1.0, clip_norm=1.0, steps=2, learning_rate=0.1)
    gen = make_generator(1, "cpu")
    model = train(mlp((4, 3, 2), generator=gen), torch.zeros(8, 4), torch.zeros(8, dtype=torch.long), config,
                  generator=gen)  # fmt: skip
    assert next(model.parameters()).device.type == "cpu"


@pytest.mark.parametrize(
    "mechanism",
    [
        DPSGDWhiteBox(**KW, model="mlp"),
        DPSGDWhiteBox(**KW, model="mlp", canary_layout="separate"),
        DPSGDWhiteBox(**KW, model="mlp", canary_layout="reserved"),
        DPSGDBroken(**KW, model="mlp", flaw="reused_noise"),
        DPSGDBroken(**KW, model="mlp", flaw="clip_mismatch"),
        LoopWhiteBox(**KW, model="mlp"),
        LoopWhiteBox(**KW, model="mlp", loop="opacus"),
    ],
    ids=["dense", "separate", "reserved", "reused-noise", "clip-mismatch", "loop", "opacus"],
)
def test_white_box_releases_on_the_device_are_reproducible_and_runs_equal_releases(mechanism):
    if getattr(mechanism, "loop", None) == "opacus":
        pytest.importorskip("opacus")
    data = _digits()
    one, two = (mechanism.release(data, rng=np.random.default_rng(5)) for _ in range(2))
    assert isinstance(one, np.ndarray) and one.shape == (len(BITS),) and np.isfinite(one).all()
    np.testing.assert_array_equal(one, two)
    runs = mechanism.release_runs([data, data], rngs=[np.random.default_rng(5), np.random.default_rng(6)])
    np.testing.assert_allclose(runs[0], one, rtol=1e-9, atol=1e-12)


def test_black_box_release_on_the_device():
    mech = DPSGDBlackBox(**KW, hidden=(8,))
    release = mech.release(_digits("ood"), rng=np.random.default_rng(0))
    losses = release.model.losses(release.canary_x, release.canary_y)
    assert losses.shape == (len(BITS),) and np.isfinite(losses).all()


@pytest.mark.parametrize("device", ["cuda:99", "tpu", 3])
def test_a_device_this_machine_lacks_is_one_line(device):
    with pytest.raises((TypeError, ValueError), match="device must be") as info:
        DPSGDWhiteBox(noise_multiplier=1.0, device=device)
    assert "\n" not in str(info.value)
