"""Run every benchmark in its ``--quick`` mode and check it ends with ONE JSON line, so a broken benchmark fails CI.

Run: ``python benchmarks/smoke.py [--only bench_dpsgd ...] [--timeout SECONDS]`` (``.ci/run`` runs it after the
tests).  Each ``benchmarks/bench_*.py`` is run as its own process with ``--quick``; a benchmark fails the smoke test
when it exits with a non-zero status, runs past the timeout, or its last line of output is not a JSON object.
Prints one line per benchmark (status and seconds) and ends with ONE JSON line: ``{"<benchmark>": seconds, ...,
"failed": [...]}``.  Exits 1 when any benchmark failed.  The figures of a quick run are not the benchmarks'
targets: it only proves that the benchmark runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def last_json(stdout: str) -> dict[str, object] | None:
    """The benchmark's last non-empty line parsed as a JSON object, or None."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines:
        return None
    try:
        value = json.loads(lines[-1])
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=HERE, help="the folder of the bench_*.py files (default: here)")
    parser.add_argument("--only", nargs="+", default=None, help="benchmark names (e.g. bench_dpsgd); default: all")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per benchmark (default 900)")
    args = parser.parse_args(argv)
    benches = sorted(p for p in args.dir.glob("bench_*.py"))
    if args.only:
        unknown = sorted(set(args.only) - {p.stem for p in benches})
        if unknown:
            parser.error(f"--only must name benchmarks among {', '.join(p.stem for p in benches)}, got {unknown}")
        benches = [p for p in benches if p.stem in args.only]
    env = {**os.environ, "MPLBACKEND": "Agg"}
    seconds: dict[str, float] = {}
    failed: list[str] = []
    for bench in benches:
        start = time.perf_counter()
        try:
            done = subprocess.run(
                [sys.executable, str(bench), "--quick"],
                cwd=HERE.parent,  # the project's root, as when run by hand
                capture_output=True,
                text=True,
                timeout=args.timeout,
                env=env,
                check=False,
            )
            problem = (
                f"exit status {done.returncode}"
                if done.returncode != 0
                else None
                if last_json(done.stdout) is not None
                else "its last line is not a JSON object"
            )
            output = done.stdout + done.stderr
        except subprocess.TimeoutExpired as exc:
            problem = f"ran past {args.timeout:g} s"
            output = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
        seconds[bench.stem] = round(time.perf_counter() - start, 1)
        if problem is None:
            print(f"{bench.stem:22s} ok      {seconds[bench.stem]:7.1f} s", flush=True)
            continue
        failed.append(bench.stem)
        print(f"{bench.stem:22s} FAILED  {seconds[bench.stem]:7.1f} s: {problem}", flush=True)
        tail = "\n".join(output.splitlines()[-20:])
        print(f"--- last lines of {bench.name} ---\n{tail}\n---", flush=True)
    print(json.dumps({**seconds, "failed": failed}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
