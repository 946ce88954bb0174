"""Black-box input-space canaries in DP-SGD and the negative-loss attack."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

torch = pytest.importorskip("torch")

from privgame.attacks import NegativeLoss  # noqa: E402
from privgame.data.canaries import canary_data  # noqa: E402
from privgame.mechanisms.dpsgd.blackbox import DPSGDBlackBox  # noqa: E402
from privgame.mechanisms.dpsgd.classifier import DPSGDClassifier  # noqa: E402
from privgame.mechanisms.training.canaries import CanaryData, CanaryModelRelease  # noqa: E402
from privgame.mechanisms.training.release import NetworkRelease  # noqa: E402


def digits(bits, train_rows=100, canary="ood", canary_seed=0):
    """The membership bits over the first ``train_rows`` digits with the game's canaries."""
    return canary_data(np.asarray(bits), data="digits", train_rows=train_rows, canary=canary, canary_seed=canary_seed)


def test_validation_names_the_field():
    with pytest.raises(ValueError, match="exactly one of epsilon and noise_multiplier"):
        DPSGDBlackBox()
    with pytest.raises(ValueError, match="activation must be one of relu, tanh, elu, gelu"):
        DPSGDBlackBox(noise_multiplier=1.0, activation="sigmoid")
    with pytest.raises(ValueError, match=r"hidden\[0\] must be an integer in \[1, 65536\], got 0"):
        DPSGDBlackBox(noise_multiplier=1.0, hidden=(0,))
    with pytest.raises(TypeError, match="hidden must be a list of layer widths"):
        DPSGDBlackBox(noise_multiplier=1.0, hidden=32)  # type: ignore[arg-type]
    assert DPSGDBlackBox(noise_multiplier=1.0, hidden=[32]).hidden == (32,)  # type: ignore[arg-type]
    for moved in ("train_rows", "canary", "canary_seed"):  # the game's parameters now
        with pytest.raises(TypeError, match=moved):
            DPSGDBlackBox(noise_multiplier=1.0, **{moved: 1})


def test_needs_canary_examples():
    mech = DPSGDBlackBox(noise_multiplier=1.0, steps=2)
    with pytest.raises(ValueError, match="data must carry canary examples"):
        mech.release(digits(np.zeros(10, dtype=bool), canary=None), rng=np.random.default_rng(0))
    with pytest.raises(
        TypeError, match=r"data must be a privgame\.mechanisms\.training\.canaries\.CanaryData, got ndarray"
    ):
        mech.release(np.zeros(10, dtype=bool), rng=np.random.default_rng(0))


def test_release_is_a_model_with_the_public_canaries():
    data = digits(np.arange(20) % 2 == 0)
    release = DPSGDBlackBox(noise_multiplier=1.0, steps=3, hidden=(8,)).release(data, rng=np.random.default_rng(0))
    assert isinstance(release, CanaryModelRelease) and isinstance(release.model, NetworkRelease)
    assert (release.model.n_features, release.model.n_classes) == (64, 10)
    assert [w.shape for w in release.model.weights] == [(64, 8), (8, 10)]
    np.testing.assert_array_equal(release.canary_x, data.canary_x)
    np.testing.assert_array_equal(release.canary_y, data.canary_y)
    x, y = release.canaries(np.array([3, 1]))
    np.testing.assert_array_equal(x, data.canary_x[[3, 1]])
    scores = NegativeLoss().score(release, np.array([3, 1]))
    np.testing.assert_allclose(scores, -release.model.losses(x, y))
    with pytest.raises(ValueError, match=r"targets must be indices in 0\.\.19, got 0\.\.20"):
        release.canaries(np.array([0, 20]))


def test_reproducible_and_members_have_lower_loss():
    mech = DPSGDBlackBox(noise_multiplier=0.5, sampling_rate=0.2, steps=300, learning_rate=2.0, hidden=(32,))
    data = digits(np.random.default_rng(1).random(300) < 0.5)
    bits = data.membership
    a = NegativeLoss().score(mech.release(data, rng=np.random.default_rng(2)), np.arange(300))
    b = NegativeLoss().score(mech.release(data, rng=np.random.default_rng(2)), np.arange(300))
    c = NegativeLoss().score(mech.release(data, rng=np.random.default_rng(3)), np.arange(300))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert stats.mannwhitneyu(a[bits], a[~bits], alternative="greater").pvalue < 1e-6


def test_negative_loss_needs_a_model_released_with_its_canaries():
    with pytest.raises(TypeError, match=r"must be a model released with its canaries .*, got ndarray"):
        NegativeLoss().score(np.zeros(3), np.arange(3))
    model = NetworkRelease(weights=(np.zeros((2, 2)),), biases=(np.zeros(2),))
    with pytest.raises(TypeError, match="got NetworkRelease"):  # a bare model carries no canaries
        NegativeLoss().score(model, np.arange(3))


