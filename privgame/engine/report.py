"""Summaries of a results directory: one row per grid point.

A results directory may come from someone else, so reading it runs none of its code: the plugins its manifest
names are not imported unless the caller asks (``plugins`` to import modules of their choice, ``trust_plugins``
to import those the manifest names).  Everything is read from the manifest (the stored config, its grid and the
analytic ε of each point) and the stored rows and arrays; only each grid point's game is rebuilt, as it
summarises its own trials, so a plugin is needed only when the game itself comes from one.
"""

from __future__ import annotations

import reprlib
import sys
import textwrap
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from privgame.engine._text import printable
from privgame.engine.config import ConfigError, import_plugins, stored_games
from privgame.engine.registry import GAMES
from privgame.engine.store import ResultsStore, StoreError, describe_trials
from privgame.games._base import AnalysisSettings, Game

if TYPE_CHECKING:
    import matplotlib.axes
    import matplotlib.figure

__all__ = [
    "CEILING_MARKER",
    "CEILING_NOTE",
    "RecordValuesWarning",
    "brief_summary",
    "ceiling_note",
    "figure_results",
    "ladder_context",
    "ladder_results",
    "mark_ceilings",
    "plot_problem",
    "plot_results",
    "records_results",
    "select_columns",
    "shared_tables",
    "sortable_columns",
    "summarise_results",
    "summary_notes",
    "top_rows",
    "trial_curve_paths",
]

VALUE_PREFIX = "value."
"""What ``records_results`` puts before each data column's name (``value.age``): no metric or swept column starts
with it, so a data column named ``auc`` or ``record`` never clashes with the metric of that name."""


class RecordValuesWarning(UserWarning):
    """The per-record table is reported without the records' values (their population could not be read)."""


@dataclass(frozen=True, slots=True)
class _Stored:
    """What a report needs of a results directory, read without building mechanisms or attacks."""

    store: ResultsStore
    manifest: dict[str, Any]
    name: str
    swept: tuple[str, ...]
    analyses: tuple[AnalysisSettings, ...]  # each grid point's
    games: tuple[Game, ...]  # empty when ``unbuilt`` says why they could not be built
    rows: pd.DataFrame
    unbuilt: str | None = None


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _manifest_plugins(manifest: dict[str, Any]) -> tuple[str, ...]:
    """The plugin modules a results manifest names (``[experiment] plugins`` of its stored config)."""
    named = _table(_table(manifest.get("config")).get("experiment")).get("plugins", [])
    return tuple(str(p) for p in named) if isinstance(named, list) else ()


def _plugin_hint(named: Sequence[str]) -> str:
    """What to tell a reader whose results fail where the manifest's plugins, not imported, may be needed."""
    missing = [p for p in named if p not in sys.modules]
    if not missing:
        return ""
    return (
        f"; its manifest names the plugins {', '.join(map(repr, missing))}, not imported because importing runs "
        "their code: pass --trust-plugins to import them, or --plugins MODULE ... to import modules you trust"
    )


