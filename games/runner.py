"""The seeded parallel runner: grid × repetitions → trials → results directory.

Seeding: trial j of grid point g gets ``SeedSequence(seed).spawn(n_grid)[g].spawn(repetitions)[j]``, spawned in
the parent in trial order, so results are identical for any ``n_jobs`` and backend, and a trial's numbers depend
only on (seed, g, j).  Trials run through joblib (loky processes on one machine; joblib's ``dask`` backend on a
``dask.distributed`` cluster), come back as they finish and are written at once, so an interrupted run loses at
most the trials in flight and resumes where it stopped.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import math
import os
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import joblib
import numpy as np
from tqdm.auto import tqdm

from analysis.cache import ArtefactCache
from games._base import AnalysisSettings, TrialContext, TrialOutcome
from games.config import ExperimentConfig, GridPoint
from games.store import FORMAT_VERSION, ResultsStore

__all__ = ["Trial", "analytic_epsilon", "plan_trials", "run_experiment"]


@dataclass(frozen=True, slots=True)
class Trial:
    """One trial: repetition ``repetition`` of grid point ``grid_index``, with its own seed."""

    index: int
    grid_index: int
    repetition: int
    seed: np.random.SeedSequence


def plan_trials(config: ExperimentConfig) -> list[Trial]:
    """Every trial of ``config`` in order, each with its child ``SeedSequence`` (spawned here, in the parent)."""
    trials = []
    point_seeds = np.random.SeedSequence(config.seed).spawn(len(config.grid))
    for g, point_seed in enumerate(point_seeds):
        for j, seed in enumerate(point_seed.spawn(config.repetitions)):
            trials.append(Trial(g * config.repetitions + j, g, j, seed))
    return trials


def analytic_epsilon(point: GridPoint, delta: float) -> float:
    """The mechanism's analytic ε at ``delta`` (NaN when it claims no guarantee)."""
    claim = point.mechanism.privacy_claim()
    return math.nan if claim is None else claim.epsilon(delta)


def _cell(value: Any) -> Any:
    return value if isinstance(value, bool | int | float | str) else str(value)


