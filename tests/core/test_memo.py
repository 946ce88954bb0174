"""The bounded memo behind the per-schema caches of analysis/ (cache keys, Parquet verdicts, fixed bins)."""

from __future__ import annotations

from privgame.core._memo import BoundedMemo


def test_a_key_is_computed_once_even_when_its_value_is_falsy():
    memo: BoundedMemo[bool] = BoundedMemo(4)
    calls = []
    for _ in range(3):
        assert memo.get("k", lambda: calls.append(1) or False) is False
    assert calls == [1]


def test_the_oldest_key_is_dropped_past_the_size():
    memo: BoundedMemo[int] = BoundedMemo(2)
    memo.get("a", lambda: 1)
    memo.get("b", lambda: 2)
    memo.get("c", lambda: 3)
    assert memo.get("a", lambda: 10) == 10  # dropped, computed again
    assert memo.get("c", lambda: 30) == 3


def test_an_unhashable_key_is_computed_every_time():
    memo: BoundedMemo[int] = BoundedMemo(2)
    values = iter([1, 2])
    assert memo.get({"a": 1}, lambda: next(values)) == 1
    assert memo.get({"a": 1}, lambda: next(values)) == 2
