"""No name read from a results directory or a cache entry is imported without --trust-plugins (privgame.core.trust).

Each importable kind of name (a plugin module, which registers generators, data sets and other components; a
scikit-learn estimator; a DP-SGD model factory) is planted in a stranger's manifest.  The planted module, on
import, writes a file: the test proves it is never imported, and that the command ends in one line, exit 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from privgame.core.trust import TRUSTED_PACKAGES, UntrustedImportError, check_found, check_import, names_from
from privgame.engine.cli import main
from privgame.engine.config import load_config
from privgame.engine.runner import run_experiment
from tests.conftest import forge_factory_name

EVIL = "privgame_test_evil_module"


# ------------------------------------------------------------------------------------------------------ the gate
def test_names_are_imported_only_from_trusted_sources():
    check_import(EVIL, field="plugin")  # no source declared: a config or argument the user gave
    with names_from("x/manifest.json", trusted=True):
        check_import(EVIL, field="plugin")
    with names_from("x/manifest.json", trusted=False):
        for package in TRUSTED_PACKAGES:
            check_import(f"{package}.anything", field="estimator")
        with pytest.raises(UntrustedImportError, match=r"model 'evil:f' is named by x/manifest.json.*--trust-plugins"):
            check_import("evil", field="model", name="evil:f")
        with pytest.raises(UntrustedImportError):
            check_import("sklearnx.evil", field="estimator")  # a prefix of a trusted name is no trusted name
        with names_from("y", trusted=True):  # nested: the innermost source decides
            check_import(EVIL, field="plugin")
        with pytest.raises(UntrustedImportError):
            check_import(EVIL, field="plugin")
    check_import(EVIL, field="plugin")  # the source ends with its block


def test_a_trusted_module_is_no_door_to_what_it_imported():
    """``privgame.engine.store:os.system`` passes the module's check; what the path found must itself be defined in
    privgame or scikit-learn, and an estimator (called without arguments) must be a class."""
    import os

    from sklearn.ensemble import RandomForestClassifier

    from privgame.engine.cli import main as cli_main
    from privgame.mechanisms._imports import resolve_import

    check_found(os.system, field="estimator", name="x")  # no source declared: the user's own config
    with names_from("x/manifest.json", trusted=False):
        check_found(RandomForestClassifier, field="estimator", name="x", classes_only=True)
        check_found(cli_main, field="model", name="x")  # a function defined in privgame, where one may be named
        for found, classes_only in [(os.system, False), (sys.exit, True), (cli_main, True), (len, False)]:
            with pytest.raises(UntrustedImportError, match=r"must be a class.* defined in privgame or sklearn"):
                check_found(found, field="estimator", name="x", classes_only=classes_only)
        with pytest.raises(UntrustedImportError, match=r"'posix'"):
            resolve_import("privgame.engine.store:os.system", field="model", example="m:f")
        with pytest.raises(UntrustedImportError, match=r"'exit' of 'sys'"):
            resolve_import("privgame.engine.store:sys.exit", field="estimator", example="m:f", what="class")


# ------------------------------------------------------------------------------------- a stranger's results directory
@pytest.fixture
def planted(tmp_path, monkeypatch):
    """A module that records its own import, importable from ``sys.path``; returns the record's path."""
    record = tmp_path / "imported"
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / f"{EVIL}.py").write_text(
        f"from pathlib import Path\nPath({str(record)!r}).write_text('ran')\n"
        "def factory(*args, **kwargs):\n    raise RuntimeError('called')\n"
        "class Classifier:\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, EVIL, raising=False)
    return record


@pytest.fixture
def finished(write_config, tmp_path):
    config = load_config(write_config({"experiment": {"repetitions": 2}}))
    return run_experiment(config, tmp_path / "run", progress=False).root


def _plant(root: Path, kind: str) -> None:
    manifest = json.loads((root / "manifest.json").read_text())
    config = manifest["config"]
    if kind == "plugin":  # a plugin registers generators, data sets, games ...: all reach privgame through it
        config["experiment"]["plugins"] = [EVIL]
    elif kind == "estimator":
        config["mechanism"] = {"name": "sklearn", "estimator": f"{EVIL}.Classifier"}
    elif kind == "nested":  # a game's own component, which every reader builds with the game
        helper = {"name": "sklearn", "estimator": f"{EVIL}.Classifier"}
        config["game"] = {"name": "panoramia", "data": "adult", "helper": helper}
    elif kind == "loop":  # a user's DP-SGD training loop
        config["mechanism"] = {"name": "dpsgd-loop", "noise_multiplier": 1.0, "loop": f"{EVIL}:factory"}
    else:
        config["mechanism"] = {"name": "dpsgd-blackbox", "noise_multiplier": 1.0, "model": f"{EVIL}:factory"}
    (root / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize("kind", ["plugin", "estimator", "model", "loop"])
def test_reanalyse_imports_no_name_from_a_manifest_without_trust(finished, planted, tmp_path, capsys, kind):
    _plant(finished, kind)
    assert main(["reanalyse", str(finished), "--out", str(tmp_path / "again"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--trust-plugins" in err and EVIL in err, err
    assert not planted.exists() and EVIL not in sys.modules
    assert not (tmp_path / "again").exists()


@pytest.mark.parametrize("kind", ["plugin", "estimator", "model", "loop", "nested"])
def test_reading_results_imports_no_name_from_a_manifest_without_trust(finished, planted, capsys, kind):
    import privgame

    _plant(finished, kind)
    for args in (["--format", "csv"], [], ["--plot", str(finished.parent / "plot.png")]):
        status = main(["report", str(finished), *args])
        err = capsys.readouterr().err.strip()
        if kind == "nested":  # the game cannot be built without its helper: one line saying how to allow it
            assert status == 2 and err.count("\n") == 0 and "--trust-plugins" in err and EVIL in err, err
    try:
        privgame.load(finished).summary()
    except ValueError:
        pass  # refusing is fine; importing is not
    assert not planted.exists() and EVIL not in sys.modules


@pytest.mark.parametrize(
    ("estimator", "found"),
    [
        ("privgame.engine.store:sys.exit", "'exit' of 'sys'"),  # used to end the reader silently, status 0
        ("privgame.engine.store:os.abort", "'abort' of 'posix'"),  # used to kill it
        ("privgame.engine.cli:main", "function 'main' of 'privgame.engine.cli'"),  # used to run a command again
    ],
)
def test_a_manifest_cannot_call_what_a_trusted_module_imported(finished, estimator, found, tmp_path, capsys):
    manifest = json.loads((finished / "manifest.json").read_text())
    manifest["config"]["mechanism"] = {"name": "sklearn", "estimator": estimator}
    manifest["config"]["game"] = {"name": "panoramia", "data": "adult", "helper": manifest["config"]["mechanism"]}
    manifest["swept"] = []  # the stored mechanism no longer sweeps epsilon
    (finished / "manifest.json").write_text(json.dumps(manifest))
    for args in (["reanalyse", str(finished), "--out", str(tmp_path / "again")], ["report", str(finished)]):
        assert main([*args]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and found in err and "--trust-plugins" in err, err
    assert not (tmp_path / "again").exists()


def test_with_trust_a_nested_components_estimator_is_imported(finished, planted, capsys):
    _plant(finished, "nested")
    assert main(["report", str(finished), "--trust-plugins"]) == 2  # the planted class is no estimator
    assert planted.read_text() == "ran" and "must be a scikit-learn estimator" in capsys.readouterr().err


def test_with_trust_the_manifests_plugin_is_imported(finished, planted, tmp_path, capsys):
    _plant(finished, "plugin")
    main(["reanalyse", str(finished), "--out", str(tmp_path / "again"), "--no-progress", "--trust-plugins"])
    assert planted.read_text() == "ran"  # the user vouched for it: the gate lets it through


# ------------------------------------------------------------------------------------------------ a cache entry
def test_a_cache_entry_naming_another_factory_is_recomputed_not_imported(planted, tmp_path):
    """A model release rewritten to name another factory, with a matching checksum marker: a damaged entry."""
    torch = pytest.importorskip("torch")

    from privgame.core.cache import ArtefactCache
    from privgame.data.canaries import canary_data
    from privgame.mechanisms.cached import cached_release_many
    from privgame.mechanisms.dpsgd.classifier import DPSGDClassifier

    sys.path.insert(0, str(Path(__file__).parents[1] / "mechanisms" / "dpsgd"))  # torch_factories
    try:
        bits = np.arange(20) % 2 == 1
        pool = canary_data(bits, data="digits", train_rows=60, canary="ood", canary_seed=0).pool(size=70)
        mech = DPSGDClassifier(noise_multiplier=1.0, steps=2, sampling_rate=0.2, model="torch_factories:two_layer_mlp")
        seeds = [np.random.SeedSequence(3)]
        cache = ArtefactCache(tmp_path / "cache")
        (first,) = cached_release_many(mech, [pool], seeds=seeds, cache=cache)
        (entry,) = (tmp_path / "cache").rglob("*.npz")
        forge_factory_name(entry, f"{EVIL}:factory")
        with pytest.warns(UserWarning, match=r"corrupted cache entry .*which its mechanism does not name"):
            (second,) = cached_release_many(mech, [pool], seeds=seeds, cache=cache)
        assert second.model == mech.model
        with torch.no_grad():
            np.testing.assert_array_equal(second.logits(pool.x), first.logits(pool.x))
        assert not planted.exists() and EVIL not in sys.modules
    finally:
        sys.path.remove(str(Path(__file__).parents[1] / "mechanisms" / "dpsgd"))


# --------------------------------------------------------------------------------------------- one place decides
IMPORTERS = {
    # module: why its dynamic imports need no gate, or which gate they go through
    "privgame.core._lazy": "privgame's own lazy exports: names written in privgame's source",
    "privgame.engine.registry": "the built-in components' import paths, written in privgame's source",
    "privgame.engine.runner": "privgame's own privgame.engine.resources",
    "privgame.mechanisms._imports": "resolve_import: through check_import",
    "privgame.engine.config": "import_plugins: through check_import",
}


def test_every_dynamic_import_is_a_known_one():
    """``importlib.import_module`` and ``__import__`` appear only where listed above: a new importer of names must
    be added here, with its reason, and go through check_import when the name can come from a file."""
    import ast

    from tests._layout import module_name, source_files

    files = {module_name(path): path for path in source_files()}
    found = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in {"import_module", "__import__"}:
                    found.setdefault(module, node.lineno)
    assert set(found) <= set(IMPORTERS), {m: line for m, line in found.items() if m not in IMPORTERS}
    gated = ("privgame.mechanisms._imports", "privgame.engine.config")
    assert set(gated) <= set(found)  # the walk saw the importers it must see
    for module in gated:
        assert "check_import(" in files[module].read_text(), module
