"""Loading a user's data file and checking it against its domain file: 50,000 rows × 20 columns.

The columns: 8 integer (ranges 0..100 to 0..10^6), 6 float, 6 categorical (2 to 50 categories), written as a CSV
with a domain file that declares them; ``privgame.data.files.open_source`` reads the domain, hashes the file,
parses every cell, checks it against its column's domain and types the table (what reading a config with
``[data] path`` does).  Target (issue 23): ≤ 1 s.  Prints readable lines and ends with ONE JSON line:
``load_seconds`` (median of the runs, a fresh file each so no per-process cache helps), ``rows``, ``columns``,
``target_met``.  ``--quick``: 5,000 rows, two runs (a smoke test).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from privgame.data import PublicDomain
from privgame.data.files import domain_text, open_source


def table(rows: int, seed: int) -> tuple[pd.DataFrame, PublicDomain]:
    """A frame of ``rows`` × 20 columns and its domain."""
    rng = np.random.default_rng(seed)
    columns: dict[str, object] = {}
    ranges: list[tuple[str, object, object]] = []
    categories: list[tuple[str, tuple[str, ...]]] = []
    for k in range(8):
        high = 10 ** (2 + k % 5)
        columns[f"i{k}"] = rng.integers(0, high + 1, rows)
        ranges.append((f"i{k}", 0, high))
    for k in range(6):
        columns[f"f{k}"] = np.round(rng.normal(50.0, 10.0, rows).clip(0.0, 100.0), 3)
        ranges.append((f"f{k}", 0.0, 100.0))
    for k in range(6):
        labels = tuple(f"c{k}_{j}" for j in range(2 + 8 * k + (k == 5) * 8))
        columns[f"c{k}"] = rng.choice(labels, rows)
        categories.append((f"c{k}", labels))
    names = tuple(columns)
    domain = PublicDomain("bench", names, tuple(categories), tuple(ranges), floats=tuple(f"f{k}" for k in range(6)))
    return pd.DataFrame(columns), domain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5,000 rows, two runs (a smoke test)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    rows, runs = (5_000, 2) if args.quick else (50_000, args.runs)
    times = []
    with tempfile.TemporaryDirectory() as folder:
        for run in range(runs):
            frame, domain = table(rows, seed=run)
            data, domain_file = Path(folder) / f"data{run}.csv", Path(folder) / f"data{run}.domain.toml"
            frame.to_csv(data, index=False)
            domain_file.write_text(domain_text(domain))
            start = time.perf_counter()
            source = open_source(data, domain_file)
            times.append(time.perf_counter() - start)
            assert source.size == rows
            print(f"run {run}: {rows:,} rows × {frame.shape[1]} columns read and checked in {times[-1]:.3f} s")
    median = statistics.median(times)
    print(f"median {median:.3f} s (target: <= 1 s at 50,000 rows)")
    print(json.dumps({"load_seconds": round(median, 4), "rows": rows, "columns": 20, "target_met": median <= 1.0}))


if __name__ == "__main__":
    main()
