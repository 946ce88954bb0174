"""Dask workers as Slurm jobs: ``privgame run --cluster slurm`` (docs/cluster.md).

A :class:`SlurmCluster` says which batch jobs to ask for (partition, cores, memory, walltime, GPUs, how many);
:meth:`SlurmCluster.client` starts a Dask scheduler in this process, keeps that many jobs submitted through
dask-jobqueue (a job that ends early, pre-empted or past its walltime, is replaced), and yields a
``distributed.Client`` of it, on which the runner plays the trials exactly as on any Dask cluster.  Where trials
run changes no number: each has its own seed, spawned in the client.  The cluster is not part of the experiment:
it changes neither the config's hash nor the results.

References
----------
dask-jobqueue, "SLURMCluster", https://jobqueue.dask.org/en/latest/generated/dask_jobqueue.SLURMCluster.html
Slurm, "sbatch", https://slurm.schedmd.com/sbatch.html (``--test-only``, ``--gres``, ``--time``).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["SlurmCluster"]

# what dask's parse_bytes reads and sbatch's --mem receives (dask-jobqueue converts the unit)
_MEMORY = re.compile(r"(\d+(?:\.\d+)?)\s*(b|kb|mb|gb|tb|kib|mib|gib|tib)", re.IGNORECASE)
_WALLTIME = re.compile(r"(?:(\d+)-)?(\d+):(\d\d):(\d\d)")
_PARTITION = re.compile(r"[A-Za-z0-9_.-]+(?:,[A-Za-z0-9_.-]+)*")
_INTERFACE = re.compile(r"[A-Za-z0-9_.:@-]{1,15}")
# the address written into the script that `sbatch --test-only` checks; the real one is the scheduler's, once started
_PLACEHOLDER = "tcp://127.0.0.1:8786"
_SUBMIT_TIMEOUT = 60.0


def _count(value: object, what: str, *, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        rule = "a positive integer" if least == 1 else f"an integer ≥ {least}"
        raise ValueError(f"{what} must be {rule}, got {value!r}.")


@dataclass(frozen=True, slots=True)
class SlurmCluster:
    """Dask workers started as Slurm batch jobs (dask-jobqueue), for ``privgame run --cluster slurm``.

    Each job runs ``cores`` single-threaded worker processes; ``jobs`` jobs are kept submitted for the whole run,
    so the run has ``cores × jobs`` workers once the queue grants them all (it starts with the first).

    Parameters
    ----------
    queue : str or None, default=None
        The partition (``sbatch -p``; several separated by commas); ``None``: the cluster's default partition.
    cores : int, default=1
        CPUs per job (``--cpus-per-task``), one single-threaded worker process each.
    memory : str, default="4GB"
        Memory per job (``--mem``), shared equally by its workers (each one's Dask memory limit), e.g. ``"16GB"``.
    walltime : str, default="01:00:00"
        Time limit per job (``-t``), ``HH:MM:SS`` or ``D-HH:MM:SS``.  A job that reaches it is replaced by a new one;
        the trials its workers were playing run again elsewhere.
    gpus : int, default=0
        GPUs per job (``--gres=gpu:N``).  Slurm sets the job's ``CUDA_VISIBLE_DEVICES`` to the GPUs it grants, and
        every worker of the job sees those: one GPU per worker is ``cores=1, gpus=1``.
    jobs : int, default=1
        Jobs kept submitted.
    directives : tuple of str, default=()
        More ``#SBATCH`` lines, each one option as sbatch reads it (``"--account=proj"``, ``"--qos=short"``,
        ``"--output=logs/%j.out"``).
    interface : str or None, default=None
        The network interface the scheduler and the workers listen on (``"ib0"``, ``"eth0"``), for compute nodes
        other than this machine; ``None``: 127.0.0.1, so only jobs on this machine can join and nothing listens on
        another address.

    Raises
    ------
    ValueError
        If a value breaks its rule (one line naming the field, its ``--slurm-*`` option and the value).

    Notes
    -----
    Fields dask-jobqueue has and privgame does not set (``account``, ``job_script_prologue``, ...) keep the values
    of Dask's configuration (``jobqueue.slurm`` in ``~/.config/dask/jobqueue.yaml``), as with dask-jobqueue itself.
    """

    queue: str | None = None
    cores: int = 1
    memory: str = "4GB"
    walltime: str = "01:00:00"
    gpus: int = 0
    jobs: int = 1
    directives: tuple[str, ...] = ()
    interface: str | None = None

    def __post_init__(self) -> None:
        if self.queue is not None and (not isinstance(self.queue, str) or not _PARTITION.fullmatch(self.queue)):
            raise ValueError(
                "the Slurm queue (--slurm-queue) must be a partition name of letters, digits, '_', '.' or '-' "
                f"(several separated by commas), got {self.queue!r}."
            )
        _count(self.cores, "the Slurm cores per job (--slurm-cores)", least=1)
        _count(self.gpus, "the Slurm GPUs per job (--slurm-gpus)", least=0)
        _count(self.jobs, "the number of Slurm jobs (--slurm-jobs)", least=1)
        memory = _MEMORY.fullmatch(self.memory) if isinstance(self.memory, str) else None
        if memory is None or not 0 < float(memory[1]) < math.inf:
            raise ValueError(
                "the Slurm memory per job (--slurm-memory) must be a positive size with a unit (B, kB, MB, GB, TB "
                f"or KiB, MiB, GiB, TiB; e.g. 4GB), got {self.memory!r}."
            )
        walltime = _WALLTIME.fullmatch(self.walltime) if isinstance(self.walltime, str) else None
        if (
            walltime is None
            or int(walltime[3]) >= 60
            or int(walltime[4]) >= 60
            or not any(int(part or 0) for part in walltime.groups())
        ):
            raise ValueError(
                "the Slurm walltime per job (--slurm-walltime) must be a positive HH:MM:SS or D-HH:MM:SS (minutes "
                f"and seconds below 60), got {self.walltime!r}."
            )
        if not isinstance(self.directives, tuple):
            raise TypeError(f"the Slurm directives must be a tuple of strings, got {self.directives!r}.")
        for directive in self.directives:
            if not isinstance(directive, str) or not directive.startswith("-") or not directive.isprintable():
                raise ValueError(
                    "each Slurm directive (--slurm-directive) must be one sbatch option on one line, starting with "
                    f"'-' (e.g. --account=proj), got {directive!r}."
                )
        if self.interface is not None and (
            not isinstance(self.interface, str) or not _INTERFACE.fullmatch(self.interface)
        ):
            raise ValueError(
                f"the network interface (--slurm-interface) must be an interface name such as ib0, got "
                f"{self.interface!r}."
            )

    @property
    def workers(self) -> int:
        """Worker processes once every job runs: ``cores × jobs``."""
        return self.cores * self.jobs

    def describe(self) -> str:
        """One line: the jobs and what each asks for."""
        gpus = f", {self.gpus} GPU{'s' if self.gpus != 1 else ''}" if self.gpus else ""
        return (
            f"{self.jobs} Slurm job{'s' if self.jobs != 1 else ''} × {self.cores} worker"
            f"{'s' if self.cores != 1 else ''} (partition {self.queue or 'the default'}, {self.memory}, "
            f"{self.walltime}{gpus} per job)"
        )

    def cluster_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``dask_jobqueue.SLURMCluster`` (its job class's, less ``scheduler_options``)."""
        kwargs: dict[str, Any] = {
            "cores": self.cores,
            "processes": self.cores,  # one thread per worker process: trials are CPU-bound numpy/torch code
            "memory": self.memory,
            "walltime": self.walltime,
            "queue": self.queue,
            "job_name": "privgame-worker",
            "job_extra_directives": [*([f"--gres=gpu:{self.gpus}"] if self.gpus else []), *self.directives],
            # a worker's HTTP routes (health, metrics) are served even with no dashboard, on every interface unless
            # told otherwise; nothing needs them from elsewhere
            "worker_extra_args": ["--no-dashboard", "--dashboard-address", "127.0.0.1:0"],
            "python": sys.executable,  # the client's interpreter, so the same privgame and libraries
            # the scheduler's HTTP routes (health, metrics) stay on 127.0.0.1; its dashboard is off
            "scheduler_options": {"dashboard": False, "dashboard_address": "127.0.0.1:0"},
        }
        if self.interface is None:
            kwargs["scheduler_options"]["host"] = "127.0.0.1"
            kwargs["worker_extra_args"] += ["--host", "127.0.0.1"]
        else:
            kwargs["interface"] = self.interface
        return kwargs

    def job_script(self, scheduler: str = _PLACEHOLDER) -> str:
        """The batch script each job runs, for a scheduler at ``scheduler``; starts and submits nothing.

        Raises
        ------
        ValueError
            If dask-jobqueue is not installed.
        """
        _jobqueue()
        from dask_jobqueue.slurm import SLURMJob

        kwargs = self.cluster_kwargs()
        del kwargs["scheduler_options"]
        kwargs.pop("interface", None)  # a job's --interface needs that interface on this machine; the text is the same
        if self.interface is not None:
            kwargs["worker_extra_args"] = [*kwargs["worker_extra_args"], "--interface", self.interface]
        return str(SLURMJob(scheduler=scheduler, name="privgame-worker", **kwargs).job_script())

    def check(self) -> None:
        """Check, before anything starts, that this machine can run the cluster: dask-jobqueue installed, ``sbatch``
        on ``PATH``, the interface present, and the job script accepted by ``sbatch --test-only`` (its partition,
        time limit, memory and GPUs exist; nothing is submitted).

        Raises
        ------
        ValueError
            One line naming what is missing or sbatch's own refusal.
        """
        _jobqueue()
        sbatch = shutil.which("sbatch")
        if sbatch is None:
            raise ValueError(
                "--cluster slurm submits jobs with Slurm's sbatch, and there is no sbatch on PATH: run privgame on "
                "a machine that can submit jobs (a login node)."
            )
        if self.interface is not None:
            import psutil  # a dependency of distributed

            present = sorted(psutil.net_if_addrs())
            if self.interface not in present:
                raise ValueError(
                    f"the network interface (--slurm-interface) must be one of this machine's ({', '.join(present)}), "
                    f"got {self.interface!r}."
                )
        with tempfile.TemporaryDirectory(prefix="privgame-slurm-") as folder:
            script = os.path.join(folder, "job.sh")
            with open(script, "w", encoding="utf-8") as fh:
                fh.write(self.job_script())
            try:
                done = subprocess.run(
                    [sbatch, "--test-only", script], capture_output=True, text=True, timeout=_SUBMIT_TIMEOUT
                )
            except subprocess.TimeoutExpired:
                raise ValueError(
                    f"Slurm did not answer `sbatch --test-only` within {_SUBMIT_TIMEOUT:g} s: is slurmctld up (sinfo)?"
                ) from None
        if done.returncode != 0:
            said = "; ".join(line.strip() for line in done.stderr.splitlines() if line.strip()) or "no message"
            raise ValueError(f"Slurm refuses the workers' job ({self.describe()}): {said}")

    @contextlib.contextmanager
    def client(self) -> Iterator[Any]:
        """A ``distributed.Client`` of a scheduler started here, with :attr:`jobs` worker jobs kept submitted; on
        leaving (the run's end, an error, Ctrl-C) every job is cancelled and the scheduler stopped.

        The client waits for the first worker, saying so on stderr; the queue may take any time to grant a job.
        """
        jobqueue = _jobqueue()
        from distributed import Client

        where = "127.0.0.1" if self.interface is None else self.interface
        print(f"privgame: submitting {self.describe()}, the scheduler on {where} ...", file=sys.stderr)
        cluster = jobqueue.SLURMCluster(**self.cluster_kwargs())
        try:
            # adaptive with a fixed size rather than scale(): it submits a new job for one that ended (pre-empted,
            # past its walltime, cancelled), where scale() would leave the run with fewer workers
            cluster.adapt(minimum_jobs=self.jobs, maximum_jobs=self.jobs)
            with Client(cluster) as client:
                print(
                    "privgame: waiting for the first Slurm job to start (Ctrl-C to stop; squeue --name "
                    "privgame-worker) ...",
                    file=sys.stderr,
                )
                client.wait_for_workers(1)
                workers = len(client.scheduler_info().get("workers", {}))
                print(
                    f"privgame: {workers} of {self.workers} Slurm worker{'s' if self.workers != 1 else ''} joined "
                    f"{cluster.scheduler_address}",
                    file=sys.stderr,
                )
                yield client
        finally:
            cluster.close()  # cancels every job of the cluster (scancel), then stops the scheduler


def _jobqueue() -> Any:
    """``dask_jobqueue``, imported without letting it take Ctrl-C away.

    dask-jobqueue 0.9.0 replaces the SIGINT handler with ``sys.exit()`` when it is imported (dask/dask-jobqueue#696,
    fixed by #697), so Ctrl-C would end a run with status 0, its jobs cancelled but no word of the trials left; the
    handler in place before the import is put back.
    """
    before = signal.getsignal(signal.SIGINT)
    try:
        import dask_jobqueue
    except ImportError:  # pragma: no cover - depends on the installed extras
        raise ValueError("--cluster slurm needs the 'slurm' extra: pip install 'privgame[slurm]'.") from None
    finally:
        if threading.current_thread() is threading.main_thread() and before is not None:
            signal.signal(signal.SIGINT, before)
    return dask_jobqueue
