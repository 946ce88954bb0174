"""The results store: checksums, damaged trials, half-made directories at every kill point, config changes."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import privgame.engine.store as store_module
from privgame.engine.cli import main
from privgame.engine.config import config_hash, load_config
from privgame.engine.runner import run_experiment
from privgame.engine.store import (
    CHECKSUM_COLUMNS,
    ResultsStore,
    StoreError,
    config_differences,
    describe_trials,
    drop_timings,
    writing,
)
from privgame.games._base import TrialOutcome


def _run(path: Path, out: Path, **kwargs) -> ResultsStore:
    return run_experiment(load_config(path), out, config_bytes=path.read_bytes(), progress=False, **kwargs)


def _assert_same(a: ResultsStore, b: ResultsStore) -> None:
    """Every column but ``seconds`` equal (numbers bit for bit, checksums too), and every raw array."""
    pd.testing.assert_frame_equal(a.rows().pipe(drop_timings), b.rows().pipe(drop_timings))
    assert a.done() == b.done()
    for trial in a.done():
        oa, ob = a.load_outcome(trial), b.load_outcome(trial)
        np.testing.assert_array_equal(oa.scores, ob.scores)
        np.testing.assert_array_equal(oa.membership, ob.membership)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


# -- checksums ---------------------------------------------------------------------------------------------
def test_rows_carry_the_checksums_of_their_files_and_raw_bytes_are_reproducible(write_config, tmp_path):
    path = write_config()
    a, b = _run(path, tmp_path / "a"), _run(path, tmp_path / "b")
    rows = a.rows()
    for column in CHECKSUM_COLUMNS:
        assert column in rows.columns
    for trial, checksum in zip(rows["trial"], rows["sha256_raw"], strict=True):
        assert checksum == _sha(tmp_path / "a" / "raw" / f"trial-{trial:06d}.npz")
    assert set(rows["sha256_records"]) == {""}  # the one-run game has no per-record rows
    # a fixed timestamp in the .npz members: the same trial gives the same bytes in any run
    assert list(rows["sha256_raw"]) == list(b.rows()["sha256_raw"])


def test_records_file_is_checked_too(tmp_path):
    store = ResultsStore.open_for_run(tmp_path / "out", {"config_hash": "x", "format": 1}, b"")
    outcome = TrialOutcome(scores=np.arange(3.0), membership=np.array([True, False, True]))
    row = {"trial": 0, "grid_point": 0, "repetition": 0}
    store.write_trial(0, row, outcome, [{"record": 1, "game": "traditional", "auc": 0.5}])
    assert store.done() == {0} and len(store.records()) == 1
    assert store.rows()["sha256_records"].iloc[0] == _sha(tmp_path / "out" / "records" / "trial-000000.parquet")
    _truncate(tmp_path / "out" / "records" / "trial-000000.parquet")
    fresh = ResultsStore(tmp_path / "out")
    assert fresh.done() == set() and fresh.records().empty
    assert fresh.damaged() == {0: "records/trial-000000.parquet does not match its checksum"}


def test_object_arrays_are_refused_not_pickled(tmp_path):
    store = ResultsStore.open_for_run(tmp_path / "out", {"config_hash": "x", "format": 1}, b"")
    outcome = TrialOutcome(scores=np.zeros(2), membership=np.zeros(2, bool), arrays={"ids": np.array(["a", None])})
    with pytest.raises(ValueError, match="pickle"):
        store.write_trial(0, {"trial": 0, "grid_point": 0, "repetition": 0}, outcome)
    assert store.done() == set()


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda out: _truncate(out / "raw" / "trial-000002.npz"), "raw/trial-000002.npz does not match its checksum"),
        (lambda out: os.remove(out / "raw" / "trial-000002.npz"), "raw/trial-000002.npz is missing"),
        (lambda out: _truncate(out / "trials" / "trial-000002.parquet"), "is unreadable"),
        (lambda out: (out / "trials" / "trial-000002.parquet").write_bytes(b""), "is unreadable"),
    ],
    ids=["truncated-raw", "deleted-raw", "truncated-row", "empty-row"],
)
def test_damaged_trial_is_rerun_from_its_seed(write_config, tmp_path, capsys, damage, problem):
    path = write_config()
    out = tmp_path / "out"
    _run(path, out)
    damage(out)
    assert 2 not in ResultsStore(out).done()
    assert problem in ResultsStore(out).damaged()[2]
    capsys.readouterr()
    resumed = _run(path, out)
    err = capsys.readouterr().err
    assert "1 damaged trial" in err and "trial 2" in err and "will be run again" in err
    assert resumed.damaged() == {} and resumed.done() == set(range(6))
    _assert_same(resumed, _run(path, tmp_path / "uninterrupted"))
    assert pd.read_parquet(out / "results.parquet")["trial"].tolist() == list(range(6))


def test_corrupted_files_resume_equals_uninterrupted_run_bit_for_bit(write_config, tmp_path):
    path = write_config({"experiment": {"repetitions": 4}})
    out = tmp_path / "out"
    _run(path, out)
    _truncate(out / "raw" / "trial-000001.npz")
    os.remove(out / "raw" / "trial-000006.npz")
    _truncate(out / "trials" / "trial-000003.parquet")
    before = {p.name: p.stat().st_mtime_ns for p in (out / "trials").iterdir()}
    resumed = _run(path, out)
    after = {p.name: p.stat().st_mtime_ns for p in (out / "trials").iterdir()}
    rewritten = {name for name in after if after[name] != before.get(name)}
    assert rewritten == {f"trial-{t:06d}.parquet" for t in (1, 3, 6)}  # only the damaged ones were played again
    fresh = _run(path, tmp_path / "fresh")
    _assert_same(resumed, fresh)
    numeric = [c for c in fresh.rows().columns if c != "seconds" and pd.api.types.is_numeric_dtype(fresh.rows()[c])]
    assert {"epsilon_lb", "m", "r", "v", "epsilon_analytic"} <= set(numeric)
    for column in numeric:
        assert resumed.rows()[column].to_numpy().tobytes() == fresh.rows()[column].to_numpy().tobytes()


def test_report_names_damaged_trials_instead_of_crashing(write_config, tmp_path, capsys):
    path = write_config()
    out = tmp_path / "out"
    _run(path, out)
    _truncate(out / "raw" / "trial-000004.npz")
    _truncate(out / "raw" / "trial-000001.npz")
    ladder = tmp_path / "ladder.png"
    capsys.readouterr()
    assert main(["report", str(out), "--ladder", str(ladder)]) == 0
    captured = capsys.readouterr()
    damaged_lines = [line for line in captured.err.splitlines() if line.startswith("privgame:") and "damaged" in line]
    assert len(damaged_lines) == 1
    line = damaged_lines[0]
    assert "2 damaged trials" in line and "trials 1, 4" in line and "`privgame run` with the same config" in line
    assert "Traceback" not in captured.err and ladder.exists()
    assert "n_trials" in captured.out  # the table is still printed, from the 4 sound trials


def test_rows_written_before_checksums_are_checked_by_reading(write_config, tmp_path):
    """A results directory of an earlier privgame (no checksum columns, the raw config's hash) still resumes."""
    path = write_config()
    out = tmp_path / "out"
    _run(path, out)
    for row_path in (out / "trials").glob("trial-*.parquet"):
        table = pq.read_table(row_path)
        pq.write_table(table.drop_columns(list(CHECKSUM_COLUMNS)), row_path)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest.pop("normalised_config")
    manifest["config_hash"] = config_hash(manifest["config"])
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert ResultsStore(out).done() == set(range(6))
    _truncate(out / "raw" / "trial-000005.npz")
    assert ResultsStore(out).damaged() == {5: "raw/trial-000005.npz is missing or unreadable"}
    resumed = _run(path, out)
    assert resumed.done() == set(range(6))


def test_garbage_manifest_names_the_file_and_line(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "manifest.json").write_text('{\n  "format": 1,\n  "grid": [\n')
    with pytest.raises(StoreError, match=r"manifest.json: invalid JSON at line 4"):
        ResultsStore(out).manifest()
    (out / "manifest.json").write_bytes(b"\xff\xfe{}")
    with pytest.raises(StoreError, match=r"manifest.json: not UTF-8 text"):
        ResultsStore(out).manifest()
    (out / "manifest.json").write_text("[1, 2]")
    with pytest.raises(StoreError, match=r"a manifest must be a JSON object, got list"):
        ResultsStore(out).manifest()


def test_describe_trials():
    assert describe_trials([4, 1]) == "trials 1, 4"
    assert describe_trials({7}) == "trial 7"
    assert describe_trials(range(40), limit=3) == "trials 0, 1, 2, … (40 in all)"


# -- half-made directories and every kill point --------------------------------------------------------------
def _tmp(path: Path, name: str) -> None:
    (path / f".{name}.abc123.tmp").write_text("half written")


HALF_MADE = {  # each state is given the directory and the config file run into it
    "empty": lambda out, config: None,
    "subfolders-no-manifest": lambda out, config: [(out / d).mkdir() for d in ("trials", "raw", "records", "progress")],
    "manifest-being-written": lambda out, config: _tmp(out, "manifest.json"),
    # an older privgame copied the config before writing the manifest
    "config-copy-only": lambda out, config: (out / "config.toml").write_bytes(config.read_bytes()),
    "subfolders-and-tmp-files": lambda out, config: [
        (out / "trials").mkdir(),
        (out / "raw").mkdir(),
        _tmp(out / "trials", "trial-000000.parquet"),
        _tmp(out, "config.toml"),
    ],
}


@pytest.mark.parametrize("state", list(HALF_MADE))
def test_half_made_directory_is_taken_over_without_force(write_config, tmp_path, state):
    out = tmp_path / "out"
    out.mkdir()
    path = write_config()
    HALF_MADE[state](out, path)
    store = _run(path, out)
    assert store.done() == set(range(6)) and not list(out.rglob("*.tmp"))
    assert (out / "config.toml").read_bytes() == path.read_bytes()
    _assert_same(store, _run(path, tmp_path / "fresh"))


def test_trial_files_without_manifest_need_force(write_config, tmp_path, capsys):
    path = write_config()
    out = tmp_path / "out"
    _run(path, out)
    (out / "manifest.json").unlink()
    with pytest.raises(StoreError, match=r"holds 12 privgame trial files but no manifest.json.*--force"):
        _run(path, out)
    assert main(["run", str(path), "--out", str(out), "--no-progress", "--force"]) == 0
    assert ResultsStore(out).done() == set(range(6))


def test_foreign_file_is_refused_even_with_force(write_config, tmp_path):
    out = tmp_path / "out"
    (out / "trials").mkdir(parents=True)
    (out / "notes.txt").write_text("mine")
    with pytest.raises(StoreError, match=r"holds no privgame results \(no manifest.json; it holds 'notes.txt'\)"):
        _run(write_config(), out, force=True)
    assert (out / "notes.txt").read_text() == "mine"


# A user's folder that happens to use privgame's names: a project with its own config.toml and raw/ data, a web
# app or browser extension with its manifest.json.  Nothing in it may be deleted or replaced, --force or not.
NOT_RESULTS = {
    "own-config-and-raw-data": {"config.toml": "[tool]\nx = 1\n", "raw/data.csv": "precious\n"},
    "raw-data-only": {"raw/data.csv": "precious\n"},
    "foreign-folder-in-failures": {"failures/notes/today.txt": "mine\n"},
    "web-manifest": {"manifest.json": '{"name": "my extension"}', "raw/photo.jpg": "pixels", "src/a.js": "code"},
    "web-manifest-alone": {"manifest.json": '{"name": "my extension"}'},
}


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize("state", list(NOT_RESULTS))
def test_a_folder_that_is_not_privgame_results_is_never_cleared(write_config, tmp_path, state, force):
    out = tmp_path / "out"
    for name, text in NOT_RESULTS[state].items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)
    with pytest.raises(StoreError, match=r"no privgame results|not a privgame manifest|results format"):
        _run(write_config(), out, force=force)
    assert {str(p.relative_to(out)): p.read_text() for p in out.rglob("*") if p.is_file()} == NOT_RESULTS[state]


