"""The runner on a real Dask cluster: a scheduler and two workers started as separate processes on 127.0.0.1
(the ``dask scheduler`` / ``dask worker`` commands), results identical to loky's, a worker killed in the middle
of the run losing nothing; and the client's checks of the scheduler address (fast, no cluster needed)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privgame.engine.cli import main
from privgame.engine.registry import MECHANISMS
from privgame.engine.runner import DaskScheduler, run_experiment
from privgame.engine.store import ResultsStore, drop_timings

DASK = Path(sys.executable).parent / "dask"

# A randomized response that logs "start PID" / "end PID" around each release and sleeps in between, so a test
# sees which process plays each trial and can kill a worker in the middle of one.
PLUGIN = """
import os
import time
from dataclasses import dataclass
from typing import ClassVar

from privgame.engine.registry import MECHANISMS
from privgame.mechanisms import RandomizedResponse


def _log(path, what):
    with open(path, "a") as fh:
        fh.write(f"{what} {os.getpid()}\\n")


@dataclass(frozen=True, slots=True)
class LoggedRR(RandomizedResponse):
    name: ClassVar[str] = "test-logged-rr"
    log: str = ""
    sleep: float = 0.0

    def release(self, data, *, rng):
        _log(self.log, "start")
        time.sleep(self.sleep)
        out = RandomizedResponse.release(self, data, rng=rng)
        _log(self.log, "end")
        return out


if LoggedRR.name not in MECHANISMS:
    MECHANISMS.register(LoggedRR)
"""


def _events(log: Path) -> list[tuple[str, int]]:
    if not log.exists():
        return []
    return [(what, int(pid)) for what, pid in (line.split() for line in log.read_text().splitlines() if line)]


@pytest.fixture
def logged_config(tmp_path, monkeypatch, write_config):
    """A 2 × 6-trial one-run config on the logging mechanism (a plugin on sys.path and on the workers')."""
    plugin = "pg_dask_logged_rr"
    (tmp_path / f"{plugin}.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))

    def make(sleep: float, name: str) -> tuple[Path, Path]:
        log = tmp_path / f"{name}.log"
        overrides = {
            "experiment": {"plugins": [plugin], "repetitions": 6},
            "mechanism": {"name": "test-logged-rr", "log": str(log), "sleep": sleep},
        }
        return write_config(overrides, name=name), log

    yield make
    if "test-logged-rr" in MECHANISMS:
        MECHANISMS.unregister("test-logged-rr")
    sys.modules.pop(plugin, None)


@dataclass
class _Cluster:
    address: str
    start: Callable[[str, list[str]], subprocess.Popen[bytes]]
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def add_workers(self, n: int) -> None:
        """Start ``n`` more single-threaded workers (no nanny: SIGKILL ends the worker itself)."""
        args = "--nthreads 1 --no-nanny --no-dashboard --host 127.0.0.1".split()
        for _ in range(n):
            name = f"w{len(self.workers)}"
            self.workers.append(self.start(f"worker-{name}", ["worker", self.address, *args, "--name", name]))

    def wait_for_workers(self, n: int) -> None:
        from distributed import Client

        with Client(self.address, timeout=60) as client:
            client.wait_for_workers(n, timeout=180)

    def clients(self) -> int:
        """How many clients the scheduler has now (this call's own among them)."""
        from distributed import Client

        with Client(self.address, timeout=60) as client:
            return int(client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.clients)))


