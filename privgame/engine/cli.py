"""The ``privgame`` command: run experiments, report their results, list the registered components.

Usage::

    privgame run CONFIG.toml --out DIR [--n-jobs N] [--gpus all|I,J,...] [--repetitions N] [--force] [--no-progress]
                 [--dask-scheduler ADDRESS|local [--dask-timeout SECONDS] [--dask-dashboard]]
                 [--cluster slurm [--slurm-queue P] [--slurm-cores N] [--slurm-memory SIZE] [--slurm-walltime T]
                  [--slurm-gpus N] [--slurm-jobs N] [--slurm-directive OPTION ...] [--slurm-interface IFACE]]
                 [--cache-dir DIR | --no-cache] [--fail-fast] [--dry-run]
    privgame report DIR [--records [--sort COLUMN] [--top N]] [--columns A,B,...] [--format table|csv|markdown|latex]
                    [--plot FILE.png|.pdf] [--output FILE] [--plugins MODULE ...] [--trust-plugins]
    privgame list [--plugins MODULE ...]
    privgame domain FILE.csv|.parquet [--output FILE.domain.toml]
    privgame validate [--quick] [--repetitions R] [--confidence C ...] [--n-jobs N] [--include-invalid] [--sequential]
    privgame ladder --plot FILE [--mu 1 2 4] [--n N] [--delta D] [--confidence C]
    privgame synth --generator NAME [--param K=V ...] [--data adult] [--train-rows N] [--sample] [--rows N]
                   [--seed S] --out FILE.csv|.parquet [--report]

A bad config or argument prints one line ``privgame: error: ...`` and exits with status 2 before any trial runs; a
file that cannot be written (a full disk) prints one line naming it and what was being written, status 1.
"""

from __future__ import annotations

import argparse
import atexit
import os
import re
import sys
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from privgame.analysis._figures import SUFFIXES as FIGURE_SUFFIXES
from privgame.analysis.reporting import TABLE_FORMATS, format_table
from privgame.core.outputs import OutputWriteError
from privgame.engine import synth_cli
from privgame.engine._text import printable
from privgame.engine.resources import check_n_jobs

if TYPE_CHECKING:
    import pandas as pd

    from privgame.engine.config import ExperimentConfig
    from privgame.engine.slurm import SlurmCluster

