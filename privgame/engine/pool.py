"""The local worker pool: the loky processes ``privgame run --n-jobs N`` plays on, and their set-up.

The runner (:func:`privgame.engine.runner._run_local`) drives loky's reusable executor itself; this module makes
it: :func:`executor` (the workers' thread-pool sizes from :mod:`privgame.engine.threads`, :func:`init_worker`, which
ties each worker to the run's process and imports the config's plugins).  It imports nothing heavy itself; a
worker imports the runner with its first task, the runner's readiness ping (``runner._worker_ready``).

Starting the workers before the parent has planned the run (before its own imports) was tried and measured: it
saved 0.1 s of a 6 s LiRA repetition on two workers, and cost 0.2 s of the 2 s quickstart, whose workers the
runner starts only once the parent has played for as long as its own start-up
(:func:`privgame.engine.runner._worker_start_delay`): two starting processes beside the parent's imports on two
cores slow it as much as they gain.
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

__all__ = ["executor", "init_worker", "workers"]

_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
#: seconds an idle worker waits for a task before loky ends it
IDLE_TIMEOUT = 300


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


def init_worker(parent: int, plugins: tuple[str, ...]) -> None:
    """Loky worker initializer: :func:`end_with_parent`, then the config's plugins imported before any trial (a
    plugin that cannot be imported here fails each trial with the reason, from ``runner._worker_attempt``)."""
    end_with_parent(parent)
    if plugins:
        from privgame.engine.config import ConfigError, import_plugins

        with contextlib.suppress(ConfigError):
            import_plugins(plugins, source="[experiment] plugins (in a worker)")


def end_with_parent(parent: int) -> None:
    """End this worker when ``parent`` (the run's process) dies, SIGKILL included.

    On Linux the kernel does it (``prctl(PR_SET_PDEATHSIG, SIGKILL)``); elsewhere a daemon thread polls
    ``os.getppid()``.  Either way a parent that died before this ran is caught by the first check.

    It also lifts loky's memory-leak guard, which restarts a worker whose memory grew by 300 MB after its first
    task.  A worker's first task here is the runner's readiness ping (``runner._worker_ready``), so the first trial's
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
