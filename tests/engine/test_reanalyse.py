"""``privgame reanalyse``: every bound recomputed from the stored raw arrays, the source only read.

With the stored settings the rows equal the stored rows; with others they equal analysing the same outcomes
directly; a damaged, missing or failed trial, a directory that is not a results directory, an ``--out`` that is the
source, invalid settings and unconfirmed plugins are refused in one line before anything is written; a reanalysis
that stopped midway resumes.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privgame.engine.cli import main
from privgame.engine.config import ConfigError, load_config
from privgame.engine.plan import plan_trials
from privgame.engine.reanalyse import reanalyse
from privgame.engine.runner import run_experiment
from privgame.engine.store import ResultsStore, StoreError
from privgame.games._base import AnalysisSettings

CHECKSUMS = ("sha256_raw", "sha256_records")


@pytest.fixture
def finished(write_config, tmp_path):
    config = load_config(write_config({"experiment": {"repetitions": 3}}))
    store = run_experiment(config, tmp_path / "run", progress=False)
    return config, store.root


def _tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _rows(root: Path) -> pd.DataFrame:
    rows = ResultsStore(root).rows()
    return rows.drop(columns=[c for c in CHECKSUMS if c in rows.columns])


def test_a_reanalysis_into_a_directory_another_writer_holds_is_refused(finished, tmp_path):
    from privgame.engine.store import writing

    with writing(tmp_path / "busy"):
        with pytest.raises(StoreError, match=r"is being written by another privgame run"):
            reanalyse(finished[1], tmp_path / "busy", {"confidence": [0.9]}, progress=False)
        assert list((tmp_path / "busy").iterdir()) == []
    assert reanalyse(finished[1], tmp_path / "busy", {"confidence": [0.9]}, progress=False).done()


def test_the_stored_settings_reproduce_the_stored_rows_and_the_source_is_untouched(finished, tmp_path):
    _, root = finished
    before = _tree_digest(root)
    out = reanalyse(root, tmp_path / "again", {}, progress=False)
    pd.testing.assert_frame_equal(_rows(out.root), _rows(root))
    assert _tree_digest(root) == before
    assert out.manifest()["config_hash"] == ResultsStore(root).manifest()["config_hash"]


def test_other_settings_equal_analysing_the_stored_outcomes_directly(finished, tmp_path):
    config, root = finished
    new = {"estimators": ["steinke", "fdp"], "confidence": 0.9}
    out = reanalyse(root, tmp_path / "again", new, progress=False)
    rows = out.rows()
    source = ResultsStore(root)
    settings = AnalysisSettings(confidence=0.9, estimators=("steinke", "fdp"))
    for trial in plan_trials(config):
        point = config.grid[trial.grid_index]
        want = point.game.analyse_trial(
            source.load_outcome(trial.index), settings.bind(point.mechanism.privacy_claim()), seed=trial.seed
        )
        got = rows[rows["trial"] == trial.index].iloc[0]
        assert got["fdp_pure.epsilon_lb"] == want["fdp_pure.epsilon_lb"]
        assert got["steinke.epsilon_lb"] == want["steinke.epsilon_lb"] == got["epsilon_lb"]
    assert out.manifest()["normalised_config"]["analysis"] == {
        "confidence": 0.9,
        "delta": 0.0,
        "estimators": ["steinke", "fdp"],
    }
    assert (rows["seconds"].to_numpy() == ResultsStore(root).rows()["seconds"].to_numpy()).all()  # the play times


def test_a_reanalysis_stopped_midway_resumes(finished, tmp_path):
    _, root = finished
    out = reanalyse(root, tmp_path / "again", {"confidence": 0.8}, progress=False)
    whole = _rows(out.root)
    for trial in (1, 4):  # as if killed before these were written
        (out.root / "trials" / f"trial-{trial:06d}.parquet").unlink()
    again = reanalyse(root, tmp_path / "again", {"confidence": 0.8}, progress=False)
    pd.testing.assert_frame_equal(_rows(again.root), whole)


def test_damaged_missing_and_failed_trials_are_named_and_nothing_is_written(finished, tmp_path):
    _, root = finished
    raw = root / "raw" / "trial-000002.npz"
    raw.write_bytes(raw.read_bytes()[:100])  # truncated
    with pytest.raises(StoreError, match=r"trial 2: raw/trial-000002.npz does not match its checksum"):
        reanalyse(root, tmp_path / "again", {}, progress=False)
    assert not (tmp_path / "again").exists()
    (root / "trials" / "trial-000002.parquet").unlink()
    with pytest.raises(StoreError, match=r"1 trial that cannot be reanalysed \(trial 2; trial 2: not run\)"):
        reanalyse(root, tmp_path / "again", {}, progress=False)
    (root / "failures" / "trial-000002.json").write_text(json.dumps({"trial": 2, "error": "boom"}))
    with pytest.raises(StoreError, match=r"trial 2: failed \(boom\)"):
        reanalyse(root, tmp_path / "again", {}, progress=False)
    assert not (tmp_path / "again").exists()


def test_bad_requests_are_refused_before_anything_is_written(finished, tmp_path):
    _, root = finished
    with pytest.raises(StoreError, match="must differ from the directory reanalysed"):
        reanalyse(root, root, {}, progress=False)
    with pytest.raises(ConfigError, match=r"\[analysis\] estimators: unknown estimator 'nope'"):
        reanalyse(root, tmp_path / "again", {"estimators": ["nope"]}, progress=False)
    with pytest.raises(ConfigError, match=r"\[analysis\] confidence must be in"):
        reanalyse(root, tmp_path / "again", {"confidence": 1.5}, progress=False)
    with pytest.raises(ConfigError, match=r"\[analysis\] unknown key 'bogus'"):
        reanalyse(root, tmp_path / "again", {"bogus": 1}, progress=False)
    with pytest.raises(StoreError):
        reanalyse(tmp_path, tmp_path / "again", {}, progress=False)  # not a results directory
    assert not (tmp_path / "again").exists()


def test_a_stored_config_with_plugins_needs_trust(finished, tmp_path):
    _, root = finished
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["config"]["experiment"]["plugins"] = ["evil_module"]
    (root / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ConfigError, match=r"plugin 'evil_module' is named by .*manifest.json.*--trust-plugins"):
        reanalyse(root, tmp_path / "again", {}, progress=False)
    assert "evil_module" not in sys.modules


def test_the_command_line(finished, tmp_path, capsys):
    _, root = finished
    assert (
        main(
            [
                "reanalyse",
                str(root),
                "--out",
                str(tmp_path / "a"),
                "--estimators",
                "steinke",
                "fdp",
                "--confidence",
                "0.9",
                "--no-progress",
            ]
        )
        == 0
    )
    assert "fdp_pure.epsilon_lb" in ResultsStore(tmp_path / "a").rows().columns
    analysis = tmp_path / "analysis.toml"
    analysis.write_text('[analysis]\nestimators = ["steinke"]\nthreshold = "bonferroni"\n')
    assert main(["reanalyse", str(root), "--out", str(tmp_path / "b"), "--config", str(analysis), "--no-progress"]) == 0
    rows = ResultsStore(tmp_path / "b").rows()
    assert np.isfinite(rows["steinke.epsilon_lb"]).all() and "steinke.r" in rows.columns
    capsys.readouterr()
    assert main(["reanalyse", str(root), "--out", str(tmp_path / "c"), "--estimators", "stienke"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown estimator 'stienke'" in err
    assert not (tmp_path / "c").exists()
    analysis.write_text("[analysis\n")
    assert main(["reanalyse", str(root), "--out", str(tmp_path / "c"), "--config", str(analysis)]) == 2
    assert "is not valid TOML" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["analysis = 5\n", "[analysis]\nconfidence = 0.9\n[analysis.extra]\nx = 1\n"])
def test_an_analysis_file_without_a_plain_analysis_section_is_refused(finished, tmp_path, capsys, text):
    _, root = finished
    analysis = tmp_path / "analysis.toml"
    analysis.write_text(text)
    assert main(["reanalyse", str(root), "--out", str(tmp_path / "c"), "--config", str(analysis)]) == 2
    assert "must hold an [analysis] section" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()
