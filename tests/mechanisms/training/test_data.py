"""TrainingData: the input of the trained-model mechanisms; its checks, its derived sizes and stack_masks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privgame.mechanisms.training.data import TrainingData, as_training_data, stack_masks

N, D = 12, 3


def _arrays(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(N, D))
    y = rng.integers(0, 2, N)
    include = np.arange(N) < N // 2
    return x, y, include


def test_valid_data_is_normalised_and_sized():
    x, y, include = _arrays()
    data = TrainingData(x, y.astype(np.int32), include)
    assert data.x.dtype == np.float32 and data.x.flags.c_contiguous
    np.testing.assert_array_equal(data.x, x.astype(np.float32))
    assert data.y.dtype == np.int64
    np.testing.assert_array_equal(data.y, y)
    assert data.include is include or np.array_equal(data.include, include)
    assert data.n_classes == 2 and data.size is None
    assert len(data) == N and data.n_train == N // 2 and data.public_size == N // 2
    sized = TrainingData(x, y, include, n_classes=3, size=N + 1)  # at most one more than the pool (add/remove)
    assert sized.n_classes == 3 and sized.public_size == N + 1 and sized.n_train == N // 2
    # integer features are real numbers too
    assert TrainingData(np.ones((N, D), dtype=np.int64), y, include).x.dtype == np.float32


@pytest.mark.parametrize(
    "x, match",
    [
        (np.zeros(N), r"x must be a 2-D array of at least one record and one feature, got shape \(12,\)"),
        (np.zeros((N, D, 1)), r"x must be a 2-D array .*got shape \(12, 3, 1\)"),
        (np.zeros((0, D)), r"x must be a 2-D array .*got shape \(0, 3\)"),
        (np.zeros((N, 0)), r"x must be a 2-D array .*got shape \(12, 0\)"),
    ],
)
def test_bad_feature_shapes_are_refused(x, match):
    _, y, include = _arrays()
    with pytest.raises(ValueError, match=match):
        TrainingData(x, y, include)


@pytest.mark.parametrize("dtype", [np.complex128, np.str_, object])
def test_non_real_features_are_refused(dtype):
    _, y, include = _arrays()
    with pytest.raises(TypeError, match="x must be a real array, got dtype"):
        TrainingData(np.zeros((N, D)).astype(dtype), y, include)


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, 1e39])  # 1e39 overflows float32 to inf
def test_non_finite_features_are_refused(bad):
    x, y, include = _arrays()
    x[3, 1] = bad
    with pytest.raises(ValueError, match="x must be finite, got NaN or infinite features"):
        TrainingData(x, y, include)


@pytest.mark.parametrize(
    "y, match",
    [
        (np.zeros(N - 1, dtype=np.int64), r"y must be an integer array of shape \(12,\), got int64 of shape \(11,\)"),
        (
            np.zeros((N, 1), dtype=np.int64),
            r"y must be an integer array of shape \(12,\), got int64 of shape \(12, 1\)",
        ),
        (np.zeros(N), r"y must be an integer array of shape \(12,\), got float64 of shape \(12,\)"),
        (np.zeros(N, dtype=bool), r"y must be an integer array of shape \(12,\), got bool"),
    ],
)
def test_bad_label_arrays_are_refused(y, match):
    x, _, include = _arrays()
    with pytest.raises(ValueError, match=match):
        TrainingData(x, y, include)


@pytest.mark.parametrize(
    "low, high, n_classes, match",
    [
        (-1, 1, 2, r"y must hold labels in 0\.\.1 \(n_classes = 2\), got -1\.\.1"),
        (0, 2, 2, r"y must hold labels in 0\.\.1 \(n_classes = 2\), got 0\.\.2"),
        (0, 3, 3, r"y must hold labels in 0\.\.2 \(n_classes = 3\), got 0\.\.3"),
    ],
)
def test_labels_out_of_range_are_refused(low, high, n_classes, match):
    x, y, include = _arrays()
    y = y.copy()
    y[0], y[1] = low, high
    with pytest.raises(ValueError, match=match):
        TrainingData(x, y, include, n_classes=n_classes)


@pytest.mark.parametrize(
    "include, match",
    [
        (np.ones(N, dtype=np.int64), r"include must be a boolean array of shape \(12,\), got int64 \(12,\)"),
        (np.ones(N - 1, dtype=bool), r"include must be a boolean array of shape \(12,\), got bool \(11,\)"),
        (np.ones((N, 1), dtype=bool), r"include must be a boolean array of shape \(12,\), got bool \(12, 1\)"),
    ],
)
def test_bad_include_masks_are_refused(include, match):
    x, y, _ = _arrays()
    with pytest.raises(ValueError, match=match):
        TrainingData(x, y, include)


def test_an_empty_include_mask_is_refused():
    x, y, _ = _arrays()
    with pytest.raises(ValueError, match="include must select at least one record to train on, got none"):
        TrainingData(x, y, np.zeros(N, dtype=bool))


@pytest.mark.parametrize(
    "size, error, match",
    [
        (0, ValueError, r"size must be an integer .*1.*, got 0\."),
        (-3, ValueError, r"size must be an integer .*, got -3\."),
        (2.0, TypeError, r"size must be an integer, got 2\.0\."),
        (True, TypeError, r"size must be an integer, got True\."),
        ("7", TypeError, r"size must be an integer, got '7'\."),
        (N + 2, ValueError, rf"size must be an integer in \[1, {N + 1}\], got {N + 2}\."),
        (10**12, ValueError, rf"size must be an integer in \[1, {N + 1}\], got 1000000000000\."),
    ],
)
def test_bad_public_sizes_are_refused(size, error, match):
    x, y, include = _arrays()
    with pytest.raises(error, match=match):
        TrainingData(x, y, include, size=size)


@pytest.mark.parametrize(
    "n_classes, error, match",
    [
        (1, ValueError, r"n_classes must be an integer .*2.*, got 1\."),
        (0, ValueError, r"n_classes must be an integer .*, got 0\."),
        (2.0, TypeError, r"n_classes must be an integer, got 2\.0\."),
        (None, TypeError, r"n_classes must be an integer, got None\."),
    ],
)
def test_bad_class_counts_are_refused(n_classes, error, match):
    x, y, include = _arrays()
    with pytest.raises(error, match=match):
        TrainingData(x, y, include, n_classes=n_classes)


def test_stack_masks_stacks_the_include_masks_of_one_pool():
    x, y, include = _arrays()
    masks = [include, ~include, np.ones(N, dtype=bool)]
    # equal pools given as distinct (copied) arrays still count as one pool
    data = [TrainingData(x.copy(), y.copy(), m) for m in masks]
    first, stacked = stack_masks(data)
    assert first is data[0]
    assert stacked.shape == (3, N) and stacked.dtype == np.bool_
    np.testing.assert_array_equal(stacked, np.stack(masks))
    # sizes differ freely: they are not part of the pool
    stack_masks([TrainingData(x, y, include, size=N), TrainingData(x, y, include)])


def test_stack_masks_refuses_different_pools():
    x, y, include = _arrays()
    base = TrainingData(x, y, include)
    other_x = x.copy()
    other_x[N - 1, 0] += 1.0  # an excluded row: still another pool
    other_y = y.copy()
    other_y[0] = 1 - other_y[0]
    match = r"data\[1\] must share data\[0\]'s pool \(x, y, n_classes\) to train in one batch"
    for other in (
        TrainingData(other_x, y, include),
        TrainingData(x, other_y, include),
        TrainingData(x, y, include, n_classes=3),
        TrainingData(x[:-1], y[:-1], include[:-1]),
    ):
        assert not base.shares_pool(other)
        with pytest.raises(ValueError, match=match):
            stack_masks([base, other])
    with pytest.raises(ValueError, match=r"data\[2\] must share"):
        stack_masks([base, base, TrainingData(other_x, y, include)])


def test_stack_masks_refuses_other_types_and_nothing():
    x, y, include = _arrays()
    base = TrainingData(x, y, include)
    with pytest.raises(
        TypeError, match=r"data\[1\] must be a privgame\.mechanisms\.training\.TrainingData, got ndarray"
    ):
        stack_masks([base, x])
    with pytest.raises(TypeError, match=r"data\[0\] must be a privgame\.mechanisms\.training\.TrainingData, got tuple"):
        stack_masks([(x, y, include)])
    with pytest.raises(ValueError, match="data must hold at least one TrainingData, got none"):
        stack_masks([])


def test_as_training_data_names_the_argument():
    x, y, include = _arrays()
    data = TrainingData(x, y, include)
    assert as_training_data("data", data) is data
    with pytest.raises(TypeError, match=r"pool must be a privgame\.mechanisms\.training\.TrainingData, got DataFrame"):
        as_training_data("pool", pd.DataFrame(x))
