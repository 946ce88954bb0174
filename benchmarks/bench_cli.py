"""The command's own costs, whole processes timed from outside (median of several runs of each):

1. start-up: ``privgame --help`` and ``privgame list`` against ``python -c pass`` (targets: --help ≤ 1 s);
2. the quickstart (``experiments/quickstart.toml``) with ``--n-jobs 1`` and ``--n-jobs 2``, a fresh ``--out``
   each run (target: 2 workers no slower than 1);
3. DP-SGD: a quick white-box config (``experiments/dpsgd_whitebox_quick.toml`` at one repetition per ε) run
   twice into fresh directories with a fresh artefact cache, the first run calibrating σ for its four ε and the
   second finding them in the cache; then ``privgame report`` on its results (target: ≤ 2 s).

Ends with one JSON line: ``python_seconds``, ``help_seconds``, ``list_seconds`` (and their ratios to python),
``quickstart_seconds_1``, ``quickstart_seconds_2``, ``quickstart_ratio_2_to_1`` (the median ratio of runs
taken in turn), ``dpsgd_run_cold_seconds``, ``dpsgd_run_warm_seconds``,
``report_dpsgd_seconds``, the run counts, the cores and the load average when it started (timings taken on a
loaded machine are inflated).  ``privgame`` is the console script beside this interpreter (``python -m
privgame.engine.cli`` where there is none).  ``--quick`` runs each command fewer times (a smoke test).
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
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "experiments" / "quickstart.toml"
DPSGD = ROOT / "experiments" / "dpsgd_whitebox_quick.toml"


def privgame() -> list[str]:
    script = Path(sys.executable).with_name("privgame")
    return [str(script)] if script.exists() else [sys.executable, "-m", "privgame.engine.cli"]


def timed(command: list[str], env: dict[str, str] | None = None) -> float:
    """Seconds for ``command`` to run to completion (it must succeed)."""
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return seconds


def median_of(runs: int, command: list[str], env: dict[str, str] | None = None) -> float:
    return statistics.median(timed(command, env) for _ in range(runs))


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return repr(value)


def quick_dpsgd_config(path: Path) -> Path:
    """``dpsgd_whitebox_quick.toml`` at one repetition per ε (the four ε still need four σ calibrations)."""
    config = tomllib.loads(DPSGD.read_text())
    config["experiment"]["repetitions"] = 1
    lines = []
    for section, values in config.items():
        lines.append(f"[{section}]")
        lines += [f"{key} = {_toml(value)}" for key, value in values.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs of each command (smoke test)")
    args = parser.parse_args()
    startup_runs, run_runs = (3, 1) if args.quick else (7, 5)
    load = os.getloadavg()[0]
    cmd = privgame()
    print(f"{os.cpu_count()} cores, load average {load:.2f} at the start; privgame = {' '.join(cmd)}")

    python_s = median_of(startup_runs, [sys.executable, "-c", "pass"])
    help_s = median_of(startup_runs, [*cmd, "--help"])
    list_s = median_of(startup_runs, [*cmd, "list"])
    print(f"python -c pass: {python_s:.3f} s; privgame --help: {help_s:.3f} s ({help_s / python_s:.1f}x); ", end="")
    print(f"privgame list: {list_s:.3f} s ({list_s / python_s:.1f}x)  (median of {startup_runs})")

    with tempfile.TemporaryDirectory(prefix="bench_cli.") as tmp:
        work = Path(tmp)
        # the two run in turn (1, 2, 1, 2 ...) and are compared pair by pair, so that the machine's drift
        # during the benchmark (a few tenths of a second on a shared VM) does not decide the comparison
        times: dict[int, list[float]] = {1: [], 2: []}
        for k in range(run_runs):
            for n_jobs in (1, 2):
                out = work / f"quickstart-{n_jobs}-{k}"
                times[n_jobs].append(
                    timed([*cmd, "run", str(QUICKSTART), "--out", str(out), "--no-progress", "--n-jobs", str(n_jobs)])
                )
        quick = {n: statistics.median(t) for n, t in times.items()}
        ratio = statistics.median(b / a for a, b in zip(times[1], times[2], strict=True))
        print(
            f"quickstart (100 trials): --n-jobs 1 {quick[1]:.2f} s, --n-jobs 2 {quick[2]:.2f} s "
            f"(median of {run_runs}, fresh --out each); paired ratio 2 / 1: {ratio:.3f}"
        )

        env = {**os.environ, "PRIVGAME_CACHE_DIR": str(work / "cache")}  # empty: the first run calibrates σ
        config = quick_dpsgd_config(work / "dpsgd_whitebox_bench.toml")
        run = [*cmd, "run", str(config), "--no-progress", "--n-jobs", "2"]
        cold = timed([*run, "--out", str(work / "dpsgd-cold")], env)
        warm = timed([*run, "--out", str(work / "dpsgd-warm")], env)
        print(f"DP-SGD white-box, 4 ε x 1 trial: {cold:.1f} s with σ calibration, {warm:.1f} s with σ cached")
        report_s = median_of(startup_runs, [*cmd, "report", str(work / "dpsgd-warm")], env)
        print(f"privgame report on it: {report_s:.2f} s (median of {startup_runs})")

    print(
        json.dumps(
            {
                "python_seconds": round(python_s, 4),
                "help_seconds": round(help_s, 4),
                "list_seconds": round(list_s, 4),
                "help_ratio": round(help_s / python_s, 2),
                "list_ratio": round(list_s / python_s, 2),
                "quickstart_seconds_1": round(quick[1], 3),
                "quickstart_seconds_2": round(quick[2], 3),
                "quickstart_ratio_2_to_1": round(ratio, 3),
                "dpsgd_run_cold_seconds": round(cold, 2),
                "dpsgd_run_warm_seconds": round(warm, 2),
                "report_dpsgd_seconds": round(report_s, 3),
                "startup_runs": startup_runs,
                "run_runs": run_runs,
                "cores": os.cpu_count(),
                "load_average": round(load, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
