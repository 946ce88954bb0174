"""Every path privgame writes, replayed from the command (issue 33): nothing it reads and nothing of a results
directory is overwritten, a bad output is refused in one line before any work, and ``--force`` never follows a link.

Each case runs through ``main`` in-process on a 4-trial randomized-response audit (a fraction of a second).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import privgame
from privgame.core import outputs
from privgame.engine import report, store
from privgame.engine.cli import main

BYO = Path(__file__).resolve().parents[2] / "experiments" / "byo_quick"


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err and "unexpected" not in err
    return lines[0]


@pytest.fixture
def results(tmp_path, write_config, capsys):
    """A finished results directory of two grid points, two trials each."""
    config = write_config({"experiment": {"repetitions": 2}})
    out = tmp_path / "r"
    assert main(["run", str(config), "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    return out


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if ``privgame report`` starts summarising (the work every output must be checked before)."""

    def refuse(*args, **kwargs):
        raise AssertionError("the results were summarised before the outputs were checked")

    monkeypatch.setattr(report, "summarise_results", refuse)


def test_the_layout_here_is_the_stores():
    assert set(outputs.RESULTS_NAMES) == set(store._OWNED)


# -- 1. the data file ----------------------------------------------------------------------------------------------
def test_domain_never_replaces_the_data_file_it_reads(tmp_path, capsys):
    data = tmp_path / "own.csv"
    shutil.copy(BYO / "medical.csv", data)
    before = data.read_bytes()
    assert main(["domain", str(data), "--output", str(data)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line == (
        f"privgame: error: --output must differ from the data file {str(data)!r}, which this command reads, "
        f"got {str(data)!r}."
    )
    (tmp_path / "hard.csv").hardlink_to(data)
    assert main(["domain", str(data), "--output", str(tmp_path / "hard.csv")]) == 2
    assert "which this command reads" in _one_line(capsys.readouterr().err)
    assert data.read_bytes() == before


def test_synth_never_replaces_its_data_file_and_checks_its_report_before_training(tmp_path, capsys):
    data = tmp_path / "medical.csv"
    shutil.copy(BYO / "medical.csv", data)
    before = data.read_bytes()
    args = ["synth", "--generator", "synthpop", "--data", str(data), "--domain", str(BYO / "medical.domain.toml")]
    assert main([*args, "--train-rows", "100", "--out", str(data)]) == 2
    assert "--out must differ from the data file" in _one_line(capsys.readouterr().err)
    assert data.read_bytes() == before
    (tmp_path / "s.fidelity.json").mkdir()
    assert main([*args, "--train-rows", "100", "--report", "--out", str(tmp_path / "s.csv")]) == 2
    assert "--report's JSON" in _one_line(capsys.readouterr().err)
    assert not (tmp_path / "s.csv").exists()  # refused before the training, not after it


# -- 2. a results directory's own files ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["manifest.json", "config.toml", "results.parquet", "raw/notes.csv"])
def test_report_never_writes_into_the_results_directorys_own_files(results, capsys, name):
    manifest = (results / "manifest.json").read_bytes()
    assert main(["report", str(results), "--output", str(results / name)]) == 2
    assert "must not be a results directory's own file" in _one_line(capsys.readouterr().err)
    assert (results / "manifest.json").read_bytes() == manifest
    assert main(["report", str(results)]) == 0  # still a results directory


def test_a_report_may_be_written_beside_the_results(results, capsys):
    assert main(["report", str(results), "--output", str(results / "summary.txt")]) == 0
    assert "epsilon_lb_median" in (results / "summary.txt").read_text()


def test_report_never_replaces_the_data_file_its_manifest_names(tmp_path, capsys, no_work):
    data = tmp_path / "medical.csv"
    shutil.copy(BYO / "medical.csv", data)
    before = data.read_bytes()
    out = tmp_path / "r"  # the outputs are checked against the manifest's data_source before the work: no run needed
    out.mkdir()
    (out / "manifest.json").write_text(json.dumps({"format": store.FORMAT_VERSION, "data_source": {"path": str(data)}}))
    assert main(["report", str(out), "--records", "--output", str(data)]) == 2
    assert "--output must differ from the data file" in _one_line(capsys.readouterr().err)
    assert data.read_bytes() == before


# -- 3. --cache-dir "" -------------------------------------------------------------------------------------------
def test_an_empty_cache_dir_is_refused_not_the_current_directory(write_config, tmp_path, monkeypatch, capsys):
    config = write_config()
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(config), "--out", "o", "--cache-dir", "", "--no-progress"]) == 2
    assert _one_line(capsys.readouterr().err) == "privgame: error: --cache-dir is empty; give a directory."
    assert sorted(p.name for p in tmp_path.iterdir()) == [config.name]


