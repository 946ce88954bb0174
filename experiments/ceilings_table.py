"""The ceilings table of docs/estimators.md#ceilings: each one-run estimator's bound when every guess is right.

A ceiling is the largest ε lower bound r guesses among m canaries can give (v = r), at confidence 0.95 and δ = 1e-5,
and at δ = 0, where Steinke's test and the pure f-DP and order-statistics ones coincide (one column, checked);
``privgame.games.bounds.ceiling`` computes the same number for each trial of a run.  The PLD columns are DP-SGD's own
family for one setting (q = 0.1, T = 500): about 2-8 s a cell, 126 s and 270 s for the table on 2 busy cores.

Run:    .venv/bin/python experiments/ceilings_table.py            (prints the Markdown table; --no-pld skips PLD)
"""

from __future__ import annotations

import argparse
import time

from privgame.analysis.estimators import Estimator
from privgame.analysis.families import dpsgd_family, gaussian_family, pure_family
from privgame.games.bounds import ceiling

CONFIDENCE = 0.95
DELTA = 1e-5
CANARIES = (1000, 5000, 10_000, 1_000_000)
GUESSES = (50, 500, 5000)  # and r = m
PLD_SAMPLING_RATE, PLD_STEPS = 0.1, 500


def columns(pld: bool) -> list[tuple[str, Estimator, float]]:
    """(header, estimator, δ) of each column."""
    out = [
        ("steinke", Estimator("steinke", "steinke"), DELTA),
        ("fdp_pure", Estimator("fdp_pure", "fdp_pure", pure_family(DELTA)), DELTA),
        ("order_stats_pure", Estimator("order_stats_pure", "order_stats_pure", pure_family(DELTA)), DELTA),
        ("fdp_gaussian", Estimator("fdp_gaussian", "fdp_gaussian", gaussian_family(DELTA)), DELTA),
        (
            "order_stats_gaussian",
            Estimator("order_stats_gaussian", "order_stats_gaussian", gaussian_family(DELTA)),
            DELTA,
        ),
    ]
    if pld:
        family = dpsgd_family(PLD_SAMPLING_RATE, PLD_STEPS, delta=DELTA)
        out += [
            ("fdp_pld", Estimator("fdp_pld", "fdp_pld", family), DELTA),
            ("order_stats_pld", Estimator("order_stats_pld", "order_stats_pld", family), DELTA),
        ]
    return out


# At δ = 0 the three pure bounds are one test (randomized response's binomial tail): one column, checked to agree.
PURE_AT_ZERO = (
    Estimator("steinke", "steinke"),
    Estimator("fdp_pure", "fdp_pure", pure_family(0.0)),
    Estimator("order_stats_pure", "order_stats_pure", pure_family(0.0)),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-pld", action="store_true", help="leave out DP-SGD's PLD family (the slow columns)")
    args = parser.parse_args()
    start = time.perf_counter()
    cols = columns(pld=not args.no_pld)
    headers = [*(f"`{h}`" for h, _, _ in cols), "pure, δ = 0"]
    print("| m | r | " + " | ".join(headers) + " |")
    print("|---:|---:|" + "---:|" * len(headers))
    for m in CANARIES:
        for r in (*(g for g in GUESSES if g < m), m):
            cells = [ceiling(e, m, r, confidence=CONFIDENCE, delta=d) for _, e, d in cols]
            pure = [ceiling(e, m, r, confidence=CONFIDENCE, delta=0.0) for e in PURE_AT_ZERO]
            if max(pure) - min(pure) > 1e-3:
                raise AssertionError(f"the pure bounds at δ = 0 differ at m = {m}, r = {r}: {pure}")
            print(f"| {m:,} | {r:,} | " + " | ".join(f"{c:.3f}" for c in (*cells, pure[0])) + " |", flush=True)
    print(f"\n(computed in {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
