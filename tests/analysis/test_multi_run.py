"""Tests of privgame.analysis.multi_run: the classic multi-run audit (Clopper–Pearson bounds on FPR and FNR, each at
β/2; Jagielski et al. 2020, arXiv:2006.07709) and its GDP variant (Nasr et al. 2021, arXiv:2101.04535).

* ``clopper_pearson_upper`` against scipy's exact binomial interval and closed forms.
* Closed forms of the estimators, computed by hand: perfect separation, hand-counted error rates, both directions of
  the symmetric formula, μ = Φ⁻¹(1 − FPR_ub) − Φ⁻¹(FNR_ub) and its ε from ``dp_accounting``.
* Soundness (binomial test of the violation count at 1e-3), at confidence 0.95 and 0.7: the Gaussian mechanism
  (in ~ N(μ, 1), out ~ N(0, 1), μ = 1) for the Clopper–Pearson and GDP estimators; randomized-response runs at ε = 1
  with the natural threshold; and a meta-test that the point estimate without confidence bounds fails the check.
"""

from __future__ import annotations

import math
from typing import Any

import dp_accounting
import mpmath
import numpy as np
import pytest
from scipy import special, stats

from privgame.analysis._result import AuditResult
from privgame.analysis.multi_run import audit_scores, clopper_pearson_upper, gdp_audit_scores
from privgame.analysis.thresholds import Bonferroni, Explicit, Split, quantile_thresholds

BETA = 0.05

# --------------------------------------------------------------------------------------------------------------
# 1. clopper_pearson_upper
# --------------------------------------------------------------------------------------------------------------

CP_CASES = [
    (0, 1, 0.05),
    (0, 10, 0.05),
    (3, 10, 0.025),
    (5, 20, 0.1),
    (17, 50, 0.01),
    (49, 50, 0.05),
    (100, 1000, 0.001),
    (999, 1000, 0.05),
    (250, 500, 0.35),
    (1, 100_000, 0.0005),
]


@pytest.mark.parametrize(("k", "n", "alpha"), CP_CASES)
def test_clopper_pearson_upper_matches_scipy_exact_interval(k: int, n: int, alpha: float) -> None:
    # scipy finds its bound with a root finder (about 1e-9 relative at (1, 10^5, 5e-4)): compare to 1e-7.
    expected = stats.binomtest(k, n).proportion_ci(confidence_level=1 - 2 * alpha, method="exact").high
    assert float(clopper_pearson_upper(k, n, alpha)) == pytest.approx(expected, rel=1e-7, abs=1e-14)


def _cp_mpmath(k: int, n: int, alpha: float) -> float:
    """40-digit oracle: the p with P[Bin(n, p) <= k] = alpha, i.e. I_p(k + 1, n - k) = 1 - alpha."""
    with mpmath.workdps(40):
        target = 1 - mpmath.mpf(alpha)
        lo, hi = mpmath.mpf(0), mpmath.mpf(1)
        for _ in range(200):
            mid = (lo + hi) / 2
            # I_p(k + 1, n - k) = P[Bin(n, p) > k], summed exactly (k is small in every case here)
            cdf = mpmath.fsum(mpmath.binomial(n, j) * mid**j * (1 - mid) ** (n - j) for j in range(k + 1))
            if 1 - cdf < target:
                lo = mid
            else:
                hi = mid
        return float((lo + hi) / 2)


@pytest.mark.parametrize(("k", "n", "alpha"), [(1, 100_000, 0.0005), (3, 10, 0.025), (17, 50, 0.01), (0, 7, 0.1)])
def test_clopper_pearson_upper_matches_mpmath_oracle(k: int, n: int, alpha: float) -> None:
    assert float(clopper_pearson_upper(k, n, alpha)) == pytest.approx(_cp_mpmath(k, n, alpha), rel=1e-12)


@pytest.mark.parametrize(("n", "alpha"), [(1, 0.05), (10, 0.025), (1000, 0.001)])
def test_clopper_pearson_upper_is_one_at_k_equal_n(n: int, alpha: float) -> None:
    assert float(clopper_pearson_upper(n, n, alpha)) == 1.0


