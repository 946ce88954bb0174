"""Registries: duplicates refused, unknown names list the registered ones, only frozen dataclasses accepted."""

from __future__ import annotations

import dataclasses
import importlib
import sys
from typing import ClassVar

import pytest

from privgame.engine.registry import (
    ATTACKS,
    BUILTINS,
    GAMES,
    MECHANISMS,
    Builtin,
    Registry,
    ReRegisteredWarning,
    UnknownNameError,
    summary_line,
)
from privgame.mechanisms import Mechanism, RandomizedResponse


def test_builtins_registered():
    assert GAMES.names() == [
        "lira", "multi-run", "one-run", "panoramia", "record", "record-model-seeded", "record-traditional"
    ]  # fmt: skip
    assert MECHANISMS.names() == [
        "baynet", "cnn", "dpsgd-blackbox", "dpsgd-broken", "dpsgd-loop", "dpsgd-mlp", "dpsgd-whitebox", "external",
        "gaussian", "gaussian-mixture", "gradient-boosted-trees", "logistic-regression", "mlp", "opacus-whitebox",
        "privbayes", "randomized-response", "sklearn", "synthpop"
    ]  # fmt: skip
    assert ATTACKS.names() == [
        "classifier-mia", "closest-distance", "density-ratio", "ensemble", "exact-copies", "groundhog", "identity",
        "lira", "negative-loss", "rmia", "tapas-queries"
    ]  # fmt: skip
    assert MECHANISMS.get("randomized-response") is RandomizedResponse


def test_unknown_name_lists_registered_names():
    with pytest.raises(
        UnknownNameError,
        match="mechanism name must be one of baynet, cnn, dpsgd-blackbox, dpsgd-broken, dpsgd-loop, dpsgd-mlp, "
        "dpsgd-whitebox, ",
    ):
        MECHANISMS.get("x")


def test_duplicate_name_refused():
    """Another class (another module-qualified name) under a taken name is refused, the first one kept."""
    registry = Registry("mechanism", Mechanism)
    registry.register(RandomizedResponse)

    @dataclasses.dataclass(frozen=True, slots=True)
    class Impostor(RandomizedResponse):
        name: ClassVar[str] = "randomized-response"

    with pytest.raises(ValueError, match=r"'randomized-response' is already registered \(by RandomizedResponse\)"):
        registry.register(Impostor)
    assert registry.get("randomized-response") is RandomizedResponse


def test_the_same_class_registered_again_changes_nothing(recwarn):
    registry = Registry("mechanism", Mechanism)
    registry.register(RandomizedResponse)
    assert registry.register(RandomizedResponse) is RandomizedResponse
    assert registry.get("randomized-response") is RandomizedResponse
    assert not recwarn.list


_CELL = """
import dataclasses
from typing import ClassVar
from privgame.mechanisms import RandomizedResponse

@registry.register
@dataclasses.dataclass(frozen=True, slots=True)
class MyMechanism(RandomizedResponse):
    name: ClassVar[str] = "my-mechanism"
"""


def _run_cell(registry: Registry[Mechanism]) -> type:
    """Run the notebook cell ``_CELL`` as Jupyter does: in ``__main__``'s namespace."""
    namespace = {"__name__": "__main__", "registry": registry}
    exec(compile(_CELL, "<cell>", "exec", dont_inherit=True), namespace)
    return namespace["MyMechanism"]  # type: ignore[return-value]


def test_a_notebook_cell_run_again_replaces_its_class_with_a_warning():
    registry = Registry("mechanism", Mechanism)
    first = _run_cell(registry)
    with pytest.warns(ReRegisteredWarning, match=r"^mechanism 'my-mechanism' registered again: __main__\.MyMechanism "):
        second = _run_cell(registry)
    assert second is not first and registry.get("my-mechanism") is second
    assert registry.names() == ["my-mechanism"]


def test_a_plugin_module_imported_again_replaces_its_classes(tmp_path, monkeypatch):
    (tmp_path / "reimported_plugin.py").write_text(
        "from privgame.engine.registry import MECHANISMS\n"
        + _CELL.replace("@registry.register", "@MECHANISMS.register")
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        first = importlib.import_module("reimported_plugin").MyMechanism
        with pytest.warns(ReRegisteredWarning, match=r"reimported_plugin\.MyMechanism replaces"):
            second = importlib.reload(importlib.import_module("reimported_plugin")).MyMechanism
        assert second is not first and MECHANISMS.get("my-mechanism") is second
    finally:
        if "my-mechanism" in MECHANISMS:
            MECHANISMS.unregister("my-mechanism")
        sys.modules.pop("reimported_plugin", None)


def test_a_cell_cannot_take_another_modules_name():
    """The same class name in another module is another class: refused, as any taken name."""
    registry = Registry("mechanism", Mechanism)
    _run_cell(registry)
    with pytest.raises(ValueError, match=r"'my-mechanism' is already registered \(by MyMechanism\)"):
        exec(compile(_CELL, "<module>", "exec", dont_inherit=True), {"__name__": "elsewhere", "registry": registry})


def test_only_frozen_dataclass_subclasses():
    registry = Registry("mechanism", Mechanism)

    class NotADataclass(Mechanism):
        name: ClassVar[str] = "plain"

        def release(self, data, *, rng):
            return data

        def privacy_claim(self):
            return None

    @dataclasses.dataclass
    class Mutable(NotADataclass):
        name: ClassVar[str] = "mutable"

    @dataclasses.dataclass(frozen=True)
    class Nameless(NotADataclass):
        name: ClassVar[str] = ""

    with pytest.raises(TypeError, match="must subclass Mechanism"):
        registry.register(int)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be a frozen dataclass"):
        registry.register(NotADataclass)
    with pytest.raises(TypeError, match="must be a frozen dataclass"):
        registry.register(Mutable)
    with pytest.raises(TypeError, match="non-empty string class attribute 'name'"):
        registry.register(Nameless)


def test_unregister():
    registry = Registry("mechanism", Mechanism)
    registry.register(RandomizedResponse)
    registry.unregister("randomized-response")
    assert "randomized-response" not in registry
    with pytest.raises(UnknownNameError):
        registry.unregister("randomized-response")


# -- built-ins registered by import path --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "name"), [(kind, name) for kind, table in sorted(BUILTINS.items()) for name in sorted(table)]
)
def test_builtin_table_agrees_with_the_classes(kind, name):
    """The stored path, name and summary are the class's own, so `privgame list` cannot drift from the code."""
    entry = BUILTINS[kind][name]
    module, _, qualname = entry.path.partition(":")
    cls = getattr(importlib.import_module(module), qualname)
    assert cls.name == name
    assert entry.summary == summary_line(cls)
    registry = {"game": GAMES, "mechanism": MECHANISMS, "attack": ATTACKS}[kind]
    assert registry.get(name) is cls


