"""Tests of ``privgame.analysis.one_run.audit_scores``: the one-run audit (Steinke, Nasr, Jagielski 2023,
arXiv:2305.08846) from the scores of the included and excluded canaries, with a threshold strategy.

* Deterministic cases against ``epsilon_lower_bound`` on hand-counted (m, r, v): Explicit one- and two-sided
  thresholds at the full β, perfect separation under Bonferroni at β/G, ties, all-equal scores, and a slow reference
  "loop over the label-free candidates" for Bonferroni.
* The result's fields, bad inputs, and the warning about the δ term 2mδ against the per-test significance β/G.
* Soundness: randomized response at ε = 1 in the one-run game (S_i ~ Bernoulli(1/2), the score is the released bit);
  the bound exceeds 1 no more often than β (binomial test at 1e-3), at confidence 0.95 and 0.7.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
from scipy import special, stats

from privgame.analysis._result import AuditResult
from privgame.analysis.one_run import audit_scores, epsilon_lower_bound
from privgame.analysis.thresholds import Bonferroni, Explicit, Split, quantile_thresholds, symmetric_quantile_pairs

BETA = 0.05
LEVELS_100 = np.arange(1, 101) / 101


def _elb(m: int, r: int, v: int, beta: float, delta: float = 0.0) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "no positive bound possible" for tiny r
        return epsilon_lower_bound(m, r, v, delta=delta, confidence=1.0 - beta)


def _counts_one_sided(ins: np.ndarray, outs: np.ndarray, t: float) -> tuple[int, int]:
    tp, fp = int(np.sum(ins >= t)), int(np.sum(outs >= t))
    return tp + fp, tp


def _counts_two_sided(ins: np.ndarray, outs: np.ndarray, t_low: float, t_high: float) -> tuple[int, int]:
    member_right, member_wrong = int(np.sum(ins >= t_high)), int(np.sum(outs >= t_high))
    non_right, non_wrong = int(np.sum(outs <= t_low)), int(np.sum(ins <= t_low))
    return member_right + member_wrong + non_right + non_wrong, member_right + non_right


def _reference_bonferroni(
    ins: np.ndarray, outs: np.ndarray, g: int | str, beta: float, two_sided: bool = False, delta: float = 0.0
) -> tuple[float, int]:
    """Slow reference: every label-free candidate tested at β/G by hand counts; the best bound and G."""
    pooled = np.concatenate([ins, outs])
    levels = None if g == "all" else np.arange(1, int(g) + 1) / (int(g) + 1)
    cands: list[Any] = symmetric_quantile_pairs(pooled, levels) if two_sided else quantile_thresholds(pooled, levels)
    m = pooled.size
    best = 0.0
    for c in cands:
        r, v = _counts_two_sided(ins, outs, *c) if two_sided else _counts_one_sided(ins, outs, c)
        best = max(best, _elb(m, r, v, beta / len(cands), delta))
    return best, len(cands)


# --------------------------------------------------------------------------------------------------------------
# 1. Deterministic cases
# --------------------------------------------------------------------------------------------------------------


def test_perfect_separation_bonferroni_guesses_only_members_at_beta_over_g() -> None:
    ins = 100.0 + np.arange(60.0)
    outs = np.arange(60.0)
    m = 120
    result = audit_scores(ins, outs, threshold=Bonferroni(100))
    g = len(quantile_thresholds(np.concatenate([ins, outs]), LEVELS_100))
    assert result.n_tests == g
    assert result.beta_per_test == pytest.approx(BETA / g, rel=1e-12)
    r, v = result.details["r"], result.details["v"]
    assert v == r > 0  # every guess correct at the chosen threshold
    assert result.threshold >= 100.0
    assert (r, v) == _counts_one_sided(ins, outs, result.threshold)
    assert result.epsilon == pytest.approx(_elb(m, r, r, BETA / g), abs=1e-9)
    # The lowest candidate above every non-member is the best: the most guesses, all correct.
    best = min(c for c in quantile_thresholds(np.concatenate([ins, outs]), LEVELS_100) if c >= 100.0)
    assert result.threshold == best
    assert result.epsilon > 0.5


@pytest.mark.parametrize("delta", [0.0, 1e-6])
@pytest.mark.parametrize("t", [-10.0, 0.0, 0.75, 1.3, 2.0, 10.0])
def test_explicit_one_sided_equals_epsilon_lower_bound_on_hand_counts(t: float, delta: float) -> None:
    rng = np.random.default_rng(31)
    ins = np.round(rng.normal(1.5, 1.0, size=120), 1)  # rounded: some scores equal t exactly
    outs = np.round(rng.normal(0.0, 1.0, size=100), 1)
    m = 220
    r, v = _counts_one_sided(ins, outs, t)
    result = audit_scores(ins, outs, threshold=Explicit(t), delta=delta, confidence=0.95)
    assert result.epsilon == pytest.approx(_elb(m, r, v, BETA, delta), abs=1e-9)
    assert (result.details["m"], result.details["r"], result.details["v"]) == (m, r, v)
    assert (result.threshold, result.n_tests, result.beta_per_test) == (t, 1, pytest.approx(BETA, rel=1e-12))


def test_explicit_one_sided_counts_scores_equal_to_the_threshold_as_member_guesses() -> None:
    ins = np.array([1.0, 2.0, 2.0, 2.0, 3.0])
    outs = np.array([0.0, 1.0, 2.0])
    result = audit_scores(ins, outs, threshold=Explicit(2.0))
    assert (result.details["r"], result.details["v"]) == (5, 4)  # members 2, 2, 2, 3 and the non-member 2


def test_explicit_two_sided_hand_counted() -> None:
    ins = np.array([0.0, 1.0, 2.0, 3.0, 5.0, 5.0, 6.0])
    outs = np.array([0.0, 0.0, 1.0, 2.0, 2.0, 4.0, 5.0])
    # "member" at >= 5: members 5, 5, 6 right, non-member 5 wrong; "non-member" at <= 1: non-members 0, 0, 1 right,
    # members 0, 1 wrong.
    result = audit_scores(ins, outs, threshold=Explicit((1.0, 5.0)), two_sided=True)
    assert (result.details["m"], result.details["r"], result.details["v"]) == (14, 9, 6)
    assert result.epsilon == pytest.approx(_elb(14, 9, 6, BETA), abs=1e-12)
    assert "two-sided" in result.method


@pytest.mark.parametrize(("t_low", "t_high"), [(-0.5, 2.5), (0.0, 1.0), (-1.2, 1.7), (-10.0, 10.0)])
def test_explicit_two_sided_equals_epsilon_lower_bound_on_hand_counts(t_low: float, t_high: float) -> None:
    rng = np.random.default_rng(32)
    ins = np.round(rng.normal(1.0, 1.0, size=200), 1)
    outs = np.round(rng.normal(-1.0, 1.0, size=200), 1)
    r, v = _counts_two_sided(ins, outs, t_low, t_high)
    result = audit_scores(ins, outs, threshold=Explicit((t_low, t_high)), two_sided=True)
    assert (result.details["r"], result.details["v"]) == (r, v)
    assert result.epsilon == pytest.approx(_elb(400, r, v, BETA), abs=1e-9)
    # The non-member guesses count: the one-sided audit at t_high sees fewer guesses.
    one_sided = audit_scores(ins, outs, threshold=Explicit(t_high))
    assert one_sided.details["r"] == r - int(np.sum(ins <= t_low) + np.sum(outs <= t_low))


@pytest.mark.parametrize("two_sided", [False, True])
@pytest.mark.parametrize("g", [7, 100, "all"])
def test_bonferroni_matches_slow_reference_with_ties(g: int | str, two_sided: bool) -> None:
    rng = np.random.default_rng(33)
    ins = np.round(rng.normal(1.0, 1.0, size=150))  # integer scores: heavy ties
    outs = np.round(rng.normal(0.0, 1.0, size=150))
    expected, n = _reference_bonferroni(ins, outs, g, BETA, two_sided)
    result = audit_scores(ins, outs, threshold=Bonferroni(g), two_sided=two_sided)  # type: ignore[arg-type]
    assert result.n_tests == n
    assert result.epsilon == pytest.approx(expected, abs=1e-9)
    assert result.epsilon > 0.0
    # Reordering the scores (ties included) changes nothing.
    again = audit_scores(rng.permutation(ins), rng.permutation(outs), threshold=Bonferroni(g), two_sided=two_sided)  # type: ignore[arg-type]
    assert (again.epsilon, again.threshold, dict(again.details)) == (
        result.epsilon,
        result.threshold,
        dict(result.details),
    )


@pytest.mark.parametrize(
    ("strategy", "two_sided"),
    [
        (Bonferroni(100), False),
        (Bonferroni("all"), False),
        (Explicit(3.0), False),
        (Split(seed=2), False),
        (Bonferroni(100), True),
        (Bonferroni("all"), True),
        (Explicit((3.0, 3.5)), True),
        (Explicit((2.0, 3.0)), True),
    ],
)
def test_all_equal_scores_give_zero(strategy: Any, two_sided: bool) -> None:
    result = audit_scores(np.full(50, 3.0), np.full(50, 3.0), threshold=strategy, two_sided=two_sided)
    assert result.epsilon == 0.0


def test_one_side_empty_is_allowed_and_gives_zero() -> None:
    assert audit_scores([], [0.1, 0.2, 0.3]).epsilon == 0.0
    only_members = audit_scores([0.1, 0.2, 0.3], [], threshold=Explicit(0.0))
    assert (only_members.details["r"], only_members.details["v"]) == (3, 3)
    assert only_members.epsilon == 0.0  # 3 correct guesses out of 3 cannot reject ε = 0 at 95 % (p = 1/8)
    # With enough canaries, all of them members, the guesses alone are evidence.
    assert audit_scores(np.ones(20), [], threshold=Explicit(0.5)).epsilon == pytest.approx(_elb(20, 20, 20, BETA))


def test_integer_and_boolean_scores_are_accepted() -> None:
    a = audit_scores([1] * 40, [0] * 40, threshold=Explicit(0.5))
    b = audit_scores(np.ones(40, dtype=bool), np.zeros(40, dtype=bool), threshold=Explicit(0.5))
    assert a.epsilon == b.epsilon == pytest.approx(_elb(80, 40, 40, BETA), abs=1e-12)


def test_confidence_and_delta_are_used() -> None:
    ins, outs = 1.0 + np.arange(40.0), -np.arange(40.0)
    low = audit_scores(ins, outs, threshold=Explicit(0.5), confidence=0.99)
    high = audit_scores(ins, outs, threshold=Explicit(0.5), confidence=0.8)
    assert low.epsilon == pytest.approx(_elb(80, 40, 40, 0.01), abs=1e-12)
    assert high.epsilon == pytest.approx(_elb(80, 40, 40, 0.2), abs=1e-12)
    assert low.epsilon < high.epsilon
    with_delta = audit_scores(ins, outs, threshold=Explicit(0.5), delta=1e-5)
    assert with_delta.epsilon == pytest.approx(_elb(80, 40, 40, BETA, 1e-5), abs=1e-12)


# --------------------------------------------------------------------------------------------------------------
# 2. Fields of the result
# --------------------------------------------------------------------------------------------------------------


def test_result_fields_bonferroni() -> None:
    rng = np.random.default_rng(34)
    ins, outs = rng.normal(1.0, 1.0, size=130), rng.normal(0.0, 1.0, size=110)
    result = audit_scores(ins, outs, threshold=Bonferroni(40), confidence=0.9, delta=1e-7)
    cands = quantile_thresholds(np.concatenate([ins, outs]), np.arange(1, 41) / 41)
    assert isinstance(result, AuditResult)
    assert (result.n_in, result.n_out, result.confidence, result.delta) == (130, 110, 0.9, 1e-7)
    assert "one-run" in result.method and "2305.08846" in result.method
    assert result.threshold in cands
    assert result.n_tests == len(cands) == 40
    assert result.beta_per_test == pytest.approx(0.1 / 40, rel=1e-12)
    assert "Bonferroni" in result.strategy and "40" in result.strategy
    r, v = _counts_one_sided(ins, outs, result.threshold)
    assert dict(result.details) == {"m": 240, "r": r, "v": v}
    assert result.epsilon == pytest.approx(_elb(240, r, v, 0.1 / 40, 1e-7), abs=1e-9)


def test_default_threshold_is_bonferroni_100() -> None:
    rng = np.random.default_rng(35)
    ins, outs = rng.normal(1.0, 1.0, size=100), rng.normal(0.0, 1.0, size=100)
    assert audit_scores(ins, outs) == audit_scores(ins, outs, threshold=Bonferroni(100))


def test_result_fields_split_report_the_held_out_test() -> None:
    rng = np.random.default_rng(36)
    ins, outs = rng.normal(2.0, 1.0, size=200), rng.normal(0.0, 1.0, size=200)
    result = audit_scores(ins, outs, threshold=Split(fraction=0.5, seed=7))
    assert (result.n_in, result.n_out) == (200, 200)
    assert (result.n_tests, result.beta_per_test) == (1, pytest.approx(BETA, rel=1e-12))
    assert "split" in result.strategy
    m_held = result.details["m"]
    assert 100 < m_held < 300  # about half of 400 (Binomial(400, 1/2): 10 sd)
    assert result.epsilon == pytest.approx(_elb(m_held, result.details["r"], result.details["v"], BETA), abs=1e-9)
    assert result.epsilon > 0.0
    assert audit_scores(ins, outs, threshold=Split(fraction=0.5, seed=7)) == result


# --------------------------------------------------------------------------------------------------------------
# 3. Bad inputs
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("side", ["in_scores", "out_scores"])
def test_non_finite_scores_raise_naming_the_array(bad: float, side: str) -> None:
    good = [0.0, 1.0, 2.0]
    args: dict[str, Any] = {"in_scores": good, "out_scores": good, side: [0.0, bad, 1.0]}
    with pytest.raises(ValueError, match=rf"^{side} must be finite, got "):
        audit_scores(**args)


def test_both_empty_raises() -> None:
    with pytest.raises(ValueError, match="must not both be empty"):
        audit_scores([], [])


@pytest.mark.parametrize("side", ["in_scores", "out_scores"])
def test_two_dimensional_scores_raise(side: str) -> None:
    args: dict[str, Any] = {"in_scores": [0.0, 1.0], "out_scores": [0.0, 1.0], side: [[0.0, 1.0], [2.0, 3.0]]}
    with pytest.raises(ValueError, match=rf"^{side} must be a 1-d array"):
        audit_scores(**args)


def test_non_numeric_scores_raise_type_error() -> None:
    with pytest.raises(TypeError, match=r"^in_scores must hold real numbers"):
        audit_scores(["a", "b"], [0.0])


@pytest.mark.parametrize("confidence", [0.0, 1.0, -0.5, 1.5, math.nan])
def test_bad_confidence_raises(confidence: float) -> None:
    with pytest.raises(ValueError, match=r"^confidence must be in \(0, 1\), got "):
        audit_scores([1.0], [0.0], confidence=confidence)


@pytest.mark.parametrize("delta", [-1e-9, 1.0, 2.0, math.nan])
def test_bad_delta_raises(delta: float) -> None:
    with pytest.raises(ValueError, match=r"^delta must be in \[0, 1\), got "):
        audit_scores([1.0], [0.0], delta=delta)


@pytest.mark.parametrize("threshold", [0.5, 1, "all", (0.0, 1.0), Bonferroni])
def test_bare_threshold_raises_type_error(threshold: object) -> None:
    with pytest.raises(TypeError, match=r"^threshold must be a ThresholdStrategy"):
        audit_scores([1.0], [0.0], threshold=threshold)  # type: ignore[arg-type]


@pytest.mark.parametrize(("threshold", "two_sided"), [(Explicit((0.0, 1.0)), False), (Explicit(0.5), True)])
def test_threshold_of_the_wrong_form_raises_naming_threshold(threshold: Explicit, two_sided: bool) -> None:
    with pytest.raises((TypeError, ValueError), match="threshold"):
        audit_scores([1.0, 2.0, 3.0], [0.0, 1.0, 2.0], threshold=threshold, two_sided=two_sided)


def test_two_sided_overlapping_explicit_pair_is_refused() -> None:
    # t_low >= t_high would guess the examples in [t_high, t_low] both "member" and "non-member" (r > m).
    with pytest.raises(ValueError, match="threshold"):
        audit_scores([1.0, 2.0, 3.0], [0.0, 1.0, 2.0], threshold=Explicit((2.0, 1.0)), two_sided=True)


@pytest.mark.parametrize(
    "scores", [([5.0] * 10, [5.0] * 10), ([7.0] * 3, [7.0] * 5), ([1.0, 2.0, 2.0, 2.0], [2.0, 2.0, 3.0])]
)
@pytest.mark.parametrize("strategy", [Bonferroni("all"), Bonferroni(100), Split(seed=4)])
def test_two_sided_candidates_never_guess_an_example_twice(
    scores: tuple[list[float], list[float]], strategy: Any
) -> None:
    result = audit_scores(*scores, threshold=strategy, two_sided=True)
    assert result.details["r"] <= result.details["m"]
    assert result.epsilon == 0.0


def test_two_sided_with_one_odd_score_out_of_many() -> None:
    # 299 ones and one zero: no quantile pair separates two values at the 100 levels; the audit still runs.
    ins, outs = np.ones(150), np.r_[np.ones(149), 0.0]
    result = audit_scores(ins, outs, two_sided=True)
    assert result.details["r"] <= result.details["m"] == 300
    assert result.epsilon == 0.0


# --------------------------------------------------------------------------------------------------------------
# 4. The δ-term warning (SPEC §1: keep 2mδ well below the per-test significance)
# --------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big_null() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(37)
    scores = rng.normal(size=20_000)
    member = rng.random(20_000) < 0.5
    return scores[member], scores[~member]


def test_warns_when_two_m_delta_swamps_beta_over_g(big_null: tuple[np.ndarray, np.ndarray]) -> None:
    with pytest.warns(UserWarning, match=r"2·m·δ = 0\.04 .* per-test significance 0\.0005"):
        audit_scores(*big_null, delta=1e-6, threshold=Bonferroni(100))


def test_delta_warning_uses_the_per_test_significance(big_null: tuple[np.ndarray, np.ndarray]) -> None:
    # 2mδ = 4e-4: small against β = 0.05 (one explicit test), not against β/100 = 5e-4.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        audit_scores(*big_null, delta=1e-8, threshold=Explicit(0.0))
        audit_scores(*big_null, delta=0.0, threshold=Bonferroni(100))
    with pytest.warns(UserWarning, match=r"2·m·δ"):
        audit_scores(*big_null, delta=1e-8, threshold=Bonferroni(100))


# --------------------------------------------------------------------------------------------------------------
# 5. Soundness: randomized response at ε = 1 in the one-run game
# --------------------------------------------------------------------------------------------------------------

RR_EPSILON = 1.0
RR_M = 1000
RR_R = 300


@pytest.fixture(scope="module")
def rr_audits() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(20240503)
    truth = float(special.expit(RR_EPSILON))  # report the true bit with probability e^ε / (1 + e^ε)
    data = []
    for _ in range(RR_R):
        member = rng.random(RR_M) < 0.5  # S_i ~ Bernoulli(1/2)
        released = np.where(rng.random(RR_M) < truth, member, ~member).astype(np.float64)
        data.append((released[member], released[~member]))  # the score is the released bit, nothing else
    return data


@pytest.mark.parametrize("two_sided", [False, True], ids=["one-sided", "two-sided"])
@pytest.mark.parametrize("confidence", [0.95, 0.7])
def test_randomized_response_bound_is_sound(
    rr_audits: list[tuple[np.ndarray, np.ndarray]], confidence: float, two_sided: bool
) -> None:
    bounds = np.array(
        [
            audit_scores(a, b, threshold=Bonferroni(20), confidence=confidence, two_sided=two_sided).epsilon
            for a, b in rr_audits
        ]
    )
    violations = int(np.sum(bounds > RR_EPSILON))
    assert stats.binomtest(violations, RR_R, 1 - confidence, alternative="greater").pvalue > 1e-3, violations
    # The audit has power: the typical bound is well above 0 (RR at ε = 1 with 1000 canaries).
    assert np.median(bounds) > 0.5
