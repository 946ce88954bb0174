"""The Python API: :func:`run` an experiment, :func:`load` a finished results directory, read either as
:class:`Results` (docs/api.md).

Everything here is a thin layer over what ``privgame run`` and ``privgame report`` use: a config is validated by
:func:`privgame.engine.config.load_config` or :func:`privgame.engine.config.parse_config`, played by
:func:`privgame.engine.runner.run_experiment` into a results directory, and read back by
:func:`privgame.engine.report.summarise_results`, :func:`privgame.engine.report.records_results` and
:func:`privgame.engine.report.figure_results`.  So a Python run and a command-line run of the same config give the same
directory, byte for byte in its rows and arrays, and either can resume or report the other's.

This module imports only the standard library when it is imported; numpy, pandas, the registries and the runner
load when a function is called.
"""

from __future__ import annotations

import contextlib
import numbers
import os
import re
import shutil
import sys
import tempfile
import warnings
import weakref
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from privgame.engine._text import summary

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from privgame.engine.config import ExperimentConfig

__all__ = ["Results", "load", "run"]


def run(
    config: str | os.PathLike[str] | Mapping[str, Any] | ExperimentConfig,
    out: str | os.PathLike[str] | None = None,
    *,
    n_jobs: int = 1,
    repetitions: int | None = None,
    force: bool = False,
    progress: bool | None = None,
    cache: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
    fail_fast: bool = False,
    dask_scheduler: str | None = None,
    gpus: str | Sequence[int] | None = None,
) -> Results:
    """Run (or resume) an experiment and return its results: ``privgame run CONFIG --out OUT`` from Python.

    Parameters
    ----------
    config : str, path-like, dict or privgame.engine.config.ExperimentConfig
        A TOML config file; a dict of the same sections (``{"experiment": {...}, "game": {...}, "mechanism":
        {...}, "attack": {...}, "analysis": {...}}``, docs/config.md), where a tuple is read as a TOML array and
        numpy numbers and arrays as the numbers they hold; or a config already validated by
        :func:`privgame.engine.config.load_config` / :func:`privgame.engine.config.parse_config`.  A relative path
        inside the config is resolved as ``privgame run`` resolves it for a file (against the file's folder where the
        config format says so) and against the current directory for a dict; plugins are imported by module name from
        ``sys.path``, as for the command.
    out : str, path-like or None, default=None
        The results directory, created if needed and resumed if it holds this config's results (as
        ``privgame run --out``).  ``None``: a new temporary directory, owned by the returned :class:`Results`
        and deleted when it is closed (:meth:`Results.close`, or the end of a ``with`` block), garbage-collected,
        or at the latest when the interpreter exits normally.
    n_jobs : int, default=1
        Parallel workers (-1: all cores).  The results are the same for any value.
    repetitions : int or None, default=None
        Repetitions per grid point instead of the config's (``--repetitions``); on a finished ``out`` it adds
        repetitions and keeps the trials already run.
    force : bool, default=False
        Delete another config's results in ``out`` instead of refusing (``--force``).
    progress : bool or None, default=None
        Show progress bars on stderr; ``None``: when stderr is a terminal or the code runs in a Jupyter kernel.
    cache : bool, default=True
        Keep generator runs, shadow tables and calibrations in the artefact cache (``False``: ``--no-cache``).  It
        changes no number, only the time.
    cache_dir : str, path-like or None, default=None
        The cache's folder (``--cache-dir``); ``None``: ``$PRIVGAME_CACHE_DIR`` or ``~/.cache/privgame``.
    fail_fast : bool, default=False
        Stop at the first trial that raises (``--fail-fast``).
    dask_scheduler : str or None, default=None
        A ``dask.distributed`` scheduler's address, or ``"local"`` (``--dask-scheduler``; docs/cluster.md).
    gpus : str, sequence of int or None, default=None
        ``"all"`` or GPU indices: every process that plays trials is pinned to one of them, round-robin
        (``--gpus``; :mod:`privgame.engine.devices`); ``None``: no pinning.

    Returns
    -------
    Results

    Raises
    ------
    privgame.engine.config.ConfigError
        If the config is invalid, or a file config is missing or unreadable (one line naming the field, the value
        and the rule, as the command prints it).
    TypeError
        If ``config`` is none of the kinds above, or an argument has the wrong type.
    ValueError
        For a bad argument (``n_jobs``, ``repetitions``, ``cache_dir`` with ``cache=False``, an ``out`` or a
        ``cache_dir`` that cannot be written: :func:`privgame.core.outputs.check_output_directory`, docs/security.md);
        :class:`privgame.engine.store.StoreError` if ``out`` holds another config's results and ``force`` is false.
    privgame.engine.runner.TrialsFailed
        After the run, if some trials raised; the others are stored in ``out`` (with ``out=None`` the temporary
        directory is deleted, and the note under the error shows the first failure).
    privgame.engine.runner.RunInterrupted
        On Ctrl-C, once the workers are stopped (resume with the same call and ``out``).

    Examples
    --------
    >>> import privgame
    >>> config = {
    ...     "experiment": {"name": "rr", "seed": 1, "repetitions": 2},
    ...     "game": {"name": "one-run", "m": 1000, "k_pos": 100, "k_neg": 100},
    ...     "mechanism": {"name": "randomized-response", "epsilon": [1.0, 4.0]},
    ...     "attack": {"name": "identity"},
    ... }
    >>> with privgame.run(config, progress=False) as results:  # a temporary directory, deleted at the end
    ...     table = results.summary()
    >>> table[["mechanism.epsilon", "n_trials"]].to_dict("list")
    {'mechanism.epsilon': [1.0, 4.0], 'n_trials': [2, 2]}
    """
    from privgame.core.outputs import check_output_directory
    from privgame.engine.resources import check_n_jobs, config_reads
    from privgame.engine.runner import TrialsFailed, run_experiment
    from privgame.engine.store import ResultsStore

    check_n_jobs(n_jobs, what="n_jobs")
    for name, flag in (("force", force), ("cache", cache), ("fail_fast", fail_fast)):
        _check_bool(name, flag)
    if progress is not None:
        _check_bool("progress", progress)
    if not cache and cache_dir is not None:
        raise ValueError(f"cache_dir must be None when cache is False (nothing is cached), got {summary(cache_dir)}.")
    if cache_dir is not None:  # "" would cache into the current directory
        check_output_directory(cache_dir, what="cache_dir")
    if repetitions is not None:
        from privgame.analysis._checks import check_int

        if isinstance(repetitions, bool) or not isinstance(repetitions, numbers.Integral):
            raise TypeError(f"repetitions must be an integer, got {summary(repetitions)}.")
        repetitions = check_int("repetitions", repetitions, low=1)
    experiment, config_bytes = _experiment(config, repetitions)

    temporary = out is None
    if out is None:
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", experiment.name)[:40].strip("._") or "experiment"
        root = Path(tempfile.mkdtemp(prefix=f"privgame-{slug}-"))
    else:
        if not isinstance(out, str | os.PathLike):
            raise TypeError(f"out must be a path (str or os.PathLike) or None, got {summary(out)}.")
        reads = config_reads(config if isinstance(config, str | os.PathLike) else None, experiment)
        check_output_directory(out, what="out", reads=reads, clears=force)
        root = Path(out)
        # another experiment's results are refused now, before the analytic ε (a DP-SGD calibration)
        with _python_terms():
            ResultsStore(root).check_open(
                experiment.identity, force=force, more_repetitions=True, config_bytes=config_bytes
            )

    devices = None
    if gpus is not None:
        from privgame.engine.devices import run_devices

        remote = dask_scheduler is not None and dask_scheduler != "local"
        devices = run_devices(gpus, n_jobs=n_jobs, config=experiment, here=not remote)
    artefacts = None
    if cache:
        from privgame.core.cache import ArtefactCache, default_cache_dir

        artefacts = ArtefactCache(Path(cache_dir) if cache_dir is not None else default_cache_dir())
    try:
        with _python_terms():
            store = run_experiment(
                experiment,
                root,
                config_bytes=config_bytes,
                n_jobs=n_jobs,
                force=force,
                progress=_progress_default() if progress is None else progress,
                dask_scheduler=dask_scheduler,
                cache=artefacts,
                fail_fast=fail_fast,
                devices=devices,
            )
    except TrialsFailed as exc:
        if temporary:
            exc.add_note(_first_failure(ResultsStore(root)))
            shutil.rmtree(root, ignore_errors=True)
        raise
    except BaseException:
        if temporary:
            shutil.rmtree(root, ignore_errors=True)
        raise
    return Results(store.root, plugins=experiment.plugins, _temporary=temporary)


