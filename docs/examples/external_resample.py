"""The smallest generator that keeps privgame's external contract: draw rows of the training table with replacement.

Standard library only, so any Python 3 runs it, in any environment (docs/generators.md).  Not private: it
copies records.

    python external_resample.py --train TRAIN.csv --out OUT.csv --seed SEED --rows ROWS
    python external_resample.py --jobs JOBS.json

The same seed gives the same file: every draw comes from ``random.Random(seed)``.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys


def resample(train: str, out: str, seed: int, rows: int) -> None:
    """Write ``rows`` rows drawn with replacement from ``train`` (header kept) to ``out``."""
    with open(train, newline="", encoding="utf-8") as fh:
        header, *records = list(csv.reader(fh))
    draw = random.Random(seed)
    with open(out, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(draw.choice(records) for _ in range(rows))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train")
    ap.add_argument("--out")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--rows", type=int)
    ap.add_argument("--jobs", help="a JSON list of runs, all run by this process")
    args = ap.parse_args()
    if args.jobs is None:
        resample(args.train, args.out, args.seed, args.rows)
        return 0
    with open(args.jobs, encoding="utf-8") as fh:
        jobs = json.load(fh)["jobs"]
    failed = 0
    for k, job in enumerate(jobs):
        try:
            resample(job["train"], job["out"], job["seed"], job["rows"])
        except (OSError, ValueError) as exc:  # one failed job is named, and the others still run
            print(f"job {k} (seed {job['seed']}): {exc}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
