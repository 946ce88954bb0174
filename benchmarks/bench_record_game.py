"""Record-level games: the cost of the counting-query features and of one target end to end.

1. All-subsets counting features (2^15 − 1 = 32,767 queries) of one 1,000-row synthetic Adult table through the
   zeta transform, side by side with a naive per-query loop (target: ≤ 10 ms per table).
2. One target end to end with Synthpop at the Krčo experiments' sizes (|D| = 1,000, 1,000 shadow tables of
   1,000 rows, 200 + 200 rounds, all-subsets queries into RandomForest(100, depth 10)), no cache, in one process
   (target: ≤ 25 s on 2 cores; issue 36), with the share of the time spent inside the generator; then the same
   target through ``privgame run --n-jobs <cores>`` with a fresh cache, its generator runs as tasks on every worker
   (``target_seconds_on_workers``, worker start-up included; its AUCs must equal the one process's).

3. The same target on a user's table of the same size: Adult's rows written to a CSV with Adult's public domain as
   its domain file, read through ``[data] path`` (``privgame.data.files``), so the work is identical and only the
   data's route differs (target: no more than on Adult, ``user_over_adult`` ≈ 1).

Ends with one JSON line: ``features_seconds_per_table``, ``features_speedup_vs_loop``, ``target_seconds``,
``target_seconds_on_workers``, ``workers``,
``user_table_seconds``, ``user_over_adult``, ``generator_share`` and the sizes.  ``--quick`` shrinks parts 2 and 3
(for a smoke test).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from privgame.attacks import CountingQueries
from privgame.attacks._tables import TableSchema
from privgame.attacks.queries import match_masks, superset_counts
from privgame.data import load_adult
from privgame.games._base import AnalysisSettings, TrialContext
from privgame.games.record import RecordGames
from privgame.mechanisms._base import Mechanism
from privgame.mechanisms.synth import Synthpop

_GENERATOR_SECONDS = [0.0, 0]


@dataclass(frozen=True, slots=True)
class TimedSynthpop(Mechanism):
    """Synthpop with a stopwatch around each release (in-process only)."""

    name: ClassVar[str] = "timed-synthpop"
    input_kind: ClassVar[str] = "table"
    release_kind: ClassVar[str] = "table"

    def release(self, data: Any, *, rng: np.random.Generator) -> Any:
        start = time.perf_counter()
        out = Synthpop().release(data, rng=rng)
        _GENERATOR_SECONDS[0] += time.perf_counter() - start
        _GENERATOR_SECONDS[1] += 1
        return out

    def privacy_claim(self) -> None:
        return None


def features(repeats: int) -> tuple[float, float, int]:
    adult = load_adult("train")
    real = adult.iloc[:1000].reset_index(drop=True)
    synthetic = Synthpop().release(real, rng=np.random.default_rng(0))
    schema = TableSchema.of(adult)
    target = schema.codes(adult.iloc[[1234]])[0]
    numeric = ~schema.categorical
    d = len(schema.columns)

    def fast() -> np.ndarray:
        return superset_counts(match_masks(schema.codes(synthetic), target, numeric, "ge"), d)[1:]

    fast()
    start = time.perf_counter()
    for _ in range(repeats):
        counts = fast()
    per_table = (time.perf_counter() - start) / repeats

    codes = schema.codes(synthetic)
    match = codes == target
    match[:, numeric] = codes[:, numeric] >= target[numeric]
    start = time.perf_counter()
    loop = np.empty((1 << d) - 1, dtype=np.int64)
    for s in range(1, 1 << d):
        cols = [j for j in range(d) if s >> j & 1]
        loop[s - 1] = int(np.all(match[:, cols], axis=1).sum())
    loop_seconds = time.perf_counter() - start
    if not np.array_equal(loop, counts):
        raise SystemExit("the zeta-transform counts differ from the loop's")
    return per_table, loop_seconds, d


def user_table(folder: str) -> str:
    """Adult written as a user's CSV with Adult's public domain as its domain file, registered; its name."""
    from pathlib import Path

    from privgame.data import public_domain
    from privgame.data.files import domain_text, open_source, register_source

    data, domain = Path(folder) / "adult_as_user.csv", Path(folder) / "adult_as_user.domain.toml"
    load_adult("all").to_csv(data, index=False)
    domain.write_text(domain_text(public_domain("adult")))
    source = open_source(data, domain, name="adult-as-user")
    register_source(source)
    return source.name


def one_target(quick: bool, data: str = "adult") -> dict[str, Any]:
    sizes = (
        {"dataset_size": 200, "rounds": 20, "n_shadows": 40}
        if quick
        else {"dataset_size": 1000, "rounds": 200, "n_shadows": 1000}
    )
    game = RecordGames(
        data=data, dataset_size=sizes["dataset_size"], rounds=sizes["rounds"], vulnerable_targets=1, random_targets=0
    )
    attack = CountingQueries(n_shadows=sizes["n_shadows"], n_jobs=os.cpu_count() or 1)
    mechanism = TimedSynthpop()
    Synthpop().release(load_adult("train").iloc[:50].reset_index(drop=True), rng=np.random.default_rng(0))  # JIT
    _GENERATOR_SECONDS[:] = [0.0, 0]
    seed = np.random.SeedSequence(0, spawn_key=(0, 0))
    start = time.perf_counter()
    outcome = game.play(mechanism, attack, seed=seed, context=TrialContext())
    rows = game.record_rows(outcome, AnalysisSettings(), seed=seed)
    total = time.perf_counter() - start
    return {
        "target_seconds": round(total, 2),
        "generator_seconds": round(_GENERATOR_SECONDS[0], 2),
        "generator_runs": _GENERATOR_SECONDS[1],
        "generator_share": round(_GENERATOR_SECONDS[0] / total, 3),
        "auc": {r["game"]: r["auc"] for r in rows},
        **sizes,
    }


def target_on_workers(quick: bool) -> dict[str, Any]:
    """The same target as :func:`one_target` through ``privgame run --n-jobs <cores>`` (what a user waits for):
    its shadow and round generator runs are tasks on every worker (:mod:`privgame.engine.tasks`), into a fresh
    artefact cache (nothing reused), then the trial reads them and fits the attack.  Timed from the call to the
    stored results, worker start-up included; the records must equal the one-process run's."""
    import tempfile

    import privgame

    sizes = (
        {"dataset_size": 200, "rounds": 20, "n_shadows": 40}
        if quick
        else {"dataset_size": 1000, "rounds": 200, "n_shadows": 1000}
    )
    cores = os.cpu_count() or 1
    config = {
        "experiment": {"name": "bench-record-target", "seed": 0},
        "game": {
            "name": "record",
            "data": "adult",
            "dataset_size": sizes["dataset_size"],
            "rounds": sizes["rounds"],
            "vulnerable_targets": 1,
            "random_targets": 0,
        },
        "mechanism": {"name": "synthpop"},
        "attack": {"name": "tapas-queries", "n_shadows": sizes["n_shadows"], "n_jobs": cores},
    }
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        spread = privgame.run(config, f"{folder}/spread", n_jobs=cores, cache_dir=f"{folder}/cache", progress=False)
        seconds = time.perf_counter() - start
        records = spread.records()
    return {"target_seconds": round(seconds, 2), "workers": cores, "records": records}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes for part 2 (smoke test)")
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    per_table, loop_seconds, d = features(args.repeats)
    print(f"all-subsets counts, d = {d} ({(1 << d) - 1:,} queries), 1,000 rows: {per_table * 1e3:.2f} ms per table")
    print(f"naive per-query loop: {loop_seconds:.2f} s per table ({loop_seconds / per_table:,.0f}x slower)")
    target = one_target(args.quick)
    print(
        f"one target end to end (Synthpop, |D| = {target['dataset_size']:,}, {target['n_shadows']:,} shadows, "
        f"{target['rounds']} + {target['rounds']} rounds): {target['target_seconds']:.1f} s, of which "
        f"{target['generator_seconds']:.1f} s in {target['generator_runs']:,} generator runs "
        f"({100 * target['generator_share']:.0f} %; target <= 25 s)"
    )
    spread = target_on_workers(args.quick)
    spread_auc = {str(r["game"]): float(r["auc"]) for _, r in spread["records"].iterrows()}
    if spread_auc != target["auc"]:
        raise SystemExit(f"the run on workers gave other AUCs than one process: {spread_auc} vs {target['auc']}")
    print(
        f"the same target through privgame run --n-jobs {spread['workers']} (its generator runs as tasks on every "
        f"worker, a fresh cache): {spread['target_seconds']:.1f} s "
        f"({target['target_seconds'] / spread['target_seconds']:.2f}x the speed of one process)"
    )
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        user = one_target(args.quick, user_table(folder))
    print(
        f"the same target on Adult read as a user's CSV: {user['target_seconds']:.1f} s "
        f"({user['target_seconds'] / target['target_seconds']:.2f}x Adult's; AUCs {user['auc']} vs {target['auc']})"
    )
    print(
        json.dumps(
            {
                "features_seconds_per_table": round(per_table, 5),
                "features_loop_seconds": round(loop_seconds, 3),
                "features_speedup_vs_loop": round(loop_seconds / per_table, 1),
                "columns": d,
                "cores": os.cpu_count(),
                "user_table_seconds": user["target_seconds"],
                "user_over_adult": round(user["target_seconds"] / target["target_seconds"], 3),
                "user_same_auc": user["auc"] == target["auc"],
                **target,
                "target_seconds_on_workers": spread["target_seconds"],
                "workers": spread["workers"],
            }
        )
    )


if __name__ == "__main__":
    main()
