"""Tests of privgame.mechanisms.synth.baynet.BayNet: fidelity on Adult, dtypes, reproducibility, structure and
errors."""

from __future__ import annotations

import pickle
import sys

import numpy as np
import pandas as pd
import pytest

from privgame.analysis.discretise import quantile_bins
from privgame.analysis.fidelity import fidelity_report
from privgame.data import ADULT_PUBLIC_BINS, load_adult
from privgame.mechanisms.synth.baynet import BayNet

# Fidelity tolerances, from 20 seeds on the first 1,000 Adult training rows (tests use 3 of them):
#   per-column TV (numeric columns at the real deciles): max over columns and seeds 0.059 (k=1), 0.062 (k=2),
#     0.065 (hillclimb); mean over columns 0.024 ± 0.003 (sd over seeds) for all three, max 0.031;
#   mean |Cramér's V difference| over the 105 pairs: k=1 0.067 ± 0.003 (max 0.072), k=2 0.053 ± 0.004 (max 0.060),
#     hillclimb 0.073 ± 0.002 (max 0.078); independent columns (k=0) give 0.129 ± 0.004.
# The bounds below sit 6-10 sd above the means (and 1.5x the worst of 20 runs), so a correct generator fails
# them with a probability far below 1e-3, while k=0 (no associations) fails the association bound.
TV_COLUMN_MAX = 0.10
TV_MEAN_MAX = 0.04
V_DIFF_MEAN_MAX = {1: 0.09, 2: 0.08}


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    return load_adult("train").iloc[:1000].reset_index(drop=True)


def _check_same_schema(out: pd.DataFrame, data: pd.DataFrame, n: int) -> None:
    assert list(out.columns) == list(data.columns)
    assert list(out.dtypes) == list(data.dtypes)  # categorical dtypes compare their category lists too
    assert len(out) == n
    assert isinstance(out.index, pd.RangeIndex)


# ---------------------------------------------------------------- fidelity


@pytest.mark.parametrize("k", [1, 2])
def test_greedy_output_is_close_to_adult(adult: pd.DataFrame, k: int) -> None:
    for seed in range(3):
        out = BayNet(k=k).release(adult, rng=np.random.default_rng(seed))
        _check_same_schema(out, adult, len(adult))
        report = fidelity_report(adult, out, target=None)
        assert report.tv_max <= TV_COLUMN_MAX, report.tv_distances
        assert report.tv_mean <= TV_MEAN_MAX
        assert report.v_diff_mean <= V_DIFF_MEAN_MAX[k]


def test_independent_columns_fail_the_association_bound(adult: pd.DataFrame) -> None:
    # k=0 samples each column from its marginal: the marginals pass, the associations must not
    out = BayNet(k=0).release(adult, rng=np.random.default_rng(0))
    report = fidelity_report(adult, out, target=None)
    assert report.tv_mean <= TV_MEAN_MAX
    assert report.v_diff_mean > V_DIFF_MEAN_MAX[1]


def test_hillclimb_output_is_close_to_adult(adult: pd.DataFrame) -> None:
    pytest.importorskip("pgmpy")
    mech = BayNet(structure="hillclimb")
    model = mech.fit(adult, rng=np.random.default_rng(0))
    assert all(len(ps) <= 1 for ps in model.network.parents)  # max_indegree = k
    assert len(model.network.edges) >= 5
    out = mech.release(adult, rng=np.random.default_rng(1))
    _check_same_schema(out, adult, len(adult))
    report = fidelity_report(adult, out, target=None)
    assert report.tv_max <= TV_COLUMN_MAX and report.tv_mean <= TV_MEAN_MAX
    assert report.v_diff_mean <= V_DIFF_MEAN_MAX[1]
    pd.testing.assert_frame_equal(out, mech.release(adult, rng=np.random.default_rng(1)))


