"""Tests of privgame.analysis.calibration: LiRA post-processing, Student-t thresholds and the FPC (SPEC §5).

* Closed forms on a 4 × 2 matrix computed by hand: the leave-one-out statistics, z, every aggregate number, the FPC
  (σ² divided by it, checked exactly), the flat dict's keys.
* A slow per-pair loop as the oracle of the vectorised leave-one-out statistics (also where the downdate would
  cancel), and a replay of the bootstrap's draws as the oracle of its intervals.
* Coverage: with the TRUE μ/σ the N(0, 1) threshold gives every sample FPR α; with μ/σ estimated from 8 shadows its
  FPR is inflated to the Student-t rate while the Student-t threshold gives α; the naive global threshold gives
  heterogeneous per-sample FPRs when the σ_x differ and the post-processed one does not.
* The normality diagnostic, the pooled AUC/ROC, and every error path.

Random tests seed their own generators.  Each statistical tolerance is sized so that a correct implementation fails
with probability ≤ 1e-3 for any seed; the comment at each check gives the statistic it comes from.
"""

from __future__ import annotations

import math
import re
import sys
import warnings
from typing import Any

import numpy as np
import pandas as pd
import pytest
from numpy.typing import NDArray
from scipy import stats

from privgame.analysis.calibration import (
    DEFAULT_FPRS,
    calibration_report,
    finite_population_correction,
    loo_statistics,
    normal_threshold,
    out_normality,
    pooled_auc,
    pooled_roc,
    standardise,
    student_t_threshold,
)

# The hand-computed example.  Column 0: OUT models 0, 1, 2 (scores 1, 2, 3), IN model 3 (score 6).
# Column 1: OUT models 1, 3 (scores 3, 1), IN models 0, 2 (scores 2, 5).
TINY_S = np.array([[1.0, 2.0], [2.0, 3.0], [3.0, 5.0], [6.0, 1.0]])
TINY_M = np.array([[False, True], [False, False], [False, True], [True, False]])
R2 = math.sqrt(2.0)


def _msg(text: str) -> str:
    return "^" + re.escape(text) + "$"


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _lira_like(
    rng: np.random.Generator, n_models: int, n_samples: int, *, gap: float = 1.0
) -> tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.float64], NDArray[np.float64]]:
    """Per-sample Gaussian OUT scores N(μ_x, σ_x²) and IN scores shifted by gap·σ_x; each model takes half."""
    mu = rng.normal(0.0, 2.0, n_samples)
    sigma = np.exp(rng.uniform(math.log(0.3), math.log(3.0), n_samples))
    member = rng.random((n_models, n_samples)) < 0.5
    scores = mu + sigma * (rng.standard_normal((n_models, n_samples)) + gap * member)
    return scores, member, mu, sigma


def _loo_reference(s: NDArray[np.float64], m: NDArray[np.bool_]) -> dict[str, NDArray[np.float64]]:
    """A slow loop over pairs: the definition, one pair at a time (NaN where undefined)."""
    big_m, big_n = s.shape
    out = {k: np.full(s.shape, np.nan) for k in ("mu_out", "sigma_out", "n_out", "mu_in", "n_in")}
    for j in range(big_m):
        others = np.arange(big_m) != j
        for x in range(big_n):
            o = s[others & ~m[:, x], x]
            i = s[others & m[:, x], x]
            out["n_out"][j, x], out["n_in"][j, x] = o.size, i.size
            if o.size:
                out["mu_out"][j, x] = o.mean()
            if o.size > 1:
                out["sigma_out"][j, x] = o.std(ddof=1)
            if i.size:
                out["mu_in"][j, x] = i.mean()
    return out


# --------------------------------------------------------------------------------------------------------------
# 1. finite population correction
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "n_plus", "expected"), [(500, 1000, 0.5), (1, 4, 0.75), (9, 10, 0.1), (1, 2, 0.5)])
def test_fpc_closed_form(n: int, n_plus: int, expected: float) -> None:
    assert finite_population_correction(n, n_plus) == pytest.approx(expected, abs=1e-15)


def test_fpc_errors() -> None:
    with pytest.raises(ValueError, match=_msg("n_train must be less than n_pool = 10, got 10.")):
        finite_population_correction(10, 10)
    with pytest.raises(ValueError, match=_msg("n_train must be less than n_pool = 10, got 11.")):
        finite_population_correction(11, 10)
    with pytest.raises(ValueError, match=_msg("n_train must be an integer >= 1, got 0.")):
        finite_population_correction(0, 10)
    with pytest.raises(ValueError, match=_msg("n_pool must be an integer >= 1, got -5.")):
        finite_population_correction(1, -5)
    with pytest.raises(TypeError, match=_msg("n_train must be an integer, got 5.0.")):
        finite_population_correction(5.0, 10)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=_msg("n_pool must be an integer, got True.")):
        finite_population_correction(1, True)


# --------------------------------------------------------------------------------------------------------------
# 2. leave-one-out statistics
# --------------------------------------------------------------------------------------------------------------


def test_loo_statistics_closed_form() -> None:
    st = loo_statistics(TINY_S, TINY_M)
    nan = np.nan
    np.testing.assert_allclose(st.mu_out, [[2.5, 2.0], [2.0, 1.0], [1.5, 2.0], [2.0, 3.0]], rtol=1e-15)
    np.testing.assert_allclose(
        st.sigma_out, [[1 / R2, R2], [R2, nan], [1 / R2, R2], [1.0, nan]], rtol=1e-14, equal_nan=True
    )
    np.testing.assert_array_equal(st.n_out, [[2, 2], [2, 1], [2, 2], [3, 1]])
    np.testing.assert_allclose(st.mu_in, [[6.0, 5.0], [6.0, 3.5], [6.0, 2.0], [nan, 3.5]], equal_nan=True)
    np.testing.assert_array_equal(st.n_in, [[1, 1], [1, 2], [1, 1], [0, 2]])
    np.testing.assert_allclose(st.delta, [[3.5, 3.0], [4.0, 2.5], [4.5, 0.0], [nan, 0.5]], equal_nan=True)
    np.testing.assert_array_equal(st.valid, [[True, True], [True, False], [True, True], [True, False]])
    assert (st.n_dropped_pairs, st.n_dropped_samples, st.fpc) == (2, 0, 1.0)


