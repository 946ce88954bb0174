"""A results directory's files are read as every input is (issue 33): a FIFO, a device or an oversized file in
place of a manifest, a row, a trial's arrays, a failure record or a progress file is refused or set aside at once,
never read: ``privgame report`` and a resume (``privgame run`` again on the same ``--out``) end in seconds.

The commands that would block if that regressed run in a child process stopped after 20 s.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from privgame.data.catalogue import _CATALOGUE
from privgame.engine.cli import main
from privgame.engine.store import ResultsStore
from tests.data.test_files import _config, _write_data

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs are POSIX")


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a user data file, its config, and ``out``: the config's two trials, finished."""
    folder = tmp_path_factory.mktemp("finished")
    _write_data(folder)
    _config(folder)
    assert main(["run", str(folder / "own.toml"), "--out", str(folder / "out"), "--no-progress"]) == 0
    _CATALOGUE.pop("clinic")  # registered by the run, outside the per-test restoration of the catalogue
    return folder


@pytest.fixture
def folder(finished: Path, tmp_path: Path) -> Path:
    """A copy of ``finished`` to damage."""
    copy = tmp_path / "f"
    shutil.copytree(finished, copy)
    return copy


def _cli(folder: Path, *args: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "privgame.engine.cli", *args], cwd=folder, capture_output=True, text=True, timeout=20
    )
    return done.returncode, done.stderr


def _fifo_for(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def test_a_fifo_as_a_failure_record_is_listed_as_unreadable_and_the_resume_replaces_it(folder):
    out = folder / "out"
    (out / "trials" / "trial-000001.parquet").unlink()  # trial 1 unfinished, and its failure record a FIFO
    _fifo_for(out / "failures" / "trial-000001.json")
    status, err = _cli(folder, "report", "out")
    assert status == 0 and err == (
        "privgame: 1 trial failed (trial 1; tracebacks in out/failures); rerunning `privgame run` with the same "
        "config retries them.\n"
    )
    assert ResultsStore(out).failures()[1]["error"] == (
        "unreadable failure record: trial-000001.json is not a regular file (a FIFO, a device or a socket)"
    )
    assert _cli(folder, "run", "own.toml", "--out", "out", "--no-progress")[0] == 0
    assert ResultsStore(out).done() == {0, 1} and not os.path.lexists(out / "failures" / "trial-000001.json")


def test_a_stray_fifo_in_failures_does_not_block_a_report_or_a_resume(folder):
    out = folder / "out"
    os.mkfifo(out / "failures" / "trial-000007.json")
    (out / "failures" / "trial-000008.json").symlink_to("/dev/zero")
    status, err = _cli(folder, "report", "out")
    assert status == 0 and err.startswith("privgame: 2 trials failed (trials 7, 8;") and err.count("\n") == 1
    assert _cli(folder, "run", "own.toml", "--out", "out", "--no-progress")[0] == 0
    assert ResultsStore(out).done() == {0, 1}


@pytest.mark.parametrize(
    "name", ["trials/trial-000001.parquet", "raw/trial-000001.npz", "records/trial-000001.parquet"]
)
def test_a_fifo_for_a_trial_s_file_makes_it_damaged_and_the_resume_plays_it_again(folder, name):
    out = folder / "out"
    _fifo_for(out / name)
    status, err = _cli(folder, "report", "out")
    assert status == 0 and err == (
        f"privgame: 1 damaged trial left out (trial 1; trial 1: {name} is not a regular file (a FIFO, a device or a "
        "socket)); rerunning `privgame run` with the same config resumes them.\n"
    )
    status, err = _cli(folder, "run", "own.toml", "--out", "out", "--no-progress")
    assert status == 0 and err.startswith("privgame: 1 damaged trial in out (trial 1; trial 1: ")
    assert ResultsStore(out).done() == {0, 1} and (out / name).is_file()


def test_a_fifo_as_the_manifest_is_refused_in_one_line(folder):
    out = folder / "out"
    _fifo_for(out / "manifest.json")
    line = "privgame: error: manifest.json 'out/manifest.json' must be a regular file, got a pipe (FIFO).\n"
    assert _cli(folder, "report", "out") == (2, line)
    assert _cli(folder, "run", "own.toml", "--out", "out", "--no-progress") == (2, line)
    assert _cli(folder, "reanalyse", "out", "--out", "again", "--confidence", "0.9") == (2, line)
    assert not (folder / "again").exists()


def test_a_progress_file_that_is_a_fifo_counts_nothing_and_does_not_block(folder):
    """The progress line's thread reads these while trials run, and the run joins it at the end."""
    store = ResultsStore(folder / "out")
    store.progress_path(3).write_text('{"done": 4}')
    _fifo_for(store.progress_path(5))

    def stop(signum, frame):
        raise TimeoutError("blocked on a FIFO")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(10)
    try:
        assert (store.progress_done(3), store.progress_done(5), store.progress_done(6)) == (4, 0, 0)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("row", [True, False], ids=["damaged-trial", "trial-not-run"])
def test_a_folder_in_place_of_a_trial_s_file_is_refused_and_kept(folder, capsys, row):
    """Playing the trial again would delete the folder (a damaged trial's files are discarded) or rename a file
    over it: neither is privgame's to do."""
    out = folder / "out"
    raw = out / "raw" / "trial-000001.npz"
    raw.unlink()
    raw.mkdir()
    (raw / "mine.txt").write_text("kept")
    if not row:
        (out / "trials" / "trial-000001.parquet").unlink()
    assert main(["run", str(folder / "own.toml"), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"privgame: error: {str(raw)!r}")
    assert "must be a file, got a directory; privgame deletes no folder it did not make: move it away" in err
    assert (raw / "mine.txt").read_text() == "kept"
    assert (out / "trials" / "trial-000001.parquet").exists() == row


def test_the_limits_are_the_ones_docs_results_states():
    from privgame.engine import store

    text = " ".join((Path(__file__).parents[2] / "docs" / "results.md").read_text().split())
    limits = (
        store.MAX_MANIFEST_BYTES,
        store.MAX_ROW_BYTES,
        store.MAX_RECORDS_BYTES,
        store.MAX_RAW_BYTES,
        store.MAX_FAILURE_BYTES,
        store.MAX_PROGRESS_BYTES,
    )
    assert limits == (1 << 30, 64 << 20, 4 << 30, 64 << 30, 16 << 20, 1 << 10)
    assert (
        "at most `manifest.json` 1 GiB, a row 64 MiB, a trial's per-record rows 4 GiB, its raw arrays 64 GiB, a "
        "failure record 16 MiB, a progress file 1 KiB" in text
    )
