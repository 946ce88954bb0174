"""Benchmark of the one-run audit: the ε lower bound's cost, the runner's scaling, the quickstart's wall time.

Run: ``python benchmarks/bench_one_run.py`` (after ``make test`` or ``pip install -e .``).  Prints readable lines
and ends with ONE JSON line of headline figures.  Targets (issue 2): ≤ 10 ms at r = 10^4 and ≤ 200 ms at r = 10^6
with δ > 0; runner speed-up with 2 workers ≥ 1.7 on trials of ≥ 0.5 s (the Gaussian mechanism, m = 10^6).
``--quick`` is a smoke test (r ≤ 10^4, two trials of m = 10^4 per runner measurement; ``.ci/run`` runs it so that a
broken benchmark fails CI): its figures are not the targets'.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The runner's trials use m = 10^6 canaries at δ = 1e-5, which warns that 2mδ weakens the bound: expected here.
os.environ["PYTHONWARNINGS"] = "ignore::UserWarning"  # inherited by the worker processes
warnings.simplefilter("ignore", UserWarning)
sys.path.insert(0, str(ROOT))

from privgame.analysis.one_run import epsilon_lower_bound  # noqa: E402
from privgame.engine.config import parse_config  # noqa: E402
from privgame.engine.runner import run_experiment  # noqa: E402


def time_lower_bound(r: int, delta: float, repeats: int) -> float:
    """Median seconds of one ``epsilon_lower_bound`` call with m = r and v the expected count at ε = 1."""
    v = round(r * 0.7310585786300049)  # e / (1 + e): randomized response at ε = 1
    times = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(repeats):
            start = time.perf_counter()
            epsilon_lower_bound(r, r, v, delta=delta)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def runner_throughput(n_jobs: int, trials: int, m: int) -> float:
    """Trials per second of the runner: Gaussian mechanism, m canaries all guessed, δ = 1e-5, results written."""
    config = parse_config(
        {
            "experiment": {"name": "bench", "seed": 1, "repetitions": trials},
            "game": {"name": "one-run", "m": m, "k_pos": m // 2, "k_neg": m // 2},
            "mechanism": {"name": "gaussian", "sigma": 1.0},
            "attack": {"name": "identity"},
            "analysis": {"confidence": 0.95, "delta": 1e-5},
        }
    )
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        run_experiment(config, Path(out) / "r", n_jobs=n_jobs, progress=False)
        return trials / (time.perf_counter() - start)


def quickstart_seconds() -> float:
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "privgame.engine.cli", "run", str(ROOT / "experiments" / "quickstart.toml")]
        start = time.perf_counter()
        subprocess.run([*cmd, "--out", str(Path(out) / "q"), "--n-jobs", "2", "--no-progress"], check=True, cwd=ROOT)
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=12, help="trials per runner measurement (default 12)")
    parser.add_argument(
        "--m",
        type=int,
        nargs="+",
        default=[1_000_000, 2_000_000],
        help="canaries per runner trial, one measurement each (default 10^6 and 2·10^6); the headline speed-up is "
        "that of the smallest m whose trials take >= 0.5 s",
    )
    parser.add_argument("--quick", action="store_true", help="a smoke test: small sizes, few repeats")
    args = parser.parse_args()
    if args.quick:
        args.trials, args.m = 2, [10_000]

    lb, lb_delta = {}, {}
    for exp in (3, 4) if args.quick else (3, 4, 5, 6):
        r = 10**exp
        repeats = 3 if args.quick else 21 if exp < 6 else 7
        lb[f"1e{exp}"] = time_lower_bound(r, 0.0, repeats)
        lb_delta[f"1e{exp}"] = time_lower_bound(r, 1e-5, repeats)
        print(
            f"epsilon_lower_bound r = m = 1e{exp}: {lb[f'1e{exp}'] * 1e3:8.2f} ms (delta = 0)   "
            f"{lb_delta[f'1e{exp}'] * 1e3:8.2f} ms (delta = 1e-5)"
        )
    runner_throughput(2, 2, 1000)  # start the worker pool once so both measurements see warm workers
    scaling = {}
    for m in sorted(args.m):
        tps1 = runner_throughput(1, args.trials, m)
        tps2 = runner_throughput(2, args.trials, m)
        scaling[m] = (tps1, tps2)
        print(
            f"runner, Gaussian mechanism, m = {m}: {1 / tps1:.2f} s per trial; {tps1:.2f} trials/s with 1 worker, "
            f"{tps2:.2f} trials/s with 2 workers, speed-up {tps2 / tps1:.2f}"
        )
    heavy = [m for m in sorted(scaling) if 1 / scaling[m][0] >= 0.5]
    headline = heavy[0] if heavy else max(scaling)
    tps1, tps2 = scaling[headline]
    quick = quickstart_seconds()
    print(f"quickstart (privgame run experiments/quickstart.toml --n-jobs 2): {quick:.1f} s wall")
    print(
        json.dumps(
            {
                "lb_seconds": lb,
                "lb_seconds_delta": lb_delta,
                "trials_per_s_1": tps1,
                "trials_per_s_2": tps2,
                "speedup_2_workers": tps2 / tps1,
                "seconds_per_trial_1": 1 / tps1,
                "runner_m": headline,
                "speedup_by_m": {str(m): t2 / t1 for m, (t1, t2) in scaling.items()},
                "quickstart_seconds": quick,
                "quick": args.quick,
            }
        )
    )


if __name__ == "__main__":
    main()
