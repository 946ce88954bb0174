"""A real single-node Slurm on this machine, for the Slurm tests and ``benchmarks/bench_scaling.py``.

:func:`local_slurm` starts munged, slurmctld and slurmd from Debian's packages (``slurm-wlm``, ``munge``) on
127.0.0.1, with their configuration, state, spool, logs and munge key under a folder of the caller's, and stops
each daemon by the pid it started (after cancelling any job left) whatever happens inside the ``with`` block.
Where the commands are missing or this is not root it raises :class:`SlurmUnavailable` with the reason in one
line, before anything is started; the test fixture skips on it, the benchmark prints it and goes on.

The recipe is the one docs/cluster.md gives ("The recipe as tested").
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

__all__ = ["CLIENTS", "DAEMONS", "SlurmUnavailable", "local_slurm", "slurm_problem"]

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scancel", "sinfo", "scontrol")
#: seconds the daemons have to come up (munge's socket, then the node idle in sinfo)
START_TIMEOUT = 30.0


class SlurmUnavailable(RuntimeError):
    """This machine cannot run the local Slurm (``reason`` says why, in one line)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def slurm_problem() -> str | None:
    """Why :func:`local_slurm` cannot run here (one line), or ``None``: every daemon and client on ``PATH``, and
    root (slurmd starts the jobs as their user, and the daemons here run as root)."""
    missing = [name for name in (*DAEMONS, *CLIENTS) if shutil.which(name) is None]
    if missing:
        return f"no Slurm here ({', '.join(missing)} not found; Debian: apt-get install slurm-wlm munge)"
    if os.geteuid() != 0:
        return "the local Slurm runs its daemons as root (slurmd starts jobs as their user), and this is not root"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def slurm_conf(root: Path, *, cpus: int = 2, memory_mb: int = 4000) -> str:
    """The slurm.conf of one node, localhost, ``cpus`` CPUs and ``memory_mb`` MB; no cgroups (proctrack/linuxproc,
    task/none), no accounting; every daemon bound to 127.0.0.1 (NoCtldInAddrAny, NoInAddrAny); munge's socket and
    every state file under ``root``; two free ports."""
    return f"""\
ClusterName=privgame-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge/munge.socket
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
NodeName=localhost NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""


def ask(*command: str, env: Mapping[str, str] | None = None) -> str:
    """A Slurm client command's stdout, stripped (``""`` when it fails or prints nothing)."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False, env=env)
    return done.stdout.strip()


@contextlib.contextmanager
def local_slurm(root: Path, *, cpus: int = 2, memory_mb: int = 4000, environ: bool = True) -> Iterator[Path]:
    """A running single-node Slurm, its files under ``root`` (created; it must not hold another Slurm's files).

    Parameters
    ----------
    root : Path
        The folder of the configuration, the munge key and socket, the state, the spool and the logs.
    cpus : int, default=2
        The node's CPUs (slurm.conf ``CPUs``); a job asking for more is refused.
    memory_mb : int, default=4000
        The node's memory in MB (``RealMemory``).
    environ : bool, default=True
        Set ``SLURM_CONF`` in this process's environment while the block runs (the client commands, sbatch's jobs
        and dask-jobqueue read it), and put back what was there on leaving; ``False``: the caller sets it (a test's
        ``monkeypatch.setenv``).

    Yields
    ------
    Path
        The slurm.conf.

    Raises
    ------
    SlurmUnavailable
        Before anything starts, when :func:`slurm_problem` says why Slurm cannot run here.
    RuntimeError
        When a daemon dies or the node is not idle within :data:`START_TIMEOUT` seconds (the daemons' logs in the
        message); whatever was started is stopped first.
    """
    problem = slurm_problem()
    if problem is not None:
        raise SlurmUnavailable(problem)
    root = Path(root)
    for folder in ("munge", "state", "spool", "log"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    conf = root / "slurm.conf"
    conf.write_text(slurm_conf(root, cpus=cpus, memory_mb=memory_mb))
    env = {**os.environ, "SLURM_CONF": str(conf)}  # the daemons' and the client commands' here, whatever ``environ``
    before = os.environ.get("SLURM_CONF")
    started: list[subprocess.Popen[bytes]] = []

    def start(name: str, *args: str) -> None:
        with open(root / "log" / f"{name}.out", "wb") as out:
            started.append(subprocess.Popen([name, *args], stdout=out, stderr=subprocess.STDOUT, env=env))

    def logs() -> str:
        return "\n".join(f"{p.name}: {p.read_text()[-2000:]}" for p in sorted((root / "log").iterdir()))

    def check_up(deadline: float) -> None:
        if time.monotonic() > deadline or any(p.poll() is not None for p in started):
            raise RuntimeError(f"the local Slurm did not come up within {START_TIMEOUT:g} s:\n{logs()}")

    try:
        m = root / "munge"
        # each daemon in the foreground (-F, -D), so its pid is its Popen's; --force: munged wants every folder
        # above its socket world-searchable, and temporary folders (pytest's) are not
        start(
            "munged",
            *("-F", "--force", f"--socket={m}/munge.socket", f"--key-file={key}", f"--pid-file={m}/pid"),
            *(f"--log-file={root}/log/munged.log", f"--seed-file={m}/seed"),
        )
        deadline = time.monotonic() + START_TIMEOUT
        while not (m / "munge.socket").exists():
            check_up(deadline)
            time.sleep(0.05)
        start("slurmctld", "-D", "-f", str(conf))
        start("slurmd", "-D", "-N", "localhost", "-f", str(conf))
        while ask("sinfo", "-h", "-N", "-o", "%t", env=env) != "idle":
            check_up(deadline)
            time.sleep(0.2)
        if environ:
            os.environ["SLURM_CONF"] = str(conf)
        yield conf
    finally:
        if environ:
            if before is None:
                os.environ.pop("SLURM_CONF", None)
            else:
                os.environ["SLURM_CONF"] = before
        if len(started) == 3 and all(p.poll() is None for p in started):
            ask("scancel", "--user", "root", env=env)  # this cluster's jobs only (its SLURM_CONF)
            deadline = time.monotonic() + 20
            while ask("squeue", "-h", env=env) and time.monotonic() < deadline:
                time.sleep(0.2)
            for line in ask("scontrol", "listpids", env=env).splitlines()[1:]:  # any job process left: PID JOBID ...
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(line.split()[0]), signal.SIGKILL)
        for process in reversed(started):
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=20)
