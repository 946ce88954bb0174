"""The batched trainer's own layers: their gradients, the sparse first layer, and batched == separate on it.

``_BatchedLinear`` takes the narrow output layer's products transposed and ``_SparseInputLinear`` feeds one-hot rows
to the first layer as sums of weight rows (both for speed, ``benchmarks/bench_lira.py``); each must have the
derivative of ``x W + b`` (checked by ``torch.autograd.gradcheck`` in float64) and the trainer must give the models
it gives with both turned off.  On the CPU the sparse first layer and the Adam step run as numba kernels that must
give PyTorch's results to the bit (``network.fast_kernels``): the trainer must give the same models without them.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from privgame.mechanisms.dpsgd.models import mlp
from privgame.mechanisms.training import network
from privgame.mechanisms.training.data import TrainingData
from privgame.mechanisms.training.network import (
    _BatchedLinear,
    _sparse_rows,
    _SparseInputLinear,
    initial_network,
    train_networks,
)

BATCH_ATOL = 0.0  # as tests/mechanisms/training/test_models.py: a model is the same to the bit in any batch
SPARSE_ATOL = 1e-5  # the sparse first layer sums other float32 terms than the dense product: rounding apart


def _one_hot_pool(n: int = 90, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two numeric columns and three one-hot blocks (widths 8, 12, 10): 32 columns, 5 non-zeros a row at most."""
    rng = np.random.default_rng(seed)
    blocks = [np.eye(width, dtype=np.float32)[rng.integers(0, width, n)] for width in (8, 12, 10)]
    numeric = rng.normal(size=(n, 2)).astype(np.float32)
    numeric[::7, 0] = 0.0  # a numeric zero is not stored (its row has fewer non-zeros)
    x = np.hstack([numeric, *blocks])
    y = ((numeric[:, 0] + blocks[0][:, 0] - blocks[1][:, 3]) > 0).astype(np.int64)
    return x, y


