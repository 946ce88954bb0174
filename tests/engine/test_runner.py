"""The runner: reproducibility across workers and seeds, resumption after SIGKILL, refusing another config,
failing trials, orphan-free kills, Ctrl-C and the dry run."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privgame.engine import runner
from privgame.engine.cli import main
from privgame.engine.config import load_config
from privgame.engine.plan import analytic_epsilons, plan_trials
from privgame.engine.registry import MECHANISMS
from privgame.engine.runner import TrialsFailed, run_experiment
from privgame.engine.store import ResultsStore, StoreError, drop_timings


def _run(path: Path, out: Path, n_jobs: int = 1) -> ResultsStore:
    return run_experiment(load_config(path), out, config_bytes=path.read_bytes(), n_jobs=n_jobs, progress=False)


def _results(store: ResultsStore) -> pd.DataFrame:
    return store.rows().pipe(drop_timings)


def _assert_same(a: ResultsStore, b: ResultsStore) -> None:
    pd.testing.assert_frame_equal(_results(a), _results(b))
    for trial in a.done():
        oa, ob = a.load_outcome(trial), b.load_outcome(trial)
        np.testing.assert_array_equal(oa.scores, ob.scores)
        np.testing.assert_array_equal(oa.membership, ob.membership)


def test_n_jobs_1_and_2_identical(write_config, tmp_path):
    path = write_config()
    _assert_same(_run(path, tmp_path / "one", 1), _run(path, tmp_path / "two", 2))


def test_same_seed_identical_different_seed_different(write_config, tmp_path):
    a = _run(write_config(), tmp_path / "a")
    b = _run(write_config(), tmp_path / "b")
    c = _run(write_config({"experiment": {"seed": 8}}, name="c8"), tmp_path / "c")
    _assert_same(a, b)
    assert not np.array_equal(a.load_outcome(0).membership, c.load_outcome(0).membership)
    assert not np.array_equal(_results(a)["v"], _results(c)["v"])


def test_trials_have_distinct_streams(write_config):
    trials = plan_trials(load_config(write_config()))
    assert [t.index for t in trials] == list(range(6))
    assert len({t.seed.spawn_key for t in trials}) == 6
    assert [(t.grid_index, t.repetition) for t in trials] == [(g, j) for g in range(2) for j in range(3)]


def test_results_directory_layout(write_config, tmp_path):
    path = write_config()
    store = _run(path, tmp_path / "out")
    root = tmp_path / "out"
    assert (root / "config.toml").read_bytes() == path.read_bytes()
    manifest = store.manifest()
    assert manifest["n_trials"] == 6 and manifest["swept"] == ["mechanism.epsilon"]
    assert [g["epsilon_analytic"] for g in manifest["grid"]] == pytest.approx([1.0, 2.0], abs=1e-6)
    assert sorted(p.name for p in (root / "trials").iterdir()) == [f"trial-{i:06d}.parquet" for i in range(6)]
    assert sorted(p.name for p in (root / "raw").iterdir()) == [f"trial-{i:06d}.npz" for i in range(6)]
    rows = pd.read_parquet(root / "results.parquet")
    assert list(rows["trial"]) == list(range(6))
    for column in ("grid_point", "repetition", "mechanism.epsilon", "epsilon_analytic", "epsilon_lb", "m", "r", "v"):
        assert column in rows.columns
    assert not list(root.rglob("*.tmp"))
    outcome = store.load_outcome(4)
    assert outcome.scores.shape == (2000,) and outcome.membership.dtype == bool


def test_rerun_skips_finished_trials(write_config, tmp_path):
    path = write_config()
    store = _run(path, tmp_path / "out")
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "out" / "trials").iterdir()}
    os.remove(tmp_path / "out" / "trials" / "trial-000004.parquet")
    _run(path, tmp_path / "out")
    after = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "out" / "trials").iterdir()}
    assert set(after) == set(before)
    assert all(after[k] == before[k] for k in before if k != "trial-000004.parquet")
    _assert_same(store, _run(path, tmp_path / "fresh"))


def test_different_config_refused_force_starts_over(write_config, tmp_path, capsys):
    out = tmp_path / "out"
    _run(write_config(), out)
    other = write_config({"mechanism": {"epsilon": [4.0]}}, name="other")
    with pytest.raises(StoreError, match="holds results of a different config"):
        _run(other, out)
    assert main(["run", str(other), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "holds results of a different config" in err and "--force" in err and err.count("\n") == 1
    assert main(["run", str(other), "--out", str(out), "--no-progress", "--force"]) == 0
    assert len(ResultsStore(out).done()) == 3


def test_refuses_foreign_directory(write_config, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    with pytest.raises(StoreError, match="holds no privgame results"):
        _run(write_config(), out)
    assert (out / "thesis.tex").read_text() == "precious"


SLOW_CONFIG = """
[experiment]
name = "killable"
seed = 11
repetitions = 40
[game]
name = "one-run"
m = 400000
k_pos = 1000
k_neg = 1000
[mechanism]
name = "gaussian"
sigma = 1.0
[attack]
name = "identity"
[analysis]
confidence = 0.95
delta = 1e-9
"""


def test_resume_after_sigkill_equals_uninterrupted_run(tmp_path):
    path = tmp_path / "killable.toml"
    path.write_text(SLOW_CONFIG)
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "privgame.engine.cli", "run", str(path), "--out", str(out), "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if (out / "trials").is_dir() and len(list((out / "trials").glob("trial-*.parquet"))) >= 3:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    n_done = len(ResultsStore(out).done())
    assert 3 <= n_done < 40, "the run must be killed half-way for this test to mean anything"
    assert subprocess.run(cmd, check=False).returncode == 0
    resumed = ResultsStore(out)
    assert resumed.done() == set(range(40))
    assert list(resumed.rows()["trial"]) == list(range(40))  # nothing lost, nothing doubled
    assert not list(out.rglob("*.tmp"))
    _assert_same(resumed, _run(path, tmp_path / "uninterrupted", n_jobs=2))


def test_dask_backend_gives_identical_results(write_config, tmp_path):
    pytest.importorskip("dask.distributed")
    path = write_config()
    config = load_config(path)
    via_dask = run_experiment(config, tmp_path / "dask", n_jobs=2, progress=False, dask_scheduler="local")
    _assert_same(via_dask, _run(path, tmp_path / "loky", 1))


# -- failing trials ----------------------------------------------------------------------------------------
PLUGINS = Path(__file__).parents[1] / "plugins"
sys.path.insert(0, str(PLUGINS))  # the faulty_mechanisms plugin, for this process and the workers it starts


@pytest.fixture(autouse=True)
def _forget_faulty_plugin():
    """Unregister the plugin mechanism after each test, so other tests see the registry as it ships."""
    yield
    sys.modules.pop("faulty_mechanisms", None)
    if "test-faulty" in MECHANISMS:
        MECHANISMS.unregister("test-faulty")


def _faulty(write_config, name: str = "faulty", repetitions: int = 4, **mechanism) -> Path:
    """Two grid points × ``repetitions`` of the ``test-faulty`` plugin mechanism (see its module)."""
    return write_config(
        {
            "experiment": {"plugins": ["faulty_mechanisms"], "repetitions": repetitions},
            "mechanism": {"name": "test-faulty", **mechanism},
        },
        name=name,
    )


def _players(log: Path) -> set[str]:
    """The ids of the processes that played trials, from the plugin's log."""
    return {line.split()[0] for line in log.read_text().splitlines()}


