"""Tests of privgame.analysis.discretise: fixed (public) and quantile bins, encoding, decoding, and every error path."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from privgame.analysis.discretise import (
    INTEGERS,
    MAX_VALUE_BINS,
    ColumnBins,
    Discretisation,
    check_table,
    discretise,
    fixed_bins,
    public_bins,
    public_ranges,
    quantile_bins,
)

P_FLOOR = 1e-4  # statistical tests below fail a correct implementation with probability about 1e-4


def _frame(n: int = 200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(17, 91, n).astype(np.int64),
            "score": rng.normal(0.0, 1.0, n),
            "colour": pd.Categorical(rng.choice(["red", "green"], n), categories=["red", "green", "blue"]),
            "small": rng.integers(0, 5, n).astype(np.int32),
            "grade": pd.Categorical(rng.choice(["lo", "hi"], n), categories=["lo", "hi"], ordered=True),
            "weight": rng.uniform(40.0, 120.0, n).astype(np.float32),
        }
    )


RANGES = {"age": (17, 90), "score": (-4.0, 4.0), "small": (0, 4), "weight": (40.0, 120.0)}


# ---------------------------------------------------------------- fixed bins


def test_fixed_float_bins_are_equal_width_over_the_public_range() -> None:
    bins = fixed_bins(_frame(), RANGES, 8)
    score = bins.columns[1]
    assert score.kind == "float"
    np.testing.assert_allclose(score.edges, np.linspace(-4.0, 4.0, 9))


def test_fixed_integer_bins_partition_the_integers_of_the_range() -> None:
    bins = fixed_bins(_frame(), RANGES, 20)
    age = bins.columns[0]
    assert age.kind == "integer" and age.n_codes == 20
    edges = np.asarray(age.edges)
    assert edges[0] == 16.5 and edges[-1] == 90.5
    assert np.all(edges % 1 == 0.5)  # half-integer edges: every integer lies strictly inside one bin
    widths = np.diff(edges)
    assert widths.min() >= 3 and widths.max() <= 4  # 74 integers in 20 bins of 3 or 4
    codes = age.encode(pd.Series(np.arange(17, 91)))
    assert np.all(np.diff(codes) >= 0) and set(codes) == set(range(20))


def test_fixed_integer_range_with_few_integers_gets_one_bin_per_value() -> None:
    bins = fixed_bins(_frame(), RANGES, 20)
    small = bins.columns[3]
    assert small.n_codes == 5
    values = pd.Series(np.arange(5, dtype=np.int32))
    np.testing.assert_array_equal(small.encode(values), np.arange(5))
    decoded = small.decode(np.arange(5), np.random.default_rng(0))
    np.testing.assert_array_equal(decoded, np.arange(5))


def test_fixed_integer_range_with_fractional_bounds_uses_the_integers_inside() -> None:
    df = pd.DataFrame({"x": np.array([1, 2, 3], dtype=np.int64)})
    bins = fixed_bins(df, {"x": (0.5, 3.5)}, 10)
    assert bins.columns[0].edges == (0.5, 1.5, 2.5, 3.5)


def test_fixed_bins_read_only_the_schema() -> None:
    a, b = _frame(seed=1), _frame(seed=2)
    assert fixed_bins(a, RANGES, 7) == fixed_bins(b, RANGES, 7)
    assert fixed_bins(a.iloc[:1], RANGES, 7) == fixed_bins(a, RANGES, 7)


def test_values_outside_the_public_range_are_clipped_into_the_end_bins() -> None:
    df = pd.DataFrame({"x": [-100.0, 0.0, 0.5, 1.0, 7.0], "n": np.array([-5, 0, 5, 10, 99], dtype=np.int64)})
    codes, bins = discretise(df, ranges={"x": (0.0, 1.0), "n": (0, 10)}, n_bins=4)
    np.testing.assert_array_equal(codes[:, 0], [0, 0, 2, 3, 3])
    assert codes[0, 1] == 0 and codes[-1, 1] == 3
    out = bins.decode(codes, rng=np.random.default_rng(0))
    assert out["x"].between(0.0, 1.0).all() and out["n"].between(0, 10).all()


def test_categorical_columns_map_to_their_category_codes() -> None:
    df = _frame()
    codes, bins = discretise(df, ranges=RANGES)
    np.testing.assert_array_equal(codes[:, 2], df["colour"].cat.codes)
    assert bins.columns[2].categories == ("red", "green", "blue")
    assert bins.cardinalities[2] == 3  # the unused category keeps its code
    assert bins.columns[4].ordered


# ---------------------------------------------------------------- public per-column bins


def _gains(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    """A capital-gain-like integer column (0 in 90 % of rows), an hours-like one (40 in half) and a float one."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "gain": np.where(rng.random(n) < 0.9, 0, rng.integers(1, 100_000, n)).astype(np.int64),
            "hours": np.where(rng.random(n) < 0.5, 40, rng.integers(1, 100, n)).astype(np.int64),
            "amount": np.where(rng.random(n) < 0.3, 0.0, rng.uniform(0.0, 10.0, n)),
        }
    )


