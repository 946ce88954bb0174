"""Tables and figures for papers: a summary DataFrame in, text or an image out."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from privgame.analysis._figures import check_suffix, new_axes, root_figure, save

if TYPE_CHECKING:  # tables arrive as DataFrames; pandas itself is not needed to format them
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "LINE_DASHES",
    "LINE_MARKERS",
    "PARAMETER_NAMES",
    "TABLE_FORMATS",
    "estimator_labels_of",
    "figure_estimator_ladder",
    "figure_lower_bounds",
    "figure_roc_curves",
    "format_table",
    "ladder_latex",
    "latex_header",
    "line_style",
    "plot_estimator_ladder",
    "plot_lower_bounds",
    "plot_roc_curves",
]

TableFormat = Literal["table", "csv", "markdown", "latex"]
TABLE_FORMATS: tuple[str, ...] = ("table", "csv", "markdown", "latex")


def _cell(value: Any, digits: int) -> str:
    if isinstance(value, bool | np.bool_):
        return str(value)
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        x = float(value)
        if math.isnan(x):
            return "none"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        # below 10^(1 - digits) (0.01 at 3 digits) fixed decimals would drop most of a number's digits (a realised
        # FPR of 0.000875 as 0.001, a δ of 1e-5 as 0.000): such numbers keep `digits` significant digits instead
        small = 10.0 ** (1 - digits) if digits >= 3 else min(1e-3, 0.5 * 10.0**-digits)
        if x != 0 and abs(x) < small:
            return f"{x:.{digits}g}"
        return f"{x:.{digits}f}"
    return str(value)


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "_": r"\_",
    "%": r"\%",
    "&": r"\&",
    "#": r"\#",
    "$": r"\$",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def _latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(char, char) for char in text)


def format_table(df: pd.DataFrame, fmt: str = "table", *, digits: int = 3) -> str:
    """Render ``df`` as text.

    Parameters
    ----------
    df : DataFrame
        One row per grid point (e.g. the output of ``privgame report``).
    fmt : {"table", "csv", "markdown", "latex"}, default="table"
        ``table`` is aligned plain text for the terminal; ``csv`` keeps full precision; ``markdown`` is a pipe
        table; ``latex`` a booktabs ``tabular`` for papers.
    digits : int, default=3
        Decimals of floats in ``table``, ``markdown`` and ``latex``.  NaN prints as "none" (no analytic claim).

    Returns
    -------
    str
    """
    if fmt not in TABLE_FORMATS:
        raise ValueError(f"fmt must be one of {', '.join(TABLE_FORMATS)}, got {fmt!r}.")
    if fmt == "csv":
        return str(df.to_csv(index=False))
    header = [str(c) for c in df.columns]
    body = [[_cell(v, digits) for v in row] for row in df.itertuples(index=False, name=None)]
    if fmt == "markdown":
        header = [h.replace("|", r"\|") for h in header]
        body = [[c.replace("|", r"\|") for c in r] for r in body]
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" for _ in header) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in body]
        return "\n".join(lines) + "\n"
    if fmt == "latex":
        lines = [
            r"\begin{tabular}{" + "r" * len(header) + "}",
            r"\toprule",
            " & ".join(latex_header(h) for h in header) + r" \\",
            r"\midrule",
            *(" & ".join(_latex_escape(c) for c in r) + r" \\" for r in body),
            r"\bottomrule",
            r"\end{tabular}",
        ]
        return "\n".join(lines) + "\n"
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in body]
    return "\n".join(lines) + "\n"


def plot_lower_bounds(
    summary: pd.DataFrame,
    path: str | Path,
    *,
    group_by: Sequence[str] = (),
    title: str | None = None,
    subtitle: str | None = None,
    bound: str = "epsilon_lb_median",
    band: tuple[str, str] | None = ("epsilon_lb_min", "epsilon_lb_max"),
    estimators: Sequence[str] | None = None,
    confidence: float | Sequence[float] | None = None,
    own_estimator: str | None = None,
) -> Path:
    """Plot every estimator's empirical ε lower bound and its ceiling against the analytic ε, with the diagonal,
    into a file.

    Parameters
    ----------
    summary : DataFrame
        As in :func:`figure_lower_bounds`.
    path : str or Path
        Output file; the suffix (``.png``, ``.pdf``, ``.svg``) chooses the format.
    group_by, title, subtitle, bound, band, estimators, confidence, own_estimator
        As in :func:`figure_lower_bounds`, which draws the figure.

    Returns
    -------
    Path
        The written file.
    """
    out = check_suffix(path)
    figure = figure_lower_bounds(
        summary,
        group_by=group_by,
        title=title,
        subtitle=subtitle,
        bound=bound,
        band=band,
        estimators=estimators,
        confidence=confidence,
        own_estimator=own_estimator,
    )
    return save(figure, out)


#: the lower-bound figure's lines: marker and dash pattern, so that no line is told apart by its colour alone
#: (7 markers and 4 dash patterns: the first 28 lines each get a pair of their own)
LINE_MARKERS: tuple[str, ...] = ("o", "s", "^", "D", "v", "P", "X")
LINE_DASHES: tuple[str, ...] = ("-", "--", "-.", ":")

#: how the lower-bound figure's axis names the games' headline columns
_BOUND_TEXT = {
    "epsilon_lb_median": "median over the trials",
    "epsilon_lb": "pooled over every run: epsilon_lb",
}

#: points between the min–max bars of neighbouring lines at the same analytic ε, so that each stays visible
_DODGE_POINTS = 4.0


def line_style(index: int) -> dict[str, Any]:
    """The colour, marker and dash pattern of the lower-bound figure's line ``index`` (0, 1, ...)."""
    return {
        "color": f"C{index % 10}",
        "marker": LINE_MARKERS[index % len(LINE_MARKERS)],
        "linestyle": LINE_DASHES[index % len(LINE_DASHES)],
    }


