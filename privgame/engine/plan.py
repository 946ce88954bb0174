"""The plan of one experiment: what a normalised, hashed config becomes before any trial is played.

The flow of one experiment is a straight line (docs/architecture.md)::

    config ──► ExperimentConfig ──► Experiment ──► ResultsStore ──► runner ──► rows
              (engine.config)       (this module)  (engine.store)   (engine.runner)

:func:`plan_experiment` turns an :class:`~privgame.engine.config.ExperimentConfig` (and the manifest its results
directory already holds, if any) into an :class:`Experiment`: its repetition blocks, every trial with its own seed,
each grid point's analytic ε and the manifest its results directory is opened with.  Nothing here writes a file or
plays a trial.

Seeding: trial j of grid point g gets ``SeedSequence(seed).spawn(n_plays)[p].spawn(repetitions)[j]`` (p the
point's play), spawned here, in the parent, in trial order, so results are identical for any ``n_jobs`` and backend,
and a trial's numbers depend only on (seed, g, j).
"""

from __future__ import annotations

import datetime as _dt
import itertools
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from privgame.engine.config import ExperimentConfig, GridPoint, config_hash
from privgame.engine.store import FORMAT_VERSION, StoreError
from privgame.games._base import AnalysisSettings

__all__ = [
    "Experiment",
    "Trial",
    "analytic_epsilon",
    "analytic_epsilons",
    "cell",
    "plan_experiment",
    "plan_trials",
    "point_settings",
    "repetition_blocks",
    "repetition_plan",
    "run_manifest",
    "trial_index",
]


@dataclass(frozen=True, slots=True)
class Trial:
    """One trial: repetition ``repetition`` of grid point ``grid_index``, with its own seed."""

    index: int
    grid_index: int
    repetition: int
    seed: np.random.SeedSequence


def repetition_blocks(manifest: Mapping[str, Any]) -> tuple[int, ...]:
    """The repetition blocks of a results manifest: the repetitions per grid point after the first run and after
    each ``--repetitions`` that added some (increasing; the last is ``repetitions``).

    Raises
    ------
    StoreError
        If the manifest's blocks are not increasing positive integers ending at its ``repetitions``.
    """
    repetitions = manifest.get("repetitions")
    blocks = manifest.get("repetition_blocks", [repetitions])
    valid = (
        isinstance(blocks, list)
        and blocks
        and all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in blocks)
        and all(a < b for a, b in itertools.pairwise(blocks))
        and blocks[-1] == repetitions
    )
    if not valid:
        raise StoreError(
            f"the manifest's repetition_blocks {blocks!r} are not increasing counts ending at its repetitions "
            f"{repetitions!r}."
        )
    return tuple(blocks)


def trial_index(grid_index: int, repetition: int, n_grid: int, blocks: Sequence[int]) -> int:
    """The number of repetition ``repetition`` of grid point ``grid_index``: the trials of the first run are
    numbered ``g·R₀ + j``, and those each later block added follow, numbered the same way within the block, so
    adding repetitions never renumbers a trial."""
    start = 0
    for end in blocks:
        if repetition < end:
            return n_grid * start + grid_index * (end - start) + (repetition - start)
        start = end
    raise ValueError(f"repetition {repetition} is beyond the {start} repetitions of the blocks {list(blocks)}.")


def plan_trials(config: ExperimentConfig, blocks: Sequence[int] | None = None) -> list[Trial]:
    """Every trial of ``config`` in trial order, each with its child ``SeedSequence`` (spawned here, in the parent).

    Trial j of grid point g has the seed ``SeedSequence(seed).spawn(n_plays)[p].spawn(repetitions)[j]``, p the
    point's play (:attr:`privgame.engine.config.GridPoint.play`: g itself unless the analysis is swept), so the points
    of an analysis sweep analyse the same trials, and adding repetitions adds seeds without changing the others.
    ``blocks``: the results directory's :func:`repetition_blocks` (default: one block, the config's repetitions).
    """
    blocks = (config.repetitions,) if blocks is None else tuple(blocks)
    if blocks[-1] != config.repetitions:
        raise ValueError(f"the repetition blocks {list(blocks)} must end at the config's {config.repetitions}.")
    trials = []
    n_grid = len(config.grid)
    for g, point in enumerate(config.grid):
        play_seed = np.random.SeedSequence(config.seed, spawn_key=(point.play,))  # = SeedSequence(seed).spawn(·)[p]
        for j, seed in enumerate(play_seed.spawn(config.repetitions)):
            trials.append(Trial(trial_index(g, j, n_grid, blocks), g, j, seed))
    return sorted(trials, key=lambda t: t.index)


