"""The one place that decides whether a name read from a file may be imported.

Importing a module runs its code with the user's rights.  privgame imports a module named in a file only when the
user chose that file to run or asked for it:

- a config the user runs (``privgame run CONFIG``, ``privgame.run``) or a plugin list the user types
  (``--plugins``) is the user's own choice: its names are imported;
- a results directory's manifest (``privgame report``, ``reanalyse``, ``privgame.load``) and an artefact-cache
  entry are files privgame wrote for someone, perhaps a stranger: a name read from them is imported only when the
  user passes ``--trust-plugins`` (``trust_plugins=True``), except names inside privgame itself and inside the
  libraries it requires to run (scikit-learn's estimators), whose code is already installed and trusted by
  installing privgame.

Every import of a name that comes from a file goes through :func:`check_import` (plugin modules, scikit-learn
estimators, DP-SGD model factories: :func:`privgame.mechanisms._imports.resolve_import` and
:func:`privgame.engine.config.import_plugins`), and the readers of results directories and caches say where the names
they hand on come from with :func:`names_from`.  A name from an untrusted source is refused in one line
(:class:`UntrustedImportError`, a ``ValueError``) before anything is imported.  A program named by such a file (an
external generator's command) is refused the same way, when the component is built (:func:`check_program`).
docs/security.md states the rules.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["TRUSTED_PACKAGES", "UntrustedImportError", "check_found", "check_import", "check_program", "names_from"]

TRUSTED_PACKAGES = ("privgame", "sklearn")
"""Packages whose modules may be imported whatever names them: privgame's own, and scikit-learn (a dependency,
whose estimators a stored ``sklearn`` mechanism names)."""


class UntrustedImportError(ValueError):
    """A name read from a file privgame does not trust would be imported without ``--trust-plugins``."""


@dataclass(frozen=True)
class _Source:
    what: str
    trusted: bool


_SOURCE: ContextVar[_Source | None] = ContextVar("privgame_names_from", default=None)


@contextmanager
def names_from(what: str, *, trusted: bool) -> Iterator[None]:
    """Within this block, names to import come from ``what`` (``"results/manifest.json"``), trusted or not.

    Parameters
    ----------
    what : str
        The file the names are read from, for the messages.
    trusted : bool
        Whether the user vouched for it (``--trust-plugins``).
    """
    token = _SOURCE.set(_Source(what, trusted))
    try:
        yield
    finally:
        _SOURCE.reset(token)


def _trusted_module(module: str) -> bool:
    return any(module == package or module.startswith(package + ".") for package in TRUSTED_PACKAGES)


def check_import(module: str, *, field: str, name: str | None = None) -> None:
    """Refuse to import ``module`` when it was read from an untrusted file (see the module docstring).

    Parameters
    ----------
    module : str
        The module that would be imported.
    field : str
        What names it, for the message (``"model"``, ``"estimator"``, ``"plugin"``).
    name : str or None, default=None
        The full name as written (``"package.module:factory"``), for the message; ``module`` when omitted.

    Raises
    ------
    UntrustedImportError
        If the current source (:func:`names_from`) is untrusted and ``module`` is outside
        :data:`TRUSTED_PACKAGES`.
    """
    source = _SOURCE.get()
    if source is None or source.trusted or _trusted_module(module):
        return
    raise UntrustedImportError(
        f"{field} {name or module!r} is named by {source.what}, which this command did not write; importing it "
        "would run its code: pass --trust-plugins (trust_plugins=True) only for files from a trusted source."
    )


def check_program(command: str, *, field: str) -> None:
    """Refuse a program to run (an external generator's command) named by an untrusted file.

    Running a program is running its code, as importing a module is; no program is trusted by where it lives.

    Raises
    ------
    UntrustedImportError
        If the current source (:func:`names_from`) is untrusted.
    """
    source = _SOURCE.get()
    if source is None or source.trusted:
        return
    raise UntrustedImportError(
        f"{field} {command!r} is named by {source.what}, which this command did not write; running it would run its "
        "code: pass --trust-plugins (trust_plugins=True) only for files from a trusted source."
    )


def check_found(found: object, *, field: str, name: str, classes_only: bool = False) -> None:
    """Refuse what an import path from an untrusted file found, unless it is defined in a trusted package.

    :func:`check_import` passes ``privgame.engine.store`` but the path ``"privgame.engine.store:os.system"`` walks
    from that module to ``os.system``, which privgame only imported: the object itself must be a class or function
    *defined* in privgame or scikit-learn (its ``__module__``), and a class where ``classes_only`` (an estimator,
    which is called without arguments: a function such as ``sys.exit`` or ``privgame.engine.cli:main`` would run).

    Parameters
    ----------
    found : object
        What the path named (the module imported, then its attributes walked).
    field, name : str
        As in :func:`check_import`.
    classes_only : bool, default=False
        Whether only a class may be named.

    Raises
    ------
    UntrustedImportError
        If the current source is untrusted and ``found`` is not such an object.
    """
    source = _SOURCE.get()
    if source is None or source.trusted:
        return
    module = getattr(found, "__module__", None) if isinstance(found, type) or callable(found) else None
    if isinstance(module, str) and _trusted_module(module) and (isinstance(found, type) or not classes_only):
        return
    what = "a class" if classes_only else "a class or function"
    raise UntrustedImportError(
        f"{field} {name!r} is named by {source.what}, which this command did not write, and must be {what} defined "
        f"in {' or '.join(TRUSTED_PACKAGES)}, got {type(found).__name__} {getattr(found, '__qualname__', '')!r} "
        f"of {module!r}: pass --trust-plugins (trust_plugins=True) only for files from a trusted source."
    )
