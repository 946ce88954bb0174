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
    "PARAMETER_NAMES",
    "TABLE_FORMATS",
    "estimator_labels_of",
    "figure_estimator_ladder",
    "figure_lower_bounds",
    "figure_roc_curves",
    "format_table",
    "ladder_latex",
    "latex_header",
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
        if x != 0 and abs(x) < min(1e-3, 0.5 * 10.0**-digits):  # a δ of 1e-5 would print as 0.000
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
    bound: str = "epsilon_lb_median",
    band: tuple[str, str] | None = ("epsilon_lb_min", "epsilon_lb_max"),
) -> Path:
    """Plot the empirical ε lower bound against the analytic ε, with the diagonal, into a file.

    Parameters
    ----------
    summary : DataFrame
        Columns ``epsilon_analytic``, ``bound`` and the two ``band`` columns.
    path : str or Path
        Output file; the suffix (``.png``, ``.pdf``, ``.svg``) chooses the format.
    group_by, title, bound, band
        As in :func:`figure_lower_bounds`, which draws the figure.

    Returns
    -------
    Path
        The written file.
    """
    figure = figure_lower_bounds(summary, group_by=group_by, title=title, bound=bound, band=band)
    return save(figure, check_suffix(path))


def figure_lower_bounds(
    summary: pd.DataFrame,
    *,
    group_by: Sequence[str] = (),
    title: str | None = None,
    bound: str = "epsilon_lb_median",
    band: tuple[str, str] | None = ("epsilon_lb_min", "epsilon_lb_max"),
    ax: Axes | None = None,
) -> Figure:
    """The empirical ε lower bound against the analytic ε, with the diagonal, as a figure (no file written).

    Parameters
    ----------
    summary : DataFrame
        Columns ``epsilon_analytic``, ``bound`` and the two ``band`` columns.
    group_by : sequence of str, default=()
        Columns whose values get one line each (e.g. a swept number of canaries).
    title : str or None, default=None
    bound : str, default="epsilon_lb_median"
        The column drawn as the lower bound: the game's headline figure (the median over trials of a one-run
        audit; the pooled ``epsilon_lb`` of a multi-run audit, whose single trials bound little).
    band : pair of str or None, default=("epsilon_lb_min", "epsilon_lb_max")
        The columns of the shaded band around it (None: none).
    ax : matplotlib Axes or None, default=None
        Draw into this axes instead of a new 5 × 4 inch figure.

    Returns
    -------
    Figure
        The figure drawn (``ax``'s figure when given); a plain Figure, not registered with pyplot.

    Raises
    ------
    ValueError
        If a column is missing, or no grid point has a finite analytic ε.
    """
    required = ["epsilon_analytic", bound, *(band or ())]
    missing = [c for c in required + list(group_by) if c not in summary.columns]
    if missing:
        raise ValueError(f"summary must have the columns {missing}.")
    data = summary[np.isfinite(summary["epsilon_analytic"].to_numpy(dtype=float))]
    if data.empty:
        raise ValueError("no grid point has a finite analytic ε to plot against.")
    figure, axes = new_axes(ax, figsize=(5.0, 4.0), what="the lower-bound figure")
    ax = axes[0][0]
    groups = data.groupby(list(group_by), sort=True) if group_by else [((), data)]
    for key, part in groups:
        part = part.sort_values("epsilon_analytic")
        x = part["epsilon_analytic"].to_numpy(dtype=float)
        label = (
            ", ".join(
                f"{PARAMETER_NAMES.get(c, (c, c))[0]}={v:g}" if isinstance(v, float) else f"{c}={v}"
                for c, v in zip(group_by, key, strict=True)
            )
            or bound
        )
        (line,) = ax.plot(x, part[bound], marker="o", label=label)
        if band is not None:
            ax.fill_between(x, part[band[0]], part[band[1]], color=line.get_color(), alpha=0.2, linewidth=0)
    top = float(np.nanmax(data["epsilon_analytic"]))
    ax.plot([0, top], [0, top], color="grey", linestyle="--", linewidth=1, label="ε lower bound = analytic ε")
    ax.set_xlabel("analytic ε")
    ax.set_ylabel(f"empirical ε lower bound ({bound})")
    if band is not None:
        ax.plot([], [], color="grey", alpha=0.4, linewidth=6, label=f"band: {band[0]} to {band[1]}")
    ax.set_xlim(0, top * 1.05)
    ax.set_ylim(0, top * 1.05)
    if title:
        ax.set_title(title, fontsize="small")
    ax.legend(loc="upper left", fontsize="x-small")
    return root_figure(figure)


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
