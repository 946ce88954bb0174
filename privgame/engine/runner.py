"""The seeded parallel runner: an experiment's pending trials → their rows in the results directory.

:func:`run_experiment` is the whole flow of one experiment, in one line: the config is planned
(:func:`privgame.engine.plan.plan_experiment`: every trial with its own seed, spawned in the parent, the analytic ε
and the manifest), the results directory is opened with that manifest (:meth:`ResultsStore.open_for_run`), and the
trials it does not hold yet are played and written.  Trials run in the parent (``n_jobs=1``), in loky worker processes
on one machine, or on the workers of a ``dask.distributed`` cluster (:class:`DaskScheduler`); they come back as they
finish and are written at once, so an interrupted run loses at most the trials in flight and resumes where it stopped.

With workers, the parent plays trials itself first; only once it has played for as long as it took to start
(its CPU time before the run, 0.5 to 10 s) are the workers started, and once one is ready they get the rest: an
experiment smaller than the workers' start-up finishes in the parent and never pays for them.  Workers end with
the parent, even when it is killed (``PR_SET_PDEATHSIG`` on Linux, a watchdog elsewhere).  A trial whose code
raises (``SystemExit`` included) is recorded in ``failures/`` and the run goes on (:class:`TrialsFailed` at the
end); Ctrl-C raises :class:`RunInterrupted`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import importlib
import json
import math
import os
import pickle
import resource
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool  # loky's TerminatedWorkerError is one
from dataclasses import dataclass
from pathlib import Path
from queue import Empty, SimpleQueue
from typing import Any

import joblib
import numpy as np
from tqdm.auto import tqdm

from privgame.core.cache import ArtefactCache
from privgame.core.outputs import output_directory_problem
from privgame.engine import pool
from privgame.engine._text import printable
from privgame.engine.config import ConfigError, ExperimentConfig, GridPoint, import_plugins
from privgame.engine.devices import WorkerDevices
from privgame.engine.plan import (
    Trial,
    analytic_epsilon,
    cell,
    plan_experiment,
    plan_trials,
    point_settings,
    repetition_plan,
    run_manifest,
)
from privgame.engine.resources import check_n_jobs
from privgame.engine.slurm import SlurmCluster
from privgame.engine.store import ResultsStore, StoreError, describe_trials, writing
from privgame.engine.tasks import RunsTask, TrialTask, WorkQueue
from privgame.games._base import AnalysisSettings, TrialContext, TrialOutcome

__all__ = [
    "DaskScheduler",
    "DryRun",
    "RunInterrupted",
    "TrialsFailed",
    "dry_run",
    "run_experiment",
    "trial_row",
]


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


def trial_row(
    point: GridPoint, trial: Trial, epsilon: float, metrics: Mapping[str, Any], seconds: float
) -> dict[str, Any]:
    """A trial's stored row: where it sits, the point's swept values, the analytic ε, its metrics, the mechanism
    runs the trial needs where its game counts them (models trained, generator runs: made or read from the cache)
    and ``seconds``."""
    runs = point.game.mechanism_runs(point.attack)
    return {
        "trial": trial.index,
        "grid_point": trial.grid_index,
        "repetition": trial.repetition,
        "spawn_key": "/".join(map(str, trial.seed.spawn_key)),
        **{key: cell(value) for key, value in point.params.items()},
        "epsilon_analytic": epsilon,
        **metrics,
        **({"mechanism_runs": runs} if runs else {}),
        "seconds": seconds,
    }


#: an analysis of a played trial: the grid point, the trial, its settings (bound) and its analytic ε
_Analysis = tuple[GridPoint, Trial, AnalysisSettings, float]


@dataclass(frozen=True, slots=True)
class _Attempt:
    """What a worker sends back for one trial: its row, outcome and per-record rows, or its failure; and those of
    the grid points of an analysis sweep that analysed the same play (``siblings``)."""

    index: int
    row: dict[str, Any] | None = None
    outcome: TrialOutcome | None = None
    records: list[dict[str, Any]] | None = None
    failure: dict[str, Any] | None = None
    siblings: tuple[_Attempt, ...] = ()
    #: the warnings the trial's code issued: (category, message, filename, line), each distinct one once
    warned: tuple[tuple[type[Warning], str, str, int], ...] = ()

    def each(self) -> tuple[_Attempt, ...]:
        """This trial's attempt and its siblings'."""
        return (self, *self.siblings)


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"SystemExit: the trial's code called sys.exit({exc.code!r})"
    return "".join(traceback.format_exception_only(exc)).strip()


def _attempt(
    point: GridPoint,
    trial: Trial,
    settings: AnalysisSettings,
    epsilon: float,
    cache: ArtefactCache | None = None,
    progress_path: Path | None = None,
    siblings: tuple[_Analysis, ...] = (),
) -> _Attempt:
    """Play one trial and analyse it, for its own grid point and for ``siblings`` (the other points of its play,
    which analyse the same outcome).  An exception raised by the code (``SystemExit`` from a plugin included)
    becomes a failure record instead of ending the run: of every analysis when the play raised, of one analysis
    when only it did.  ``KeyboardInterrupt`` is not caught: Ctrl-C stops the run.

    The trial runs with one BLAS thread, in whichever process plays it.  A BLAS product's rounding depends on its
    thread count (a model release's numpy forward pass differed in the 7th digit between one and two threads), and
    the parent, the loky workers (``cores // n_workers`` threads each) and Dask's workers have pools of different
    sizes: with one thread everywhere, a trial's numbers, and its raw arrays' bytes, do not depend on who played it.
    """
    from threadpoolctl import threadpool_limits

    # the trial's warnings go back with its result, so that the parent shows each once per run, whichever
    # processes played the trials (each worker printed its own copy of the same warning before)
    with warnings.catch_warnings(record=True) as caught, threadpool_limits(limits=1, user_api="blas"):
        attempt = _play_and_analyse(point, trial, settings, epsilon, cache, progress_path, siblings)
    warned = {(*_sendable(w.category, str(w.message)), str(w.filename), int(w.lineno)): None for w in caught}
    return dataclasses.replace(attempt, warned=tuple(warned)) if warned else attempt


def _sendable(category: type[Warning], message: str) -> tuple[type[Warning], str]:
    """The warning's category and message as they can travel back from a worker: a category that cannot be
    pickled (a class defined inside a function) would fail the trial's whole result, so it becomes a UserWarning
    whose message names it."""
    try:
        pickle.dumps(category)
    except Exception:
        return UserWarning, f"{category.__name__}: {message}"
    return category, message


def _relay_warnings(attempt: _Attempt, seen: set[tuple[Any, ...]]) -> None:
    """Issue, in the parent, each warning of ``attempt`` that no earlier trial of the run issued."""
    for category, message, filename, lineno in attempt.warned:
        if (category, message) not in seen:
            seen.add((category, message))
            warnings.warn_explicit(message, category, filename, lineno)


def _play_and_analyse(
    point: GridPoint,
    trial: Trial,
    settings: AnalysisSettings,
    epsilon: float,
    cache: ArtefactCache | None,
    progress_path: Path | None,
    siblings: tuple[_Analysis, ...],
) -> _Attempt:
    """The body of :func:`_attempt`, under its thread limit."""
    analyses: tuple[_Analysis, ...] = ((point, trial, settings, epsilon), *siblings)
    start = time.perf_counter()
    try:
        context = TrialContext(cache=cache, progress=None if progress_path is None else _ProgressFile(progress_path))
        outcome = point.game.play(point.mechanism, point.attack, seed=trial.seed, context=context)
        for name, array in outcome.arrays.items():
            if np.asarray(array).dtype.hasobject:
                raise TypeError(f"the outcome's array {name!r} has dtype object; results store numeric arrays only.")
    except (Exception, SystemExit) as exc:
        error, trace = _error_text(exc), "".join(traceback.format_exception(exc))
        failed = [_failed(p, t, error, trace, time.perf_counter() - start) for p, t, _, _ in analyses]
        return dataclasses.replace(failed[0], siblings=tuple(failed[1:]))
    played = time.perf_counter() - start
    done = []
    for p, t, s, e in analyses:
        begin = time.perf_counter()
        try:
            metrics, records = p.game.analyse(outcome, s, seed=t.seed)
        except (Exception, SystemExit) as exc:
            trace = "".join(traceback.format_exception(exc))
            done.append(_failed(p, t, _error_text(exc), trace, played + time.perf_counter() - begin))
            continue
        row = trial_row(p, t, e, metrics, played + time.perf_counter() - begin)
        row.update({f"seconds_{name}": float(value) for name, value in context.timings.items()})
        done.append(_Attempt(t.index, row, outcome, records))
    return dataclasses.replace(done[0], siblings=tuple(done[1:]))


def _failed(point: GridPoint, trial: Trial, error: str, trace: str, seconds: float) -> _Attempt:
    """The failure record of a trial (stored in the results directory's ``failures/``)."""
    failure = {
        "trial": trial.index,
        "grid_point": trial.grid_index,
        "repetition": trial.repetition,
        "spawn_key": "/".join(map(str, trial.seed.spawn_key)),
        "params": {key: cell(value) for key, value in point.params.items()},
        "error": error,
        "traceback": trace,
        "seconds": seconds,
        "failed_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    return _Attempt(trial.index, failure=failure)


def _job_failed(job: tuple[Any, ...], error: str, exc: BaseException) -> _Attempt:
    """The failure records of a job that never played: its trial's and its siblings'."""
    trace = "".join(traceback.format_exception(exc))
    failed = [_failed(p, t, error, trace, 0.0) for p, t, *_ in ((job[0], job[1]), *job[6])]
    return dataclasses.replace(failed[0], siblings=tuple(failed[1:]))


def _worker_lost(job: tuple[Any, ...], exc: BaseException, what: str) -> _Attempt:
    """The failure records of a job whose worker process died under it (``what`` says how often / where)."""
    error = (
        f"the worker process playing this trial died {what} (killed from outside, or out of memory): "
        f"{type(exc).__name__}: {' '.join(str(exc).split())}"
    )
    return _job_failed(job, error, exc)


@dataclass(frozen=True, slots=True)
class _WorkerSetup:
    """What a worker process needs before its first task: the config's plugins, its ``[data]`` file's data set
    (a :class:`privgame.data.files.FileSource`, or None) and the GPUs it may be pinned to (or None)."""

    plugins: tuple[str, ...] = ()
    source: Any = None
    devices: WorkerDevices | None = None


def _prepare_worker(setup: _WorkerSetup) -> str | None:
    """Import the plugins, register the data source and pin the GPU in this worker (each once per process): None,
    or why the worker cannot play the config's trials.

    Unpickling a trial imports only the modules its components' classes live in; a plugin whose effect is a
    registration (a data set, a patched table, a component another module names) would be missing in a worker and
    present in the parent.  The imports are cached per process, so only a worker's first task pays for them.
    """
    try:
        import_plugins(setup.plugins, source="[experiment] plugins (in a worker)")
        if setup.source is not None:
            from privgame.data.files import register_source

            register_source(setup.source, authoritative=True)  # the parent checked the name; an old run's entry yields
        if setup.devices is not None:
            setup.devices.pin()
    except (ConfigError, ValueError, RuntimeError) as exc:
        return str(exc)
    return None


def _worker_attempt(setup: _WorkerSetup, *job: Any) -> _Attempt:
    """:func:`_attempt` in a worker process (loky or Dask), after :func:`_prepare_worker`; a worker that cannot
    be prepared (a plugin that cannot be imported there, a GPU it cannot have) fails the job's trials with the
    reason (as in the parent)."""
    problem = _prepare_worker(setup)
    if problem is not None:
        return _job_failed(job, problem, RuntimeError(problem))
    return _attempt(*job)


def _worker_ready() -> int:
    """The readiness ping, a worker's first task: its completion says the worker has started and imported the
    runner (unpickling it does)."""
    return os.getpid()


class _RunsBar:
    """In the parent: a second progress line counting mechanism runs (finished trials' plus running trials' files)."""

    def __init__(self, store: ResultsStore, per_trial: dict[int, int], pending: list[Trial], progress: bool) -> None:
        self.store = store
        self.per_trial = per_trial
        self.pending = {t.index: t for t in pending}
        self.finished = 0
        self.ahead: dict[int, int] = {}  # trial -> runs its run tasks made
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

    def made(self, trial: int, k: int) -> None:
        """``k`` runs of ``trial`` were made by a task of their own (its trial will read them from the cache)."""
        self.ahead[trial] = self.ahead.get(trial, 0) + k

    def finish(self, trial: int) -> None:
        self.finished += self.per_trial[self.pending[trial].grid_index]
        self.pending.pop(trial)
        self.ahead.pop(trial, None)

    def _poll(self) -> None:
        while not self.stop.wait(0.5):
            running = 0
            for index in list(self.pending):
                # the trial's own count reads the runs its tasks made again, from the cache: the larger of the two
                running += max(self.store.progress_done(index), self.ahead.get(index, 0))
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


_DASK_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")


@dataclass(frozen=True, slots=True)
class DaskScheduler:
    """Where trials run on Dask, and how the client connects.

    Parameters
    ----------
    address : str
        ``"local"``: a ``LocalCluster`` of ``n_jobs`` single-threaded worker processes on this machine, its
        scheduler on 127.0.0.1; else ``SCHEME://HOST:PORT`` of a running scheduler (``tcp://`` when no scheme is
        given), e.g. ``tcp://10.0.0.5:8786``.
    connect_timeout : float, default=10.0
        Seconds to wait for the scheduler at ``address`` to answer before giving up with one line.
    dashboard : bool, default=False
        ``"local"`` only: serve the Dask dashboard on 127.0.0.1:8787 (another free port if that one is taken),
        never on all interfaces.  Off by default; a running scheduler's dashboard is its own
        (``dask scheduler --dashboard-address`` / ``--no-dashboard``).

    Raises
    ------
    ValueError
        If the address is neither ``"local"`` nor ``SCHEME://HOST:PORT``, the timeout is not a positive finite
        number of seconds, or a dashboard is asked of a scheduler this run does not start.
    """

    address: str
    connect_timeout: float = 10.0
    dashboard: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.address, str):
            raise TypeError(f"the Dask scheduler address must be a string, got {self.address!r}.")
        if self.address != "local":
            scheme, sep, location = self.address.partition("://")
            if not sep:
                scheme, location = "tcp", self.address
            host, colon, port = location.rpartition(":")
            if scheme not in _DASK_SCHEMES or not colon or not host.strip("[]") or not port.isdigit():
                raise ValueError(
                    f"the Dask scheduler address must be 'local' or SCHEME://HOST:PORT (SCHEME one of "
                    f"{', '.join(_DASK_SCHEMES)}; e.g. tcp://10.0.0.5:8786), got {self.address!r}."
                )
            if not 1 <= int(port) <= 65535:
                raise ValueError(f"the Dask scheduler's port must be in 1..65535, got {port} in {self.address!r}.")
        timeout = self.connect_timeout
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < math.inf:
            raise ValueError(f"the Dask connect timeout must be a positive number of seconds, got {timeout!r}.")
        if self.dashboard and self.address != "local":
            raise ValueError(
                "a Dask dashboard can only be asked of the local cluster (--dask-scheduler local); the scheduler at "
                f"{self.address} serves its own (dask scheduler --dashboard-address)."
            )


def _dask_scheduler(value: str | DaskScheduler | SlurmCluster | None) -> DaskScheduler | SlurmCluster | None:
    return value if value is None or isinstance(value, DaskScheduler | SlurmCluster) else DaskScheduler(value)


def _distributed() -> Any:
    try:
        import dask.distributed
    except ImportError:  # pragma: no cover - depends on the installed extras
        raise ValueError("--dask-scheduler needs the 'dask' extra: pip install 'privgame[dask]'.") from None
    return dask.distributed


@contextlib.contextmanager
def _backend(dask: DaskScheduler | SlurmCluster, n_jobs: int) -> Iterator[Any]:
    """A ``distributed.Client`` of ``dask``: of a local cluster started here for ``"local"``, of a scheduler started
    here with its workers as Slurm jobs for a :class:`SlurmCluster` (its jobs cancelled on leaving), else of the
    scheduler at its address (which :func:`_check_reachable` has reached already, saying so on stderr)."""
    if isinstance(dask, SlurmCluster):
        with dask.client() as client:
            yield client
        return
    distributed = _distributed()
    if dask.address == "local":
        print(f"privgame: starting a local Dask cluster of {n_jobs} workers ...", file=sys.stderr)
        with (
            distributed.LocalCluster(
                n_workers=n_jobs,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                worker_dashboard_address=None,
                # the scheduler always serves a few HTTP routes (health, metrics); bound to 127.0.0.1 here, on a
                # free port unless the dashboard is asked for (Dask's own default is every interface, port 8787)
                scheduler_kwargs={
                    "dashboard": dask.dashboard,
                    "dashboard_address": "127.0.0.1:8787" if dask.dashboard else "127.0.0.1:0",
                },
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            if dask.dashboard:
                print(f"privgame: Dask dashboard at {cluster.dashboard_link}", file=sys.stderr)
            yield client
        return
    with _connect(dask, quiet=True) as client:
        yield client


def _connect(dask: DaskScheduler, *, quiet: bool = False) -> Any:
    """A ``distributed.Client`` connected to the scheduler at ``dask.address`` within its timeout, else one line.

    Raises
    ------
    ValueError
        If no scheduler answers in time (refused, unresolvable or silent address).
    """
    if not quiet:
        print(
            f"privgame: connecting to the Dask scheduler at {dask.address} (timeout {dask.connect_timeout:g} s) ...",
            file=sys.stderr,
        )
    try:
        client = _distributed().Client(dask.address, timeout=dask.connect_timeout)
    except OSError as exc:  # dask's "Timed out trying to connect" and refused or unresolvable addresses
        raise ValueError(
            f"no Dask scheduler answered at {dask.address} within {dask.connect_timeout:g} s ({exc}); check the "
            "address, that `dask scheduler` runs there and that its port is reachable (--dask-timeout to wait "
            "longer)."
        ) from None
    workers = len(client.scheduler_info().get("workers", {}))
    if not quiet:
        print(f"privgame: connected to {dask.address}: {workers} worker{'s' if workers != 1 else ''}", file=sys.stderr)
    if workers == 0:  # joblib would give up after 10 s; a batch queue may take hours to start the workers
        if not quiet:
            print(
                "privgame: no worker has joined the scheduler yet; waiting for one (Ctrl-C to stop) ...",
                file=sys.stderr,
            )
        try:
            client.wait_for_workers(1)
        except BaseException:
            client.close()
            raise
    return client


def _check_reachable(dask: DaskScheduler | SlurmCluster | None) -> None:
    """Connect once to a remote scheduler before the results directory is made, so a dead address leaves
    nothing behind, and wait there for a first worker (the run connects again when it dispatches trials); for
    Slurm, check that sbatch would accept the workers' job."""
    if isinstance(dask, SlurmCluster):
        dask.check()
    elif dask is not None and dask.address != "local":
        _connect(dask).close()


class TrialsFailed(RuntimeError):
    """Some trials' code raised; every other trial is stored.  ``privgame run`` exits 1 with this message.

    Attributes
    ----------
    root : Path
        The results directory; each failed trial's error and traceback is in ``root/failures/trial-NNNNNN.json``.
    failed : list of int
        The trials that failed in this run.
    stopped : bool
        Whether the run stopped at the first failure (``fail_fast``), leaving other trials not run.
    """

    def __init__(self, root: Path, failed: Sequence[int], attempted: int, *, stopped: bool) -> None:
        self.root, self.failed, self.stopped = root, sorted(failed), stopped
        how = "stopped at the first failure (--fail-fast): " if stopped else ""
        super().__init__(
            f"{how}{len(self.failed)} of {attempted} trials failed ({describe_trials(self.failed)}); "
            f"errors and tracebacks in {root / 'failures'}; the other trials are stored, and rerunning "
            "`privgame run` with the same config retries the failed ones."
        )


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run: ``finished`` of ``total`` trials are safely stored in ``root``."""

    def __init__(self, root: Path, finished: int, total: int) -> None:
        super().__init__(f"{finished} of {total} trials are stored in {root}")
        self.root, self.finished, self.total = root, finished, total


_OnResult = Callable[[_Attempt], bool]  # store one attempt; True: stop the run
_Skip = Callable[[tuple[Any, ...]], bool]  # whether a job need not be played any more (a sequential audit stopped)


def _never(job: tuple[Any, ...]) -> bool:
    return False


class _SequentialStops:
    """Where each sequential grid point (``[analysis] sequential``) stopped: the repetition at which its
    anytime-valid test refuted the claim (:mod:`privgame.games.sequential`).  Fed every stored row by the calling
    thread; read by the feeder thread through :meth:`skip` (a dict read, atomic under the GIL)."""

    def __init__(self, config: ExperimentConfig, epsilons: Sequence[float], stored: Any) -> None:
        self.budget = config.repetitions
        self.points = {
            g: (float(epsilons[g]), p.analysis.confidence) for g, p in enumerate(config.grid) if p.analysis.sequential
        }
        self.rows: dict[int, list[dict[str, Any]]] = {g: [] for g in self.points}
        self.stops: dict[int, int] = {}
        if self.points and len(stored):  # a resumed run: its stored rows, read as the run read them
            for g in self.points:
                self.rows[g] = stored[stored["grid_point"] == g].to_dict("records")
                self._read(g)

    def __bool__(self) -> bool:
        return bool(self.points)

    def record(self, grid_point: int, row: Mapping[str, Any]) -> None:
        """A stored row of ``grid_point``: the test reads on, and the point stops when its claim is refuted."""
        if grid_point not in self.points or grid_point in self.stops:
            return
        self.rows[grid_point].append(dict(row))
        self._read(grid_point)

    def _read(self, grid_point: int) -> None:
        """Run the test on the grid point's rows so far; note its stop once it refutes."""
        if not self.rows[grid_point]:
            return
        import pandas as pd

        from privgame.games.sequential import sequential_stop

        claim, confidence = self.points[grid_point]
        stop = sequential_stop(pd.DataFrame.from_records(self.rows[grid_point]), claim, confidence, self.budget)
        if stop is not None:
            self.stops[grid_point] = stop

    def stopped(self, trial: Trial) -> bool:
        """Whether ``trial`` comes after its grid point's stop (never read: no need to play it)."""
        stop = self.stops.get(trial.grid_index)
        return stop is not None and trial.repetition > stop

    def skip(self, job: tuple[Any, ...]) -> bool:
        """Whether every trial of ``job`` (its play and the analysis sweep's siblings) comes after its stop."""
        return self.stopped(job[1]) and all(self.stopped(sibling[1]) for sibling in job[6])


#: whether the parent plays trials while the workers start (tests switch it off to give the workers every trial)
PARENT_PLAYS_WHILE_WORKERS_START = True
_WORKER_DEATHS = 2  # a trial in flight when this many worker pools broke is recorded as failed
#: bounds on the parent's trial time before workers are started (see :func:`_worker_start_delay`)
_START_DELAY_BOUNDS = (0.5, 10.0)


def _worker_start_delay() -> float:
    """How long the parent plays trials alone before it starts workers: as long as it took to start itself.

    A worker's start-up (the interpreter, then the packages a trial needs) costs about what this process spent
    before the run (its CPU time so far), and on a machine with few cores it slows the trials played meanwhile.
    Waiting that long before paying it means a run that would take less in the parent never pays it, and a longer
    one loses at most that delay (the ski-rental rule).  Bounded, for long-lived processes (a notebook) and for
    configs that took long to build (σ calibration).
    """
    low, high = _START_DELAY_BOUNDS
    return min(max(time.process_time(), low), high)


def _run_in_parent(jobs: Sequence[tuple[Any, ...]], on_result: _OnResult, skip: _Skip = _never) -> None:
    for job in jobs:
        if skip(job):
            continue
        if on_result(_attempt(*job)):
            return


def _separate_runs(job: tuple[Any, ...], n_workers: int) -> int:
    """The runs of ``job``'s trial the workers may make as tasks of their own: its game's
    :meth:`~privgame.games._base.Game.separate_runs` when there are workers to share them and a cache to hand the
    runs over in (``job[4]``), else 0."""
    point, cache = job[0], job[4]
    if n_workers < 2 or cache is None:
        return 0
    return int(point.game.separate_runs(point.mechanism, point.attack))


def _work_queue(jobs: Sequence[tuple[Any, ...]], n_workers: int, skip: _Skip) -> WorkQueue:
    """The run's tasks (:class:`privgame.engine.tasks.WorkQueue`): batches of each trial's separate runs, sized
    per grid point from their measured cost, then the trial."""
    return WorkQueue(
        jobs,
        runs=lambda job: _separate_runs(job, n_workers),
        key=lambda job: job[1].grid_index,
        limit=lambda job: job[0].game.run_batch(job[0].mechanism, job[0].attack),
        n_workers=n_workers,
        skip=skip,
    )


_RUNS_MADE = False  # whether this process made a batch of runs before (its first one is not timed)


def _make_runs(
    point: GridPoint, trial: Trial, runs: range, cache: ArtefactCache | None, *, one_thread: bool = False
) -> float | str:
    """Make ``runs`` of ``trial`` into ``cache`` (one BLAS thread, as a trial): the seconds it took (NaN for the
    process's first batch, which pays its imports and data too), or the error (the trial then makes the runs it
    finds missing itself, and reports the error if it recurs).

    ``one_thread`` limits the OpenMP pools too (torch's, which the batched trainers' numba kernels follow): the
    parent's, while workers that have the cores start beside it (with its whole pool it spun its threads against
    them: 8 s for one model that takes 0.5 s alone).
    """
    from threadpoolctl import threadpool_limits

    global _RUNS_MADE
    try:
        with warnings.catch_warnings(), threadpool_limits(limits=1, user_api=None if one_thread else "blas"):
            warnings.simplefilter("ignore")  # the trial, which makes any run again if this fails, relays them
            context = TrialContext(cache)
            start = time.perf_counter()
            point.game.make_runs(point.mechanism, point.attack, seed=trial.seed, runs=runs, context=context)
    except (Exception, SystemExit) as exc:
        return _error_text(exc)
    warm, _RUNS_MADE = _RUNS_MADE, True
    return time.perf_counter() - start if warm else math.nan


def _worker_runs(setup: _WorkerSetup, point: GridPoint, trial: Trial, runs: range, cache: Any) -> Any:
    """:func:`_make_runs` in a worker process, after :func:`_prepare_worker` (its problem, if any, is returned as
    the error: the trial then meets it itself)."""
    return _prepare_worker(setup) or _make_runs(point, trial, runs, cache)


#: called in the parent when a run task made ``k`` runs of trial ``index`` (the runs progress line)
_OnRuns = Callable[[int, int], None]


def _no_runs(index: int, k: int) -> None:
    return None


def _runs_ended(work: WorkQueue, task: RunsTask, made: Any, on_runs: _OnRuns) -> None:
    """Tell ``work`` that ``task`` ended, with its time when it made its runs (:func:`_make_runs` gave seconds), and
    count its runs on the progress line; an error, a lost worker or an exception (``made``) only ends it."""
    seconds = made if isinstance(made, float) else None
    work.finished(task, seconds)
    if seconds is not None:
        on_runs(work.jobs[task.job][1].index, len(task.runs))


def _run_local(
    jobs: Sequence[tuple[Any, ...]],
    n_workers: int,
    on_result: _OnResult,
    setup: _WorkerSetup = _WorkerSetup(),
    skip: _Skip = _never,
    on_runs: _OnRuns = _no_runs,
) -> None:
    """Run ``jobs`` in the parent and, once that has taken a while, on ``n_workers`` loky processes too (a job
    that ``skip`` says is no longer needed, when its turn comes, is dropped).

    Which process plays a trial never changes its numbers (each trial has its own seed), so this only decides
    the time.  The parent plays trials (and batches of one run) from the start; after :func:`_worker_start_delay`
    a feeder thread starts the workers, and once one is ready hands them the remaining work (the parent finishes
    the trial it is playing, then only stores results; where the workers take every core, it takes nothing new
    once they are started, as it would slow their start-up by as much as it plays).  So a run shorter than the
    workers' start-up never starts them, and no worker waits for the parent's trial in progress.  Where the
    workers take every core and the first trial is split from the start (below), they start at once and the
    parent plays nothing.

    The workers' work is a :class:`WorkQueue`: a trial whose game makes its runs apart (LiRA's models) is handed
    out as batches of runs, made on any worker into the artefact cache, then the trial, which reads them.  The
    feeder thread starts the workers and ends them before it exits, as ``PR_SET_PDEATHSIG`` ties each worker to
    the thread that started it.  Every result is stored by the calling thread.
    """
    work = _work_queue(jobs, n_workers, skip)  # the tasks neither the parent nor a worker has taken yet
    # once the workers are started, the parent goes on playing only where a core is left for it: else it would
    # slow their start-up as much as it gains, and a batch of runs it took could hold back its trial.  Where
    # there is none and the first trial is split from the start (fewer trials than workers, each making its
    # mechanism's runs apart: LiRA's M models), the workers start at once, and the parent does not play.
    spare_core = n_workers < joblib.cpu_count()
    parent_plays = PARENT_PLAYS_WHILE_WORKERS_START and (spare_core or not work.splits_next())
    delay = _worker_start_delay() if parent_plays else 0.0
    lock = threading.Lock()
    ready, stop, launched = threading.Event(), threading.Event(), threading.Event()
    # a future, a trial lost with its worker, an error of the feeder's, or None: the feeder is done
    finished: SimpleQueue[Future[_Attempt] | _Attempt | BaseException | None] = SimpleQueue()

    def start_pool() -> Any:  # a fresh pool when the last one broke (loky's reusable executor makes one)
        return pool.executor(n_workers, setup.plugins)

    def submit(executor: Any, task: RunsTask | TrialTask) -> Future[Any]:
        job = work.jobs[task.job]
        if isinstance(task, RunsTask):
            return executor.submit(_worker_runs, setup, job[0], job[1], task.runs, job[4])
        return executor.submit(_worker_attempt, setup, *job)

    def runs_done(task: RunsTask, future: Future[Any]) -> None:
        made = future.exception() or future.result()
        with lock:
            _runs_ended(work, task, made, on_runs)

    def feed() -> None:
        executor = None
        try:
            if stop.wait(delay):
                return  # the parent played every trial: no worker was needed
            executor = start_pool()
            launched.set()
            pings = [executor.submit(_worker_ready) for _ in range(n_workers)]
            while parent_plays and not any(p.done() for p in pings):
                if stop.wait(0.05):
                    return
            ready.set()
            in_flight: dict[Future[Any], RunsTask | TrialTask] = {}
            strikes: dict[int, int] = {}  # trial index -> pools that broke while it was in flight
            while not stop.is_set():
                with lock:
                    while len(in_flight) < 2 * n_workers and (task := work.take()) is not None:
                        in_flight[submit(executor, task)] = task
                    left = len(work)  # jobs not handed out whole: one may wait on runs the parent is making
                if not in_flight:
                    if not left:
                        return
                    stop.wait(0.05)
                    continue
                done, _ = wait(set(in_flight), timeout=0.2, return_when=FIRST_COMPLETED)
                broken = next((f.exception() for f in done if isinstance(f.exception(), BrokenProcessPool)), None)
                if broken is None:
                    for future in done:
                        task = in_flight.pop(future)
                        if isinstance(task, RunsTask):
                            runs_done(task, future)
                        else:
                            finished.put(future)
                    continue
                # a worker died (SIGKILL, out of memory): loky fails every task in flight with it.  Each trial of
                # those gets a strike and is played again on a fresh pool; one that was in flight at two deaths is
                # recorded as failed, so a trial that kills its worker every time cannot stop the run.  A task
                # that finished before the pool broke keeps its result; a run task that broke is only ended (its
                # trial makes the runs it finds missing).
                wait(set(in_flight))
                for future, task in in_flight.items():
                    if isinstance(task, RunsTask):
                        runs_done(task, future)
                        continue
                    if not isinstance(future.exception(), BrokenProcessPool):
                        finished.put(future)
                        continue
                    job = work.jobs[task.job]
                    strikes[job[1].index] = strikes.get(job[1].index, 0) + 1
                    if strikes[job[1].index] >= _WORKER_DEATHS:
                        finished.put(_worker_lost(job, broken, f"{_WORKER_DEATHS} times"))
                    else:
                        with lock:
                            work.again(task)
                in_flight.clear()
                executor = start_pool()
        except BaseException as exc:  # handed to the calling thread, which raises it
            finished.put(exc)
        finally:
            if executor is not None:  # by the thread that started them: trials abandoned, if any, end with them
                executor.shutdown(wait=True, kill_workers=True)
            finished.put(None)

    feeder = threading.Thread(target=feed, name="privgame-feeder", daemon=True)
    feeder.start()
    try:
        while parent_plays and not ready.is_set():
            if launched.is_set() and not spare_core:
                break  # the workers take it from here
            with lock:
                # a batch of one run: the parent only fills the wait for the workers, and its trial waits for it
                taken = work.take(most=1)
            if taken is None:
                stop.set()  # the parent took every task: workers are not needed
                break
            job = work.jobs[taken.job]
            if isinstance(taken, RunsTask):
                made = _make_runs(job[0], job[1], taken.runs, job[4], one_thread=True)
                with lock:
                    _runs_ended(work, taken, made, on_runs)
                continue
            if on_result(_attempt(*job)):
                return
        while True:
            try:
                item = finished.get(timeout=0.5)
            except Empty:
                continue
            if item is None:
                break
            if isinstance(item, BaseException):
                raise item
            if on_result(item if isinstance(item, _Attempt) else item.result()):
                return
    finally:
        stop.set()
        feeder.join(timeout=30)


def _run_dask(
    jobs: Sequence[tuple[Any, ...]],
    dask: DaskScheduler | SlurmCluster,
    n_workers: int,
    on_result: _OnResult,
    setup: _WorkerSetup = _WorkerSetup(),
    skip: _Skip = _never,
    on_runs: _OnRuns = _no_runs,
) -> None:
    """Submit the run's tasks to the Dask scheduler and store each trial as it finishes (cancelling those ``skip``
    says are no longer needed, after each result).

    Straight through ``distributed`` rather than joblib's ``dask`` backend, which runs every trial in the client
    when the cluster has a single thread and keeps only twice the threads present at the start in flight (so
    workers joining later, as batch jobs do, would get nothing).  Trials without separate runs are all submitted
    at once; a trial whose game makes its runs apart is handed out as a :class:`WorkQueue` says (batches of runs,
    then the trial), at most twice the cluster's threads at a time, so that each batch's size can follow the
    measured cost of the batches before it.  A worker lost mid-trial makes the scheduler run that trial again on
    another worker; the trial's own seed gives the same result.

    The scheduler blames every trial on a worker that dies, the innocent ones queued beside the one that killed
    it included.  A trial the scheduler gives up on (``KilledWorker``) is therefore played once more after the
    others, alone on the cluster, and recorded as failed only if its workers die then too.  A batch of runs it
    gives up on is only ended: its trial makes the runs it finds missing.
    """
    import uuid

    distributed = _distributed()
    killed_worker = distributed.KilledWorker
    with _backend(dask, n_workers) as client:
        run = uuid.uuid4().hex[:8]
        # the workers the batches are sized for: a Slurm run's once its jobs all run, else those asked for; updated
        # as the cluster's workers join (a remote scheduler's are whatever connects to it)
        planned = dask.workers if isinstance(dask, SlurmCluster) else n_workers
        work = _work_queue(jobs, max(planned, 2), skip)
        batched = any(_separate_runs(job, 2) for job in jobs)
        submitted = [0]

        def submit(task: RunsTask | TrialTask, attempt: int = 0) -> Any:
            job = work.jobs[task.job]
            submitted[0] += 1
            if isinstance(task, RunsTask):
                key = f"privgame-runs-{job[1].index:06d}-{task.runs.start}-{run}-{submitted[0]}"
                args: tuple[Any, ...] = (_worker_runs, setup, job[0], job[1], task.runs, job[4])
            else:
                key = f"privgame-trial-{job[1].index:06d}-{run}-{attempt}"
                args = (_worker_attempt, setup, *job)
            return client.submit(*args, key=key, pure=False)

        task_of: dict[str, RunsTask | TrialTask] = {}
        futures: list[Any] = []
        pending = distributed.as_completed()

        def fill() -> None:
            threads = sum(client.nthreads().values())
            if batched:
                work.set_workers(max(threads, planned, 2))
            cap = max(2 * threads, 2) if batched else math.inf
            while sum(1 for f in futures if not f.done()) < cap and (task := work.take()) is not None:
                future = submit(task)
                task_of[future.key] = task
                futures.append(future)
                pending.add(future)

        suspects: list[tuple[Any, ...]] = []
        try:
            fill()
            for future in pending:
                task = task_of[future.key]
                if future.cancelled():
                    fill()
                    continue
                if isinstance(task, RunsTask):
                    try:
                        made = future.result()
                    except killed_worker:
                        made = None
                    future.release()
                    _runs_ended(work, task, made, on_runs)
                    fill()
                    continue
                try:
                    attempt = future.result()
                except killed_worker:  # blamed for a worker's death, maybe only for sharing the culprit's worker
                    suspects.append(work.jobs[task.job])
                    future.release()
                    fill()
                    continue
                future.release()
                if on_result(attempt):
                    return
                unneeded = [
                    f
                    for f in futures
                    if not f.done() and isinstance(task_of[f.key], TrialTask) and skip(work.jobs[task_of[f.key].job])
                ]
                if unneeded:
                    client.cancel(unneeded)
                fill()
            for job in suspects:
                if skip(job):
                    continue  # alone now: a death is this trial's own doing
                future = client.submit(
                    _worker_attempt, setup, *job, key=f"privgame-trial-{job[1].index:06d}-{run}-1", pure=False
                )
                futures.append(future)
                try:
                    attempt = future.result()
                except killed_worker as exc:  # the scheduler retried it on other workers, and each one died
                    attempt = _worker_lost(job, exc, "on every worker the scheduler tried")
                future.release()
                if on_result(attempt):
                    return
        finally:
            client.cancel(futures)  # abandons the trials not yet done (fail-fast, Ctrl-C)


def _jobs(
    config: ExperimentConfig,
    pending: Sequence[Trial],
    epsilons: Sequence[float],
    cache: ArtefactCache | None,
    progress_path: Callable[[int], Path] | None,
) -> list[tuple[Any, ...]]:
    """One job per pending play: its first pending trial, played, and the other pending trials of the same play
    and repetition (an analysis sweep's points), analysed on the same outcome."""
    per_trial = {p.index: p.game.mechanism_runs(p.attack) for p in config.grid}
    settings = point_settings(config)
    plays: dict[tuple[int, int], list[Trial]] = {}
    for t in pending:
        plays.setdefault((config.grid[t.grid_index].play, t.repetition), []).append(t)
    jobs = []
    for main, *rest in plays.values():
        g = main.grid_index
        siblings = tuple((config.grid[t.grid_index], t, settings[t.grid_index], epsilons[t.grid_index]) for t in rest)
        progress = progress_path(main.index) if progress_path is not None and per_trial[g] else None
        jobs.append((config.grid[g], main, settings[g], epsilons[g], cache, progress, siblings))
    return jobs


def run_experiment(
    config: ExperimentConfig,
    out: str | Path,
    *,
    config_bytes: bytes = b"",
    n_jobs: int = 1,
    force: bool = False,
    progress: bool = True,
    dask_scheduler: str | DaskScheduler | SlurmCluster | None = None,
    cache: ArtefactCache | None = None,
    fail_fast: bool = False,
    devices: WorkerDevices | None = None,
) -> ResultsStore:
    """Run (or resume) every trial of ``config`` into the results directory ``out``.

    Parameters
    ----------
    config : ExperimentConfig
        A validated config (:func:`privgame.engine.config.load_config`).
    out : str or Path
        Results directory; created if needed, resumed if it holds this config's results (compared by
        :attr:`ExperimentConfig.hash`).  Trials already finished are kept; damaged ones (a file missing or not
        matching its checksum) and failed ones are played again, from their own seeds.
    config_bytes : bytes, default=b""
        The config file as given, copied into ``out``.
    n_jobs : int, default=1
        Parallel workers (joblib semantics: -1 = all cores).  Results are identical for any value.
    force : bool, default=False
        Delete results of a different config in ``out`` instead of refusing.
    progress : bool, default=True
        Show a progress bar on stderr.
    dask_scheduler : str, DaskScheduler, SlurmCluster or None, default=None
        A ``dask.distributed`` scheduler to run on: its address (``"local"`` starts a local cluster), a
        :class:`DaskScheduler` that also sets the connect timeout and the local dashboard, or a
        :class:`~privgame.engine.slurm.SlurmCluster` (a scheduler started here, its workers Slurm jobs).  Results
        are identical to a local run's; a worker lost in the middle of the run only makes its trials run again
        elsewhere.
    cache : ArtefactCache or None, default=None
        The artefact cache lent to every trial (generator runs, shadow tables); ``None``: nothing is cached.
        Cached artefacts equal recomputed ones, so it never changes a number, only the time.
    fail_fast : bool, default=False
        Stop at the first trial that fails instead of running the others.
    devices : WorkerDevices or None, default=None
        The GPUs to pin the processes that play trials to, one each, round-robin (``--gpus``,
        :mod:`privgame.engine.devices`); ``None``: no pinning (mechanisms train where their ``device`` says).

    Returns
    -------
    ResultsStore

    Raises
    ------
    privgame.engine.store.StoreError
        If ``out`` holds another config's results and ``force`` is false.
    TrialsFailed
        After the run, if some trials' code raised (their errors are in ``out/failures/``; the rest is stored).
    RunInterrupted
        On Ctrl-C (a ``KeyboardInterrupt``), once the workers are stopped; every finished trial is stored.
    """
    check_n_jobs(n_jobs)
    problem = output_directory_problem(out, what="out")
    if problem is not None:
        raise ValueError(f"{problem}.")
    dask = _dask_scheduler(dask_scheduler)  # a malformed or dead address fails here, before any directory is made
    _check_reachable(dask)
    with writing(out):  # one writer at a time: a second run into ``out`` is refused while this one holds it
        return _run_held(config, out, config_bytes, n_jobs, force, progress, dask, cache, fail_fast, devices)


def _run_held(
    config: ExperimentConfig,
    out: str | Path,
    config_bytes: bytes,
    n_jobs: int,
    force: bool,
    progress: bool,
    dask: DaskScheduler | SlurmCluster | None,
    cache: ArtefactCache | None,
    fail_fast: bool,
    devices: WorkerDevices | None = None,
) -> ResultsStore:
    """:func:`run_experiment` once ``out`` is held."""
    # config -> experiment -> store -> trials -> rows: one line, no step reads back an earlier one's output
    previous = None if force else ResultsStore.previous_manifest(out)
    experiment = plan_experiment(config, out, previous=previous, progress=progress)
    if experiment.extending:
        blocks = experiment.blocks
        print(
            f"privgame: adding repetitions {blocks[-2]} → {blocks[-1]} per grid point to {printable(str(out))} "
            f"(its {len(config.grid) * blocks[-2]} trials are kept as they are).",
            file=sys.stderr,
        )
        ResultsStore(out).rewrite_manifest(experiment.manifest)
    store = ResultsStore.open_for_run(out, experiment.manifest, config_bytes, force=force)
    done = store.resume()
    sequential = _SequentialStops(config, experiment.epsilons, store.rows() if done else ())
    pending = [t for t in experiment.trials if t.index not in done and not sequential.stopped(t)]
    if sequential:  # every grid point's first repetitions first, so that each stops as early as it can
        pending.sort(key=lambda t: (t.repetition, t.grid_index))
    jobs = _jobs(config, pending, experiment.epsilons, cache, store.progress_path)
    bar = tqdm(
        total=config.n_trials,
        initial=config.n_trials - len(pending),
        desc=printable(config.name),
        unit="trial",
        disable=not progress,
        file=sys.stderr,
    )
    per_trial = {p.index: p.game.mechanism_runs(p.attack) for p in config.grid}
    runs_bar = _RunsBar(store, per_trial, [job[1] for job in jobs], progress)
    failed: list[int] = []

    warned: set[tuple[Any, ...]] = set()

    def on_result(attempt: _Attempt) -> bool:
        _relay_warnings(attempt, warned)
        for one in attempt.each():
            if one.failure is None:
                assert one.row is not None and one.outcome is not None  # set together by _attempt
                store.write_trial(one.index, one.row, one.outcome, one.records)
                sequential.record(int(one.row["grid_point"]), one.row)
            else:
                path = store.write_failure(one.index, one.failure)
                failed.append(one.index)
                tqdm.write(f"privgame: trial {one.index} failed: {one.failure['error']} ({path})", file=sys.stderr)
                bar.set_postfix(failed=len(failed))
            bar.update(1)
        runs_bar.finish(attempt.index)
        return fail_fast and any(one.failure is not None for one in attempt.each())

    workers = pool.workers(n_jobs)
    setup = _WorkerSetup(config.plugins, config.data_source, devices)
    if devices is not None and dask is None:
        devices.pin()  # the parent plays trials too: it takes a slot (and a GPU) as a worker does
    try:
        with bar, runs_bar:
            skip = sequential.skip if sequential else _never
            if dask is not None:
                if jobs:
                    _run_dask(jobs, dask, workers, on_result, setup, skip, runs_bar.made)
            elif workers == 1 or not (len(jobs) > 1 or any(_separate_runs(job, workers) for job in jobs)):
                _run_in_parent(jobs, on_result, skip)
            else:
                _run_local(jobs, workers, on_result, setup, skip, runs_bar.made)
    except KeyboardInterrupt:
        with contextlib.suppress(Exception):
            store.write_results()
        raise RunInterrupted(store.root, len(store.done()), config.n_trials) from None
    store.write_results()
    if failed:
        raise TrialsFailed(store.root, failed, len(pending), stopped=fail_fast)
    stored = store.done()
    lost = [t.index for t in pending if t.index not in stored and not sequential.stopped(t)]
    if lost:  # a scheduling bug must not pass for a finished run
        raise RuntimeError(
            f"privgame's runner ended without playing {describe_trials(lost)} (a bug: please report it); "
            "the stored ones are kept, and running the command again plays the others."
        )
    return store


@dataclass(frozen=True)
class DryRun:
    """What ``privgame run --dry-run`` reports: the plan, what is already done, and the estimates.

    Attributes
    ----------
    grid : list of dict
        Each grid point's swept values, in grid order.
    n_trials : int
    finished, damaged, failed : int
        Trials of ``out`` finished, damaged (to be run again) and failed (to be retried).
    refusal : str or None
        Why a run into ``out`` would be refused (another config's results), or ``None``.
    seconds_per_trial : float or None
        Estimated compute time of one trial (``None`` when nothing is left to run and none is finished).
    seconds_source : str
        Where the estimate comes from: finished trials' ``seconds``, or one trial timed here and not stored.
    trial_bytes : list of int or None
        The config's memory estimate of one trial per grid point (:func:`privgame.engine.resources.trial_bytes`).
    peak_rss_bytes : int or None
        This process's peak resident memory after the timed trial (``None`` when no trial was timed).
    timing_error : str or None, default=None
        The error of the timed trial, when its code raised (a real run would record it in ``failures/``).
    adding : tuple of (int, int) or None, default=None
        The repetitions per grid point that ``out`` holds and that a run would bring it to, when it would add some.
    stopped : int, default=0
        Trials not finished that a run would not play: past the repetition where a sequential audit
        (``[analysis] sequential``) refuted its claim.
    """

    grid: list[dict[str, Any]]
    n_trials: int
    finished: int
    damaged: int
    failed: int
    refusal: str | None
    seconds_per_trial: float | None
    seconds_source: str
    trial_bytes: list[int] | None
    peak_rss_bytes: int | None
    timing_error: str | None = None
    adding: tuple[int, int] | None = None
    stopped: int = 0


def _peak_rss_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024  # Linux reports KiB


def dry_run(
    config: ExperimentConfig,
    out: str | Path,
    *,
    announce: Callable[[str], None] | None = None,
) -> DryRun:
    """Plan a run of ``config`` into ``out`` without running it: nothing in ``out`` is created or changed.

    The time per trial is the median ``seconds`` of the trials already finished in ``out``, or else one pending
    trial is played here, timed and thrown away (without the artefact cache, so it is an upper bound for runs
    that hit the cache).

    Parameters
    ----------
    config : ExperimentConfig
    out : str or Path
    announce : callable or None, default=None
        Called with a line before a trial is timed (it may take a while).

    Returns
    -------
    DryRun
    """
    root = Path(out)
    finished: set[int] = set()
    damaged = failed = 0
    refusal = None
    seconds = None
    source = "nothing to time"
    timing_error = None
    blocks: tuple[int, ...] = (config.repetitions,)
    adding = None
    stops: _SequentialStops | None = None
    if (root / "manifest.json").is_file():
        store = ResultsStore(root)
        epsilons = [analytic_epsilon(point) for point in config.grid]
        try:
            blocks, extending = repetition_plan(config, root, ResultsStore.previous_manifest(root))
            if extending:
                adding = (blocks[-2], blocks[-1])
            else:
                store.check_same_experiment(run_manifest(config, epsilons, blocks))
        except StoreError as exc:
            refusal = str(exc)
        else:
            scan = store.scan()
            finished, damaged, failed = scan.finished, len(scan.damaged), len(scan.failures)
            if not scan.rows.empty and "seconds" in scan.rows:
                seconds = float(np.median(scan.rows["seconds"].to_numpy(dtype=float)))
                source = f"median of the {len(scan.rows)} finished trials"
            stops = _SequentialStops(config, epsilons, scan.rows)  # a sequential audit plays nothing past its stop
    elif root.exists() and not root.is_dir():
        refusal = f"--out {str(root)!r} exists and is not a directory."
    unfinished = [t for t in plan_trials(config, blocks) if t.index not in finished]
    pending = [t for t in unfinished if not (stops and stops.stopped(t))]
    peak = None
    if seconds is None and pending:
        trial = pending[0]
        if announce is not None:
            announce(f"timing trial {trial.index} (grid point {trial.grid_index}; not stored) ...")
        point = config.grid[trial.grid_index]
        settings = (
            point.analysis.bind(point.mechanism.privacy_claim(), point.mechanism.canary_dependence)
            if point.analysis.custom
            else point.analysis
        )
        attempt = _attempt(point, trial, settings, analytic_epsilon(point))
        if attempt.failure is not None:
            timing_error = f"trial {trial.index} failed: {attempt.failure['error']}"
        else:
            assert attempt.row is not None  # set with the outcome by _attempt
            seconds = float(attempt.row["seconds"])
            source = f"trial {trial.index}, timed here and not stored"
        peak = _peak_rss_bytes()
    estimate: list[int] | None = None
    with contextlib.suppress(ImportError, AttributeError):
        trial_bytes = importlib.import_module("privgame.engine.resources").trial_bytes
        estimate = [int(trial_bytes(point)) for point in config.grid]
    return DryRun(
        grid=[{k: cell(v) for k, v in p.params.items()} for p in config.grid],
        n_trials=config.n_trials,
        finished=len(finished),
        damaged=damaged,
        failed=failed,
        refusal=refusal,
        seconds_per_trial=seconds,
        seconds_source=source,
        trial_bytes=estimate,
        peak_rss_bytes=peak,
        timing_error=timing_error,
        adding=adding,
        stopped=len(unfinished) - len(pending),
    )
