"""The validity harness: its table, its CLI, and (slow) the full check that gates every landing."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from games.cli import main
from games.validity import ESTIMATORS, INVALID_ESTIMATORS, default_scenarios, register_estimator, validate

COLUMNS = [
    "scenario", "estimator", "strategy", "confidence", "R", "violations", "rate", "rate_low", "rate_high",
    "promised", "p_value", "ok",
]  # fmt: skip


def test_table_shape_and_bookkeeping():
    table = validate(repetitions=4, confidences=(0.9,), estimators=["one-run", "multi-run GDP (mu)"])
    assert list(table.columns) == COLUMNS
    assert (table["R"] == 4).all()
    assert ((table["rate"] >= table["rate_low"]) & (table["rate"] <= table["rate_high"])).all()
    # GDP estimators are only run where μ is known (Gaussian and null), never on randomized response
    gdp = table[table["estimator"] == "multi-run GDP (mu)"]
    assert set(gdp["scenario"]) == {"gaussian mu=2", "null"}
    panoramia = table[table["estimator"].str.startswith("PANORAMIA")]
    assert panoramia["promised"].tolist() == pytest.approx([0.05] * len(panoramia))  # each bound gets β/2
    others = table.loc[~table["estimator"].str.startswith("PANORAMIA"), "promised"]
    assert others.tolist() == pytest.approx([0.1] * len(others))


def test_same_seed_same_table_any_n_jobs():
    kwargs = {"repetitions": 3, "confidences": (0.95,), "estimators": ["one-run"], "seed": 5}
    a = validate(**kwargs, n_jobs=1)
    b = validate(**kwargs, n_jobs=2)
    pd.testing.assert_frame_equal(a, b)


def test_unknown_estimator_and_duplicate_registration():
    with pytest.raises(ValueError, match="estimators must be among"):
        validate(repetitions=1, estimators=["nope"])
    with pytest.raises(ValueError, match="already in the validity harness"):
        register_estimator("one-run", ESTIMATORS["one-run"])


def test_scenarios_have_known_truth():
    scenarios = {s.name: s for s in default_scenarios()}
    assert scenarios["randomized-response eps=1"].epsilon == 1.0
    assert scenarios["null"].epsilon == 0.0 and scenarios["null"].mu == 0.0
    assert scenarios["gaussian mu=2"].mu == 2.0 and scenarios["gaussian mu=2"].epsilon > 2.0


def test_cli_validate_small(capsys):
    code = main(["validate", "--repetitions", "3", "--confidence", "0.9", "--format", "csv"])
    captured = capsys.readouterr()
    assert code == 0
    assert captured.out.startswith("scenario,estimator,strategy")
    assert "keep their promise" in captured.err


def test_cli_validate_bad_repetitions(capsys):
    assert main(["validate", "--repetitions", "0"]) == 2
    assert "--repetitions must be at least 1" in capsys.readouterr().err


@pytest.mark.slow
def test_every_estimator_keeps_its_promise_and_invalid_ones_are_caught():
    """R = 500 audits of every estimator × strategy × scenario at confidence 0.95 and 0.7 (SPEC, issue 3)."""
    table = validate(repetitions=500, confidences=(0.95, 0.7), include_invalid=True, n_jobs=2)
    valid = ~table["estimator"].str.startswith("INVALID")
    failures = table[valid & ~table["ok"]]
    assert failures.empty, failures.to_string()
    for name in INVALID_ESTIMATORS:
        assert not table[table["estimator"] == name]["ok"].all(), f"{name} was not caught"


def test_the_dpsgd_scenario_and_its_pld_estimator():
    scenario = {s.name: s for s in default_scenarios()}["dpsgd q=0.5 T=4 sigma=0.8"]
    claim = scenario.mechanism.privacy_claim()
    assert scenario.epsilon == claim.epsilon(1e-5) and scenario.mu is None
    table = validate(repetitions=3, confidences=(0.7,), estimators=["f-DP one-run, PLD (own q, T)"])
    pld = table[table["estimator"] == "f-DP one-run, PLD (own q, T)"]
    assert set(pld["scenario"]) == {scenario.name}  # its family exists only for the DP-SGD claim
    assert set(pld["strategy"]) == {"explicit", "bonferroni"}


@pytest.mark.slow  # each full audit searches the PLD family (a PLD composition per step)
def test_the_pld_violation_check_is_the_full_audits():
    """The bound exceeds the truth exactly when the true curve is rejected: the cheap check equals the search."""
    from analysis import fdp
    from analysis.families import family_for_claim
    from analysis.thresholds import Bonferroni, Explicit
    from games.validity import _pld_violates

    scenario = {s.name: s for s in default_scenarios()}["dpsgd q=0.5 T=4 sigma=0.8"]
    claim = scenario.mechanism.privacy_claim()
    family = family_for_claim("pld", claim, 1e-5)
    seen = set()
    rng = np.random.default_rng(8)
    for leak in (0.0, 8.0):  # the mechanism itself, and a leak far beyond its claim (violations)
        member = rng.random(1000) < 0.5
        scores = scenario.mechanism.release(member, rng=rng) + leak * member
        a, b = scores[member], scores[~member]
        for strategy in (Explicit(1.0), Bonferroni(10)):
            bound = fdp.audit_scores(a, b, family=family, confidence=0.7, threshold=strategy).details["parameter"]
            violated = bound > 1 / 0.8 + 1e-9
            assert _pld_violates(a, b, 0.7, strategy, claim, 1e-5) == violated
            seen.add(violated)
    assert seen == {True, False}  # both outcomes checked