@pytest.mark.parametrize(("n", "alpha"), [(1, 0.05), (10, 0.025), (500, 0.001)])
def test_clopper_pearson_upper_at_zero_is_the_closed_form(n: int, alpha: float) -> None:
    # P[Bin(n, p) = 0] = (1 - p)^n = alpha  <=>  p = 1 - alpha^(1/n)
    assert float(clopper_pearson_upper(0, n, alpha)) == pytest.approx(1 - alpha ** (1 / n), rel=1e-12)


def test_clopper_pearson_upper_vectorises() -> None:
    ks = np.array([[0, 1, 2], [10, 19, 20]])
    got = clopper_pearson_upper(ks, 20, 0.05)
    assert got.shape == (2, 3)
    for index in np.ndindex(ks.shape):
        assert got[index] == float(clopper_pearson_upper(int(ks[index]), 20, 0.05))
    assert np.all(np.diff(got.ravel()) > 0)  # increasing in k
    assert got[1, 2] == 1.0
    assert clopper_pearson_upper([3, 3], 10, 0.05)[0] > clopper_pearson_upper([3, 3], 10, 0.2)[0]


def test_clopper_pearson_upper_covers_at_the_nominal_rate() -> None:
    # Exact coverage: P[Bin(n, p) = k with upper(k) < p] <= alpha for every p.
    n, alpha = 30, 0.05
    uppers = clopper_pearson_upper(np.arange(n + 1), n, alpha)
    for p in np.linspace(0.01, 0.99, 99):
        miss = stats.binom.pmf(np.arange(n + 1), n, p)[uppers < p].sum()
        assert miss <= alpha + 1e-12


# --------------------------------------------------------------------------------------------------------------
# 2. Closed forms, by hand
# --------------------------------------------------------------------------------------------------------------


def _cp(k: int, n: int, alpha: float) -> float:
    """Independent Clopper–Pearson upper bound: the Beta quantile (1 at k = n)."""
    return 1.0 if k >= n else float(stats.beta.ppf(1 - alpha, k + 1, n - k))


def _eps(fpr_ub: float, fnr_ub: float, delta: float) -> float:
    values = [0.0]
    if 1 - delta - fnr_ub > 0:
        values.append(math.log((1 - delta - fnr_ub) / fpr_ub))
    if 1 - delta - fpr_ub > 0:
        values.append(math.log((1 - delta - fpr_ub) / fnr_ub))
    return max(values)


def _separated(n: int, seed: int = 41) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return 1.0 + rng.random(n), rng.random(n)  # members in [1, 2), non-members in [0, 1)


@pytest.mark.parametrize("delta", [0.0, 1e-5, 1e-2])
@pytest.mark.parametrize("n", [50, 400])
def test_perfect_separation_explicit_threshold_closed_form(n: int, delta: float) -> None:
    ins, outs = _separated(n)
    result = audit_scores(ins, outs, threshold=Explicit(1.0), delta=delta)
    u = 1 - (BETA / 2) ** (1 / n)  # CP upper bound on 0 errors out of n, at β/2
    assert result.details["fp"] == 0 and result.details["fn"] == 0
    assert result.details["fpr_ub"] == pytest.approx(u, rel=1e-12)
    assert result.details["fnr_ub"] == pytest.approx(u, rel=1e-12)
    assert result.epsilon == pytest.approx(math.log((1 - delta - u) / u), rel=1e-12)


def test_perfect_separation_number_checked_by_hand() -> None:
    # n = 50, β = 0.05: u = 1 - 0.025^(1/50) = 0.0711217..., ε = ln((1 - u) / u) = 2.56958...
    result = audit_scores(*_separated(50), threshold=Explicit(1.0))
    assert result.epsilon == pytest.approx(2.569585, abs=1e-6)


def test_perfect_separation_bonferroni_all_pays_beta_over_g() -> None:
    n = 200
    ins, outs = _separated(n)
    result = audit_scores(ins, outs, threshold=Bonferroni("all"))
    g = 2 * n  # every distinct score
    assert result.n_tests == g
    assert result.beta_per_test == pytest.approx(BETA / g, rel=1e-12)
    # The lowest member score is a candidate and separates perfectly.
    assert result.threshold == ins.min()
    assert result.details["fp"] == 0 and result.details["fn"] == 0
    u = 1 - (BETA / (2 * g)) ** (1 / n)
    assert result.epsilon == pytest.approx(math.log((1 - u) / u), rel=1e-12)


