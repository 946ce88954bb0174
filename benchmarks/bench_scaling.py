"""Scaling on paper: measured per-run and per-task costs, the predicted wall time of the large experiments on 1 to
512 workers, and a check of the prediction against real runs on 1 and 2 workers (local and on a local Slurm).

1. Per-run costs, in this process, warm, one thread (``OMP_NUM_THREADS=1`` and the other pools: one worker is one
   core).  For each mechanism of the large configs, the game's own ``make_runs`` (what a run task executes: the
   trial's inputs, the runs, their cache entries) times batches of two sizes into a fresh artefact cache, and
   seconds = a + c·b is solved for a (what a batched call pays once) and c (each run's own cost); h is a run read
   back from the cache.  Then whole trials through the runner's ``_attempt`` (play + analysis): u, with an empty
   cache (what ``--n-jobs 1`` does: the trial makes every run itself), and r, with every run in the cache (what the
   trial task does on workers, after the run tasks).  Trials with no separate runs (one-run DP-SGD, PANORAMIA) are
   timed as one unit, each grid point once.  Also: the serial part (config load + plan: σ calibrations, in a
   fresh calibration cache), the client's write of one trial, a run's fixed cost (``privgame run`` of one tiny
   trial: the interpreter, the imports, the results directory, the exit), a worker's warm-up (what a fresh
   worker's first trial costs more than its second: imports, data), and how fast two CPU-bound processes run at
   once against one alone (whether the machine's cores are two free cores).
2. Per-task overhead and start-up of each backend, through privgame's own paths (``runner._run_local`` for loky,
   ``runner._run_dask`` for a local Dask cluster and for Slurm jobs on the local Slurm of ``tests/local_slurm.py``):
   ``--tasks`` one-run trials of a few milliseconds; the overhead o is what each task costs a worker beyond its own
   work, from the steady rate of results (o = W·Δt/(N − 1) − τ).  Start-up: until the first worker answers a task,
   and until all have joined; shut-down: after the last result.  Slurm is skipped with one line (null in the JSON)
   where the local Slurm cannot run (not root, no slurm-wlm/munge, no dask-jobqueue) or with ``--no-slurm``.
3. The model.  An experiment is the runner's job list (``runner._jobs``: one job per play), each job a trial with
   R separate runs where its game has them.  On one worker (``--n-jobs 1``) the parent plays every trial, which
   makes its own runs.  On W ≥ 2 workers with a cache, the runner's own :class:`~privgame.engine.tasks.WorkQueue`
   hands out the tasks (whole trials while enough are untouched, then each last trial as run tasks sized by its
   :class:`~privgame.engine.tasks.BatchSizer`, fed the modelled times, then its trial task).  Task times: a run task
   of b runs, m of them not in the cache, a + c·m (h·b when m = 0); a trial task r + Σ over its game's calls
   (a + c·m_call) + δ·m, m its runs not in the cache (all of them for a whole trial), δ = (u − r − Σ calls
   (a + c·b))/R what a run costs more inside the trial than in a task.  Each process's first task adds the warm-up
   w, each task on a worker the backend's overhead o.  The tasks are list-scheduled in the queue's order: each free
   worker takes the next task, or waits for one to end; workers join at the measured start-up (loky: after the
   parent has played alone for its start-up CPU time, 0.5-10 s, as ``runner._worker_start_delay``); runs shared by
   several jobs (a LiRA sweep's models) are made once unless two tasks make them at the same time; the client
   stores each trial (ω, one at a time).  On one machine (loky, and the local Slurm of the check) the busy processes
   share its cores equally (processor sharing), each at κ of its fair share while more are busy than cores (κ = 1
   in the table; measured for the check), so a parent and two workers on two cores run at 2κ/3 speed::

       T(W) = fixed cost + serial + makespan(W) + shut-down
       max(critical path, Σ task times / W')  ≤  makespan(W)  ≤  last join + Σ task times / W' + critical path

   with W' = min(W + the parent, cores) and the critical path the longest (run task, then its trial) chain.  The
   prediction is the simulated makespan, the bounds are printed beside it.  Ignored: the cache on a shared file
   system (here local disk: a read h, a write inside a), the client's own CPU (its results, the scheduler, the
   batch sizer's fit), memory (every config fits), a Slurm queue's wait (here an empty local queue) and lost
   workers.  W = 8, 64 and 512 are Slurm workers, one core each (the measured local Slurm overhead and start-up;
   the batches sized for W workers, as ``privgame run --cluster slurm`` sizes them for its cores × jobs), and 2 and
   8 with loky on a machine of that many cores.
4. The check: a LiRA of 64 MLPs on a 5,000-record Adult pool (2 repetitions) and a record game with Synthpop
   (1,000 rows, 100 shadows, 50 + 50 rounds, 2 targets), each run for real by ``privgame run`` in a subprocess
   with a fresh cache on 1 and 2 local workers and on 1 and 2 Slurm jobs, twice (two passes; the faster run is
   compared: other work on a shared machine only slows a run down): predicted against measured wall time, the
   prediction on the machine as measured just before (its free cores: its cores times the speed of two CPU-bound
   processes run at once, as another user's process takes a core; κ: how fast each of three processes training
   MLPs runs against a fair third of two cores; in brackets, two free cores and κ = 1), and
   the CPU time of the process and its workers (the larger of ``os.wait4``'s and a psutil sample of the process
   tree every 0.1 s).  The acceptance of issue 36: one 64-model LiRA repetition at ``--n-jobs 2`` keeps both
   workers busy, CPU time ≥ 1.7 × wall.

Ends with ONE JSON line: ``costs`` (a, c, h per mechanism), ``trials`` (u, r per measured trial), ``backends``
(overhead, start-up, shut-down per backend; ``slurm_local`` null when skipped), ``predicted`` (T(W) per large
experiment), ``check`` (predicted, measured, ratio per run), ``lira_cpu_over_wall`` and the sizes.  Run on a quiet
machine (the load average is printed; the full run takes about 7 minutes on 2 cores).  ``--quick``: small configs
only (a smoke test, under a minute on a quiet machine; no Slurm; one pass; the table predicts the check configs).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.util
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from heapq import heapify, heappop, heappush
from pathlib import Path
from typing import Any

from privgame.engine.threads import THREAD_VARS

# one thread per process, as a worker has (loky: cores // workers; Dask's nanny: 1): one worker is one core.  Set
# before numpy loads (privgame.engine.threads imports nothing heavy)
for _var in THREAD_VARS:
    os.environ[_var] = "1"

ROOT = Path(__file__).resolve().parents[1]
WORKERS = (1, 8, 64, 512)
#: a trial that costs a few milliseconds: the one-run audit of randomized response on 1,000 canaries
TINY = {
    "experiment": {"name": "bench-scaling-tiny", "seed": 1},
    "game": {"name": "one-run", "m": 1000, "k_pos": 100, "k_neg": 100},
    "mechanism": {"name": "randomized-response", "epsilon": 1.0},
    "attack": {"name": "identity"},
}

TINY_TOML = """\
[experiment]
name = "bench_scaling_tiny"
seed = 1
[game]
name = "one-run"
m = 1000
k_pos = 100
k_neg = 100
[mechanism]
name = "randomized-response"
epsilon = 1.0
[attack]
name = "identity"
"""

LIRA_CHECK = """\
[experiment]
name = "scaling_lira"
seed = 36
repetitions = {repetitions}
[game]
name = "lira"
data = "adult"
pool_size = {pool}
n_models = {models}
batch = 64
n_boot = 1000
[mechanism]
name = "{mechanism}"
{mechanism_extra}epochs = {epochs}
batch_size = 64
learning_rate = 0.001
[attack]
name = "lira"
online = true
fix_variance = false
"""

RECORD_CHECK = """\
[experiment]
name = "scaling_record"
seed = 2025
[game]
name = "record"
data = "adult"
dataset_size = {size}
auxiliary_size = 10000
evaluation_size = 10000
rounds = {rounds}
vulnerable_targets = 1
random_targets = 1
neighbours = "replace"
[mechanism]
name = "synthpop"
[attack]
name = "tapas-queries"
subsets = "all"
numeric_match = "ge"
n_shadows = {shadows}
n_estimators = 100
max_depth = 10
"""


def _say(line: str) -> None:
    print(line, flush=True)


def _load_1min() -> float:
    return round(os.getloadavg()[0], 2)


@contextlib.contextmanager
def _stopwatch() -> Iterator[list[float]]:
    """``with _stopwatch() as t: ...`` then ``t[0]`` is the block's seconds."""
    box = [math.nan]
    start = time.perf_counter()
    try:
        yield box
    finally:
        box[0] = time.perf_counter() - start


