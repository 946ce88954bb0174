"""Tests of privgame.analysis.reporting: format_table and plot_lower_bounds."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from privgame.analysis.reporting import TABLE_FORMATS, format_table, plot_lower_bounds


@pytest.fixture
def df() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "n_canaries": [10, 200],
            "epsilon_analytic": [1.0, math.inf],
            "epsilon_lb_median": [0.123456789012345, math.nan],
            "mechanism": ["randomized_response", "gaussian"],
        }
    )


def _summary(n: int = 4, groups: int = 1) -> pd.DataFrame:
    rows = []
    for g in range(groups):
        for i in range(n):
            eps = 0.5 * (i + 1)
            rows.append(
                {
                    "m": 100 * (g + 1),
                    "epsilon_analytic": eps,
                    "epsilon_lb_median": 0.6 * eps,
                    "epsilon_lb_min": 0.4 * eps,
                    "epsilon_lb_max": 0.8 * eps,
                }
            )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- format_table


def test_table_formats_constant() -> None:
    assert TABLE_FORMATS == ("table", "csv", "markdown", "latex")


def test_default_format_is_table(df: pd.DataFrame) -> None:
    assert format_table(df) == format_table(df, "table")


def test_table(df: pd.DataFrame) -> None:
    text = format_table(df, "table")
    lines = text.splitlines()
    assert text.endswith("\n")
    assert len(lines) == 3
    assert lines[0].split() == ["n_canaries", "epsilon_analytic", "epsilon_lb_median", "mechanism"]
    assert lines[1].split() == ["10", "1.000", "0.123", "randomized_response"]
    assert lines[2].split() == ["200", "inf", "none", "gaussian"]
    # Right-aligned columns: every line has the same length.
    assert len({len(line) for line in lines}) == 1
    assert "nan" not in text.lower()


@pytest.mark.parametrize("digits", [0, 1, 6])
def test_digits(df: pd.DataFrame, digits: int) -> None:
    text = format_table(df, "table", digits=digits)
    assert f"{0.123456789012345:.{digits}f}" in text.split()
    assert f"{1.0:.{digits}f}" in text.split()


def test_tiny_values_keep_their_digits() -> None:
    frame = pd.DataFrame({"delta": [1e-5, 0.0, 0.0004, 0.25]})
    assert format_table(frame, "table").split()[1:] == ["1e-05", "0.000", "0.0004", "0.250"]
    assert format_table(frame, "table", digits=0).split()[1:] == ["1e-05", "0", "0.0004", "0"]


def test_latex_headers_are_readable() -> None:
    frame = pd.DataFrame(
        {
            "mechanism.epsilon": [1.0],
            "analysis.delta": [1e-5],
            "fdp_pld.epsilon_lb_median": [0.5],
            "game.runs": [4],
        }
    )
    header = format_table(frame, "latex").splitlines()[2]
    assert header == r"$\varepsilon$ & $\delta$ & \texttt{fdp\_pld} median $\varepsilon_{\mathrm{lb}}$ & runs \\"


def test_int_column_prints_without_decimals(df: pd.DataFrame) -> None:
    for fmt in ("table", "markdown", "latex"):
        text = format_table(df, fmt)
        assert "10.000" not in text
        assert "200.000" not in text


def test_negative_infinity_and_bool() -> None:
    frame = pd.DataFrame({"x": [-math.inf], "flag": [True]})
    assert format_table(frame, "table").splitlines()[1].split() == ["-inf", "True"]


def test_csv_keeps_full_precision_and_round_trips(df: pd.DataFrame) -> None:
    text = format_table(df, "csv")
    assert text.splitlines()[0] == "n_canaries,epsilon_analytic,epsilon_lb_median,mechanism"
    assert "0.123456789012345" in text
    back = pd.read_csv(io.StringIO(text))
    pd.testing.assert_frame_equal(back, df)


def test_csv_round_trips_random_floats() -> None:
    values = np.random.default_rng(0).standard_normal(50) * 10.0 ** np.arange(-25, 25)
    frame = pd.DataFrame({"v": values})
    back = pd.read_csv(io.StringIO(format_table(frame, "csv")))
    np.testing.assert_array_equal(back["v"].to_numpy(), values)


def test_markdown(df: pd.DataFrame) -> None:
    lines = format_table(df, "markdown").splitlines()
    assert lines[0] == "| n_canaries | epsilon_analytic | epsilon_lb_median | mechanism |"
    assert lines[1] == "|---:|---:|---:|---:|"
    assert lines[2] == "| 10 | 1.000 | 0.123 | randomized_response |"
    assert lines[3] == "| 200 | inf | none | gaussian |"
    assert len(lines) == 4


def test_latex(df: pd.DataFrame) -> None:
    text = format_table(df, "latex")
    lines = text.splitlines()
    assert lines[0] == r"\begin{tabular}{rrrr}"
    assert lines[1] == r"\toprule"
    # readable headers: the analytic ε and the metric names in LaTeX, other names escaped
    assert lines[2] == r"n\_canaries & analytic $\varepsilon$ & median $\varepsilon_{\mathrm{lb}}$ & mechanism \\"
    assert lines[3] == r"\midrule"
    assert lines[4] == r"10 & 1.000 & 0.123 & randomized\_response \\"
    assert lines[5] == r"200 & inf & none & gaussian \\"
    assert lines[6] == r"\bottomrule"
    assert lines[7] == r"\end{tabular}"
    # Every underscore is escaped (but the subscript of ε_lb).
    assert "_" not in text.replace(r"\_", "").replace(r"\varepsilon_{", "")


def test_latex_escapes_special_characters() -> None:
    frame = pd.DataFrame({"a%b": ["x&y"], "c#d": ["back\\slash"]})
    text = format_table(frame, "latex")
    assert r"a\%b & c\#d \\" in text
    assert r"x\&y & back\textbackslash{}slash \\" in text


def test_empty_frame() -> None:
    frame = pd.DataFrame({"a": pd.Series([], dtype=float), "bb": pd.Series([], dtype=int)})
    assert format_table(frame, "table") == "a  bb\n"
    assert format_table(frame, "markdown").splitlines() == ["| a | bb |", "|---:|---:|"]


@pytest.mark.parametrize("fmt", ["html", "", "CSV", "tex"])
def test_unknown_format_lists_the_formats(df: pd.DataFrame, fmt: str) -> None:
    with pytest.raises(ValueError, match=r"^fmt must be one of table, csv, markdown, latex, got ") as info:
        format_table(df, fmt)
    assert repr(fmt) in str(info.value)


# ---------------------------------------------------------------- plot_lower_bounds

MAGIC = {".png": b"\x89PNG\r\n\x1a\n", ".pdf": b"%PDF"}


@pytest.mark.parametrize("suffix", [".png", ".pdf"])
@pytest.mark.parametrize("grouped", [False, True])
def test_plot_writes_the_file(tmp_path: Path, suffix: str, grouped: bool) -> None:
    summary = _summary(groups=2 if grouped else 1)
    target = tmp_path / f"bounds{suffix}"
    out = plot_lower_bounds(summary, target, group_by=["m"] if grouped else (), title="RR")
    assert out == target
    assert isinstance(out, Path)
    data = target.read_bytes()
    assert len(data) > 1000
    assert data.startswith(MAGIC[suffix])


def test_plot_accepts_str_path_and_svg(tmp_path: Path) -> None:
    out = plot_lower_bounds(_summary(), str(tmp_path / "bounds.svg"))
    assert out == tmp_path / "bounds.svg"
    assert b"<svg" in out.read_bytes()


def test_plot_skips_rows_without_finite_analytic_epsilon(tmp_path: Path) -> None:
    summary = _summary()
    summary.loc[0, "epsilon_analytic"] = math.inf
    summary.loc[1, "epsilon_analytic"] = math.nan
    out = plot_lower_bounds(summary, tmp_path / "bounds.png")
    assert out.read_bytes().startswith(MAGIC[".png"])


@pytest.mark.parametrize(
    ("drop", "group_by"), [(["epsilon_lb_max"], []), (["epsilon_analytic", "epsilon_lb_min"], []), ([], ["absent"])]
)
def test_plot_missing_columns(tmp_path: Path, drop: list[str], group_by: list[str]) -> None:
    summary = _summary().drop(columns=drop)
    missing = drop + group_by
    with pytest.raises(ValueError, match=r"^summary must have the columns ") as info:
        plot_lower_bounds(summary, tmp_path / "bounds.png", group_by=group_by)
    for column in missing:
        assert repr(column) in str(info.value)
    assert not (tmp_path / "bounds.png").exists()


@pytest.mark.parametrize("name", ["bounds.jpg", "bounds", "bounds.png.txt"])
def test_plot_bad_suffix(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match=r"^path must end in \.png, \.pdf or \.svg, got "):
        plot_lower_bounds(_summary(), tmp_path / name)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", [math.inf, math.nan])
def test_plot_without_finite_analytic_epsilon(tmp_path: Path, value: float) -> None:
    summary = _summary().assign(epsilon_analytic=value)
    with pytest.raises(ValueError, match=r"^no grid point has a finite analytic ε"):
        plot_lower_bounds(summary, tmp_path / "bounds.png")
    assert not (tmp_path / "bounds.png").exists()


def test_plot_draws_the_bound_column_asked_for_without_a_band(tmp_path: Path) -> None:
    summary = (
        _summary()
        .drop(columns=["epsilon_lb_min", "epsilon_lb_max"])
        .assign(epsilon_lb=lambda d: d["epsilon_lb_median"] * 2)
    )
    out = plot_lower_bounds(summary, tmp_path / "pooled.svg", bound="epsilon_lb", band=None)
    assert b"<svg" in out.read_bytes()
    with pytest.raises(ValueError, match=r"^summary must have the columns \['epsilon_lb_min', 'epsilon_lb_max'\]"):
        plot_lower_bounds(summary, tmp_path / "bounds.png", bound="epsilon_lb")  # the default band is missing
    with pytest.raises(ValueError, match=r"^summary must have the columns \['pooled'\]"):
        plot_lower_bounds(summary, tmp_path / "bounds.png", bound="pooled", band=None)


@pytest.mark.parametrize(("analytic", "shown"), [(float("nan"), False), (2.0, True)])
def test_the_ladders_legend_names_the_analytic_line_only_when_one_is_drawn(analytic, shown):
    """A non-private target (PANORAMIA on a plain CNN) has no analytic ε: its panel draws no line, and the legend
    must not announce one."""
    from matplotlib.figure import Figure

    from privgame.analysis.reporting import _draw_ladder

    part = pd.DataFrame(
        {"epsilon_analytic": [analytic], "c_lb.epsilon_lb_median": [0.2], "c_lb.epsilon_lb_min": [0.1]}
        | {"c_lb.epsilon_lb_max": [0.3]}
    )
    ax = Figure().subplots()
    _draw_ladder(ax, part, ["c_lb"], [])
    assert ("analytic ε" in ax.get_legend_handles_labels()[1]) is shown


# ---------------------------------------------------------------- figure_lower_bounds: every estimator, B/W


def _estimators_summary(labels: tuple[str, ...] = ("steinke", "fdp_gaussian"), n_trials: Any = 20) -> pd.DataFrame:
    """A one-run summary of two estimators: ``<label>.epsilon_lb_{median,min,max}`` and ``<label>.ceiling``; the bare
    headline columns copy the first estimator's, as the one-run game's summary does."""
    eps = np.array([0.5, 1.0, 2.0, 4.0])
    table: dict[str, Any] = {"mechanism.epsilon": eps, "epsilon_analytic": eps}
    for j, label in enumerate(labels):
        median = (0.5 + 0.2 * j) * eps
        table |= {
            f"{label}.epsilon_lb_median": median,
            f"{label}.epsilon_lb_min": median - 0.1,
            f"{label}.epsilon_lb_max": median + 0.1,
            f"{label}.ceiling": np.full(4, 5.0 + j),
        }
    table |= {"epsilon_lb_median": table[f"{labels[0]}.epsilon_lb_median"], "n_trials": n_trials}
    return pd.DataFrame(table)


def _legend(figure: Any) -> list[str]:
    """The legend's entries: the figure's own legend (a figure of its own), else its one axes'."""
    legend = figure.legends[0] if figure.legends else figure.axes[0].get_legend()
    return [text.get_text() for text in legend.get_texts()]