def load(path: str | os.PathLike[str], *, plugins: Sequence[str] = (), trust_plugins: bool = False) -> Results:
    """The results of a finished (or partly finished) run in ``path``, as ``privgame report`` reads them.

    Reading runs none of the directory's code: the plugins its manifest names are not imported unless asked, as
    in ``privgame report``.  A plugin is needed only when the experiment's game itself comes from one.

    Parameters
    ----------
    path : str or path-like
        A results directory written by ``privgame run`` or :func:`run`.
    plugins : sequence of str, default=()
        Plugin modules to import first (``--plugins``): modules you trust, say your own copy of the plugin.
    trust_plugins : bool, default=False
        Import the plugins the manifest names when the results are read (``--trust-plugins``).  Importing a
        module runs its code: only for results from a trusted source.

    Returns
    -------
    Results
        Not owning the directory: closing it deletes nothing.

    Raises
    ------
    privgame.engine.store.StoreError
        If ``path`` does not exist, is not a directory, or is not a privgame results directory (no readable
        manifest of this format).
    privgame.engine.config.ConfigError
        If a plugin in ``plugins`` cannot be imported.
    TypeError
        If ``path`` is not a path, or ``plugins`` not a sequence of module names.
    """
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"path must be a results directory (str or os.PathLike), got {summary(path)}.")
    from privgame.engine.store import StoreError

    root = Path(path)
    if not root.exists():
        raise StoreError(f"results directory {str(root)!r} does not exist.")
    if not root.is_dir():
        raise StoreError(f"{str(root)!r} is not a directory; give a results directory written by privgame run.")
    return Results(root, plugins=plugins, trust_plugins=trust_plugins)


