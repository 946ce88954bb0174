"""Fidelity of each synthetic-data generator on the first 1,000 Adult training rows, mean over 10 seeds.

Run:    python experiments/synth_fidelity.py [--seeds 10] [--rows 1000]

For each generator (Synthpop, BayNet k = 1 and 2, PrivBayes ε = 1, 10 and 1000 with k = 2, PrivBayes ε = 1 with the
θ-usefulness degree, and PrivBayes ε = 1000, k = 2 without the public bins, for comparison) and seed s, the generator
releases a table from the same real rows with ``np.random.default_rng(s)``, and
:func:`privgame.analysis.fidelity.fidelity_report` compares it with them (utility tested on Adult's test split).
PrivBayes gets Adult's public domain, ``public_domain("adult")``: its ranges and its public bins (0 a bin of its own for
the capital columns, 40 hours a week for hours_per_week), as ``privgame synth`` gives it; BayNet keeps its quantile
bins. Prints one line per generator and ends with one JSON line of the means.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

import numpy as np

from privgame.analysis.fidelity import fidelity_report
from privgame.data import load_adult, public_domain
from privgame.mechanisms import Mechanism
from privgame.mechanisms.synth import BayNet, PrivBayes, Synthpop

ADULT = public_domain("adult")
GENERATORS: dict[str, Mechanism] = {
    "synthpop": Synthpop(),
    "baynet_k1": BayNet(k=1),
    "baynet_k2": BayNet(k=2),
    "privbayes_eps1_k2": PrivBayes(epsilon=1.0, k=2, ranges=ADULT.ranges, bins=ADULT.bins),
    "privbayes_eps10_k2": PrivBayes(epsilon=10.0, k=2, ranges=ADULT.ranges, bins=ADULT.bins),
    "privbayes_eps1000_k2": PrivBayes(epsilon=1000.0, k=2, ranges=ADULT.ranges, bins=ADULT.bins),
    "privbayes_eps1_auto": PrivBayes(epsilon=1.0, ranges=ADULT.ranges, bins=ADULT.bins),
    "privbayes_eps1000_k2_no_bins": PrivBayes(epsilon=1000.0, k=2, ranges=ADULT.ranges),
}
METRICS = (
    "tv_mean",
    "tv_max",
    "cramers_v_diff_mean",
    "cramers_v_diff_max",
    "tstr_accuracy",
    "tstr_auc",
    "copy_fraction",
)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--rows", type=int, default=1000)
    args = parser.parse_args(argv)
    real = load_adult("train").iloc[: args.rows].reset_index(drop=True)
    test = load_adult("test")
    print(f"fidelity on the first {args.rows} Adult training rows, mean over {args.seeds} seeds (test: Adult test)")
    header = "  ".join(f"{m:>19}" for m in METRICS)
    print(f"{'generator':<28}  {header}")
    means: dict[str, dict[str, float]] = {}
    baseline: dict[str, float] = {}
    for name, generator in GENERATORS.items():
        rows = []
        for seed in range(args.seeds):
            synthetic = generator.release(real, rng=np.random.default_rng(seed))
            summary = fidelity_report(real, synthetic, test=test).summary()
            rows.append([float(summary[m]) for m in METRICS])
            baseline = {"trtr_accuracy": float(summary["trtr_accuracy"]), "trtr_auc": float(summary["trtr_auc"])}
        mean = np.mean(rows, axis=0)
        means[name] = {m: round(float(v), 4) for m, v in zip(METRICS, mean, strict=True)}
        print(f"{name:<28}  " + "  ".join(f"{v:>19.4f}" for v in mean))
    print(f"train on real, test on real: accuracy {baseline['trtr_accuracy']:.4f}, AUC {baseline['trtr_auc']:.4f}")
    print(json.dumps({"rows": args.rows, "seeds": args.seeds, "train_on_real": baseline, "mean": means}))


if __name__ == "__main__":
    main()