def _point_claims(config: ExperimentConfig) -> list[Any]:
    """Each grid point's privacy claim, asked once per play (the points of an analysis sweep share a mechanism)."""
    by_play: dict[int, Any] = {}
    for point in config.grid:
        if point.play not in by_play:
            by_play[point.play] = point.mechanism.privacy_claim()
    return [by_play[point.play] for point in config.grid]


def analytic_epsilon(point: GridPoint, delta: float | None = None, claim: Any = False) -> float:
    """The mechanism's analytic ε at ``delta`` (default: the point's own δ); NaN when it claims no guarantee."""
    claim = point.mechanism.privacy_claim() if claim is False else claim
    return math.nan if claim is None else claim.epsilon(point.analysis.delta if delta is None else delta)


def analytic_epsilons(config: ExperimentConfig, progress: bool) -> list[float]:
    """Every grid point's analytic ε at its δ, under its own progress line: this step calibrates what mechanisms
    derive from their parameters (DP-SGD's σ, tens of seconds per target ε the first time), before any trial."""
    calibrates = any(getattr(point.mechanism, "derives_parameters", bool)() for point in config.grid)
    with tqdm(  # closed (its line cleared) before an error is printed, too
        total=len(config.grid),
        desc="analytic ε (σ calibration)" if calibrates else "analytic ε",
        unit="point",
        disable=not progress,
        file=sys.stderr,
        leave=False,
    ) as bar:
        claims: dict[int, Any] = {}
        epsilons = []
        for point in config.grid:
            if point.play not in claims:
                claims[point.play] = point.mechanism.privacy_claim()
            epsilons.append(analytic_epsilon(point, claim=claims[point.play]))
            bar.update(1)
        return epsilons


def cell(value: Any) -> Any:
    """A swept value as a table cell: numbers, booleans and strings as they are, anything else as its text."""
    return value if isinstance(value, bool | int | float | str) else str(value)


def repetition_plan(
    config: ExperimentConfig, out: str | Path, previous: Mapping[str, Any] | None
) -> tuple[tuple[int, ...], bool]:
    """The repetition blocks of a run of ``config`` into ``out``, and whether the run adds repetitions to it;
    ``previous`` is the manifest ``out`` holds (:meth:`ResultsStore.previous_manifest`), or None.

    A directory holding this experiment with fewer repetitions per grid point (the config or ``--repetitions``
    asks for more) keeps its trials and their numbers: the new repetitions are a block of their own.

    Raises
    ------
    StoreError
        If ``out`` holds this experiment with more repetitions than asked (a run cannot drop trials).
    """
    own = (config.repetitions,)
    root = Path(out)
    if previous is None:
        return own, False
    old = previous
    normalised = old.get("normalised_config")
    if not isinstance(normalised, Mapping):
        return own, False
    drop = lambda c: {k: v for k, v in c.items() if k != "repetitions"}  # noqa: E731
    if config_hash(drop(normalised)) != config_hash(drop(config.normalised)):
        return own, False  # another experiment: open_for_run refuses it, naming the differences
    blocks = repetition_blocks(old)
    if config.repetitions < blocks[-1]:
        raise StoreError(
            f"--out {str(root)!r} holds this experiment with {blocks[-1]} repetitions per grid point; "
            f"{config.repetitions} would drop trials: give --repetitions {blocks[-1]} or more (more adds repetitions)."
        )
    if config.repetitions == blocks[-1]:
        return blocks, False
    return (*blocks, config.repetitions), True


