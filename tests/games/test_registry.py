"""Registries: duplicates refused, unknown names list the registered ones, only frozen dataclasses accepted."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import pytest

from games.registry import ATTACKS, GAMES, MECHANISMS, Registry, UnknownNameError
from mechanisms import Mechanism, RandomizedResponse


def test_builtins_registered():
    assert GAMES.names() == ["multi-run", "one-run", "record", "record-model-seeded", "record-traditional"]
    assert MECHANISMS.names() == [
        "baynet", "dpsgd-blackbox", "dpsgd-whitebox", "gaussian", "privbayes", "randomized-response", "synthpop"
    ]  # fmt: skip
    assert ATTACKS.names() == [
        "closest-distance", "exact-copies", "groundhog", "identity", "negative-loss", "tapas-queries"
    ]  # fmt: skip
    assert MECHANISMS.get("randomized-response") is RandomizedResponse


def test_unknown_name_lists_registered_names():
    with pytest.raises(
        UnknownNameError,
        match="mechanism name must be one of baynet, dpsgd-blackbox, dpsgd-whitebox, gaussian, privbayes, random",
    ):
        MECHANISMS.get("x")


def test_duplicate_name_refused():
    registry = Registry("mechanism", Mechanism)
    registry.register(RandomizedResponse)
    with pytest.raises(ValueError, match="'randomized-response' is already registered"):
        registry.register(RandomizedResponse)


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
