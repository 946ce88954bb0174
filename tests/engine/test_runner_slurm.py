"""``privgame run --cluster slurm`` on a real single-node Slurm: munged, slurmctld and slurmd from Debian's packages,
started by the fixture on 127.0.0.1 with their configuration, state and spool under the test's temporary folder,
and stopped by their pids whatever the test's outcome.  A LiRA experiment on two Slurm jobs gives the local run's
results byte for byte, also when its worker jobs are cancelled mid-run (pre-empted); the options' errors, the job
script and ``--dry-run`` need no Slurm."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privgame.engine.cli import main
from privgame.engine.slurm import SlurmCluster
from privgame.engine.store import ResultsStore, drop_timings
from tests.conftest import model_entries
from tests.local_slurm import SlurmUnavailable, local_slurm
from tests.local_slurm import ask as _ask

LIRA = """
[experiment]
name = "lira_slurm"
seed = 7
repetitions = 6
[game]
name = "lira"
data = "adult"
pool_size = 200
n_models = 8
n_boot = 40
[mechanism]
name = "logistic-regression"
epochs = 2
[attack]
name = "lira"
"""


@pytest.fixture
def slurm(tmp_path, monkeypatch) -> Iterator[Path]:
    """A running single-node Slurm (its slurm.conf's path, also in ``SLURM_CONF`` for the clients and the jobs):
    :func:`tests.local_slurm.local_slurm`, skipped with its one line where this machine cannot run it."""
    pytest.importorskip("dask_jobqueue")
    try:
        with local_slurm(tmp_path / "slurm", environ=False) as conf:
            monkeypatch.setenv("SLURM_CONF", str(conf))
            yield conf
    except SlurmUnavailable as exc:
        pytest.skip(exc.reason)


def _same_results(a: Path, b: Path, trials: int) -> None:
    """``results.parquet`` less its timing columns equal, and every raw array and record file byte for byte."""
    pd.testing.assert_frame_equal(
        pd.read_parquet(a / "results.parquet").pipe(drop_timings),
        pd.read_parquet(b / "results.parquet").pipe(drop_timings),
    )
    assert ResultsStore(a).done() == ResultsStore(b).done() == set(range(trials))
    for folder in ("raw", "records"):
        names = sorted(p.name for p in (a / folder).iterdir())
        assert names == sorted(p.name for p in (b / folder).iterdir()) and len(names) == trials
        for name in names:
            assert (a / folder / name).read_bytes() == (b / folder / name).read_bytes(), name
    for trial in range(trials):
        np.testing.assert_array_equal(
            ResultsStore(a).load_outcome(trial).scores, ResultsStore(b).load_outcome(trial).scores
        )


@pytest.mark.slow
def test_lira_on_slurm_jobs_equals_the_local_run(slurm, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # where Slurm writes the jobs' slurm-JOBID.out
    config = tmp_path / "lira.toml"
    config.write_text(LIRA)
    run = ["run", str(config), "--no-progress", "--no-cache"]
    assert main([*run, "--out", "local"]) == 0
    slurm_options = ["--cluster", "slurm", "--slurm-jobs", "2", "--slurm-memory", "1GB", "--slurm-walltime", "00:10:00"]
    assert main([*run, "--out", "on-slurm", *slurm_options]) == 0
    err = capsys.readouterr().err
    assert "privgame: submitting 2 Slurm jobs × 1 worker (partition the default, 1GB, 00:10:00 per job)" in err
    assert "Slurm worker" in err and "joined tcp://127.0.0.1:" in err
    _same_results(tmp_path / "local", tmp_path / "on-slurm", 6)
    assert _ask("squeue", "-h", "-t", "PD,R") == ""  # every job cancelled at the end
    assert len(list(tmp_path.glob("slurm-*.out"))) == 2  # the two jobs ran (Slurm's output files, one each)


@pytest.mark.slow
def test_lira_models_as_tasks_on_slurm_jobs_equal_the_local_run(slurm, tmp_path, monkeypatch):
    """With a cache the jobs share (one machine here; a shared file system on a cluster), the last trial's 8 models
    are batches made on either Slurm worker, then the trial, which reads them: the rows of one local process."""
    from privgame.engine import tasks

    monkeypatch.chdir(tmp_path)
    ended: list[tasks.RunsTask] = []
    original = tasks.WorkQueue.finished
    monkeypatch.setattr(tasks.WorkQueue, "finished", lambda self, t, s: (ended.append(t), original(self, t, s))[1])
    config = tmp_path / "lira.toml"
    config.write_text(LIRA)
    run = ["run", str(config), "--no-progress"]
    assert main([*run, "--out", "local", "--no-cache"]) == 0
    slurm_options = ["--cluster", "slurm", "--slurm-jobs", "2", "--slurm-memory", "1GB", "--slurm-walltime", "00:10:00"]
    assert main([*run, "--out", "on-slurm", "--cache-dir", str(tmp_path / "shared-cache"), *slurm_options]) == 0
    # trials 0-4 whole while each of the 2 workers can have one, the last split into batches on both
    assert sorted((t.job, k) for t in ended for k in t.runs) == [(5, k) for k in range(8)]
    _same_results(tmp_path / "local", tmp_path / "on-slurm", 6)
    assert len(model_entries(tmp_path / "shared-cache")) == 6 * 8


@pytest.mark.slow
def test_worker_jobs_cancelled_mid_run_are_replaced_and_lose_nothing(slurm, tmp_path, monkeypatch):
    """Both worker jobs are cancelled (as pre-emption does) once their workers have joined and taken the first
    trials: those trials run on the jobs submitted in their place, and the results are the local run's."""
    import dask

    monkeypatch.chdir(tmp_path)
    config = tmp_path / "lira.toml"
    config.write_text(LIRA)
    run = ["run", str(config), "--no-progress", "--no-cache"]
    assert main([*run, "--out", "local"]) == 0
    cancelled: list[tuple[str, int]] = []

    def preempt() -> None:
        deadline = time.monotonic() + 120
        joined: list[str] = []
        while len(joined) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
            joined = [
                p.stem.removeprefix("slurm-") for p in tmp_path.glob("slurm-*.out") if "Registered to" in p.read_text()
            ]
        stored = len(list((tmp_path / "on-slurm" / "trials").glob("*.parquet")))
        cancelled.extend((job, stored) for job in joined)
        subprocess.run(["scancel", *joined], check=True, timeout=30)

    thread = threading.Thread(target=preempt)
    thread.start()
    # a lost worker's job is replaced once the scheduler has given up waiting for it to come back (15 s by default)
    with dask.config.set({"distributed.deploy.lost-worker-timeout": "1s"}):
        try:
            assert (
                main([*run, "--out", "on-slurm", "--cluster", "slurm", "--slurm-jobs", "2", "--slurm-memory", "1GB"])
                == 0
            )
        finally:
            thread.join()
    assert len(cancelled) == 2 and all(stored < 6 for _, stored in cancelled), cancelled  # trials were left
    _same_results(tmp_path / "local", tmp_path / "on-slurm", 6)
    jobs = {p.stem.removeprefix("slurm-") for p in tmp_path.glob("slurm-*.out")}
    assert len(jobs) >= 3 and {job for job, _ in cancelled} < jobs  # jobs submitted after the two were cancelled


@pytest.mark.slow
def test_ctrl_c_cancels_every_job(slurm, tmp_path):
    """Ctrl-C in the middle of a run on Slurm: exit 130, the finished trials kept, no job left in the queue."""
    config = tmp_path / "lira.toml"
    config.write_text(LIRA)
    code = "import sys; from privgame.engine.cli import main; sys.exit(main(sys.argv[1:]))"
    command = [sys.executable, "-c", code, "run", str(config), "--out", "out", "--no-progress", "--no-cache"]
    with open(tmp_path / "stderr", "wb") as err:
        process = subprocess.Popen(
            [*command, "--cluster", "slurm", "--slurm-memory", "1GB"],
            cwd=tmp_path,
            stderr=err,
            # Ctrl-C's default even where this test runs in the background (where SIGINT is ignored, and inherited)
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
    try:
        deadline = time.monotonic() + 120
        while "Slurm worker joined" not in (tmp_path / "stderr").read_text() and time.monotonic() < deadline:
            assert process.poll() is None, (tmp_path / "stderr").read_text()
            time.sleep(0.05)
        assert _ask("squeue", "-h", "-t", "PD,R", "-o", "%j") == "privgame-worker"
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 130, (tmp_path / "stderr").read_text()
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
    assert "privgame: interrupted: " in (tmp_path / "stderr").read_text()
    assert _ask("squeue", "-h", "-t", "PD,R") == ""


@pytest.mark.slow
def test_slurm_workers_and_scheduler_listen_on_loopback_only(slurm, tmp_path, monkeypatch):
    psutil = pytest.importorskip("psutil")
    monkeypatch.chdir(tmp_path)

    def listening() -> set[str]:
        me = psutil.Process()
        return {
            c.laddr.ip
            for process in (me, me.parent())  # the worker and its nanny
            for c in process.net_connections("tcp")
            if c.status == psutil.CONN_LISTEN
        }

    with SlurmCluster(memory="1GB").client() as client:
        on_workers = client.run(listening)
        here = {c.laddr.ip for c in psutil.Process().net_connections("tcp") if c.status == psutil.CONN_LISTEN}
        environment = client.run(lambda: os.environ.get("SLURM_JOB_ID"))
    assert len(on_workers) == 1 and all(ips == {"127.0.0.1"} for ips in on_workers.values())
    assert here == {"127.0.0.1"}  # the scheduler and its HTTP routes
    assert all(job for job in environment.values())  # the worker runs inside a Slurm job


@pytest.mark.slow
def test_a_job_slurm_refuses_is_one_line_before_anything_starts(slurm, tmp_path, capsys):
    """``sbatch --test-only`` refuses the workers' job before ``--out`` is made: an unknown partition, more memory,
    CPUs or GPUs than the node has."""
    config = tmp_path / "lira.toml"
    config.write_text(LIRA)
    out = tmp_path / "out"
    cases = [
        (["--slurm-queue", "gpu"], "(partition gpu, 4GB", "invalid partition"),
        (["--slurm-memory", "100GB"], "100GB, 01:00:00 per job)", "requested node configuration is not available"),
        (["--slurm-cores", "3"], "1 Slurm job × 3 workers", "requested node configuration is not available"),
        (["--slurm-gpus", "1"], "1 GPU per job)", "invalid generic resource"),
    ]
    for extra, described, said in cases:
        assert main(["run", str(config), "--out", str(out), "--cluster", "slurm", *extra]) == 2, extra
        err = capsys.readouterr().err
        assert err.startswith("privgame: error: Slurm refuses the workers' job (") and err.count("\n") == 1, err
        assert described in err and said in err.lower(), err
    assert not out.exists() and _ask("squeue", "-h") == ""


# -- no Slurm needed -------------------------------------------------------------------------------------------------


def test_job_script_asks_for_what_the_options_say():
    pytest.importorskip("dask_jobqueue")
    cluster = SlurmCluster(
        queue="gpu,cpu", cores=4, memory="16GB", walltime="1-02:00:00", gpus=2, jobs=3, directives=("--qos=short",)
    )
    script = cluster.job_script("tcp://10.0.0.5:8786")
    directives = [line.removeprefix("#SBATCH ") for line in script.splitlines() if line.startswith("#SBATCH")]
    assert directives == [
        "-J privgame-worker",
        "-p gpu,cpu",
        "-n 1",
        "--cpus-per-task=4",
        "--mem=15G",
        "-t 1-02:00:00",
        "--gres=gpu:2",
        "--qos=short",
    ]
    command = script.strip().splitlines()[-1].split()
    assert command[:3] == [sys.executable, "-m", "distributed.cli.dask_worker"] and command[3] == "tcp://10.0.0.5:8786"
    assert command[command.index("--nthreads") + 1] == "1" and command[command.index("--nworkers") + 1] == "4"
    assert command[-5:] == ["--no-dashboard", "--dashboard-address", "127.0.0.1:0", "--host", "127.0.0.1"]
    assert cluster.workers == 12
    assert "--gres" not in SlurmCluster().job_script() and "-p " not in SlurmCluster().job_script()
    assert SlurmCluster(interface="ib0").job_script().split()[-2:] == ["--interface", "ib0"]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("queue", "a b", "the Slurm queue (--slurm-queue) must be a partition name"),
        ("queue", "", "the Slurm queue (--slurm-queue) must be a partition name"),
        ("cores", 0, "the Slurm cores per job (--slurm-cores) must be a positive integer, got 0."),
        ("cores", True, "the Slurm cores per job (--slurm-cores) must be a positive integer, got True."),
        ("gpus", -1, "the Slurm GPUs per job (--slurm-gpus) must be an integer ≥ 0, got -1."),
        ("jobs", 1.5, "the number of Slurm jobs (--slurm-jobs) must be a positive integer, got 1.5."),
        ("memory", "4", "the Slurm memory per job (--slurm-memory) must be a positive size with a unit"),
        ("memory", "0GB", "the Slurm memory per job (--slurm-memory) must be a positive size with a unit"),
        ("memory", "4 apples", "got '4 apples'."),
        ("walltime", "60", "the Slurm walltime per job (--slurm-walltime) must be a positive HH:MM:SS"),
        ("walltime", "01:60:00", "got '01:60:00'."),
        ("walltime", "00:00:00", "got '00:00:00'."),
        ("directives", ("account=x",), "each Slurm directive (--slurm-directive) must be one sbatch option"),
        ("directives", ("--a\n#SBATCH --b",), "each Slurm directive (--slurm-directive) must be one sbatch option"),
        ("interface", "eth 0", "the network interface (--slurm-interface) must be an interface name"),
    ],
)
def test_bad_values_are_refused_by_name(field, value, message):
    with pytest.raises(ValueError) as exc:
        SlurmCluster(**{field: value})
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_good_values_are_kept():
    cluster = SlurmCluster(queue="a.b_c-1,d", memory="1.5 GiB", walltime="100:00:00", gpus=0, interface="eth0")
    assert cluster.describe() == "1 Slurm job × 1 worker (partition a.b_c-1,d, 1.5 GiB, 100:00:00 per job)"
    assert SlurmCluster(gpus=2, jobs=2, cores=3).describe() == (
        "2 Slurm jobs × 3 workers (partition the default, 4GB, 01:00:00, 2 GPUs per job)"
    )
    with pytest.raises(TypeError, match="directives must be a tuple"):
        SlurmCluster(directives=["--qos=x"])  # type: ignore[arg-type]


