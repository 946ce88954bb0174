"""The local worker pool: the loky processes ``privgame run --n-jobs N`` plays on, their set-up, and their early start.

The runner (:func:`privgame.engine.runner._run_local`) drives loky's reusable executor itself; this module makes
it (:func:`executor`: the workers' thread-pool sizes, :func:`init_worker`) and may start it before the run is
planned (:func:`prestart`).

A worker's start-up (the interpreter, then the runner's imports: pandas, the games, about 0.5 s of one core) costs
what the parent spends before its run starts (its own imports, the config's components, the plan).  Started by
the runner, the workers only begin it once the parent is done, so on a machine whose cores the workers fill one
core idles for that long, before the first task.  ``privgame run`` therefore starts them first
(:func:`prestart`, from :mod:`privgame.engine.cli`, before it imports the config's modules), where the run can only
be a local one of several workers and the config names no plugins (those are imported by each worker's
initializer, once the parent has checked them).  A run that ends up needing no worker (a single trial played in
the parent, every trial already stored, an error) ends the pool it did not take (:func:`dismiss`).

This module imports nothing heavy, so that the CLI can start the workers before its own imports.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from typing import Any

from privgame.engine.threads import worker_env

__all__ = ["dismiss", "executor", "init_worker", "prestart", "take", "worker_ready", "workers"]

_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
#: seconds an idle worker waits for a task before loky ends it
IDLE_TIMEOUT = 300
_prestarted: Any = None  # the executor prestart started, until a run takes it or it is dismissed


def workers(n_jobs: int) -> int:
    """The workers ``n_jobs`` asks for: every core for -1 (joblib's count, which heeds CPU affinity and quotas)."""
    import joblib

    return joblib.cpu_count() if n_jobs == -1 else n_jobs


def executor(n_workers: int, plugins: tuple[str, ...] = ()) -> Any:
    """Loky's reusable executor of ``n_workers`` privgame workers (:func:`init_worker` with ``plugins``, the thread
    pools of :func:`privgame.engine.threads.worker_env`): the running one when it was made with the same
    arguments, else a fresh one (loky ends the other)."""
    from joblib.externals.loky import get_reusable_executor

    return get_reusable_executor(
        max_workers=n_workers,
        timeout=IDLE_TIMEOUT,
        initializer=init_worker,
        initargs=(os.getpid(), plugins),
        env=worker_env(n_workers),
    )


def prestart(n_workers: int) -> None:
    """Start ``n_workers`` workers now, without plugins, for the run this process is about to plan.

    Loky starts its processes when a task is submitted, so each gets a readiness ping.  The workers are started
    by the calling thread, the one ``PR_SET_PDEATHSIG`` ties them to (the CLI's main thread, which lives as long as
    the run).
    """
    global _prestarted
    pool = executor(n_workers)
    for _ in range(n_workers):
        pool.submit(worker_ready)
    _prestarted = pool


def take() -> bool:
    """Whether :func:`prestart` started workers that are still running; the run has them now (it gets them from
    :func:`executor`, which keeps them where its arguments match and replaces them otherwise)."""
    global _prestarted
    pool, _prestarted = _prestarted, None
    return pool is not None and not pool._flags.shutdown and pool._flags.broken is None


def dismiss() -> None:
    """End the workers :func:`prestart` started if no run took them (none does where the trials are played in the
    parent, are already stored, or the run stopped before it began)."""
    global _prestarted
    pool, _prestarted = _prestarted, None
    if pool is not None:
        pool.shutdown(wait=True, kill_workers=True)


def init_worker(parent: int, plugins: tuple[str, ...]) -> None:
    """Loky worker initializer: :func:`end_with_parent`, the runner imported (what every task needs, paid while
    the parent plans), then the config's plugins imported before any trial (a plugin that cannot be imported here
    fails each trial with the reason, from ``runner._worker_attempt``)."""
    end_with_parent(parent)
    from privgame.engine import runner  # noqa: F401  (its imports: the work of every task)
    from privgame.engine.config import ConfigError, import_plugins

    with contextlib.suppress(ConfigError):
        import_plugins(plugins, source="[experiment] plugins (in a worker)")


def end_with_parent(parent: int) -> None:
    """End this worker when ``parent`` (the run's process) dies, SIGKILL included.

    On Linux the kernel does it (``prctl(PR_SET_PDEATHSIG, SIGKILL)``); elsewhere a daemon thread polls
    ``os.getppid()``.  Either way a parent that died before this ran is caught by the first check.

    It also lifts loky's memory-leak guard, which restarts a worker whose memory grew by 300 MB after its first
    task.  A worker's first task here is the no-op readiness ping (:func:`worker_ready`), so the first trial's
    imports and data (torch alone is about that much) tripped it: every worker was restarted once, paying its
    start-up again, with a "worker stopped" warning.  A trial's memory is checked against the machine's before
    the run (:mod:`privgame.engine.resources`), and trials keep nothing between them.
    """
    with contextlib.suppress(ImportError):
        from joblib.externals.loky import process_executor

        process_executor._MAX_MEMORY_LEAK_SIZE = 1 << 62  # loky reads it at each check
    armed = False
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            armed = ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
    if os.getppid() != parent:
        os._exit(1)
    if not armed:

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watch, name="privgame-parent-watch", daemon=True).start()


def worker_ready() -> int:
    """A no-op task: its completion says a worker has started and imported the runner."""
    return os.getpid()
