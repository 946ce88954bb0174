"""Real bugs of released Opacus versions, caught (or not) by a one-run white-box audit of the version as released.

For each bug, the last released version that has it and the first that fixed it are installed from the package
index, each into its own folder (``pip install --no-deps --target experiments/.envs/opacus-VERSION``; once
installed, a folder is reused and nothing is downloaded again), and audited the same way in a process that
imports that Opacus: ``dpsgd-loop`` with a loop of ``experiments/released_loops.py`` written against the
version's public API, and privgame's canary rows (m = 1,000 canaries as rows of the training set, each with a raw
gradient of norm 4C on a canary layer), which Opacus samples, differentiates, clips and noises with its own code.
Nothing in Opacus is patched.  The claim is DP-SGD's PLD at (q, σ, T) calibrated to ε = 2 at δ = 1e-5 (q = 0.1,
T = 100, 1,000 digits rows, the MLP 64 → 32 → 10); a repetition refutes it when the 95 % lower bound exceeds it.

The bugs (Opacus's tracker; found and reproduced in the issue "Audit the real code"):

* ``opacus-664``: fast gradient clipping wrapped the model without ``max_grad_norm`` (PR #664), so Opacus 1.5 to
  1.5.2 clip every example at 1.0 while the noise is σC: at C = 0.25 a canary of raw norm 4C = 1 passes whole.
* ``opacus-751``: fast gradient clipping took the norm of a ``Linear`` bias on a sequence input as
  ‖Σ_t g_t g_tᵀ‖_F instead of ‖Σ_t g_t‖ (PR #751; 1.5 to 1.5.3, here 1.5.3, where #664 is fixed): the canaries sit
  on such a bias (``canary_layer = "sequence-bias"``, T = 16), whose norm 4C is read as 16C²/16 = 1 at C = 1.
* ``opacus-330``: ``DPOptimizer.step(closure)`` handed the closure to the wrapped optimizer, which reran it and
  stepped on the raw gradients (PR #330; 1.0.0 and 1.0.1): no clipping and no noise.
* ``shuffled-as-poisson``: not a version's bug but a practice every Opacus 1.x allows without a warning:
  ``poisson_sampling=False`` keeps a shuffling loader (each row once per epoch) while the accountant assumes Poisson
  sampling at 1/len(loader) (Chua et al., ICML 2024); audited beside the same version's Poisson loop.

Run: ``python experiments/released_bugs.py [--reps-buggy 5] [--reps-fixed 20] [--bugs opacus-664,...]
[--out runs/released_bugs] [--n-jobs 2]``.  Each version's audit is a privgame results directory under ``--out``
(a killed run resumes where it stopped).  Prints a table and ends with ONE JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ENVS = HERE / ".envs"
MARKER = ".privgame-installed"

BUGS: dict[str, dict[str, Any]] = {
    "opacus-664": {
        "buggy": "1.5.2",
        "fixed": "1.5.3",
        "bug": "fast gradient clipping clips at 1.0, not max_grad_norm (PR #664)",
        "mechanism": {"loop": "released_loops:ghost", "clip_norm": 0.25},
    },
    "opacus-751": {
        "buggy": "1.5.3",
        "fixed": "1.5.4",
        "bug": "fast gradient clipping's bias norm on sequences is ‖Σ g gᵀ‖_F (PR #751)",
        "mechanism": {
            "loop": "released_loops:ghost",
            "clip_norm": 1.0,
            "canary_layer": "sequence-bias",
            "canary_positions": 16,
        },
    },
    "opacus-330": {
        "buggy": "1.0.1",
        "fixed": "1.0.2",
        "bug": "step(closure) steps on the raw gradients (PR #330)",
        "mechanism": {"loop": "released_loops:closure", "clip_norm": 1.0},
    },
    # not a bug of a version: a practice every Opacus 1.x allows (poisson_sampling=False, no warning), beside the
    # same version's Poisson sampling
    "shuffled-as-poisson": {
        "buggy": "1.6.0",
        "fixed": "1.6.0",
        "bug": "shuffled batches accounted as Poisson sampling (poisson_sampling=False; Chua et al. 2024)",
        "mechanism": {"loop": "released_loops:shuffled", "clip_norm": 1.0},
        "fixed_mechanism": {"loop": "released_loops:hooks"},
    },
}
ESTIMATORS = ("steinke", "fdp_pld", "order_stats_pld")


def config(bug: str, version: str, reps: int, kind: str = "buggy") -> dict[str, Any]:
    """The audit of one version: the same game, claim and seeds for every version."""
    return {
        "experiment": {"name": f"{bug}-{kind}-{version}", "seed": 2026, "repetitions": reps},
        "game": {"name": "one-run", "m": 1000, "k_pos": 100, "k_neg": 100, "data": "digits", "train_rows": 1000},
        "mechanism": {
            "name": "dpsgd-loop",
            "model": "mlp",
            "epsilon": 2.0,
            "delta": 1e-5,
            "sampling_rate": 0.1,
            "steps": 100,
            "learning_rate": 0.5,
            **BUGS[bug]["mechanism"],
            **(BUGS[bug].get("fixed_mechanism", {}) if kind == "fixed" else {}),
        },
        "attack": {"name": "identity"},
        # order statistics need independent canaries: Opacus clips each example and noises each coordinate itself
        # (what opacus-whitebox declares); dpsgd-loop cannot check that of a loop it does not run, so it is asserted
        "analysis": {
            "confidence": 0.95,
            "delta": 1e-5,
            "estimators": ["steinke", "fdp", "order_stats"],
            "allow_dependent_canaries": True,
        },
    }


def fail(message: str) -> NoReturn:
    """One line on stderr, exit status 2 (a version that cannot be installed, an audit that failed)."""
    print(f"released_bugs: {message}", file=sys.stderr)
    raise SystemExit(2)


def install(version: str) -> Path:
    """The folder holding Opacus ``version`` as released, installed once (no dependencies: the venv's torch)."""
    target = ENVS / f"opacus-{version}"
    marker = target / MARKER
    if marker.is_file() and marker.read_text().strip() == version:
        return target
    print(f"installing opacus=={version} into {target} ...", file=sys.stderr, flush=True)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), f"opacus=={version}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
        fail(f"cannot install opacus=={version} from the package index: {' '.join(last.split())}")
    marker.write_text(version + "\n")
    return target


