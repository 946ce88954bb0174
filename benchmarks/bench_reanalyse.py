"""Reanalysis against replay: the white-box DP-SGD results analysed again with every estimator, per trial.

1. Replay: ``experiments/dpsgd_whitebox_quick.toml`` (one-run game, m = 1,000 Dirac canaries, ε ∈ {1, 2, 4, 8},
   4 repetitions) run into a temporary directory; a trial's replay time is its stored ``seconds`` (training and
   its own bound), the σ calibration excluded (it is done once, before the trials).
2. Reanalysis: ``privgame reanalyse`` of that directory with ``estimators = ["steinke", "fdp", "fdp_pure"]`` at
   δ = 1e-5 (``fdp`` is the PLD family of DP-SGD's own q and T, the costly one), timed as a whole and per trial.
3. The reanalysis with the stored settings reproduces the stored rows (checked).

Ends with one JSON line: ``reanalyse_seconds_per_trial``, ``replay_seconds_per_trial``, ``replay_over_reanalyse``,
``trials`` and the estimators.  ``--quick`` uses the quickstart (randomized response) instead (a smoke test).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import warnings
from pathlib import Path

from privgame.engine.config import load_config
from privgame.engine.reanalyse import reanalyse
from privgame.engine.runner import run_experiment

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the quickstart instead of white-box DP-SGD")
    args = parser.parse_args()
    name = "quickstart" if args.quick else "dpsgd_whitebox_quick"
    estimators = ["steinke", "fdp", "fdp_pure"] if not args.quick else ["steinke", "fdp"]
    delta = 0.0 if args.quick else 1e-5
    config = load_config(ROOT / "experiments" / f"{name}.toml")
    print(f"cores: {os.cpu_count()}; experiment {name}: {config.n_trials} trials")
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        store = run_experiment(config, Path(tmp) / "run", n_jobs=1, progress=False)
        run_seconds = time.perf_counter() - start
        replay = float(store.rows()["seconds"].mean())
        print(f"replay: the run took {run_seconds:.1f} s; a trial {replay:.3f} s (mean of the stored seconds)")

        start = time.perf_counter()
        same = reanalyse(store.root, Path(tmp) / "same", {}, progress=False)
        same_seconds = time.perf_counter() - start
        keep = [c for c in store.rows().columns if not c.startswith("sha256")]
        assert same.rows()[keep].equals(store.rows()[keep]), "the stored settings must reproduce the stored rows"
        print(f"reanalysis with the stored settings: {same_seconds:.2f} s, rows identical to the stored ones")

        start = time.perf_counter()
        new = reanalyse(store.root, Path(tmp) / "all", {"estimators": estimators, "delta": delta}, progress=False)
        all_seconds = time.perf_counter() - start
        per_trial = all_seconds / config.n_trials
        rows = new.rows()
        labels = [c.removesuffix(".epsilon_lb") for c in rows.columns if c.endswith(".epsilon_lb")]
        print(
            f"reanalysis with {', '.join(labels)}: {all_seconds:.1f} s, {per_trial:.3f} s a trial; replaying is "
            f"{replay / per_trial:.1f}x that"
        )
        for label in labels:
            medians = rows.groupby("grid_point")[f"{label}.epsilon_lb"].median().round(3).tolist()
            print(f"  {label}: median bound per grid point {medians}")
    print(
        json.dumps(
            {
                "experiment": name,
                "trials": config.n_trials,
                "estimators": labels,
                "reanalyse_seconds_per_trial": round(per_trial, 4),
                "replay_seconds_per_trial": round(replay, 4),
                "replay_over_reanalyse": round(replay / per_trial, 2),
                "reanalyse_stored_settings_seconds": round(same_seconds, 3),
                "cores": os.cpu_count(),
            }
        )
    )


if __name__ == "__main__":
    main()