__all__ = ["main"]

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # argparse takes "-1e-05" (a negative number in exponent form) for an option, so `--delta -1e-5` read
        # "expected at least one argument" instead of reaching the check that names the rule
        self._negative_number_matcher = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|nan)$")

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
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error instead of one line")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="run (or resume) an experiment")
    run.add_argument("config", help="experiment config (TOML)")
    run.add_argument("--out", required=True, help="results directory (resumed if it holds this config)")
    run.add_argument("--n-jobs", type=int, default=1, help="parallel workers; -1 = all cores (default 1)")
    run.add_argument(
        "--gpus",
        metavar="all|I,J,...",
        help="pin each process that plays trials to one of these CUDA GPUs, round-robin (mechanisms with device "
        "'cuda' or 'auto' train there; docs/cluster.md); with --cluster slurm, the jobs' GPUs (--slurm-gpus) are "
        "shared so without it",
    )
    run.add_argument("--force", action="store_true", help="delete results of a different config in --out")
    run.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    run.add_argument("--fail-fast", action="store_true", help="stop at the first trial that fails")
    run.add_argument(
        "--repetitions",
        type=int,
        metavar="N",
        help="repetitions per grid point instead of the config's; on a finished --out, adds repetitions and keeps "
        "the trials already run",
    )
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="print the grid, the trials done in --out and estimates of time and memory; run and change nothing",
    )
    run.add_argument(
        "--dask-scheduler",
        metavar="ADDRESS",
        help="run on a dask.distributed scheduler at ADDRESS (tcp://HOST:PORT), or 'local' for a local cluster of "
        "--n-jobs workers (docs/cluster.md)",
    )
    run.add_argument(
        "--dask-timeout",
        type=float,
        metavar="SECONDS",
        help="seconds to wait for the scheduler at --dask-scheduler ADDRESS to answer (default 10)",
    )
    run.add_argument(
        "--dask-dashboard",
        action="store_true",
        help="with --dask-scheduler local: serve the Dask dashboard on 127.0.0.1:8787 (default: no dashboard)",
    )
    _add_slurm_options(run)
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
        help="one row per (record, game) of a record-level game instead of per grid point: its metrics, then the "
        "record's values in the data set, named value.<column>",
    )
    report.add_argument(
        "--compare",
        action="store_true",
        help="the attacks (grid points) side by side on the same targets: pooled AUC, TPR at FPR 1e-3/1e-2/1e-1 "
        "with realised FPRs, mean per-record AUC, records at risk and those only one attack finds, seconds; with "
        "--records, those records",
    )
    report.add_argument(
        "--risk",
        type=float,
        default=None,
        metavar="AUC",
        help="with --compare: the per-record AUC from which a record is at risk (default 0.8)",
    )
    report.add_argument(
        "--baseline",
        type=int,
        default=None,
        metavar="POINT",
        help="with --compare: each attack against grid point POINT on the same rounds, per game the mean AUC "
        "difference over the records with its interval (with --records: every record's paired difference)",
    )
    report.add_argument("--format", choices=TABLE_FORMATS, default="table", help="table format (default: table)")
    report.add_argument(
        "--sort",
        metavar="COLUMN",
        help="with --records: the rows from the largest value of this numeric column down (e.g. auc)",
    )
    report.add_argument("--top", type=int, metavar="N", help="with --records: only the first N rows (after --sort)")
    report.add_argument(
        "--columns",
        action="append",
        metavar="A,B,...",
        help="only these columns of the table, in this order (comma-separated, or the option repeated; with any "
        "--format, the summary's columns as --format csv has them)",
    )
    report.add_argument(
        "--plot",
        metavar="FILE",
        help="also draw the game's figure (ε lower bound against the analytic ε; for record games, the "
        "model-seeded against the traditional AUC per record)",
    )
    report.add_argument("--output", metavar="FILE", help="write the table to FILE instead of stdout")
    report.add_argument(
        "--curves",
        metavar="FILE",
        help="also draw each grid point's per-trial curves, of its trial with the median headline (PANORAMIA: bound "
        "and precision against recall of the MIA and the baseline); FILE-p<index> for several grid points",
    )
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

    again = sub.add_parser(
        "reanalyse", help="recompute every bound of a results directory from its raw arrays, with other settings"
    )
    again.add_argument("results", help="results directory written by `privgame run` (only read)")
    again.add_argument("--out", required=True, help="the new results directory")
    again.add_argument(
        "--config", metavar="FILE", help="a TOML file with an [analysis] section (or its keys at the top level)"
    )
    again.add_argument("--estimators", nargs="+", metavar="NAME", help="e.g. steinke fdp order_stats (docs/config.md)")
    again.add_argument("--confidence", type=float, nargs="+", metavar="C", help="one level, or several to sweep")
    again.add_argument("--delta", type=float, nargs="+", metavar="D", help="one δ, or several to sweep")
    again.add_argument(
        "--threshold", help="top-k, bonferroni, split, or a number (a table needs --config)", metavar="RULE"
    )
    again.add_argument("--two-sided", action="store_true", default=None)
    again.add_argument("--allow-unmatched-family", action="store_true", default=None)
    again.add_argument(
        "--allow-dependent-canaries",
        action="store_true",
        default=None,
        help="run order_stats where the canaries are not independent channels (labelled _dependent; not guaranteed)",
    )
    again.add_argument(
        "--trust-plugins",
        action="store_true",
        help="import the plugins the stored config names (runs their code: only for results you trust)",
    )
    again.add_argument("--no-progress", action="store_true", help="no progress bar")

    validate = sub.add_parser("validate", help="check every estimator's promise on games with known ε")
    validate.add_argument("--quick", action="store_true", help="100 repetitions (about 8 minutes on 2 idle cores)")
    validate.add_argument("--repetitions", type=int, default=500, help="audits per combination (default 500)")
    validate.add_argument("--confidence", type=float, nargs="+", default=[0.95, 0.7], help="default: 0.95 0.7")
    validate.add_argument("--seed", type=int, default=0)
    validate.add_argument("--n-jobs", type=int, default=-1, help="parallel workers (default -1: all cores)")
    validate.add_argument("--include-invalid", action="store_true", help="also run deliberately invalid estimators")
    validate.add_argument(
        "--sequential",
        action="store_true",
        help="check the sequential audit instead: its level under true claims, read after every trial, and the "
        "trials it needs on broken ones against the fixed-sample test (--repetitions experiments of 20 trials; "
        "--quick: 100)",
    )
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
    domain = sub.add_parser(
        "domain",
        help="draft a domain file from a data file (read from the private rows: replace with public knowledge)",
    )
    domain.add_argument("file", metavar="FILE", help="a .csv (UTF-8) or .parquet data file")
    domain.add_argument("--output", metavar="FILE", default=None, help="write the draft here instead of stdout")
    listing = sub.add_parser("list", help="list the registered games, mechanisms, attacks and data sets")
    listing.add_argument(
        "--plugins",
        nargs="+",
        metavar="MODULE",
        default=[],
        help="plugin modules to import first, listing what they register (importing runs their code)",
    )
    return parser


# --slurm-* option → (SlurmCluster field, its type, metavar, help)
_SLURM_OPTIONS: dict[str, tuple[str, type, str, str]] = {
    "--slurm-queue": ("queue", str, "PARTITION", "the partition the jobs go to (default: the cluster's default)"),
    "--slurm-cores": ("cores", int, "N", "CPUs per job, one single-threaded worker each (default 1)"),
    "--slurm-memory": ("memory", str, "SIZE", "memory per job, shared by its workers (default 4GB)"),
    "--slurm-walltime": ("walltime", str, "HH:MM:SS", "time limit per job; an ended job is replaced (default 1 h)"),
    "--slurm-gpus": ("gpus", int, "N", "GPUs per job (--gres=gpu:N), seen by its workers (default 0)"),
    "--slurm-jobs": ("jobs", int, "N", "jobs kept submitted (default 1)"),
    "--slurm-interface": (
        "interface",
        str,
        "IFACE",
        "network interface the scheduler and workers listen on, for compute nodes elsewhere (default: 127.0.0.1)",
    ),
}


def _add_slurm_options(run: argparse.ArgumentParser) -> None:
    slurm = run.add_argument_group("Slurm", "with --cluster slurm: Dask workers as Slurm jobs (docs/cluster.md)")
    slurm.add_argument(
        "--cluster",
        choices=["slurm"],
        help="start the Dask workers as batch jobs of this cluster manager, the scheduler in this process",
    )
    for option, (field, kind, metavar, help_text) in _SLURM_OPTIONS.items():
        slurm.add_argument(option, dest=f"slurm_{field}", type=kind, metavar=metavar, help=help_text)
    slurm.add_argument(
        "--slurm-directive",
        dest="slurm_directives",
        action="append",
        metavar="OPTION",
        help="one more #SBATCH line, e.g. --slurm-directive=--account=proj (repeatable)",
    )


