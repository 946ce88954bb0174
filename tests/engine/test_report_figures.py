"""privgame.engine.report: the figure draws each game's headline bound, and what the run derived (DP-SGD's calibrated σ)
is
read from the manifest, never recomputed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib.figure
import numpy as np
import pytest

from privgame.analysis import accounting
from privgame.engine.cli import main
from privgame.engine.report import summarise_results


def _run(
    write_config: Any, tmp_path: Path, overrides: dict[str, dict[str, Any]], name: str, drop: tuple[str, ...] = ()
) -> Path:
    out = tmp_path / name
    config = write_config(overrides, drop, name=name)
    assert main(["run", str(config), "--out", str(out), "--no-progress", "--no-cache"]) == 0
    return out


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[matplotlib.figure.Figure]:
    """The figures saved while the test runs (their axes hold the plotted data)."""
    figures: list[matplotlib.figure.Figure] = []
    save = matplotlib.figure.Figure.savefig

    def keep(self: matplotlib.figure.Figure, *args: Any, **kwargs: Any) -> None:
        figures.append(self)
        save(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", keep)
    return figures


def _bound_line(figure: matplotlib.figure.Figure) -> tuple[np.ndarray, np.ndarray]:
    (ax,) = figure.axes
    line = next(line for line in ax.get_lines() if line.get_marker() == "o")  # the diagonal has no marker
    return np.asarray(line.get_xdata(), dtype=float), np.asarray(line.get_ydata(), dtype=float)


def test_multi_run_plot_draws_the_pooled_bound(write_config, tmp_path, drawn, capsys):
    """Per-trial bounds of a few runs are 0; the headline (and the table's epsilon_lb) pools every run."""
    out = _run(
        write_config,
        tmp_path,
        {
            "experiment": {"repetitions": 4},
            "game": {"name": "multi-run", "runs": 50, "thresholds": 10},
            "mechanism": {"name": "randomized-response", "epsilon": [4.0, 8.0]},
        },
        "multi",
        drop=("game.m", "game.k_pos", "game.k_neg"),
    )
    summary, _ = summarise_results(str(out))
    assert (summary["epsilon_lb"] > summary["epsilon_lb_median"]).all()  # the case the old figure got wrong
    assert main(["report", str(out), "--plot", str(tmp_path / "multi.png")]) == 0
    x, y = _bound_line(drawn[-1])
    order = np.argsort(summary["epsilon_analytic"].to_numpy())
    np.testing.assert_allclose(x, summary["epsilon_analytic"].to_numpy()[order])
    np.testing.assert_allclose(y, summary["epsilon_lb"].to_numpy()[order])
    (ax,) = drawn[-1].axes
    assert not ax.collections  # no per-trial band around a pooled bound
    assert "epsilon_lb" in ax.get_ylabel()


def test_one_run_plot_draws_the_median_with_its_band(write_config, tmp_path, drawn):
    out = _run(write_config, tmp_path, {}, "one")
    summary, _ = summarise_results(str(out))
    assert main(["report", str(out), "--plot", str(tmp_path / "one.png")]) == 0
    _, y = _bound_line(drawn[-1])
    np.testing.assert_allclose(y, summary.sort_values("epsilon_analytic")["epsilon_lb_median"].to_numpy())
    (ax,) = drawn[-1].axes
    assert len(ax.collections) == 1  # the min–max band


def _legend(figure: matplotlib.figure.Figure) -> list[str]:
    (legend,) = figure.legends  # a figure of its own: the legend under the panel
    return [text.get_text() for text in legend.get_texts()]


def test_the_quickstart_figure_names_each_estimator_draws_its_ceiling_and_states_n_and_the_confidence(tmp_path, drawn):
    """Issue 35's acceptance, on experiments/quickstart.toml itself (3 repetitions instead of 20)."""
    out = tmp_path / "quickstart"
    config = Path(__file__).resolve().parents[2] / "experiments" / "quickstart.toml"
    assert main(["run", str(config), "--out", str(out), "--repetitions", "3", "--no-progress", "--no-cache"]) == 0
    assert main(["report", str(out), "--plot", str(tmp_path / "q.png")]) == 0
    figure = drawn[-1]
    assert _legend(figure) == [
        "steinke",
        "steinke: ceiling (every guess right)",
        "ε lower bound = analytic ε",
        "bar: min–max over the trials",
    ]
    (ax,) = figure.axes
    title = ax.get_title().splitlines()
    assert title[:2] == ["quickstart", "n = 3 trials per ε, 95 % confidence"]
    summary, _ = summarise_results(str(out))
    ceiling = next(line for line in ax.get_lines() if line.get_label().endswith("ceiling (every guess right)"))
    np.testing.assert_allclose(ceiling.get_ydata(), summary.sort_values("epsilon_analytic")["steinke.ceiling"])


def test_several_estimators_each_get_a_line_of_their_own_style(write_config, tmp_path, drawn):
    out = _run(
        write_config,
        tmp_path,
        {
            "experiment": {"repetitions": 2},
            "game": {"m": 500, "k_pos": 50, "k_neg": 0},
            "mechanism": {"name": "gaussian", "sigma": [1.0, 0.5]},
            "analysis": {"delta": 1e-8, "estimators": ["steinke", "fdp"], "threshold": "bonferroni"},
        },
        "two",
        drop=("mechanism.epsilon",),
    )
    summary, _ = summarise_results(str(out))
    assert main(["report", str(out), "--plot", str(tmp_path / "two.png")]) == 0
    names = _legend(drawn[-1])
    assert [n for n in names if not n.startswith(("ε", "bar"))] == [
        "steinke",
        "steinke: ceiling (every guess right)",
        "fdp_gaussian",
        "fdp_gaussian: ceiling (every guess right)",
    ]
    (ax,) = drawn[-1].axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert (lines["steinke"].get_marker(), lines["steinke"].get_linestyle()) != (
        lines["fdp_gaussian"].get_marker(),
        lines["fdp_gaussian"].get_linestyle(),
    )
    order = summary.sort_values("epsilon_analytic")
    np.testing.assert_allclose(lines["fdp_gaussian"].get_ydata(), order["fdp_gaussian.epsilon_lb_median"])
    assert len(ax.collections) == 2  # each estimator's min–max bars
    assert "n = 2 trials per ε, 95 % confidence" in ax.get_title()


DPSGD = {
    "experiment": {"repetitions": 1},
    "game": {"name": "one-run", "m": 20, "k_pos": 2, "k_neg": 2, "data": "digits", "train_rows": 50},
    "mechanism": {"name": "dpsgd-whitebox", "epsilon": [4.0, 8.0], "sampling_rate": 1.0, "steps": 2},
    "analysis": {"confidence": 0.95, "delta": 1e-5},
}


@pytest.mark.filterwarnings("ignore:no positive ε lower bound is possible")
def test_report_reads_the_calibrated_sigma_and_never_calibrates(write_config, tmp_path, monkeypatch):
    pytest.importorskip("torch")
    out = _run(write_config, tmp_path, DPSGD, "dpsgd")
    grid = json.loads((out / "manifest.json").read_text())["grid"]
    stored = [point["derived"]["sigma"] for point in grid]
    assert stored == [accounting.dpsgd_noise_multiplier(e, 1e-5, 1.0, 2) for e in (4.0, 8.0)]

    def must_not_run(*args: Any, **kwargs: Any) -> float:
        raise AssertionError("privgame report calibrated σ")

    monkeypatch.setattr(accounting, "dpsgd_noise_multiplier", must_not_run)
    monkeypatch.setattr(accounting, "_calibrate_dpsgd", must_not_run)
    monkeypatch.setattr(accounting, "epsilon_for_event", must_not_run)  # nor the analytic ε
    summary, _ = summarise_results(str(out))
    assert summary["mechanism.sigma"].tolist() == stored
    assert summary["epsilon_analytic"].tolist() == [point["epsilon_analytic"] for point in grid]
    assert list(summary.columns[:2]) == ["mechanism.epsilon", "mechanism.sigma"]


def test_manifest_derived_values_are_read_defensively(write_config, tmp_path):
    out = _run(write_config, tmp_path, {}, "plain")
    manifest = json.loads((out / "manifest.json").read_text())
    assert [point["derived"] for point in manifest["grid"]] == [{}, {}]  # randomized response derives nothing
    manifest["grid"][0]["derived"] = {"sigma": "1.5", "flag": True, "ok": 2, "huge": 10**400}  # no float holds 10**400
    manifest["grid"][1]["derived"] = ["not", "a", "table"]
    (out / "manifest.json").write_text(json.dumps(manifest))
    summary, _ = summarise_results(str(out))
    assert summary["mechanism.ok"].iloc[0] == 2.0 and np.isnan(summary["mechanism.ok"].iloc[1])
    assert "mechanism.sigma" not in summary and "mechanism.flag" not in summary and "mechanism.huge" not in summary


@pytest.mark.filterwarnings("ignore:no positive ε lower bound is possible")
def test_run_shows_the_calibration_step_on_its_own_line(write_config, tmp_path, capsys):
    pytest.importorskip("torch")
    config = write_config({**DPSGD, "mechanism": {**DPSGD["mechanism"], "epsilon": 3.0}}, name="step")
    assert main(["run", str(config), "--out", str(tmp_path / "step"), "--no-cache"]) == 0
    assert "analytic ε (σ calibration)" in capsys.readouterr().err
    (point,) = json.loads((tmp_path / "step" / "manifest.json").read_text())["grid"]
    sigma = point["derived"]["sigma"]
    assert sigma == accounting.dpsgd_noise_multiplier(3.0, 1e-5, 1.0, 2)
    assert point["epsilon_analytic"] == accounting.dpsgd_epsilon(sigma, 1.0, 2, 1e-5)
