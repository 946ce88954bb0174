"""A user's own data set: a CSV or Parquet file and a domain file that declares each column's public values.

The domain file is TOML, one table per column, in the data's column order::

    # the public domain of medical.csv: what an auditor may assume known without reading a row
    [columns.age]
    kind = "int"                  # "int", "float" or "category"
    range = [18, 99]              # inclusive public bounds of a numeric column
    bins = [18, 30, 45, 65]       # optional public bin edges (generators that discretise use them), or
                                  # "integers": one bin per integer of the range

    [columns.bmi]
    kind = "float"
    range = [10.0, 70.0]

    [columns.diagnosis]
    kind = "category"
    categories = ["healthy", "sick"]

A value outside the declared domain is refused when the data are loaded, naming the file, the column, the first
offending row and the value (never clipped); so is a column missing from either side, an empty cell, a float in
an integer column, a file that is not UTF-8, two columns of one name, a Parquet column of lists, structs, maps or
bytes.  Every file is opened by :func:`privgame.core.inputs.open_input` (a regular file, never a FIFO or a device)
and refused, before it is parsed, past :data:`MAX_DATA_BYTES` (data) or :data:`MAX_DOMAIN_BYTES` (domain), or
with more than :data:`MAX_COLUMNS` columns (a CSV's header is counted first).  :func:`draft_domain` writes a
first domain from the data itself, headed by a warning: a domain read from the private rows is not public
knowledge, and a mechanism's ε claim assumes a public domain.  The file's SHA-256 is part of the data set's
identity (:class:`FileSource`): an edited CSV is another experiment and misses the artefact cache.
"""

from __future__ import annotations

import collections
import csv
import hashlib
import io
import math
import re
import threading
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privgame.core.inputs import InputFileError, read_input
from privgame.data.domain import PublicDomain

__all__ = [
    "DRAFT_HEADER",
    "KINDS",
    "MAX_COLUMNS",
    "MAX_DATA_BYTES",
    "MAX_DOMAIN_BYTES",
    "DataFileError",
    "FileSource",
    "domain_text",
    "draft_domain",
    "draft_text",
    "open_source",
    "read_domain",
    "read_table",
    "register_source",
]

KINDS = ("int", "float", "category")
SUFFIXES = (".csv", ".parquet")
MAX_CATEGORIES = 10_000  # a draft refuses to list more: such a column is an identifier or a number, not a category
# The limits of what is read (docs/datasets.md, "Limits"): far above any tabular research data set, far below what
# takes minutes or the machine's memory to refuse (a link to /dev/zero, a CSV of a million columns)
MAX_DATA_BYTES = 4 << 30  # a data file, CSV or Parquet: 4 GiB
MAX_DOMAIN_BYTES = 1 << 20  # a domain file: 1 MiB, some 20,000 columns' worth of TOML
MAX_COLUMNS = 10_000  # columns of a data file, and declared by a domain file
DRAFT_HEADER = (
    "# DRAFT written by `privgame domain` FROM THE PRIVATE DATA: these categories and ranges were read from the rows\n"
    "# themselves.  Replace them with public knowledge (a codebook, a questionnaire, documented limits) before an\n"
    "# audit that claims DP: a mechanism's epsilon assumes that the domain it is given is public.\n"
)


class DataFileError(ValueError):
    """A data or domain file that cannot be used (one line naming the file and the rule)."""


def _read(path: Path, what: str, limit: int) -> bytes:
    """The bytes of ``path``, read as :func:`privgame.core.inputs.read_input` reads a file (regular, capped)."""
    try:
        return read_input(path, what=what, limit=limit)
    except InputFileError as exc:
        raise DataFileError(str(exc)) from None


def _data_bytes(path: Path) -> bytes:
    """A data file's bytes (its suffix checked first, so that a wrong file is not read at all)."""
    if path.suffix.lower() not in SUFFIXES:
        raise DataFileError(f"data file {str(path)!r} must be .csv or .parquet, got {path.suffix or 'no suffix'!r}.")
    return _read(path, "data file", MAX_DATA_BYTES)


# ------------------------------------------------------------------------------------------------------------ domain


