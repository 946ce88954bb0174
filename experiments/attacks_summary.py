"""Tabulate RMIA against LiRA at equal reference models per sample (issue 26) on the four comparison runs' models.

    for c in adult_mlp compas_mlp adult_gbt compas_gbt; do
        privgame run experiments/attacks_lira_$c.toml --out runs/attacks_lira_$c --n-jobs 1
    done
    python experiments/attacks_summary.py [--runs runs]

Every attack of a run plays the same 256 models (tests/engine/test_compare.py checks that they read the same
confidences), so this script reads the stored confidences of one trial and scores every variant on them with the
attacks' own ``efficient_scores``: RMIA offline and online at γ = 1 and 2, LiRA offline and online with a fixed and
a per-example σ, each at k = 1, 2, 4, 16 and 64 reference models per sample where the variant allows k.  The numbers
are those ``privgame report --compare`` gives for the same grid points (pooled AUC; TPR at a realised FPR <= 1 %).
Prints one Markdown table, then per data set and model whether RMIA with 4 references reaches offline LiRA with 64
on both numbers; the last line is one JSON object of the headline figures.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from privgame.analysis.calibration import pooled_auc
from privgame.analysis.record_risk import tpr_at_fpr
from privgame.attacks.lira import LiRA
from privgame.attacks.rmia import RMIA
from privgame.engine.store import ResultsStore

RUNS = ("adult_mlp", "compas_mlp", "adult_gbt", "compas_gbt")
REFERENCES = (1, 2, 4, 16, 64)
VARIANTS = {
    "RMIA offline, γ = 1": lambda k: RMIA(online=False, gamma=1.0, references=k),
    "RMIA offline, γ = 2": lambda k: RMIA(online=False, gamma=2.0, references=k),
    "RMIA online, γ = 1": lambda k: RMIA(online=True, gamma=1.0, references=k),
    "RMIA online, γ = 2": lambda k: RMIA(online=True, gamma=2.0, references=k),
    "LiRA offline, fixed σ": lambda k: LiRA(online=False, fix_variance=True, references=k),
    "LiRA offline": lambda k: LiRA(online=False, references=k),
    "LiRA online, fixed σ": lambda k: LiRA(online=True, fix_variance=True, references=k),
    "LiRA online": lambda k: LiRA(online=True, references=k),
}


def _score(variant: str, k: int, confidence: np.ndarray, member: np.ndarray) -> tuple[float, float] | None:
    try:
        attack = VARIANTS[variant](k)
    except ValueError:  # k not allowed for this variant (odd online, too few per side for a per-example σ)
        return None
    scores, valid, _ = attack.efficient_scores(confidence, member, fpc=0.5)
    s, b = scores[valid], member[valid]
    return pooled_auc(s, b), tpr_at_fpr(s, b, 0.01)[0]


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
    started = time.perf_counter()
    for run in RUNS:
        root = Path(args.runs) / f"attacks_lira_{run}"
        if not (root / "manifest.json").is_file():
            print(f"(no results in {root}: run experiments/attacks_lira_{run}.toml first)")
            continue
        store = ResultsStore(root)
        outcome = store.load_outcome(int(store.rows()["trial"].min()))
        m, n = (int(v) for v in outcome.arrays["shape"])
        confidence, member = outcome.arrays["confidence"], outcome.membership.reshape(m, n)
        data, model = run.split("_")
        got = {(v, k): _score(v, k, confidence, member) for v in VARIANTS for k in REFERENCES}
        for variant in VARIANTS:
            cells = [
                ("—" if got[variant, k] is None else "{:.3f} / {:.3f}".format(*got[variant, k])) for k in REFERENCES
            ]
            lines.append(f"| {data.capitalize()} | {model.upper()} | {variant} | " + " | ".join(cells) + " |")
        lira = got["LiRA offline", 64]
        assert lira is not None
        figures: dict[str, float | bool] = {
            "lira_offline_64_auc": round(lira[0], 4),
            "lira_offline_64_tpr": round(lira[1], 4),
        }
        for variant in (v for v in VARIANTS if v.startswith("RMIA")):
            rmia = got[variant, 4]
            assert rmia is not None
            reaches = rmia[0] >= lira[0] and rmia[1] >= lira[1]
            verdicts.append(
                f"{data} {model}: {variant}, 4 references: AUC {rmia[0]:.3f} vs {lira[0]:.3f}, TPR@1% {rmia[1]:.3f} "
                f"vs {lira[1]:.3f} -> {'reaches' if reaches else 'falls short of'} offline LiRA with 64"
            )
            key = variant.replace("RMIA ", "rmia_").replace(", γ = ", "_g")
            figures[f"{key}_4_auc"], figures[f"{key}_4_tpr"] = round(rmia[0], 4), round(rmia[1], 4)
            figures[f"{key}_4_reaches"] = reaches
        headline[run] = figures
    print("\n".join(lines))
    print()
    print("\n".join(verdicts))
    print(f"({time.perf_counter() - started:.0f} s)")
    print(json.dumps(headline, sort_keys=True))


if __name__ == "__main__":
    main()
