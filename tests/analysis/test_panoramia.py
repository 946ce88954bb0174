"""Tests of the PANORAMIA measurement (Kazmi et al., NeurIPS 2024, arXiv:2402.09477).

References used here, independent of :mod:`privgame.analysis.panoramia`'s own code paths:

* the public one-run bound :func:`privgame.analysis.one_run.epsilon_lower_bound`, called on counts taken by brute force;
* deterministic score patterns (perfect separation, identical classifiers, constant scores);
* a Monte-Carlo soundness check: randomized response of the membership bit at level c (the baseline, tight for a
  c-close generator) and c + ε (the MIA), where ``c_lb > c`` and ``{c+ε}_lb > c + ε`` must each happen with
  probability at most (1 − confidence)/2; a meta-test shows the same check rejects a point estimate and a bound
  that skips the union bound.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest
from scipy import stats

from privgame.analysis.one_run import epsilon_lower_bound
from privgame.analysis.panoramia import (
    Curve,
    PanoramiaResult,
    measure,
    members_only_bounds,
    members_only_counts,
    plot_curves,
)
from privgame.analysis.thresholds import Bonferroni, Explicit, Split


def _balanced(n: int) -> np.ndarray:
    return np.arange(n) % 2 == 0


def _gaussian_scores(n: int, shift: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    member = rng.random(n) < 0.5
    return rng.normal(size=n) + shift * member, member


# --------------------------------------------------------------------------------------------------------------
# 1. Deterministic cases
# --------------------------------------------------------------------------------------------------------------


def test_perfect_separation_gives_large_bound_equal_to_the_one_run_bound():
    n = 2000
    member = _balanced(n)
    mia = member.astype(float)  # members score 1, generated points 0
    baseline = np.full(n, 0.5)  # no information
    res = measure(baseline, mia, member)
    assert res.c_lb == 0.0
    # Candidates are {0, 1}: at t = 1 all 1000 guesses are right.
    assert res.mia_n_tests == 2
    assert res.mia_threshold == 1.0
    expected = epsilon_lower_bound(n, 1000, 1000, confidence=1 - 0.05 / 2 / 2)
    assert res.c_plus_eps_lb == pytest.approx(expected, rel=1e-9)
    assert res.c_plus_eps_lb > 4.0
    assert res.eps_tilde == res.c_plus_eps_lb


def test_perfect_separation_on_both_classifiers_gives_large_c_and_zero_eps_tilde():
    n = 2000
    member = _balanced(n)
    res = measure(member.astype(float), member.astype(float), member)
    assert res.c_lb > 4.0
    assert res.c_lb == res.c_plus_eps_lb
    assert res.eps_tilde == 0.0


def test_identical_baseline_and_mia_give_zero_eps_tilde():
    scores, member = _gaussian_scores(5000, 1.0, seed=1)
    res = measure(scores, scores.copy(), member)
    assert res.c_lb > 0.0
    assert res.c_lb == res.c_plus_eps_lb
    assert res.eps_tilde == 0.0
    assert res.epsilon == 0.0
    assert res.baseline_curve == res.mia_curve


def test_constant_scores_give_zero_bounds():
    n = 1000
    member = _balanced(n)
    res = measure(np.zeros(n), np.full(n, 3.0), member)
    assert (res.c_lb, res.c_plus_eps_lb, res.eps_tilde) == (0.0, 0.0, 0.0)
    # One distinct score: one candidate, guessing everybody, precision 1/2.
    assert len(res.baseline_curve) == len(res.mia_curve) == 1
    assert res.baseline_curve.precision[0] == 0.5
    assert res.baseline_curve.recall[0] == 1.0


def test_eps_tilde_is_clipped_difference_and_never_negative():
    baseline, member = _gaussian_scores(2000, 1.5, seed=2)
    rng = np.random.default_rng(3)
    weak_mia = rng.normal(size=member.size) + 0.3 * member
    res = measure(baseline, weak_mia, member)
    assert res.c_plus_eps_lb - res.c_lb < 0.0  # the baseline is the stronger classifier here
    assert res.eps_tilde == 0.0 == res.epsilon
    res2 = measure(weak_mia, baseline, member)
    assert res2.eps_tilde == pytest.approx(res2.c_plus_eps_lb - res2.c_lb)
    assert res2.eps_tilde > 0.0
    assert res2.epsilon == res2.eps_tilde


# --------------------------------------------------------------------------------------------------------------
# 2. Union-bound bookkeeping and the threshold strategies
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("confidence", [0.95, 0.7])
@pytest.mark.parametrize("g", [1, 10, 100])
def test_bonferroni_per_test_significance_is_beta_over_two_over_g(confidence, g):
    scores, member = _gaussian_scores(3000, 1.0, seed=4)
    res = measure(scores, scores[::-1].copy(), member, confidence=confidence, thresholds=Bonferroni(g))
    beta = 1 - confidence
    for n_tests, beta_per_test, curve in (
        (res.baseline_n_tests, res.baseline_beta_per_test, res.baseline_curve),
        (res.mia_n_tests, res.mia_beta_per_test, res.mia_curve),
    ):
        assert n_tests == g  # continuous scores: G distinct quantiles
        assert beta_per_test == pytest.approx(beta / 2 / g, rel=1e-12)
        assert curve.beta_per_test == beta_per_test
        assert len(curve) == g


def test_bonferroni_bound_is_the_curve_maximum_and_matches_the_one_run_bound():
    baseline, member = _gaussian_scores(3000, 0.5, seed=5)
    mia = baseline + 1.0 * member
    res = measure(baseline, mia, member)
    for best, threshold, curve in (
        (res.c_lb, res.baseline_threshold, res.baseline_curve),
        (res.c_plus_eps_lb, res.mia_threshold, res.mia_curve),
    ):
        assert best == curve.bound.max()
        j = int(np.flatnonzero(curve.threshold == threshold)[0])
        assert curve.bound[j] == best
        for k in (0, j, len(curve) // 2, len(curve) - 1):
            r, v = int(curve.n_guesses[k]), int(curve.n_correct[k])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                oracle = epsilon_lower_bound(res.n, r, v, confidence=1 - curve.beta_per_test)
            assert curve.bound[k] == pytest.approx(oracle, rel=1e-9, abs=1e-12)


def test_explicit_threshold_is_one_test_at_half_beta():
    baseline, member = _gaussian_scores(3000, 0.5, seed=6)
    mia = baseline + 1.0 * member
    res = measure(baseline, mia, member, confidence=0.9, thresholds=Explicit(1.0))
    assert res.baseline_n_tests == res.mia_n_tests == 1
    assert res.baseline_beta_per_test == pytest.approx(0.05)
    assert res.baseline_threshold == res.mia_threshold == 1.0
    r, v = int(np.sum(mia >= 1.0)), int(np.sum((mia >= 1.0) & member))
    assert res.c_plus_eps_lb == pytest.approx(epsilon_lower_bound(3000, r, v, confidence=0.95), rel=1e-9)
    # The curves are a diagnostic 100-quantile grid at β/2/100.
    assert len(res.mia_curve) == 100
    assert res.mia_curve.beta_per_test == pytest.approx(0.1 / 2 / 100)


def test_split_strategy_bounds_at_half_beta_and_keeps_diagnostic_curves():
    baseline, member = _gaussian_scores(2000, 0.5, seed=7)
    res = measure(baseline, baseline + member, member, thresholds=Split(fraction=0.5, seed=1))
    assert res.baseline_n_tests == res.mia_n_tests == 1
    assert res.mia_beta_per_test == pytest.approx(0.025)
    assert len(res.baseline_curve) == len(res.mia_curve) == 100
    assert res.c_plus_eps_lb > res.c_lb > 0.0


def test_explicit_threshold_above_every_score_gives_zero():
    baseline, member = _gaussian_scores(1000, 1.0, seed=8)
    res = measure(baseline, baseline, member, thresholds=Explicit(math.inf))
    assert res.c_lb == res.c_plus_eps_lb == 0.0


# --------------------------------------------------------------------------------------------------------------
# 3. Curves and counts
# --------------------------------------------------------------------------------------------------------------


def test_curves_have_consistent_lengths_and_monotone_recall():
    baseline, member = _gaussian_scores(5000, 0.7, seed=9)
    res = measure(baseline, 2.0 * baseline + member, member, thresholds=Bonferroni(50))
    for curve in (res.baseline_curve, res.mia_curve):
        assert len(curve) == 50
        for name in ("threshold", "n_guesses", "n_correct", "recall", "precision", "bound"):
            assert getattr(curve, name).shape == (50,)
        assert np.all(np.diff(curve.threshold) > 0)
        assert np.all(np.diff(curve.recall) <= 0)
        assert np.all(np.diff(curve.n_guesses) <= 0)
        np.testing.assert_array_equal(curve.recall, curve.n_correct / res.n_members)
        np.testing.assert_array_equal(curve.precision, curve.n_correct / curve.n_guesses)
        assert np.all((curve.precision >= 0) & (curve.precision <= 1))
        assert np.all(curve.bound >= 0)


def test_candidate_thresholds_do_not_depend_on_the_labels():
    baseline, member = _gaussian_scores(3000, 1.0, seed=10)
    shuffled = np.random.default_rng(11).permutation(member)
    a = measure(baseline, baseline, member)
    b = measure(baseline, baseline, shuffled)
    np.testing.assert_array_equal(a.baseline_curve.threshold, b.baseline_curve.threshold)
    np.testing.assert_array_equal(a.baseline_curve.n_guesses, b.baseline_curve.n_guesses)


def test_members_only_counts_match_brute_force():
    rng = np.random.default_rng(12)
    ins = rng.integers(0, 20, size=300).astype(float)  # many ties
    outs = rng.integers(0, 20, size=250).astype(float)
    candidates = [-math.inf, -1.0, 0.0, 3.0, 3.5, 10.0, 19.0, 20.0, math.inf]
    r, v = members_only_counts(ins, outs, candidates)
    for j, t in enumerate(candidates):
        assert r[j] == np.sum(ins >= t) + np.sum(outs >= t)
        assert v[j] == np.sum(ins >= t)


def test_members_only_bounds_match_public_one_run_bound():
    rng = np.random.default_rng(13)
    ins = rng.normal(1.0, 1.0, size=400)
    outs = rng.normal(0.0, 1.0, size=400)
    candidates = [-5.0, 0.0, 0.5, 1.0, 2.0, 10.0]
    got = members_only_bounds(ins, outs, candidates, 0.01)
    r, v = members_only_counts(ins, outs, candidates)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        expected = [
            epsilon_lower_bound(800, int(a), int(b), confidence=0.99) if a > 0 else 0.0
            for a, b in zip(r, v, strict=True)
        ]
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


# --------------------------------------------------------------------------------------------------------------
# 4. Soundness: randomized response at known c and c + ε
# --------------------------------------------------------------------------------------------------------------

_C, _EPS = 1.0, 1.0
_R, _N = 400, 2000


def _rr_violations(confidence: float, thresholds, seed: int) -> dict[str, int]:
    """R seeded audits; the baseline is membership through randomized response at level c, the MIA at c + ε.

    P[s = 1 | score = 1] = e^κ / (1 + e^κ) exactly: the tightest bit allowed at closeness κ, so the bound is
    tested where it is sharpest.  Also counts violations of two broken estimators on the same data.
    """
    from privgame.analysis.one_run import _epsilon_lower_bound

    rng = np.random.default_rng(seed)
    counts = {"c": 0, "c+eps": 0, "no_union": 0, "point": 0}
    for _ in range(_R):
        s = rng.random(_N) < 0.5
        baseline = s ^ (rng.random(_N) < 1.0 / (1.0 + math.exp(_C)))
        mia = s ^ (rng.random(_N) < 1.0 / (1.0 + math.exp(_C + _EPS)))
        res = measure(baseline.astype(float), mia.astype(float), s, confidence=confidence, thresholds=thresholds)
        counts["c"] += res.c_lb > _C
        counts["c+eps"] += res.c_plus_eps_lb > _C + _EPS
        r, v = int(baseline.sum()), int((baseline & s).sum())
        counts["no_union"] += _epsilon_lower_bound(_N, r, v, 0.0, 1.0 - confidence) > _C  # β instead of β/2
        counts["point"] += math.log(v / (r - v)) > _C
    return counts


def _pvalue(violations: int, confidence: float) -> float:
    return float(stats.binomtest(violations, _R, (1.0 - confidence) / 2.0, alternative="greater").pvalue)


@pytest.mark.parametrize(
    ("confidence", "thresholds"),
    [
        (0.95, Bonferroni(100)),
        (0.7, Bonferroni(100)),
        # One test at exactly β/2, where violations are commonest: the sharpest check of the β/2 bookkeeping.
        (0.7, Explicit(0.5)),
    ],
    ids=["bonferroni-0.95", "bonferroni-0.7", "explicit-0.7"],
)
def test_bounds_keep_their_promise_under_randomized_response(confidence, thresholds):
    counts = _rr_violations(confidence, thresholds, seed=2024)
    assert _pvalue(counts["c"], confidence) > 1e-3, counts
    assert _pvalue(counts["c+eps"], confidence) > 1e-3, counts
    # Meta-test: the same check catches a point estimate always, and a bound without the union bound (at β
    # instead of β/2) at the large β where violations are common.
    assert _pvalue(counts["point"], confidence) < 1e-3, counts
    if confidence == 0.7:
        assert _pvalue(counts["no_union"], confidence) < 1e-3, counts


# --------------------------------------------------------------------------------------------------------------
# 5. Bad inputs, warnings, result objects, plots
# --------------------------------------------------------------------------------------------------------------

_GOOD = (np.array([0.1, 0.9, 0.3, 0.7]), np.array([0.2, 0.8, 0.4, 0.6]), np.array([False, True, False, True]))


@pytest.mark.parametrize(
    ("baseline", "mia", "member", "match"),
    [
        ([0.1, np.nan, 0.3, 0.7], _GOOD[1], _GOOD[2], "baseline_scores must be finite"),
        (_GOOD[0], [0.2, np.inf, 0.4, 0.6], _GOOD[2], "mia_scores must be finite"),
        (_GOOD[0], [0.2, -np.inf, 0.4, 0.6], _GOOD[2], "mia_scores must be finite"),
        ([], [], [], "baseline_scores must be non-empty"),
        (_GOOD[0], _GOOD[1][:3], _GOOD[2], "mia_scores must have the length"),
        (_GOOD[0], _GOOD[1], _GOOD[2][:3], "is_member must be a 1-d array of length 4"),
        (_GOOD[0], _GOOD[1], [True] * 4, "both members"),
        (_GOOD[0], _GOOD[1], [0, 0, 0, 0], "both members"),
        (_GOOD[0], _GOOD[1], [0, 2, 0, 1], "is_member must hold only 0/1"),
        (_GOOD[0].reshape(2, 2), _GOOD[1], _GOOD[2], "baseline_scores must be a 1-d array"),
    ],
)
def test_bad_arrays_are_refused(baseline, mia, member, match):
    with pytest.raises(ValueError, match=match):
        measure(baseline, mia, member)


@pytest.mark.parametrize("confidence", [0.0, 1.0, -0.5, 1.5, math.nan])
def test_confidence_outside_open_unit_interval_is_refused(confidence):
    with pytest.raises(ValueError, match=r"confidence must be in \(0, 1\)"):
        measure(*_GOOD, confidence=confidence)


@pytest.mark.parametrize("thresholds", [0.5, 100, "bonferroni", None, Bonferroni])
def test_non_strategy_thresholds_are_refused(thresholds):
    with pytest.raises(TypeError, match="threshold must be a ThresholdStrategy"):
        measure(*_GOOD, thresholds=thresholds)


def test_two_sided_explicit_threshold_is_refused():
    with pytest.raises(ValueError, match="one-sided"):
        measure(*_GOOD, thresholds=Explicit((0.2, 0.8)))


def test_non_real_scores_are_refused():
    with pytest.raises(TypeError, match="baseline_scores must hold real numbers"):
        measure(["a", "b", "c", "d"], _GOOD[1], _GOOD[2])


def test_tiny_test_set_warns_once_per_classifier():
    with pytest.warns(UserWarning, match="no positive") as record:
        res = measure(*_GOOD)
    assert len(record) == 2
    assert res.c_lb == res.c_plus_eps_lb == 0.0


def test_result_is_frozen_and_curves_are_read_only():
    baseline, member = _gaussian_scores(1000, 1.0, seed=14)
    res = measure(baseline, baseline + member, member)
    assert isinstance(res, PanoramiaResult)
    assert isinstance(res.mia_curve, Curve)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.c_lb = 1.0  # type: ignore[misc]
    with pytest.raises(ValueError, match="read-only"):
        res.mia_curve.bound[0] = 10.0
    assert res == measure(baseline, baseline + member, member)  # deterministic
    assert res.n == 1000 and res.n_members == int(member.sum()) and res.confidence == 0.95
    assert res.thresholds == Bonferroni(100)
    assert "Kazmi" in res.method


@pytest.mark.parametrize("suffix", [".png", ".pdf"])
def test_plot_writes_a_file(tmp_path, suffix):
    baseline, member = _gaussian_scores(2000, 0.5, seed=15)
    res = measure(baseline, baseline + member, member, thresholds=Bonferroni(20))
    out = res.plot(tmp_path / f"curves{suffix}")
    assert out.exists() and out.stat().st_size > 1000
    with open(out, "rb") as fh:
        head = fh.read(5)
    assert head == (b"\x89PNG\r" if suffix == ".png" else b"%PDF-")


def test_plot_refuses_unknown_suffix_and_non_results(tmp_path):
    baseline, member = _gaussian_scores(500, 0.5, seed=16)
    res = measure(baseline, baseline, member, thresholds=Bonferroni(5))
    with pytest.raises(ValueError, match="path must end in one of"):
        plot_curves(res, tmp_path / "curves.svgz")
    with pytest.raises(TypeError, match="result must be a PanoramiaResult"):
        plot_curves(object(), tmp_path / "curves.png")  # type: ignore[arg-type]
