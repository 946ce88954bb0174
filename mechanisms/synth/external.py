"""An external generator: any program, in its own environment, as the synthetic-data generator under audit.

Released generators pin their own dependencies (DataSynthesizer, mbi's MST and AIM, SDV's CTGAN, dpmm's numpy
1.26.4) or are written in another language (R's synthpop), so none can share privgame's environment.
:class:`ExternalGenerator` runs the program the user names as a separate process, once per generator run (or once
per batch of runs): it writes the training table and the public schema into a fresh folder, runs the command with
a time limit, and reads back the synthetic table, checked value by value against the public domain.  No code of
the generator's environment is imported into privgame's.

The program's side of the contract (docs/generators.md):

- it is started with the ``command`` template's placeholders filled in: ``{train}`` (the training table, CSV with a
  header or Parquet), ``{schema}`` (the public schema, JSON: each column's kind and domain), ``{out}`` (where to
  write the synthetic table, in the same format), ``{seed}`` (an integer in [0, 2³¹ − 1)), ``{rows}`` (the rows to
  write); with ``batch = true``, ``{jobs}`` instead: a JSON file listing the runs (``{"schema": path, "jobs":
  [{"train", "out", "seed", "rows"}, ...]}``), all run by one process.  ``{env}`` is the environment's folder,
  ``{workdir}`` the run's folder, ``{epsilon}``, ``{delta}``, ``{rho}`` the claim's values and ``{NAME}`` each of
  ``params``;
- its working directory is the one privgame runs in (relative paths in the command are relative to it); with an
  ``environment``, that folder's ``bin`` leads the ``PATH`` and a virtual environment's ``VIRTUAL_ENV`` or a conda
  environment's ``CONDA_PREFIX`` is set; privgame's own ``PYTHONPATH``, ``PYTHONHOME`` and virtual environment are
  not passed on (its ``bin`` leaves the ``PATH``); standard input is empty and standard output discarded;
- the same seed must give the same table: privgame caches each run's table under its inputs, and the same
  experiment seed gives the same rows only for a program that keeps this promise.

A run that exceeds its time limit (its whole process group is killed), exits with an error, writes nothing, writes a
table that cannot be read, has the wrong columns or rows, or holds a value outside the public domain raises
:class:`ExternalGeneratorError`: one line naming the run (its seed, its place in the batch) and the problem, with
the end of the program's standard error; the whole standard error is the exception's cause, kept in the trial's
failure record.  A batch program that exited 0 keeps the runs before its bad table in the cache; one that failed
keeps none (it may have been cut off while writing a table that still reads as sound).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import signal
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from privgame.analysis._checks import check_int, check_real
from privgame.analysis.accounting import (
    NeighbouringRelation,
    PrivacyClaim,
    pure_composition_claim,
    zcdp_claim,
    zcdp_rho,
)
from privgame.analysis.discretise import PublicRanges, check_table, public_ranges
from privgame.core.trust import check_program
from privgame.mechanisms._base import Mechanism, check_runs
from privgame.mechanisms.synth._external_io import (
    FORMATS,
    TableFileError,
    dump_schema,
    read_table,
    schema_of,
    write_table,
)

__all__ = ["CLAIMS", "ExternalGenerator", "ExternalGeneratorError", "GeneratorStderr"]

CLAIMS = ("none", "pure", "zcdp")
NEIGHBOURS = {"replace": NeighbouringRelation.REPLACE_ONE, "add-remove": NeighbouringRelation.ADD_OR_REMOVE_ONE}
RUN_PLACEHOLDERS = ("train", "out", "seed", "rows")
SHARED_PLACEHOLDERS = ("schema", "env", "workdir", "epsilon", "delta", "rho")
MAX_OUTPUT_BYTES = 1 << 30  # a synthetic table larger than 1 GiB is refused unread
_TAIL_LINES, _TAIL_CHARS = 5, 400  # the end of stderr quoted in the one-line error
_STDERR_KEPT = 1 << 16  # the most bytes of stderr kept in the failure record
_SEED_BOUND = 2**31 - 1  # seeds in [0, 2**31 - 1): what numpy's legacy seeding, R's set.seed and torch all take
_DROPPED_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "CONDA_PREFIX", "__PYVENV_LAUNCHER__")
_HASH_LIMIT = 1 << 28  # files named in the command larger than this enter the key by size and time, not content
_file_hashes: dict[tuple[str, int, int, int], str] = {}


class ExternalGeneratorError(RuntimeError):
    """A run of an external generator failed: one line naming the run and the problem."""


class GeneratorStderr(Exception):
    """The standard error of a failed run (the cause of :class:`ExternalGeneratorError`, kept in tracebacks)."""


Scalar = str | int | float | bool


def _check_params(params: Any) -> tuple[tuple[str, Scalar], ...]:
    if isinstance(params, Mapping):
        items = list(params.items())
    elif isinstance(params, Sequence) and not isinstance(params, str):
        items = [tuple(p) if isinstance(p, list | tuple) else (p,) for p in params]
    else:
        raise TypeError(f"params must be a table of NAME = value, got {type(params).__name__}.")
    out: dict[str, Scalar] = {}
    for item in items:
        if len(item) != 2 or not isinstance(item[0], str) or not item[0].isidentifier():
            raise ValueError(f"params: each entry must be NAME = value with NAME an identifier, got {item!r}.")
        name, value = item
        if name in RUN_PLACEHOLDERS + SHARED_PLACEHOLDERS + ("jobs",):
            raise ValueError(
                f"params: {name!r} is a placeholder privgame fills in itself; name the parameter otherwise."
            )
        if not isinstance(value, str | int | float | bool):
            raise TypeError(f"params: {name!r} must be a string, number or boolean, got {type(value).__name__}.")
        if name in out:
            raise ValueError(f"params must name each parameter once, got {name!r} twice.")
        out[name] = value
    return tuple(sorted(out.items()))


def _fields(template: str) -> list[str]:
    """The placeholder names of one command word (``{{`` and ``}}`` are literal braces)."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(f"command word {template!r} is not a valid template: {exc}.") from None
    names: list[str] = []
    for _, field, spec, conversion in parsed:
        if field is None:
            continue
        if not field.isidentifier() or spec or conversion:
            raise ValueError(
                f"command word {template!r}: a placeholder is a bare name such as {{seed}}, got {{{field}"
                f"{'!' + conversion if conversion else ''}{':' + spec if spec else ''}}}."
            )
        names.append(field)
    return names