class Results:
    """A results directory, read as ``privgame report`` reads it; returned by :func:`run` and :func:`load`.

    Every method reads the directory when called (nothing is cached), so results that a run is still adding to
    show its latest finished trials.  Results that :func:`run` wrote into a temporary directory (``out=None``)
    own it: :meth:`close`, the end of a ``with`` block, garbage collection or the normal end of the interpreter
    deletes it, and the methods refuse afterwards.  Results of a directory you named are never deleted.

    Parameters
    ----------
    path : str or path-like
        The results directory (use :func:`load`, which checks it first).
    plugins : sequence of str, default=()
        Plugin modules to import (as :func:`load`).
    trust_plugins : bool, default=False
        Import the plugins the manifest names (as :func:`load`).

    Raises
    ------
    privgame.engine.store.StoreError
        If ``path`` is not a privgame results directory.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        plugins: Sequence[str] = (),
        trust_plugins: bool = False,
        _temporary: bool = False,
    ) -> None:
        from privgame.engine.config import import_plugins
        from privgame.engine.store import ResultsStore

        if isinstance(plugins, str) or not all(isinstance(p, str) for p in plugins):
            raise TypeError(f"plugins must be a sequence of module names, got {summary(plugins)}.")
        _check_bool("trust_plugins", trust_plugins)
        self._path = Path(path).absolute()
        self._plugins = tuple(plugins)
        self._trust_plugins = trust_plugins
        self._finalizer: weakref.finalize[Any, Any] | None = None
        if _temporary:  # first, so that a directory that fails the checks below is still deleted
            self._finalizer = weakref.finalize(self, shutil.rmtree, str(self._path), ignore_errors=True)
        manifest = ResultsStore(self._path).manifest()
        import_plugins(self._plugins, source="plugins")
        self._name = str(manifest.get("name") or self._path.name)

    # -- the directory -------------------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        """The results directory (absolute); for temporary results it no longer exists once they are closed."""
        return self._path

    @property
    def name(self) -> str:
        """The experiment's name (``[experiment] name``)."""
        return self._name

    @property
    def temporary(self) -> bool:
        """Whether these results own a temporary directory, deleted by :meth:`close` (``run(out=None)``)."""
        return self._finalizer is not None

    @property
    def closed(self) -> bool:
        """Whether the temporary directory has been deleted (always ``False`` for a directory you named)."""
        return self._finalizer is not None and not self._finalizer.alive

    def close(self) -> None:
        """Delete the temporary directory of results run with ``out=None``; for a directory you named, nothing.
        Calling it again does nothing."""
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> Results:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = " (temporary, deleted)" if self.closed else " (temporary)" if self.temporary else ""
        return f"<privgame.Results {self._name!r}: {self._path}{state}>"

    def _root(self) -> str:
        if self.closed:
            raise ValueError(
                f"these results were closed and their temporary directory {str(self._path)!r} deleted; pass "
                "out=DIR to privgame.run to keep them."
            )
        return str(self._path)

    def _trust(self) -> dict[str, Any]:
        return {"plugins": self._plugins, "trust_plugins": self._trust_plugins}

    # -- reading ---------------------------------------------------------------------------------------------
    @property
    def config(self) -> dict[str, Any]:
        """The config the results were run with, as read (the manifest's ``config``: sections of tables)."""
        from privgame.engine.store import ResultsStore

        config = ResultsStore(self._root()).manifest().get("config")
        return config if isinstance(config, dict) else {}

    def summary(self, *, brief: bool = False) -> pd.DataFrame:
        """One row per grid point: what ``privgame report --format csv`` prints.

        Parameters
        ----------
        brief : bool, default=False
            Only the columns of ``privgame report``'s plain table (the swept parameters, the analytic ε and the
            game's main columns).

        Returns
        -------
        DataFrame
            The swept parameters (named by their config keys, ``mechanism.epsilon``), what the mechanism derived
            (``mechanism.sigma``), ``epsilon_analytic``, then the game's columns (docs/results.md); a ``failed``
            column when any trial failed.  Damaged trials are left out, with a warning.

        Raises
        ------
        privgame.engine.store.StoreError
            If the directory holds no finished trial, or its game comes from a plugin that is not imported.
        """
        from privgame.engine.report import brief_summary, summarise_results

        root = self._root()
        self._warn_damaged(root)
        with _python_terms():
            table, swept = summarise_results(root, **self._trust())
        return brief_summary(root, table, swept, trust_plugins=self._trust_plugins)[0] if brief else table

    def records(
        self, *, sort: str | None = None, top: int | None = None, columns: Sequence[str] | None = None
    ) -> pd.DataFrame:
        """One row per (record, game) of a record-level game (``privgame report --records``): the grid point's
        swept values, then ``record, game, selection, auc, auc_low, auc_high, accuracy, ..., epsilon_lb``.

        Parameters
        ----------
        sort : str or None, default=None
            A numeric column: the rows from its largest value down, NaN last (``--sort``); ``None``: stored order.
        top : int or None, default=None
            Only the first ``top`` rows, after ``sort`` (``--top``; ``records(sort="auc", top=5)``: the five
            riskiest records); ``None``: all.
        columns : sequence of str or None, default=None
            Only these columns, in this order (``--columns``); ``None``: all.

        Raises
        ------
        privgame.engine.store.StoreError
            If the experiment's game keeps no per-record results (only the record games do).
        ValueError
            If ``sort`` is not a numeric column, ``top`` is below 1, or ``columns`` names a column the table lacks
            (each listing the valid ones).
        """
        from privgame.engine.report import records_results, select_columns, top_rows
        from privgame.engine.store import ResultsStore, StoreError

        root = self._root()
        store = ResultsStore(root)
        if store.records().empty and not store.rows().empty:
            section = self.config.get("game")
            game = section.get("name") if isinstance(section, dict) else None
            raise StoreError(
                f"records() needs a game that keeps per-record results (record, record-traditional, "
                f"record-model-seeded, lira); this experiment's game is {game!r}."
            )
        with _python_terms():
            table = records_results(root, **self._trust())
        return select_columns(top_rows(table, sort, top), columns)

    def compare(self, *, risk: float = 0.8) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The attacks (grid points) side by side on the same targets (``privgame report --compare``): the table
        (pooled AUC, TPR at FPR 1e-3/1e-2/1e-1 with realised FPRs, per-record AUCs, records at risk and those only
        this attack finds, runs and seconds) and the records only one attack finds at ``risk``
        (:func:`privgame.engine.compare.compare_attacks`; docs/attacks.md)."""
        from privgame.engine.compare import compare_attacks

        root = self._root()
        with _python_terms():
            return compare_attacks(root, risk=risk)

    def compare_figure(self, baseline: int | None = None, *, n_boot: int = 1000, ax: Axes | None = None) -> Figure:
        """The attacks (grid points) side by side on the same targets, as a matplotlib Figure (no file written).

        Without ``baseline``: each attack's log–log ROC curve on its pooled scores, one panel per game played (the
        record games' traditional and model-seeded games; one panel for the ``lira`` game and the audits), each
        curve named by the attack's swept values and its pooled AUC
        (:func:`privgame.engine.compare.compare_roc_curves`).  It shows what :meth:`compare`'s table reads at three
        FPRs (``tpr_0.001``, ...) over the whole low-FPR range, where membership-inference attacks are told apart
        (Carlini et al. 2022, arXiv:2112.03570).  With
        ``baseline``: what ``privgame report --compare --baseline N --plot FILE`` draws, each record's AUC
        difference from grid point ``baseline`` (with its paired bootstrap interval) against its AUC under the
        baseline, one panel per game played (:meth:`differences`).

        Parameters
        ----------
        baseline : int or None, default=None
            The grid point every other attack is compared with, record by record; None: the ROC curves.
        n_boot : int, default=1000
            Paired bootstrap replicates per record (with ``baseline`` only).
        ax : matplotlib Axes or None, default=None
            Draw into this axes, in its figure, where the figure has one panel (one game played); a record game
            draws a panel for each of its two games and refuses an ``ax``.

        Returns
        -------
        Figure
            A new plain Figure (not managed by pyplot), or ``ax``'s.

        Raises
        ------
        ValueError
            If no grid point has scores of both members and non-members (no ROC curve), no attack besides the
            baseline has a record in common with it, or ``ax`` is given for a figure of several panels.
        privgame.engine.store.StoreError
            If the directory holds no finished trial, or ``baseline`` is not a finished grid point.
        TypeError
            If ``ax`` is not a matplotlib Axes, or ``baseline`` not an integer.
        """
        root = self._root()
        if baseline is None:
            from privgame.analysis.reporting import figure_roc_curves
            from privgame.engine.compare import compare_roc_curves

            with _python_terms():
                panels = compare_roc_curves(root)
            trials = len(self.trials())
            subtitle = f"pooled scores of each attack's trials ({trials} in all)"
            return figure_roc_curves(panels, title=self._name, subtitle=subtitle, ax=ax)
        if isinstance(baseline, bool) or not isinstance(baseline, numbers.Integral):
            raise TypeError(f"baseline must be a grid point's index (an integer) or None, got {summary(baseline)}.")
        from privgame.engine.compare import figure_record_differences, point_label, record_differences

        with _python_terms():
            records, _ = record_differences(root, int(baseline), n_boot=n_boot)
            label = point_label(root, int(baseline))
        title = f"each attack against grid point {baseline}\n({label})"
        return figure_record_differences(records, title=title, ax=ax)

    def differences(self, baseline: int, *, n_boot: int = 1000) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Each attack against grid point ``baseline``, record by record on the same rounds (``report --compare
        --baseline``): every record's paired AUC difference with its bootstrap interval, and per attack and game the
        mean difference with its interval (:func:`privgame.engine.compare.record_differences`)."""
        from privgame.engine.compare import record_differences

        root = self._root()
        with _python_terms():
            return record_differences(root, baseline, n_boot=n_boot)

    def trials(self) -> pd.DataFrame:
        """One row per finished trial, as stored (``results.parquet``, docs/results.md): ``trial``,
        ``grid_point``, the swept values, the trial's metrics (its bounds), its seconds and its files' SHA-256;
        damaged trials are left out.  Empty before any trial has finished."""
        from privgame.engine.store import ResultsStore

        return ResultsStore(self._root()).rows()

    def plot(self, ax: Axes | None = None) -> Figure:
        """The figure ``privgame report --plot`` draws, as a matplotlib Figure (no file written).

        The lower bound against the analytic ε (one-run and multi-run audits), the five measurements side by side
        (PANORAMIA), log-log ROC curves (LiRA), or each record's model-seeded against its traditional AUC (the
        record games).  ``fig.savefig("figure.png")`` writes what ``--plot figure.png`` would.

        Parameters
        ----------
        ax : matplotlib Axes or None, default=None
            Draw into this axes, in its figure (whose size, layout and title are left alone), instead of a new
            figure.  Only figures of one panel can: a LiRA figure (one panel per evaluation), a record game's
            scatter of several grid points and an analysis sweep's ladder (one panel per setting) need a figure
            of their own, and refuse an ``ax``.

        Returns
        -------
        Figure
            A new plain Figure (not managed by pyplot: a notebook shows it once, nothing stays open), or ``ax``'s.

        Raises
        ------
        ValueError
            If there is nothing to draw (a record game that played only one of its two games; no grid point with
            an analytic ε), or ``ax`` is given for a figure of several panels.
        TypeError
            If ``ax`` is not a matplotlib Axes.
        """
        from privgame.engine.report import figure_results, plot_problem, summarise_results

        root = self._root()
        problem = plot_problem(root)
        if problem is not None:
            raise ValueError(f"plot() {problem}.")
        with _python_terms():
            table, swept = summarise_results(root, **self._trust())
        return figure_results(root, table, swept, ax=ax, trust_plugins=self._trust_plugins)

    def ladder(self, ax: Axes | None = None) -> Figure:
        """The estimator ladder ``privgame report --ladder FILE`` draws, as a matplotlib Figure (no file written).

        With ``[analysis] estimators``: each chosen estimator's stored median bound, its min–max over the
        repetitions as a bar, at every grid point beside the analytic ε (one panel per setting of an analysis
        sweep; :func:`privgame.analysis.reporting.figure_estimator_ladder`).  Without: every ladder estimator's bound
        on each grid point's stored scores, median over the trials, as grouped bars
        (:func:`privgame.engine.report.ladder_results`, :func:`privgame.analysis.ladder.figure_ladder`).  The title
        holds the experiment's name and the confidence, δ, the game's size and the guessing rule.

        Parameters
        ----------
        ax : matplotlib Axes or None, default=None
            Draw into this axes, in its figure, instead of a new figure; a ladder over an ``[analysis]`` sweep (one
            panel per setting) refuses it.

        Returns
        -------
        Figure
            A new plain Figure (not managed by pyplot), or ``ax``'s.

        Raises
        ------
        ValueError
            If there is nothing to draw (no stored scores to run the ladder on), or ``ax`` is given for a figure of
            several panels.
        privgame.engine.store.StoreError
            If the directory holds no finished trial.
        TypeError
            If ``ax`` is not a matplotlib Axes.
        """
        from privgame.analysis.reporting import estimator_labels_of, figure_estimator_ladder
        from privgame.engine.report import ladder_context, ladder_results, summarise_results

        root = self._root()
        with _python_terms():
            table, swept = summarise_results(root, **self._trust())
        title, context = ladder_context(root)
        if estimator_labels_of(table):
            figure, _ = figure_estimator_ladder(table, swept, title=title, subtitle=context, ax=ax)
            return figure
        from privgame.analysis.ladder import figure_ladder

        with _python_terms():
            bounds = ladder_results(root, **self._trust())
        return figure_ladder(bounds, title=f"{title}\n{context}", truth_label="analytic ε", ax=ax)

    def _warn_damaged(self, root: str) -> None:
        from privgame.engine.store import ResultsStore, describe_trials

        damaged = ResultsStore(root).damaged()
        if damaged:
            first, count = min(damaged), len(damaged)
            warnings.warn(
                f"{count} damaged trial{'s' if count != 1 else ''} left out ({describe_trials(set(damaged))}; trial "
                f"{first}: {damaged[first]}); privgame.run with the same config and out resumes them.",
                stacklevel=3,
            )