def worker(bug: str, kind: str, reps: int, out: Path, n_jobs: int) -> dict[str, Any]:
    """Audit one version in this process (which must import that version); the summary of its repetitions."""
    import opacus

    import privgame
    from privgame.analysis.verdict import verdict_columns

    version = BUGS[bug][kind]
    if opacus.__version__ != version:
        fail(f"this process imports opacus {opacus.__version__}, expected {version}")
    start = time.perf_counter()
    with privgame.run(config(bug, version, reps, kind), out, n_jobs=n_jobs, progress=False, cache=False) as results:
        trials = results.trials()
    seconds = time.perf_counter() - start
    claim = float(trials["epsilon_analytic"].iloc[0])
    row: dict[str, Any] = {"version": version, "claim": round(claim, 3), "reps": len(trials)}
    for est in ESTIMATORS:
        # the order-statistics column is named ..._dependent: its independence is asserted (config above)
        column = next(c for c in (f"{est}.epsilon_lb", f"{est}_dependent.epsilon_lb") if c in trials)
        lb = trials[column].astype(float)
        verdict = verdict_columns(lb.to_numpy(), claim, 0.95)  # one binomial test of the exceedances per claim
        row[est] = {
            "median": round(float(lb.median()), 3),
            "over_claim": int(verdict["over_claim"]),
            "allowed": int(verdict["over_claim_allowed"]),
            "verdict": verdict["verdict"],
        }
    row["seconds_per_audit"] = round(float(trials["seconds"].median()), 1)
    row["seconds"] = round(seconds, 1)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--bugs", default=",".join(BUGS), help="comma-separated, of: " + ", ".join(BUGS))
    parser.add_argument("--reps-buggy", type=int, default=5)
    parser.add_argument("--reps-fixed", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("runs/released_bugs"))
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--worker", nargs=3, metavar=("BUG", "KIND", "REPS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        bug, kind, reps = args.worker
        out = args.out / f"{bug}-{kind}-{BUGS[bug][kind]}"
        print(json.dumps(worker(bug, kind, int(reps), out, args.n_jobs)))
        return 0
    bugs = [b.strip() for b in args.bugs.split(",") if b.strip()]
    unknown = [b for b in bugs if b not in BUGS]
    if unknown:
        parser.error(f"--bugs must name bugs among {', '.join(BUGS)}, got {', '.join(unknown)}")
    rows = []
    for bug in bugs:
        for kind in ("buggy", "fixed"):
            version = BUGS[bug][kind]
            env = install(version)
            reps = args.reps_buggy if kind == "buggy" else args.reps_fixed
            path = os.pathsep.join([str(env), str(HERE), str(ROOT), os.environ.get("PYTHONPATH", "")])
            cmd = [sys.executable, __file__, "--worker", bug, kind, str(reps), "--out", str(args.out)]
            cmd += ["--n-jobs", str(args.n_jobs)]
            done = subprocess.run(cmd, env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True)
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or ["failed"])[-1]
                fail(f"the audit of opacus {version} ({bug}) failed: {' '.join(last.split())}")
            row = {"bug": bug, "library": "opacus", "kind": kind, "what": BUGS[bug]["bug"]}
            row |= json.loads(done.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(
                f"{bug:<11} opacus {version:<6} {kind:<5} claim ε {row['claim']:.2f}  "
                + "  ".join(
                    f"{e} {row[e]['median']:.2f} ({row[e]['over_claim']}/{row['reps']} over, {row[e]['verdict']})"
                    for e in ESTIMATORS
                )
                + f"  {row['seconds_per_audit']:.0f} s per audit",
                flush=True,
            )
    print(json.dumps({"released_bugs": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