def _placeholders(command: Sequence[str]) -> set[str]:
    """Every placeholder name the command's words use."""
    return {name for word in command for name in _fields(word)}


def _fill(template: str, values: Mapping[str, str]) -> str:
    return "".join(
        literal + ("" if field is None else values[field])
        for literal, field, _, _ in string.Formatter().parse(template)
    )


@dataclass(frozen=True, slots=True)
class ExternalGenerator(Mechanism):
    """Any program, in its own environment, as the synthetic-data generator (its output checked).

    Parameters
    ----------
    command : sequence of str
        The program and its arguments, one word each (no shell), with placeholders (module docstring).  One run
        needs ``{train}``, ``{out}`` and ``{seed}`` (and ``{schema}`` for a program that does not hard-code the
        domain); ``batch = true`` needs ``{jobs}`` instead.  Every placeholder must be known and every parameter
        used.
    environment : str, optional
        The folder of the program's environment (a virtual environment, a conda environment, an R library ...):
        ``{env}`` in the command, its ``bin`` first on the ``PATH``.  Relative to the working directory.
    params : table of str to str, number or bool, default={}
        The generator's own parameters, each passed where the command says ``{NAME}``.
    batch : bool, default=False
        Whether the program runs a list of jobs in one process (``{jobs}``), which pays its start-up once.
    format : {"csv", "parquet"}, default="csv"
        Of the training table and the synthetic table.
    timeout : float, default=600
        Seconds one run may take (a batch: this times its runs); then its process group is killed.
    ranges : table of column to [low, high]
        The PUBLIC ranges of the numeric columns: the schema the program gets, and what its output is checked
        against.  Every numeric column needs one.
    n_rows : int, optional
        Rows of the synthetic table; ``None``: as many as the training table.
    claim : {"none", "pure", "zcdp"}, default="none"
        The generator's stated guarantee: ``"pure"`` ε-DP (``epsilon``), ``"zcdp"`` ρ-zCDP (``rho``, or the ρ of
        (``epsilon``, ``delta``) by the conversion of Canonne, Kamath and Steinke [1]_, as MST and AIM spend it).
    epsilon, delta, rho : float, optional
        The claim's values (also placeholders of the command).
    neighbours : {"replace", "add-remove"}, default="replace"
        The neighbouring relation the claim holds under.

    Notes
    -----
    The cache key of a run holds, beside these parameters, the content of every file the command names (the
    interpreter, the script) and the identity of the environment (the names and versions of its installed Python
    distributions, its ``freeze.txt`` if it has one): a changed script or an upgraded package is a new generator.
    An R installation given as the environment (``/usr/lib/R``, a conda environment) enters by its packages'
    ``DESCRIPTION`` files; a program whose code lives elsewhere (a binary it loads) should name its version in
    ``params``.

    References
    ----------
    .. [1] C. Canonne, G. Kamath, T. Steinke. The Discrete Gaussian for Differential Privacy. NeurIPS 2020.
    .. [2] M. S. M. S. Annamalai, G. Ganev, E. De Cristofaro. "What do you want from theory alone?" Experimenting
       with Tight Auditing of Differentially Private Synthetic Data Generation. USENIX Security 2024,
       arXiv:2405.10994 (why released generators, not reimplementations, must be audited).
    """

    name: ClassVar[str] = "external"
    input_kind: ClassVar[str] = "table"
    release_kind: ClassVar[str] = "table"

    command: tuple[str, ...] | list[str]
    environment: str | None = None
    params: tuple[tuple[str, Scalar], ...] | Mapping[str, Scalar] = ()
    batch: bool = False
    format: str = "csv"
    timeout: float = 600.0
    ranges: PublicRanges | Mapping[str, tuple[float, float]] | None = None
    n_rows: int | None = None
    claim: str = "none"
    epsilon: float | None = None
    delta: float | None = None
    rho: float | None = None
    neighbours: str = "replace"

    def __post_init__(self) -> None:
        if isinstance(self.command, str) or not isinstance(self.command, Sequence) or not self.command:
            raise TypeError("command must be a non-empty list of words (the program, then its arguments).")
        if not all(isinstance(w, str) and w for w in self.command):
            raise TypeError("command: every word must be a non-empty string.")
        object.__setattr__(self, "command", tuple(self.command))
        # a command read from a results directory or cache entry a stranger may have written is refused unless the
        # user vouches for it (--trust-plugins): running it would run its code
        check_program(" ".join(self.command), field="external generator command")
        if self.environment is not None and (not isinstance(self.environment, str) or not self.environment):
            raise TypeError("environment must be a folder's path (a non-empty string) or absent.")
        object.__setattr__(self, "params", _check_params(self.params))
        if not isinstance(self.batch, bool):
            raise TypeError(f"batch must be true or false, got {self.batch!r}.")
        if not isinstance(self.format, str) or self.format not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {self.format!r}.")
        object.__setattr__(self, "timeout", check_real("timeout", self.timeout, low=0.0, low_open=True))
        object.__setattr__(self, "ranges", public_ranges(() if self.ranges is None else self.ranges))
        if self.n_rows is not None:
            object.__setattr__(self, "n_rows", check_int("n_rows", self.n_rows, low=1))
        self._check_claim()
        self._check_command()

    def _check_claim(self) -> None:
        if not isinstance(self.claim, str) or self.claim not in CLAIMS:
            raise ValueError(f"claim must be one of {', '.join(CLAIMS)}, got {self.claim!r}.")
        if not isinstance(self.neighbours, str) or self.neighbours not in NEIGHBOURS:
            raise ValueError(f"neighbours must be one of {', '.join(NEIGHBOURS)}, got {self.neighbours!r}.")
        for field in ("epsilon", "delta", "rho"):
            value = getattr(self, field)
            if value is not None:
                high = 1.0 if field == "delta" else None
                object.__setattr__(
                    self, field, check_real(field, value, low=0.0, high=high, low_open=True, high_open=True)
                )
        if self.claim == "pure" and (self.epsilon is None or self.rho is not None):
            raise ValueError("claim = 'pure' needs epsilon (and no rho).")
        if self.claim == "zcdp" and (self.rho is None) == (self.epsilon is None or self.delta is None):
            raise ValueError("claim = 'zcdp' needs either rho, or epsilon and delta (converted to rho), not both.")
        if self.claim == "zcdp":
            self.effective_rho()  # a (ε, δ) with no ρ is refused now, not when the claim is first read

    def _params(self) -> tuple[tuple[str, Scalar], ...]:
        """The parameters as checked in ``__post_init__`` (sorted ``(name, value)`` pairs)."""
        return self.params  # type: ignore[return-value]

    def _check_command(self) -> None:
        used = _placeholders(self.command)
        per_run = ("jobs",) if self.batch else RUN_PLACEHOLDERS
        known = {*per_run, *SHARED_PLACEHOLDERS, *(name for name, _ in self._params())}
        unknown = sorted(used - known)
        if unknown:
            extra = " ({jobs} needs batch = true)" if "jobs" in unknown else ""
            extra = extra or (" (with batch = true, use {jobs})" if set(unknown) & set(RUN_PLACEHOLDERS) else "")
            raise ValueError(
                f"command names an unknown placeholder {{{unknown[0]}}}{extra}; known: {', '.join(sorted(known))}."
            )
        needed = ("jobs",) if self.batch else ("train", "out", "seed")
        for name in needed:
            if name not in used:
                raise ValueError(f"command must pass {{{name}}} to the program.")
        unused = [name for name, _ in self._params() if name not in used]
        if unused:
            raise ValueError(f"params: {unused[0]!r} is not passed to the program (no {{{unused[0]}}} in command).")
        if "env" in used and self.environment is None:
            raise ValueError("command uses {env} but no environment is given.")
        for name in ("epsilon", "delta", "rho"):
            if name in used and getattr(self, name) is None:
                raise ValueError(f"command uses {{{name}}} but {name} is not set.")

    # ------------------------------------------------------------------ the claim

    def effective_rho(self) -> float | None:
        """The ρ of a zCDP claim (given, or converted from (ε, δ)); ``None`` for other claims."""
        if self.claim != "zcdp":
            return None
        if self.rho is not None:
            return self.rho
        assert self.epsilon is not None and self.delta is not None
        return zcdp_rho(self.epsilon, self.delta)

    def privacy_claim(self) -> PrivacyClaim | None:
        """The stated guarantee under the stated relation; ``None`` when ``claim = "none"``."""
        relation = NEIGHBOURS[self.neighbours]
        if self.claim == "pure":
            assert self.epsilon is not None
            return pure_composition_claim([self.epsilon], relation)
        if self.claim == "zcdp":
            rho = self.effective_rho()
            assert rho is not None
            return zcdp_claim(rho, relation)
        return None

    def derived_parameters(self) -> dict[str, float]:
        """The ρ a zCDP claim stated as (ε, δ) converts to."""
        return {"rho": float(rho)} if self.derives_parameters() and (rho := self.effective_rho()) else {}

    def derives_parameters(self) -> bool:
        return self.claim == "zcdp" and self.rho is None

    # ------------------------------------------------------------------ the cache key

    def cache_inputs(self, data: Any) -> dict[str, Any]:
        """What a cached run depends on beyond the parameters: the files the command names and the environment."""
        del data
        return {"program": program_identity(self.command, self.environment, self._params())}

    def cache_identity(self) -> dict[str, Any]:
        """The parameters a run's table depends on, for its cache key: not the time limit, nor a claim value the
        command does not pass (raising the limit after a time-out, or restating the claim, recomputes nothing)."""
        used = _placeholders(self.command)
        skipped = {"timeout", "claim", "neighbours"} | {n for n in ("epsilon", "delta", "rho") if n not in used}
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in skipped}
        return {"class": f"{type(self).__module__}.{type(self).__qualname__}", **fields}

    # ------------------------------------------------------------------ running it

    @property
    def batches_runs(self) -> bool:
        """Whether :func:`privgame.mechanisms.cached.cached_release_many` hands it several runs at once (a batch
        program); one at a time otherwise, so that a kill loses at most the run in flight."""
        return self.batch

    def release(self, data: pd.DataFrame, *, rng: np.random.Generator) -> pd.DataFrame:
        """One run of the program on ``data`` (a batch of one with ``batch = true``)."""
        return self.release_runs([data], rngs=[rng])[0]

    def release_runs(self, data: Sequence[pd.DataFrame], *, rngs: Sequence[np.random.Generator]) -> list[pd.DataFrame]:
        """K runs: one process per run, or one for all with ``batch = true``; tables in input order."""
        check_runs(data, rngs)
        tables = [check_table("the training table", d) for d in data]
        seeds = [int(r.integers(0, _SEED_BOUND)) for r in rngs]
        # a process that left the program's group (setsid) may still write there: cleaning up never fails the run
        with tempfile.TemporaryDirectory(prefix="privgame-generator-", ignore_cleanup_errors=True) as folder:
            work = Path(folder)
            schema = schema_of(tables[0], self.ranges)  # type: ignore[arg-type]
            schema_path = work / "schema.json"
            dump_schema(schema, schema_path)
            if self.batch:
                return self._run_batch(work, tables, seeds, schema, schema_path)
            out: list[pd.DataFrame] = []
            for k, (table, seed) in enumerate(zip(tables, seeds, strict=True)):
                try:
                    run = self._run_batch(work / f"run-{k}", [table], [seed], schema, schema_path, (k, len(tables)))
                except ExternalGeneratorError as exc:
                    exc.partial_releases = dict(enumerate(out))  # type: ignore[attr-defined]
                    raise
                out += run
            return out

    def _rows(self, table: pd.DataFrame) -> int:
        return len(table) if self.n_rows is None else self.n_rows

    def _run_batch(
        self,
        work: Path,
        tables: Sequence[pd.DataFrame],
        seeds: Sequence[int],
        schema: Mapping[str, Any],
        schema_path: Path,
        index: tuple[int, int] | None = None,
    ) -> list[pd.DataFrame]:
        work.mkdir(exist_ok=True)
        suffix = "csv" if self.format == "csv" else "parquet"
        jobs: list[dict[str, Any]] = []
        for k, (table, seed) in enumerate(zip(tables, seeds, strict=True)):
            train, out = work / f"train-{k}.{suffix}", work / f"synthetic-{k}.{suffix}"
            write_table(table, train, self.format)
            jobs.append({"train": str(train), "out": str(out), "seed": seed, "rows": self._rows(table)})
        values = self._shared_values(work, schema_path)
        if self.batch:
            jobs_path = work / "jobs.json"
            jobs_path.write_text(
                json.dumps({"schema": str(schema_path), "jobs": jobs}, indent=1) + "\n", encoding="utf-8"
            )
            values["jobs"] = str(jobs_path)
        else:
            values.update({k: str(v) for k, v in jobs[0].items()})
        argv = [_fill(word, values) for word in self.command]
        first, count = index if index is not None else (0, len(jobs))

        def label(k: int) -> str:
            where = f", run {first + k + 1} of {count}" if count > 1 else ""
            return f"external generator run (seed {jobs[k]['seed']}{where})"

        problem, stderr = self._execute(argv, work, len(jobs))
        results: list[pd.DataFrame] = []
        for k, (job, table) in enumerate(zip(jobs, tables, strict=True)):
            try:
                if problem is not None and not Path(job["out"]).exists():
                    raise TableFileError(problem)
                results.append(
                    read_table(
                        Path(job["out"]),
                        like=table,
                        schema=schema,
                        rows=int(job["rows"]),
                        fmt=self.format,
                        limit=MAX_OUTPUT_BYTES,
                    )
                )
            except TableFileError as exc:
                text = str(exc) if problem is None or str(exc) == problem else f"{exc} ({problem})"
                # a program that failed may have been cut off while writing a table that still reads as sound
                # (a number cut short): none of its tables is kept; one that succeeded keeps those before the bad one
                error = _run_error(f"{label(k)}: {text}", stderr, kept=results if problem is None else [])
                raise error from error.__cause__
        if problem is not None:  # every table is there and sound, yet the program says it failed: not trusted
            raise _run_error(f"{label(len(jobs) - 1)}: {problem} after writing its tables", stderr, kept=[])
        return results

    def _shared_values(self, work: Path, schema_path: Path) -> dict[str, str]:
        values = {"schema": str(schema_path), "workdir": str(work)}
        if self.environment is not None:
            values["env"] = str(Path(self.environment).absolute())
        for name in ("epsilon", "delta", "rho"):
            value = getattr(self, name)
            if value is not None:
                values[name] = repr(float(value))
        values.update({name: _word(value) for name, value in self._params()})
        return values

    def _execute(self, argv: list[str], work: Path, runs: int) -> tuple[str | None, str]:
        """Run the program; ``(problem or None, its standard error)``."""
        limit = self.timeout * runs
        err_path = work / "stderr.txt"
        with open(err_path, "wb") as err:
            try:
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    env=_environment(self.environment),
                    start_new_session=True,
                )
            except OSError as exc:
                return f"cannot start {argv[0]!r}: {exc.strerror or exc}", ""
            start = time.monotonic()
            try:
                code: int | None = proc.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                code = None
            finally:
                _kill_group(proc)
        stderr = _read_stderr(err_path)
        if code is None:
            return (
                f"timed out after {time.monotonic() - start:.1f} s (limit {limit:g} s); its processes were killed",
                stderr,
            )
        if code != 0:
            how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
            return f"the program {how}", stderr
        return None, stderr