def _slurm_cluster(args: argparse.Namespace) -> SlurmCluster | None:
    """The :class:`~privgame.engine.slurm.SlurmCluster` of ``--cluster slurm`` and its options, else ``None``."""
    from privgame.engine.slurm import SlurmCluster

    given: dict[str, Any] = {}
    named = []
    for option, (field, *_) in _SLURM_OPTIONS.items():
        if getattr(args, f"slurm_{field}") is not None:
            given[field] = getattr(args, f"slurm_{field}")
            named.append(option)
    if args.slurm_directives is not None:
        given["directives"] = tuple(args.slurm_directives)
        named.append("--slurm-directive")
    if args.cluster is None:
        if named:
            raise ValueError(f"{named[0]} needs --cluster slurm.")
        return None
    if args.dask_scheduler is not None:
        raise ValueError("--cluster slurm starts its own Dask scheduler: give it or --dask-scheduler, not both.")
    if args.n_jobs != 1:
        raise ValueError(
            f"--n-jobs sets local workers, got {args.n_jobs} with --cluster slurm, whose workers are --slurm-jobs × "
            "--slurm-cores."
        )
    return SlurmCluster(**given)


def _worker_devices(args: argparse.Namespace, config: Any, slurm: SlurmCluster | None) -> Any:
    """The :class:`~privgame.engine.devices.WorkerDevices` of ``--gpus`` (checked against this machine's GPUs and
    their memory), or of ``--slurm-gpus`` (every job's GPUs, shared by its workers); ``None`` without either."""
    import uuid

    from privgame.engine.devices import WorkerDevices, run_devices

    if slurm is not None:
        if args.gpus is not None:
            raise ValueError("--gpus pins local workers; on Slurm each job's --slurm-gpus are shared by its workers.")
        return WorkerDevices(None, uuid.uuid4().hex[:12]) if slurm.gpus else None
    if args.gpus is None:
        return None
    remote = args.dask_scheduler is not None and args.dask_scheduler != "local"
    return run_devices(args.gpus, n_jobs=args.n_jobs, config=config, here=not remote)


