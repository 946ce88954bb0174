"""``[analysis] estimators``, ``threshold``, ``two_sided`` and ``allow_unmatched_family`` (privgame.games.bounds).

The threshold rule's normal form and its refusals; every invalid choice refused when the config is read (one line,
before any trial); the default estimator and rule giving exactly the game's own bound; the columns named after the
estimators through a run and its report; and configs that do not use the keys keeping their hash.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from privgame.engine.config import ConfigError, load_config
from privgame.engine.report import summarise_results
from privgame.engine.runner import run_experiment
from privgame.games._base import AnalysisSettings
from privgame.games.bounds import bound_columns, check_threshold, estimator_labels, settings_problem
from privgame.games.multi_run import MultiRunGame
from privgame.games.one_run import OneRunGame
from privgame.mechanisms.randomized_response import RandomizedResponse


def test_threshold_rules_normalise_with_their_defaults():
    assert check_threshold(None) is None
    assert dict(check_threshold("top-k")) == {"rule": "top-k"}
    assert dict(check_threshold("bonferroni")) == {"rule": "bonferroni", "candidates": 100}
    assert dict(check_threshold({"rule": "split", "fraction": 0.3})) == {
        "rule": "split",
        "fraction": 0.3,
        "candidates": 100,
    }
    assert dict(check_threshold(0.5)) == {"rule": "explicit", "at": 0.5}
    assert dict(check_threshold({"rule": "explicit", "at": [0.4, 0.6]})) == {"rule": "explicit", "at": (0.4, 0.6)}
    normal = check_threshold("bonferroni")
    assert check_threshold(normal) == normal  # idempotent (stored settings are re-checked)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("topk", "rule must be one of top-k, bonferroni, split, explicit, got 'topk'"),
        (True, "must be a rule name, a number or a table"),
        ([0.4, 0.6], "must be one of top-k"),
        ({"rule": "bonferroni", "fraction": 0.5}, "the bonferroni rule takes candidates, got 'fraction'"),
        ({"rule": "explicit"}, "needs at = a number"),
        ({"rule": "explicit", "at": [0.6, 0.4]}, "needs t_low < t_high"),
        ({"rule": "explicit", "at": [0.5, 0.5]}, "needs t_low < t_high"),
        ({"rule": "explicit", "at": [1, 2, 3]}, "one number or a pair"),
        ({"rule": "explicit", "at": float("nan")}, "threshold at"),
        ({"rule": "split", "fraction": 1.0}, "threshold fraction"),
        ({"rule": "bonferroni", "candidates": 0}, "threshold candidates"),
        ({"rule": "bonferroni", "candidates": 10**12}, "threshold candidates"),
    ],
)
def test_bad_threshold_rules_are_one_line(spec, message):
    with pytest.raises(ValueError, match=message) as info:
        check_threshold(spec)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"analysis": {"estimators": ["stienke"]}}, "unknown estimator 'stienke'; valid: steinke, fdp"),
        ({"analysis": {"estimators": []}}, "at least one of"),
        ({"analysis": {"estimators": "steinke"}}, "estimators must be a list"),
        ({"analysis": {"estimators": ["fdp_gaussian"], "delta": 1e-5}}, "allow_unmatched_family = true"),
        ({"analysis": {"estimators": ["clopper_pearson"]}}, "needs repeated runs"),
        ({"analysis": {"estimators": ["fdp_pld"], "delta": 1e-5}}, "'fdp_pld' may bound above"),
        ({"analysis": {"two_sided": True}}, "two_sided = true does not apply here \\(top-k"),
        ({"analysis": {"threshold": 0.5, "two_sided": True}}, "must be a pair"),
        ({"analysis": {"threshold": {"rule": "explicit", "at": [0.4, 0.6]}}}, "must be a pair"),
        ({"analysis": {"threshold": "sideways"}}, "threshold rule must be one of"),
        ({"analysis": {"allow_unmatched_family": "yes"}}, "allow_unmatched_family must be true or false"),
        ({"analysis": {"two_sided": [True, False]}}, "two_sided cannot be swept"),
        ({"analysis": {"confidence": []}}, "confidence is an empty list"),
        ({"analysis": {"confidence": [0.9, 1.5]}}, r"confidence must .*\(in the sweep, at confidence = 1.5\)"),
        ({"analysis": {"delta": [1e-5, -1.0]}}, r"delta must .*at delta = -1.0\)"),
        ({"analysis": {"delta": [1e-5, 1e-5]}}, "lists the value 1e-05 twice"),
        ({"analysis": {"confidence": ["high"]}}, "confidence"),
        ({"analysis": {"claim": 1}}, "unknown key 'claim'"),
    ],
)
def test_invalid_analysis_choices_are_refused_when_the_config_is_read(write_config, overrides, message):
    with pytest.raises(ConfigError, match=message) as info:
        load_config(write_config(overrides))
    assert str(info.value).startswith("[analysis]") and "\n" not in str(info.value)


def test_the_choices_are_refused_for_games_that_do_not_bound_this_way():
    settings = AnalysisSettings(estimators=("steinke",))
    assert "not to 'lira'" in settings_problem(settings, kind=None, game="lira")
    problem = settings_problem(AnalysisSettings(threshold="top-k"), kind="runs", game="multi-run")
    assert "one-run game's rule" in problem
    assert settings_problem(AnalysisSettings(), kind=None, game="lira") is None  # the defaults apply to every game


def _one_run_outcome(m: int = 600, epsilon: float = 2.0):
    game = OneRunGame(m=m, k_pos=100, k_neg=100)
    seed = np.random.SeedSequence(11)
    return game, game.play(RandomizedResponse(epsilon), _identity(), seed=seed), seed


def _identity():
    from privgame.attacks.identity import Identity

    return Identity()


def test_the_default_estimator_and_rule_are_the_games_own_bound():
    game, outcome, seed = _one_run_outcome()
    claim = RandomizedResponse(2.0).privacy_claim()
    own = game.analyse_trial(outcome, AnalysisSettings(), seed=seed)
    named = game.analyse_trial(outcome, AnalysisSettings(estimators=("steinke",)).bind(claim), seed=seed)
    assert named["epsilon_lb"] == named["steinke.epsilon_lb"] == own["epsilon_lb"] > 0.0
    assert (named["m"], named["r"], named["v"]) == (own["m"], own["r"], own["v"])
    both = game.analyse_trial(outcome, AnalysisSettings(estimators=("steinke", "fdp")).bind(claim), seed=seed)
    assert estimator_labels(list(both)) == ["steinke", "fdp_pure"]
    assert 0.0 < both["fdp_pure.epsilon_lb"] <= both["steinke.epsilon_lb"]  # pure f-DP ≤ Steinke at δ = 0 (exact)


def test_a_threshold_rule_gives_each_estimator_its_own_counts():
    game, outcome, seed = _one_run_outcome()
    claim = RandomizedResponse(2.0).privacy_claim()
    settings = AnalysisSettings(estimators=("steinke", "fdp"), threshold={"rule": "explicit", "at": [0.4, 0.6]})
    row = game.analyse_trial(outcome, dataclass_replace(settings, two_sided=True).bind(claim), seed=seed)
    assert row["steinke.r"] == row["fdp_pure.r"] == 600  # every canary guessed on released bits
    assert row["steinke.v"] == int(np.sum((outcome.scores >= 0.5) == outcome.membership))
    split = AnalysisSettings(estimators=("steinke",), threshold="split").bind(claim)
    first, again = (game.analyse_trial(outcome, split, seed=seed) for _ in range(2))
    assert first == again  # the split is drawn from the trial's own stream
    assert first["steinke.r"] < 600


def dataclass_replace(settings, **changes):
    import dataclasses

    return dataclasses.replace(settings, **changes)


def test_multi_run_default_estimator_is_the_games_own_bound_per_trial_and_pooled():
    from privgame.mechanisms.gaussian import GaussianMechanism

    game = MultiRunGame(runs=40, thresholds=20)
    mechanism = GaussianMechanism(sigma=0.5)
    seed = np.random.SeedSequence(3)
    outcome = game.play(mechanism, _identity(), seed=seed)
    own = game.analyse_trial(outcome, AnalysisSettings(delta=1e-5), seed=seed)
    settings = AnalysisSettings(delta=1e-5, estimators=("clopper_pearson", "gdp")).bind(mechanism.privacy_claim())
    named = game.analyse_trial(outcome, settings, seed=seed)
    assert named["clopper_pearson.epsilon_lb"] == own["epsilon_lb"] == named["epsilon_lb"]
    assert math.isfinite(named["gdp.epsilon_lb"])
    rng = np.random.default_rng(0)
    again = bound_columns(
        settings, outcome.scores, outcome.membership, has_runs=True, rng=rng, default=game._threshold()
    )
    assert again["clopper_pearson.epsilon_lb"] == own["epsilon_lb"]


def test_a_run_reports_every_estimators_columns_and_unused_keys_keep_the_hash(write_config, tmp_path):
    plain = load_config(write_config())
    assert plain.normalised["analysis"] == {"confidence": 0.95, "delta": 0.0}  # as before these keys existed
    config = load_config(
        write_config(
            {
                "analysis": {"estimators": ["steinke", "fdp_gaussian"], "delta": 1e-5, "allow_unmatched_family": True},
                "experiment": {"repetitions": 2},
            },
            name="named",
        )
    )
    assert config.hash != plain.hash and config.normalised["analysis"]["estimators"] == ["steinke", "fdp_gaussian"]
    store = run_experiment(config, tmp_path / "out", progress=False)
    rows = store.rows()
    assert {"steinke.epsilon_lb", "fdp_gaussian_unmatched.epsilon_lb"} <= set(rows.columns)
    assert (rows["epsilon_lb"] == rows["steinke.epsilon_lb"]).all()
    summary, _ = summarise_results(str(store.root))
    for label in ("steinke", "fdp_gaussian_unmatched"):
        assert {f"{label}.epsilon_lb_median", f"{label}.epsilon_lb_min", f"{label}.tightness"} <= set(summary.columns)
    assert (summary["epsilon_lb_median"] == summary["steinke.epsilon_lb_median"]).all()
    # the Gaussian family on randomized response overshoots Steinke's exact bound: why it is refused by default
    assert (summary["fdp_gaussian_unmatched.epsilon_lb_median"] > summary["steinke.epsilon_lb_median"]).all()


def test_report_ladder_draws_every_estimator_and_writes_its_latex_table(write_config, tmp_path, capsys):
    from privgame.engine.cli import main

    config = load_config(
        write_config({"analysis": {"estimators": ["steinke", "fdp"]}, "experiment": {"repetitions": 2}}, name="lad")
    )
    store = run_experiment(config, tmp_path / "out", progress=False)
    figure = tmp_path / "ladder.png"
    assert main(["report", str(store.root), "--ladder", str(figure)]) == 0
    assert figure.stat().st_size > 0
    tex = figure.with_suffix(".tex").read_text()
    assert r"\toprule" in tex and r"\bottomrule" in tex  # booktabs
    assert r"$\varepsilon$ & analytic $\varepsilon$ & \texttt{steinke} & \texttt{fdp\_pure}" in tex  # readable
    assert "confidence 0.95; $\\delta$ = 0; m = 2000; rule: top-k ($k_+$ = 500, $k_-$ = 500)" in tex
    assert "a bound above the analytic $\\varepsilon$ in a few repetitions (the max) is expected" in tex
    assert tex.count(r" \\") == 1 + 2 + 0  # header and two grid points (the caption has none)
    assert "LaTeX table" in capsys.readouterr().err


def test_the_ladder_of_an_analysis_sweep_has_a_panel_per_setting(write_config, tmp_path, monkeypatch):
    import matplotlib.figure

    from privgame.analysis.reporting import ladder_latex, plot_estimator_ladder
    from privgame.engine.report import ladder_context, summarise_results

    analysis = {"estimators": ["steinke", "fdp"], "confidence": [0.9, 0.95], "delta": [0.0, 1e-5, 1e-4]}
    config = load_config(write_config({"analysis": analysis, "experiment": {"repetitions": 2}}, name="sw"))
    store = run_experiment(config, tmp_path / "out", progress=False)
    summary, swept = summarise_results(str(store.root))
    saved = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda self, path, **kw: saved.append(self))
    title, subtitle = ladder_context(str(store.root))
    assert "confidence 0.9, 0.95; δ = 0, 1e-05, 0.0001" in subtitle
    plot_estimator_ladder(summary, swept, tmp_path / "l.png", title=title, subtitle=subtitle)
    axes = saved[0].axes
    assert len(axes) == 6  # 2 confidences × 3 δ
    assert [ax.get_title() for ax in axes[:3]] == [
        "confidence = 0.9, δ = 0",
        "confidence = 0.9, δ = 1e-05",
        "confidence = 0.9, δ = 0.0001",
    ]
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["ε = 1", "ε = 2"]
    tex = ladder_latex(summary, swept, caption="c")
    assert r"$\varepsilon$ & confidence & $\delta$ & analytic $\varepsilon$" in tex
    assert tex.count(r" \\") == 1 + 12 and "& 1e-05 &" in tex


def test_dry_run_times_a_trial_with_the_chosen_estimators(write_config, tmp_path):
    from privgame.engine.runner import dry_run

    config = load_config(write_config({"analysis": {"estimators": ["steinke", "fdp"]}}, name="dry"))
    plan = dry_run(config, tmp_path / "out")
    assert plan.timing_error is None and plan.seconds_per_trial is not None  # the trial's analysis had the claim


# -- ceilings: the bound every guess right would give ---------------------------------------------------------
def _all_right_outcome(m: int = 400):
    """A one-run outcome whose scores are the membership bits: every guess of every rule is right."""
    from privgame.games._base import TrialOutcome

    membership = np.random.default_rng(5).random(m) < 0.5
    return TrialOutcome(scores=membership.astype(np.float64), membership=membership)


def _claims():
    from privgame.mechanisms.gaussian import GaussianMechanism

    return {"pure": RandomizedResponse(2.0).privacy_claim(), "gaussian": GaussianMechanism(sigma=0.5).privacy_claim()}


@pytest.mark.parametrize(
    ("family", "names"),
    [("pure", ("steinke", "fdp", "order_stats")), ("gaussian", ("steinke", "fdp", "order_stats"))],
)
@pytest.mark.parametrize("threshold", [None, {"rule": "explicit", "at": 0.5}, "bonferroni", "split"])
def test_a_trial_with_every_guess_right_is_at_its_ceiling(family, names, threshold):
    """The ceiling is the bound at v = r with the trial's own m, r, δ and per-test confidence (the part bounded
    under a split, β/G under Bonferroni): on scores that are the bits every estimator's bound equals it."""
    game = OneRunGame(m=400, k_pos=40, k_neg=40)
    outcome = _all_right_outcome()
    settings = AnalysisSettings(delta=1e-7, estimators=names, threshold=threshold).bind(_claims()[family], None)
    row = game.analyse_trial(outcome, settings, seed=np.random.SeedSequence(1))
    labels = estimator_labels(list(row))
    assert len(labels) == 3
    for label in labels:
        assert row[f"{label}.ceiling"] > 0.0
        if threshold is None:  # top-k: the very same call, so the very same number
            assert row[f"{label}.ceiling"] == row[f"{label}.epsilon_lb"]
        else:  # the score-level search may land a tolerance away
            assert row[f"{label}.v"] == row[f"{label}.r"] > 0
            assert row[f"{label}.epsilon_lb"] == pytest.approx(row[f"{label}.ceiling"], rel=1e-6, abs=1e-6)


