"""Re-analysis: every bound of a finished run recomputed from its stored raw arrays, with other analysis settings.

``privgame reanalyse DIR --out DIR2`` takes the experiment stored in ``DIR`` (its config, as copied into the
manifest), replaces the ``[analysis]`` section by the given settings (any key not given keeps its stored value),
and writes a new results directory whose trials are the stored ones analysed again: the same raw arrays, the same
trial seeds (so the top-k tie-breaking and a split's mask are drawn as in the run), no mechanism run.  ``DIR`` is
only read.  With the stored settings the rows equal the stored rows exactly (each keeps its play time,
``seconds``), so a reanalysis is also a check of a stranger's directory.

Before anything is written, every stored trial must be finished and its files must match their checksums (a damaged
or missing trial is named, never skipped); the new settings are checked against every grid point as ``privgame
run`` checks a config.  ``DIR2`` follows ``privgame run``'s rules: a reanalysis killed midway resumes there.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from privgame.core.inputs import InputFileError, read_input
from privgame.core.trust import names_from
from privgame.engine._text import printable
from privgame.engine.config import MAX_CONFIG_BYTES, ExperimentConfig, parse_config
from privgame.engine.plan import (
    analytic_epsilons,
    plan_trials,
    point_settings,
    repetition_blocks,
    run_manifest,
    trial_index,
)
from privgame.engine.runner import trial_row
from privgame.engine.store import ResultsStore, StoreError, describe_trials, writing

__all__ = ["reanalyse", "reanalysis_config"]


def reanalysis_config(
    root: str | Path, analysis: Mapping[str, Any], *, trust_plugins: bool = False
) -> tuple[ExperimentConfig, ResultsStore]:
    """The stored experiment of ``root`` with its ``[analysis]`` updated by ``analysis``, and its store.

    Raises
    ------
    StoreError
        If ``root`` is not a results directory.
    ConfigError
        If the new settings are invalid for a grid point (one line, as ``privgame run``), or the stored config names
        code outside privgame and scikit-learn (plugins, estimators, model factories) and ``trust_plugins`` is false
        (:mod:`privgame.core.trust`).
    """
    source = ResultsStore(root)
    manifest = source.manifest()  # refuses what is not a results directory
    stored = manifest.get("config")
    if not isinstance(stored, Mapping):
        raise StoreError(f"{str(source.root)!r} has no stored config in its manifest: it cannot be reanalysed.")
    data = {section: dict(value) if isinstance(value, Mapping) else value for section, value in stored.items()}
    data["analysis"] = {**dict(data.get("analysis", {}) or {}), **dict(analysis)}
    # every name the stored config would import (plugins, estimators, model factories) is read from a file that this
    # command did not write: the one gate of privgame.core.trust decides, with the user's --trust-plugins
    with names_from(repr(str(source.root / "manifest.json")), trusted=trust_plugins):
        config = parse_config(data)
    old = manifest.get("normalised_config")
    if isinstance(old, Mapping):
        new = config.normalised
        same = {k: v for k, v in old.items() if k != "analysis"} == {k: v for k, v in new.items() if k != "analysis"}
        if not same:
            raise StoreError(
                f"the config stored in {str(source.root)!r} no longer builds the same trials with this version of "
                "privgame (its components or defaults changed); rerun it instead of reanalysing."
            )
    return config, source


def reanalyse(
    root: str | Path,
    out: str | Path,
    analysis: Mapping[str, Any],
    *,
    trust_plugins: bool = False,
    progress: bool = True,
    announce: Callable[[str], None] | None = None,
) -> ResultsStore:
    """Analyse the stored trials of ``root`` again with ``analysis`` (``[analysis]`` keys) into ``out``.

    Parameters
    ----------
    root : str or Path
        A results directory (only read).
    out : str or Path
        The new results directory (created, or resumed when it holds this reanalysis).
    analysis : mapping
        ``[analysis]`` keys replacing the stored ones (``confidence``, ``delta``, ``estimators``, ...).
    trust_plugins : bool, default=False
        Import the plugins the stored config names (their code runs).
    progress : bool, default=True
        A progress bar on stderr.
    announce : callable or None
        Called with a line for each step (the CLI prints them).

    Returns
    -------
    ResultsStore
        The new directory.

    Raises
    ------
    StoreError
        If ``root`` is not a results directory, has trials that are not finished or are damaged (named), or is
        ``out`` itself; or ``out`` holds other results.
    ConfigError
        If the settings are invalid.
    """
    config, source = reanalysis_config(root, analysis, trust_plugins=trust_plugins)
    if Path(out).resolve() == source.root.resolve():
        raise StoreError(f"--out must differ from the directory reanalysed ({str(source.root)!r}), which is only read.")
    if source.root.resolve() in Path(out).resolve().parents:
        raise StoreError(
            f"--out must be outside the directory reanalysed ({str(source.root)!r}), which is only read, got "
            f"{str(out)!r}."
        )
    # another experiment's directory is refused before any work (a reanalysis never deletes results)
    ResultsStore(out).check_open(config.identity, remedy="choose another --out (a reanalysis deletes no results)")
    manifest = source.manifest()
    blocks = repetition_blocks(manifest)
    if blocks[-1] != config.repetitions:
        raise StoreError(
            f"{str(source.root)!r}: its manifest says {blocks[-1]} repetitions per grid point, its config "
            f"{config.repetitions}; the directory is damaged."
        )
    trials = plan_trials(config, blocks)
    n_stored = len(manifest.get("grid") or [])
    per_play, rest = divmod(n_stored, max(len(config.plays), 1))
    if rest or per_play < 1:
        raise StoreError(
            f"{str(source.root)!r}: its manifest lists {n_stored} grid points, which is not a whole number of "
            f"analyses of its {len(config.plays)} plays."
        )
    # the stored trial with the same play and repetition (any stored point of the play analysed its outcome): the
    # trial itself when the grid keeps its shape, else the play's first stored point's
    if n_stored == len(config.grid):
        source_of = {t.index: t.index for t in trials}
    else:
        source_of = {
            t.index: trial_index(config.grid[t.grid_index].play * per_play, t.repetition, n_stored, blocks)
            for t in trials
        }
    scan = source.scan()
    # the trials the run's sequential audit never played, past the repetition at which it refuted the claim: no
    # audit ever reads them, so they are not asked for (and their targets are left out, as in the run)
    unplayed = _past_sequential_stops(source, manifest, scan.rows, blocks, trust_plugins) - scan.finished
    if unplayed and not all(p.analysis.sequential for p in config.grid):
        raise StoreError(
            f"{str(source.root)!r}: its sequential audit stopped where it refuted the claim and never played "
            f"{len(unplayed)} trial{'s' if len(unplayed) != 1 else ''} after it ({describe_trials(unplayed)}); a "
            "fixed-sample verdict on a number of trials the data chose keeps no level: keep sequential = true."
        )
    problems = {t: why for t, why in scan.damaged.items() if t not in unplayed}
    problems.update(
        {t: f"failed ({info.get('error', 'see failures/')})" for t, info in scan.failures.items() if t not in unplayed}
    )
    needed = sorted(set(source_of.values()) - unplayed)
    missing = [i for i in needed if i not in scan.finished and i not in problems]
    if problems or missing:
        bad = sorted(set(problems) | set(missing))
        first = bad[0]
        why = problems.get(first, "not run")
        raise StoreError(
            f"{str(source.root)!r} has {len(bad)} trial{'s' if len(bad) != 1 else ''} that cannot be reanalysed "
            f"({describe_trials(set(bad))}; trial {first}: {why}); finish the run first (privgame run resumes it)."
        )
    stored_seconds = {int(row["trial"]): row.get("seconds", float("nan")) for row in scan.rows.to_dict("records")}
    if announce is not None:
        announce(f"reanalysing {len(trials)} trials of {printable(config.name)} from {printable(str(source.root))}")
    epsilons = analytic_epsilons(config, progress)
    with writing(out):  # one writer at a time: another reanalysis or run into ``out`` is refused while this one runs
        target = ResultsStore.open_for_run(out, run_manifest(config, epsilons, blocks), _config_bytes(source))
        done = target.done()
        settings = point_settings(config)
        start = time.perf_counter()
        skipped = sum(source_of[t.index] in unplayed and t.index not in done for t in trials)
        with tqdm(
            total=len(trials) - skipped,
            initial=len(done),
            desc="reanalyse",
            unit="trial",
            disable=not progress,
            file=sys.stderr,
        ) as bar:
            for trial in trials:
                if trial.index in done or source_of[trial.index] in unplayed:
                    continue
                point = config.grid[trial.grid_index]
                stored = source_of[trial.index]
                outcome = source.load_outcome(stored)
                metrics, records = point.game.analyse(outcome, settings[trial.grid_index], seed=trial.seed)
                # the trial's play time, not the reanalysis's
                row = trial_row(point, trial, epsilons[trial.grid_index], metrics, stored_seconds[stored])
                target.write_trial(trial.index, row, outcome, records)
                bar.update(1)
        target.write_results()
    if announce is not None:
        past = f" ({skipped} past a sequential stop, never played, left out)" if skipped else ""
        announce(f"{len(trials) - len(done) - skipped} trials reanalysed{past} in {time.perf_counter() - start:.1f} s")
    return target


def _past_sequential_stops(
    source: ResultsStore, manifest: Mapping[str, Any], rows: Any, blocks: tuple[int, ...], trust_plugins: bool
) -> set[int]:
    """The source's trials after the repetition at which its sequential audit stopped each grid point
    (:func:`privgame.games.sequential.stops_from_rows`, as the run computed it), or none when it was not
    sequential."""
    stored = manifest.get("config")
    analysis = stored.get("analysis") if isinstance(stored, Mapping) else None
    if not isinstance(analysis, Mapping) or analysis.get("sequential") is not True or len(rows) == 0:
        return set()
    from privgame.games.sequential import stops_from_rows

    assert isinstance(stored, Mapping)  # checked with its [analysis] just above
    with names_from(repr(str(source.root / "manifest.json")), trusted=trust_plugins):
        original = parse_config({k: dict(v) if isinstance(v, Mapping) else v for k, v in stored.items()})
    grid = manifest.get("grid") or []
    if len(grid) != len(original.grid):
        return set()
    points = [p for p in original.grid if p.analysis.sequential]
    claims = {p.index: float(grid[p.index].get("epsilon_analytic", float("nan"))) for p in points}
    stops = stops_from_rows(rows, claims, {p.index: p.analysis.confidence for p in points}, blocks[-1])
    return {
        t.index for t in plan_trials(original, blocks) if t.grid_index in stops and t.repetition > stops[t.grid_index]
    }


def _config_bytes(store: ResultsStore) -> bytes:
    """The reanalysed directory's config copy, headed by a note that its [analysis] section was replaced."""
    try:
        original = read_input(store.root / "config.toml", what="config.toml", limit=MAX_CONFIG_BYTES)
    except (OSError, InputFileError):  # gone, or not a file privgame wrote: the manifest holds the config
        original = b""
    note = (
        f"# Reanalysed from {str(store.root)!r} by `privgame reanalyse`: the [analysis] section below is the\n"
        '# original\'s; the settings used are in manifest.json ("config" and "normalised_config").\n'
    )
    return note.encode() + original
