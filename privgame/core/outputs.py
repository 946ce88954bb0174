"""The one place that decides whether privgame may write a path, and the one way it writes a file there.

Every path privgame writes — ``privgame run --out`` and ``--cache-dir``, ``privgame reanalyse --out``, every file
option of ``privgame report``, ``domain``, ``validate``, ``ladder`` and ``synth``, and ``privgame.run``'s ``out`` and
``cache_dir`` — is checked here before any work is done (:func:`check_output_file`,
:func:`check_output_directory`), and every single file is written through :func:`atomic_output` (or
:func:`write_text`).  The rules (docs/security.md, "What privgame never overwrites"):

* never an empty path; never a directory where a file is expected, nor a file where a directory is; never a device,
  a FIFO or a socket (an atomic write would replace the device node itself), nor the name of an open stream
  (``/dev/stdout``, ``/dev/fd/N``, ``/proc/PID/fd/N``: a terminal, a pipe or whatever file a shell redirected it to;
  leave the option out to print to standard output); never a broken symbolic link;
* the folder that will hold the file (or the nearest existing folder above a directory to be made) must exist and be
  writable, which is probed with a temporary file removed at once (permission bits say nothing for root or on a
  read-only mount); an existing file must be writable by its permissions too;
* never a file the same command reads (its data file, domain file, config, or the results directory it reports on),
  compared by resolved path and by inode (:func:`os.path.samefile`), symbolic links followed, so neither another
  spelling nor a hard link gets through; two outputs of one command never name the same file
  (:func:`check_distinct`);
* never a results directory's own files (:data:`RESULTS_NAMES`: ``manifest.json``, ``config.toml``, the rows,
  ``raw/``, ``failures/`` ...; nor the hidden ``.*.tmp`` files its store deletes when it opens it), nor anything under
  its own folders: only :class:`privgame.engine.store.ResultsStore` writes those.  A results directory is one named
  by the command (``results=``), or any folder on the way holding a ``manifest.json`` beside ``config.toml`` and one
  of its folders;
* a file is written to a temporary file in the same folder (named ``.<name>.<random>.tmp<suffix>``, the suffix kept
  so that a writer that chooses the format by it chooses right), flushed to disk, given the old file's permissions
  (a new file's: ``0666`` less the umask) and renamed over the target (:func:`os.replace`), so that a kill at any
  moment leaves the old file or the new one, never half of either.  A symbolic link is followed: the file it names
  is replaced, the link stays;
* a write that fails (a full disk, a permission) raises :class:`OutputWriteError`, one line naming the file, what was
  being written and the system's error (``cannot write 'out.csv' (writing --output): [Errno 28] No space left on
  device``), which ``privgame`` prints as it is (exit status 1).

This module is at the bottom of the layers: it imports only the standard library.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

__all__ = [
    "RESULTS_NAMES",
    "OutputPathError",
    "OutputWriteError",
    "atomic_output",
    "check_distinct",
    "check_output_directory",
    "check_output_file",
    "output_directory_problem",
    "output_file_problem",
    "results_directory_problem",
    "write_text",
]

#: the top-level files of a results directory (privgame.engine.store's layout; a test checks they agree)
RESULTS_FILES = ("manifest.json", "config.toml", "results.parquet", "records.parquet")
#: the top-level folders of a results directory
RESULTS_DIRS = ("trials", "raw", "records", "failures", "progress")
#: every name a results directory's store owns: nothing but the store writes them
RESULTS_NAMES = RESULTS_FILES + RESULTS_DIRS
#: the owned files that the store never rewrites once they exist (a resumed run reads its own ``config.toml``)
_KEPT_ON_RESUME = ("config.toml",)

PathLike = str | os.PathLike[str]
Reads = Mapping[str, PathLike | None]


class OutputPathError(ValueError):
    """A path privgame was asked to write cannot be written (one line naming the option, the path and the rule)."""


class OutputWriteError(OSError):
    """Writing a file failed (a full disk, a permission, an I/O error): one line naming the file, what was being
    written and the system's error, ``cannot write 'runs/q/raw/trial-000012.npz' (writing trial 12's raw arrays):
    [Errno 28] No space left on device``.

    Parameters
    ----------
    path : str or path-like
        The file that could not be written (the target, not its temporary file).
    action : str
        What was being written, ``"writing trial 12's raw arrays"``.
    cause : OSError
        The system's error; its ``errno`` and ``strerror`` are kept.
    """

    def __init__(self, path: PathLike, action: str, cause: OSError) -> None:
        super().__init__(cause.errno, cause.strerror or str(cause) or type(cause).__name__, os.fspath(path))
        self.action = action

    def __reduce__(self) -> tuple[type[OutputWriteError], tuple[str, str, OSError]]:
        return type(self), (str(self.filename), self.action, OSError(self.errno, self.strerror))

    def __str__(self) -> str:
        detail = self.strerror if self.errno is None else f"[Errno {self.errno}] {self.strerror}"
        return f"cannot write {self.filename!r} ({self.action}): {detail}"


def _name(path: PathLike) -> str:
    return os.fspath(path)


def _check_type(path: object, what: str) -> str:
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"{what} must be a path (str or os.PathLike), got {type(path).__name__}.")
    name = os.fspath(path)
    if not isinstance(name, str):
        raise TypeError(f"{what} must be a path (str or os.PathLike), got bytes.")
    return name


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _real(path: str) -> Path:
    """``path`` absolute, every symbolic link on the way followed (a missing tail kept as it is)."""
    return Path(os.path.realpath(path))


def _same(a: Path, b: Path) -> bool:
    """Whether two paths are the same file: the same resolved path, or the same inode (a hard link)."""
    if _real(str(a)) == _real(str(b)):
        return True
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _is_results_directory(folder: Path) -> bool:
    """Whether ``folder`` looks like a results directory: a ``manifest.json`` beside the config copy and one of the
    store's folders (a manifest, a config or a ``raw/`` alone are too common to claim someone's project folder by;
    the results directory a command reads is protected by name, ``results=``)."""
    try:
        if not (folder / "manifest.json").is_file() or not (folder / "config.toml").is_file():
            return False
        return any((folder / d).is_dir() for d in RESULTS_DIRS)
    except OSError:
        return False


def _owned_name(name: str) -> bool:
    """Whether a top-level name of a results directory is the store's: its files and folders, and the hidden
    ``.*.tmp`` files it deletes whenever it opens the directory."""
    return name in RESULTS_NAMES or (name.startswith(".") and name.endswith(".tmp"))


def results_directory_problem(path: PathLike, *, what: str, results: Iterable[PathLike | None] = ()) -> str | None:
    """Why ``path`` is one of a results directory's own files (or under its own folders), or ``None``; the results
    directory itself is not (a directory written into: its store decides what it may do there).

    Parameters
    ----------
    path : str or path-like
    what : str
        The option or field named in the message.
    results : iterable of str or path-like, default=()
        Results directories the command reads or writes (protected whether or not they look like one yet).
    """
    name = _name(path)
    named = [_real(_name(r)) for r in results if r is not None and _name(r) != ""]
    for candidate in dict.fromkeys((Path(os.path.abspath(name)), _real(name))):
        for folder in candidate.parents:
            if folder in named or _is_results_directory(folder):
                top = candidate.relative_to(folder).parts[0]
                if _owned_name(top):
                    return (
                        f"{what} must not be a results directory's own file (only its store writes "
                        f"{str(folder / top)!r}), got {name!r}"
                    )
    return None


def _read_problem(target: Path, name: str, what: str, reads: Reads) -> str | None:
    for label, read in reads.items():
        if read is None or _name(read) == "":
            continue
        if _same(target, Path(_name(read))):
            return f"{what} must differ from {label} {_name(read)!r}, which this command reads, got {name!r}"
    return None


def _probe(folder: Path, what: str, name: str) -> str | None:
    """Whether a file can be made in ``folder``: a temporary file made and removed at once."""
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".privgame-probe-")
    except OSError as exc:
        return f"{what} {name!r} cannot be written: {str(folder)!r}: {exc.strerror or exc}"
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(tmp)
    return None


_STREAM = re.compile(r"^(/dev/std(in|out|err)|/dev/fd/.*|/proc/.*/fd(/.*)?)$")


def _stream_name(name: str) -> bool:
    """Whether ``name``, or a link on the way to the file it names, is the name of an open descriptor
    (``/dev/stdout``, ``/dev/fd/1``, ``/proc/self/fd/1``): it names whatever that stream is now — a terminal, a
    pipe, or the file a shell redirected it to, which an atomic write would replace."""
    p = os.path.abspath(name)
    for _ in range(40):  # the kernel's own limit on links followed
        p = os.path.join(os.path.realpath(os.path.dirname(p)), os.path.basename(p))
        if _STREAM.match(p):
            return True
        if not os.path.islink(p):
            return False
        p = os.path.abspath(os.path.join(os.path.dirname(p), os.readlink(p)))
    return False


def _file_kind_problem(name: str, what: str) -> str | None:
    """The problems of what ``name`` is now (checked again when it is written): a directory, a device, a FIFO,
    a socket, a broken link, the name of an open descriptor, a name that only a directory can have."""
    tail = name[-1] if name.endswith(("/", os.sep)) else os.path.basename(name)
    if tail in ("/", os.sep, ".", ".."):
        # the system opens such a name only as a directory; resolved, "out.txt/" would be the file "out.txt"
        return f"{what} {name!r} names a directory (it ends in {tail!r}); give a file name"
    try:
        if _stream_name(name):
            return f"{what} {name!r} names an open stream (standard output, a descriptor); give a regular file's name"
    except (OSError, ValueError):  # an unreadable link, a NUL character: os.stat below says which
        pass
    try:
        info = os.stat(name)
    except (FileNotFoundError, NotADirectoryError):
        info = None
    except ValueError:  # an embedded NUL character
        return f"{what} must be a path without NUL characters, got {name!r}"
    except OSError as exc:
        return f"{what} {name!r} cannot be used: {exc.strerror or exc}"
    if info is None:
        link = _lstat(name)
        if link is not None and stat.S_ISLNK(link.st_mode):
            return f"{what} {name!r} is a broken symbolic link"
        return None
    if stat.S_ISDIR(info.st_mode):
        return f"{what} {name!r} is a directory; give a file name"
    if not stat.S_ISREG(info.st_mode):
        return f"{what} {name!r} is {_kind(info.st_mode)}; give a regular file's name"
    return None


def _os_problem(what: str, name: str, exc: OSError) -> str:
    """A path the system refuses to look at (a name too long, a loop of links), as one line."""
    return f"{what} {name!r} cannot be used: {exc.strerror or exc}"


def _file_problem(
    name: str,
    what: str,
    reads: Reads | None,
    results: Iterable[PathLike | None],
    suffixes: tuple[str, ...] | None,
    create_parents: bool,
    probe: bool,
) -> str | None:
    """:func:`output_file_problem` of a name already checked to be a str (an OSError propagates)."""
    if name == "":
        return f"{what} is empty; give a file name"
    problem = _file_kind_problem(name, what)
    if problem is not None:
        return problem
    if suffixes is not None and Path(name).suffix.lower() not in suffixes:
        allowed = ", ".join(suffixes[:-1]) + f" or {suffixes[-1]}" if len(suffixes) > 1 else suffixes[0]
        return f"{what} must end in {allowed}, got {name!r}"
    target = _real(name)
    parent = target.parent
    if create_parents:
        while not parent.exists() and not parent.is_symlink() and parent != parent.parent:
            parent = parent.parent
    if not parent.exists():
        return f"{what} {name!r}: the folder {str(Path(name).parent)!r} does not exist"
    if not parent.is_dir():
        return f"{what} {name!r}: {str(parent)!r} is a file, not a folder"
    problem = results_directory_problem(name, what=what, results=results)
    if problem is not None:
        return problem
    problem = _read_problem(target, name, what, reads or {})
    if problem is not None:
        return problem
    if target.exists() and not os.access(target, os.W_OK):
        return f"{what} {name!r} cannot be written (permission denied)"
    return _probe(parent, what, name) if probe else None


def _directory_problem(name: str, what: str, reads: Reads | None, clears: bool) -> str | None:
    """:func:`output_directory_problem` of a name already checked to be a str (an OSError propagates)."""
    if name == "":
        return f"{what} is empty; give a directory"
    p = Path(name)
    try:
        if p.exists() and not p.is_dir():
            info = os.stat(name)
            if not stat.S_ISREG(info.st_mode):
                return f"{what} {name!r} is {_kind(info.st_mode)}, not a directory"
            return f"{what} {name!r} is a file, not a directory"
    except ValueError:
        return f"{what} must be a path without NUL characters, got {name!r}"
    probe = p
    while not probe.exists():
        if probe.is_symlink():
            return f"{what} {name!r}: {str(probe)!r} is a broken symbolic link"
        probe = probe.parent
    if not probe.is_dir():
        return f"{what} {name!r} cannot be a directory: {str(probe)!r} is a file"
    problem = results_directory_problem(name, what=what)
    if problem is not None:
        return problem
    root = _real(name)
    for label, read in (reads or {}).items():
        if read is None or _name(read) == "":
            continue
        real = _real(_name(read))
        if not _within(real, root) or real == root:
            continue
        top = real.relative_to(root).parts[0]
        if _owned_name(top) and (clears or top not in _KEPT_ON_RESUME):
            why = "delete" if clears else "rewrite"
            return (
                f"{what} must not be the results directory holding {label} {_name(read)!r}, which this command reads "
                f"and would {why}, got {name!r}; copy it elsewhere first"
            )
    return _probe(probe, what, name)


def output_file_problem(
    path: PathLike,
    *,
    what: str,
    reads: Reads | None = None,
    results: Iterable[PathLike | None] = (),
    suffixes: tuple[str, ...] | None = None,
    create_parents: bool = False,
    probe: bool = True,
) -> str | None:
    """Why a file cannot be written at ``path``, or ``None`` when it can; nothing is created.

    Parameters
    ----------
    path : str or path-like
    what : str
        The option or field named in the message (``"--output"``).
    reads : mapping of str to path, default=None
        The files the command reads, by what the message calls them (``{"the data file": "own.csv"}``); ``path``
        must be none of them.  A directory here protects itself only; results directories go in ``results``.
    results : iterable of path, default=()
        Results directories the command reads: ``path`` may be none of their own files (see the module docstring).
    suffixes : tuple of str or None, default=None
        The suffixes allowed (lower case, with the dot), for a writer that chooses its format by the suffix.
    create_parents : bool, default=False
        Whether missing folders will be created (then the nearest existing folder above must be a writable folder).
    probe : bool, default=True
        Whether to probe the folder with a temporary file; ``False`` for more names in a folder already probed.

    Returns
    -------
    str or None
        One line without its final period.

    Raises
    ------
    TypeError
        If ``path`` is not a str or path-like.
    """
    name = _check_type(path, what)
    try:
        return _file_problem(name, what, reads, results, suffixes, create_parents, probe)
    except OSError as exc:  # a name too long (ENAMETOOLONG), a loop of links, an unreadable folder
        return _os_problem(what, name, exc)
    except ValueError:  # an embedded NUL character
        return f"{what} must be a path without NUL characters, got {name!r}"


def check_output_file(
    path: PathLike,
    *,
    what: str,
    reads: Reads | None = None,
    results: Iterable[PathLike | None] = (),
    suffixes: tuple[str, ...] | None = None,
    create_parents: bool = False,
) -> Path:
    """``path`` as a Path, after :func:`output_file_problem` found nothing (same parameters).

    Raises
    ------
    OutputPathError
        With the problem, as one line.
    TypeError
        If ``path`` is not a str or path-like.
    """
    problem = output_file_problem(
        path, what=what, reads=reads, results=results, suffixes=suffixes, create_parents=create_parents
    )
    if problem is not None:
        raise OutputPathError(f"{problem}.")
    return Path(path)


def output_directory_problem(
    path: PathLike, *, what: str = "--out", reads: Reads | None = None, clears: bool = False
) -> str | None:
    """Why ``path`` cannot be (or become) a directory this process writes in, or ``None`` when it can.

    Nothing is created: the nearest existing folder is probed with a temporary file that is removed at once.

    Parameters
    ----------
    path : str or path-like
    what : str, default="--out"
        The option or field named in the message.
    reads : mapping of str to path, default=None
        The files the command reads: none may be a results directory's own file at ``path`` that the store
        rewrites (its ``config.toml`` may be read to resume it, unless ``clears``).
    clears : bool, default=False
        Whether the writer may delete what ``path`` holds (``--force``): then no file read may be among its own
        files at all.

    Raises
    ------
    TypeError
        If ``path`` is not a str or path-like.
    """
    name = _check_type(path, what)
    try:
        return _directory_problem(name, what, reads, clears)
    except OSError as exc:
        return _os_problem(what, name, exc)
    except ValueError:
        return f"{what} must be a path without NUL characters, got {name!r}"


def check_output_directory(
    path: PathLike, *, what: str = "--out", reads: Reads | None = None, clears: bool = False
) -> Path:
    """``path`` as a Path, after :func:`output_directory_problem` found nothing (same parameters).

    Raises
    ------
    OutputPathError
        With the problem, as one line.
    """
    problem = output_directory_problem(path, what=what, reads=reads, clears=clears)
    if problem is not None:
        raise OutputPathError(f"{problem}.")
    return Path(path)


def check_distinct(outputs: Mapping[str, PathLike | None]) -> None:
    """Refuse two outputs of one command that name the same file (``{option: path}``, ``None`` for an option not
    given), compared as :func:`check_output_file` compares a file read.

    Raises
    ------
    OutputPathError
    """
    by_path: dict[Path, str] = {}
    by_inode: dict[tuple[int, int], str] = {}  # a hard link: another path, the same file
    for what, path in outputs.items():
        if path is None or _name(path) == "":
            continue
        real = _real(_name(path))
        try:
            info = os.stat(real)
            inode: tuple[int, int] | None = (info.st_dev, info.st_ino)
        except (OSError, ValueError):
            inode = None
        other = by_path.get(real) or (by_inode.get(inode) if inode is not None else None)
        if other is not None:
            raise OutputPathError(f"{what} must differ from {other}, got {_name(path)!r} for both.")
        by_path[real] = what
        if inode is not None:
            by_inode[inode] = what


def _umask() -> int:
    """The process's umask, read without changing it where Linux says it (``os.umask`` sets it to read it, which
    another thread could see)."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_output(path: PathLike, *, what: str = "output", action: str | None = None) -> Iterator[Path]:
    """A temporary file to write in place of ``path``; renamed over it when the block ends without an error.

    The temporary file is in the folder of the file ``path`` names (links followed) and keeps its suffix; the block
    writes it (``figure.savefig(tmp)``, ``frame.to_parquet(tmp)``).  It is then flushed to disk, given the
    permissions of the file it replaces (of a new file: ``0666`` less the umask) and renamed over the target.  On an
    error, or Ctrl-C, the temporary file is removed and the target is left as it was.

    Parameters
    ----------
    path : str or path-like
        The file to write (checked beforehand by :func:`check_output_file`; what it is now is checked again here).
    what : str, default="output"
        The option named in a message.
    action : str or None, default=None
        What is being written, named when the write fails (default ``"writing <what>"``).

    Yields
    ------
    Path
        The temporary file to write.

    Raises
    ------
    OutputPathError
        If ``path`` is now a directory, a device, a FIFO, a socket or a results directory's own file: one line.
    OutputWriteError
        If the file cannot be written (a full disk, a permission, an OSError of the block): one line naming
        ``path``, ``action`` and the system's error.
    """
    name = _check_type(path, what)
    if name == "":
        raise OutputPathError(f"{what} is empty; give a file name.")
    problem = _file_kind_problem(name, what) or results_directory_problem(name, what=what)
    if problem is not None:
        raise OutputPathError(f"{problem}.")
    target = _real(name)
    doing = f"writing {what}" if action is None else action
    try:
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=f".tmp{target.suffix}")
    except OSError as exc:
        raise OutputWriteError(name, doing, exc) from None
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        existing = _lstat(str(target))
        mode = stat.S_IMODE(existing.st_mode) if existing is not None else 0o666 & ~_umask()
        os.chmod(tmp, mode)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except OutputWriteError:  # a nested write's, already naming its file
        tmp.unlink(missing_ok=True)
        raise
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OutputWriteError(name, doing, exc) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text(
    path: PathLike, text: str, *, what: str = "output", encoding: str = "utf-8", action: str | None = None
) -> Path:
    """Write ``text`` to ``path`` through :func:`atomic_output`; returns ``path`` as a Path.

    Raises
    ------
    OutputPathError, OutputWriteError
        As :func:`atomic_output`.
    """
    with atomic_output(path, what=what, action=action) as tmp:
        tmp.write_text(text, encoding=encoding)
    return Path(path)