def _lower_bound_labels(summary: pd.DataFrame, bound: str, estimators: Sequence[str] | None) -> list[str]:
    """The estimators to draw: ``estimators`` as given, else every ``<label>.<bound>`` column's label in column
    order; ``[""]`` (the bare ``bound`` column) where the summary has none."""
    if estimators is not None:
        if isinstance(estimators, str):
            raise TypeError(f"estimators must be a sequence of estimator labels or None, got {estimators!r}.")
        return list(estimators) or [""]
    suffix = f".{bound}"
    labels = [
        c.removesuffix(suffix)
        for c in summary.columns
        if c.endswith(suffix) and not c.startswith(("game.", "mechanism.", "attack.", "analysis."))
    ]
    return labels or [""]


def _trials_text(summary: pd.DataFrame, *, per: str = "ε") -> str | None:
    """``n = 20 trials per ε`` (``n = 18–20`` where the grid points differ; a multi-run audit adds its pooled
    runs) from the summary's ``n_trials`` (and ``n_runs``) column; None without one."""
    if "n_trials" not in summary.columns:
        return None
    counts = summary["n_trials"].dropna().astype(int)
    if counts.empty:
        return None
    low, high = int(counts.min()), int(counts.max())
    text = f"n = {_span(low, high)} trial{'s' if high != 1 else ''} per {per}"
    if "n_runs" in summary.columns and summary["n_runs"].notna().any():
        runs = summary["n_runs"].dropna().astype(int)
        text += f" ({_span(int(runs.min()), int(runs.max()))} runs pooled)"
    return text


def _span(low: int, high: int) -> str:
    return f"{low:,}" if low == high else f"{low:,}–{high:,}"


def _confidence_text(confidence: float | Sequence[float]) -> str:
    """``95 % confidence`` (``90 %, 95 % confidence`` for several)."""
    values = [confidence] if isinstance(confidence, int | float | np.floating) else list(confidence)
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float | np.floating) or not 0 < value < 1:
            raise ValueError(f"confidence must be a number in (0, 1) or a sequence of them, got {confidence!r}.")
    return ", ".join(f"{100 * float(v):g} %" for v in sorted(set(values))) + " confidence"


