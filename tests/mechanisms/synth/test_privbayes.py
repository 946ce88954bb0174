"""Tests of privgame.mechanisms.synth.privbayes: the DP pieces against hand values and statistics, fidelity, and
errors."""

from __future__ import annotations

import math
import pickle
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats
from sklearn.metrics import mutual_info_score

from privgame.analysis.accounting import NeighbouringRelation
from privgame.analysis.discretise import fixed_bins
from privgame.analysis.fidelity import fidelity_report
from privgame.data import ADULT_PUBLIC_BINS, ADULT_PUBLIC_RANGES, load_adult, public_domain
from privgame.mechanisms.synth.privbayes import (
    PrivBayes,
    average_cells,
    exponential_mechanism,
    laplace_scale,
    mutual_information_sensitivity,
    selection_logits,
    theta_useful_degree,
)

P_FLOOR = 1e-4  # each statistical test below fails a correct implementation with probability about 1e-4


@pytest.fixture(scope="module")
def full_adult() -> pd.DataFrame:
    return load_adult("train")


@pytest.fixture(scope="module")
def adult(full_adult: pd.DataFrame) -> pd.DataFrame:
    return full_adult.iloc[:1000].reset_index(drop=True)


def _coded(data: pd.DataFrame, n_bins: int, *tables: pd.DataFrame) -> list[pd.DataFrame]:
    """The tables as categorical codes of PrivBayes's public bins (fidelity free of the uniform-in-bin decoding)."""
    bins = fixed_bins(data, ADULT_PUBLIC_RANGES, n_bins)
    return [pd.DataFrame(bins.encode(t), columns=t.columns).astype("category") for t in tables]


def _mutual_information(x: np.ndarray, y: np.ndarray) -> float:
    """I(X; Y) in nats of the empirical distribution, straight from the definition."""
    joint = np.zeros((x.max() + 1, y.max() + 1))
    np.add.at(joint, (x, y), 1.0 / x.size)
    outer = joint.sum(1, keepdims=True) * joint.sum(0, keepdims=True)
    nz = joint > 0
    return float((joint[nz] * np.log(joint[nz] / outer[nz])).sum())


# ---------------------------------------------------------------- the pieces, by hand


def test_sensitivity_hand_values() -> None:
    # Lemma 4.1 in nats: binary (1/n) ln n + ((n-1)/n) ln(n/(n-1));
    # otherwise (2/n) ln((n+1)/2) + ((n-1)/n) ln((n+1)/(n-1))
    assert mutual_information_sensitivity(2, True) == pytest.approx(math.log(2), rel=1e-14)
    assert mutual_information_sensitivity(2, False) == pytest.approx(math.log(1.5) + 0.5 * math.log(3), rel=1e-14)
    assert mutual_information_sensitivity(10, True) == pytest.approx(0.3250829733914483, rel=1e-12)
    assert mutual_information_sensitivity(10, False) == pytest.approx(0.5215532443636212, rel=1e-12)
    assert mutual_information_sensitivity(1000, True) == pytest.approx(0.007907255112232175, rel=1e-12)
    assert mutual_information_sensitivity(1000, False) == pytest.approx(0.014429215863510904, rel=1e-12)
    with pytest.raises(ValueError, match="n must be an integer >= 2"):
        mutual_information_sensitivity(1, True)


@pytest.mark.parametrize(("cx", "cp", "binary"), [(2, 3, True), (2, 2, True), (3, 3, False), (4, 5, False)])
def test_sensitivity_bounds_the_change_of_mutual_information(cx: int, cp: int, binary: bool) -> None:
    # random search over small data sets and one-record replacements; half of them concentrated on one value,
    # where the binary bound is attained (so a smaller formula would fail this test)
    rng = np.random.default_rng(cx * 10 + cp)
    n = 5
    bound = mutual_information_sensitivity(n, binary)
    worst = 0.0
    for t in range(600):
        x, p = rng.integers(0, cx, n), rng.integers(0, cp, n)
        if t % 2:
            x[: n - 1] = 0
            p[: n - 1] = 0
        x2, p2 = x.copy(), p.copy()
        i = rng.integers(n)
        x2[i], p2[i] = rng.integers(0, cx), rng.integers(0, cp)
        worst = max(worst, abs(_mutual_information(x, p) - _mutual_information(x2, p2)))
    assert worst <= bound * (1 + 1e-12)
    if binary:
        assert worst >= 0.99 * bound
    else:  # the binary bound would be wrong here
        assert worst > mutual_information_sensitivity(n, True)


