"""No pickle is ever loaded by the package: a results directory or cache entry from elsewhere can hold no code.

Every source file of ``privgame`` (all its packages) is parsed and each name resolved
through its imports (``import numpy as np`` makes ``np.load`` ``numpy.load``), so an alias cannot hide a load.
Refused: any use of a pickle-family loader (``pickle.load``/``loads``/``Unpickler``, the same of ``_pickle``,
``dill``, ``cloudpickle``, ``marshal``, ``shelve.open``, ``jsonpickle.decode``), called or not, imported by
name, or reached through ``getattr`` on such a module; ``joblib.load``; ``pandas.read_pickle`` (and any
``.read_pickle`` method); ``numpy.load`` without an explicit ``allow_pickle=False`` and ``allow_pickle=True``
anywhere; ``torch.load`` without ``weights_only=True``.  The one load allowed is the round trip
``pickle.loads(pickle.dumps(x))`` of an object the code holds itself (``privgame.engine.testing`` checks that components
pickle): it reads no bytes from anywhere.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _layout import ROOT, source_files

_PICKLERS = {"load", "loads", "Unpickler"}
LOADERS = {
    "pickle": _PICKLERS,
    "_pickle": _PICKLERS,
    "cPickle": _PICKLERS,
    "dill": _PICKLERS,
    "cloudpickle": _PICKLERS,
    "marshal": {"load", "loads"},
    "shelve": {"open", "Shelf", "DbfilenameShelf", "BsdDbShelf"},
    "jsonpickle": {"decode", "Unpickler"},
}
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


def _loader(name: str | None) -> bool:
    module, _, attr = (name or "").rpartition(".")
    return attr in LOADERS.get(module, ())


def _round_trip(call: ast.AST | None, node: ast.expr, aliases: dict[str, str]) -> bool:
    """Whether ``node`` (``M.loads``) is called on ``M.dumps(...)`` directly: bytes made in the same expression."""
    if not (isinstance(call, ast.Call) and call.func is node and len(call.args) == 1 and not call.keywords):
        return False
    inner = call.args[0]
    module = (_dotted(node, aliases) or "").rpartition(".")[0]
    return isinstance(inner, ast.Call) and _dotted(inner.func, aliases) == f"{module}.dumps"


def pickle_loads(source: str, filename: str = "<source>") -> list[str]:
    """Every pickle load in ``source``, as ``"file:line: what"``."""
    tree = ast.parse(source, filename)
    aliases: dict[str, str] = {}
    parents: dict[ast.AST, ast.AST] = {}
    found: list[str] = []
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
        if isinstance(node, ast.Import):
            for alias in node.names:
                key = (alias.asname or alias.name).split(".")[0]
                aliases[key] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                if node.module in LOADERS and (alias.name == "*" or alias.name in LOADERS[node.module]):
                    found.append(f"{filename}:{node.lineno}: from {node.module} import {alias.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "allow_pickle" and not _is_constant(node.value, False):
            found.append(f"{filename}:{node.value.lineno}: allow_pickle={ast.unparse(node.value)}")
        if isinstance(node, ast.Attribute) and _loader(_dotted(node, aliases)):
            if not _round_trip(parents.get(node), node, aliases):
                found.append(f"{filename}:{node.lineno}: {ast.unparse(parents.get(node, node))[:80]}")
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func, aliases)
        where = f"{filename}:{node.lineno}: {ast.unparse(node)[:80]}"
        if isinstance(node.func, ast.Attribute) and node.func.attr == "read_pickle":
            found.append(where)
        elif name in ALWAYS_REFUSED or (isinstance(node.func, ast.Name) and _loader(name)):
            found.append(where)  # a loader called under its own name (``from pickle import loads`` is flagged too)
        elif name == "getattr" and node.args and (_dotted(node.args[0], aliases) or "") in LOADERS:
            found.append(f"{where} (getattr on a pickle module)")
        elif name == "numpy.load" and not _is_constant(_keyword(node, "allow_pickle"), False):
            found.append(f"{where} (numpy.load needs an explicit allow_pickle=False)")
        elif name == "torch.load" and not _is_constant(_keyword(node, "weights_only"), True):
            found.append(f"{where} (torch.load needs weights_only=True)")
    return found


def _sources() -> list[Path]:
    files = source_files()
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
        "import pickle\nwith open('f', 'rb') as fh:\n    pickle.load(fh)",
        "import pickle as p\np.loads(data)",
        "import pickle\ndecode = pickle.loads",
        "import pickle\npickle.Unpickler(fh).load()",
        "import pickle\ngetattr(pickle, 'lo' + 'ads')(data)",
        "import pickle\npickle.loads(other.dumps(x))",
        "import pickle\npickle.loads(pickle.dumps(x) + payload)",
        "from pickle import loads as safe\nsafe(b'')",
        "from pickle import *",
        "import cloudpickle\ncloudpickle.loads(b)",
        "from dill import load",
        "import shelve\nshelve.open('db')",
        "import marshal\nmarshal.loads(b)",
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
        "import pickle\nclone = pickle.loads(pickle.dumps(component))",
        "import pickle\nblob = pickle.dumps(x)",
    ],
)
def test_the_checker_accepts_safe_loads(source):
    assert pickle_loads(source) == []
