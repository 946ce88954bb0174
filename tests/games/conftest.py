"""Shared helpers for the games tests: small configs written to temporary files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, float) and value != value:
        return "nan"
    return repr(value)


def config_text(overrides: dict[str, dict[str, Any]] | None = None, drop: tuple[str, ...] = ()) -> str:
    """A small one-run config; ``overrides`` replaces keys per section, ``drop`` removes "section.key" entries."""
    sections: dict[str, dict[str, Any]] = {
        "experiment": {"name": "small", "seed": 7, "repetitions": 3},
        "game": {"name": "one-run", "m": 2000, "k_pos": 500, "k_neg": 500},
        "mechanism": {"name": "randomized-response", "epsilon": [1.0, 2.0]},
        "attack": {"name": "identity"},
        "analysis": {"confidence": 0.95, "delta": 0.0},
    }
    for section, values in (overrides or {}).items():
        sections.setdefault(section, {}).update(values)
    for item in drop:
        section, _, key = item.partition(".")
        if key:
            sections[section].pop(key, None)
        else:
            sections.pop(section)
    lines = []
    for section, values in sections.items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in values.items()]
    return "\n".join(lines) + "\n"


@pytest.fixture
def write_config(tmp_path: Path):
    def write(overrides: dict[str, dict[str, Any]] | None = None, drop: tuple[str, ...] = (), name: str = "c") -> Path:
        path = tmp_path / f"{name}.toml"
        path.write_text(config_text(overrides, drop))
        return path

    return write