def test_the_ceiling_is_the_bound_at_v_equal_r_and_is_remembered(monkeypatch):
    import privgame.analysis.estimators
    from privgame.analysis.estimators import bound_from_counts, resolve_estimators
    from privgame.games import bounds

    for family, claim in _claims().items():
        names = ("steinke", "fdp", "order_stats")
        for e in resolve_estimators(names, claim, delta=1e-5, has_runs=False, dependence=None):
            expected = bound_from_counts(e, 1000, 60, 60, confidence=0.95, delta=1e-5)
            assert bounds.ceiling(e, 1000, 60, confidence=0.95, delta=1e-5) == expected > 0.0, (family, e.label)
    calls = []
    monkeypatch.setattr(privgame.analysis.estimators, "bound_from_counts", lambda *a, **k: calls.append(a) or 1.5)
    again = resolve_estimators(("order_stats",), _claims()["gaussian"], delta=1e-5, has_runs=False, dependence=None)
    # an estimator resolved anew (its family a new object) with the same numbers is answered from the memo
    assert bounds.ceiling(again[0], 1000, 60, confidence=0.95, delta=1e-5) != 1.5 and calls == []
    assert bounds.ceiling(again[0], 1000, 61, confidence=0.95, delta=1e-5) == 1.5 and len(calls) == 1


