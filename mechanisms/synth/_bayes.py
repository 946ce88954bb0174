"""Bayesian-network machinery shared by :class:`~privgame.mechanisms.synth.baynet.BayNet` and
:class:`~privgame.mechanisms.synth.privbayes.PrivBayes`.

Everything works on a discretised table: an int64 array ``codes`` of shape ``(n, d)`` whose column ``j`` takes values
in ``range(cards[j])`` (see :mod:`privgame.analysis.discretise`).

* :func:`combined_index` turns a set of columns into one mixed-radix index per row (first column most significant,
  the C order of ``numpy.ravel_multi_index``), so that contingency tables are one ``numpy.bincount``.
* :class:`MutualInformation` computes I(X; Π) = H(X) + H(Π) − H(X, Π) (natural log) from such counts, caching the
  entropies of single columns and parent sets and each pair's I, and scores all new pairs of a greedy step in one
  count (:meth:`MutualInformation.rows`).
* :func:`greedy_network` is the GreedyBayes structure search of PrivBayes (Zhang et al. 2017, Algorithm 4) with a
  pluggable choice rule: the argmax (BayNet, as DataSynthesizer without noise) or the exponential mechanism
  (PrivBayes).
* :class:`Conditional` holds Pr[X | Π] as cumulative probabilities; :func:`empirical_conditionals` fits them from
  counts and :func:`conditional_from_counts` from a (noisy) full-domain table; :func:`sample_codes` does ancestral
  sampling, vectorised over rows: one uniform per row and attribute, inverted through the row's cumulative
  probabilities.

References
----------
.. [1] J. Zhang, G. Cormode, C. M. Procopiuc, D. Srivastava, X. Xiao. PrivBayes: Private Data Release via Bayesian
   Networks. SIGMOD 2014; ACM TODS 42(4), 2017.
.. [2] H. Ping, J. Stoyanovich, B. Howe. DataSynthesizer: Privacy-Preserving Synthetic Datasets. SSDBM 2017.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privgame.analysis.discretise import Discretisation

__all__ = [
    "MAX_TABLE_CELLS",
    "Candidate",
    "Conditional",
    "FittedNetwork",
    "MutualInformation",
    "Network",
    "Selector",
    "combined_index",
    "conditional_from_counts",
    "empirical_conditionals",
    "greedy_network",
    "marginal_counts",
    "sample_codes",
    "topological_network",
]

MAX_TABLE_CELLS = 1 << 26
"""The largest full-domain table (cells) that is materialised (512 MiB of float64)."""

_BATCH_CELLS = 1 << 22  # joint cells counted by one bincount when scoring candidates (16 MiB of int32)
_INT32_CELLS = 1 << 31  # joint cells that int32 indices can address
_CHUNK_CELLS = 1 << 21  # cells of cumulative probabilities gathered at once when sampling (16 MiB)

Candidate = tuple[int, tuple[int, ...]]
"""A (child, parents) pair; parents sorted by column index."""

Selector = Callable[[NDArray[np.float64], Sequence[Candidate]], int]
"""Choose one candidate given its mutual informations: returns an index into the candidates."""


def combined_index(
    codes: NDArray[np.int64], columns: Sequence[int], cards: Sequence[int]
) -> tuple[NDArray[np.int64], int]:
    """The mixed-radix index of ``columns`` for every row (first column most significant) and its range size.

    Raises
    ------
    ValueError
        If the product of the cardinalities does not fit in an int64 index.
    """
    size = 1
    for c in columns:
        size *= int(cards[c])
    if size >= 1 << 62:
        raise ValueError(f"the joint domain of columns {list(columns)} has {size} cells, too many to index.")
    index = np.zeros(codes.shape[0], dtype=np.int64)
    for c in columns:
        index *= int(cards[c])
        index += codes[:, c]
    return index, size


def marginal_counts(codes: NDArray[np.int64], cards: Sequence[int], columns: Sequence[int]) -> NDArray[np.float64]:
    """The contingency table of ``columns`` over their FULL domain, shape ``tuple(cards[c] for c in columns)``.

    Raises
    ------
    ValueError
        If the table would have more than :data:`MAX_TABLE_CELLS` cells.
    """
    index, size = combined_index(codes, columns, cards)
    if size > MAX_TABLE_CELLS:
        raise ValueError(
            f"the joint domain of columns {list(columns)} has {size} cells (more than {MAX_TABLE_CELLS}); "
            "use fewer bins or a smaller degree k."
        )
    shape = tuple(int(cards[c]) for c in columns)
    return np.bincount(index, minlength=size).astype(np.float64).reshape(shape)


class MutualInformation:
    """Mutual information I(X; Π) in nats of the empirical distribution of ``codes``, with cached entropies.

    Parameters
    ----------
    codes : ndarray of shape (n, d), int64
    cards : sequence of int
        The number of codes of each column.
    """

    def __init__(self, codes: NDArray[np.int64], cards: Sequence[int]) -> None:
        self.codes = codes
        self.cards = tuple(int(c) for c in cards)
        self.n = int(codes.shape[0])
        # x log x for every possible count, so that an entropy is one gather and one sum
        counts = np.arange(self.n + 1, dtype=np.float64)
        self._xlogx = counts * np.log(np.maximum(counts, 1.0))
        self._log = np.log(np.maximum(counts, 1.0))
        self._cards = np.asarray(self.cards, dtype=np.int64)
        self._parents: dict[tuple[int, ...], tuple[NDArray[np.int64], int, float]] = {}
        self._by_parents: dict[tuple[int, ...], NDArray[np.float64]] = {}
        self._h_single = np.array([self._parent_set((c,))[2] for c in range(len(self.cards))], dtype=np.float64)

    def entropy(self, index: NDArray[np.int64]) -> float:
        """Entropy (nats) of the empirical distribution of the non-negative integers ``index``."""
        if self.n == 0:
            return 0.0
        return float(np.log(self.n) - self._xlogx[np.bincount(index)].sum() / self.n)

    def _parent_set(self, parents: tuple[int, ...]) -> tuple[NDArray[np.int64], int, float]:
        cached = self._parents.get(parents)
        if cached is None:
            index, size = combined_index(self.codes, parents, self.cards)
            if size > 4 * self.n + 1024:
                # relabel the observed configurations 0..m-1 (m <= n); entropies do not depend on the labels
                _, index = np.unique(index, return_inverse=True)
                size = int(index.max()) + 1
            cached = (index, size, self.entropy(index))
            self._parents[parents] = cached
        return cached

    def __call__(self, child: int, parents: tuple[int, ...]) -> float:
        """I(X_child; X_parents); 0 for no parents."""
        return float(self.rows([parents], np.array([child], dtype=np.int64))[0, 0])

    def rows(self, parent_sets: Sequence[tuple[int, ...]], children: NDArray[np.int64]) -> NDArray[np.float64]:
        """I(X_c; X_Π) for every parent set Π of ``parent_sets`` (rows) and column c of ``children`` (columns).

        Cached per parent set.  The joint entropies not yet cached are computed together: every (Π, c) pair's
        joint cell index gets an offset of its own, one ``numpy.bincount`` counts them all, and
        H(X, Π) = log n − (1/n) Σ_rows log count(row's cell) (the sum over rows of log count equals the sum over
        cells of count · log count), so that no pass over the mostly empty joint cells is needed.  One count holds
        at most ``_BATCH_CELLS`` joint cells (more parent sets are split into several counts).
        """
        out = np.zeros((len(parent_sets), children.shape[0]), dtype=np.float64)
        if self.n == 0:
            return out  # no rows: every entropy, and so every mutual information, is 0
        pending: list[tuple[int, tuple[int, ...]]] = []
        for i, parents in enumerate(parent_sets):
            if not parents:
                continue
            known = self._by_parents.get(parents)
            if known is None:
                known = np.full(len(self.cards), np.nan)
                self._by_parents[parents] = known
            if np.isnan(known[children]).any():
                pending.append((i, parents))
            else:
                out[i] = known[children]
        cards = self._cards[children]
        row_cells = [self._parent_set(ps)[1] * int(cards.sum()) for _, ps in pending]  # joint cells per set
        start = 0
        while start < len(pending):
            stop, cells = start + 1, row_cells[start]
            while stop < len(pending) and cells + row_cells[stop] <= _BATCH_CELLS:
                cells += row_cells[stop]
                stop += 1
            group = pending[start:stop]
            # int32 halves the memory traffic when the joint cells of one count allow it
            dtype: type[np.signedinteger[Any]] = np.int32 if cells < _INT32_CELLS else np.int64
            stacked = np.stack([self._parent_set(ps)[0] for _, ps in group])  # (P, n)
            pa: NDArray[np.signedinteger[Any]] = stacked.astype(dtype)
            sizes = np.array([self._parent_set(ps)[1] for _, ps in group], dtype=np.int64)[:, None] * cards[None, :]
            offsets = (np.cumsum(sizes.ravel()) - sizes.ravel()).reshape(sizes.shape).astype(dtype)
            index: NDArray[np.signedinteger[Any]] = pa[:, None, :] * cards.astype(dtype)[None, :, None]
            index += self.codes[:, children].T.astype(dtype)[None, :, :]
            index += offsets[:, :, None]
            counts = np.bincount(index.ravel(), minlength=cells)
            h_joint = np.log(self.n) - self._log[counts[index]].sum(axis=2) / self.n  # (P, m)
            for (i, parents), h in zip(group, h_joint, strict=True):
                known = self._by_parents[parents]
                known[children] = np.maximum(self._h_single[children] + self._parent_set(parents)[2] - h, 0.0)
                out[i] = known[children]
            start = stop
        return out


@dataclass(frozen=True, slots=True)
class Network:
    """A Bayesian network's structure: an ancestral order and each attribute's parents.

    Attributes
    ----------
    order : tuple of int
        The attributes (column indices) in an order where parents come before children.
    parents : tuple of tuple of int
        ``parents[i]`` are the parents of ``order[i]``, sorted by column index.
    """

    order: tuple[int, ...]
    parents: tuple[tuple[int, ...], ...]

    def __post_init__(self) -> None:
        if sorted(self.order) != list(range(len(self.order))) or len(self.parents) != len(self.order):
            raise ValueError(f"order must be a permutation of the columns with one parent set each, got {self!r}.")
        placed: set[int] = set()
        for child, parents in zip(self.order, self.parents, strict=True):
            if not set(parents) <= placed or tuple(sorted(parents)) != parents:
                raise ValueError(f"parents of column {child} must be sorted and placed before it, got {parents}.")
            placed.add(child)

    @property
    def edges(self) -> tuple[tuple[int, int], ...]:
        """The (parent, child) pairs."""
        return tuple((p, c) for c, ps in zip(self.order, self.parents, strict=True) for p in ps)


def greedy_network(codes: NDArray[np.int64], cards: Sequence[int], k: int, *, root: int, select: Selector) -> Network:
    """GreedyBayes: from ``root``, repeatedly add the (child, parents) pair chosen by ``select``.

    At each step, with ``t`` attributes placed, the candidates are every unplaced child with every parent set of
    size ``min(k, t)`` drawn from the placed attributes (children in column order within each parent set, parent
    sets in ``itertools.combinations`` order of the sorted placed attributes); ``select`` sees their mutual
    informations and returns the index of the chosen one.  Each pair's mutual information is computed once.
    """
    d = len(cards)
    mutual_information = MutualInformation(codes, cards)
    order: list[int] = [root]
    parents: list[tuple[int, ...]] = [()]
    remaining = [c for c in range(d) if c != root]
    while remaining:
        parent_sets = list(combinations(sorted(order), min(k, len(order))))
        candidates = [(child, ps) for ps in parent_sets for child in remaining]
        scores = mutual_information.rows(parent_sets, np.array(remaining, dtype=np.int64)).ravel()
        child, ps = candidates[select(scores, candidates)]
        order.append(child)
        parents.append(ps)
        remaining.remove(child)
    return Network(tuple(order), tuple(parents))


def topological_network(parents_of: dict[int, tuple[int, ...]]) -> Network:
    """The :class:`Network` of a DAG given as ``{column: parents}``, in Kahn's order (smallest ready column first).

    Raises
    ------
    ValueError
        If the graph has a cycle.
    """
    pending = {c: set(ps) for c, ps in parents_of.items()}
    order: list[int] = []
    while pending:
        ready = [c for c, ps in pending.items() if not ps]
        if not ready:
            raise ValueError(f"the parent sets {parents_of} contain a cycle.")
        c = min(ready)
        order.append(c)
        del pending[c]
        for ps in pending.values():
            ps.discard(c)
    return Network(tuple(order), tuple(tuple(sorted(parents_of[c])) for c in order))


@dataclass(frozen=True, slots=True, eq=False)
class Conditional:
    """Pr[X | Π] for one attribute, as cumulative probabilities.

    Attributes
    ----------
    child : int
        The attribute.
    parents : tuple of int
        Its parents, in the order of the combined index (:func:`combined_index`).
    cdf : ndarray of shape (rows, cards[child])
        Cumulative probabilities of each row; the last column is exactly 1.
    keys : ndarray of int64 or None
        ``None``: dense, row ``i`` is parent configuration ``i``.  Otherwise the sorted parent configurations that
        have a row, and ``cdf`` has one more row, the fallback used for every other configuration.
    """

    child: int
    parents: tuple[int, ...]
    cdf: NDArray[np.float64]
    keys: NDArray[np.int64] | None = None

    def rows(self, parent_index: NDArray[np.int64]) -> NDArray[np.int64]:
        """The ``cdf`` row of each parent configuration."""
        if self.keys is None:
            return parent_index
        position = np.searchsorted(self.keys, parent_index)
        clipped = np.minimum(position, self.keys.size - 1)
        return np.where(self.keys[clipped] == parent_index, clipped, self.keys.size)


def _cdf(probabilities: NDArray[np.float64]) -> NDArray[np.float64]:
    cdf = np.cumsum(probabilities, axis=-1)
    cdf[..., -1] = 1.0  # rounding must never leave a uniform above the last step
    return cdf


def conditional_from_counts(child: int, parents: tuple[int, ...], counts: NDArray[np.float64]) -> Conditional:
    """The dense conditional of ``child`` from non-negative counts of shape ``(parent configurations, cards[child])``.

    Each row is normalised; a row with no mass (an all-zero row) becomes uniform.
    """
    counts = np.asarray(counts, dtype=np.float64)
    totals = counts.sum(axis=1, keepdims=True)
    uniform = np.full_like(counts, 1.0 / counts.shape[1])
    probabilities = np.where(totals > 0, counts / np.where(totals > 0, totals, 1.0), uniform)
    return Conditional(child, parents, _cdf(probabilities))


def empirical_conditionals(codes: NDArray[np.int64], cards: Sequence[int], network: Network) -> tuple[Conditional, ...]:
    """The empirical conditionals of ``network``, stored for the parent configurations observed in ``codes``.

    A parent configuration never observed (possible when sampling: the parents are sampled, not copied) falls back
    to the child's empirical marginal.
    """
    out = []
    for child, parents in zip(network.order, network.parents, strict=True):
        card = int(cards[child])
        marginal = np.bincount(codes[:, child], minlength=card).astype(np.float64)
        if not parents:
            out.append(Conditional(child, parents, _cdf(marginal[None, :] / marginal.sum())))
            continue
        index, _ = combined_index(codes, parents, cards)
        keys, rows = np.unique(index, return_inverse=True)
        counts = np.bincount(rows * card + codes[:, child], minlength=keys.size * card).reshape(keys.size, card)
        probabilities = np.vstack([counts / counts.sum(axis=1, keepdims=True), marginal / marginal.sum()])
        out.append(Conditional(child, parents, _cdf(probabilities), keys.astype(np.int64)))
    return tuple(out)


def sample_codes(
    conditionals: Sequence[Conditional], cards: Sequence[int], n: int, rng: np.random.Generator
) -> NDArray[np.int64]:
    """Ancestral sampling of ``n`` rows: the conditionals in order, one uniform per row each, drawn from ``rng``."""
    codes = np.zeros((n, len(cards)), dtype=np.int64)
    for conditional in conditionals:
        index, _ = combined_index(codes, conditional.parents, cards)
        rows = conditional.rows(index)
        u = rng.random(n)
        chunk = max(1, _CHUNK_CELLS // conditional.cdf.shape[1])  # bounds the memory of the gathered rows
        for start in range(0, n, chunk):
            part = slice(start, start + chunk)
            # the code is the number of cumulative probabilities <= u (the last is 1 > u)
            codes[part, conditional.child] = (conditional.cdf[rows[part]] <= u[part, None]).sum(axis=1)
    return codes


@dataclass(frozen=True, slots=True, eq=False)
class FittedNetwork:
    """A fitted Bayesian network over a discretised table; :meth:`sample` generates a synthetic table.

    Attributes
    ----------
    discretisation : Discretisation
        How the table was coded (decoding draws numeric values uniformly within their bins).
    network : Network
        The structure.
    conditionals : tuple of Conditional
        Pr[X | Π] for each attribute, in ``network.order``.
    """

    discretisation: Discretisation
    network: Network
    conditionals: tuple[Conditional, ...]

    def sample_codes(self, n: int, *, rng: np.random.Generator) -> NDArray[np.int64]:
        """``n`` rows of codes by ancestral sampling."""
        return sample_codes(self.conditionals, self.discretisation.cardinalities, n, rng)

    def sample(self, n: int, *, rng: np.random.Generator) -> pd.DataFrame:
        """A synthetic table of ``n`` rows with the original columns and dtypes."""
        return self.discretisation.decode(self.sample_codes(n, rng=rng), rng=rng)