def test_definition_of_mutual_information_agrees_with_sklearn() -> None:
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 3, 50), rng.integers(0, 4, 50)
    assert _mutual_information(x, y) == pytest.approx(mutual_info_score(x, y), abs=1e-12)


def test_selection_logits_hand_example() -> None:
    cards = (2, 3, 3, 1)
    candidates = [(0, (1,)), (1, (2,)), (2, (1, 3)), (1, (0, 2))]
    mi = np.array([0.1, 0.2, 0.3, 0.4])
    s_bin, s_other = mutual_information_sensitivity(50, True), mutual_information_sensitivity(50, False)
    # binary: child 0 has 2 codes; (1, 3) has 3 cells; (0, 2) has 6 cells
    expected = 0.25 * mi / (2 * np.array([s_bin, s_other, s_other, s_other]))
    np.testing.assert_allclose(selection_logits(mi, candidates, cards, 50, 0.25), expected, rtol=1e-14)
    binary_parents = selection_logits([0.2], [(1, (0, 3))], cards, 50, 0.25)  # 2 x 1 = 2 cells: binary
    np.testing.assert_allclose(binary_parents, [0.25 * 0.2 / (2 * s_bin)], rtol=1e-14)
    np.testing.assert_array_equal(selection_logits(mi, candidates, cards, 1, 0.25), np.zeros(4))


def test_exponential_mechanism_frequencies_match_softmax() -> None:
    logits = np.array([0.0, 1.0, 2.0, -1.0, 0.5])
    rng = np.random.default_rng(0)
    n = 20_000
    counts = np.bincount([exponential_mechanism(logits, rng) for _ in range(n)], minlength=5)
    assert stats.chisquare(counts, n * special.softmax(logits)).pvalue > P_FLOOR


def test_exponential_mechanism_is_stable_for_huge_logits() -> None:
    rng = np.random.default_rng(0)
    assert all(exponential_mechanism([1e300, -1e300, 0.0], rng) == 0 for _ in range(100))
    assert all(exponential_mechanism([-1e6, -1e6 + 50.0], rng) == 1 for _ in range(100))


def test_greedy_bayes_selection_frequencies_match_its_probabilities() -> None:
    # A 3-column table (2, 3 and 3 codes, 40 rows): with k = 1 a network is (root, first child, parent of the last
    # child), 12 outcomes with probability (1/3) * softmax(step 1) * softmax(step 2), where each step's log-weights
    # are ε₁/(d−1) · I / (2 S(I)).  At ε = 8 the probabilities range over 0.048–0.114.  Sizing: 20,000 draws, a
    # chi-square test at p > 1e-4 (critical value 37.4 on 11 df); the noncentrality against dropping the factor
    # 2, against uniform choices, or against the wrong (binary/non-binary) sensitivity gives power ≈ 1.
    rng = np.random.default_rng(123)
    n = 40
    x0 = rng.integers(0, 2, n)
    x1 = np.where(rng.random(n) < 0.6, x0 + rng.integers(0, 2, n), rng.integers(0, 3, n))
    x2 = np.where(rng.random(n) < 0.5, x1, rng.integers(0, 3, n))
    codes = np.column_stack([x0, x1, x2]).astype(np.int64)
    cards = (2, 3, 3)
    mech = PrivBayes(epsilon=8.0, k=1)
    step = mech.epsilon1 / 2

    def logit(child: int, parent: int) -> float:
        mi = _mutual_information(codes[:, child], codes[:, parent])
        binary = cards[child] == 2 or cards[parent] == 2
        return step * mi / (2 * mutual_information_sensitivity(n, binary))

    expected = {}
    for root in range(3):
        rest = [c for c in range(3) if c != root]
        first = special.softmax([logit(c, root) for c in rest])
        for i, child in enumerate(rest):
            last = next(c for c in rest if c != child)
            parents = sorted([root, child])
            second = special.softmax([logit(last, p) for p in parents])
            for j, parent in enumerate(parents):
                expected[(root, child, parent)] = first[i] * second[j] / 3

    draws = 20_000
    draw_rng = np.random.default_rng(1)
    seen: Counter[tuple[int, int, int]] = Counter()
    for _ in range(draws):
        network = mech.greedy_bayes(codes, cards, 1, rng=draw_rng)
        seen[(network.order[0], network.order[1], network.parents[2][0])] += 1
    assert set(seen) <= set(expected)
    keys = sorted(expected)
    observed = np.array([seen[key] for key in keys])
    assert stats.chisquare(observed, draws * np.array([expected[key] for key in keys])).pvalue > P_FLOOR


