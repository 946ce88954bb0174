"""Audit each released generator through the external mechanism in both record games, on one and on two workers,
and check that the two give the same rows.

For every config named (default: every ``experiments/generators/*_adult.toml``), ``privgame run`` plays it twice,
with ``--n-jobs 1`` and ``--n-jobs 2``, each into its own results directory and its own fresh artefact cache (so the
second run recomputes every generator run rather than reading the first's).  The trials of the two (every column but
``seconds``) must be equal.  Prints one line per generator (claim, mean AUC of each game, the records at risk, the
empirical ε lower bound of the model-seeded game, seconds) and ONE JSON line with all of it.

    python experiments/generators/audit_all.py [CONFIG ...] [--out runs/gen_check]

The environments must exist: ``python experiments/generators/build_env.py datasynthesizer ctgan sdv``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import privgame

HERE = Path(__file__).resolve().parent


def play(config: Path, out: Path, n_jobs: int) -> float:
    """``privgame run`` into a fresh ``out`` with a fresh cache; its wall seconds."""
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    command = [str(Path(sys.executable).parent / "privgame"), "run", str(config), "--out", str(out / "results")]
    command += ["--cache-dir", str(out / "cache"), "--n-jobs", str(n_jobs), "--no-progress"]
    subprocess.run(command, check=True)
    return time.perf_counter() - start


def summary(results: Any) -> dict[str, Any]:
    trials = results.trials()
    claim = float(trials["epsilon_analytic"].iloc[0])
    row: dict[str, Any] = {"targets": len(trials), "claim": "none" if claim != claim else round(claim, 3)}
    for game in ("traditional", "model_seeded"):
        row[f"auc_{game}"] = round(float(trials[f"auc_{game}"].mean()), 3)
        row[f"auc_{game}_max"] = round(float(trials[f"auc_{game}"].max()), 3)
        row[f"epsilon_lb_{game}_max"] = round(float(trials[f"epsilon_lb_{game}"].max()), 3)
    row["runs"] = int(trials["mechanism_runs"].sum())
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("configs", nargs="*", type=Path)
    ap.add_argument("--out", type=Path, default=Path("runs/gen_check"))
    args = ap.parse_args()
    configs = args.configs or sorted(HERE.glob("*_adult.toml"))
    report: dict[str, Any] = {}
    for config in configs:
        name = config.stem.removesuffix("_adult")
        frames, seconds = [], {}
        for n_jobs in (1, 2):
            out = args.out / name / f"n_jobs_{n_jobs}"
            seconds[n_jobs] = round(play(config, out, n_jobs), 1)
            with privgame.load(out / "results", trust_plugins=True) as results:
                frames.append(results.trials().drop(columns=["seconds"]))
                if n_jobs == 1:
                    row = summary(results)
        identical = frames[0].equals(frames[1])
        report[name] = {**row, "seconds_n_jobs_1": seconds[1], "seconds_n_jobs_2": seconds[2], "identical": identical}
        print(f"{name}: {report[name]}", flush=True)
    print(json.dumps(report, sort_keys=True))
    return 0 if all(r["identical"] for r in report.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
