"""Every public name of every package resolves to what its package declares, whatever was imported before it.

The packages export their names lazily (:mod:`privgame.core._lazy`).  Importing a submodule ``package.sub`` binds the
package attribute ``sub`` to the submodule, so a public name equal to a submodule's name was silently replaced by
the module whenever something imported that submodule first: ``from privgame.mechanisms.dpsgd import ..., train`` gave
the module ``privgame.mechanisms.dpsgd.train``, and ``benchmarks/bench_dpsgd.py`` failed with "'module' object is not
callable". The order that matters is therefore "which submodules were imported before a name was asked for": each check
runs in a fresh interpreter, once with every submodule of every package imported first, once with every public name
asked for first and every submodule imported afterwards, and once as the package docstring's example.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# walks every package, imports what `order` says first, then checks every declared public name
_CHECK = textwrap.dedent(
    """
    import importlib, json, pkgutil, sys

    def packages(name):
        module = importlib.import_module(name)
        yield name
        for info in pkgutil.iter_modules(module.__path__):
            if info.ispkg:
                yield from packages(f"{name}.{info.name}")

    def submodules(name):
        module = importlib.import_module(name)
        return [f"{name}.{info.name}" for info in pkgutil.iter_modules(module.__path__)]

    def target(spec):
        module, _, attribute = spec.partition(":")
        value = importlib.import_module(module)
        return getattr(value, attribute) if attribute else value

    def ask_every_name(names):
        for package in names:
            for name in getattr(importlib.import_module(package), "__all__", ()):
                getattr(importlib.import_module(package), name)

    names = list(packages("privgame"))
    if sys.argv[1] == "submodules-first":
        for package in names:
            for sub in submodules(package):
                importlib.import_module(sub)
        ask_every_name(names)
    else:
        ask_every_name(names)
        for package in names:
            for sub in submodules(package):
                importlib.import_module(sub)
    wrong, checked = [], 0
    for package in names:
        module = importlib.import_module(package)
        exports = getattr(module, "_LAZY_EXPORTS", {})
        missing = sorted(set(getattr(module, "__all__", ())) - set(exports))
        if missing:
            wrong.append(f"{package}: __all__ names {missing} without a declared target")
        for name, spec in exports.items():
            checked += 1
            if module.__dict__.get(name, target(spec)) is not target(spec) or getattr(module, name) is not target(spec):
                wrong.append(f"{package}.{name} is {getattr(module, name)!r}, declared {spec}")
    print(json.dumps({"wrong": wrong, "checked": checked, "packages": names}))
    """
)


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.mark.parametrize("order", ["submodules-first", "names-first"])
def test_every_public_name_is_its_declared_target_in_either_order(order: str) -> None:
    done = _run(_CHECK, order)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["wrong"] == []
    assert (
        "privgame.mechanisms.dpsgd" in result["packages"]
        and "privgame" in result["packages"]
        and result["checked"] > 50
    )


def test_the_dpsgd_docstring_example_imports_the_function_train() -> None:
    """The exact import of the package docstring, after something else imported the training module."""
    code = textwrap.dedent(
        """
        import privgame.mechanisms.dpsgd.whitebox  # imports the training module, as the registry's mechanisms do
        from privgame.mechanisms.dpsgd import DPSGDConfig, make_generator, mlp, resolve_device, train
        import inspect
        print(inspect.isfunction(train), train.__module__, DPSGDConfig.__name__)
        """
    )
    done = _run(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "privgame.mechanisms.dpsgd.sgd", "DPSGDConfig"]


def test_attach_refuses_a_public_name_equal_to_a_submodule(tmp_path: Path) -> None:
    package = tmp_path / "clashing"
    package.mkdir()
    (package / "train.py").write_text("def train():\n    return 1\n")
    (package / "__init__.py").write_text(
        "from privgame.core._lazy import attach\n"
        "__all__ = ['train']\n"
        "__getattr__, __dir__ = attach(__name__, {'train': 'clashing.train:train'})\n"
    )
    code = f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import clashing"
    done = _run(code)
    assert done.returncode != 0
    assert "clashing exports 'train', the name of a submodule" in done.stderr
    # exporting the submodule itself under its own name is what analysis does, and is fine
    (package / "__init__.py").write_text(
        "from privgame.core._lazy import attach\n__getattr__, __dir__ = attach(__name__, {'train': 'clashing.train'})\n"
    )
    done = _run(code + "; import clashing.train; assert clashing.train.train() == 1")
    assert done.returncode == 0, done.stderr