def _lines(figure: Any) -> dict[str, Any]:
    (ax,) = figure.axes
    return {line.get_label(): line for line in ax.get_lines()}


def test_every_estimator_is_a_line_named_by_its_label_with_its_ceiling() -> None:
    from privgame.analysis.reporting import figure_lower_bounds

    summary = _estimators_summary()
    figure = figure_lower_bounds(summary, title="quickstart", confidence=0.95)
    assert _legend(figure) == [
        "steinke",
        "steinke: ceiling (every guess right)",
        "fdp_gaussian",
        "fdp_gaussian: ceiling (every guess right)",
        "ε lower bound = analytic ε",
        "bar: min–max over the trials",
    ]
    lines = _lines(figure)
    for label in ("steinke", "fdp_gaussian"):
        np.testing.assert_allclose(lines[label].get_xdata(), summary["epsilon_analytic"])
        np.testing.assert_allclose(lines[label].get_ydata(), summary[f"{label}.epsilon_lb_median"])
        ceiling = lines[f"{label}: ceiling (every guess right)"]
        np.testing.assert_allclose(ceiling.get_ydata(), summary[f"{label}.ceiling"])
        # the ceiling has its estimator's marker and dash pattern, thinner and hollow
        assert ceiling.get_marker() == lines[label].get_marker()
        assert ceiling.get_linestyle() == lines[label].get_linestyle()
        assert ceiling.get_linewidth() < lines[label].get_linewidth() and ceiling.get_markerfacecolor() == "none"
    (ax,) = figure.axes
    assert len(ax.collections) == 2  # one min–max bar set per estimator
    bars = ax.collections[1].get_segments()
    low, high = summary["fdp_gaussian.epsilon_lb_min"], summary["fdp_gaussian.epsilon_lb_max"]
    np.testing.assert_allclose([s[:, 1] for s in bars], np.column_stack([low, high]))
    assert ax.get_ylim()[1] >= 6.0  # the highest ceiling is in view


