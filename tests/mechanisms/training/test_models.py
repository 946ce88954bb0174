"""The trained-model mechanisms (logistic regression, MLP, DP-SGD MLP) and their releases through the cache.

Reproducibility (same rng ⇒ identical model, another rng ⇒ another), batched training (``release_runs`` on K masks,
also in groups of different training sizes, equals K separate trainings), a sanity check that training learns,
parameter checks, DP-SGD's claim and public size, and the model release cache: a hit is the fresh release without
training again, and any change of what determines the release misses (SPEC §8).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import dp_accounting
import numpy as np
import pytest
import torch
from sklearn.ensemble import HistGradientBoostingClassifier  # noqa: F401 (loaded before the thread limit below)
from threadpoolctl import threadpool_limits

from privgame.analysis.accounting import NeighbouringRelation
from privgame.core.cache import ArtefactCache
from privgame.mechanisms.cached import cached_release, cached_release_many, release_key
from privgame.mechanisms.dpsgd.classifier import DPSGDClassifier
from privgame.mechanisms.dpsgd.models import mlp
from privgame.mechanisms.training.data import TrainingData
from privgame.mechanisms.training.models import MAX_EPOCHS, LogisticRegressionClassifier, MLPClassifier
from privgame.mechanisms.training.network import initial_network, network_release
from privgame.mechanisms.training.release import ACTIVATIONS, NetworkRelease
from privgame.mechanisms.training.trees import GradientBoostedTrees

N, D = 80, 4
# a model trained in a batch is the model trained alone, to the bit (network._FlatAdam; DP-SGD's ensembles)
BATCH_ATOL = 0.0


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny models gain nothing from threads, and on a loaded 2-core machine OpenMP's spinning threads made each
    training ~50x slower (measured); restored afterwards (sklearn is imported above so that its OpenMP is limited)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    with threadpool_limits(limits=1):
        yield
    torch.set_num_threads(threads)


def _pool(seed: int = 0, n: int = N, n_classes: int = 2) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, D)).astype(np.float32)
    y = (np.digitize(x[:, 0] + 0.5 * x[:, 1], [-0.4, 0.4]) % n_classes).astype(np.int64)
    return x, y


def _mask(seed: int, count: int, n: int = N) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    mask[np.random.default_rng(seed).permutation(n)[:count]] = True
    return mask


def _mlp() -> MLPClassifier:
    return MLPClassifier(hidden=(8,), epochs=3, batch_size=16, learning_rate=0.01)


def _logistic() -> LogisticRegressionClassifier:
    return LogisticRegressionClassifier(epochs=3, batch_size=16, learning_rate=0.05)


def _dpsgd() -> DPSGDClassifier:
    return DPSGDClassifier(noise_multiplier=1.0, sampling_rate=0.1, steps=10, hidden=(8,), learning_rate=0.1)


def _linear_factory(input_shape: tuple[int, ...], n_classes: int, *, generator: torch.Generator) -> torch.nn.Module:
    """A user's model by factory path (``model`` of dpsgd-mlp): logistic regression."""
    from privgame.mechanisms.dpsgd.models import init_parameters

    return init_parameters(torch.nn.Linear(input_shape[0], n_classes), generator=generator)


NETWORKS = {"mlp": _mlp, "logistic-regression": _logistic, "dpsgd-mlp": _dpsgd}


def _rngs(seed: int, k: int) -> list[np.random.Generator]:
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(k)]


def _max_difference(a: NetworkRelease, b: NetworkRelease, x: np.ndarray) -> float:
    return float(np.abs(a.logits(x) - b.logits(x)).max())


def _identical(a: Any, b: Any) -> bool:
    one, two = a.to_arrays(), b.to_arrays()
    return one.keys() == two.keys() and all(np.array_equal(one[k], two[k]) for k in one)


# -- reproducibility and batching -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NETWORKS)
def test_same_rng_same_model_and_another_rng_another(name):
    mech = NETWORKS[name]()
    x, y = _pool()
    data = TrainingData(x, y, _mask(1, 40))
    a = mech.release(data, rng=np.random.default_rng(5))
    b = mech.release(data, rng=np.random.default_rng(5))
    c = mech.release(data, rng=np.random.default_rng(6))
    assert isinstance(a, NetworkRelease)
    assert _identical(a, b)
    assert not np.array_equal(a.weights[0], c.weights[0])
    assert _max_difference(a, c, x) > 1e-3


