"""Every bad input to the command gets one line and a status, never a traceback, and leaves nothing behind.

Each case runs through ``main`` in-process (the suite stays fast); the observed tracebacks of issue 10 each have
their own test here.
"""

from __future__ import annotations

import os
import sys
import tempfile

import pytest

from privgame.engine import cli
from privgame.engine.cli import main, printable
from privgame.engine.config import MAX_CONFIG_BYTES


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# -- the config file --------------------------------------------------------------------------------------------
def test_config_path_is_a_directory(tmp_path, capsys):
    assert main(["run", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "is a directory; give a TOML file" in _one_line(capsys.readouterr().err)
    assert not (tmp_path / "o").exists()


def test_config_symlink_to_dev_zero_is_not_read(tmp_path, capsys):
    link = tmp_path / "zero.toml"
    link.symlink_to("/dev/zero")
    assert main(["run", str(link), "--out", str(tmp_path / "o")]) == 2
    assert "not a regular file" in _one_line(capsys.readouterr().err)


def test_config_larger_than_a_mebibyte(tmp_path, capsys):
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (MAX_CONFIG_BYTES + 1))
    assert main(["run", str(big), "--out", str(tmp_path / "o")]) == 2
    assert "larger than 1 MiB" in _one_line(capsys.readouterr().err)


def test_config_empty_path(tmp_path, capsys):
    assert main(["run", "", "--out", str(tmp_path / "o")]) == 2
    assert "config path is empty" in _one_line(capsys.readouterr().err)


def test_non_utf8_config_names_file_line_and_column(tmp_path, capsys):
    bad = tmp_path / "latin.toml"
    bad.write_bytes(b'[experiment]\nname = "caf\xe9"\n')
    assert main(["run", str(bad), "--out", str(tmp_path / "o")]) == 2
    line = _one_line(capsys.readouterr().err)
    assert f"{bad}: line 2, column 12: not UTF-8 (byte 0xe9)" in line


def test_unreadable_config(tmp_path, capsys, monkeypatch, write_config):
    path = write_config()
    real_open = os.open

    def refuse(name, *args, **kwargs):  # root reads any file: the refusal is simulated where files are opened
        if os.fspath(name) == str(path):
            raise PermissionError(13, "Permission denied")
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    assert main(["run", str(path), "--out", str(tmp_path / "o")]) == 2
    assert "cannot be read (permission denied)" in _one_line(capsys.readouterr().err)


# -- --out ------------------------------------------------------------------------------------------------------
def test_out_empty_is_refused_as_empty_not_as_dot(write_config, capsys):
    assert main(["run", str(write_config()), "--out", ""]) == 2
    assert "--out is empty" in _one_line(capsys.readouterr().err)


def test_out_inside_a_regular_file(write_config, tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert main(["run", str(write_config()), "--out", str(afile / "results")]) == 2
    assert "is a file" in _one_line(capsys.readouterr().err)
    assert main(["run", str(write_config()), "--out", str(afile)]) == 2
    assert "is a file, not a directory" in _one_line(capsys.readouterr().err)
    assert afile.read_text() == "x"


def test_out_not_writable_leaves_nothing_behind(write_config, tmp_path, capsys, monkeypatch):
    config = write_config()

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    assert main(["run", str(config), "--out", str(tmp_path / "ro" / "out")]) == 2
    assert "cannot be written" in _one_line(capsys.readouterr().err)
    assert not (tmp_path / "ro").exists()


def test_memory_refusal_comes_before_any_directory(write_config, tmp_path, capsys):
    config = write_config({"game": {"m": 10**12}})
    assert main(["run", str(config), "--out", str(tmp_path / "o")]) == 2
    assert "of memory, more than this machine's" in _one_line(capsys.readouterr().err)
    assert not (tmp_path / "o").exists()


# -- output files of the other commands -------------------------------------------------------------------------
def test_report_output_is_a_directory(tmp_path, capsys):
    assert main(["report", str(tmp_path), "--output", str(tmp_path)]) == 2
    assert "--output" in _one_line(capsys.readouterr().err) and "is a directory"


@pytest.mark.parametrize("option", ["--output", "--plot", "--ladder"])
def test_report_output_files_are_checked_first(tmp_path, capsys, option):
    (tmp_path / "d").mkdir()
    assert main(["report", str(tmp_path / "nothing"), option, str(tmp_path / "d")]) == 2
    assert f"{option} '{tmp_path / 'd'}' is a directory" in _one_line(capsys.readouterr().err)
    assert main(["report", str(tmp_path / "nothing"), option, str(tmp_path / "no" / "x.png")]) == 2
    assert "does not exist" in _one_line(capsys.readouterr().err)


def test_synth_out_is_a_directory(tmp_path, capsys):
    target = tmp_path / "table.csv"
    target.mkdir()
    assert main(["synth", "--generator", "synthpop", "--out", str(target)]) == 2
    assert "is a directory; give a file name" in _one_line(capsys.readouterr().err)


def test_validate_output_is_a_directory(tmp_path, capsys):
    assert main(["validate", "--quick", "--output", str(tmp_path)]) == 2
    assert "is a directory" in _one_line(capsys.readouterr().err)


# -- our wording, not joblib's or numpy's -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["validate", "--n-jobs", "0"], "--n-jobs must be a positive integer or -1, got 0"),
        (["validate", "--n-jobs", "-2"], "--n-jobs must be a positive integer or -1, got -2"),
        (["validate", "--seed", "-1"], "--seed must be an integer >= 0, got -1"),
        (["ladder", "--seed", "-1"], "--seed must be an integer >= 0, got -1"),
    ],
)
def test_validate_and_ladder_arguments(argv, message, capsys):
    assert main(argv) == 2
    assert message in _one_line(capsys.readouterr().err)


