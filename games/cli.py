"""The ``privgame`` command: run experiments, report their results, list the registered components.

Usage::

    privgame run CONFIG.toml --out DIR [--n-jobs N] [--force] [--no-progress] [--dask-scheduler ADDRESS]
                 [--cache-dir DIR | --no-cache]
    privgame report DIR [--records] [--format table|csv|markdown|latex] [--plot FILE.png|.pdf] [--output FILE]
                    [--plugins MODULE ...] [--trust-plugins]
    privgame list [--plugins MODULE ...]
    privgame validate [--quick] [--repetitions R] [--confidence C ...] [--n-jobs N] [--include-invalid]
    privgame ladder --plot FILE [--mu 1 2 4] [--n N] [--delta D] [--confidence C]
    privgame synth --generator NAME [--param K=V ...] [--data adult] [--train-rows N] [--sample] [--rows N]
                   [--seed S] --out FILE.csv|.parquet [--report]

A bad config or argument prints one line ``privgame: error: ...`` and exits with status 2 before any trial runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from analysis.reporting import TABLE_FORMATS, format_table
from games import synth_cli

__all__ = ["main"]

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"privgame: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    from importlib import metadata

    try:
        version = metadata.version("privgame")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        version = "unknown"
    parser = _Parser(prog="privgame", description="Simulate privacy games and audit mechanisms.")
    parser.add_argument("--version", action="version", version=f"privgame {version}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="run (or resume) an experiment")
    run.add_argument("config", help="experiment config (TOML)")
    run.add_argument("--out", required=True, help="results directory (resumed if it holds this config)")
    run.add_argument("--n-jobs", type=int, default=1, help="parallel workers; -1 = all cores (default 1)")
    run.add_argument("--force", action="store_true", help="delete results of a different config in --out")
    run.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    run.add_argument(
        "--dask-scheduler",
        metavar="ADDRESS",
        help="run on a dask.distributed scheduler ('local' for a local one)",
    )
    caching = run.add_mutually_exclusive_group()
    caching.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="artefact cache for generator runs and shadow tables (default: $PRIVGAME_CACHE_DIR or ~/.cache/privgame)",
    )
    caching.add_argument("--no-cache", action="store_true", help="cache nothing (recompute every artefact)")

    report = sub.add_parser("report", help="summarise a results directory")
    report.add_argument("results", help="results directory written by `privgame run`")
    report.add_argument(
        "--records",
        action="store_true",
        help="one row per (record, game) of a record-level game instead of per grid point",
    )
    report.add_argument("--format", choices=TABLE_FORMATS, default="table", help="table format (default: table)")
    report.add_argument(
        "--plot",
        metavar="FILE",
        help="also draw the game's figure (ε lower bound against the analytic ε; for record games, the "
        "model-seeded against the traditional AUC per record)",
    )
    report.add_argument("--output", metavar="FILE", help="write the table to FILE instead of stdout")
    report.add_argument(
        "--ladder", metavar="FILE", help="also draw every estimator's bound on the stored scores (the estimator ladder)"
    )
    report.add_argument(
        "--plugins",
        nargs="+",
        metavar="MODULE",
        default=[],
        help="plugin modules to import (needed only when the game comes from a plugin); importing runs their code",
    )
    report.add_argument(
        "--trust-plugins",
        action="store_true",
        help="import the plugins the results' manifest names (runs their code: only for results you trust)",
    )

    validate = sub.add_parser("validate", help="check every estimator's promise on games with known ε")
    validate.add_argument("--quick", action="store_true", help="100 repetitions (about a minute on 2 cores)")
    validate.add_argument("--repetitions", type=int, default=500, help="audits per combination (default 500)")
    validate.add_argument("--confidence", type=float, nargs="+", default=[0.95, 0.7], help="default: 0.95 0.7")
    validate.add_argument("--seed", type=int, default=0)
    validate.add_argument("--n-jobs", type=int, default=-1, help="parallel workers (default -1: all cores)")
    validate.add_argument("--include-invalid", action="store_true", help="also run deliberately invalid estimators")
    validate.add_argument("--format", choices=TABLE_FORMATS, default="table")
    validate.add_argument("--output", metavar="FILE", help="write the table to FILE instead of stdout")

    lad = sub.add_parser("ladder", help="every estimator's bound on Gaussian scores against the true ε")
    lad.add_argument("--plot", metavar="FILE", help="draw the ladder (.png, .pdf, .svg)")
    lad.add_argument("--mu", type=float, nargs="+", default=[1.0, 2.0, 4.0], help="shifts (default 1 2 4)")
    lad.add_argument("--n", type=int, default=10_000, help="scores per setting (default 10000)")
    lad.add_argument("--delta", type=float, default=1e-5)
    lad.add_argument("--confidence", type=float, default=0.95)
    lad.add_argument("--seed", type=int, default=0)
    lad.add_argument("--format", choices=TABLE_FORMATS, default="table")

    synth_cli.add_parser(sub)
    listing = sub.add_parser("list", help="list the registered games, mechanisms and attacks")
    listing.add_argument(
        "--plugins",
        nargs="+",
        metavar="MODULE",
        default=[],
        help="plugin modules to import first, listing what they register (importing runs their code)",
    )
    return parser


def _cmd_run(args: argparse.Namespace) -> int:
    from games.config import load_config
    from games.runner import run_experiment

    if args.n_jobs == 0 or args.n_jobs < -1:
        raise ValueError(f"--n-jobs must be a positive integer or -1, got {args.n_jobs}.")
    config = load_config(args.config)
    cache = None
    if not args.no_cache:
        from analysis.cache import ArtefactCache, default_cache_dir

        cache = ArtefactCache(args.cache_dir if args.cache_dir is not None else default_cache_dir())
    start = time.perf_counter()
    store = run_experiment(
        config,
        args.out,
        config_bytes=Path(args.config).read_bytes(),
        n_jobs=args.n_jobs,
        force=args.force,
        progress=not args.no_progress,
        dask_scheduler=args.dask_scheduler,
        cache=cache,
    )
    print(
        f"{config.name}: {config.n_trials} trials in {store.root} "
        f"({time.perf_counter() - start:.1f} s); summary: privgame report {store.root}"
    )
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from games.report import plot_results, records_results, summarise_results

    trust = {"plugins": args.plugins, "trust_plugins": args.trust_plugins}
    summary, swept = summarise_results(args.results, **trust)
    table = records_results(args.results, **trust) if args.records else summary
    text = format_table(table, args.format)
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    if args.plot:
        path = plot_results(args.results, summary, swept, args.plot)
        print(f"figure written to {path}", file=sys.stderr)
    if args.ladder:
        from analysis.ladder import plot_ladder
        from games.report import ladder_results

        ladder = ladder_results(args.results, **trust)
        sys.stdout.write("\n" + format_table(ladder, args.format))
        print(f"ladder written to {plot_ladder(ladder, args.ladder, title=Path(args.results).name)}", file=sys.stderr)
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    from games.validity import validate

    repetitions = 100 if args.quick else args.repetitions
    if repetitions < 1:
        raise ValueError(f"--repetitions must be at least 1, got {repetitions}.")
    table = validate(
        repetitions=repetitions,
        confidences=args.confidence,
        seed=args.seed,
        include_invalid=args.include_invalid,
        n_jobs=args.n_jobs,
        progress=True,
    )
    text = format_table(table, args.format, digits=4)
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    valid = ~table["estimator"].str.startswith("INVALID")
    failed = table[valid & ~table["ok"]]
    caught = table[~valid & ~table["ok"]]["estimator"].nunique()
    print(
        f"{int((valid & table['ok']).sum())} of {int(valid.sum())} estimator/strategy/confidence combinations keep "
        f"their promise (binomial test p > 1e-3, R = {repetitions})"
        + (
            f"; invalid estimators caught: {caught} of {table[~valid]['estimator'].nunique()}"
            if args.include_invalid
            else ""
        ),
        file=sys.stderr,
    )
    return 0 if failed.empty else 1


def _cmd_ladder(args: argparse.Namespace) -> int:
    from analysis.ladder import gaussian_ladder, plot_ladder

    table = gaussian_ladder(args.mu, n=args.n, delta=args.delta, confidence=args.confidence, seed=args.seed)
    sys.stdout.write(format_table(table, args.format))
    if args.plot:
        print(f"ladder written to {plot_ladder(table, args.plot, title='Gaussian scores')}", file=sys.stderr)
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    from games.registry import ATTACKS, GAMES, MECHANISMS

    if args.plugins:  # only then: the configs (and what they import) are needed to import plugins
        from games.config import import_plugins

        import_plugins(args.plugins, source="--plugins")
    for title, registry in (("games", GAMES), ("mechanisms", MECHANISMS), ("attacks", ATTACKS)):
        print(f"{title}:")
        # summaries() imports nothing: the built-ins' one-line summaries are stored beside their import paths
        entries = registry.summaries()
        width = max((len(name) for name, _ in entries), default=0)
        for name, summary in entries:
            print(f"  {name.ljust(width)}  {summary}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``privgame`` command; returns the exit status."""
    args = _parser().parse_args(argv)
    commands = {
        "run": _cmd_run,
        "report": _cmd_report,
        "list": _cmd_list,
        "validate": _cmd_validate,
        "ladder": _cmd_ladder,
        "synth": synth_cli.run,
    }
    try:
        return commands[args.command](args)
    except (ValueError, TypeError, FileNotFoundError) as exc:
        print(f"privgame: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("privgame: interrupted; rerun the same command to resume.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