def test_the_lines_differ_in_marker_and_dash_not_only_in_colour() -> None:
    """Black and white: the first 28 lines each have a (marker, dash) pair of their own, and the diagonal none."""
    from privgame.analysis.reporting import LINE_DASHES, LINE_MARKERS, figure_lower_bounds, line_style

    pairs = {(line_style(i)["marker"], line_style(i)["linestyle"]) for i in range(len(LINE_MARKERS) * len(LINE_DASHES))}
    assert len(pairs) == 28
    labels = ("a", "b", "c", "d", "e")
    lines = _lines(figure_lower_bounds(_estimators_summary(labels)))
    drawn = {(lines[lab].get_marker(), lines[lab].get_linestyle()) for lab in labels}
    assert len(drawn) == len(labels)
    assert lines["ε lower bound = analytic ε"].get_marker() in ("None", "", None)


@pytest.mark.parametrize(
    ("n_trials", "expected"), [(20, "n = 20 trials per ε"), ([20, 18, 20, 19], "n = 18–20 trials per ε")]
)
def test_the_title_states_the_trials_and_the_confidence(n_trials: Any, expected: str) -> None:
    from privgame.analysis.reporting import figure_lower_bounds

    figure = figure_lower_bounds(
        _estimators_summary(n_trials=n_trials), title="quickstart", subtitle="δ = 0; m = 10000", confidence=0.95
    )
    assert figure.axes[0].get_title() == f"quickstart\n{expected}, 95 % confidence\nδ = 0; m = 10000"