def test_loo_statistics_accepts_integer_membership_and_scores() -> None:
    st = loo_statistics(TINY_S.astype(int), TINY_M.astype(np.int8))
    np.testing.assert_array_equal(st.valid, loo_statistics(TINY_S, TINY_M).valid)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_loo_statistics_match_the_slow_loop(seed: int) -> None:
    rng = _rng(seed)
    s = rng.normal(3.0, 2.0, (7, 40))
    m = rng.random((7, 40)) < 0.6  # some pairs have < 2 other OUT models
    m[:, 0] = True  # a sample that is always IN: nothing to standardise
    s[:, 1] = np.round(s[:, 1])  # ties
    st = loo_statistics(s, m)
    ref = _loo_reference(s, m)
    for name in ("mu_out", "sigma_out", "mu_in"):
        np.testing.assert_allclose(getattr(st, name), ref[name], rtol=1e-10, atol=1e-12, equal_nan=True)
    np.testing.assert_array_equal(st.n_out, ref["n_out"])
    np.testing.assert_array_equal(st.n_in, ref["n_in"])
    np.testing.assert_array_equal(st.valid, (ref["n_out"] >= 2) & (np.nan_to_num(ref["sigma_out"]) > 0))
    assert st.n_dropped_pairs == int((~st.valid).sum()) > 0
    assert st.n_dropped_samples >= 1  # column 0


def test_loo_statistics_where_the_downdate_would_cancel() -> None:
    """One huge OUT score among equal ones: leaving it out must give σ = 0 exactly (not rounding noise)."""
    s = np.array([[0.1, 1.0], [0.1, 2.0], [0.1, 3.0], [1e8, 4.0], [0.1 + 1e-6, 5.0], [7.0, 6.0]])
    m = np.zeros(s.shape, dtype=bool)
    m[5, :] = True
    st = loo_statistics(s, m)
    ref = _loo_reference(s, m)
    np.testing.assert_allclose(st.mu_out, ref["mu_out"], rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(st.sigma_out, ref["sigma_out"], rtol=1e-6, equal_nan=True)
    # without model 3 and model 4 the column is constant
    s[4, 0] = 0.1
    st = loo_statistics(s, m)
    assert st.sigma_out[3, 0] == 0.0
    assert not st.valid[3, 0]
    assert st.valid[:5, 1].all()


def test_loo_statistics_constant_column_is_not_standardisable() -> None:
    s = np.full((5, 3), 0.1)
    s[:, 2] = np.arange(5.0)
    m = np.zeros((5, 3), dtype=bool)
    st = loo_statistics(s, m)
    assert not st.valid[:, :2].any()
    assert st.valid[:, 2].all()
    assert np.all(st.sigma_out[:, :2] == 0.0)
    assert (st.n_dropped_pairs, st.n_dropped_samples) == (10, 2)


def test_fpc_divides_the_variances_exactly() -> None:
    st = loo_statistics(TINY_S, TINY_M, fpc=0.5)
    # variances 0.5, 2, 0.5, 1 (column 0) and 2, -, 2, - (column 1), divided by 0.5
    np.testing.assert_array_equal(st.sigma_out[:, 0], [1.0, 2.0, 1.0, R2])
    np.testing.assert_array_equal(st.sigma_out[[0, 2], 1], [2.0, 2.0])
    plain = loo_statistics(TINY_S, TINY_M)
    np.testing.assert_array_equal(st.mu_out, plain.mu_out)
    np.testing.assert_array_equal(st.valid, plain.valid)
    assert st.fpc == 0.5
    rng = _rng(4)
    s, m = rng.standard_normal((20, 30)), rng.random((20, 30)) < 0.5
    fpc = finite_population_correction(100, 300)
    a, b = loo_statistics(s, m), loo_statistics(s, m, fpc=fpc)
    np.testing.assert_allclose(b.sigma_out**2, a.sigma_out**2 / fpc, rtol=1e-14, equal_nan=True)


# --------------------------------------------------------------------------------------------------------------
# 3. standardise
# --------------------------------------------------------------------------------------------------------------


def test_standardise_closed_form_on_the_loo_statistics() -> None:
    st = loo_statistics(TINY_S, TINY_M)
    z = standardise(TINY_S, st.mu_out, st.sigma_out, st.delta, valid=st.valid)
    # (1 - 2.5)/(1/√2), (2 - 2)/√2, (3 - 1.5)/(1/√2), (6 - 2)/1 [no IN model: sign +1]; (2 - 2)/√2, -,
    # (5 - 2)/√2 [Δ = 0: sign +1], -
    expected = [[-1.5 * R2, 0.0], [0.0, np.nan], [1.5 * R2, 3.0 / R2], [4.0, np.nan]]
    np.testing.assert_allclose(z, expected, rtol=1e-14, equal_nan=True)
    fpc = standardise(TINY_S, st.mu_out, loo_statistics(TINY_S, TINY_M, fpc=0.5).sigma_out, st.delta, valid=st.valid)
    np.testing.assert_allclose(fpc, z * math.sqrt(0.5), rtol=1e-14, equal_nan=True)


def test_standardise_sign_and_broadcasting() -> None:
    z = standardise([[3.0, 1.0], [5.0, 0.0]], [1.0, 2.0], [2.0, 0.5], [1.0, -1.0])
    np.testing.assert_array_equal(z, [[1.0, 2.0], [2.0, 4.0]])
    np.testing.assert_array_equal(standardise([3.0, 1.0], 1.0, 2.0), [1.0, 0.0])
    np.testing.assert_array_equal(standardise([3.0, 1.0], 1.0, 2.0, [np.nan, 0.0]), [1.0, 0.0])
    z = standardise([3.0, np.inf], [1.0, np.nan], [2.0, -1.0], valid=np.array([True, False]))
    assert z[0] == 1.0 and np.isnan(z[1])


def test_standardise_errors() -> None:
    with pytest.raises(ValueError, match=_msg("sigma_out must be > 0 where used, got 0.0 at index (1,).")):
        standardise([1.0, 2.0], 0.0, [1.0, 0.0])
    with pytest.raises(ValueError, match=_msg("scores must be finite where used, got nan at index (0,).")):
        standardise([np.nan], 0.0, 1.0)
    with pytest.raises(ValueError, match=_msg("mu_out must be finite where used, got inf at index (0,).")):
        standardise([1.0], np.inf, 1.0)
    with pytest.raises(ValueError, match="must broadcast together"):
        standardise([1.0, 2.0], [0.0, 1.0, 2.0], 1.0)
    with pytest.raises(TypeError, match=_msg("scores must hold real numbers, got dtype <U1.")):
        standardise(["a"], 0.0, 1.0)
    with pytest.raises(TypeError, match=_msg("delta must hold real numbers, got dtype <U1.")):
        standardise([1.0], 0.0, 1.0, ["a"])
    with pytest.raises(TypeError, match=_msg("valid must be a boolean array, got dtype int64.")):
        standardise([1.0], 0.0, 1.0, valid=np.array([1]))


# --------------------------------------------------------------------------------------------------------------
# 4. thresholds
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [1e-4, 1e-3, 0.05, 0.5, 0.9])
def test_thresholds_closed_form(alpha: float) -> None:
    assert normal_threshold(alpha) == pytest.approx(stats.norm.ppf(1 - alpha), rel=1e-9, abs=1e-12)
    for n in (2, 8, 256):
        expected = stats.t.ppf(1 - alpha, n - 1) * math.sqrt(1 + 1 / n)
        assert student_t_threshold(alpha, n) == pytest.approx(expected, rel=1e-9, abs=1e-12)
    grid = student_t_threshold(alpha, np.array([[2, 8], [8, 256]]))
    assert grid.shape == (2, 2)
    assert grid[0, 1] == grid[1, 0] == student_t_threshold(alpha, 8)