@pytest.mark.parametrize("g", [7, 100])
def test_bonferroni_matches_slow_reference(g: int) -> None:
    rng = np.random.default_rng(47)
    ins, outs = np.round(rng.normal(1.5, 1.0, size=200), 1), np.round(rng.normal(0.0, 1.0, size=150), 1)
    result = audit_scores(ins, outs, threshold=Bonferroni(g), delta=1e-4)
    cands = quantile_thresholds(np.concatenate([ins, outs]), np.arange(1, g + 1) / (g + 1))
    alpha = BETA / len(cands) / 2
    expected = max(
        _eps(_cp(int(np.sum(outs >= t)), 150, alpha), _cp(int(np.sum(ins < t)), 200, alpha), 1e-4) for t in cands
    )
    assert result.n_tests == len(cands)
    assert result.epsilon == pytest.approx(expected, rel=1e-10)
    assert result.epsilon > 0.0


@pytest.mark.parametrize("delta", [0.0, 1e-3])
def test_hand_counted_error_rates(delta: float) -> None:
    ins = np.array([0.1, 0.2, *np.linspace(1.0, 2.0, 13)])  # 15 members: 2 below t = 0.5
    outs = np.array([0.6, 0.7, 0.5, *np.linspace(-1.0, 0.4, 17)])  # 20 non-members: 3 at or above t
    result = audit_scores(ins, outs, threshold=Explicit(0.5), delta=delta, confidence=0.9)
    assert (result.details["fp"], result.details["fn"]) == (3, 2)
    fpr_ub, fnr_ub = _cp(3, 20, 0.05), _cp(2, 15, 0.05)
    assert result.details["fpr_ub"] == pytest.approx(fpr_ub, rel=1e-10)
    assert result.details["fnr_ub"] == pytest.approx(fnr_ub, rel=1e-10)
    assert result.epsilon == pytest.approx(_eps(fpr_ub, fnr_ub, delta), rel=1e-10)
    assert result.epsilon > 0.0


def test_second_formula_is_used_when_false_negatives_are_rare() -> None:
    # No member below t, half of the non-members above: FNR small, FPR about 1/2.  Only
    # ln((1 - δ - FPR_ub) / FNR_ub) is positive.
    rng = np.random.default_rng(42)
    ins = 1.0 + rng.random(300)
    outs = np.concatenate([rng.random(150), 1.0 + rng.random(150)])
    result = audit_scores(ins, outs, threshold=Explicit(1.0))
    fpr_ub, fnr_ub = _cp(150, 300, BETA / 2), _cp(0, 300, BETA / 2)
    assert math.log((1 - fnr_ub) / fpr_ub) < math.log((1 - fpr_ub) / fnr_ub)
    assert result.epsilon == pytest.approx(math.log((1 - fpr_ub) / fnr_ub), rel=1e-10)


@pytest.mark.parametrize("threshold", [Explicit(0.3), Explicit(1.25)])
def test_both_directions_explicit(threshold: Explicit) -> None:
    # Swapping members and non-members and negating the scores swaps FP and FN: the same ε by symmetry.
    rng = np.random.default_rng(43)
    ins, outs = rng.normal(1.5, 1.0, size=300), rng.normal(0.0, 1.0, size=200)
    forward = audit_scores(ins, outs, threshold=threshold, delta=1e-4)
    backward = audit_scores(-outs, -ins, threshold=Explicit(-threshold.threshold), delta=1e-4)
    assert (backward.details["fp"], backward.details["fn"]) == (forward.details["fn"], forward.details["fp"])
    assert backward.epsilon == pytest.approx(forward.epsilon, rel=1e-12)
    assert forward.epsilon > 0.0


@pytest.mark.parametrize("estimator", [audit_scores, gdp_audit_scores])
def test_both_directions_all_candidates(estimator: Any) -> None:
    # With every distinct score a candidate, the reversed attack sees the same (FP, FN) pairs swapped.
    rng = np.random.default_rng(44)
    ins, outs = np.round(rng.normal(1.0, 1.0, size=250), 1), np.round(rng.normal(0.0, 1.0, size=150), 1)
    forward = estimator(ins, outs, threshold=Bonferroni("all"), delta=1e-5)
    backward = estimator(-outs, -ins, threshold=Bonferroni("all"), delta=1e-5)
    assert backward.n_tests == forward.n_tests
    assert backward.epsilon == pytest.approx(forward.epsilon, rel=1e-12)
    assert forward.epsilon > 0.0