def test_laplace_scale_and_average_cells_hand_values() -> None:
    assert laplace_scale(15, 2, 0.5) == 52.0
    assert average_cells((2, 2, 2, 2), 3) == 8.0
    assert average_cells((2, 3, 4), 1) == 3.0
    assert average_cells((2, 3, 4), 2) == pytest.approx(26 / 3)
    assert average_cells((2, 3, 4), 3) == 24.0


def test_theta_usefulness_hand_examples() -> None:
    # four binary attributes, ε₂ = 0.5: n ε₂ / (2 (d − k) 2^(k+1)) at n = 200 is 6.25, 4.17, 3.13, 3.13
    assert theta_useful_degree(200, (2, 2, 2, 2), 0.5, 4.0) == 1
    assert theta_useful_degree(200, (2, 2, 2, 2), 0.5, 3.0) == 3  # the largest qualifying k
    assert theta_useful_degree(200, (2, 2, 2, 2), 0.5, 6.0) == 0
    assert theta_useful_degree(10, (2, 2, 2, 2), 0.5, 4.0) == 0  # none qualifies: k = 0
    # the paper's binary form n ε / ((d − k) 2^(k+3)) at ε₂ = ε / 2
    n, eps, d = 5000, 0.8, 10
    paper = max(k for k in range(d) if n * eps / ((d - k) * 2 ** (k + 3)) >= 4.0)
    assert theta_useful_degree(n, (2,) * d, eps / 2, 4.0) == paper == 4  # 5.2 at k = 4, 3.1 at k = 5
    # cards (2, 3, 4): average cells 3, 26/3, 24; n ε₂ = 600 gives 33.3, 17.3, 12.5
    assert theta_useful_degree(600, (2, 3, 4), 1.0, 15.0) == 1
    assert theta_useful_degree(600, (2, 3, 4), 1.0, 12.5) == 2


# ---------------------------------------------------------------- the noisy conditionals


def test_noise_on_the_counts_is_laplace_with_scale_two_d_minus_k_over_epsilon2(adult: pd.DataFrame) -> None:
    # d = 15, k = 2, ε = 1, β = 0.5: scale 2 · 13 / 0.5 = 52 on every cell of the 13 full-domain marginals
    # (about 40,000 cells).  KS test against Laplace(0, 52) at p > 1e-4; with this many cells the same test
    # rejects the scale 2 d / ε₂ = 60 (checked below), so it can fail.
    mech = PrivBayes(epsilon=1.0, k=2, ranges=ADULT_PUBLIC_RANGES)
    model = mech.fit(adult, rng=np.random.default_rng(0))
    bins = fixed_bins(adult, ADULT_PUBLIC_RANGES, mech.n_bins)
    codes, cards = bins.encode(adult), bins.cardinalities
    assert model.degree == 2 and model.noise_scale == 52.0
    assert len(model.marginals) == 15 - 2
    assert model.marginals[0].columns == model.network.order[:3]
    noise = []
    for marginal in model.marginals:
        exact = np.zeros(tuple(cards[c] for c in marginal.columns))
        np.add.at(exact, tuple(codes[:, c] for c in marginal.columns), 1.0)
        assert marginal.noisy_counts.shape == exact.shape  # the full domain, unseen categories included
        noise.append((marginal.noisy_counts - exact).ravel())
    pooled = np.concatenate(noise)
    assert pooled.size > 20_000
    assert stats.kstest(pooled, stats.laplace(scale=52.0).cdf).pvalue > P_FLOOR
    assert stats.kstest(pooled, stats.laplace(scale=60.0).cdf).pvalue < P_FLOOR
    assert abs(np.abs(pooled).mean() / 52.0 - 1) < 5 / math.sqrt(pooled.size)  # E|noise| = scale, sd = scale


def test_the_marginals_cover_every_category_of_the_public_domain(adult: pd.DataFrame) -> None:
    data = adult.iloc[:100]
    country = list(data.columns).index("native_country")
    assert data["native_country"].nunique() < 42
    model = PrivBayes(epsilon=1.0, k=1, ranges=ADULT_PUBLIC_RANGES).fit(data, rng=np.random.default_rng(0))
    shapes = [m.noisy_counts.shape[m.columns.index(country)] for m in model.marginals if country in m.columns]
    assert shapes and all(s == 42 for s in shapes)


