"""Tables and figures for papers: a summary DataFrame in, text or an image out."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:  # tables arrive as DataFrames; pandas itself is not needed to format them
    import pandas as pd

__all__ = ["TABLE_FORMATS", "format_table", "plot_lower_bounds", "plot_roc_curves"]

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
            " & ".join(_latex_escape(h) for h in header) + r" \\",
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
    """Plot the empirical ε lower bound against the analytic ε, with the diagonal.

    Parameters
    ----------
    summary : DataFrame
        Columns ``epsilon_analytic``, ``bound`` and the two ``band`` columns.
    path : str or Path
        Output file; the suffix (``.png``, ``.pdf``, ``.svg``) chooses the format.
    group_by : sequence of str, default=()
        Columns whose values get one line each (e.g. a swept number of canaries).
    title : str or None, default=None
    bound : str, default="epsilon_lb_median"
        The column drawn as the lower bound: the game's headline figure (the median over trials of a one-run
        audit; the pooled ``epsilon_lb`` of a multi-run audit, whose single trials bound little).
    band : pair of str or None, default=("epsilon_lb_min", "epsilon_lb_max")
        The columns of the shaded band around it (None: none).

    Returns
    -------
    Path
        The written file.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    required = ["epsilon_analytic", bound, *(band or ())]
    missing = [c for c in required + list(group_by) if c not in summary.columns]
    if missing:
        raise ValueError(f"summary must have the columns {missing}.")
    out = Path(path)
    if out.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise ValueError(f"path must end in .png, .pdf or .svg, got {str(out)!r}.")
    data = summary[np.isfinite(summary["epsilon_analytic"].to_numpy(dtype=float))]
    if data.empty:
        raise ValueError("no grid point has a finite analytic ε to plot against.")
    fig, ax = plt.subplots(figsize=(5.0, 4.0), layout="constrained")
    groups = data.groupby(list(group_by), sort=True) if group_by else [((), data)]
    for key, part in groups:
        part = part.sort_values("epsilon_analytic")
        x = part["epsilon_analytic"].to_numpy(dtype=float)
        label = ", ".join(f"{c}={v}" for c, v in zip(group_by, key, strict=True)) or bound
        (line,) = ax.plot(x, part[bound], marker="o", label=label)
        if band is not None:
            ax.fill_between(x, part[band[0]], part[band[1]], color=line.get_color(), alpha=0.2, linewidth=0)
    top = float(np.nanmax(data["epsilon_analytic"]))
    ax.plot([0, top], [0, top], color="grey", linestyle="--", linewidth=1, label="ε lower bound = analytic ε")
    ax.set_xlabel("analytic ε")
    ax.set_ylabel(f"empirical ε lower bound ({bound}" + (f", {band[0]}–{band[1]} band)" if band else ")"))
    ax.set_xlim(0, top * 1.05)
    ax.set_ylim(0, top * 1.05)
    if title:
        ax.set_title(title)
    ax.legend(loc="upper left", fontsize="small")
    fig.savefig(out)
    plt.close(fig)
    return out


def plot_roc_curves(
    panels: Mapping[str, Mapping[str, tuple[NDArray[np.float64], NDArray[np.float64]]]],
    path: str | Path,
    *,
    title: str | None = None,
    subtitle: str | None = None,
) -> Path:
    """Log–log ROC curves, one panel per evaluation (e.g. naive and post-processed), one curve per setting.

    Parameters
    ----------
    panels : mapping of str to mapping of str to (fpr, tpr)
        ``{panel title: {curve label: (fpr grid, tpr)}}``; FPRs in (0, 1].
    path : str or Path
        Output file (``.png``, ``.pdf`` or ``.svg``).
    title, subtitle : str or None, default=None
        The figure's title (the experiment's name) and a line of context under it.

    Returns
    -------
    Path
        The written file.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(path)
    if out.suffix.lower() not in (".png", ".pdf", ".svg"):
        raise ValueError(f"path must end in .png, .pdf or .svg, got {str(out)!r}.")
    if not panels:
        raise ValueError("panels must hold at least one panel of curves, got none.")
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 4.2), layout="constrained", squeeze=False)
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
        ax.set_title(name, fontsize="medium")
        ax.legend(loc="lower right", fontsize="x-small")
    if title:
        fig.suptitle(title + (f"\n{subtitle}" if subtitle else ""), fontsize="medium")
    fig.savefig(out)
    plt.close(fig)
    return out
