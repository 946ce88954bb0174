"""Each worker's thread pools (``privgame.engine.threads``): cores // workers per pool, a user's size kept, and a
module light enough to import before numpy loads (``benchmarks/bench_scaling.py`` does)."""

from __future__ import annotations

import subprocess
import sys

import joblib

from privgame.engine.threads import THREAD_VARS, worker_env


def test_each_pool_gets_the_cores_shared_among_the_workers_and_never_none(monkeypatch):
    for var in THREAD_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(joblib, "cpu_count", lambda: 16)
    env = worker_env(4)
    assert {env[var] for var in THREAD_VARS} == {"4"} and set(THREAD_VARS) <= set(env)
    assert {worker_env(32)[var] for var in THREAD_VARS} == {"1"}  # more workers than cores: one thread each


def test_a_size_the_user_set_is_kept(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.setenv("ENABLE_IPC", "0")
    env = worker_env(1)
    assert env["OMP_NUM_THREADS"] == "3" and env["ENABLE_IPC"] == "0"


def test_importing_it_loads_neither_numpy_nor_joblib():
    code = (
        "import sys, privgame.engine.threads; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'joblib'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
