"""A config as TOML text: what :func:`privgame.run` stores as ``config.toml`` for a config given as a dict.

Only what a parsed config holds is written (tables, arrays, strings, integers, floats with ``inf`` and ``nan``,
booleans), and ``tomllib.loads`` of the text gives the same table back; nested tables are written inline.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["dumps"]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def dumps(table: Mapping[str, Any], *, header: str = "") -> str:
    """``table`` (sections of key–value tables) as TOML text, each line of ``header`` a comment above it.

    Raises
    ------
    TypeError
        For a value TOML cannot hold (``None``, an object); the message names where it is.
    """
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    for section, values in table.items():
        if not isinstance(values, Mapping):
            raise TypeError(f"[{section}] must be a table, got {type(values).__name__}.")
        lines.append(f"[{_key(section)}]")
        lines += [f"{_key(k)} = {_value(v, f'{section}.{k}')}" for k, v in values.items()]
        lines.append("")
    return "\n".join(lines)


def _key(key: object) -> str:
    text = str(key)
    return text if _BARE_KEY.fullmatch(text) else _string(text)


def _string(text: str) -> str:
    escaped = []
    for char in text:
        if char in '"\\':
            escaped.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            escaped.append(f"\\u{ord(char):04x}")
        else:
            escaped.append(char)
    return '"' + "".join(escaped) + '"'


def _value(value: Any, where: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):  # float(): a subclass (numpy's float64) has its own repr
        if math.isnan(value):
            return "nan"
        return ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(float(value))
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v, f"{where}[{i}]") for i, v in enumerate(value)) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(k)} = {_value(v, f'{where}.{k}')}" for k, v in value.items()) + "}"
    raise TypeError(f"{where} must be a TOML value (a table, array, string, number or boolean), got {value!r}.")