def test_degree_choice(adult: pd.DataFrame) -> None:
    data = adult.iloc[:200]
    model = PrivBayes(epsilon=1.0, ranges=ADULT_PUBLIC_RANGES).fit(data, rng=np.random.default_rng(0))
    cards = fixed_bins(data, ADULT_PUBLIC_RANGES, 20).cardinalities
    assert model.degree == theta_useful_degree(200, cards, 0.5, 4.0)
    three = data[["age", "sex", "race"]]
    big_k = PrivBayes(epsilon=1.0, k=7, ranges=ADULT_PUBLIC_RANGES).fit(three, rng=np.random.default_rng(0))
    assert big_k.degree == 2 and len(big_k.marginals) == 1  # k >= d is used as d - 1: one joint of all columns
    zero = PrivBayes(epsilon=1.0, k=0, ranges=ADULT_PUBLIC_RANGES).fit(data, rng=np.random.default_rng(0))
    assert zero.degree == 0 and all(ps == () for ps in zero.network.parents) and len(zero.marginals) == 15
    assert zero.noise_scale == 2 * 15 / 0.5


# ---------------------------------------------------------------- the generator


def test_near_noiseless_output_matches_the_binned_data(adult: pd.DataFrame) -> None:
    # ε = 1e4, k = 1: noise scale 0.006, so the output is BayNet-like on the public bins.  Compared on the codes
    # (uniform-in-bin decoding aside), over 20 seeds: per-column TV max 0.063, mean TV 0.026 ± 0.002 (max 0.029),
    # mean |Cramér's V difference| 0.068 ± 0.006 (max 0.084).  Bounds 6-7 sd above the means.
    mech = PrivBayes(epsilon=1e4, k=1, ranges=ADULT_PUBLIC_RANGES)
    for seed in range(3):
        out = mech.release(adult, rng=np.random.default_rng(seed))
        assert list(out.dtypes) == list(adult.dtypes) and list(out.columns) == list(adult.columns)
        real, synthetic = _coded(adult, mech.n_bins, adult, out)
        report = fidelity_report(real, synthetic, target=None)
        assert report.tv_max <= 0.10 and report.tv_mean <= 0.04 and report.v_diff_mean <= 0.11


def test_epsilon_one_on_the_full_training_split(full_adult: pd.DataFrame) -> None:
    # 32,561 rows, ε = 1, θ-useful k: over 10 seeds per-column TV (on the codes) max 0.048, mean 0.015 ± 0.0014
    mech = PrivBayes(epsilon=1.0, ranges=ADULT_PUBLIC_RANGES)
    out = mech.release(full_adult, rng=np.random.default_rng(0))
    assert len(out) == len(full_adult) and list(out.dtypes) == list(full_adult.dtypes)
    real, synthetic = _coded(full_adult, mech.n_bins, full_adult, out)
    report = fidelity_report(real, synthetic, target=None)
    assert report.tv_max <= 0.08 and report.tv_mean <= 0.025


def test_larger_epsilon_gives_higher_fidelity_on_average(adult: pd.DataFrame) -> None:
    # mean TV over columns (real deciles), k = 1, 20 seeds: ε = 0.1: 0.543 ± 0.024, ε = 1: 0.460 ± 0.022,
    # ε = 10: 0.276 ± 0.027.  With 6 seeds each the smaller gap is about 6 standard errors.
    means = []
    for epsilon in (0.1, 1.0, 10.0):
        mech = PrivBayes(epsilon=epsilon, k=1, ranges=ADULT_PUBLIC_RANGES)
        tv = [
            fidelity_report(adult, mech.release(adult, rng=np.random.default_rng(s)), target=None).tv_mean
            for s in range(6)
        ]
        means.append(np.mean(tv))
    assert means[0] > means[1] > means[2]


def test_numeric_values_are_drawn_within_their_public_bins(adult: pd.DataFrame) -> None:
    mech = PrivBayes(epsilon=1.0, k=1, ranges=ADULT_PUBLIC_RANGES, n_rows=5000)
    out = mech.release(adult, rng=np.random.default_rng(0))
    for column, lo, hi in ADULT_PUBLIC_RANGES:
        assert out[column].between(lo, hi).all() and out[column].dtype == np.int64
    assert out["fnlwgt"].nunique() > 1000  # uniform within 75,000-wide bins, not bin midpoints