def test_pld_families_with_the_same_q_and_t_share_a_key_and_others_do_not():
    from privgame.analysis.families import dpsgd_family
    from privgame.games.bounds import _family_key

    a, b = (dpsgd_family(0.1, 500, delta=1e-5) for _ in range(2))
    assert a != b and _family_key(a) == _family_key(b)  # new partials: unequal objects, equal parameters
    assert _family_key(dpsgd_family(0.1000001, 500, delta=1e-5)) != _family_key(a)  # same name "dpsgd(q=0.1, ...)"
    assert _family_key(dpsgd_family(0.1, 501, delta=1e-5)) != _family_key(a)


def test_ceiling_errors_and_edges():
    from privgame.analysis.estimators import Estimator
    from privgame.games.bounds import ceiling

    steinke = Estimator("steinke", "steinke")
    assert ceiling(steinke, 100, 0, confidence=0.95, delta=0.0) == 0.0  # no guess, no bound
    with pytest.warns() as caught:  # too few guesses for any positive bound: 0, without the estimator's warning
        import warnings

        warnings.warn("marker", UserWarning, stacklevel=1)
        assert ceiling(steinke, 100, 2, confidence=0.95, delta=0.0) == 0.0
    assert [str(w.message) for w in caught] == ["marker"]
    with pytest.raises(ValueError, match="'clopper_pearson' bounds repeated runs"):
        ceiling(Estimator("clopper_pearson", "clopper_pearson"), 100, 10, confidence=0.95, delta=0.0)
    with pytest.raises(ValueError, match="r must be"):
        ceiling(steinke, 100, 101, confidence=0.95, delta=0.0)
    with pytest.raises(ValueError, match="confidence"):
        ceiling(steinke, 100, 10, confidence=1.0, delta=0.0)