def test_force_keeps_what_privgame_did_not_write_in_a_results_directory(write_config, tmp_path):
    path = write_config()
    out = tmp_path / "out"
    _run(path, out)
    (out / "raw" / "notes.txt").write_text("mine")
    other = write_config({"experiment": {"seed": 8}}, name="other")
    with pytest.raises(StoreError, match=r"holds 'raw/notes.txt', which privgame did not write.*move them away"):
        _run(other, out, force=True)
    assert (out / "raw" / "notes.txt").read_text() == "mine" and ResultsStore(out).done() == set(range(6))
    (out / "raw" / "notes.txt").unlink()
    assert _run(other, out, force=True).done() == set(range(6))
    assert main(["run", str(other), "--out", str(out), "--no-progress", "--force"]) == 0


def test_a_second_writer_is_refused_while_a_run_holds_the_directory(write_config, tmp_path):
    """Two runs into one --out (one of them with --force, or both starting on an empty directory) used to mix their
    trials under one manifest; a run now holds the directory (a lock on the directory itself, no file added)."""
    path = write_config()
    out = tmp_path / "out"
    _run(path, out)
    before = {p.name: _sha(p) for p in (out / "trials").iterdir()}
    other = write_config({"experiment": {"seed": 8}}, name="other")
    with writing(out):  # stands for the other run, in the middle of its trials
        with pytest.raises(StoreError, match=r"is being written by another privgame run.*wait for it to end"):
            _run(other, out, force=True)
        with pytest.raises(StoreError, match=r"is being written by another privgame run"):
            _run(path, out)
        assert main(["run", str(other), "--out", str(out), "--no-progress", "--force"]) == 2
    assert {p.name: _sha(p) for p in (out / "trials").iterdir()} == before
    assert {p.name for p in out.iterdir()} <= set(store_module._OWNED)  # nothing added
    assert _run(other, out, force=True).done() == set(range(6))  # once it is released


