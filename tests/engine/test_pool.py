"""The local worker pool: ``privgame run`` starts its workers before it plans the run, the run takes them (no second
start), a run that needs none ends them, and the configs it must not start them for (plugins, a dry run, Dask,
one worker, an unreadable file) start nothing."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from privgame.engine import cli, pool, runner
from privgame.engine.cli import main


@pytest.fixture
def pools(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Every executor :func:`pool.executor` returns, in order (the pre-started one first, where there is one)."""
    seen: list[Any] = []
    make = pool.executor

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(make(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(pool, "executor", spy)
    yield seen
    pool.dismiss()
    for executor in seen:
        executor.shutdown(wait=True, kill_workers=True)


def _args(config: Path, **given: Any) -> argparse.Namespace:
    values = {"config": str(config), "dry_run": False, "dask_scheduler": None, "cluster": None, "n_jobs": 2, **given}
    return argparse.Namespace(**values)


LIRA = (
    '[experiment]\nname = "pool"\nseed = 4\n[game]\nname = "lira"\npool_size = 200\nn_models = 8\nn_boot = 40\n'
    '[mechanism]\nname = "logistic-regression"\nepochs = 2\nbatch_size = 50\n[attack]\nname = "lira"\n'
)


def test_a_split_run_plays_on_the_workers_started_before_it_was_planned(tmp_path, pools, monkeypatch):
    monkeypatch.setattr(runner, "PARENT_PLAYS_WHILE_WORKERS_START", False)
    config = tmp_path / "lira.toml"
    config.write_text(LIRA)
    assert main(["run", str(config), "--out", str(tmp_path / "out"), "--no-progress", "--n-jobs", "2"]) == 0
    # the CLI's early start, then the runner's pool (and any pool it restarts): one and the same executor
    assert len(pools) >= 2 and all(p is pools[0] for p in pools)
    assert pools[0]._flags.shutdown  # ended with the run


def test_a_run_played_in_the_parent_ends_the_early_workers_before_it_plays(tmp_path, pools, write_config, monkeypatch):
    play = runner._run_in_parent
    seen: list[Any] = []

    def played(*args: Any, **kwargs: Any) -> Any:
        seen.append((pool._prestarted, pools[0]._flags.shutdown))
        return play(*args, **kwargs)

    monkeypatch.setattr(runner, "_run_in_parent", played)
    config = write_config({"experiment": {"repetitions": 1}, "mechanism": {"epsilon": 1.0}})
    assert main(["run", str(config), "--out", str(tmp_path / "out"), "--no-progress", "--n-jobs", "2"]) == 0
    assert len(pools) == 1 and seen == [(None, True)]


def test_a_run_that_stops_before_it_starts_ends_the_early_workers(tmp_path, pools, write_config):
    config = write_config()
    (tmp_path / "taken").write_text("a file, not a results directory")
    assert main(["run", str(config), "--out", str(tmp_path / "taken"), "--no-progress", "--n-jobs", "2"]) != 0
    assert len(pools) == 1 and pools[0]._flags.shutdown and pool._prestarted is None


@pytest.mark.parametrize(
    "text, given",
    [
        ('[experiment]\nname = "x"\nplugins = ["my_plugin"]\n', {}),  # each worker imports them, once checked
        (None, {"dry_run": True}),
        (None, {"dask_scheduler": "local"}),
        (None, {"cluster": "slurm"}),
        (None, {"n_jobs": 1}),
        ("[experiment\n", {}),  # not TOML: loading it says why
        (b"\xff\xfe", {}),  # not UTF-8
        ("[game]\n", {}),  # no [experiment]: loading it says why
    ],
)
def test_what_starts_no_early_worker(tmp_path, pools, write_config, text, given):
    config = write_config()
    if isinstance(text, bytes):
        config.write_bytes(text)
    elif text is not None:
        config.write_text(text)
    cli._prestart_workers(_args(config, **given))
    assert pools == [] and pool._prestarted is None


def test_a_config_that_is_not_a_regular_file_starts_no_worker_and_is_not_read_as_one(tmp_path, pools):
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    cli._prestart_workers(_args(fifo))  # returns at once: a FIFO is refused, never waited on
    cli._prestart_workers(_args(tmp_path / "missing.toml"))
    cli._prestart_workers(_args(tmp_path))
    assert pools == []


def test_every_core_is_the_workers_of_n_jobs_minus_one():
    import joblib

    assert pool.workers(-1) == joblib.cpu_count() and pool.workers(3) == 3


def test_take_and_dismiss_without_early_workers_do_nothing():
    assert pool._prestarted is None
    assert pool.take() is False
    pool.dismiss()


def test_importing_the_pool_imports_no_heavy_library():
    """The CLI imports it to start the workers before anything heavy is loaded."""
    heavy = ("torch", "sklearn", "numba", "scipy", "pandas", "matplotlib", "privgame.engine.runner", "joblib")
    code = (
        f"import json, sys\nimport privgame.engine.pool\nprint(json.dumps([m for m in {heavy!r} if m in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout) == []
