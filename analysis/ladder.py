"""The estimator ladder: every estimator's bound on the same scores, side by side with the true ε.

On Gaussian scores (members N(μ, 1), non-members N(0, 1): a μ-GDP mechanism seen through its optimal attack) the
true ε at δ is known, so the ladder shows how much each estimator gives away — the figure a paper on bound
tightness needs.  ``privgame report DIR --ladder FILE`` draws it for the stored scores of an experiment.

The order-statistics audit (:mod:`privgame.analysis.order_stats`, :data:`PRODUCT_MODEL`) holds only where every canary
is its own independent channel; :func:`ladder` gives it as NaN when told the scores' canaries are not
(``dependence``, the mechanism's ``canary_dependence``).  Idealised Gaussian scores are a product model.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from privgame.analysis import multi_run, one_run
from privgame.analysis.accounting import gaussian_epsilon
from privgame.analysis.thresholds import Bonferroni, ThresholdStrategy

__all__ = ["LADDER", "PRODUCT_MODEL", "figure_ladder", "gaussian_ladder", "ladder", "plot_ladder"]

Estimator = Callable[[np.ndarray, np.ndarray, float, float, ThresholdStrategy], float]


def _fdp(family: str) -> Estimator:
    def run(a: np.ndarray, b: np.ndarray, confidence: float, delta: float, threshold: ThresholdStrategy) -> float:
        from privgame.analysis import fdp

        if family == "gaussian" and delta <= 0:
            return math.nan
        return fdp.audit_scores(a, b, family=family, confidence=confidence, delta=delta, threshold=threshold).epsilon

    return run


def _order_stats(family: str) -> Estimator:
    def run(a: np.ndarray, b: np.ndarray, confidence: float, delta: float, threshold: ThresholdStrategy) -> float:
        from privgame.analysis import order_stats

        if family == "gaussian" and delta <= 0:
            return math.nan
        audit = order_stats.audit_scores(a, b, family=family, confidence=confidence, delta=delta, threshold=threshold)
        return audit.epsilon

    return run


def _gdp(a: np.ndarray, b: np.ndarray, confidence: float, delta: float, threshold: ThresholdStrategy) -> float:
    if delta <= 0:
        return math.nan
    return multi_run.gdp_audit_scores(a, b, confidence=confidence, delta=delta, threshold=threshold).epsilon


LADDER: dict[str, Estimator] = {
    "one-run (Steinke)": lambda a, b, c, d, t: one_run.audit_scores(a, b, confidence=c, delta=d, threshold=t).epsilon,
    "one-run two-sided": lambda a, b, c, d, t: (
        one_run.audit_scores(a, b, confidence=c, delta=d, threshold=t, two_sided=True).epsilon
    ),
    "f-DP one-run, pure": _fdp("pure"),
    "f-DP one-run, Gaussian (GDP-derived)": _fdp("gaussian"),
    "order-stats one-run, pure (product model)": _order_stats("pure"),
    "order-stats one-run, Gaussian (GDP-derived, product model)": _order_stats("gaussian"),
    "multi-run Clopper-Pearson": lambda a, b, c, d, t: (
        multi_run.audit_scores(a, b, confidence=c, delta=d, threshold=t).epsilon
    ),
    "multi-run GDP (GDP-derived)": _gdp,
}
"""Estimators of the ladder by display name.  The GDP-derived ones are valid only for Gaussian-like mechanisms."""

PRODUCT_MODEL: tuple[str, ...] = (
    "order-stats one-run, pure (product model)",
    "order-stats one-run, Gaussian (GDP-derived, product model)",
)
"""The ladder's estimators valid only where every canary is its own independent channel (Xiang et al. 2025,
arXiv:2509.08704): NaN in :func:`ladder` when its ``dependence`` says the canaries are not."""


def ladder(
    in_scores: ArrayLike,
    out_scores: ArrayLike,
    *,
    confidence: float = 0.95,
    delta: float = 1e-5,
    threshold: ThresholdStrategy | None = None,
    estimators: Iterable[str] | None = None,
    dependence: str | None = None,
) -> dict[str, float]:
    """Every ladder estimator's ε bound on the same scores (NaN where an estimator does not apply).

    Parameters
    ----------
    in_scores, out_scores : array-like
        The member and non-member canaries' scores (higher = member).
    confidence : float, default=0.95
    delta : float, default=1e-5
    threshold : ThresholdStrategy or None, default=None
        Bonferroni over 100 label-free quantiles when None.
    estimators : iterable of str or None, default=None
        Names from :data:`LADDER` (all when None).
    dependence : str or None, default=None
        Why the canaries behind the scores are not independent channels (``Mechanism.canary_dependence``), or None
        when they are; where given, the :data:`PRODUCT_MODEL` estimators are NaN (not computed).
    """
    strategy = Bonferroni() if threshold is None else threshold
    names = list(LADDER) if estimators is None else list(estimators)
    unknown = [n for n in names if n not in LADDER]
    if unknown:
        raise ValueError(f"estimators must be names from {', '.join(LADDER)}, got {unknown[0]!r}.")
    a = np.asarray(in_scores, dtype=np.float64)
    b = np.asarray(out_scores, dtype=np.float64)
    out: dict[str, float] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for name in names:
            if dependence is not None and name in PRODUCT_MODEL:
                out[name] = math.nan
                continue
            try:
                out[name] = float(LADDER[name](a, b, confidence, delta, strategy))
            except ImportError:  # an estimator module not installed
                out[name] = math.nan
    return out


def gaussian_ladder(
    mus: Sequence[float] = (1.0, 2.0, 4.0),
    *,
    n: int = 10_000,
    delta: float = 1e-5,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """The ladder on Gaussian scores: n/2 members ~ N(μ, 1), n/2 non-members ~ N(0, 1), for each μ.

    Returns
    -------
    DataFrame
        Columns ``setting, estimator, epsilon, epsilon_true`` (the true ε at δ of μ-GDP).
    """
    rows: list[dict[str, Any]] = []
    for mu, child in zip(mus, np.random.SeedSequence(seed).spawn(len(mus)), strict=True):
        rng = np.random.default_rng(child)
        a, b = rng.normal(mu, 1.0, n // 2), rng.normal(0.0, 1.0, n - n // 2)
        truth = gaussian_epsilon(1.0 / mu, delta)
        for name, value in ladder(a, b, confidence=confidence, delta=delta).items():
            rows.append({"setting": f"μ = {mu:g}", "estimator": name, "epsilon": value, "epsilon_true": truth})
    return pd.DataFrame(rows)


def plot_ladder(
    table: pd.DataFrame, path: str | Path, *, title: str | None = None, truth_label: str = "true ε"
) -> Path:
    """Grouped bars: for each setting, every estimator's bound, with the true ε as a dashed line, into a file.

    Parameters
    ----------
    table : DataFrame
        Columns ``setting, estimator, epsilon`` and optionally ``epsilon_true`` (one value per setting).
    path : str or Path
        ``.png``, ``.pdf`` or ``.svg``.
    title : str or None, default=None
    truth_label : str, default="true ε"
        The dashed line's label: "true ε" on scores of a known mechanism, "analytic ε" on an experiment's.

    Returns
    -------
    Path
        The written file (atomically: a kill leaves the old figure or the new one).
    """
    from privgame.analysis._figures import check_suffix, save

    _check_ladder_table(table)
    out = check_suffix(path)
    return save(figure_ladder(table, title=title, truth_label=truth_label), out)


def _check_ladder_table(table: pd.DataFrame) -> None:
    missing = [c for c in ("setting", "estimator", "epsilon") if c not in table.columns]
    if missing:
        raise ValueError(f"table must have the columns {missing}.")


def figure_ladder(table: pd.DataFrame, *, title: str | None = None, truth_label: str = "true ε", ax: Any = None) -> Any:
    """Grouped bars: for each setting, every estimator's bound, with the true ε as a dashed line (no file written).

    Parameters
    ----------
    table : DataFrame
        Columns ``setting, estimator, epsilon`` and optionally ``epsilon_true`` (one value per setting), as
        :func:`gaussian_ladder` and :func:`privgame.engine.report.ladder_results` give.
    title : str or None, default=None
    truth_label : str, default="true ε"
        The dashed line's label.
    ax : matplotlib Axes or None, default=None
        Draw into this axes instead of a new figure.

    Returns
    -------
    matplotlib.figure.Figure
        A plain Figure (not registered with pyplot), or ``ax``'s.

    Raises
    ------
    ValueError
        If a column is missing or the table has no row.
    TypeError
        If ``ax`` is not a matplotlib Axes.
    """
    from privgame.analysis._figures import new_axes, root_figure

    _check_ladder_table(table)
    if table.empty:
        raise ValueError("table must hold at least one estimator's bound, got no rows.")
    settings = list(dict.fromkeys(table["setting"]))
    estimators = list(dict.fromkeys(table["estimator"]))
    width = 0.8 / max(len(estimators), 1)
    figure, axes = new_axes(ax, figsize=(max(6.0, 1.6 * len(settings) + 3), 4.2), what="the ladder")
    ax = axes[0][0]
    hatches = ("", "//", "..", "xx", "\\\\", "oo", "--", "++")  # each estimator's bars read in black and white too
    for j, name in enumerate(estimators):
        part = table[table["estimator"] == name].set_index("setting")
        values = [float(part["epsilon"].get(s, math.nan)) for s in settings]
        offset = np.arange(len(settings)) + (j - (len(estimators) - 1) / 2) * width
        ax.bar(offset, values, width, label=name, hatch=hatches[j % len(hatches)], edgecolor="black", linewidth=0.5)
    if "epsilon_true" in table.columns:
        for i, s in enumerate(settings):
            truth = float(table.loc[table["setting"] == s, "epsilon_true"].iloc[0])
            if math.isfinite(truth):
                ax.hlines(truth, i - 0.45, i + 0.45, colors="black", linestyles="--", linewidth=1.2)
        ax.plot([], [], color="black", linestyle="--", label=truth_label)
    ax.set_xticks(np.arange(len(settings)), settings)
    ax.set_ylabel("ε lower bound")
    if title:
        ax.set_title(title)
    ax.legend(fontsize="x-small", loc="upper left")
    return root_figure(figure)