@pytest.mark.parametrize("name", NETWORKS)
def test_release_runs_equals_separate_releases_in_two_size_groups(name):
    """K masks, interleaved sizes 40 / 33 (two batches), equal K separate trainings and keep their order."""
    mech = NETWORKS[name]()
    x, y = _pool()
    sizes = [40, 33, 40, 40, 33]
    data = [TrainingData(x, y, _mask(10 + k, s)) for k, s in enumerate(sizes)]
    if name == "dpsgd-mlp":  # DP-SGD groups by the PUBLIC size: give two public sizes too
        data = [TrainingData(x, y, d.include, size=41 if s == 40 else 34) for d, s in zip(data, sizes, strict=True)]
    batched = mech.release_runs(data, rngs=_rngs(3, len(data)))
    separate = [mech.release(d, rng=r) for d, r in zip(data, _rngs(3, len(data)), strict=True)]
    assert len(batched) == len(data)
    for a, b in zip(batched, separate, strict=True):
        assert _max_difference(a, b, x) <= BATCH_ATOL
        for wa, wb in zip(a.weights + a.biases, b.weights + b.biases, strict=True):
            np.testing.assert_allclose(wa, wb, rtol=0, atol=BATCH_ATOL)
    # the models differ from each other (the order is kept, not one model repeated)
    assert _max_difference(batched[0], batched[2], x) > 1e-3


@pytest.mark.parametrize("name", NETWORKS)
def test_excluded_records_do_not_change_the_model(name):
    mech = NETWORKS[name]()
    x, y = _pool()
    mask = _mask(2, 40)
    other_x, other_y = x.copy(), y.copy()
    other_x[~mask] = 7.0
    other_y[~mask] = 1 - other_y[~mask]
    a = mech.release(TrainingData(x, y, mask), rng=np.random.default_rng(4))
    b = mech.release(TrainingData(other_x, other_y, mask), rng=np.random.default_rng(4))
    assert _identical(a, b)


def test_release_runs_arguments():
    mech = _logistic()
    x, y = _pool()
    data = TrainingData(x, y, _mask(0, 40))
    assert mech.release_runs([], rngs=[]) == []
    with pytest.raises(ValueError, match="release_runs needs one rng per input, got 2 inputs and 1 rngs"):
        mech.release_runs([data, data], rngs=_rngs(0, 1))
    with pytest.raises(TypeError, match=r"rngs\[0\] must be a numpy.random.Generator, got 3"):
        mech.release_runs([data], rngs=[3])
    with pytest.raises(TypeError, match=r"data must be a privgame\.mechanisms\.training\.TrainingData, got tuple"):
        mech.release((x, y), rng=np.random.default_rng(0))
    with pytest.raises(
        TypeError, match=r"data\[1\] must be a privgame\.mechanisms\.training\.TrainingData, got ndarray"
    ):
        mech.release_runs([data, x], rngs=_rngs(0, 2))
    with pytest.raises(ValueError, match=r"data\[1\] must share data\[0\]'s pool"):
        mech.release_runs([data, TrainingData(x + 1, y, data.include)], rngs=_rngs(0, 2))


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_released_network_computes_what_torch_trains(activation):
    """The release's numpy forward pass equals the torch module the trainers train (initial weights)."""
    sizes = (D, 7, 5, 3)
    net = mlp(sizes, generator=torch.Generator().manual_seed(11), activation=activation)
    release = network_release(initial_network(sizes, activation, torch.Generator().manual_seed(11)), activation)
    x = np.random.default_rng(12).normal(size=(50, D)).astype(np.float32)
    with torch.no_grad():
        want = net(torch.from_numpy(x)).double().numpy()
    np.testing.assert_allclose(release.logits(x), want, rtol=0, atol=1e-5)  # float32 rounding of two libraries


