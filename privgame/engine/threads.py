"""The thread pools of a worker process: how many threads torch, the BLAS libraries and numba may start in it.

n workers on one machine each running torch or BLAS with a thread per core would oversubscribe it n times, so each
gets ``cores // n_workers`` threads per pool through the environment variables these libraries read when they load
(:data:`THREAD_VARS`, as joblib's loky backend sets them), unless the user set a size.  This module imports nothing
heavy: ``benchmarks/bench_scaling.py`` sets the same variables before numpy loads.
"""

from __future__ import annotations

import os

__all__ = ["THREAD_VARS", "worker_env"]

#: the variables that size the thread pools of OpenMP (torch), the BLAS libraries, numba and numexpr
THREAD_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMBA_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def worker_env(n_workers: int) -> dict[str, str]:
    """Environment of ``n_workers`` workers on this machine: ``cores // n_workers`` threads per pool (unless the
    user set a size), so that n workers running torch or BLAS do not each start a thread per core."""
    import joblib

    threads = str(max(joblib.cpu_count() // n_workers, 1))
    env = {var: os.environ.get(var, threads) for var in THREAD_VARS}
    env.setdefault("ENABLE_IPC", os.environ.get("ENABLE_IPC", "1"))  # TBB schedulers coordinate across processes
    return env
