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
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"
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


@pytest.fixture
def stored_trial(tmp_path: Path):
    """Run a config (given as sections) through the runner into a results directory; return the stored row and raw
    outcome of one trial (what a golden test pins: the path every stored result takes)."""
    from games.config import parse_config
    from games.runner import run_experiment

    def run(sections: dict[str, dict[str, Any]], trial: int = 0) -> tuple[dict[str, Any], Any]:
        store = run_experiment(parse_config(sections), tmp_path / "golden", progress=False)
        rows = store.rows()
        row = rows[rows["trial"] == trial].iloc[0].to_dict()
        return row, store.load_outcome(trial)

    return run


# A record-model-seeded experiment small enough for a test (a few seconds): Synthpop, 6 rounds, 4 shadows.
TINY_MODEL_SEEDED = """
[experiment]
name = "tiny_model_seeded"
seed = 3
[game]
name = "record-model-seeded"
columns = ["age", "sex", "race"]
dataset_size = 60
auxiliary_size = 120
evaluation_size = 120
rounds = 6
vulnerable_targets = 1
random_targets = 0
n_boot = 40
[mechanism]
name = "synthpop"
[attack]
name = "closest-distance"
n_shadows = 4
"""