def test_hillclimb_without_pgmpy_says_how_to_install_it(adult: pd.DataFrame, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pgmpy", None)  # makes `import pgmpy...` raise ImportError
    monkeypatch.setitem(sys.modules, "pgmpy.estimators", None)
    with pytest.raises(ImportError, match=r"pip install privgame\[synth\]"):
        BayNet(structure="hillclimb").release(adult.iloc[:50], rng=np.random.default_rng(0))


@pytest.mark.parametrize("k", [1, 2])
def test_public_bins_keep_the_fidelity_and_decode_point_masses_exactly(adult: pd.DataFrame, k: int) -> None:
    # with Adult's public bins for four columns (20 seeds): mean TV 0.023 (k = 1 and 2), as with quantile bins only
    mech = BayNet(k=k, bins=ADULT_PUBLIC_BINS)
    model = mech.fit(adult, rng=np.random.default_rng(0))
    gain = list(adult.columns).index("capital_gain")
    assert model.discretisation.columns[gain].edges[:3] == (-0.5, 0.5, 999.5)  # {0}, 1..999, ...
    rng = np.random.default_rng(1)
    codes = model.sample_codes(3000, rng=rng)
    out = model.discretisation.decode(codes, rng=rng)
    np.testing.assert_array_equal(out["capital_gain"] == 0, codes[:, gain] == 0)
    for seed in range(3):
        out = mech.release(adult, rng=np.random.default_rng(seed))
        _check_same_schema(out, adult, len(adult))
        report = fidelity_report(adult, out, target=None)
        assert report.tv_max <= TV_COLUMN_MAX and report.tv_mean <= TV_MEAN_MAX


def test_no_bins_is_the_old_generator(adult: pd.DataFrame) -> None:
    plain = BayNet(k=2)
    assert plain.bins is None and BayNet(k=2, bins=()) == plain and BayNet(k=2, bins={}) == plain
    assert plain.fit(adult, rng=np.random.default_rng(0)).discretisation == quantile_bins(adult, plain.n_bins)
    binned = BayNet(k=2, bins={"hours_per_week": "integers", "age": [17, 18]})
    assert binned.bins == (("age", (17.0, 18.0)), ("hours_per_week", "integers"))
    assert pickle.loads(pickle.dumps(binned)) == binned and hash(binned) == hash(BayNet(k=2, bins=binned.bins))


def test_bins_that_do_not_fit_the_data_are_refused(adult: pd.DataFrame) -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"bins must name numeric columns of the data, got 'wage' \(not a column"):
        BayNet(bins={"wage": (0, 1)}).release(adult, rng=rng)
    with pytest.raises(ValueError, match=r"got 'sex' \(a categorical column\)"):
        BayNet(bins={"sex": (0, 1)}).release(adult, rng=rng)
    with pytest.raises(ValueError, match="'integers' bins of column 'fnlwgt' must number 1 to 10000"):
        BayNet(bins={"fnlwgt": "integers"}).release(adult, rng=rng)
    with pytest.raises(ValueError, match="edges of integer column 'age' must be integers"):
        BayNet(bins={"age": (20, 30.5)}).release(adult, rng=rng)


# ---------------------------------------------------------------- behaviour


def test_same_rng_gives_the_same_table_and_another_a_different_one(adult: pd.DataFrame) -> None:
    mech = BayNet(k=2)
    a = mech.release(adult, rng=np.random.default_rng(7))
    b = mech.release(adult, rng=np.random.default_rng(7))
    c = mech.release(adult, rng=np.random.default_rng(8))
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


def test_n_rows_sets_the_output_size(adult: pd.DataFrame) -> None:
    out = BayNet(n_rows=2345).release(adult.iloc[:300], rng=np.random.default_rng(0))
    _check_same_schema(out, adult, 2345)
    assert len(BayNet().release(adult.iloc[:300], rng=np.random.default_rng(0))) == 300