# -- helpers ----------------------------------------------------------------------------------------------------


#: the command's options in the store's and the report's messages, and what this API calls them
_TERMS = (
    (re.compile(r"^--out "), "out "),
    (re.compile(r"--repetitions (\d+)"), r"repetitions=\1"),
    (re.compile(r"--repetitions\b"), "repetitions"),
    (re.compile(r"--force\b"), "force=True"),
    (re.compile(r"--trust-plugins\b"), "trust_plugins=True"),
    (re.compile(r"--plugins MODULE \.\.\."), "plugins=[MODULE, ...]"),
    (re.compile(r"--plugins\b"), "plugins"),
    (re.compile(r"--out\b"), "out"),
    (re.compile(r"--baseline\b"), "baseline"),
    (re.compile(r"--compare\b"), "compare()"),
)


@contextlib.contextmanager
def _python_terms() -> Iterator[None]:
    """Re-raise a config or store error whose message names a command-line option with this API's keyword
    instead (``--force`` → ``force=True``), the same error type and otherwise the same words."""
    from privgame.engine.config import ConfigError
    from privgame.engine.store import StoreError

    try:
        yield
    except (ConfigError, StoreError) as exc:
        text = str(exc)
        for pattern, replacement in _TERMS:
            text = pattern.sub(replacement, text)
        if text == str(exc):
            raise
        raise type(exc)(text) from None