def _cmd_run(args: argparse.Namespace) -> int:
    from privgame.core.outputs import check_output_directory
    from privgame.engine.config import load_config, read_config_bytes
    from privgame.engine.resources import config_reads
    from privgame.engine.runner import DaskScheduler, RunInterrupted, TrialsFailed, run_experiment

    check_n_jobs(args.n_jobs, what="--n-jobs")
    if args.cache_dir is not None:  # "" would cache into the current directory
        check_output_directory(args.cache_dir, what="--cache-dir")
    slurm = _slurm_cluster(args)  # the cluster is checked (sbatch --test-only) by run_experiment, not submitted yet
    dask: DaskScheduler | SlurmCluster | None = slurm
    if args.dask_scheduler is not None:
        timeout = 10.0 if args.dask_timeout is None else args.dask_timeout
        dask = DaskScheduler(args.dask_scheduler, connect_timeout=timeout, dashboard=args.dask_dashboard)
    elif args.dask_timeout is not None or args.dask_dashboard:
        raise ValueError(
            f"{'--dask-timeout' if args.dask_timeout is not None else '--dask-dashboard'} needs --dask-scheduler."
        )
    config_bytes = read_config_bytes(args.config)
    config = load_config(args.config, config_bytes, repetitions=args.repetitions)
    if args.dry_run:
        return _dry_run(config, args, slurm)
    devices = _worker_devices(args, config, slurm)
    check_output_directory(args.out, what="--out", reads=config_reads(args.config, config), clears=args.force)
    from privgame.engine.store import ResultsStore

    # another experiment's results in --out are refused now, before the analytic ε (a DP-SGD calibration) is computed
    ResultsStore(args.out).check_open(
        config.identity, force=args.force, more_repetitions=True, config_bytes=config_bytes
    )
    cache = None
    if not args.no_cache:
        from privgame.core.cache import ArtefactCache, default_cache_dir

        cache = ArtefactCache(args.cache_dir if args.cache_dir is not None else default_cache_dir())
    start = time.perf_counter()
    try:
        store = run_experiment(
            config,
            args.out,
            config_bytes=config_bytes,
            n_jobs=args.n_jobs,
            force=args.force,
            progress=not args.no_progress,
            dask_scheduler=dask,
            cache=cache,
            fail_fast=args.fail_fast,
            devices=devices,
        )
    except TrialsFailed as exc:
        print(f"privgame: {printable(str(exc))}", file=sys.stderr)
        return EXIT_FAILURE
    except RunInterrupted as exc:
        print(
            f"privgame: interrupted: {exc.finished} of {exc.total} trials are safely stored in "
            f"{printable(str(exc.root))}; resume with: {printable(_resume_command(args))}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    stored = len(store.done())
    played = (
        f"{config.n_trials} trials"
        if stored >= config.n_trials
        else f"{stored} of {config.n_trials} trials (the sequential audit stopped where it refuted the claim)"
    )
    print(
        f"{printable(config.name)}: {played} in {printable(str(store.root))} "
        f"({time.perf_counter() - start:.1f} s); summary: privgame report {store.root}"
    )
    return 0


def _resume_command(args: argparse.Namespace) -> str:
    """The command that resumes an interrupted ``privgame run`` (its options, without ``--force``)."""
    import shlex

    command = ["privgame", "run", args.config, "--out", args.out]
    if args.repetitions is not None:
        command += ["--repetitions", str(args.repetitions)]
    if args.n_jobs != 1:
        command += ["--n-jobs", str(args.n_jobs)]
    if args.dask_scheduler is not None:
        command += ["--dask-scheduler", args.dask_scheduler]
        if args.dask_timeout is not None:
            command += ["--dask-timeout", f"{args.dask_timeout:g}"]
        if args.dask_dashboard:
            command.append("--dask-dashboard")
    if args.cluster is not None:
        command += ["--cluster", args.cluster]
        for option, (field, *_) in _SLURM_OPTIONS.items():
            if getattr(args, f"slurm_{field}") is not None:
                command += [option, str(getattr(args, f"slurm_{field}"))]
        command += [f"--slurm-directive={directive}" for directive in args.slurm_directives or ()]
    if args.cache_dir is not None:
        command += ["--cache-dir", args.cache_dir]
    command += [flag for flag, on in (("--no-cache", args.no_cache), ("--no-progress", args.no_progress)) if on]
    if args.fail_fast:
        command.append("--fail-fast")
    return shlex.join(command)


def _dry_run(config: ExperimentConfig, args: argparse.Namespace, slurm: SlurmCluster | None = None) -> int:
    """``privgame run --dry-run``: the plan and its estimates on stdout; nothing in ``--out`` is touched, and with
    ``--cluster slurm`` nothing is submitted (the job script each job would run is shown)."""
    from privgame.engine.resources import format_bytes
    from privgame.engine.runner import dry_run

    plan = dry_run(config, args.out, announce=lambda line: print(f"privgame: {line}", file=sys.stderr, flush=True))
    print(f"{printable(config.name)}: {len(plan.grid)} grid point{'s' if len(plan.grid) != 1 else ''}")
    for index, params in enumerate(plan.grid):
        memory = "" if plan.trial_bytes is None else f"  (about {format_bytes(plan.trial_bytes[index])} a trial)"
        shown = ", ".join(f"{k} = {v!r}" for k, v in params.items()) or "(no swept parameter)"
        print(f"  {index}: {printable(shown)}{memory}")
    remaining = plan.n_trials - plan.finished - plan.stopped
    print(
        f"trials: {plan.n_trials} ({config.repetitions} per grid point); in {printable(args.out)}: {plan.finished} "
        f"done, {remaining} to run"
        + (f" ({plan.stopped} not needed: the sequential audit refuted their claim)" if plan.stopped else "")
        + (f" ({plan.damaged} damaged, run again)" if plan.damaged else "")
        + (f" ({plan.failed} failed, retried)" if plan.failed else "")
    )
    if plan.adding is not None:
        print(f"a run would add repetitions: {plan.adding[0]} → {plan.adding[1]} per grid point (stored trials kept)")
    if plan.refusal is not None:
        print(f"note: a run would be refused: {printable(plan.refusal)}")
    if plan.timing_error is not None:
        print(f"privgame: the timed trial failed: {printable(plan.timing_error)}", file=sys.stderr)
        return EXIT_FAILURE
    if slurm is not None:
        print(f"cluster: {slurm.describe()}, not submitted by --dry-run; each job would run:")
        print("\n".join(f"  {line}" for line in slurm.job_script().strip().splitlines() if line))
    if plan.seconds_per_trial is not None:
        workers = max(1, args.n_jobs if args.n_jobs > 0 else (os.cpu_count() or 1))
        if slurm is not None:
            workers = slurm.workers
        total = plan.seconds_per_trial * remaining / min(workers, max(remaining, 1))
        print(
            f"time: about {plan.seconds_per_trial:.3g} s a trial ({plan.seconds_source}); about {total:.3g} s for the "
            f"{remaining} left on {workers} worker{'s' if workers != 1 else ''}"
        )
    if plan.trial_bytes is not None:
        print(f"memory: about {format_bytes(max(plan.trial_bytes))} for the largest grid point's trial (estimate)")
    if plan.peak_rss_bytes is not None:
        print(f"memory: peak resident size {format_bytes(plan.peak_rss_bytes)} after the timed trial (measured)")
    return 0


def _report_warnings(root: str) -> None:
    """One line on stderr each for a domain that is the data's own draft, the damaged and the failed trials."""
    from privgame.engine.store import ResultsStore, describe_trials

    store = ResultsStore(root)
    source = store.manifest().get("data_source")
    if isinstance(source, dict) and source.get("draft") is True:
        print(
            f"privgame: the domain of {printable(str(source.get('path')))} is the draft `privgame domain` read from "
            "the data itself, not public knowledge: a mechanism's ε claim assumes a public domain.",
            file=sys.stderr,
        )
    damaged, failures = store.damaged(), store.failures()
    if damaged:
        first = min(damaged)
        print(
            f"privgame: {len(damaged)} damaged trial{'s' if len(damaged) != 1 else ''} left out "
            f"({describe_trials(set(damaged))}; trial {first}: {damaged[first]}); rerunning `privgame run` with the "
            "same config resumes them.",
            file=sys.stderr,
        )
    if failures:
        print(
            f"privgame: {len(failures)} trial{'s' if len(failures) != 1 else ''} failed "
            f"({describe_trials(set(failures))}; tracebacks in {printable(str(store.root / 'failures'))}); "
            "rerunning `privgame run` with the same config retries them.",
            file=sys.stderr,
        )


def _cmd_report(args: argparse.Namespace) -> int:
    from privgame.analysis.reporting import estimator_labels_of
    from privgame.engine.report import brief_summary, ceiling_note, mark_ceilings, plot_results, summarise_results

    _check_report_outputs(args)
    _check_report_rows(args)
    trust = {"plugins": args.plugins, "trust_plugins": args.trust_plugins}
    if (args.risk is not None or args.baseline is not None) and not args.compare:
        raise ValueError(f"{'--risk' if args.risk is not None else '--baseline'} needs --compare.")
    if args.compare:
        if args.curves or args.ladder or (args.plot and args.baseline is None):
            raise ValueError("--compare draws only with --baseline (--plot): leave out --curves and --ladder.")
        from privgame.engine.compare import compare_attacks, figure_record_differences, record_differences

        if args.baseline is not None:
            if args.risk is not None:
                raise ValueError("--risk and --baseline are separate comparisons: give one.")
            differences, summary = record_differences(args.results, args.baseline)
            _report_warnings(args.results)  # the damaged trials the comparison left out
            table = _shaped(differences if args.records else summary, args)
            _write_text(args.output, format_table(table, args.format), "--output")
            if args.plot:
                from privgame.analysis._figures import check_suffix, save
                from privgame.engine.compare import point_label

                title = f"each attack against grid point {args.baseline}\n({point_label(args.results, args.baseline)})"
                path = save(figure_record_differences(differences, title=title), check_suffix(args.plot))
                print(f"figure written to {path}", file=sys.stderr)
            return 0

        compared, only = compare_attacks(args.results, risk=0.8 if args.risk is None else args.risk)
        _report_warnings(args.results)  # the damaged trials the comparison left out
        table = _shaped(only if args.records else compared, args)
        _write_text(args.output, format_table(table, args.format), "--output")
        if not args.records:
            print(
                f"privgame: {len(only)} record{'' if len(only) == 1 else 's'} at risk under one attack only "
                "(--compare --records lists them)",
                file=sys.stderr,
            )
        return 0
    if args.records and not (args.curves or args.ladder):
        import pandas as pd

        # the per-record rows need no summary (nor the game built): they report even where the data set is unknown
        summary, swept = pd.DataFrame(), list[str]()
    else:
        summary, swept = summarise_results(args.results, **trust)
    if args.curves:  # before anything is written (the table, a note): a game without curves is refused in one line
        _check_curves(args.results, swept, args.trust_plugins)
    if args.plot:
        _check_plot(args.results)
    _report_warnings(args.results)
    table = _records_table(args.results, trust) if args.records else summary
    if args.records or args.columns:  # --columns picks among all the summary's columns, as --format csv has them
        table = _shaped(table, args)
        if not args.records and args.format != "csv":
            table = mark_ceilings(table)
    elif args.format != "csv":
        table, hidden = brief_summary(args.results, summary, swept, trust_plugins=args.trust_plugins)
        if hidden:
            print(f"privgame: {hidden} more columns (intervals, diagnostics) with --format csv", file=sys.stderr)
    text = format_table(table, args.format)
    if not args.records and not args.columns and args.format != "csv":
        from privgame.engine.report import shared_tables

        for title, shared in shared_tables(args.results, summary, swept, trust_plugins=args.trust_plugins):
            lead = {"markdown": f"\n**{title}**\n\n", "latex": f"\n% {title}\n"}.get(args.format, f"\n{title}:\n")
            text += lead + format_table(shared, args.format)
    _write_text(args.output, text, "--output")
    note = None if args.records else ceiling_note(summary)
    if note is not None:
        print(f"privgame: {note}", file=sys.stderr)
    if not args.records:
        from privgame.engine.report import summary_notes

        for line in summary_notes(args.results, summary, swept, trust_plugins=args.trust_plugins):
            print(f"privgame: note: {line}.", file=sys.stderr)
    if args.plot:
        path = plot_results(args.results, summary, swept, args.plot, trust_plugins=args.trust_plugins)
        print(f"figure written to {path}", file=sys.stderr)
    if args.curves:
        from privgame.engine.report import plot_trial_curves

        drawn = plot_trial_curves(args.results, args.curves, **trust)
        print(f"curves written to {', '.join(str(p) for p in drawn)}", file=sys.stderr)
    if args.ladder and estimator_labels_of(summary):  # [analysis] estimators: their stored bounds, side by side
        from privgame.analysis.reporting import ladder_latex, plot_estimator_ladder
        from privgame.engine.report import ladder_context

        title, subtitle = ladder_context(args.results)
        path, omitted = plot_estimator_ladder(summary, swept, args.ladder, title=title, subtitle=subtitle)
        tex = Path(args.ladder).with_suffix(".tex")  # checked with the other outputs, before any work
        _write_text(str(tex), ladder_latex(summary, swept, caption=f"{title}: {subtitle}."), "--ladder's table")
        note = f" (no bound at this δ, left out: {', '.join(omitted)})" if omitted else ""
        print(f"ladder written to {path} and its LaTeX table to {tex}{note}", file=sys.stderr)
    elif args.ladder:
        from privgame.analysis.ladder import plot_ladder
        from privgame.engine.report import ladder_results

        ladder = ladder_results(args.results, **trust)
        sys.stdout.write("\n" + format_table(ladder, args.format))
        from privgame.engine.report import ladder_context

        title, context = ladder_context(args.results)
        written = plot_ladder(ladder, args.ladder, title=f"{title}\n{context}", truth_label="analytic ε")
        print(f"ladder written to {written}", file=sys.stderr)
    return 0


def _check_report_rows(args: argparse.Namespace) -> None:
    """Refuse ``--sort`` and ``--top`` without ``--records``, and ``--top`` below 1, before any work."""
    for option, value in (("--sort", args.sort), ("--top", args.top)):
        if value is not None and not args.records:
            raise ValueError(f"{option} needs --records (it orders and cuts the per-record rows).")
    if args.top is not None and args.top < 1:
        raise ValueError(f"--top must be a positive integer, got {args.top}.")


def _column_names(given: Sequence[str] | None) -> list[str] | None:
    """``--columns``' names: each value split at its commas (``--columns auc,record --columns value.age``)."""
    if given is None:
        return None
    return [name.strip() for value in given for name in value.split(",")]


def _shaped(table: pd.DataFrame, args: argparse.Namespace) -> pd.DataFrame:
    """The table ``report`` prints: with ``--records``, its rows from the largest ``--sort`` value down, the first
    ``--top``; then the ``--columns`` asked for, in their order."""
    from privgame.engine.report import select_columns, top_rows

    if args.records:
        table = top_rows(table, args.sort, args.top, names=("--sort", "--top"))
    return select_columns(table, _column_names(args.columns), name="--columns")


def _records_table(root: str, trust: dict[str, Any]) -> pd.DataFrame:
    """``report --records``'s table, a record values warning as one line on stderr."""
    from privgame.engine.report import RecordValuesWarning, records_results

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RecordValuesWarning)
        table = records_results(root, **trust)
    for warning in caught:
        if issubclass(warning.category, RecordValuesWarning):
            print(f"privgame: {printable(str(warning.message))}", file=sys.stderr)
        else:
            warnings.showwarning(warning.message, warning.category, warning.filename, warning.lineno)
    return table