def _rows(bounds: list[float], ceilings: list[float]):
    import pandas as pd

    return pd.DataFrame({"steinke.epsilon_lb": bounds, "steinke.ceiling": ceilings})


@pytest.mark.parametrize(
    ("bounds", "ceilings", "at"),
    [
        ([1.99, 2.0, 1.985], [2.0, 2.0, 2.0], True),  # median 1.985 >= 0.99 × 2
        ([1.98, 1.97, 2.0], [2.0, 2.0, 2.0], True),  # exactly 99 %
        ([1.9, 1.97, 2.0], [2.0, 2.0, 2.0], False),  # median 1.97: 1.5 % below
        ([0.0, 0.0, 0.0], [0.0, 0.0, 0.0], True),  # no positive bound possible: the guesses are the limit
        ([1.0, 1.0, 1.0], [math.nan, math.nan, math.nan], False),
    ],
)
def test_a_median_bound_within_one_percent_of_the_median_ceiling_is_marked(bounds, ceilings, at):
    from privgame.games.bounds import summary_columns

    out = summary_columns(_rows(bounds, ceilings), analytic=4.0, confidence=0.95)
    assert out["steinke.at_ceiling"] is at
    finite = [c for c in ceilings if math.isfinite(c)]
    assert out["steinke.ceiling"] == (float(np.median(finite)) if finite else pytest.approx(math.nan, nan_ok=True))


