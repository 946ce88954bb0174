"""Model releases: the ModelRelease protocol's scores against high-precision oracles, the codec, bad constructions.

No torch here: the release types are plain numpy (the networks' agreement with torch is in ``test_models.py``).
"""

from __future__ import annotations

import io
import itertools
import math
from typing import Any

import mpmath
import numpy as np
import pytest
from scipy.special import softmax

from privgame.mechanisms.training.release import (
    ACTIVATIONS,
    ModelRelease,
    NetworkRelease,
    TreeEnsembleRelease,
    decode_release,
)

mpmath.mp.dps = 50  # the oracle: 50 significant digits, far beyond float64's 16


class FixedLogits(ModelRelease):
    """A release whose logits are given: tests the protocol's own methods on exact logits."""

    kind = "fixed"

    def __init__(self, z: np.ndarray) -> None:
        self.z = np.asarray(z, dtype=np.float64)
        self.n_features = 1
        self.n_classes = self.z.shape[1]

    def logits(self, x: Any) -> np.ndarray:
        return self.z[: np.asarray(x).shape[0]]

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"kind": np.array(self.kind), "z": self.z}


def _mp_confidence(z: np.ndarray, y: int) -> float:
    """log p_y − log Σ_{y'≠y} p_{y'} in 50 digits, from its definition through the softmax."""
    e = [mpmath.exp(mpmath.mpf(float(v))) for v in z]
    total = mpmath.fsum(e)
    p = [v / total for v in e]
    return float(mpmath.log(p[y]) - mpmath.log(mpmath.fsum(p[k] for k in range(len(p)) if k != y)))


def _mp_loss(z: np.ndarray, y: int) -> float:
    e = [mpmath.exp(mpmath.mpf(float(v))) for v in z]
    return float(-mpmath.log(e[y] / mpmath.fsum(e)))


def _network(seed: int = 0, sizes: tuple[int, ...] = (4, 6, 5, 3), activation: str = "relu") -> NetworkRelease:
    rng = np.random.default_rng(seed)
    return NetworkRelease(
        weights=tuple(rng.normal(size=(a, b)).astype(np.float32) for a, b in itertools.pairwise(sizes)),
        biases=tuple(rng.normal(size=b).astype(np.float32) for b in sizes[1:]),
        activation=activation,
    )


def _stumps() -> TreeEnsembleRelease:
    """Two binary-class trees: a stump on feature 0 and a depth-2 tree on features 1 then 0."""
    feature = np.array([[0, 0, 0, 0, 0], [1, 0, 0, 0, 0]], dtype=np.int32)
    threshold = np.array([[0.5, 0, 0, 0, 0], [-1.0, 2.0, 0, 0, 0]])
    left = np.array([[1, 0, 0, 0, 0], [1, 3, 0, 0, 0]], dtype=np.int32)
    right = np.array([[2, 0, 0, 0, 0], [2, 4, 0, 0, 0]], dtype=np.int32)
    value = np.array([[0, -1.0, 2.0, 0, 0], [0, 0, 0.5, 0.25, -0.75]])
    leaf = np.array([[False, True, True, True, True], [False, False, True, True, True]])
    return TreeEnsembleRelease(
        feature=feature,
        threshold=threshold,
        left=left,
        right=right,
        value=value,
        leaf=leaf,
        tree_class=np.zeros(2, dtype=np.int32),
        baseline=np.array([0.125]),
        n_features=2,
        n_classes=2,
    )


def _stumps_by_hand(x: np.ndarray) -> np.ndarray:
    first = np.where(x[:, 0] <= 0.5, -1.0, 2.0)
    second = np.where(x[:, 1] <= -1.0, np.where(x[:, 0] <= 2.0, 0.25, -0.75), 0.5)
    return 0.125 + first + second