def _check_curves(root: str, swept: Sequence[str], trust_plugins: bool) -> None:
    """Refuse ``report --curves`` for results whose game draws no per-trial figure (``Game.plot_trial`` not
    overridden); the results were read (and their plugins imported) by ``summarise_results``."""
    from privgame.engine.config import stored_games
    from privgame.engine.store import ResultsStore
    from privgame.games._base import Game

    manifest = ResultsStore(root).manifest()
    config = manifest.get("config")
    config = config if isinstance(config, dict) else {}
    _, games = stored_games(
        config,
        tuple(swept),
        attack_points=manifest.get("attack_points"),
        source=repr(str(Path(root) / "manifest.json")),
        trusted=trust_plugins,
    )
    for game in games:
        if type(game).plot_trial is Game.plot_trial:
            raise ValueError(f"game {game.name!r} draws no per-trial curves (--curves is for games such as panoramia).")


def _check_plot(root: str) -> None:
    """Refuse ``report --plot`` for results with nothing to draw (a record game that played one of the two games:
    its figure, each record's model-seeded against its traditional AUC, needs both)."""
    from privgame.engine.report import plot_problem

    problem = plot_problem(root)
    if problem is not None:
        raise ValueError(f"--plot {problem}.")


def _cmd_validate(args: argparse.Namespace) -> int:
    from privgame.games.validity import validate

    repetitions = 100 if args.quick else args.repetitions
    if repetitions < 1:
        raise ValueError(f"--repetitions must be at least 1, got {repetitions}.")
    check_n_jobs(args.n_jobs, what="--n-jobs")
    _check_seed(args.seed)
    _check_output_file(args.output, "--output")
    if args.sequential:
        return _validate_sequential(args, repetitions)
    table = validate(
        repetitions=repetitions,
        confidences=args.confidence,
        seed=args.seed,
        include_invalid=args.include_invalid,
        include_estimates=True,
        n_jobs=args.n_jobs,
        progress=True,
    )
    _write_text(args.output, format_table(table, args.format, digits=4), "--output")
    forced = table["expected"] == "violates"  # product-model estimators forced on dependent canaries
    invalid = table["estimator"].str.startswith("INVALID")
    estimate = table["expected"] == "estimate"  # parametric estimates: no promise, no gate
    valid = ~invalid & ~forced & ~estimate
    failed = table[valid & ~table["ok"]]
    caught = table[invalid & ~table["ok"]]["estimator"].nunique()
    print(
        f"{int((valid & table['ok']).sum())} of {int(valid.sum())} estimator/strategy/confidence combinations keep "
        f"their promise (binomial test p > 1e-3, R = {repetitions})"
        + (
            f"; forced on dependent canaries, refusal needed: {int((forced & table['ok']).sum())} of "
            f"{int(forced.sum())} violate (p <= 1e-3)"
            if forced.any()
            else ""
        )
        + (
            f"; invalid estimators caught: {caught} of {table[invalid]['estimator'].nunique()}"
            if args.include_invalid
            else ""
        )
        + (
            f"; parametric estimates (not gated, their rate is how often they exceed the true ε): "
            f"{int(estimate.sum())} rows"
            if estimate.any()
            else ""
        ),
        file=sys.stderr,
    )
    return 0 if failed.empty else 1