def _masks(k: int, n: int, count: int, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    masks = np.zeros((k, n), dtype=bool)
    for row in masks:
        row[rng.permutation(n)[:count]] = True
    return masks


def _train(x: np.ndarray, y: np.ndarray, masks: np.ndarray, seeds: list[int], hidden: tuple[int, ...]):
    return train_networks(
        TrainingData(x, y, masks[0]),
        masks,
        [torch.Generator().manual_seed(s) for s in seeds],
        hidden=hidden,
        activation="relu",
        epochs=4,
        batch_size=16,
        learning_rate=0.01,
        weight_decay=0.0,
    )


def _max_difference(a, b) -> float:
    return max(
        float(np.abs(u - v).max())
        for ra, rb in zip(a, b, strict=True)
        for u, v in zip((*ra.weights, *ra.biases), (*rb.weights, *rb.biases), strict=True)
    )


@pytest.mark.parametrize("width", [2, 5, 16])
def test_batched_linear_has_the_derivative_of_x_w_plus_b(width):
    """Narrow (transposed products) and wide layers alike, with the input's gradient (a hidden layer's)."""
    gen = torch.Generator().manual_seed(width)
    x = torch.randn(3, 6, 7, dtype=torch.float64, generator=gen, requires_grad=True)
    w = torch.randn(3, 7, width, dtype=torch.float64, generator=gen, requires_grad=True)
    b = torch.randn(3, 1, width, dtype=torch.float64, generator=gen, requires_grad=True)
    assert torch.autograd.gradcheck(_BatchedLinear.apply, (x, w, b))
    torch.testing.assert_close(_BatchedLinear.apply(x, w, b), torch.baddbmm(b, x, w))


def test_sparse_input_linear_is_the_dense_layer_with_its_derivative():
    x_pool, _ = _one_hot_pool(20)
    x64 = torch.tensor(x_pool, dtype=torch.float64)
    index, value = _sparse_rows(x64)
    rows = torch.tensor([[0, 3, 5, 7], [1, 2, 19, 4]])  # 2 models, 4 rows each
    dense = x64[rows]
    flat = rows.reshape(-1)
    offset = (torch.arange(2) * x64.shape[1]).repeat_interleave(4).unsqueeze(1)
    gen = torch.Generator().manual_seed(3)
    w = torch.randn(2, x64.shape[1], 9, dtype=torch.float64, generator=gen, requires_grad=True)
    b = torch.randn(2, 1, 9, dtype=torch.float64, generator=gen, requires_grad=True)
    args = (index[flat] + offset, value[flat], dense)
    torch.testing.assert_close(_SparseInputLinear.apply(*args, w, b), torch.baddbmm(b, dense, w))
    assert torch.autograd.gradcheck(lambda w_, b_: _SparseInputLinear.apply(*args, w_, b_), (w, b))


def test_sparse_rows_hold_every_non_zero_and_refuse_a_dense_pool():
    x, _ = _one_hot_pool()
    x[4] = 0.0  # an all-zero row: padding only
    index, value = _sparse_rows(torch.tensor(x))
    assert index.shape == value.shape == (x.shape[0], 5)
    rebuilt = np.zeros_like(x)
    np.add.at(rebuilt, (np.arange(x.shape[0])[:, None], index.numpy()), value.numpy())
    np.testing.assert_array_equal(rebuilt, x)
    assert _sparse_rows(torch.ones(10, 32)) is None  # every column non-zero: dense
    assert _sparse_rows(torch.eye(8)) is None  # too narrow to gain anything


@pytest.mark.parametrize("hidden", [(16,), (8, 8)])
def test_the_sparse_first_layer_trains_the_models_the_dense_one_does(monkeypatch, hidden):
    x, y = _one_hot_pool()
    masks = _masks(3, x.shape[0], 50)
    sparse = _train(x, y, masks, [0, 1, 2], hidden)
    monkeypatch.setattr(network, "_SPARSE", -1.0)  # no pool is sparse enough: the dense products
    dense = _train(x, y, masks, [0, 1, 2], hidden)
    assert _max_difference(sparse, dense) <= SPARSE_ATOL


def test_batched_training_on_a_sparse_pool_equals_separate_trainings():
    x, y = _one_hot_pool()
    masks = _masks(4, x.shape[0], 45)
    batched = _train(x, y, masks, [5, 6, 7, 8], (16,))
    separate = [_train(x, y, masks[k : k + 1], [5 + k], (16,))[0] for k in range(4)]
    assert _max_difference(batched, separate) <= BATCH_ATOL
    assert _max_difference(batched[:1], batched[1:2]) > 0.1  # other masks and seeds: other models


def test_the_cpu_kernels_agree_with_pytorch_here():
    """The checks behind ``network.fast_kernels``, called directly (an error in one would turn its kernels off
    unseen: the trainer then takes PyTorch's operations, the same models, slower), on the LiRA benchmark's shapes
    (Adult: 108 columns, 13 non-zeros a row, 64 hidden units, batches of 64 and a last one of 4) and this file's.
    On a machine whose PyTorch or MKL rounds otherwise they answer False, and this test says so."""
    assert network._adam_kernels_agree()
    for shape in ((108, 64, 64, 13), (108, 64, 4, 13), (32, 16, 15, 5), (32, 16, 1, 5), (32, 16, 16, 5)):
        assert network._layer_kernels_agree(*shape), shape


@pytest.mark.parametrize(
    "hidden, activation, classes, weight_decay",
    [
        ((16,), "relu", 2, 0.0),
        ((16,), "relu", 12, 0.0),
        ((16, 8), "relu", 2, 0.01),
        ((16,), "tanh", 2, 0.0),
        ((), "relu", 16, 0.0),
    ],
)
def test_the_cpu_kernels_train_the_models_pytorch_does(monkeypatch, hidden, activation, classes, weight_decay):
    """ReLU in the kernels with one hidden layer (the output layer and the loss without autograd's graph: narrow
    and wide) or a deeper network, another activation, weight decay, and a sparse first layer that is the output
    layer (16 classes: not narrow); 46 rows a model in batches of 15 end with a batch of one row."""
    if not network.fast_kernels((32, (*hidden, classes)[0], 15, 5)):
        pytest.skip("the CPU kernels do not agree with PyTorch on this machine (the trainer does not use them)")
    x, y = _one_hot_pool(91)
    y = (np.arange(91) % classes).astype(np.int64) if classes > 2 else y
    masks = _masks(3, x.shape[0], 46)

    def train():
        return train_networks(
            TrainingData(x, y, masks[0], n_classes=classes),
            masks,
            [torch.Generator().manual_seed(s) for s in (3, 4, 5)],
            hidden=hidden,
            activation=activation,
            epochs=3,
            batch_size=15,
            learning_rate=0.01,
            weight_decay=weight_decay,
        )

    used = []

    class Spy(network._KernelSteps):
        def __init__(self, *args):
            used.append(True)
            super().__init__(*args)

    monkeypatch.setattr(network, "_KernelSteps", Spy)
    fast = train()
    assert used  # the kernels trained these
    monkeypatch.setattr(network, "fast_kernels", lambda shape=None: False)  # PyTorch's operations only
    slow = train()
    for a, b in zip(fast, slow, strict=True):
        for u, v in zip((*a.weights, *a.biases), (*b.weights, *b.biases), strict=True):
            assert np.array_equal(u.view(np.int32), v.view(np.int32))


@pytest.mark.parametrize("sizes", [(108, 64, 2), (32, 16, 8, 16), (5, 3)])
def test_initial_networks_are_the_mlps_of_the_same_generator(sizes):
    """``initial_network`` draws its numbers without building ``mlp``'s module: the same numbers, to the bit."""
    layers = initial_network(sizes, "tanh", torch.Generator().manual_seed(7))
    linears = [m for m in mlp(sizes, generator=torch.Generator().manual_seed(7)) if isinstance(m, torch.nn.Linear)]
    for (w, b), linear in zip(layers, linears, strict=True):
        assert torch.equal(w, linear.weight.detach().T) and torch.equal(b, linear.bias.detach())