def test_the_api_refuses_an_empty_cache_dir(write_config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"^cache_dir is empty; give a directory\.$"):
        privgame.run(write_config(), tmp_path / "o", cache_dir="", progress=False)
    with pytest.raises(TypeError, match=r"^cache_dir must be a path"):
        privgame.run(write_config(), tmp_path / "o", cache_dir=3, progress=False)  # type: ignore[arg-type]
    assert not (tmp_path / "o").exists() and not (tmp_path / "v1").exists()


def test_the_api_never_deletes_the_config_it_reads(results):
    with pytest.raises(ValueError, match="which this command reads and would delete"):
        privgame.run(results / "config.toml", results, force=True, progress=False)
    assert (results / "config.toml").is_file()


# -- 4. every output checked before the work ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--plot", "/dev/full"], "--plot '/dev/full' is a device"),
        (["--plot", "/proc/x.png"], "--plot '/proc/x.png' cannot be written"),
        (["--plot", "{tmp}/figure.jpg"], "--plot must end in .png, .pdf or .svg"),
        (["--ladder", "{tmp}/taken.png"], "--ladder's table '{tmp}/taken.tex' is a directory"),
        (["--ladder", "{tmp}/l.png", "--output", "{tmp}/l.tex"], "--ladder's table must differ from --output"),
        (["--plot", "{tmp}/f.png", "--ladder", "{tmp}/f.png"], "--ladder must differ from --plot"),
        (["--output", "/dev/stdout"], "names an open stream"),
    ],
)
def test_report_outputs_are_checked_before_the_work(results, tmp_path, capsys, no_work, argv, needle):
    (tmp_path / "taken.tex").mkdir()
    argv = [a.format(tmp=tmp_path) for a in argv]
    assert main(["report", str(results), *argv]) == 2
    assert needle.format(tmp=tmp_path) in _one_line(capsys.readouterr().err)


def test_the_ladder_table_is_still_written(results, tmp_path, capsys):
    assert main(["report", str(results), "--ladder", str(tmp_path / "l.png")]) == 0
    assert (tmp_path / "l.png").read_bytes()[:4] == b"\x89PNG"