def test_rows_stored_before_ceilings_summarise_without_them():
    import pandas as pd

    from privgame.games.bounds import summary_columns

    out = summary_columns(pd.DataFrame({"steinke.epsilon_lb": [1.0, 2.0]}), analytic=4.0, confidence=0.95)
    assert out["steinke.epsilon_lb_median"] == 1.5
    assert not any("ceiling" in key for key in out)


def test_multi_run_estimators_get_no_ceiling():
    from privgame.mechanisms.gaussian import GaussianMechanism

    game = MultiRunGame(runs=40, thresholds=20)
    mechanism = GaussianMechanism(sigma=0.5)
    seed = np.random.SeedSequence(3)
    outcome = game.play(mechanism, _identity(), seed=seed)
    settings = AnalysisSettings(delta=1e-5, estimators=("clopper_pearson", "gdp")).bind(mechanism.privacy_claim())
    assert not any("ceiling" in key for key in game.analyse_trial(outcome, settings, seed=seed))


def test_the_games_own_bound_gets_its_ceiling_when_summarised():
    """No [analysis] estimators: Steinke's ceiling at the trial's m and r (k_pos + k_neg), stored with each row and
    summarised from them; rows stored before ceilings existed get none."""
    import pandas as pd

    from privgame.analysis.one_run import epsilon_lower_bound
    from privgame.games.bounds import default_ceiling_columns, top_k_ceiling

    top = epsilon_lower_bound(500, 50, 50, delta=1e-5, confidence=0.95)
    assert top == pytest.approx(2.771, abs=1e-3)  # 50 guesses, all right: 0.95 ** (1 / 50) = e^ε / (1 + e^ε)
    assert top_k_ceiling(500, 50, confidence=0.95, delta=1e-5) == top
    rows = pd.DataFrame({"epsilon_lb": [2.0, top, top], "m": [500] * 3, "r": [50] * 3, "ceiling": [top] * 3})
    assert default_ceiling_columns(rows) == {"ceiling": top, "at_ceiling": True}
    lower = rows.assign(epsilon_lb=[2.0, 2.0, top])
    assert default_ceiling_columns(lower) == {"ceiling": top, "at_ceiling": False}
    assert default_ceiling_columns(rows.drop(columns="ceiling")) == {}


