"""Benchmark of the table generators: fit + sample seconds on 1,000 and on 32,561 Adult rows, side by side.

Run: ``python benchmarks/bench_synth.py [--quick] [--repeats R] [--full-repeats R] [--only NAME ...]`` (after
``make test`` or ``pip install -e .``; pgmpy's hill-climbing BayNet needs ``pip install -e .[synth]`` and is skipped
with a message without it).  Prints readable lines and ends with ONE JSON line: the warm medians ``synthpop_1k_s``,
``synthpop_full_s``, ``baynet_k1_1k_s``, ``baynet_k2_1k_s``, ``privbayes_k2_1k_s``, ``pgmpy_1k_s``, the ratio
``pgmpy_over_baynet`` (pgmpy hill climbing over our BayNet k = 1, 1,000 rows, this run), every warm median under
``warm_s``, every cold first call under ``cold_s`` (null where a generator was skipped or failed) and the
measurements that raised under ``failed``.

One measurement = one ``release(data, rng=...)`` call, i.e. fit and sample ``len(data)`` rows.  "Cold" is the first
call of that generator at that size in this process (the very first one includes numba compilation, unless an
earlier run cached it on disk); "warm" is the median of the calls after it.

Targets (issue 5, 2 cores, warm): Synthpop ≤ 0.1 s for 1,000 rows and ≤ 3 s for 32,561 rows; BayNet k = 1 ≤ 0.2 s;
PrivBayes k = 2 ≤ 0.5 s for 1,000 rows.  References measured on this machine type (SPEC §7): R synthpop 0.9 s and
25.6 s, pgmpy hill climbing ≈ 2.5 s, DataSynthesizer PrivBayes k = 2 ≈ 25 s (1,000 rows).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from privgame.data import ADULT_PUBLIC_RANGES, load_adult  # noqa: E402

SIZES = {"1k": 1000, "full": None}  # None: the whole training split (32,561 rows)
TARGETS = {("synthpop", "1k"): 0.1, ("synthpop", "full"): 3.0, ("baynet_k1", "1k"): 0.2, ("privbayes_k2", "1k"): 0.5}


def _synthpop() -> Any:
    from privgame.mechanisms.synth.synthpop import Synthpop

    return Synthpop()


def _baynet(k: int) -> Callable[[], Any]:
    def make() -> Any:
        from privgame.mechanisms.synth.baynet import BayNet

        return BayNet(k=k)

    return make


def _privbayes() -> Any:
    from privgame.mechanisms.synth.privbayes import PrivBayes

    return PrivBayes(epsilon=1.0, k=2, ranges=ADULT_PUBLIC_RANGES)


def _pgmpy() -> Any:
    if importlib.util.find_spec("pgmpy") is None:
        raise ImportError("pgmpy is not installed (pip install -e '.[synth]')")
    from privgame.mechanisms.synth.baynet import BayNet

    return BayNet(structure="hillclimb")


# key, readable label, factory
GENERATORS: list[tuple[str, str, Callable[[], Any]]] = [
    ("synthpop", "Synthpop (CART)", _synthpop),
    ("baynet_k1", "BayNet k = 1", _baynet(1)),
    ("baynet_k2", "BayNet k = 2", _baynet(2)),
    ("privbayes_k2", "PrivBayes eps = 1, k = 2", _privbayes),
    ("pgmpy", "BayNet hill climbing (pgmpy)", _pgmpy),
]


def time_release(generator: Any, data: pd.DataFrame, repeats: int, seed: np.random.SeedSequence) -> tuple[float, float]:
    """Seconds of the first ``release`` call (cold) and the median of ``repeats`` further calls (warm)."""
    seeds = seed.spawn(repeats + 1)
    times = []
    for child in seeds:
        rng = np.random.default_rng(child)
        start = time.perf_counter()
        out = generator.release(data, rng=rng)
        times.append(time.perf_counter() - start)
        if not isinstance(out, pd.DataFrame) or out.shape != data.shape:
            raise RuntimeError(f"{type(generator).__name__} returned {type(out).__name__} of the wrong shape.")
    return times[0], statistics.median(times[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 warm calls at 1,000 rows and 1 at full size")
    parser.add_argument("--repeats", type=int, default=None, help="warm calls at 1,000 rows (default 7)")
    parser.add_argument("--full-repeats", type=int, default=None, help="warm calls at full size (default 3)")
    parser.add_argument("--only", nargs="+", choices=[k for k, _, _ in GENERATORS], help="run only these generators")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    repeats = {
        "1k": args.repeats if args.repeats is not None else (3 if args.quick else 7),
        "full": args.full_repeats if args.full_repeats is not None else (1 if args.quick else 3),
    }
    if min(repeats.values()) < 1:
        parser.error("--repeats and --full-repeats must be at least 1")

    adult = load_adult("train")
    tables = {size: adult if n is None else adult.iloc[:n].reset_index(drop=True) for size, n in SIZES.items()}
    warm: dict[str, float | None] = {}
    cold: dict[str, float | None] = {}
    failed: list[str] = []
    root = np.random.SeedSequence(args.seed)
    for key, label, factory in GENERATORS:
        if args.only and key not in args.only:
            continue
        try:
            generator = factory()
        except ImportError as exc:
            print(f"{label:<30} skipped: {exc}")
            for size in SIZES:
                warm[f"{key}_{size}"] = cold[f"{key}_{size}"] = None
            continue
        for size, table in tables.items():
            name = f"{key}_{size}"
            try:
                first, median = time_release(generator, table, repeats[size], root.spawn(1)[0])
            except Exception as exc:  # one broken generator must not hide the others' numbers
                print(f"{label:<30} {len(table):>6} rows: FAILED: {type(exc).__name__}: {exc}")
                warm[name] = cold[name] = None
                failed.append(name)
                continue
            cold[name], warm[name] = first, median
            target = TARGETS.get((key, size))
            verdict = "" if target is None else f"   target <= {target:g} s: {'ok' if median <= target else 'MISSED'}"
            print(
                f"{label:<30} {len(table):>6} rows: warm median {median:8.3f} s ({repeats[size]} calls)   "
                f"cold {first:8.3f} s{verdict}"
            )

    def pick(name: str) -> float | None:
        return warm.get(name)

    pg, bn = pick("pgmpy_1k"), pick("baynet_k1_1k")
    print(
        json.dumps(
            {
                "synthpop_1k_s": pick("synthpop_1k"),
                "synthpop_full_s": pick("synthpop_full"),
                "baynet_k1_1k_s": bn,
                "baynet_k2_1k_s": pick("baynet_k2_1k"),
                "privbayes_k2_1k_s": pick("privbayes_k2_1k"),
                "pgmpy_1k_s": pg,
                "pgmpy_over_baynet": None if pg is None or bn is None else pg / bn,
                "warm_s": warm,
                "cold_s": cold,
                "repeats": repeats,
                "failed": failed,
            }
        )
    )


if __name__ == "__main__":
    main()