@contextlib.contextmanager
def _cluster(tmp_path: Path, n_workers: int) -> Iterator[_Cluster]:
    """A scheduler and ``n_workers`` single-threaded workers, each its own process (session) on 127.0.0.1 with
    random free ports and no dashboard; every process started through it is killed at the end, whatever happens."""
    pytest.importorskip("distributed")
    if not DASK.exists():
        pytest.skip(f"no dask command at {DASK}")
    scheduler_file = tmp_path / "scheduler.json"
    logs = tmp_path / "cluster-logs"
    logs.mkdir()
    processes: list[subprocess.Popen[bytes]] = []

    def start(name: str, args: list[str]) -> subprocess.Popen[bytes]:
        with open(logs / f"{name}.log", "wb") as out:
            process = subprocess.Popen([str(DASK), *args], stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        processes.append(process)
        return process

    try:
        start(
            "scheduler",
            [*"scheduler --host 127.0.0.1 --port 0 --no-dashboard".split(), "--scheduler-file", str(scheduler_file)],
        )
        deadline = time.monotonic() + 120
        while not scheduler_file.exists() or not scheduler_file.read_text().strip():
            assert time.monotonic() < deadline and processes[0].poll() is None, (logs / "scheduler.log").read_text()
            time.sleep(0.1)
        cluster = _Cluster(json.loads(scheduler_file.read_text())["address"], start)
        cluster.add_workers(n_workers)
        if n_workers:
            cluster.wait_for_workers(n_workers)
        yield cluster
    finally:
        for process in reversed(processes):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def _rows(out: Path) -> pd.DataFrame:
    return pd.read_parquet(out / "results.parquet").pipe(drop_timings)


def _assert_same(a: Path, b: Path) -> None:
    pd.testing.assert_frame_equal(_rows(a), _rows(b))
    sa, sb = ResultsStore(a), ResultsStore(b)
    assert sa.done() == sb.done() == set(range(12))
    for trial in sa.done():
        oa, ob = sa.load_outcome(trial), sb.load_outcome(trial)
        np.testing.assert_array_equal(oa.scores, ob.scores)
        np.testing.assert_array_equal(oa.membership, ob.membership)


@pytest.mark.slow
def test_workers_joining_after_the_client_give_loky_results(logged_config, tmp_path, capsys):
    config, log = logged_config(1.0, "joining")
    assert main(["run", str(config), "--out", str(tmp_path / "loky"), "--n-jobs", "2", "--no-progress"]) == 0
    log.unlink()
    with _cluster(tmp_path, 0) as cluster:
        alone = cluster.clients()
        status: list[int] = []
        args = [
            "run",
            str(config),
            "--out",
            str(tmp_path / "dask"),
            "--no-progress",
            "--dask-scheduler",
            cluster.address,
        ]
        client = threading.Thread(target=lambda: status.append(main(args)))
        client.start()
        try:
            deadline = time.monotonic() + 120
            while cluster.clients() <= alone:  # privgame's client is connected, and finds no worker
                assert time.monotonic() < deadline and client.is_alive()
                time.sleep(0.2)
            cluster.add_workers(1)
            while not _events(log):  # the run is under way on one worker: two more join it
                assert time.monotonic() < deadline and client.is_alive()
                time.sleep(0.05)
            cluster.add_workers(2)
        finally:
            client.join(timeout=300)
        assert status == [0]
        first, *later = (w.pid for w in cluster.workers)
    assert "no worker has joined the scheduler yet; waiting for one" in capsys.readouterr().err
    _assert_same(tmp_path / "dask", tmp_path / "loky")
    events = _events(log)
    played = Counter(pid for what, pid in events if what == "end")
    assert sum(played.values()) == 12 and set(played) <= {first, *later}  # every trial ran on a worker, once
    assert all(played[pid] > 0 for pid in later)  # the workers that joined during the run took trials too


@pytest.mark.slow
def test_a_worker_killed_mid_trial_loses_nothing(logged_config, tmp_path):
    config, log = logged_config(0.4, "slow")
    assert main(["run", str(config), "--out", str(tmp_path / "loky"), "--n-jobs", "2", "--no-progress"]) == 0
    log.unlink()
    with _cluster(tmp_path, 2) as cluster:
        victim = cluster.workers[0]
        killed = threading.Event()

        def kill_mid_trial() -> None:
            # once two trials are done and the victim is inside a release, SIGKILL it
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                events = _events(log)
                ends = sum(what == "end" for what, _ in events)
                open_ = Counter(pid for what, pid in events if what == "start")
                open_.subtract(pid for what, pid in events if what == "end")
                if ends >= 2 and open_[victim.pid] > 0:
                    os.killpg(victim.pid, signal.SIGKILL)
                    killed.set()
                    return
                time.sleep(0.01)

        killer = threading.Thread(target=kill_mid_trial, daemon=True)
        killer.start()
        try:
            args = ["run", str(config), "--out", str(tmp_path / "dask"), "--no-progress"]
            assert main([*args, "--dask-scheduler", cluster.address]) == 0
        finally:
            killer.join(timeout=5)
        assert killed.is_set(), "the victim must be killed during the run for this test to mean anything"
        assert victim.wait(timeout=30) == -signal.SIGKILL
        events = _events(log)
        starts = Counter(pid for what, pid in events if what == "start")
        ends = Counter(pid for what, pid in events if what == "end")
        assert starts[victim.pid] == ends[victim.pid] + 1  # killed inside a trial
        # the trial it was playing ran again elsewhere, and so did any it had finished whose result the client had
        # not gathered yet (held in the dead worker's memory); nothing else ran twice
        assert 12 <= sum(ends.values()) <= 12 + ends[victim.pid]
    _assert_same(tmp_path / "dask", tmp_path / "loky")


@pytest.mark.parametrize("dashboard", [False, True], ids=["no-dashboard", "dashboard"])
def test_local_cluster_listens_on_loopback_only(dashboard, capsys):
    psutil = pytest.importorskip("psutil")  # a dependency of distributed
    pytest.importorskip("distributed")
    import urllib.error
    import urllib.request

    from distributed import get_client

    from privgame.engine.runner import _backend

    with _backend(DaskScheduler("local", dashboard=dashboard), 1):
        me = psutil.Process()
        listening = {
            (c.laddr.ip, c.laddr.port)
            for process in (me, *me.children(recursive=True))
            for c in process.net_connections("tcp")
            if c.status == psutil.CONN_LISTEN
        }
        port = get_client().scheduler_info()["services"]["dashboard"]
        try:
            status = urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=30).status
        except urllib.error.HTTPError as exc:
            status = exc.code
    assert listening and {ip for ip, _ in listening} == {"127.0.0.1"}  # scheduler, workers, HTTP: loopback only
    if dashboard:
        assert status == 200 and f"Dask dashboard at http://127.0.0.1:{port}/status" in capsys.readouterr().err
    else:
        assert status == 404  # the dashboard is not served unless asked for