def test_cli_refuses_bad_slurm_options_with_one_line(write_config, tmp_path, capsys):
    config, out = str(write_config()), str(tmp_path / "out")
    cases = [
        (["--slurm-jobs", "2"], "--slurm-jobs needs --cluster slurm."),
        (["--slurm-directive=--qos=x"], "--slurm-directive needs --cluster slurm."),
        (["--cluster", "slurm", "--dask-scheduler", "local"], "give it or --dask-scheduler, not both"),
        (["--cluster", "slurm", "--n-jobs", "2"], "--n-jobs sets local workers, got 2 with --cluster slurm"),
        (["--cluster", "slurm", "--slurm-cores", "0"], "(--slurm-cores) must be a positive integer, got 0."),
        (["--cluster", "slurm", "--slurm-memory", "lots"], "(--slurm-memory) must be a positive size"),
        (["--cluster", "slurm", "--slurm-walltime", "1h"], "(--slurm-walltime) must be a positive HH:MM:SS"),
        (["--cluster", "slurm", "--dask-timeout", "3"], "--dask-timeout needs --dask-scheduler."),
    ]
    for extra, message in cases:
        assert main(["run", config, "--out", out, *extra]) == 2, extra
        err = capsys.readouterr().err
        assert err.startswith("privgame: error: ") and message in err and err.count("\n") == 1, (extra, err)
    with pytest.raises(SystemExit) as exc:
        main(["run", config, "--out", out, "--cluster", "pbs"])
    assert exc.value.code == 2 and "argument --cluster: invalid choice: 'pbs'" in capsys.readouterr().err
    assert not Path(out).exists()


