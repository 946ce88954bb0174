"""docs/examples/python_api.py (a notebook in the percent format) runs as a plain script, and leaves nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "examples" / "python_api.py"


def test_the_example_notebook_runs_as_a_script_and_leaves_nothing(tmp_path):
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {**os.environ, "MPLBACKEND": "Agg", "TMPDIR": str(temporary)}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "steinke.epsilon_lb_median" in done.stdout and "lower_bounds.png" in done.stdout
    assert done.stdout.rstrip().endswith("(temporary, deleted)> exists: False")
    assert list(temporary.iterdir()) == []  # the temporary results directory is gone
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp"]  # and nothing was written where it ran


def test_the_example_is_a_percent_format_notebook():
    text = EXAMPLE.read_text(encoding="utf-8")
    cells = text.split("# %%")
    assert len(cells) >= 8 and cells[0] == ""  # starts with a cell marker, no code outside the cells
    assert text.count("# %% [markdown]") >= 4
