"""``privgame synth``: train a registered table generator on a data set, write the synthetic table, report fidelity.

Usage::

    privgame synth --generator NAME [--param KEY=VALUE ...] [--data adult|compas] [--train-rows N] [--sample]
                   [--rows N] [--seed S] --out FILE.csv|FILE.parquet [--report]

The generator trains on the first ``--train-rows`` rows of the data set's training rows (Adult's training split;
all of COMPAS), or on a seeded sample of that many rows (``--sample``, drawn without replacement and kept in file
order), and releases ``--rows`` rows (default: as many as it trained on).  ``--param`` values are TOML literals
(``k=2``, ``epsilon=1.0``, ``smoothing=true``, ``structure="hillclimb"``; a bare word is a string:
``structure=hillclimb``), checked by the same code as a config's ``[mechanism]`` table.  A generator with a
``ranges`` parameter (PrivBayes) gets the data set's public numeric ranges unless ``--param ranges=...`` is given, and
one with a ``bins`` parameter (PrivBayes, BayNet) the data set's public bins (0 as a bin of its own for Adult's
capital gains and losses...) unless ``--param bins=...`` is given (``bins=[]``: none) or, for a generator with both,
``--param ranges=...`` is (the public bins go with the public ranges).

Seeds: ``SeedSequence(seed).spawn(2)`` gives the row sample's stream and the generator's, so the same ``--seed``
gives the same table, and ``--sample`` does not change the generator's randomness.

``--report`` prints :func:`privgame.analysis.fidelity.fidelity_report` of the synthetic table against the training rows,
with the utility metrics tested on Adult's test split (target ``income``) or, for COMPAS, on the rows not used for
training (target ``two_year_recid``; none when every row trained), and writes it as JSON beside the output
(``--out runs/s.parquet`` writes ``runs/s.fidelity.json``: the output's name with ``.fidelity.json`` for its
extension).

Errors (an unknown generator or data set, a mechanism that does not map a table to a table, a bad ``--param``,
``--train-rows`` larger than the data, an unsupported output extension) are reported before any training.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from privgame.engine.registry import MECHANISMS

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from privgame.mechanisms._base import Mechanism

# numpy, pandas, the configs, the data sets and the fidelity report are imported by the functions that use them:
# `privgame --help` builds this sub-command's parser and must not wait for them.

__all__ = [
    "OUTPUT_SUFFIXES",
    "add_parser",
    "build_generator",
    "parse_params",
    "parse_value",
    "report_path",
    "run",
    "table_generators",
    "training_data",
    "write_table",
]

OUTPUT_SUFFIXES: tuple[str, ...] = (".csv", ".parquet")

_RESERVED = {"name": "--generator", "n_rows": "--rows"}


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the ``synth`` sub-command to the ``privgame`` parser's sub-parsers."""
    p: argparse.ArgumentParser = sub.add_parser(
        "synth", help="train a table generator on a data set and write a synthetic table"
    )
    p.add_argument("--generator", required=True, metavar="NAME", help="registered table generator (privgame list)")
    p.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="generator parameter as a TOML literal, repeatable (--param k=2 --param epsilon=1.0)",
    )
    p.add_argument(
        "--data",
        default="adult",
        help="a data set that serves tables (adult, compas, digits, a plugin's), or your own FILE.csv|.parquet with "
        "--domain (default adult)",
    )
    p.add_argument("--domain", default=None, metavar="FILE", help="the domain file of --data FILE (docs/datasets.md)")
    p.add_argument(
        "--plugins",
        nargs="+",
        default=[],
        metavar="MODULE",
        help="plugin modules to import first (a plugin generator or data set); importing runs their code",
    )
    p.add_argument("--train-rows", type=int, default=1000, help="training rows (default 1000)")
    p.add_argument("--sample", action="store_true", help="train on a seeded sample instead of the first rows")
    p.add_argument("--rows", type=int, default=None, help="synthetic rows (default: as many as the training rows)")
    p.add_argument("--seed", type=int, default=0, help="root seed (default 0)")
    p.add_argument("--out", required=True, metavar="FILE", help="output table: FILE.csv or FILE.parquet")
    p.add_argument(
        "--report",
        action="store_true",
        help="print the fidelity report and write it as JSON beside the output (--out FILE.csv: FILE.fidelity.json)",
    )
    return p


