"""The sequential test (analysis/sequential.py): its e-process in closed form, its stopping rule, its level under
continuous monitoring against the worst case of the null (where the naive monitor is caught), and its power."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privgame.analysis.sequential import BETS, e_process, sequential_test, ville_threshold
from privgame.analysis.verdict import allowed_exceedances


def _closed_form(exceeded: list[bool], alpha: float) -> float:
    """The mixture's wealth after the trials, term by term."""
    return float(np.mean([math.prod(1.0 + (b / alpha) * (float(y) - alpha) for y in exceeded) for b in BETS]))


@pytest.mark.parametrize("exceeded", [[True], [False], [True, False, True], [False] * 5 + [True] * 2])
@pytest.mark.parametrize("alpha", [0.05, 0.3])
def test_the_e_process_is_the_mixture_of_betting_wealths(exceeded, alpha):
    e = e_process(exceeded, alpha)
    assert e.shape == (len(exceeded),)
    for t in range(len(exceeded)):
        assert e[t] == pytest.approx(_closed_form(exceeded[: t + 1], alpha), rel=1e-12)


def test_several_estimators_average_their_wealths():
    y = np.array([[True, False], [True, True], [False, True]])
    both = e_process(y, 0.05)
    np.testing.assert_allclose(both, (e_process(y[:, 0], 0.05) + e_process(y[:, 1], 0.05)) / 2, rtol=1e-12)


def test_nan_counts_as_no_exceedance():
    np.testing.assert_array_equal(e_process([np.nan, 1.0], 0.05), e_process([False, True], 0.05))


def test_every_trial_above_the_claim_refutes_after_two():
    r = sequential_test([True] * 10, 0.95)
    assert (r.stopped, r.trials) == (True, 2)
    assert r.e_value >= ville_threshold(0.95) == pytest.approx(20.0)
    assert r.e_values.shape == (2,)


def test_nothing_above_the_claim_never_refutes_and_reads_everything():
    r = sequential_test([False] * 30, 0.95)
    assert (r.stopped, r.trials) == (False, 30)
    assert r.e_value < 1.0


def test_no_trial_reads_nothing():
    r = sequential_test(np.zeros(0, dtype=bool), 0.95)
    assert (r.stopped, r.trials, r.e_value) == (False, 0, 1.0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"exceeded": [True], "alpha": 0.0}, "alpha"),
        ({"exceeded": [True], "alpha": 1.0}, "alpha"),
        ({"exceeded": [True], "alpha": math.nan}, "alpha"),
        ({"exceeded": np.zeros((2, 2, 2)), "alpha": 0.05}, "shape"),
        ({"exceeded": np.zeros((2, 0)), "alpha": 0.05}, "at least one estimator"),
    ],
)
def test_bad_input_is_refused_in_one_line(kwargs, match):
    with pytest.raises(ValueError, match=match):
        e_process(**kwargs)


def test_a_bad_confidence_is_refused():
    with pytest.raises(ValueError, match="confidence"):
        sequential_test([True], 1.5)


def test_level_under_continuous_monitoring_at_the_worst_case_of_the_null():
    """4,000 experiments of up to 200 trials, each trial exceeding a true claim with probability exactly α (what an
    exact estimator at the edge of its promise does), the test read after every trial: it says "refuted" in at most
    α of them (Ville).  The naive monitor — the fixed-sample binomial test read after every trial — is caught far
    above α on the same trials, so this test can fail.  Sizing: SE of a rate near 0.05 over 4,000 is 0.0034; the
    limit is α + 4 SE."""
    alpha, n, budget = 0.05, 4000, 200
    y = np.random.default_rng(20261205).random((n, budget)) < alpha
    refuted = sum(sequential_test(row, 1 - alpha).stopped for row in y)
    limit = alpha + 4 * math.sqrt(alpha * (1 - alpha) / n)
    assert refuted / n <= limit
    allowed = np.array([allowed_exceedances(t + 1, alpha) for t in range(budget)])
    naive = np.mean((np.cumsum(y, axis=1) > allowed).any(axis=1))
    assert naive > 2 * alpha


def test_power_a_third_of_trials_above_the_claim_refutes_well_before_thirty():
    """Exceedance rate 1/3 (a claim only just false): the sequential test refutes within 30 trials in nearly every
    experiment and needs about 10 (median), where the fixed-sample test reads all 30."""
    y = np.random.default_rng(5).random((500, 30)) < 1 / 3
    results = [sequential_test(row, 0.95) for row in y]
    assert np.mean([r.stopped for r in results]) > 0.9
    assert np.median([r.trials for r in results if r.stopped]) <= 15