def _failure_files(out: Path) -> dict[int, dict]:
    return {int(p.stem.split("-")[1]): json.loads(p.read_text()) for p in (out / "failures").glob("trial-*.json")}


def test_failing_trials_are_recorded_the_run_goes_on_and_resume_retries(write_config, tmp_path, capsys):
    flag = tmp_path / "faults-on"
    flag.touch()
    path = _faulty(write_config, fail=0.3, exit=0.3, only_if=str(flag))
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--no-progress"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    failures = _failure_files(out)
    failed = sorted(failures)
    assert 0 < len(failed) < 8
    summary = err[-1]
    assert summary.startswith(f"privgame: {len(failed)} of 8 trials failed (trials {', '.join(map(str, failed))})")
    assert f"tracebacks in {out / 'failures'}" in summary and "retries the failed ones" in summary
    kinds = {info["error"].split(":")[0] for info in failures.values()}
    assert kinds == {"RuntimeError", "SystemExit"}  # a raise and a sys.exit(3), both caught as failures
    for trial, info in failures.items():
        assert info["trial"] == trial and info["grid_point"] == trial // 4 and info["repetition"] == trial % 4
        assert info["params"] == {"mechanism.epsilon": [1.0, 2.0][trial // 4]}
        assert "faulty_mechanisms.py" in info["traceback"] and "release" in info["traceback"]
    store = ResultsStore(out)
    assert store.done() == set(range(8)) - set(failed)  # the other trials are stored
    assert set(store.failures()) == set(failed)
    # report: a failed column per grid point, and one line saying where the tracebacks are
    assert main(["report", str(out), "--format", "csv"]) == 0
    captured = capsys.readouterr()
    table = pd.read_csv(io.StringIO(captured.out))
    assert table["failed"].tolist() == [sum(t < 4 for t in failed), sum(t >= 4 for t in failed)]
    assert f"{len(failed)} trial{'s' if len(failed) > 1 else ''} failed" in captured.err
    # resume retries the failed trials (their faults now off): the results equal a run that never failed
    flag.unlink()
    assert main(["run", str(path), "--out", str(out), "--no-progress"]) == 0
    assert ResultsStore(out).done() == set(range(8)) and not _failure_files(out)
    clean = _faulty(write_config, name="clean", fail=0.3, exit=0.3, only_if=str(flag))
    _assert_same(ResultsStore(out), _run(clean, tmp_path / "never-failed"))
    assert main(["report", str(out), "--format", "csv"]) == 0
    assert "failed" not in capsys.readouterr().out


def test_sys_exit_in_a_trial_is_a_failure_not_a_silent_exit_0(write_config, tmp_path, capsys):
    path = _faulty(write_config, repetitions=1, exit=1.0)
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out), "--no-progress"]) == 1
    assert "2 of 2 trials failed" in capsys.readouterr().err
    assert {info["error"] for info in _failure_files(out).values()} == {
        "SystemExit: the trial's code called sys.exit(3)"
    }
    assert main(["report", str(out)]) == 2
    assert "holds no finished trial: 2 failed (tracebacks in" in capsys.readouterr().err


