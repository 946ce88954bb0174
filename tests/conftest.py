"""Suite-wide fixtures (no test writes to the user's real artefact cache) and small configs written to temporary
files."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRIVGAME_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "privgame-cache"))


@pytest.fixture(autouse=True)
def _data_set_catalogue_restored():
    """Every data set a test registers (a plugin's, a config's [data] file) is gone after it."""
    from privgame.data.catalogue import _CATALOGUE, dataset_names

    dataset_names()  # the built-ins first
    before = dict(_CATALOGUE)
    yield
    _CATALOGUE.clear()
    _CATALOGUE.update(before)


@pytest.fixture
def run_refused(tmp_path, capsys):
    """``run_refused(text, *needles)``: ``privgame run`` on the config ``text`` exits 2 with one line on stderr that
    holds every needle, and makes no results directory; returns that line."""
    from privgame.engine.cli import main

    def check(text: str, *needles: str) -> str:
        config = tmp_path / "refused.toml"
        config.write_text(text)
        out = tmp_path / "refused-out"
        assert main(["run", str(config), "--out", str(out), "--no-progress"]) == 2
        lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert len(lines) == 1 and all(n in lines[0] for n in needles), lines
        assert not out.exists()
        return lines[0]

    return check


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
    from privgame.engine.config import parse_config
    from privgame.engine.runner import run_experiment

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


@pytest.fixture
def no_hang():
    """Fail, instead of hanging the suite, a test that blocks on a file that should be refused at once (a FIFO
    opened or read): a SIGALRM after 30 s raises in the test (POSIX only)."""
    import signal

    def stop(signum, frame):
        raise TimeoutError("blocked on a file that should have been refused at once")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def model_entries(cache: Path) -> set[Path]:
    """The trained models' entries in the artefact cache ``cache`` (npz arrays), not the answers on the pool a LiRA
    run task stores beside each model (``games/lira.py``)."""
    import numpy as np

    found = set()
    for entry in cache.glob("v1/arrays/*/*.npz"):
        with np.load(entry, allow_pickle=False) as arrays:
            if set(arrays.files) != {"confidence", "correct"}:
                found.add(entry)
    return found


def forge_factory_name(entry: Path, model: str) -> None:
    """Rewrite the cached model release ``entry`` (an npz of ``v1/arrays``) to name the factory ``model``, with a
    checksum marker that matches: what an attacker with write access to a cache can do (tests/core/test_trust.py,
    experiments/hardening_replay.py)."""
    import numpy as np

    with np.load(entry, allow_pickle=False) as stored:
        arrays = {k: stored[k] for k in stored.files}
    if "model" not in arrays:
        raise ValueError(f"{entry.name} names no model factory (keys {sorted(arrays)})")
    arrays["model"] = np.array(model)
    buf = io.BytesIO()
    np.savez(buf, allow_pickle=False, **arrays)
    entry.write_bytes(buf.getvalue())
    marker = entry.with_suffix(".sha256")
    owner = marker.read_text().split()[1]
    marker.write_text(f"{hashlib.sha256(buf.getvalue()).hexdigest()} {owner}\n")