def test_networks_have_one_logit_per_class_even_for_classes_not_trained_on():
    x, y = _pool(n_classes=3)
    mask = _mask(0, 40) & (y != 2)
    for mech in (_mlp(), _logistic(), _dpsgd()):
        release = mech.release(TrainingData(x, y, mask, n_classes=3), rng=np.random.default_rng(0))
        assert release.n_classes == 3 and release.n_features == D
        assert release.logits(x).shape == (N, 3)


@pytest.mark.parametrize("name", ["mlp", "logistic-regression"])
def test_training_learns_an_easy_problem(name):
    """Two blobs 6 standard deviations apart: a trained model separates them (training does something)."""
    rng = np.random.default_rng(20)
    y = rng.integers(0, 2, 200)
    x = (rng.normal(size=(200, 2)) + 3.0 * (2 * y[:, None] - 1)).astype(np.float32)
    mech = (
        MLPClassifier(hidden=(16,), epochs=20, batch_size=32, learning_rate=0.01)
        if name == "mlp"
        else LogisticRegressionClassifier(epochs=20, batch_size=32, learning_rate=0.05)
    )
    train = np.arange(200) < 100
    release = mech.release(TrainingData(x, y, train), rng=np.random.default_rng(0))
    correct = release.logits(x).argmax(axis=1) == y
    # the Bayes error is Φ(−3·√2) ≈ 1e-5: 100 records give ≥ 97 % if training works (measured: 100 %)
    assert correct[train].mean() >= 0.97 and correct[~train].mean() >= 0.95
    # and the mean training loss fell well below log 2 (about an untrained network's)
    assert release.losses(x[train], y[train]).mean() < 0.3


# -- parameters -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"epochs": 0}, ValueError, rf"epochs must be an integer in \[1, {MAX_EPOCHS}\], got 0\."),
        ({"epochs": MAX_EPOCHS + 1}, ValueError, r"epochs must be an integer in \[1, 100000\], got 100001\."),
        ({"epochs": 2.0}, TypeError, r"epochs must be an integer, got 2\.0\."),
        ({"batch_size": 0}, ValueError, r"batch_size must be an integer >= 1, got 0\."),
        ({"batch_size": True}, TypeError, r"batch_size must be an integer, got True\."),
        ({"learning_rate": 0.0}, ValueError, r"learning_rate must be > 0, got 0\.0\."),
        ({"learning_rate": float("nan")}, ValueError, r"learning_rate must be > 0, got nan\."),
        ({"learning_rate": float("inf")}, ValueError, r"learning_rate must be finite and > 0, got inf\."),
        ({"learning_rate": "0.1"}, TypeError, r"learning_rate must be a real number, got '0\.1'\."),
        ({"weight_decay": -1e-3}, ValueError, r"weight_decay must be >= 0, got -0\.001\."),
    ],
)
@pytest.mark.parametrize("cls", [LogisticRegressionClassifier, MLPClassifier])
def test_network_parameters_are_checked(cls, kwargs, error, match):
    with pytest.raises(error, match=match):
        cls(**kwargs)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"hidden": 64}, TypeError, r"hidden must be a list of layer widths, got 64\."),
        ({"hidden": "64"}, TypeError, r"hidden must be a list of layer widths, got '64'\."),
        ({"hidden": (8, 0)}, ValueError, r"hidden\[1\] must be an integer in \[1, 65536\], got 0\."),
        ({"hidden": (1 << 17,)}, ValueError, r"hidden\[0\] must be an integer in \[1, 65536\], got 131072\."),
        ({"hidden": (8.0,)}, TypeError, r"hidden\[0\] must be an integer, got 8\.0\."),
        ({"activation": "sigmoid"}, ValueError, r"activation must be one of relu, tanh, elu, gelu, got 'sigmoid'\."),
    ],
)
@pytest.mark.parametrize("cls", [MLPClassifier, DPSGDClassifier])
def test_architecture_parameters_are_checked(cls, kwargs, error, match):
    extra = {"noise_multiplier": 1.0} if cls is DPSGDClassifier else {}
    with pytest.raises(error, match=match):
        cls(**kwargs, **extra)


def test_hidden_widths_are_stored_as_a_tuple():
    assert MLPClassifier(hidden=[4, 5]).hidden == (4, 5)
    assert DPSGDClassifier(noise_multiplier=1.0, hidden=[4]).hidden == (4,)
    assert MLPClassifier(hidden=[4, 5]) == MLPClassifier(hidden=(4, 5))


