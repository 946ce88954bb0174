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
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import dp_accounting
import joblib
import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import stats
from tqdm.auto import tqdm

from analysis import fdp, multi_run, one_run
from analysis._counting import counts_one_sided
from analysis.accounting import NeighbouringRelation, PrivacyClaim, dpsgd_claim, gaussian_epsilon
from analysis.families import dpsgd_parameters, family_for_claim
from analysis.thresholds import Bonferroni, Explicit, Split, ThresholdStrategy, _levels, quantile_thresholds
from attacks import Identity
from games.one_run import OneRunGame
from mechanisms import GaussianMechanism, Mechanism, RandomizedResponse

__all__ = [
    "ESTIMATORS",
    "INVALID_ESTIMATORS",
    "EstimatorSpec",
    "NullScores",
    "Scenario",
    "SubsampledGaussianScores",
    "default_scenarios",
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
    """

    name: str
    mechanism: Mechanism
    m: int
    delta: float
    epsilon: float
    mu: float | None
    explicit: float
    explicit_pair: tuple[float, float]


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


def default_scenarios() -> list[Scenario]:
    """Randomized response at ε = 1, the Gaussian mechanism with μ = 2, the null game (ε = μ = 0), and white-box
    DP-SGD's canary scores (σ = 0.8, q = 0.5, T = 4), whose curve is the PLD family's member at ν = 1/σ."""
    dpsgd = SubsampledGaussianScores(0.8, 0.5, 4)
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


def _pld_violates(
    a: Scores, b: Scores, confidence: float, strategy: ThresholdStrategy, claim: PrivacyClaim, delta: float
) -> bool | None:
    """Whether the f-DP audit with DP-SGD's own PLD family bounds above the truth ν = 1/σ: exactly when a test it
    makes (the explicit threshold, or any Bonferroni candidate at its share of β) rejects the true curve, since the
    rejected parameters are an interval from 0.  One rejection test per candidate instead of a PLD search."""
    found = dpsgd_parameters(claim.event)
    if found is None:
        return None
    sigma = found[0]
    truth = family_for_claim("pld", claim, delta).curve(1.0 / sigma)
    pooled = np.concatenate([a, b])
    if isinstance(strategy, Explicit):
        candidates, beta = [strategy.threshold], 1.0 - confidence
    elif isinstance(strategy, Bonferroni):
        candidates = quantile_thresholds(pooled, None if strategy.candidates == "all" else _levels(strategy.candidates))
        beta = (1.0 - confidence) / len(candidates)
    else:
        raise ValueError(f"the PLD family's violation check takes explicit or bonferroni, got {strategy!r}.")
    r, v = counts_one_sided(np.sort(a), np.sort(b), candidates)
    return any(ri > 0 and fdp.reject(truth, pooled.size, int(ri), int(vi), beta) for ri, vi in zip(r, v, strict=True))


ESTIMATORS: dict[str, EstimatorSpec] = {
    "one-run": EstimatorSpec(_one_run(False)),
    "one-run two-sided": EstimatorSpec(_one_run(True), two_sided=True),
    "multi-run CP": EstimatorSpec(_multi_run),
    "multi-run GDP (mu)": EstimatorSpec(_multi_run_gdp, parameter="mu"),
    "f-DP one-run, pure": EstimatorSpec(_fdp("pure")),
    "f-DP one-run, Gaussian (mu)": EstimatorSpec(_fdp("gaussian"), parameter="mu"),
    "f-DP one-run, PLD (own q, T)": EstimatorSpec(
        _fdp("pure"), strategies=("explicit", "bonferroni"), violates=_pld_violates
    ),
}


def _point_estimate(a: Scores, b: Scores, confidence: float, delta: float, strategy: ThresholdStrategy) -> float:
    """INVALID on purpose: ln(TPR / FPR) at the explicit threshold, no confidence interval."""
    t = strategy.threshold if isinstance(strategy, Explicit) else 0.5
    tp, fp = np.count_nonzero(a >= t), np.count_nonzero(b >= t)
    tpr, fpr = tp / max(a.size, 1), fp / max(b.size, 1)
    return math.inf if fpr == 0 and tpr > 0 else (math.log(tpr / fpr) if tpr > 0 else 0.0)


def _best_uncorrected(a: Scores, b: Scores, confidence: float, delta: float, strategy: ThresholdStrategy) -> float:
    """INVALID on purpose: the best of 100 quantile thresholds, each tested at the full β."""
    cands = quantile_thresholds(np.concatenate([a, b]), np.arange(1, 101) / 101)
    r, v = counts_one_sided(np.sort(a), np.sort(b), cands)
    return float(np.max(one_run.best_of_bounds(a.size + b.size, r, v, delta=delta, beta=1 - confidence)))


INVALID_ESTIMATORS: dict[str, EstimatorSpec] = {
    "INVALID point estimate": EstimatorSpec(_point_estimate, strategies=("explicit",)),
    "INVALID best threshold, no correction": EstimatorSpec(_best_uncorrected, strategies=("explicit",)),
}


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
    from analysis import panoramia

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
            rows.append((name, "PANORAMIA c_lb", strategy_name, confidence, result.c_lb > c + 1e-9))
            rows.append(
                (name, "PANORAMIA {c+eps}_lb", strategy_name, confidence, result.c_plus_eps_lb > c + eps + 1e-9)
            )
    return rows


def _repetition(
    seed: np.random.SeedSequence,
    scenarios: Sequence[Scenario],
    estimators: dict[str, EstimatorSpec],
    confidences: Sequence[float],
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
            for name, spec in estimators.items():
                if spec.violates is not None:
                    claim = scenario.mechanism.privacy_claim()
                    if claim is None:
                        continue
                    for strategy_name in spec.strategies:
                        strategy = _strategy(strategy_name, scenario, spec.two_sided, split)
                        for confidence in confidences:
                            hit = spec.violates(ins, outs, confidence, strategy, claim, scenario.delta)
                            if hit is not None:
                                rows.append((scenario.name, name, strategy_name, confidence, hit))
                    continue
                truth = scenario.mu if spec.parameter == "mu" else scenario.epsilon
                if truth is None:
                    continue
                for strategy_name in spec.strategies:
                    strategy = _strategy(strategy_name, scenario, spec.two_sided, split)
                    for confidence in confidences:
                        value = spec.run(ins, outs, confidence, scenario.delta, strategy)
                        rows.append((scenario.name, name, strategy_name, confidence, value > truth + 1e-9))
        rows += _panoramia_rows(panoramia_seed, confidences)
    return rows


def validate(
    *,
    repetitions: int = 500,
    confidences: Iterable[float] = (0.95, 0.7),
    seed: int = 0,
    scenarios: Sequence[Scenario] | None = None,
    estimators: Iterable[str] | None = None,
    include_invalid: bool = False,
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
    n_jobs : int, default=1
    progress : bool, default=False

    Returns
    -------
    DataFrame
        Columns ``scenario, estimator, strategy, confidence, R, violations, rate, rate_low, rate_high, promised,
        p_value, ok``: ``rate_low``/``rate_high`` the 95 % Clopper–Pearson interval of the violation rate,
        ``promised`` the allowed rate (1 − confidence; half of it for each PANORAMIA bound), ``ok`` whether
        ``binomtest(V, R, promised, "greater").pvalue > 1e-3``.
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
    seeds = np.random.SeedSequence(seed).spawn(repetitions)
    jobs = (joblib.delayed(_repetition)(s, scen, chosen, confs) for s in seeds)
    rows: list[tuple[Any, ...]] = []
    bar = tqdm(total=repetitions, desc="validate", unit="rep", disable=not progress)
    with bar:
        for part in joblib.Parallel(n_jobs=n_jobs, return_as="generator_unordered")(jobs):
            rows.extend(part)
            bar.update(1)
    raw = pd.DataFrame(rows, columns=["scenario", "estimator", "strategy", "confidence", "violated"])
    table = (
        raw.groupby(["scenario", "estimator", "strategy", "confidence"], sort=False)["violated"]
        .agg(R="size", violations="sum")
        .reset_index()
    )
    table["violations"] = table["violations"].astype(int)
    table["rate"] = table["violations"] / table["R"]
    halved = table["estimator"].str.startswith("PANORAMIA")
    table["promised"] = np.where(halved, (1 - table["confidence"]) / 2, 1 - table["confidence"])
    cis = [
        stats.binomtest(int(v), int(n)).proportion_ci(0.95)
        for v, n in zip(table["violations"], table["R"], strict=True)
    ]
    table["rate_low"] = [ci.low for ci in cis]
    table["rate_high"] = [ci.high for ci in cis]
    table["p_value"] = [
        stats.binomtest(int(v), int(n), float(p), alternative="greater").pvalue
        for v, n, p in zip(table["violations"], table["R"], table["promised"], strict=True)
    ]
    table["ok"] = table["p_value"] > 1e-3
    order = ["scenario", "estimator", "strategy", "confidence", "R", "violations", "rate", "rate_low", "rate_high"]
    return table[[*order, "promised", "p_value", "ok"]]