def parse_value(text: str) -> Any:
    """A ``--param`` value: a TOML literal (int, float, bool, quoted string, array), else a bare string.

    ``True``/``False`` in any case are booleans; a number TOML refuses but Python reads (``.5``, ``1.``) is a float.

    Examples
    --------
    >>> parse_value("2"), parse_value("1e-3"), parse_value("true"), parse_value("hillclimb"), parse_value("[1, 2]")
    (2, 0.001, True, 'hillclimb', (1, 2))
    """
    from privgame.engine.config import _freeze

    text = text.strip()
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        try:
            return float(text)
        except ValueError:
            return text
    return _freeze(value)  # lists become tuples, as in a config


def parse_params(items: Sequence[str]) -> dict[str, Any]:
    """Parse ``--param KEY=VALUE`` items into a dict (see :func:`parse_value`).

    Raises
    ------
    ValueError
        If an item has no ``=`` or an empty key or value, a key repeats, or a key is one the command sets itself
        (``name``: ``--generator``; ``n_rows``: ``--rows``).
    """
    params: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key or not key.isidentifier() or not value.strip():
            raise ValueError(f"--param must be KEY=VALUE with KEY a parameter name, got {item!r}.")
        if key in _RESERVED:
            raise ValueError(f"--param {key} is set by {_RESERVED[key]}; use that option instead.")
        if key in params:
            raise ValueError(f"--param {key} is given more than once.")
        params[key] = parse_value(value)
    return params


def table_generators() -> list[str]:
    """Names of the registered mechanisms that take a table and release a table, sorted."""
    return [name for name, cls in MECHANISMS if _is_table_mechanism(cls)]


def build_generator(
    name: str, params: Mapping[str, Any] | None = None, *, data: str | None = None, n_rows: int | None = None
) -> Mechanism:
    """Build the registered table generator ``name`` from ``params``, as a config's ``[mechanism]`` table would be.

    Parameters
    ----------
    name : str
        A registered mechanism with ``input_kind == release_kind == "table"``.
    params : mapping, optional
        Its parameters (validated by the mechanism).
    data : str or None, default=None
        The data set it will train on; a generator with a ``ranges`` parameter not in ``params`` gets the data
        set's public numeric ranges (:func:`privgame.data.public_domain`), and one with a ``bins`` parameter not in
        ``params`` its public bins, unless ``params`` sets ``ranges`` (bins that fit the data set's ranges need not
        fit others).
    n_rows : int or None, default=None
        Rows to release (the generator's ``n_rows``); ``None`` leaves its default (as many as it trains on).

    Raises
    ------
    ValueError
        For an unknown name (the message lists the table generators), a mechanism that is not a table generator,
        an unknown or invalid parameter, or ``n_rows`` for a generator without that parameter.
    """
    from privgame.data import public_domain
    from privgame.engine.config import ConfigError, _build, _resolve

    # the list of table generators loads every registered mechanism (torch for DP-SGD): only for the messages
    if name not in MECHANISMS:
        listed = ", ".join(table_generators()) or "(none registered)"
        raise ValueError(f"--generator must be one of the table generators {listed}, got {name!r}.")
    cls: Any = MECHANISMS.get(name)
    if not _is_table_mechanism(cls):
        raise ValueError(
            f"--generator {name!r} is not a table generator (it takes {cls.input_kind!r} and releases "
            f"{cls.release_kind!r}); table generators: {', '.join(table_generators()) or '(none registered)'}."
        )
    fields = {f.name for f in dataclasses.fields(cls) if f.init}
    table = dict(params or {})
    own_ranges = "ranges" in fields and "ranges" in table
    if data is not None and "ranges" in fields and not own_ranges:
        table["ranges"] = public_domain(data).ranges
    if data is not None and "bins" in fields and "bins" not in table and not own_ranges:
        table["bins"] = public_domain(data).bins
    if n_rows is not None:
        if "n_rows" not in fields:
            raise ValueError(f"--rows: generator {name!r} has no n_rows parameter.")
        table["n_rows"] = n_rows
    try:
        cls, checked = _resolve("mechanism", MECHANISMS, {"name": name, **table})
        return _build("mechanism", cls, checked)
    except ConfigError as exc:
        raise ValueError(str(exc).removeprefix("[mechanism] ")) from None


