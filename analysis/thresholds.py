"""Threshold strategies shared by every estimator: how a decision threshold is chosen without breaking the bound.

Any threshold chosen after looking at which scores belong to members is a multiple test.  The sound options
(SPEC "Threshold selection") are:

- :class:`Explicit` — a threshold fixed in advance; one test at significance β.
- :class:`Bonferroni` — G candidates fixed WITHOUT the labels (quantiles of the pooled scores, or all distinct
  scores); each is tested at β / G and the best bound is reported.  Reducing the candidates with the labels (e.g. to
  the ROC's Pareto frontier) and dividing by the reduced count is NOT sound.
- :class:`Split` — a random, label-free split of the audited examples: the threshold is chosen on one part (any way
  at all) and the bound is computed on the held-out part at β.

An estimator describes itself to a strategy with two functions: ``candidates(pooled, levels)`` turns quantile levels
(or ``None`` for every distinct score) into candidate thresholds using only the pooled scores, and
``bounds(in_scores, out_scores, candidates, beta)`` returns one bound per candidate, each valid at significance
``beta`` on its own.  "Best threshold without correction" is deliberately not offered.

References
----------
.. [1] SPEC.md, "Threshold selection"; jax_privacy ``auditing.py`` (typed threshold choices).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from privgame.analysis._checks import check_int, check_real

__all__ = [
    "Bonferroni",
    "Explicit",
    "Split",
    "ThresholdChoice",
    "ThresholdStrategy",
    "check_strategy",
    "quantile_thresholds",
    "symmetric_quantile_pairs",
    "warn_delta_term",
]

Candidates = Sequence[Any]
CandidatesFn = Callable[[NDArray[np.float64], NDArray[np.float64] | None], Candidates]
BoundsFn = Callable[[NDArray[np.float64], NDArray[np.float64], Candidates, float], NDArray[np.float64]]


@dataclass(frozen=True, slots=True)
class ThresholdChoice:
    """The outcome of a threshold strategy.

    Attributes
    ----------
    threshold : object
        The chosen threshold (a float, or a pair for two-sided guessing).
    bound : float
        The bound at that threshold, valid at the overall significance.
    n_tests : int
        How many candidates the significance was divided among.
    beta_per_test : float
        The significance of each test.
    strategy : str
        A description of the strategy.
    in_scores, out_scores : ndarray
        The scores the bound was computed on (all of them, or the held-out part of a split).
    """

    threshold: Any
    bound: float
    n_tests: int
    beta_per_test: float
    strategy: str
    in_scores: NDArray[np.float64]
    out_scores: NDArray[np.float64]


class ThresholdStrategy(ABC):
    """How an estimator's threshold is chosen."""

    __slots__ = ()

    @abstractmethod
    def choose(
        self,
        in_scores: NDArray[np.float64],
        out_scores: NDArray[np.float64],
        *,
        beta: float,
        candidates: CandidatesFn,
        bounds: BoundsFn,
    ) -> ThresholdChoice:
        """Choose a threshold and return the bound at it, valid at significance ``beta`` overall."""


@dataclass(frozen=True, slots=True)
class Explicit(ThresholdStrategy):
    """A threshold fixed before seeing the data: one test at significance β.

    Parameters
    ----------
    threshold : float or tuple of two floats
        The threshold (member guesses at scores ≥ it); for two-sided guessing ``(t_low, t_high)``.
    """

    threshold: Any

    def __post_init__(self) -> None:
        if isinstance(self.threshold, tuple):
            if len(self.threshold) != 2:
                raise ValueError(f"threshold must be a number or a pair (t_low, t_high), got {self.threshold!r}.")
            low, high = (check_real("threshold", v, allow_inf=True) for v in self.threshold)
            if not low < high:
                raise ValueError(f"threshold (t_low, t_high) must have t_low < t_high, got {self.threshold!r}.")
        else:
            check_real("threshold", self.threshold, allow_inf=True)

    def choose(
        self,
        in_scores: NDArray[np.float64],
        out_scores: NDArray[np.float64],
        *,
        beta: float,
        candidates: CandidatesFn,
        bounds: BoundsFn,
    ) -> ThresholdChoice:
        bound = float(bounds(in_scores, out_scores, [self.threshold], beta)[0])
        return ThresholdChoice(
            self.threshold, bound, 1, beta, f"explicit threshold {self.threshold!r}", in_scores, out_scores
        )