def test_student_t_threshold_is_the_prediction_bound() -> None:
    """On the raw scale, μ̂ + t σ̂ sqrt(1 + 1/n) is the one-sided Gaussian prediction bound; t → z as n grows."""
    assert normal_threshold(0.05) == pytest.approx(1.6448536269514722, rel=1e-12)
    assert student_t_threshold(0.05, 8) == pytest.approx(1.894578605 * math.sqrt(9 / 8), rel=1e-8)
    assert student_t_threshold(0.05, 8) > student_t_threshold(0.05, 64) > normal_threshold(0.05)
    assert student_t_threshold(0.05, 10**7) == pytest.approx(normal_threshold(0.05), rel=1e-5)


def test_threshold_errors() -> None:
    for bad in (0.0, 1.0, -0.1, 1.5, math.nan):
        with pytest.raises(ValueError, match=_msg(f"alpha must be in (0, 1), got {bad!r}.")):
            normal_threshold(bad)
        with pytest.raises(ValueError, match=_msg(f"alpha must be in (0, 1), got {bad!r}.")):
            student_t_threshold(bad, 5)
    with pytest.raises(TypeError, match=_msg("alpha must be a real number, got '0.1'.")):
        normal_threshold("0.1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=_msg("n_out must be >= 0, got -1.")):
        student_t_threshold(0.1, np.array([3, -1]))
    with pytest.raises(TypeError, match=_msg("n_out must be an integer or an array of integers, got 2.5.")):
        student_t_threshold(0.1, 2.5)
    with pytest.raises(TypeError, match=_msg("n_out must be an integer or an array of integers, got True.")):
        student_t_threshold(0.1, True)


# --------------------------------------------------------------------------------------------------------------
# 5. the aggregates
# --------------------------------------------------------------------------------------------------------------


def test_report_closed_form() -> None:
    report = calibration_report(TINY_S, TINY_M, fprs=(0.5, 0.25), n_boot=0, rng=_rng())
    a, b = (report.table.iloc[i] for i in range(2))
    # naive, α = 0.5: OUT pairs 1, 2, 3, 3, 1 (n₀ = 5), k = 2, τ = 3rd largest = 2; OUT > 2: 2/5; IN 6, 2, 5 > 2: 2/3
    assert (a.threshold_naive, a.fpr_naive, a.tpr_naive) == (2.0, 0.4, pytest.approx(2 / 3))
    # α = 0.25: k = 1, τ = 2nd largest = 3 (tied with the largest): no OUT score above it, IN 6, 5: 2/3
    assert (b.threshold_naive, b.fpr_naive, b.tpr_naive) == (3.0, 0.0, pytest.approx(2 / 3))
    # pp: valid OUT z = -2.12, 0, 2.12; valid IN z = 4, 0, 2.12 (see the standardise test)
    for row in (a, b):
        assert row.fpr_pp == pytest.approx(1 / 3) and row.tpr_pp == pytest.approx(2 / 3)
    assert a.threshold_pp == 0.0 and b.threshold_pp == pytest.approx(0.6744897501960817)
    # pp_t, α = 0.25: thresholds t_{0.75,1}·√1.5 = 1.22 (n_out = 2) and t_{0.75,2}·√(4/3) = 0.94 (pair (3, 0))
    assert b.fpr_pp_t == pytest.approx(1 / 3) and b.tpr_pp_t == pytest.approx(2 / 3)
    # per sample, α = 0.5: column 0 OUT 1, 2, 3, k = 1, τ = 2: FPR 1/3, IN 6: TPR 1; column 1 OUT 3, 1, k = 1,
    # τ = 1: FPR 1/2, IN 2, 5: TPR 1
    assert a.tpr_per_sample == 1.0 and a.fpr_per_sample == pytest.approx(5 / 12)
    # α = 0.25: k = 0 in both columns, τ = the largest OUT score: 3 and 3; TPR 1 and 1/2
    assert b.tpr_per_sample == 0.75 and b.fpr_per_sample == 0.0
    # the naive threshold's per-sample FPRs at α = 0.5: column 0: 1/3, column 1: 1/2
    assert a.naive_sample_fpr_mean == pytest.approx(5 / 12) and a.naive_sample_fpr_max == 0.5
    assert list(report.table.models_needed) == [20, 40]
    assert report.n_models == 4 and report.n_samples == 2
    assert (report.n_out_pairs, report.n_in_pairs, report.n_pp_out_pairs, report.n_pp_in_pairs) == (5, 3, 3, 3)
    assert (report.n_dropped_pairs, report.n_dropped_samples) == (2, 0)
    assert (report.n_per_sample_samples, report.n_per_sample_dropped) == (2, 0)
    np.testing.assert_array_equal(report.n_out_per_sample, [3, 2])
    assert np.isnan(a.tpr_naive_low) and np.isnan(b.fpr_per_sample_high)  # n_boot = 0: no intervals


def test_report_flat_keys() -> None:
    report = calibration_report(TINY_S, TINY_M, fprs=(0.001, 0.5), n_boot=40, rng=_rng())
    flat = report.flat()
    assert len(flat) == 2 * (4 * 2 + 1) * 3  # per FPR: 4 methods x (tpr, fpr), the per-sample expected FPR; x 3
    for f in ("0.001", "0.5"):
        for method in ("naive", "pp", "pp_t", "per_sample"):
            for rate in ("tpr", "fpr"):
                for suffix in ("", "_low", "_high"):
                    assert f"{rate}_{method}{suffix}_{f}" in flat
        for suffix in ("", "_low", "_high"):
            assert f"fpr_per_sample_expected{suffix}_{f}" in flat
    assert flat["tpr_naive_0.5"] == pytest.approx(2 / 3)
    assert all(isinstance(v, float) for v in flat.values())


def test_report_never_leaks_nan_from_unstandardisable_pairs() -> None:
    rng = _rng(5)
    s, m, _, _ = _lira_like(rng, 6, 300)  # M = 6: many pairs have < 2 other OUT models
    s[:, 0] = 1.0  # and a constant sample
    report = calibration_report(s, m, n_boot=50, rng=rng)
    assert report.n_dropped_pairs > 0 and report.n_dropped_samples >= 1
    numbers = report.table.drop(columns=[c for c in report.table.columns if str(c).endswith("_dispersion")])
    assert np.isfinite(numbers.to_numpy(dtype=float)).all()


@pytest.mark.parametrize("blocks", ["one block", "blocks of 7", "a prefix of one pair"])
def test_report_bootstrap_matches_a_replay_of_its_draws(blocks: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each replicate equals the report of the resampled columns; the interval is their percentile interval.

    Whatever the blocks the replicates are counted in (the last one partial), and however short the OUT prefix the
    naive threshold's search starts from (it doubles until every replicate's count is reached)."""
    from privgame.analysis import calibration

    rng = _rng(6)
    s, m, _, _ = _lira_like(rng, 12, 60)
    s[:, :5] = np.round(s[:, :5], 1)  # ties in the pooled scores
    n_boot, confidence = (40, 0.8) if blocks == "one block" else (150, 0.8)
    if blocks == "blocks of 7":
        monkeypatch.setattr(calibration, "_BOOT_BLOCK_ELEMENTS", 7 * 60 + 59)
    if blocks == "a prefix of one pair":
        init = calibration._NaiveBootstrap.__init__

        def short(self: Any, *args: Any) -> None:
            init(self, *args)
            self.prefix = 1

        monkeypatch.setattr(calibration._NaiveBootstrap, "__init__", short)
    report = calibration_report(s, m, fprs=(0.05, 0.2), confidence=confidence, n_boot=n_boot, rng=_rng(7))
    replay = _rng(7)
    reps = []
    for _ in range(n_boot):
        idx = replay.integers(0, s.shape[1], size=s.shape[1])
        reps.append(calibration_report(s[:, idx], m[:, idx], fprs=(0.05, 0.2), n_boot=0, rng=replay).table)
    for name in ("tpr_naive", "fpr_naive", "tpr_pp", "fpr_pp", "tpr_pp_t", "fpr_pp_t", "tpr_per_sample"):
        values = np.array([t[name].to_numpy() for t in reps])
        low, high = np.quantile(values, [0.1, 0.9], axis=0)
        np.testing.assert_allclose(report.table[f"{name}_low"], low, rtol=1e-12, err_msg=name)
        np.testing.assert_allclose(report.table[f"{name}_high"], high, rtol=1e-12, err_msg=name)


def test_report_is_reproducible_and_seed_dependent() -> None:
    s, m, _, _ = _lira_like(_rng(8), 16, 200)
    a = calibration_report(s, m, n_boot=100, rng=_rng(1)).flat()
    b = calibration_report(s, m, n_boot=100, rng=_rng(1)).flat()
    c = calibration_report(s, m, n_boot=100, rng=_rng(2)).flat()
    assert a == b
    assert a != c
    assert all(a[k] == c[k] for k in a if "_low_" not in k and "_high_" not in k)  # only the intervals change


def test_report_defaults() -> None:
    s, m, _, _ = _lira_like(_rng(9), 8, 50)
    report = calibration_report(s, m, n_boot=40, rng=_rng())
    assert tuple(report.table.fpr) == DEFAULT_FPRS
    assert (report.confidence, report.fpc, report.n_boot) == (0.95, 1.0, 40)


def test_report_warns_when_too_few_replicates() -> None:
    with pytest.warns(UserWarning, match="too few"):
        calibration_report(TINY_S, TINY_M, fprs=(0.5,), n_boot=10, rng=_rng())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        calibration_report(TINY_S, TINY_M, fprs=(0.5,), n_boot=0, rng=_rng())


def test_pair_input_errors() -> None:
    rng = _rng()
    cases: list[tuple[Any, Any, type[Exception], str]] = [
        (
            TINY_S[0],
            TINY_M[0],
            ValueError,
            "scores must be a 2-d array of shape (n_models, n_samples), got shape (2,).",
        ),
        (TINY_S, TINY_M[:3], ValueError, "member must have the shape of scores (4, 2), got shape (3, 2)."),
        (TINY_S[:1], TINY_M[:1], ValueError, "scores must have at least 2 models (rows), got 1."),
        (TINY_S[:, :0], TINY_M[:, :0], ValueError, "scores must have at least 1 sample (column), got 0."),
        (TINY_S.astype(str), TINY_M, TypeError, "scores must hold real numbers, got dtype <U32."),
        (
            np.where(TINY_M, np.inf, TINY_S),
            TINY_M,
            ValueError,
            "scores must be finite, got inf at (model 0, sample 1).",
        ),
        (
            np.where(TINY_M, np.nan, TINY_S),
            TINY_M,
            ValueError,
            "scores must be finite, got nan at (model 0, sample 1).",
        ),
        (
            TINY_S,
            TINY_M.astype(float),
            TypeError,
            "member must be a boolean array (or integers 0/1), got dtype float64.",
        ),
        (TINY_S, TINY_M * 2, ValueError, "member must hold only 0/1 or booleans, got 2 at (model 0, sample 1)."),
    ]
    for scores, member, error, text in cases:
        with pytest.raises(error, match=_msg(text)):
            loo_statistics(scores, member)
        with pytest.raises(error, match=_msg(text)):
            calibration_report(scores, member, n_boot=0, rng=rng)
        with pytest.raises(error, match=_msg(text)):
            out_normality(scores, member)


def test_report_argument_errors() -> None:
    def run(**kwargs: Any) -> None:
        calibration_report(TINY_S, TINY_M, **{"n_boot": 0, "rng": _rng(), **kwargs})

    for bad in (0.0, 1.0, -0.01, 1.5, math.nan):
        with pytest.raises(ValueError, match=_msg(f"fprs[1] must be in (0, 1), got {bad!r}.")):
            run(fprs=(0.1, bad))
    with pytest.raises(ValueError, match=_msg("fprs must be a non-empty sequence of floats in (0, 1), got ().")):
        run(fprs=())
    with pytest.raises(ValueError, match=re.escape("fprs must be distinct (also when written with '{:g}'), got")):
        run(fprs=(0.1, 0.1000000001))
    with pytest.raises(TypeError, match=_msg("fprs must be a sequence of floats, got 0.1.")):
        run(fprs=0.1)
    with pytest.raises(TypeError, match=_msg("fprs[0] must be a real number, got '0.1'.")):
        run(fprs=["0.1"])
    for bad in (0.0, 1.5, -1.0, math.nan):
        with pytest.raises(ValueError, match=_msg(f"fpc must be in (0, 1], got {bad!r}.")):
            run(fpc=bad)
        with pytest.raises(ValueError, match=_msg(f"fpc must be in (0, 1], got {bad!r}.")):
            loo_statistics(TINY_S, TINY_M, fpc=bad)
    for bad in (0.0, 1.0, math.nan):
        with pytest.raises(ValueError, match=_msg(f"confidence must be in (0, 1), got {bad!r}.")):
            run(confidence=bad)
    with pytest.raises(ValueError, match=_msg("n_boot must be an integer >= 0, got -1.")):
        run(n_boot=-1)
    with pytest.raises(TypeError, match=_msg("n_boot must be an integer, got 10.0.")):
        run(n_boot=10.0)
    with pytest.raises(TypeError, match=_msg("rng must be a numpy.random.Generator, got 0.")):
        run(rng=0)
    with pytest.raises(TypeError, match=_msg("rng must be a numpy.random.Generator, got None.")):
        run(rng=None, n_boot=10)  # the bootstrap needs one
    with pytest.raises(ValueError, match=_msg("direction must be one of known, split, got 'sign'.")):
        run(direction="sign")


def test_report_without_a_bootstrap_needs_no_rng() -> None:
    """n_boot = 0 draws nothing: no generator is asked for, and the numbers are those of a run with one."""
    alone = calibration_report(TINY_S, TINY_M, fprs=[0.5], n_boot=0)
    with_rng = calibration_report(TINY_S, TINY_M, fprs=[0.5], n_boot=0, rng=_rng())
    pd.testing.assert_frame_equal(alone.table, with_rng.table)


def test_student_t_threshold_is_nan_below_two_out_scores() -> None:
    """A record with 0 or 1 OUT shadows has no standard deviation, hence no threshold: NaN, which flags nothing."""
    values = student_t_threshold(0.1, np.array([0, 1, 2, 8]))
    assert np.isnan(values[:2]).all()
    assert values[2] == pytest.approx(stats.t.isf(0.1, 1) * math.sqrt(1.5), rel=1e-12)
    assert values[3] == student_t_threshold(0.1, 8)
    assert math.isnan(student_t_threshold(0.1, 1))
    assert not (np.array([5.0, 5.0]) > values[:2]).any()


def test_report_refuses_what_it_cannot_evaluate() -> None:
    rng = _rng()
    with pytest.raises(
        ValueError, match=_msg("member must contain both IN and OUT pairs, got no IN (member True) pair among 8.")
    ):
        calibration_report(TINY_S, np.zeros_like(TINY_M), n_boot=0, rng=rng)
    with pytest.raises(
        ValueError, match=_msg("member must contain both IN and OUT pairs, got no OUT (member False) pair among 8.")
    ):
        calibration_report(TINY_S, np.ones_like(TINY_M), n_boot=0, rng=rng)
    two = np.array([[True, False], [False, True]])
    with pytest.raises(ValueError, match="scores must have at least one standardisable OUT pair"):
        calibration_report(np.eye(2), two, n_boot=0, rng=rng)  # M = 2: nobody has 2 other OUT models
    # every sample is either always IN or always OUT: no IN pair has OUT shadows
    s = np.arange(12.0).reshape(4, 3) ** 2
    m = np.array([[True, False, False]] * 4)
    m2 = np.hstack([m, np.array([[False], [False], [False], [True]])])
    s2 = np.hstack([s, np.array([[0.0], [1.0], [3.0], [9.0]])])
    calibration_report(s2, m2, fprs=(0.5,), n_boot=0, rng=rng)  # column 3 makes it possible
    with pytest.raises(ValueError, match="standardisable IN pair"):
        calibration_report(s, m, fprs=(0.5,), n_boot=0, rng=rng)


# --------------------------------------------------------------------------------------------------------------
# 6. coverage: the paper's calibration findings
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("alpha", [0.01, 0.1])
def test_true_parameters_give_every_sample_fpr_alpha(alpha: float) -> None:
    """With the TRUE μ_x, σ_x, sign(Δ_x), every sample's standardised OUT score exceeds Φ⁻¹(1 − α) w.p. α."""
    rng = _rng(10)
    n, draws = 2000, 50
    mu = rng.normal(0.0, 2.0, n)
    sigma = np.exp(rng.uniform(math.log(0.3), math.log(3.0), n))
    delta = rng.choice([-1.0, 1.0], n)
    t = normal_threshold(alpha)
    z = standardise(mu + sigma * rng.standard_normal((draws, n)), mu, sigma, delta)
    # 5 binomial tests below, each at 2e-4 (two-sided exact binomial test), so ≤ 1e-3 in all
    assert stats.binomtest(int((z > t).sum()), n * draws, alpha).pvalue > 2e-4
    picks = [int(np.argmin(sigma)), int(np.argmax(sigma)), int(np.argmax(delta < 0)), int(np.argmax(np.abs(mu)))]
    for x in picks:
        many = 200_000
        zx = standardise(mu[x] + sigma[x] * rng.standard_normal(many), mu[x], sigma[x], delta[x])
        assert stats.binomtest(int((zx > t).sum()), many, alpha).pvalue > 2e-4, x


@pytest.mark.parametrize("alpha", [0.01, 0.1])
def test_estimated_parameters_inflate_the_normal_threshold_but_not_the_t_threshold(alpha: float) -> None:
    """μ/σ from n_out = 8 shadows: Φ⁻¹ gives FPR P(T₇ > z_α / sqrt(9/8)) > α, the t threshold gives α (small M)."""
    rng = _rng(11)
    n, n_models = 20_000, 12
    mu = rng.normal(0.0, 2.0, n)
    sigma = np.exp(rng.uniform(math.log(0.3), math.log(3.0), n))
    member = np.zeros((n_models, n), dtype=bool)
    # model 0 is always OUT (the target); of the 11 others, 3 random ones are IN: the target has 8 OUT shadows
    member[1:] = np.argsort(rng.random((n_models - 1, n)), axis=0) < 3
    scores = mu + sigma * (rng.standard_normal((n_models, n)) + 1.5 * member)
    st = loo_statistics(scores, member)
    assert (st.n_out[0] == 8).all() and st.valid[0].all()
    z = standardise(scores, st.mu_out, st.sigma_out, st.delta, valid=st.valid)[0]  # one pair per sample: independent
    c_normal = int((z > normal_threshold(alpha)).sum())
    c_t = int((z > student_t_threshold(alpha, 8)).sum())
    inflated = float(stats.t.sf(normal_threshold(alpha) / math.sqrt(1 + 1 / 8), 7))
    assert inflated > 1.3 * alpha
    # 3 tests: two exact binomial tests at 3e-4 each; the third (inflation) fails only if a count with mean
    # ≥ 1.3 α n falls below α n + 5 sd — a 1e-9 event for these n — so ≤ 1e-3 in all
    assert stats.binomtest(c_t, n, alpha).pvalue > 3e-4
    assert stats.binomtest(c_normal, n, inflated).pvalue > 3e-4
    assert stats.binomtest(c_normal, n, alpha, alternative="greater").pvalue < 1e-6


def _self_normalised(fp_x: NDArray[np.int64], n_x: NDArray[np.int64], alpha: float) -> float:
    """T = Σ_x (fp_x − α n_x) / sqrt(Σ_x (fp_x − α n_x)²): N(0, 1) by the CLT over independent samples when every
    OUT pair's FPR is α (the pairs of one sample are dependent, samples are independent)."""
    e = fp_x - alpha * n_x
    return float(e.sum() / math.sqrt((e**2).sum()))


@pytest.mark.parametrize("direction", ["known", "split"])
@pytest.mark.parametrize(("n_models", "n_samples"), [(16, 20_000), (64, 10_000), (256, 2_500)])
@pytest.mark.parametrize("gap", [0.0, 1.0])
def test_report_pp_t_is_calibrated_whether_or_not_a_sample_leaks(
    direction: str, n_models: int, n_samples: int, gap: float
) -> None:
    """fpr_pp_t is α within noise at α = 0.01 and 0.1, M = 16, 64, 256, on samples that do not leak (gap 0) and on
    ones that do (gap 1), with per-sample σ_x spread over [0.3, 3].

    The sign of the post-processing was once estimated from the same shadows as μ_out: on samples that do not leak
    the realised FPR was 0.0139 / 0.1335 at M = 16 (nominal 0.01 / 0.1) and 0.0125 / 0.117 at M = 64.  T of
    :func:`_self_normalised` with |T| < 4 fails w.p. 6e-5 per check (24 checks: < 2e-3 in all); against the old
    sign the M = 16 and 64 checks at gap 0 have T > 10.
    """
    from privgame.analysis.calibration import _standardised

    rng = _rng(12 + n_models)
    alphas = (0.01, 0.1)
    s, m, _, _ = _lira_like(rng, n_models, n_samples, gap=gap)
    report = calibration_report(s, m, fprs=alphas, n_boot=0, direction=direction)
    z, valid, n_out = _standardised(s, m, 1.0, direction)
    z = np.where(valid, z, -np.inf)
    used = valid & ~m
    n_x = used.sum(axis=0)
    for k, alpha in enumerate(alphas):
        fp_x = (used & (z > student_t_threshold(alpha, np.where(valid, n_out, 2)))).sum(axis=0)
        assert report.table["fpr_pp_t"].iloc[k] == pytest.approx(fp_x.sum() / n_x.sum(), rel=1e-12)
        assert abs(_self_normalised(fp_x, n_x, alpha)) < 4.0, (alpha, report.table["fpr_pp_t"].iloc[k])


def test_the_known_direction_is_the_standardised_score_with_sign_plus_one() -> None:
    """direction="known" is f_x(s) = (s − μ_out) / σ_out of the leave-one-out statistics, never flipped, even where
    a sample's IN shadows lie below its OUT ones."""
    from privgame.analysis.calibration import _standardised

    rng = _rng(5)
    s, m, _, _ = _lira_like(rng, 12, 300, gap=-1.0)
    st = loo_statistics(s, m)
    z, valid, n_out = _standardised(s, m, 1.0, "known")
    np.testing.assert_array_equal(valid, st.valid)
    np.testing.assert_array_equal(n_out, st.n_out)
    np.testing.assert_array_equal(z[valid], ((s - st.mu_out) / st.sigma_out)[valid])
    # split: each model's pairs from the shadows of its own parity, signed by the other parity's Δ̂
    z, valid, n_out = _standardised(s, m, 1.0, "split")
    even = loo_statistics(s[::2], m[::2])
    with np.errstate(invalid="ignore"):
        odd_in = np.where(m[1::2], s[1::2], 0.0).sum(axis=0) / m[1::2].sum(axis=0)
        odd_out = np.where(~m[1::2], s[1::2], 0.0).sum(axis=0) / (~m[1::2]).sum(axis=0)
    sign = np.where(odd_in - odd_out < 0, -1.0, 1.0)
    expected = sign * (s[::2] - even.mu_out) / even.sigma_out
    np.testing.assert_allclose(z[::2][even.valid], expected[even.valid], rtol=1e-12)
    np.testing.assert_array_equal(n_out[::2], even.n_out)


def test_report_pp_is_inflated_at_small_m() -> None:
    """With μ/σ estimated from M/2 − 1 ≈ 7 OUT shadows (M = 16), the normal threshold's FPR is above α: T > 3.9
    (see :func:`_self_normalised`) with power ≈ 1 (its FPR is ≈ 2α here)."""
    rng = _rng(12)
    alpha = 0.02
    s, m, _, _ = _lira_like(rng, 16, 5000)
    report = calibration_report(s, m, fprs=(alpha,), n_boot=0, rng=rng)
    st = loo_statistics(s, m)
    z = np.where(st.valid, standardise(s, st.mu_out, st.sigma_out, valid=st.valid), -np.inf)
    used = st.valid & ~m
    n_x = used.sum(axis=0)
    fp_x = (used & (z > normal_threshold(alpha))).sum(axis=0)
    assert report.table["fpr_pp"].iloc[0] == pytest.approx(fp_x.sum() / n_x.sum(), rel=1e-12)
    assert _self_normalised(fp_x, n_x, alpha) > 3.9


def test_naive_threshold_gives_heterogeneous_per_sample_fprs_and_pp_does_not() -> None:
    """σ_x spread over [0.3, 3]: the naive global threshold's per-sample FPRs are far from binomial, pp's are not.

    The dispersion index D = Σ n_x (f_x − f̄)² / ((K − 1) f̄ (1 − f̄)) is ≈ χ²_{K−1}/(K−1) for binomial noise
    around a common f̄ (≤ 1.175 w.p. 1 − 1e-4 for K = 1000).  Over 100 seeds of this set-up: naive D at α = 0.1
    23.3 ± 1.0, pp D 0.37 ± 0.017 (below 1: the leave-one-out z of one sample are negatively correlated).  Both
    bounds lie > 20 sd away; D is a sum over 1000 independent samples, so its tails are Gaussian and each check
    fails with probability far below 1e-3.
    """
    rng = _rng(13)
    s, m, _, _ = _lira_like(rng, 100, 1000)
    report = calibration_report(s, m, fprs=(0.1,), n_boot=0, rng=rng)
    row = report.table.iloc[0]
    critical = stats.chi2.isf(1e-4, 999) / 999
    assert row.naive_sample_fpr_dispersion > critical
    assert row.pp_sample_fpr_dispersion < critical
    assert row.naive_sample_fpr_max > 2 * row.pp_sample_fpr_max
    assert row.fpr_naive <= 0.1  # the pooled FPR itself is fine: the miscalibration is per sample


# --------------------------------------------------------------------------------------------------------------
# 7. normality diagnostic
# --------------------------------------------------------------------------------------------------------------


def test_out_normality_closed_form() -> None:
    s = [[0.1, 1.0, 0.0], [0.5, 0.0, 1.0], [0.2, 1.0, 2.0], [0.9, 1.0, 5.0]]
    m = [[0, 0, 1], [0, 1, 1], [0, 0, 0], [0, 0, 0]]
    result = out_normality(s, m)
    assert result.sample.tolist() == [0]  # column 1: OUT scores all equal; column 2: two OUT scores
    assert (result.n_tested, result.n_untested) == (1, 2)
    assert result.p_value[0] == pytest.approx(stats.shapiro([0.1, 0.5, 0.2, 0.9]).pvalue)
    assert result.median_p == result.p_value[0]
    empty = out_normality(np.ones((4, 2)), np.zeros((4, 2), dtype=bool))
    assert empty.n_tested == 0 and math.isnan(empty.median_p) and math.isnan(empty.share_below_0_05)


def test_out_normality_is_each_sample_s_own_test_bit_for_bit() -> None:
    """The samples are tested in groups of equal OUT counts: each p-value must be the one-sample call's, exactly,
    whatever the counts (random masks), with constant and too-short samples left out in order."""
    rng = _rng(15)
    s = rng.normal(size=(12, 300))
    m = rng.random((12, 300)) < rng.uniform(0.1, 0.9, size=300)
    s[:, 7] = 2.0  # constant
    m[:, 9] = True
    m[:2, 9] = False  # two OUT scores
    result = out_normality(s, m)
    expected = [
        (x, stats.shapiro(s[~m[:, x], x]).pvalue)
        for x in range(300)
        if (~m[:, x]).sum() >= 3 and np.ptp(s[~m[:, x], x]) > 0
    ]
    assert result.sample.tolist() == [x for x, _ in expected] and 7 not in result.sample and 9 not in result.sample
    assert result.p_value.tolist() == [p for _, p in expected]


def test_out_normality_without_scipy_s_private_routine_is_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where scipy no longer keeps ``swilk`` where 1.17 does, ``shapiro`` itself gives the same p-values."""
    rng = _rng(16)
    s = rng.normal(size=(20, 200))
    m = rng.random((20, 200)) < 0.5
    fast = out_normality(s, m)
    monkeypatch.setitem(sys.modules, "scipy.stats._ansari_swilk_statistics", None)  # its import raises
    slow = out_normality(s, m)
    assert fast.sample.tolist() == slow.sample.tolist() and fast.p_value.tolist() == slow.p_value.tolist()


def test_out_normality_sees_where_the_gaussian_assumption_fails() -> None:
    rng = _rng(14)
    n = 400
    s, m, _, _ = _lira_like(rng, 80, n)
    gaussian = out_normality(s, m)
    assert gaussian.n_tested == n
    # Shapiro–Wilk p-values are uniform under H0: the count below 0.05 is Binomial(400, 0.05), exact test at 1e-3
    assert stats.binomtest(int(np.sum(gaussian.p_value < 0.05)), n, 0.05).pvalue > 1e-3
    assert gaussian.share_below_0_05 == np.mean(gaussian.p_value < 0.05)
    skewed = out_normality(np.exp(2.0 * s), m)
    # log-normal with σ ≥ 0.6 from ~40 scores: SW's power is > 0.9 per sample, so the share is far above 0.5
    assert skewed.share_below_0_01 > 0.5
    assert skewed.median_p < 0.01


# --------------------------------------------------------------------------------------------------------------
# 8. pooled AUC and ROC
# --------------------------------------------------------------------------------------------------------------


def test_pooled_auc_and_roc_closed_form() -> None:
    s = np.array([[0.9, 0.1], [0.8, 0.8]])
    m = np.array([[True, False], [True, False]])
    assert pooled_auc(s, m) == 0.875  # (2 + 1.5) / 4
    fpr, tpr, realised = pooled_roc(s, m, fprs=[0.25, 0.5, 1.0])
    np.testing.assert_array_equal(fpr, [0.25, 0.5, 1.0])
    # OUT scores 0.1, 0.8: at α = 0.25 nothing above τ = 0.8 among OUT, IN 0.9: TPR 1/2; α = 0.5: τ = 0.1
    np.testing.assert_array_equal(tpr, [0.5, 1.0, 1.0])
    np.testing.assert_array_equal(realised, [0.0, 0.5, 1.0])
    grid, tpr, realised = pooled_roc(s, m)
    assert grid[0] == pytest.approx(1e-4) and grid[-1] == 1.0 and grid.size == 81
    assert np.all(realised <= grid + 1e-15) and np.all(np.diff(tpr) >= 0)


def test_pooled_roc_matches_the_naive_numbers() -> None:
    s, m, _, _ = _lira_like(_rng(15), 10, 200)
    report = calibration_report(s, m, n_boot=0, rng=_rng())
    _, tpr, realised = pooled_roc(s, m, fprs=DEFAULT_FPRS)
    np.testing.assert_array_equal(tpr, report.table.tpr_naive)
    np.testing.assert_array_equal(realised, report.table.fpr_naive)
    assert 0.5 < pooled_auc(s, m) < 1.0


def test_pooled_errors() -> None:
    with pytest.raises(ValueError, match=_msg("member must have the shape of scores (2, 2), got shape (2,).")):
        pooled_auc(np.ones((2, 2)), [True, False])
    with pytest.raises(ValueError, match=_msg("scores must be finite, got nan.")):
        pooled_auc([np.nan, 1.0], [True, False])
    with pytest.raises(TypeError, match=_msg("scores must hold real numbers, got dtype <U1.")):
        pooled_roc(["a", "b"], [True, False])
    with pytest.raises(TypeError, match=_msg("member must be a boolean array (or integers 0/1), got dtype float64.")):
        pooled_auc([0.0, 1.0], [1.0, 0.0])
    with pytest.raises(ValueError, match=_msg("member must hold only 0/1 or booleans, got 3 at index (1,).")):
        pooled_auc([0.0, 1.0], [1, 3])
    with pytest.raises(
        ValueError, match=_msg("member must contain both IN and OUT pairs, got no IN (member True) pair among 2.")
    ):
        pooled_roc([0.0, 1.0], [False, False])
    for bad in (0.0, 1.5, math.nan):
        with pytest.raises(ValueError, match=_msg(f"fprs must lie in (0, 1], got {bad!r}.")):
            pooled_roc([0.0, 1.0], [True, False], fprs=[0.5, bad])
    with pytest.raises(ValueError, match=_msg("fprs must be a non-empty grid of values in (0, 1], got [].")):
        pooled_roc([0.0, 1.0], [True, False], fprs=[])


def test_per_sample_expected_fpr_is_the_out_of_sample_rate_of_the_own_threshold():
    """Under the null (IN scores drawn like OUT ones) a sample's TPR under its own threshold is the chance that a new
    OUT draw exceeds it, (k + 1)/(n_out + 1): the expected FPR, while the in-sample FPR k/n_out reads 0 when
    n_out < 1/α.  With N = 4000 samples of 8 IN draws each, the mean TPR has sd sqrt(p(1-p)/(8·4000)) ≈ 0.0018 at
    p = 1/9 (the samples are independent): 6 sd is 0.011, so a correct implementation fails with probability ~1e-9.
    """
    rng = np.random.default_rng(11)
    scores = rng.normal(size=(16, 4000))
    member = np.zeros((16, 4000), dtype=bool)
    member[::2] = True
    flat = calibration_report(scores, member, fprs=[0.001, 0.2], n_boot=0, rng=rng).flat()
    assert flat["fpr_per_sample_0.001"] == 0.0
    assert flat["fpr_per_sample_expected_0.001"] == pytest.approx(1 / 9)
    assert flat["tpr_per_sample_0.001"] == pytest.approx(1 / 9, abs=0.011)
    # at α = 0.2, k = ⌊0.2 · 8⌋ = 1: in-sample 1/8, expected 2/9
    assert flat["fpr_per_sample_0.2"] == pytest.approx(1 / 8)
    assert flat["fpr_per_sample_expected_0.2"] == pytest.approx(2 / 9)
    assert flat["tpr_per_sample_0.2"] == pytest.approx(2 / 9, abs=0.014)


def test_scores_constant_per_sample_are_refused_unless_the_post_processing_is_optional():
    """An attack that scores every pair of a sample alike (RMIA when no likelihood ratio reaches γ) cannot be
    standardised: refused by default, reported with NaN post-processed rates and its naive ones otherwise."""
    from privgame.games.lira import lira_masks

    member = lira_masks(8, 50, 1, 0)
    flat = np.zeros((8, 50))
    with pytest.raises(ValueError, match="standardisable OUT pair"):
        calibration_report(flat, member, n_boot=0)
    report = calibration_report(flat, member, n_boot=40, rng=np.random.default_rng(0), require_pp=False)
    assert (report.table["tpr_naive"] == 0).all() and (report.table["fpr_naive"] == 0).all()
    assert report.table["tpr_pp"].isna().all() and report.table["pp_sample_fpr_mean"].isna().all()