def _validate_sequential(args: argparse.Namespace, experiments: int) -> int:
    """``privgame validate --sequential``: :func:`privgame.games.validity_sequential.validate_sequential` at the
    first ``--confidence``; exit status 1 when a true claim is refuted beyond its level (p ≤ 1e-3)."""
    from privgame.games.validity_sequential import validate_sequential

    confidence = args.confidence[0]
    table = validate_sequential(experiments=experiments, budget=20, confidence=confidence, seed=args.seed)
    _write_text(args.output, format_table(table, args.format, digits=4), "--output")
    true = table[table["true_claim"]]
    kept = true[true["p_value"] > 1e-3]
    print(
        f"sequential audit: {len(kept)} of {len(true)} true-claim scenarios keep the level {1 - confidence:g} under "
        f"continuous monitoring ({experiments} experiments of up to 20 trials each)",
        file=sys.stderr,
    )
    return 0 if len(kept) == len(true) else 1


def _cmd_ladder(args: argparse.Namespace) -> int:
    from privgame.analysis.ladder import gaussian_ladder, plot_ladder

    _check_seed(args.seed)
    _check_output_file(args.plot, "--plot", suffixes=FIGURE_SUFFIXES)
    table = gaussian_ladder(args.mu, n=args.n, delta=args.delta, confidence=args.confidence, seed=args.seed)
    sys.stdout.write(format_table(table, args.format))
    if args.plot:
        print(f"ladder written to {plot_ladder(table, args.plot, title='Gaussian scores')}", file=sys.stderr)
    return 0