def test_greedy_structure_has_at_most_k_parents_and_a_random_root(adult: pd.DataFrame) -> None:
    roots = set()
    for seed in range(6):
        network = BayNet(k=2).fit(adult, rng=np.random.default_rng(seed)).network
        assert [len(ps) for ps in network.parents] == [0, 1] + [2] * 13
        roots.add(network.order[0])
    assert len(roots) > 1
    # education and education_num determine each other: the greedy network links them
    network = BayNet(k=1).fit(adult, rng=np.random.default_rng(0)).network
    edu, edu_num = list(adult.columns).index("education"), list(adult.columns).index("education_num")
    assert (edu, edu_num) in network.edges or (edu_num, edu) in network.edges


def test_values_stay_in_the_observed_range_and_unused_categories_are_not_generated(adult: pd.DataFrame) -> None:
    data = adult.iloc[:200].copy()
    data["race"] = data["race"].cat.add_categories(["Martian"])  # an unseen category of a predictor
    out = BayNet(k=2, n_rows=3000).release(data, rng=np.random.default_rng(0))
    assert "Martian" in out["race"].cat.categories and not (out["race"] == "Martian").any()
    for column in ("age", "fnlwgt", "hours_per_week"):
        assert data[column].min() <= out[column].min() and out[column].max() <= data[column].max()
    # combinations of parent values never seen together are sampled (conditionals fall back to marginals)
    pairs = set(zip(out["education"], out["occupation"], strict=True))
    assert len(pairs) > len(set(zip(data["education"], data["occupation"], strict=True)))


def test_tiny_tables(adult: pd.DataFrame) -> None:
    one_column = adult[["age"]].iloc[:10]
    _check_same_schema(BayNet().release(one_column, rng=np.random.default_rng(0)), one_column, 10)
    one_row = adult.iloc[:1]
    out = BayNet(k=3, n_rows=5).release(one_row, rng=np.random.default_rng(0))
    _check_same_schema(out, adult, 5)
    assert (out == one_row.iloc[[0] * 5].reset_index(drop=True)).all().all()  # a single record is all there is


def test_mechanism_interface() -> None:
    mech = BayNet(k=2, n_bins=10)
    assert (mech.name, mech.input_kind, mech.release_kind) == ("baynet", "table", "table")
    assert mech.privacy_claim() is None
    assert pickle.loads(pickle.dumps(mech)) == mech and hash(mech) == hash(BayNet(k=2, n_bins=10))


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"k": -1}, ValueError, "k must be an integer >= 0"),
        ({"k": 1.0}, TypeError, "k must be an integer"),
        ({"n_bins": 0}, ValueError, "n_bins must be an integer >= 1"),
        ({"structure": "chow-liu"}, ValueError, "structure must be one of 'greedy', 'hillclimb'"),
        ({"n_rows": 0}, ValueError, "n_rows must be an integer >= 1"),
        ({"n_rows": 10.0}, TypeError, "n_rows must be an integer"),
        ({"bins": "age"}, TypeError, "bins must be a mapping or a sequence"),
        ({"bins": {"age": (30, 20)}}, ValueError, "edges of column 'age' must be sorted"),
        ({"bins": {"age": (20, float("nan"))}}, ValueError, "finite numbers"),
        ({"bins": {"age": "all"}}, ValueError, "must be 'integers' or a sequence of edges"),
    ],
)
def test_bad_parameters_are_refused(kwargs: dict[str, object], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        BayNet(**kwargs)  # type: ignore[arg-type]


def test_bad_input_is_refused(adult: pd.DataFrame) -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(TypeError, match="must be a pandas DataFrame"):
        BayNet().release(adult.to_numpy(), rng=rng)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one row and one column"):
        BayNet().release(adult.iloc[:0], rng=rng)
    with pytest.raises(TypeError, match="column 'workclass' of data must have a categorical, integer or float"):
        BayNet().release(adult.astype({"workclass": object}), rng=rng)
    with pytest.raises(ValueError, match="no missing or infinite values"):
        BayNet().release(pd.DataFrame({"x": [1.0, np.nan]}), rng=rng)
