"""Summaries of a results directory: one row per grid point."""

from __future__ import annotations

import pandas as pd

from games.config import parse_config
from games.store import ResultsStore, StoreError

__all__ = ["summarise_results"]


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
    store = ResultsStore(root)
    manifest = store.manifest()
    config = parse_config(manifest["config"])
    rows = store.rows()
    if rows.empty:
        raise StoreError(f"{root!r} holds no finished trial yet; run `privgame run` first.")
    records = []
    for g in sorted(rows["grid_point"].unique()):
        part = rows[rows["grid_point"] == g]
        point = config.grid[int(g)]
        summary = point.game.summarise(part, config.analysis, store.load_outcome)
        records.append({**manifest["grid"][int(g)]["params"], **summary})
    return pd.DataFrame.from_records(records), list(config.swept)