# -- the client's checks of the address: no cluster needed ---------------------------------------------------------


@pytest.mark.parametrize(
    "address", ["not an address", "foo://host:8786", "tcp://host", "tcp://:8786", "tcp://host:port", "", "inproc://x"]
)
def test_malformed_scheduler_address_is_one_line(write_config, tmp_path, capsys, address):
    out = tmp_path / "out"
    assert main(["run", str(write_config()), "--out", str(out), "--dask-scheduler", address]) == 2
    err = capsys.readouterr().err
    assert err == (
        "privgame: error: the Dask scheduler address must be 'local' or SCHEME://HOST:PORT (SCHEME one of tcp, "
        f"tls, ws, wss, ucx; e.g. tcp://10.0.0.5:8786), got {address!r}.\n"
    )
    assert not out.exists()


def test_dask_options_errors(write_config, tmp_path, capsys):
    config, out = str(write_config()), str(tmp_path / "out")
    cases = [
        (["--dask-scheduler", "tcp://h:99999"], "the Dask scheduler's port must be in 1..65535, got 99999"),
        (["--dask-scheduler", "tcp://h:1", "--dask-timeout", "0"], "connect timeout must be a positive number"),
        (["--dask-scheduler", "tcp://h:1", "--dask-timeout", "nan"], "connect timeout must be a positive number"),
        (["--dask-scheduler", "tcp://h:1", "--dask-dashboard"], "can only be asked of the local cluster"),
        (["--dask-dashboard"], "--dask-dashboard needs --dask-scheduler"),
        (["--dask-timeout", "5"], "--dask-timeout needs --dask-scheduler"),
    ]
    for extra, message in cases:
        assert main(["run", config, "--out", out, *extra]) == 2, extra
        err = capsys.readouterr().err
        assert err.startswith("privgame: error: ") and message in err and err.count("\n") == 1, (extra, err)
    assert not Path(out).exists()
    with pytest.raises(TypeError, match="address must be a string"):
        DaskScheduler(8786)  # type: ignore[arg-type]


def test_dead_scheduler_address_fails_fast_with_one_line(write_config, tmp_path, capsys):
    pytest.importorskip("distributed")
    import socket

    with socket.socket() as sock:  # a port nobody listens on: bound, never listening
        sock.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{sock.getsockname()[1]}"
        out = tmp_path / "out"
        start = time.monotonic()
        status = main(
            ["run", str(write_config()), "--out", str(out), "--dask-scheduler", address, "--dask-timeout", "2"]
        )
        elapsed = time.monotonic() - start
    assert status == 2 and elapsed < 15
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"privgame: connecting to the Dask scheduler at {address} (timeout 2 s) ..."
    assert err[1].startswith(f"privgame: error: no Dask scheduler answered at {address} within 2 s") and len(err) == 2
    assert not out.exists()  # nothing made for a run that cannot start