def test_holding_a_new_directory_leaves_nothing_when_the_run_fails(tmp_path):
    with pytest.raises(RuntimeError), writing(tmp_path / "new"):
        assert (tmp_path / "new").is_dir()
        raise RuntimeError("the analytic epsilon failed")
    assert not (tmp_path / "new").exists()
    (tmp_path / "kept").mkdir()
    with pytest.raises(RuntimeError), writing(tmp_path / "kept"):
        raise RuntimeError
    assert (tmp_path / "kept").is_dir()


def test_clear_removes_only_the_store_files_and_the_manifest_last(tmp_path):
    store = ResultsStore.open_for_run(tmp_path / "out", {"config_hash": "x", "format": 1}, b"")
    (store.root / "raw" / "trial-000000.npz").write_bytes(b"x")
    (store.root / "raw" / "keep.txt").write_text("mine")  # appeared after the check
    removed: list[str] = []
    real_unlink = Path.unlink

    def unlink(self: Path, missing_ok: bool = False) -> None:
        removed.append(self.name)
        real_unlink(self, missing_ok=missing_ok)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(Path, "unlink", unlink)
        store.clear()
    assert removed[-1] == "manifest.json" and "trial-000000.npz" in removed
    assert [p.name for p in (tmp_path / "out").rglob("*")] == ["raw", "keep.txt"]