@dataclass(frozen=True, slots=True)
class Bonferroni(ThresholdStrategy):
    """Best of G label-free candidates, each tested at β / G (a union bound).

    Parameters
    ----------
    candidates : int or "all", default=100
        G evenly spaced quantile levels of the pooled scores (levels (1..G)/(G+1)), or ``"all"`` for every distinct
        pooled score (G = their number).

    Notes
    -----
    Formal guarantee: if each candidate's bound holds with probability ≥ 1 − β/G, all hold together with
    probability ≥ 1 − β, so the best of them does too.  The candidates depend on the pooled scores only, never on
    which of them are members.
    """

    candidates: int | Literal["all"] = 100

    def __post_init__(self) -> None:
        if self.candidates != "all":
            check_int("candidates", self.candidates, low=1)

    def choose(
        self,
        in_scores: NDArray[np.float64],
        out_scores: NDArray[np.float64],
        *,
        beta: float,
        candidates: CandidatesFn,
        bounds: BoundsFn,
    ) -> ThresholdChoice:
        pooled = np.concatenate([in_scores, out_scores])
        levels = None if self.candidates == "all" else _levels(int(self.candidates))
        cands = candidates(pooled, levels)
        if not cands:
            raise ValueError("no threshold candidates: the scores are empty.")
        n = len(cands)
        values = bounds(in_scores, out_scores, cands, beta / n)
        best = int(np.argmax(values))
        return ThresholdChoice(
            cands[best],
            float(values[best]),
            n,
            beta / n,
            f"Bonferroni over {n} label-free candidates",
            in_scores,
            out_scores,
        )


@dataclass(frozen=True, slots=True)
class Split(ThresholdStrategy):
    """Choose the threshold on a random part of the examples, bound on the held-out part at β.

    Parameters
    ----------
    fraction : float, default=0.5
        Share of the examples (members and non-members alike, each independently) used to choose.
    seed : int or None, default=None
        Seed of the split; ``None`` draws fresh entropy.  Each audit needs its OWN random split (e.g. a seed drawn
        from the trial's ``SeedSequence``): the examples arrive grouped by label, so one fixed mask reused across
        audits selects held-out sets whose member counts depend on the labels, and the guarantee is lost (the
        validity harness measured 28 % violations at a nominal 5 % on null scores with ``seed=0`` reused).
    candidates : int, default=100
        Quantile candidates searched on the choosing part (any search is allowed there).

    Notes
    -----
    Formal guarantee: every example is held out independently with probability ``1 - fraction``, independently of
    its label and score, so the held-out examples are a fresh audit whose threshold was fixed before they were
    looked at: the bound computed on them at β is valid.  The price is a smaller audit.
    """

    fraction: float = 0.5
    seed: int | None = None
    candidates: int = 100

    def __post_init__(self) -> None:
        check_real("fraction", self.fraction, low=0.0, high=1.0, low_open=True, high_open=True)
        if self.seed is not None:
            check_int("seed", self.seed, low=0)
        check_int("candidates", self.candidates, low=1)

    def choose(
        self,
        in_scores: NDArray[np.float64],
        out_scores: NDArray[np.float64],
        *,
        beta: float,
        candidates: CandidatesFn,
        bounds: BoundsFn,
    ) -> ThresholdChoice:
        n_in, n_out = in_scores.shape[0], out_scores.shape[0]
        if n_in + n_out < 2:
            raise ValueError(
                f"a split needs at least 2 examples (one to choose on, one to bound on), got {n_in + n_out}."
            )
        rng = np.random.default_rng(self.seed)
        # A split that leaves either part empty is drawn again (a bounded number of times).  The condition depends
        # on the draws alone, not on which examples are members, so the mask stays independent of the labels and
        # scores (its law is exchangeable), and the held-out audit stays valid; a first draw with both parts
        # non-empty, every split before this rule, is kept as it was.
        for _ in range(_SPLIT_DRAWS):
            in_pick = rng.random(n_in) < self.fraction
            out_pick = rng.random(n_out) < self.fraction
            chosen_on = int(np.count_nonzero(in_pick)) + int(np.count_nonzero(out_pick))
            if 0 < chosen_on < n_in + n_out:
                break
        else:
            raise ValueError(
                f"a split of {n_in + n_out} examples at fraction {self.fraction:g} left one part empty in "
                f"{_SPLIT_DRAWS} draws; use a fraction nearer 0.5 or more examples."
            )
        choose_in, choose_out = in_scores[in_pick], out_scores[out_pick]
        pooled = np.concatenate([choose_in, choose_out])
        cands = candidates(pooled, _levels(self.candidates))
        trial = bounds(choose_in, choose_out, cands, beta)
        chosen = cands[int(np.argmax(trial))]
        held_in, held_out = in_scores[~in_pick], out_scores[~out_pick]
        bound = float(bounds(held_in, held_out, [chosen], beta)[0])
        return ThresholdChoice(
            chosen, bound, 1, beta, f"split: chosen on {self.fraction:g}, bounded on the rest", held_in, held_out
        )