def test_non_private_models_claim_nothing():
    assert _mlp().privacy_claim() is None
    assert _logistic().privacy_claim() is None


# -- DP-SGD -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("q, sigma, steps", [(0.1, 1.0, 10), (0.02, 1.5, 300), (256 / 60000, 1.1, 1000)])
def test_dpsgd_claim_is_dp_accounting_for_its_q_sigma_steps(q, sigma, steps):
    mech = DPSGDClassifier(noise_multiplier=sigma, sampling_rate=q, steps=steps)
    claim = mech.privacy_claim()
    assert claim.neighbouring == NeighbouringRelation.ADD_OR_REMOVE_ONE
    accountant = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps)
    # the same deterministic computation: equal up to rounding
    assert claim.epsilon(1e-5) == pytest.approx(accountant.get_epsilon(1e-5), rel=1e-9)
    assert 0 < claim.epsilon(1e-5) < np.inf


def test_dpsgd_divides_by_the_public_size():
    mech = _dpsgd()
    x, y = _pool()
    mask = _mask(3, 40)
    rng = 8
    default = mech.release(TrainingData(x, y, mask), rng=np.random.default_rng(rng))
    explicit = mech.release(TrainingData(x, y, mask, size=40), rng=np.random.default_rng(rng))
    larger = mech.release(TrainingData(x, y, mask, size=80), rng=np.random.default_rng(rng))
    assert _identical(default, explicit)  # size None is the included count
    # same rows, same randomness, only the public n differs: the step qn differs, so the model does
    assert _max_difference(default, larger, x) > 1e-3
    # and a world with one record more but the same public size trains with the same divisor (batched together)
    plus_one = mask.copy()
    plus_one[np.flatnonzero(~mask)[0]] = True
    runs = mech.release_runs(
        [TrainingData(x, y, mask, size=41), TrainingData(x, y, plus_one, size=41)], rngs=_rngs(9, 2)
    )
    alone = mech.release(TrainingData(x, y, plus_one, size=41), rng=_rngs(9, 2)[1])
    assert _max_difference(runs[1], alone, x) <= BATCH_ATOL


def test_dpsgd_parameters_are_checked():
    with pytest.raises(ValueError, match="exactly one of epsilon and noise_multiplier must be given"):
        DPSGDClassifier()
    with pytest.raises(ValueError, match="exactly one of epsilon and noise_multiplier must be given"):
        DPSGDClassifier(epsilon=1.0, noise_multiplier=1.0)
    with pytest.raises(ValueError, match=r"sampling_rate must be in \(0, 1\], got 0\.0\."):
        DPSGDClassifier(noise_multiplier=1.0, sampling_rate=0.0)
    with pytest.raises(ValueError, match=r"steps must be an integer >= 1, got 0\."):
        DPSGDClassifier(noise_multiplier=1.0, steps=0)


# -- the model release cache ------------------------------------------------------------------------------------
def _trees() -> GradientBoostedTrees:
    return GradientBoostedTrees(max_iter=5, max_leaf_nodes=4, min_samples_leaf=5)


CACHED = {**NETWORKS, "gradient-boosted-trees": _trees}


def _count_training(monkeypatch: pytest.MonkeyPatch, mech: Any) -> list[int]:
    calls: list[int] = []
    original = type(mech).release_runs

    def counting(self: Any, data: Any, *, rngs: Any) -> Any:
        calls.append(len(data))
        return original(self, data, rngs=rngs)

    monkeypatch.setattr(type(mech), "release_runs", counting)
    return calls