def test_reanalysing_with_the_stored_settings_reproduces_the_ceilings(write_config, tmp_path):
    from privgame.engine.reanalyse import reanalyse

    analysis = {"estimators": ["steinke", "fdp", "order_stats"], "threshold": "bonferroni"}
    config = load_config(write_config({"analysis": analysis, "experiment": {"repetitions": 2}}, name="re"))
    source = run_experiment(config, tmp_path / "run", progress=False)
    again = reanalyse(source.root, tmp_path / "again", {}, progress=False)
    checksums = ["sha256_raw", "sha256_records"]
    rows, stored = (s.rows().drop(columns=checksums, errors="ignore") for s in (again, source))
    assert {"steinke.ceiling", "fdp_pure.ceiling", "order_stats_pure.ceiling"} <= set(stored.columns)
    import pandas as pd

    pd.testing.assert_frame_equal(rows, stored)


# --- the Gaussian fit: a parametric estimate, in columns of its own (never a bound, a ceiling or a verdict) --------


def test_the_gaussian_fit_has_its_own_columns_through_a_run_and_its_report(write_config, tmp_path, capsys):
    """Named before the bound: epsilon_lb is still the bound's; the fit's trial columns are epsilon_estimate and
    epsilon_point; its summary has its kind, median/min/max and no tightness, ceiling, over_claim nor verdict; the
    plain report shows its kind and its estimates."""
    from privgame.engine.cli import main
    from privgame.games.bounds import ESTIMATE_KIND, estimate_labels

    overrides = {
        "analysis": {"estimators": ["gauss_fit", "steinke"], "delta": 1e-5},
        "mechanism": {"name": "gaussian", "sigma": [1.0, 0.5]},
        "experiment": {"repetitions": 2},
    }
    config = load_config(write_config(overrides, drop=("mechanism.epsilon",), name="gauss"))
    store = run_experiment(config, tmp_path / "out", progress=False)
    rows = store.rows()
    assert estimate_labels(list(rows.columns)) == ["gauss_fit"] and estimator_labels(list(rows.columns)) == ["steinke"]
    assert {"gauss_fit.epsilon_estimate", "gauss_fit.epsilon_point"} <= set(rows.columns)
    assert not [c for c in rows.columns if c.startswith("gauss_fit.") and "epsilon_" not in c]  # no ceiling, r, v
    assert (rows["epsilon_lb"] == rows["steinke.epsilon_lb"]).all()
    assert (rows["gauss_fit.epsilon_estimate"] <= rows["gauss_fit.epsilon_point"]).all()
    summary, _ = summarise_results(str(store.root))
    fit = sorted(c for c in summary.columns if c.startswith("gauss_fit."))
    assert fit == [
        "gauss_fit.epsilon_estimate_max", "gauss_fit.epsilon_estimate_median", "gauss_fit.epsilon_estimate_min",
        "gauss_fit.epsilon_point_median", "gauss_fit.kind", "gauss_fit.n_undefined",
    ]  # fmt: skip
    assert (summary["gauss_fit.kind"] == ESTIMATE_KIND).all() and (summary["gauss_fit.n_undefined"] == 0).all()
    assert "steinke.verdict" in summary.columns and "verdict" in summary.columns  # the bound's verdict only
    # well-specified scores: the estimate is near the truth (2,000 canaries, μ = 1 and 2), far above Steinke's bound
    ratio = summary["gauss_fit.epsilon_estimate_median"] / summary["epsilon_analytic"]
    assert ((ratio > 0.6) & (ratio < 1.1)).all()
    assert (summary["gauss_fit.epsilon_estimate_median"] > summary["steinke.epsilon_lb_median"]).all()
    assert main(["report", str(store.root)]) == 0
    out = capsys.readouterr().out
    assert "gauss_fit.kind" in out and ESTIMATE_KIND in out and "gauss_fit.epsilon_estimate_median" in out


