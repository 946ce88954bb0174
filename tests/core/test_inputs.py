"""The one opener of the files privgame reads (issue 33): a regular file of bounded size, or one line saying why not.

A FIFO or a link to ``/dev/zero`` is refused at once, never read; every test that could hang if that broke runs
under an alarm, so a regression fails instead of blocking the suite.
"""

from __future__ import annotations

import os
import socket
import sys

import pytest

from privgame.core.inputs import REASONS, InputFileError, open_input, read_input

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="FIFOs, sockets and /dev/zero are POSIX"),
    pytest.mark.usefixtures("no_hang"),
]


def _refused(path, limit=1 << 20) -> InputFileError:
    with pytest.raises(InputFileError) as caught:
        read_input(path, what="data file", limit=limit)
    message = str(caught.value)
    assert "\n" not in message and message.endswith(".")
    assert caught.value.reason in REASONS
    return caught.value


def test_a_regular_file_is_read_whole(tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(b"a,b\n1,2\n")
    assert read_input(path, what="data file", limit=8) == b"a,b\n1,2\n"
    with open_input(path, what="data file", limit=8) as fh:
        assert fh.readline() == b"a,b\n" and list(fh) == [b"1,2\n"]


def test_a_fifo_is_refused_at_once_without_a_writer(tmp_path):
    fifo = tmp_path / "d.csv"
    os.mkfifo(fifo)
    error = _refused(fifo)
    assert (
        error.reason == "special"
        and str(error) == f"data file {str(fifo)!r} must be a regular file, got a pipe (FIFO)."
    )


def test_a_link_to_dev_zero_is_refused_not_read(tmp_path):
    link = tmp_path / "d.csv"
    link.symlink_to("/dev/zero")
    error = _refused(link)
    assert error.reason == "special" and "must be a regular file, got a device or socket" in str(error)


def test_a_socket_is_refused(tmp_path):
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        assert _refused(path).reason == "special"


@pytest.mark.parametrize(
    ("make", "reason", "words"),
    [
        (lambda p: p.mkdir(), "directory", "is a directory; give a file."),
        (lambda p: None, "missing", "does not exist."),
    ],
)
def test_a_directory_and_a_missing_file(tmp_path, make, reason, words):
    path = tmp_path / "d.csv"
    make(path)
    error = _refused(path)
    assert error.reason == reason and str(error) == f"data file {str(path)!r} {words}"


def test_an_empty_path():
    error = _refused("")
    assert error.reason == "empty" and str(error) == "data file is an empty path; give a file."


def test_a_file_past_the_limit_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(b"x" * ((1 << 20) + 1))
    error = _refused(path, limit=1 << 20)
    # one byte past the limit must not read as the limit itself
    assert error.reason == "too-large" and str(error) == (
        f"data file {str(path)!r} is 1.0 MiB (1,048,577 bytes), larger than the 1 MiB privgame reads for it."
    )
    assert read_input(path, what="data file", limit=(1 << 20) + 1) == b"x" * ((1 << 20) + 1)


def test_a_file_growing_past_the_limit_while_read_is_refused(tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(b"x" * 10)
    with open_input(path, what="data file", limit=16) as fh:
        with path.open("ab") as writer:  # grows after the size was checked
            writer.write(b"y" * 100)
        with pytest.raises(InputFileError, match="grew past the 16 bytes privgame reads for it") as caught:
            fh.read()
    assert caught.value.reason == "too-large"
    path.write_bytes(b"x" * 10)
    with open_input(path, what="data file", limit=16) as fh:
        path.write_bytes(b"z" * 100)  # rewritten larger: read in small pieces, it is still cut at the limit
        with pytest.raises(InputFileError, match="grew past"):
            while fh.read(7):
                pass


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file(tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(b"a\n")
    path.chmod(0)
    error = _refused(path)
    assert error.reason == "permission" and "cannot be read (permission denied)" in str(error)


def test_reading_to_the_end_under_a_huge_limit_takes_the_file_not_the_limit(tmp_path):
    """A read of "everything" must not first allocate the limit (a results directory's raw arrays allow 64 GiB)."""
    path = tmp_path / "d.npz"
    path.write_bytes(b"x" * 1000)
    with open_input(path, what="raw arrays", limit=1 << 50) as fh:
        fh.seek(10)
        assert fh.read() == b"x" * 990 and fh.read() == b""
    assert read_input(path, what="raw arrays", limit=1 << 50) == b"x" * 1000
