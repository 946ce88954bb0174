"""One registry per component kind: config names to classes.

Built-in components are registered here; a plugin module registers its own with the same decorators and is
named in the config's ``[experiment] plugins`` list::

    from games.registry import MECHANISMS

    @MECHANISMS.register
    @dataclass(frozen=True, slots=True)
    class MyMechanism(Mechanism):
        name: ClassVar[str] = "my-mechanism"
        ...
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Generic, TypeVar

from attacks import Attack, ClosestDistance, CountingQueries, ExactCopies, Groundhog, Identity, NegativeLoss
from games._base import Game
from games.multi_run import MultiRunGame
from games.one_run import OneRunGame
from games.record import ModelSeededRecordGame, RecordGames, TraditionalRecordGame
from mechanisms import GaussianMechanism, Mechanism, RandomizedResponse
from mechanisms.synth import BayNet, PrivBayes, Synthpop

__all__ = ["ATTACKS", "GAMES", "MECHANISMS", "Registry", "UnknownNameError", "summary_line"]

T = TypeVar("T")


class UnknownNameError(ValueError):
    """A config named a component that is not registered."""


class Registry(Generic[T]):
    """Maps config names to component classes of one kind.

    Parameters
    ----------
    kind : str
        "game", "mechanism" or "attack", used in messages.
    base : type
        The abstract base class every registered class must subclass.
    """

    def __init__(self, kind: str, base: type[T]) -> None:
        self.kind = kind
        self.base = base
        self._classes: dict[str, type[T]] = {}

    def register(self, cls: type[T]) -> type[T]:
        """Register ``cls`` under its ``name``; usable as a decorator.

        Raises
        ------
        TypeError
            If ``cls`` is not a frozen dataclass subclassing the kind's base class, or has no string ``name``.
        ValueError
            If the name is already taken.
        """
        if not (isinstance(cls, type) and issubclass(cls, self.base)):
            raise TypeError(f"a registered {self.kind} must subclass {self.base.__name__}, got {cls!r}.")
        params = getattr(cls, "__dataclass_params__", None)
        if not dataclasses.is_dataclass(cls) or params is None or not params.frozen:
            raise TypeError(f"a registered {self.kind} must be a frozen dataclass, got {cls.__name__}.")
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"a registered {self.kind} needs a non-empty string class attribute 'name'.")
        if name in self._classes:
            raise ValueError(
                f"{self.kind} name {name!r} is already registered (by {self._classes[name].__qualname__})."
            )
        self._classes[name] = cls
        return cls

    def unregister(self, name: str) -> None:
        """Remove ``name`` (for tests and interactive sessions)."""
        self.get(name)
        del self._classes[name]

    def get(self, name: str) -> type[T]:
        """The class registered as ``name``.

        Raises
        ------
        UnknownNameError
            Listing the registered names.
        """
        try:
            return self._classes[name]
        except (KeyError, TypeError):
            raise UnknownNameError(
                f"{self.kind} name must be one of {', '.join(sorted(self._classes))}, got {name!r}."
            ) from None

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._classes)

    def __iter__(self) -> Iterator[tuple[str, type[T]]]:
        return iter(sorted(self._classes.items()))

    def __contains__(self, name: object) -> bool:
        return name in self._classes


def summary_line(cls: type) -> str:
    """The first line of a class's docstring."""
    doc = (cls.__doc__ or "").strip()
    return doc.splitlines()[0] if doc else ""


GAMES: Registry[Game] = Registry("game", Game)  # type: ignore[type-abstract]
MECHANISMS: Registry[Mechanism] = Registry("mechanism", Mechanism)  # type: ignore[type-abstract]
ATTACKS: Registry[Attack] = Registry("attack", Attack)

GAMES.register(OneRunGame)
GAMES.register(MultiRunGame)
GAMES.register(TraditionalRecordGame)
GAMES.register(ModelSeededRecordGame)
GAMES.register(RecordGames)
MECHANISMS.register(RandomizedResponse)
MECHANISMS.register(GaussianMechanism)
MECHANISMS.register(Synthpop)
MECHANISMS.register(BayNet)
MECHANISMS.register(PrivBayes)
ATTACKS.register(Identity)
ATTACKS.register(NegativeLoss)
ATTACKS.register(CountingQueries)
ATTACKS.register(Groundhog)
ATTACKS.register(ClosestDistance)
ATTACKS.register(ExactCopies)

try:  # DP-SGD needs the optional torch extra
    from mechanisms.dpsgd.blackbox import DPSGDBlackBox
    from mechanisms.dpsgd.whitebox import DPSGDWhiteBox
except ImportError:  # pragma: no cover - depends on the installed extras
    pass
else:
    MECHANISMS.register(DPSGDBlackBox)
    MECHANISMS.register(DPSGDWhiteBox)