def test_no_sbatch_is_one_line_before_anything_is_made(write_config, tmp_path, capsys, monkeypatch):
    pytest.importorskip("dask_jobqueue")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    out = tmp_path / "out"
    assert main(["run", str(write_config()), "--out", str(out), "--cluster", "slurm"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "privgame: error: --cluster slurm submits jobs with Slurm's sbatch, and there is no sbatch on PATH: run "
        "privgame on a machine that can submit jobs (a login node).\n"
    )
    assert not out.exists()


def test_a_missing_interface_is_one_line(write_config, tmp_path, capsys, monkeypatch):
    pytest.importorskip("dask_jobqueue")
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "sbatch").write_text("#!/bin/sh\nexit 0\n")
    (fake / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "out"
    args = ["run", str(write_config()), "--out", str(out), "--cluster", "slurm", "--slurm-interface", "nosuch0"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("privgame: error: the network interface (--slurm-interface) must be one of this machine's (")
    assert "got 'nosuch0'." in err and err.count("\n") == 1 and not out.exists()


def test_dry_run_shows_the_job_script_and_submits_nothing(write_config, tmp_path, capsys, monkeypatch):
    pytest.importorskip("dask_jobqueue")
    fake = tmp_path / "bin"
    fake.mkdir()
    log = tmp_path / "calls"
    for name in ("sbatch", "squeue", "scancel"):  # any call of a Slurm command would be logged
        (fake / name).write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\nexit 1\n')
        (fake / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "out"
    args = ["--cluster", "slurm", "--slurm-jobs", "4", "--slurm-cores", "2", "--slurm-gpus", "1"]
    assert main(["run", str(write_config()), "--out", str(out), "--dry-run", *args]) == 0
    stdout = capsys.readouterr().out
    assert "cluster: 4 Slurm jobs × 2 workers (partition the default, 4GB, 01:00:00, 1 GPU per job), not submitted" in (
        stdout
    )
    assert "  #SBATCH --gres=gpu:1" in stdout and "--nworkers 2" in stdout
    assert "left on 8 workers" in stdout  # the time estimate counts the jobs' workers
    assert not log.exists() and not out.exists()


def test_importing_dask_jobqueue_leaves_ctrl_c_alone():
    """dask-jobqueue 0.9.0 sets SIGINT to sys.exit() on import (dask/dask-jobqueue#696): checked in a fresh
    interpreter, where the import happens."""
    pytest.importorskip("dask_jobqueue")
    code = (
        "import signal, sys\n"
        "from privgame.engine.slurm import _jobqueue\n"
        "assert 'dask_jobqueue' not in sys.modules\n"
        "_jobqueue()\n"
        "assert 'dask_jobqueue' in sys.modules\n"
        "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # Python's own handler, even in background
    )
    assert done.stdout.strip() == "True"


def test_resume_command_keeps_the_slurm_options():
    from privgame.engine.cli import _parser, _resume_command

    slurm = ["--cluster", "slurm", "--slurm-jobs", "8", "--slurm-queue", "cpu"]
    args = _parser().parse_args(
        ["run", "c.toml", "--out", "o", *slurm, "--slurm-directive=--qos=short", "--slurm-directive=--account=p"]
    )
    assert _resume_command(args) == (
        "privgame run c.toml --out o --cluster slurm --slurm-queue cpu --slurm-jobs 8 --slurm-directive=--qos=short "
        "--slurm-directive=--account=p"
    )