GAIN_RANGES = {"gain": (0, 99_999), "hours": (1, 99), "amount": (0.0, 10.0)}


def test_public_bins_canonical_form() -> None:
    canonical = public_bins({"hours": INTEGERS, "gain": [0, 1, 100]}, GAIN_RANGES)
    assert canonical == (("gain", (0.0, 1.0, 100.0)), ("hours", "integers"))
    assert public_bins([("hours", "integers"), ("gain", (0, 1, 100))]) == canonical
    assert public_bins({"gain": np.array([0, 1, 100])}) == canonical[:1]  # numpy edges become floats too
    assert all(isinstance(e, float) for e in canonical[0][1])
    assert hash(canonical) == hash(pickle.loads(pickle.dumps(canonical)))
    assert public_bins({}) == () and public_bins(()) == ()


def test_a_single_value_bin_decodes_to_exactly_its_value() -> None:
    df = _gains()
    bins = fixed_bins(
        df, GAIN_RANGES, 10, {"gain": (0, 1, 1000, 99_999, 99_999), "hours": (1, 40, 41), "amount": (0, 0)}
    )
    gain, hours, amount = bins.columns
    # integer columns: half-integer edges, {0} and {99999} are bins of their own, the last bin is closed
    assert gain.edges == (-0.5, 0.5, 999.5, 99_998.5, 99_999.5)
    assert hours.edges == (0.5, 39.5, 40.5, 99.5)
    # a float column: the repeated edge 0 is the bin {0}, the next one (0, 10]
    assert amount.edges == (0.0, 0.0, 10.0) and amount.point_bins == (0,)
    codes = bins.encode(df)
    np.testing.assert_array_equal(codes[:, 0] == 0, df["gain"] == 0)
    np.testing.assert_array_equal(codes[:, 1] == 1, df["hours"] == 40)
    np.testing.assert_array_equal(codes[:, 2] == 0, df["amount"] == 0.0)
    rng = np.random.default_rng(1)
    out = bins.decode(codes, rng=rng)
    assert (out["gain"][codes[:, 0] == 0] == 0).all() and (out["gain"][codes[:, 0] == 3] == 99_999).all()
    assert (out["hours"][codes[:, 1] == 1] == 40).all()
    assert (out["amount"][codes[:, 2] == 0] == 0.0).all() and (out["amount"][codes[:, 2] == 1] > 0.0).all()
    np.testing.assert_array_equal(bins.encode(out), codes)  # every value lands back in its bin
    # the wide bins are still drawn uniformly: over the integers 1..999 of the bin [1, 1000)
    wide = np.asarray(gain.decode(np.ones(20_000, dtype=np.int64), rng))
    assert wide.min() >= 1 and wide.max() <= 999
    assert stats.chisquare(np.bincount(wide - 1, minlength=999)).pvalue > P_FLOOR


@pytest.mark.parametrize(
    ("spec", "edges"),
    [
        ((0, 1, 100), (-0.5, 0.5, 99.5, 99_999.5)),  # [0, 1) = {0}, [1, 100), [100, 99999]
        ((0, 0, 100), (-0.5, 0.5, 99.5, 99_999.5)),  # {0}, (0, 100), [100, 99999]: the same bins
        ((1, 100), (-0.5, 0.5, 99.5, 99_999.5)),  # the range's low end is added
        ((0, 100, 99_999), (-0.5, 99.5, 99_999.5)),
        ((100,), (-0.5, 99.5, 99_999.5)),
        ((0,), (-0.5, 99_999.5)),  # just the range
        ((99_999, 99_999), (-0.5, 99_998.5, 99_999.5)),  # [0, 99999), {99999}
        ((50, 50), (-0.5, 49.5, 50.5, 99_999.5)),  # [0, 50), {50}, (50, 99999]
    ],
)
def test_integer_edges_give_the_bins_of_their_integers(spec: tuple[int, ...], edges: tuple[float, ...]) -> None:
    df = pd.DataFrame({"gain": np.array([0, 5], dtype=np.int64)})
    assert fixed_bins(df, {"gain": (0, 99_999)}, 3, {"gain": spec}).columns[0].edges == edges