# -- the protocol's scores --------------------------------------------------------------------------------------
def test_confidence_equals_the_high_precision_definition():
    rng = np.random.default_rng(1)
    for k in (2, 3, 7):
        z = rng.normal(0, 4, size=(40, k))
        y = rng.integers(0, k, 40)
        got = FixedLogits(z).confidence(np.zeros((40, 1)), y)
        want = np.array([_mp_confidence(z[i], int(y[i])) for i in range(40)])
        assert got.dtype == np.float64 and got.shape == (40,)
        # z_y − logsumexp(others) loses only a few ulps of the logits' magnitude (|z| ≲ 20 here)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_confidence_stays_finite_where_the_naive_formula_overflows():
    z = np.array([[60.0, -60.0], [-60.0, 60.0], [60.0, -60.0], [800.0, -800.0]])
    y = np.array([0, 0, 1, 0])
    got = FixedLogits(z).confidence(np.zeros((4, 1)), y)
    want = np.array([_mp_confidence(z[i], int(y[i])) for i in range(4)])
    np.testing.assert_allclose(got, want, rtol=1e-14)
    np.testing.assert_allclose(got, [120.0, -120.0, -120.0, 1600.0], rtol=1e-14)
    # the naive log(p) − log(1 − p): p rounds to 1 (float32 and float64 alike), giving ±inf
    with np.errstate(divide="ignore", over="ignore"):
        for dtype in (np.float32, np.float64):
            p = softmax(z.astype(dtype), axis=1)[np.arange(4), y]
            naive = np.log(p) - np.log(1 - p)
            assert not np.isfinite(naive[0]) and not np.isfinite(naive[3])
    # Carlini et al.'s score.py adds 1e-45 to both terms: finite, but capped at log(1 + 1e-45) − log(1e-45)
    reference = _reference_confidence(z.astype(np.float32), y)
    cap = math.log(1 + 1e-45) - math.log(1e-45)
    assert np.isfinite(reference).all() and cap == pytest.approx(103.6, abs=0.05)
    np.testing.assert_allclose(reference, [cap, -cap, -cap, cap], rtol=1e-3)