def read_domain(path: str | Path, *, name: str | None = None) -> PublicDomain:
    """Parse a domain file (see the module docstring).

    Raises
    ------
    DataFileError
        If the file cannot be read (missing, not a regular file, larger than :data:`MAX_DOMAIN_BYTES`), is not TOML,
        or declares more than :data:`MAX_COLUMNS` columns or a column badly (naming the file, column and rule).
    """
    p = Path(path)
    return _domain_of(p, _read(p, "domain file", MAX_DOMAIN_BYTES), name=name)


def _domain_of(p: Path, payload: bytes, *, name: str | None = None) -> PublicDomain:
    """The domain the bytes ``payload`` of the domain file ``p`` declare."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        raise DataFileError(f"domain file {str(p)!r} must be UTF-8 text.") from None
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DataFileError(f"domain file {str(p)!r} is not valid TOML: {exc}.") from None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise DataFileError(
            f"domain file {str(p)!r} must nest its values a few levels deep, got lists or tables nested deeper than "
            "the TOML parser can follow."
        ) from None
    return domain_from_table(table, source=f"domain file {str(p)!r}", name=name or p.name.split(".")[0])


def domain_from_table(table: Any, *, source: str, name: str) -> PublicDomain:
    """The :class:`PublicDomain` a parsed domain table declares (``{"columns": {column: {...}}}``)."""
    if not isinstance(table, dict) or set(table) - {"columns"} or not isinstance(table.get("columns"), dict):
        raise DataFileError(f"{source} must hold one [columns.NAME] table per column, got keys {sorted(table)!r}.")
    columns = table["columns"]
    if not columns:
        raise DataFileError(f"{source} declares no column.")
    if len(columns) > MAX_COLUMNS:
        raise DataFileError(f"{source} must declare at most {MAX_COLUMNS:,} columns, got {len(columns):,}.")
    categories: list[tuple[str, tuple[str, ...]]] = []
    ranges: list[tuple[str, Any, Any]] = []
    bins: list[tuple[str, Any]] = []
    floats: list[str] = []
    for column, spec in columns.items():
        where = f"{source}: column {column!r}"
        if not isinstance(spec, dict):
            raise DataFileError(f"{where} must be a table with a kind, got {spec!r}.")
        kind = spec.get("kind")
        if kind not in KINDS:
            raise DataFileError(f"{where}: kind must be one of {', '.join(KINDS)}, got {kind!r}.")
        allowed = {"kind", "categories"} if kind == "category" else {"kind", "range", "bins"}
        extra = sorted(set(spec) - allowed)
        if extra:
            raise DataFileError(f"{where}: unknown key {extra[0]!r} for kind {kind!r} (allowed: {sorted(allowed)}).")
        if kind == "category":
            cats = spec.get("categories")
            if not isinstance(cats, list) or not cats or not all(isinstance(c, str | int) for c in cats):
                raise DataFileError(f"{where}: categories must be a non-empty list of strings, got {cats!r}.")
            labels = tuple(str(c) for c in cats)
            if len(set(labels)) != len(labels):
                raise DataFileError(f"{where}: categories must be distinct, got {cats!r}.")
            categories.append((column, labels))
            continue
        bounds = spec.get("range")
        if (
            not isinstance(bounds, list)
            or len(bounds) != 2
            or not all(isinstance(b, int | float) and not isinstance(b, bool) and math.isfinite(b) for b in bounds)
        ):
            raise DataFileError(f"{where}: range must be [low, high], two finite numbers, got {bounds!r}.")
        low, high = bounds
        if kind == "int" and not all(float(b).is_integer() for b in bounds):
            raise DataFileError(f"{where}: an int column's range must be two integers, got {bounds!r}.")
        if not low <= high:
            raise DataFileError(f"{where}: range must have low <= high, got {bounds!r}.")
        if kind == "int":
            ranges.append((column, int(low), int(high)))
        else:
            ranges.append((column, float(low), float(high)))
            floats.append(column)
        if "bins" in spec:
            edges = spec["bins"]
            if edges == "integers" and kind == "int":
                bins.append((column, edges))  # one bin per integer of the range
                continue
            if not isinstance(edges, list) or not edges:
                raise DataFileError(
                    f'{where}: bins must be a non-empty list of edges (or "integers" for an int column), got {edges!r}.'
                )
            bins.append((column, tuple(edges)))
    try:
        return PublicDomain(name, tuple(columns), tuple(categories), tuple(ranges), tuple(bins), tuple(floats))
    except (TypeError, ValueError) as exc:
        raise DataFileError(f"{source}: {exc}") from None


def domain_text(domain: PublicDomain) -> str:
    """A domain file's TOML for ``domain`` (the inverse of :func:`read_domain`)."""
    cats, floats, bins = dict(domain.categories), set(domain.floats), dict(domain.bins)
    lines: list[str] = []
    for column in domain.columns:
        lines.append(f"[columns.{_key(column)}]")
        if column in cats:
            lines.append('kind = "category"')
            lines.append("categories = [" + ", ".join(_string(c) for c in cats[column]) + "]")
        else:
            low, high = domain.range_of(column)
            lines.append(f'kind = "{"float" if column in floats else "int"}"')
            lines.append(f"range = [{_number(low)}, {_number(high)}]")
            if column in bins:
                spec = bins[column]
                lines.append(
                    f"bins = {_string(spec) if isinstance(spec, str) else '[' + ', '.join(map(_number, spec)) + ']'}"
                )
        lines.append("")
    return "\n".join(lines)