# -- 1. per-run and per-trial costs -----------------------------------------------------------------------------------


@dataclass
class Loaded:
    """A config, loaded and planned, with the seconds that took (the run's serial part)."""

    config: Any
    trials: list[Any]
    settings: list[Any]
    epsilons: list[float]
    serial: float

    def trial(self, grid: int, repetition: int = 0) -> Any:
        return next(t for t in self.trials if t.grid_index == grid and t.repetition == repetition)


def load(path: Path) -> Loaded:
    """Load and plan ``path`` as ``privgame run`` does (config, σ calibrations, manifest), timed."""
    from privgame.engine.config import load_config
    from privgame.engine.plan import plan_experiment, point_settings

    with tempfile.TemporaryDirectory() as out, _stopwatch() as seconds:
        config = load_config(path)
        experiment = plan_experiment(config, Path(out) / "results", previous=None, progress=False)
    return Loaded(config, list(experiment.trials), point_settings(config), list(experiment.epsilons), seconds[0])


@dataclass
class RunCost:
    """seconds ≈ a + c·b for a task of b runs (made and written to the cache); h: one run read from the cache."""

    a: float
    c: float
    h: float
    timed: dict[int, list[float]]

    def as_json(self) -> dict[str, float]:
        return {"a": round(self.a, 4), "c": round(self.c, 4), "h": round(self.h, 4)}


def run_cost(loaded: Loaded, grid: int, sizes: tuple[int, int], repeats: int) -> RunCost:
    """Time the game's ``make_runs`` of fresh runs of the first trial of ``grid`` (after one untimed warm-up run),
    ``repeats`` times each of the two ``sizes``, interleaved; a and c from the two medians."""
    from privgame.core.cache import ArtefactCache
    from privgame.games._base import TrialContext

    point, trial = loaded.config.grid[grid], loaded.trial(grid)
    total = point.game.separate_runs(point.mechanism, point.attack)
    if 1 + repeats * sum(sizes) > total:
        raise ValueError(f"{loaded.config.name}: {total} runs are too few for {repeats} × {sizes}")
    timed: dict[int, list[float]] = {b: [] for b in sizes}
    hits: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        cache = ArtefactCache(folder)

        def make(runs: range) -> float:
            with _stopwatch() as seconds:
                point.game.make_runs(
                    point.mechanism, point.attack, seed=trial.seed, runs=runs, context=TrialContext(cache)
                )
            return seconds[0]

        make(range(0, 1))  # warm-up: imports, data, compiled kernels
        k = 1
        for _ in range(repeats):
            for b in sizes:
                timed[b].append(make(range(k, k + b)))
                hits.append(make(range(k, k + b)) / b)  # the same runs again: every one read from the cache
                k += b
    small, large = (statistics.median(timed[b]) for b in sizes)
    c = max((large - small) / (sizes[1] - sizes[0]), 1e-6)
    return RunCost(max(small - c * sizes[0], 0.0), c, statistics.median(hits), timed)


def trial_seconds(loaded: Loaded, grid: int, cache: Any, repetition: int = 0) -> tuple[float, Any]:
    """One trial through the runner's ``_attempt`` (play and analysis, one BLAS thread), with ``cache``."""
    from privgame.engine.runner import _attempt

    point = loaded.config.grid[grid]
    with _stopwatch() as seconds:
        attempt = _attempt(point, loaded.trial(grid, repetition), loaded.settings[grid], loaded.epsilons[grid], cache)
    if attempt.failure is not None:
        raise RuntimeError(f"{loaded.config.name}, grid point {grid}: {attempt.failure['error']}")
    return seconds[0], attempt


def write_seconds(loaded: Loaded, attempt: Any) -> float:
    """What the client spends storing ``attempt`` (its row, raw arrays and records) in a fresh results directory."""
    from privgame.engine.plan import plan_experiment
    from privgame.engine.store import ResultsStore

    with tempfile.TemporaryDirectory() as out:
        experiment = plan_experiment(loaded.config, Path(out) / "r", previous=None, progress=False)
        store = ResultsStore.open_for_run(Path(out) / "r", experiment.manifest, b"")
        with _stopwatch() as seconds:
            store.write_trial(attempt.index, attempt.row, attempt.outcome, attempt.records)
    return seconds[0]


@dataclass
class TrialCost:
    """A trial's measured u (empty cache) and r (every run cached) at R runs, and the client's write ω."""

    u: float
    r: float
    runs: int
    write: float

    def as_json(self) -> dict[str, float]:
        return {"u": round(self.u, 3), "r": round(self.r, 3), "runs": self.runs, "write": round(self.write, 4)}


def measure_trial(loaded: Loaded, grid: int, *, cached: bool = True) -> TrialCost:
    """u then (``cached``) r of the first trial of ``grid``, in a fresh cache; R its separate runs."""
    from privgame.core.cache import ArtefactCache

    point = loaded.config.grid[grid]
    runs = point.game.separate_runs(point.mechanism, point.attack)
    with tempfile.TemporaryDirectory() as folder:
        cache = ArtefactCache(folder)
        u, attempt = trial_seconds(loaded, grid, cache)
        r = trial_seconds(loaded, grid, cache)[0] if cached and runs else u
    return TrialCost(u, r, runs, write_seconds(loaded, attempt))


def calls(runs: int, limit: int) -> list[int]:
    """The sizes of the calls a trial makes its ``runs`` in (the game's batch)."""
    return [min(limit, runs - k) for k in range(0, runs, limit)] if runs else []