class _ProgressFile:
    """In the worker: the running count of a trial's finished mechanism runs, rewritten at most once a second."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.done = 0
        self.last = 0.0

    def __call__(self, k: int) -> None:
        self.done += k
        now = time.monotonic()
        if now - self.last >= 1.0:
            self.last = now
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            with contextlib.suppress(OSError):  # progress is best effort; it never fails a trial
                tmp.write_text(json.dumps({"done": self.done}))
                os.replace(tmp, self.path)


def _run_trial(
    point: GridPoint,
    trial: Trial,
    settings: AnalysisSettings,
    epsilon: float,
    cache: ArtefactCache | None = None,
    progress_path: Path | None = None,
) -> tuple[int, dict[str, Any], TrialOutcome, list[dict[str, Any]]]:
    start = time.perf_counter()
    context = TrialContext(cache=cache, progress=None if progress_path is None else _ProgressFile(progress_path))
    outcome = point.game.play(point.mechanism, point.attack, seed=trial.seed, context=context)
    metrics, records = point.game.analyse(outcome, settings, seed=trial.seed)
    row: dict[str, Any] = {
        "trial": trial.index,
        "grid_point": trial.grid_index,
        "repetition": trial.repetition,
        "spawn_key": "/".join(map(str, trial.seed.spawn_key)),
        **{key: _cell(value) for key, value in point.params.items()},
        "epsilon_analytic": epsilon,
        **metrics,
        "seconds": time.perf_counter() - start,
    }
    return trial.index, row, outcome, records


class _RunsBar:
    """In the parent: a second progress line counting mechanism runs (finished trials' plus running trials' files)."""

    def __init__(self, store: ResultsStore, per_trial: dict[int, int], pending: list[Trial], progress: bool) -> None:
        self.store = store
        self.per_trial = per_trial
        self.pending = {t.index: t for t in pending}
        self.finished = 0
        total = sum(per_trial[t.grid_index] for t in pending)
        self.bar = tqdm(
            total=total,
            desc="mechanism runs",
            unit="run",
            disable=not progress or total == 0,
            file=sys.stderr,
            position=1,
            leave=False,
        )
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)

    def finish(self, trial: int) -> None:
        self.finished += self.per_trial[self.pending[trial].grid_index]
        self.pending.pop(trial)

    def _poll(self) -> None:
        while not self.stop.wait(0.5):
            running = 0
            for index in list(self.pending):
                with contextlib.suppress(OSError, ValueError):
                    running += int(json.loads(self.store.progress_path(index).read_text())["done"])
            value = min(self.finished + running, int(self.bar.total or 0))
            if value != self.bar.n:
                self.bar.n = value
                self.bar.refresh()

    def __enter__(self) -> _RunsBar:
        if not self.bar.disable:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join()
        self.bar.close()


def _manifest(config: ExperimentConfig, epsilons: list[float]) -> dict[str, Any]:
    try:
        version = metadata.version("privgame")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return {
        "format": FORMAT_VERSION,
        "privgame_version": version,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "config_hash": config.hash,
        "config": dict(config.raw),
        "name": config.name,
        "seed": config.seed,
        "repetitions": config.repetitions,
        "n_trials": config.n_trials,
        "swept": list(config.swept),
        "grid": [
            {"index": p.index, "params": {k: _cell(v) for k, v in p.params.items()}, "epsilon_analytic": e}
            for p, e in zip(config.grid, epsilons, strict=True)
        ],
    }


@contextlib.contextmanager
def _backend(dask_scheduler: str | None, n_jobs: int) -> Iterator[None]:
    if dask_scheduler is None:
        yield
        return
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:  # pragma: no cover - depends on the installed extras
        raise ValueError("--dask-scheduler needs the 'dask' extra: pip install 'privgame[dask]'.") from None
    if dask_scheduler == "local":
        with (
            LocalCluster(n_workers=n_jobs, threads_per_worker=1, processes=True) as cluster,
            Client(cluster),
            joblib.parallel_config(backend="dask"),
        ):
            yield
    else:
        with Client(dask_scheduler), joblib.parallel_config(backend="dask"):
            yield


def run_experiment(
    config: ExperimentConfig,
    out: str | Path,
    *,
    config_bytes: bytes = b"",
    n_jobs: int = 1,
    force: bool = False,
    progress: bool = True,
    dask_scheduler: str | None = None,
    cache: ArtefactCache | None = None,
) -> ResultsStore:
    """Run (or resume) every trial of ``config`` into the results directory ``out``.

    Parameters
    ----------
    config : ExperimentConfig
        A validated config (:func:`games.config.load_config`).
    out : str or Path
        Results directory; created if needed, resumed if it holds this config's results.
    config_bytes : bytes, default=b""
        The config file as given, copied into ``out``.
    n_jobs : int, default=1
        Parallel workers (joblib semantics: -1 = all cores).
    force : bool, default=False
        Delete results of a different config in ``out`` instead of refusing.
    progress : bool, default=True
        Show a progress bar on stderr.
    dask_scheduler : str or None, default=None
        Address of a ``dask.distributed`` scheduler to run on (``"local"`` starts a local cluster).
    cache : ArtefactCache or None, default=None
        The artefact cache lent to every trial (generator runs, shadow tables); ``None``: nothing is cached.
        Cached artefacts equal recomputed ones, so it never changes a number, only the time.

    Returns
    -------
    ResultsStore

    Raises
    ------
    games.store.StoreError
        If ``out`` holds another config's results and ``force`` is false.
    """
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0 or n_jobs < -1:
        raise ValueError(f"n_jobs must be a positive integer or -1, got {n_jobs!r}.")
    epsilons = [analytic_epsilon(point, config.analysis.delta) for point in config.grid]
    store = ResultsStore.open_for_run(out, _manifest(config, epsilons), config_bytes, force=force)
    done = store.done()
    pending = [t for t in plan_trials(config) if t.index not in done]
    bar = tqdm(
        total=config.n_trials,
        initial=config.n_trials - len(pending),
        desc=config.name,
        unit="trial",
        disable=not progress,
        file=sys.stderr,
    )
    per_trial = {p.index: p.game.mechanism_runs(p.attack) for p in config.grid}
    runs_bar = _RunsBar(store, per_trial, pending, progress)
    with bar, runs_bar, _backend(dask_scheduler, n_jobs if n_jobs > 0 else joblib.cpu_count()):
        if pending:
            jobs = (
                joblib.delayed(_run_trial)(
                    config.grid[t.grid_index],
                    t,
                    config.analysis,
                    epsilons[t.grid_index],
                    cache,
                    store.progress_path(t.index) if per_trial[t.grid_index] else None,
                )
                for t in pending
            )
            parallel = joblib.Parallel(n_jobs=n_jobs, return_as="generator_unordered")
            for index, row, outcome, records in parallel(jobs):
                store.write_trial(index, row, outcome, records)
                runs_bar.finish(index)
                bar.update(1)
    store.write_results()
    return store
