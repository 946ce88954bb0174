"""The validity harness: its table, its CLI, and (slow) the full check that gates every landing."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privgame.engine.cli import main
from privgame.games.validity import (
    ESTIMATORS,
    FORCED,
    INVALID_ESTIMATORS,
    BlockReveal,
    SharedMagnitudeGaussian,
    default_scenarios,
    register_estimator,
    validate,
)

COLUMNS = [
    "scenario", "estimator", "strategy", "confidence", "R", "violations", "rate", "rate_low", "rate_high",
    "promised", "p_value", "expected", "ok",
]  # fmt: skip
ORDER_STATS = [name for name in ESTIMATORS if name.startswith("order-stats")]
SHARED = "DEPENDENT shared |Z|, 1-GDP per canary"
BLOCKS = "DEPENDENT block reveal, (0, 1e-5)-DP per canary"


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
    """R = 500 audits of every estimator × strategy × scenario at confidence 0.95 and 0.7 (SPEC, issue 3).

    The forced order-statistics rows on the dependent scenarios must FAIL the soundness check that every sound row
    passes (``binomtest(V, R, β, "greater").pvalue > 1e-3``).  Their violation rates are 0.415 / 0.455 (shared
    magnitude, explicit; 0.95 / 0.7) and 0.5 (block reveal): R = 500 misses one with probability < 1e-4."""
    table = validate(repetitions=500, confidences=(0.95, 0.7), include_invalid=True, n_jobs=2)
    valid = ~table["estimator"].str.startswith("INVALID")
    sound = valid & (table["expected"] == "sound")
    failures = table[sound & ~table["ok"]]
    assert failures.empty, failures.to_string()
    for name in INVALID_ESTIMATORS:
        assert not table[table["estimator"] == name]["ok"].all(), f"{name} was not caught"
    forced = table[table["expected"] == "violates"]
    assert set(forced["scenario"]) == {SHARED, BLOCKS}
    undetected = forced[forced["p_value"] > 1e-3]  # the soundness check, failed
    assert undetected.empty, undetected.to_string()
    assert forced["ok"].all()
    # every product-model row of the order-statistics audit is sound, on every product-model scenario
    rows = table[table["estimator"].isin(ORDER_STATS)]
    assert set(rows["scenario"]) == {s.name for s in default_scenarios() if s.mechanism.canary_dependence is None}


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
    """The bound exceeds the truth exactly when the true curve is rejected: the cheap check equals the search (the
    f-DP audit's and the order-statistics audit's)."""
    from privgame.analysis import fdp, order_stats
    from privgame.analysis.families import family_for_claim
    from privgame.analysis.thresholds import Bonferroni, Explicit
    from privgame.games.validity import _order_stats_pld_violates, _pld_violates

    scenario = {s.name: s for s in default_scenarios()}["dpsgd q=0.5 T=4 sigma=0.8"]
    claim = scenario.mechanism.privacy_claim()
    family = family_for_claim("pld", claim, 1e-5)
    seen, seen_order_stats = set(), set()
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
            # the order-statistics audit's check, likewise
            result = order_stats.audit_scores(a, b, family=family, confidence=0.7, threshold=strategy)
            violated = result.details["parameter"] > 1 / 0.8 + 1e-9
            assert _order_stats_pld_violates(a, b, 0.7, strategy, claim, 1e-5) == violated
            seen_order_stats.add(violated)
    assert seen == seen_order_stats == {True, False}  # both outcomes checked


# --- the order-statistics audit: product-model rows, and the two dependent counterexamples --------------------------


def test_order_stats_rows_run_on_product_models_only_and_are_forced_on_dependent_canaries():
    import dataclasses

    from privgame.games.validity import _plan

    # which strategies each estimator plays where (no audit run)
    plans = {(s.name, n): _plan(s, n, spec) for s in default_scenarios() for n, spec in ESTIMATORS.items()}
    assert {key: plan for key, plan in plans.items() if plan[1] == "violates" and plan[2]} == {
        (SHARED, "order-stats two-sided, Gaussian (mu)"): (
            f"order-stats two-sided, Gaussian (mu) {FORCED}",
            "violates",
            ("explicit", "bonferroni", "split"),
        ),
        (BLOCKS, "order-stats two-sided, pure"): (f"order-stats two-sided, pure {FORCED}", "violates", ("explicit",)),
    }
    assert all(set(plan[2]) <= {"explicit"} for (scenario, _), plan in plans.items() if scenario == BLOCKS)
    # the rows themselves, on one repetition with explicit thresholds only (fast)
    quick = [dataclasses.replace(s, strategies=("explicit",)) for s in default_scenarios()]
    table = validate(repetitions=1, confidences=(0.9,), scenarios=quick)
    product = {s.name for s in quick if s.mechanism.canary_dependence is None}
    sound = table[table["expected"] == "sound"]
    assert set(sound.loc[sound["estimator"].isin(ORDER_STATS), "scenario"]) == product
    # matched families: pure wherever ε is known, Gaussian where μ is, PLD on DP-SGD's scores
    by_name = sound.groupby("estimator")["scenario"].agg(set)
    assert by_name["order-stats, Gaussian (mu)"] == by_name["order-stats two-sided, Gaussian (mu)"]
    assert by_name["order-stats, Gaussian (mu)"] == {"gaussian mu=2", "null"}
    assert by_name["order-stats, PLD (own q, T)"] == {"dpsgd q=0.5 T=4 sigma=0.8"}
    assert by_name["order-stats, pure"] == by_name["order-stats two-sided, pure"] == product
    # the multi-run bounds read the canaries as independent runs: not played on dependent canaries either
    for name in ("multi-run CP", "multi-run GDP (mu)"):
        assert by_name[name] <= product
    forced = table[table["expected"] == "violates"]
    assert forced["estimator"].str.endswith(FORCED).all()
    assert set(zip(forced["scenario"], forced["estimator"], strict=True)) == {
        (SHARED, f"order-stats two-sided, Gaussian (mu) {FORCED}"),
        (BLOCKS, f"order-stats two-sided, pure {FORCED}"),
    }
    # Steinke's test and the f-DP test with the same family are played on the same dependent scores, as sound rows
    dependent = sound[sound["scenario"].isin([SHARED, BLOCKS])]
    assert set(dependent["estimator"]) == {
        "one-run", "one-run two-sided", "f-DP one-run, pure", "f-DP one-run, Gaussian (mu)",
    }  # fmt: skip


def test_dependent_mechanisms_declare_why():
    from privgame.engine.testing import check_component

    for mech in (SharedMagnitudeGaussian(), BlockReveal()):
        assert isinstance(mech.canary_dependence, str) and mech.canary_dependence.strip()
        check_component(mech)  # the mechanism contract: one line, kinds, same seed ⇒ same release, picklable
    for scenario in default_scenarios():
        dependent = scenario.mechanism.canary_dependence is not None
        assert scenario.name.startswith("DEPENDENT") == dependent == bool(scenario.forced)


def test_shared_magnitude_is_exactly_1_gdp_per_canary():
    """The channel b_i → (A, t_i), integrated over the shared magnitude A as the release draws it, has G_1 as its
    trade-off curve: the likelihood ratio e^{μ t_i A} is monotone in Y_i = t_i A, so the Neyman–Pearson tests are
    thresholds c on Y_i, and each (α(c), β(c)) lies on G_1 (to quadrature accuracy)."""
    from scipy import integrate, special, stats

    from privgame.analysis.tradeoff import GaussianCurve

    mu = 1.0

    def density(a: float) -> float:  # A = |Z + μ/2|
        return float(stats.norm.pdf(a - mu / 2) + stats.norm.pdf(a + mu / 2))

    def above(c: float, member: bool) -> float:
        """P[Y_i > c]: Y_i = +A when the sign is truthful for a member, untruthful for a non-member."""

        def up(a: float) -> float:
            return float(special.expit(mu * a if member else -mu * a))

        if c >= 0.0:
            return integrate.quad(lambda a: density(a) * up(a), c, np.inf, epsabs=1e-13)[0]
        positive = integrate.quad(lambda a: density(a) * up(a), 0.0, np.inf, epsabs=1e-13)[0]
        return positive + integrate.quad(lambda a: density(a) * (1.0 - up(a)), 0.0, -c, epsabs=1e-13)[0]

    curve = GaussianCurve(mu)
    for c in np.linspace(-4.0, 4.0, 41):
        alpha, beta = above(c, member=False), 1.0 - above(c, member=True)
        assert beta == pytest.approx(float(curve.tradeoff(alpha)), abs=1e-9)
        # and the mixture is the Gaussian shift itself: Y_i ~ N(±μ/2, 1)
        assert alpha == pytest.approx(float(stats.norm.sf(c + mu / 2)), abs=1e-9)


def test_shared_magnitude_release():
    """Each canary's value is N(+1/2, 1) for a member and N(−1/2, 1) for a non-member (KS, p > 5e-4 each, so a
    correct release fails with probability < 1e-3), and every value of one release has the same magnitude."""
    from scipy import stats

    mech = SharedMagnitudeGaussian(mu=1.0)
    rng = np.random.default_rng(11)
    bits = np.array([True, False, True, False])
    out = np.array([mech.release(bits, rng=rng) for _ in range(4000)])
    assert np.allclose(np.abs(out), np.abs(out[:, :1]))  # the shared magnitude
    assert stats.kstest(out[:, 0], stats.norm(0.5).cdf).pvalue > 5e-4
    assert stats.kstest(out[:, 1], stats.norm(-0.5).cdf).pvalue > 5e-4
    assert mech.privacy_claim().epsilon(1e-5) == pytest.approx(4.3772, abs=1e-3)  # gdp_epsilon(1, 1e-5)
    with pytest.raises(ValueError, match="mu"):
        SharedMagnitudeGaussian(mu=0.0)


def test_block_reveal_reveals_each_canary_with_probability_delta():
    """Canary i's block is revealed with probability π · block/m = δ exactly; revealed blocks are whole, aligned and
    read 2b − 1; everything else is U(−1/2, 1/2) whatever the bits.  Checked on a small instance (δ = 0.01, 10
    blocks of 10, π = 0.1) over 20,000 releases, three binomial/KS tests at p > 3e-4 each (< 1e-3 in all)."""
    from scipy import stats

    assert BlockReveal().reveal_probability(1_000_000) * 20 / 1_000_000 == pytest.approx(1e-5, rel=1e-12)
    assert BlockReveal().reveal_probability(1_000_000) == pytest.approx(0.5)
    mech = BlockReveal(delta=0.01, block=10)
    rng = np.random.default_rng(12)
    bits = rng.random(100) < 0.5
    out = np.array([mech.release(bits, rng=rng) for _ in range(20_000)])
    revealed = np.abs(out) == 1.0
    blocks = revealed.reshape(len(out), 10, 10)
    assert (blocks.all(axis=2) | ~blocks.any(axis=2)).all()  # all of a block or none of it
    assert (blocks.all(axis=2).sum(axis=1) <= 1).all()  # one block at most
    assert (out[revealed] == np.where(bits, 1.0, -1.0)[np.nonzero(revealed)[1]]).all()
    # canary 0's revelations ~ Bin(N, δ); some revelation ~ Bin(N, π)
    assert stats.binomtest(int(revealed[:, 0].sum()), len(out), 0.01).pvalue > 3e-4
    assert stats.binomtest(int(revealed.any(axis=1).sum()), len(out), 0.1).pvalue > 3e-4
    # the noise of members and non-members (canaries 0..9 of the unrevealed releases) has one law
    hidden = ~revealed.any(axis=1)
    member, nonmember = out[hidden][:, :10][:, bits[:10]], out[hidden][:, :10][:, ~bits[:10]]
    assert np.abs(out[hidden]).max() < 0.5
    assert stats.ks_2samp(member[:, 0], nonmember[:, 0]).pvalue > 3e-4
    with pytest.raises(ValueError, match="multiple of block"):
        mech.release(np.ones(95, dtype=bool), rng=rng)
    with pytest.raises(ValueError, match="m·delta/block <= 1"):
        mech.release(np.ones(2000, dtype=bool), rng=rng)
    with pytest.raises(ValueError, match="block"):
        BlockReveal(block=0)


def test_block_reveal_arithmetic_against_the_four_atoms():
    """Twenty correct two-sided guesses among 10⁶ at δ = 1e-5: the four-atom p-value at ε = 0 is 0.0133 (the block,
    revealed with probability π = 0.5, is read as twenty independent rare events), so the forced audit reports
    ε > 0 at 0.95 and at 0.7; Steinke's bound pays 2mδ = 20 and reports 0.  With m = 10⁵ and blocks of 10 (π = 0.1),
    the issue's figure: ε >= 0.90 with probability 0.10."""
    from privgame.analysis import one_run, order_stats
    from privgame.analysis.tradeoff import PureDPCurve

    assert order_stats.p_value(PureDPCurve(0.0, 1e-5), 1_000_000, 20, 20) == pytest.approx(0.01333, abs=1e-5)
    assert order_stats.epsilon_lower_bound(1_000_000, 20, 20, family="pure", delta=1e-5, confidence=0.7).epsilon > 0
    with pytest.warns(UserWarning, match="no positive ε lower bound"):
        assert one_run.epsilon_lower_bound(1_000_000, 20, 20, delta=1e-5, confidence=0.95) == 0.0
    issue = order_stats.epsilon_lower_bound(100_000, 10, 10, family="pure", delta=1e-5, confidence=0.95)
    assert issue.epsilon == pytest.approx(0.9037, abs=1e-3)


