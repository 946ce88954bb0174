"""The Krčo et al. reproduction in one table and one figure: MR(t) and RMSD per generator beside the paper's.

Run after the four experiments (``privgame run experiments/krco_adult_{synthpop,baynet,privbayes,synthpop_small}.toml
--out runs/krco_{...}``)::

    python experiments/krco_summary.py --figure docs/figures/krco_scatter.png   # [--runs runs]

prints a Markdown table (one row per generator and grid point) and draws the per-record scatter, one panel each.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from privgame.analysis.record_risk import MISS_RATE_THRESHOLDS, miss_rate, plot_risk_scatter, rmsd
from privgame.analysis.reporting import format_table
from privgame.engine.report import records_results

RUNS = {
    "Synthpop": "krco_synthpop",
    "BayNet (k = 1)": "krco_baynet",
    "PrivBayes": "krco_privbayes",
    "Synthpop, |D| = 200": "krco_synthpop_small",
}
PAPER = "Krčo et al. (Adult, |D| = 1,000): MR(0.8) 0.73–0.94 across generators (Synthpop 0.94), RMSD 0.04–0.11"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figure", default="docs/figures/krco_scatter.png")
    parser.add_argument("--runs", default="runs", help="the folder holding the four results directories")
    args = parser.parse_args()
    rows, panels = [], []
    for label, name in RUNS.items():
        root = Path(args.runs) / name
        if not (Path(root) / "manifest.json").exists():
            print(f"(skipping {label}: {root} has no results)")
            continue
        records = records_results(root)
        swept = [c for c in records.columns if c.startswith("mechanism.")]
        for key, part in records.groupby(swept, sort=True) if swept else [((), records)]:
            name = label if not swept else f"{label}, ε = {key[0] if isinstance(key, tuple) else key:g}"
            wide = part.pivot(index="record", columns="game", values="auc")
            ms, tr = wide["model-seeded"].to_numpy(), wide["traditional"].to_numpy()
            width = part.pivot(index="record", columns="game", values="auc_high") - part.pivot(
                index="record", columns="game", values="auc_low"
            )
            noise = float(np.sqrt(((width / (2 * 1.959964)) ** 2).sum(axis=1).mean()))
            row = {"generator": name, "records": len(wide), "rmsd": rmsd(ms, tr), "rmsd_noise": noise}
            for t in MISS_RATE_THRESHOLDS:
                n_high = int((ms >= t).sum())
                row[f"MR({t:g})"] = miss_rate(ms, tr, t)
                row[f"n≥{t:g}"] = n_high
            row["mean AUC MS / T"] = f"{ms.mean():.3f} / {tr.mean():.3f}"
            rows.append(row)
            panels.append(part.assign(group=name))
    table = pd.DataFrame(rows)
    print(format_table(table, "markdown"))
    print(PAPER)
    if panels:
        path = plot_risk_scatter(pd.concat(panels, ignore_index=True), args.figure, title="Krčo et al. on Adult")
        print(f"figure written to {path}")


if __name__ == "__main__":
    main()