def _check_bool(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {summary(value)}.")


def _progress_default() -> bool:
    """Progress bars by default where someone watches: stderr a terminal, or a Jupyter kernel's output."""
    try:
        if sys.stderr is not None and sys.stderr.isatty():
            return True
    except (AttributeError, ValueError):  # a replaced or closed stderr
        pass
    return "ipykernel" in sys.modules


def _experiment(
    config: str | os.PathLike[str] | Mapping[str, Any] | ExperimentConfig, repetitions: int | None
) -> tuple[ExperimentConfig, bytes]:
    """The validated config and the bytes stored as the results' ``config.toml``."""
    from privgame.engine.config import ExperimentConfig, load_config, parse_config, read_config_bytes

    if isinstance(config, str | os.PathLike):
        path = config if isinstance(config, str) else Path(config)  # a str as given: "" is refused as empty
        data = read_config_bytes(path)
        return load_config(path, data, repetitions=repetitions, repetitions_option="repetitions"), data
    if isinstance(config, ExperimentConfig):
        if repetitions is None:
            return config, _toml_bytes(config.raw)
        config = config.raw
    if not isinstance(config, Mapping):
        raise TypeError(
            "config must be a path to a TOML file, a dict of config sections or a "
            "privgame.engine.config.ExperimentConfig, "
            f"got {summary(config, typed=True)}."
        )
    table = _plain(config)
    if repetitions is not None and isinstance(table.get("experiment"), dict):
        table["experiment"]["repetitions"] = repetitions
    experiment = parse_config(table, repetitions_option=None if repetitions is None else "repetitions")
    return experiment, _toml_bytes(experiment.raw)


def _plain(config: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a dict config holding TOML's values: tuples as lists, numpy numbers and arrays as Python's; a
    pandas object (a DataFrame, a Series) is refused where it stands, summarised on one line (its repr spans
    lines, and TOML holds no table of rows)."""
    from privgame.engine.config import MAX_NESTING, ConfigError

    def plain(value: Any, where: tuple[str, ...]) -> Any:
        if isinstance(value, Mapping):
            return {k: plain(v, (*where, str(k))) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [plain(v, where) for v in value]
        if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
            return plain(value.tolist(), where)
        if type(value).__module__.split(".")[0] == "pandas":
            *section, key = where
            place = f"[{'.'.join(section)}] {key}" if section else f"[{key}]"
            raise ConfigError(
                f"{place} must be a value TOML holds (a string, number, boolean, list or table; a column as "
                f"list(...)), got {summary(value)}."
            )
        return value

    try:
        return plain(config, ())
    except RecursionError:  # a table that contains itself, or one nested thousands deep
        raise ConfigError(
            f"tables and lists must be nested at most {MAX_NESTING} levels deep, got a value nested deeper (or a "
            "table that contains itself)."
        ) from None


def _toml_bytes(raw: Mapping[str, Any]) -> bytes:
    """The config as TOML for the results' ``config.toml``, so that ``privgame run OUT/config.toml`` runs it."""
    from privgame.engine._toml import dumps

    try:
        return dumps(raw, header=_TOML_HEADER).encode("utf-8")
    except TypeError as exc:  # a value a component accepts but TOML cannot hold
        reason = " ".join(str(exc).split())
        return (
            "# Written by privgame.run from a config given in Python, which TOML cannot hold\n"
            f'# ({reason});\n# manifest.json holds the config as it was read (its "config").\n'
        ).encode()


_TOML_HEADER = "Written by privgame.run from a config given in Python; `privgame run` reads it as it is."


def _first_failure(store: Any) -> str:
    """A note for the error of a failed run whose temporary directory is about to be deleted."""
    failures = store.failures()
    if not failures:
        return "The results were in a temporary directory, now deleted; pass out=DIR to keep them."
    first = min(failures)
    error = str(failures[first].get("error", "see its traceback"))
    return (
        f"The results were in a temporary directory, now deleted; the first failure, trial {first}: {error}. "
        "Pass out=DIR to keep every failure's traceback (DIR/failures/)."
    )
