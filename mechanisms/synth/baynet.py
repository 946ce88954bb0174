"""BayNet: the non-private greedy mutual-information Bayesian network (SPEC §7)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privgame.analysis._checks import check_int
from privgame.analysis.discretise import BinSpec, PublicBins, public_bins, quantile_bins
from privgame.mechanisms._base import Mechanism, PrivacyClaim
from privgame.mechanisms.synth._bayes import (
    Candidate,
    FittedNetwork,
    Network,
    empirical_conditionals,
    greedy_network,
    topological_network,
)

__all__ = ["BayNet"]

Structure = Literal["greedy", "hillclimb"]


@dataclass(frozen=True, slots=True)
class BayNet(Mechanism):
    """Synthetic tables from a Bayesian network fitted without noise: the "BayNet" of the synthetic-data literature.

    Parameters
    ----------
    k : int, default=1
        Maximum number of parents per attribute (``>= 0``; ``0`` samples every column independently).  Stadler et al.
        [3]_ use k = 1.
    n_bins : int, default=25
        Quantile bins per numeric column (Stadler et al. use 25); ties may merge bins.
    bins : mapping of str to spec, or sequence of (column, spec), optional
        Bins of some numeric columns used instead of their quantile bins
        (:func:`privgame.analysis.discretise.public_bins`: edges, a value given twice being a bin of its own, or
        ``"integers"``), over the column's own ``[min, max]`` stretched to the first and last edge, e.g. the public bins
        of :data:`privgame.data.ADULT_PUBLIC_BINS` (which ``privgame synth`` passes).  Stored as a sorted tuple of pairs
        (``None`` when empty).
    structure : {"greedy", "hillclimb"}, default="greedy"
        ``"greedy"``: the greedy mutual-information network of DataSynthesizer [2]_ with no noise — a root drawn
        uniformly from ``rng``, then repeatedly the (child, parents) pair of maximal mutual information (ties: the
        first in the search order of :func:`privgame.mechanisms.synth._bayes.greedy_network`), the parents being a
        subset of size ``min(k, #placed)`` of the placed columns.  ``"hillclimb"``: pgmpy's ``HillClimbSearch`` with the
        discrete BIC score and ``max_indegree = k`` (needs the optional ``pgmpy`` dependency: ``pip install
        privgame[synth]``); its structure is deterministic, ``rng`` only drives the sampling.
    n_rows : int or None, default=None
        Rows of the synthetic table (``>= 1``); ``None``: as many as the input.

    Notes
    -----
    Numeric columns are cut at their quantiles in the data (:func:`privgame.analysis.discretise.quantile_bins`, not
    private: BayNet claims no privacy), or by ``bins``, and leave the generator as values drawn uniformly within their
    bin (uniformly over the integers of the bin for integer columns; a single-value bin gives its value).  Categorical
    columns keep their category list; a category absent from the data is never generated.  Conditionals are the
    empirical ones, Pr[X | Π = π] = count(X, π) / count(π); a parent configuration never seen in the data (it can be
    sampled, since each parent is sampled from its own conditional) falls back to the child's marginal.  Sampling is
    ancestral.

    References
    ----------
    .. [1] J. Zhang et al. PrivBayes: Private Data Release via Bayesian Networks. SIGMOD 2014 / TODS 2017.
    .. [2] H. Ping, J. Stoyanovich, B. Howe. DataSynthesizer: Privacy-Preserving Synthetic Datasets. SSDBM 2017.
    .. [3] T. Stadler, B. Oprisanu, C. Troncoso. Synthetic Data — Anonymisation Groundhog Day. USENIX Security 2022,
       arXiv:2011.07018.

    Examples
    --------
    >>> df = pd.DataFrame({"x": np.arange(100), "c": pd.Categorical(["a", "b"] * 50)})
    >>> out = BayNet().release(df, rng=np.random.default_rng(0))
    >>> out.shape, [str(t) for t in out.dtypes]
    ((100, 2), ['int64', 'category'])
    """

    name: ClassVar[str] = "baynet"
    input_kind: ClassVar[str] = "table"
    release_kind: ClassVar[str] = "table"

    k: int = 1
    n_bins: int = 25
    bins: PublicBins | Mapping[str, BinSpec] | None = None
    structure: Structure = "greedy"
    n_rows: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", check_int("k", self.k, low=0))
        object.__setattr__(self, "n_bins", check_int("n_bins", self.n_bins, low=1))
        if self.bins is not None:
            object.__setattr__(self, "bins", public_bins(self.bins) or None)
        if self.structure not in ("greedy", "hillclimb"):
            raise ValueError(f"structure must be one of 'greedy', 'hillclimb', got {self.structure!r}.")
        if self.n_rows is not None:
            object.__setattr__(self, "n_rows", check_int("n_rows", self.n_rows, low=1))

    def fit(self, data: pd.DataFrame, *, rng: np.random.Generator) -> FittedNetwork:
        """Discretise ``data``, learn the structure and the empirical conditionals.

        Raises
        ------
        TypeError, ValueError
            For a table that is not a non-empty DataFrame of categorical, integer and float columns without missing
            values (:func:`privgame.analysis.discretise.check_table`), or ``bins`` naming a column that is not a numeric
            column of ``data`` or not fitting its dtype (:func:`privgame.analysis.discretise.quantile_bins`).
        ImportError
            For ``structure="hillclimb"`` without pgmpy.
        """
        bins = quantile_bins(data, self.n_bins, self.bins)
        codes = bins.encode(data)
        cards = bins.cardinalities
        if self.structure == "greedy":
            root = int(rng.integers(len(cards)))
            network = greedy_network(codes, cards, self.k, root=root, select=_argmax)
        else:
            network = _hillclimb_network(codes, self.k)
        return FittedNetwork(bins, network, empirical_conditionals(codes, cards, network))

    def release(self, data: pd.DataFrame, *, rng: np.random.Generator) -> pd.DataFrame:
        """A synthetic table with the columns, dtypes and categories of ``data``: :meth:`fit`, then sample."""
        model = self.fit(data, rng=rng)
        return model.sample(len(data) if self.n_rows is None else self.n_rows, rng=rng)

    def privacy_claim(self) -> PrivacyClaim | None:
        """None: BayNet claims no privacy."""
        return None


def _argmax(scores: NDArray[np.float64], candidates: Sequence[Candidate]) -> int:
    return int(np.argmax(scores))


def _hillclimb_network(codes: NDArray[np.int64], k: int) -> Network:
    """pgmpy's hill-climbing structure (discrete BIC, at most ``k`` parents) over the codes."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # pgmpy announces API moves with FutureWarnings on import
            from pgmpy.estimators import HillClimbSearch
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            'BayNet(structure="hillclimb") needs pgmpy, the optional "synth" dependency: pip install privgame[synth]'
        ) from error
    names = [str(j) for j in range(codes.shape[1])]
    frame = pd.DataFrame(codes, columns=names).astype("category")  # pgmpy treats int columns as continuous
    if k == 0 or codes.shape[1] == 1:
        return topological_network({j: () for j in range(codes.shape[1])})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dag: Any = HillClimbSearch(frame).estimate(scoring_method="bic-d", max_indegree=k, show_progress=False)
    parents_of: dict[int, tuple[int, ...]] = {j: () for j in range(codes.shape[1])}
    for child in range(codes.shape[1]):
        parents_of[child] = tuple(sorted(int(p) for p in dag.get_parents(str(child))))
    return topological_network(parents_of)