def test_the_gaussian_fit_is_refused_in_one_line_where_it_cannot_apply(write_config):
    for overrides, drop, message in (
        ({"analysis": {"estimators": ["gauss_fit"], "delta": 1e-5}}, (), "name a bound as well"),
        ({"analysis": {"estimators": ["steinke", "gauss_fit"]}}, (), r"'gauss_fit' needs \[analysis\] delta > 0"),
        (
            {
                "game": {"name": "multi-run", "runs": 40, "thresholds": 10},
                "analysis": {"estimators": ["clopper_pearson", "gauss_fit"], "delta": 1e-5},
            },
            ("game.m", "game.k_pos", "game.k_neg"),
            "'gauss_fit' is an estimate from one run's member and non-member canary scores; this game repeats",
        ),
    ):
        with pytest.raises(ConfigError, match=message) as info:
            load_config(write_config(overrides, drop=drop))
        assert str(info.value).startswith("[analysis]") and "\n" not in str(info.value)


def test_the_gaussian_fit_uses_every_score_under_any_rule_and_is_undefined_below_two_per_side():
    from privgame.analysis.gaussian_fit import gaussian_fit
    from privgame.games.bounds import estimate_summary

    game, outcome, seed = _one_run_outcome()
    claim = RandomizedResponse(2.0).privacy_claim()
    top_k = AnalysisSettings(estimators=("steinke", "gauss_fit"), delta=1e-7).bind(claim)
    split = dataclass_replace(top_k, threshold="split")
    rows = [game.analyse_trial(outcome, s, seed=seed) for s in (top_k, split)]
    member = outcome.membership
    fit = gaussian_fit(outcome.scores[member], outcome.scores[~member], delta=1e-7, confidence=0.95)
    for row in rows:
        assert row["gauss_fit.epsilon_estimate"] == fit.epsilon_estimate
        assert row["gauss_fit.epsilon_point"] == fit.epsilon_point
        assert row["epsilon_lb"] == row["steinke.epsilon_lb"] and "gauss_fit.epsilon_lb" not in row
    # randomized response's 0/1 scores: the Gaussian fit is far above the true ε = 2 (why it is only an estimate)
    assert fit.epsilon_estimate > 2.0
    small = OneRunGame(m=3, k_pos=1, k_neg=0)
    undefined = []
    with warnings.catch_warnings():  # 3 canaries: no positive bound, and sides of equal scores
        warnings.simplefilter("ignore", UserWarning)
        for trial in range(12):
            s = np.random.SeedSequence(trial)
            row = small.analyse_trial(small.play(RandomizedResponse(2.0), _identity(), seed=s), top_k, seed=s)
            undefined.append(math.isnan(row["gauss_fit.epsilon_estimate"]))
    assert any(undefined)  # with 3 canaries some trial has fewer than 2 on a side
    import pandas as pd

    frame = pd.DataFrame({"gauss_fit.epsilon_estimate": [1.0, math.nan, 3.0], "gauss_fit.epsilon_point": [2, 0, 4]})
    summary = estimate_summary(frame, "gauss_fit")
    assert summary["gauss_fit.n_undefined"] == 1 and summary["gauss_fit.epsilon_estimate_median"] == 2.0
    nothing = estimate_summary(frame.assign(**{"gauss_fit.epsilon_estimate": math.nan}), "gauss_fit")
    assert math.isnan(nothing["gauss_fit.epsilon_estimate_max"]) and nothing["gauss_fit.n_undefined"] == 3