def _is_real(value: Any) -> bool:
    """Whether ``value`` is an int or float (not a bool) that a float can hold (NaN and ±inf included)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        float(value)
    except OverflowError:  # an int of hundreds of digits, written into a manifest by hand
        return False
    return True


def _manifest_name(root: str) -> str:
    """A results directory's manifest, for the trust gate's messages (privgame.core.trust)."""
    return repr(str(Path(root) / "manifest.json"))


def _load(root: str, plugins: Sequence[str] = (), trust_plugins: bool = False, *, need_games: bool = True) -> _Stored:
    """Read ``root`` for a report; with ``need_games=False`` a stored game that cannot be built here (its data set
    unknown to this install) leaves ``games`` empty and says why in ``unbuilt`` instead of raising."""
    store = ResultsStore(root)
    manifest = store.manifest()
    named = _manifest_plugins(manifest)
    import_plugins(plugins, source="--plugins")
    if trust_plugins:
        import_plugins(named, source=f"{root}/manifest.json plugins (--trust-plugins)")
    config = _table(manifest.get("config"))
    game = _table(config.get("game")).get("name")
    if isinstance(game, str) and game not in GAMES and named and not trust_plugins:
        raise StoreError(
            f"{root!r} needs the game {game!r}, which is not registered; its manifest names the plugins "
            f"{', '.join(map(repr, named))}, not imported because importing runs their code: pass --trust-plugins "
            "to import them, or --plugins MODULE ... to import modules you trust."
        )
    swept = manifest.get("swept", [])
    swept = tuple(str(s) for s in swept) if isinstance(swept, list) else ()
    unbuilt = None
    try:
        analyses, games = stored_games(
            config,
            swept,
            manifest.get("data_source"),
            manifest.get("attack_points"),
            source=_manifest_name(root),
            trusted=trust_plugins,
        )
        repetitions = manifest.get("repetitions")
        if isinstance(repetitions, int) and not isinstance(repetitions, bool) and repetitions > 0:
            analyses = tuple(a.with_budget(repetitions) for a in analyses)  # a sequential audit's budget
    except ConfigError as exc:
        hint = _plugin_hint(named)
        message = f"{root}/manifest.json: " + (f"{str(exc).rstrip('.')}{hint}." if hint else str(exc))
        if need_games:
            raise StoreError(message) from None
        analyses, games, unbuilt = (), (), message
    grid = manifest.get("grid")
    if not isinstance(grid, list) or (unbuilt is None and len(grid) != len(games)):
        size = len(grid) if isinstance(grid, list) else grid
        points = "grid points" if unbuilt else f"{len(games)} grid points of its config"
        raise StoreError(f"{root}/manifest.json: grid must list the {points}, got {size!r}.")
    bad = next((i for i, entry in enumerate(grid) if not isinstance(_table(entry).get("params"), dict)), None)
    if bad is not None:  # every reader labels a grid point's rows with its params
        raise StoreError(
            f"{root}/manifest.json: grid point {bad} must give its params as a table, got {reprlib.repr(grid[bad])}."
        )
    for i, entry in enumerate(grid):  # what the ladder and the figures turn into a float
        value = entry.get("epsilon_analytic", float("nan"))
        if not _is_real(value):
            raise StoreError(
                f"{root}/manifest.json: grid point {i}'s epsilon_analytic must be a number (a float), got "
                f"{reprlib.repr(value)}."
            )
    rows = store.rows()
    if rows.empty:
        failures = store.failures()
        if failures:
            raise StoreError(
                f"{root!r} holds no finished trial: {len(failures)} failed (tracebacks in "
                f"{store.root / 'failures'}); fix the cause and rerun `privgame run` with the same config."
            )
        raise StoreError(f"{root!r} holds no finished trial yet; run `privgame run` first.")
    name = str(manifest.get("name") or _table(config.get("experiment")).get("name", ""))
    return _Stored(store, manifest, name, swept, analyses, games, rows, unbuilt)


def summarise_results(
    root: str, *, plugins: Sequence[str] = (), trust_plugins: bool = False
) -> tuple[pd.DataFrame, list[str]]:
    """One row per grid point of the results in ``root``: the swept parameters, then the game's summary columns.

    Parameters
    ----------
    root : str
        The results directory.
    plugins : sequence of str, default=()
        Plugin modules to import first (needed only when the experiment's game comes from a plugin).
    trust_plugins : bool, default=False
        Also import the plugins the directory's manifest names.  Importing a module runs its code: only for
        results from a trusted source.

    Returns
    -------
    summary : DataFrame
        The swept parameters, what the mechanism derived from them (``mechanism.sigma``: DP-SGD's noise
        multiplier calibrated from ``epsilon``, as the run stored it), then the game's columns; with a ``failed``
        column (trials whose code raised, per grid point) when any trial failed; damaged trials
        (a file missing or not matching its checksum) are left out.
    swept : list of str
        The swept parameter columns.

    Raises
    ------
    privgame.engine.store.StoreError
        If ``root`` is not a results directory, holds no finished trial, or its game is not registered (its
        message names the plugins the manifest names and how to allow them).
    privgame.engine.config.ConfigError
        If a plugin asked for cannot be imported.
    """
    stored = _load(root, plugins, trust_plugins)
    rows = stored.rows
    failed: dict[int, int] = {}  # failed trials per grid point (their failures/ records), shown when there are any
    for info in stored.store.failures().values():
        g = info.get("grid_point")
        if isinstance(g, int) and 0 <= g < len(stored.games):
            failed[g] = failed.get(g, 0) + 1
    records = []
    for g in sorted({int(g) for g in rows["grid_point"].unique()} | set(failed)):
        part = rows[rows["grid_point"] == g]
        try:
            summary = (
                stored.games[g].summarise(part, stored.analyses[g], stored.store.load_outcome) if len(part) else {}
            )
        except (StoreError, KeyboardInterrupt):
            raise
        except Exception as exc:  # a plugin's registration the summary needs, when the plugins were not imported
            hint = _plugin_hint(_manifest_plugins(stored.manifest))
            column = exc.args[0] if isinstance(exc, KeyError) and exc.args else None
            if not hint and isinstance(column, str) and column not in part.columns:
                trials = describe_trials(set(part["trial"].astype(int)))
                raise StoreError(  # rows edited, or written by another version: the game reads a column they lack
                    f"{root}/trials: the rows of grid point {g} ({trials}) must have the column {column!r} its game "
                    "summarises, got none."
                ) from None
            if not hint:
                raise
            error = f"{type(exc).__name__}: {str(exc).rstrip('.')}"
            raise StoreError(f"{root!r}: summarising grid point {g} failed ({error}){hint}.") from None
        point = stored.manifest["grid"][g]
        records.append(
            {
                **point["params"],
                **_derived(point),
                **_with_own_ceiling(summary, stored.games[g], stored.analyses[g], part),
                **({"failed": failed.get(g, 0)} if failed else {}),
            }
        )
    return pd.DataFrame.from_records(records), list(stored.swept)


def _with_own_ceiling(
    summary: dict[str, Any], game: Game, settings: AnalysisSettings, rows: pd.DataFrame
) -> dict[str, Any]:
    """A one-run game's summary of its own bound (no ``[analysis]`` choices) with that bound's ceiling and
    marker (:func:`privgame.games.bounds.default_ceiling_columns`) after its median; other summaries as they are."""
    if game.bound_kind != "one-run" or settings.custom or settings.two_sided or "epsilon_lb_median" not in summary:
        return summary
    from privgame.games.bounds import default_ceiling_columns
    from privgame.games.sequential import rows_read

    extra = default_ceiling_columns(rows_read(rows, settings))  # the trials whose median it is beside
    out: dict[str, Any] = {}
    for key, value in summary.items():
        out[key] = value
        if key == "epsilon_lb_median":
            out.update(extra)
    return out


def _derived(point: Any) -> dict[str, float]:
    """What the grid point's mechanism derived from its parameters, as the run stored it (e.g. DP-SGD's
    calibrated σ, as ``mechanism.sigma``): read, never recomputed."""
    derived = _table(_table(point).get("derived"))
    return {
        f"mechanism.{key}": float(value)
        for key, value in derived.items()
        if _is_real(value)  # an int no float holds is left out with the strings, not an OverflowError
    }


def records_results(root: str, *, plugins: Sequence[str] = (), trust_plugins: bool = False) -> pd.DataFrame:
    """One row per (record, game) of a record-level game's results, with the record's values.

    Parameters
    ----------
    root : str
        The results directory.
    plugins : sequence of str, default=()
        As in :func:`summarise_results`.
    trust_plugins : bool, default=False
        As in :func:`summarise_results`.

    Returns
    -------
    records : DataFrame
        The grid point's swept values, then the per-record metrics as ``records.parquet`` has them (``trial,
        record, game, selection, ..., auc, auc_low, auc_high, accuracy, ..., epsilon_lb, claim_applies``), then
        the record's values: its row of the population the game drew from (the record id is its row number), in
        the game's ``columns`` (all of them, the label included, when it names none, as the games on trained
        models do), each named ``value.<column>`` (:data:`VALUE_PREFIX`), categorical values as their labels.

    Raises
    ------
    privgame.engine.store.StoreError
        If ``root`` holds no per-record results (its game is not a record-level game).

    Warns
    -----
    RecordValuesWarning
        When the records' population cannot be read here (a data set this install does not have, a stored game
        that does not build, record ids beyond the population): the records are returned without their values.
    """
    stored = _load(root, plugins, trust_plugins, need_games=False)
    records = stored.store.records()
    if records.empty:
        game = _table(_table(stored.manifest.get("config")).get("game")).get("name")
        raise StoreError(
            f"{root!r} holds no per-record results: --records needs a record-level game "
            f"(this experiment's game is {game!r})."
        )
    grid = stored.manifest["grid"]
    points = records["grid_point"].to_numpy(dtype=np.int64)
    if points.min() < 0 or points.max() >= len(grid):
        raise StoreError(f"{root}/manifest.json: grid must list grid point {points.max()}, got {len(grid)} points.")
    params = pd.DataFrame([grid[int(g)]["params"] for g in points])
    table = pd.concat([params.reset_index(drop=True), records.drop(columns=["grid_point"])], axis=1)
    reason = stored.unbuilt
    if reason is None:
        try:
            values = _values_of(stored.games, points, records["record"].to_numpy(dtype=np.int64))
        except Exception as exc:  # whatever stops the population loading here, the records themselves are sound
            reason = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
            reason = reason.rstrip(".") + _plugin_hint(_manifest_plugins(stored.manifest))
    if reason is not None:
        warnings.warn(RecordValuesWarning(f"the records' values are left out ({reason.rstrip('.')})."), stacklevel=2)
        return table
    return pd.concat([table, values.add_prefix(VALUE_PREFIX)], axis=1)


def sortable_columns(table: pd.DataFrame) -> list[str]:
    """The columns of ``table`` that :func:`top_rows` can sort by: those holding numbers (booleans excluded)."""
    return [
        str(c)
        for c in table.columns
        if pd.api.types.is_numeric_dtype(table[c]) and not pd.api.types.is_bool_dtype(table[c])
    ]


def top_rows(
    table: pd.DataFrame,
    sort: str | None = None,
    top: int | None = None,
    *,
    names: tuple[str, str] = ("sort", "top"),
) -> pd.DataFrame:
    """The rows of ``table`` in descending order of column ``sort``, the first ``top`` of them
    (``privgame report --records --sort auc --top 5``: the five riskiest records).

    Parameters
    ----------
    table : DataFrame
        A table of :func:`records_results` (or any table).
    sort : str or None, default=None
        A numeric column (:func:`sortable_columns`); rows are ordered by it from the largest, NaN last, equal values
        in their stored order.  ``None``: the stored order.
    top : int or None, default=None
        Keep the first ``top`` rows (a positive integer; more than the table has keeps them all).  ``None``: all.
    names : tuple of str, default=("sort", "top")
        How messages name the two parameters (the command's ``("--sort", "--top")``).

    Returns
    -------
    DataFrame
        The rows kept, their index renumbered from 0.

    Raises
    ------
    ValueError
        If ``sort`` is not a numeric column of ``table`` (listing those that are), or ``top`` is below 1.
    TypeError
        If ``sort`` is not a string or ``top`` not an integer.
    """
    if sort is not None:
        if not isinstance(sort, str):
            raise TypeError(f"{names[0]} must be a column name (a string), got {sort!r}.")
        valid = sortable_columns(table)
        if sort not in valid:
            kind = "is not numeric" if sort in table.columns else "is not a column of the table"
            raise ValueError(
                f"{names[0]} must name a numeric column, got {sort!r}, which {kind}; valid: {', '.join(valid)}."
            )
        table = table.sort_values(sort, ascending=False, kind="stable", na_position="last")
    if top is not None:
        if isinstance(top, bool) or not isinstance(top, int | np.integer):
            raise TypeError(f"{names[1]} must be a positive integer, got {top!r}.")
        if top < 1:
            raise ValueError(f"{names[1]} must be a positive integer, got {top!r}.")
        table = table.iloc[: int(top)]
    return table.reset_index(drop=True)


def select_columns(table: pd.DataFrame, columns: Sequence[str] | None, *, name: str = "columns") -> pd.DataFrame:
    """The columns ``columns`` of ``table``, in that order (``privgame report --columns auc,record``); ``None``:
    all of them.

    Raises
    ------
    ValueError
        If ``columns`` is empty, names a column twice, or names one ``table`` lacks (listing those it has); ``name``
        is how the message names the parameter (the command's ``"--columns"``).
    TypeError
        If ``columns`` is a string, or holds something else than strings.
    """
    if columns is None:
        return table
    if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
        raise TypeError(f"{name} must be a list of column names, got {columns!r}.")
    if not columns:
        raise ValueError(f"{name} must name at least one column; valid: {', '.join(map(str, table.columns))}.")
    unknown = [c for c in columns if c not in table.columns]
    if unknown:
        raise ValueError(
            f"{name} must name columns of the table, got {unknown[0]!r}; valid: {', '.join(map(str, table.columns))}."
        )
    twice = next((c for i, c in enumerate(columns) if c in columns[:i]), None)
    if twice is not None:
        raise ValueError(f"{name} must name each column once, got {twice!r} twice.")
    return table[list(columns)]


def _values_of(games: Sequence[Game], points: np.ndarray, ids: np.ndarray) -> pd.DataFrame:
    """Each record's values (:func:`_record_values`), row for row with ``points`` (its grid point) and ``ids``;
    where grid points differ in their columns, a column a point lacks is empty on its rows."""
    parts = []
    for g in pd.unique(points):
        at = np.flatnonzero(points == g)
        part = _record_values(games[int(g)], ids[at])
        parts.append(part.set_axis(at))
    if any(list(part.columns) != list(parts[0].columns) for part in parts):
        parts = [part.astype(object) for part in parts]  # an int column with gaps stays ints, not 35.0
    return pd.concat(parts).sort_index().reset_index(drop=True)


def _record_values(game: Game, ids: np.ndarray) -> pd.DataFrame:
    """The records ``ids`` as they are in the population ``game`` drew them from: its rows ``ids`` (a record's id
    is its row number), in the game's ``columns`` (all, the label included, when it names none), read as the
    record games read them.

    Raises
    ------
    ValueError
        If the game names no data set, or an id is not a row of its population.
    """
    from privgame.games.record import _population

    data, columns = getattr(game, "data", None), getattr(game, "columns", None)
    if not isinstance(data, str):
        raise ValueError(f"game {game.name!r} names no data set")
    table = _population(data, columns)
    bad = ids[(ids < 0) | (ids >= len(table))]
    if bad.size:
        raise ValueError(f"record ids must be rows of the {data!r} population (0 to {len(table) - 1}), got {bad[0]}")
    return table.iloc[ids].reset_index(drop=True)


def plot_results(
    root: str, summary: pd.DataFrame, swept: list[str], path: str | Path, *, trust_plugins: bool = False
) -> Path:
    """Draw the figure of the results' game (:func:`figure_results`) into the file ``path`` (``.png``, ``.pdf`` or
    ``.svg``)."""
    from privgame.analysis._figures import check_suffix, save

    out = check_suffix(path)
    return save(figure_results(root, summary, swept, trust_plugins=trust_plugins), out)


def plot_problem(root: str) -> str | None:
    """Why the results in ``root`` have no figure to draw, or ``None``: a record game that played one of the two
    games (its figure, each record's model-seeded against its traditional AUC, needs both).  Reads only the
    per-record rows."""
    return _records_plot_problem(_record_game_rows(ResultsStore(root).records()))


def _record_game_rows(records: pd.DataFrame) -> pd.DataFrame:
    """The rows of the record games (traditional, model-seeded): what their AUC scatter draws; other games' records
    (the lira game's per-record AUCs) are for ``report --records`` and ``--compare``."""
    from privgame.games.record import GAMES_PLAYED

    if records.empty or "game" not in records.columns:
        return records
    return records[records["game"].isin(GAMES_PLAYED)]


def _records_plot_problem(records: pd.DataFrame) -> str | None:
    if not records.empty and "game" in records.columns and records["game"].nunique() < 2:
        played = ", ".join(repr(str(g)) for g in records["game"].unique())
        return (
            "needs both record games (game 'record'; it draws each record's model-seeded against its traditional "
            f"AUC), got only {played} rows"
        )
    return None


def figure_results(
    root: str,
    summary: pd.DataFrame,
    swept: Sequence[str],
    *,
    ax: matplotlib.axes.Axes | None = None,
    trust_plugins: bool = False,
) -> matplotlib.figure.Figure:
    """The figure of the results' game, as ``privgame report --plot`` draws it: the per-record AUC scatter for
    record-level games, log-log ROC curves for games that have them (``Game.roc_curves``), the measurements side by
    side (``Game.side_by_side``), else the game's headline ε lower bound (``Game.headline``: the median over trials
    of a one-run audit, the pooled bound of a multi-run audit) against the analytic ε.

    Parameters
    ----------
    root : str
        The results directory.
    summary : DataFrame
        Its summary (:func:`summarise_results`).
    swept : sequence of str
        The swept parameters (:func:`summarise_results`).
    ax : matplotlib Axes or None, default=None
        Draw into this axes instead of a new figure, where the figure has one panel (see the ``figure_*``
        functions of :mod:`privgame.analysis.reporting` and :mod:`privgame.analysis.record_risk`).
    trust_plugins : bool, default=False
        As in :func:`summarise_results` (the games are built again, and may name a plugin's code).

    Returns
    -------
    Figure
        A plain matplotlib Figure (not registered with pyplot), or ``ax``'s figure.

    Raises
    ------
    ValueError
        If there is nothing to draw (:func:`plot_problem`; no grid point with a finite analytic ε), or ``ax`` is
        given for a figure of several panels.
    """
    from privgame.analysis.reporting import figure_lower_bounds

    store = ResultsStore(root)
    records = _record_game_rows(store.records())
    if not records.empty:
        from privgame.analysis.record_risk import figure_risk_scatter

        problem = _records_plot_problem(records)
        if problem is not None:
            raise ValueError(f"the figure {problem}.")
        manifest = store.manifest()
        labels = {
            i: ", ".join(f"{k}={v}" for k, v in g["params"].items()) or str(manifest.get("name", ""))
            for i, g in enumerate(manifest["grid"])
        }
        records = records.assign(group=[labels[int(g)] for g in records["grid_point"]])
        if records["group"].nunique() == 1:
            records = records.drop(columns=["group"])
        return figure_risk_scatter(records, title=printable(str(manifest.get("name") or Path(root).name)), ax=ax)
    group_by = [c for c in swept if not c.startswith("mechanism.")]
    game = _table(_table(store.manifest().get("config")).get("game")).get("name")
    cls = GAMES.get(game) if isinstance(game, str) and game in GAMES else Game
    curves = _roc_panels(root, store, trust_plugins)
    if curves is not None:
        from privgame.analysis.reporting import figure_roc_curves

        manifest = store.manifest()
        title = printable(str(manifest.get("name") or Path(root).name))
        return figure_roc_curves(curves, title=title, subtitle=_context(store), ax=ax)
    name, context = ladder_context(root)
    if cls.side_by_side is not None:
        from privgame.analysis.reporting import figure_estimator_ladder

        frame = summary[[c for c in summary.columns if c in swept or c == "epsilon_analytic"]].copy()
        for label, prefix in cls.side_by_side:
            for end in ("median", "min", "max"):
                frame[f"{label}.epsilon_lb_{end}"] = summary[f"{prefix}_{end}"]
        figure, _ = figure_estimator_ladder(
            frame,
            swept,
            title=name,
            subtitle=textwrap.fill(context, 90),
            ylabel="ε, c or c + ε (median; bar: min–max over repetitions)",
            ax=ax,
        )
        return figure
    _, context = ladder_context(root, confidence=False)  # the title states the confidence with the trials
    return figure_lower_bounds(
        summary,
        group_by=group_by,
        title=name,
        subtitle=textwrap.fill(context, 70),
        bound=cls.headline,
        band=cls.headline_band,
        confidence=_confidence(store),
        own_estimator=cls.headline_estimator,
        ax=ax,
    )


def _confidence(store: ResultsStore) -> float | list[float] | None:
    """The stored config's ``[analysis] confidence`` for a figure's title (a list for an analysis sweep; 0.95 when
    not given); None where the manifest holds something else (the title then states none)."""
    given = _table(_table(store.manifest().get("config")).get("analysis")).get("confidence", 0.95)
    values = given if isinstance(given, list) else [given]
    if not values or not all(isinstance(v, int | float) and not isinstance(v, bool) and 0 < v < 1 for v in values):
        return None
    return [float(v) for v in values] if isinstance(given, list) else float(given)


def plot_trial_curves(
    root: str, path: str | Path, *, plugins: Sequence[str] = (), trust_plugins: bool = False
) -> list[Path]:
    """Each grid point's per-trial figure (``Game.plot_trial``), of its trial with the median headline (the lower
    median over its finished trials): ``path`` itself for one grid point, else ``<stem>-p<index><suffix>`` each;
    ``plugins`` and ``trust_plugins`` as in :func:`summarise_results`.

    Raises
    ------
    StoreError
        If the results' game draws no per-trial figure.
    """
    stored = _load(root, plugins, trust_plugins)
    rows = stored.rows
    points = sorted({int(g) for g in rows["grid_point"].unique()})
    targets = trial_curve_paths(path, points)
    written: list[Path] = []
    for g in points:
        game = stored.games[g]
        part = rows[rows["grid_point"] == g]
        column = game.headline.removesuffix("_median")
        part = part.sort_values([column, "trial"]) if column in part.columns else part.sort_values("trial")
        trial = int(part["trial"].iloc[(len(part) - 1) // 2])
        params = stored.manifest["grid"][g]["params"]
        label = ", ".join(f"{k}={v}" for k, v in params.items())
        title = printable(f"{stored.name}: {label}, trial {trial}" if label else f"{stored.name}: trial {trial}")
        drawn = game.plot_trial(stored.store.load_outcome(trial), stored.analyses[g], targets[g], title=title)
        if drawn is None:
            raise StoreError(f"game {game.name!r} draws no per-trial curves (--curves is for games such as panoramia).")
        written.append(drawn)
    return written


def trial_curve_paths(path: str | Path, points: Sequence[int]) -> dict[int, Path]:
    """Where :func:`plot_trial_curves` draws each grid point of ``points`` (those with finished trials): ``path``
    itself for one, else ``<stem>-p<index><suffix>`` each (``privgame report`` checks them all before any work)."""
    out, points = Path(path), list(points)
    if len(points) == 1:
        return {points[0]: out}
    return {g: out.with_name(f"{out.stem}-p{g}{out.suffix}") for g in points}


def _roc_panels(root: str, store: ResultsStore, trust_plugins: bool) -> dict[str, dict[str, Any]] | None:
    """``{evaluation: {grid point: (fpr, tpr)}}`` from the first finished trial of each grid point, for games that
    draw ROC curves (``Game.roc_curves``); ``None`` for the others."""
    stored = _load(root, (), trust_plugins)
    rows = stored.rows
    panels: dict[str, dict[str, Any]] = {}
    for g in sorted({int(g) for g in rows["grid_point"].unique()}):
        trial = int(rows.loc[rows["grid_point"] == g, "trial"].min())
        curves = stored.games[g].roc_curves(stored.store.load_outcome(trial))
        if curves is None:
            return None
        params = stored.manifest["grid"][g]["params"]
        label = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in params.items()) or stored.name
        for evaluation, curve in curves.items():
            panels.setdefault(evaluation, {})[label] = curve
    return panels or None


def brief_summary(
    root: str, summary: pd.DataFrame, swept: Sequence[str], *, trust_plugins: bool = False
) -> tuple[pd.DataFrame, int]:
    """The summary as a plain table shows it: the swept columns and the game's brief columns
    (``Game.brief_columns``), with how many columns were left out (``--format csv`` has them all).  Reads only the
    manifest (``summary`` came from :func:`summarise_results`, which read the rows; ``trust_plugins`` as there)."""
    games = _summary_games(root, swept, trust_plugins)
    brief = games[0].brief_columns() if games else None
    shared = set(games[0].shared_columns()) if games else set()
    if brief is not None:  # shown once per set of models (shared_tables), not in every attack's row
        brief = tuple(c for c in brief if c not in shared)
    from privgame.analysis.reporting import estimator_labels_of

    labels = estimator_labels_of(summary)
    if brief is None and labels:  # [analysis] estimators: each estimator's columns, not the first one's twice
        ends = ("epsilon_lb", "epsilon_lb_median", "ceiling", "at_ceiling", "epsilon_lb_min", "epsilon_lb_max")
        brief = (
            *(
                f"{label}.{end}"
                for label in labels
                for end in (*ends, "tightness", "over_claim", "over_claim_allowed", "verdict")
            ),
            # a parametric estimate (gauss_fit): its kind says it is no bound; it has no ceiling nor verdict
            *(
                c
                for c in summary.columns
                if c.endswith((".kind", ".epsilon_estimate_median", ".epsilon_estimate_min", ".epsilon_estimate_max"))
            ),
            # a sequential audit's one verdict over every estimator, its evidence and the trials it read
            *(("verdict", "sequential_e", "sequential_trials") if "sequential_e" in summary.columns else ()),
            "n_runs",
            "n_trials",
        )
    if brief is None:
        return _ceiling_markers(summary), 0
    keep = [c for c in summary.columns if c in swept or c.startswith("mechanism.") or c == "epsilon_analytic"]
    keep += [c for c in brief if c in summary.columns and c not in keep]
    keep += [c for c in ("failed",) if c in summary.columns]
    return _ceiling_markers(summary[keep]), summary.shape[1] - len(keep)


def _summary_games(root: str, swept: Sequence[str], trust_plugins: bool) -> tuple[Game, ...]:
    """The grid points' games of the results in ``root``, from the manifest alone."""
    manifest = ResultsStore(root).manifest()
    _, games = stored_games(
        _table(manifest.get("config")),
        tuple(swept),
        attack_points=manifest.get("attack_points"),
        source=_manifest_name(root),
        trusted=trust_plugins,
    )
    return games


def shared_tables(
    root: str, summary: pd.DataFrame, swept: Sequence[str], *, trust_plugins: bool = False
) -> list[tuple[str, pd.DataFrame]]:
    """The game's statistics of each set of models (``Game.shared_columns``: LiRA's calibration of the models'
    confidences), once per set: the grid points that differ only in their attack (``attack.*``) share one row.
    Each item is the game's title for them and the table (the swept values that tell the sets apart, then the
    columns); where two attacks on the same models have different values (LiRA's ``fpc = true`` standardises with
    its corrected variances), one row per grid point, with the attack's columns; ``[]`` for games without such
    columns."""
    games = _summary_games(root, swept, trust_plugins)
    columns = [c for c in (games[0].shared_columns() if games else ()) if c in summary.columns]
    if not columns:
        return []
    keys = [c for c in summary.columns if c in swept and not c.startswith("attack.")]
    extra = [c for c in ("n_models",) if c in summary.columns and c not in keys]
    table = summary[keys + extra + columns].drop_duplicates()
    if len(table) > 1 and (not keys or table.duplicated(subset=keys).any()):  # a set of models, two calibrations
        attacks = [c for c in summary.columns if c in swept and c.startswith("attack.")]
        table = summary[keys + attacks + extra + columns]
    return [(games[0].shared_title, table.reset_index(drop=True))]


def summary_notes(root: str, summary: pd.DataFrame, swept: Sequence[str], *, trust_plugins: bool = False) -> list[str]:
    """The game's warnings on the summary (``Game.summary_notes``), where a figure is not what it seems."""
    games = _summary_games(root, swept, trust_plugins)
    return games[0].summary_notes(summary) if games else []


CEILING_MARKER = ">=99% of ceiling"
"""How a plain, Markdown or LaTeX report shows a median bound within 1 % of its ceiling (``at_ceiling``)."""

BELOW_CEILING = "below"
"""How it shows a median bound further from its ceiling (the column is never left blank)."""

CEILING_NOTE = (
    f"bounds marked {CEILING_MARKER!r} are within 1 % of what their guesses could give at best (every guess "
    "right): the audit, not the mechanism, limits them, and more canaries or more guesses would raise them "
    "(docs/estimators.md#ceilings)."
)


def mark_ceilings(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` as a plain, Markdown or LaTeX report prints it: each ``at_ceiling`` column as
    :data:`CEILING_MARKER` or :data:`BELOW_CEILING` (``--format csv`` keeps the booleans)."""
    return _ceiling_markers(table)


def _ceiling_markers(table: pd.DataFrame) -> pd.DataFrame:
    """``at_ceiling`` columns as :data:`CEILING_MARKER` where true and :data:`BELOW_CEILING` elsewhere (``--format
    csv`` keeps the booleans)."""
    columns = [c for c in table.columns if c == "at_ceiling" or c.endswith(".at_ceiling")]
    if not columns:
        return table
    return table.assign(
        **{
            c: [CEILING_MARKER if value is True or value is np.True_ else BELOW_CEILING for value in table[c]]
            for c in columns
        }
    )


def ceiling_note(summary: pd.DataFrame) -> str | None:
    """The footnote a report prints under its table when some bound is at its ceiling (:data:`CEILING_NOTE`), or
    None (no ``at_ceiling`` column true: none is, or the results were stored before ceilings existed)."""
    columns = [c for c in summary.columns if c == "at_ceiling" or c.endswith(".at_ceiling")]
    marked = any(value is True or value is np.True_ or value == CEILING_MARKER for c in columns for value in summary[c])
    return CEILING_NOTE if marked else None


def _context(store: ResultsStore) -> str:
    """One line of what a figure shows: the game's and mechanism's names."""
    config = _table(store.manifest().get("config"))
    game = _table(config.get("game")).get("name", "?")
    mechanism = _table(config.get("mechanism")).get("name", "?")
    tables = config.get("attack")
    names = [_table(t).get("name", "?") for t in (tables if isinstance(tables, list) else [tables])]
    attack = ", ".join(dict.fromkeys(str(n) for n in names))
    return printable(f"game {game}, mechanism {mechanism}, attack{'s' if len(names) > 1 else ''} {attack}")


def ladder_context(root: str, *, confidence: bool = True) -> tuple[str, str]:
    """A ladder's title (the experiment's name) and its context line: the confidence (``confidence=False``: left
    out), δ, the game's size and the guessing rule, as the stored config says."""
    config = _table(ResultsStore(root).manifest().get("config"))
    name = str(_table(config.get("experiment")).get("name", Path(root).name))
    analysis = _table(config.get("analysis"))
    game = _table(config.get("game"))

    def values(key: str, default: float) -> str:  # one value, or an analysis sweep's
        given = analysis.get(key, default)
        return ", ".join(f"{float(v):g}" for v in given) if isinstance(given, list) else f"{float(given):g}"

    parts = [f"confidence {values('confidence', 0.95)}"] if confidence else []
    parts.append(f"δ = {values('delta', 0.0)}")
    if "m" in game:
        parts.append(f"m = {game['m']}")
    if "runs" in game:
        parts.append(f"{game['runs']} runs a trial")
    rule = analysis.get("threshold")
    if rule is None or rule == "top-k":
        rule_text = (
            f"top-k (k₊ = {game.get('k_pos')}, k₋ = {game.get('k_neg')})"
            if "k_pos" in game
            else f"Bonferroni over {game.get('thresholds', 100)} thresholds"
        )
    elif isinstance(rule, Mapping):
        params = ", ".join(f"{k} = {v}" for k, v in rule.items() if k != "rule")
        rule_text = f"{rule.get('rule')}" + (f" ({params})" if params else "")
    else:
        rule_text = f"threshold {rule}"
    if analysis.get("two_sided"):
        rule_text += ", two-sided"
    parts.append(f"rule: {rule_text}")
    return printable(name), printable("; ".join(parts))


def ladder_results(root: str, *, plugins: Sequence[str] = (), trust_plugins: bool = False) -> pd.DataFrame:
    """Every ladder estimator's bound on each grid point's stored scores (median over its trials); ``plugins`` and
    ``trust_plugins`` as in :func:`summarise_results`.

    Returns
    -------
    DataFrame
        Columns ``setting, estimator, epsilon, epsilon_true`` (``epsilon_true`` is the analytic ε), and ``note``
        where some point's mechanism does not declare its canaries independent channels: there the
        order-statistics audit (:data:`privgame.analysis.ladder.PRODUCT_MODEL`), which holds only for such canaries, is
        NaN and its note quotes the mechanism's reason (``Mechanism.canary_dependence``, read from its registered class:
        no mechanism is built).  The order-statistics audit with DP-SGD's own PLD family needs the mechanism's
        claim, which a report does not build: name ``order_stats`` in ``[analysis] estimators`` to store it.
    """
    from privgame.analysis.ladder import PRODUCT_MODEL, ladder
    from privgame.games.sequential import rows_read

    stored = _load(root, plugins, trust_plugins)
    rows = stored.rows
    records = []
    for g in sorted(rows["grid_point"].unique()):
        point = stored.manifest["grid"][int(g)]
        settings = stored.analyses[int(g)]
        dependence = _canary_dependence(stored.manifest, point)
        label = ", ".join(f"{k}={v}" for k, v in point["params"].items()) or stored.name
        values: dict[str, list[float]] = {}
        for trial in rows_read(rows[rows["grid_point"] == g], settings)["trial"]:  # a sequential audit's: read
            outcome = stored.store.load_outcome(int(trial))
            s, member = outcome.scores, outcome.membership
            bounds = ladder(
                s[member], s[~member], confidence=settings.confidence, delta=settings.delta, dependence=dependence
            )
            for name, value in bounds.items():
                values.setdefault(name, []).append(value)
        for name, vals in values.items():
            record = {
                "setting": label,
                "estimator": name,
                "epsilon": float(np.nanmedian(vals)) if np.isfinite(vals).any() else float("nan"),
                "epsilon_true": point.get("epsilon_analytic", float("nan")),
            }
            if dependence is not None and name in PRODUCT_MODEL:
                record["note"] = printable(
                    "not shown: the order-statistics audit holds only when every canary is its own independent "
                    f"channel, and here {dependence.rstrip('.')}"
                )
            records.append(record)
    table = pd.DataFrame(records)
    if "note" in table.columns:
        table["note"] = table["note"].fillna("")
    return table


def _canary_dependence(manifest: Mapping[str, Any], point: Mapping[str, Any]) -> str | None:
    """Why a grid point's mechanism's canaries are not independent channels (its class's ``canary_dependence``,
    None when they are), read from the mechanism's registered class without building it; a mechanism not
    registered here (a plugin not imported) is not known to have independent canaries."""
    from privgame.engine.registry import MECHANISMS, UnknownNameError

    name = _table(point.get("params")).get(
        "mechanism.name", _table(_table(manifest.get("config")).get("mechanism")).get("name")
    )
    try:
        dependence = MECHANISMS.get(str(name)).canary_dependence
    except (UnknownNameError, ImportError):  # a plugin not imported, or its optional packages missing
        return f"the mechanism {str(name)!r} is not registered here, so its canaries are not known to be independent"
    return None if dependence is None else str(dependence)
