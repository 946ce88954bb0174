"""Slow soundness suite: the one-run game end to end (game → mechanism → attack → estimator) keeps its promise.

For mechanisms with a known ε at δ, over R seeded trials the number V of lower bounds above the true ε must pass
``binomtest(V, R, 1 - confidence, alternative="greater").pvalue > 1e-3`` (STYLE.md), at confidence 0.95 and at
0.7 (where violations are common, so the test has power).  Randomized response with k₊ = k₋ = m/2 is close to the
worst case of the audit, so its violation rate sits just below 1 - confidence.
"""

from __future__ import annotations

import math
import warnings

import dp_accounting
import numpy as np
import pytest
from scipy import stats

from privgame.attacks import Identity
from privgame.games import AnalysisSettings, OneRunGame
from privgame.mechanisms import GaussianMechanism, RandomizedResponse

R = 600

CASES = [
    # (mechanism, m, k_pos, k_neg, delta)
    (RandomizedResponse(epsilon=1.0), 1000, 500, 500, 0.0),
    (RandomizedResponse(epsilon=2.0), 2000, 1000, 1000, 0.0),
    (RandomizedResponse(epsilon=0.5), 500, 200, 200, 0.0),
    (RandomizedResponse(epsilon=1.0), 1000, 500, 500, 2e-3),  # 2mδ = 4 > 1: the first-crossing path
    (GaussianMechanism(sigma=0.5), 1000, 100, 100, 1e-5),
]


def _true_epsilon(mechanism, delta: float) -> float:
    if isinstance(mechanism, RandomizedResponse):
        return mechanism.epsilon  # exactly (ε, 0)-DP, hence (ε, δ)-DP for every δ
    return float(dp_accounting.get_epsilon_gaussian(mechanism.sigma, delta))


@pytest.mark.slow
@pytest.mark.parametrize("confidence", [0.95, 0.7])
@pytest.mark.parametrize(("mechanism", "m", "k_pos", "k_neg", "delta"), CASES)
def test_violation_rate_within_promise(mechanism, m, k_pos, k_neg, delta, confidence):
    game = OneRunGame(m=m, k_pos=k_pos, k_neg=k_neg)
    settings = AnalysisSettings(confidence=confidence, delta=delta)
    truth = _true_epsilon(mechanism, delta)
    violations = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in np.random.SeedSequence(20261129).spawn(R):
            outcome = game.play(mechanism, Identity(), seed=seed)
            bound = game.analyse_trial(outcome, settings, seed=seed)["epsilon_lb"]
            violations += bound > truth
    p = stats.binomtest(violations, R, 1 - confidence, alternative="greater").pvalue
    assert p > 1e-3, f"{violations}/{R} bounds above ε = {truth:.3f} at confidence {confidence}"


@pytest.mark.slow
def test_point_estimate_is_caught():
    """Meta-test: the same check rejects an invalid estimator (the point estimate ln(v / (r - v)))."""
    game = OneRunGame(m=1000, k_pos=500, k_neg=500)
    mechanism = RandomizedResponse(epsilon=1.0)
    violations = 0
    for seed in np.random.SeedSequence(20261129).spawn(R):
        outcome = game.play(mechanism, Identity(), seed=seed)
        metrics = game.analyse_trial(outcome, AnalysisSettings(), seed=seed)
        v, r = int(metrics["v"]), int(metrics["r"])
        violations += math.log(v / (r - v)) > 1.0
    assert stats.binomtest(violations, R, 0.05, alternative="greater").pvalue <= 1e-3