def test_a_bound_that_is_not_guaranteed_gets_its_count_and_no_verdict():
    """An unmatched family or a forced order-statistics audit may exceed a true claim in most trials: its
    exceedances are counted, but no verdict rests on it, and the headline verdict tests the first guaranteed bound."""
    import pandas as pd

    from privgame.games._base import AnalysisSettings
    from privgame.games.bounds import summary_columns
    from privgame.games.one_run import OneRunGame

    n = 20
    rows = pd.DataFrame(
        {
            "trial": range(n),
            "grid_point": 0,
            "repetition": range(n),
            "epsilon_analytic": 1.0,
            "epsilon_lb": [1.6] * n,  # the first estimator named: the unmatched one
            "fdp_gaussian_unmatched.epsilon_lb": [1.6] * n,
            "steinke.epsilon_lb": [0.7] * n,
        }
    )
    out = summary_columns(rows, 1.0, 0.95)
    assert out["fdp_gaussian_unmatched.over_claim"] == n
    assert out["fdp_gaussian_unmatched.verdict"] == "no test: bound not guaranteed"
    assert math.isnan(out["fdp_gaussian_unmatched.verdict_p"])
    assert out["steinke.verdict"] == "not refuted"
    settings = AnalysisSettings(estimators=["fdp_gaussian", "steinke"], allow_unmatched_family=True)
    summary = OneRunGame(m=10, k_pos=1, k_neg=1).summarise(rows, settings, lambda t: None)
    assert (summary["verdict"], summary["over_claim"]) == ("not refuted", 0)  # steinke's, the guaranteed one
    alone = rows.drop(columns="steinke.epsilon_lb")
    summary = OneRunGame(m=10, k_pos=1, k_neg=1).summarise(alone, settings, lambda t: None)
    assert summary["verdict"] == "no test: bound not guaranteed" and summary["over_claim"] == n