def test_public_bins_reach_the_fidelity_target_at_a_large_epsilon(adult: pd.DataFrame) -> None:
    # ε = 1000, k = 2 on the first 1,000 rows, mean TV over columns (real deciles).  Without public bins 0.192 ± 0.008
    # (sd over 10 seeds; capital_gain 0.92, capital_loss 0.95, hours_per_week 0.38: a uniform draw in a 5,000-dollar
    # bin is almost never 0).  With Adult's public bins, over 200 seeds: 0.052 ± 0.010 (right-skewed, max 0.093;
    # what is left is mostly the Laplace noise of the 42-country and 20-bin marginals at k = 2), capital_gain 0.041
    # and capital_loss 0.054 on average.  The mean of 30 seeds has sd 0.0019: the bound 0.06 sits 4 of them above.
    # BayNet (k = 1 or 2) gives 0.023.
    domain = public_domain("adult")
    mech = PrivBayes(epsilon=1000.0, k=2, ranges=domain.ranges, bins=domain.bins)
    reports = [
        fidelity_report(adult, mech.release(adult, rng=np.random.default_rng(s)), target=None) for s in range(30)
    ]
    assert np.mean([r.tv_mean for r in reports]) <= 0.06
    for column in ("capital_gain", "capital_loss"):
        assert np.mean([r.tv_distances[column] for r in reports]) <= 0.1, column
    old = PrivBayes(epsilon=1000.0, k=2, ranges=domain.ranges).release(adult, rng=np.random.default_rng(0))
    assert (old["capital_gain"] == 0).mean() < 0.01  # what the public bins repair


def test_single_value_bins_decode_to_exactly_their_value(adult: pd.DataFrame) -> None:
    mech = PrivBayes(epsilon=1000.0, k=1, ranges=ADULT_PUBLIC_RANGES, bins=ADULT_PUBLIC_BINS, n_rows=5000)
    model = mech.fit(adult, rng=np.random.default_rng(0))
    rng = np.random.default_rng(1)
    codes = model.model.sample_codes(5000, rng=rng)
    out = model.model.discretisation.decode(codes, rng=rng)
    columns = list(adult.columns)
    gain, loss, hours = (columns.index(c) for c in ("capital_gain", "capital_loss", "hours_per_week"))
    np.testing.assert_array_equal(out["capital_gain"] == 0, codes[:, gain] == 0)  # {0} is code 0, nothing else is 0
    np.testing.assert_array_equal(out["capital_loss"] == 0, codes[:, loss] == 0)
    # 40 hours is code 8 (below it the bands 1-5, ..., 31-35, 36-39)
    np.testing.assert_array_equal(out["hours_per_week"] == 40, codes[:, hours] == 8)
    assert (out["capital_gain"][codes[:, gain] == 5] == 99_999).all()  # the top code
    # the point masses survive: real 0.92 / 0.95 zeros and 0.47 forties (5,000 draws: sd about 0.007)
    for column, value in (("capital_gain", 0), ("capital_loss", 0), ("hours_per_week", 40)):
        assert abs((out[column] == value).mean() - (adult[column] == value).mean()) < 0.05, column
    # wide bins are still drawn uniformly over their integers, e.g. 41..45 hours
    band = out["hours_per_week"][codes[:, hours] == 9]
    assert band.between(41, 45).all() and band.nunique() == 5


def test_no_bins_is_the_old_generator(adult: pd.DataFrame) -> None:
    plain = PrivBayes(epsilon=1.0, k=2, ranges=ADULT_PUBLIC_RANGES)
    assert plain.bins is None and PrivBayes(epsilon=1.0, k=2, ranges=ADULT_PUBLIC_RANGES, bins=()) == plain
    assert plain.fit(adult, rng=np.random.default_rng(0)).model.discretisation == fixed_bins(
        adult, ADULT_PUBLIC_RANGES, plain.n_bins
    )
    binned = PrivBayes(epsilon=1.0, k=2, ranges=ADULT_PUBLIC_RANGES, bins=ADULT_PUBLIC_BINS)
    assert binned.fit(adult, rng=np.random.default_rng(0)).model.discretisation == fixed_bins(
        adult, ADULT_PUBLIC_RANGES, plain.n_bins, ADULT_PUBLIC_BINS
    )
    # the bins change the public domain, not the budget
    assert binned.privacy_claim().epsilon(0.0) == plain.privacy_claim().epsilon(0.0)
    assert binned.fit(adult, rng=np.random.default_rng(0)).noise_scale == 2 * 13 / 0.5


