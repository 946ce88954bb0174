"""privgame.core.outputs: the one place that decides whether a path may be written, and the atomic write."""

from __future__ import annotations

import os
import socket
import stat
import tempfile
from pathlib import Path

import pytest

from privgame.core import outputs
from privgame.core.outputs import (
    OutputPathError,
    OutputWriteError,
    atomic_output,
    check_distinct,
    check_output_directory,
    check_output_file,
    output_directory_problem,
    output_file_problem,
    write_text,
)


def _results(folder: Path) -> Path:
    """A folder laid out as a results directory (a manifest beside the config copy and the store's folders)."""
    folder.mkdir()
    (folder / "manifest.json").write_text("{}")
    (folder / "config.toml").write_text("")
    for sub in outputs.RESULTS_DIRS:
        (folder / sub).mkdir()
    return folder


# -- what the path is --------------------------------------------------------------------------------------------
def test_a_new_file_in_a_writable_folder_is_accepted(tmp_path):
    assert output_file_problem(tmp_path / "t.csv", what="--output") is None
    (tmp_path / "t.csv").write_text("old")
    assert output_file_problem(tmp_path / "t.csv", what="--output") is None
    assert check_output_file(str(tmp_path / "t.csv"), what="--output") == tmp_path / "t.csv"


def test_the_empty_path_is_refused():  # Path("") is ".", the current folder: only a str can be empty
    assert output_file_problem("", what="--output") == "--output is empty; give a file name"
    assert output_directory_problem("", what="--cache-dir") == "--cache-dir is empty; give a directory"


def test_a_path_that_is_not_a_path_is_a_type_error():
    with pytest.raises(TypeError, match=r"^cache_dir must be a path \(str or os.PathLike\), got int\.$"):
        output_directory_problem(3, what="cache_dir")  # type: ignore[arg-type]


def test_a_directory_is_not_a_file_and_a_file_not_a_directory(tmp_path):
    (tmp_path / "f").write_text("x")
    assert (
        output_file_problem(tmp_path, what="--output") == f"--output {str(tmp_path)!r} is a directory; give a file name"
    )
    assert "is a file, not a directory" in output_directory_problem(tmp_path / "f")


def test_a_name_the_system_refuses_to_look_at_is_one_line(tmp_path):
    """A name longer than the system allows (ENAMETOOLONG), at the end or on the way, and a loop of links: the
    checks' own look at the path raised an OSError, which ended ``privgame run --out`` as an unexpected error."""
    long = "a" * 300
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    for name in (tmp_path / long, tmp_path / long / "x", tmp_path / "loop" / "x"):
        problem = output_directory_problem(name)
        assert problem is not None and ("cannot be used" in problem or "broken symbolic link" in problem), problem
        with pytest.raises(OutputPathError):
            check_output_directory(name)
    for name in (tmp_path / f"{long}.txt", tmp_path / long / "x.txt", tmp_path / "loop", tmp_path / "loop" / "x"):
        assert "cannot be used" in output_file_problem(name, what="--output")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["loop"]


@pytest.mark.parametrize("tail", ["/", "/.", "/.."])
def test_a_name_only_a_directory_can_have_is_refused(tmp_path, tail):
    """``out.txt/`` resolves to ``out.txt``: a file written there would answer a request for a directory, and
    replace a file the user named as a folder."""
    (tmp_path / "kept.txt").write_text("mine")
    for name in (str(tmp_path / "new.txt") + tail, str(tmp_path / "kept.txt") + tail):
        assert "names a directory (it ends in" in output_file_problem(name, what="--output")
        with pytest.raises(OutputPathError, match="names a directory"), atomic_output(name) as tmp:
            tmp.write_text("x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.txt"]
    assert (tmp_path / "kept.txt").read_text() == "mine"


def test_devices_fifos_sockets_and_broken_links_are_refused(tmp_path):
    assert "is a device" in output_file_problem("/dev/null", what="--plot")
    assert "is a device" in output_directory_problem("/dev/null")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert "is a pipe (FIFO)" in output_file_problem(fifo, what="--output")
    link = tmp_path / "to-null.csv"
    link.symlink_to("/dev/null")
    assert "is a device" in output_file_problem(link, what="--output")
    broken = tmp_path / "broken.csv"
    broken.symlink_to(tmp_path / "nowhere")
    assert "is a broken symbolic link" in output_file_problem(broken, what="--output")
    short = Path(tempfile.mkdtemp(dir="/tmp"))  # a socket's path must be short
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(short / "s"))
            assert "is a socket" in output_file_problem(short / "s", what="--output")
    finally:
        (short / "s").unlink(missing_ok=True)
        short.rmdir()