def test_fail_fast_stops_at_the_first_failure(write_config, tmp_path, capsys):
    path = _faulty(write_config, fail=0.5)
    out = tmp_path / "out"
    with pytest.raises(TrialsFailed) as info:
        _run(path, tmp_path / "all")
    first = min(info.value.failed)
    assert main(["run", str(path), "--out", str(out), "--no-progress", "--fail-fast"]) == 1
    err = capsys.readouterr().err
    assert f"stopped at the first failure (--fail-fast): 1 of {8} trials failed (trial {first})" in err
    assert sorted(_failure_files(out)) == [first]
    assert ResultsStore(out).done() == set(range(first))  # in the parent, trials run in order


def test_workers_play_the_trials_with_the_parents_results(write_config, tmp_path, monkeypatch):
    """With the parent kept from playing, every trial runs in a worker: same rows, arrays and failures."""
    log = tmp_path / "pids"
    path = _faulty(write_config, fail=0.3, log=str(log))
    with pytest.raises(TrialsFailed) as in_parent:
        _run(path, tmp_path / "one", n_jobs=1)
    assert _players(log) == {str(os.getpid())}
    log.unlink()
    monkeypatch.setattr(runner, "PARENT_PLAYS_WHILE_WORKERS_START", False)
    with pytest.raises(TrialsFailed) as in_workers:
        _run(path, tmp_path / "two", n_jobs=2)
    pids = _players(log)
    assert pids and str(os.getpid()) not in pids
    # each of the 2 workers gets cores // 2 threads per pool (as joblib sets them), unless the user chose a size
    threads = os.environ.get("OMP_NUM_THREADS", str(max((os.cpu_count() or 1) // 2, 1)))
    assert {line.split()[1] for line in log.read_text().splitlines()} == {threads}
    assert in_workers.value.failed == in_parent.value.failed
    _assert_same(ResultsStore(tmp_path / "one"), ResultsStore(tmp_path / "two"))
    for trial, info in _failure_files(tmp_path / "two").items():
        assert info["error"] == _failure_files(tmp_path / "one")[trial]["error"]


def test_parent_plays_a_small_run_without_waiting_for_workers(write_config, tmp_path):
    from joblib.externals.loky import get_reusable_executor

    # end any worker an earlier test left ready, so this run's workers start from nothing (a second or more)
    get_reusable_executor(max_workers=1).shutdown(wait=True, kill_workers=True)
    log = tmp_path / "pids"
    path = _faulty(write_config, log=str(log))
    start = time.perf_counter()
    store = _run(path, tmp_path / "out", n_jobs=2)
    assert store.done() == set(range(8))
    assert _players(log) == {str(os.getpid())}, "the parent should have played all 8 quick trials"
    assert time.perf_counter() - start < 30


# -- kills and Ctrl-C --------------------------------------------------------------------------------------
def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry.name))
    return children


def _descendants(pid: int) -> set[int]:
    children, found, todo = _children(), set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except OSError:
        return False


def _start_slow_run(write_config, tmp_path: Path) -> tuple[subprocess.Popen[str], Path, Path, set[int]]:
    """``privgame run --n-jobs 2`` of 2-second trials in a subprocess, returned once a worker plays one and a trial
    is stored, with the processes it has started then."""
    log = tmp_path / "pids"
    path = _faulty(write_config, name="slow", repetitions=10, sleep=2.0, log=str(log))
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PLUGINS), os.environ.get("PYTHONPATH", "")])}
    cmd = [
        sys.executable,
        "-m",
        "privgame.engine.cli",
        "run",
        str(path),
        "--out",
        str(out),
        "--n-jobs",
        "2",
        "--no-progress",
    ]
    # SIGINT back to its default in the child: a suite started in the background (`cmd &` in a script) inherits
    # SIGINT ignored, and Python then installs no KeyboardInterrupt, so Ctrl-C would have nothing to test
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and proc.poll() is None:
        worker_played = log.exists() and _players(log) - {str(proc.pid)}
        if worker_played and any((out / "trials").glob("trial-*.parquet")):
            break
        time.sleep(0.1)
    assert proc.poll() is None, "the run ended before its workers played a trial"
    descendants = _descendants(proc.pid)
    assert len(descendants) >= 2, descendants  # two workers at least (and loky's resource trackers)
    return proc, path, out, descendants


