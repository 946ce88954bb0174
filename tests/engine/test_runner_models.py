"""Models as tasks: a LiRA trial's models made as batches on every worker, the same rows as one process, and a
killed run that resumes model by model."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privgame.core.cache import ArtefactCache
from privgame.engine import runner, tasks
from privgame.engine.config import load_config
from privgame.engine.runner import run_experiment
from privgame.engine.store import ResultsStore, drop_timings
from privgame.games._base import TrialContext
from tests.conftest import model_entries

LIRA = """
[experiment]
name = "lira_tasks"
seed = 3
repetitions = {repetitions}
[game]
name = "lira"
data = "adult"
pool_size = 200
n_models = {models}
n_boot = 40
[mechanism]
name = "{mechanism}"
epochs = {epochs}
[attack]
name = "lira"
"""


def _config(tmp_path: Path, *, models: int = 16, repetitions: int = 1, mechanism: str = "mlp", epochs: int = 2) -> Path:
    path = tmp_path / "lira.toml"
    text = LIRA.format(models=models, repetitions=repetitions, mechanism=mechanism, epochs=epochs)
    path.write_text(text)
    return path


def _run(path: Path, out: Path, n_jobs: int, cache: Path | None) -> ResultsStore:
    return run_experiment(
        load_config(path),
        out,
        config_bytes=path.read_bytes(),
        n_jobs=n_jobs,
        progress=False,
        cache=None if cache is None else ArtefactCache(cache),
    )


def _assert_same(a: ResultsStore, b: ResultsStore) -> None:
    pd.testing.assert_frame_equal(a.rows().pipe(drop_timings), b.rows().pipe(drop_timings))
    for trial in a.done():
        oa, ob = a.load_outcome(trial), b.load_outcome(trial)
        np.testing.assert_array_equal(oa.scores, ob.scores)
        for name in oa.arrays:
            np.testing.assert_array_equal(oa.arrays[name], ob.arrays[name])


def _models_in(cache: Path) -> int:
    return len(model_entries(cache))


@pytest.fixture
def run_tasks(monkeypatch):
    """The workers take every task (the parent plays nothing), and every run task that ends is recorded."""
    monkeypatch.setattr(runner, "PARENT_PLAYS_WHILE_WORKERS_START", False)
    ended: list[tasks.RunsTask] = []
    original = tasks.WorkQueue.finished

    def finished(self, task, seconds):
        ended.append(task)
        return original(self, task, seconds)

    monkeypatch.setattr(tasks.WorkQueue, "finished", finished)
    return ended


@pytest.mark.parametrize("mechanism", ["mlp", "logistic-regression"])
def test_one_trial_s_models_are_tasks_on_both_workers_with_the_rows_of_one_process(tmp_path, run_tasks, mechanism):
    path = _config(tmp_path, mechanism=mechanism)
    alone = _run(path, tmp_path / "alone", 1, None)  # one process, no cache: the trial trains its 16 models itself
    spread = _run(path, tmp_path / "spread", 2, tmp_path / "cache")
    _assert_same(alone, spread)
    # the models were made by several tasks of several sizes (probes 1, 2, 4, ...), each model once
    made = sorted(k for task in run_tasks for k in task.runs)
    assert made == list(range(16)) and len(run_tasks) >= 3 and len({len(t.runs) for t in run_tasks}) >= 2
    assert _models_in(tmp_path / "cache") == 16
    # in one process with the same cache the trial reads every model, and the rows are the same again
    again = _run(path, tmp_path / "again", 1, tmp_path / "cache")
    _assert_same(alone, again)
    assert _models_in(tmp_path / "cache") == 16


def test_whole_trials_while_every_worker_gets_one_and_no_cache_means_no_run_task(tmp_path, run_tasks):
    path = _config(tmp_path, models=8, repetitions=3)
    spread = _run(path, tmp_path / "spread", 2, tmp_path / "cache")
    # trials 0 and 1 whole (one per worker), the last one split to fill the workers
    assert sorted((t.job, k) for t in run_tasks for k in t.runs) == [(2, k) for k in range(8)]
    run_tasks.clear()
    uncached = _run(path, tmp_path / "uncached", 2, None)  # nowhere to hand models over: each trial trains its own
    assert run_tasks == []
    _assert_same(spread, uncached)


def test_models_made_before_are_read_and_only_the_rest_are_trained(tmp_path, run_tasks):
    """The state a kill leaves: half the trial's models in the cache.  The run trains only the other half."""
    path = _config(tmp_path)
    config = load_config(path)
    point = config.grid[0]
    from privgame.engine.plan import plan_trials

    trial = plan_trials(config)[0]
    cache = ArtefactCache(tmp_path / "cache")
    point.game.make_runs(point.mechanism, point.attack, seed=trial.seed, runs=range(0, 8), context=TrialContext(cache))
    assert _models_in(tmp_path / "cache") == 8
    resumed = _run(path, tmp_path / "resumed", 2, tmp_path / "cache")
    assert _models_in(tmp_path / "cache") == 16
    _assert_same(resumed, _run(path, tmp_path / "fresh", 1, None))


