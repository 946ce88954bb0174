"""Tests of privgame.mechanisms.synth._bayes, the network code shared by BayNet and PrivBayes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats
from sklearn.metrics import mutual_info_score

from privgame.mechanisms.synth import _bayes
from privgame.mechanisms.synth._bayes import (
    Candidate,
    Conditional,
    MutualInformation,
    Network,
    combined_index,
    conditional_from_counts,
    empirical_conditionals,
    greedy_network,
    marginal_counts,
    sample_codes,
    topological_network,
)

P_FLOOR = 1e-4  # chi-square tests below fail a correct implementation with probability 1e-4


def _random_codes(n: int, cards: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.integers(0, c, n) for c in cards]).astype(np.int64)


def _chain(n: int, seed: int) -> np.ndarray:
    """X0 uniform on 4 values, X1 = X0 with prob 0.9, X2 = X1 mod 2 with prob 0.9, X3 independent."""
    rng = np.random.default_rng(seed)
    x0 = rng.integers(0, 4, n)
    x1 = np.where(rng.random(n) < 0.9, x0, rng.integers(0, 4, n))
    x2 = np.where(rng.random(n) < 0.9, x1 % 2, rng.integers(0, 2, n))
    x3 = rng.integers(0, 3, n)
    return np.column_stack([x0, x1, x2, x3]).astype(np.int64)


def test_combined_index_is_c_order_ravel() -> None:
    cards = (3, 4, 5)
    codes = _random_codes(50, cards, 0)
    index, size = combined_index(codes, [2, 0], cards)
    assert size == 15
    np.testing.assert_array_equal(index, np.ravel_multi_index((codes[:, 2], codes[:, 0]), (5, 3)))
    empty, one = combined_index(codes, [], cards)
    assert one == 1 and not empty.any()


def test_combined_index_refuses_an_overflowing_domain() -> None:
    with pytest.raises(ValueError, match="too many to index"):
        combined_index(np.zeros((1, 3), dtype=np.int64), [0, 1, 2], (1 << 21, 1 << 21, 1 << 21))


def test_marginal_counts_cover_the_full_domain() -> None:
    cards = (3, 4, 5)
    codes = np.array([[0, 1, 2], [0, 1, 2], [2, 3, 0]], dtype=np.int64)
    table = marginal_counts(codes, cards, [1, 0])
    assert table.shape == (4, 3)
    expected = np.zeros((4, 3))
    expected[1, 0] = 2
    expected[3, 2] = 1
    np.testing.assert_array_equal(table, expected)


def test_marginal_counts_refuse_a_huge_table() -> None:
    with pytest.raises(ValueError, match="use fewer bins or a smaller degree"):
        marginal_counts(np.zeros((1, 3), dtype=np.int64), (1000, 1000, 1000), [0, 1, 2])


@pytest.mark.parametrize("cards", [(2, 3, 4), (40, 40, 40, 7)])
def test_mutual_information_matches_sklearn(cards: tuple[int, ...]) -> None:
    # the second case has a 1,600-cell parent domain over 300 rows, which takes the relabelling path
    codes = _random_codes(300, cards, 1)
    codes[:, 0] = (codes[:, 1] + codes[:, 2] * (codes[:, 2] % 2)) % cards[0]  # some dependence
    mi = MutualInformation(codes, cards)
    for child, parents in [(0, (1,)), (0, (1, 2)), (2, (0, 1)), (len(cards) - 1, (0, 1, 2))]:
        pa, _ = combined_index(codes, parents, cards)
        assert mi(child, parents) == pytest.approx(mutual_info_score(codes[:, child], pa), abs=1e-12)
    assert mi(0, ()) == 0.0


@pytest.mark.parametrize(("batch", "int32"), [(1 << 22, 1 << 31), (1, 1 << 31), (5000, 0)])
def test_batched_mutual_information_matches_one_at_a_time(
    monkeypatch: pytest.MonkeyPatch, batch: int, int32: int
) -> None:
    # batches of one parent set each, batches of several, and int64 indices: the same numbers as sklearn's
    import privgame.mechanisms.synth._bayes as bayes

    monkeypatch.setattr(bayes, "_BATCH_CELLS", batch)
    monkeypatch.setattr(bayes, "_INT32_CELLS", int32)
    cards = (3, 5, 4, 7, 2, 30)
    codes = _random_codes(400, cards, 7)
    codes[:, 0] = (codes[:, 1] + codes[:, 3]) % 3
    mi = MutualInformation(codes, cards)
    parent_sets = [(1, 3), (2, 5), (1, 2), (3, 5)]
    children = np.array([0, 4, 2, 1], dtype=np.int64)
    table = mi.rows(parent_sets, children)
    for i, parents in enumerate(parent_sets):
        pa, _ = combined_index(codes, parents, cards)
        for j, child in enumerate(children):
            assert table[i, j] == pytest.approx(mutual_info_score(codes[:, child], pa), abs=1e-12)
    assert [mi(0, (1, 3)), mi(4, ()), mi(2, (2, 5))] == [table[0, 0], 0.0, table[1, 2]]


def test_mutual_information_of_no_rows_is_zero() -> None:
    mi = MutualInformation(np.zeros((0, 3), dtype=np.int64), (2, 3, 4))
    assert mi(0, (1, 2)) == 0.0
    assert mi.rows([(0,), (1, 2)], np.array([2, 0], dtype=np.int64)).tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_greedy_network_with_argmax_recovers_a_chain() -> None:
    codes = _chain(2000, 0)
    cards = (4, 4, 2, 3)
    seen: list[tuple[int, ...]] = []

    def argmax(scores: NDArray[np.float64], candidates: Sequence[Candidate]) -> int:
        seen.append(tuple(len(ps) for _, ps in candidates))
        return int(np.argmax(scores))

    network = greedy_network(codes, cards, 1, root=0, select=argmax)
    assert network.order[:3] == (0, 1, 2)
    assert network.parents[:3] == ((), (0,), (1,))
    # step t offers each unplaced child with each placed attribute as its parent
    assert [len(s) for s in seen] == [3, 4, 3]

    network2 = greedy_network(codes, cards, 2, root=0, select=lambda s, c: int(np.argmax(s)))
    assert [len(p) for p in network2.parents] == [0, 1, 2, 2]  # min(k, #placed) parents


def test_network_validation_and_topological_order() -> None:
    assert topological_network({0: (2,), 1: (), 2: (1,)}) == Network((1, 2, 0), ((), (1,), (2,)))
    assert topological_network({0: (1, 2), 1: (), 2: ()}).edges == ((1, 0), (2, 0))
    with pytest.raises(ValueError, match="cycle"):
        topological_network({0: (1,), 1: (0,)})
    with pytest.raises(ValueError, match="permutation"):
        Network((0, 0), ((), ()))
    with pytest.raises(ValueError, match="placed before it"):
        Network((0, 1), ((1,), ()))
    with pytest.raises(ValueError, match="sorted"):
        Network((0, 1, 2), ((), (0,), (1, 0)))


def test_conditional_from_counts_normalises_and_makes_empty_rows_uniform() -> None:
    conditional = conditional_from_counts(1, (0,), np.array([[1.0, 3.0, 0.0], [0.0, 0.0, 0.0]]))
    np.testing.assert_allclose(conditional.cdf, [[0.25, 1.0, 1.0], [1 / 3, 2 / 3, 1.0]])
    assert conditional.keys is None


def test_empirical_conditionals_fall_back_to_the_marginal_for_unseen_parents() -> None:
    # parent configuration 2 of X0 never occurs; X1 given X0 = 0 is always 1
    codes = np.array([[0, 1], [0, 1], [1, 0], [1, 2]], dtype=np.int64)
    network = Network((0, 1), ((), (0,)))
    root, child = empirical_conditionals(codes, (3, 3), network)
    np.testing.assert_allclose(root.cdf, [[0.5, 1.0, 1.0]])
    assert child.keys is not None
    np.testing.assert_array_equal(child.keys, [0, 1])
    np.testing.assert_array_equal(child.rows(np.array([0, 1, 2])), [0, 1, 2])  # 2 is the fallback row
    np.testing.assert_allclose(child.cdf[2], [0.25, 0.75, 1.0])  # X1's marginal
    np.testing.assert_allclose(child.cdf[0], [0.0, 1.0, 1.0])


def test_sampling_follows_the_conditionals() -> None:
    # X0 ~ (0.2, 0.8); X1 | X0=0 ~ (0.5, 0.5, 0), X1 | X0=1 ~ (0.1, 0.3, 0.6)
    root = conditional_from_counts(0, (), np.array([[2.0, 8.0]]))
    child = conditional_from_counts(1, (0,), np.array([[1.0, 1.0, 0.0], [1.0, 3.0, 6.0]]))
    n = 50_000
    codes = sample_codes([root, child], (2, 3), n, np.random.default_rng(0))
    joint = np.bincount(codes[:, 0] * 3 + codes[:, 1], minlength=6)
    expected = n * np.array([0.1, 0.1, 0.0, 0.08, 0.24, 0.48])
    assert joint[2] == 0  # a zero-probability code is never drawn
    keep = expected > 0
    assert stats.chisquare(joint[keep], expected[keep]).pvalue > P_FLOOR


def test_sampling_is_reproducible_and_uses_one_uniform_per_row_and_attribute() -> None:
    root = Conditional(0, (), np.array([[0.5, 1.0]]))
    a = sample_codes([root], (2,), 100, np.random.default_rng(3))
    b = sample_codes([root], (2,), 100, np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a[:, 0], np.random.default_rng(3).random(100) >= 0.5)


def test_sampling_does_not_depend_on_the_chunk_size(monkeypatch: pytest.MonkeyPatch) -> None:
    root = conditional_from_counts(0, (), np.array([[2.0, 8.0]]))
    child = conditional_from_counts(1, (0,), np.array([[1.0, 1.0, 0.0], [1.0, 3.0, 6.0]]))
    whole = sample_codes([root, child], (2, 3), 1001, np.random.default_rng(0))
    monkeypatch.setattr(_bayes, "_CHUNK_CELLS", 7)  # chunks of 7 // 3 = 2 rows
    np.testing.assert_array_equal(sample_codes([root, child], (2, 3), 1001, np.random.default_rng(0)), whole)