def test_reversed_scores_get_no_bound_with_a_fixed_direction() -> None:
    # Guessing "member" at high scores when members score LOW: every rate near 1, no evidence in this direction.
    ins, outs = _separated(100)
    result = audit_scores(outs, ins, threshold=Explicit(1.0))
    assert (result.details["fp"], result.details["fn"]) == (100, 100)
    assert result.epsilon == 0.0


def test_result_fields() -> None:
    rng = np.random.default_rng(45)
    ins, outs = rng.normal(1.0, 1.0, size=120), rng.normal(0.0, 1.0, size=80)
    result = audit_scores(ins, outs, threshold=Bonferroni(30), confidence=0.9, delta=1e-6)
    assert isinstance(result, AuditResult)
    assert (result.n_in, result.n_out, result.confidence, result.delta) == (120, 80, 0.9, 1e-6)
    assert "Clopper" in result.method
    assert result.n_tests == 30 and result.beta_per_test == pytest.approx(0.1 / 30, rel=1e-12)
    assert "Bonferroni" in result.strategy
    t = result.threshold
    fp, fn = int(np.sum(outs >= t)), int(np.sum(ins < t))
    assert set(result.details) == {"fp", "fn", "fpr_ub", "fnr_ub"}
    assert (result.details["fp"], result.details["fn"]) == (fp, fn)
    fpr_ub, fnr_ub = _cp(fp, 80, 0.1 / 60), _cp(fn, 120, 0.1 / 60)
    assert result.details["fpr_ub"] == pytest.approx(fpr_ub, rel=1e-10)
    assert result.epsilon == pytest.approx(_eps(fpr_ub, fnr_ub, 1e-6), rel=1e-10)
    assert audit_scores(ins, outs) == audit_scores(ins, outs, threshold=Bonferroni(100))


def test_split_bounds_on_held_out_runs() -> None:
    rng = np.random.default_rng(46)
    ins, outs = rng.normal(2.0, 1.0, size=400), rng.normal(0.0, 1.0, size=400)
    result = audit_scores(ins, outs, threshold=Split(seed=3))
    assert (result.n_tests, result.beta_per_test) == (1, pytest.approx(BETA, rel=1e-12))
    assert "split" in result.strategy
    assert result.epsilon > 0.0
    assert result == audit_scores(ins, outs, threshold=Split(seed=3))


# --------------------------------------------------------------------------------------------------------------
# 3. The GDP variant
# --------------------------------------------------------------------------------------------------------------


def test_gdp_needs_positive_delta() -> None:
    with pytest.raises(ValueError, match=r"^delta must be > 0"):
        gdp_audit_scores([1.0, 2.0], [0.0, 1.0], delta=0.0)
    with pytest.raises(TypeError):
        gdp_audit_scores([1.0, 2.0], [0.0, 1.0])  # type: ignore[call-arg]  # δ has no default


@pytest.mark.parametrize("delta", [1e-5, 1e-3])
def test_gdp_mu_and_epsilon_by_hand(delta: float) -> None:
    ins = np.array([0.1, 0.2, *np.linspace(1.0, 2.0, 38)])  # 40 members, 2 below t
    outs = np.array([0.6, 0.7, 0.5, *np.linspace(-1.0, 0.4, 37)])  # 40 non-members, 3 at or above t
    result = gdp_audit_scores(ins, outs, threshold=Explicit(0.5), delta=delta)
    fpr_ub, fnr_ub = _cp(3, 40, BETA / 2), _cp(2, 40, BETA / 2)
    mu = stats.norm.ppf(1 - fpr_ub) - stats.norm.ppf(fnr_ub)
    assert result.details["mu"] == pytest.approx(mu, rel=1e-9)
    assert result.epsilon == pytest.approx(dp_accounting.get_epsilon_gaussian(1 / mu, delta), rel=1e-9)
    assert result.delta == delta
    assert "GDP" in result.method
    assert (result.details["fp"], result.details["fn"]) == (3, 2)