def _key(column: str) -> str:
    bare = column.replace("_", "").replace("-", "").isalnum() and column.isascii()
    return column if bare else _string(column)


def _string(value: Any) -> str:
    """``value`` as a TOML basic string: a backslash, a quote and every control character escaped (TOML forbids
    them raw, so a category holding a NUL or a carriage return would make a domain file no reader reads back)."""
    escapes = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
    text = "".join(
        escapes.get(ch) or (f"\\u{ord(ch):04X}" if ord(ch) < 0x20 or ord(ch) == 0x7F else ch) for ch in str(value)
    )
    return f'"{text}"'


def _number(value: Any) -> str:
    return repr(float(value)) if isinstance(value, float) else str(int(value))


def draft_domain(table: pd.DataFrame, *, name: str = "data") -> PublicDomain:
    """A first domain read from ``table`` itself: each column's observed categories or range (ints stay ints).

    Only a draft: the values come from the private rows (see :data:`DRAFT_HEADER`).

    Raises
    ------
    DataFileError
        If a column is empty, or a text column has more than :data:`MAX_CATEGORIES` distinct values.
    """
    categories: list[tuple[str, tuple[str, ...]]] = []
    ranges: list[tuple[str, Any, Any]] = []
    floats: list[str] = []
    for column in table.columns:
        values = table[column]
        if values.isna().all():
            raise DataFileError(f"column {column!r} is empty: nothing to draft a domain from.")
        if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
            seen = sorted({str(v) for v in values.dropna()})
            if len(seen) > MAX_CATEGORIES:
                raise DataFileError(
                    f"column {column!r} has {len(seen):,} distinct values, more than {MAX_CATEGORIES:,}: declare it "
                    "yourself (an identifier belongs out of the data; a number, as int or float)."
                )
            categories.append((str(column), tuple(seen)))
            continue
        finite = values.dropna().to_numpy(dtype=np.float64)
        integral = pd.api.types.is_integer_dtype(values) or bool(np.all(finite == np.round(finite)))
        if integral:
            ranges.append((str(column), int(finite.min()), int(finite.max())))
        else:
            ranges.append((str(column), float(finite.min()), float(finite.max())))
            floats.append(str(column))
    return PublicDomain(name, tuple(str(c) for c in table.columns), tuple(categories), tuple(ranges), (), tuple(floats))


# ------------------------------------------------------------------------------------------------------------ data


_LINE_END = re.compile(r"[\r\n]")
_CSV_SPECIAL = re.compile(r'[",\r\n]')
_NOT_BLANK = re.compile(r"\S")