#: how many times a split that leaves a part empty is drawn again before the audit gives up
_SPLIT_DRAWS = 1000


def _levels(g: int) -> NDArray[np.float64]:
    return np.arange(1, g + 1, dtype=np.float64) / (g + 1)


def quantile_thresholds(pooled: NDArray[np.float64], levels: NDArray[np.float64] | None) -> list[float]:
    """One-sided candidates: quantiles of the pooled scores at ``levels`` (or every distinct score), deduplicated."""
    if pooled.size == 0:
        return []
    values = np.unique(pooled) if levels is None else np.unique(np.quantile(pooled, levels, method="higher"))
    return [float(v) for v in values]


def symmetric_quantile_pairs(
    pooled: NDArray[np.float64], levels: NDArray[np.float64] | None
) -> list[tuple[float, float]]:
    """Two-sided candidates ``(t_low, t_high)``: guess "non-member" at scores ≤ t_low, "member" at scores ≥ t_high.

    Level a gives the pair of pooled quantiles (a/2, 1 − a/2): the outer share a of the scores is guessed, half on
    each side.  With ``levels=None`` every rank k gives the pair of the k-th lowest and k-th highest scores.  Pairs
    with t_low >= t_high (ties) are dropped, so no example is guessed twice; when none is left the single candidate
    (-inf, inf) guesses nothing.
    """
    if pooled.size == 0:
        return []
    if levels is None:
        ordered = np.sort(pooled)
        n = ordered.size
        pairs = {
            (float(ordered[k]), float(ordered[n - 1 - k])) for k in range(n // 2) if ordered[k] < ordered[n - 1 - k]
        }
    else:
        lows = np.quantile(pooled, levels / 2.0, method="lower")
        highs = np.quantile(pooled, 1.0 - levels / 2.0, method="higher")
        pairs = {(float(lo), float(hi)) for lo, hi in zip(lows, highs, strict=True) if lo < hi}
    # With a single distinct score no pair separates two sides: the one candidate then guesses nothing.
    return sorted(pairs) or [(-np.inf, np.inf)]


def check_strategy(threshold: Any) -> ThresholdStrategy:
    """Refuse anything but a :class:`ThresholdStrategy` (a bare number is ambiguous: use ``Explicit(t)``)."""
    if not isinstance(threshold, ThresholdStrategy):
        raise TypeError(
            f"threshold must be a ThresholdStrategy (Explicit(t), Bonferroni(candidates), Split(fraction, seed)), "
            f"got {threshold!r}."
        )
    return threshold


def warn_delta_term(m: int, delta: float, beta_per_test: float) -> str | None:
    """Message when the one-run audit's δ term 2mδ is not small against the per-test significance, else None."""
    if delta > 0 and 2.0 * m * delta >= 0.1 * beta_per_test:
        return (
            f"2·m·δ = {2 * m * delta:.3g} is not small against the per-test significance {beta_per_test:.3g} "
            f"(m = {m}, δ = {delta:g}): the δ term can swamp the test; use fewer canaries, a smaller δ or fewer "
            "candidates (SPEC §1)."
        )
    return None
