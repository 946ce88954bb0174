"""No pickle is ever loaded by the package: a results directory or cache entry from elsewhere can hold no code.

Every source file of ``analysis``, ``games``, ``mechanisms`` and ``attacks`` is parsed and each call resolved
through its imports (``import numpy as np`` makes ``np.load`` ``numpy.load``), so an alias cannot hide a load.
Refused: importing a pickle-family module at all (``pickle``, ``dill``, ``cloudpickle``, ``shelve``, ...: with
one imported, ``getattr`` could reach a loader no call check sees), ``joblib.load``, ``pandas.read_pickle`` (and
any ``.read_pickle`` method), ``numpy.load`` without an explicit ``allow_pickle=False``, ``allow_pickle=True``
anywhere, and ``torch.load`` without ``weights_only=True``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PACKAGES = ("analysis", "games", "mechanisms", "attacks")
PICKLE_MODULES = ("pickle", "_pickle", "cPickle", "dill", "cloudpickle", "jsonpickle", "shelve", "marshal", "copyreg")
ALWAYS_REFUSED = ("joblib.load", "pandas.read_pickle", "pandas.io.pickle.read_pickle", "numpy.core.multiarray.load")


def _dotted(node: ast.expr, aliases: dict[str, str]) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(aliases.get(node.id, node.id))
    return ".".join(reversed(parts))


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _is_constant(node: ast.expr | None, value: bool) -> bool:
    return isinstance(node, ast.Constant) and node.value is value


def pickle_loads(source: str, filename: str = "<source>") -> list[str]:
    """Every pickle load (or pickle-family import) in ``source``, as ``"file:line: what"``."""
    tree = ast.parse(source, filename)
    aliases: dict[str, str] = {}
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[(alias.asname or alias.name).split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
                if alias.name.split(".")[0] in PICKLE_MODULES:
                    found.append(f"{filename}:{node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.split(".")[0] in PICKLE_MODULES:
                found.append(f"{filename}:{node.lineno}: from {node.module} import ...")
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "allow_pickle" and not _is_constant(node.value, False):
            found.append(f"{filename}:{node.value.lineno}: allow_pickle={ast.unparse(node.value)}")
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func, aliases)
        where = f"{filename}:{node.lineno}: {ast.unparse(node)[:80]}"
        if isinstance(node.func, ast.Attribute) and node.func.attr == "read_pickle":
            found.append(where)
        elif name in ALWAYS_REFUSED:
            found.append(where)
        elif name == "numpy.load" and not _is_constant(_keyword(node, "allow_pickle"), False):
            found.append(f"{where} (numpy.load needs an explicit allow_pickle=False)")
        elif name == "torch.load" and not _is_constant(_keyword(node, "weights_only"), True):
            found.append(f"{where} (torch.load needs weights_only=True)")
    return found


def _sources() -> list[Path]:
    files = sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))
    assert len(files) > 30, f"the package sources were not found under {ROOT}"
    return files


def test_no_pickle_load_in_the_package_sources():
    found = [hit for path in _sources() for hit in pickle_loads(path.read_text(), str(path.relative_to(ROOT)))]
    assert not found, "pickle loads in the package (a results directory or cache entry could run code):\n" + "\n".join(
        found
    )


def test_every_numpy_load_of_the_package_refuses_pickles():
    # the loads that do exist (raw arrays, cache entries) pass allow_pickle=False explicitly
    calls = [p for p in _sources() if "np.load(" in p.read_text()]
    assert calls, "no np.load found: update this test"
    for path in calls:
        tree = ast.parse(path.read_text())
        loads = [
            n for n in ast.walk(tree) if isinstance(n, ast.Call) and _dotted(n.func, {"np": "numpy"}) == "numpy.load"
        ]
        assert loads and all(_is_constant(_keyword(n, "allow_pickle"), False) for n in loads), path


@pytest.mark.parametrize(
    "source",
    [
        "import pickle\npickle.loads(b'')",
        "import pickle as p",
        "from pickle import loads as safe\nsafe(b'')",
        "import cloudpickle",
        "from dill import load",
        "import shelve",
        "import joblib\njoblib.load('x')",
        "from joblib import load\nload('x')",
        "import pandas as pd\npd.read_pickle('x')",
        "frame.read_pickle('x')",
        "import numpy as np\nnp.load('x.npy')",
        "import numpy as np\nnp.load('x.npz', allow_pickle=True)",
        "import numpy\nnumpy.load('x', allow_pickle=flag)",
        "from numpy import load\nload('x')",
        "np.lib.format.read_array(fh, allow_pickle=True)",
        "import torch\ntorch.load('m.pt')",
        "import torch\ntorch.load('m.pt', weights_only=False)",
    ],
)
def test_the_checker_finds_each_kind_of_pickle_load(source):
    assert pickle_loads(source)


@pytest.mark.parametrize(
    "source",
    [
        "import numpy as np\nnp.load('x.npz', allow_pickle=False)",
        "import torch\ntorch.load('m.pt', weights_only=True)",
        "import json\njson.loads('{}')",
        "import joblib\njoblib.Parallel(n_jobs=2)",
        "import pandas as pd\npd.read_parquet('x')",
        "np.savez(buf, allow_pickle=False)",
    ],
)
def test_the_checker_accepts_safe_loads(source):
    assert pickle_loads(source) == []
