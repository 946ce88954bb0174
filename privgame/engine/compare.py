"""Attacks side by side on the same targets: ``privgame report DIR --compare``.

A config with several ``[[attack]]`` tables (or a swept attack parameter) plays each attack on the same targets
and models: the games draw them from the repetition's seed alone, and the artefact cache trains each model or
generator run once.  This module reads such a results directory and puts the attacks next to each other, one
row per (grid point, game played):

- ``auc_pooled``: the ROC AUC of every scored (target, round) pair pooled; ``tpr_<f>`` / ``fpr_<f>``: the largest
  TPR at a realised FPR ≤ f over all thresholds of the pooled scores, and that realised FPR;
- ``auc_record_mean``: the mean per-record risk (each record's AUC: over its rounds in the record games, over the
  M target models in the ``lira`` game);
- ``at_risk``: the records whose AUC is at least ``risk``; ``only_this``: those of them that no other grid point
  finds at that risk (same repetition, record and game);
- ``mechanism_runs``: the model trainings or generator runs the attack's trials need (the game's count: rounds
  and shadows, or the M models), made or read from the cache;
- ``seconds``: the trials' wall time (the first attack to need a model or generator run pays for it, the others
  read it from the cache); ``seconds_attack``: where the game times it (``TrialContext.timings``), the attack's
  own work.

Grid points that differ only in the analysis (one play) are compared once, by their first point.

:func:`record_differences` (``report --compare --baseline N``) pairs each attack with a baseline record by record:
the difference of their AUCs on the same rounds (the same models, in the ``lira`` game), with a paired bootstrap
interval (:func:`privgame.analysis.record_risk.auc_difference_interval`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from privgame.analysis._checks import check_real
from privgame.analysis.calibration import pooled_auc
from privgame.analysis.record_risk import tpr_at_fpr
from privgame.engine.store import ResultsStore, StoreError

__all__ = ["COMPARE_FPRS", "compare_attacks", "compare_roc_curves", "figure_record_differences", "record_differences"]

#: the FPRs of the comparison's TPR columns
COMPARE_FPRS = (1e-3, 1e-2, 1e-1)


def _groups(outcome: Any) -> dict[str, np.ndarray]:
    """The outcome's scored pairs by the game played: the record games' codes, else one group."""
    scored = np.ones(outcome.scores.shape, dtype=bool)
    if "valid" in outcome.arrays:
        scored = np.asarray(outcome.arrays["valid"], dtype=bool).ravel()
    if "game" in outcome.arrays and "record" in outcome.arrays:
        from privgame.games.record import GAMES_PLAYED

        codes = np.asarray(outcome.arrays["game"])
        return {GAMES_PLAYED[int(c)]: scored & (codes == c) for c in np.unique(codes)}
    return {"": scored}


def _read(root: str) -> tuple[ResultsStore, pd.DataFrame, list[str], list[dict[str, Any]]]:
    """The store, its rows, the swept parameters (the analysis' left out) and each grid point's swept values, the
    manifest and the rows checked as a report checks them (a stranger's or a damaged directory is refused in one
    line: every grid point's params a table, every row's grid point one of the grid's)."""
    from privgame.engine.report import _load

    stored = _load(root, need_games=False)
    params = [entry["params"] for entry in stored.manifest["grid"]]
    swept = [s for s in stored.swept if not s.startswith("analysis.")]
    return stored.store, stored.rows, swept, params


def compare_attacks(
    root: str, *, risk: float = 0.8, fprs: Sequence[float] = COMPARE_FPRS
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The attacks of a results directory side by side (see the module docstring).

    Parameters
    ----------
    root : str
        A results directory written by ``privgame run``.
    risk : float, default=0.8
        The per-record AUC from which a record counts as at risk, in (0.5, 1].
    fprs : sequence of float, default=(0.001, 0.01, 0.1)
        The FPRs of the TPR columns, each in (0, 1).

    Returns
    -------
    table : DataFrame
        One row per (play, game played): ``grid_point``, the swept values, then the columns of the module
        docstring.
    only : DataFrame
        The records at risk under one grid point only: ``grid_point`` and its swept values, ``game``,
        ``repetition``, ``record``, ``auc`` and ``best_other_auc`` (the highest AUC any other grid point gives
        that record).

    Raises
    ------
    StoreError
        If ``root`` has no finished trials, or no per-record results (games without them cannot be compared by
        record).
    ValueError
        For a ``risk`` or an FPR out of range.
    """
    threshold = check_real("risk", risk, low=0.5, high=1.0, low_open=True)
    rates = tuple(check_real("fpr", f, low=0.0, high=1.0, low_open=True, high_open=True) for f in fprs)
    store, rows, swept, grid = _read(root)
    records = store.records()
    if records.empty:
        raise StoreError(f"{root!r} holds no per-record results: --compare needs a game that stores them.")
    first: dict[tuple[Any, ...], int] = {}
    for point in sorted(int(g) for g in rows["grid_point"].unique()):
        first.setdefault(tuple(str(grid[point].get(k)) for k in swept), point)
    points = sorted(first.values())
    repetition = dict(zip(rows["trial"].astype(int), rows["repetition"].astype(int), strict=True))
    records = records[records["grid_point"].isin(points)].assign(
        repetition=lambda r: [repetition.get(int(t), -1) for t in r["trial"]]
    )
    keyed = records.set_index(["grid_point", "game", "repetition", "record"])["auc"].astype(float)
    at_risk = keyed[keyed >= threshold]
    table, only = [], []
    for point in points:
        labels = {k: grid[point].get(k) for k in swept}
        trials = rows[rows["grid_point"] == point]
        # each record's highest AUC under the other points: none where no other point played it (one attack alone)
        best_other = keyed.drop(point, level="grid_point").groupby(level=["game", "repetition", "record"]).max()
        for game, (s, b) in _pooled(store, trials["trial"].astype(int)).items():
            mine = keyed.xs(point, level="grid_point")
            if game:
                mine = mine[mine.index.get_level_values("game") == game]
            mine_at_risk = mine[mine >= threshold]
            others = at_risk.drop(point, level="grid_point", errors="ignore")
            other_keys = {key[1:] for key in others.index}  # (game, repetition, record)
            alone = [key for key in mine_at_risk.index if key not in other_keys]
            row: dict[str, Any] = {"grid_point": point, **labels}
            row["game"] = game or str(mine.index.get_level_values("game")[0])
            row["auc_pooled"] = pooled_auc(s, b) if b.any() and (~b).any() else float("nan")
            for f in rates:
                row[f"tpr_{f:g}"], row[f"fpr_{f:g}"] = tpr_at_fpr(s, b, f)
            row["auc_record_mean"] = float(mine.mean())
            row["records"] = int(mine.size)
            row["at_risk"] = int(mine_at_risk.size)
            row["only_this"] = len(alone)
            row["trials"] = len(trials)
            if "mechanism_runs" in trials:
                row["mechanism_runs"] = int(trials["mechanism_runs"].fillna(0).sum())
            row["seconds"] = float(trials["seconds"].sum())
            if "seconds_attack" in trials:
                row["seconds_attack"] = float(trials["seconds_attack"].sum())
            table.append(row)
            for key in alone:
                game_key, rep, record = key
                only.append(
                    {
                        "grid_point": point,
                        **labels,
                        "game": game_key,
                        "repetition": rep,
                        "record": record,
                        "auc": float(mine_at_risk[key]),
                        "best_other_auc": float(best_other.get(key, np.nan)),
                    }
                )
    return pd.DataFrame(table), pd.DataFrame(only)


def _pooled(store: ResultsStore, trials: Iterable[Any]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The scored pairs of ``trials`` pooled by the game played (:func:`_groups`): scores and membership."""
    pooled: dict[str, tuple[list[np.ndarray], list[np.ndarray]]] = {}
    for trial in trials:
        outcome = store.load_outcome(int(trial))
        for game, scored in _groups(outcome).items():
            scores, members = pooled.setdefault(game, ([], []))
            scores.append(np.asarray(outcome.scores, dtype=np.float64)[scored])
            members.append(np.asarray(outcome.membership, dtype=bool)[scored])
    return {game: (np.concatenate(s), np.concatenate(b)) for game, (s, b) in pooled.items()}


def compare_roc_curves(root: str) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Each attack's log–log ROC curve on its pooled scores, one panel per game played: the curves that
    ``Results.compare_figure()`` draws (:func:`privgame.analysis.reporting.figure_roc_curves`).

    Every grid point's scored pairs (its every trial's) are pooled, as for ``auc_pooled`` and ``tpr_<f>`` of
    :func:`compare_attacks`, and its TPR is read at 81 log-spaced FPRs from 1e-4 to 1 against the FPR realised
    there (:func:`privgame.analysis.calibration.pooled_roc`); the grid points that differ only in the analysis are
    drawn once, by their first point.

    Parameters
    ----------
    root : str
        A results directory whose game stores each trial's scores and membership (the record games, ``lira``,
        one-run and multi-run audits).

    Returns
    -------
    dict of str to dict of str to (ndarray, ndarray)
        ``{game played: {attack: (realised FPR, TPR)}}``; an attack is named by the swept values that tell the
        grid points apart (``name=lira, online=True``) and its pooled AUC.

    Raises
    ------
    StoreError
        If ``root`` has no finished trials.
    ValueError
        If no grid point has scored pairs of both members and non-members (no curve to draw).
    """
    from privgame.analysis.calibration import pooled_roc

    store, rows, swept, grid = _read(root)
    first: dict[tuple[Any, ...], int] = {}
    for point in sorted(int(g) for g in rows["grid_point"].unique()):
        first.setdefault(tuple(str(grid[point].get(k)) for k in swept), point)
    shown = [k for k in swept if k == "attack.name" or len({str(grid[p].get(k)) for p in first.values()}) > 1]
    played = str(_section(store, "game").get("name", "")) or "scores"
    panels: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
    for point in sorted(first.values()):
        name = (
            ", ".join(f"{k.split('.', 1)[1]}={grid[point][k]}" for k in shown if grid[point].get(k) is not None)
            or f"grid point {point}"
        )
        for game, (s, b) in _pooled(store, rows.loc[rows["grid_point"] == point, "trial"].astype(int)).items():
            if b.all() or not b.any():
                continue
            _, tpr, realised = pooled_roc(s, b)
            panels.setdefault(game or played, {})[f"{name} (AUC {pooled_auc(s, b):.3f})"] = (realised, tpr)
    if not panels:
        raise ValueError(f"{root!r} holds no grid point with scores of both members and non-members: no ROC curve.")
    return panels


def _section(store: ResultsStore, name: str) -> dict[str, Any]:
    """A section of the stored config (the first table of an ``[[attack]]`` list), empty where it holds none."""
    config = store.manifest().get("config")
    section = config.get(name) if isinstance(config, dict) else None
    if isinstance(section, list):
        section = section[0] if section else None
    return section if isinstance(section, dict) else {}


def _record_rounds(outcome: Any) -> dict[tuple[str, int], tuple[np.ndarray, np.ndarray]]:
    """Each (game played, record) of an outcome: its rounds' scores and secrets (the record games: the trial's
    target; the ``lira`` game: each pool record's scored pairs over the M models)."""
    scores = np.asarray(outcome.scores, dtype=np.float64)
    member = np.asarray(outcome.membership, dtype=bool)
    if "record" in outcome.arrays and "game" in outcome.arrays:
        from privgame.games.record import GAMES_PLAYED

        record = int(outcome.arrays["record"][0])
        codes = np.asarray(outcome.arrays["game"])
        return {(GAMES_PLAYED[int(c)], record): (scores[codes == c], member[codes == c]) for c in np.unique(codes)}
    if "shape" in outcome.arrays and "pool" in outcome.arrays:
        m, n = (int(v) for v in outcome.arrays["shape"])
        valid = np.asarray(outcome.arrays.get("valid", np.ones(m * n, dtype=bool)), dtype=bool).reshape(m, n)
        s, b = scores.reshape(m, n), member.reshape(m, n)
        pool = np.asarray(outcome.arrays["pool"])
        return {("lira", int(pool[i])): (s[valid[:, i], i], b[valid[:, i], i]) for i in range(n)}
    raise StoreError(
        "--baseline pairs records of the record games and the lira game; this game stores no rounds per record."
    )


def record_differences(
    root: str, baseline: int, *, confidence: float = 0.95, n_boot: int = 1000
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each attack against the ``baseline`` grid point, record by record, on the same rounds.

    Parameters
    ----------
    root : str
        A results directory of several attacks (``[[attack]]`` tables or an attack sweep).
    baseline : int
        The grid point the others are compared with.
    confidence : float, default=0.95
        Of every interval.
    n_boot : int, default=1000
        Paired bootstrap replicates per record.

    Returns
    -------
    records : DataFrame
        Per (grid point, game, repetition, record): ``auc``, ``baseline_auc``, ``difference`` and its paired
        interval ``low``/``high``.
    summary : DataFrame
        Per (grid point, game): the mean difference over the records with a t interval, and how many records'
        intervals lie wholly above 0 (``higher``) and wholly below (``lower``).

    Raises
    ------
    StoreError
        If ``baseline`` is not a finished grid point, or two attacks did not play the same rounds of a record.
    """
    from scipy import stats

    from privgame.analysis._checks import check_confidence, check_int
    from privgame.analysis.record_risk import auc, auc_difference_interval

    level = check_confidence(confidence)
    replicates = check_int("n_boot", n_boot, low=1, high=1_000_000)
    store, rows, swept, grid = _read(root)
    points = sorted(int(g) for g in rows["grid_point"].unique())
    if baseline not in points:
        raise StoreError(
            f"--baseline must be a finished grid point of {root!r} ({', '.join(map(str, points))}), got {baseline}."
        )

    def trials_of(point: int) -> dict[int, int]:
        mine = rows[rows["grid_point"] == point]
        return dict(zip(mine["repetition"].astype(int), mine["trial"].astype(int), strict=True))

    base_trials = trials_of(baseline)
    base_rounds = {rep: _record_rounds(store.load_outcome(t)) for rep, t in base_trials.items()}
    base_auc: dict[tuple[int, tuple[str, int]], float] = {}  # each baseline record's AUC, computed once
    out = []
    for point in points:
        if point == baseline:
            continue
        labels = {k: grid[point].get(k) for k in swept}
        for rep, trial in trials_of(point).items():
            if rep not in base_rounds:
                continue
            for key, (scores, secret) in _record_rounds(store.load_outcome(trial)).items():
                if key not in base_rounds[rep]:
                    continue
                base_scores, base_secret = base_rounds[rep][key]
                if not np.array_equal(secret, base_secret):
                    raise StoreError(
                        f"grid points {point} and {baseline} did not play the same rounds of record {key[1]} "
                        f"({key[0]}): a paired difference needs them."
                    )
                if secret.all() or not secret.any():
                    continue
                if (rep, key) not in base_auc:
                    base_auc[rep, key] = auc(base_scores, secret)
                rng = np.random.default_rng([baseline, point, rep, key[1]])
                diff, low, high = auc_difference_interval(
                    scores, base_scores, secret, confidence=level, n_boot=replicates, rng=rng
                )
                out.append(
                    {
                        "grid_point": point,
                        **labels,
                        "game": key[0],
                        "repetition": rep,
                        "record": key[1],
                        "auc": auc(scores, secret),
                        "baseline_auc": base_auc[rep, key],
                        "difference": diff,
                        "low": low,
                        "high": high,
                    }
                )
    records = pd.DataFrame(out)
    summary = []
    if not records.empty:
        for (at, game), part in records.groupby(["grid_point", "game"], sort=True):
            d = part["difference"].to_numpy(dtype=float)
            half = (
                float(stats.t.ppf(0.5 + level / 2.0, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size))
                if d.size > 1
                else float("nan")
            )
            summary.append(
                {
                    "grid_point": at,
                    **{k: grid[int(str(at))].get(k) for k in swept},
                    "game": game,
                    "records": d.size,
                    "mean_difference": float(d.mean()),
                    "low": float(d.mean()) - half,
                    "high": float(d.mean()) + half,
                    "higher": int((part["low"] > 0).sum()),
                    "lower": int((part["high"] < 0).sum()),
                }
            )
    return records, pd.DataFrame(summary)


#: above this many records per attack the figure draws points without their intervals (they would hide each other)
_MAX_BARS = 200


def figure_record_differences(records: pd.DataFrame, *, title: str | None = None, ax: Any = None) -> Any:
    """Each record's AUC difference from the baseline (with its paired interval) against its AUC under the
    baseline, one colour per attack, one panel per game played (:func:`record_differences`' ``records``); into
    ``ax`` (a matplotlib Axes) where there is one panel, the title then above it.

    Raises
    ------
    ValueError
        If ``records`` is empty, or ``ax`` is given for more than one panel.
    """
    from privgame.analysis._figures import new_axes, root_figure

    if records.empty:
        raise ValueError("records must hold at least one record's difference (no attack besides the baseline?).")
    games = list(dict.fromkeys(records["game"].astype(str)))
    own = ax is None
    figure, axes = new_axes(ax, 1, len(games), figsize=(5.5 * len(games), 4.2), what="the differences", sharey=True)
    labels = [  # the values that tell the attacks apart (a value all of them share says nothing)
        c
        for c in records.columns
        if c.startswith(("attack.", "mechanism.", "game."))
        and (c == "attack.name" or records[c].nunique(dropna=False) > 1)
    ]
    for ax, game in zip(axes[0], games, strict=True):
        part = records[records["game"].astype(str) == game]
        for point, mine in part.groupby("grid_point", sort=True):
            name = (
                ", ".join(f"{c.split('.', 1)[1]}={mine[c].iloc[0]}" for c in labels if pd.notna(mine[c].iloc[0]))
                or f"grid point {point}"
            )
            x = mine["baseline_auc"].to_numpy(dtype=float) + 0.004 * (int(str(point)) % 5 - 2)  # a small dodge
            y = mine["difference"].to_numpy(dtype=float)
            if len(mine) <= _MAX_BARS:
                spread = np.vstack(
                    [
                        np.maximum(y - mine["low"].to_numpy(float), 0.0),
                        np.maximum(mine["high"].to_numpy(float) - y, 0.0),
                    ]
                )
                ax.errorbar(x, y, yerr=spread, fmt="o", ms=4, capsize=2, alpha=0.8, label=name)
            else:
                ax.scatter(x, y, s=4, alpha=0.4, label=name)
        ax.axhline(0.0, color="black", lw=0.8)
        ax.set_xlabel("the record's AUC under the baseline")
        ax.set_title(game if own or not title else f"{title}\n{game}", fontsize=None if own or not title else 9)
    axes[0][0].set_ylabel("AUC difference from the baseline (paired interval)")
    axes[0][-1].legend(fontsize=7, loc="best")
    if title and own:
        figure.suptitle(title, fontsize=9)
    return root_figure(figure)


def point_label(root: str, point: int) -> str:
    """Grid point ``point``'s swept values as ``key=value`` pairs (section names left out), for a figure's title."""
    _, _, swept, grid = _read(root)
    if not 0 <= point < len(grid):
        raise StoreError(f"grid point must be one of 0 to {len(grid) - 1}, got {point}.")
    values = grid[point]
    return ", ".join(f"{k.split('.', 1)[1]}={values[k]}" for k in swept if values.get(k) is not None)