def _wait_gone(pids: set[int], seconds: float) -> set[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = {p for p in pids if _alive(p)}
        if not left:
            return left
        time.sleep(0.1)
    return {p for p in pids if _alive(p)}


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="counts processes through /proc")
def test_sigkill_of_the_parent_leaves_no_process_behind(write_config, tmp_path):
    proc, _, _, descendants = _start_slow_run(write_config, tmp_path)
    proc.kill()
    proc.wait()
    assert _wait_gone(descendants, 5.0) == set(), "workers or trackers outlived the killed run"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="counts processes through /proc")
def test_ctrl_c_stops_cleanly_and_says_how_to_resume(write_config, tmp_path):
    proc, path, out, descendants = _start_slow_run(write_config, tmp_path)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    stored = len(ResultsStore(out).done())
    assert 0 < stored < 20
    # privgame's own last line (a worker pool's shutdown warning on a loaded machine may come after it)
    ours = [line for line in err.strip().splitlines() if line.startswith("privgame:")]
    assert ours[-1] == (
        f"privgame: interrupted: {stored} of 20 trials are safely stored in {out}; "
        f"resume with: privgame run {path} --out {out} --n-jobs 2 --no-progress"
    ), err
    assert "Traceback" not in err
    assert _wait_gone(descendants, 5.0) == set()
    assert not list(out.rglob("*.tmp"))