class _Killed(BaseException):
    """Stands for SIGKILL: raised at a chosen write, leaving what a kill there would leave."""


def _count_writes(monkeypatch, kill_at: int | None) -> list[str]:
    """Make every directory creation and file write of the store a numbered step; at ``kill_at``, leave a
    half-written temporary file (as a kill in the middle of the write would) and stop."""
    steps: list[str] = []
    real_write, real_mkdir = store_module._atomic_write, store_module._mkdir

    def step(name: str, tmp_in: Path | None) -> None:
        steps.append(name)
        if len(steps) == kill_at:
            if tmp_in is not None:
                _tmp(tmp_in, name)
            raise _Killed

    def atomic_write(path: Path, write, action: str) -> None:
        step(path.name, path.parent)
        real_write(path, write, action)

    def mkdir(path: Path) -> None:
        step(f"{path.name}/", None)
        real_mkdir(path)

    monkeypatch.setattr(store_module, "_atomic_write", atomic_write)
    monkeypatch.setattr(store_module, "_mkdir", mkdir)
    return steps


def test_every_kill_point_can_be_resumed_and_forced(write_config, tmp_path, monkeypatch):
    path = write_config({"experiment": {"repetitions": 2}})
    reference = _run(path, tmp_path / "reference")
    with monkeypatch.context() as m:
        steps = _count_writes(m, None)
        _run(path, tmp_path / "counted")
    # the directory (made to be locked, then again by the store), the manifest first, then the config copy, the
    # folders, and per trial its raw arrays before its row
    assert steps[:4] == ["counted/", "counted/", "manifest.json", "config.toml"]
    assert steps.index("trial-000000.npz") < steps.index("trial-000000.parquet")
    assert len(steps) >= 4 + 5 + 2 * 4 + 1
    for kill_at in range(1, len(steps) + 1):
        for force in (False, True):
            out = tmp_path / f"killed-{kill_at}-{force}"
            with monkeypatch.context() as m:
                _count_writes(m, kill_at)
                with pytest.raises(_Killed):
                    _run(path, out)
            resumed = _run(path, out, force=force)
            assert resumed.done() == set(range(4)), (kill_at, steps[kill_at - 1], force)
            assert not list(out.rglob("*.tmp"))
            _assert_same(resumed, reference)


