"""Shared command-line driver for the generator wrappers (no privgame import; numpy and pandas only).

Every wrapper ``NAME.py`` in this folder defines its defaults and one ``generate`` function and hands them to
:func:`main`, which implements the common interface::

    python NAME.py --train TRAIN.csv --schema SCHEMA.json --out OUT.csv --seed INT --rows INT [--param K=V ...]
    python NAME.py --jobs JOBS.json [--param K=V ...]

JOBS.json is ``{"jobs": [{"train": p, "out": p, "seed": i, "rows": i}, ...], "schema": p}``; paths in it are
taken as given (relative ones against the current directory). Jobs run in turn in this one process; a failed job
prints one line to stderr naming it, the later jobs still run, and the exit status is 1 at the end.

SCHEMA.json is ``{"format": "privgame-table-schema/1", "columns": [...]}`` with columns of kind ``integer`` or
``float`` (``low``/``high``) or ``categorical`` (``categories``): public domain knowledge. The training CSV must
hold exactly the schema's columns in order, every value in the domain. The output CSV has the same header,
exactly ``--rows`` rows, integers written as integers; numeric values a package returns outside [low, high] are
clipped (post-processing, reported on stderr) and an out-of-domain category fails the job.

Importing this module makes the process run with ``PYTHONHASHSEED=0`` (re-executing itself once if needed), so
that packages iterating over sets of strings behave the same in every run, and removes this folder from
``sys.path``, so that a wrapper named like its package (``dpmm.py``) does not shadow it. Packages' own stdout is
sent to stderr, so stdout stays empty.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if os.environ.get("PYTHONHASHSEED") != "0":
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])

# A wrapper is named after its package (dpmm.py, ctgan.py): keep this folder off the path so it cannot shadow it.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

if TYPE_CHECKING:
    import pandas as pd

SCHEMA_FORMAT = "privgame-table-schema/1"
ParamValue = int | float | str | bool


@dataclass(frozen=True)
class Column:
    """One schema column: ``kind`` is integer, float or categorical."""

    name: str
    kind: str
    low: float | None = None
    high: float | None = None
    categories: tuple[str, ...] = ()


@dataclass(frozen=True)
class Schema:
    """The public description of a table: its columns in order."""

    columns: tuple[Column, ...]

    @property
    def names(self) -> list[str]:
        """Column names in order."""
        return [c.name for c in self.columns]


def load_schema(path: str | Path) -> Schema:
    """Read and check a ``privgame-table-schema/1`` JSON file."""
    raw = json.loads(Path(path).read_text())
    if raw.get("format") != SCHEMA_FORMAT:
        raise ValueError(f"{path}: format is {raw.get('format')!r}, expected {SCHEMA_FORMAT!r}")
    columns = []
    for col in raw["columns"]:
        kind = col["kind"]
        if kind in ("integer", "float"):
            low, high = col["low"], col["high"]
            if not low <= high:
                raise ValueError(f"{path}: column {col['name']}: low {low} > high {high}")
            columns.append(Column(col["name"], kind, low=low, high=high))
        elif kind == "categorical":
            cats = tuple(str(c) for c in col["categories"])
            if not cats or len(set(cats)) != len(cats):
                raise ValueError(f"{path}: column {col['name']}: categories empty or repeated")
            columns.append(Column(col["name"], kind, categories=cats))
        else:
            raise ValueError(f"{path}: column {col['name']}: unknown kind {kind!r}")
    return Schema(tuple(columns))


def read_train(path: str | Path, schema: Schema) -> pd.DataFrame:
    """Read the training CSV: integers as int64, floats as float64, categories as strings; check the domain."""
    import pandas as pd

    df = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False)
    if list(df.columns) != schema.names:
        raise ValueError(f"{path}: header {list(df.columns)} differs from the schema's columns {schema.names}")
    for col in schema.columns:
        if col.kind == "categorical":
            bad = set(df[col.name]) - set(col.categories)
            if bad:
                raise ValueError(f"{path}: column {col.name} has values outside the schema: {sorted(bad)[:5]}")
            df[col.name] = df[col.name].astype(object)
            continue
        values = pd.to_numeric(df[col.name]).astype("int64" if col.kind == "integer" else "float64")
        if ((values < col.low) | (values > col.high)).any():
            raise ValueError(f"{path}: column {col.name} has values outside [{col.low}, {col.high}]")
        df[col.name] = values
    return df


def finalize(df: pd.DataFrame, schema: Schema, rows: int) -> tuple[pd.DataFrame, dict[str, int]]:
    """Put a generated table into the schema's order and domain; return it and the clipped-value count per column.

    Integers are rounded and clipped to [low, high], floats clipped; a missing value or a category outside the
    schema raises ValueError.
    """
    import numpy as np
    import pandas as pd

    if len(df) != rows:
        raise ValueError(f"generator returned {len(df)} rows, expected {rows}")
    missing = [n for n in schema.names if n not in df.columns]
    if missing:
        raise ValueError(f"generator output lacks columns {missing}")
    out = pd.DataFrame(index=range(rows))
    clipped: dict[str, int] = {}
    for col in schema.columns:
        values = df[col.name].reset_index(drop=True)
        if values.isna().any():
            raise ValueError(f"generator output has missing values in {col.name}")
        if col.kind == "categorical":
            text = values.astype(str)
            bad = set(text) - set(col.categories)
            if bad:
                raise ValueError(f"generator output has categories outside the schema in {col.name}: {sorted(bad)[:5]}")
            out[col.name] = text
            continue
        num = pd.to_numeric(values).astype("float64").to_numpy()
        if col.kind == "integer":
            num = np.rint(num)
        bounded = np.clip(num, col.low, col.high)
        if (bounded != num).any():
            clipped[col.name] = int((bounded != num).sum())
        out[col.name] = bounded.astype("int64") if col.kind == "integer" else bounded
    return out, clipped


def write_csv(df: pd.DataFrame, path: str | Path) -> None:
    """Write ``df`` as CSV (no index, ``\\n`` line ends) through a temporary file, so no partial file is left."""
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    df.to_csv(tmp, index=False, lineterminator="\n")
    os.replace(tmp, target)


def seed_python_numpy(seed: int) -> None:
    """Seed Python's ``random`` and numpy's global generator."""
    import numpy as np

    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002 - packages draw from the legacy global generator


def seed_torch(seed: int) -> None:
    """Seed Python, numpy and torch, and keep torch on one thread (its CPU kernels are then reproducible)."""
    import torch

    seed_python_numpy(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(1)


def parse_params(pairs: list[str], defaults: Mapping[str, ParamValue]) -> dict[str, ParamValue]:
    """Turn ``KEY=VALUE`` strings into values typed like ``defaults``; unknown keys raise ValueError."""
    params = dict(defaults)
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep:
            raise ValueError(f"--param {pair!r} is not KEY=VALUE")
        if key not in defaults:
            raise ValueError(f"unknown param {key!r}; known: {', '.join(sorted(defaults))}")
        default = defaults[key]
        if isinstance(default, bool):
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError(f"param {key} must be true or false, got {text!r}")
            params[key] = text.lower() in ("true", "1")
        else:
            params[key] = type(default)(text)
    return params


Generate = Callable[["pd.DataFrame", Schema, int, int, dict[str, ParamValue]], "pd.DataFrame"]


def run_job(
    generate: Generate, train: str, schema: Schema, out: str, seed: int, rows: int, params: dict[str, ParamValue]
) -> None:
    """Run one generator job end to end.

    The package's stdout goes to stderr, and warning filters it changes are restored afterwards (DataSynthesizer,
    for one, turns every warning into an error when it picks k itself).
    """
    if not 0 <= seed < 2**32:
        raise ValueError(f"seed must be in [0, 2**32), got {seed}")
    table = read_train(train, schema)
    with contextlib.redirect_stdout(sys.stderr), warnings.catch_warnings():
        synthetic = generate(table, schema, rows, seed, params)
    result, clipped = finalize(synthetic, schema, rows)
    if clipped:
        counts = ", ".join(f"{name} {count}" for name, count in clipped.items())
        print(f"note: {out}: clipped values into the schema's ranges: {counts}", file=sys.stderr)
    write_csv(result, out)


def main(generate: Generate, defaults: Mapping[str, ParamValue], description: str) -> int:
    """Parse the command line, run the single job or every job of ``--jobs``; return the exit status."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--train")
    parser.add_argument("--schema")
    parser.add_argument("--out")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--rows", type=int)
    parser.add_argument("--jobs", help="JOBS.json: run its jobs in turn in this process")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    prog = Path(sys.argv[0]).name
    try:
        params = parse_params(args.param, defaults)
        if args.jobs:
            spec: dict[str, Any] = json.loads(Path(args.jobs).read_text())
            schema = load_schema(spec["schema"])
            jobs = spec["jobs"]
        else:
            single = {"train": args.train, "out": args.out, "seed": args.seed, "rows": args.rows}
            absent = [k for k in (*single, "schema") if getattr(args, k) is None]
            if absent:
                parser.error(f"missing --{', --'.join(absent)} (or give --jobs)")
            schema = load_schema(args.schema)
            jobs = [single]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"{prog}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    failed = False
    for index, job in enumerate(jobs):
        try:
            run_job(generate, job["train"], schema, job["out"], int(job["seed"]), int(job["rows"]), params)
        except Exception as exc:  # one job's failure must not stop the others
            message = " ".join(str(exc).split())[:300]
            print(f"{prog}: job {index} ({job.get('out')}) failed: {type(exc).__name__}: {message}", file=sys.stderr)
            failed = True
    return 1 if failed else 0
