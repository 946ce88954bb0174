"""A toy generator program for the external generator's tests (tests/mechanisms/synth, tests/games)."""

from __future__ import annotations

import textwrap

# A generator program: resamples the training rows with a seeded numpy generator; MODE (an environment variable or
# the --mode argument) makes it misbehave in one way.
PROGRAM = textwrap.dedent(
    """
    import argparse, json, os, subprocess, sys, time
    import numpy as np, pandas as pd
    ap = argparse.ArgumentParser()
    for name in ("train", "out", "schema", "jobs", "mode", "pidfile"):
        ap.add_argument("--" + name)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--rows", type=int)
    a = ap.parse_args()
    mode = a.mode or os.environ.get("TOY_MODE", "ok")

    def one(k, train, out, seed, rows):
        t = pd.read_parquet(train) if train.endswith(".parquet") else pd.read_csv(train)
        s = t.iloc[np.random.default_rng(seed).integers(0, len(t), rows)].copy()
        bad = mode if (not mode.endswith("@1") or k == 1) else "ok"
        bad = bad.split("@")[0]
        if bad == "crash":
            print("loading the model", file=sys.stderr)
            print("ValueError: the generator broke", file=sys.stderr)
            sys.exit(3)
        if bad == "hang":
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
            open(a.pidfile, "w").write(str(child.pid))
            time.sleep(60)
        if bad == "nothing":
            return
        if bad == "outside":
            s.iloc[2, s.columns.get_loc("age")] = 150
        if bad == "category":
            s["sex"] = s["sex"].astype(str)
            s.iloc[4, s.columns.get_loc("sex")] = "Unknown"
        if bad == "fraction":
            s["age"] = s["age"].astype(float)
            s.iloc[0, s.columns.get_loc("age")] = 40.5
        if bad == "missing":
            s["age"] = s["age"].astype(float)
            s.iloc[1, s.columns.get_loc("age")] = float("nan")
        if bad == "columns":
            s = s.drop(columns=["age"])
        if bad == "rows":
            s = s.iloc[:-1]
        if bad == "malformed":
            open(out, "w").write('age,sex\\n1\\n"x')
            return
        if bad == "empty":
            open(out, "w").close()
            return
        if bad == "fifo":
            os.mkfifo(out)
            return
        if bad == "link":
            os.symlink("/dev/zero", out)
            return
        if bad == "env":
            s = s.iloc[:0]
            s.to_csv(out, index=False)
            print(os.environ.get("PYTHONPATH", "-"), os.environ.get("VIRTUAL_ENV", "-"), file=sys.stderr)
            return
        if bad == "exit":
            s.to_csv(out, index=False)
            sys.exit(4)
        if out.endswith(".parquet"):
            s.to_parquet(out, index=False)
        else:
            s.to_csv(out, index=False)

    if a.jobs:
        spec = json.load(open(a.jobs))
        failed = 0
        for k, job in enumerate(spec["jobs"]):
            try:
                one(k, job["train"], job["out"], job["seed"], job["rows"])
            except SystemExit:
                failed += 1
        sys.exit(1 if failed else 0)
    one(0, a.train, a.out, a.seed, a.rows)
    """
)