def _record(text: str, pos: int) -> tuple[int, bool, int]:
    """The CSV record that starts at ``pos``: its field count, whether that count is exact (counting stops past
    :data:`MAX_COLUMNS`, so that a header of a million columns costs nothing), and where the next record starts.

    Counted as pandas' reader splits fields: at commas outside quotes; a field is quoted when a double quote opens
    it (after spaces), and a doubled quote inside it is one quote character.
    """
    end = _LINE_END.search(text, pos)
    line_end = len(text) if end is None else end.start()
    if text.find('"', pos, line_end) < 0:  # the usual record: one line, no quotes, counted in C (and not copied)
        return text.count(",", pos, line_end) + 1, True, _after_line(text, line_end)
    count, start = 1, pos
    while True:
        match = _CSV_SPECIAL.search(text, pos)
        if match is None:
            return count, True, len(text)
        i, char = match.start(), match.group()
        if char == ",":
            count += 1
            if count > MAX_COLUMNS:
                return count, False, len(text)
            pos = start = i + 1
        elif char == '"' and not text[start:i].strip(" "):
            close = text.find('"', i + 1)
            while close >= 0 and text.startswith('"', close + 1):  # a doubled quote inside the field
                close = text.find('"', close + 2)
            if close < 0:  # an unterminated quote: pandas' reader names it
                return count, True, len(text)
            pos = close + 1
        elif char == '"':
            pos = i + 1
        else:
            return count, True, _after_line(text, i)


def _after_line(text: str, end: int) -> int:
    """Where the line that ends at ``end`` (a line break or the end of the text) is followed."""
    return end + 2 if text.startswith("\r\n", end) else end + 1


def _check_csv_shape(path: Path, text: str) -> None:
    """Refuse, before pandas reads a cell, a header of more than :data:`MAX_COLUMNS` columns or with a name twice,
    and a first row wider than the header (which pandas would silently turn into an index, shifting every value)."""
    source = f"data file {str(path)!r}"
    pos, records = 0, list[tuple[int, bool, int, int]]()
    while len(records) < 2 and pos < len(text):
        count, exact, after = _record(text, pos)
        if _NOT_BLANK.search(text, pos, after):  # pandas skips blank lines
            records.append((count, exact, pos, after))
        pos = after
    if not records:
        return
    count, exact, start, end = records[0]
    if count > MAX_COLUMNS:
        got = f"{count:,}" if exact else f"more than {MAX_COLUMNS:,}"
        raise DataFileError(f"{source} must have at most {MAX_COLUMNS:,} columns, got {got}.")
    try:
        names = next(csv.reader([text[start:end]], skipinitialspace=True), [])
    except csv.Error as exc:
        raise DataFileError(f"{source} is not a readable CSV: its header: {exc}.") from None
    _check_names(source, [name for name in names if name])  # pandas names an empty header cell "Unnamed: i"
    if len(records) > 1 and records[1][0] > count:
        width = f"{records[1][0]:,}" if records[1][1] else f"more than {MAX_COLUMNS:,}"
        raise DataFileError(f"{source}: row 0 has {width} fields, more than the {count:,} columns of its header.")


def _check_names(source: str, names: list[str]) -> None:
    """Refuse a column name given twice (pandas would read the second ``age`` as ``age.1``, a name not in the
    file)."""
    seen = collections.Counter(names)
    twice = [f"{name!r} ({times} times)" for name, times in seen.items() if times > 1]
    if twice:
        raise DataFileError(f"{source}: column names must be distinct, got {', '.join(twice)}.")