def test_integers_bins_give_one_bin_per_value() -> None:
    df = _gains()
    col = fixed_bins(df, GAIN_RANGES, 5, {"hours": INTEGERS}).columns[1]
    assert col.n_codes == 99 and col.edges[0] == 0.5 and col.edges[-1] == 99.5
    np.testing.assert_array_equal(col.decode(col.encode(df["hours"]), np.random.default_rng(0)), df["hours"])
    # a fractional range: the integers inside it
    small = pd.DataFrame({"x": np.array([1, 3], dtype=np.int64)})
    assert fixed_bins(small, {"x": (0.5, 3.5)}, 1, {"x": INTEGERS}).columns[0].edges == (0.5, 1.5, 2.5, 3.5)


def test_no_bins_is_the_old_discretisation() -> None:
    df = _frame()
    old = fixed_bins(df, RANGES, 7)
    assert fixed_bins(df, RANGES, 7, None) == old and fixed_bins(df, RANGES, 7, ()) == old
    assert fixed_bins(df, RANGES, 7, {}) == old
    assert quantile_bins(df, 7, None) == quantile_bins(df, 7) == quantile_bins(df, 7, ())
    # bins for one column leave the others as they were
    some = fixed_bins(df, RANGES, 7, {"age": (17, 18, 90)})
    assert some.columns[0].edges == (16.5, 17.5, 90.5)  # {17} and 18..90 (the last edge closes the last bin)
    assert some.columns[1:] == old.columns[1:]
    codes, found = discretise(df, ranges=RANGES, n_bins=7, bins={"age": (17, 18, 90)})
    assert found == some and np.array_equal(codes, some.encode(df))


def test_quantile_bins_take_given_bins_over_the_data_range() -> None:
    df = _gains()
    bins = quantile_bins(df, 10, {"gain": (0, 1, 1000), "hours": INTEGERS})
    gain, hours = bins.columns[:2]
    top = int(df["gain"].max())
    assert gain.edges == (-0.5, 0.5, 999.5, top + 0.5)  # stretched to the data's maximum (not private)
    assert hours.n_codes == int(df["hours"].max() - df["hours"].min() + 1)
    assert bins.columns[2] == quantile_bins(df, 10).columns[2]
    # edges beyond the data stretch the range the other way
    assert quantile_bins(df[["gain"]], 3, {"gain": (0, 200_000)}).columns[0].edges[-1] == 200_000.5


