"""Where privgame's source files are and what their module names are, for the tests that read the source as text.

privgame is one import name.  ``privgame/analysis``, ``privgame/attacks``, ``privgame/games`` and
``privgame/mechanisms`` are symbolic links to the top-level folders of the same names; ``privgame/core``,
``privgame/data`` and ``privgame/engine`` are real folders.  Walking ``privgame/`` with the links followed therefore
gives every module once, under the name it is imported by.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "privgame"


def module_name(path: Path, root: Path = ROOT) -> str:
    """``privgame/analysis/one_run.py`` → ``privgame.analysis.one_run``; a package's ``__init__.py`` → its name."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source_files(package: Path = PACKAGE) -> list[Path]:
    """Every ``.py`` file under ``package``, links followed, as paths below ``package`` (not resolved)."""
    found = []
    for folder, dirs, files in os.walk(package, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__")))
        found += [Path(folder) / f for f in files if f.endswith(".py")]
    return sorted(found)