def point_settings(config: ExperimentConfig) -> list[AnalysisSettings]:
    """The analysis settings of each grid point, bound to its mechanism's claim when the config chose estimators
    (their families need it); computed once per play, in the parent."""
    if not any(p.analysis.custom for p in config.grid):
        return [p.analysis for p in config.grid]
    claims = _point_claims(config)
    return [
        p.analysis.bind(claim, p.mechanism.canary_dependence) if p.analysis.custom else p.analysis
        for p, claim in zip(config.grid, claims, strict=True)
    ]


def run_manifest(
    config: ExperimentConfig, epsilons: list[float], blocks: Sequence[int] | None = None
) -> dict[str, Any]:
    """The manifest of a results directory of ``config`` (written first: it identifies the experiment)."""
    try:
        version = metadata.version("privgame")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return {
        "format": FORMAT_VERSION,
        "privgame_version": version,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "config_hash": config.hash,
        "normalised_config": config.normalised,
        "config": dict(config.raw),
        **({} if config.data_source is None else {"data_source": config.data_source.to_json()}),
        "name": config.name,
        "seed": config.seed,
        "repetitions": config.repetitions,
        "repetition_blocks": list(blocks or (config.repetitions,)),
        "n_trials": config.n_trials,
        "swept": list(config.swept),
        **({"attack_points": list(config.attack_points)} if config.attack_points else {}),
        "grid": [
            {
                "index": p.index,
                "params": {k: cell(v) for k, v in p.params.items()},
                "epsilon_analytic": e,
                "derived": p.mechanism.derived_parameters(),  # e.g. DP-SGD's calibrated σ (done with e above)
            }
            for p, e in zip(config.grid, epsilons, strict=True)
        ],
    }


@dataclass(frozen=True)
class Experiment:
    """One experiment, planned: what its results directory is opened with and what the runner plays.

    Attributes
    ----------
    config : ExperimentConfig
        The normalised, hashed config (:attr:`ExperimentConfig.hash` identifies the experiment).
    blocks : tuple of int
        The repetition blocks (:func:`repetition_blocks`): one, unless a run adds repetitions to a directory.
    extending : bool
        Whether this run adds repetitions to the directory's experiment (the last block is new).
    epsilons : list of float
        Each grid point's analytic ε at its δ (NaN where the mechanism claims none).
    trials : list of Trial
        Every trial, in trial order, each with its own seed.
    manifest : dict
        The results directory's manifest (:func:`run_manifest`; for an extension, the directory's creation time
        and the repetitions it added before, kept).
    """

    config: ExperimentConfig
    blocks: tuple[int, ...]
    extending: bool
    epsilons: list[float]
    trials: list[Trial]
    manifest: dict[str, Any]


def plan_experiment(
    config: ExperimentConfig,
    out: str | Path,
    *,
    previous: Mapping[str, Any] | None = None,
    progress: bool = False,
) -> Experiment:
    """Plan ``config``'s run into ``out``: its blocks, trials, analytic ε and manifest (nothing is written).

    Parameters
    ----------
    config : ExperimentConfig
    out : str or Path
        The results directory (named in messages only).
    previous : mapping or None, default=None
        The manifest ``out`` already holds (:meth:`ResultsStore.previous_manifest`); ``None`` for a new directory
        (or a ``--force`` run, which replaces it).
    progress : bool, default=False
        Show the analytic ε step's progress line (it calibrates DP-SGD's σ: tens of seconds the first time).

    Raises
    ------
    StoreError
        If ``out`` holds this experiment with more repetitions than asked (a run cannot drop trials).
    """
    blocks, extending = repetition_plan(config, out, previous)
    eps = analytic_epsilons(config, progress)
    manifest = run_manifest(config, eps, blocks)
    if extending and previous is not None:
        manifest["created"] = previous.get("created", manifest["created"])
        added = previous["repetitions_added"] if isinstance(previous.get("repetitions_added"), list) else []
        manifest["repetitions_added"] = [
            *added,
            {"from": blocks[-2], "to": blocks[-1], "at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")},
        ]
    return Experiment(config, blocks, extending, eps, plan_trials(config, blocks), manifest)