def figure_lower_bounds(
    summary: pd.DataFrame,
    *,
    group_by: Sequence[str] = (),
    title: str | None = None,
    subtitle: str | None = None,
    bound: str = "epsilon_lb_median",
    band: tuple[str, str] | None = ("epsilon_lb_min", "epsilon_lb_max"),
    estimators: Sequence[str] | None = None,
    confidence: float | Sequence[float] | None = None,
    own_estimator: str | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Every estimator's empirical ε lower bound against the analytic ε, with its min–max over the trials, its
    ceiling and the diagonal, as a figure (no file written).

    One line per estimator (and per group of ``group_by``), named by the estimator's label in the legend; each line
    has a marker and a dash pattern of its own (:func:`line_style`), so the figure reads in black and white. Where
    the game has a band (``band``), each point carries a bar from the min to the max over the trials; the bars of
    the lines at one analytic ε are set a few points apart so that none hides another.  The estimator's ceiling
    (``<label>.ceiling``: the bound its guesses would give were every guess right, docs/estimators.md#ceilings) is
    drawn as a thin line of the same style with hollow markers, named "<label>: ceiling" in the legend.  The title
    holds ``title``, the number of trials per grid point (``n_trials``; a multi-run audit's pooled ``n_runs``) and
    the confidence, then ``subtitle``.

    Parameters
    ----------
    summary : DataFrame
        One row per grid point: ``epsilon_analytic`` and, per estimator label, ``<label>.<bound>``, the two
        ``<label>.<band>`` columns and optionally ``<label>.ceiling``; a summary without labelled columns is drawn
        from its bare ``bound``, ``band`` and ``ceiling`` columns.  ``n_trials`` (and ``n_runs``) go into the title
        where present; an ``analysis.confidence`` column (an analysis sweep) gives the confidence.
    group_by : sequence of str, default=()
        Columns whose values get one line each (e.g. a swept number of canaries), per estimator.
    title : str or None, default=None
        The experiment's name.
    subtitle : str or None, default=None
        A line of context under the trials and the confidence (δ, m, the guessing rule).
    bound : str, default="epsilon_lb_median"
        The metric drawn as the lower bound: the game's headline figure (the median over trials of a one-run audit;
        the pooled ``epsilon_lb`` of a multi-run audit, whose single trials bound little).
    band : pair of str or None, default=("epsilon_lb_min", "epsilon_lb_max")
        The metrics of the min–max bar around it (None: none, as for a pooled bound).
    estimators : sequence of str or None, default=None
        The estimator labels to draw, in this order; None: every ``<label>.<bound>`` column of ``summary``, in
        column order.
    confidence : float, sequence of float or None, default=None
        The confidence of every bound, for the title (an ``analysis.confidence`` column overrides it); None: not
        stated.
    own_estimator : str or None, default=None
        The legend's name of the bare ``bound`` column, drawn where the summary has no ``<label>.<bound>`` column:
        the game's own estimator (``Game.headline_estimator``: "steinke" for the one-run audit); None: the column's
        name.
    ax : matplotlib Axes or None, default=None
        Draw into this axes instead of a new 5.5 × 5 inch figure (the legend then goes inside the axes, the title
        above it).

    Returns
    -------
    Figure
        The figure drawn (``ax``'s figure when given); a plain Figure, not registered with pyplot.

    Raises
    ------
    ValueError
        If a column is missing, no grid point has a finite analytic ε, or ``confidence`` is not in (0, 1).
    TypeError
        If ``estimators`` is a single string.
    """
    labels = _lower_bound_labels(summary, bound, estimators)

    def column(label: str, metric: str) -> str:
        return f"{label}.{metric}" if label else metric

    required = ["epsilon_analytic"] + [column(lab, m) for lab in labels for m in (bound, *(band or ()))]
    missing = [c for c in required + list(group_by) if c not in summary.columns]
    if missing:
        raise ValueError(f"summary must have the columns {missing}.")
    if "analysis.confidence" in summary.columns:
        confidence = [float(v) for v in summary["analysis.confidence"].dropna()]
    stated = _confidence_text(confidence) if confidence is not None else None
    data = summary[np.isfinite(summary["epsilon_analytic"].to_numpy(dtype=float))]
    if data.empty:
        raise ValueError("no grid point has a finite analytic ε to plot against.")
    own = ax is None
    figure, axes = new_axes(ax, figsize=(5.5, 5.0), what="the lower-bound figure")
    ax = axes[0][0]
    groups = list(data.groupby(list(group_by), sort=True)) if group_by else [((), data)]
    n_lines = len(groups) * len(labels)
    top = float(np.nanmax(data["epsilon_analytic"]))
    highest = top
    index = 0
    for key, part in groups:
        part = part.sort_values("epsilon_analytic")
        x = part["epsilon_analytic"].to_numpy(dtype=float)
        group = ", ".join(
            f"{PARAMETER_NAMES.get(c, (c, c))[0]}={v:g}" if isinstance(v, float) else f"{c}={v}"
            for c, v in zip(group_by, key if isinstance(key, tuple) else (key,), strict=True)
        )
        for label in labels:
            name = ", ".join(p for p in (group, label or own_estimator or bound) if p)
            style = line_style(index)
            shift = (index - (n_lines - 1) / 2) * _DODGE_POINTS
            where = ax.transData if shift == 0 else _shifted(ax, shift)
            y = part[column(label, bound)].to_numpy(dtype=float)
            ax.plot(x, y, label=name, linewidth=1.5, markersize=5, transform=where, **style)
            drawn = [y]
            if band is not None:
                low = part[column(label, band[0])].to_numpy(dtype=float)
                high = part[column(label, band[1])].to_numpy(dtype=float)
                ax.vlines(x, low, high, colors=style["color"], linewidth=1.0, transform=where)
                drawn += [low, high]
            ceiling_column = column(label, "ceiling")
            if ceiling_column in part.columns:
                ceiling = part[ceiling_column].to_numpy(dtype=float)
                if np.isfinite(ceiling).any():
                    ax.plot(
                        x,
                        ceiling,
                        label=f"{name}: ceiling (every guess right)",
                        linewidth=0.8,
                        markersize=4,
                        markerfacecolor="none",
                        transform=where,
                        **style,
                    )
                    drawn.append(ceiling)
            values = np.concatenate(drawn)
            if np.isfinite(values).any():
                highest = max(highest, float(np.nanmax(np.where(np.isfinite(values), values, np.nan))))
            index += 1
    ax.plot([0, top], [0, top], color="grey", linewidth=1, label="ε lower bound = analytic ε")
    if band is not None:
        ax.plot([], [], color="black", marker="|", markersize=9, linestyle="none", label="bar: min–max over the trials")
    ax.set_xlabel("analytic ε")
    ax.set_ylabel(f"empirical ε lower bound ({_BOUND_TEXT.get(bound, bound)})")
    ax.set_xlim(0, top * 1.05)
    ax.set_ylim(0, highest * 1.05)
    heading = [title] if title else []
    facts = [t for t in (_trials_text(data, per="point" if group_by else "ε"), stated) if t]
    if facts:
        heading.append(", ".join(facts))
    if subtitle:
        heading.append(subtitle)
    if heading:
        ax.set_title("\n".join(heading), fontsize="small")
    if own:
        handles, names = ax.get_legend_handles_labels()
        figure.legend(handles, names, loc="outside lower center", ncols=2, fontsize="x-small")
    else:
        ax.legend(loc="best", fontsize="x-small")
    return root_figure(figure)


def _shifted(ax: Axes, points: float) -> Any:
    """``ax``'s data coordinates moved ``points`` typographic points to the right (a line's dodge)."""
    from matplotlib.transforms import offset_copy

    return offset_copy(ax.transData, fig=root_figure(ax.figure), x=points, y=0.0, units="points")


def plot_roc_curves(
    panels: Mapping[str, Mapping[str, tuple[NDArray[np.float64], NDArray[np.float64]]]],
    path: str | Path,
    *,
    title: str | None = None,
    subtitle: str | None = None,
) -> Path:
    """Log–log ROC curves, one panel per evaluation, into a file (``.png``, ``.pdf`` or ``.svg``); the other
    parameters as in :func:`figure_roc_curves`, which draws the figure.

    Returns
    -------
    Path
        The written file.
    """
    out = check_suffix(path)
    return save(figure_roc_curves(panels, title=title, subtitle=subtitle), out)


def figure_roc_curves(
    panels: Mapping[str, Mapping[str, tuple[NDArray[np.float64], NDArray[np.float64]]]],
    *,
    title: str | None = None,
    subtitle: str | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Log–log ROC curves, one panel per evaluation (e.g. naive and post-processed), one curve per setting.

    Parameters
    ----------
    panels : mapping of str to mapping of str to (fpr, tpr)
        ``{panel title: {curve label: (fpr grid, tpr)}}``; FPRs in (0, 1].
    title, subtitle : str or None, default=None
        The figure's title (the experiment's name) and a line of context under it.
    ax : matplotlib Axes or None, default=None
        Draw the one panel into this axes (the title goes above the panel's own); only for a single panel.

    Returns
    -------
    Figure
        The figure drawn (``ax``'s figure when given); a plain Figure, not registered with pyplot.

    Raises
    ------
    ValueError
        If ``panels`` is empty, or ``ax`` is given for more than one panel.
    """
    if not panels:
        raise ValueError("panels must hold at least one panel of curves, got none.")
    own = ax is None
    figure, axes = new_axes(ax, 1, len(panels), figsize=(4.6 * len(panels), 4.2), what="the ROC figure")
    heading = (title or "") + (f"\n{subtitle}" if title and subtitle else "")
    for ax, (name, curves) in zip(axes[0], panels.items(), strict=True):
        low = 1.0
        for label, (fpr, tpr) in curves.items():
            f, t = np.asarray(fpr, dtype=float), np.asarray(tpr, dtype=float)
            keep = (f > 0) & (t > 0)
            if keep.any():
                ax.plot(f[keep], t[keep], label=label, linewidth=1.5)
                low = min(low, float(f[keep].min()))
        ax.plot([low, 1.0], [low, 1.0], color="grey", linestyle="--", linewidth=1, label="chance (TPR = FPR)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(low, 1.0)
        ax.set_ylim(low, 1.0)
        ax.set_xlabel("false-positive rate")
        ax.set_ylabel("true-positive rate")
        ax.set_title(name if own or not heading else f"{heading}\n{name}", fontsize="medium")
        ax.legend(loc="lower right", fontsize="x-small")
    if own and heading:
        figure.suptitle(heading, fontsize="medium")
    return root_figure(figure)


#: Readable names of the parameters a ladder sweeps (LaTeX and figure headers).
PARAMETER_NAMES: dict[str, tuple[str, str]] = {
    "mechanism.epsilon": ("ε", r"$\varepsilon$"),
    "mechanism.sigma": ("σ", r"$\sigma$"),
    "mechanism.noise_multiplier": ("σ", r"$\sigma$"),
    "game.m": ("m", r"$m$"),
    "analysis.confidence": ("confidence", "confidence"),
    "analysis.delta": ("δ", r"$\delta$"),
    "epsilon_analytic": ("analytic ε", r"analytic $\varepsilon$"),
}

#: readable LaTeX for the summary columns' metric names (after an estimator's ``label.``, or alone)
_METRIC_NAMES: dict[str, str] = {
    "epsilon_lb": r"$\varepsilon_{\mathrm{lb}}$",
    "epsilon_lb_median": r"median $\varepsilon_{\mathrm{lb}}$",
    "epsilon_lb_min": r"min $\varepsilon_{\mathrm{lb}}$",
    "epsilon_lb_max": r"max $\varepsilon_{\mathrm{lb}}$",
    "tightness": "tightness",
    "n_trials": "trials",
    "n_runs": "runs",
}


def latex_header(column: str) -> str:
    """A summary column's LaTeX header: ε for ``mechanism.epsilon``, ``\texttt{fdp_pld}`` median
    :math:`\varepsilon_{lb}` for ``fdp_pld.epsilon_lb_median``; other names escaped as they are."""
    if column in PARAMETER_NAMES:
        return PARAMETER_NAMES[column][1]
    if column in _METRIC_NAMES:
        return _METRIC_NAMES[column]
    head, dot, metric = column.rpartition(".")
    if dot and metric in _METRIC_NAMES and not head.startswith(("game", "mechanism", "attack", "analysis")):
        return rf"\texttt{{{_latex_escape(head)}}} {_METRIC_NAMES[metric]}"
    if column.startswith(("game.", "mechanism.", "attack.", "analysis.")):
        return _latex_escape(column.partition(".")[2])
    return _latex_escape(column)


_LATEX_UNICODE = {
    "ε": r"$\varepsilon$",
    "δ": r"$\delta$",
    "σ": r"$\sigma$",
    "μ": r"$\mu$",
    "k₊": r"$k_+$",
    "k₋": r"$k_-$",
}

_FOOTNOTE = (
    "A lower bound holds with the stated confidence in each repetition, so a bound above the analytic ε in a few "
    "repetitions (the max) is expected."
)


def estimator_labels_of(summary: pd.DataFrame) -> list[str]:
    """The estimators of a summary, from its ``<label>.epsilon_lb_median`` columns, in column order."""
    return [c.removesuffix(".epsilon_lb_median") for c in summary.columns if c.endswith(".epsilon_lb_median")]


def plot_estimator_ladder(
    summary: pd.DataFrame,
    swept: Sequence[str],
    path: str | Path,
    *,
    title: str,
    subtitle: str,
    ylabel: str = "ε lower bound (median;\nbar: min–max over repetitions)",
) -> tuple[Path, list[str]]:
    """Every estimator's median bound, its min–max over the repetitions as a bar, against the analytic ε, into a
    file (``.png``, ``.pdf`` or ``.svg``); the other parameters as in :func:`figure_estimator_ladder`, which draws
    the figure.

    Returns
    -------
    (Path, list of str)
        The written file, and the estimators left out because they gave no bound anywhere (with a note).
    """
    labels = estimator_labels_of(summary)
    if not labels:
        raise ValueError("the summary has no estimator columns (<label>.epsilon_lb_median); set [analysis] estimators.")
    out = check_suffix(path)
    figure, omitted = figure_estimator_ladder(summary, swept, title=title, subtitle=subtitle, ylabel=ylabel)
    return save(figure, out), omitted


def figure_estimator_ladder(
    summary: pd.DataFrame,
    swept: Sequence[str],
    *,
    title: str,
    subtitle: str,
    ylabel: str = "ε lower bound (median;\nbar: min–max over repetitions)",
    ax: Axes | None = None,
) -> tuple[Figure, list[str]]:
    """Every estimator's median bound, its min–max over the repetitions as a bar, against the analytic ε.

    Parameters
    ----------
    summary : DataFrame
        One row per grid point with ``epsilon_analytic`` and each estimator's ``<label>.epsilon_lb_median``,
        ``_min`` and ``_max`` (``[analysis] estimators``).
    swept : sequence of str
        The swept columns; the grid points are labelled by them.
    title, subtitle : str
        The experiment's name, and its context (confidence, δ, m, the guessing rule).
    ylabel : str, optional
        The y axis' label.
    ax : matplotlib Axes or None, default=None
        Draw into this axes (the title goes above it); only without an analysis sweep, whose settings each get a
        panel.

    Returns
    -------
    (Figure, list of str)
        The figure drawn (``ax``'s figure when given; a plain Figure, not registered with pyplot), and the
        estimators left out because they gave no bound anywhere (with a note).

    Raises
    ------
    ValueError
        If the summary has no estimator columns, or ``ax`` is given for more than one panel.
    """
    labels = estimator_labels_of(summary)
    if not labels:
        raise ValueError("the summary has no estimator columns (<label>.epsilon_lb_median); set [analysis] estimators.")
    shown = [lab for lab in labels if np.isfinite(summary[f"{lab}.epsilon_lb_median"].to_numpy(dtype=float)).any()]
    omitted = [lab for lab in labels if lab not in shown]
    # an analysis sweep (confidence, δ) gets one panel per setting: rows the first swept key, columns the second
    panel_keys = [c for c in swept if c.startswith("analysis.")]
    along = [c for c in swept if c not in panel_keys]
    rows_of = list(dict.fromkeys(summary[panel_keys[0]])) if panel_keys else [None]
    cols_of = list(dict.fromkeys(summary[panel_keys[1]])) if len(panel_keys) > 1 else [None]
    n_points = len(summary) // (len(rows_of) * len(cols_of))
    width_each = max(4.0, 1.2 * n_points + 1.5) if panel_keys else max(6.0, 1.5 * n_points + 2.5)
    own = ax is None
    figure, axes = new_axes(
        ax,
        len(rows_of),
        len(cols_of),
        figsize=(width_each * len(cols_of) + 0.5, 3.2 * len(rows_of) + 1.2),
        what="the estimator ladder",
        sharey=True,
    )
    for i, row_value in enumerate(rows_of):
        for j, col_value in enumerate(cols_of):
            part = summary
            heading = []
            for key, value in (
                (panel_keys[0] if panel_keys else None, row_value),
                (panel_keys[1] if len(panel_keys) > 1 else None, col_value),
            ):
                if key is not None:
                    part = part[part[key] == value]
                    heading.append(f"{PARAMETER_NAMES.get(key, (key, key))[0]} = {value:g}")
            ax = axes[i][j]
            _draw_ladder(ax, part, shown, along)
            if heading:
                ax.set_title(", ".join(heading), fontsize="small")
            if j == 0:
                ax.set_ylabel(ylabel, fontsize="small")
    if own:
        figure.suptitle(f"{title}\n{subtitle}", fontsize="medium")
    else:  # the caller's figure keeps its own title
        axes[0][0].set_title(f"{title}\n{subtitle}", fontsize="small")
    note = f"no bound at this δ: {', '.join(omitted)}" if omitted else None
    if note:
        axes[-1][-1].text(
            0.99, 0.01, note, transform=axes[-1][-1].transAxes, ha="right", va="bottom", fontsize="x-small"
        )
    axes[0][0].legend(fontsize="x-small", loc="upper left")
    return root_figure(figure), omitted


def _draw_ladder(ax: Any, part: pd.DataFrame, labels: Sequence[str], along: Sequence[str]) -> None:
    """One panel of the estimator ladder: the grid points of ``part`` along x (labelled by the ``along`` columns),
    each estimator's median with its min–max bar, and the analytic ε as a dashed line."""
    points = [
        ", ".join(
            f"{PARAMETER_NAMES.get(c, (c, c))[0]} = {row[c]:g}" if isinstance(row[c], float) else f"{c} = {row[c]}"
            for c in along
        )
        or f"point {i}"
        for i, (_, row) in enumerate(part.iterrows())
    ]
    x = np.arange(len(points))
    width = 0.8 / max(len(labels), 1)
    for j, label in enumerate(labels):
        median = part[f"{label}.epsilon_lb_median"].to_numpy(dtype=float)
        low = part[f"{label}.epsilon_lb_min"].to_numpy(dtype=float)
        high = part[f"{label}.epsilon_lb_max"].to_numpy(dtype=float)
        offset = x + (j - (len(labels) - 1) / 2) * width
        ax.errorbar(offset, median, yerr=[median - low, high - median], fmt="o", capsize=3, label=label)
    analytic = part["epsilon_analytic"].to_numpy(dtype=float)
    for i, value in enumerate(analytic):
        if math.isfinite(value):
            ax.hlines(value, i - 0.45, i + 0.45, colors="black", linestyles="--", linewidth=1.2)
    if np.isfinite(analytic).any():  # no entry for a line never drawn (a non-private target claims no ε)
        ax.plot([], [], color="black", linestyle="--", label="analytic ε")
    ax.set_xticks(x, points, fontsize="small")


def ladder_latex(summary: pd.DataFrame, swept: Sequence[str], *, caption: str, digits: int = 2) -> str:
    """The ladder as a booktabs table: the swept parameters and the analytic ε, then one column per estimator
    (median and min–max over the repetitions) and its tightness (median / analytic ε); the caption carries the
    context and the footnote on bounds above the analytic ε."""
    labels = [
        lab
        for lab in estimator_labels_of(summary)
        if np.isfinite(summary[f"{lab}.epsilon_lb_median"].to_numpy(dtype=float)).any()
    ]
    head = [latex_header(c) for c in (*swept, "epsilon_analytic")]
    head += [rf"\texttt{{{_latex_escape(lab)}}}" for lab in labels]
    head += [rf"tightness \texttt{{{_latex_escape(lab)}}}" for lab in labels]
    text = _latex_escape(f"{caption} {_FOOTNOTE}")
    for char, tex in _LATEX_UNICODE.items():
        text = text.replace(char, tex)
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        rf"\caption{{{text}}}",
        r"\begin{tabular}{" + "r" * len(head) + "}",
        r"\toprule",
        " & ".join(head) + r" \\",
        r"\midrule",
    ]
    for _, row in summary.iterrows():
        cells = [_cell(row[c], digits) for c in (*swept, "epsilon_analytic")]
        for lab in labels:
            median, low, high = (row[f"{lab}.epsilon_lb_{k}"] for k in ("median", "min", "max"))
            cells.append(f"{_cell(median, digits)} ({_cell(low, digits)}--{_cell(high, digits)})")
        cells += [_cell(row.get(f"{lab}.tightness", math.nan), digits) for lab in labels]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"