def _reference_confidence(z: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The logit scaling of Carlini et al.'s score.py: float64 softmax of the max-shifted logits, the wrong classes'
    probabilities summed, 1e-45 added to both terms (written from its description, docs/lira.md)."""
    p = np.asarray(np.exp(z - z.max(axis=1, keepdims=True)), dtype=np.float64)
    p /= p.sum(axis=1, keepdims=True)
    rows = np.arange(z.shape[0])
    true = p[rows, y].copy()
    p[rows, y] = 0.0
    return np.log(true + 1e-45) - np.log(p.sum(axis=1) + 1e-45)


def test_confidence_agrees_with_the_reference_below_its_cap():
    """Within 2.5e-6 of the reference's finite value wherever |confidence| ≤ 50, on float32 logits (as docs/lira.md
    says); beyond about 100 only the reference saturates."""
    rng = np.random.default_rng(3)
    for scale in (1.0, 10.0, 50.0, 120.0):
        z = (rng.standard_normal((20_000, 10)) * scale / 3).astype(np.float32)
        y = rng.integers(0, 10, 20_000)
        z[np.arange(20_000), y] += scale
        ours = FixedLogits(z.astype(np.float64)).confidence(np.zeros((20_000, 1)), y)
        reference = _reference_confidence(z, y)
        below = np.abs(ours) <= 50
        assert np.abs(ours - reference)[below].max() < 2.5e-6
        assert np.abs(reference).max() < 103.7
    # the same through a released network: one linear layer whose logits are ±60 on x = 1
    net = NetworkRelease(weights=(np.array([[60.0, -60.0]], dtype=np.float32),), biases=(np.zeros(2, np.float32),))
    np.testing.assert_array_equal(net.confidence(np.ones((2, 1)), np.array([0, 1])), [120.0, -120.0])


def test_losses_are_the_cross_entropy():
    rng = np.random.default_rng(2)
    z = np.concatenate([rng.normal(0, 4, size=(30, 3)), [[60.0, -60.0, 0.0], [-60.0, 60.0, 0.0]]])
    y = np.concatenate([rng.integers(0, 3, 30), [1, 1]])
    got = FixedLogits(z).losses(np.zeros((32, 1)), y)
    want = np.array([_mp_loss(z[i], int(y[i])) for i in range(32)])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert np.all(got >= 0) and got[30] == pytest.approx(120.0, rel=1e-14)


def test_probabilities_are_the_softmax_and_sum_to_one():
    rng = np.random.default_rng(3)
    z = np.concatenate([rng.normal(0, 5, size=(50, 4)), [[700.0, -700.0, 0.0, 1.0]]])
    p = FixedLogits(z).probabilities(np.zeros((51, 1)))
    assert np.all(np.isfinite(p)) and np.all(p >= 0)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-14)  # a few ulps per term
    np.testing.assert_allclose(p, softmax(z, axis=1), rtol=1e-12, atol=1e-300)
    net = _network()
    x = np.random.default_rng(4).normal(size=(20, 4))
    np.testing.assert_allclose(net.probabilities(x).sum(axis=1), 1.0, rtol=0, atol=1e-14)


def test_bad_labels_are_refused():
    release = FixedLogits(np.zeros((3, 2)))
    x = np.zeros((3, 1))
    for method in (release.losses, release.confidence):
        with pytest.raises(ValueError, match=r"y must be an integer array of shape \(3,\), got int64 \(2,\)"):
            method(x, np.array([0, 1]))
        with pytest.raises(ValueError, match=r"y must be an integer array of shape \(3,\), got float64"):
            method(x, np.zeros(3))
        with pytest.raises(ValueError, match=r"y must hold labels in 0\.\.1, got 0\.\.2"):
            method(x, np.array([0, 1, 2]))
        with pytest.raises(ValueError, match=r"y must hold labels in 0\.\.1, got -1\.\.0"):
            method(x, np.array([0, -1, 0]))


def test_bad_features_are_refused():
    net = _network()
    with pytest.raises(ValueError, match=r"x must have shape \(n, 4\), got \(3, 5\)"):
        net.logits(np.zeros((3, 5)))
    with pytest.raises(ValueError, match=r"x must have shape \(n, 4\), got \(4,\)"):
        net.logits(np.zeros(4))
    with pytest.raises(TypeError, match="x must be a real array, got dtype <U1"):
        net.logits(np.full((2, 4), "a"))
    with pytest.raises(ValueError, match=r"x must have shape \(n, 2\)"):
        _stumps().raw(np.zeros((2, 3)))


def test_confidence_from_logits_is_the_confidence():
    nets = [_network(s) for s in range(3)]
    x = np.random.default_rng(5).normal(size=(7, 4))
    y = np.arange(7) % 3
    for net in nets:
        got = net.confidence_from_logits(net.logits(x), y)
        assert got.shape == (7,)
        np.testing.assert_array_equal(got, net.confidence(x, y))
    with pytest.raises(ValueError, match=r"y must be an integer array of shape \(7,\)"):
        nets[0].confidence_from_logits(nets[0].logits(x), y[:3])


# -- networks ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_network_logits_are_the_layers_in_float64(activation):
    from scipy.special import erf

    net = _network(6, activation=activation)
    x = np.random.default_rng(7).normal(size=(25, 4))
    act = {
        "relu": lambda h: np.maximum(h, 0),
        "tanh": np.tanh,
        "elu": lambda h: np.where(h > 0, h, np.expm1(np.minimum(h, 0))),
        "gelu": lambda h: 0.5 * h * (1 + erf(h / np.sqrt(2))),
    }[activation]
    h = x.astype(np.float32).astype(np.float64)
    for k, (w, b) in enumerate(zip(net.weights, net.biases, strict=True)):
        h = h @ w.astype(np.float64) + b
        if k < 2:
            h = act(h)
    z = net.logits(x)
    assert z.dtype == np.float64 and z.shape == (25, 3)
    assert net.n_features == 4 and net.n_classes == 3 and net.kind == "network"
    np.testing.assert_allclose(z, h, rtol=1e-4, atol=1e-4)  # the release computes in float32


def test_network_bad_constructions_are_refused():
    w = np.zeros((4, 3), np.float32)
    b = np.zeros(3, np.float32)
    with pytest.raises(ValueError, match="weights and biases must be one per layer, got 0 and 0"):
        NetworkRelease(weights=(), biases=())
    with pytest.raises(ValueError, match="weights and biases must be one per layer, got 2 and 1"):
        NetworkRelease(weights=(w, w), biases=(b,))
    with pytest.raises(ValueError, match="activation must be one of relu, tanh, elu, gelu, got 'sigmoid'"):
        NetworkRelease(weights=(w,), biases=(b,), activation="sigmoid")
    with pytest.raises(ValueError, match=r"layer 0 has weights \(4, 3\) and biases \(2,\) that do not chain"):
        NetworkRelease(weights=(w,), biases=(np.zeros(2),))
    with pytest.raises(ValueError, match=r"layer 1 has weights \(4, 3\) and biases \(3,\) that do not chain"):
        NetworkRelease(weights=(w, w), biases=(b, b))
    with pytest.raises(ValueError, match=r"layer 0 has weights \(4,\)"):
        NetworkRelease(weights=(np.zeros(4),), biases=(b,))


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_network_round_trips_through_its_arrays(activation):
    net = _network(8, sizes=(4, 7, 7, 2, 3), activation=activation)
    arrays = net.to_arrays()
    assert str(arrays["kind"]) == "network" and str(arrays["activation"]) == activation
    again = decode_release(arrays)
    assert isinstance(again, NetworkRelease) and again.activation == activation
    assert len(again.weights) == 4
    x = np.random.default_rng(9).normal(size=(30, 4))
    np.testing.assert_array_equal(again.logits(x), net.logits(x))
    for a, b in zip(again.weights + again.biases, net.weights + net.biases, strict=True):
        assert a.dtype == np.float32
        np.testing.assert_array_equal(a, b)


# -- trees ------------------------------------------------------------------------------------------------------
def test_tree_ensemble_sums_its_trees_and_goes_left_at_the_threshold():
    trees = _stumps()
    rng = np.random.default_rng(10)
    x = np.concatenate(
        [
            rng.normal(0, 2, size=(200, 2)),
            [[0.5, -1.0], [0.5, 5.0], [2.0, -1.0], [np.nextafter(np.float32(0.5), np.float32(1)), -3.0]],
            [[np.nextafter(np.float32(2), np.float32(3)), -3.0]],
        ]
    ).astype(np.float32)
    raw = trees.raw(x)
    assert raw.shape == (205, 1)
    np.testing.assert_array_equal(raw[:, 0], _stumps_by_hand(x))
    # boundary records: x[f] == threshold goes left
    want = [0.125 - 1 + 0.25, 0.125 - 1 + 0.5, 0.125 + 2 + 0.25, 0.125 + 2 + 0.25, 0.125 + 2 - 0.75]
    np.testing.assert_array_equal(raw[-5:, 0], want)
    # two classes: the logits are (0, log-odds of class 1)
    z = trees.logits(x)
    np.testing.assert_array_equal(z, np.column_stack([np.zeros(205), raw[:, 0]]))
    np.testing.assert_allclose(trees.probabilities(x)[:, 1], 1 / (1 + np.exp(-raw[:, 0])), rtol=1e-12)


def test_multiclass_tree_ensemble_adds_each_tree_to_its_class():
    # six stumps, one per class and round: the class-c tree of round r has leaf values (c + r, −c)
    t = 6
    tree_class = np.array([0, 1, 2, 0, 1, 2], dtype=np.int32)
    value = np.zeros((t, 3))
    for i in range(t):
        c, r = int(tree_class[i]), i // 3
        value[i, 1:] = [c + r, -c]
    trees = TreeEnsembleRelease(
        feature=np.zeros((t, 3), np.int32),
        threshold=np.zeros((t, 3)),
        left=np.tile(np.array([1, 0, 0], np.int32), (t, 1)),
        right=np.tile(np.array([2, 0, 0], np.int32), (t, 1)),
        value=value,
        leaf=np.tile([False, True, True], (t, 1)),
        tree_class=tree_class,
        baseline=np.array([0.5, -0.5, 0.0]),
        n_features=1,
        n_classes=3,
    )
    x = np.array([[-1.0], [0.0], [1.0]], dtype=np.float32)
    want_left = np.array([0.5 + 0 + 1, -0.5 + 1 + 2, 0.0 + 2 + 3])
    want_right = np.array([0.5, -0.5 - 2, 0.0 - 4])
    np.testing.assert_array_equal(trees.logits(x), np.stack([want_left, want_left, want_right]))


def test_tree_ensemble_round_trips_through_its_arrays():
    trees = _stumps()
    arrays = trees.to_arrays()
    assert str(arrays["kind"]) == "trees"
    again = decode_release(arrays)
    assert isinstance(again, TreeEnsembleRelease)
    assert (again.n_features, again.n_classes) == (2, 2)
    x = np.random.default_rng(11).normal(0, 2, size=(100, 2))
    np.testing.assert_array_equal(again.logits(x), trees.logits(x))
    for name, arr in trees.to_arrays().items():
        np.testing.assert_array_equal(again.to_arrays()[name], arr)


def test_tree_ensemble_bad_constructions_are_refused():
    good = _stumps().to_arrays()
    fields = {k: good[k] for k in ("feature", "threshold", "left", "right", "value", "leaf", "tree_class", "baseline")}
    for name in ("threshold", "left", "right", "value", "leaf"):
        bad = dict(fields, **{name: fields[name][:, :4]})
        with pytest.raises(ValueError, match=rf"{name} must have the shape of feature \(2, 5\), got \(2, 4\)"):
            TreeEnsembleRelease(**bad, n_features=2, n_classes=2)
    with pytest.raises(ValueError, match=r"baseline must have shape \(1,\) and tree_class \(2,\)"):
        TreeEnsembleRelease(**dict(fields, baseline=np.zeros(2)), n_features=2, n_classes=2)
    with pytest.raises(ValueError, match=r"baseline must have shape \(3,\) and tree_class \(2,\)"):
        TreeEnsembleRelease(**fields, n_features=2, n_classes=3)
    with pytest.raises(ValueError, match=r"baseline must have shape \(1,\) and tree_class \(2,\)"):
        TreeEnsembleRelease(**dict(fields, tree_class=np.zeros(3, np.int32)), n_features=2, n_classes=2)


# -- the codec --------------------------------------------------------------------------------------------------
def test_decode_release_refuses_unknown_kinds():
    arrays = _network().to_arrays()
    kinds = "network, trees, convnet, lookup, module"
    with pytest.raises(ValueError, match=rf"arrays must hold a model release of kind {kinds}, got 'forest'"):
        decode_release({**arrays, "kind": np.array("forest")})
    del arrays["kind"]
    with pytest.raises(ValueError, match=rf"arrays must hold a model release of kind {kinds}, got None"):
        decode_release(arrays)
    with pytest.raises(ValueError, match="got 'fixed'"):
        decode_release(FixedLogits(np.zeros((1, 2))).to_arrays())


@pytest.mark.parametrize("compress", [False, True])
def test_releases_round_trip_through_an_npz_without_pickles(compress):
    x = np.random.default_rng(12).normal(0, 2, size=(50, 4)).astype(np.float32)
    for release, xs in ((_network(13, activation="gelu"), x), (_stumps(), x[:, :2])):
        buf = io.BytesIO()
        (np.savez_compressed if compress else np.savez)(buf, allow_pickle=False, **release.to_arrays())
        buf.seek(0)
        with np.load(buf, allow_pickle=False) as npz:
            assert all(npz[k].dtype != object for k in npz.files)
            again = decode_release({k: npz[k] for k in npz.files})
        assert type(again) is type(release)
        np.testing.assert_array_equal(again.logits(xs), release.logits(xs))
        y = np.arange(50) % release.n_classes
        np.testing.assert_array_equal(again.confidence(xs, y), release.confidence(xs, y))
