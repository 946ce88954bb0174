"""Tabulate RMIA against LiRA at equal reference models per sample (issue 26) from the four comparison runs.

    for c in adult_mlp compas_mlp adult_gbt compas_gbt; do
        privgame run experiments/attacks_lira_$c.toml --out runs/attacks_lira_$c --n-jobs 1
    done
    python experiments/attacks_summary.py [--runs runs]

Prints one Markdown table (pooled AUC / TPR at a realised FPR <= 1 %, per number of reference models per sample),
then, per data set and model, whether RMIA with 4 references reaches offline LiRA with 64 on both numbers.  The last
line is one JSON object of the headline figures.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import pandas as pd

from games.compare import compare_attacks

RUNS = ("adult_mlp", "compas_mlp", "adult_gbt", "compas_gbt")
REFERENCES = (1, 2, 4, 16, 64)


def _variant(row: pd.Series) -> str:
    name, online = str(row["attack.name"]), bool(row["attack.online"])
    if name == "rmia":
        gamma = row.get("attack.gamma")
        gamma = 2.0 if gamma is None or (isinstance(gamma, float) and math.isnan(gamma)) else float(gamma)
        return f"RMIA {'online' if online else 'offline'}, γ = {gamma:g}"
    fixed = row.get("attack.fix_variance")
    return f"LiRA {'online' if online else 'offline'}{', fixed σ' if fixed is True else ''}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="runs", help="the folder holding runs/attacks_lira_<data>_<model>")
    args = parser.parse_args()
    lines = [
        "| data | model | attack | " + " | ".join(f"k = {k}" for k in REFERENCES) + " |",
        "|---|---|---|" + "---:|" * len(REFERENCES),
    ]
    headline: dict[str, dict[str, float | bool]] = {}
    verdicts = []
    for run in RUNS:
        root = Path(args.runs) / f"attacks_lira_{run}"
        if not (root / "manifest.json").is_file():
            print(f"(no results in {root}: run experiments/attacks_lira_{run}.toml first)")
            continue
        table, _ = compare_attacks(str(root))
        table["variant"] = [_variant(r) for _, r in table.iterrows()]
        data, model = run.split("_")
        for variant, part in table.groupby("variant", sort=False):
            cells = []
            for k in REFERENCES:
                at = part[part["attack.references"].astype(float) == k]
                cell = "—"
                if not at.empty:
                    row = at.iloc[0]
                    cell = f"{row['auc_pooled']:.3f} / {row['tpr_0.01']:.3f}"
                cells.append(cell)
            lines.append(f"| {data.capitalize()} | {model.upper()} | {variant} | " + " | ".join(cells) + " |")
        lira = table[(table["variant"] == "LiRA offline") & (table["attack.references"].astype(float) == 64)].iloc[0]
        figures: dict[str, float | bool] = {"lira_offline_64_auc": float(lira["auc_pooled"])}
        figures["lira_offline_64_tpr"] = float(lira["tpr_0.01"])
        for variant in sorted(v for v in table["variant"].unique() if v.startswith("RMIA")):
            row = table[(table["variant"] == variant) & (table["attack.references"].astype(float) == 4)].iloc[0]
            auc_ok = row["auc_pooled"] >= lira["auc_pooled"]
            tpr_ok = row["tpr_0.01"] >= lira["tpr_0.01"]
            verdicts.append(
                f"{data} {model}: {variant}, 4 references: AUC {row['auc_pooled']:.3f} vs {lira['auc_pooled']:.3f}, "
                f"TPR@1% {row['tpr_0.01']:.3f} vs {lira['tpr_0.01']:.3f} -> "
                f"{'reaches' if auc_ok and tpr_ok else 'falls short of'} offline LiRA with 64"
            )
            key = variant.replace("RMIA ", "rmia_").replace(", γ = ", "_g")
            figures[f"{key}_4_auc"] = float(row["auc_pooled"])
            figures[f"{key}_4_tpr"] = float(row["tpr_0.01"])
            figures[f"{key}_4_reaches"] = bool(auc_ok and tpr_ok)
        headline[run] = {k: (round(v, 4) if isinstance(v, float) and math.isfinite(v) else v) for k, v in figures.items()}
    print("\n".join(lines))
    print()
    print("\n".join(verdicts))
    print(json.dumps(headline, sort_keys=True))


if __name__ == "__main__":
    main()