def test_a_pooled_bound_states_its_runs_and_a_confidence_sweep_its_levels() -> None:
    from privgame.analysis.reporting import figure_lower_bounds

    summary = pd.DataFrame(
        {
            "analysis.confidence": [0.9, 0.95, 0.9, 0.95],
            "epsilon_analytic": [1.0, 1.0, 2.0, 2.0],
            "gdp.epsilon_lb": [0.5, 0.4, 1.2, 1.1],
            "clopper_pearson.epsilon_lb": [0.3, 0.2, 0.8, 0.7],
            "epsilon_lb": [0.5, 0.4, 1.2, 1.1],
            "n_runs": 1000,
            "n_trials": 5,
        }
    )
    figure = figure_lower_bounds(
        summary, group_by=["analysis.confidence"], bound="epsilon_lb", band=None, confidence=0.5
    )
    assert figure.axes[0].get_title() == "n = 5 trials per point (1,000 runs pooled), 90 %, 95 % confidence"
    assert _legend(figure) == [
        "confidence=0.9, gdp",
        "confidence=0.9, clopper_pearson",
        "confidence=0.95, gdp",
        "confidence=0.95, clopper_pearson",
        "ε lower bound = analytic ε",
    ]
    assert not figure.axes[0].collections  # no bar around a pooled bound
    np.testing.assert_allclose(_lines(figure)["confidence=0.95, gdp"].get_ydata(), [0.4, 1.1])


