"""Tight audits of DP table generators: a crafted pair of neighbouring datasets, many runs, Clopper–Pearson bounds.

The design of Annamalai, Ganev and De Cristofaro (USENIX Security 2024, arXiv 2405.10994): the worst case is a
small dataset in which the target is an outlier, and the attack reads what the generator is known to measure.
PrivBayes and MST publish noisy counts of marginals; a one-column table makes the target's whole influence a count
of its own category:

    D̄   = n − 1 records of category C (the "crowd")
    D₁  = D̄ ∪ {A}     (the target)
    D₀  = D̄ ∪ {B}     (replace-one: another outlier)   or   D̄   (add-remove)

In D₁ the count of A is 1 and of B is 0; in D₀ the reverse (or both 0).  The generator's noisy count of A (and of B)
is the whole evidence.  Scores:

- black box: the synthetic table only, with many rows (``--rows``): ĉ_X = n · (share of X among the synthetic
  rows), score = clip(ĉ_A, 0, 1) − clip(ĉ_B, 0, 1) (replace-one) or clip(ĉ_A, 0, 1) (add-remove): the clipped
  Laplace/Gaussian log-likelihood ratio of the counts, up to a factor;
- white box (privgame's PrivBayes only, ``--white-box``): the same score on the noisy counts themselves, before
  clipping (``PrivBayesModel.marginals``).

Runs go through :func:`privgame.mechanisms.cached.cached_release_many` (an external generator's batch mode
included) with their tables in an artefact cache: a killed audit resumes where it stopped.  The bounds:

- ``explicit``: the threshold fixed before any run (score ≥ 1 − 1e-9: ĉ_A ≥ 1 and, replace-one, ĉ_B ≤ 0; both counts
  at their extremes, the region of the largest likelihood ratio), Clopper–Pearson at 95 %;
- ``split``: a threshold chosen on a random half of the runs, bounded on the other half;
- ``gdp``: for Gaussian-noise generators (MST, AIM), μ from the same rates and its ε at δ.

Usage::

    python experiments/generators/tight_audit.py privbayes --epsilon 1 --beta 0.01 --runs 50000 --white-box
    python experiments/generators/tight_audit.py external --mechanism experiments/generators/datasynthesizer.toml ...

Prints a table and ONE JSON line of the results; ``--out FILE.json`` keeps them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

from privgame.analysis.multi_run import audit_scores, gdp_audit_scores
from privgame.analysis.thresholds import Explicit, Split
from privgame.core.cache import ArtefactCache
from privgame.core.outputs import OutputPathError, check_output_file, write_text
from privgame.engine.registry import MECHANISMS
from privgame.mechanisms._base import Mechanism
from privgame.mechanisms.cached import cached_release_many

CATEGORIES = ("A", "B", "C")
CHUNK = 250


def pair(
    n: int, neighbours: str, extra_columns: int, roles: str, vary_extra: bool = False
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The worst-case neighbouring datasets ``(D₁, D₀)``: the target among n − 1 records of the crowd's category,
    or the other outlier (or nothing) in its place.  ``roles``: the categories of target, other and crowd ("ABC":
    the target A among C's).  ``extra_columns`` categorical columns for generators that need several: constant
    ("p"), or with ``vary_extra`` alternating p, q over the crowd (for generators that drop constant columns)."""
    dtype = pd.CategoricalDtype(list(CATEGORIES))
    target, other, crowd_value = roles
    crowd = [crowd_value] * (n - 1)

    def table(values: list[str]) -> pd.DataFrame:
        columns: dict[str, Any] = {"v": pd.Categorical(values, dtype=dtype)}
        extra = ["p", *(("p", "q")[i % 2] if vary_extra else "p" for i in range(len(values) - 1))]
        for j in range(extra_columns):
            columns[f"x{j}"] = pd.Categorical(extra, dtype=pd.CategoricalDtype(["p", "q"]))
        return pd.DataFrame(columns)

    return table([target, *crowd]), table([other, *crowd] if neighbours == "replace" else crowd)


