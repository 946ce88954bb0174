"""The files an external generator run exchanges with privgame: the public schema, the training table and the
synthetic table read back and checked against the public domain.

Every value of a synthetic table is checked before privgame uses it: the header names the training table's
columns, the table has the rows asked for, a categorical value is one of its column's public categories, a numeric
value is a finite number within its column's public range (an integer column's value a whole number).  The first
value that is not is named in one line: the file, the column, the row (1-based, as a spreadsheet counts data rows)
and the value.
"""

from __future__ import annotations

import io
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privgame.analysis.discretise import PublicRanges
from privgame.core.inputs import read_input

__all__ = ["FORMATS", "SCHEMA_FORMAT", "TableFileError", "dump_schema", "read_table", "schema_of", "write_table"]

FORMATS = ("csv", "parquet")
SCHEMA_FORMAT = "privgame-table-schema/1"
_SHOWN = 60  # the most characters of a bad value a message quotes


class TableFileError(ValueError):
    """A synthetic table that is missing, unreadable, of the wrong shape, or with a value outside the domain."""


def schema_of(table: pd.DataFrame, ranges: PublicRanges) -> dict[str, Any]:
    """The public schema of ``table``: each column's kind and domain, from its dtype and the public ``ranges``.

    Raises
    ------
    ValueError
        If a numeric column has no public range (a range read from the private rows would leak them).
    """
    bounds = {column: (low, high) for column, low, high in ranges}
    columns: list[dict[str, Any]] = []
    for column, dtype in table.dtypes.items():
        if isinstance(dtype, pd.CategoricalDtype):
            columns.append({"name": column, "kind": "categorical", "categories": [_plain(c) for c in dtype.categories]})
            continue
        if column not in bounds:
            raise ValueError(
                f"ranges must give the public range of every numeric column, got none for {column!r} "
                "(a range read from the private rows would leak them)."
            )
        low, high = bounds[column]
        kind = "integer" if np.dtype(dtype).kind in "iu" else "float"
        if kind == "integer":
            columns.append({"name": column, "kind": kind, "low": math.ceil(low), "high": math.floor(high)})
        else:
            columns.append({"name": column, "kind": kind, "low": low, "high": high})
    return {"format": SCHEMA_FORMAT, "columns": columns}


def _plain(value: Any) -> Any:
    """A category as a JSON value (numpy scalars as Python ones)."""
    return value.item() if isinstance(value, np.generic) else value


def write_table(table: pd.DataFrame, path: Path, fmt: str) -> None:
    """Write a training table for the program: CSV (a header, values as text) or Parquet."""
    if fmt == "csv":
        table.to_csv(path, index=False)
    else:
        table.to_parquet(path, index=False)


def read_table(
    path: Path, *, like: pd.DataFrame, schema: Mapping[str, Any], rows: int, fmt: str, limit: int
) -> pd.DataFrame:
    """The synthetic table at ``path``, checked against ``schema`` and cast to ``like``'s dtypes.

    Raises
    ------
    TableFileError
        One line naming the file and what is wrong with it (for a value: its column, row and the value).
    """
    name = path.name
    if not os.path.lexists(path):
        raise TableFileError(f"it wrote no {name}")
    if path.is_symlink():
        raise TableFileError(f"{name} is a symbolic link, not a file it wrote")
    try:
        payload = read_input(path, what=name, limit=limit)
    except ValueError as exc:
        raise TableFileError(str(exc).rstrip(".")) from None
    if not payload:
        raise TableFileError(f"{name} is empty")
    try:
        if fmt == "csv":
            frame = pd.read_csv(io.BytesIO(payload), dtype=str, keep_default_na=False, na_filter=False)
        else:
            import pyarrow.parquet as pq

            stored = pq.ParquetFile(io.BytesIO(payload)).metadata.num_rows  # refused before a small file unpacks
            if stored != rows:
                raise TableFileError(f"{name} has {stored} rows, {rows} were asked for")
            frame = pd.read_parquet(io.BytesIO(payload))
    except TableFileError:
        raise
    except Exception as exc:  # pandas and pyarrow raise many kinds on a malformed file
        text = " ".join(str(exc).split())[:200]
        raise TableFileError(f"{name} is not a readable {fmt.upper()} table ({type(exc).__name__}: {text})") from None
    columns = [c["name"] for c in schema["columns"]]
    found = [str(c) for c in frame.columns]
    if found != columns:
        missing = [c for c in columns if c not in found]
        extra = [c for c in found if c not in columns]
        what = (
            f"lacks column {missing[0]!r}"
            if missing
            else f"has a column {extra[0]!r} not in the training table"
            if extra
            else "has the training table's columns in another order"
        )
        raise TableFileError(f"{name} {what} (expected {', '.join(map(repr, columns))})")
    if len(frame) != rows:
        raise TableFileError(f"{name} has {len(frame)} rows, {rows} were asked for")
    out = {
        column: _column(frame[column], spec, like[column].dtype, name)
        for column, spec in zip(columns, schema["columns"], strict=True)
    }
    return pd.DataFrame(out)