def test_make_runs_refuses_runs_outside_the_trial(tmp_path):
    config = load_config(_config(tmp_path))
    point = config.grid[0]
    seed = np.random.SeedSequence(1)
    for runs in (range(0), range(-1, 2), range(10, 17), range(0, 4, 2)):
        with pytest.raises(ValueError, match=r"runs must be a non-empty range of model indices in \[0, 16\)"):
            point.game.make_runs(point.mechanism, point.attack, seed=seed, runs=runs, context=TrialContext())


def test_a_game_that_makes_no_run_apart_says_so():
    from privgame.games.one_run import OneRunGame
    from privgame.mechanisms.randomized_response import RandomizedResponse

    game = OneRunGame(m=100, k_pos=5, k_neg=5)
    mechanism = RandomizedResponse(epsilon=1.0)
    assert game.separate_runs(mechanism, None) == 0  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError, match="game 'one-run' makes no run apart from its trial"):
        game.make_runs(mechanism, None, seed=np.random.SeedSequence(1), runs=range(1), context=TrialContext())  # type: ignore[arg-type]


@pytest.mark.slow
def test_a_run_killed_after_half_its_models_resumes_model_by_model(tmp_path):
    """``privgame run --n-jobs 2`` is SIGKILLed (its whole process group, workers included) once half of the
    trial's 32 models are in the cache; the resumed run trains only the others, and its rows are the
    uninterrupted run's."""
    path = _config(tmp_path, models=32, epochs=40)
    cache = tmp_path / "cache"
    command = [sys.executable, "-m", "privgame.engine.cli", "run", str(path), "--n-jobs", "2", "--no-progress"]
    process = subprocess.Popen(
        [*command, "--out", str(tmp_path / "killed"), "--cache-dir", str(cache)],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 300
    while _models_in(cache) < 16 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    made = _models_in(cache)
    assert 16 <= made < 32, f"killed with {made} of 32 models made (the run must be killed in the middle)"
    store = ResultsStore(tmp_path / "killed")
    assert store.done() == set()  # the trial itself never finished
    before = model_entries(cache)
    finished = subprocess.run(
        [*command, "--out", str(tmp_path / "killed"), "--cache-dir", str(cache)], capture_output=True, text=True
    )
    assert finished.returncode == 0, finished.stderr
    new = model_entries(cache) - before
    assert len(new) == 32 - made  # only the models the kill had not made
    _assert_same(ResultsStore(tmp_path / "killed"), _run(path, tmp_path / "whole", 1, None))


MULTI_RUN = """
[experiment]
name = "multi_run_tasks"
seed = 4
repetitions = 1
[game]
name = "multi-run"
runs = 12
thresholds = 10
data = "digits"
train_rows = 120
[mechanism]
name = "dpsgd-whitebox"
noise_multiplier = 1.0
sampling_rate = 0.2
steps = 8
learning_rate = 0.5
[attack]
name = "identity"
"""


def test_a_dpsgd_multi_run_trial_s_models_are_tasks_with_the_rows_of_one_process(tmp_path, run_tasks):
    path = tmp_path / "multi.toml"
    path.write_text(MULTI_RUN)
    alone = _run(path, tmp_path / "alone", 1, None)
    spread = _run(path, tmp_path / "spread", 2, tmp_path / "cache")
    assert sorted(k for t in run_tasks for k in t.runs) == list(range(12))
    _assert_same(alone, spread)
    assert _models_in(tmp_path / "cache") == 12