def test_gdp_perfect_separation() -> None:
    n = 100
    result = gdp_audit_scores(*_separated(n), threshold=Explicit(1.0), delta=1e-5)
    u = 1 - (BETA / 2) ** (1 / n)
    assert result.details["mu"] == pytest.approx(2 * stats.norm.isf(u), rel=1e-10)
    assert result.epsilon == pytest.approx(
        dp_accounting.get_epsilon_gaussian(1 / result.details["mu"], 1e-5), rel=1e-12
    )


def test_gdp_no_evidence_gives_zero() -> None:
    result = gdp_audit_scores(np.zeros(30), np.zeros(30), threshold=Explicit(0.0), delta=1e-5)
    assert result.details["mu"] == 0.0
    assert result.epsilon == 0.0


# --------------------------------------------------------------------------------------------------------------
# 4. Bad inputs
# --------------------------------------------------------------------------------------------------------------

ESTIMATORS = [
    pytest.param(lambda a, b, **kw: audit_scores(a, b, **{"delta": 1e-5, **kw}), id="cp"),
    pytest.param(lambda a, b, **kw: gdp_audit_scores(a, b, **{"delta": 1e-5, **kw}), id="gdp"),
]


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize(("ins", "outs"), [([], [0.0]), ([1.0], []), ([], [])])
def test_empty_arrays_raise(estimator: Any, ins: list[float], outs: list[float]) -> None:
    with pytest.raises(ValueError, match="must both be non-empty"):
        estimator(ins, outs)


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_scores_raise(estimator: Any, bad: float) -> None:
    with pytest.raises(ValueError, match=r"^in_scores must be finite"):
        estimator([1.0, bad], [0.0])
    with pytest.raises(ValueError, match=r"^out_scores must be finite"):
        estimator([1.0], [bad, 0.0])


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("bad", [["a", "b"], np.array([1 + 2j]), np.array([None, 1.0], dtype=object)])
def test_non_real_scores_raise_type_error(estimator: Any, bad: Any) -> None:
    with pytest.raises(TypeError, match=r"^in_scores must hold real numbers"):
        estimator(bad, [0.0])
    with pytest.raises(TypeError, match=r"^out_scores must hold real numbers"):
        estimator([0.0], bad)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_two_dimensional_scores_raise(estimator: Any) -> None:
    with pytest.raises(ValueError, match=r"^in_scores must be a 1-d array"):
        estimator([[1.0, 2.0]], [0.0])


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("confidence", [0.0, 1.0, 1.5, -0.1, math.nan])
def test_bad_confidence_raises(estimator: Any, confidence: float) -> None:
    with pytest.raises(ValueError, match=r"^confidence must be in \(0, 1\), got "):
        estimator([1.0], [0.0], confidence=confidence)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_non_real_confidence_and_delta_raise_type_error(estimator: Any) -> None:
    with pytest.raises(TypeError, match=r"^confidence must be a real number"):
        estimator([1.0], [0.0], confidence="0.95")
    with pytest.raises(TypeError, match=r"^delta must be a real number"):
        estimator([1.0], [0.0], delta="1e-5")


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("delta", [-1e-9, 1.0, 1.5, math.nan])
def test_bad_delta_raises(estimator: Any, delta: float) -> None:
    with pytest.raises(ValueError, match=r"^delta must be in \[0, 1\), got "):
        estimator([1.0], [0.0], delta=delta)


@pytest.mark.parametrize("estimator", ESTIMATORS)
@pytest.mark.parametrize("threshold", [0.5, "all", (0.0, 1.0)])
def test_bare_threshold_raises_type_error(estimator: Any, threshold: object) -> None:
    with pytest.raises(TypeError, match=r"^threshold must be a ThresholdStrategy"):
        estimator([1.0], [0.0], threshold=threshold)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_pair_threshold_raises_naming_threshold(estimator: Any) -> None:
    with pytest.raises((TypeError, ValueError), match="threshold"):
        estimator([1.0, 2.0, 3.0], [0.0, 1.0, 2.0], threshold=Explicit((0.5, 1.5)))