def black_box_score(synthetic: pd.DataFrame, n: int, neighbours: str, roles: str) -> float:
    """clip(ĉ_target, 0, 1) − clip(ĉ_other, 0, 1) from the synthetic rows' shares (ĉ_other left out for
    add-remove)."""
    shares = synthetic["v"].value_counts(normalize=True)
    c_a, c_b = n * float(shares.get(roles[0], 0.0)), n * float(shares.get(roles[1], 0.0))
    score = min(max(c_a, 0.0), 1.0)
    return score - min(max(c_b, 0.0), 1.0) if neighbours == "replace" else score


def white_box_score(mechanism: Mechanism, data: pd.DataFrame, seed: np.random.SeedSequence, roles: str) -> float:
    """The same score on PrivBayes's noisy counts of the column before clipping (the model it would publish)."""
    model = mechanism.fit(data, rng=np.random.default_rng(seed))  # type: ignore[attr-defined]
    counts = next(m.noisy_counts for m in model.marginals if m.columns == (0,))
    c_a, c_b = float(counts[CATEGORIES.index(roles[0])]), float(counts[CATEGORIES.index(roles[1])])
    return min(max(c_a, 0.0), 1.0) - min(max(c_b, 0.0), 1.0)


def _chunk(
    mechanism: Mechanism,
    data: pd.DataFrame,
    seeds: Sequence[np.random.SeedSequence],
    cache_dir: str | None,
    white_box: bool,
    n: int,
    neighbours: str,
    roles: str,
) -> list[float]:
    if white_box:
        return [white_box_score(mechanism, data, s, roles) for s in seeds]
    cache = ArtefactCache(Path(cache_dir)) if cache_dir else None
    tables = cached_release_many(mechanism, [data] * len(seeds), seeds=list(seeds), cache=cache)
    return [black_box_score(t, n, neighbours, roles) for t in tables]


def build(args: argparse.Namespace) -> Mechanism:
    if args.generator == "privbayes":
        cls = MECHANISMS.get("privbayes")
        return cls(epsilon=args.epsilon, k=0, beta=args.beta, n_rows=args.rows)
    if args.mechanism is None:
        sys.exit("tight_audit: error: external needs --mechanism FILE.toml (its [mechanism] table)")
    with open(args.mechanism, "rb") as fh:
        table = tomllib.load(fh)["mechanism"]
    name = table.pop("name")
    table.setdefault("n_rows", args.rows)
    return MECHANISMS.get(name)(**table)