def test_training_is_the_dpsgd_classifiers_on_rows_and_member_canaries():
    """The release is DPSGDClassifier's model on the pool rows ∪ canaries, include = rows ∪ members, public size
    n + m/2: one implementation of DP-SGD training, not two."""
    data = digits(np.random.default_rng(5).random(30) < 0.5)
    mech = DPSGDBlackBox(noise_multiplier=0.8, steps=5, sampling_rate=0.2, hidden=(8,))
    release = mech.release(data, rng=np.random.default_rng(9))
    classifier = DPSGDClassifier(noise_multiplier=0.8, steps=5, sampling_rate=0.2, learning_rate=0.5, hidden=(8,))
    pool = data.pool(size=100 + 15)
    assert pool.include[:100].all() and np.array_equal(pool.include[100:], data.membership)
    (expected,) = classifier.release_runs([pool], rngs=[np.random.default_rng(9)])
    for w, v in zip(release.model.weights, expected.weights, strict=True):
        np.testing.assert_array_equal(w, v)


def test_release_runs_equals_separate_releases():
    """K models trained at once on their own subsets (include) equal K separate releases (float32, 1e-5)."""
    mech = DPSGDBlackBox(noise_multiplier=0.8, steps=15, sampling_rate=0.2, hidden=(32,))
    first = digits(np.random.default_rng(0).random(30) < 0.5, train_rows=200)
    runs = [first, *(first.with_membership(np.random.default_rng(k).random(30) < 0.5) for k in (1, 2))]
    batched = mech.release_runs(runs, rngs=[np.random.default_rng(70 + k) for k in range(3)])
    targets = np.arange(30)
    for k, run in enumerate(runs):
        alone = mech.release(run, rng=np.random.default_rng(70 + k))
        np.testing.assert_allclose(
            NegativeLoss().score(batched[k], targets), NegativeLoss().score(alone, targets), rtol=0, atol=1e-4
        )
        for p, q in zip(alone.model.weights, batched[k].model.weights, strict=True):
            np.testing.assert_allclose(q, p, rtol=0, atol=1e-5)
    short = digits(runs[1].membership[:5], train_rows=200)
    with pytest.raises(ValueError, match="same number of canaries in every run"):
        mech.release_runs([runs[0], short], rngs=[np.random.default_rng(0), np.random.default_rng(1)])
    other = digits(runs[1].membership, train_rows=200, canary_seed=1)  # other canaries: no shared batch
    with pytest.raises(ValueError, match=r"data\[1\] must share data\[0\]'s rows and canaries"):
        mech.release_runs([runs[0], other], rngs=[np.random.default_rng(0), np.random.default_rng(1)])
    assert mech.release_runs([], rngs=[]) == []


def test_non_member_canaries_never_change_the_random_stream():
    """Training draws one Poisson uniform per real row and per canary whatever the membership: with no canary in,
    the model is the one trained on the real rows alone under the same public size."""
    mech = DPSGDBlackBox(noise_multiplier=1.0, steps=10, sampling_rate=0.2)
    none = digits(np.zeros(20, dtype=bool))
    a = mech.release(none, rng=np.random.default_rng(3))
    b = mech.release(digits(np.zeros(20, dtype=bool), canary="mislabel"), rng=np.random.default_rng(3))
    for p, q in zip(a.model.weights, b.model.weights, strict=True):  # other canaries, none inserted: same model
        np.testing.assert_array_equal(p, q)


def test_canary_data_validation_names_the_field():
    rows = digits(np.zeros(3, dtype=bool)).rows
    x = np.zeros((3, 64), dtype=np.float32)
    with pytest.raises(ValueError, match=r"canary_x must be a real array of shape \(3, 64\)"):
        CanaryData(np.zeros(3, dtype=bool), rows, np.zeros((3, 5)), np.zeros(3, dtype=int))
    with pytest.raises(ValueError, match=r"canary_y must hold labels in 0\.\.9"):
        CanaryData(np.zeros(3, dtype=bool), rows, x, np.array([0, 1, 10]))
    with pytest.raises(ValueError, match="canary_x and canary_y must be given together"):
        CanaryData(np.zeros(3, dtype=bool), rows, x)
    with pytest.raises(ValueError, match="canary_x must be finite"):
        CanaryData(np.zeros(3, dtype=bool), rows, np.full((3, 64), np.nan), np.zeros(3, dtype=int))
    with pytest.raises(ValueError, match="membership must hold at least one canary"):
        CanaryData(np.zeros(0, dtype=bool), rows)
    with pytest.raises(ValueError, match="membership must hold only 0/1"):
        CanaryData(np.array([0, 2]), rows)
    with pytest.raises(TypeError, match=r"rows must be a privgame\.mechanisms\.training\.TrainingData, got ndarray"):
        CanaryData(np.zeros(3, dtype=bool), x)
    with pytest.raises(ValueError, match="rows must include every record"):
        CanaryData(np.zeros(3, dtype=bool), rows.with_include(np.arange(len(rows)) < 5))
