"""The sequential audit of a grid point (games/sequential.py): what it reads (repetitions in order, up to a gap or
the budget), its verdicts, the columns it replaces, and the one-run summary in sequential mode."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from privgame.games._base import AnalysisSettings
from privgame.games.multi_run import MultiRunGame
from privgame.games.one_run import OneRunGame
from privgame.games.sequential import (
    UNDECIDED,
    bound_columns_of,
    check_sequential,
    exceedances,
    read_sequential,
    sequential_columns,
    sequential_stop,
    sequential_summary,
)


def _rows(bounds, repetitions=None, claim=1.0, labels=()):
    reps = list(range(len(bounds))) if repetitions is None else repetitions
    data = {"trial": reps, "grid_point": 0, "repetition": reps, "epsilon_analytic": claim, "epsilon_lb": bounds}
    for label in labels:
        data[f"{label}.epsilon_lb"] = bounds
    return pd.DataFrame(data)


def test_reads_in_repetition_order_and_stops_at_the_refutation():
    rows = _rows([2.0, 2.0, 2.0, 2.0]).iloc[::-1]  # stored in any order
    read = read_sequential(rows, 1.0, 0.95, budget=4)
    assert (read.result.stopped, read.result.trials) == (True, 2)
    assert read.rows["repetition"].tolist() == [0, 1]
    assert sequential_stop(rows, 1.0, 0.95, 4) == 1


def test_a_missing_repetition_ends_what_can_be_read():
    read = read_sequential(_rows([0.5, 2.0, 2.0], repetitions=[0, 2, 3]), 1.0, 0.95, budget=10)
    assert read.result.trials == 1 and not read.result.stopped
    assert sequential_summary(read, 0.95)["verdict"] == UNDECIDED
    assert read_sequential(_rows([2.0, 2.0], repetitions=[1, 2]), 1.0, 0.95, budget=10).result.trials == 0


def test_the_budget_caps_what_is_read_and_then_it_is_not_refuted():
    read = read_sequential(_rows([0.5] * 6), 1.0, 0.95, budget=4)
    assert read.result.trials == 4
    summary = sequential_summary(read, 0.95)
    assert summary["verdict"] == "not refuted"
    assert summary["sequential_trials"] == 4 and summary["sequential_budget"] == 4
    assert summary["sequential_e"] < 1


def test_no_claim_is_no_claim():
    read = read_sequential(_rows([2.0, 2.0]), math.nan, 0.95, budget=2)
    summary = sequential_summary(read, 0.95)
    assert summary["verdict"] == "no claim" and math.isnan(summary["sequential_e"])
    assert sequential_stop(_rows([2.0, 2.0]), math.nan, 0.95, 2) is None


def test_bets_on_every_estimator_or_the_games_own_bound():
    assert bound_columns_of(["epsilon_lb", "steinke.epsilon_lb", "fdp_pure.epsilon_lb", "m"]) == [
        "steinke.epsilon_lb",
        "fdp_pure.epsilon_lb",
    ]
    assert bound_columns_of(["epsilon_lb", "m"]) == ["epsilon_lb"]
    y = exceedances(_rows([2.0, np.nan, 0.5], labels=("a", "b")), 1.0)
    assert y.shape == (3, 2) and y[:, 0].tolist() == [True, False, False]
    with pytest.raises(ValueError, match="per-trial bounds"):
        exceedances(pd.DataFrame({"repetition": [0]}), 1.0)


def test_the_fixed_sample_columns_are_dropped_and_the_count_kept():
    top, rest = sequential_columns(
        {"over_claim": 3, "over_claim_allowed": 3, "verdict_p": 0.1, "verdict": "not refuted"},
        {"verdict": "refuted at 95 %", "sequential_e": 25.0, "sequential_trials": 4, "sequential_budget": 20},
        {"fdp.epsilon_lb_median": 1.0, "fdp.over_claim": 2, "fdp.verdict": "x", "fdp.verdict_p": 0.2},
    )
    assert top == {
        "over_claim": 3,
        "verdict": "refuted at 95 %",
        "sequential_e": 25.0,
        "sequential_trials": 4,
        "sequential_budget": 20,
    }
    assert rest == {"fdp.epsilon_lb_median": 1.0, "fdp.over_claim": 2}


def test_only_games_whose_every_trial_is_a_bound():
    assert check_sequential(OneRunGame(m=10, k_pos=1, k_neg=1)) is None
    problem = check_sequential(MultiRunGame(runs=4))
    assert problem is not None and "one-run" in problem and "multi-run" in problem


@pytest.mark.parametrize("custom", [False, True])
def test_the_one_run_summary_reads_what_the_test_read(custom):
    game = OneRunGame(m=10, k_pos=1, k_neg=1)
    rows = _rows([2.0, 2.0, 2.0, 0.1], claim=1.0, labels=("steinke", "fdp_pure") if custom else ())
    rows["steinke.ceiling" if custom else "ceiling"] = 5.0
    settings = AnalysisSettings(sequential=True, estimators=["steinke"] if custom else None).with_budget(4)
    summary = game.summarise(rows, settings, lambda t: None)
    assert summary["verdict"] == "refuted at 95 %"
    assert summary["n_trials"] == summary["sequential_trials"] == 2
    assert summary["epsilon_lb_min"] == 2.0  # the fourth trial, never read, is not summarised
    assert "verdict_p" not in summary and "over_claim_allowed" not in summary
    assert not any(k.endswith((".verdict", ".verdict_p", ".over_claim_allowed")) for k in summary)
    fixed = game.summarise(rows, AnalysisSettings(estimators=["steinke"] if custom else None), lambda t: None)
    assert fixed["n_trials"] == 4 and "verdict_p" in fixed and "sequential_e" not in fixed


def test_sequential_must_be_a_bool_and_only_its_budget_binds():
    with pytest.raises(ValueError, match="sequential must be true or false"):
        AnalysisSettings(sequential="yes")
    assert AnalysisSettings().with_budget(5).budget is None
    assert AnalysisSettings(sequential=True).with_budget(5).budget == 5
    assert AnalysisSettings(sequential=True).identity()["sequential"] is True
    assert "sequential" not in AnalysisSettings().identity()


def test_columns_that_are_not_guaranteed_bounds_are_never_bet_on():
    """An unmatched family (``_unmatched``: fdp_gaussian's "bound" exceeds randomized response's true ε in most
    trials) and the order-statistics audit on dependent canaries (``_dependent``) are not guaranteed bounds, and a
    parametric estimate is no bound at all: betting on them would refute true claims."""
    columns = [
        "epsilon_lb",
        "steinke.epsilon_lb",
        "fdp_gaussian_unmatched.epsilon_lb",
        "order_stats_dependent.epsilon_lb",
        "gauss_fit.epsilon_estimate",
    ]
    assert bound_columns_of(columns) == ["steinke.epsilon_lb"]
    assert bound_columns_of(["epsilon_lb", "fdp_gaussian_unmatched.epsilon_lb"]) == []
    rows = _rows([2.0, 2.0, 2.0], labels=("fdp_gaussian_unmatched",))
    with pytest.raises(ValueError, match="per-trial bounds"):
        exceedances(rows, 1.0)


def test_a_config_whose_estimators_give_no_guaranteed_bound_is_refused():
    from privgame.mechanisms import RandomizedResponse

    mechanism = RandomizedResponse(epsilon=1.0)
    game = OneRunGame(m=10, k_pos=1, k_neg=1)

    def settings(estimators):
        return AnalysisSettings(sequential=True, delta=1e-5, estimators=estimators, allow_unmatched_family=True).bind(
            mechanism.privacy_claim(), mechanism.canary_dependence
        )

    problem = check_sequential(game, settings(["fdp_gaussian", "gauss_fit"]))
    assert problem is not None
    assert "fdp_gaussian_unmatched" in problem and "not guaranteed" in problem and "\n" not in problem
    assert check_sequential(game, settings(["steinke", "fdp_gaussian"])) is None
    assert check_sequential(game, settings(["no_such_estimator"])) is None  # named by the estimators' own check