def test_forced_order_stats_violates_on_dependent_canaries_quick():
    """R = 60 at confidence 0.95, explicit thresholds: the forced audit's violation rates (0.415 shared magnitude,
    0.5 block reveal) fail the soundness check except with probability < 1e-5; Steinke's and the f-DP test on the
    same scores keep their promise (each fails only with probability <= 1e-3)."""
    import dataclasses

    scenarios = [
        dataclasses.replace(s, strategies=("explicit",), forced=tuple(f for f in s.forced if f[1] == "explicit"))
        for s in default_scenarios()
        if s.name in (SHARED, BLOCKS)
    ]
    names = ["order-stats two-sided, Gaussian (mu)", "order-stats two-sided, pure", "one-run two-sided"]
    names += ["f-DP one-run, pure", "f-DP one-run, Gaussian (mu)"]
    table = validate(repetitions=60, confidences=(0.95,), scenarios=scenarios, estimators=names, n_jobs=2)
    table = table[~table["estimator"].str.startswith("PANORAMIA")]
    forced = table[table["expected"] == "violates"]
    assert len(forced) == 2 and (forced["p_value"] <= 1e-3).all() and forced["ok"].all(), forced.to_string()
    sound = table[table["expected"] == "sound"]
    assert len(sound) == 5 and (sound["p_value"] > 1e-3).all(), sound.to_string()
