"""Memory estimates and writable places, checked before anything runs (privgame/engine/resources.py)."""

from __future__ import annotations

import tempfile

import pytest

from privgame.core.outputs import output_directory_problem, output_file_problem
from privgame.engine.config import ConfigError, parse_config
from privgame.engine.resources import format_bytes, memory_problem, physical_memory, trial_bytes
from tests.conftest import config_text


def _sections(**overrides):
    import tomllib

    return tomllib.loads(config_text(overrides))


def test_format_bytes():
    assert format_bytes(512) == "512 B"
    assert format_bytes(1536) == "1.5 KiB"
    assert format_bytes(8 * 1024**4) == "8.0 TiB"


def test_physical_memory_is_known_here():
    memory = physical_memory()
    assert memory is not None and memory > 2**28


def test_one_run_estimate_grows_with_m():
    small = parse_config(_sections(game={"m": 1000, "k_pos": 10, "k_neg": 10}))
    large = parse_config(_sections(game={"m": 100_000, "k_pos": 10, "k_neg": 10}))
    assert trial_bytes(large.grid[0]) == pytest.approx(100 * trial_bytes(small.grid[0]))
    assert 64 * 1000 <= trial_bytes(small.grid[0]) <= 1024 * 1000


def test_a_trial_that_cannot_fit_is_refused_naming_the_size():
    with pytest.raises(ConfigError, match=r"grid point 0 \(one-run .*game\.m = 1,000,000,000,000.* TiB of memory"):
        parse_config(_sections(game={"m": 10**12}))


def test_too_many_trials_are_refused_before_they_are_planned():
    with pytest.raises(ConfigError, match=r"2,000,000,000,000 trials need about .* PiB .*repetitions"):
        parse_config(_sections(experiment={"repetitions": 10**12}))


def test_memory_problem_against_a_given_limit():
    config = parse_config(_sections())
    need = trial_bytes(config.grid[0])
    assert memory_problem(config.grid, config.n_trials, available=10 * need + 10**6) is None
    assert "one trial of grid point 0" in memory_problem(config.grid, config.n_trials, available=need - 1)
    assert "trials need about" in memory_problem(config.grid, config.n_trials, available=100)


def test_multi_run_estimate_counts_its_runs():
    sections = {
        "experiment": {"name": "x", "seed": 1, "repetitions": 1},
        "game": {"name": "multi-run", "runs": 1000},
        "mechanism": {"name": "gaussian", "sigma": 1.0},
        "attack": {"name": "identity"},
    }
    assert trial_bytes(parse_config(sections).grid[0]) >= 1000 * 64
    with pytest.raises(ConfigError, match=r"multi-run with gaussian, game\.runs = 1,000,000,000,000"):
        parse_config({**sections, "game": {"name": "multi-run", "runs": 10**12}})


def test_record_game_estimate_counts_the_shadow_features():
    base = {
        "experiment": {"name": "x", "seed": 1},
        "game": {
            "name": "record-traditional",
            "dataset_size": 100,
            "auxiliary_size": 200,
            "evaluation_size": 200,
            "rounds": 10,
            "vulnerable_targets": 0,
            "random_targets": 1,
        },
        "mechanism": {"name": "synthpop"},
        "attack": {"name": "tapas-queries", "n_shadows": 100},
    }
    config = parse_config(base)
    # 100 shadows + 10 rounds, 2^15 − 1 all-subset queries of Adult's 15 columns, 12 bytes each
    assert trial_bytes(config.grid[0]) >= 110 * 32767 * 12
    huge = {**base, "attack": {"name": "tapas-queries", "n_shadows": 1_000_000}}
    with pytest.raises(ConfigError, match=r"attack\.n_shadows = 1,000,000\) needs about .* GiB"):
        parse_config(huge)


