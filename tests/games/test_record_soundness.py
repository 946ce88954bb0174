"""Slow soundness suite: the model-seeded game's per-record ε lower bound on PrivBayes never exceeds its ε.

PrivBayes is ε-DP under replace-one neighbours; the model-seeded game with ``neighbours = "replace"`` plays
independent runs on D̄ ∪ {x} and D̄ ∪ {r}, exactly such neighbours, so the record's Clopper–Pearson bound (threshold
chosen on a random half of the rounds) must exceed ε with probability at most 1 − confidence.  Over R audits (each
a fresh experiment seed: another split, another target) the count V of bounds above ε must pass
``binomtest(V, R, 1 − confidence, alternative="greater").pvalue > 1e-3`` (STYLE.md), at 0.95 and 0.7; the meta-test
shows that the same check rejects a broken estimator (the plug-in ln(TPR/FPR) at the best threshold).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from privgame.attacks import CountingQueries
from privgame.games import AnalysisSettings
from privgame.games._base import TrialContext
from privgame.games.record import ModelSeededRecordGame
from privgame.mechanisms.synth import PrivBayes

R = 120
EPSILON = 2.0
GAME = ModelSeededRecordGame(
    columns=("sex", "race", "relationship", "income"),
    dataset_size=20,
    auxiliary_size=200,
    evaluation_size=200,
    rounds=60,
    vulnerable_targets=1,
    random_targets=0,
    n_boot=40,
)
ATTACK = CountingQueries(n_shadows=30, n_estimators=10, max_depth=4)
MECHANISM = PrivBayes(epsilon=EPSILON, k=1)


def _audits():
    """Outcome and per-record row of each of the R audits (computed once, shared by the three tests)."""
    if not hasattr(_audits, "cache"):
        results = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for r in range(R):
                seed = np.random.SeedSequence(20261201 + r, spawn_key=(0, 0))
                outcome = GAME.play(MECHANISM, ATTACK, seed=seed, context=TrialContext())
                results.append((seed, outcome))
        _audits.cache = results  # type: ignore[attr-defined]
    return _audits.cache  # type: ignore[attr-defined]


@pytest.mark.slow
@pytest.mark.parametrize("confidence", [0.95, 0.7])
def test_per_record_bound_on_privbayes_is_sound(confidence):
    settings = AnalysisSettings(confidence=confidence)
    violations = 0
    for seed, outcome in _audits():
        (row,) = GAME.record_rows(outcome, settings, seed=seed)
        assert row["claim_applies"] and row["neighbouring"] == "replace"
        violations += row["epsilon_lb"] > EPSILON
    p = stats.binomtest(violations, R, 1 - confidence, alternative="greater").pvalue
    assert p > 1e-3, f"{violations}/{R} per-record bounds above ε = {EPSILON} at confidence {confidence}"


def _plug_in(scores: np.ndarray, labels: np.ndarray) -> float:
    """The broken estimator: max over thresholds of ln(TPR/FPR) and ln(TNR/FNR) on the same rounds."""
    best = 0.0
    for t in np.unique(scores):
        guess = scores >= t
        tpr, fpr = guess[labels].mean(), guess[~labels].mean()
        for a, b in ((tpr, fpr), (1 - fpr, 1 - tpr)):
            if a > 0:
                best = max(best, math.inf if b == 0 else math.log(a / b))
    return best


@pytest.mark.slow
def test_the_check_catches_a_plug_in_estimator():
    violations = sum(_plug_in(o.scores, o.membership) > EPSILON for _, o in _audits())
    assert stats.binomtest(violations, R, 0.05, alternative="greater").pvalue <= 1e-3, f"{violations}/{R}"
