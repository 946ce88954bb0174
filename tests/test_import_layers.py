"""The direction of imports between privgame's packages (STYLE.md, "Layout and direction of imports"), and no circle.

The layers, from the bottom up; each package may import only those below it (and itself):

    privgame.core < privgame.analysis < privgame.mechanisms < privgame.attacks, privgame.data < privgame.games
    < privgame.engine < privgame (the top package's ``__init__``: lazy re-exports of the engine's API)

Every module of every package is parsed (``ast``, nothing is imported), and every import counts wherever it stands:
at module level, inside a function (a lazy import is still a dependency), under ``if TYPE_CHECKING:`` (a type-only
import still ties the lower layer's API to the upper one, and mypy follows it), and
``importlib.import_module("...")`` / ``__import__("...")`` with a literal name.  TYPE_CHECKING-only imports are
therefore NOT an exception: a type a lower layer needs belongs in that layer.  Relative imports are resolved to their
absolute module first.  A name of the old layout (``analysis``, ``games``, ... as top-level packages) is refused
everywhere: privgame is one import name.  Beyond the layers, the graph of imports between modules has no circle
(a lazy import inside a function counts as an edge too); ``python tests/test_import_layers.py --dot`` prints it as
Graphviz, one node per package.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _layout import PACKAGE, ROOT, module_name, source_files

LAYERS: dict[str, set[str]] = {
    "privgame.core": set(),
    "privgame.analysis": {"privgame.core"},
    "privgame.mechanisms": {"privgame.core", "privgame.analysis"},
    "privgame.attacks": {"privgame.core", "privgame.analysis", "privgame.mechanisms"},
    "privgame.data": {"privgame.core", "privgame.analysis", "privgame.mechanisms"},
}
LAYERS["privgame.games"] = LAYERS["privgame.attacks"] | {"privgame.attacks", "privgame.data"}
LAYERS["privgame.engine"] = set(LAYERS) - {"privgame.engine"}
LAYERS["privgame"] = {"privgame.core", "privgame.engine"}
OLD_TOP_LEVEL = {"analysis", "attacks", "games", "mechanisms"}


def _layer(module: str) -> str | None:
    """The package (layer) of a module of ours, or None for a module that is not privgame's."""
    if module != "privgame" and not module.startswith("privgame."):
        return None
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else "privgame"


