"""Config validation: every bad input fails before any trial runs, with one line naming field, value and rule."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from privgame.engine.cli import main
from privgame.engine.config import ConfigError, load_config, parse_config
from privgame.engine.registry import ATTACKS, GAMES, MECHANISMS


def _names(registry) -> str:
    """The registered names as the "unknown name" error lists them (the registry grows: never a hand-made list)."""
    return re.escape(", ".join(sorted(registry.names())))


BAD_INPUTS = [
    ({"game": {"name": "two-run"}}, rf"\[game\] game name must be one of {_names(GAMES)}, got 'two-run'"),
    ({"mechanism": {"name": "laplace"}}, rf"mechanism name must be one of {_names(MECHANISMS)}, got 'laplace'"),
    ({"attack": {"name": "shokri"}}, rf"\[attack\] attack name must be one of {_names(ATTACKS)}, got 'shokri'"),
    ({"mechanism": {"epsilon": "one"}}, r"\[mechanism\] randomized-response: epsilon must be a real number, got 'one'"),
    ({"mechanism": {"epsilon": -1.0}}, r"epsilon must be >= 0, got -1.0"),
    ({"mechanism": {"epsilon": [1.0, -0.5]}}, r"epsilon must be >= 0, got -0.5"),
    ({"mechanism": {"epsilon": float("nan")}}, r"epsilon must be >= 0, got nan"),
    ({"analysis": {"confidence": 1.5}}, r"\[analysis\] confidence must be in \(0, 1\), got 1.5"),
    ({"analysis": {"confidence": 0.0}}, r"confidence must be in \(0, 1\), got 0.0"),
    ({"analysis": {"confidence": float("nan")}}, r"confidence must be in \(0, 1\), got nan"),
    ({"analysis": {"delta": 1.0}}, r"delta must be in \[0, 1\), got 1.0"),
    ({"analysis": {"delta": -1e-5}}, r"delta must be in \[0, 1\), got -1e-05"),
    ({"game": {"m": 0}}, r"\[game\] one-run: m must be an integer >= 1, got 0"),
    ({"game": {"m": 2000.0}}, r"m must be an integer, got 2000.0"),
    ({"game": {"k_pos": 1500, "k_neg": 1000}}, r"k_pos \+ k_neg must be between 1 and m = 2000, got 1500 \+ 1000"),
    ({"game": {"k_pos": -1}}, r"k_pos must be an integer >= 0, got -1"),
    ({"game": {"kpos": 5}}, r"one-run has no parameter 'kpos'; its parameters: m, k_pos, k_neg"),
    ({"experiment": {"seed": -3}}, r"\[experiment\] seed must be an integer >= 0, got -3"),
    ({"experiment": {"repetitions": 0}}, r"repetitions must be an integer >= 1, got 0"),
    ({"experiment": {"colour": "red"}}, r"\[experiment\] unknown key 'colour'"),
    ({"analysis": {"alpha": 0.1}}, r"\[analysis\] unknown key 'alpha'; allowed keys: confidence, delta"),
    ({"analysis": {"threshold": [0.5, 0.6]}}, r"\[analysis\] threshold cannot be swept"),
    ({"mechanism": {"epsilon": []}}, r"\[mechanism\] epsilon is an empty list"),
    ({"extra": {"x": 1}}, r"unknown section \[extra\]"),
    ({"mechanism": {"name": 3}}, r"\[mechanism\] name must be a string, got 3"),
]

MISSING = [
    (("experiment.seed",), r"\[experiment\] seed is missing"),
    (("mechanism.epsilon",), r"randomized-response needs the parameter 'epsilon'"),
    (("game.name",), rf"\[game\] name is missing; registered games: {_names(GAMES)}"),
    (("attack",), r"missing section \[attack\]"),
]


@pytest.mark.parametrize(("overrides", "message"), BAD_INPUTS)
def test_bad_config_raises_config_error(write_config, overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_config(write_config(overrides))


@pytest.mark.parametrize(("drop", "message"), MISSING)
def test_missing_field_raises_config_error(write_config, drop, message):
    with pytest.raises(ConfigError, match=message):
        load_config(write_config(drop=drop))


@pytest.mark.parametrize(("overrides", "message"), BAD_INPUTS[:8] + BAD_INPUTS[12:16])
def test_cli_bad_config_one_line_exit_2_no_trial(write_config, tmp_path, capsys, overrides, message):
    out = tmp_path / "out"
    code = main(["run", str(write_config(overrides)), "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("privgame: error: ")
    assert "Traceback" not in err
    assert pytest.importorskip("re").search(message, err)
    assert not out.exists()  # failed before any trial ran


def test_cli_exit_code_in_a_real_process(write_config, tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "privgame.engine.cli",
            "run",
            str(write_config({"mechanism": {"epsilon": -1.0}})),
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "privgame: error: [mechanism] randomized-response: epsilon must be >= 0, got -1.0."
    ]


def test_cli_missing_file_and_bad_toml(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.toml"), "--out", str(tmp_path / "o")]) == 2
    assert "does not exist" in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text("[experiment\nseed = 1\n")
    assert main(["run", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "invalid TOML" in capsys.readouterr().err


def test_cli_bad_n_jobs(write_config, tmp_path, capsys):
    assert main(["run", str(write_config()), "--out", str(tmp_path / "o"), "--n-jobs", "0"]) == 2
    assert "--n-jobs must be a positive integer or -1, got 0" in capsys.readouterr().err


def test_cli_usage_error_exit_2(capsys):
    assert_exit = pytest.raises(SystemExit)
    with assert_exit as info:
        main(["run"])
    assert info.value.code == 2
    assert capsys.readouterr().err.startswith("privgame: error:")


def test_sweep_is_cartesian_product_in_file_order(write_config):
    config = load_config(write_config({"game": {"m": [1000, 2000]}, "mechanism": {"epsilon": [0.5, 1, 2]}}))
    assert config.swept == ("game.m", "mechanism.epsilon")
    assert [dict(p.params) for p in config.grid] == [
        {"game.m": m, "mechanism.epsilon": e} for m in (1000, 2000) for e in (0.5, 1.0, 2.0)
    ]
    assert all(isinstance(p.params["mechanism.epsilon"], float) for p in config.grid)  # normalised by the component
    assert config.n_trials == 6 * 3


def test_fixed_parameters_and_defaults(write_config):
    config = load_config(write_config({"mechanism": {"epsilon": 2}}, drop=("analysis", "experiment.repetitions")))
    assert config.swept == ()
    assert len(config.grid) == 1 and config.grid[0].mechanism.epsilon == 2.0
    assert config.repetitions == 1
    assert config.analysis.confidence == 0.95 and config.analysis.delta == 0.0


def test_name_defaults_to_file_stem(write_config):
    assert load_config(write_config(drop=("experiment.name",), name="my_study")).name == "my_study"


def test_hash_ignores_key_order_but_not_values(write_config):
    a = load_config(write_config())
    b = parse_config({k: dict(reversed(list(v.items()))) for k, v in dict(a.raw).items()})
    c = load_config(write_config({"experiment": {"seed": 8}}))
    assert a.hash == b.hash != c.hash


PLUGIN = '''
from dataclasses import dataclass
from typing import ClassVar
from privgame.engine.registry import ATTACKS, GAMES, MECHANISMS
from privgame.mechanisms import Mechanism

@MECHANISMS.register
@dataclass(frozen=True, slots=True)
class TableSynth(Mechanism):
    """A stand-in mechanism that takes a table."""
    name: ClassVar[str] = "test-table-synth"
    input_kind: ClassVar[str] = "table"
    release_kind: ClassVar[str] = "table"
    def release(self, data, *, rng):
        return data
    def privacy_claim(self):
        return None
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    (tmp_path / "privgame_test_plugin.py").write_text(textwrap.dedent(PLUGIN))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "privgame_test_plugin"
    sys.modules.pop("privgame_test_plugin", None)
    if "test-table-synth" in MECHANISMS:
        MECHANISMS.unregister("test-table-synth")


def test_plugin_registers_and_incompatible_combination_fails(write_config, plugin, tmp_path, capsys):
    path = write_config({"experiment": {"plugins": [plugin]}, "mechanism": {"name": "test-table-synth", "epsilon": 1}})
    with pytest.raises(ConfigError, match="test-table-synth has no parameter 'epsilon'"):
        load_config(path)
    path = write_config({"experiment": {"plugins": [plugin]}}, drop=("mechanism.epsilon",))
    path.write_text(path.read_text().replace('"randomized-response"', '"test-table-synth"'))
    out = tmp_path / "out"
    assert main(["run", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    needs = "incompatible components: game 'one-run' needs a mechanism that takes ['canary-bits', 'canary-dataset']"
    assert needs in err
    assert "mechanism 'test-table-synth' takes 'table'" in err
    assert not out.exists()


def test_unimportable_plugin(write_config):
    with pytest.raises(ConfigError, match=r"plugins: cannot import 'no_such_module_xyz'"):
        load_config(write_config({"experiment": {"plugins": ["no_such_module_xyz"]}}))


def test_quickstart_config_is_valid():
    config = load_config(Path(__file__).parents[2] / "experiments" / "quickstart.toml")
    assert config.n_trials == 100 and config.swept == ("mechanism.epsilon",)
    assert config.grid[0].game.m == 10000


def test_dpsgd_data_parameters_are_the_games():
    """train_rows, canary and canary_seed moved from [mechanism] to [game] (the auditor's choices): an old config
    fails in one line naming the key, and a canary-dataset mechanism without the game's data is refused."""
    pytest.importorskip("torch")
    base = {
        "experiment": {"name": "x", "seed": 1, "repetitions": 1},
        "game": {"name": "one-run", "m": 100, "k_pos": 5, "k_neg": 5},
        "mechanism": {"name": "dpsgd-blackbox", "noise_multiplier": 1.0, "train_rows": 100, "canary": "ood"},
        "attack": {"name": "negative-loss"},
    }
    with pytest.raises(ConfigError, match=r"\[mechanism\] dpsgd-blackbox has no parameter 'train_rows'"):
        parse_config(base)
    base["mechanism"] = {"name": "dpsgd-blackbox", "noise_multiplier": 1.0}
    with pytest.raises(ConfigError, match=r"incompatible components: mechanism 'dpsgd-blackbox' trains on the game's"):
        parse_config(base)
    base["game"] = {**base["game"], "data": "digits", "train_rows": 100, "canary": "ood"}
    point = parse_config(base).grid[0]
    game = point.game
    assert (game.data, game.train_rows, game.canary, game.canary_seed) == ("digits", 100, "ood", 0)
    base["game"] = {**base["game"], "canary": "mislabel", "m": 1800}
    with pytest.raises(ConfigError, match=r"\[game\] one-run: m must be at most 1,697 mislabelled canaries"):
        parse_config({**base, "game": {**base["game"], "k_pos": 5}})
