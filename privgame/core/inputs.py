"""The one place privgame opens a file it reads: regular files only, of bounded size, never a FIFO or a device.

Every file privgame reads (a config, a data or domain file, a results directory's manifest, rows, raw arrays
and failure records, an artefact-cache entry) is opened by :func:`open_input` or read by :func:`read_input`.  The
file is opened without blocking (``O_NONBLOCK``: opening a FIFO that has no writer returns at once instead of
waiting for one) and then checked on the open descriptor (``fstat``), so what is checked is what is read: a path
swapped for a FIFO between a check and the open, or a link to ``/dev/zero``, is refused, not read forever.  A
file larger than the caller's limit is refused before it is read, and a read never takes more than the limit (a
file that grows while it is read is cut at the limit and refused).

The limits belong to the callers, which state them in their docs (docs/datasets.md for data and domain files,
docs/security.md for the others).
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

__all__ = ["REASONS", "InputFileError", "open_input", "read_input"]


#: the values of :attr:`InputFileError.reason`
REASONS = ("empty", "missing", "directory", "special", "permission", "unreadable", "too-large")


class InputFileError(ValueError):
    """A file privgame was asked to read cannot be: missing, not a regular file, unreadable, or too large.

    Parameters
    ----------
    message : str
        One line naming the file and the rule.
    reason : str, default="unreadable"
        Which rule, one of :data:`REASONS` (``"special"``: a FIFO, a device or a socket; ``"too-large"``: larger
        than the limit, or grown past it while read), for a caller that words its own message (a config's).
    """

    def __init__(self, message: str, reason: str = "unreadable") -> None:
        super().__init__(message)
        self.reason = reason


def _size_text(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            # a size just past a limit must not read as the limit itself ("1 MiB, larger than the 1 MiB")
            return f"{n // size} {unit}" if n % size == 0 else f"{n / size:.1f} {unit} ({n:,} bytes)"
    return f"{n} bytes"


def _open_checked(path: str | os.PathLike[str], what: str, limit: int) -> tuple[int, int]:
    """A descriptor on ``path`` checked to be a regular file of at most ``limit`` bytes, and its size."""
    name = os.fspath(path)
    if name == "":
        raise InputFileError(f"{what} is an empty path; give a file.", "empty")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(name, flags)
    except FileNotFoundError:
        raise InputFileError(f"{what} {name!r} does not exist.", "missing") from None
    except IsADirectoryError:
        raise InputFileError(f"{what} {name!r} is a directory; give a file.", "directory") from None
    except PermissionError:
        raise InputFileError(f"{what} {name!r} cannot be read (permission denied).", "permission") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket (or a device without its driver): nothing a file's reader can read
            raise InputFileError(
                f"{what} {name!r} must be a regular file, got a device or socket.", "special"
            ) from None
        raise InputFileError(f"{what} {name!r} cannot be read: {exc.strerror or exc}.") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputFileError(f"{what} {name!r} is a directory; give a file.", "directory")
        if not stat.S_ISREG(info.st_mode):
            kind = "a pipe (FIFO)" if stat.S_ISFIFO(info.st_mode) else "a device or socket"
            raise InputFileError(f"{what} {name!r} must be a regular file, got {kind}.", "special")
        if info.st_size > limit:
            raise InputFileError(
                f"{what} {name!r} is {_size_text(info.st_size)}, larger than the {_size_text(limit)} privgame reads "
                "for it.",
                "too-large",
            )
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, int(info.st_size)


class _Capped:
    """A binary file object that refuses to read past ``limit`` bytes (a file growing while it is read)."""

    def __init__(self, fh: BinaryIO, *, what: str, name: str, limit: int) -> None:
        self._fh = fh
        self._what = what
        self._name = name
        self._limit = limit

    def _check(self) -> None:
        if self._fh.tell() > self._limit:
            raise InputFileError(
                f"{self._what} {self._name!r} grew past the {_size_text(self._limit)} privgame reads for it.",
                "too-large",
            )

    def read(self, size: int | None = -1) -> bytes:
        room = max(self._limit + 1 - self._fh.tell(), 0)
        if size is not None and size >= 0:
            data = self._fh.read(min(size, room))
        else:
            # the rest of the file, as large as it is now: a read of ``room`` bytes would first allocate them all
            # (a 64 GiB limit is not 64 GiB of memory); one byte more tells whether it grew, and then the rest
            # comes in pieces, up to one byte past the limit
            rest = max(os.fstat(self._fh.fileno()).st_size - self._fh.tell(), 0)
            pieces = [self._fh.read(min(rest + 1, room))]
            room -= len(pieces[-1])
            while room > 0 and len(pieces[-1]) > rest:
                pieces.append(self._fh.read(min(1 << 20, room)))
                room -= len(pieces[-1])
                rest = 0
                if not pieces[-1]:
                    break
            data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        self._check()
        return data

    def readinto(self, buffer: bytearray | memoryview) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def readline(self, size: int | None = -1) -> bytes:
        room = self._limit + 1 - self._fh.tell()
        line = self._fh.readline(room if size is None or size < 0 else min(size, max(room, 0)))
        self._check()
        return line

    def __iter__(self) -> _Capped:
        return self

    def __next__(self) -> bytes:
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def __getattr__(self, attr: str) -> object:  # seek, tell, seekable, readable, name, mode, fileno ...
        return getattr(self._fh, attr)

    def close(self) -> None:
        self._fh.close()

    @property
    def closed(self) -> bool:
        return self._fh.closed

    def __enter__(self) -> _Capped:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_input(path: str | os.PathLike[str], *, what: str, limit: int) -> BinaryIO:
    """``path`` opened for reading in binary mode, checked to be a regular file of at most ``limit`` bytes.

    Parameters
    ----------
    path : str or path-like
        The file (a link is followed to what it names, which is then checked).
    what : str
        What the file is, for the messages (``"data file"``, ``"--config"``).
    limit : int
        The most bytes privgame reads from it.

    Returns
    -------
    file object
        A binary file object; reading past ``limit`` raises :class:`InputFileError`.  Close it (``with``).

    Raises
    ------
    InputFileError
        One line: an empty path, a missing file, a directory, a FIFO, a device or socket, an unreadable file, or
        one larger than ``limit``.
    """
    fd, _ = _open_checked(path, what, limit)
    fh = os.fdopen(fd, "rb")
    return _Capped(fh, what=what, name=os.fspath(path), limit=limit)  # type: ignore[return-value]


def read_input(path: str | os.PathLike[str], *, what: str, limit: int) -> bytes:
    """The bytes of ``path``, opened as :func:`open_input` opens it (the same checks and messages)."""
    with open_input(path, what=what, limit=limit) as fh:
        return fh.read()
