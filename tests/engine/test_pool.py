"""The local worker pool (privgame.engine.pool): its module imports nothing heavy, n_jobs = -1 is every core, and a
run's workers are made by it (one executor for the whole run)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from privgame.engine import pool, runner
from privgame.engine.cli import main


@pytest.fixture
def pools(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Every executor :func:`pool.executor` returns, in order."""
    seen: list[Any] = []
    make = pool.executor

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(make(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(pool, "executor", spy)
    yield seen
    for executor in seen:
        executor.shutdown(wait=True, kill_workers=True)


LIRA = (
    '[experiment]\nname = "pool"\nseed = 4\n[game]\nname = "lira"\npool_size = 200\nn_models = 8\nn_boot = 40\n'
    '[mechanism]\nname = "logistic-regression"\nepochs = 2\nbatch_size = 50\n[attack]\nname = "lira"\n'
)


def test_a_split_run_plays_on_one_pool_of_privgame_workers_ended_with_the_run(tmp_path, pools, monkeypatch):
    monkeypatch.setattr(runner, "PARENT_PLAYS_WHILE_WORKERS_START", False)
    config = tmp_path / "lira.toml"
    config.write_text(LIRA)
    assert main(["run", str(config), "--out", str(tmp_path / "out"), "--no-progress", "--n-jobs", "2"]) == 0
    assert len(pools) == 1 and pools[0]._max_workers == 2 and pools[0]._flags.shutdown
    assert pools[0]._initializer is pool.init_worker


def test_every_core_is_the_workers_of_n_jobs_minus_one():
    import joblib

    assert pool.workers(-1) == joblib.cpu_count() and pool.workers(3) == 3


def test_importing_the_pool_imports_no_heavy_library():
    heavy = ("torch", "sklearn", "numba", "scipy", "pandas", "matplotlib", "privgame.engine.runner", "joblib")
    code = (
        f"import json, sys\nimport privgame.engine.pool\nprint(json.dumps([m for m in {heavy!r} if m in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(done.stdout) == []