@pytest.mark.parametrize("name", CACHED)
def test_a_cached_model_release_is_the_fresh_one_without_training_again(name, tmp_path, monkeypatch):
    mech = CACHED[name]()
    x, y = _pool()
    data = [TrainingData(x, y, _mask(30 + k, 40)) for k in range(3)]
    seeds = np.random.SeedSequence(31).spawn(3)
    direct = [mech.release(d, rng=np.random.default_rng(s)) for d, s in zip(data, seeds, strict=True)]
    cache = ArtefactCache(tmp_path)
    calls = _count_training(monkeypatch, mech)
    fresh = cached_release_many(mech, data, seeds=seeds, cache=cache)
    assert calls == [3]  # the three misses trained in one batch
    again = cached_release_many(mech, data, seeds=seeds, cache=cache)
    assert calls == [3] and cache.hits == 3
    for a, b, c in zip(fresh, again, direct, strict=True):
        assert type(b) is type(a)
        assert _identical(a, b)
        np.testing.assert_array_equal(a.logits(x), b.logits(x))
        assert np.abs(a.logits(x) - c.logits(x)).max() <= BATCH_ATOL  # the batch is the separate releases
    # a partial hit trains only the new run
    more = [*data, TrainingData(x, y, _mask(40, 40))]
    cached_release_many(mech, more, seeds=[*seeds, np.random.SeedSequence(32)], cache=cache)
    assert calls == [3, 1]
    # no cache: always trains
    cached_release(mech, data[0], seed=seeds[0], cache=None)
    assert calls == [3, 1, 1]


PARAMETER_CHANGES: dict[str, list[dict[str, Any]]] = {
    "mlp": [
        {"epochs": 4},
        {"batch_size": 17},
        {"learning_rate": 0.011},
        {"weight_decay": 1e-4},
        {"hidden": (9,)},
        {"hidden": (8, 8)},
        {"activation": "tanh"},
        {"device": "auto"},  # the requested device is part of the key (a GPU rounds differently)
    ],
    "logistic-regression": [
        {"epochs": 4},
        {"batch_size": 17},
        {"learning_rate": 0.051},
        {"weight_decay": 1e-4},
        {"device": "auto"},
    ],
    "dpsgd-mlp": [
        {"noise_multiplier": 1.01},
        {"noise_multiplier": None, "epsilon": 2.0},
        {"delta": 2e-5},
        {"sampling_rate": 0.11},
        {"steps": 11},
        {"clip_norm": 1.1},
        {"learning_rate": 0.11},
        {"momentum": 0.5},
        {"normalisation": "none"},
        {"hidden": (9,)},
        {"activation": "elu"},
        {"device": "auto"},
        {"model": f"{__name__}:_linear_factory", "hidden": (64,)},  # a factory replaces the MLP of hidden
        {"loop": "privgame"},  # a training loop replaces the engine's batched training
    ],
    "gradient-boosted-trees": [
        {"max_iter": 6},
        {"learning_rate": 0.11},
        {"max_leaf_nodes": 5},
        {"max_depth": 3},
        {"min_samples_leaf": 6},
        {"l2_regularization": 0.1},
        {"max_features": 0.9},
    ],
}


@pytest.mark.parametrize("name", CACHED)
def test_a_change_of_any_model_parameter_misses(name):
    mech = CACHED[name]()
    changed = {key for change in PARAMETER_CHANGES[name] for key in change}
    # every parameter is covered: a new one must be added here
    assert changed == {f.name for f in dataclasses.fields(mech) if f.compare}
    x, y = _pool()
    data = TrainingData(x, y, _mask(0, 40))
    seed = np.random.SeedSequence(1)
    base = release_key(mech, data, seed)
    assert base is not None and release_key(CACHED[name](), data, seed) == base
    keys = {base}
    for change in PARAMETER_CHANGES[name]:
        key = release_key(dataclasses.replace(mech, **change), data, seed)
        assert key not in keys, change
        keys.add(key)
    # same parameters, another mechanism: logistic regression is an MLP without hidden layers, still another key
    assert release_key(MLPClassifier(hidden=(), epochs=3, batch_size=16, learning_rate=0.05), data, seed) != (
        release_key(_logistic(), data, seed)
    )