@pytest.mark.parametrize("name", ["/dev/stdout", "/dev/stderr", "/dev/fd/1", "/proc/self/fd/1"])
def test_the_name_of_an_open_stream_is_refused(name):
    # /dev/stdout is the file a shell redirected standard output to: an atomic write would replace that file
    assert "names an open stream" in output_file_problem(name, what="--output")


def test_a_link_to_an_open_stream_is_refused(tmp_path):
    (tmp_path / "out.csv").symlink_to("/dev/stdout")
    assert "names an open stream" in output_file_problem(tmp_path / "out.csv", what="--output")
    (tmp_path / "fds").symlink_to("/proc/self/fd")
    assert "names an open stream" in output_file_problem(tmp_path / "fds" / "1", what="--output")


def test_the_suffix_is_checked_with_the_rest(tmp_path):
    suffixes = (".png", ".pdf", ".svg")
    assert output_file_problem(tmp_path / "f.PNG", what="--plot", suffixes=suffixes) is None
    assert output_file_problem(tmp_path / "f.jpg", what="--plot", suffixes=suffixes) == (
        f"--plot must end in .png, .pdf or .svg, got {str(tmp_path / 'f.jpg')!r}"
    )


# -- its folder --------------------------------------------------------------------------------------------------
def test_the_folder_must_exist_and_be_a_folder(tmp_path):
    (tmp_path / "f").write_text("x")
    assert "does not exist" in output_file_problem(tmp_path / "no" / "t.csv", what="--output")
    assert output_file_problem(tmp_path / "no" / "t.csv", what="--out", create_parents=True) is None
    assert "is a file, not a folder" in output_file_problem(tmp_path / "f" / "t.csv", what="--output")
    assert "cannot be a directory" in output_directory_problem(tmp_path / "f" / "x" / "y")