def test_same_rng_gives_the_same_table_and_another_a_different_one(adult: pd.DataFrame) -> None:
    mech = PrivBayes(epsilon=1.0, k=2, ranges=ADULT_PUBLIC_RANGES)
    a = mech.release(adult, rng=np.random.default_rng(3))
    pd.testing.assert_frame_equal(a, mech.release(adult, rng=np.random.default_rng(3)))
    assert not a.equals(mech.release(adult, rng=np.random.default_rng(4)))


def test_n_rows_and_tiny_tables(adult: pd.DataFrame) -> None:
    rng = np.random.default_rng(0)
    out = PrivBayes(epsilon=1.0, n_rows=17, ranges=ADULT_PUBLIC_RANGES).release(adult, rng=rng)
    assert len(out) == 17 and list(out.dtypes) == list(adult.dtypes)
    one_row = PrivBayes(epsilon=1.0, k=2, ranges=ADULT_PUBLIC_RANGES).release(adult.iloc[:1], rng=rng)
    assert len(one_row) == 1
    one_column = PrivBayes(epsilon=1.0, ranges=ADULT_PUBLIC_RANGES).release(adult[["sex"]], rng=rng)
    assert one_column.dtypes["sex"] == adult.dtypes["sex"] and len(one_column) == 1000


def test_privacy_claim_is_epsilon_dp_under_replace_one() -> None:
    for beta in (0.3, 0.5, 0.9):
        claim = PrivBayes(epsilon=2.0, beta=beta).privacy_claim()
        assert claim.neighbouring == NeighbouringRelation.REPLACE_ONE
        assert claim.epsilon(0.0) == pytest.approx(2.0, abs=1e-6)
        assert claim.epsilon(1e-5) <= 2.0 + 1e-6


def test_mechanism_interface_and_ranges_canonical_form() -> None:
    mech = PrivBayes(epsilon=1.0, ranges={"b": (0, 1), "a": (2, 3)})
    assert (mech.name, mech.input_kind, mech.release_kind) == ("privbayes", "table", "table")
    assert mech.ranges == (("a", 2.0, 3.0), ("b", 0.0, 1.0))
    same = PrivBayes(epsilon=1.0, ranges=(("b", 0, 1), ("a", 2, 3)))
    assert same == mech and hash(same) == hash(mech)
    assert pickle.loads(pickle.dumps(mech)) == mech
    assert mech.epsilon1 == 0.5 and mech.epsilon2 == 0.5