def _imports(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """Every module ``path`` imports, as (line, absolute dotted name)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    name = module_name(path, root)
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
    """The imports of ``package``'s modules that reach a layer above it, or a name of the old layout."""
    folder = root.joinpath(*package.split("."))
    files = [folder / "__init__.py"] if package == "privgame" else source_files(folder)
    out = []
    for path in files:
        for line, module in _imports(path, root):
            layer = _layer(module)
            if module.split(".")[0] in OLD_TOP_LEVEL:
                out.append(f"{path.relative_to(root)}:{line} imports {module} (privgame is one import name)")
            elif layer is not None and layer != package and layer not in LAYERS[package]:
                out.append(f"{path.relative_to(root)}:{line} imports {module}")
    return out


def _imported_names(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """``from pkg import sub`` as (line, ``pkg.sub``): a name imported from a package may be its submodule."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module_name(path, root) if path.name == "__init__.py" else module_name(path, root).rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module → the modules of ours it imports (an imported name ``from pkg import sub`` counts as ``pkg``)."""
    files = source_files(root / "privgame")
    known = {module_name(p, root) for p in files}
    graph: dict[str, set[str]] = defaultdict(set)
    for path in files:
        name = module_name(path, root)
        graph[name]
        for _, module in _imports(path, root) + _imported_names(path, root):
            while module and module not in known:
                module = module.rpartition(".")[0]
            if module and module != name:
                graph[name].add(module)
    return dict(graph)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _is_package_init(module: str, graph: dict[str, set[str]]) -> bool:
    return any(other.startswith(module + ".") for other in graph)


def module_cycles(root: Path = ROOT) -> list[list[str]]:
    """Circles among modules.  A package ``__init__`` that only re-exports lazily names its own submodules; those
    edges (package → its own submodule) and a submodule's import of its own package's ``__init__`` are how every
    Python package works, so the graph drops an edge from a package to a module inside it."""
    graph = import_graph(root)
    trimmed = {
        name: {m for m in deps if not (_is_package_init(name, graph) and m.startswith(name + "."))}
        for name, deps in graph.items()
    }
    return _cycles(trimmed)


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_package_imports_only_lower_layers(package):
    assert (ROOT.joinpath(*package.split(".")) / "__init__.py").is_file()
    violations = _violations(package)
    assert not violations, f"{package} may import only {sorted(LAYERS[package])}: " + "; ".join(violations)


def test_every_module_is_in_a_layer():
    names = {module_name(p) for p in source_files(PACKAGE)}
    assert len(names) > 100
    assert {n for n in names if _layer(n) not in LAYERS} == set()


def test_no_circle_among_modules():
    assert module_cycles() == []


def test_a_circle_is_found(tmp_path):
    """The circle check can fail: a -> b -> c -> a among three modules of a package is reported."""
    package = tmp_path / "privgame" / "data"
    package.mkdir(parents=True)
    (tmp_path / "privgame" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from privgame.data import b\n")
    (package / "b.py").write_text("import privgame.data.c\n")
    (package / "c.py").write_text("def f():\n    from privgame.data.a import x\n")
    (package / "d.py").write_text("import privgame.data.a\n")
    assert module_cycles(tmp_path) == [["privgame.data.a", "privgame.data.b", "privgame.data.c"]]


def package_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Package (layer) → the other packages it imports."""
    out: dict[str, set[str]] = defaultdict(set)
    for name, deps in import_graph(root).items():
        layer = _layer(name)
        out[layer or name] |= {d for d in (_layer(m) for m in deps) if d is not None and d != layer}
    return dict(out)


def test_the_scan_sees_every_kind_of_import(tmp_path):
    """A module with each kind of forbidden import is caught, each on its own line (the check can fail)."""
    package = tmp_path / "privgame" / "mechanisms"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from .bad import f\n")
    (package / "sub" / "bad.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "import privgame.engine.registry\n"  # 2: module level
        "if TYPE_CHECKING:\n"
        "    from privgame.attacks import Identity\n"  # 4: type-only
        "def f():\n"
        "    from privgame.engine import config\n"  # 6: inside a function
        "    import importlib\n"
        "    return importlib.import_module('privgame.attacks.loss')\n"  # 8: by literal name
        "g = __import__('games')\n"  # 9: the builtin, by literal name
        "from .. import gaussian\n"  # 10: relative (a relative import never leaves its package)
        "import privgame.analysis.one_run, numpy\n"  # 11: allowed
    )
    violations = _violations("privgame.mechanisms", tmp_path)
    assert [v.split(" ")[0] for v in violations] == [f"privgame/mechanisms/sub/bad.py:{n}" for n in (2, 4, 6, 8, 9)]
    assert "privgame is one import name" in violations[-1]  # 9: a name of the old layout
    assert (10, "privgame.mechanisms") in _imports(package / "sub" / "bad.py", tmp_path)
    assert _imports(package / "sub" / "__init__.py", tmp_path) == [(1, "privgame.mechanisms.sub.bad")]


def draw_package_graph(path: Path, root: Path = ROOT) -> None:
    """The package graph as a figure: one row per layer, bottom layer at the bottom, every arrow an import (it
    points from the importer to the package it imports, so none may point up)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [["privgame.core"], ["privgame.analysis"], ["privgame.mechanisms"], ["privgame.attacks", "privgame.data"]]
    rows += [["privgame.games"], ["privgame.engine"], ["privgame"]]
    where = {name: (x - (len(row) - 1) / 2, y) for y, row in enumerate(rows) for x, name in enumerate(row)}
    fig, ax = plt.subplots(figsize=(7, 7))
    for package, deps in package_graph(root).items():
        for dep in deps:
            (x0, y0), (x1, y1) = where[package], where[dep]
            colour = "tab:red" if y1 >= y0 else "0.45"  # an upward or sideways arrow would be a violation
            ax.annotate(
                "", xy=(x1, y1 + 0.18), xytext=(x0, y0 - 0.18),
                arrowprops={"arrowstyle": "->", "color": colour, "lw": 0.9, "connectionstyle": "arc3,rad=0.08"},
            )  # fmt: skip
    for name, (x, y) in where.items():
        ax.text(x, y, name, ha="center", va="center", bbox={"boxstyle": "round", "fc": "white", "ec": "black"})
    ax.set_xlim(-1.6, 1.6)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.axis("off")
    ax.set_title("privgame's imports between packages (arrow: imports; none points up)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":  # python tests/test_import_layers.py --dot | --png FILE
    if sys.argv[1:2] == ["--png"] and len(sys.argv) == 3:
        draw_package_graph(Path(sys.argv[2]))
        sys.exit(0)
    if sys.argv[1:] != ["--dot"]:
        sys.exit("usage: python tests/test_import_layers.py --dot | --png FILE")
    print("digraph privgame {\n  rankdir=BT;\n  node [shape=box];")
    for package, deps in sorted(package_graph().items()):
        for dep in sorted(deps):
            print(f'  "{package}" -> "{dep}";')
    print("}")
