"""One PANORAMIA audit of a tabular target end to end, with the share of each step.

The audit is the ``panoramia`` game on Adult with m = 5,000: a target MLP (64 hidden, 20 epochs) trained on 11,000
fixed records and the O(1) candidates it draws in, Synthpop trained on 5,000 known records generating 5,000
non-members and 5,000 rows for the helper MLP, the MIA and the baseline (gradient-boosted trees on the input and a
model's loss), RM;RN on 5,000 held-out records, O(1) on 2,000 candidates, and the three measurements.  No artefact
cache: every step is computed.  Each step is timed where it runs (the releases of the target, the generator and
the helper; every classifier fit and score); ``rest`` is the remainder (splits, encoding, losses, the bounds).

Ends with one JSON line: ``audit_seconds`` and ``<step>_share`` for ``target``, ``generator``, ``helper``,
``classifiers`` and ``rest``.  The target of the issue is ``audit_seconds`` ≤ 180 on 2 cores.  ``--quick``: m = 500
(a smoke test).
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from collections import defaultdict
from typing import Any

import numpy as np

from privgame.engine.config import parse_config


def _config(quick: bool) -> Any:
    m = 500 if quick else 5000
    return parse_config(
        {
            "experiment": {"name": "bench_panoramia", "seed": 2026, "repetitions": 1},
            "game": {
                "name": "panoramia",
                "data": "adult",
                "train_size": 2 * m + 1000,
                "generator_rows": m,
                "m": m,
                "helper_rows": m,
                "o1_candidates": 2000,
                "o1_guesses": 200,
                "generator": {"name": "synthpop"},
                "helper": {"name": "mlp", "hidden": [64], "epochs": 20},
            },
            "mechanism": {"name": "mlp", "hidden": [64], "epochs": 20},
            "attack": {"name": "classifier-mia", "classifier": {"name": "gradient-boosted-trees", "max_iter": 100}},
            "analysis": {"confidence": 0.95, "delta": 1e-5},
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="m = 500 (a smoke test)")
    args = parser.parse_args()
    import privgame.attacks.classifier as classifier
    import privgame.mechanisms.cached as cached

    config = _config(args.quick)
    point = config.grid[0]
    game = point.game
    spent: dict[str, float] = defaultdict(float)
    release = cached.cached_release

    def timed_release(mechanism: Any, data: Any, *, seed: Any, cache: Any) -> Any:
        step = (
            "generator"
            if mechanism.release_kind == "table"
            else "helper"
            if mechanism == game.helper and len(data) == game.helper_rows
            else "target"
        )
        start = time.perf_counter()
        try:
            return release(mechanism, data, seed=seed, cache=cache)
        finally:
            spent[step] += time.perf_counter() - start

    fit, score = classifier.ClassifierMIA.fit, classifier.FittedClassifierMIA.score

    def timed_fit(self: Any, knowledge: Any, *, rng: Any) -> Any:
        start = time.perf_counter()
        try:
            return fit(self, knowledge, rng=rng)
        finally:
            spent["classifiers"] += time.perf_counter() - start

    def timed_score(self: Any, release: Any, targets: Any) -> Any:
        start = time.perf_counter()
        try:
            return score(self, release, targets)
        finally:
            spent["classifiers"] += time.perf_counter() - start

    cached.cached_release = timed_release  # type: ignore[assignment]
    classifier.ClassifierMIA.fit = timed_fit  # type: ignore[method-assign]
    classifier.FittedClassifierMIA.score = timed_score  # type: ignore[method-assign]
    print(f"cores: {os.cpu_count()}; PANORAMIA on Adult, m = {game.m}, train_size = {game.train_size}")
    seed = np.random.SeedSequence(config.seed, spawn_key=(0, 0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        outcome = game.play(point.mechanism, point.attack, seed=seed)
        metrics = game.analyse_trial(outcome, point.analysis, seed=seed)
        total = time.perf_counter() - start
    spent["rest"] = total - sum(spent.values())
    for step in ("target", "generator", "helper", "classifiers", "rest"):
        print(f"  {step:12s} {spent[step]:7.1f} s  ({100 * spent[step] / total:4.1f} %)")
    print(
        f"audit: {total:.1f} s; c_lb {metrics['c_lb']:.3f}, {{c+ε}}_lb {metrics['c_plus_eps_lb']:.3f}, "
        f"ε̃ {metrics['eps_tilde']:.3f}, RM;RN {metrics['rmrn_epsilon_lb']:.3f}, O(1) {metrics['o1_epsilon_lb']:.3f}"
    )
    summary: dict[str, Any] = {"audit_seconds": round(total, 2), "m": game.m}
    summary.update({f"{step}_share": round(spent[step] / total, 3) for step in spent})
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
