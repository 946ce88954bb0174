"""The ``privgame`` command: run experiments, report their results, list the registered components.

Usage::

    privgame run CONFIG.toml --out DIR [--n-jobs N] [--force] [--no-progress] [--dask-scheduler ADDRESS]
    privgame report DIR [--format table|csv|markdown|latex] [--plot FILE.png|.pdf] [--output FILE]
    privgame list

A bad config or argument prints one line ``privgame: error: ...`` and exits with status 2 before any trial runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from analysis.reporting import TABLE_FORMATS, format_table, plot_lower_bounds

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

    report = sub.add_parser("report", help="summarise a results directory")
    report.add_argument("results", help="results directory written by `privgame run`")
    report.add_argument("--format", choices=TABLE_FORMATS, default="table", help="table format (default: table)")
    report.add_argument("--plot", metavar="FILE", help="also draw the lower bound against the analytic ε")
    report.add_argument("--output", metavar="FILE", help="write the table to FILE instead of stdout")

    sub.add_parser("list", help="list the registered games, mechanisms and attacks")
    return parser


def _cmd_run(args: argparse.Namespace) -> int:
    from games.config import load_config
    from games.runner import run_experiment

    if args.n_jobs == 0 or args.n_jobs < -1:
        raise ValueError(f"--n-jobs must be a positive integer or -1, got {args.n_jobs}.")
    config = load_config(args.config)
    start = time.perf_counter()
    store = run_experiment(
        config,
        args.out,
        config_bytes=Path(args.config).read_bytes(),
        n_jobs=args.n_jobs,
        force=args.force,
        progress=not args.no_progress,
        dask_scheduler=args.dask_scheduler,
    )
    print(
        f"{config.name}: {config.n_trials} trials in {store.root} "
        f"({time.perf_counter() - start:.1f} s); summary: privgame report {store.root}"
    )
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from games.report import summarise_results

    summary, swept = summarise_results(args.results)
    text = format_table(summary, args.format)
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    if args.plot:
        group_by = [c for c in swept if not c.startswith("mechanism.")]
        path = plot_lower_bounds(summary, args.plot, group_by=group_by, title=Path(args.results).name)
        print(f"figure written to {path}", file=sys.stderr)
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    from games.registry import ATTACKS, GAMES, MECHANISMS, summary_line

    for title, registry in (("games", GAMES), ("mechanisms", MECHANISMS), ("attacks", ATTACKS)):
        print(f"{title}:")
        width = max(len(n) for n in registry.names())
        for name, cls in registry:
            print(f"  {name.ljust(width)}  {summary_line(cls)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``privgame`` command; returns the exit status."""
    args = _parser().parse_args(argv)
    commands = {"run": _cmd_run, "report": _cmd_report, "list": _cmd_list}
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