@pytest.mark.parametrize(
    ("bins", "error", "message"),
    [
        ({"gain": (0, 100, 10)}, ValueError, r"edges of column 'gain' must be sorted \(non-decreasing\)"),
        ({"gain": (0, math.nan)}, ValueError, "must be one or more finite numbers"),
        ({"gain": (0, math.inf)}, ValueError, "must be one or more finite numbers"),
        ({"gain": ()}, ValueError, "must be one or more finite numbers"),
        ({"gain": (0, 1, 1, 1)}, ValueError, "repeat no value more than twice"),
        ({"gain": (0, "1")}, TypeError, "edges of column 'gain' must be real numbers, got '1'"),
        ({"gain": (0, True)}, TypeError, "must be real numbers"),
        ({"gain": "values"}, ValueError, "bins of column 'gain' must be 'integers' or a sequence of edges"),
        ({"gain": 5}, TypeError, "must be 'integers' or a sequence of edges, got 5"),
        ([("gain", (0,)), ("gain", (1,))], ValueError, "each column once"),
        ([(1, (0,))], TypeError, "with a str column"),
        ([("gain",)], TypeError, r"\(column, spec\)"),
        ("gain", TypeError, "bins must be a mapping or a sequence"),
    ],
)
def test_bad_bins_are_refused(bins: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message) as info:
        public_bins(bins)  # type: ignore[arg-type]
    assert str(info.value).startswith("bins")  # names the parameter (a mechanism's error passes it on)
    with pytest.raises(error, match=message):
        fixed_bins(_gains(), GAIN_RANGES, 5, bins)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("bins", "ranges", "message"),
    [
        ({"gain": (-1, 10)}, GAIN_RANGES, r"edges of column 'gain' must lie in its public range \[0.0, 99999.0\]"),
        ({"gain": (0, 100_000)}, GAIN_RANGES, "must lie in its public range"),
        ({"gain": INTEGERS}, {"gain": (0, 1e12)}, f"must number 1 to {MAX_VALUE_BINS}.*got 1000000000001"),
        ({"gain": INTEGERS}, {"gain": (0.2, 0.8)}, "must number 1 to"),
        ({"gain": (0, 1)}, {"hours": (1, 99)}, "bins of column 'gain' must come with a public range"),
    ],
)
def test_bins_must_fit_the_public_ranges(bins: object, ranges: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        public_bins(bins, ranges)  # type: ignore[arg-type]


def test_bins_that_do_not_fit_the_table_are_refused() -> None:
    df = _gains()
    with pytest.raises(ValueError, match=r"bins must name numeric columns of the data, got 'wage' \(not a column"):
        fixed_bins(df, GAIN_RANGES, 5, {"wage": (0, 1)})
    with pytest.raises(ValueError, match="got 'wage'"):
        quantile_bins(df, 5, {"wage": (0, 1)})
    with pytest.raises(ValueError, match=r"got 'colour' \(a categorical column\)"):
        fixed_bins(_frame(), RANGES, 5, {"colour": (0, 1)})
    with pytest.raises(ValueError, match="'integers' bins need an integer column, got column 'amount'"):
        fixed_bins(df, GAIN_RANGES, 5, {"amount": INTEGERS})
    with pytest.raises(ValueError, match="edges of integer column 'gain' must be integers, got"):
        fixed_bins(df, GAIN_RANGES, 5, {"gain": (0, 0.5, 100)})
    with pytest.raises(ValueError, match="every bin of integer column 'gain' must hold an integer"):
        fixed_bins(df, GAIN_RANGES, 5, {"gain": (0, 0, 1)})  # {0}, then (0, 1): no integer
    with pytest.raises(ValueError, match="must lie in its public range"):
        fixed_bins(df, GAIN_RANGES, 5, {"gain": (0, 200_000)})
    with pytest.raises(ValueError, match="numeric column 'gain' needs a public range"):
        fixed_bins(df, {"hours": (1, 99), "amount": (0.0, 10.0)}, 5, {"gain": (0, 1)})
    with pytest.raises(ValueError, match=f"must number 1 to {MAX_VALUE_BINS}"):
        quantile_bins(pd.DataFrame({"x": np.array([0, 10**12], dtype=np.int64)}), 5, {"x": INTEGERS})


# ---------------------------------------------------------------- quantile bins


def test_quantile_float_bins_hold_equal_shares_of_the_data() -> None:
    x = np.random.default_rng(3).normal(size=10_000)
    bins = quantile_bins(pd.DataFrame({"x": x}), 10)
    np.testing.assert_allclose(bins.columns[0].edges, np.quantile(x, np.linspace(0, 1, 11)))
    counts = np.bincount(bins.encode(pd.DataFrame({"x": x}))[:, 0])
    assert counts.min() >= 999 and counts.max() <= 1001  # continuous data: one tie at most per edge


def test_quantile_integer_bins_keep_a_point_mass_apart() -> None:
    x = np.r_[np.zeros(900, dtype=np.int64), np.arange(1, 101, dtype=np.int64)]
    col = quantile_bins(pd.DataFrame({"gain": x}), 10).columns[0]
    assert col.edges[:2] == (-0.5, 0.5)  # the zeros fill 9 deciles and get the bin {0}
    assert col.edges[-1] == 100.5
    out = col.decode(col.encode(pd.Series(x)), np.random.default_rng(0))
    assert np.all(out[:900] == 0) and np.all(out[900:] >= 1)


def test_quantile_integer_bins_isolate_a_spike_and_keep_few_values_exact() -> None:
    rng = np.random.default_rng(4)
    hours = np.where(rng.random(5000) < 0.45, 40, rng.integers(1, 100, 5000)).astype(np.int64)
    col = quantile_bins(pd.DataFrame({"hours": hours}), 25).columns[0]
    assert (39.5, 40.5) in set(zip(col.edges[:-1], col.edges[1:], strict=True))
    codes = col.encode(pd.Series(hours))
    assert np.all(col.decode(codes, rng)[hours == 40] == 40)
    # at most n_bins distinct values (here 0, 3, 4, 9): every value is its own bin, decoding is exact
    few = pd.Series(rng.choice([0, 3, 4, 9], 300).astype(np.int64))
    col = quantile_bins(pd.DataFrame({"few": few}), 4).columns[0]
    np.testing.assert_array_equal(col.decode(col.encode(few), rng), few)


def test_quantile_bins_of_a_constant_column() -> None:
    df = pd.DataFrame({"f": np.full(5, 2.5), "i": np.full(5, 7, dtype=np.int64)})
    codes, bins = discretise(df, method="quantile", n_bins=4)
    assert bins.cardinalities == (1, 1)
    out = bins.decode(codes, rng=np.random.default_rng(0))
    pd.testing.assert_frame_equal(out, df)


def test_quantile_bins_are_labelled_not_private() -> None:
    assert "NOT DIFFERENTIALLY PRIVATE" in (quantile_bins.__doc__ or "")
    assert quantile_bins(_frame(), 5).method == "quantile"
    assert fixed_bins(_frame(), RANGES, 5).method == "fixed"


# ---------------------------------------------------------------- decoding


@pytest.mark.parametrize("method", ["fixed", "quantile"])
def test_decode_restores_columns_dtypes_and_categories_and_codes(method: str) -> None:
    df = _frame()
    codes, bins = discretise(df, method=method, n_bins=6, ranges=RANGES)  # type: ignore[arg-type]
    out = bins.decode(codes, rng=np.random.default_rng(1))
    assert list(out.columns) == list(df.columns)
    assert list(out.dtypes) == list(df.dtypes)  # includes the category lists and orderedness
    pd.testing.assert_series_equal(out["colour"], df["colour"])
    np.testing.assert_array_equal(bins.encode(out), codes)  # every value lands back in its bin
    assert isinstance(out.index, pd.RangeIndex)


def test_decode_is_reproducible_from_rng() -> None:
    codes, bins = discretise(_frame(), ranges=RANGES, n_bins=5)
    a = bins.decode(codes, rng=np.random.default_rng(5))
    b = bins.decode(codes, rng=np.random.default_rng(5))
    c = bins.decode(codes, rng=np.random.default_rng(6))
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


def test_float_values_are_uniform_within_their_bin() -> None:
    col = ColumnBins("x", "float64", edges=(0.0, 2.0, 5.0))
    values = np.asarray(col.decode(np.ones(20_000, dtype=np.int64), np.random.default_rng(7)), dtype=np.float64)
    assert values.min() >= 2.0 and values.max() < 5.0
    assert stats.kstest(values, stats.uniform(loc=2.0, scale=3.0).cdf).pvalue > P_FLOOR


@pytest.mark.parametrize(("code", "lo", "hi"), [(0, 0, 3), (1, 4, 9), (2, 10, 10)])
def test_integer_values_are_uniform_over_the_integers_of_their_bin(code: int, lo: int, hi: int) -> None:
    # bins [-0.2, 3.7), [3.7, 9.9), [9.9, 10.0]: the integers 0..3, 4..9, and 10 (the last bin is closed)
    col = ColumnBins("x", "int64", edges=(-0.2, 3.7, 9.9, 10.0))
    values = col.decode(np.full(12_000, code, dtype=np.int64), np.random.default_rng(code))
    assert values.dtype == np.int64
    counts = np.bincount(values - lo, minlength=hi - lo + 1)
    assert counts.size == hi - lo + 1  # nothing outside [lo, hi]
    if hi > lo:
        assert stats.chisquare(counts).pvalue > P_FLOOR


# ---------------------------------------------------------------- objects


def test_discretisation_is_hashable_picklable_and_canonical() -> None:
    bins = fixed_bins(_frame(), RANGES, 5)
    assert hash(bins) == hash(pickle.loads(pickle.dumps(bins)))
    assert pickle.loads(pickle.dumps(bins)) == bins
    assert public_ranges(RANGES) == public_ranges([(c, lo, hi) for c, (lo, hi) in reversed(RANGES.items())])
    assert public_ranges(RANGES)[0] == ("age", 17.0, 90.0)


def test_check_table_returns_a_valid_table() -> None:
    df = _frame()
    assert check_table("data", df) is df


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("data", [None, np.zeros((3, 2)), [[1, 2]], pd.Series([1, 2])])
def test_non_dataframe_is_refused(data: object) -> None:
    with pytest.raises(TypeError, match="must be a pandas DataFrame"):
        discretise(data, method="quantile")  # type: ignore[arg-type]


@pytest.mark.parametrize("data", [pd.DataFrame(), pd.DataFrame({"x": np.array([], dtype=np.int64)})])
def test_empty_frame_is_refused(data: pd.DataFrame) -> None:
    with pytest.raises(ValueError, match="at least one row and one column"):
        quantile_bins(data, 5)


@pytest.mark.parametrize(
    "column",
    [
        pd.Series(["a", "b"], dtype=object),
        pd.Series(["a", "b"], dtype="string"),
        pd.Series([True, False]),
        pd.Series(pd.to_datetime(["2020-01-01", "2020-01-02"])),
        pd.Series([1, 2], dtype="Int64"),
    ],
    ids=["object", "string", "bool", "datetime", "nullable-int"],
)
def test_unsupported_dtype_is_refused(column: pd.Series) -> None:
    with pytest.raises(TypeError, match="column 'bad' of data must have a categorical, integer or float dtype"):
        check_table("data", pd.DataFrame({"ok": [1.0, 2.0], "bad": column}))


def test_missing_values_and_duplicate_names_are_refused() -> None:
    with pytest.raises(ValueError, match="no missing or infinite values"):
        check_table("data", pd.DataFrame({"x": [1.0, np.nan]}))
    with pytest.raises(ValueError, match="no missing or infinite values"):
        check_table("data", pd.DataFrame({"x": [1.0, np.inf]}))
    with pytest.raises(ValueError, match="no missing values"):
        check_table("data", pd.DataFrame({"c": pd.Categorical(["a", None], categories=["a"])}))
    with pytest.raises(ValueError, match="at least one category"):
        check_table("data", pd.DataFrame({"c": pd.Categorical([None, None], categories=[])}))
    with pytest.raises(ValueError, match="unique column names"):
        check_table("data", pd.DataFrame([[1, 2]], columns=["a", "a"]))


@pytest.mark.parametrize("columns", [[0, 1], ["a", 1], [("a", "b"), "c"]])
def test_non_str_column_names_are_refused(columns: list[object]) -> None:
    # the bins are labelled by str(name): PrivBayes and BayNet used to fail later with a misleading column mismatch
    # ("data must have the columns ['0', '1'], got [0, 1]") and could not return the input's column labels
    df = pd.DataFrame([[1.0, 2.0], [3.0, 4.0]], columns=columns)
    with pytest.raises(TypeError, match="must have str column names"):
        discretise(df, method="quantile")


def test_numeric_column_without_public_range_is_refused() -> None:
    with pytest.raises(ValueError, match=r"numeric column 'score' needs a public range"):
        fixed_bins(_frame(), {k: v for k, v in RANGES.items() if k != "score"}, 5)
    with pytest.raises(ValueError, match=r"numeric column 'age' needs a public range"):
        discretise(_frame())


@pytest.mark.parametrize(
    ("ranges", "error", "message"),
    [
        ({"x": (1.0, 1.0)}, ValueError, "finite low < high"),
        ({"x": (2.0, 1.0)}, ValueError, "finite low < high"),
        ({"x": (0.0, math.inf)}, ValueError, "finite low < high"),
        ({"x": (0.0, math.nan)}, ValueError, "finite low < high"),
        ({"x": ("0", 1)}, TypeError, "must be real numbers"),
        ({"x": (True, 2)}, TypeError, "must be real numbers"),
        ({"x": (0, 1, 2)}, TypeError, r"\(column, low, high\)"),
        ({"x": 5}, TypeError, r"\(column, low, high\)"),
        ([("x", 0, 1), ("x", 0, 2)], ValueError, "each column once"),
        ([(1, 0, 1)], TypeError, "str column"),
        (["x"], TypeError, r"\(column, low, high\)"),
        ("x", TypeError, "mapping or a sequence"),
        (5, TypeError, "mapping or a sequence"),
    ],
)
def test_bad_ranges_are_refused(ranges: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message) as info:
        public_ranges(ranges)  # type: ignore[arg-type]
    assert str(info.value).startswith("ranges")  # names the parameter (a mechanism's error passes it on)


def test_integer_range_without_an_integer_is_refused() -> None:
    with pytest.raises(ValueError, match="must hold an integer"):
        fixed_bins(pd.DataFrame({"n": np.array([1], dtype=np.int64)}), {"n": (0.2, 0.8)}, 4)


@pytest.mark.parametrize(("n_bins", "error"), [(0, ValueError), (-1, ValueError), (2.0, TypeError), (None, TypeError)])
def test_bad_n_bins_is_refused(n_bins: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="n_bins must be"):
        fixed_bins(_frame(), RANGES, n_bins)  # type: ignore[arg-type]
    with pytest.raises(error, match="n_bins must be"):
        quantile_bins(_frame(), n_bins)  # type: ignore[arg-type]


def test_bad_method_is_refused() -> None:
    with pytest.raises(ValueError, match="method must be one of 'fixed', 'quantile'"):
        discretise(_frame(), method="kmeans")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="method must be one of"):
        Discretisation(fixed_bins(_frame(), RANGES, 3).columns, "kmeans")  # type: ignore[arg-type]