def test_dpsgd_whitebox_with_a_weight_per_canary_is_refused():
    pytest.importorskip("torch")
    sections = {
        "experiment": {"name": "x", "seed": 1, "repetitions": 1},
        "game": {"name": "one-run", "m": 10**9, "k_pos": 10, "k_neg": 10, "data": "digits"},
        "mechanism": {"name": "dpsgd-whitebox", "noise_multiplier": 1.0, "sampling_rate": 0.1, "steps": 10},
        "attack": {"name": "identity"},
    }
    with pytest.raises(ConfigError, match=r"dpsgd-whitebox, game\.m = 1,000,000,000.* TiB.*canary_layout = .separate"):
        parse_config(sections)
    # the separate layout needs a few hundred bytes per canary: 10⁹ still does not fit (no hint then), 10⁷ does
    separate = {**sections, "mechanism": {**sections["mechanism"], "canary_layout": "separate"}}
    with pytest.raises(ConfigError, match=r"GiB of memory, more than this machine's .*; lower the sizes\.$"):
        parse_config(separate)
    fits = {**separate, "game": {**sections["game"], "m": 10**7}}
    assert trial_bytes(parse_config(fits).grid[0]) < 10 * 2**30


def test_dpsgd_memory_counts_the_games_rows_and_canaries():
    pytest.importorskip("torch")
    sections = {
        "experiment": {"name": "x", "seed": 1, "repetitions": 1},
        "game": {"name": "one-run", "m": 1000, "k_pos": 10, "k_neg": 10, "data": "digits", "train_rows": 100},
        "mechanism": {"name": "dpsgd-whitebox", "noise_multiplier": 1.0, "sampling_rate": 0.1, "steps": 10},
        "attack": {"name": "identity"},
    }
    small = trial_bytes(parse_config(sections).grid[0])
    more_rows = {**sections, "game": {**sections["game"], "train_rows": 1797}}
    assert trial_bytes(parse_config(more_rows).grid[0]) > 3 * small  # the padded rows grow with them
    blackbox = {
        **sections,
        "game": {**sections["game"], "m": 10**9, "canary": "ood"},
        "mechanism": {"name": "dpsgd-blackbox", "noise_multiplier": 1.0, "sampling_rate": 0.1, "steps": 10},
        "attack": {"name": "negative-loss"},
    }
    with pytest.raises(ConfigError, match=r"dpsgd-blackbox, game\.m = 1,000,000,000.* (GiB|TiB)"):
        parse_config(blackbox)
    multi = {
        **sections,
        "game": {"name": "multi-run", "runs": 10**6, "data": "digits", "train_rows": 1000},
    }
    with pytest.raises(ConfigError, match=r"game\.runs = 1,000,000.* (GiB|TiB)"):
        parse_config(multi)


# -- writable places --------------------------------------------------------------------------------------------
def test_writable_directory(tmp_path):
    assert output_directory_problem(tmp_path / "new" / "deeper") is None
    assert not (tmp_path / "new").exists()  # nothing is created
    assert output_directory_problem(tmp_path) is None


def test_writable_directory_refusals(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert output_directory_problem("") == "--out is empty; give a directory"
    assert "is a file, not a directory" in output_directory_problem(afile)
    assert "'afile' is a file" in output_directory_problem(afile / "x" / "y").replace(str(tmp_path) + "/", "")
    link = tmp_path / "broken"
    link.symlink_to(tmp_path / "nowhere")
    assert "broken symbolic link" in output_directory_problem(link / "x")


def test_unwritable_directory_is_found_by_probing(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    problem = output_directory_problem(tmp_path / "out", what="out")
    assert problem is not None and "cannot be written" in problem and "Permission denied" in problem
    assert not (tmp_path / "out").exists()


def test_output_file_problem(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("x")
    assert output_file_problem(tmp_path / "t.csv", what="--output") is None
    assert "is empty" in output_file_problem("", what="--output")
    assert "is a directory" in output_file_problem(tmp_path / "d", what="--output")
    assert "does not exist" in output_file_problem(tmp_path / "no" / "t.csv", what="--output")
    assert output_file_problem(tmp_path / "no" / "t.csv", what="--out", create_parents=True) is None
    assert "is a file, not a folder" in output_file_problem(tmp_path / "f" / "t.csv", what="--output")
    assert "is a file, not a folder" in output_file_problem(
        tmp_path / "f" / "a" / "t.csv", what="--out", create_parents=True
    )
