"""The runner: reproducibility across workers and seeds, resumption after SIGKILL, refusing another config."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from games.cli import main
from games.config import load_config
from games.runner import plan_trials, run_experiment
from games.store import ResultsStore, StoreError


def _run(path: Path, out: Path, n_jobs: int = 1) -> ResultsStore:
    return run_experiment(load_config(path), out, config_bytes=path.read_bytes(), n_jobs=n_jobs, progress=False)


def _results(store: ResultsStore) -> pd.DataFrame:
    return store.rows().drop(columns=["seconds"])


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
    cmd = [sys.executable, "-m", "games.cli", "run", str(path), "--out", str(out), "--no-progress"]
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
