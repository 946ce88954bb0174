"""The model games' encoding of tabular records: public-domain only, stable, and the shipped population sizes."""

from __future__ import annotations

import numpy as np
import pytest

from privgame.data import load, load_digits
from privgame.data.catalogue import get_dataset
from privgame.data.features import encode, feature_count, model_arrays, population_table

SHIPPED = {"adult": 48_842, "compas": 7_214, "digits": 1_797}  # rows of the shipped files


@pytest.mark.parametrize("data", sorted(SHIPPED))
def test_population_sizes_match_the_shipped_files(data):
    assert len(population_table(data)) == SHIPPED[data] == get_dataset(data).size == model_arrays(data).y.shape[0]
    assert feature_count(data) == model_arrays(data).x.shape[1] == len(model_arrays(data).features)


@pytest.mark.parametrize("data", sorted(SHIPPED))
def test_encoding_is_per_record_and_in_the_unit_box(data):
    arrays = model_arrays(data)
    assert arrays.x.dtype == np.float32 and arrays.x.shape[1] == len(arrays.features)
    assert arrays.x.min() >= 0.0 and arrays.x.max() <= 1.0
    assert set(np.unique(arrays.y)) == set(range(arrays.n_classes))
    assert arrays.label not in arrays.features
    table = population_table(data)
    # a record's encoding does not depend on which other records are encoded with it (public domain only)
    some = encode(table.iloc[[5, 17, 3]].reset_index(drop=True), data)
    np.testing.assert_array_equal(some.x, arrays.x[[5, 17, 3]])
    np.testing.assert_array_equal(some.y, arrays.y[[5, 17, 3]])


def test_adult_label_is_high_income_and_categoricals_are_one_hot():
    arrays = model_arrays("adult")
    table = load("adult", split="all")
    assert arrays.y.mean() == pytest.approx((table["income"].astype(str) == ">50K").mean())
    sex = [i for i, name in enumerate(arrays.features) if name.startswith("sex=")]
    assert len(sex) == 2 and np.all(arrays.x[:, sex].sum(axis=1) == 1.0)


def test_digits_are_pixels_over_16_with_ten_classes():
    """The table form of the digits encodes to scikit-learn's arrays: each pixel ÷ 16, the digit as the class."""
    arrays = model_arrays("digits")
    x, y = load_digits()
    assert arrays.n_classes == 10 and arrays.features == tuple(f"p{i}" for i in range(64))
    np.testing.assert_array_equal(arrays.x, (x / 16).astype(np.float32))
    np.testing.assert_array_equal(arrays.y, y)


def test_a_label_outside_the_public_classes_is_refused():
    table = population_table("digits").iloc[:3].copy()
    table["digit"] = table["digit"].astype(str).replace({"0": "ten"})
    with pytest.raises(ValueError, match=r"digit must be one of 0, 1, .* in a 'digits' table, got 'ten'"):
        encode(table, "digits")


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="data must be one of adult, compas, digits, got 'wine'"):
        model_arrays("wine")
    table = load("compas")
    with pytest.raises(ValueError, match="table must have every column of 'compas'"):
        encode(table.drop(columns=["sex"]), "compas")
