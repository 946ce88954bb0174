"""Objects named by an import path in a config: a plugin's estimator, model factory or data set.

``"package.module:name"`` (or ``"package.module.name"``) is imported when the config is read, so a path that
cannot be imported is refused in one line before anything runs.  Importing the module runs its code with the
user's rights, as importing a plugin does (docs/config.md).
"""

from __future__ import annotations

import importlib
from typing import Any

from privgame.core.trust import check_found, check_import

__all__ = ["one_line", "resolve_import"]


def one_line(exc: BaseException) -> str:
    """An exception as one line: its type and its message with the line breaks folded (no final period: the
    callers end their sentence)."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split()).rstrip('.')}"


def resolve_import(
    path: Any, *, field: str, example: str, what: str = "object", form: str = "package.module:name"
) -> Any:
    """The object an import path names: ``"package.module:name"`` or ``"package.module.name"``.

    Parameters
    ----------
    path : str
        The import path; after a colon, dots walk attributes (``"package.module:Class.method"``).
    field : str
        The config field, for the messages (``"estimator"``, ``"model"``).
    example : str
        A valid path, shown when ``path`` is no string.
    what : str, default="object"
        What the path must name, for the message when it cannot be imported (``"class"``, ``"function"``).
    form : str, default="package.module:name"
        The path's shape, for the message when ``path`` has no module part.

    Raises
    ------
    TypeError
        If ``path`` is not a string.
    privgame.core.trust.UntrustedImportError
        If the path was read from a file the user did not vouch for (:func:`privgame.core.trust.names_from`), unless
        it names a class (``what="class"``) or function defined in privgame or scikit-learn
        (:func:`privgame.core.trust.check_found`).
    ValueError
        If it is not a dotted path, or the module cannot be imported (its own error or ``sys.exit`` included), or has
        no such attribute; one line each.
    """
    if not isinstance(path, str):
        raise TypeError(f"{field} must be an import path such as {example!r}, got {path!r}.")
    module, sep, attr = path.partition(":") if ":" in path else path.rpartition(".")
    if not module or not attr or not sep:
        raise ValueError(f"{field} must be an import path '{form}', got {path!r}.")
    check_import(module, field=field, name=path)  # a name read from a results directory or a cache entry
    try:
        found: Any = importlib.import_module(module)
        for part in attr.split("."):
            found = getattr(found, part)
    except SystemExit as exc:  # a module that exits would otherwise end the command silently, status 0
        raise ValueError(
            f"{field} must be an importable {what}, got {path!r}, whose import called sys.exit({exc.code!r})."
        ) from None
    except Exception as exc:  # ImportError, AttributeError, or whatever the module's own code raised
        raise ValueError(f"{field} must be an importable {what}, got {path!r}: {one_line(exc)}.") from None
    # the attributes may walk out of the module (``privgame.engine.store:os.system``): what they found is checked too
    check_found(found, field=field, name=path, classes_only=what == "class")
    return found
