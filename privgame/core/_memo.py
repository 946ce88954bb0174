"""A small bounded memo for values that depend only on a hashable description (a table's schema, say)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["BoundedMemo"]

V = TypeVar("V")


class BoundedMemo(Generic[V]):
    """Remember ``compute()`` per key, for at most ``size`` keys (the oldest is dropped first).

    A key that cannot be hashed is not remembered: its value is computed every time.

    Examples
    --------
    >>> memo: BoundedMemo[int] = BoundedMemo(2)
    >>> memo.get(("a",), lambda: 1), memo.get(("a",), lambda: 2), memo.get(["a"], lambda: 3)
    (1, 1, 3)
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._values: dict[Hashable, V] = {}

    def get(self, key: object, compute: Callable[[], V]) -> V:
        """The value remembered for ``key``, or ``compute()`` (remembered when ``key`` is hashable)."""
        try:
            if key in self._values:
                return self._values[key]
        except TypeError:  # unhashable: computed every time
            return compute()
        value = compute()
        if len(self._values) >= self.size:
            self._values.pop(next(iter(self._values)))
        self._values[key] = value
        return value