# -- 5. --curves ---------------------------------------------------------------------------------------------------
def test_a_curves_name_that_is_a_folder_is_one_line_before_the_work(results, tmp_path, capsys, monkeypatch):
    from privgame.games.one_run import OneRunGame

    def draw(self, outcome, settings, path, *, title):  # a game with per-trial curves, drawn into its file
        Path(path).write_bytes(b"figure")
        return Path(path)

    monkeypatch.setattr(OneRunGame, "plot_trial", draw)
    (tmp_path / "c-p1.png").mkdir()  # the second grid point's figure
    assert main(["report", str(results), "--curves", str(tmp_path / "c.png")]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.endswith(f"--curves (grid point 1) {str(tmp_path / 'c-p1.png')!r} is a directory; give a file name.")
    assert not (tmp_path / "c-p0.png").exists()  # nothing drawn before the refusal
    (tmp_path / "c-p1.png").rmdir()
    assert main(["report", str(results), "--curves", str(tmp_path / "c.png")]) == 0
    assert (tmp_path / "c-p1.png").read_bytes() == b"figure"


# -- 6. --force and links ------------------------------------------------------------------------------------------
def _link_raw(results: Path, tmp_path: Path) -> Path:
    """Move ``raw/`` elsewhere and leave a link to it in its place; returns where it went."""
    elsewhere = tmp_path / "elsewhere"
    shutil.move(results / "raw", elsewhere)
    (results / "raw").symlink_to(elsewhere, target_is_directory=True)
    return elsewhere


def test_force_removes_a_linked_raw_folder_as_a_link_and_leaves_what_it_points_to(
    results, tmp_path, write_config, capsys
):
    elsewhere = _link_raw(results, tmp_path)
    before = sorted(p.name for p in elsewhere.iterdir())
    other = write_config({"experiment": {"seed": 8, "repetitions": 2}}, name="other")
    assert main(["run", str(other), "--out", str(results), "--force", "--no-progress"]) == 0
    assert sorted(p.name for p in elsewhere.iterdir()) == before and before
    assert not (results / "raw").is_symlink() and len(list((results / "raw").iterdir())) == 4


def test_resuming_through_a_linked_folder_is_refused_in_one_line(results, tmp_path, write_config, capsys):
    elsewhere = _link_raw(results, tmp_path)
    before = sorted(p.name for p in elsewhere.iterdir())
    config = write_config({"experiment": {"repetitions": 3}}, name="more")  # would add and write trials
    assert main(["run", str(config), "--out", str(results), "--no-progress"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "its 'raw' is a symbolic link" in line and "use --force, which removes the link" in line
    assert sorted(p.name for p in elsewhere.iterdir()) == before


def test_force_never_deletes_the_config_it_reads(results, capsys):
    assert main(["run", str(results / "config.toml"), "--out", str(results), "--force", "--no-progress"]) == 2
    assert "which this command reads and would delete" in _one_line(capsys.readouterr().err)
    assert (results / "config.toml").is_file() and (results / "manifest.json").is_file()
    assert main(["run", str(results / "config.toml"), "--out", str(results), "--no-progress"]) == 0  # resumes


# -- atomic writes -------------------------------------------------------------------------------------------------
def test_a_table_that_fails_to_write_leaves_the_old_file(results, tmp_path, capsys, monkeypatch):
    target = tmp_path / "table.txt"
    target.write_text("old table")

    def full(self, text, *args, **kwargs):  # the disk fills halfway through the table
        with open(self, "w") as fh:
            fh.write(text[:10])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    assert main(["report", str(results), "--output", str(target)]) == 1  # the system's failure, not a bad argument
    assert _one_line(capsys.readouterr().err) == (
        f"privgame: cannot write {str(target)!r} (writing --output): [Errno 28] No space left on device"
    )
    monkeypatch.undo()
    assert target.read_text() == "old table"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".table")) == []


def _full_after(monkeypatch, module, name: str, calls: int) -> None:
    """Make ``module.name`` (a writer) fill the disk from its call ``calls + 1`` on."""
    real, seen = getattr(module, name), []

    def writer(*args, **kwargs):
        seen.append(1)
        if len(seen) > calls:
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, writer)


@pytest.mark.parametrize(
    ("module", "name", "calls", "path", "action"),
    [
        (store, "_write_npz", 2, "raw/trial-000002.npz", "writing trial 2's raw arrays"),
        (store.pq, "write_table", 1, "trials/trial-000001.parquet", "writing trial 1's row"),
        (store.pd.DataFrame, "to_parquet", 0, "results.parquet", "gathering every trial's row"),
    ],
)
def test_a_full_disk_during_a_run_names_the_file_and_what_was_being_written(
    write_config, tmp_path, capsys, monkeypatch, module, name, calls, path, action
):
    config = write_config({"experiment": {"repetitions": 2}})
    out = tmp_path / "r"
    _full_after(monkeypatch, module, name, calls)
    assert main(["run", str(config), "--out", str(out), "--no-progress"]) == 1
    assert _one_line(capsys.readouterr().err) == (
        f"privgame: cannot write {str(out / path)!r} ({action}): [Errno 28] No space left on device"
    )
    assert not list(out.rglob(".*.tmp"))  # no temporary file left behind
    monkeypatch.undo()
    assert main(["run", str(config), "--out", str(out), "--no-progress"]) == 0  # room again: the run resumes


def test_a_figure_that_fails_to_write_names_its_file(results, tmp_path, capsys, monkeypatch):
    from matplotlib.figure import Figure

    def full(self, fname, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", full)
    target = tmp_path / "f.png"
    assert main(["report", str(results), "--plot", str(target)]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (
        f"privgame: cannot write {str(target)!r} (writing the figure): [Errno 28] No space left on device"
    )
    assert not target.exists() and list(tmp_path.glob(".f.png*")) == []


def test_an_os_error_no_writer_named_is_one_line_with_its_path(results, capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise OSError(5, "Input/output error", "/some/file")

    monkeypatch.setattr(report, "summarise_results", broken)
    assert main(["report", str(results)]) == 1
    assert _one_line(capsys.readouterr().err) == (
        "privgame: error: OSError: [Errno 5] Input/output error: '/some/file' in `privgame report` "
        "(run with --debug for the traceback)"
    )
    with pytest.raises(OSError):
        main(["--debug", "report", str(results)])
