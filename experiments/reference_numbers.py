"""Quick reference numbers: every game's quick config, its headline figures at its own seed and over other seeds.

Each quick config is seeded, so its figures are the same on every run; the run-to-run range (the same config at
other seeds) says how far a change of seed alone moves them.  ``experiments/reference/quick_numbers.toml`` keeps, per
config and figure, the value at the config's own seed, the value at each measured seed and their [min, max];
README.md's "Quick reference numbers" tables are printed from it, and the slow suite checks that each config,
run at its own seed, still gives its stored figures (tests/engine/test_reference_numbers.py)::

    python experiments/reference_numbers.py measure                       # every config: own seed, then 1 2 3 4
    python experiments/reference_numbers.py measure --configs quickstart --seeds 1 2 3 4 5 6 7 8
    python experiments/reference_numbers.py table                         # the README section, from the file
    python experiments/reference_numbers.py check quickstart runs/quickstart   # a finished run against the file

``measure`` runs ``privgame run CONFIG --n-jobs N --no-cache`` in a subprocess per (config, seed), each on a copy
of the config with ``[experiment] seed`` changed, times it (wall clock, start-up included) and notes the machine's
1-minute load average around it; it rewrites the file with the configs it measured and keeps the others.  With
``--runs DIR`` the runs stay in DIR and a finished one is read again instead of being run (an interrupted
``measure`` goes on where it stopped).  ``check`` on a run at another seed compares it with the ranges only.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EXPERIMENTS = Path(__file__).resolve().parent
REFERENCE = EXPERIMENTS / "reference" / "quick_numbers.toml"  # not a config: experiments/*.toml are configs
OTHER_SEEDS = (1, 2, 3, 4)
README_START = "<!-- reference-numbers: start (python experiments/reference_numbers.py table) -->"
README_END = "<!-- reference-numbers: end -->"


@dataclass(frozen=True, slots=True)
class Figure:
    """One headline figure: ``column`` of the report's summary table (``privgame report DIR --format csv``), in the
    row whose swept parameters equal ``where`` (every key a column: ``{"mechanism.epsilon": 4.0}``; empty for a
    single-row summary)."""

    label: str
    column: str
    where: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Quick:
    """A quick config and the figures a researcher compares."""

    name: str
    game: str
    n_jobs: int
    figures: tuple[Figure, ...]


def _per_epsilon(label: str, column: str, epsilons: Sequence[float]) -> tuple[Figure, ...]:
    return tuple(Figure(f"{label}, ε = {e:g}", column, {"mechanism.epsilon": float(e)}) for e in epsilons)


_PANORAMIA = (
    Figure("median c_lb", "c_lb_median"),
    Figure("median {c+ε}_lb", "c_plus_eps_lb_median"),
    Figure("median ε̃", "eps_tilde_median"),
    Figure("median RM;RN ε_lb", "rmrn_epsilon_lb_median"),
    Figure("median O(1) ε_lb", "o1_epsilon_lb_median"),
)
_LIRA_EVALUATIONS = {"naive": "naive", "pp": "post-processed N(0, 1)", "pp_t": "post-processed Student-t"}

QUICK: tuple[Quick, ...] = (
    Quick(
        "quickstart",
        "one-run (randomized response)",
        2,
        _per_epsilon("median ε_lb of 20", "steinke.epsilon_lb_median", (0.5, 1, 2, 4, 8)),
    ),
    Quick(
        "dpsgd_whitebox_quick",
        "one-run (DP-SGD, white box)",
        2,
        _per_epsilon("median ε_lb of 4", "epsilon_lb_median", (1, 2, 4, 8)),
    ),
    Quick(
        "dpsgd_blackbox_quick",
        "one-run (DP-SGD, black box)",
        2,
        _per_epsilon("median ε_lb of 4", "epsilon_lb_median", (1, 2, 4, 8)),
    ),
    Quick(
        "dpsgd_multirun_quick",
        "multi-run (DP-SGD, white box)",
        2,
        _per_epsilon("ε_lb pooled over 512 runs", "epsilon_lb", (1, 2, 4, 8)),
    ),
    Quick("panoramia_adult_quick", "PANORAMIA (Adult, MLP)", 2, _PANORAMIA),
    Quick("panoramia_digits_quick", "PANORAMIA (digits, CNN)", 2, _PANORAMIA),
    Quick(
        "krco_adult_quick",
        "record games (Synthpop on Adult)",
        2,
        (
            Figure("mean per-record AUC, model-seeded", "auc_mean_model_seeded"),
            Figure("mean per-record AUC, traditional", "auc_mean_traditional"),
            Figure("RMSD between the games' AUCs", "rmsd"),
            Figure("RMSD of noise alone", "rmsd_noise"),
            Figure("records at model-seeded AUC ≥ 0.6 (of 3)", "miss_rate_0.6.n"),
            Figure("miss rate at 0.6 (of those, the share below 0.6 traditional)", "miss_rate_0.6"),
        ),
    ),
    Quick(
        "lira_adult_quick",
        "LiRA (16 MLPs on Adult)",
        1,
        (
            Figure("AUC", "auc"),
            *(
                Figure(f"TPR at FPR {fpr}, {label}", f"tpr_{key}_{fpr}")
                for fpr in ("0.001", "0.01")
                for key, label in _LIRA_EVALUATIONS.items()
            ),
            # 8 OUT models per record: a record's own threshold reaches an expected FPR of 1/9 at best, for every α
            Figure("TPR per sample, at its expected FPR 1/9", "tpr_per_sample_0.1"),
            Figure("realised FPR at nominal 0.1, post-processed N(0, 1)", "fpr_pp_0.1"),
            Figure("realised FPR at nominal 0.1, post-processed Student-t", "fpr_pp_t_0.1"),
        ),
    ),
)


def quick(name: str) -> Quick:
    """The quick config called ``name``."""
    for q in QUICK:
        if q.name == name:
            return q
    raise ValueError(f"config must be one of {', '.join(q.name for q in QUICK)}, got {name!r}.")


def config_seed(name: str) -> int:
    """``[experiment] seed`` of ``experiments/NAME.toml``."""
    with open(EXPERIMENTS / f"{name}.toml", "rb") as f:
        return int(tomllib.load(f)["experiment"]["seed"])


def read_figures(run_dir: str | Path, figures: Sequence[Figure] | Sequence[Mapping[str, Any]]) -> list[float]:
    """Each figure's value in the finished results ``run_dir`` (read from the report's summary table).

    Raises
    ------
    ValueError
        If a figure's column is missing, or its ``where`` does not pick exactly one row.
    """
    from privgame.engine.report import summarise_results

    summary, _ = summarise_results(str(run_dir))
    values = []
    for figure in figures:
        column, where = (
            (figure.column, figure.where) if isinstance(figure, Figure) else (figure["column"], figure.get("where", {}))
        )
        if column not in summary.columns:
            raise ValueError(f"column must be one of the summary's columns, got {column!r} (run {run_dir}).")
        rows = summary
        for key, value in where.items():
            rows = rows[[math.isclose(float(v), float(value)) for v in rows[key]]]
        if len(rows) != 1:
            raise ValueError(f"where must pick one row of the summary, got {len(rows)} rows for {dict(where)!r}.")
        values.append(float(rows[column].iloc[0]))
    return values


def seeded_config(name: str, seed: int) -> str:
    """The text of ``experiments/NAME.toml`` with ``[experiment] seed`` set to ``seed`` (comments kept)."""
    text = (EXPERIMENTS / f"{name}.toml").read_text()
    changed, n = re.subn(r"(?m)^seed\s*=\s*\d+", f"seed = {seed}", text, count=1)
    if n != 1:
        raise ValueError(f"experiments/{name}.toml must have a 'seed = N' line, got none.")
    return changed


def run_once(q: Quick, seed: int, folder: Path) -> tuple[list[float], float, float]:
    """Run ``q`` at ``seed`` in a subprocess (``privgame run ... --no-cache``) into ``folder/NAME_seedS``: its
    figures, wall seconds and the mean of the 1-minute load averages at its start and end.  A run already finished
    there (its ``NAME_seedS.timing.json`` beside it, written once the run has ended) is read, not run again."""
    out = folder / f"{q.name}_seed{seed}"
    timing = folder / f"{q.name}_seed{seed}.timing.json"
    if not timing.exists():
        shutil.rmtree(out, ignore_errors=True)  # an unfinished run: played again from the start, to time it
        config = folder / f"{q.name}_seed{seed}.toml"
        config.write_text(seeded_config(q.name, seed))
        command = [sys.executable, "-m", "privgame.engine.cli", "run", str(config), "--out", str(out)]
        command += ["--n-jobs", str(q.n_jobs), "--no-progress", "--no-cache"]
        load = os.getloadavg()[0]
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        seconds = time.perf_counter() - start
        load = (load + os.getloadavg()[0]) / 2
        timing.write_text(json.dumps({"seconds": round(seconds, 1), "load_average": round(load, 1)}))
    measured = json.loads(timing.read_text())
    return read_figures(out, q.figures), measured["seconds"], measured["load_average"]


def measure(q: Quick, seeds: Sequence[int], runs: Path | None = None) -> dict[str, Any]:
    """``q`` at its own seed, then at each of ``seeds`` (in ``runs``, default a temporary folder): the file's entry
    for it."""
    own = config_seed(q.name)
    order = [own, *(s for s in seeds if s != own)]
    values, seconds, loads = [], [], []
    with tempfile.TemporaryDirectory(prefix=f"reference-{q.name}-") as temporary:
        folder = Path(temporary) if runs is None else runs
        folder.mkdir(parents=True, exist_ok=True)
        for seed in order:
            v, s, load = run_once(q, seed, folder)
            print(f"{q.name} seed {seed}: {s:.1f} s at load {load:.1f}", file=sys.stderr)
            values.append(v)
            seconds.append(s)
            loads.append(load)
    return {
        "game": q.game,
        "n_jobs": q.n_jobs,
        "seed": own,
        "seeds": order,
        "seconds": seconds,
        "load_average": loads,
        "measured": time.strftime("%Y-%m-%d", time.gmtime()),
        "figures": [
            {
                "label": f.label,
                "column": f.column,
                "where": dict(f.where),
                "value": values[0][i],
                "range": [min(v[i] for v in values), max(v[i] for v in values)],
                "by_seed": [v[i] for v in values],
            }
            for i, f in enumerate(q.figures)
        ],
    }


def load_reference(path: str | Path = REFERENCE) -> dict[str, Any]:
    """The reference file, one entry per config name."""
    with open(path, "rb") as f:
        return tomllib.load(f)


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, float):
        return (
            repr(value) if math.isfinite(value) else ("nan" if math.isnan(value) else f"{'-' if value < 0 else ''}inf")
        )
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_toml(str(k))} = {_toml(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"value must be a TOML scalar, list or table, got {type(value).__name__}.")


def write_reference(reference: Mapping[str, Any], path: str | Path = REFERENCE) -> None:
    """Write ``reference`` in the order of :data:`QUICK` (by hand: the standard library reads TOML only)."""
    lines = [
        "# Quick reference numbers, written by `python experiments/reference_numbers.py measure` (not by hand).",
        "# Per quick config: its own seed first in `seeds`; `seconds` and `load_average` (the machine's 1-minute load",
        "# average, mean of start and end) per seed, `privgame run --n-jobs N --no-cache` on 2 cores; per figure the",
        "# value at the config's seed, `by_seed` in the order of `seeds`, and `range` = [min, max] of `by_seed`.",
        "# A figure is `column` of `privgame report DIR --format csv`, in the row whose columns equal `where`.",
    ]
    for q in QUICK:
        if q.name not in reference:
            continue
        entry = reference[q.name]
        lines += ["", f"[{q.name}]"]
        lines += [f"{k} = {_toml(entry[k])}" for k in entry if k != "figures"]
        for figure in entry["figures"]:
            lines += ["", f"[[{q.name}.figures]]"]
            lines += [f"{k} = {_toml(v)}" for k, v in figure.items()]
    Path(path).write_text("\n".join(lines) + "\n")


def _number(value: float, column: str = "") -> str:
    """Three decimals; a count (a ``.n`` column: the records a miss rate rests on) without them."""
    return "nan" if math.isnan(value) else f"{value:.0f}" if column.endswith(".n") else f"{value:.3f}"


def readme_section(reference: Mapping[str, Any]) -> str:
    """The README's tables, between its markers, printed from ``reference``."""
    lines = [
        README_START,
        "| config | game | `--n-jobs` | seeds (its own first) | seconds at its seed (range over the seeds) | load |",
        "|---|---|---|---|---|---|",
    ]
    for name, entry in reference.items():
        seconds, loads = entry["seconds"], entry["load_average"]
        lines.append(
            f"| `{name}` | {entry['game']} | {entry['n_jobs']} | {', '.join(str(s) for s in entry['seeds'])} "
            f"| {seconds[0]:.1f} ({min(seconds):.1f}–{max(seconds):.1f}) | {min(loads):.1f}–{max(loads):.1f} |"
        )
    lines += ["", "| config | figure | at its seed | range over its seeds |", "|---|---|---|---|"]
    for name, entry in reference.items():
        for i, figure in enumerate(entry["figures"]):
            column, (low, high) = figure["column"], figure["range"]
            lines.append(
                f"| {f'`{name}`' if i == 0 else ''} | {figure['label']} | {_number(figure['value'], column)} "
                f"| {_number(low, column)}–{_number(high, column)} |"
            )
    lines.append(README_END)
    return "\n".join(lines)


