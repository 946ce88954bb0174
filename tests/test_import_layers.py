"""The direction of imports between the packages (STYLE.md, "Layout and direction of imports").

``analysis`` imports nothing of ours; ``mechanisms`` and ``attacks`` may import ``analysis`` but never ``games``;
``mechanisms`` never imports ``attacks``; ``games`` composes the other three; ``privgame`` (the Python API) may
import them all, and none of them imports it.  Every module of every package is
parsed (``ast``, nothing is imported), and every import counts wherever it stands: at module level, inside a
function (a lazy import is still a dependency), under ``if TYPE_CHECKING:`` (a type-only import still ties the
lower layer's API to the upper one, and mypy follows it), and ``importlib.import_module("...")`` /
``__import__("...")`` with a literal name.  TYPE_CHECKING-only imports are therefore NOT an exception: a type a lower
layer needs belongs in that layer.  Relative imports are resolved to their absolute module first.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("analysis", "attacks", "games", "mechanisms", "privgame")
FORBIDDEN = {
    "analysis": {"attacks", "games", "mechanisms", "privgame"},
    "mechanisms": {"attacks", "games", "privgame"},
    "attacks": {"games", "privgame"},
    "games": {"privgame"},
    "privgame": set(),  # the Python API, on top of everything
}


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """Every module ``path`` imports, as (line, absolute dotted name)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    name = _module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append((node.lineno, module))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if called in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                found.append((node.lineno, node.args[0].value))
    return sorted(found)


def _violations(package: str, root: Path = ROOT) -> list[str]:
    out = []
    for path in sorted((root / package).rglob("*.py")):
        for line, module in _imports(path, root):
            top = module.split(".")[0]
            if top in FORBIDDEN[package]:
                out.append(f"{path.relative_to(root)}:{line} imports {module}")
    return out


@pytest.mark.parametrize("package", PACKAGES)
def test_package_imports_only_lower_layers(package):
    assert (ROOT / package / "__init__.py").is_file()
    violations = _violations(package)
    assert not violations, f"{package} must not import {sorted(FORBIDDEN[package])}: " + "; ".join(violations)


def test_the_scan_sees_every_kind_of_import(tmp_path):
    """A module with each kind of forbidden import is caught, each on its own line (the check can fail)."""
    package = tmp_path / "mechanisms"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from .bad import f\n")
    (package / "sub" / "bad.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "import games.registry\n"  # 2: module level
        "if TYPE_CHECKING:\n"
        "    from attacks import Identity\n"  # 4: type-only
        "def f():\n"
        "    from games import config\n"  # 6: inside a function
        "    import importlib\n"
        "    return importlib.import_module('attacks.loss')\n"  # 8: by literal name
        "g = __import__('games')\n"  # 9: the builtin, by literal name
        "from .. import gaussian\n"  # 10: relative (a relative import never leaves its package)
        "import analysis.one_run, numpy\n"  # 11: allowed
    )
    violations = _violations("mechanisms", tmp_path)
    assert [v.split(" ")[0] for v in violations] == [f"mechanisms/sub/bad.py:{n}" for n in (2, 4, 6, 8, 9)]
    assert (10, "mechanisms") in _imports(package / "sub" / "bad.py", tmp_path)
    assert _imports(package / "sub" / "__init__.py", tmp_path) == [(1, "mechanisms.sub.bad")]