def training_data(
    data: str, train_rows: int, *, sample: bool = False, rng: np.random.Generator | None = None
) -> tuple[pd.DataFrame, pd.DataFrame | None, str | None]:
    """The training rows and the real test table for ``data``.

    Parameters
    ----------
    data : str
        A data set that serves tables (:func:`privgame.data.check_data`; Adult, COMPAS, or one a plugin registered).
    train_rows : int
        Training rows, 1 to the size of the training data (its published training split when it has one, as
        Adult's 32,561 rows; else every row: COMPAS, 7,214).
    sample : bool, default=False
        Draw the rows at random without replacement (kept in file order) instead of taking the first ones.
    rng : numpy.random.Generator
        Needed when ``sample`` is true.

    Returns
    -------
    train : DataFrame
        The training rows (index 0..train_rows-1).
    test : DataFrame or None
        The data set's test split (Adult's); else the rows not used for training (None if every row trained).
    target : str or None
        The column the utility metrics predict (the data set's label; None without one).

    Raises
    ------
    ValueError
        If ``data`` is not a tabular data set or ``train_rows`` is out of range.
    """
    import numpy as np

    from privgame.analysis._checks import check_int
    from privgame.data.catalogue import check_data

    try:
        dataset = check_data(data, "table")
    except ValueError as exc:
        raise ValueError(f"--{exc}") from None
    population = dataset.table()
    split = dataset.train_split
    pool = population.iloc[:split] if split is not None else population
    n = len(pool)
    what = f"{data}'s training split" if split is not None else data
    check_int("--train-rows", train_rows, low=1)
    if train_rows > n:
        raise ValueError(f"--train-rows must be at most {n} (the rows of {what}), got {train_rows}.")
    if sample:
        if rng is None:
            raise ValueError("sample=True needs an rng.")
        index = np.sort(rng.choice(n, size=train_rows, replace=False))
    else:
        index = np.arange(train_rows)
    train = pool.iloc[index].reset_index(drop=True).copy()
    test: pd.DataFrame | None
    if split is not None:
        test = population.iloc[split:].reset_index(drop=True).copy()
    else:
        rest = np.setdiff1d(np.arange(n), index)
        test = pool.iloc[rest].reset_index(drop=True).copy() if rest.size else None
    return train, test, dataset.label