def _bad(name: str, column: str, row: int, value: Any, why: str) -> TableFileError:
    shown = repr(value if not isinstance(value, str) or len(value) <= _SHOWN else value[:_SHOWN] + "...")
    return TableFileError(f"{name} column {column!r} row {row + 1}: value {shown} {why}")


def _column(values: pd.Series, spec: Mapping[str, Any], dtype: Any, name: str) -> pd.Series | pd.Categorical:
    """One column checked against its public domain, in the training table's dtype."""
    column = spec["name"]
    missing = values.isna().to_numpy()
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        raise _bad(name, column, row, "", "is missing")
    kind = getattr(values.dtype, "kind", "O")
    if kind in "bmM":  # a Parquet bool, datetime or duration is no number of the domain
        raise _bad(name, column, 0, str(values.iloc[0]), f"is a {values.dtype} value, not a {spec['kind']} one")
    if spec["kind"] == "categorical":
        categories = dtype.categories
        text = values.astype(str).to_numpy() if values.dtype != object else values.to_numpy()
        lookup = {str(c): i for i, c in enumerate(categories)}
        codes = np.fromiter((lookup.get(str(v), -1) for v in text), dtype=np.int64, count=len(text))
        bad = np.flatnonzero(codes < 0)
        if bad.size:
            row = int(bad[0])
            raise _bad(name, column, row, text[row], "is not one of its public categories")
        return pd.Categorical.from_codes(codes, dtype=dtype)
    numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    raw = values.to_numpy()
    finite = np.isfinite(numbers)
    if not finite.all():
        row = int(np.flatnonzero(~finite)[0])
        raise _bad(name, column, row, raw[row], "is not a finite number")
    low, high = spec["low"], spec["high"]
    outside = (numbers < low) | (numbers > high)
    if outside.any():
        row = int(np.flatnonzero(outside)[0])
        raise _bad(name, column, row, raw[row], f"is outside its public range {low}..{high}")
    if spec["kind"] == "integer":
        fractional = numbers != np.round(numbers)
        if fractional.any():
            row = int(np.flatnonzero(fractional)[0])
            raise _bad(name, column, row, raw[row], "is not a whole number (an integer column)")
        info = np.iinfo(dtype)
        lossy = (numbers < max(info.min, -(2**53))) | (numbers > min(info.max, 2**53))
        if lossy.any():  # beyond the column's type, or beyond the integers a float64 holds exactly
            row = int(np.flatnonzero(lossy)[0])
            raise _bad(name, column, row, raw[row], f"does not fit the column's type ({dtype}) exactly")
        return pd.Series(numbers.astype(dtype), dtype=dtype)
    with np.errstate(over="ignore"):  # a value beyond float32 becomes inf, refused just below
        cast = numbers.astype(dtype)
    if not np.isfinite(cast).all():
        row = int(np.flatnonzero(~np.isfinite(cast))[0])
        raise _bad(name, column, row, raw[row], f"does not fit the column's type ({dtype})")
    return pd.Series(cast, dtype=dtype)


def dump_schema(schema: Mapping[str, Any], path: Path) -> None:
    """Write the schema as JSON."""
    path.write_text(json.dumps(schema, indent=1) + "\n", encoding="utf-8")
