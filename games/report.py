"""Summaries of a results directory: one row per grid point."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from games.config import ExperimentConfig, parse_config
from games.store import ResultsStore, StoreError

__all__ = ["ladder_results", "plot_results", "records_results", "summarise_results"]


def _load(root: str) -> tuple[ResultsStore, dict[str, Any], ExperimentConfig, pd.DataFrame]:
    store = ResultsStore(root)
    manifest = store.manifest()
    config = parse_config(manifest["config"])
    rows = store.rows()
    if rows.empty:
        raise StoreError(f"{root!r} holds no finished trial yet; run `privgame run` first.")
    return store, manifest, config, rows


def summarise_results(root: str) -> tuple[pd.DataFrame, list[str]]:
    """One row per grid point of the results in ``root``: the swept parameters, then the game's summary columns.

    Returns
    -------
    summary : DataFrame
    swept : list of str
        The swept parameter columns.

    Raises
    ------
    games.store.StoreError
        If ``root`` is not a results directory or holds no finished trial.
    """
    store, manifest, config, rows = _load(root)
    records = []
    for g in sorted(rows["grid_point"].unique()):
        part = rows[rows["grid_point"] == g]
        point = config.grid[int(g)]
        summary = point.game.summarise(part, config.analysis, store.load_outcome)
        records.append({**manifest["grid"][int(g)]["params"], **summary})
    return pd.DataFrame.from_records(records), list(config.swept)


def records_results(root: str) -> pd.DataFrame:
    """One row per (record, game) of a record-level game's results: the grid point's swept values, then the
    per-record metrics (``record, game, selection, auc, auc_low, auc_high, accuracy, ..., epsilon_lb``).

    Raises
    ------
    games.store.StoreError
        If ``root`` holds no per-record results (its game is not a record-level game).
    """
    store, manifest, config, _ = _load(root)
    records = store.records()
    if records.empty:
        raise StoreError(
            f"{root!r} holds no per-record results: --records needs a record-level game "
            f"(this experiment's game is {config.grid[0].game.name!r})."
        )
    params = pd.DataFrame([manifest["grid"][int(g)]["params"] for g in records["grid_point"]])
    return pd.concat([params.reset_index(drop=True), records.drop(columns=["grid_point"])], axis=1)


def plot_results(root: str, summary: pd.DataFrame, swept: list[str], path: str | Path) -> Path:
    """Draw the figure of the results' game: the per-record AUC scatter for record-level games, else the ε lower
    bound against the analytic ε."""
    from analysis.reporting import plot_lower_bounds

    store = ResultsStore(root)
    records = store.records()
    if not records.empty:
        from analysis.record_risk import plot_risk_scatter

        manifest = store.manifest()
        labels = {
            int(g["index"]): ", ".join(f"{k}={v}" for k, v in g["params"].items()) or str(manifest.get("name", ""))
            for g in manifest["grid"]
        }
        records = records.assign(group=[labels[int(g)] for g in records["grid_point"]])
        if records["group"].nunique() == 1:
            records = records.drop(columns=["group"])
        return plot_risk_scatter(records, path, title=Path(root).name)
    group_by = [c for c in swept if not c.startswith("mechanism.")]
    return plot_lower_bounds(summary, path, group_by=group_by, title=Path(root).name)


def ladder_results(root: str) -> pd.DataFrame:
    """Every ladder estimator's bound on each grid point's stored scores (median over its trials).

    Returns
    -------
    DataFrame
        Columns ``setting, estimator, epsilon, epsilon_true`` (``epsilon_true`` is the analytic ε).
    """
    from analysis.ladder import ladder

    store, manifest, config, rows = _load(root)
    records = []
    for g in sorted(rows["grid_point"].unique()):
        point = manifest["grid"][int(g)]
        label = ", ".join(f"{k}={v}" for k, v in point["params"].items()) or config.name
        values: dict[str, list[float]] = {}
        for trial in rows.loc[rows["grid_point"] == g, "trial"]:
            outcome = store.load_outcome(int(trial))
            s, member = outcome.scores, outcome.membership
            bounds = ladder(s[member], s[~member], confidence=config.analysis.confidence, delta=config.analysis.delta)
            for name, value in bounds.items():
                values.setdefault(name, []).append(value)
        for name, vals in values.items():
            records.append(
                {
                    "setting": label,
                    "estimator": name,
                    "epsilon": float(np.nanmedian(vals)) if np.isfinite(vals).any() else float("nan"),
                    "epsilon_true": point["epsilon_analytic"],
                }
            )
    return pd.DataFrame(records)