def _one_or_sweep(values: list[float] | None) -> float | list[float] | None:
    """An option given one value or several: the value, or the list that sweeps it."""
    return values if values is None or len(values) > 1 else values[0]


def _cmd_reanalyse(args: argparse.Namespace) -> int:
    from privgame.core.outputs import check_output_directory
    from privgame.engine.reanalyse import reanalyse
    from privgame.engine.store import StoreError

    analysis: dict[str, Any] = {}
    if args.config is not None:
        import tomllib

        from privgame.engine.config import read_config_bytes

        try:
            data = tomllib.loads(read_config_bytes(args.config).decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"--config {args.config!r} is not valid TOML: {exc}") from None
        except RecursionError:  # tomllib parses nested arrays and inline tables recursively
            raise ValueError(
                f"--config {args.config!r} must nest its values a few levels deep, not thousands."
            ) from None
        section = data.get("analysis", data)
        if not isinstance(section, dict) or any(isinstance(v, dict) for k, v in section.items() if k != "threshold"):
            raise ValueError(f"--config {args.config!r} must hold an [analysis] section (or its keys alone).")
        analysis.update(section)
    threshold: Any = args.threshold
    if threshold is not None:
        try:
            threshold = float(threshold)
        except ValueError:
            pass
    given = {
        "estimators": args.estimators,
        "confidence": _one_or_sweep(args.confidence),
        "delta": _one_or_sweep(args.delta),
        "threshold": threshold,
        "two_sided": args.two_sided,
        "allow_unmatched_family": args.allow_unmatched_family,
        "allow_dependent_canaries": args.allow_dependent_canaries,
    }
    analysis.update({k: v for k, v in given.items() if v is not None})
    check_output_directory(args.out, what="--out", reads={"--config": args.config})
    try:
        store = reanalyse(
            args.results,
            args.out,
            analysis,
            trust_plugins=args.trust_plugins,
            progress=not args.no_progress,
            announce=lambda line: print(f"privgame: {line}", file=sys.stderr),
        )
    except StoreError as exc:
        raise ValueError(str(exc)) from None
    print(f"reanalysed into {printable(str(store.root))}; summary: privgame report {store.root}")
    return 0


def _cmd_domain(args: argparse.Namespace) -> int:
    """``privgame domain FILE``: the draft domain of a data file, headed by the warning that it is not public."""
    from privgame.data.files import draft_text

    _check_output_file(args.output, "--output", reads={"the data file": args.file})
    _write_text(args.output, draft_text(args.file), "--output")
    if args.output is not None:
        print(
            f"privgame: wrote a DRAFT domain to {printable(args.output)}: it was read from the data; replace its "
            "categories and ranges with public knowledge before an audit that claims DP.",
            file=sys.stderr,
        )
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    from privgame.engine.registry import ATTACKS, GAMES, MECHANISMS

    if args.plugins:  # only then: the configs (and what they import) are needed to import plugins
        from privgame.engine.config import import_plugins

        import_plugins(args.plugins, source="--plugins")
    for title, registry in (("games", GAMES), ("mechanisms", MECHANISMS), ("attacks", ATTACKS)):
        print(f"{title}:")
        # summaries() imports nothing: the built-ins' one-line summaries are stored beside their import paths
        entries = registry.summaries()
        width = max((len(name) for name, _ in entries), default=0)
        for name, summary in entries:
            print(printable(f"  {name.ljust(width)}  {summary}"))
    from privgame.data.catalogue import dataset_names, get_dataset

    print("data sets:")
    names = dataset_names()
    width = max(len(name) for name in names)
    for name in names:
        dataset = get_dataset(name)
        serves = ", ".join(sorted(dataset.serves))
        print(printable(f"  {name.ljust(width)}  {dataset.size:,} records ({serves}): {dataset.description}"))
    return 0


def _check_seed(seed: int) -> None:
    if seed < 0:
        raise ValueError(f"--seed must be an integer >= 0, got {seed}.")


def _check_output_file(
    path: str | Path | None,
    option: str,
    *,
    reads: Mapping[str, str | None] | None = None,
    results: Sequence[str] = (),
    suffixes: tuple[str, ...] | None = None,
    probe: bool = True,
) -> None:
    """Refuse an output file that :func:`privgame.core.outputs.output_file_problem` refuses (nothing for ``None``)."""
    from privgame.core.outputs import OutputPathError, output_file_problem

    problem = None
    if path is not None:
        problem = output_file_problem(path, what=option, reads=reads, results=results, suffixes=suffixes, probe=probe)
    if problem is not None:
        raise OutputPathError(f"{problem}.")


