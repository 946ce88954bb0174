"""The per-class Gaussian mixture generator: the table it returns, where its values come from, its randomness and
its refusals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privgame.data import load_digits_table
from privgame.mechanisms.synth.mixture import GaussianMixtureGenerator


def _table(n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    cls = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    shift = pd.Series(cls).map({"a": 0.0, "b": 10.0, "c": 20.0}).to_numpy()
    return pd.DataFrame(
        {
            "count": rng.integers(0, 5, n) + shift.astype(np.int64),
            "level": rng.normal(shift, 1.0),
            "cls": pd.Categorical(cls, categories=["a", "b", "c", "unused"]),
        }
    )


@pytest.mark.parametrize("marginals", ["empirical", "gaussian"])
def test_columns_dtypes_and_categories_are_kept(marginals):
    table = _table()
    out = GaussianMixtureGenerator(marginals=marginals, n_rows=500).release(table, rng=np.random.default_rng(0))
    assert list(out.columns) == list(table.columns) and len(out) == 500
    assert out.dtypes.to_dict() == table.dtypes.to_dict()
    assert "unused" not in set(out["cls"].astype(str))  # a class absent from the data is never generated


def test_empirical_marginals_give_only_values_of_the_class():
    table = _table()
    out = GaussianMixtureGenerator().release(table, rng=np.random.default_rng(0))
    for cls, part in out.groupby("cls", observed=True):
        seen = table[table["cls"] == cls]
        assert set(part["count"]) <= set(seen["count"]) and set(part["level"]) <= set(seen["level"])


def test_gaussian_marginals_stay_in_the_range_and_are_integers_where_the_column_is():
    table = _table()
    out = GaussianMixtureGenerator(marginals="gaussian").release(table, rng=np.random.default_rng(0))
    for column in ("count", "level"):
        assert table[column].min() <= out[column].min() and out[column].max() <= table[column].max()
    assert out["count"].dtype == np.int64


def test_the_classes_follow_the_data_and_the_mixture_follows_each_class():
    """Class shares within 4.5 binomial standard deviations (a failure probability < 1e-5), and each class's mean
    level near its own (10 apart between classes)."""
    table = _table(2000)
    out = GaussianMixtureGenerator(n_rows=4000).release(table, rng=np.random.default_rng(1))
    for cls, p in table["cls"].value_counts(normalize=True).items():
        share = (out["cls"] == cls).mean()
        assert abs(share - p) <= 4.5 * np.sqrt(p * (1 - p) / 4000), cls
        if p:
            assert abs(out.loc[out["cls"] == cls, "level"].mean() - table.loc[table["cls"] == cls, "level"].mean()) < 1


def test_digits_look_like_digits_to_a_classifier_trained_on_real_ones():
    """A classifier of the digit, trained on real images, reads the generated images' digits: the mixture keeps
    each class's shape (the generated table's labels agree with the classifier's reading ≥ 80 %)."""
    from sklearn.linear_model import LogisticRegression

    table = load_digits_table()
    pixels = [f"p{i}" for i in range(64)]
    out = GaussianMixtureGenerator(n_rows=500).release(table.iloc[:600], rng=np.random.default_rng(2))
    model = LogisticRegression(max_iter=2000).fit(table[pixels].iloc[600:], table["digit"].iloc[600:].astype(str))
    assert (model.predict(out[pixels]) == out["digit"].astype(str)).mean() >= 0.8
    assert out[pixels].to_numpy().min() >= 0 and out[pixels].to_numpy().max() <= 16


def test_randomness_comes_from_rng_only():
    table = _table()
    gen = GaussianMixtureGenerator(components=2)
    a, b = (gen.release(table, rng=np.random.default_rng(5)) for _ in range(2))
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(gen.release(table, rng=np.random.default_rng(6)))


def test_without_categorical_columns_one_mixture_and_with_several_their_combinations():
    table = _table()
    alone = GaussianMixtureGenerator().release(table.drop(columns="cls"), rng=np.random.default_rng(0))
    assert list(alone.columns) == ["count", "level"] and len(alone) == len(table)
    two = table.assign(flag=pd.Categorical(np.where(table["count"] % 2 == 0, "even", "odd")))
    out = GaussianMixtureGenerator().release(two, rng=np.random.default_rng(0))
    pairs = set(zip(out["cls"].astype(str), out["flag"].astype(str), strict=True))
    assert pairs <= set(zip(two["cls"].astype(str), two["flag"].astype(str), strict=True))


def test_a_class_of_one_row_gives_copies_of_it():
    table = _table().iloc[:40].copy()
    table.loc[0, "cls"] = "unused"
    out = GaussianMixtureGenerator(n_rows=4000).release(table, rng=np.random.default_rng(0))
    lone = out[out["cls"] == "unused"]
    assert len(lone) > 0
    assert (lone["count"] == table.loc[0, "count"]).all() and (lone["level"] == table.loc[0, "level"]).all()


@pytest.mark.parametrize(
    ("params", "error", "message"),
    [
        ({"components": 0}, ValueError, "components"),
        ({"covariance": "block"}, ValueError, "covariance must be one of full, diag, tied, spherical"),
        ({"reg_covar": 0.0}, ValueError, "reg_covar"),
        ({"reg_covar": float("nan")}, ValueError, "reg_covar"),
        ({"marginals": "uniform"}, ValueError, "marginals must be one of empirical, gaussian"),
        ({"by": 3}, TypeError, "by must be a column name"),
        ({"max_iter": 0}, ValueError, "max_iter"),
        ({"n_rows": 0}, ValueError, "n_rows"),
        ({"n_rows": 10**12}, ValueError, "n_rows"),
    ],
)
def test_bad_parameters_are_refused(params, error, message):
    with pytest.raises(error, match=message):
        GaussianMixtureGenerator(**params)


@pytest.mark.parametrize(
    ("by", "change", "message"),
    [
        ("level", None, r"by must name a categorical column of the table, got 'level' \(a numeric column\)"),
        ("colour", None, r"got 'colour' \(not a column\)"),
        ("cls", "flag", "by = 'cls' leaves the categorical column 'flag' unmodelled"),
        (None, "only-categorical", "needs at least one numeric column"),
    ],
)
def test_tables_it_cannot_model_are_refused_in_one_line(by, change, message):
    table = _table()
    if change == "flag":
        table = table.assign(flag=pd.Categorical(["x"] * len(table)))
    elif change == "only-categorical":
        table = table[["cls"]]
    with pytest.raises(ValueError, match=message) as info:
        GaussianMixtureGenerator(by=by).release(table, rng=np.random.default_rng(0))
    assert "\n" not in str(info.value)


def test_a_table_with_missing_values_is_refused():
    table = _table()
    table.loc[3, "level"] = np.nan
    with pytest.raises(ValueError, match="missing or infinite"):
        GaussianMixtureGenerator().release(table, rng=np.random.default_rng(0))