# --------------------------------------------------------------------------------------------------------------
# 5. Soundness
# --------------------------------------------------------------------------------------------------------------

R = 500
N_RUNS = 500  # runs per side
GAUSS_MU = 1.0
GAUSS_DELTA = 1e-5
RR_EPSILON = 1.0


def _violations_pass(violations: int, confidence: float) -> bool:
    return stats.binomtest(violations, R, 1 - confidence, alternative="greater").pvalue > 1e-3


@pytest.fixture(scope="module")
def gaussian_runs() -> list[tuple[np.ndarray, np.ndarray]]:
    # The Gaussian mechanism with sensitivity 1 and σ = 1/μ, rescaled: the target adds μ to N(0, 1) noise.
    rng = np.random.default_rng(20240504)
    return [(rng.normal(GAUSS_MU, 1.0, size=N_RUNS), rng.normal(0.0, 1.0, size=N_RUNS)) for _ in range(R)]


@pytest.fixture(scope="module")
def rr_runs() -> list[tuple[np.ndarray, np.ndarray]]:
    # One released bit per run: with the target the bit is 1 w.p. q = e^ε/(1 + e^ε), without it w.p. 1 - q.
    rng = np.random.default_rng(20240505)
    q = float(special.expit(RR_EPSILON))
    return [
        ((rng.random(N_RUNS) < q).astype(np.float64), (rng.random(N_RUNS) < 1 - q).astype(np.float64)) for _ in range(R)
    ]


@pytest.mark.parametrize("confidence", [0.95, 0.7])
def test_clopper_pearson_is_sound_on_the_gaussian_mechanism(
    gaussian_runs: list[tuple[np.ndarray, np.ndarray]], confidence: float
) -> None:
    true_eps = dp_accounting.get_epsilon_gaussian(1.0 / GAUSS_MU, GAUSS_DELTA)
    bounds = np.array(
        [
            audit_scores(a, b, threshold=Bonferroni(50), confidence=confidence, delta=GAUSS_DELTA).epsilon
            for a, b in gaussian_runs
        ]
    )
    violations = int(np.sum(bounds > true_eps))
    assert _violations_pass(violations, confidence), violations
    assert np.median(bounds) > 0.5  # the audit has power


@pytest.mark.parametrize("confidence", [0.95, 0.7])
def test_gdp_is_sound_on_the_gaussian_mechanism(
    gaussian_runs: list[tuple[np.ndarray, np.ndarray]], confidence: float
) -> None:
    true_eps = dp_accounting.get_epsilon_gaussian(1.0 / GAUSS_MU, GAUSS_DELTA)
    results = [
        gdp_audit_scores(a, b, threshold=Bonferroni(50), confidence=confidence, delta=GAUSS_DELTA)
        for a, b in gaussian_runs
    ]
    mus = np.array([r.details["mu"] for r in results])
    eps = np.array([r.epsilon for r in results])
    violations = int(np.sum(mus > GAUSS_MU))
    assert _violations_pass(violations, confidence), violations
    assert int(np.sum(eps > true_eps)) == violations  # ε is increasing in μ
    assert np.median(mus) > 0.6


@pytest.mark.parametrize("confidence", [0.95, 0.7])
def test_clopper_pearson_is_sound_on_randomized_response_runs(
    rr_runs: list[tuple[np.ndarray, np.ndarray]], confidence: float
) -> None:
    bounds = np.array([audit_scores(a, b, threshold=Explicit(0.5), confidence=confidence).epsilon for a, b in rr_runs])
    violations = int(np.sum(bounds > RR_EPSILON))
    assert _violations_pass(violations, confidence), violations
    assert np.median(bounds) > 0.7


def test_meta_point_estimate_fails_the_soundness_check(rr_runs: list[tuple[np.ndarray, np.ndarray]]) -> None:
    # THE BROKEN ESTIMATOR: ln((1 - FNR^) / FPR^) from the observed rates, without confidence bounds.
    violations = 0
    for a, b in rr_runs:
        fpr, fnr = float(np.mean(b >= 0.5)), float(np.mean(a < 0.5))
        point = math.inf if fpr == 0 else math.log((1 - fnr) / fpr)
        violations += point > RR_EPSILON
    assert not _violations_pass(violations, 0.95), violations
