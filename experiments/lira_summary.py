"""The LiRA calibration reproduction in one table and one figure: the three numbers per data set, model and M.

Run after the LiRA experiments (``privgame run experiments/lira_{adult,compas}_{logistic,mlp,gbt}.toml --out
runs/lira_{...} --n-jobs 1``)::

    python experiments/lira_summary.py --figure docs/figures/lira_calibration.png   # [--runs runs] [--fpc]

prints a Markdown table (one row per data set, model and M: naive, post-processed with the N(0, 1) and the
Student-t threshold, and mean per-sample TPR at FPR 1e-3, 1e-2 and 1e-1, each with its realised FPR in
parentheses) and draws, per FPR, each method's TPR against M for every (data set, model).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from privgame.analysis.reporting import format_table
from privgame.engine.report import summarise_results
from privgame.engine.store import StoreError

DATA = {"adult": "Adult", "compas": "COMPAS"}
MODELS = {"logistic": "logistic regression", "mlp": "MLP", "gbt": "gradient-boosted trees"}
FPRS = ("0.001", "0.01", "0.1")
METHODS = {
    "naive": "naive",
    "pp": "post-processed N(0,1)",
    "pp_t": "post-processed Student-t",
    "per_sample": "per sample",
}


def load(runs: Path, fpc: bool) -> pd.DataFrame:
    """One row per (data set, model, M) of the finished LiRA runs, with or without the FPC."""
    parts = []
    for data, data_label in DATA.items():
        for model, model_label in MODELS.items():
            root = runs / f"lira_{data}_{model}"
            if not (root / "manifest.json").exists():
                print(f"(no {root}: run experiments/lira_{data}_{model}.toml first)")
                continue
            try:
                summary, _ = summarise_results(str(root))
            except StoreError as exc:  # still running
                print(f"({exc})")
                continue
            if "attack.fpc" in summary:
                summary = summary[summary["attack.fpc"].astype(bool) == fpc]
            parts.append(summary.assign(data=data_label, model=model_label))
    if not parts:
        raise SystemExit("no LiRA results found")
    return pd.concat(parts, ignore_index=True)


def table(results: pd.DataFrame) -> pd.DataFrame:
    """The three numbers (four with the Student-t variant) with their realised FPRs, per row."""
    rows = []
    for _, r in results.iterrows():
        row = {"data": r["data"], "model": r["model"], "M": int(r["n_models"]), "AUC": round(float(r["auc"]), 3)}
        for f in FPRS:
            for method in METHODS:
                row[f"{method} @ {f}"] = f"{r[f'tpr_{method}_{f}']:.4f} ({r[f'fpr_{method}_{f}']:.4f})"
        rows.append(row)
    return pd.DataFrame(rows)


def figure(results: pd.DataFrame, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = list(results.groupby(["data", "model"], sort=False))
    fig, axes = plt.subplots(
        len(FPRS), len(groups), figsize=(2.8 * len(groups), 2.5 * len(FPRS)), layout="constrained", squeeze=False
    )
    for j, ((data, model), part) in enumerate(groups):
        part = part.sort_values("n_models")
        for i, f in enumerate(FPRS):
            ax = axes[i][j]
            for method, label in METHODS.items():
                ax.plot(part["n_models"], part[f"tpr_{method}_{f}"], marker="o", label=label, linewidth=1.2)
            ax.axhline(float(f), color="grey", linestyle=":", linewidth=1, label="TPR = FPR (chance)")
            ax.set_xscale("log", base=2)
            ax.set_xticks(part["n_models"].to_numpy(), [str(int(m)) for m in part["n_models"]])
            ax.set_title(f"{data}, {model}\nnominal FPR {f}", fontsize="small")
            if i == len(FPRS) - 1:
                ax.set_xlabel("M (models)")
            if j == 0:
                ax.set_ylabel("TPR")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize="small")
    fig.suptitle(title, fontsize="medium")
    fig.savefig(path)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figure", default="docs/figures/lira_calibration.png")
    parser.add_argument("--runs", default="runs", help="the folder holding the results directories")
    parser.add_argument("--fpc", action="store_true", help="the grid points with the finite-population correction")
    args = parser.parse_args()
    results = load(Path(args.runs), args.fpc)
    print(format_table(table(results), "markdown"))
    largest = results[results["n_models"] == results["n_models"].max()]
    for f in FPRS[1:]:  # at 1e-3 the per-sample TPR needs M >= 10,000
        gap = largest[f"tpr_naive_{f}"] - largest[f"tpr_per_sample_{f}"]
        pp = largest[f"tpr_pp_t_{f}"] - largest[f"tpr_per_sample_{f}"]
        print(
            f"M = {int(largest['n_models'].iloc[0])}, FPR {f}: naive − per-sample TPR {np.mean(gap):+.4f}, "
            f"post-processed (t) − per-sample {np.mean(pp):+.4f} (mean over {len(gap)} data set × model)"
        )
    suffix = " (with the FPC)" if args.fpc else ""
    figure(results, Path(args.figure), f"LiRA: TPR at fixed FPR against the number of models{suffix}")
    print(f"figure written to {args.figure}")


if __name__ == "__main__":
    main()
