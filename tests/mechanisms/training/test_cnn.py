"""The CNN mechanism and its release: numpy's forward pass equals torch's, the codec, seeds, and refusals."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from privgame.data.features import model_arrays  # noqa: E402
from privgame.mechanisms.dpsgd.devices import make_generator  # noqa: E402
from privgame.mechanisms.dpsgd.models import conv_net, digits_cnn  # noqa: E402
from privgame.mechanisms.training.cnn import CNNClassifier, _release  # noqa: E402
from privgame.mechanisms.training.data import TrainingData  # noqa: E402
from privgame.mechanisms.training.release import ConvNetRelease, decode_release  # noqa: E402


def _digits(n: int = 400) -> TrainingData:
    arrays = model_arrays("digits")
    include = np.zeros(arrays.y.shape[0], dtype=bool)
    include[:n] = True
    return TrainingData(arrays.x, arrays.y, include, n_classes=10)


@pytest.mark.parametrize(
    ("image", "activation"), [((1, 8, 8), "relu"), ((2, 5, 7), "tanh"), ((3, 9, 6), "gelu"), ((1, 4, 4), "elu")]
)
def test_numpy_forward_pass_equals_torchs(image, activation):
    """Odd sides too (pooling drops the last row or column, as torch's MaxPool2d(2))."""
    net = conv_net(image, 3, generator=make_generator(4), channels=(5, 6), activation=activation)
    release = _release(net, image, activation)
    x = np.random.default_rng(0).normal(size=(17, int(np.prod(image)))).astype(np.float32)
    with torch.no_grad():
        expected = net(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(release.logits(x), expected, rtol=1e-5, atol=1e-5)
    assert release.n_features == int(np.prod(image)) and release.n_classes == 3


def test_digits_cnn_is_conv_net_of_one_8_by_8_channel():
    a = digits_cnn(generator=make_generator(9), channels=(4, 6))
    b = conv_net((1, 8, 8), 10, generator=make_generator(9), channels=(4, 6))
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q)


def test_trained_cnn_learns_the_digits_and_is_reproducible():
    pool = _digits()
    model = CNNClassifier(epochs=40)
    release = model.release(pool, rng=np.random.default_rng(1))
    again = model.release(pool, rng=np.random.default_rng(1))
    other = model.release(pool, rng=np.random.default_rng(2))
    held_out = ~pool.include
    accuracy = (release.logits(pool.x[held_out]).argmax(axis=1) == pool.y[held_out]).mean()
    assert accuracy > 0.85, accuracy  # chance is 0.1; this seed gives 0.879
    np.testing.assert_array_equal(release.logits(pool.x[:20]), again.logits(pool.x[:20]))
    assert not np.array_equal(release.logits(pool.x[:20]), other.logits(pool.x[:20]))
    decoded = decode_release(release.to_arrays())
    assert isinstance(decoded, ConvNetRelease)
    np.testing.assert_array_equal(decoded.logits(pool.x[:20]), release.logits(pool.x[:20]))


def test_the_model_does_not_depend_on_the_thread_count():
    """The runner's parent and its workers have thread pools of different sizes; a trial's model must not care
    (a convolution's gradient, summed over threads, differed by 1e-4 in the logits before training was pinned to
    one thread)."""
    pool = _digits(300)
    before = torch.get_num_threads()
    logits = []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            logits.append(CNNClassifier(epochs=8).release(pool, rng=np.random.default_rng(5)).logits(pool.x[:50]))
            assert torch.get_num_threads() == threads  # restored after training
    finally:
        torch.set_num_threads(before)
    np.testing.assert_array_equal(logits[0], logits[1])


def test_release_runs_equal_their_releases():
    pool = _digits(200)
    masks = [pool.with_include(np.roll(pool.include, k)) for k in (0, 50)]
    rngs = [np.random.default_rng(s) for s in (3, 4)]
    runs = CNNClassifier(epochs=2).release_runs(masks, rngs=rngs)
    for data, run, seed in zip(masks, runs, (3, 4), strict=True):
        alone = CNNClassifier(epochs=2).release(data, rng=np.random.default_rng(seed))
        np.testing.assert_array_equal(run.logits(pool.x[:10]), alone.logits(pool.x[:10]))


def test_records_of_the_wrong_width_are_refused_in_one_line():
    arrays = model_arrays("adult")
    pool = TrainingData(arrays.x[:50], arrays.y[:50], np.ones(50, dtype=bool))
    with pytest.raises(ValueError, match=r"image \[1, 8, 8\] needs records of 64 features, got 108") as info:
        CNNClassifier(epochs=1).release(pool, rng=np.random.default_rng(0))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"image": (1, 8)}, r"image must be \[channels, height, width\]"),
        ({"image": (1, 3, 8)}, r"image\[1\]"),
        ({"image": (0, 8, 8)}, r"image\[0\]"),
        ({"channels": (16,)}, "channels must be a pair"),
        ({"channels": (16, 0)}, r"channels\[1\]"),
        ({"activation": "sigmoid"}, "activation must be one of"),
        ({"epochs": 0}, "epochs"),
        ({"device": "tpu"}, "device must be"),
    ],
)
def test_bad_parameters_are_refused(params, message):
    with pytest.raises((ValueError, TypeError), match=message):
        CNNClassifier(**params)


def test_a_release_whose_layers_do_not_chain_is_refused():
    good = _release(conv_net((1, 8, 8), 10, generator=make_generator(0), channels=(4, 6)), (1, 8, 8), "relu")
    arrays = good.to_arrays()
    with pytest.raises(ValueError, match="convolution 1 must have weights"):
        ConvNetRelease((1, 8, 8), (arrays["conv0"], arrays["conv0"]), good.conv_biases, good.weight, good.bias)
    with pytest.raises(ValueError, match="the last layer must have weights"):
        ConvNetRelease((1, 12, 12), good.conv_weights, good.conv_biases, good.weight, good.bias)
    with pytest.raises(ValueError, match=r"x must have shape \(n, 64\)"):
        good.logits(np.zeros((2, 63)))