def test_an_unwritable_folder_is_found_by_probing_and_nothing_is_left(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    problem = output_file_problem(tmp_path / "t.csv", what="--output")
    assert problem is not None and "cannot be written" in problem and "Permission denied" in problem
    assert "Permission denied" in output_directory_problem(tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes any file")
def test_a_read_only_file_is_not_replaced(tmp_path):
    target = tmp_path / "t.csv"
    target.write_text("keep")
    target.chmod(0o444)
    assert "cannot be written (permission denied)" in output_file_problem(target, what="--output")


# -- what the command reads ----------------------------------------------------------------------------------------
def test_a_file_the_command_reads_is_never_the_output_by_any_name(tmp_path, monkeypatch):
    data = tmp_path / "own.csv"
    data.write_text("a\n1\n")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.csv").symlink_to(data)
    os.link(data, tmp_path / "hard.csv")
    reads = {"the data file": "own.csv"}
    for name in ("own.csv", "./own.csv", "sub/../own.csv", str(data), "link.csv", "hard.csv"):
        problem = output_file_problem(name, what="--output", reads=reads)
        assert problem == f"--output must differ from the data file 'own.csv', which this command reads, got {name!r}"
    assert output_file_problem("other.csv", what="--output", reads={**reads, "nothing": None}) is None


def test_two_outputs_of_one_command_never_name_the_same_file(tmp_path):
    (tmp_path / "x.tex").write_text("")
    (tmp_path / "y.tex").symlink_to(tmp_path / "x.tex")
    check_distinct({"--output": tmp_path / "a.csv", "--ladder's table": tmp_path / "x.tex", "--plot": None})
    with pytest.raises(OutputPathError, match=r"^--ladder's table must differ from --output, got '.*y.tex' for both"):
        check_distinct({"--output": tmp_path / "x.tex", "--ladder's table": tmp_path / "y.tex"})


# -- results directories -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "name", ["manifest.json", "config.toml", "results.parquet", "raw/x.csv", "records.parquet", ".a.tmp"]
)
def test_a_results_directorys_own_files_are_refused(tmp_path, name):
    root = _results(tmp_path / "r")
    problem = output_file_problem(root / name, what="--output")
    assert problem is not None and "must not be a results directory's own file" in problem
    assert str(root / name.split("/")[0]) in problem


def test_a_results_directory_may_hold_other_files_and_be_written_into(tmp_path):
    root = _results(tmp_path / "r")
    assert output_file_problem(root / "summary.csv", what="--output") is None
    assert output_directory_problem(root) is None  # the store decides what it may do there
    assert output_directory_problem(root / "another") is None
    assert "must not be a results directory's own file" in output_directory_problem(root / "raw" / "new")
    assert "must not be a results directory's own file" in output_directory_problem(root / "failures")


def test_which_folders_are_taken_for_results_directories_and_a_named_one_always_is(tmp_path):
    (tmp_path / "manifest.json").write_text("{}")  # a web project's, say, with its own config and raw data
    (tmp_path / "config.toml").write_text("")
    assert output_file_problem(tmp_path / "raw" / "t.csv", what="--output", create_parents=True) is None
    (tmp_path / "raw").mkdir()
    assert "results directory's own file" in output_file_problem(tmp_path / "raw" / "t.csv", what="--output")
    (tmp_path / "config.toml").unlink()
    assert output_file_problem(tmp_path / "config.toml", what="--output") is None
    problem = output_file_problem(tmp_path / "config.toml", what="--output", results=[tmp_path])
    assert problem is not None and "results directory's own file" in problem


def test_a_file_read_from_the_output_directory_is_protected_from_what_the_store_rewrites(tmp_path):
    root = _results(tmp_path / "r")
    config = {"the config": str(root / "config.toml")}
    assert output_directory_problem(root, reads=config) is None  # resuming reads it; the store never rewrites it
    problem = output_directory_problem(root, reads=config, clears=True)
    assert problem is not None and "which this command reads and would delete" in problem
    data = {"the data file": str(root / "results.parquet")}
    assert "which this command reads and would rewrite" in output_directory_problem(root, reads=data)
    assert output_directory_problem(root, reads={"the data file": str(root / "mine.csv")}, clears=True) is None


# -- the atomic write --------------------------------------------------------------------------------------------
def test_write_text_replaces_the_file_and_keeps_its_permissions(tmp_path):
    target = tmp_path / "t.csv"
    target.write_text("old")
    target.chmod(0o640)
    write_text(target, "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]


def test_a_new_file_gets_the_umask_permissions_not_the_temporary_files(tmp_path):
    old = os.umask(0o027)
    try:
        write_text(tmp_path / "new.csv", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.csv").stat().st_mode) == 0o640


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(tmp_path):
    target = tmp_path / "t.csv"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_output(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed")
    with pytest.raises(
        OutputWriteError, match=r"^cannot write '.*t.csv' \(writing --output\): \[Errno 28\] No space left on device$"
    ):
        with atomic_output(str(target), what="--output") as tmp:
            raise OSError(28, "No space left on device")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["t.csv"]


def test_a_failed_write_names_the_file_the_action_and_the_errno(tmp_path):
    target = tmp_path / "t.csv"
    with pytest.raises(OutputWriteError) as caught:
        with atomic_output(target, what="--plot", action="drawing the figure"):
            raise PermissionError(13, "Permission denied", "/somewhere/.t.csv.x.tmp")  # names the temporary file
    error = caught.value
    assert isinstance(error, OSError) and not isinstance(error, ValueError)  # the system's error, not a bad value
    assert (error.errno, error.filename, error.action) == (13, str(target), "drawing the figure")
    assert str(error) == f"cannot write {str(target)!r} (drawing the figure): [Errno 13] Permission denied"
    assert list(tmp_path.iterdir()) == []
    # an OSError without errno keeps its words; the error survives a pickle (a worker's, sent back) unchanged
    with pytest.raises(OutputWriteError, match=r"^cannot write '.*t.csv' \(writing output\): disk gone$"):
        with atomic_output(target):
            raise OSError("disk gone")
    import pickle

    assert str(pickle.loads(pickle.dumps(error))) == str(error)


def test_a_temporary_file_that_cannot_be_made_names_the_target(tmp_path, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(outputs.tempfile, "mkstemp", full)
    with pytest.raises(OutputWriteError, match=r"^cannot write '.*t.csv' \(writing --output\): \[Errno 28\] No"):
        write_text(tmp_path / "t.csv", "x", what="--output")


def test_the_temporary_file_keeps_the_suffix_a_writer_chooses_its_format_by(tmp_path):
    with atomic_output(tmp_path / "f.png") as tmp:
        assert tmp.parent == tmp_path and tmp.suffix == ".png" and tmp.name.startswith(".f.png.")
        tmp.write_bytes(b"png")


def test_a_link_is_followed_the_file_it_names_replaced_and_the_link_kept(tmp_path):
    (tmp_path / "real").mkdir()
    real = tmp_path / "real" / "t.csv"
    real.write_text("old")
    link = tmp_path / "t.csv"
    link.symlink_to(real)
    write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["t.csv"]


def test_the_writer_itself_refuses_what_must_never_be_replaced(tmp_path):
    root = _results(tmp_path / "r")
    for path, needle in (
        ("/dev/null", "is a device"),
        (str(tmp_path), "is a directory"),
        (str(root / "manifest.json"), "results directory's own file"),
        ("/dev/stdout", "names an open stream"),
    ):
        with pytest.raises(OutputPathError, match=needle), atomic_output(path):
            pass
    assert (root / "manifest.json").read_text() == "{}"


def test_check_output_directory_raises_one_line(tmp_path):
    with pytest.raises(OutputPathError, match=r"^--cache-dir is empty; give a directory\.$"):
        check_output_directory("", what="--cache-dir")
    assert check_output_directory(tmp_path / "new") == tmp_path / "new"
    assert not (tmp_path / "new").exists()