# -- dry run -----------------------------------------------------------------------------------------------
def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


def test_dry_run_prints_the_plan_and_creates_nothing(write_config, tmp_path, capsys):
    out = tmp_path / "out"
    path = write_config()
    assert main(["run", str(path), "--out", str(out), "--dry-run"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0] == "small: 2 grid points"
    assert lines[1].startswith("  0: mechanism.epsilon = 1.0") and lines[2].startswith("  1: mechanism.epsilon = 2.0")
    assert f"trials: 6 (3 per grid point); in {out}: 0 done, 6 to run" in lines
    assert any(line.startswith("time: about ") and "(trial 0, timed here and not stored)" in line for line in lines)
    assert any(line.startswith("memory: ") for line in lines)
    assert "timing trial 0" in captured.err
    assert not out.exists()


def test_dry_run_on_a_partly_done_directory_changes_nothing(write_config, tmp_path, capsys):
    out = tmp_path / "out"
    path = write_config()
    _run(path, out)
    (out / "trials" / "trial-000005.parquet").unlink()
    (out / "raw" / "trial-000001.npz").write_bytes(b"PK")
    before = _snapshot(out)
    capsys.readouterr()
    assert main(["run", str(path), "--out", str(out), "--dry-run", "--n-jobs", "2"]) == 0
    text = capsys.readouterr().out
    assert f"in {out}: 4 done, 2 to run (1 damaged, run again)" in text
    assert "(median of the 4 finished trials); about" in text and "for the 2 left on 2 workers" in text
    assert _snapshot(out) == before
    other = write_config({"experiment": {"seed": 8}}, name="other")
    assert main(["run", str(other), "--out", str(out), "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "note: a run would be refused" in text and "experiment.seed: 7 → 8" in text
    assert _snapshot(out) == before


def test_dry_run_reports_a_failing_trial(write_config, tmp_path, capsys):
    path = _faulty(write_config, repetitions=1, fail=1.0)
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--dry-run"]) == 1
    assert "the timed trial failed: trial 0 failed: RuntimeError: deliberate failure" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("n_jobs", [0, -2, True, 1.5, "2"])
def test_run_experiment_refuses_a_bad_n_jobs_before_anything(write_config, tmp_path, n_jobs):
    with pytest.raises(ValueError, match=r"^n_jobs must be a positive integer or -1, got "):
        run_experiment(load_config(write_config()), tmp_path / "out", n_jobs=n_jobs, progress=False)
    assert not (tmp_path / "out").exists()


def test_run_experiment_refuses_an_out_it_cannot_write(write_config, tmp_path):
    config = load_config(write_config())
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(ValueError, match=r"^out '.*afile' is a file, not a directory\.$"):
        run_experiment(config, afile, progress=False)
    with pytest.raises(ValueError, match=r"^out .*cannot be a directory: '.*afile' is a file\.$"):
        run_experiment(config, afile / "sub", progress=False)
    with pytest.raises(ValueError, match=r"^out is empty; give a directory\.$"):
        run_experiment(config, "", progress=False)


def test_progress_labels_show_control_characters_escaped(write_config, tmp_path, capsys):
    path = write_config({"experiment": {"name": "NAME"}})
    path.write_text(path.read_text().replace('"NAME"', '"evil\\u001b[2J\\nname"'))  # TOML escapes
    run_experiment(load_config(path), tmp_path / "out", progress=True)
    err = capsys.readouterr().err
    assert "evil\\x1b[2J\\nname" in err
    assert "\x1b[2J" not in err


def test_a_trial_that_kills_its_worker_is_recorded_and_the_run_goes_on(write_config, tmp_path, monkeypatch):
    """SIGKILL inside a worker (what the OOM killer does) breaks loky's pool: the trials in flight are played
    again on a new pool, a trial in flight at two deaths is recorded as failed, and a resume completes the run."""
    armed = tmp_path / "armed"
    armed.write_text("")
    with pytest.raises(TrialsFailed) as reference:  # the same draws decide which trials kill their worker
        _run(_faulty(write_config, name="reference", fail=0.3), tmp_path / "reference")
    culprits = set(reference.value.failed)
    assert culprits and len(culprits) < 8
    path = _faulty(write_config, kill=0.3, spare_pid=os.getpid(), only_if=str(armed))
    monkeypatch.setattr(runner, "PARENT_PLAYS_WHILE_WORKERS_START", False)
    out = tmp_path / "out"
    with pytest.raises(TrialsFailed) as killed:
        _run(path, out, n_jobs=2)
    assert culprits <= set(killed.value.failed)
    failures = _failure_files(out)
    for trial in culprits:
        assert failures[trial]["error"].startswith("the worker process playing this trial died 2 times")
        assert "SIGKILL" in failures[trial]["error"]
    stored = ResultsStore(out).done()
    assert stored == set(range(8)) - set(killed.value.failed)
    armed.unlink()
    resumed = _run(path, out, n_jobs=2)
    assert resumed.done() == set(range(8))
    _assert_same(resumed, _run(path, tmp_path / "clean", n_jobs=1))


@pytest.fixture
def _forget_marked_plugins():
    yield
    for module in ("marked_mechanisms", "marking_plugin"):
        sys.modules.pop(module, None)
    if "test-marked" in MECHANISMS:
        MECHANISMS.unregister("test-marked")


def test_every_worker_imports_the_configs_plugins(write_config, tmp_path, monkeypatch, _forget_marked_plugins):
    """A side-effect-only plugin (it registers nothing; its import sets a flag another plugin's mechanism needs)
    is imported in every loky worker before its first trial: unpickling a trial imports only the mechanism's own
    module, so before the fix every trial the workers played failed."""
    from joblib.externals.loky import get_reusable_executor

    get_reusable_executor(max_workers=1).shutdown(wait=True, kill_workers=True)  # no worker left by other tests
    log = tmp_path / "pids"
    path = write_config(
        {
            "experiment": {"plugins": ["marked_mechanisms", "marking_plugin"], "repetitions": 4},
            "mechanism": {"name": "test-marked", "log": str(log)},
        }
    )
    monkeypatch.setattr(runner, "PARENT_PLAYS_WHILE_WORKERS_START", False)  # the workers play every trial
    store = _run(path, tmp_path / "out", n_jobs=2)
    assert store.done() == set(range(8))
    pids = _players(log)
    assert pids and str(os.getpid()) not in pids


def test_a_plugin_a_worker_cannot_import_fails_its_trials_with_the_reason(tmp_path):
    """In a worker, a plugin that does not import fails each of the job's trials with the import error."""
    job = _jobs_of_a_tiny_config(tmp_path)[0]
    attempt = runner._worker_attempt(runner._WorkerSetup(("no_such_plugin_module_xyz",)), *job)
    assert attempt.failure is not None
    assert "cannot import 'no_such_plugin_module_xyz'" in attempt.failure["error"]
    assert "(in a worker)" in attempt.failure["error"]


def _jobs_of_a_tiny_config(tmp_path):
    from privgame.engine.config import parse_config

    config = parse_config(
        {
            "experiment": {"name": "tiny", "seed": 1, "repetitions": 1},
            "game": {"name": "one-run", "m": 100, "k_pos": 10, "k_neg": 10},
            "mechanism": {"name": "randomized-response", "epsilon": 1.0},
            "attack": {"name": "identity"},
        }
    )
    return runner._jobs(config, plan_trials(config), [1.0] * len(config.grid), None, None)


def _analytic_step_label(config, capsys) -> str:
    analytic_epsilons(config, progress=True)
    return capsys.readouterr().err


def test_the_analytic_step_names_the_sigma_calibration_only_when_there_is_one(capsys):
    """The "analytic ε (σ calibration)" line showed for mechanisms that have no σ (randomized response)."""
    from privgame.engine.config import parse_config

    base = {"experiment": {"name": "label", "seed": 1}, "game": {"name": "one-run", "m": 100, "k_pos": 5, "k_neg": 5}}
    rr = parse_config(
        {**base, "mechanism": {"name": "randomized-response", "epsilon": 1.0}, "attack": {"name": "identity"}}
    )
    err = _analytic_step_label(rr, capsys)
    assert "analytic ε" in err and "σ calibration" not in err
    dpsgd = {"name": "dpsgd-whitebox", "sampling_rate": 0.5, "steps": 3, "model": "mlp"}
    game = {"name": "one-run", "m": 60, "k_pos": 5, "k_neg": 5, "data": "digits", "train_rows": 50}
    fixed = {**base, "game": game, "attack": {"name": "identity"}, "mechanism": {**dpsgd, "noise_multiplier": 1.0}}
    assert "σ calibration" not in _analytic_step_label(parse_config(fixed), capsys)  # σ given: nothing to calibrate
    target = {**fixed, "mechanism": {**dpsgd, "epsilon": 4.0}}
    assert "analytic ε (σ calibration)" in _analytic_step_label(parse_config(target), capsys)


def test_a_trials_warning_is_shown_once_per_run_whichever_processes_play(write_config, tmp_path, monkeypatch, capfd):
    """The one-run audit's δ-term warning (2mδ not small against the per-test significance) was printed by every
    process that played a trial: by each worker, straight to the terminal.  Trials now send their warnings back and
    the parent issues each distinct one once per run (the two grid points share the message)."""
    from joblib.externals.loky import get_reusable_executor

    get_reusable_executor(max_workers=1).shutdown(wait=True, kill_workers=True)
    path = write_config(
        {"experiment": {"repetitions": 6}, "game": {"m": 2000, "k_pos": 100, "k_neg": 100}, "analysis": {"delta": 1e-4}}
    )
    monkeypatch.setattr(runner, "PARENT_PLAYS_WHILE_WORKERS_START", False)  # the workers play every trial
    with warnings.catch_warnings(record=True) as relayed:
        warnings.simplefilter("default")
        _run(path, tmp_path / "out", n_jobs=2)
    printed = capfd.readouterr().err.count("takes more than a tenth of the significance")  # by the workers
    issued = [w for w in relayed if "takes more than a tenth of the significance" in str(w.message)]
    assert (printed, len(issued)) == (0, 1)
    assert issued[0].category is UserWarning and issued[0].filename.endswith("one_run.py")


def test_a_warning_category_that_cannot_travel_becomes_a_named_user_warning():
    """A category defined inside a function cannot be pickled; sent back from a worker it would fail the trial's
    whole result, so it travels as a UserWarning naming it (a module-level category travels as itself)."""
    import pickle

    class LocalWarning(UserWarning):
        pass

    assert runner._sendable(LocalWarning, "careful") == (UserWarning, "LocalWarning: careful")
    assert runner._sendable(RuntimeWarning, "careful") == (RuntimeWarning, "careful")
    attempt = runner._Attempt(0, warned=((*runner._sendable(LocalWarning, "careful"), "x.py", 1),))
    pickle.dumps(attempt)  # what a worker sends back
