"""PrivBayes: differentially private synthetic tables through a noisy Bayesian network (SPEC §7)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from privgame.analysis._checks import check_int, check_real
from privgame.analysis.accounting import PrivacyClaim, pure_composition_claim
from privgame.analysis.discretise import BinSpec, PublicBins, PublicRanges, fixed_bins, public_bins, public_ranges
from privgame.mechanisms._base import Mechanism
from privgame.mechanisms.synth._bayes import (
    Candidate,
    Conditional,
    FittedNetwork,
    Network,
    conditional_from_counts,
    greedy_network,
    marginal_counts,
)

__all__ = [
    "NoisyMarginal",
    "PrivBayes",
    "PrivBayesModel",
    "average_cells",
    "exponential_mechanism",
    "laplace_scale",
    "mutual_information_sensitivity",
    "selection_logits",
    "theta_useful_degree",
]


@dataclass(frozen=True, slots=True)
class PrivBayes(Mechanism):
    """PrivBayes (Zhang et al. [1]_): a Bayesian network learnt and parametrised under ε-differential privacy.

    Parameters
    ----------
    epsilon : float
        Total privacy budget, ``> 0`` and finite.
    k : int or None, default=None
        Degree of the network (parents per attribute), ``>= 0`` (``0``: independent noisy marginals); a ``k`` of
        ``d`` or more is used as ``d - 1``.  ``None`` chooses it by θ-usefulness (:func:`theta_useful_degree`).
    beta : float, default=0.5
        Share of ε spent on the structure, in (0, 1): ε₁ = β·ε for GreedyBayes, ε₂ = (1 − β)·ε for the noisy
        conditionals.  0.5 as in the common implementations (the paper suggests about 0.3).
    theta : float, default=4.0
        The θ of θ-usefulness, ``> 0``.
    n_bins : int, default=20
        Equal-width bins per numeric column over its public range (DataSynthesizer's default histogram size).
    ranges : mapping of str to (low, high), or sequence of (column, low, high), optional
        PUBLIC inclusive ranges of the numeric columns, e.g. :data:`privgame.data.ADULT_PUBLIC_RANGES`; stored as
        a sorted tuple of triples.  A numeric column without a range is an error: a range derived from the private
        data would break the guarantee.
    bins : mapping of str to spec, or sequence of (column, spec), optional
        PUBLIC bins of some numeric columns, used instead of their ``n_bins`` equal-width bins
        (:func:`privgame.analysis.discretise.public_bins`): non-decreasing edges within the column's range, a value
        given twice being a bin of its own (for integer columns, integer edges, and ``(0, 1, 100)`` already makes
        ``{0}`` a bin), or ``"integers"`` for one bin per integer of a small range.  A single-value bin decodes to
        exactly its value, which keeps a public point mass (a capital gain of 0) in the synthetic table.  Needs
        ``ranges`` covering its columns; stored as a sorted tuple of pairs (``None`` when empty).  E.g.
        :data:`privgame.data.ADULT_PUBLIC_BINS`.  Like the ranges, the bins must not be derived from the data.
    n_rows : int or None, default=None
        Rows of the synthetic table (``>= 1``); ``None``: as many as the input.

    Notes
    -----
    The algorithm, exactly as SPEC §7:

    1. Public domain: categorical columns are coded by their ``CategoricalDtype`` category lists (public: the loaders
       take them from the data set's documentation), numeric columns by :func:`privgame.analysis.discretise.fixed_bins`
       over ``ranges`` and ``bins``.  Values outside a range are clipped into its end bins.
    2. GreedyBayes with ε₁ = β·ε: a root drawn uniformly (no data involved); then, d − 1 times, the pair (X, Π) with
       X unplaced and Π a set of ``min(k, #placed)`` placed attributes is chosen by the exponential mechanism with
       Pr ∝ exp(ε₁ · I(X; Π) / (2 (d − 1) S(I))), S(I) the sensitivity of Lemma 4.1
       (:func:`mutual_information_sensitivity`; I and S(I) both in nats).  S(I) depends on the candidate (whether X
       or Π is binary); the score I/S(I) of every candidate then has sensitivity 1, so each step is
       ε₁/(d − 1)-DP.  Sampling is by the Gumbel-max trick (exact and numerically stable).
    3. NoisyConditionals with ε₂ = (1 − β)·ε: the d − k marginals Pr[X_i, Π_i] over the FULL domain product — the
       joint of the first k + 1 attributes (which gives the first k + 1 conditionals, as in the paper) and one
       (k + 1)-way marginal per later attribute — get Laplace noise of scale 2(d − k)/ε₂ on every count (replacing
       one record moves a count table by 2 in L1), are clipped at 0 and turned into conditionals (a parent
       configuration with no mass left: uniform).
    4. Ancestral sampling from the noisy network, and numeric codes decoded to values drawn uniformly within their
       bin, or to the value of a single-value bin (post-processing).

    Privacy: ε-DP under REPLACE_ONE neighbours (n fixed), by basic composition of steps 2 and 3
    (:func:`privgame.analysis.accounting.pure_composition_claim` of ``[β ε, (1 − β) ε]``).  The number of records n is
    treated as public, as in the paper: the sensitivity S(I), the θ-usefulness choice of k and the default number of
    synthetic rows use it.  The category lists, ``ranges`` and ``bins`` must be public; ``n_bins``, ``k`` and
    ``theta`` are parameters, not read from the data.  The bins change which (public) domain the marginals are
    counted over, not the noise or the budget: the claim is the same with or without them.

    References
    ----------
    .. [1] J. Zhang, G. Cormode, C. M. Procopiuc, D. Srivastava, X. Xiao. PrivBayes: Private Data Release via
       Bayesian Networks. SIGMOD 2014; ACM TODS 42(4), 2017 (Algorithms 1, 4, 5; Lemma 4.1; §4.4 θ-usefulness).
    .. [2] F. McSherry, K. Talwar. Mechanism Design via Differential Privacy. FOCS 2007 (exponential mechanism).

    Examples
    --------
    >>> df = pd.DataFrame({"age": np.arange(20, 70), "c": pd.Categorical(["a", "b"] * 25)})
    >>> mech = PrivBayes(epsilon=1.0, k=1, ranges={"age": (17, 90)})
    >>> mech.release(df, rng=np.random.default_rng(0)).shape
    (50, 2)
    >>> mech.privacy_claim().epsilon(0.0)  # doctest: +ELLIPSIS
    1.0...
    """

    name: ClassVar[str] = "privbayes"
    input_kind: ClassVar[str] = "table"
    release_kind: ClassVar[str] = "table"

    epsilon: float
    k: int | None = None
    beta: float = 0.5
    theta: float = 4.0
    n_bins: int = 20
    ranges: PublicRanges | Mapping[str, tuple[float, float]] | None = None
    bins: PublicBins | Mapping[str, BinSpec] | None = None
    n_rows: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_real("epsilon", self.epsilon, low=0.0, low_open=True))
        if self.k is not None:
            object.__setattr__(self, "k", check_int("k", self.k, low=0))
        beta = check_real("beta", self.beta, low=0.0, high=1.0, low_open=True, high_open=True)
        object.__setattr__(self, "beta", beta)
        object.__setattr__(self, "theta", check_real("theta", self.theta, low=0.0, low_open=True))
        object.__setattr__(self, "n_bins", check_int("n_bins", self.n_bins, low=1))
        if self.ranges is not None:
            object.__setattr__(self, "ranges", public_ranges(self.ranges))
        if self.bins is not None:
            if self.ranges is None:
                raise ValueError(
                    f"ranges must be given with bins (the public range of each column in bins), got {self.ranges!r}."
                )
            object.__setattr__(self, "bins", public_bins(self.bins, self.ranges) or None)
        if self.n_rows is not None:
            object.__setattr__(self, "n_rows", check_int("n_rows", self.n_rows, low=1))

    @property
    def epsilon1(self) -> float:
        """ε₁ = β·ε, the budget of the structure search."""
        return self.beta * self.epsilon

    @property
    def epsilon2(self) -> float:
        """ε₂ = (1 − β)·ε, the budget of the noisy conditionals."""
        return (1.0 - self.beta) * self.epsilon

    def fit(self, data: pd.DataFrame, *, rng: np.random.Generator) -> PrivBayesModel:
        """Run steps 1–3 (public discretisation, GreedyBayes, NoisyConditionals) on ``data``.

        Raises
        ------
        TypeError, ValueError
            For a table that is not a non-empty DataFrame of categorical, integer and float columns without
            missing values, a numeric column without a public range, ``bins`` naming a column that is not a
            numeric column of ``data`` (or not fitting its dtype: see :func:`privgame.analysis.discretise.fixed_bins`),
            or a marginal too large to materialise.
        """
        bins = fixed_bins(data, () if self.ranges is None else self.ranges, self.n_bins, self.bins)
        codes = bins.encode(data)
        n, d = codes.shape
        cards = bins.cardinalities
        if self.k is None:
            k = theta_useful_degree(n, cards, self.epsilon2, self.theta)
        else:
            k = min(self.k, d - 1)
        network = self.greedy_bayes(codes, cards, k, rng=rng)
        scale = laplace_scale(d, k, self.epsilon2)
        marginals, conditionals = _noisy_conditionals(codes, cards, network, k, scale, rng)
        model = FittedNetwork(bins, network, conditionals)
        return PrivBayesModel(model, k, self.epsilon1, self.epsilon2, scale, marginals)

    def greedy_bayes(
        self, codes: NDArray[np.int64], cards: Sequence[int], k: int, *, rng: np.random.Generator
    ) -> Network:
        """GreedyBayes (step 2) on discretised ``codes``: a uniform root, then d − 1 exponential-mechanism choices.

        Parameters
        ----------
        codes : ndarray of shape (n, d), int64
            The discretised table (column ``j`` in ``range(cards[j])``).
        cards : sequence of int
            The public number of codes of each column.
        k : int
            The degree, ``<= d - 1``.
        rng : numpy.random.Generator
            Draws the root, then one Gumbel variate per candidate at each step.
        """
        n, d = codes.shape
        root = int(rng.integers(d))
        epsilon_step = self.epsilon1 / (d - 1) if d > 1 else 0.0

        def select(scores: NDArray[np.float64], candidates: Sequence[Candidate]) -> int:
            return exponential_mechanism(selection_logits(scores, candidates, cards, n, epsilon_step), rng)

        return greedy_network(codes, cards, k, root=root, select=select)

    def table_problem(self, table: pd.DataFrame) -> str | None:
        """Why this generator cannot discretise tables with ``table``'s columns (only their names, dtypes and
        categories are read, never a value), or ``None``: a numeric column without a public range in ``ranges``, or
        ``bins`` that do not fit the columns; a game asks before any run."""
        try:
            fixed_bins(table, () if self.ranges is None else self.ranges, self.n_bins, self.bins)
        except (TypeError, ValueError) as exc:
            hint = (
                " (give ranges = { column = [low, high], ... } from public knowledge: a data set's are "
                "privgame.data.public_domain(name).ranges, and experiments/krco_adult_privbayes.toml has Adult's)"
                if self.ranges is None
                else ""
            )
            return f"{str(exc).rstrip('.')}{hint}"
        return None

    def release(self, data: pd.DataFrame, *, rng: np.random.Generator) -> pd.DataFrame:
        """A synthetic table with the columns, dtypes and categories of ``data``: :meth:`fit`, then sample."""
        model = self.fit(data, rng=rng)
        return model.sample(len(data) if self.n_rows is None else self.n_rows, rng=rng)

    def privacy_claim(self) -> PrivacyClaim:
        """ε-DP under REPLACE_ONE: the composition of the ε₁-DP structure search and the ε₂-DP conditionals."""
        return pure_composition_claim([self.epsilon1, self.epsilon2])


@dataclass(frozen=True, slots=True, eq=False)
class NoisyMarginal:
    """One noisy marginal of NoisyConditionals.

    Attributes
    ----------
    columns : tuple of int
        Its attributes, in the axis order of ``noisy_counts``.
    noisy_counts : ndarray of shape ``tuple(cards[c] for c in columns)``
        The counts plus Laplace noise, BEFORE clipping at 0 (exposed so that the noise can be tested).
    """

    columns: tuple[int, ...]
    noisy_counts: NDArray[np.float64]


@dataclass(frozen=True, slots=True, eq=False)
class PrivBayesModel:
    """A fitted PrivBayes network (everything here is differentially private: it may be published).

    Attributes
    ----------
    model : FittedNetwork
        The discretisation, the structure and the noisy conditionals.
    degree : int
        The degree k used.
    epsilon1, epsilon2 : float
        The budgets of the structure search and of the conditionals.
    noise_scale : float
        The Laplace scale 2(d − k)/ε₂ of the counts.
    marginals : tuple of NoisyMarginal
        The d − k noisy marginals, the joint of the first k + 1 attributes first.
    """

    model: FittedNetwork
    degree: int
    epsilon1: float
    epsilon2: float
    noise_scale: float
    marginals: tuple[NoisyMarginal, ...]

    @property
    def network(self) -> Network:
        """The structure."""
        return self.model.network

    def sample(self, n: int, *, rng: np.random.Generator) -> pd.DataFrame:
        """A synthetic table of ``n`` rows with the original columns and dtypes."""
        return self.model.sample(n, rng=rng)


def mutual_information_sensitivity(n: int, binary: bool) -> float:
    """The sensitivity S(I) of mutual information (PrivBayes, Lemma 4.1), in nats, for n records.

    Replacing one of ``n >= 2`` records changes I(X; Π) by at most
    ``(1/n) log n + ((n − 1)/n) log(n/(n − 1))`` when X or Π is binary, and otherwise by at most
    ``(2/n) log((n + 1)/2) + ((n − 1)/n) log((n + 1)/(n − 1))``.  The paper writes log₂; any base works if I is
    measured in the same one, since the exponential mechanism uses only the ratio I/S(I).

    Raises
    ------
    ValueError
        If ``n < 2``.
    """
    m = check_int("n", n, low=2)
    if binary:
        return math.log(m) / m + (m - 1) / m * math.log(m / (m - 1))
    return 2.0 / m * math.log((m + 1) / 2.0) + (m - 1) / m * math.log((m + 1) / (m - 1))


def selection_logits(
    scores: ArrayLike, candidates: Sequence[Candidate], cards: Sequence[int], n: int, epsilon_step: float
) -> NDArray[np.float64]:
    """The exponential mechanism's log-weights ε_step · I / (2 S(I)) of GreedyBayes's candidates.

    Parameters
    ----------
    scores : array-like of shape (m,)
        Mutual information I(X; Π) of each candidate, in nats.
    candidates : sequence of (child, parents)
        The candidates; a candidate is binary when its child has 2 codes or its parents' joint domain has 2 cells.
    cards : sequence of int
        The number of codes of each column.
    n : int
        The number of records.
    epsilon_step : float
        The budget of this step, ε₁/(d − 1).

    Returns
    -------
    ndarray of shape (m,)
        With fewer than 2 records every I is 0 and so is every log-weight.
    """
    mi = np.asarray(scores, dtype=np.float64)
    if n < 2:
        return np.zeros_like(mi)
    cells = {ps: math.prod(cards[p] for p in ps) for ps in dict.fromkeys(ps for _, ps in candidates)}
    child_cards = np.fromiter((cards[child] for child, _ in candidates), dtype=np.int64, count=len(candidates))
    parent_cells = np.fromiter((cells[ps] for _, ps in candidates), dtype=np.int64, count=len(candidates))
    binary = (child_cards == 2) | (parent_cells == 2)
    sensitivity = np.where(binary, mutual_information_sensitivity(n, True), mutual_information_sensitivity(n, False))
    return epsilon_step * mi / (2.0 * sensitivity)


def exponential_mechanism(logits: ArrayLike, rng: np.random.Generator) -> int:
    """Draw index i with probability ∝ exp(logits[i]) by the Gumbel-max trick: argmax(logits + Gumbel noise)."""
    values = np.asarray(logits, dtype=np.float64)
    return int(np.argmax(values + rng.gumbel(size=values.shape)))


def laplace_scale(d: int, k: int, epsilon2: float) -> float:
    """The Laplace scale 2(d − k)/ε₂ of NoisyConditionals' counts (d − k marginals, L1 sensitivity 2 each)."""
    return 2.0 * (d - k) / epsilon2


def average_cells(cards: Sequence[int], width: int) -> float:
    """The average number of cells of a ``width``-way marginal over all ``width``-subsets of the attributes.

    That is e_width(cards) / C(d, width), e_j the elementary symmetric polynomial; ``2**width`` for binary
    attributes.
    """
    e = [1] + [0] * len(cards)
    for c in cards:
        for j in range(len(cards), 0, -1):
            e[j] += e[j - 1] * int(c)
    return e[width] / math.comb(len(cards), width)


def theta_useful_degree(n: int, cards: Sequence[int], epsilon2: float, theta: float) -> int:
    """The degree k chosen by θ-usefulness (PrivBayes §4.4): the largest k in [0, d − 1] with
    ``n · ε₂ / (2 (d − k) · cells_k) >= θ``, where ``cells_k`` is :func:`average_cells` of a (k + 1)-way marginal
    (the paper's binary case: ``n ε / ((d − k) 2^(k+3))`` at ε₂ = ε/2).  When no k qualifies, ``0``.
    """
    d = len(cards)
    useful = [k for k in range(d) if n * epsilon2 / (2.0 * (d - k) * average_cells(cards, k + 1)) >= theta]
    return max(useful, default=0)


def _noisy_conditionals(
    codes: NDArray[np.int64],
    cards: Sequence[int],
    network: Network,
    k: int,
    scale: float,
    rng: np.random.Generator,
) -> tuple[tuple[NoisyMarginal, ...], tuple[Conditional, ...]]:
    """NoisyConditionals: the d − k noisy marginals over the full domain and the conditionals derived from them."""
    first = network.order[: k + 1]
    marginals = [NoisyMarginal(first, _noisy(marginal_counts(codes, cards, first), scale, rng))]
    joint = np.maximum(marginals[0].noisy_counts, 0.0)
    conditionals = []
    for j, (child, parents) in enumerate(zip(first, network.parents, strict=False)):
        # GreedyBayes gives the attribute at position j <= k all j earlier ones as parents
        table = joint.sum(axis=tuple(range(j + 1, k + 1)))
        table = table.transpose([first.index(p) for p in parents] + [j])
        conditionals.append(conditional_from_counts(child, parents, table.reshape(-1, cards[child])))
    for child, parents in zip(network.order[k + 1 :], network.parents[k + 1 :], strict=True):
        columns = (*parents, child)
        marginal = NoisyMarginal(columns, _noisy(marginal_counts(codes, cards, columns), scale, rng))
        marginals.append(marginal)
        table = np.maximum(marginal.noisy_counts, 0.0).reshape(-1, cards[child])
        conditionals.append(conditional_from_counts(child, parents, table))
    return tuple(marginals), tuple(conditionals)


def _noisy(counts: NDArray[np.float64], scale: float, rng: np.random.Generator) -> NDArray[np.float64]:
    return counts + rng.laplace(0.0, scale, size=counts.shape)
