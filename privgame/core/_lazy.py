"""Lazy package exports (PEP 562): a package's public names are imported on first access, not with the package.

``import privgame.engine.cli`` imports the ``games`` package first; if its ``__init__`` imported every game, it would
import torch, numba and ``dp_accounting`` before ``privgame --help`` could print a line.  Each package ``__init__``
therefore lists its public names and where they live, and :func:`attach` gives it the module-level
``__getattr__`` and ``__dir__`` that import a name's module when the name is first used::

    __getattr__, __dir__ = attach(__name__, {"Attack": "privgame.attacks._base:Attack", "shadow":
    "privgame.attacks.shadow"})

``"module:name"`` is an attribute of a module, ``"module"`` the (sub)module itself.  The names are also imported
under ``typing.TYPE_CHECKING`` in the ``__init__``, so type checkers and editors see them as ordinary imports.

No public attribute may share its name with a submodule of the package: importing ``package.sub`` (which any
module may do) binds the package's attribute ``sub`` to the submodule, over whatever ``__getattr__`` would have
returned, so ``from privgame.mechanisms.dpsgd import train`` once gave the module ``privgame.mechanisms.dpsgd.train``
instead of the function whenever something had imported that module first.  :func:`attach` refuses such a name when the
package is imported.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["attach"]


def attach(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose public names are imported on first access.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : mapping of str to str
        Public name → ``"module:attribute"`` or ``"module"``.

    Returns
    -------
    getattr : callable
        Imports and returns a public name (cached in the package's namespace, so each is imported once);
        ``AttributeError`` for any other name.
    dir : callable
        The package's names, public ones included.

    Raises
    ------
    ImportError
        If a public attribute (``"module:attribute"``) has the name of one of the package's submodules.
    """
    namespace = importlib.import_module(package).__dict__
    submodules = {info.name for info in pkgutil.iter_modules(namespace.get("__path__", []))}
    shadowed = sorted(name for name, target in exports.items() if name in submodules and ":" in target)
    if shadowed:
        raise ImportError(
            f"{package} exports {', '.join(map(repr, shadowed))}, the name of a submodule: importing the submodule "
            "would rebind the package attribute to it; rename the submodule or the export."
        )
    namespace["_LAZY_EXPORTS"] = dict(exports)

    def __getattr__(name: str) -> Any:
        target = exports.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = target.partition(":")
        value = importlib.import_module(module)
        if attribute:
            value = getattr(value, attribute)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__