def _check_parquet_schema(path: Path, payload: bytes) -> None:
    """Refuse, from the file's schema (before a row is read), more than :data:`MAX_COLUMNS` columns, a name twice,
    and a column whose cells are not single values: lists, structs, maps, unions, bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = f"data file {str(path)!r}"
    try:
        schema = pq.read_schema(pa.BufferReader(payload))
    except Exception as exc:  # pyarrow's errors have no common base
        raise DataFileError(f"{source} is not a readable Parquet file: {exc}.") from None
    if len(schema) > MAX_COLUMNS:
        raise DataFileError(f"{source} must have at most {MAX_COLUMNS:,} columns, got {len(schema):,}.")
    _check_names(source, list(schema.names))
    binary = (pa.types.is_binary, pa.types.is_large_binary, pa.types.is_fixed_size_binary)
    for field in schema:
        kind = field.type
        while isinstance(kind, pa.ExtensionType | pa.DictionaryType):
            kind = kind.storage_type if isinstance(kind, pa.ExtensionType) else kind.value_type
        if pa.types.is_nested(kind) or any(test(kind) for test in binary) or str(kind) == "binary_view":
            raise DataFileError(
                f"{source}: column {field.name!r} must hold one number or text per cell, got {field.type}."
            )


def _parse(path: Path, payload: bytes, numeric: frozenset[str] = frozenset()) -> pd.DataFrame:
    """The cells of the data file ``path`` (its bytes ``payload``) as read: a CSV as strings (nothing inferred; the
    ``numeric`` columns parsed as float64 when every cell of them is a number, else all as strings), a Parquet file
    as stored."""
    if not payload.strip():
        raise DataFileError(f"data file {str(path)!r} is empty.")
    if path.suffix.lower() == ".parquet":
        _check_parquet_schema(path, payload)
        try:
            return pd.read_parquet(io.BytesIO(payload))
        except Exception as exc:  # pyarrow's errors have no common base
            raise DataFileError(f"data file {str(path)!r} is not a readable Parquet file: {exc}.") from None
    try:
        text = payload.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataFileError(
            f"data file {str(path)!r} must be UTF-8 text, got byte {payload[exc.start]:#04x} at offset {exc.start}."
        ) from None
    _check_csv_shape(path, text)
    options: dict[str, Any] = {"keep_default_na": False, "na_values": [""], "skipinitialspace": True}
    try:
        if numeric:
            header = pd.read_csv(io.StringIO(text), nrows=0, **options).columns
            types = {c: (np.float64 if c in numeric else str) for c in header}
            try:  # the fast route: numbers parsed by the C reader
                raw = pd.read_csv(io.StringIO(text), dtype=types, **options)
            except (ValueError, TypeError):  # a cell that is no number: read as text, to name it
                raw = pd.read_csv(io.StringIO(text), dtype=str, **options)
        else:
            raw = pd.read_csv(io.StringIO(text), dtype=str, **options)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise DataFileError(f"data file {str(path)!r} is not a readable CSV: {' '.join(str(exc).split())}.") from None
    if raw.empty:
        raise DataFileError(f"data file {str(path)!r} has a header but no rows.")
    return raw


def read_table(path: str | Path, domain: PublicDomain) -> pd.DataFrame:
    """The rows of a data file, checked against ``domain`` and typed by it (categorical, ``int64``, ``float64``).

    Raises
    ------
    DataFileError
        Naming the file, the column, the first offending row (0-based, as record ids) and the value: a column
        missing from the file or from the domain, an empty cell, a category not declared, a non-number or a float
        in an integer column, a value outside its range; an unreadable, empty or non-UTF-8 file, one that is not a
        regular file or is larger than :data:`MAX_DATA_BYTES`, more than :data:`MAX_COLUMNS` columns, a column name
        twice, a Parquet column of lists, structs, maps or bytes.
    """
    p = Path(path)
    return _table(p, _data_bytes(p), domain)


def _table(p: Path, payload: bytes, domain: PublicDomain) -> pd.DataFrame:
    """:func:`read_table` of the data file ``p`` whose bytes are ``payload``."""
    numeric = frozenset(c for c, _, _ in domain.ranges)
    raw = _parse(p, payload, numeric)
    names = [str(c) for c in raw.columns]
    source = f"data file {str(p)!r}"
    text_cells: list[pd.DataFrame] = []

    def token(column: str, row: int) -> Any:
        """The cell as written in the file (the numbers were parsed on the fast route)."""
        if raw[column].dtype == object or p.suffix.lower() == ".parquet":
            return raw[column].iloc[row]
        if not text_cells:
            text_cells.append(_parse(p, payload))
        return text_cells[0][column].iloc[row]

    missing = [c for c in domain.columns if c not in names]
    if missing:
        raise DataFileError(f"{source} has no column {missing[0]!r}, which its domain declares.")
    undeclared = [c for c in names if c not in domain.columns]
    if undeclared:
        raise DataFileError(f"{source} has the column {undeclared[0]!r}, which its domain does not declare.")
    if len(set(names)) != len(names):
        twice = next(c for c in names if names.count(c) > 1)
        raise DataFileError(f"{source} has the column {twice!r} twice.")
    cats = dict(domain.categories)
    out: dict[str, Any] = {}
    for column in domain.columns:
        values = raw[column]
        where = f"{source}: column {column!r}"
        empty = values.isna().to_numpy()
        if empty.any():
            row = int(np.argmax(empty))
            raise DataFileError(f"{where} is empty at row {row} (declare missing values as a category, e.g. '?').")
        if column in cats:
            labels = values.astype(str).str.strip() if values.dtype == object else values.astype(str)
            codes = pd.Index(cats[column]).get_indexer(pd.Index(labels))
            if (codes < 0).any():
                row = int(np.argmax(codes < 0))
                raise DataFileError(f"{where}: row {row} has {labels.iloc[row]!r}, not one of its declared categories.")
            out[column] = pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(list(cats[column])))
            continue
        if values.dtype == np.float64:
            numbers = values.to_numpy()
        else:
            numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(numbers)
        if bad.any():
            row = int(np.argmax(bad))
            raise DataFileError(f"{where}: row {row} has {token(column, row)!r}, not a finite number.")
        low, high = domain.range_of(column)
        if not domain.is_float(column):
            fractional = numbers != np.round(numbers)
            if fractional.any():
                row = int(np.argmax(fractional))
                raise DataFileError(f"{where} is int: row {row} has {token(column, row)!r}, which is not an integer.")
        outside = (numbers < low) | (numbers > high)
        if outside.any():
            row = int(np.argmax(outside))
            raise DataFileError(
                f"{where}: row {row} has {token(column, row)!r}, outside its declared range [{low}, {high}]."
            )
        out[column] = numbers if domain.is_float(column) else numbers.astype(np.int64)
    return pd.DataFrame(out, columns=list(domain.columns))


# ---------------------------------------------------------------------------------------------------- the data set


@dataclass(frozen=True)
class FileSource:
    """A data set from a user's files, as a config's ``[data]`` table names it; hashable and picklable.

    It carries everything a game checks a config against (the domain, the size, the label) so that reading a
    results directory needs neither file; only the rows are read from ``path``, when a trial needs them, and then
    only if the file's SHA-256 is still ``sha256``.

    Attributes
    ----------
    name : str
        The data set's name in the catalogue (``[data] name``, default the file's stem).
    path : str
        The data file, absolute.
    domain : PublicDomain
    sha256 : str
        Of the data file's bytes, when the config was read.
    size : int
        Its rows.
    label : str or None
        ``[data] label``: the model games' label column.
    positive : str or None
        ``[data] positive``: the label's positive value (class 1) for a binary label; None: its classes in order.
    draft : bool
        Whether the domain file is byte-equal to the draft ``privgame domain`` writes from this data.
    """

    name: str
    path: str
    domain: PublicDomain
    sha256: str
    size: int
    label: str | None = None
    positive: str | None = None
    draft: bool = False

    def identity(self) -> dict[str, Any]:
        """What determines the results, as JSON (the normalised config's ``data``): not where the file lies."""
        return {
            "name": self.name,
            "sha256": self.sha256,
            "size": self.size,
            "domain": domain_text(self.domain),
            "label": self.label,
            "positive": self.positive,
        }

    def to_json(self) -> dict[str, Any]:
        """Everything, as JSON (a results manifest's ``data_source``; :meth:`from_json` reads it back)."""
        return {**self.identity(), "path": self.path, "draft": self.draft}

    @classmethod
    def from_json(cls, value: Any) -> FileSource:
        """The source a manifest's ``data_source`` describes (no file is read).

        Raises
        ------
        DataFileError
            If ``value`` is not such a description.
        """
        try:
            domain = domain_from_table(
                tomllib.loads(value["domain"]), source="the manifest's data_source", name=value["name"]
            )
            return cls(
                name=str(value["name"]),
                path=str(value["path"]),
                domain=domain,
                sha256=str(value["sha256"]),
                size=int(value["size"]),
                label=None if value.get("label") is None else str(value["label"]),
                positive=None if value.get("positive") is None else str(value["positive"]),
                draft=bool(value.get("draft", False)),
            )
        except (KeyError, TypeError, ValueError, tomllib.TOMLDecodeError) as exc:
            raise DataFileError(f"the manifest's data_source is not a data file's description: {exc}.") from None

    def dataset(self) -> Any:
        """The :class:`privgame.data.Dataset` of these files (its rows read lazily, checked against the hash)."""
        from privgame.data.dataset import Dataset

        serves = {"table", "features"} if self.label is not None else {"table"}
        positive: Any = self.positive
        if positive is not None and self.label is not None and self.label not in dict(self.domain.categories):
            positive = int(positive)
        return Dataset(
            self.name,
            self.domain,
            self.size,
            _FileRows(self.path, self.domain, self.sha256),
            label=self.label,
            positive=positive,
            serves=frozenset(serves),
            description=f"{self.path} (sha256 {self.sha256[:12]})",
        )


@dataclass(frozen=True)
class _FileRows:
    """``rows()`` of a file data set: the file read and checked, refused if it changed since the config was read."""

    path: str
    domain: PublicDomain
    sha256: str

    def __call__(self) -> pd.DataFrame:
        p = Path(self.path)
        try:
            payload = read_input(p, what="data file", limit=MAX_DATA_BYTES)
        except InputFileError as exc:
            if exc.reason == "missing":
                raise DataFileError(f"data file {self.path!r} is gone (the config was read with it).") from None
            raise DataFileError(str(exc)) from None
        # the rows are parsed from the very bytes hashed: a file replaced in between cannot slip through
        if hashlib.sha256(payload).hexdigest() != self.sha256:
            raise DataFileError(
                f"data file {self.path!r} changed since the config was read (SHA-256 {self.sha256[:12]}…): rerun "
                "with the file as it was, or start a new experiment."
            )
        return _checked_rows(p, payload, self.sha256, self.domain).copy()


def _inferred(path: Path, payload: bytes) -> pd.DataFrame:
    """The data file ``path`` (its bytes ``payload``) with pandas' own type inference (what a draft domain is read
    from)."""
    raw = _parse(path, payload)
    if path.suffix.lower() == ".parquet":
        return raw
    return pd.read_csv(io.StringIO(raw.to_csv(index=False)), skipinitialspace=True)


def draft_text(path: str | Path) -> str:
    """What ``privgame domain FILE`` prints: :data:`DRAFT_HEADER`, then the draft domain of the file's rows.

    Raises
    ------
    DataFileError
        As :func:`read_table` for the file itself (not a regular file, too large, too many columns, a column name
        twice, a Parquet column of lists ...), and as :func:`draft_domain` for its columns.
    """
    p = Path(path)
    return _draft_text(p, _data_bytes(p))


def _draft_text(p: Path, payload: bytes) -> str:
    return DRAFT_HEADER + "\n" + domain_text(draft_domain(_inferred(p, payload), name=p.name.split(".")[0]))


_ROWS: collections.OrderedDict[tuple[str, str, PublicDomain], pd.DataFrame] = collections.OrderedDict()
_ROWS_LOCK = threading.Lock()
_ROWS_KEPT = 4


def _checked_rows(path: Path, payload: bytes, sha256: str, domain: PublicDomain) -> pd.DataFrame:
    """The rows of ``path`` as of ``sha256`` (the hash of ``payload``, its bytes), parsed and checked once per
    process for the last few files (a trial's worker reads the same file again and again)."""
    key = (str(path), sha256, domain)
    with _ROWS_LOCK:
        if key in _ROWS:
            _ROWS.move_to_end(key)
            return _ROWS[key]
    table = _table(path, payload, domain)
    with _ROWS_LOCK:
        _ROWS[key] = table
        while len(_ROWS) > _ROWS_KEPT:
            _ROWS.popitem(last=False)
    return table


def open_source(
    path: str | Path,
    domain_path: str | Path,
    *,
    name: str | None = None,
    label: str | None = None,
    positive: str | None = None,
) -> FileSource:
    """Read and check a data file against its domain file: the :class:`FileSource` a config's ``[data]`` names.

    Raises
    ------
    DataFileError
        For any problem of either file (one line), a ``label`` that is not a column, or one with fewer than two
        classes in the data.
    """
    data_file, domain_file = Path(path), Path(domain_path)
    written = _read(domain_file, "domain file", MAX_DOMAIN_BYTES)
    domain = _domain_of(domain_file, written, name=name or data_file.name.split(".")[0])
    payload = _data_bytes(data_file)
    digest = hashlib.sha256(payload).hexdigest()
    table = _checked_rows(data_file, payload, digest, domain)
    if label is not None:
        if label not in domain.columns:
            raise DataFileError(
                f"[data] label must be a column of {str(data_file)!r} ({', '.join(domain.columns)}), got {label!r}."
            )
        if domain.is_float(label):
            raise DataFileError(f"[data] label {label!r} must be a category or int column, not float.")
        seen = table[label].nunique()
        if seen < 2:
            raise DataFileError(
                f"[data] label {label!r} has {seen} class in {str(data_file)!r}; a model game needs two or more."
            )
        if positive is not None and label in dict(domain.categories) and positive not in domain.categories_of(label):
            raise DataFileError(f"[data] positive must be one of the categories of {label!r}, got {positive!r}.")
        if positive is not None and label not in dict(domain.categories):
            low, high = domain.range_of(label)
            if not positive.lstrip("-").isdigit() or not low <= int(positive) <= high:
                raise DataFileError(
                    f"[data] positive must be an integer in the range [{low}, {high}] of {label!r}, got {positive!r}."
                )
    # a draft starts with its header: only then can the file be byte-equal to one (and the draft is computed)
    draft = written.startswith(DRAFT_HEADER.encode()) and written == _draft_text(data_file, payload).encode()
    return FileSource(
        name=domain.name,
        path=str(data_file.resolve()),
        domain=domain,
        sha256=digest,
        size=len(table),
        label=label,
        positive=positive,
        draft=draft,
    )


def register_source(source: FileSource, *, authoritative: bool = False) -> None:
    """Put ``source``'s data set in the catalogue under its name (again in a worker, or when results are read).

    A no-op when the catalogue already holds the same files (name, path, SHA-256, label and domain); the same file
    read otherwise (edited since, or with another label or domain) replaces the old entry.

    ``authoritative``: the run's parent already checked the name (a worker, which may hold another run's data set
    under it from an earlier run of the same process pool): whatever the name holds here is replaced.

    Raises
    ------
    DataFileError
        If the name belongs to a built-in, a plugin's data set, or other files: ``[data] name`` must differ.
    """
    from privgame.data.catalogue import _BUILTIN_NAMES, _CATALOGUE, _builtins

    _builtins()
    old = _CATALOGUE.get(source.name)
    if authoritative and source.name not in _BUILTIN_NAMES:
        if old is None or not _same_files(old, source):
            _CATALOGUE[source.name] = source.dataset()
        return
    if old is not None:
        rows = old.rows
        if isinstance(rows, _FileRows) and rows.path == source.path:
            if not _same_files(old, source):  # the same file edited since, or read with another label or domain
                _CATALOGUE[source.name] = source.dataset()
            return
        raise DataFileError(
            f"[data] name {source.name!r} is taken by the data set {old.description or old.name!r}; give [data] name "
            "another name."
        )
    _CATALOGUE[source.name] = source.dataset()


def _same_files(dataset: Any, source: FileSource) -> bool:
    """Whether ``dataset`` is ``source``'s data set: the same path, content, label and domain."""
    rows, new = dataset.rows, source.dataset()
    return isinstance(rows, _FileRows) and (
        rows.path,
        rows.sha256,
        dataset.label,
        dataset.positive,
        dataset.domain,
    ) == (source.path, source.sha256, new.label, new.positive, new.domain)
