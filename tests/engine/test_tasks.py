"""Models as tasks: the batch sizes chosen from measured cost and the order in which a run's tasks are handed out."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privgame.engine.tasks import BatchSizer, RunsTask, TrialTask, WorkQueue


def test_until_two_sizes_are_timed_a_task_takes_half_a_worker_s_share_of_what_is_left():
    sizer = BatchSizer(n_workers=2, limit=64)
    assert sizer.size([100]) == 25  # 100 runs, 2 workers: 25 (each worker twice, shrinking as the runs go)
    assert sizer.size([75]) == 19 and sizer.size([3]) == 1 and sizer.size([1]) == 1
    assert sizer.size([10, 90]) == 10  # the point's other trials count, but never more than this one has left
    assert sizer.size([1000]) == 64  # the limit
    assert BatchSizer(n_workers=2, limit=3).size([40]) == 3
    assert BatchSizer(n_workers=1, limit=64).size([1]) == 1
    assert sizer.fit() is None
    sizer.observe(4, 1.0)
    sizer.observe(4, 1.2)
    assert sizer.fit() is None and sizer.size([100]) == 25  # one size says nothing of the slope
    sizer.observe(8, 1.4)
    a, c = sizer.fit()  # seconds = 0.8 + 0.075 b, least squares through (4, 1.0), (4, 1.2) and (8, 1.4)
    assert c == pytest.approx(0.075) and a == pytest.approx(0.8)


def test_the_fit_is_the_least_squares_line_of_every_timed_task():
    sizer = BatchSizer(n_workers=2, limit=64, timed=[(1, 2.0), (3, 4.5)])
    rng = np.random.default_rng(0)
    for size in rng.integers(1, 64, size=200):
        sizer.observe(int(size), 0.3 + 0.05 * int(size) + float(rng.normal(0, 0.01)))
    sizes, seconds = np.array(sizer.timed, dtype=float).T
    c, a = np.polyfit(sizes, seconds, 1)
    assert sizer.fit() == pytest.approx((a, c), rel=1e-9)


def test_a_negative_slope_or_intercept_from_noise_is_clipped_and_bad_timings_are_ignored():
    sizer = BatchSizer(n_workers=2, limit=64)
    for size, seconds in ((2, 1.0), (8, 0.5), (4, math.nan), (0, 1.0), (3, -1.0), (16, math.inf)):
        sizer.observe(size, seconds)
    assert sizer.timed == [(2, 1.0), (8, 0.5)]
    a, c = sizer.fit()
    assert c == pytest.approx(1e-9) and a >= 0


def test_a_large_fixed_cost_gives_one_batch_per_worker_and_none_gives_small_batches():
    fixed = BatchSizer(n_workers=2, limit=64, timed=[(1, 1.0), (2, 1.01)])  # a = 0.99 s, c = 0.01 s
    assert fixed.size([64]) == 32  # two tasks of 32: every worker once, the fixed cost paid twice
    # four such trials share the workers: one task per trial pays the fixed cost least (2 rounds of 1.63 s)
    assert fixed.size([64, 64, 64, 64]) == 64
    free = BatchSizer(n_workers=2, limit=64, timed=[(1, 0.1), (2, 0.2)])  # each run its own cost, nothing shared
    # every size within 5 % of the fastest but one run a task, which pays the dispatch (DISPATCH, 10 ms) 32 times
    # on each worker: the smallest of the others (a kill loses least, balance is best)
    assert free.size([64]) == 2
    limited = BatchSizer(n_workers=2, limit=8, timed=[(1, 1.0), (2, 1.01)])
    assert limited.size([64]) == 8
    assert fixed.size([5]) == 3 and fixed.size([1]) == 1  # never more than the trial has left


def _queue(runs, n_workers=2, skip=lambda job: False, limit=64):
    jobs = [(f"job{i}", r) for i, r in enumerate(runs)]
    return WorkQueue(
        jobs, runs=lambda job: job[1], key=lambda job: 0, limit=lambda job: limit, n_workers=n_workers, skip=skip
    )


def test_whole_trials_while_every_worker_can_have_one_then_the_last_ones_split():
    work = _queue([6, 6, 6], n_workers=2)
    assert work.take() == TrialTask(0)  # three untouched trials for two workers: whole
    assert work.take() == TrialTask(1)  # two for two: whole
    task = work.take()
    assert isinstance(task, RunsTask) and task.job == 2  # one left for two workers: its runs fill them
    out = [task, work.take()]
    assert isinstance(out[1], RunsTask) and work.take() is None  # never more run tasks out than workers
    done = []
    while out:
        finished = out.pop(0)
        done.append(finished)
        if isinstance(finished, RunsTask):
            work.finished(finished, 1.0)
        if (more := work.take()) is not None:
            out.append(more)
    assert [k for t in done[:-1] for k in t.runs] == list(range(6)) and done[-1] == TrialTask(2)
    assert work.take() is None
    assert [type(_queue([6], n_workers=1).take())] == [TrialTask]  # one worker: never split


def test_a_trial_is_handed_out_after_all_its_run_tasks_end_and_others_fill_the_wait():
    work = _queue([4, 0, 2], n_workers=4)  # fewer trials than workers: every one with runs is split
    tasks = []
    while (task := work.take()) is not None:
        tasks.append(task)
    # job 0's runs (1 each: half a worker's share of the point's 6 runs on 4 workers), then job 1 (no runs); job 2's
    # runs wait for a worker: four run tasks are out
    assert [t.job for t in tasks] == [0, 0, 0, 0, 1]
    assert all(isinstance(t, RunsTask) for t in tasks[:4]) and tasks[4] == TrialTask(1)
    covered = [k for t in tasks[:4] for k in t.runs]
    assert covered == [0, 1, 2, 3]  # every run once, in order
    assert len(work) == 2  # jobs 0 and 2 wait on their runs
    for t in tasks[:3]:
        work.finished(t, 1.0)
    more = [work.take(), work.take()]
    assert [(t.job, t.runs) for t in more] == [(2, range(0, 1)), (2, range(1, 2))]  # job 2's, as workers free up
    assert work.take() is None  # job 0's last task is still out, and job 2's runs are all handed out
    work.finished(tasks[3], None)  # failed: the trial makes the runs itself
    assert work.take() == TrialTask(0)
    for t in more:
        work.finished(t, 2.0)
    assert work.take() == TrialTask(2)
    assert work.take() is None and len(work) == 0


def test_a_skipped_job_is_dropped_whole_when_its_turn_comes_and_a_lost_trial_is_handed_out_again():
    skipped = {1}
    work = _queue([0, 3, 0], skip=lambda job: int(job[0][3:]) in skipped)
    assert work.take() == TrialTask(0)
    assert work.take() == TrialTask(2)  # job 1 dropped, none of its runs made
    assert work.take() is None and len(work) == 0
    work.again(TrialTask(0))  # its worker died
    assert len(work) == 1 and work.take() == TrialTask(0)


def test_jobs_without_runs_are_plain_trials_in_order():
    work = _queue([0, 0, 0])
    assert [work.take() for _ in range(4)] == [TrialTask(0), TrialTask(1), TrialTask(2), None]


def test_splits_next_says_whether_the_next_task_is_a_batch_of_runs():
    assert _queue([6], n_workers=2).splits_next()  # one trial, two workers: split from the start
    assert not _queue([6, 6], n_workers=2).splits_next()  # a whole trial for each worker first
    assert not _queue([0], n_workers=2).splits_next() and not _queue([], n_workers=2).splits_next()
    work = _queue([6, 6, 6], n_workers=2)
    assert not work.splits_next()
    work.take()
    work.take()
    assert work.splits_next()  # the last trial: split
    first = work.take()
    assert isinstance(first, RunsTask) and work.splits_next()  # its batches go on until every run is handed out


def test_take_caps_a_batch_at_most_runs_and_set_workers_resizes_the_batches():
    work = _queue([64], n_workers=2)
    assert work.take(most=1) == RunsTask(0, range(0, 1))
    assert work.take() == RunsTask(0, range(1, 17))  # half a worker's share of the 63 left, two workers
    work.set_workers(8)
    assert work.take() == RunsTask(0, range(17, 20))  # ⌈47 / (2 × 8)⌉: half a share of eight workers


def test_a_batch_is_sized_to_end_with_the_batches_in_flight():
    """Fitted a = 0.2 s, c = 0.03 s a run; 15 runs left on two workers.  With the other worker free, half each
    (8 and 7) ends first; with it busy for another 0.45 s, this worker takes more: all 15 would end at 0.66 s,
    14 here and 1 there at 0.69 s (within 5 %: the smaller), 11 and 4 only at 0.78 s."""
    sizer = BatchSizer(n_workers=2, limit=64, timed=[(9, 0.47), (7, 0.41)])
    a, c = sizer.fit()
    assert a == pytest.approx(0.2) and c == pytest.approx(0.03)
    assert sizer.size([15]) == 8
    assert sizer.size([15], busy=[0.45]) == 14
    assert sizer.size([15], busy=[5.0]) == 15  # the other worker is busy for longer than all of it takes here


def test_the_queue_tells_the_sizer_how_long_the_run_tasks_out_still_take():
    now = [0.0]
    jobs = [("job0", 64)]
    work = WorkQueue(
        jobs, runs=lambda job: job[1], key=lambda job: 0, limit=lambda job: 64, n_workers=2, clock=lambda: now[0]
    )
    first, second = work.take(), work.take()
    assert (len(first.runs), len(second.runs)) == (16, 12)  # guided, before a fit
    work.finished(first, 0.6)  # 16 runs: 0.2 + 0.025 * 16
    work.finished(second, 0.5)  # 12 runs: 0.2 + 0.025 * 12
    third = work.take()
    now[0] = 0.1
    assert work._busy() == pytest.approx([0.2 + 0.01 + 0.025 * len(third.runs) - 0.1])  # predicted, less 0.1 s
    fourth = work.take()
    assert len(third.runs) + len(fourth.runs) == 36 and work.take() is None  # two out: as many as workers
