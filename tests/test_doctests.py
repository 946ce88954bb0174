"""The docstrings' examples run: every ``>>>`` example of the packages, as part of the default suite.

Modules are found by their text (no import at collection); each is then imported and its examples run with
:mod:`doctest` (``ELLIPSIS`` on, as pytest's ``--doctest-modules`` has it).  A module that needs an optional extra
that is not installed (torch, pgmpy) is skipped, any other import failure fails.
"""

from __future__ import annotations

import doctest
import importlib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _layout import module_name, source_files

OPTIONAL = {"torch", "pgmpy"}  # the extras a module may need (pyproject's optional dependencies)


MODULES = sorted(module_name(p) for p in source_files() if ">>>" in p.read_text(encoding="utf-8"))


def test_the_packages_have_examples():
    assert len(MODULES) >= 10, MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        if exc.name is not None and exc.name.split(".")[0] in OPTIONAL:
            pytest.skip(f"{name} needs the optional {exc.name}")
        raise
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    out: list[str] = []
    for test in finder.find(module, name):
        runner.run(test, out=out.append)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0, f"{name} has '>>>' in its text but no example doctest can find"
    assert result.failed == 0, "".join(out)