# -- what is printed --------------------------------------------------------------------------------------------
def test_printable_escapes_control_characters():
    assert printable("a\x1b[31mred\x07\nb") == "a\\x1b[31mred\\x07\\nb"
    assert printable("ε ≥ 1, café") == "ε ≥ 1, café"


def test_a_name_with_escape_codes_is_printed_escaped(write_config, tmp_path, capsys):
    config = write_config({"experiment": {"name": "x\\u001b[2Jy"}})  # a TOML escape: the name holds ESC
    assert main(["run", str(config), "--out", str(tmp_path / "o"), "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert "\x1b" not in out + err
    assert "x\\x1b[2Jy: 6 trials" in out


def test_an_error_message_with_escape_codes_is_printed_escaped(write_config, tmp_path, capsys):
    config = write_config({"mechanism": {"name": "no\\u001b[31mpe"}})
    assert main(["run", str(config), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "no\\x1b[31mpe" in err


def test_a_plugin_calling_sys_exit_does_not_end_silently(write_config, tmp_path, capsys, monkeypatch):
    (tmp_path / "pg_exiting_plugin.py").write_text("import sys\nsys.exit(0)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    config = write_config({"experiment": {"plugins": ["pg_exiting_plugin"]}})
    assert main(["run", str(config), "--out", str(tmp_path / "o")]) == 2
    assert "importing 'pg_exiting_plugin' called sys.exit(0)" in _one_line(capsys.readouterr().err)
    sys.modules.pop("pg_exiting_plugin", None)


# -- the last line of defence -----------------------------------------------------------------------------------
def _raise(exc: BaseException):
    def command(args):
        raise exc

    return command


def test_an_unexpected_exception_is_one_line_and_status_1(monkeypatch, capsys):
    monkeypatch.setattr(cli, "_cmd_list", _raise(RuntimeError("boom \x1b[0m")))
    assert main(["list"]) == 1
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("privgame: error: unexpected RuntimeError: boom \\x1b[0m")
    assert "--debug" in line


def test_debug_shows_the_traceback(monkeypatch):
    monkeypatch.setattr(cli, "_cmd_list", _raise(RuntimeError("boom")))
    with pytest.raises(RuntimeError, match="boom"):
        main(["--debug", "list"])
    monkeypatch.setattr(cli, "_cmd_list", _raise(ValueError("bad")))
    with pytest.raises(ValueError, match="bad"):
        main(["--debug", "list"])


def test_out_of_memory_is_one_line(monkeypatch, capsys):
    monkeypatch.setattr(cli, "_cmd_list", _raise(MemoryError()))
    assert main(["list"]) == 1
    assert "out of memory" in _one_line(capsys.readouterr().err)


def test_no_files_left_in_cwd(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "missing.toml", "--out", "o"]) == 2
    assert os.listdir(tmp_path) == []
