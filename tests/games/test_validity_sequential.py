"""The sequential audit's validity harness (games/validity_sequential.py): the level under true claims read after
every trial over 500 experiments per scenario, the naive monitor caught, and the trials needed on broken claims
against the fixed-sample test's."""

from __future__ import annotations

import math

import pytest

from privgame.engine.cli import main
from privgame.games.validity_sequential import SequentialScenario, validate_sequential


def test_the_table_has_its_columns_and_refuses_bad_sizes():
    table = validate_sequential(
        experiments=20, budget=5, m=200, scenarios=[SequentialScenario("rr-2-claims-1", 2.0, 1.0)]
    )
    assert table.loc[0, "scenario"] == "rr-2-claims-1" and not table.loc[0, "true_claim"]
    assert table.loc[0, "fixed_trials"] == 5 and 0 <= table.loc[0, "refuted_rate"] <= 1
    with pytest.raises(ValueError, match="experiments"):
        validate_sequential(experiments=0)
    with pytest.raises(ValueError, match="budget"):
        validate_sequential(budget=0)


@pytest.mark.slow
def test_level_under_continuous_monitoring_and_trials_to_refute():
    """500 experiments of up to 20 one-run audits per scenario (m = 1,000, Steinke's bound at 95 %).  True claims:
    the sequential test refutes in at most 5 % (binomial test p > 1e-3; the Bernoulli worst case too), while the naive
    monitor refutes more often than the sequential test on the worst case.  Broken claims (randomized response at
    ε = 2 and 1.5 claiming 1): refuted in at least 95 % of experiments, in a median of at most 3 trials against the
    fixed-sample test's 20."""
    table = validate_sequential(experiments=500, budget=20, seed=11).set_index("scenario")
    true = table[table["true_claim"]]
    assert set(true.index) == {"bernoulli", "rr-1", "rr-4"}
    assert (true["p_value"] > 1e-3).all(), true
    assert (true["refuted_rate"] <= 0.05).all(), true
    assert table.loc["bernoulli", "naive_refuted_rate"] > 2 * table.loc["bernoulli", "refuted_rate"]
    for name in ("rr-2-claims-1", "rr-1.5-claims-1"):
        row = table.loc[name]
        assert row["refuted_rate"] >= 0.95 and row["trials_median"] <= 3 < row["fixed_trials"], row
    weak = table.loc["rr-1.2-claims-1"]
    assert not math.isnan(weak["trials_median"]) and weak["trials_median"] < weak["fixed_trials"]


def test_the_cli_runs_it(tmp_path, capsys):
    out = tmp_path / "seq.csv"
    code = main(["validate", "--sequential", "--repetitions", "10", "--format", "csv", "--output", str(out)])
    assert code == 0  # seed 0: no true claim refuted in 10 experiments (p > 1e-3 needs at most 2)
    assert "true-claim scenarios keep the level" in capsys.readouterr().err
    assert out.read_text().startswith("scenario,")