def _data_changes(x: np.ndarray, y: np.ndarray, mask: np.ndarray) -> dict[str, TrainingData]:
    x_in, x_out, y_in, y_out = x.copy(), x.copy(), y.copy(), y.copy()
    i, o = np.flatnonzero(mask)[0], np.flatnonzero(~mask)[0]
    x_in[i, 0] = np.nextafter(x_in[i, 0], np.float32(np.inf))  # one ulp of one feature of one training record
    x_out[o, 1] += 1.0  # a record the model does not train on: the pool still differs
    y_in[i] = 1 - y_in[i]
    y_out[o] = 1 - y_out[o]
    swapped = mask.copy()
    swapped[i], swapped[o] = False, True  # same count, another record
    grown = mask.copy()
    grown[o] = True
    return {
        "x of a training record": TrainingData(x_in, y, mask),
        "x of another record": TrainingData(x_out, y, mask),
        "y of a training record": TrainingData(x, y_in, mask),
        "y of another record": TrainingData(x, y_out, mask),
        "include (swapped)": TrainingData(x, y, swapped),
        "include (grown)": TrainingData(x, y, grown),
        "n_classes": TrainingData(x, y, mask, n_classes=3),
        "size": TrainingData(x, y, mask, size=int(mask.sum()) + 1),
        "row order": TrainingData(x[::-1].copy(), y[::-1].copy(), mask[::-1].copy()),
    }


@pytest.mark.parametrize("name", CACHED)
def test_a_change_of_the_data_or_the_seed_misses(name):
    mech = CACHED[name]()
    x, y = _pool()
    mask = _mask(0, 40)
    data = TrainingData(x, y, mask)
    parent = np.random.SeedSequence(1)
    seed, sibling = parent.spawn(2)
    base = release_key(mech, data, seed)
    keys = {base: "base"}
    for what, other in _data_changes(x, y, mask).items():
        key = release_key(mech, other, seed)
        assert key not in keys, (what, keys.get(key))
        keys[key] = what
    seeds = {
        "another entropy": np.random.SeedSequence(2).spawn(2)[0],
        "another spawn key": sibling,
        "the parent": parent,
        "another pool size": np.random.SeedSequence(1, spawn_key=(0,), pool_size=8),
    }
    for what, other_seed in seeds.items():
        key = release_key(mech, data, other_seed)
        assert key not in keys, (what, keys.get(key))
        keys[key] = what
    # equal inputs give the same key: a copy of the pool, and size=None spelled out as the included count
    assert release_key(mech, TrainingData(x.copy(), y.copy(), mask.copy()), np.random.SeedSequence(1).spawn(2)[0]) == (
        base
    )
    assert release_key(mech, TrainingData(x, y, mask, size=int(mask.sum())), seed) == base


def test_a_changed_input_retrains_end_to_end(tmp_path, monkeypatch):
    """Through the cache: every change above trains again, and its release is the fresh one, not the cached."""
    mech = _logistic()
    x, y = _pool()
    mask = _mask(0, 40)
    seed = np.random.SeedSequence(1)
    changes = [(mech, d, seed) for d in _data_changes(x, y, mask).values()]
    changes += [(dataclasses.replace(mech, epochs=4), TrainingData(x, y, mask), seed)]
    changes += [(mech, TrainingData(x, y, mask), np.random.SeedSequence(2))]
    fresh = [m.release(d, rng=np.random.default_rng(s)) for m, d, s in changes]
    cache = ArtefactCache(tmp_path)
    calls = _count_training(monkeypatch, mech)
    first = cached_release(mech, TrainingData(x, y, mask), seed=seed, cache=cache)
    for k, ((m, d, s), want) in enumerate(zip(changes, fresh, strict=True), start=2):
        got = cached_release(m, d, seed=s, cache=cache)
        assert len(calls) == k  # trained again
        assert _identical(got, want)  # and answered with what the mechanism computes for this input
    assert cache.hits == 0
    # and the unchanged input is still a hit
    assert _identical(cached_release(mech, TrainingData(x, y, mask), seed=seed, cache=cache), first)
    assert len(calls) == len(changes) + 1 and cache.hits == 1


def test_other_inputs_are_not_cached():
    mech = _logistic()
    x, _ = _pool()
    assert release_key(mech, x, np.random.SeedSequence(0)) is None


@pytest.mark.parametrize(
    "device, error", [("gpu", ValueError), ("cuda:x", ValueError), ("", ValueError), (0, TypeError)]
)
def test_bad_devices_are_refused_without_torch(device, error):
    from privgame.mechanisms.training import MLPClassifier

    with pytest.raises(error, match="device must be"):
        MLPClassifier(device=device)