# -- what counts as the same experiment ---------------------------------------------------------------------
SAME = """# the same experiment, spelt differently
[experiment]
repetitions = 3
seed = 7
name = "small"

[mechanism]
epsilon   = [1, 2]          # integers for a float parameter
name = "randomized-response"

[game]
k_neg = 500
name = "one-run"
k_pos = 500
m = 2000

[attack]
name = "identity"
[analysis]
delta = 0.0
confidence = 0.95
"""


def test_resume_accepts_a_config_that_cannot_change_results(write_config, tmp_path):
    out = tmp_path / "out"
    _run(write_config(), out)
    before = {p.name: p.stat().st_mtime_ns for p in (out / "trials").iterdir()}
    renamed = tmp_path / "renamed_and_reformatted.toml"  # another file name, so another default name
    renamed.write_text(SAME.replace('name = "small"\n', ""))
    assert load_config(renamed).name != "small"
    resumed = _run(renamed, out)
    assert {p.name: p.stat().st_mtime_ns for p in (out / "trials").iterdir()} == before  # nothing replayed
    assert resumed.done() == set(range(6))


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"mechanism": {"epsilon": [1.0, 4.0]}}, "mechanism.epsilon: [1.0, 2.0] → [1.0, 4.0]"),
        ({"experiment": {"seed": 8}}, "experiment.seed: 7 → 8"),
        ({"game": {"k_pos": 400}}, "game.k_pos: 500 → 400"),
        ({"analysis": {"confidence": 0.9}}, "analysis.confidence: 0.95 → 0.9"),
    ],
)
def test_refusal_says_which_keys_differ(write_config, tmp_path, capsys, overrides, expected):
    out = tmp_path / "out"
    _run(write_config(), out)
    other = write_config(overrides, name="other")
    with pytest.raises(StoreError, match="holds results of a different config") as info:
        _run(other, out)
    assert expected in str(info.value) and "--force" in str(info.value)
    assert main(["run", str(other), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1


def test_config_differences_of_sweeps_and_grid_order():
    point = lambda a, b: {"game": {"name": "g"}, "mechanism": {"name": "m", "a": a, "b": b}, "attack": {"name": "x"}}  # noqa: E731
    base = {"seed": 1, "repetitions": 2, "plugins": [], "analysis": {}}
    one = {**base, "grid": [point(1, "p"), point(1, "q"), point(2, "p"), point(2, "q")]}
    reordered = {**base, "grid": [point(1, "p"), point(2, "p"), point(1, "q"), point(2, "q")]}
    assert config_differences(one, reordered) == []  # same values; the store then says the order differs
    fewer = {**base, "grid": [point(1, "p"), point(1, "q")]}
    assert config_differences(one, fewer) == ["mechanism.a: [1, 2] → 1"]
    raw_old = {"experiment": {"name": "a", "seed": 1}, "mechanism": {"epsilon": [1, 2]}}
    raw_new = {"experiment": {"name": "b", "seed": 1}, "mechanism": {"epsilon": [1, 4]}}
    assert config_differences(raw_old, raw_new) == ["mechanism.epsilon: [1, 2] → [1, 4]"]


def test_refusal_for_swept_keys_in_another_order(write_config, tmp_path):
    out = tmp_path / "out"
    first = write_config({"game": {"m": [2000, 3000], "k_pos": [400, 500]}, "experiment": {"repetitions": 1}})
    _run(first, out)
    # the same two sweeps, k_pos listed before m: the grid points are numbered differently, so are their seeds
    text = first.read_text()
    swapped = tmp_path / "swapped.toml"
    swapped.write_text(text.replace("m = [2000, 3000]\n", "").replace("k_neg", "m = [2000, 3000]\nk_neg"))
    assert load_config(swapped).swept == ("game.k_pos", "game.m", "mechanism.epsilon")
    with pytest.raises(StoreError, match="the same values, swept in a different order"):
        _run(swapped, out)