def test_a_summary_without_estimator_columns_draws_its_bare_headline_and_ceiling() -> None:
    from privgame.analysis.reporting import figure_lower_bounds

    summary = _summary().assign(ceiling=3.0)
    figure = figure_lower_bounds(summary)
    assert _legend(figure)[:2] == ["epsilon_lb_median", "epsilon_lb_median: ceiling (every guess right)"]
    assert figure.axes[0].get_title() == ""  # no name, no trial count, no confidence given: nothing claimed


def test_estimators_chooses_and_orders_the_lines() -> None:
    from privgame.analysis.reporting import figure_lower_bounds

    summary = _estimators_summary()
    figure = figure_lower_bounds(summary, estimators=["fdp_gaussian"])
    assert [t for t in _legend(figure) if not t.startswith(("ε", "bar"))] == [
        "fdp_gaussian",
        "fdp_gaussian: ceiling (every guess right)",
    ]
    with pytest.raises(ValueError, match=r"^summary must have the columns \['gdp.epsilon_lb_median', "):
        figure_lower_bounds(summary, estimators=["gdp"])
    with pytest.raises(TypeError, match=r"^estimators must be a sequence of estimator labels or None, got 'steinke'\."):
        figure_lower_bounds(summary, estimators="steinke")


def test_an_estimator_without_its_band_or_a_ceiling_of_nan() -> None:
    from privgame.analysis.reporting import figure_lower_bounds

    summary = _estimators_summary().drop(columns=["fdp_gaussian.epsilon_lb_max"])
    with pytest.raises(ValueError, match=r"^summary must have the columns \['fdp_gaussian.epsilon_lb_max'\]\.$"):
        figure_lower_bounds(summary)
    summary = _estimators_summary().assign(**{"steinke.ceiling": math.nan})
    assert "steinke: ceiling (every guess right)" not in _legend(figure_lower_bounds(summary))


@pytest.mark.parametrize("confidence", [0.0, 1.0, 95, math.nan, [0.9, 2.0], "0.95", True])
def test_a_confidence_out_of_range_is_refused(confidence: Any) -> None:
    from privgame.analysis.reporting import figure_lower_bounds

    with pytest.raises(ValueError, match=r"^confidence must be a number in \(0, 1\) or a sequence of them, got "):
        figure_lower_bounds(_estimators_summary(), confidence=confidence)


def test_into_axes_of_your_own_the_legend_goes_into_the_axes() -> None:
    from matplotlib.figure import Figure

    from privgame.analysis.reporting import figure_lower_bounds

    own = Figure()
    ax = own.subplots()
    assert figure_lower_bounds(_estimators_summary(), ax=ax, confidence=0.95) is own
    assert not own.legends and ax.get_legend() is not None
    assert "steinke" in [t.get_text() for t in ax.get_legend().get_texts()]
    assert "95 % confidence" in ax.get_title()


def test_numbers_below_a_hundredth_keep_three_significant_digits() -> None:
    """A realised FPR of 0.000875 printed as 0.001 would read as the nominal 0.001; below 10^(1 - digits) a number
    keeps `digits` significant digits instead of `digits` decimals."""
    frame = pd.DataFrame({"fpr": [0.000875, 0.0036, 0.01, 0.0999, -0.0012]})
    assert format_table(frame, "table").split()[1:] == ["0.000875", "0.0036", "0.010", "0.100", "-0.0012"]
