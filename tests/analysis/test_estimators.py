"""The estimators a config names, resolved against the mechanism's claim (privgame.analysis.estimators,
privgame.analysis.families).

The mechanism-matched family is pure for randomized response and PrivBayes, Gaussian for the Gaussian mechanism and
DP-SGD's own PLD for DP-SGD; a named family that does not contain the mechanism's curve is refused (it can bound
above the true ε: SPEC §1's 1.646 at ε = 1, reproduced here) unless allowed, and then labelled; every other invalid
request is one line naming what is valid.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from privgame.analysis import fdp, multi_run, one_run, order_stats
from privgame.analysis.estimators import ESTIMATORS, bound_from_counts, bound_from_scores, resolve_estimators
from privgame.analysis.thresholds import Explicit
from tests.analysis.conftest import DPSGD, GAUSSIAN, RR


def test_resolution_labels_the_matched_family_after_it():
    labels = [e.label for e in resolve_estimators(["steinke", "fdp"], DPSGD, delta=1e-5, has_runs=False)]
    assert labels == ["steinke", "fdp_pld"]
    assert [e.label for e in resolve_estimators(["fdp"], GAUSSIAN, delta=1e-5, has_runs=False)] == ["fdp_gaussian"]
    assert [e.label for e in resolve_estimators(["fdp"], RR, delta=0.0, has_runs=False)] == ["fdp_pure"]
    # the pure family is sound for any claim, so naming it is never refused
    assert [e.label for e in resolve_estimators(["fdp_pure"], DPSGD, delta=1e-5, has_runs=False)] == ["fdp_pure"]
    runs = resolve_estimators(["clopper_pearson", "gdp"], GAUSSIAN, delta=1e-5, has_runs=True)
    assert [e.label for e in runs] == ["clopper_pearson", "gdp"]


def test_a_mismatched_family_is_refused_unless_allowed_and_then_labelled_and_overshoots():
    with pytest.raises(ValueError, match="allow_unmatched_family = true") as info:
        resolve_estimators(["fdp_gaussian"], RR, delta=1e-5, has_runs=False)
    assert "its own family is 'pure'" in str(info.value) and "\n" not in str(info.value)
    (unmatched,) = resolve_estimators(["fdp_gaussian"], RR, delta=1e-5, has_runs=False, allow_unmatched_family=True)
    (matched,) = resolve_estimators(["fdp"], RR, delta=1e-5, has_runs=False)
    assert unmatched.label == "fdp_gaussian_unmatched"
    # SPEC §1: randomized response at ε = 1, m = r = 10⁴ and the expected 7311 correct guesses
    wrong = bound_from_counts(unmatched, 10_000, 10_000, 7311, confidence=0.95, delta=1e-5)
    right = bound_from_counts(matched, 10_000, 10_000, 7311, confidence=0.95, delta=1e-5)
    assert round(wrong, 3) == 1.646 and right < 1.0 < wrong
    with pytest.raises(ValueError, match="'gdp' may bound above"):
        resolve_estimators(["gdp"], RR, delta=1e-5, has_runs=True)
    with pytest.raises(ValueError, match="'fdp_gaussian' may bound above"):
        resolve_estimators(["fdp_gaussian"], DPSGD, delta=1e-5, has_runs=False)  # the CLT approximation of DP-SGD


@pytest.mark.parametrize(
    ("names", "claim", "delta", "has_runs", "message"),
    [
        (["stienke"], RR, 0.0, False, "unknown estimator 'stienke'; valid: " + ", ".join(ESTIMATORS)),
        ([], RR, 0.0, False, "at least one of"),
        ("steinke", RR, 0.0, False, "must be a list of names"),
        (["steinke", "steinke"], RR, 0.0, False, "named twice"),
        (["fdp", "fdp_pure"], RR, 0.0, False, "are the same bound here \\(fdp_pure\\)"),
        (["clopper_pearson"], RR, 0.0, False, "needs repeated runs"),
        (["steinke"], RR, 0.0, True, "bounds one run on m canaries"),
        (["fdp"], GAUSSIAN, 0.0, False, r"needs \[analysis\] delta > 0"),
        (["gdp"], GAUSSIAN, 0.0, True, r"set \[analysis\] delta"),
        (["fdp"], None, 1e-5, False, "none is known for this mechanism"),
        (["fdp_pld"], GAUSSIAN, 1e-5, False, "'fdp_pld' may bound above"),
        (["gauss_fit"], GAUSSIAN, 1e-5, False, "'gauss_fit' is an estimate .*name a bound as well .*steinke"),
        (["steinke", "gauss_fit"], GAUSSIAN, 0.0, False, r"'gauss_fit' needs \[analysis\] delta > 0"),
        (["clopper_pearson", "gauss_fit"], GAUSSIAN, 1e-5, True, "'gauss_fit' is an estimate from one run's"),
        (["gauss_fit", "steinke", "gauss_fit"], GAUSSIAN, 1e-5, False, "'gauss_fit' is named twice"),
    ],
)
def test_invalid_requests_are_one_line_each(names, claim, delta, has_runs, message):
    with pytest.raises(ValueError, match=message) as info:
        resolve_estimators(names, claim, delta=delta, has_runs=has_runs)
    assert "\n" not in str(info.value)


def test_pld_named_for_a_non_dpsgd_mechanism_is_refused_even_when_unmatched_families_are_allowed():
    with pytest.raises(ValueError, match="pld family is DP-SGD's own"):
        resolve_estimators(["fdp_pld"], GAUSSIAN, delta=1e-5, has_runs=False, allow_unmatched_family=True)


def test_bounds_are_the_underlying_estimators():
    (steinke, matched) = resolve_estimators(["steinke", "fdp"], RR, delta=0.0, has_runs=False)
    assert bound_from_counts(steinke, 1000, 200, 150, confidence=0.9, delta=0.0) == one_run.epsilon_lower_bound(
        1000, 200, 150, delta=0.0, confidence=0.9
    )
    want = fdp.epsilon_lower_bound(1000, 200, 150, family="pure", confidence=0.9).epsilon
    assert bound_from_counts(matched, 1000, 200, 150, confidence=0.9, delta=0.0) == want
    rng = np.random.default_rng(0)
    ins, outs = rng.normal(1.0, 1.0, 400), rng.normal(0.0, 1.0, 400)
    t = Explicit(1.0)
    got = bound_from_scores(steinke, ins, outs, confidence=0.9, delta=0.0, threshold=t)
    assert got.epsilon == one_run.audit_scores(ins, outs, confidence=0.9, threshold=t).epsilon
    (cp, gdp) = resolve_estimators(["clopper_pearson", "gdp"], GAUSSIAN, delta=1e-5, has_runs=True)
    got = bound_from_scores(cp, ins, outs, confidence=0.9, delta=1e-5, threshold=t)
    assert got.epsilon == multi_run.audit_scores(ins, outs, confidence=0.9, delta=1e-5, threshold=t).epsilon
    got = bound_from_scores(gdp, ins, outs, confidence=0.9, delta=1e-5, threshold=t)
    assert math.isfinite(got.epsilon) and got.epsilon > 0.0
    with pytest.raises(ValueError, match="bounds repeated runs"):
        bound_from_counts(cp, 10, 5, 4, confidence=0.9, delta=1e-5)


def test_order_stats_is_named_after_its_family_and_runs_the_order_statistics_test():
    labels = [
        e.label for e in resolve_estimators(["fdp", "order_stats"], DPSGD, delta=1e-5, has_runs=False, dependence=None)
    ]
    assert labels == ["fdp_pld", "order_stats_pld"]
    (pure,) = resolve_estimators(["order_stats"], RR, delta=0.0, has_runs=False, dependence=None)
    assert pure.label == "order_stats_pure" and pure.test == "order_stats"
    want = order_stats.epsilon_lower_bound(1000, 200, 150, family="pure", confidence=0.9).epsilon
    assert bound_from_counts(pure, 1000, 200, 150, confidence=0.9, delta=0.0) == want
    rng = np.random.default_rng(1)
    ins, outs = rng.normal(1.0, 1.0, 400), rng.normal(0.0, 1.0, 400)
    (gauss,) = resolve_estimators(["order_stats"], GAUSSIAN, delta=1e-5, has_runs=False, dependence=None)
    got = bound_from_scores(gauss, ins, outs, confidence=0.9, delta=1e-5, threshold=Explicit(1.0))
    assert got.method.startswith(order_stats.METHOD)
    with pytest.raises(ValueError, match="same bound here \\(order_stats_pure\\)"):
        resolve_estimators(["order_stats", "order_stats_pure"], RR, delta=0.0, has_runs=False, dependence=None)


def test_order_stats_on_dependent_canaries_is_refused_unless_allowed_and_then_labelled():
    reason = "its canaries are examples trained into one shared model"
    with pytest.raises(ValueError, match="allow_dependent_canaries = true") as info:
        resolve_estimators(["steinke", "order_stats"], DPSGD, delta=1e-5, has_runs=False, dependence=reason)
    assert reason in str(info.value) and "\n" not in str(info.value)
    # a caller that cannot ask the mechanism is refused too: independence must be declared
    with pytest.raises(ValueError, match="does not declare its canaries independent"):
        resolve_estimators(["order_stats"], DPSGD, delta=1e-5, has_runs=False)
    forced = resolve_estimators(
        ["steinke", "order_stats"], DPSGD, delta=1e-5, has_runs=False, dependence=reason, allow_dependent_canaries=True
    )
    assert [e.label for e in forced] == ["steinke", "order_stats_pld_dependent"]
    # the other estimators do not depend on the canaries' independence
    assert [e.label for e in resolve_estimators(["fdp"], DPSGD, delta=1e-5, has_runs=False, dependence=reason)] == [
        "fdp_pld"
    ]


def test_the_gaussian_fit_is_an_estimate_with_no_bound():
    """gauss_fit resolves (after or before a bound) to an estimate: no family, no bound from counts or scores, and
    its fit is :func:`privgame.analysis.gaussian_fit.gaussian_fit`'s."""
    from privgame.analysis.estimators import ESTIMATES, estimate_from_scores
    from privgame.analysis.gaussian_fit import gaussian_fit

    assert ESTIMATES == ("gauss_fit",) and "gauss_fit" in ESTIMATORS
    fit, steinke = resolve_estimators(["gauss_fit", "steinke"], GAUSSIAN, delta=1e-5, has_runs=False)
    assert (fit.label, fit.family, fit.is_estimate, steinke.is_estimate) == ("gauss_fit", None, True, False)
    with pytest.raises(ValueError, match="is an estimate from scores, not a bound from guess counts"):
        bound_from_counts(fit, 100, 10, 8, confidence=0.95, delta=1e-5)
    rng = np.random.default_rng(1)
    ins, outs = rng.normal(1.0, 1.0, 200), rng.normal(0.0, 1.0, 200)
    with pytest.raises(ValueError, match="is an estimate, not a bound: use estimate_from_scores"):
        bound_from_scores(fit, ins, outs, confidence=0.95, delta=1e-5)
    with pytest.raises(ValueError, match="'steinke' is a bound"):
        estimate_from_scores(steinke, ins, outs, confidence=0.95, delta=1e-5)
    assert estimate_from_scores(fit, ins, outs, confidence=0.9, delta=1e-5) == gaussian_fit(
        ins, outs, delta=1e-5, confidence=0.9
    )