def test_dead_address_through_the_api(write_config, tmp_path):
    pytest.importorskip("distributed")
    from privgame.engine.config import load_config

    with pytest.raises(ValueError, match=r"no Dask scheduler answered at tcp://127\.0\.0\.1:9 within 1 s"):
        run_experiment(
            load_config(write_config()),
            tmp_path / "out",
            progress=False,
            dask_scheduler=DaskScheduler("tcp://127.0.0.1:9", connect_timeout=1),
        )
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_trial_that_kills_every_worker_is_recorded_as_failed(write_config, tmp_path, monkeypatch):
    """The scheduler retries a trial whose worker dies; when every retry's worker dies too (a trial that needs
    more memory than any worker has), the trial is recorded as failed with the reason and the run goes on."""
    pytest.importorskip("distributed")
    from privgame.engine.config import load_config
    from privgame.engine.runner import TrialsFailed

    plugins = Path(__file__).parents[1] / "plugins"
    monkeypatch.syspath_prepend(str(plugins))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(plugins), os.environ.get("PYTHONPATH", "")]))

    def config(name: str, **mechanism: object) -> Path:
        return write_config(
            {
                "experiment": {"plugins": ["faulty_mechanisms"], "repetitions": 3},
                "mechanism": {"name": "test-faulty", **mechanism},
            },
            name=name,
        )

    with pytest.raises(TrialsFailed) as reference:  # the same draws decide which trial kills its workers
        run_experiment(load_config(config("reference", fail=0.2)), tmp_path / "reference", progress=False)
    culprits = set(reference.value.failed)
    assert 1 <= len(culprits) <= 2
    with pytest.raises(TrialsFailed) as killed:
        run_experiment(
            load_config(config("killer", kill=0.2, spare_pid=os.getpid())),
            tmp_path / "out",
            n_jobs=2,
            progress=False,
            dask_scheduler="local",
        )
    assert set(killed.value.failed) == culprits
    for trial in culprits:
        info = json.loads((tmp_path / "out" / "failures" / f"trial-{trial:06d}.json").read_text())
        assert info["error"].startswith("the worker process playing this trial died on every worker the scheduler")
        assert "KilledWorker" in info["error"]
    assert ResultsStore(tmp_path / "out").done() == set(range(6)) - culprits
    if "test-faulty" in MECHANISMS:
        MECHANISMS.unregister("test-faulty")
    sys.modules.pop("faulty_mechanisms", None)


@pytest.mark.slow
def test_a_trial_beside_the_one_that_kills_its_worker_is_not_blamed(write_config, tmp_path, monkeypatch):
    """The scheduler blames every trial running on a worker that dies.  On one two-threaded worker (restarted by
    its nanny), the trial that kills it at once and the trial sleeping beside it are blamed together each time;
    the runner plays the suspects again alone, so only the killer is recorded as failed."""
    from privgame.engine.config import load_config
    from privgame.engine.runner import TrialsFailed

    plugins = Path(__file__).parents[1] / "plugins"
    monkeypatch.syspath_prepend(str(plugins))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(plugins), os.environ.get("PYTHONPATH", "")]))

    def config(name: str, **mechanism: object) -> Path:
        overrides = {
            "experiment": {"plugins": ["faulty_mechanisms"], "repetitions": 3},
            "mechanism": {"name": "test-faulty", **mechanism},
        }
        return write_config(overrides, name=name)

    with pytest.raises(TrialsFailed) as reference:
        run_experiment(load_config(config("reference", fail=0.2)), tmp_path / "reference", progress=False)
    culprits = set(reference.value.failed)
    assert culprits == {4}  # the seeds' draws; trial 5 runs beside it
    try:
        with _cluster(tmp_path, 0) as cluster:
            args = "--nthreads 2 --nworkers 1 --no-dashboard --host 127.0.0.1 --name w0".split()
            cluster.start("worker-nanny", ["worker", cluster.address, *args])
            cluster.wait_for_workers(1)
            with pytest.raises(TrialsFailed) as killed:
                run_experiment(
                    load_config(config("killer", kill=0.2, sleep=1.5, spare_pid=os.getpid())),
                    tmp_path / "out",
                    progress=False,
                    dask_scheduler=cluster.address,
                )
    finally:
        if "test-faulty" in MECHANISMS:
            MECHANISMS.unregister("test-faulty")
        sys.modules.pop("faulty_mechanisms", None)
    assert set(killed.value.failed) == culprits
    assert ResultsStore(tmp_path / "out").done() == set(range(6)) - culprits


@pytest.mark.slow
def test_every_dask_worker_imports_the_configs_plugins(write_config, tmp_path, monkeypatch):
    """A side-effect-only plugin (``marking_plugin``: it registers nothing, it sets the flag ``test-marked``
    needs) is imported on each Dask worker before its trials: unpickling a trial imports only the mechanism's own
    module.  Every trial is played by a worker process, none by the client."""
    plugins = Path(__file__).parents[1] / "plugins"
    monkeypatch.syspath_prepend(str(plugins))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(plugins), os.environ.get("PYTHONPATH", "")]))
    log = tmp_path / "pids"
    config = write_config(
        {
            "experiment": {"plugins": ["marked_mechanisms", "marking_plugin"], "repetitions": 3},
            "mechanism": {"name": "test-marked", "log": str(log)},
        }
    )
    try:
        with _cluster(tmp_path, 2) as cluster:
            args = ["run", str(config), "--out", str(tmp_path / "dask"), "--no-progress"]
            assert main([*args, "--dask-scheduler", cluster.address]) == 0
            workers = {w.pid for w in cluster.workers}
        players = {int(line) for line in log.read_text().split()}
        assert players and players <= workers
        assert ResultsStore(tmp_path / "dask").done() == set(range(6))
    finally:
        for module in ("marked_mechanisms", "marking_plugin"):
            sys.modules.pop(module, None)
        if "test-marked" in MECHANISMS:
            MECHANISMS.unregister("test-marked")
