"""Benchmark of every estimator on 10^4 and 10^6 scores with the Bonferroni strategy (100 candidates).

Run: ``python benchmarks/bench_estimators.py``.  Scores: half members ~ N(1, 1), half non-members ~ N(0, 1)
(a μ = 1 Gaussian mechanism seen through its optimal attack), δ = 1e-5 where an estimator takes one (δ = 0 for the
pure-DP ones, whose δ term would otherwise swamp the per-test significance at m = 10^6).  Prints a readable line
per estimator and ends with ONE JSON line ``{"<estimator>": {"1e4": seconds, "1e6": seconds}, ...}``.
Target (issue 3): every estimator ≤ 1 s on 10^6 scores; the order-statistics audit (issue 24, Gaussian family, the
scores' own): ≤ 0.5 s on 10^4 and ≤ 5 s on 10^6, also given as ``order_stats_seconds_1e4`` / ``_1e6``.
``--quick``: 10^4 scores only, once each (the smoke test ``.ci/run`` runs so that a broken benchmark fails CI).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from privgame.analysis import fdp, multi_run, one_run, order_stats, panoramia
from privgame.analysis.thresholds import Bonferroni

B = Bonferroni(100)
ESTIMATORS: dict[str, Callable[[np.ndarray, np.ndarray], object]] = {
    "one_run": lambda a, b: one_run.audit_scores(a, b, threshold=B),
    "one_run_two_sided": lambda a, b: one_run.audit_scores(a, b, threshold=B, two_sided=True),
    "fdp_pure": lambda a, b: fdp.audit_scores(a, b, family="pure", threshold=B),
    "fdp_gaussian": lambda a, b: fdp.audit_scores(a, b, family="gaussian", delta=1e-5, threshold=B),
    "order_stats": lambda a, b: order_stats.audit_scores(a, b, family="gaussian", delta=1e-5, threshold=B),
    "order_stats_two_sided": lambda a, b: order_stats.audit_scores(
        a, b, family="gaussian", delta=1e-5, threshold=B, two_sided=True
    ),
    "order_stats_pure": lambda a, b: order_stats.audit_scores(a, b, family="pure", threshold=B),
    "multi_run_cp": lambda a, b: multi_run.audit_scores(a, b, delta=1e-5, threshold=B),
    "multi_run_gdp": lambda a, b: multi_run.gdp_audit_scores(a, b, delta=1e-5, threshold=B),
    "panoramia": lambda a, b: panoramia.measure(
        np.concatenate([a, b]) * 0.5,
        np.concatenate([a, b]),
        np.arange(a.size + b.size) < a.size,
        thresholds=B,
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke test: 10^4 scores, one run per estimator")
    quick = parser.parse_args().quick
    results: dict[str, dict[str, float]] = {name: {} for name in ESTIMATORS}
    for exp in (4,) if quick else (4, 6):
        n = 10**exp
        rng = np.random.default_rng(exp)
        a, b = rng.normal(1.0, 1.0, n // 2), rng.normal(0.0, 1.0, n - n // 2)
        for name, run in ESTIMATORS.items():
            times = []
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for _ in range(1 if quick else 3 if exp == 6 else 5):
                    start = time.perf_counter()
                    run(a, b)
                    times.append(time.perf_counter() - start)
            results[name][f"1e{exp}"] = statistics.median(times)
            print(f"{name:20s} n = 1e{exp}: {results[name][f'1e{exp}']:.3f} s (median of {len(times)})")
    headline: dict[str, object] = dict(results)
    for exp, seconds in results["order_stats"].items():
        headline[f"order_stats_seconds_{exp}"] = seconds
    print(json.dumps(headline))


if __name__ == "__main__":
    main()