def claimed_epsilon(mechanism: Mechanism, delta: float) -> float | None:
    claim = mechanism.privacy_claim()
    return None if claim is None else float(claim.epsilon(delta))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("generator", choices=("privbayes", "external"))
    ap.add_argument("--mechanism", help="external: a TOML file with the [mechanism] table")
    ap.add_argument("--epsilon", type=float, default=1.0, help="privbayes: ε (default 1)")
    ap.add_argument("--beta", type=float, default=0.5, help="privbayes: the structure's share of ε (default 0.5)")
    ap.add_argument("--n", type=int, default=50, help="records in each dataset (default 50)")
    ap.add_argument("--rows", type=int, default=20_000, help="synthetic rows per run (default 20,000)")
    ap.add_argument("--runs", type=int, default=20_000, help="runs per world (default 20,000)")
    ap.add_argument("--neighbours", choices=("replace", "add-remove"), default="replace")
    ap.add_argument("--extra-columns", type=int, default=0)
    ap.add_argument("--vary-extra", action="store_true", help="the extra columns alternate p, q over the crowd")
    ap.add_argument(
        "--roles",
        choices=("ABC", "CBA"),
        default="ABC",
        help="categories of the target, the other outlier and the crowd: ABC (default), or CBA (the target is the "
        "LAST category of the domain: a generator that cuts its domain at the largest value seen shows it)",
    )
    ap.add_argument("--delta", type=float, default=0.0, help="δ of the bounds (default 0; > 0 for zCDP claims)")
    ap.add_argument("--white-box", action="store_true", help="privbayes: score its noisy counts")
    ap.add_argument(
        "--threshold",
        type=float,
        default=1.0 - 1e-9,
        help="the a-priori threshold of the explicit bound (default 1 - 1e-9: the largest likelihood ratio; "
        "1e-9: any synthetic row of the target's category)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--cache-dir", default=None, help="artefact cache of the runs' tables (resume after a kill)")
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    args = ap.parse_args(argv)
    if args.white_box and args.generator != "privbayes":
        sys.exit(
            "tight_audit: error: --white-box reads privgame's PrivBayes model; external generators are black boxes"
        )
    if args.out is not None:  # refused before hours of runs, not after them
        try:
            check_output_file(args.out, what="--out", suffixes=(".json",))
        except OutputPathError as exc:
            sys.exit(f"tight_audit: error: {exc}")
    mechanism = build(args)
    d1, d0 = pair(args.n, args.neighbours, args.extra_columns, args.roles, args.vary_extra)
    root = np.random.SeedSequence(args.seed)
    start = time.perf_counter()
    scores = {}
    for world, data in (("in", d1), ("out", d0)):
        seeds = np.random.SeedSequence([*root.generate_state(4).tolist(), 1 if world == "in" else 0]).spawn(args.runs)
        chunks = [seeds[i : i + CHUNK] for i in range(0, len(seeds), CHUNK)]
        parts = Parallel(n_jobs=args.n_jobs)(
            delayed(_chunk)(mechanism, data, c, args.cache_dir, args.white_box, args.n, args.neighbours, args.roles)
            for c in chunks
        )
        scores[world] = np.array([s for part in parts for s in part])
        print(f"{world}: {args.runs} runs, {time.perf_counter() - start:.1f} s", file=sys.stderr)
    seconds = time.perf_counter() - start
    top = args.threshold  # default: clip(ĉ_A) = 1 and clip(ĉ_B) = 0, the largest likelihood ratio
    results: dict[str, Any] = {}
    explicit = audit_scores(scores["in"], scores["out"], delta=args.delta, threshold=Explicit(top))
    split = audit_scores(scores["in"], scores["out"], delta=args.delta, threshold=Split(seed=args.seed + 1))
    results["explicit"] = {"epsilon_lb": explicit.epsilon, **_rates(explicit)}
    results["split"] = {"epsilon_lb": split.epsilon, "threshold": float(split.threshold)}
    if args.delta > 0:
        gdp = gdp_audit_scores(scores["in"], scores["out"], delta=args.delta, threshold=Explicit(top))
        results["gdp_explicit"] = {"mu_lb": gdp.details["mu"], "epsilon": gdp.epsilon}
    claim = claimed_epsilon(mechanism, args.delta)
    best = max(explicit.epsilon, split.epsilon)
    summary = {
        "generator": args.generator if args.mechanism is None else Path(args.mechanism).stem,
        "white_box": args.white_box,
        "neighbours": args.neighbours,
        "roles": args.roles,
        "extra_columns": args.extra_columns,
        "vary_extra": args.vary_extra,
        "threshold": args.threshold,
        "n": args.n,
        "rows": args.rows,
        "runs_per_world": args.runs,
        "delta": args.delta,
        "confidence": 0.95,
        "claimed_epsilon": claim,
        "best_epsilon_lb": best,
        "ratio": None if not claim else best / claim,
        "seconds": round(seconds, 1),
        "tpr_at_top": float(np.mean(scores["in"] >= top)),
        "fpr_at_top": float(np.mean(scores["out"] >= top)),
        **({"beta": args.beta, "epsilon": args.epsilon} if args.generator == "privbayes" else {}),
        **results,
    }
    for key, value in summary.items():
        print(f"{key:>16}: {value}")
    if args.out:
        write_text(args.out, json.dumps(summary, indent=1) + "\n", what="--out")  # atomic: a kill leaves no half file
    print(json.dumps(summary, sort_keys=True, default=str))
    return 0


def _rates(result: Any) -> dict[str, float]:
    return {k: float(result.details[k]) for k in ("fpr_ub", "fnr_ub") if k in result.details}


if __name__ == "__main__":
    raise SystemExit(main())