def write_table(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write ``frame`` as CSV or Parquet by ``path``'s extension (Parquet keeps categories and int64; CSV keeps
    values only); the parent directory is created."""
    from privgame.core.outputs import OutputWriteError, atomic_output

    p = Path(path)
    _check_suffix(p)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputWriteError(p.parent, "making --out's folder", exc) from None
    # a kill leaves the old table or the new one
    with atomic_output(p, what="--out", action="writing the synthetic table (--out)") as tmp:
        if p.suffix.lower() == ".csv":
            frame.to_csv(tmp, index=False)
        else:
            frame.to_parquet(tmp, index=False)
    return p


def _test_description(data: str, test: Any) -> str | None:
    """What the utility metrics were measured on, for the fidelity JSON."""
    from privgame.data.catalogue import get_dataset

    if get_dataset(data).train_split is not None:
        return f"{data} test split"
    return "rows not trained on" if test is not None else None


def report_path(out: str | Path) -> Path:
    """Where ``--report`` writes its JSON: beside the output, extension replaced (``s.csv``: ``s.fidelity.json``)."""
    p = Path(out)
    return p.with_name(f"{p.stem}.fidelity.json")


def run(args: argparse.Namespace) -> int:
    """Run ``privgame synth`` with parsed arguments; returns the exit status."""
    import numpy as np
    import pandas as pd

    from privgame.analysis._checks import check_int
    from privgame.analysis.fidelity import fidelity_report
    from privgame.core.outputs import check_distinct, check_output_file, write_text

    if args.plugins:
        from privgame.engine.config import import_plugins

        import_plugins(args.plugins, source="--plugins")
    is_file = Path(args.data).suffix.lower() in (".csv", ".parquet")
    reads = {"the data file": args.data if is_file else None, "the domain file": args.domain}
    if is_file:
        from privgame.data.files import open_source, register_source

        if args.domain is None:
            raise ValueError(f"--data {args.data!r} is a file: give --domain FILE, its domain file (docs/datasets.md).")
        source = open_source(args.data, args.domain)
        register_source(source)
        args.data = source.name
    elif args.domain is not None:
        raise ValueError(f"--domain belongs to --data FILE.csv|.parquet, got --data {args.data!r} (a data set's name).")
    out = Path(args.out)
    _check_suffix(out)
    # the name as given: Path drops a trailing slash ("s.csv/", a directory's name, would be written as s.csv)
    check_output_file(args.out, what="--out", reads=reads, create_parents=True)
    if args.report:  # its JSON beside the table, checked now rather than after the training
        check_output_file(report_path(out), what="--report's JSON", reads=reads, create_parents=True)
        check_distinct({"--out": out, "--report's JSON": report_path(out)})
    seed = check_int("--seed", args.seed, low=0)
    if args.rows is not None:
        check_int("--rows", args.rows, low=1)
    params = parse_params(args.param)
    generator = build_generator(args.generator, params, data=args.data, n_rows=args.rows)
    data_seed, generator_seed = np.random.SeedSequence(seed).spawn(2)
    train, test, target = training_data(
        args.data, args.train_rows, sample=args.sample, rng=np.random.default_rng(data_seed)
    )

    start = time.perf_counter()
    synthetic = generator.release(train, rng=np.random.default_rng(generator_seed))
    seconds = time.perf_counter() - start
    if not isinstance(synthetic, pd.DataFrame):
        raise TypeError(f"generator {args.generator!r} returned {type(synthetic).__name__}, not a DataFrame.")
    write_table(synthetic, out)
    how = "a seeded sample of" if args.sample else "the first"
    print(
        f"{args.generator}: {len(synthetic)} synthetic rows from {how} {len(train)} rows of {args.data} "
        f"in {seconds:.2f} s -> {out}"
    )
    if args.report:
        report = fidelity_report(train, synthetic, test=test, target=target if test is not None else None)
        print(report)
        document = {
            "generator": args.generator,
            "params": _parameters(generator),
            "data": args.data,
            "train_rows": len(train),
            "sample": bool(args.sample),
            "seed": seed,
            "seconds": seconds,
            "test": _test_description(args.data, test),
            **report.to_dict(),
        }
        path = write_text(report_path(out), json.dumps(_json_safe(document), indent=2) + "\n", what="--report's JSON")
        print(f"report written to {path}")
    return 0


def _parameters(component: Any) -> dict[str, Any]:
    return {f.name: getattr(component, f.name) for f in dataclasses.fields(component) if f.init}


def _check_suffix(path: Path) -> None:
    if path.suffix.lower() not in OUTPUT_SUFFIXES:
        raise ValueError(f"--out must end in {' or '.join(OUTPUT_SUFFIXES)}, got {str(path)!r}.")


def _is_table_mechanism(cls: type) -> bool:
    return getattr(cls, "input_kind", None) == "table" and getattr(cls, "release_kind", None) == "table"


def _json_safe(value: Any) -> Any:
    """Plain JSON: NaN and infinities become null, tuples lists, numpy scalars Python ones, anything else str."""
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and not isinstance(value, str | bytes):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, bool | int | str):
        return value
    return str(value)