def test_bins_canonical_form() -> None:
    ranges = {"a": (0, 100), "b": (0, 9)}
    mech = PrivBayes(epsilon=1.0, ranges=ranges, bins={"b": "integers", "a": [0, 1, 50]})
    assert mech.bins == (("a", (0.0, 1.0, 50.0)), ("b", "integers"))
    same = PrivBayes(epsilon=1.0, ranges=ranges, bins=(("b", "integers"), ("a", (0, 1, 50))))
    assert same == mech and hash(same) == hash(mech) and pickle.loads(pickle.dumps(mech)) == mech


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"epsilon": 0.0}, ValueError, "epsilon must be > 0"),
        ({"epsilon": -1.0}, ValueError, "epsilon must be > 0"),
        ({"epsilon": math.nan}, ValueError, "epsilon must be > 0"),
        ({"epsilon": math.inf}, ValueError, "epsilon must be finite"),
        ({"epsilon": "1"}, TypeError, "epsilon must be a real number"),
        ({"epsilon": 1.0, "k": -1}, ValueError, "k must be an integer >= 0"),
        ({"epsilon": 1.0, "k": 1.5}, TypeError, "k must be an integer"),
        ({"epsilon": 1.0, "beta": 0.0}, ValueError, r"beta must be in \(0, 1\)"),
        ({"epsilon": 1.0, "beta": 1.0}, ValueError, r"beta must be in \(0, 1\)"),
        ({"epsilon": 1.0, "beta": 1.5}, ValueError, r"beta must be in \(0, 1\)"),
        ({"epsilon": 1.0, "theta": 0.0}, ValueError, "theta must be > 0"),
        ({"epsilon": 1.0, "n_bins": 0}, ValueError, "n_bins must be an integer >= 1"),
        ({"epsilon": 1.0, "n_rows": 0}, ValueError, "n_rows must be an integer >= 1"),
        ({"epsilon": 1.0, "ranges": {"age": (5, 1)}}, ValueError, "finite low < high"),
        ({"epsilon": 1.0, "ranges": "age"}, TypeError, "mapping or a sequence"),
        ({"epsilon": 1.0, "bins": {"x": (0, 1)}}, ValueError, "ranges must be given with bins"),
        ({"epsilon": 1.0, "ranges": {"x": (0, 9)}, "bins": "x"}, TypeError, "bins must be a mapping or a sequence"),
        ({"epsilon": 1.0, "ranges": {"x": (0, 9)}, "bins": {"x": (5, 1)}}, ValueError, "must be sorted"),
        ({"epsilon": 1.0, "ranges": {"x": (0, 9)}, "bins": {"x": (1, math.nan)}}, ValueError, "finite numbers"),
        ({"epsilon": 1.0, "ranges": {"x": (0, 9)}, "bins": {"x": (1, 10)}}, ValueError, r"lie in .* \[0.0, 9.0\]"),
        ({"epsilon": 1.0, "ranges": {"x": (0, 9)}, "bins": {"x": "each"}}, ValueError, "must be 'integers' or"),
        ({"epsilon": 1.0, "ranges": {"x": (0, 9)}, "bins": {"y": (1,)}}, ValueError, "'y' must come with a public"),
        (
            {"epsilon": 1.0, "ranges": {"x": (0, 10**12)}, "bins": {"x": "integers"}},
            ValueError,
            "'integers' bins of column 'x' must number 1 to 10000",
        ),
    ],
)
def test_bad_parameters_are_refused(kwargs: dict[str, object], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        PrivBayes(**kwargs)  # type: ignore[arg-type]


def test_missing_public_range_is_refused(adult: pd.DataFrame) -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="numeric column 'age' needs a public range"):
        PrivBayes(epsilon=1.0).release(adult, rng=rng)
    partial = [r for r in ADULT_PUBLIC_RANGES if r[0] != "fnlwgt"]
    with pytest.raises(ValueError, match="numeric column 'fnlwgt' needs a public range"):
        PrivBayes(epsilon=1.0, ranges=partial).release(adult, rng=rng)  # type: ignore[arg-type]


def test_bins_that_do_not_fit_the_data_are_refused(adult: pd.DataFrame) -> None:
    rng = np.random.default_rng(0)
    ranges = {**dict((c, (lo, hi)) for c, lo, hi in ADULT_PUBLIC_RANGES), "wage": (0, 10)}
    with pytest.raises(ValueError, match=r"bins must name numeric columns of the data, got 'wage' \(not a column"):
        PrivBayes(epsilon=1.0, ranges=ranges, bins={"wage": (0, 1)}).release(adult, rng=rng)
    with pytest.raises(ValueError, match="edges of integer column 'age' must be integers"):
        PrivBayes(epsilon=1.0, ranges=ranges, bins={"age": (17, 30.5)}).release(adult, rng=rng)
    floats = adult.astype({"hours_per_week": np.float64})
    with pytest.raises(ValueError, match="'integers' bins need an integer column, got column 'hours_per_week'"):
        PrivBayes(epsilon=1.0, ranges=ranges, bins={"hours_per_week": "integers"}).release(floats, rng=rng)


def test_bad_input_is_refused(adult: pd.DataFrame) -> None:
    rng = np.random.default_rng(0)
    mech = PrivBayes(epsilon=1.0, ranges=ADULT_PUBLIC_RANGES)
    with pytest.raises(TypeError, match="must be a pandas DataFrame"):
        mech.release([1, 2, 3], rng=rng)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one row and one column"):
        mech.release(adult.iloc[:0], rng=rng)
    with pytest.raises(TypeError, match="column 'sex' of data must have a categorical, integer or float"):
        mech.release(adult.astype({"sex": str}), rng=rng)


def test_a_marginal_too_large_to_materialise_is_refused(adult: pd.DataFrame) -> None:
    mech = PrivBayes(epsilon=1.0, k=6, n_bins=1000, ranges=ADULT_PUBLIC_RANGES)
    with pytest.raises(ValueError, match="use fewer bins or a smaller degree"):
        mech.release(adult.iloc[:50], rng=np.random.default_rng(0))
