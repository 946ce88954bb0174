"""The validity harness of the sequential audit (:mod:`privgame.analysis.sequential`): its level under true claims,
monitored after every trial, and the trials it needs on mechanisms that violate their claim, against the fixed-sample
binomial test's (:mod:`privgame.analysis.verdict`).

Each scenario plays ``experiments`` independent sequential experiments of at most ``budget`` one-run audits each
(Steinke et al.'s bound of the top-k guesses, m canaries, at the confidence), read in order by the sequential test,
which stops at the first e-value ≥ 1/α.  Under a true claim the fraction of experiments that stop "refuted" is the
test's level under continuous monitoring, at most α by Ville's inequality; the table gives it with its
Clopper–Pearson interval and the p-value of ``binomtest(refuted, experiments, α, "greater")`` (≤ 1e-3 is a failure).
For contrast, the naive monitor (a fixed-sample binomial test read after every trial, stopped at its first
"refuted") is played on the same trials: its level is far above α, which shows that the harness can catch a test
that does not keep its level under optional stopping.

Scenarios:

- ``bernoulli``: no mechanism, the worst case of the null: each trial exceeds the claim with probability exactly α,
  independently (an exact estimator at the edge of its promise);
- ``rr-1``, ``rr-4``: randomized response at ε = 1 and ε = 4, claiming what it gives;
- ``rr-2-claims-1``, ``rr-1.5-claims-1``, ``rr-1.2-claims-1``: randomized response at ε = 2, 1.5 and 1.2 claiming
  ε = 1 (broken; the last only just, so that a trial's bound exceeds the claim in about a third of trials): the
  trials the sequential test needed to refute (median and mean over the experiments that refuted, and how many
  refuted within the budget), against the fixed-sample test, which reads all ``budget`` trials before its one
  verdict (and its power at that size).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from privgame.analysis._checks import check_int, check_real
from privgame.analysis.sequential import sequential_test
from privgame.analysis.verdict import allowed_exceedances
from privgame.attacks import Identity
from privgame.games._base import AnalysisSettings
from privgame.games.one_run import OneRunGame
from privgame.mechanisms import RandomizedResponse

__all__ = ["SequentialScenario", "default_sequential_scenarios", "validate_sequential"]


@dataclass(frozen=True, slots=True)
class SequentialScenario:
    """A sequential-audit scenario: randomized response at ``epsilon`` claiming ``claim`` (None: the Bernoulli
    worst case of the null, no mechanism)."""

    name: str
    epsilon: float | None
    claim: float

    @property
    def true_claim(self) -> bool:
        """Whether the claim holds (the level is checked) or not (the trials to refute are measured)."""
        return self.epsilon is None or self.epsilon <= self.claim


def default_sequential_scenarios() -> list[SequentialScenario]:
    """The scenarios of the module notes."""
    return [
        SequentialScenario("bernoulli", None, 1.0),
        SequentialScenario("rr-1", 1.0, 1.0),
        SequentialScenario("rr-4", 4.0, 4.0),
        SequentialScenario("rr-2-claims-1", 2.0, 1.0),
        SequentialScenario("rr-1.5-claims-1", 1.5, 1.0),
        SequentialScenario("rr-1.2-claims-1", 1.2, 1.0),
    ]


def _bounds(
    scenario: SequentialScenario, n: int, m: int, confidence: float, seed: np.random.SeedSequence
) -> np.ndarray:
    """n trials' Steinke bounds of randomized response (top 10 % and bottom 10 % guessed), each its own seed."""
    game = OneRunGame(m=m, k_pos=max(1, m // 10), k_neg=max(1, m // 10))
    mechanism, attack = RandomizedResponse(epsilon=float(scenario.epsilon or 1.0)), Identity()
    settings = AnalysisSettings(confidence=confidence)
    out = np.empty(n)
    for i, trial in enumerate(seed.spawn(n)):
        outcome = game.play(mechanism, attack, seed=trial)
        out[i] = game.analyse_trial(outcome, settings, seed=trial)["epsilon_lb"]
    return out


def _naive_refutes(exceeded: np.ndarray, alpha: float) -> bool:
    """The naive monitor: a fixed-sample binomial test read after every trial, "refuted" at its first rejection."""
    count = np.cumsum(exceeded)
    return any(count[t] > allowed_exceedances(t + 1, alpha) for t in range(exceeded.size))


def _clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    from scipy import stats

    a = 1.0 - confidence
    low = 0.0 if k == 0 else float(stats.beta.ppf(a / 2, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.ppf(1 - a / 2, k + 1, n - k))
    return low, high


def validate_sequential(
    *,
    experiments: int = 600,
    budget: int = 30,
    m: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    scenarios: list[SequentialScenario] | None = None,
) -> pd.DataFrame:
    """Play every scenario's sequential experiments; one row per scenario (columns in the module notes).

    Parameters
    ----------
    experiments : int, default=600
        Independent sequential experiments per scenario (each its own seeds).
    budget : int, default=30
        The most trials an experiment reads (the fixed-sample test's size).
    m : int, default=1000
        Canaries per one-run audit.
    confidence : float, default=0.95
        The confidence of every trial's bound; the sequential test's level is 1 − confidence.
    seed : int, default=0
    scenarios : list of SequentialScenario or None, default=None
        None: :func:`default_sequential_scenarios`.

    Returns
    -------
    DataFrame
        ``scenario``, ``epsilon``, ``claim``, ``true_claim``, ``trial_exceedance`` (the fraction of single trials
        whose bound exceeds the claim), ``experiments``, ``refuted`` and ``refuted_rate`` (sequential), its
        ``rate_low``/``rate_high`` (95 % Clopper–Pearson) and ``p_value`` (against α), ``naive_refuted_rate`` (the
        naive monitor's), ``trials_median``/``trials_mean`` (the sequential test's trials to refute, over the
        experiments that refuted), ``fixed_trials`` (= budget) and ``fixed_refuted_rate`` (the binomial test's
        power at that size).
    """
    from scipy import stats

    experiments = check_int("experiments", experiments, low=1)
    budget = check_int("budget", budget, low=1)
    m = check_int("m", m, low=2)
    confidence = check_real("confidence", confidence, low=0.0, high=1.0, low_open=True, high_open=True)
    alpha = 1.0 - confidence
    chosen = default_sequential_scenarios() if scenarios is None else scenarios
    streams = np.random.SeedSequence(seed).spawn(len(chosen))
    rows = []
    for scenario, stream in zip(chosen, streams, strict=True):
        n = experiments * budget
        if scenario.epsilon is None:
            exceeded = np.random.default_rng(stream).random(n) < alpha
        else:
            exceeded = _bounds(scenario, n, m, confidence, stream) > scenario.claim
        exceeded = exceeded.reshape(experiments, budget)
        results = [sequential_test(e, confidence) for e in exceeded]
        refuted = sum(r.stopped for r in results)
        stops = np.array([r.trials for r in results if r.stopped], dtype=float)
        low, high = _clopper_pearson(refuted, experiments)
        allowed = allowed_exceedances(budget, alpha)
        rows.append(
            {
                "scenario": scenario.name,
                "epsilon": math.nan if scenario.epsilon is None else scenario.epsilon,
                "claim": scenario.claim,
                "true_claim": scenario.true_claim,
                "trial_exceedance": float(exceeded.mean()),
                "experiments": experiments,
                "refuted": refuted,
                "refuted_rate": refuted / experiments,
                "rate_low": low,
                "rate_high": high,
                "p_value": float(stats.binomtest(refuted, experiments, alpha, alternative="greater").pvalue),
                "naive_refuted_rate": float(np.mean([_naive_refutes(e, alpha) for e in exceeded])),
                "trials_median": float(np.median(stops)) if stops.size else math.nan,
                "trials_mean": float(np.mean(stops)) if stops.size else math.nan,
                "fixed_trials": budget,
                "fixed_refuted_rate": float(np.mean(exceeded.sum(axis=1) > allowed)),
            }
        )
    return pd.DataFrame(rows)
