"""The fidelity report: TV distances, Cramér's V, train-on-synthetic utility and exact copies, on small tables."""

from __future__ import annotations

import json
import math
import pickle

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from privgame.analysis.fidelity import FidelityReport, column_kind, cramers_v, fidelity_report


def mixed_table(n: int, seed: int) -> pd.DataFrame:
    """A small table with every supported kind: categorical, string, bool, int and float, and a binary target."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    colour = rng.choice(["red", "green", "blue"], size=n)
    return pd.DataFrame(
        {
            "colour": pd.Categorical(colour, categories=["red", "green", "blue", "unused"]),
            "shape": rng.choice(["round", "square"], size=n),
            "flag": rng.random(n) < 0.3,
            "count": rng.integers(0, 20, size=n),
            "x": x,
            "label": np.where(x + (colour == "red") > 0.5, "yes", "no"),
        }
    )


def test_identical_tables_score_perfectly():
    real = mixed_table(400, 0)
    test = mixed_table(300, 1)
    report = fidelity_report(real, real.copy(), test=test, target="label")
    assert report.tv == (0.0,) * 6
    assert report.v_diff_mean == 0.0 and report.v_diff_max == 0.0
    assert report.cramers_v_real == report.cramers_v_synthetic
    assert report.copy_fraction == 1.0
    assert report.tstr_accuracy == report.trtr_accuracy and report.tstr_auc == report.trtr_auc
    assert report.positive == "yes" and report.target == "label"
    assert report.kinds == ("categorical", "categorical", "categorical", "numeric", "numeric", "categorical")
    assert report.n_real == 400 and report.n_synthetic == 400 and report.n_test == 300
    # the real table is a clean logistic problem: both models predict the test labels well
    assert report.trtr_auc > 0.95


def test_column_order_of_the_synthetic_table_does_not_matter():
    real = mixed_table(200, 0)
    shuffled = real[list(reversed(real.columns))]
    report = fidelity_report(real, shuffled, target=None)
    assert report.columns == tuple(real.columns)
    assert report.tv_max == 0.0 and report.copy_fraction == 1.0


def test_tv_hand_examples():
    real = pd.DataFrame({"a": ["x", "x", "y", "y"]})
    syn = pd.DataFrame({"a": ["x", "x", "x", "y"]})
    assert fidelity_report(real, syn, target=None).tv == (0.25,)
    # a level the real column never takes counts fully
    assert fidelity_report(real, pd.DataFrame({"a": ["z", "x", "y", "y"]}), target=None).tv == (0.25,)
    # 1..10: the deciles 1.9, 2.8, ..., 9.1 put each value in a bin of its own; all-ones puts everything in the first
    real_num = pd.DataFrame({"v": np.arange(1, 11)})
    report = fidelity_report(real_num, pd.DataFrame({"v": np.ones(10, dtype=np.int64)}), target=None)
    assert report.tv[0] == pytest.approx(0.9) and report.n_levels == (11,)  # 10 bins + the missing-value bin
    # right-closed bins: a column that is 0 in over 90 % of rows is split into "<= 0" and "> 0"
    real_zero = pd.DataFrame({"g": [0] * 19 + [5]})
    report = fidelity_report(real_zero, pd.DataFrame({"g": [0] * 10 + list(range(1, 11))}), target=None)
    assert report.tv[0] == pytest.approx(0.45) and report.n_levels == (3,)
    # missing values form a level of their own
    report = fidelity_report(pd.DataFrame({"v": [1.0, 2.0]}), pd.DataFrame({"v": [1.0, np.nan]}), target=None)
    assert report.tv[0] == pytest.approx(0.5)


def test_cramers_v_hand_examples():
    # the 2 x 2 table [[20, 10], [10, 20]]: phi = (20·20 − 10·10) / 30² = 1/3
    x = ["a"] * 30 + ["b"] * 30
    y = ["u"] * 20 + ["v"] * 10 + ["u"] * 10 + ["v"] * 20
    assert cramers_v(x, y, bias_correction=False) == pytest.approx(1 / 3)
    # Bergsma: phi² − 1/59 over min(r̃, c̃) − 1 = 1 − 1/59
    assert cramers_v(x, y) == pytest.approx(math.sqrt((1 / 9 - 1 / 59) / (58 / 59)))
    # perfect association: V = 1 with and without the correction; a constant column: V = 0
    z = np.repeat([0, 1, 2], 5)
    assert cramers_v(z, z.astype(str)) == pytest.approx(1.0)
    assert cramers_v(z, z, bias_correction=False) == pytest.approx(1.0)
    assert cramers_v(z, np.zeros(15)) == 0.0
    # an r x c table against scipy's uncorrected V
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 3, 500), rng.integers(0, 4, 500)
    b = np.where(rng.random(500) < 0.4, a, b)
    table = pd.crosstab(a, b).to_numpy()
    expected = stats.contingency.association(table, method="cramer")
    assert cramers_v(a, b, bias_correction=False) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="equal length"):
        cramers_v([1, 2], [1])


def test_report_v_matrices_match_cramers_v():
    real = mixed_table(300, 4)
    report = fidelity_report(real, mixed_table(300, 5), target=None)
    v = report.cramers_v("real")
    assert v.loc["colour", "label"] == pytest.approx(cramers_v(real["colour"], real["label"]))
    assert np.allclose(np.diag(v), 1.0) and np.allclose(v, v.T)
    diff = report.cramers_v_diff
    assert np.allclose(diff, np.abs(report.cramers_v("synthetic") - v)) and np.all(np.diag(diff) == 0)
    assert report.v_diff_max == pytest.approx(diff.to_numpy().max())


def test_independently_shuffled_columns_have_v_near_zero():
    """Shuffling each column on its own keeps the marginals (TV = 0) and destroys the association.

    Sizing: the permuted pair is independent, so its χ² statistic is approximately χ²((r−1)(c−1)); the bound uses
    the 1 − 1e-5 quantile, so a correct implementation exceeds it with probability about 1e-5.
    """
    n, levels = 2000, 5
    rng = np.random.default_rng(11)
    a = rng.integers(0, levels, n)
    b = np.where(rng.random(n) < 0.8, a, rng.integers(0, levels, n))
    real = pd.DataFrame({"a": a.astype(str), "b": b.astype(str)})
    syn = pd.DataFrame({"a": rng.permutation(real["a"].to_numpy()), "b": rng.permutation(real["b"].to_numpy())})
    report = fidelity_report(real, syn, target=None)
    assert report.tv == (0.0, 0.0)
    df = (levels - 1) ** 2
    phi2_bound = stats.chi2.ppf(1 - 1e-5, df) / n - df / (n - 1)
    bound = math.sqrt(phi2_bound / (levels - (levels - 1) ** 2 / (n - 1) - 1))
    v_real = report.cramers_v("real").loc["a", "b"]
    v_syn = report.cramers_v("synthetic").loc["a", "b"]
    assert v_real > 0.75  # strongly associated in the real table
    assert 0.0 <= v_syn <= bound < 0.08
    assert report.v_diff_max == pytest.approx(v_real - v_syn)


def test_tstr_on_a_separable_problem():
    rng = np.random.default_rng(7)

    def table(n: int) -> pd.DataFrame:
        x = rng.uniform(-1, 1, n)
        return pd.DataFrame({"x": x, "noise": rng.choice(["p", "q"], n), "y": np.where(x > 0, "pos", "neg")}).astype(
            {"noise": "category"}
        )

    real, syn, test = table(300), table(300), table(500)
    report = fidelity_report(real, syn, test=test, target="y")
    assert report.positive == "pos"
    assert report.tstr_auc > 0.99 and report.trtr_auc > 0.99
    assert report.tstr_accuracy > 0.95
    # a generator that swaps the labels is caught: the model ranks the test rows backwards
    flipped = syn.assign(y=np.where(syn["y"] == "pos", "neg", "pos"))
    report = fidelity_report(real, flipped, test=test, target="y")
    assert report.tstr_auc < 0.01 and report.trtr_auc > 0.99
    # positive picks the class the AUC scores
    report = fidelity_report(real, syn, test=test, target="y", positive="neg")
    assert report.positive == "neg" and report.tstr_auc > 0.99


def test_tstr_with_unseen_categories_and_missing_numbers():
    rng = np.random.default_rng(8)
    n = 200
    real = pd.DataFrame({"c": rng.choice(["a", "b"], n), "v": rng.normal(size=n), "y": rng.integers(0, 2, n)})
    real.loc[:10, "v"] = np.nan
    test = real.copy()
    test.loc[:20, "c"] = "never-seen"
    report = fidelity_report(real, real, test=test, target="y")
    assert report.positive == 1
    assert 0.0 <= report.tstr_auc <= 1.0 and 0.0 <= report.tstr_accuracy <= 1.0


def test_a_single_class_synthetic_target_gives_a_constant_predictor():
    real = mixed_table(200, 0)
    test = mixed_table(300, 1)
    syn = real.assign(label="no")
    report = fidelity_report(real, syn, test=test, target="label")
    assert report.tstr_auc == 0.5
    assert report.tstr_accuracy == pytest.approx((test["label"] == "no").mean())


def test_copy_fraction():
    real = pd.DataFrame({"c": ["a", "b", "c", "d"], "v": [1, 2, 3, 4]})
    syn = pd.DataFrame({"c": ["a", "b", "c", "d"], "v": [1.0, 2.0, 4.0, 3.0]})  # int 1 and float 1.0 are equal
    assert fidelity_report(real, syn, target=None).copy_fraction == pytest.approx(0.5)
    # categorical and string spellings of the same value are equal, as are missing values and ±0
    real = pd.DataFrame({"c": pd.Categorical(["a", "b"]), "v": [np.nan, 0.0]})
    syn = pd.DataFrame({"c": ["a", "b", "a"], "v": [np.nan, -0.0, 0.0]})
    assert fidelity_report(real, syn, target=None).copy_fraction == pytest.approx(2 / 3)
    # the holdout rate: test rows that equal a real row
    test = pd.DataFrame({"c": ["b", "a", "a", "a"], "v": [0.0, 1.0, 2.0, 3.0]})
    assert fidelity_report(real, syn, test=test, target=None).holdout_copy_fraction == pytest.approx(0.25)
    assert math.isnan(fidelity_report(real, syn, target=None).holdout_copy_fraction)


def test_report_outputs():
    real, syn, test = mixed_table(300, 0), mixed_table(300, 1), mixed_table(200, 2)
    report = fidelity_report(real, syn, test=test, target="label")
    assert isinstance(report, FidelityReport)
    hash(report)
    assert pickle.loads(pickle.dumps(report)) is not report
    summary = report.summary()
    assert summary["tv_mean"] == pytest.approx(np.mean(report.tv))
    assert summary["tv_max_column"] in real.columns
    a, b = summary["cramers_v_diff_max_pair"].split(" × ")
    assert report.cramers_v_diff.loc[a, b] == pytest.approx(report.v_diff_max)
    frame = report.to_frame()
    assert list(frame.index) == list(real.columns)
    assert list(frame.columns) == ["kind", "levels", "tv", "v_diff_mean", "v_diff_max"]
    text = json.dumps(report.to_dict())
    assert json.loads(text)["summary"]["positive"] == "yes"
    assert json.loads(text)["cramers_v_real"]["colour"]["colour"] == 1.0
    out = str(report)
    for word in ("marginal TV distance", "Cramér's V", "train on synthetic", "exact copies", "colour"):
        assert word in out
    with pytest.raises(ValueError, match="which must be one of"):
        report.cramers_v("both")
    single = fidelity_report(pd.DataFrame({"a": [1, 2]}), pd.DataFrame({"a": [1, 3]}), target=None)
    assert math.isnan(single.v_diff_mean) and single.summary()["cramers_v_diff_max_pair"] is None
    assert "Cramér" not in str(single)


def test_column_kind():
    assert column_kind("a", pd.Series([1, 2])) == "numeric"
    assert column_kind("a", pd.Series([1.5])) == "numeric"
    assert column_kind("a", pd.Series([True])) == "categorical"
    assert column_kind("a", pd.Series(["x"])) == "categorical"
    assert column_kind("a", pd.Series(["x"], dtype=object)) == "categorical"
    assert column_kind("a", pd.Series(["x"], dtype="category")) == "categorical"
    with pytest.raises(TypeError, match="column 'a' must be numeric"):
        column_kind("a", pd.Series(pd.to_datetime(["2020-01-01"])))


def test_errors():
    real, test = mixed_table(50, 0), mixed_table(50, 1)
    with pytest.raises(TypeError, match="real must be a pandas DataFrame, got ndarray"):
        fidelity_report(real.to_numpy(), real)
    with pytest.raises(TypeError, match="synthetic must be a pandas DataFrame"):
        fidelity_report(real, [1, 2])
    with pytest.raises(ValueError, match="synthetic must have at least one row"):
        fidelity_report(real, real.iloc[:0])
    with pytest.raises(ValueError, match="real must have at least one row and one column"):
        fidelity_report(pd.DataFrame(index=range(3)), real)
    with pytest.raises(ValueError, match=r"missing: \['x'\], extra: \['z'\]"):
        fidelity_report(real, real.rename(columns={"x": "z"}))
    with pytest.raises(ValueError, match="test must have the real table's columns"):
        fidelity_report(real, real, test=test.drop(columns="x"), target="label")
    with pytest.raises(ValueError, match="more than once"):
        fidelity_report(pd.DataFrame([[1, 2]], columns=["a", "a"]), real)
    with pytest.raises(TypeError, match="column 'count' is numeric in the real table but categorical in the synthetic"):
        fidelity_report(real, real.assign(count=real["count"].astype(str)))
    with pytest.raises(TypeError, match="column 'd' must be numeric"):
        when = pd.DataFrame({"d": pd.to_datetime(["2020-01-01"])})
        fidelity_report(when, when)
    with pytest.raises(ValueError, match="target must be one of the columns"):
        fidelity_report(real, real, test=test, target="income")
    with pytest.raises(ValueError, match="must be binary: the real and test tables hold 3 distinct values"):
        fidelity_report(real, real, test=test, target="colour")
    with pytest.raises(ValueError, match="synthetic table holds 'maybe'"):
        fidelity_report(real, real.assign(label="maybe"), test=test, target="label")
    with pytest.raises(ValueError, match="missing values in the test table"):
        fidelity_report(
            real, real, test=test.assign(label=np.where(test.index == 0, None, test["label"])), target="label"
        )
    with pytest.raises(ValueError, match="must hold both values"):
        fidelity_report(real, real, test=test.assign(label="yes").iloc[:3], target="label")
    with pytest.raises(ValueError, match="positive must be one of"):
        fidelity_report(real, real, test=test, target="label", positive="YES")
    with pytest.raises(ValueError, match="at least one feature column"):
        only = real[["label"]]
        fidelity_report(only, only, test=test[["label"]], target="label")
    with pytest.raises(TypeError, match="bias_correction must be a bool"):
        fidelity_report(real, real, target=None, bias_correction=1)
    # without a test table the target is not needed at all (the default "income" is absent here)
    assert fidelity_report(real, real).target is None
