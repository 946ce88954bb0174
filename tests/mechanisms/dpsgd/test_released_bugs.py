"""experiments/released_bugs.py: every version is audited by the same config, a version that cannot be installed
or an audit that fails is one line with exit status 2, and an installed folder is reused without the index."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "experiments" / "released_bugs.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("released_bugs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_version_is_audited_the_same_way_but_for_the_bugs_own_settings():
    script = _load()
    configs = {
        (bug, kind): script.config(bug, script.BUGS[bug][kind], 5, kind)
        for bug in script.BUGS
        for kind in ("buggy", "fixed")
    }
    for config in configs.values():
        mech = config["mechanism"]
        assert mech["name"] == "dpsgd-loop" and mech["epsilon"] == 2.0 and mech["loop"].startswith("released_loops:")
        assert config["game"] == configs[("opacus-664", "buggy")]["game"]
        assert config["experiment"]["seed"] == 2026
    for bug in script.BUGS:  # a bug's two versions differ in nothing but the version (or the declared loop)
        buggy, fixed = configs[(bug, "buggy")], configs[(bug, "fixed")]
        assert {**buggy["mechanism"], **script.BUGS[bug].get("fixed_mechanism", {})} == fixed["mechanism"]
        assert buggy["game"] == fixed["game"]
        assert buggy["experiment"]["name"] != fixed["experiment"]["name"]  # two results directories


def test_a_version_that_cannot_be_installed_is_one_line_with_exit_status_2(monkeypatch, tmp_path, capsys):
    script = _load()
    monkeypatch.setattr(script, "ENVS", tmp_path)

    def no_index(cmd, **kwargs):
        return subprocess.CompletedProcess(
            cmd,
            1,
            "",
            "ERROR: Could not find a version that satisfies\nERROR: No matching distribution found for opacus==0.0.0\n",
        )

    monkeypatch.setattr(script.subprocess, "run", no_index)
    with pytest.raises(SystemExit) as info:
        script.install("0.0.0")
    assert info.value.code == 2
    progress, error = capsys.readouterr().err.strip().split("\n")  # the progress line, then the one-line error
    assert progress.startswith("installing opacus==0.0.0")
    assert error.startswith("released_bugs: cannot install opacus==0.0.0") and "No matching distribution" in error


def test_an_installed_folder_is_reused_without_the_index(monkeypatch, tmp_path):
    script = _load()
    monkeypatch.setattr(script, "ENVS", tmp_path)
    folder = tmp_path / "opacus-1.5.2"
    folder.mkdir()
    (folder / script.MARKER).write_text("1.5.2\n")
    monkeypatch.setattr(script.subprocess, "run", lambda *a, **k: pytest.fail("pip was called"))
    assert script.install("1.5.2") == folder


def test_unknown_bugs_are_refused(capsys):
    script = _load()
    with pytest.raises(SystemExit) as info:
        script.main(["--bugs", "opacus-999"])
    assert info.value.code == 2 and "opacus-999" in capsys.readouterr().err
