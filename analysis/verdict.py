"""One verdict per claim: does an experiment's set of repetitions refute a mechanism's claimed ε, at a stated level?

Each repetition (trial) of an audit gives a lower bound ε_lb that holds with probability at least c, the confidence,
when the claim is true: P(ε_lb > ε_claim) ≤ α = 1 − c.  Counting the trials whose bound exceeds the claim and calling
any count above zero a refutation is not a test at level α: under a true claim, P(at least one of 20 exceeds) can be
1 − 0.95²⁰ ≈ 0.64, and P(at least 2 of 20) ≈ 0.26.  This module gives the count (``over_claim``), the count chance
allows beside it (``over_claim_allowed``) and ONE verdict per claim from a test that keeps its level over the whole
experiment.

The test (an exact binomial test of the exceedances).  The trials run on independent seeds, so under a true claim
the exceedance indicators are independent Bernoulli(p_i) with every p_i ≤ α; their sum X is stochastically smaller
than Binomial(n, α) (couple each Bernoulli(p_i) with a Bernoulli(α) that is 1 whenever it is).  The claim is
refuted at level α when X ≥ k* = min{k : P(Binomial(n, α) ≥ k) ≤ α}; then

    P(refuted | claim true) = P(X ≥ k*) ≤ P(Binomial(n, α) ≥ k*) ≤ α,

whatever the estimator's actual violation rate below α, the number of trials n and the order the trials finished
in (the test looks at the count once, when the experiment is read).  With n = 1 it is the trial's own test
(k* = 1); with n = 20 at α = 0.05, k* = 4: up to 3 trials above the claim are what chance allows.  The verdict's
p-value is P(Binomial(n, α) ≥ X).  A pooled bound (the multi-run game's one bound over every run) is a single
test at level α already: its verdict is that bound against the claim (:func:`pooled_verdict`).

The verdict is per claim (per grid point): an experiment that checks several claims makes several tests, each at
level α.  Trials whose bound is missing (NaN) are not counted in n.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privgame.analysis._checks import check_int, check_real

__all__ = [
    "NOT_GUARANTEED",
    "NOT_REFUTED",
    "NO_CLAIM",
    "NO_TRIALS",
    "allowed_exceedances",
    "exceedance_p",
    "pooled_verdict",
    "refuted_label",
    "verdict_columns",
]

NOT_REFUTED = "not refuted"
NOT_GUARANTEED = "no test: bound not guaranteed"
NO_CLAIM = "no claim"
NO_TRIALS = "no trials"


def refuted_label(confidence: float) -> str:
    """The verdict's text when the claim is refuted: ``"refuted at 95 %"`` for a confidence of 0.95."""
    percent = f"{100 * confidence:.10g}"
    return f"refuted at {percent} %"


# Binomial tails within this relative slack of α count as α: P(Bin(1, α) ≥ 1) = α exactly, and its float
# evaluation through exp(log α) may land one ulp above it.
_SLACK = 1e-12


@functools.lru_cache(maxsize=256)
def _upper_tails(n: int, p: float) -> NDArray[np.float64]:
    """P(Binomial(n, p) ≥ k) for k = 0, …, n + 1, from the log-pmf (no scipy.stats: a report imports none)."""
    j = np.arange(n + 1, dtype=float)
    log_factorial = np.array([math.lgamma(i + 1.0) for i in range(n + 1)])
    log_pmf = log_factorial[n] - log_factorial - log_factorial[::-1] + j * math.log(p) + (n - j) * math.log1p(-p)
    tails = np.minimum(np.append(np.cumsum(np.exp(log_pmf)[::-1])[::-1], 0.0), 1.0)
    tails.setflags(write=False)  # cached: shared by every caller
    return tails


def allowed_exceedances(n: int, alpha: float) -> int:
    """The most trials, of ``n``, whose bound may exceed a true claim before the claim is refuted at level ``alpha``:
    k* − 1 with k* = min{k : P(Binomial(n, α) ≥ k) ≤ α} (see the module notes).

    >>> allowed_exceedances(20, 0.05), allowed_exceedances(1, 0.05), allowed_exceedances(200, 0.05)
    (3, 0, 15)
    """
    n = check_int("n", n, low=0)
    alpha = check_real("alpha", alpha, low=0.0, high=1.0, low_open=True, high_open=True)
    tails = _upper_tails(n, alpha)
    # tails decrease in k from P(≥ 0) = 1 > α to P(≥ n + 1) = 0: the first k within the level is k* ≥ 1
    within = np.flatnonzero(tails <= alpha * (1.0 + _SLACK))
    return int(within[0]) - 1


def exceedance_p(count: int, n: int, alpha: float) -> float:
    """P(Binomial(n, α) ≥ count): the verdict's p-value for ``count`` exceedances in ``n`` trials."""
    if n <= 0 or count <= 0:
        return 1.0
    return float(_upper_tails(n, alpha)[min(count, n + 1)])


def verdict_columns(bounds: ArrayLike, claim: float, confidence: float, *, prefix: str = "") -> dict[str, object]:
    """The verdict of an experiment's per-trial lower ``bounds`` on the claimed ε ``claim``, each bound at
    ``confidence``: ``<prefix>over_claim`` (trials whose bound exceeds the claim), ``<prefix>over_claim_allowed``
    (the most that chance allows under a true claim, :func:`allowed_exceedances`), ``<prefix>verdict_p`` (the
    binomial p-value) and ``<prefix>verdict`` (:func:`refuted_label`, ``"not refuted"``, ``"no claim"`` where the
    claim is NaN, ``"no trials"`` where no bound is finite).

    >>> verdict_columns([1.2, 1.3, 0.4], claim=1.0, confidence=0.95)["verdict"]  # 2 of 3: chance allows 1
    'refuted at 95 %'
    >>> verdict_columns([1.2] + [0.3] * 19, claim=1.0, confidence=0.95)["verdict"]  # 1 of 20: chance allows 3
    'not refuted'
    """
    confidence = check_real("confidence", confidence, low=0.0, high=1.0, low_open=True, high_open=True)
    lb = np.asarray(bounds, dtype=float).ravel()
    lb = lb[~np.isnan(lb)]
    n, alpha = int(lb.size), 1.0 - confidence
    if math.isnan(claim):
        count: float = math.nan
        allowed: float = math.nan
        p, verdict = math.nan, NO_CLAIM
    else:
        count = int(np.count_nonzero(lb > claim))  # a bound equal to the claim does not refute it
        allowed = allowed_exceedances(n, alpha)
        p = exceedance_p(int(count), n, alpha)
        verdict = NO_TRIALS if n == 0 else refuted_label(confidence) if count > allowed else NOT_REFUTED
    return {
        f"{prefix}over_claim": count,
        f"{prefix}over_claim_allowed": allowed,
        f"{prefix}verdict_p": p,
        f"{prefix}verdict": verdict,
    }


def pooled_verdict(bound: float, claim: float, confidence: float) -> str:
    """The verdict of ONE lower bound at ``confidence`` (pooled over every run of a claim) on the claimed ε."""
    if math.isnan(claim):
        return NO_CLAIM
    if math.isnan(bound):
        return NO_TRIALS
    return refuted_label(confidence) if bound > claim else NOT_REFUTED
