"""Start-up: `privgame --help` and `privgame list` import none of the heavy libraries, and `list --plugins` lists
what plugins register.  The import checks run in a fresh interpreter, where nothing is imported yet."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from privgame.engine.cli import main

PLUGINS = Path(__file__).parents[1] / "plugins"
HEAVY = ("torch", "dp_accounting", "sklearn", "numba", "scipy.stats", "pandas", "matplotlib")


def _imported_after(code: str, *, pythonpath: str = "") -> list[str]:
    """The HEAVY modules in ``sys.modules`` after ``code`` runs in a fresh interpreter."""
    script = f"import json, sys\n{code}\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (pythonpath, os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120, check=True
    )
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_importing_the_cli_imports_no_heavy_library():
    assert _imported_after("import privgame.engine.cli") == []


def test_building_the_parser_and_help_import_no_heavy_library():
    code = (
        "import contextlib, io\n"
        "import privgame.engine.cli\n"
        "privgame.engine.cli._parser()\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    privgame.engine.cli.main(['--help'])\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    privgame.engine.cli.main(['run', '--help'])\n"
    )
    assert _imported_after(code) == []


def test_list_imports_no_heavy_library():
    code = (
        "import contextlib, io\n"
        "from privgame.engine.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    assert main(['list']) == 0\n"
        "assert 'dpsgd-whitebox' in out.getvalue() and 'synthpop' in out.getvalue()\n"
    )
    assert _imported_after(code) == []


def test_packages_import_nothing_heavy_until_a_name_is_used():
    code = "import privgame.games, privgame.analysis, privgame.attacks, privgame.mechanisms.synth, "
    code += "privgame.mechanisms.dpsgd"
    assert _imported_after(code) == []
    assert "numba" in _imported_after("import privgame.mechanisms.synth\nprivgame.mechanisms.synth.Synthpop")
    assert "torch" in _imported_after("import privgame.mechanisms.dpsgd\nprivgame.mechanisms.dpsgd.DPSGDConfig")


def test_resolving_a_numpy_mechanism_imports_no_torch():
    code = (
        "from privgame.engine.config import parse_config\n"
        "parse_config({'experiment': {'name': 'x', 'seed': 0}, 'game': {'name': 'one-run', 'm': 10, 'k_pos': 1,"
        " 'k_neg': 1}, 'mechanism': {'name': 'randomized-response', 'epsilon': 1.0},"
        " 'attack': {'name': 'identity'}})\n"
    )
    imported = _imported_after(code)
    assert "torch" not in imported and "numba" not in imported


def test_torch_loads_with_a_dpsgd_mechanism():
    assert "torch" in _imported_after(
        "from privgame.engine.registry import MECHANISMS\nMECHANISMS.get('dpsgd-whitebox')"
    )


def test_list_plugins_lists_what_they_register(capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS))
    from privgame.engine.registry import MECHANISMS

    # another test may have imported the module and unregistered its components: import it afresh
    for name in ("test-copy-table", "test-ignore-input"):
        if name in MECHANISMS:
            MECHANISMS.unregister(name)
    sys.modules.pop("record_test_mechanisms", None)
    try:
        assert main(["list", "--plugins", "record_test_mechanisms"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert any(line.split()[:1] == ["test-copy-table"] and "Releases its input rows" in line for line in lines)
        assert any(line.split()[:1] == ["test-ignore-input"] for line in lines)
    finally:
        for name in ("test-copy-table", "test-ignore-input"):
            if name in MECHANISMS:
                MECHANISMS.unregister(name)
        sys.modules.pop("record_test_mechanisms", None)


def test_list_plugins_in_a_fresh_process():
    code = (
        "import contextlib, io\n"
        "from privgame.engine.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    assert main(['list', '--plugins', 'record_test_mechanisms']) == 0\n"
        "assert 'test-copy-table' in out.getvalue()\n"
    )
    assert "torch" not in _imported_after(code, pythonpath=str(PLUGINS))


def test_list_unknown_plugin_is_one_line_and_exit_2(capsys):
    assert main(["list", "--plugins", "no_such_plugin_module"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("privgame: error: --plugins: cannot import 'no_such_plugin_module'")


def test_list_plugins_needs_a_module(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["list", "--plugins"])
    assert exc.value.code == 2
    assert "--plugins" in capsys.readouterr().err


def test_report_of_a_one_run_directory_imports_no_accountant_nor_estimator(write_config, tmp_path):
    """A report reads stored bounds and analytic ε: neither dp_accounting nor scipy.stats is needed (about a
    second of start-up together)."""
    out = tmp_path / "out"
    assert main(["run", str(write_config()), "--out", str(out), "--no-progress", "--no-cache"]) == 0
    code = (
        "import contextlib, io\n"
        "from privgame.engine.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['report', {str(out)!r}]) == 0\n"
    )
    assert [m for m in _imported_after(code) if m not in ("pandas", "matplotlib")] == []
