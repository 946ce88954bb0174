"""The validity harness: every estimator × threshold strategy, audited on mechanisms whose ε is known.

For each scenario (randomized response at ε = 1; the idealised Gaussian mechanism, μ = 2; the null game, where the
released values are independent of membership so ε = 0) the harness plays R seeded one-run games, hands the member
and non-member scores to every estimator under every threshold strategy, and counts the violations V (bound above
the truth).  A sound estimator at confidence 1 − β has violation probability ≤ β; the table reports V/R with its
Clopper–Pearson interval and ``binomtest(V, R, β, alternative="greater")``: a p-value ≤ 1e-3 is a failure.

PANORAMIA's two bounds are validated where c and c + ε are known: the baseline's score is randomized response of
membership at level c, the MIA's at level c + ε; c_lb ≤ c and {c+ε}_lb ≤ c + ε must each fail with probability at
most β/2 (its union bound).

Deliberately invalid estimators (a point estimate; the best threshold without correction) are part of the harness
(``include_invalid=True``) to show that it catches them.

The order-statistics audit (:mod:`privgame.analysis.order_stats`, Xiang et al. 2025, arXiv:2509.08704) is valid only in
the product model, where every canary's output depends on its own bit alone through randomness of its own
(``Mechanism.canary_dependence is None``).  Its rows (pure, Gaussian and DP-SGD's PLD family, one- and two-sided) are
played on the product-model scenarios only.  Two more scenarios show why the refusal elsewhere is needed: mechanisms
that keep their per-canary guarantee exactly but whose canaries share randomness
(:class:`SharedMagnitudeGaussian`, exactly 1-GDP for each canary; :class:`BlockReveal`, (0, 1e-5)-DP for each
canary).  There the order-statistics audit is FORCED (its rows are labelled so, with ``expected = "violates"``) and
must fail the same binomial test that the valid rows pass, while Steinke's test and the f-DP test with the same family
keep their promise on the same scores.

Parametric estimates (``include_estimates=True``; ``privgame validate`` plays them) promise nothing, so nothing gates
them: the Gaussian fit of Agrawal et al. (:mod:`privgame.analysis.gaussian_fit`, at the confidence of its parameter
intervals and as a plug-in) is played on :func:`estimate_scenarios` (Gaussian scores, where its model holds; randomized
response's 0/1 scores; Laplace scores; DP-SGD's binomial-plus-Gaussian scores; the null game, all at δ > 0), and its
rows (``expected = "estimate"``, strategy ``"none"``) report how often it exceeds the true ε, with the rate's
interval and no test.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import dp_accounting
import joblib
import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import special, stats
from tqdm.auto import tqdm

from privgame.analysis import fdp, multi_run, one_run, order_stats
from privgame.analysis._checks import check_int, check_real
from privgame.analysis._counting import ascending, counts_one_sided, guess_counts
from privgame.analysis.accounting import (
    NeighbouringRelation,
    PrivacyClaim,
    dpsgd_claim,
    gaussian_claim,
    gaussian_epsilon,
)
from privgame.analysis.families import dpsgd_family, dpsgd_parameters, family_for_claim
from privgame.analysis.gaussian_fit import gaussian_fit
from privgame.analysis.thresholds import (
    Bonferroni,
    Explicit,
    Split,
    ThresholdStrategy,
    _levels,
    quantile_thresholds,
    symmetric_quantile_pairs,
)
from privgame.analysis.tradeoff import GaussianCurve
from privgame.attacks import Identity
from privgame.games.one_run import OneRunGame
from privgame.mechanisms import GaussianMechanism, Mechanism, RandomizedResponse

__all__ = [
    "ESTIMATES",
    "ESTIMATORS",
    "FORCED",
    "INVALID_ESTIMATORS",
    "BlockReveal",
    "EstimateSpec",
    "EstimatorSpec",
    "LaplaceScores",
    "NullScores",
    "Scenario",
    "SharedMagnitudeGaussian",
    "SubsampledGaussianScores",
    "default_scenarios",
    "estimate_scenarios",
    "register_estimator",
    "validate",
]

Scores = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Scenario:
    """A mechanism whose privacy is known exactly, audited with m canaries at δ.

    Attributes
    ----------
    name : str
    mechanism : Mechanism
        Releases one value per canary (the identity attack scores it).
    m : int
        Canaries per audit.
    delta : float
        The δ of the audit.
    epsilon : float
        The true ε at ``delta``.
    mu : float or None
        The true μ when the mechanism is μ-GDP (None otherwise: GDP estimators do not apply).
    explicit : float
        A threshold fixed in advance for this mechanism's scores.
    explicit_pair : tuple of float
        A two-sided threshold ``(t_low, t_high)`` fixed in advance.
    strategies : tuple of str, default=("explicit", "bonferroni", "split")
        The threshold strategies played on it (each estimator's own list, restricted to these).
    forced : tuple of (str, str) pairs, default=()
        For a mechanism whose canaries are dependent (``canary_dependence`` not None): the (estimator, strategy)
        pairs of product-model estimators (``EstimatorSpec.product_model``) run on it anyway, to show that they
        violate their promise there (rows labelled :data:`FORCED`, ``expected = "violates"``).  Every other
        product-model estimator is skipped on such a mechanism; on an independent one this is ignored.
    """

    name: str
    mechanism: Mechanism
    m: int
    delta: float
    epsilon: float
    mu: float | None
    explicit: float
    explicit_pair: tuple[float, float]
    strategies: tuple[str, ...] = ("explicit", "bonferroni", "split")
    forced: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class NullScores(Mechanism):
    """Releases N(0, 1) noise for every canary, ignoring membership: the null game, ε = μ = 0."""

    name: ClassVar[str] = "null-scores"
    input_kind: ClassVar[str] = "canary-bits"
    release_kind: ClassVar[str] = "per-canary-values"
    canary_dependence: ClassVar[str | None] = None

    def release(self, data: Any, *, rng: np.random.Generator) -> Scores:
        return np.asarray(rng.normal(size=np.asarray(data).shape[0]), dtype=np.float64)

    def privacy_claim(self) -> PrivacyClaim:
        return PrivacyClaim(event=dp_accounting.NoOpDpEvent(), neighbouring=NeighbouringRelation.ADD_OR_REMOVE_ONE)


@dataclass(frozen=True, slots=True)
class LaplaceScores(Mechanism):
    """Releases each canary's membership bit plus Laplace noise of scale 1/ε: the Laplace mechanism, pure ε-DP.

    Parameters
    ----------
    epsilon : float, default=1.0
        ``> 0``.

    Notes
    -----
    Sensitivity 1 (one bit), so ε-DP at δ = 0 with respect to each canary's bit, and exactly
    ``ε(δ) = ε + 2 log(1 − δ)`` at δ > 0 (:meth:`epsilon_at`).  Its scores are heavier-tailed than a Gaussian's:
    the scenario on which the Gaussian fit is misspecified by its tails.
    """

    name: ClassVar[str] = "laplace-scores"
    input_kind: ClassVar[str] = "canary-bits"
    release_kind: ClassVar[str] = "per-canary-values"
    canary_dependence: ClassVar[str | None] = None

    epsilon: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_real("epsilon", self.epsilon, low=0.0, low_open=True))

    def release(self, data: Any, *, rng: np.random.Generator) -> Scores:
        bits = np.asarray(data, dtype=bool)
        return bits + rng.laplace(0.0, 1.0 / self.epsilon, size=bits.shape[0])

    def privacy_claim(self) -> PrivacyClaim:
        return PrivacyClaim(
            event=dp_accounting.LaplaceDpEvent(1.0 / self.epsilon), neighbouring=NeighbouringRelation.ADD_OR_REMOVE_ONE
        )

    def epsilon_at(self, delta: float) -> float:
        """The exact ε at δ in [0, 1): ``δ(ε') = 1 − e^{(ε' − ε)/2}`` for 0 <= ε' <= ε.

        The privacy loss of P = Lap(1, b) against Q = Lap(0, b), b = 1/ε, is ``(|x| − |x − 1|)/b``, above ε' exactly
        on x > t = (1 + bε')/2 in [1/2, 1], so ``H_{e^ε'}(P‖Q) = 1 − ½e^{−(1−t)/b} − e^{ε'}·½e^{−t/b} =
        1 − e^{(ε' − ε)/2}`` (and the same from Q to P, by symmetry).  ``test_laplace_scores_epsilon`` checks it
        against ``dp_accounting``'s PLD."""
        d = check_real("delta", delta, low=0.0, high=1.0, high_open=True)
        return max(self.epsilon + 2.0 * math.log1p(-d), 0.0)


@dataclass(frozen=True, slots=True)
class SubsampledGaussianScores(Mechanism):
    """White-box DP-SGD's canary scores: T steps of the Poisson-subsampled Gaussian on each canary, summed.

    A member's score sums its T steps' sampled unit contributions (each step with probability q) and the noise,
    Bin(T, q) + N(0, T σ²); a non-member's is the noise alone.  A post-processing of the T outputs of DP-SGD's
    mechanism in each canary's bit, so its trade-off curve is at least DP-SGD's PLD curve of (σ, q, T).
    """

    name: ClassVar[str] = "subsampled-gaussian-scores"
    input_kind: ClassVar[str] = "canary-bits"
    release_kind: ClassVar[str] = "per-canary-values"
    canary_dependence: ClassVar[str | None] = None

    sigma: float
    sampling_rate: float
    steps: int

    def release(self, data: Any, *, rng: np.random.Generator) -> Scores:
        bits = np.asarray(data, dtype=bool)
        signal = rng.binomial(self.steps, self.sampling_rate, size=bits.shape[0]) * bits
        return signal + rng.normal(0.0, self.sigma * math.sqrt(self.steps), size=bits.shape[0])

    def privacy_claim(self) -> PrivacyClaim:
        return dpsgd_claim(self.sigma, self.sampling_rate, self.steps)


@dataclass(frozen=True, slots=True)
class SharedMagnitudeGaussian(Mechanism):
    """Exactly μ-GDP for each canary, but one draw of the noise's magnitude is shared by all the canaries.

    Parameters
    ----------
    mu : float, default=1.0
        The per-canary GDP parameter, ``> 0``.

    Notes
    -----
    Release: one shared ``A = |Z + μ/2|`` with ``Z ~ N(0, 1)``, then for each canary i, independently given A, a
    sign ``t_i`` that equals ``2 b_i − 1`` with probability ``expit(μ A)`` (flipped otherwise); canary i's value is
    ``Y_i = t_i A``.

    Privacy claim, exactly μ-GDP with respect to each canary's bit (the Gaussian mechanism's, σ = 1/μ): fix the
    other bits.  The output is equivalent to ``(A, t_1, ..., t_m)`` (A = |Y_j| for any j).  The law of A does not
    depend on the bits, and given A the signs are independent, ``t_j`` depending on ``b_j`` alone, so the
    likelihood ratio of the whole output between ``b_i = 1`` and ``b_i = 0`` is that of ``(A, t_i)``, i.e. of
    ``Y_i`` alone.  Under ``b_i = 1``, ``Y_i`` has density, at ``y > 0``, the density of A times ``expit(μ y)``:
    ``[φ(y − μ/2) + φ(y + μ/2)] · φ(y − μ/2) / [φ(y − μ/2) + φ(y + μ/2)] = φ(y − μ/2)``, and at ``y < 0`` the
    density of A at ``|y|`` times ``expit(−μ|y|)``, ``φ(|y| + μ/2) = φ(y − μ/2)``: ``Y_i ~ N(μ/2, 1)``, and
    ``N(−μ/2, 1)`` under ``b_i = 0``.  So each canary's channel is exactly the Gaussian shift by μ, trade-off curve
    ``G_μ`` (the split of a Gaussian output into magnitude and sign is the decomposition of its privacy loss into
    randomized-response levels, [1]_): ε at δ is ``gdp_epsilon(μ, δ)``, 4.377 at μ = 1, δ = 1e-5.

    What the product model assumes and this mechanism breaks: the canaries' confidences ``|Y_i| = A`` are one value,
    not m independent ones.  With A large (probability 0.475 that ``expit(−A) < Φ(−μ/2)``, the channel's mean
    error) every guess is more accurate than G_μ allows on average, and the order-statistics audit, reading m
    independent witnesses, reports more than μ: guessing every one of m = 1000 canaries at μ = 1, with probability
    0.415 at confidence 0.95 and 0.455 at 0.7 (the binomial tail integrated over A).  Steinke's and the f-DP test
    need only each canary's guarantee.

    References
    ----------
    .. [1] J. Dong, A. Roth, W. J. Su. Gaussian Differential Privacy. JRSS-B 2022, arXiv:1905.02383.
    """

    name: ClassVar[str] = "shared-magnitude-gaussian"
    input_kind: ClassVar[str] = "canary-bits"
    release_kind: ClassVar[str] = "per-canary-values"
    canary_dependence: ClassVar[str | None] = (
        "its canaries share one draw of the noise's magnitude (only each value's sign is the canary's own)"
    )

    mu: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "mu", check_real("mu", self.mu, low=0.0, low_open=True))

    def release(self, data: Any, *, rng: np.random.Generator) -> Scores:
        bits = np.asarray(data, dtype=bool)
        magnitude = abs(float(rng.normal()) + self.mu / 2.0)
        truthful = rng.random(bits.shape[0]) < special.expit(self.mu * magnitude)
        return np.where(bits == truthful, magnitude, -magnitude).astype(np.float64)

    def privacy_claim(self) -> PrivacyClaim:
        return gaussian_claim(1.0 / self.mu)


@dataclass(frozen=True, slots=True)
class BlockReveal(Mechanism):
    """(0, δ)-DP for each canary, but the canaries' bits are revealed a whole block at a time, or not at all.

    Parameters
    ----------
    delta : float, default=1e-5
        The probability that any one canary's bit is revealed, in (0, 1).
    block : int, default=20
        Canaries per block (consecutive canaries ``[j·block, (j + 1)·block)``), ``>= 1``.

    Notes
    -----
    Release on m canaries (``m`` a multiple of ``block``, ``m·δ/block <= 1``): every canary's value is uniform
    noise on (−1/2, 1/2), independent of the bits; then with probability ``π = m·δ/block`` one of the
    ``m/block`` blocks, chosen uniformly, is revealed: its canaries' values become ``+1`` (member) and ``−1``
    (non-member).

    Privacy claim, (0, δ)-DP with respect to each canary's bit: canary i's block is revealed with probability
    ``π · block/m = δ`` exactly, whatever the bits.  Fix the other bits; when i's block is not revealed the output
    (noise, and another block's bits or none) does not depend on ``b_i``, so for every set S,
    ``P[M(D) ∈ S] <= P[M(D') ∈ S] + δ``, with equality at S = {canary i reads ±1}: exactly (0, δ), ε = 0 at δ.
    ``privacy_claim`` is None: ``dp_accounting`` has no event for an (ε, δ) guarantee.

    What the product model's (ε, δ) "four atoms" assume and this mechanism breaks: the revealed canaries are
    ~ Bin(m, δ), independent, so ``block`` revealed at once is a rare event there; here it happens with probability
    π.  At m = 10⁶, δ = 1e-5, block = 20 (π = 0.5), twenty correct two-sided guesses have the four-atom p-value
    0.013 at ε = 0, so the order-statistics audit reports ε > 0 = the truth with probability 0.5 at confidence
    0.95 and 0.7.  (m = 10⁵ with blocks of 10, π = 0.1, is the issue's figure: ε >= 0.90 with probability 0.10.)
    Steinke's test pays 2mδ for the δ, the price of not assuming independence, and reports 0.
    """

    name: ClassVar[str] = "block-reveal"
    input_kind: ClassVar[str] = "canary-bits"
    release_kind: ClassVar[str] = "per-canary-values"
    canary_dependence: ClassVar[str | None] = (
        "its canaries' bits are revealed a whole block at a time (all of a block, or none)"
    )

    delta: float = 1e-5
    block: int = 20

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "delta", check_real("delta", self.delta, low=0.0, high=1.0, low_open=True, high_open=True)
        )
        object.__setattr__(self, "block", check_int("block", self.block, low=1))

    def reveal_probability(self, m: int) -> float:
        """π = m·δ/block, the probability that some block is revealed among m canaries."""
        if m % self.block or m * self.delta > self.block:
            raise ValueError(
                f"m must be a multiple of block = {self.block} with m·delta/block <= 1 "
                f"(delta = {self.delta:g}), got {m!r}."
            )
        return m * self.delta / self.block

    def release(self, data: Any, *, rng: np.random.Generator) -> Scores:
        bits = np.asarray(data, dtype=bool)
        m = bits.shape[0]
        reveal = self.reveal_probability(m)
        values = np.asarray(rng.uniform(-0.5, 0.5, size=m), dtype=np.float64)
        if rng.random() < reveal:
            start = self.block * int(rng.integers(m // self.block))
            values[start : start + self.block] = np.where(bits[start : start + self.block], 1.0, -1.0)
        return values

    def privacy_claim(self) -> None:
        return None


def default_scenarios() -> list[Scenario]:
    """The scenarios of ``privgame validate``.

    Product models (each canary its own channel): randomized response at ε = 1, the Gaussian mechanism with μ = 2,
    the null game (ε = μ = 0), and white-box DP-SGD's canary scores (σ = 0.8, q = 0.5, T = 4), whose curve is the
    PLD family's member at ν = 1/σ.  Dependent canaries, where the order-statistics audit is forced to show that it
    must be refused: :class:`SharedMagnitudeGaussian` (exactly 1-GDP per canary, m = 1000, δ = 1e-5; forced
    two-sided with the Gaussian family, every strategy) and :class:`BlockReveal` ((0, 1e-5)-DP per canary,
    m = 10⁶ in blocks of 20; forced two-sided with the pure family at the explicit threshold, the only strategy
    played there: 100 quantile candidates cannot single out 20 canaries of a million, and every estimator reports
    0 with them).
    """
    dpsgd = SubsampledGaussianScores(0.8, 0.5, 4)
    shared = SharedMagnitudeGaussian(mu=1.0)
    return [
        Scenario("randomized-response eps=1", RandomizedResponse(epsilon=1.0), 1000, 0.0, 1.0, None, 0.5, (0.0, 1.0)),
        Scenario(
            "gaussian mu=2", GaussianMechanism(sigma=0.5), 1000, 1e-8, gaussian_epsilon(0.5, 1e-8), 2.0, 0.5, (0.0, 1.0)
        ),
        Scenario("null", NullScores(), 1000, 0.0, 0.0, 0.0, 0.0, (-1.0, 1.0)),
        Scenario(
            "dpsgd q=0.5 T=4 sigma=0.8",
            dpsgd,
            1000,
            1e-5,
            dpsgd.privacy_claim().epsilon(1e-5),
            None,
            1.0,
            (0.0, 2.0),
        ),
        Scenario(
            "DEPENDENT shared |Z|, 1-GDP per canary",
            shared,
            1000,
            1e-5,
            gaussian_epsilon(1.0, 1e-5),
            1.0,
            0.0,  # every value is ±A, A > 0: one-sided guesses are the positive half, two-sided every canary
            (-1e-9, 1e-9),
            forced=tuple((OS_GAUSSIAN_2, s) for s in ("explicit", "bonferroni", "split")),
        ),
        Scenario(
            "DEPENDENT block reveal, (0, 1e-5)-DP per canary",
            BlockReveal(delta=1e-5, block=20),
            1_000_000,
            1e-5,
            0.0,
            None,
            0.75,
            (-0.75, 0.75),
            strategies=("explicit",),
            forced=((OS_PURE_2, "explicit"),),
        ),
    ]


def estimate_scenarios() -> list[Scenario]:
    """The scenarios on which ``include_estimates`` plays the parametric estimates (m = 1000, δ > 0: at δ = 0 two
    different Gaussians have ε = inf).

    The Gaussian mechanism with μ = 2 at δ = 1e-8 and DP-SGD's canary scores at δ = 1e-5 are those of
    :func:`default_scenarios` (same names, so the same scores for a seed); randomized response at ε = 1, the Laplace
    mechanism at ε = 1 (:class:`LaplaceScores`) and the null game are played at δ = 1e-5, with their exact ε there:
    ``log((p − δ)/(1 − p))`` for randomized response (p = e/(1 + e); the event "reported the truth" carries the whole
    divergence), ``1 + 2 log(1 − δ)`` for Laplace, 0 for the null game.
    """
    base = {s.name: s for s in default_scenarios()}
    p = math.e / (1.0 + math.e)
    laplace = LaplaceScores(epsilon=1.0)
    return [
        base["gaussian mu=2"],
        replace(
            base["randomized-response eps=1"],
            name="randomized-response eps=1, delta=1e-5",
            delta=1e-5,
            epsilon=math.log((p - 1e-5) / (1.0 - p)),
        ),
        Scenario("laplace eps=1, delta=1e-5", laplace, 1000, 1e-5, laplace.epsilon_at(1e-5), None, 0.5, (0.0, 1.0)),
        base["dpsgd q=0.5 T=4 sigma=0.8"],
        replace(base["null"], name="null, delta=1e-5", delta=1e-5),
    ]


@dataclass(frozen=True, slots=True)
class EstimatorSpec:
    """How the harness calls an estimator and what it compares with.

    ``run(in_scores, out_scores, confidence, delta, strategy, two_sided_pair)`` returns the bounded quantity;
    ``parameter`` says whether it bounds ε or μ; ``strategies`` lists the strategies it is validated under.
    """

    run: Callable[[Scores, Scores, float, float, ThresholdStrategy], float]
    parameter: str = "epsilon"
    strategies: tuple[str, ...] = ("explicit", "bonferroni", "split")
    two_sided: bool = False
    # for an estimator whose family is built from the scenario's claim: whether the audit's bound exceeds the truth,
    # ``violates(in, out, confidence, strategy, claim, delta)`` (None where the family does not apply)
    violates: Callable[[Scores, Scores, float, ThresholdStrategy, PrivacyClaim, float], bool | None] | None = None
    # valid only when every canary is its own independent channel: skipped on a mechanism whose canary_dependence is
    # not None, except where the scenario forces it (Scenario.forced)
    product_model: bool = False
    # whether the audit's bound exceeds ``truth``, decided without the audit's search where that is exact:
    # ``exceeds(in, out, confidence, strategy, truth)``; None (a strategy it does not cover) plays ``run``
    exceeds: Callable[[Scores, Scores, float, ThresholdStrategy, float], bool | None] | None = None


def _one_run(two_sided: bool) -> Callable[[Scores, Scores, float, float, ThresholdStrategy], float]:
    def run(a: Scores, b: Scores, confidence: float, delta: float, strategy: ThresholdStrategy) -> float:
        result = one_run.audit_scores(a, b, confidence=confidence, delta=delta, threshold=strategy, two_sided=two_sided)
        return result.epsilon

    return run


def _multi_run(a: Scores, b: Scores, confidence: float, delta: float, strategy: ThresholdStrategy) -> float:
    return multi_run.audit_scores(a, b, confidence=confidence, delta=delta, threshold=strategy).epsilon


def _multi_run_gdp(a: Scores, b: Scores, confidence: float, delta: float, strategy: ThresholdStrategy) -> float:
    result = multi_run.gdp_audit_scores(a, b, confidence=confidence, delta=max(delta, 1e-5), threshold=strategy)
    return float(result.details["mu"])


def _fdp(family: str, two_sided: bool = False) -> Callable[[Scores, Scores, float, float, ThresholdStrategy], float]:
    def run(a: Scores, b: Scores, confidence: float, delta: float, strategy: ThresholdStrategy) -> float:
        if family == "gaussian":  # the μ bound does not depend on δ; the GDP-derived ε needs δ > 0
            result = fdp.audit_scores(
                a, b, family="gaussian", confidence=confidence, delta=max(delta, 1e-5), threshold=strategy
            )
            return float(result.details["parameter"])
        return fdp.audit_scores(
            a, b, family=family, confidence=confidence, delta=delta, threshold=strategy, two_sided=two_sided
        ).epsilon

    return run


def _order_stats(
    family: str, two_sided: bool = False
) -> Callable[[Scores, Scores, float, float, ThresholdStrategy], float]:
    def run(a: Scores, b: Scores, confidence: float, delta: float, strategy: ThresholdStrategy) -> float:
        if family == "gaussian":  # as _fdp: the μ bound does not depend on δ
            result = order_stats.audit_scores(
                a,
                b,
                family="gaussian",
                confidence=confidence,
                delta=max(delta, 1e-5),
                threshold=strategy,
                two_sided=two_sided,
            )
            return float(result.details["parameter"])
        return order_stats.audit_scores(
            a, b, family=family, confidence=confidence, delta=delta, threshold=strategy, two_sided=two_sided
        ).epsilon

    return run


def _tests(
    a: Scores, b: Scores, confidence: float, strategy: ThresholdStrategy, two_sided: bool = False
) -> tuple[int, NDArray[np.int64], NDArray[np.int64], float] | None:
    """The tests an audit makes under an explicit or Bonferroni ``strategy``: m, the (r, v) of each candidate (one
    threshold, or a ``(t_low, t_high)`` pair when two-sided), and the per-test β; None for a split, whose tests
    depend on the audit's own search."""
    pooled = np.concatenate([a, b])
    candidates: Any
    if isinstance(strategy, Explicit):
        candidates, beta = [strategy.threshold], 1.0 - confidence
    elif isinstance(strategy, Bonferroni):
        levels = None if strategy.candidates == "all" else _levels(strategy.candidates)
        candidates = (symmetric_quantile_pairs if two_sided else quantile_thresholds)(pooled, levels)
        beta = (1.0 - confidence) / len(candidates)
    else:
        return None
    r, v = guess_counts(two_sided)(ascending(a), ascending(b), candidates)
    return pooled.size, np.asarray(r, dtype=np.int64), np.asarray(v, dtype=np.int64), beta


def _pld_tests(
    a: Scores, b: Scores, confidence: float, strategy: ThresholdStrategy
) -> tuple[int, NDArray[np.int64], NDArray[np.int64], float]:
    """The one-sided tests an audit with a PLD family makes (explicit or Bonferroni thresholds only)."""
    tests = _tests(a, b, confidence, strategy)
    if tests is None:
        raise ValueError(f"the PLD family's violation check takes explicit or bonferroni, got {strategy!r}.")
    return tests


def _pld_violates(
    a: Scores, b: Scores, confidence: float, strategy: ThresholdStrategy, claim: PrivacyClaim, delta: float
) -> bool | None:
    """Whether the f-DP audit with DP-SGD's own PLD family bounds above the truth ν = 1/σ: exactly when a test it
    makes (the explicit threshold, or any Bonferroni candidate at its share of β) rejects the true curve, since the
    rejected parameters are an interval from 0.  One rejection test per candidate instead of a PLD search."""
    found = dpsgd_parameters(claim.event)
    if found is None:
        return None
    truth = family_for_claim("pld", claim, delta).curve(1.0 / found[0])
    m, r, v, beta = _pld_tests(a, b, confidence, strategy)
    return any(ri > 0 and fdp.reject(truth, m, int(ri), int(vi), beta) for ri, vi in zip(r, v, strict=True))


@functools.lru_cache(maxsize=4096)
def _order_stats_true_p(sigma: float, q: float, steps: int, delta: float, m: int, r: int, k: int) -> float:
    """The order-statistics p-value of k mistakes in r of m under DP-SGD's own curve at ν = 1/σ (the truth).

    Cached: both confidences ask the same (r, k) of each candidate."""
    return order_stats.p_value(dpsgd_family(q, steps, delta=delta).curve(1.0 / sigma), m, r, r - k)


def _order_stats_pld_violates(
    a: Scores, b: Scores, confidence: float, strategy: ThresholdStrategy, claim: PrivacyClaim, delta: float
) -> bool | None:
    """As :func:`_pld_violates`, for the order-statistics audit with DP-SGD's own PLD family: whether a test it makes
    rejects the true curve (``order_stats.reject``'s p-value at the candidate's share of β)."""
    found = dpsgd_parameters(claim.event)
    if found is None:
        return None
    sigma, q, steps = found
    m, r, v, beta = _pld_tests(a, b, confidence, strategy)
    return any(
        ri > 0 and _order_stats_true_p(sigma, q, steps, delta, m, int(ri), int(ri - vi)) <= beta
        for ri, vi in zip(r, v, strict=True)
    )


@functools.lru_cache(maxsize=1 << 16)
def _order_stats_gaussian_p(mu: float, m: int, r: int, k: int) -> float:
    """The order-statistics p-value of k mistakes in r of m under the μ-GDP curve.

    Cached: both confidences, and the one- and two-sided audits, ask many of the same (r, k)."""
    return order_stats.p_value(GaussianCurve(mu), m, r, r - k)


def _order_stats_gaussian_exceeds(
    two_sided: bool,
) -> Callable[[Scores, Scores, float, ThresholdStrategy, float], bool | None]:
    """Whether the order-statistics audit with the Gaussian family bounds μ above ``truth``: exactly when a test it
    makes (the explicit threshold, or any Bonferroni candidate at its share of β) rejects the μ = truth curve, since
    the rejected μ are an interval from 0 and the audit reports the largest of them over its tests.  One p-value per
    candidate, shared across confidences, instead of a search per candidate per confidence; None for a split, whose
    choice needs the search (the audit itself is played).  ``test_the_fast_checks_are_the_full_audits`` compares it
    with the audit."""

    def exceeds(a: Scores, b: Scores, confidence: float, strategy: ThresholdStrategy, truth: float) -> bool | None:
        tests = _tests(a, b, confidence, strategy, two_sided)
        if tests is None:
            return None
        m, r, v, beta = tests
        return any(
            ri > 0 and _order_stats_gaussian_p(truth, m, int(ri), int(ri - vi)) <= beta
            for ri, vi in zip(r, v, strict=True)
        )

    return exceeds


OS_PURE, OS_PURE_2 = "order-stats, pure", "order-stats two-sided, pure"
OS_GAUSSIAN, OS_GAUSSIAN_2 = "order-stats, Gaussian (mu)", "order-stats two-sided, Gaussian (mu)"
#: The label suffix of an estimator's rows on a scenario that forces it (Scenario.forced).
FORCED = "(FORCED on dependent canaries)"

ESTIMATORS: dict[str, EstimatorSpec] = {
    "one-run": EstimatorSpec(_one_run(False)),
    "one-run two-sided": EstimatorSpec(_one_run(True), two_sided=True),
    # the multi-run bounds read the m canaries' scores as m independent runs: valid on one run's canaries only in
    # the product model (the Gaussian one reports μ > 1 on SharedMagnitudeGaussian, as the order-statistics audit)
    "multi-run CP": EstimatorSpec(_multi_run, product_model=True),
    "multi-run GDP (mu)": EstimatorSpec(_multi_run_gdp, parameter="mu", product_model=True),
    "f-DP one-run, pure": EstimatorSpec(_fdp("pure")),
    "f-DP one-run, Gaussian (mu)": EstimatorSpec(_fdp("gaussian"), parameter="mu"),
    "f-DP one-run, PLD (own q, T)": EstimatorSpec(
        _fdp("pure"), strategies=("explicit", "bonferroni"), violates=_pld_violates
    ),
    OS_PURE: EstimatorSpec(_order_stats("pure"), product_model=True),
    OS_PURE_2: EstimatorSpec(_order_stats("pure", True), two_sided=True, product_model=True),
    OS_GAUSSIAN: EstimatorSpec(
        _order_stats("gaussian"), parameter="mu", product_model=True, exceeds=_order_stats_gaussian_exceeds(False)
    ),
    OS_GAUSSIAN_2: EstimatorSpec(
        _order_stats("gaussian", True),
        parameter="mu",
        two_sided=True,
        product_model=True,
        exceeds=_order_stats_gaussian_exceeds(True),
    ),
    "order-stats, PLD (own q, T)": EstimatorSpec(
        _order_stats("pure"),
        strategies=("explicit", "bonferroni"),
        violates=_order_stats_pld_violates,
        product_model=True,
    ),
}


def _point_estimate(a: Scores, b: Scores, confidence: float, delta: float, strategy: ThresholdStrategy) -> float:
    """INVALID on purpose: ln(TPR / FPR) at the explicit threshold, no confidence interval."""
    t = strategy.threshold if isinstance(strategy, Explicit) else 0.5
    tp, fp = np.count_nonzero(a >= t), np.count_nonzero(b >= t)
    tpr, fpr = tp / max(a.size, 1), fp / max(b.size, 1)
    return math.inf if fpr == 0 and tpr > 0 else (math.log(tpr / fpr) if tpr > 0 else 0.0)


def _best_uncorrected(a: Scores, b: Scores, confidence: float, delta: float, strategy: ThresholdStrategy) -> float:
    """INVALID on purpose: the best of Bonferroni's quantile thresholds (100), each tested at the full β — its
    candidates without its correction, so it is played where the Bonferroni strategy is."""
    if not isinstance(strategy, Bonferroni) or strategy.candidates == "all":
        raise ValueError(f"the uncorrected best threshold takes Bonferroni's quantile candidates, got {strategy!r}.")
    cands = quantile_thresholds(np.concatenate([a, b]), _levels(strategy.candidates))
    r, v = counts_one_sided(np.sort(a), np.sort(b), cands)
    return float(np.max(one_run.best_of_bounds(a.size + b.size, r, v, delta=delta, beta=1 - confidence)))


def _over_optimistic(a: Scores, b: Scores, confidence: float, delta: float, strategy: ThresholdStrategy) -> float:
    """INVALID on purpose, and only slightly: Steinke et al.'s one-run bound at confidence c − 0.1 reported as the
    bound at c (0.85 as 0.95, 0.6 as 0.7): a sound estimator with its confidence overstated, which the harness must
    still catch."""
    return _ONE_RUN(a, b, confidence - 0.1, delta, strategy)


_ONE_RUN = _one_run(False)
OVER_OPTIMISTIC = "INVALID over-optimistic one-run (c - 0.1 reported as c)"

INVALID_ESTIMATORS: dict[str, EstimatorSpec] = {
    OVER_OPTIMISTIC: EstimatorSpec(_over_optimistic),
    "INVALID point estimate": EstimatorSpec(_point_estimate, strategies=("explicit",)),
    "INVALID best threshold, no correction": EstimatorSpec(_best_uncorrected, strategies=("bonferroni",)),
}


@dataclass(frozen=True, slots=True)
class EstimateSpec:
    """A parametric estimate in the harness: it promises nothing, so its rows are not gated; they report how often
    it exceeds the true ε.

    ``run(in_scores, out_scores, confidence, delta)`` returns the estimate of ε at δ; ``uses_confidence`` is False
    for an estimate that does not depend on the confidence (one row, confidence NaN).
    """

    run: Callable[[Scores, Scores, float, float], float]
    uses_confidence: bool = True


def _gauss_fit(a: Scores, b: Scores, confidence: float, delta: float) -> float:
    return gaussian_fit(a, b, delta=delta, confidence=confidence).epsilon_estimate


def _gauss_fit_plug_in(a: Scores, b: Scores, confidence: float, delta: float) -> float:
    return gaussian_fit(a, b, delta=delta).epsilon_point


GAUSS_FIT, GAUSS_FIT_PLUG_IN = "ESTIMATE Gaussian fit (parameter intervals)", "ESTIMATE Gaussian fit, plug-in"

ESTIMATES: dict[str, EstimateSpec] = {
    GAUSS_FIT: EstimateSpec(_gauss_fit),
    GAUSS_FIT_PLUG_IN: EstimateSpec(_gauss_fit_plug_in, uses_confidence=False),
}


def _estimate_rows(
    seed: np.random.SeedSequence,
    scenarios: Sequence[Scenario],
    estimates: dict[str, EstimateSpec],
    confidences: Sequence[float],
) -> list[tuple[Any, ...]]:
    """The estimates' rows of one repetition: each scenario played from the seed's first child, as
    :func:`_repetition` plays it (a fresh copy of the seed: the same scores for the same scenario)."""
    game_seed = np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key, pool_size=seed.pool_size).spawn(3)[0]
    rows: list[tuple[Any, ...]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for scenario in scenarios:
            if not scenario.delta > 0.0:
                continue
            game = OneRunGame(m=scenario.m, k_pos=1, k_neg=0)
            outcome = game.play(scenario.mechanism, Identity(), seed=game_seed)
            ins, outs = outcome.scores[outcome.membership], outcome.scores[~outcome.membership]
            for name, spec in estimates.items():
                for confidence in confidences if spec.uses_confidence else (math.nan,):
                    value = spec.run(ins, outs, confidence, scenario.delta)
                    rows.append((scenario.name, name, "none", confidence, "estimate", value > scenario.epsilon + 1e-9))
    return rows


def register_estimator(name: str, spec: EstimatorSpec) -> None:
    """Add an estimator to the harness (estimators of later modules register here)."""
    if name in ESTIMATORS:
        raise ValueError(f"estimator {name!r} is already in the validity harness.")
    ESTIMATORS[name] = spec


def _strategy(name: str, scenario: Scenario, two_sided: bool, split_seed: int) -> ThresholdStrategy:
    if name == "explicit":
        return Explicit(scenario.explicit_pair if two_sided else scenario.explicit)
    if name == "bonferroni":
        return Bonferroni(100)
    if name == "split":
        return Split(0.5, seed=split_seed)
    raise ValueError(f"strategy must be one of explicit, bonferroni, split, got {name!r}.")


def _panoramia_rows(seed: np.random.SeedSequence, confidences: Sequence[float]) -> list[tuple[Any, ...]]:
    from privgame.analysis import panoramia

    c, eps, n = 1.0, 1.0, 2000
    rng = np.random.default_rng(seed)
    member = rng.random(n) < 0.5

    def rr(level: float) -> Scores:
        truthful = rng.random(n) < 1.0 / (1.0 + math.exp(-level))
        return np.where(truthful, member, ~member).astype(np.float64)

    baseline, mia = rr(c), rr(c + eps)
    rows = []
    name = "panoramia c=1, eps=1"
    for strategy_name, strategy in (("explicit", Explicit(0.5)), ("bonferroni", Bonferroni(100))):
        for confidence in confidences:
            result = panoramia.measure(baseline, mia, member, confidence=confidence, thresholds=strategy)
            rows.append((name, "PANORAMIA c_lb", strategy_name, confidence, "sound", result.c_lb > c + 1e-9))
            rows.append(
                (
                    name,
                    "PANORAMIA {c+eps}_lb",
                    strategy_name,
                    confidence,
                    "sound",
                    result.c_plus_eps_lb > c + eps + 1e-9,
                )
            )
    return rows


def _plan(scenario: Scenario, name: str, spec: EstimatorSpec) -> tuple[str, str, tuple[str, ...]]:
    """The rows' label, what they are expected to show, and the strategies, of one estimator on one scenario."""
    played = tuple(s for s in spec.strategies if s in scenario.strategies)
    if spec.product_model and scenario.mechanism.canary_dependence is not None:
        forced = tuple(s for n, s in scenario.forced if n == name and s in played)
        return f"{name} {FORCED}", "violates", forced
    return name, "sound", played


def _repetition(
    seed: np.random.SeedSequence,
    scenarios: Sequence[Scenario],
    estimators: dict[str, EstimatorSpec],
    confidences: Sequence[float],
    panoramia: bool = True,
) -> list[tuple[Any, ...]]:
    game_seed, panoramia_seed, split_seed = seed.spawn(3)
    split = int(split_seed.generate_state(1)[0])
    rows: list[tuple[Any, ...]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for scenario in scenarios:
            game = OneRunGame(m=scenario.m, k_pos=1, k_neg=0)
            outcome = game.play(scenario.mechanism, Identity(), seed=game_seed)
            ins, outs = outcome.scores[outcome.membership], outcome.scores[~outcome.membership]
            # explicit and Bonferroni thresholds see the scores as sets: sorted once here, the audits do not sort
            # them again (a million canaries); a split draws its halves by position, so it gets them as played
            ordered = (np.sort(ins), np.sort(outs))
            for name, spec in estimators.items():
                label, expected, strategies = _plan(scenario, name, spec)
                if spec.violates is not None:
                    claim = scenario.mechanism.privacy_claim()
                    if claim is None:
                        continue
                    for strategy_name in strategies:
                        strategy = _strategy(strategy_name, scenario, spec.two_sided, split)
                        a, b = (ins, outs) if strategy_name == "split" else ordered
                        for confidence in confidences:
                            hit = spec.violates(a, b, confidence, strategy, claim, scenario.delta)
                            if hit is not None:
                                rows.append((scenario.name, label, strategy_name, confidence, expected, hit))
                    continue
                truth = scenario.mu if spec.parameter == "mu" else scenario.epsilon
                if truth is None:
                    continue
                for strategy_name in strategies:
                    strategy = _strategy(strategy_name, scenario, spec.two_sided, split)
                    for confidence in confidences:
                        a, b = (ins, outs) if strategy_name == "split" else ordered
                        hit = None if spec.exceeds is None else spec.exceeds(a, b, confidence, strategy, truth)
                        if hit is None:
                            hit = spec.run(a, b, confidence, scenario.delta, strategy) > truth + 1e-9
                        rows.append((scenario.name, label, strategy_name, confidence, expected, hit))
        if panoramia:
            rows += _panoramia_rows(panoramia_seed, confidences)
    return rows


def _job(
    seed: np.random.SeedSequence,
    scenarios: Sequence[Scenario],
    estimators: dict[str, EstimatorSpec],
    confidences: Sequence[float],
    panoramia: bool,
    estimated: Sequence[Scenario],
    estimates: dict[str, EstimateSpec],
) -> list[tuple[Any, ...]]:
    rows = _repetition(seed, scenarios, estimators, confidences, panoramia)
    return rows + (_estimate_rows(seed, estimated, estimates, confidences) if estimates else [])


def validate(
    *,
    repetitions: int = 500,
    confidences: Iterable[float] = (0.95, 0.7),
    seed: int = 0,
    scenarios: Sequence[Scenario] | None = None,
    estimators: Iterable[str] | None = None,
    include_invalid: bool = False,
    include_estimates: bool = False,
    panoramia: bool = True,
    n_jobs: int = 1,
    progress: bool = False,
) -> pd.DataFrame:
    """Run the harness and return one row per (scenario, estimator, strategy, confidence).

    Parameters
    ----------
    repetitions : int, default=500
        R, the seeded audits per combination.
    confidences : iterable of float, default=(0.95, 0.7)
    seed : int, default=0
    scenarios : sequence of Scenario, default=default_scenarios()
    estimators : iterable of str, default=all valid ones
    include_invalid : bool, default=False
        Also run the deliberately invalid estimators (they must fail).
    include_estimates : bool, default=False
        Also play the parametric estimates (:data:`ESTIMATES`, not gated) on :func:`estimate_scenarios`, or on
        ``scenarios`` (those at δ > 0) when given.
    panoramia : bool, default=True
        Also check PANORAMIA's two bounds (their own scenario).  Every row depends only on the seed, its scenario
        and its estimator, so the harness can be run in parts (scenarios, estimators, PANORAMIA) that together give
        the whole table's rows.
    n_jobs : int, default=1
    progress : bool, default=False

    Returns
    -------
    DataFrame
        Columns ``scenario, estimator, strategy, confidence, R, violations, rate, rate_low, rate_high, promised,
        p_value, expected, ok``: ``violations`` the audits whose bound exceeded the truth, ``rate_low``/``rate_high``
        the 95 % Clopper–Pearson interval of the violation rate, ``promised`` the allowed rate (1 − confidence; half
        of it for each PANORAMIA bound), ``p_value`` that of ``binomtest(V, R, promised, "greater")``.
        ``expected`` is ``"sound"`` for an estimator played where its assumptions hold — ``ok`` then means it keeps
        its promise, ``p_value > 1e-3`` — and ``"violates"`` for a product-model estimator forced on a scenario with
        dependent canaries (its ``estimator`` ends with :data:`FORCED`): ``ok`` then means the violation is
        detected, ``p_value <= 1e-3``, the very test the sound rows pass, i.e. refusing the estimator there is
        needed.  A product-model estimator is not played at all on a dependent scenario that does not force it.
        ``expected = "estimate"`` marks a parametric estimate's rows (strategy ``"none"``; confidence NaN for the
        plug-in, which has none): ``violations`` counts the audits whose estimate exceeds the true ε, ``promised``
        and ``p_value`` are NaN and ``ok`` is True, since an estimate has no promise to keep.

    Notes
    -----
    The ``INVALID`` estimators (``include_invalid``) are expected to fail yet keep ``expected = "sound"``: their
    ``ok`` is False where the harness catches them.
    """
    confs = tuple(float(c) for c in confidences)
    chosen = dict(ESTIMATORS)
    if estimators is not None:
        names = list(estimators)
        unknown = [n for n in names if n not in ESTIMATORS]
        if unknown:
            raise ValueError(f"estimators must be among {', '.join(ESTIMATORS)}, got {unknown!r}.")
        chosen = {n: ESTIMATORS[n] for n in names}
    if include_invalid:
        chosen.update(INVALID_ESTIMATORS)
    scen = list(default_scenarios() if scenarios is None else scenarios)
    estimated = (estimate_scenarios() if scenarios is None else scen) if include_estimates else []
    estimates = dict(ESTIMATES) if include_estimates else {}
    seeds = np.random.SeedSequence(seed).spawn(repetitions)
    jobs = (joblib.delayed(_job)(s, scen, chosen, confs, panoramia, estimated, estimates) for s in seeds)
    rows: list[tuple[Any, ...]] = []
    bar = tqdm(total=repetitions, desc="validate", unit="rep", disable=not progress)
    with bar:
        for part in joblib.Parallel(n_jobs=n_jobs, return_as="generator_unordered")(jobs):
            rows.extend(part)
            bar.update(1)
    raw = pd.DataFrame(rows, columns=["scenario", "estimator", "strategy", "confidence", "expected", "violated"])
    keys = ["scenario", "estimator", "strategy", "confidence", "expected"]
    table = (
        raw.groupby(keys, sort=False, dropna=False)["violated"]  # a plug-in estimate's confidence is NaN
        .agg(R="size", violations="sum")
        .reset_index()
    )
    table["violations"] = table["violations"].astype(int)
    table["rate"] = table["violations"] / table["R"]
    halved = table["estimator"].str.startswith("PANORAMIA")
    estimate = table["expected"] == "estimate"
    table["promised"] = np.where(halved, (1 - table["confidence"]) / 2, 1 - table["confidence"])
    table.loc[estimate, "promised"] = math.nan
    cis = [
        stats.binomtest(int(v), int(n)).proportion_ci(0.95)
        for v, n in zip(table["violations"], table["R"], strict=True)
    ]
    table["rate_low"] = [ci.low for ci in cis]
    table["rate_high"] = [ci.high for ci in cis]
    table["p_value"] = [
        stats.binomtest(int(v), int(n), float(p), alternative="greater").pvalue if math.isfinite(p) else math.nan
        for v, n, p in zip(table["violations"], table["R"], table["promised"], strict=True)
    ]
    kept = table["p_value"] > 1e-3
    table["ok"] = np.where(table["expected"] == "violates", ~kept, kept) | estimate
    order = ["scenario", "estimator", "strategy", "confidence", "R", "violations", "rate", "rate_low", "rate_high"]
    return table[[*order, "promised", "p_value", "expected", "ok"]]
