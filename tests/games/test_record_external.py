"""The record games with an external generator: the same rows on one or two workers, and a failing generator
recorded in one line per trial with nothing else lost."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from privgame.engine.api import run
from privgame.engine.runner import TrialsFailed
from tests._external_toy import PROGRAM

ADULT_RANGES = {
    "age": [17, 90],
    "fnlwgt": [0, 1500000],
    "education_num": [1, 16],
    "capital_gain": [0, 99999],
    "capital_loss": [0, 99999],
    "hours_per_week": [1, 99],
}


def config(program: Path) -> dict[str, Any]:
    return {
        "experiment": {"name": "record_external", "seed": 11},
        "game": {
            "name": "record",
            "data": "adult",
            "dataset_size": 100,
            "auxiliary_size": 1000,
            "evaluation_size": 1000,
            "rounds": 10,
            "vulnerable_targets": 1,
            "random_targets": 1,
        },
        "mechanism": {
            "name": "external",
            "command": [sys.executable, str(program), "--jobs", "{jobs}"],
            "batch": True,
            "ranges": ADULT_RANGES,
        },
        "attack": {"name": "tapas-queries", "n_shadows": 10, "n_estimators": 10},
    }


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "toy_generator.py"
    path.write_text(PROGRAM)
    return path


def test_one_and_two_workers_give_the_same_rows(program: Path, tmp_path: Path) -> None:
    frames = []
    for n_jobs in (1, 2):
        results = run(config(program), tmp_path / f"out{n_jobs}", n_jobs=n_jobs, cache_dir=tmp_path / f"cache{n_jobs}")
        frame = results.trials().drop(columns=["seconds"])
        frames.append(frame)
    assert len(frames[0]) == 2
    assert frames[0].equals(frames[1])


def test_a_failing_generator_fails_its_trials_in_one_line_and_the_rerun_finishes(
    program: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOY_MODE", "crash")
    out, cache = tmp_path / "out", tmp_path / "cache"
    with pytest.raises(TrialsFailed):
        run(config(program), out, cache_dir=cache)
    records = sorted((out / "failures").glob("trial-*.json"))
    assert len(records) == 2
    for path in records:
        failure = json.loads(path.read_text())
        assert "\n" not in failure["error"]
        assert "external generator run (seed " in failure["error"]
        assert "the program exited with status 1; stderr: " in failure["error"]
        assert "ValueError: the generator broke" in failure["error"]
        assert "GeneratorStderr: loading the model" in failure["traceback"]  # its whole stderr, as the cause
    monkeypatch.setenv("TOY_MODE", "ok")
    results = run(config(program), out, cache_dir=cache)
    assert len(results.trials()) == 2


def test_panoramia_takes_an_external_generator(program: Path) -> None:
    from privgame.engine.config import parse_config

    cfg = {
        "experiment": {"name": "panoramia_external", "seed": 1},
        "game": {
            "name": "panoramia",
            "generator": {
                "name": "external",
                "command": [sys.executable, str(program), "--jobs", "{jobs}"],
                "batch": True,
                "ranges": ADULT_RANGES,
            },
        },
        "mechanism": {"name": "mlp"},
        "attack": {"name": "classifier-mia"},
    }
    experiment = parse_config(cfg)
    assert experiment.grid[0].game.generator.name == "external"  # type: ignore[attr-defined]


def test_reanalysing_a_stored_external_generator_needs_trust(program: Path, tmp_path: Path) -> None:
    from privgame.engine.reanalyse import reanalysis_config

    out = tmp_path / "out"
    run(config(program), out, cache_dir=tmp_path / "cache")
    with pytest.raises(ValueError, match=r"external generator command .* is named by .*manifest\.json"):
        reanalysis_config(out, {"confidence": 0.9})
    experiment, _ = reanalysis_config(out, {"confidence": 0.9}, trust_plugins=True)
    assert experiment.grid[0].mechanism.name == "external"