def _run_error(text: str, stderr: str, *, kept: Sequence[pd.DataFrame]) -> ExternalGeneratorError:
    """The one-line error of a failed run: ``text`` and the end of the program's stderr, the whole stderr as its
    cause, and the tables of the runs before it that may be cached (``partial_releases``)."""
    error = ExternalGeneratorError(f"{text}{_tail(stderr)}")
    error.__cause__ = GeneratorStderr(stderr or "(no standard error)")
    error.partial_releases = dict(enumerate(kept))  # type: ignore[attr-defined]
    return error


def _word(value: Scalar) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill what is left of the program's process group (itself on a time-out, or children it left behind)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _read_stderr(path: Path) -> str:
    with open(path, "rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(max(0, size - _STDERR_KEPT))
        return fh.read().decode("utf-8", errors="replace")


def _tail(stderr: str) -> str:
    lines = [" ".join(line.split()) for line in stderr.splitlines() if line.strip()]
    if not lines:
        return ""
    text = " | ".join(lines[-_TAIL_LINES:])
    return "; stderr: " + (text if len(text) <= _TAIL_CHARS else "..." + text[-_TAIL_CHARS:])


def _environment(folder: str | None) -> dict[str, str]:
    """The program's environment variables: privgame's, without its Python settings, with ``folder`` first."""
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    env.setdefault("PYTHONHASHSEED", "0")
    if sys.prefix != sys.base_prefix:  # privgame's own virtual environment stays home: its bin leaves the PATH
        own = os.path.realpath(os.path.join(sys.prefix, "bin"))
        kept = [p for p in env.get("PATH", os.defpath).split(os.pathsep) if p and os.path.realpath(p) != own]
        env["PATH"] = os.pathsep.join(kept)
    if folder is None:
        return env
    root = Path(folder).absolute()
    env["PATH"] = os.pathsep.join([str(root / "bin"), env.get("PATH", os.defpath)])
    if (root / "pyvenv.cfg").is_file():
        env["VIRTUAL_ENV"] = str(root)
    if (root / "conda-meta").is_dir():
        env["CONDA_PREFIX"] = str(root)
    return env


def _file_hash(path: Path) -> str | None:
    """SHA-256 of a regular file's content (memoised by inode, size and time), or ``None`` for anything else."""
    try:
        real = path.resolve()
        st = real.stat()
    except OSError:
        return None
    if not real.is_file():
        return None
    memo = (str(real), st.st_ino, st.st_size, st.st_mtime_ns)
    if memo not in _file_hashes:
        if st.st_size > _HASH_LIMIT:
            _file_hashes[memo] = f"size {st.st_size} mtime {st.st_mtime_ns}"
        else:
            h = hashlib.sha256()
            with open(real, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    h.update(chunk)
            _file_hashes[memo] = h.hexdigest()
    return _file_hashes[memo]


_PYTHON_DISTRIBUTIONS = (
    "lib/python*/site-packages/*.dist-info",
    "lib/python*/site-packages/*.egg-info",
    "conda-meta/*.json",
)
_R_PACKAGES = ("library/*/DESCRIPTION", "site-library/*/DESCRIPTION", "lib/R/library/*/DESCRIPTION")


def _environment_identity(folder: str | None) -> list[str]:
    """What identifies an environment's installed code without hashing thousands of files: its Python
    distributions (their folder names hold name and version), its R packages (each ``DESCRIPTION``, which holds
    the version, hashed) and its ``freeze.txt``."""
    if folder is None:
        return []
    root = Path(folder)
    # a distribution's RECORD (its files' hashes, as installed) and direct_url.json (an editable or local install)
    # tell a reinstall of another build under the same version
    names = sorted(
        f"{p.name} {_file_hash(p / 'RECORD')} {_file_hash(p / 'direct_url.json')}"
        for pattern in _PYTHON_DISTRIBUTIONS
        for p in root.glob(pattern)
    )
    described = sorted(f"{p.relative_to(root)} {_file_hash(p)}" for pattern in _R_PACKAGES for p in root.glob(pattern))
    freeze = _file_hash(root / "freeze.txt")
    return names + described + ([f"freeze.txt {freeze}"] if freeze else [])


def program_identity(
    command: Sequence[str], environment: str | None, params: Sequence[tuple[str, Scalar]] = ()
) -> dict[str, Any]:
    """The content of every file the command names and the environment's identity: part of a run's cache key.

    A file is named by a word of the command (its placeholders for the environment and the parameters filled in),
    by the value after ``=`` in a ``--option=path`` word, or by a parameter's value; the program itself is also
    looked up on the environment's ``PATH``.  Code reached otherwise (``-m package``, a shell's ``-c``) enters
    through the environment's identity only.
    """
    values = {"env": str(Path(environment).absolute())} if environment is not None else {}
    values.update({name: _word(value) for name, value in params})
    files: dict[str, str | None] = {}
    for position, word in enumerate(command):
        if set(_fields(word)) - set(values):
            continue  # a per-run word (the tables, the seed): its values enter the key elsewhere
        text = _fill(word, values)
        candidates = [text, *([text.split("=", 1)[1]] if "=" in text else [])]
        if position == 0 and not Path(text).exists():
            found = shutil.which(text, path=_environment(environment).get("PATH"))
            candidates = [found] if found else []
        for candidate in candidates:
            if candidate and Path(candidate).is_file():
                files[f"{word} -> {candidate}" if candidate != word else word] = _file_hash(Path(candidate))
    for name, value in params:
        if isinstance(value, str) and value and Path(value).is_file():
            files[f"{{{name}}} -> {value}"] = _file_hash(Path(value))
    return {"files": files, "environment": _environment_identity(environment)}