def test_encode_refuses_a_table_that_does_not_match() -> None:
    df = _frame()
    bins = fixed_bins(df, RANGES, 5)
    with pytest.raises(ValueError, match="data must have the columns"):
        bins.encode(df[df.columns[::-1]])
    with pytest.raises(ValueError, match="must have the categories"):
        bins.encode(df.assign(colour=df["colour"].cat.set_categories(["red", "green"])))
    with pytest.raises(ValueError, match="column 'age' must be numeric"):
        bins.encode(df.assign(age=pd.Categorical(df["age"])))
    with pytest.raises(ValueError, match="column 'colour' must be categorical"):
        bins.encode(df.assign(colour=df["colour"].cat.codes))


@pytest.mark.parametrize(
    "codes",
    [np.zeros((3, 5), dtype=np.int64), np.zeros(6, dtype=np.int64), np.zeros((3, 6)), np.full((2, 6), -1)],
    ids=["columns", "1-d", "float", "negative"],
)
def test_decode_refuses_bad_codes(codes: np.ndarray) -> None:
    bins = fixed_bins(_frame(), RANGES, 5)
    with pytest.raises(ValueError, match="codes"):
        bins.decode(codes, rng=np.random.default_rng(0))


def test_decode_refuses_a_code_out_of_range_naming_the_column() -> None:
    bins = fixed_bins(_frame(), RANGES, 5)
    codes = np.zeros((2, 6), dtype=np.int64)
    codes[1, 2] = 3  # 'colour' has 3 categories: codes 0..2
    with pytest.raises(ValueError, match=r"codes of column 'colour' must lie in \[0, 2\]"):
        bins.decode(codes, rng=np.random.default_rng(0))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dtype": "category"}, "needs categories"),
        ({"dtype": "category", "categories": ("a",), "edges": (0.0, 1.0)}, "needs categories and no edges"),
        ({"dtype": "object", "edges": (0.0, 1.0)}, "must be 'category', integer or float"),
        ({"dtype": "int64", "edges": (0.0,)}, ">= 2 finite non-decreasing"),
        ({"dtype": "int64", "edges": (1.0, 0.0)}, ">= 2 finite non-decreasing"),
        ({"dtype": "float64", "edges": (0.0, math.inf)}, ">= 2 finite non-decreasing"),
        # a repeated edge is a single-value bin {v}: allowed once per value in float columns, never in integer ones
        ({"dtype": "int64", "edges": (0.0, 1.0, 1.0)}, "integer column 'x' must increase strictly"),
        ({"dtype": "float64", "edges": (0.0, 1.0, 1.0, 1.0)}, "repeat no value more than twice"),
        ({"dtype": "float64", "edges": (0.0, 1.0), "categories": ("a",)}, "takes no categories"),
    ],
)
def test_bad_column_bins_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ColumnBins("x", **kwargs)  # type: ignore[arg-type]


def test_bad_discretisation_is_refused() -> None:
    col = ColumnBins("x", "float64", edges=(0.0, 1.0))
    with pytest.raises(TypeError, match="non-empty sequence of ColumnBins"):
        Discretisation((), "fixed")
    with pytest.raises(ValueError, match="names must be unique"):
        Discretisation((col, col), "fixed")
