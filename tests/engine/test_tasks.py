"""Models as tasks: the batch sizes chosen from measured cost and the order in which a run's tasks are handed out."""

from __future__ import annotations

import math

import pytest

from privgame.engine.tasks import BatchSizer, RunsTask, TrialTask, WorkQueue


def test_the_sizer_probes_doubling_sizes_until_two_sizes_are_timed():
    sizer = BatchSizer(n_workers=2, limit=64)
    assert [sizer.size([1000]) for _ in range(5)] == [1, 2, 4, 8, 16]
    assert sizer.fit() is None
    sizer.observe(4, 1.0)
    sizer.observe(4, 1.2)
    assert sizer.fit() is None  # one size says nothing of the slope
    sizer.observe(8, 1.4)
    a, c = sizer.fit()  # seconds = 0.6 + 0.1 b, least squares through (4, 1.1) and (8, 1.4)
    assert c == pytest.approx(0.075) and a == pytest.approx(0.8)


def test_probes_never_exceed_a_worker_s_share_or_the_limit():
    sizer = BatchSizer(n_workers=2, limit=3)
    assert [sizer.size([40]) for _ in range(4)] == [1, 2, 3, 3]  # the limit
    sizer = BatchSizer(n_workers=2, limit=64)
    assert [sizer.size([16]) for _ in range(5)] == [1, 2, 4, 4, 4]  # 16 runs / (2 per worker × 2 workers)
    assert BatchSizer(n_workers=1, limit=64).size([1]) == 1


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
    assert free.size([64]) == 1  # as fast as any size: the smallest (a kill loses least, balance is best)
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
    rest = []
    while (more := work.take()) is not None:
        rest.append(more)
    assert [k for t in [task, *rest] for k in t.runs] == list(range(6))
    for t in [task, *rest]:
        work.finished(t, 1.0)
    assert work.take() == TrialTask(2) and work.take() is None
    assert [type(_queue([6], n_workers=1).take())] == [TrialTask]  # one worker: never split


def test_a_trial_is_handed_out_after_all_its_run_tasks_end_and_others_fill_the_wait():
    work = _queue([4, 0, 2], n_workers=4)  # fewer trials than workers: every one with runs is split
    tasks = []
    while (task := work.take()) is not None:
        tasks.append(task)
    # job 0's runs (probes of 1: a worker's share of the 6 runs on 4 workers), job 1 at once (no runs), job 2's runs
    assert [t.job for t in tasks] == [0, 0, 0, 0, 1, 2, 2]
    assert all(isinstance(t, RunsTask) for t in tasks if t.job != 1) and tasks[4] == TrialTask(1)
    covered = [k for t in tasks if isinstance(t, RunsTask) and t.job == 0 for k in t.runs]
    assert covered == [0, 1, 2, 3]  # every run once, in order
    assert len(work) == 2  # jobs 0 and 2 wait on their runs
    for t in tasks[:3]:
        work.finished(t, 1.0)
    assert work.take() is None  # job 0's last task is still out
    work.finished(tasks[3], None)  # failed: the trial makes the runs itself
    assert work.take() == TrialTask(0)
    for t in tasks[5:]:
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