def _write_text(path: str | None, text: str, option: str) -> None:
    """Write ``text`` to ``path`` (checked by :func:`_check_output_file`) atomically, or to stdout when ``path`` is
    None."""
    if path is None:
        sys.stdout.write(text)
        return
    from privgame.core.outputs import write_text

    write_text(path, text, what=option)


def _check_report_outputs(args: argparse.Namespace) -> None:
    """Every file ``privgame report`` may write, checked before the results are summarised: each on its own
    (:func:`_check_output_file`; none a file of the results directory or the data file its manifest names), then
    all together (no two the same file).  ``--ladder FILE`` also names its LaTeX table, ``FILE`` with ``.tex``, and
    ``--curves FILE`` the names of each grid point's figure, ``FILE-p<index>``: all are checked."""
    from privgame.core.outputs import check_distinct
    from privgame.engine.report import trial_curve_paths
    from privgame.engine.store import ResultsStore

    if args.curves and Path(args.curves).suffix.lower() not in (".png", ".pdf"):
        raise ValueError(f"--curves must name a .png or .pdf file, got {args.curves!r}.")
    outputs: dict[str, tuple[str | Path | None, tuple[str, ...] | None]] = {
        "--output": (args.output, None),
        "--plot": (args.plot, FIGURE_SUFFIXES),
        "--ladder": (args.ladder, FIGURE_SUFFIXES),
        "--curves": (args.curves, None),
    }
    results = (args.results,)
    for option, (path, suffixes) in outputs.items():  # first what needs no manifest: a bad name fails at once
        _check_output_file(path, option, results=results, suffixes=suffixes)
    if args.ladder:
        outputs["--ladder's table"] = (Path(args.ladder).with_suffix(".tex"), None)
    try:
        manifest = ResultsStore(args.results).manifest()
    except ValueError:  # not results (a StoreError): said in its own words when they are read
        manifest = {}
    grid = manifest.get("grid")
    if args.curves and isinstance(grid, list) and len(grid) > 1:  # FILE itself where one grid point has trials
        for index, path in trial_curve_paths(args.curves, range(len(grid))).items():
            outputs[f"--curves (grid point {index})"] = (path, None)
    source = manifest.get("data_source")
    data = source.get("path") if isinstance(source, dict) and isinstance(source.get("path"), str) else None
    for option, (path, _) in outputs.items():  # their folders were probed above (FILE-p<index> is beside FILE)
        _check_output_file(path, option, reads={"the data file": data}, results=results, probe=False)
    check_distinct({option: path for option, (path, _) in outputs.items()})


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``privgame`` command; returns the exit status."""
    args = _parser().parse_args(argv)
    commands = {
        "run": _cmd_run,
        "report": _cmd_report,
        "list": _cmd_list,
        "domain": _cmd_domain,
        "validate": _cmd_validate,
        "ladder": _cmd_ladder,
        "reanalyse": _cmd_reanalyse,
        "synth": synth_cli.run,
    }
    try:
        return commands[args.command](args)
    except (ValueError, TypeError, FileNotFoundError) as exc:  # bad input: each check raises with one line
        if args.debug:
            raise
        print(f"privgame: error: {printable(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("privgame: interrupted; rerun the same command to resume.", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OutputWriteError as exc:  # a full disk, a permission: the file and what was being written, one line
        if args.debug:
            raise
        print(f"privgame: {printable(str(exc))}", file=sys.stderr)
        return EXIT_FAILURE
    except OSError as exc:  # an error of the system that no writer named: its own words (a path where it has one)
        if args.debug:
            raise
        print(
            f"privgame: error: {type(exc).__name__}: {printable(str(exc))} in `privgame {args.command}` "
            "(run with --debug for the traceback)",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    except MemoryError:
        if args.debug:
            raise
        print(
            "privgame: error: out of memory; lower the sizes (privgame run --dry-run estimates them).", file=sys.stderr
        )
        return EXIT_FAILURE
    except Exception as exc:  # the last line of defence: a bug, not an input the checks missed on purpose
        if args.debug:
            raise
        print(
            f"privgame: error: unexpected {type(exc).__name__}: {printable(str(exc))} "
            "(run with --debug for the traceback, and please report it)",
            file=sys.stderr,
        )
        return EXIT_FAILURE


def console() -> NoReturn:
    """The ``privgame`` command: :func:`main`, then :func:`exit_now` with its status."""
    exit_now(main())


def exit_now(status: int) -> NoReturn:
    """End the process with ``status`` without Python's teardown of every module it loaded.

    That teardown (freeing scipy's, pandas' and privgame's ~950 modules one by one) took 0.2 s after every
    ``privgame run`` on 2 cores, after the last result was written: a tenth of a short run's serial time.  What it
    does that matters is done first: the ``atexit`` handlers (``weakref.finalize`` among them) and the standard
    streams flushed.  Where a thread that is not a daemon still runs (a thread pool a library left, a Dask client's
    loop), its work is not cut short: the process exits the normal way.
    """
    threads = threading.enumerate()
    if any(not t.daemon and t is not threading.main_thread() for t in threads):
        sys.exit(status)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: as Python would, fail the exit status
            status = status or EXIT_FAILURE
    os._exit(status)


if __name__ == "__main__":
    console()