def delta(cost: RunCost, trial: TrialCost, limit: int) -> float:
    """δ: what one run costs more made inside the trial than as a task (see the module docstring)."""
    if not trial.runs:
        return 0.0
    made = sum(cost.a + cost.c * b for b in calls(trial.runs, limit))
    return (trial.u - trial.r - made) / trial.runs


# -- 2. backends ------------------------------------------------------------------------------------------------------


@dataclass
class Backend:
    """A backend's per-task overhead o, its start-up (first worker answering, all joined) and shut-down (seconds)."""

    overhead: float
    first: float
    every: float
    shutdown: float
    tasks: int
    workers: int

    def as_json(self) -> dict[str, float]:
        return {
            "overhead_per_task": round(self.overhead, 4),
            "startup_first_worker": round(self.first, 2),
            "startup_all_workers": round(self.every, 2),
            "shutdown": round(self.shutdown, 2),
            "tasks": self.tasks,
            "workers": self.workers,
        }


def tiny_jobs(n: int) -> tuple[list[Any], float]:
    """``n`` jobs of the tiny one-run trial (the runner's job tuples) and the median in-process seconds of one."""
    from privgame.engine.config import parse_config
    from privgame.engine.plan import analytic_epsilon, plan_trials
    from privgame.engine.runner import _attempt, _jobs

    config = parse_config({**TINY, "experiment": {**TINY["experiment"], "repetitions": n}})
    trials = plan_trials(config)
    epsilons = [analytic_epsilon(p) for p in config.grid]
    jobs = _jobs(config, trials, epsilons, None, None)
    seconds = []
    for job in jobs[: min(n, 40)]:
        with _stopwatch() as t:
            _attempt(*job)
        seconds.append(t[0])
    return jobs, statistics.median(seconds[len(seconds) // 4 :])


def steady_overhead(stamps: Sequence[float], workers: int, tau: float) -> float:
    """o from the times results arrived: the middle 80 % of them, W·Δt/(n − 1) − τ."""
    k = len(stamps)
    low, high = stamps[k // 10], stamps[k - 1 - k // 10]
    n = k - 1 - 2 * (k // 10)
    return max(workers * (high - low) / max(n, 1) - tau, 0.0)


def loky_backend(workers: int, n: int) -> Backend:
    """Start-up and shut-down of a fresh loky pool with privgame's worker set-up; o through ``runner._run_local``."""
    from concurrent.futures import FIRST_COMPLETED, wait

    from privgame.engine import pool, runner

    jobs, tau = tiny_jobs(n)
    start = time.perf_counter()
    executor = pool.executor(workers)
    pings = [executor.submit(runner._worker_ready) for _ in range(workers)]
    wait(pings, return_when=FIRST_COMPLETED)
    first = time.perf_counter() - start
    wait(pings)
    every = time.perf_counter() - start
    with _stopwatch() as down:
        executor.shutdown(wait=True, kill_workers=True)
    stamps: list[float] = []

    def on_result(attempt: Any) -> bool:
        stamps.append(time.perf_counter())
        return False

    before = runner.PARENT_PLAYS_WHILE_WORKERS_START
    runner.PARENT_PLAYS_WHILE_WORKERS_START = False  # every trial on the workers: their rate is what is measured
    try:
        runner._run_local(jobs, workers, on_result)
    finally:
        runner.PARENT_PLAYS_WHILE_WORKERS_START = before
    return Backend(steady_overhead(stamps, workers, tau), first, every, down[0], n, workers)


def dask_backend(scheduler: Any, workers: int, n: int) -> Backend:
    """Start-up and shut-down of ``scheduler`` (``DaskScheduler("local")`` or a ``SlurmCluster``) through the
    runner's ``_backend``; o through ``runner._run_dask`` on a second start of the same backend."""
    from privgame.engine import runner

    jobs, tau = tiny_jobs(n)
    start = time.perf_counter()
    with runner._backend(scheduler, workers) as client:
        client.wait_for_workers(1)
        client.submit(os.getpid, pure=False).result()
        first = time.perf_counter() - start
        client.wait_for_workers(workers)
        every = time.perf_counter() - start
        leaving = time.perf_counter()
    shutdown = time.perf_counter() - leaving
    stamps: list[float] = []

    def on_result(attempt: Any) -> bool:
        stamps.append(time.perf_counter())
        return False

    runner._run_dask(jobs, scheduler, workers, on_result)
    return Backend(steady_overhead(stamps, workers, tau), first, every, shutdown, n, workers)


SPIN = "x = 0\nfor i in range(15_000_000):\n    x += i\n"


MLP_BATCHES = """\
import os, statistics, sys, tempfile, time
import torch
torch.set_num_threads(1)
from privgame.core.cache import ArtefactCache
from privgame.engine.config import load_config
from privgame.engine.plan import plan_trials
from privgame.games._base import TrialContext
config = load_config(sys.argv[1])
point, trial = config.grid[-1], [t for t in plan_trials(config) if t.grid_index == len(config.grid) - 1][0]
cache = ArtefactCache(tempfile.mkdtemp())
def batch(k):
    start = time.perf_counter()
    context = TrialContext(cache)
    point.game.make_runs(point.mechanism, point.attack, seed=trial.seed, runs=range(k, k + 8), context=context)
    return time.perf_counter() - start
batch(0)
print(statistics.median(batch(8 * k) for k in range(1, 6)))
"""


def oversubscribed_speed(cores: int) -> float:
    """κ: how much of its fair share (cores / busy) each of cores + 1 processes training MLPs (batches of 8, the
    LiRA configs' network) gets, against one alone: 1.0 when sharing the cores costs nothing, less when the
    processes' switching costs more (their caches)."""
    config = str(ROOT / "experiments" / "lira_adult_mlp.toml")

    def batches(k: int) -> float:
        procs = [
            subprocess.Popen([sys.executable, "-c", MLP_BATCHES, config], stdout=subprocess.PIPE, text=True)
            for _ in range(k)
        ]
        return statistics.median(float(proc.communicate()[0].split()[-1]) for proc in procs)

    alone, crowded = batches(1), batches(cores + 1)
    return min(alone * (cores + 1) / cores / crowded, 1.0)


def two_processes_speed() -> float:
    """How fast each of two CPU-bound processes runs at once against one alone (1.0: the cores are two real, idle
    cores); the medians of two tries."""

    def together(k: int) -> float:
        start = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(k)]
        for proc in procs:
            proc.wait()
        return time.perf_counter() - start

    alone = statistics.median(together(1) for _ in range(2))
    both = statistics.median(together(2) for _ in range(2))
    return alone / both


def process_start(folder: Path) -> float:
    """A run's fixed cost: ``privgame run`` of the tiny one-run config, one trial of a few milliseconds, in a fresh
    process (the interpreter, the imports, the results directory, ``results.parquet``, the exit); the median of
    three."""
    config = folder / "tiny.toml"
    config.write_text(TINY_TOML)
    seconds = []
    for k in range(3):
        run = folder / f"tiny-{k}"
        run.mkdir()
        seconds.append(privgame_run(config, run).wall)
    return statistics.median(seconds)


def worker_warmup(config: Path) -> float:
    """w: what a fresh loky worker's first trial of ``config`` costs more than its second (the imports and data the
    first one loads).  Both are played whole (``runner._worker_attempt``, no cache), timed from the parent, after
    the worker answered a no-op task."""
    from privgame.engine import pool, runner
    from privgame.engine.config import load_config
    from privgame.engine.plan import analytic_epsilon, plan_trials

    loaded = load_config(config)
    jobs = runner._jobs(loaded, plan_trials(loaded), [analytic_epsilon(p) for p in loaded.grid], None, None)
    executor = pool.executor(1)
    try:
        executor.submit(runner._worker_ready).result()
        seconds = []
        for job in jobs[:2]:
            start = time.perf_counter()
            attempt = executor.submit(runner._worker_attempt, runner._WorkerSetup(), *job).result()
            seconds.append(time.perf_counter() - start)
            if attempt.failure is not None:
                raise RuntimeError(f"{config.name}: {attempt.failure['error']}")
    finally:
        executor.shutdown(wait=True, kill_workers=True)
    return max(seconds[0] - seconds[1], 0.0)


def warm_kind(name: str) -> str:
    """Which warm-up an experiment's workers pay."""
    if name.startswith(("krco", "record")):
        return "tables"
    return "both" if name.startswith("panoramia") else "torch"


# -- 3. the model -----------------------------------------------------------------------------------------------------


@dataclass
class JobModel:
    """One job of the runner as the model sees it (see the module docstring)."""

    key: Hashable  # the batch sizer's group (the grid point)
    runs: int  # R, the trial's separate runs
    limit: int  # most runs per task, and the size of the trial's own calls
    family: Hashable  # jobs of one family share their runs 0..R-1 (the artefact cache)
    cost: RunCost | None
    residual: float  # r(R) (u for a trial with no runs)
    delta: float
    write: float

    def run_task(self, missing: int, size: int) -> float:
        assert self.cost is not None
        return self.cost.a + self.cost.c * missing if missing else self.cost.h * size

    def trial_task(self, missing: Sequence[int]) -> float:
        extra = 0.0
        if missing and self.cost is not None:
            per_call = Counter(k // self.limit for k in missing)
            extra = sum(self.cost.a + self.cost.c * m for m in per_call.values()) + self.delta * len(missing)
        return self.residual + extra


@dataclass
class Simulated:
    """A simulated run: the makespan (from the run's start), the bound's two sides, the runs made."""

    makespan: float
    low: float
    high: float
    runs_made: int
    runs_unique: int
    tasks: int
    busy: float = field(default=0.0)


def simulate(
    jobs: Sequence[JobModel],
    starts: Sequence[float],
    *,
    separate: bool,
    overhead: float = 0.0,
    warmup: float = 0.0,
    parent: bool = False,
    parent_until: float = math.inf,
    startup: float = 0.0,
    sizer_workers: int | None = None,
    shutdown: float = 0.0,
    cores: float | None = None,
    kappa: float = 1.0,
) -> Simulated:
    """List-schedule ``jobs`` as the runner hands them out (its :class:`WorkQueue`) on agents that join at
    ``starts``: each free agent takes the queue's next task, or waits for the next task to end.  With ``parent``,
    agent 0 is the parent: it takes tasks (with no overhead; batches of one run, as the runner's parent) until a
    worker is ready or ``parent_until``, whichever comes first, and the others first spend ``startup`` seconds of
    work starting (loky's pool).  With ``cores``, the busy agents share that many cores
    equally (processor sharing: one machine), each at ``kappa`` of its fair share while they are more than the
    cores; ``None``: each its own core.  A lone agent stores each trial itself; otherwise the client stores them one
    at a time beside the work.  See the module docstring."""
    from privgame.engine.tasks import RunsTask, WorkQueue

    n = len(starts)
    work = WorkQueue(
        list(range(len(jobs))),
        runs=lambda j: jobs[j].runs if separate else 0,
        key=lambda j: jobs[j].key,
        limit=lambda j: jobs[j].limit,
        n_workers=sizer_workers or max(n, 1),
        clock=lambda: now,  # the simulated time: how long the run tasks out have run
    )
    made: set[tuple[Hashable, int]] = set()
    idle = [(t, i) for i, t in enumerate(starts)]  # (when the agent next looks for a task, agent): a heap
    heapify(idle)
    waiting: list[int] = []  # idle agents the queue had nothing for: they look again when a task ends
    fresh = [True] * n  # its first task pays the warm-up
    timed = [False] * n  # its first batch of runs is not timed (runner._make_runs)
    booting = [parent and i > 0 and startup > 0 for i in range(n)]  # a loky worker not started yet
    ready = not parent  # whether a worker is ready (the parent then plays no more)
    inline = n == 1
    # processor sharing: every busy agent advances at the same rate, so a task ends when the "virtual" clock, which
    # runs at that rate, reaches its start plus its work: one heap of virtual end times
    events: list[tuple[float, int, int, Any, float]] = []
    now = virtual = 0.0
    n_busy = seq = made_count = tasks = 0
    client = total = critical = 0.0
    longest_run: dict[int, float] = {}

    def rate() -> float:
        return 1.0 if cores is None or n_busy <= cores else kappa * cores / n_busy

    def advance(to: float) -> None:
        nonlocal now, virtual
        virtual += (to - now) * rate()
        now = to

    while True:
        while idle and parent and idle[0][1] == 0 and (ready or idle[0][0] >= parent_until):
            heappop(idle)  # the parent plays no more once a worker is ready (or once they start, on a full machine)
        take_at = idle[0][0] if idle else math.inf
        end_at = now + (events[0][0] - virtual) / rate() if events else math.inf
        if take_at < end_at:
            _, i = heappop(idle)
            advance(max(take_at, now))
            if booting[i]:  # the worker's start: work on this machine, no task
                booting[i] = False
                heappush(events, (virtual + startup, seq, i, None, math.nan))
                seq, n_busy = seq + 1, n_busy + 1
                continue
            task = work.take(most=1 if parent and i == 0 else None)
            if task is None:
                if not events:
                    break
                waiting.append(i)
                continue
            job = jobs[task.job]
            if isinstance(task, RunsTask):
                missing = [k for k in task.runs if (job.family, k) not in made]
                seconds = job.run_task(len(missing), len(task.runs))
                observed = seconds if timed[i] else math.nan
                timed[i] = True
            else:
                missing = [k for k in range(job.runs) if (job.family, k) not in made]
                seconds = observed = job.trial_task(missing)
                made.update((job.family, k) for k in missing)
            made_count += len(missing)
            on_worker = not (parent and i == 0) and not inline
            duration = seconds + (overhead if on_worker else 0.0) + (warmup if fresh[i] else 0.0)
            if inline and not isinstance(task, RunsTask):
                duration += job.write
            if isinstance(task, RunsTask):
                longest_run[task.job] = max(longest_run.get(task.job, 0.0), duration)
            else:
                critical = max(critical, longest_run.get(task.job, 0.0) + duration)
            fresh[i] = False
            tasks += 1
            total += duration
            heappush(events, (virtual + duration, seq, i, task, observed))
            seq, n_busy = seq + 1, n_busy + 1
            continue
        if not events:
            break
        advance(end_at)
        _, _, i, task, observed = heappop(events)
        n_busy -= 1
        heappush(idle, (now, i))
        for w in waiting:
            heappush(idle, (now, w))
        waiting.clear()
        if task is None:
            ready = True
        elif isinstance(task, RunsTask):
            job = jobs[task.job]
            made.update((job.family, k) for k in task.runs)
            work.finished(task, observed)
        elif not inline:
            client = max(client, now) + jobs[task.job].write
    end = max(client, now) + shutdown
    unique = len({(job.family, k) for job in jobs for k in range(job.runs)})
    share = n if cores is None else min(n, cores)
    low = min(starts) + max(critical, total / share) + shutdown
    high = max(starts) + total / share + critical + shutdown
    return Simulated(end, low, high, made_count, unique, tasks, total)


@dataclass
class Machine:
    """The measured constants every prediction uses."""

    process: float  # a run's fixed cost: ``privgame run`` of one tiny trial (interpreter, imports, store, exit)
    warmup: dict[str, float]  # a worker's first trial: the rest of the imports, the data (per kind)
    loky: Backend
    dask: Backend
    slurm: Backend | None
    kappa: float = 1.0  # each process's share of the cores when more are busy than cores, against the fair share


def predict(
    jobs: Sequence[JobModel],
    serial: float,
    machine: Machine,
    backend: str,
    workers: int,
    *,
    warm: str,
    sizer: int | None = None,
    cores: float | None = None,
) -> Simulated:
    """T(W) of ``jobs``: ``backend`` ``"parent"`` (``--n-jobs 1``), ``"loky"`` (``--n-jobs W``), ``"dask"`` or
    ``"slurm"`` (W workers of that backend; the sizer told ``sizer`` workers, default as privgame does); ``warm``:
    the kind of warm-up (``machine.warmup``'s key); ``cores``: the cores the processes share (loky: W, one machine
    of W cores; else ``None``, each worker its own core)."""
    from privgame.engine.tasks import WorkQueue

    head = machine.process + serial
    warmup = machine.warmup[warm]
    if backend == "parent":
        sim = simulate(jobs, [head], separate=False, warmup=warmup, cores=cores, kappa=machine.kappa)
    elif backend == "loky":
        b = machine.loky
        # runner._run_local: on a machine whose cores the workers take, the parent takes nothing new once they
        # start, and nothing at all when the first trial is split from the start (they start at once)
        spare = workers < (cores or workers)
        first_split = WorkQueue(
            jobs, runs=lambda j: j.runs, key=lambda j: j.key, limit=lambda j: j.limit, n_workers=workers
        ).splits_next()
        plays = spare or not first_split
        delay = min(max(head, 0.5), 10.0) if plays else 0.0  # runner._worker_start_delay: the parent's CPU time
        sim = simulate(
            jobs,
            [head] + [head + delay] * workers,
            separate=True,
            overhead=b.overhead,
            warmup=warmup,
            parent=True,
            parent_until=math.inf if spare else head + delay,
            startup=b.every,
            sizer_workers=sizer or workers,
            shutdown=b.shutdown,
            cores=cores or workers,
            kappa=machine.kappa,
        )
    else:
        b = machine.dask if backend == "dask" else machine.slurm
        assert b is not None
        ready = [head + b.first] + [head + b.every] * (workers - 1)
        default = workers  # the runner sizes batches for a Slurm run's cores × jobs, a local cluster's workers
        sim = simulate(
            jobs,
            ready,
            separate=True,
            overhead=b.overhead,
            warmup=warmup,
            sizer_workers=sizer or default,
            shutdown=b.shutdown,
            cores=cores,
            kappa=machine.kappa,
        )
    return sim


def job_models(
    loaded: Loaded,
    cost_of: Callable[[Any], RunCost | None],
    residual_of: Callable[[Any], float],
    delta_of: Callable[[Any], float],
    write_of: Callable[[Any], float],
) -> list[JobModel]:
    """The runner's jobs of ``loaded`` (``runner._jobs``: one per play, in its order) as :class:`JobModel`s."""
    from privgame.engine.runner import _jobs

    jobs = _jobs(loaded.config, loaded.trials, loaded.epsilons, None, None)
    models = []
    for point, trial, *_ in jobs:
        runs = point.game.separate_runs(point.mechanism, point.attack)
        # a LiRA model depends on (mechanism, pool, repetition, k), not on the grid point: a sweep's points share them
        shared = point.game.name == "lira"
        family = (repr(point.mechanism), point.game.pool_size, trial.repetition) if shared else trial.index
        models.append(
            JobModel(
                key=trial.grid_index,
                runs=runs,
                limit=point.game.run_batch(point.mechanism, point.attack),
                family=family,
                cost=cost_of(point) if runs else None,
                residual=residual_of(point),
                delta=delta_of(point) if runs else 0.0,
                write=write_of(point),
            )
        )
    return models


def interpolate(points: dict[int, float], m: int) -> float:
    """Piecewise-linear through ``points`` (M → seconds), extended linearly past the ends."""
    xs = sorted(points)
    if len(xs) == 1:
        return points[xs[0]] * m / xs[0]
    for lo, hi in itertools.pairwise(xs):
        if m <= hi or hi == xs[-1]:
            return points[lo] + (points[hi] - points[lo]) * (m - lo) / (hi - lo)
    raise AssertionError("unreachable")


# -- 4. the check: real runs ------------------------------------------------------------------------------------------


@dataclass
class Measured:
    """A real run: wall and CPU seconds, trials stored."""

    wall: float
    cpu: float
    trials: int


def privgame_run(config: Path, folder: Path, *extra: str) -> Measured:
    """``privgame run config`` in a subprocess with a fresh cache: its wall time and CPU time.  The CPU time is the
    larger of two lower bounds: ``os.wait4``'s (the process and every process it waited for) and the sum over the
    process tree, sampled every 0.1 s with psutil (a loky worker killed at the end is not always waited for)."""
    import pandas as pd
    import psutil

    code = "from privgame.engine.cli import console; console()"  # as the privgame command
    out, cache = folder / "out", folder / "cache"
    command = [sys.executable, "-c", code, "run", str(config), "--out", str(out), "--cache-dir", str(cache)]
    seen: dict[int, float] = {}
    with open(folder / "stderr", "wb") as err:
        start = time.perf_counter()
        process = subprocess.Popen([*command, "--no-progress", *extra], cwd=folder, stdout=err, stderr=err)
        root = psutil.Process(process.pid)
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            with contextlib.suppress(psutil.Error):
                for member in (root, *root.children(recursive=True)):
                    with contextlib.suppress(psutil.Error):
                        times = member.cpu_times()
                        seen[member.pid] = times.user + times.system
            time.sleep(0.1)
        wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"privgame run {config.name} {' '.join(extra)} failed:\n{(folder / 'stderr').read_text()}")
    trials = len(pd.read_parquet(out / "results.parquet"))
    return Measured(wall, max(usage.ru_utime + usage.ru_stime, sum(seen.values())), trials)


def local_slurm_module() -> Any:
    """``tests/local_slurm.py``, imported by path (the benchmarks do not import the tests as a package)."""
    spec = importlib.util.spec_from_file_location("privgame_local_slurm", ROOT / "tests" / "local_slurm.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def slurm_skip_reason(no_slurm: bool) -> str | None:
    if no_slurm:
        return "--no-slurm (or --quick)"
    try:
        import dask_jobqueue  # noqa: F401
    except ImportError:
        return "dask-jobqueue is not installed (pip install 'privgame[slurm]')"
    return local_slurm_module().slurm_problem()


# -- main -------------------------------------------------------------------------------------------------------------


class Bench:
    """The measurements of one benchmark run and what is built from them (the sections of the module docstring)."""

    def __init__(self, work: Path, quick: bool) -> None:
        self.work, self.quick = work, quick
        self.passes = 1 if quick else 2  # runs of each check, the faster kept
        self.check_cores = math.nan  # the free cores the check's predictions assumed
        self.check_kappa = math.nan  # and κ
        self.loaded: dict[str, Loaded] = {}
        self.costs: dict[str, RunCost] = {}
        self.trials: dict[str, TrialCost] = {}
        self.r_lira: dict[int, float] = {}  # r(M) of the logistic regression's LiRA trial
        checks = work / "checks"
        checks.mkdir()
        names = ("lira-check", "lira-check-one", "record-check", "lira-tiny", "record-tiny")
        self.paths = {name: checks / f"{name}.toml" for name in names}
        if quick:
            self.lira = {
                "pool": 1000,
                "models": 16,
                "mechanism": "logistic-regression",
                "mechanism_extra": "",
                "epochs": 3,
            }
            record = {"size": 200, "rounds": 10, "shadows": 20}
        else:
            self.lira = {
                "pool": 5000,
                "models": 64,
                "mechanism": "mlp",
                "mechanism_extra": "hidden = [64]\n",
                "epochs": 30,
            }
            record = {"size": 1000, "rounds": 50, "shadows": 100}
        self.paths["lira-check"].write_text(LIRA_CHECK.format(repetitions=2, **self.lira))
        self.paths["lira-check-one"].write_text(LIRA_CHECK.format(repetitions=1, **self.lira))
        self.paths["record-check"].write_text(RECORD_CHECK.format(**record))
        # two small trials each, for a worker's warm-up (:func:`worker_warmup`)
        tiny = {"pool": 1000, "models": 16, "mechanism": "logistic-regression", "mechanism_extra": "", "epochs": 3}
        self.paths["lira-tiny"].write_text(LIRA_CHECK.format(repetitions=2, **tiny))
        self.paths["record-tiny"].write_text(RECORD_CHECK.format(size=200, rounds=10, shadows=20))

    def get(self, name: str) -> Loaded:
        """The config ``name`` (of experiments/, or a check's), loaded once; its serial part printed."""
        if name not in self.loaded:
            self.loaded[name] = load(self.paths.get(name, ROOT / "experiments" / f"{name}.toml"))
            _say(f"  serial part of {name}: {self.loaded[name].serial:.2f} s (config, σ calibrations, plan)")
        return self.loaded[name]

    # -- 1
    def cost(self, label: str, name: str, grid: int, sizes: tuple[int, int], repeats: int) -> None:
        c = self.costs[label] = run_cost(self.get(name), grid, sizes, repeats)
        timed = ", ".join(f"b = {b}: {statistics.median(v):.3f} s" for b, v in c.timed.items())
        _say(f"  {label:22s} a = {c.a:.3f} s, c = {c.c:.4f} s, h = {c.h:.4f} s ({timed}; medians of {repeats})")

    def trial(self, label: str, name: str, grid: int, *, warm: bool = False) -> None:
        """u and r of the first trial of ``grid``; ``warm``: after one untimed trial of the same config (its
        imports, data and compiled kernels), where no earlier measurement used the same code."""
        if warm:
            trial_seconds(self.get(name), grid, None, repetition=1)
        t = self.trials[label] = measure_trial(self.get(name), grid)
        what = f"u = {t.u:.2f} s, r = {t.r:.2f} s ({t.runs} runs)" if t.runs else f"{t.u:.2f} s (one task)"
        _say(f"  trial {label:28s} {what}; the client's write {t.write * 1000:.0f} ms")

    def measure(self) -> None:
        """Section 1: a, c, h per mechanism; u, r per trial."""
        _say("1. per-run cost, seconds = a + c·b for a task of b runs (h: one run read back from the cache)")
        if self.quick:
            self.cost("lira-check", "lira-check", 0, (1, 4), 2)
            self.cost("synthpop", "record-check", 0, (1, 4), 2)
            self.trial("lira-check", "lira-check", 0)
            self.trial("record-check", "record-check", 0)
            self.r_lira = {self.lira["models"]: self.trials["lira-check"].r}
            return
        self.cost("mlp", "lira_adult_mlp", 5, (1, 16), 2)
        self.cost("logistic-regression", "lira_adult_logistic", 5, (1, 16), 2)
        self.cost("gradient-boosted-trees", "lira_adult_gbt", 5, (1, 4), 1)
        self.cost("synthpop", "krco_adult_synthpop", 0, (1, 16), 3)
        self.cost("baynet", "krco_adult_baynet", 0, (1, 16), 3)
        self.cost("dpsgd-multirun", "dpsgd_multirun_quick", 0, (1, 16), 2)
        self.costs["lira-check"] = self.costs["mlp"]
        # the logistic regression's trial at M = 256, then at 64 and 16 on the same (cached) models: r(M)
        from privgame.core.cache import ArtefactCache

        lr = self.get("lira_adult_logistic")
        with tempfile.TemporaryDirectory() as folder:
            cache = ArtefactCache(folder)
            u256, attempt = trial_seconds(lr, 4, cache)
            for grid, m in ((4, 256), (2, 64), (0, 16)):
                self.r_lira[m] = trial_seconds(lr, grid, cache)[0]
        self.trials["lira-logistic-256"] = TrialCost(u256, self.r_lira[256], 256, write_seconds(lr, attempt))
        shown = ", ".join(f"{self.r_lira[m]:.2f} s at M = {m}" for m in sorted(self.r_lira))
        _say(f"  trial lira-logistic-256             u = {u256:.2f} s; r(M) = {shown}")
        self.trial("lira-mlp-64", "lira_adult_mlp", 2)
        self.trial("lira-gbt-16", "lira_adult_gbt", 0)
        self.trial("krco-synthpop", "krco_adult_synthpop", 0)
        self.trial("dpsgd-multirun", "dpsgd_multirun_quick", 0)
        for g, point in enumerate(self.get("dpsgd_whitebox").config.grid):
            self.trial(f"dpsgd-whitebox-eps{point.mechanism.epsilon:g}", "dpsgd_whitebox", g, warm=g == 0)
        for g, point in enumerate(self.get("panoramia_adult").config.grid):
            self.trial(f"panoramia-epochs{point.mechanism.epochs}", "panoramia_adult", g, warm=g == 0)
        self.trial("record-check", "record-check", 0)
        self.trials["lira-check"] = self.trials["lira-mlp-64"]

    # -- 3
    def lira_jobs(self, name: str, label: str, trial_label: str) -> list[JobModel]:
        """A LiRA config's jobs: ``label``'s run cost; r(M) the logistic regression's r(M) plus this mechanism's own
        difference per model where its trial was measured (``trial_label``)."""
        t = self.trials[trial_label]
        own = (t.r - interpolate(self.r_lira, t.runs)) / t.runs

        def residual(point: Any) -> float:
            m = point.game.n_models
            return interpolate(self.r_lira, m) + own * m

        return job_models(
            self.get(name),
            lambda p: self.costs[label],
            residual,
            lambda p: delta(self.costs[label], t, p.game.batch),
            lambda p: t.write / t.runs * p.game.n_models,
        )

    def runs_jobs(self, name: str, label: str, trial_label: str, limit: int) -> list[JobModel]:
        """A config whose every trial is ``trial_label``'s (r, δ), its runs at ``label``'s cost.  BayNet: Synthpop's
        trial (the same attack on tables of the same size) with BayNet's own cost per run."""
        t = self.trials[trial_label]
        d = delta(self.costs["synthpop" if label == "baynet" else label], t, limit)
        return job_models(self.get(name), lambda p: self.costs[label], lambda p: t.r, lambda p: d, lambda p: t.write)

    def unit_jobs(self, name: str, label_of: Callable[[Any], str]) -> list[JobModel]:
        """A config whose trials are one task each, timed per grid point (``label_of``)."""
        return job_models(
            self.get(name),
            lambda p: None,
            lambda p: self.trials[label_of(p)].u,
            lambda p: 0.0,
            lambda p: self.trials[label_of(p)].write,
        )

    def table(self) -> dict[str, list[JobModel]]:
        """The experiments the table predicts (the check configs in a quick run)."""
        if self.quick:
            return {
                "lira-check": self.lira_jobs("lira-check", "lira-check", "lira-check"),
                "record-check": self.runs_jobs("record-check", "synthpop", "record-check", 25),
            }
        return {
            "lira_adult_mlp": self.lira_jobs("lira_adult_mlp", "mlp", "lira-mlp-64"),
            "lira_adult_logistic": self.lira_jobs("lira_adult_logistic", "logistic-regression", "lira-logistic-256"),
            "lira_adult_gbt": self.lira_jobs("lira_adult_gbt", "gradient-boosted-trees", "lira-gbt-16"),
            "krco_adult_synthpop": self.runs_jobs("krco_adult_synthpop", "synthpop", "krco-synthpop", 25),
            "krco_adult_baynet": self.runs_jobs("krco_adult_baynet", "baynet", "krco-synthpop", 25),
            "dpsgd_whitebox": self.unit_jobs("dpsgd_whitebox", lambda p: f"dpsgd-whitebox-eps{p.mechanism.epsilon:g}"),
            "dpsgd_multirun_quick": self.runs_jobs("dpsgd_multirun_quick", "dpsgd-multirun", "dpsgd-multirun", 64),
            "panoramia_adult": self.unit_jobs("panoramia_adult", lambda p: f"panoramia-epochs{p.mechanism.epochs}"),
        }

    def predict_table(self, machine: Machine) -> dict[str, dict[str, Any]]:
        """Section 3: T(W) of each experiment of :meth:`table`."""
        backend = "slurm" if machine.slurm is not None else "dask"
        where = "Slurm" if machine.slurm is not None else "Dask (Slurm skipped)"
        _say(
            f"3. predicted wall time T(W), seconds: W = 1 in one process (--n-jobs 1), 2 and 8 with loky, 8 to 512 "
            f"on {where} workers; [lower - upper bound]"
        )
        predicted: dict[str, dict[str, Any]] = {}
        for name, jobs in self.table().items():
            serial, warm = self.get(name).serial, warm_kind(name)
            row: dict[str, Any] = {}
            parts = []
            columns = [("1", "parent", 1), ("2_loky", "loky", 2), ("8_loky", "loky", 8)]
            for label, kind, w in [*columns, *((str(w), backend, w) for w in WORKERS[1:])]:
                sim = predict(jobs, serial, machine, kind, w, warm=warm)
                row[label] = round(sim.makespan, 1)
                parts.append(f"{label} {sim.makespan:,.0f} [{sim.low:,.0f}-{sim.high:,.0f}]")
                if label == "512":
                    row["512_runs_made"], row["runs_distinct"] = sim.runs_made, sim.runs_unique
            predicted[name] = row
            _say(f"  {name:22s} " + "; ".join(parts))
            _say(f"  {'':22s} at 512: {row['512_runs_made']} runs made of {row['runs_distinct']} distinct")
        return predicted

    # -- 4
    def check(self, machine: Machine) -> tuple[dict[str, dict[str, Any]], float]:
        """Section 4: the check configs run for real, against their prediction; and one LiRA repetition's CPU/wall
        at ``--n-jobs 2``."""
        _say("4. the check: privgame run in a subprocess, fresh cache; predicted vs measured wall time")
        out: dict[str, dict[str, Any]] = {}
        configs = [("lira", "lira-check", self.lira_jobs("lira-check", "lira-check", "lira-check"))]
        if not self.quick:
            configs.append(("record", "record-check", self.runs_jobs("record-check", "synthpop", "record-check", 25)))
        variants: list[tuple[str, str, int, tuple[str, ...]]] = [
            ("local_1", "parent", 1, ("--n-jobs", "1")),
            ("local_2", "loky", 2, ("--n-jobs", "2")),
        ]
        if machine.slurm is not None:
            for w in (1, 2):
                extra = ("--cluster", "slurm", "--slurm-jobs", str(w), "--slurm-memory", "1GB")
                variants.append((f"slurm_{w}", "slurm", w, extra))
        # the machine as the runs find it: its cores less what other work takes (two CPU-bound processes' speed), and
        # κ, each process's share when more are busy than cores (three processes training MLPs on two cores)
        speed = two_processes_speed()
        cores = (os.cpu_count() or 1) * min(speed, 1.0)
        kappa = 1.0 if self.quick else oversubscribed_speed(os.cpu_count() or 1)
        self.check_cores, self.check_kappa = round(cores, 2), round(kappa, 2)
        _say(
            f"  now: two CPU-bound processes at once run at {speed:.2f} of one alone ({cores:.2f} free cores); "
            f"{(os.cpu_count() or 1) + 1} processes training MLPs each get {kappa:.2f} of their fair share (κ); "
            f"in brackets the prediction on {os.cpu_count()} free cores, κ = 1"
        )
        here = dataclasses.replace(machine, kappa=kappa)
        predicted, nominal = {}, {}
        for short, name, jobs in configs:
            serial, warm = self.get(name).serial, warm_kind(name)
            for variant, kind, w, _ in variants:
                predicted[short, variant] = predict(jobs, serial, here, kind, w, warm=warm, cores=cores).makespan
                nominal[short, variant] = predict(
                    jobs, serial, machine, kind, w, warm=warm, cores=os.cpu_count()
                ).makespan
        # every run twice, the second pass after the first (other work on the machine comes and goes): the faster
        runs: dict[tuple[str, str], list[Measured]] = {key: [] for key in predicted}
        loads: dict[tuple[str, str], list[float]] = {key: [] for key in predicted}
        for _ in range(self.passes):
            for short, name, _ in configs:
                for variant, _, _, extra in variants:
                    folder = Path(tempfile.mkdtemp(dir=self.work, prefix=f"{short}-{variant}-"))
                    runs[short, variant].append(privgame_run(self.paths[name], folder, *extra))
                    loads[short, variant].append(_load_1min())
        for (short, variant), measured_runs in runs.items():
            measured = min(measured_runs, key=lambda m: m.wall)
            ratio = measured.wall / predicted[short, variant]
            row: dict[str, Any] = {
                "predicted": round(predicted[short, variant], 1),
                "predicted_free_cores": round(nominal[short, variant], 1),
                "measured": round(measured.wall, 1),
                "measured_runs": [round(m.wall, 1) for m in measured_runs],
                "measured_over_predicted": round(ratio, 2),
                "load_1min": loads[short, variant],
            }
            text = ""
            if not variant.startswith("slurm"):  # a Slurm job's processes are slurmd's children, not ours to time
                row["cpu_over_wall"] = round(measured.cpu / measured.wall, 2)
                text = f"; CPU/wall {row['cpu_over_wall']:.2f}"
            out[f"{short}_{variant}"] = row
            shown = " / ".join(f"{m.wall:.1f}" for m in measured_runs)
            _say(
                f"  {short:6s} {variant:8s} predicted {predicted[short, variant]:5.1f} s "
                f"[{nominal[short, variant]:5.1f}], measured {shown} s "
                f"(the faster / predicted {ratio:.2f}{text}; {measured.trials} trials; load "
                f"{' / '.join(f'{x:.2f}' for x in loads[short, variant])})"
            )
        if self.quick:
            return out, out["lira_local_2"]["cpu_over_wall"]
        ones = []
        for _ in range(self.passes):
            folder = Path(tempfile.mkdtemp(dir=self.work, prefix="lira-one-"))
            ones.append(privgame_run(self.paths["lira-check-one"], folder, "--n-jobs", "2"))
        one = min(ones, key=lambda m: m.wall)
        ratio = one.cpu / one.wall
        _say(
            f"  one {self.lira['models']}-model LiRA repetition at --n-jobs 2 (the faster of {len(ones)}): wall "
            f"{one.wall:.1f} s, CPU {one.cpu:.1f} s (the process and its workers): CPU/wall {ratio:.2f} (target >= 1.7)"
        )
        return out, ratio


def backends(tasks: int, slurm_reason: str | None, work: Path) -> tuple[Backend, Backend, Backend | None]:
    """Section 2: loky, a local Dask cluster and (unless ``slurm_reason``) Slurm jobs, 2 workers each; the local
    Slurm is stopped before this returns."""
    _say(f"2. per-task overhead and start-up ({tasks} tasks of the tiny one-run trial on 2 workers)")
    from privgame.engine.runner import DaskScheduler

    loky = loky_backend(2, tasks)
    dask = dask_backend(DaskScheduler("local"), 2, tasks)
    measured = [("loky", loky), ("Dask local", dask)]
    slurm = None
    if slurm_reason is not None:
        _say(f"  Slurm      skipped: {slurm_reason}")
    else:
        from privgame.engine.slurm import SlurmCluster

        with local_slurm_module().local_slurm(work / "slurm-overhead"), _cwd(work):
            slurm = dask_backend(SlurmCluster(jobs=2, memory="1GB", walltime="00:20:00"), 2, tasks)
        measured.append(("Slurm", slurm))
    for label, b in measured:
        _say(
            f"  {label:10s} o = {b.overhead * 1000:.1f} ms per task; first worker {b.first:.2f} s, all "
            f"{b.every:.2f} s; shut-down {b.shutdown:.2f} s"
        )
    return loky, dask, slurm


@contextlib.contextmanager
def _cwd(folder: Path) -> Iterator[None]:
    """Run the block in ``folder`` (where Slurm writes its jobs' slurm-JOBID.out)."""
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small configs, no Slurm (a smoke test)")
    parser.add_argument("--no-slurm", action="store_true", help="skip the local Slurm")
    parser.add_argument("--tasks", type=int, default=300, help="tiny tasks per backend for the overhead")
    args = parser.parse_args()
    started = time.perf_counter()
    import shutil

    import torch

    torch.set_num_threads(1)
    work = Path(tempfile.mkdtemp(prefix="bench-scaling-"))
    # σ calibrations go to the default cache: a fresh one, so the serial part is a fresh clone's and ~ is untouched
    os.environ["PRIVGAME_CACHE_DIR"] = str(work / "default-cache")
    load_before = _load_1min()
    _say(f"cores: {os.cpu_count()}; 1-minute load average {load_before}; one thread per process")
    try:
        bench = Bench(work, args.quick)
        bench.measure()
        process = process_start(work)
        warm = {"torch": worker_warmup(bench.paths["lira-tiny"]), "tables": worker_warmup(bench.paths["record-tiny"])}
        warm["both"] = warm["torch"] + warm["tables"]
        shown = ", ".join(f"{kind} {seconds:.2f} s" for kind, seconds in warm.items())
        _say(f"  a run's fixed cost (privgame run of one tiny trial): {process:.2f} s; a worker's warm-up: {shown}")
        speed = two_processes_speed()
        _say(f"  two CPU-bound processes at once each run at {speed:.2f} of one alone (1.00: two free cores)")
        reason = slurm_skip_reason(args.no_slurm or args.quick)
        loky, dask, slurm = backends(60 if args.quick else args.tasks, reason, work)
        machine = Machine(process, warm, loky, dask, slurm)
        predicted = bench.predict_table(machine)
        slurm_check: Any = contextlib.nullcontext()
        if slurm is not None:
            slurm_check = local_slurm_module().local_slurm(work / "slurm-check")
        with slurm_check:
            check, cpu_over_wall = bench.check(machine)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        json.dumps(
            {
                "quick": args.quick,
                "cores": os.cpu_count(),
                "load_1min_before": load_before,
                "load_1min_after": _load_1min(),
                "costs": {k: v.as_json() for k, v in bench.costs.items()},
                "trials": {k: v.as_json() for k, v in bench.trials.items()},
                "r_lira_logistic": {str(k): round(v, 3) for k, v in sorted(bench.r_lira.items())},
                "process_start": round(process, 2),
                "worker_warmup": {k: round(v, 2) for k, v in warm.items()},
                "two_processes_speed": round(speed, 2),
                "check_kappa": bench.check_kappa,
                "serial": {k: round(v.serial, 2) for k, v in bench.loaded.items()},
                "backends": {
                    "loky": loky.as_json(),
                    "dask_local": dask.as_json(),
                    "slurm_local": None if slurm is None else slurm.as_json(),
                },
                "predicted": predicted,
                "check": check,
                "check_free_cores": bench.check_cores,
                "lira_cpu_over_wall": round(cpu_over_wall, 2),
                "seconds": round(time.perf_counter() - started, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