def differences(
    entry: Mapping[str, Any], values: Sequence[float], *, same_seed: bool = True, rel: float = 1e-6
) -> list[str]:
    """Each figure of ``values`` that differs from the entry's value (``same_seed``: read at the entry's own seed),
    or falls outside its range, as one line; empty when all agree."""
    found = []
    for figure, value in zip(entry["figures"], values, strict=True):
        stored, (low, high) = figure["value"], figure["range"]
        same = math.isclose(value, stored, rel_tol=rel, abs_tol=1e-9) or (math.isnan(value) and math.isnan(stored))
        if same_seed and not same:
            found.append(f"{figure['label']}: {value!r}, stored {stored!r}")
        elif not (low - 1e-9 <= value <= high + 1e-9 or math.isnan(value)):
            found.append(f"{figure['label']}: {value!r} outside the stored range [{low!r}, {high!r}]")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    m = commands.add_parser("measure", help="run the configs at their seeds and rewrite the reference file")
    m.add_argument("--configs", nargs="+", default=[q.name for q in QUICK], help="default: every quick config")
    m.add_argument("--seeds", nargs="+", type=int, default=list(OTHER_SEEDS), help="besides each config's own seed")
    m.add_argument("--file", type=Path, default=REFERENCE)
    m.add_argument(
        "--runs", type=Path, help="keep the runs here, and reuse those finished (default: a temporary folder)"
    )
    t = commands.add_parser("table", help="print the README section from the reference file")
    t.add_argument("--file", type=Path, default=REFERENCE)
    c = commands.add_parser("check", help="compare a finished run of a quick config (at its own seed) with the file")
    c.add_argument("config")
    c.add_argument("run_dir", type=Path)
    c.add_argument("--file", type=Path, default=REFERENCE)
    args = parser.parse_args(argv)
    if args.command == "measure":
        quicks = [quick(name) for name in args.configs]
        reference = load_reference(args.file) if args.file.exists() else {}
        for q in quicks:
            reference[q.name] = measure(q, args.seeds, args.runs)
            write_reference(reference, args.file)  # after each config, so a stopped run keeps what it measured
        return 0
    reference = load_reference(args.file)
    if args.command == "table":
        print(readme_section(reference))
        return 0
    entry = reference[quick(args.config).name]
    manifest = json.loads((args.run_dir / "manifest.json").read_text())
    same_seed = manifest.get("seed") == entry["seed"]
    if not same_seed:
        print(f"the run's seed is {manifest.get('seed')!r}, not the reference's {entry['seed']}: the range only")
    values = read_figures(args.run_dir, entry["figures"])
    for figure, value in zip(entry["figures"], values, strict=True):
        column, (low, high) = figure["column"], figure["range"]
        stored = f"reference {_number(figure['value'], column)}, range {_number(low, column)}–{_number(high, column)}"
        print(f"{figure['label']}: {_number(value, column)} ({stored})")
    found = differences(entry, values, same_seed=same_seed)
    agrees = "matches the reference" if same_seed else "within the reference's range"
    print(agrees if not found else "differs:\n" + "\n".join(found))
    return 0 if not found else 1


if __name__ == "__main__":
    sys.exit(main())