def test_every_builtin_kind_has_its_registry():
    assert {r.kind for r in (GAMES, MECHANISMS, ATTACKS)} == set(BUILTINS)
    for registry in (GAMES, MECHANISMS, ATTACKS):
        assert set(BUILTINS[registry.kind]) <= set(registry.names())


def test_a_builtin_is_imported_on_get_only():
    registry = Registry("mechanism", "privgame.mechanisms._base:Mechanism", {"lazy-rr": _entry("LazyRR", "Lazy.")})
    assert registry.names() == ["lazy-rr"] and "lazy-rr" in registry
    assert registry.summaries() == [("lazy-rr", "Lazy.")]
    absent = Registry("mechanism", "no_such_base_module:Base", {"ghost": Builtin("no_such_module:Ghost", "Boo.")})
    assert absent.names() == ["ghost"] and absent.summaries() == [("ghost", "Boo.")]  # listing imports nothing
    with pytest.raises(ModuleNotFoundError, match="no_such_module"):
        absent.get("ghost")
    cls = registry.get("lazy-rr")
    assert cls is LazyRR and registry.get("lazy-rr") is cls
    assert registry.summaries() == [("lazy-rr", "A randomized response registered by path (for the tests).")]
    assert list(registry) == [("lazy-rr", LazyRR)]


def test_builtin_needing_a_missing_package_is_not_registered():
    missing = Builtin(f"{__name__}:LazyRR", "x", requires=("no_such_package_for_privgame_tests",))
    registry = Registry("mechanism", Mechanism, {"lazy-rr": missing, "other": _entry("LazyRR", "y")})
    assert registry.names() == ["other"]
    assert not missing.available() and _entry("LazyRR", "y").available()


def test_builtin_named_otherwise_is_refused_on_get():
    registry = Registry("mechanism", Mechanism, {"wrong-name": _entry("LazyRR", "x")})
    with pytest.raises(TypeError, match="is named 'lazy-rr', registered as 'wrong-name'"):
        registry.get("wrong-name")


def test_builtin_that_is_not_a_component_is_refused_on_get():
    registry = Registry("mechanism", Mechanism, {"int": Builtin("builtins:int", "x")})
    with pytest.raises(TypeError, match="must subclass Mechanism"):
        registry.get("int")


def test_plugin_cannot_take_a_builtin_name_before_it_is_loaded():
    registry = Registry("mechanism", Mechanism, {"lazy-rr": _entry("LazyRR", "x")})
    with pytest.raises(ValueError, match=rf"'lazy-rr' is already registered \(by {__name__}:LazyRR\)"):
        registry.register(LazyRR)


def test_unregister_a_builtin_not_loaded():
    registry = Registry("mechanism", Mechanism, {"lazy-rr": _entry("LazyRR", "x")})
    registry.unregister("lazy-rr")
    assert registry.names() == []
    with pytest.raises(UnknownNameError, match="got 'lazy-rr'"):
        registry.get("lazy-rr")


def test_unknown_name_of_unhashable_type():
    with pytest.raises(UnknownNameError, match=r"got \['x'\]"):
        MECHANISMS.get(["x"])  # type: ignore[arg-type]


def test_base_given_by_path_is_imported_on_first_use():
    registry: Registry[Mechanism] = Registry("mechanism", "privgame.mechanisms._base:Mechanism")
    assert registry.base is Mechanism
    registry.register(RandomizedResponse)
    with pytest.raises(TypeError, match="must subclass Mechanism"):
        registry.register(int)  # type: ignore[arg-type]


@dataclasses.dataclass(frozen=True, slots=True)
class LazyRR(RandomizedResponse):
    """A randomized response registered by path (for the tests)."""

    name: ClassVar[str] = "lazy-rr"


def _entry(qualname: str, summary: str) -> Builtin:
    return Builtin(f"{__name__}:{qualname}", summary)
