"""A trial's mechanism runs as tasks of their own: what the runner hands its workers, and how many runs per task.

A game whose trials make many runs of the mechanism (LiRA's M models) says how many it may make apart
(:meth:`privgame.games._base.Game.separate_runs`).  On several workers the runner then plays such a trial as tasks:
batches of its runs, each made on whichever worker is free and written to the artefact cache as soon as it is made
(:meth:`~privgame.games._base.Game.make_runs`), then the trial itself, which reads every run from the cache.  So
one trial keeps every worker busy, a killed run resumes run by run (the made ones are in the cache), and the
numbers cannot change: a run is the same whoever makes it and however many are made together (a model trained in
a batch is, to the bit, the model trained alone: ``tests/mechanisms/training/test_models.py``).

How many runs per task is measured, not fixed (:class:`BatchSizer`): a batch of b runs costs about a + c·b seconds
(a: what a batched call pays once, such as the per-step work of a batched ensemble; c: each run's own work), and
the backend adds its dispatch to every task (:data:`DISPATCH`).  Until two sizes are timed, a grid point's tasks
take half a worker's share of the runs left (guided self-scheduling: large enough to amortise an unknown a,
shrinking as the runs go, so that the sizes differ); then a and c are fitted by least squares, and each later task
takes the size that finishes the point's remaining runs soonest on the workers (ties: the smaller, which loses
less to a kill and balances better), up to the game's memory bound (:meth:`~privgame.games._base.Game.run_batch`).
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DISPATCH", "BatchSizer", "RunsTask", "TrialTask", "WorkQueue"]

#: how close (relative) to the best predicted finishing time a smaller batch may be and still be preferred
_TIE = 0.05
#: seconds a task costs beyond its own work, which its measured time does not include: handing it to a worker and
#: its result back (measured 4.4 ms with loky, 11.5 ms with a local Dask cluster, 8.3 ms with Slurm's workers:
#: docs/scaling.md), rounded up
DISPATCH = 0.01


@dataclass
class BatchSizer:
    """How many runs the next task of one grid point makes, from the measured cost of the point's earlier tasks.

    Parameters
    ----------
    n_workers : int
        The workers the tasks share.
    limit : int
        The most runs per task (the game's memory bound).
    """

    n_workers: int
    limit: int
    timed: list[tuple[int, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        timed, self.timed = self.timed, []
        self._sums = [0.0] * 5  # n, Σb, Σt, Σb², Σbt: the fit in constant time however many tasks were timed
        for size, seconds in timed:
            self.observe(size, seconds)

    def observe(self, size: int, seconds: float) -> None:
        """Record that a task of ``size`` runs took ``seconds`` (measured where it ran)."""
        if size > 0 and math.isfinite(seconds) and seconds >= 0:
            self.timed.append((size, seconds))
            for i, term in enumerate((1.0, size, seconds, size * size, size * seconds)):
                self._sums[i] += term

    def fit(self) -> tuple[float, float] | None:
        """``(a, c)`` of seconds ≈ a + c·size, by least squares on the timed tasks; ``None`` before two sizes are
        timed.  Both are kept non-negative (noise can give a negative intercept)."""
        n, sum_b, sum_t, sum_bb, sum_bt = self._sums
        # the sizes' spread: 0 exactly while every timed size is the same (whole numbers, summed exactly)
        spread = sum_bb - sum_b * sum_b / n if n else 0.0
        if spread <= 0:
            return None
        c = max((sum_bt - sum_b * sum_t / n) / spread, 1e-9)
        a = max((sum_t - c * sum_b) / n, 0.0)
        return a, c

    def cost(self) -> tuple[float, float] | None:
        """``(a, c)`` as the sizer plans with them: :meth:`fit`'s, with the dispatch (:data:`DISPATCH`) in a."""
        fitted = self.fit()
        return None if fitted is None else (fitted[0] + DISPATCH, fitted[1])

    def size(self, remaining: Sequence[int], busy: Sequence[float] = ()) -> int:
        """The size of the next task, given the runs still to hand out of each of the point's trials (the first is
        the trial the task is for) and how long the other workers' run tasks still take (as predicted; the other
        workers are free).

        Each candidate size b is scored by the time the point's remaining runs would take in tasks of b runs,
        the first on this worker now, the others each on the worker free first (list scheduling): so a batch is
        sized to end with the batches in flight, not at the same time as an equal share of what is left (which
        halves the batches at every task at the end of a trial).
        """
        left = remaining[0]
        cost = self.cost()
        if cost is None:  # half a worker's share of what is left: shrinks as runs go, so two sizes get timed
            size = min(math.ceil(sum(remaining) / (2 * self.n_workers)), self.limit)
            return max(1, min(size, left))
        a, c = cost
        others = sorted(busy)[: self.n_workers - 1]
        others += [0.0] * (self.n_workers - 1 - len(others))
        rest_runs = [r for r in remaining[1:] if r > 0]
        best: list[tuple[float, int]] = []
        high = min(self.limit, max(remaining))
        # a ladder of sizes, and the even splits of this trial's runs (k tasks of ⌈left/k⌉: where finishing times drop)
        splits = {math.ceil(left / k) for k in range(1, min(left, 64) + 1)}
        for b in sorted(set(_candidates(high)) | {b for b in splits if b <= high}):
            first = min(b, left)
            best.append((_finish(a, c, b, first, [left - first, *rest_runs], others), b))
        fastest = min(t for t, _ in best)
        size = min(b for t, b in best if t <= fastest * (1 + _TIE))
        return max(1, min(size, left))


#: beyond this many tasks, a candidate's finishing time is the list-scheduling estimate, not the schedule itself
_SIMULATED = 2048


def _finish(a: float, c: float, b: int, first: int, runs: Sequence[int], others: Sequence[float]) -> float:
    """When the runs end (the last of them, not the tasks in flight): a task of ``first`` runs now on this worker,
    then ``runs`` (per trial) in tasks of ``b`` on whichever worker is free first, the others free after
    ``others`` seconds; a task of k runs takes a + c·k."""
    tasks = sum(-(-r // b) for r in runs)
    workers = len(others) + 1
    if tasks > _SIMULATED:  # the average load plus a last task
        work = a + c * first + sum(others) + tasks * a + c * sum(runs)
        return max(work / workers + a + c * b, a + c * first)
    end = a + c * first  # the runs' end: not the other tasks in flight, which may be another trial's
    free = [end, *others]
    heapq.heapify(free)
    for r in runs:
        full, part = divmod(r, b)
        for k in [b] * full + ([part] if part else []):
            done = heapq.heappop(free) + a + c * k
            end = max(end, done)
            heapq.heappush(free, done)
    return end


def _candidates(high: int) -> list[int]:
    """Batch sizes to compare: 1..8, then a geometric ladder (ratio ~1.2) up to ``high``, and ``high``."""
    sizes = set(range(1, min(high, 8) + 1))
    b = 8.0
    while b < high:
        b *= 1.2
        sizes.add(min(math.ceil(b), high))
    sizes.add(high)
    return sorted(sizes)


@dataclass(frozen=True, slots=True)
class RunsTask:
    """Make the runs ``runs`` of job ``job`` (an index into the queue's jobs)."""

    job: int
    runs: range


@dataclass(frozen=True, slots=True)
class TrialTask:
    """Play job ``job``'s trial (its runs, if any, were handed out as :class:`RunsTask`s and are done)."""

    job: int


@dataclass
class _JobState:
    runs: int  # separate runs of the trial (0: the trial is one task)
    handed: int = 0  # runs handed out so far (runs [0, handed) are in tasks)
    in_flight: int = 0  # run tasks handed out and not finished
    taken: bool = False  # the trial task was handed out
    dropped: bool = False


class WorkQueue:
    """The run's tasks in order: whole trials while there are enough to give every worker one, then each of the
    last trials as its run tasks followed by the trial once they are all done.

    ``take`` hands out the next task that can start.  While at least as many trials are untouched as there are
    workers, that is the next trial whole (it makes its own runs: splitting it would add only the hand-over, its
    runs' reads from the cache); once fewer are left, each is split, its run tasks first, its trial when they are
    done; and while a trial waits for its run tasks, the next jobs' tasks are handed out (so no worker idles
    while one trial's last batch is made).  Never more run tasks are out at a time than there are workers, so
    that each batch is sized when a worker is free for it.  A job that ``skip`` says is no longer needed, when its
    turn comes, is dropped whole.

    Parameters
    ----------
    jobs : sequence
        The runner's jobs, in the order to play them.
    runs : callable
        A job's separate runs (0: none).
    key : callable
        A job's batch-sizing group (its grid point): jobs of one key share a :class:`BatchSizer`.
    limit : callable
        A job's most runs per task.
    n_workers : int
    skip : callable
    clock : callable, default=time.monotonic
        Seconds, for how long the run tasks out have been running (a simulation passes its own).
    """

    def __init__(
        self,
        jobs: Sequence[Any],
        *,
        runs: Callable[[Any], int],
        key: Callable[[Any], Hashable],
        limit: Callable[[Any], int],
        n_workers: int,
        skip: Callable[[Any], bool] = lambda job: False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.jobs = list(jobs)
        self._state = [_JobState(max(int(runs(job)), 0)) for job in self.jobs]
        self._key = [key(job) for job in self.jobs]
        self._sizers: dict[Hashable, BatchSizer] = {}
        for job, k in zip(self.jobs, self._key, strict=True):
            if k not in self._sizers:
                self._sizers[k] = BatchSizer(n_workers=max(n_workers, 1), limit=max(int(limit(job)), 1))
        self._skip = skip
        self.n_workers = max(n_workers, 1)
        self._next = 0  # jobs before this one are all handed out (or dropped)
        self._out: dict[RunsTask, float] = {}  # run tasks handed out and not finished: when
        self._clock = clock

    def set_workers(self, n_workers: int) -> None:
        """The workers the tasks share from now on (a cluster's, as its workers join or leave)."""
        self.n_workers = max(n_workers, 1)
        for sizer in self._sizers.values():
            sizer.n_workers = self.n_workers

    def __len__(self) -> int:
        """The jobs not yet handed out whole."""
        return sum(1 for s in self._state[self._next :] if not (s.taken or s.dropped))

    def take(self, most: int | None = None) -> RunsTask | TrialTask | None:
        """The next task that can start, or ``None`` when none can now (all handed out, or waiting on runs); a run
        task of at most ``most`` runs, when given."""
        for j in range(self._next, len(self.jobs)):
            state = self._state[j]
            if state.taken or state.dropped:
                if j == self._next:
                    self._next += 1
                continue
            if state.handed == 0 and state.in_flight == 0 and self._skip(self.jobs[j]):
                state.dropped = True
                if j == self._next:
                    self._next += 1
                continue
            if state.handed == 0 and state.runs and self._fresh() >= self.n_workers:
                # whole trials enough to give every worker one: the trial makes its own runs (handing them over
                # through the cache would only add its reads); the last trials are split, to fill the workers
                state.taken = True
                return TrialTask(j)
            if state.handed < state.runs:
                # no more run tasks out than workers: the next batch is sized when a worker is free for it, from
                # every batch timed by then (handed out ahead, batches were sized before the fit could see them)
                return self._runs_task(j, most) if len(self._out) < self.n_workers else None
            if state.in_flight == 0:
                state.taken = True
                return TrialTask(j)
        return None

    def splits_next(self) -> bool:
        """Whether the next task would be a batch of runs (a trial that is split from the start)."""
        for j in range(self._next, len(self.jobs)):
            state = self._state[j]
            if not (state.taken or state.dropped):
                return bool(state.runs) and (state.handed > 0 or self._fresh() < self.n_workers)
        return False

    def _fresh(self) -> int:
        """The jobs nothing of which was handed out yet (the whole trials left)."""
        return sum(1 for s in self._state[self._next :] if not (s.taken or s.dropped or s.handed))

    def _runs_task(self, j: int, most: int | None) -> RunsTask:
        state = self._state[j]
        sizer = self._sizers[self._key[j]]
        remaining = [state.runs - state.handed] + [
            s.runs - s.handed
            for i, s in enumerate(self._state)
            if i != j and self._key[i] == self._key[j] and not (s.taken or s.dropped)
        ]
        size = sizer.size(remaining, self._busy())
        size = size if most is None else max(1, min(size, most))
        task = RunsTask(j, range(state.handed, state.handed + size))
        state.handed += size
        state.in_flight += 1
        self._out[task] = self._clock()
        return task

    def _busy(self) -> list[float]:
        """How long each run task out still takes, as its point's fit predicts (those of a point without a fit
        yet: not counted)."""
        now, busy = self._clock(), []
        for task, start in self._out.items():
            cost = self._sizers[self._key[task.job]].cost()
            if cost is not None:
                busy.append(max(cost[0] + cost[1] * len(task.runs) - (now - start), 0.0))
        return busy

    def finished(self, task: RunsTask, seconds: float | None) -> None:
        """A run task ended: ``seconds`` it took where it ran, or ``None`` when it failed (its trial then makes
        the runs it finds missing, and reports the error)."""
        self._state[task.job].in_flight -= 1
        self._out.pop(task, None)
        if seconds is not None:
            self._sizers[self._key[task.job]].observe(len(task.runs), seconds)

    def again(self, task: TrialTask) -> None:
        """Hand the trial task out again (its worker died under it).  A run task whose worker died is only
        :meth:`finished` without a time: its trial makes the runs it finds missing."""
        self._state[task.job].taken = False
        self._next = min(self._next, task.job)
