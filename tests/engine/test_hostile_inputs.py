"""The hostile-input sweep of the record, LiRA and PANORAMIA games, nested components, analysis sweeps, reanalyse,
``run --repetitions`` and ``report --curves/--plot`` (issue 22): each ends in one line naming the field and the
rule, exit status 2, and nothing written.

Config cases go through :func:`privgame.engine.config.parse_config` (the rule and its wording) and, for a sample of each
group, through ``privgame run`` in-process (one line, status 2, no results directory).  Every config here is refused
before any trial, so the file runs in seconds.
"""

from __future__ import annotations

import copy
import math
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from privgame.engine.cli import main
from privgame.engine.config import MAX_NESTING, ConfigError, parse_config
from privgame.engine.registry import MECHANISMS
from tests.conftest import TINY_MODEL_SEEDED

RECORD: dict[str, Any] = {
    "experiment": {"name": "record_sweep", "seed": 2025},
    "game": {
        "name": "record",
        "data": "adult",
        "dataset_size": 1000,
        "auxiliary_size": 10000,
        "evaluation_size": 10000,
        "rounds": 50,
        "vulnerable_targets": 2,
        "random_targets": 1,
    },
    "mechanism": {"name": "synthpop"},
    "attack": {"name": "tapas-queries", "subsets": "all", "n_shadows": 100},
}
LIRA: dict[str, Any] = {
    "experiment": {"name": "lira_sweep", "seed": 2112, "repetitions": 1},
    "game": {"name": "lira", "data": "adult", "pool_size": 2000, "n_models": 16, "n_boot": 200},
    "mechanism": {"name": "mlp", "hidden": [64], "epochs": 30, "batch_size": 64},
    "attack": {"name": "lira", "online": True},
}
PANORAMIA: dict[str, Any] = {
    "experiment": {"name": "panoramia_sweep", "seed": 2026, "repetitions": 2},
    "game": {
        "name": "panoramia",
        "data": "adult",
        "train_size": 3000,
        "generator_rows": 1000,
        "m": 1000,
        "helper_rows": 1000,
        "o1_candidates": 1000,
        "o1_guesses": 100,
        "generator": {"name": "synthpop"},
        "helper": {"name": "mlp", "hidden": [64], "epochs": 20},
    },
    "mechanism": {"name": "mlp", "hidden": [128], "epochs": 60, "batch_size": 128},
    "attack": {"name": "classifier-mia", "signal": "loss", "classifier": {"name": "gradient-boosted-trees"}},
    "analysis": {"confidence": 0.95, "delta": 1e-5},
}
BASES = {"record": RECORD, "lira": LIRA, "panoramia": PANORAMIA}
NAN = float("nan")
BIG = 10**12


def _config(base: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """``base`` with each dotted ``"section.key..."`` of ``overrides`` set."""
    config = copy.deepcopy(BASES[base])
    for path, value in overrides.items():
        *heads, last = path.split(".")
        table = config
        for head in heads:
            table = table.setdefault(head, {})
        table[last] = value
    return config


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _write(path: Path, config: dict[str, Any]) -> Path:
    lines = []
    for section, table in config.items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {_toml_value(v)}" for k, v in table.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


# -- sizes of the record, LiRA and PANORAMIA games: zero, negative, huge, NaN, a string, a bool, too large ------
SIZES = [
    ("record", {"game.rounds": 0}, r"\[game\] record: rounds must be an integer in \[2, 100000\], got 0\."),
    ("record", {"game.rounds": -1}, r"rounds must be an integer in \[2, 100000\], got -1\."),
    ("record", {"game.rounds": BIG}, r"rounds must be an integer in \[2, 100000\], got 1000000000000\."),
    ("record", {"game.rounds": NAN}, r"rounds must be an integer, got nan\."),
    ("record", {"game.rounds": "ten"}, r"rounds must be an integer, got 'ten'\."),
    ("record", {"game.rounds": True}, r"rounds must be an integer, got True\."),
    ("record", {"game.rounds": 2.5}, r"rounds must be an integer, got 2\.5\."),
    ("record", {"game.dataset_size": 0}, r"dataset_size must be an integer in \[2, 48842\], got 0\."),
    # the size larger than the data set names itself (it named auxiliary_size before)
    ("record", {"game.dataset_size": BIG}, r"dataset_size must be an integer in \[2, 48842\], got 1000000000000\."),
    ("record", {"game.dataset_size": NAN}, r"dataset_size must be an integer, got nan\."),
    ("record", {"game.dataset_size": 20000}, r"auxiliary_size must be an integer >= 20000, got 10000\."),
    (
        "record",
        {"game.auxiliary_size": BIG},
        r"dataset_size \+ auxiliary_size \+ evaluation_size must be at most the 48,842 records of 'adult'",
    ),
    ("record", {"game.evaluation_size": "ten"}, r"evaluation_size must be an integer, got 'ten'\."),
    ("record", {"game.evaluation_size": -1}, r"evaluation_size must be an integer >= 1000, got -1\."),
    ("record", {"game.vulnerable_targets": -1}, r"vulnerable_targets must be an integer >= 0, got -1\."),
    (
        "record",
        {"game.vulnerable_targets": 0, "game.random_targets": 0},
        r"vulnerable_targets \+ random_targets must be between 1 and dataset_size = 1000, got 0 \+ 0\.",
    ),
    (
        "record",
        {"game.random_targets": BIG},
        r"vulnerable_targets \+ random_targets must be between 1 and dataset_size = 1000, got 2 \+ 1000000000000\.",
    ),
    ("record", {"game.random_targets": True}, r"random_targets must be an integer, got True\."),
    ("record", {"game.n_boot": 0}, r"n_boot must be an integer in \[10, 100000\], got 0\."),
    ("record", {"game.targets": [BIG]}, r"targets must be record ids of 'adult' \(0 to 48841\), got 1000000000000\."),
    ("record", {"game.targets": [1, 1]}, r"targets must be distinct record ids, got 1 more than once\."),
    ("record", {"game.targets": [-1]}, r"targets\[0\] must be an integer >= 0, got -1\."),
    ("record", {"game.targets": list(range(1001))}, r"targets must be at most dataset_size = 1000 records, got 1001\."),
    ("record", {"game.columns": ["nope"]}, r"columns must name columns of the 'adult' data \(age, .*\), got 'nope'\."),
    ("record", {"attack.n_shadows": 0}, r"\[attack\] tapas-queries: n_shadows must be an integer in \[2, 1000000\]"),
    ("record", {"attack.n_shadows": BIG}, r"n_shadows must be an integer in \[2, 1000000\], got 1000000000000\."),
    ("record", {"attack.n_shadows": NAN}, r"n_shadows must be an integer, got nan\."),
    ("lira", {"game.n_models": 0}, r"\[game\] lira: n_models must be an integer in \[4, 4096\], got 0\."),
    ("lira", {"game.n_models": 5}, r"n_models must be even \(models come in pairs on complementary halves\), got 5\."),
    ("lira", {"game.n_models": BIG}, r"n_models must be an integer in \[4, 4096\], got 1000000000000\."),
    ("lira", {"game.n_models": NAN}, r"n_models must be an integer, got nan\."),
    ("lira", {"game.n_models": "ten"}, r"n_models must be an integer, got 'ten'\."),
    ("lira", {"game.n_models": True}, r"n_models must be an integer, got True\."),
    ("lira", {"game.n_models": 4}, r"n_models must be at least 6 for this lira attack"),
    ("lira", {"game.pool_size": 48843}, r"pool_size must be an integer in \[4, 48842\], got 48843\."),
    ("lira", {"game.pool_size": -1}, r"pool_size must be an integer in \[4, 48842\], got -1\."),
    ("lira", {"game.pool_size": 5}, r"pool_size must be even \(the models train on complementary halves\), got 5\."),
    ("lira", {"game.batch": 0}, r"batch must be an integer in \[1, 4096\], got 0\."),
    ("lira", {"game.n_boot": -1}, r"n_boot must be an integer in \[0, 100000\], got -1\."),
    ("lira", {"game.fprs": [0.0]}, r"fprs\[0\] must be in \(0, 1\), got 0\.0\."),
    ("lira", {"game.fprs": [NAN]}, r"fprs\[0\] must be in \(0, 1\), got nan\."),
    ("lira", {"game.fprs": []}, r"\[game\] lira: fprs must be a non-empty list of false-positive rates, got \[\]\."),
    ("lira", {"mechanism.batch_size": 0}, r"\[mechanism\] mlp: batch_size must be an integer >= 1, got 0\."),
    ("lira", {"mechanism.hidden": [BIG]}, r"hidden\[0\] must be an integer in \[1, 65536\], got 1000000000000\."),
    ("panoramia", {"game.m": 0}, r"\[game\] panoramia: m must be an integer in \[2, 48842\], got 0\."),
    ("panoramia", {"game.m": BIG}, r"m must be an integer in \[2, 48842\], got 1000000000000\."),
    ("panoramia", {"game.m": NAN}, r"m must be an integer, got nan\."),
    ("panoramia", {"game.m": True}, r"m must be an integer, got True\."),
    ("panoramia", {"game.m": 2001}, r"m must be at most train_size − generator_rows = 2000"),
    ("panoramia", {"game.train_size": BIG}, r"train_size must be an integer in \[2, 48842\], got 1000000000000\."),
    ("panoramia", {"game.train_size": 48842}, r"the adult population has 48,842 records: train_size \+ o1_candidates"),
    ("panoramia", {"game.generator_rows": "ten"}, r"generator_rows must be an integer, got 'ten'\."),
    ("panoramia", {"game.helper_rows": -1}, r"helper_rows must be an integer >= 2, got -1\."),
    ("panoramia", {"game.helper_rows": BIG}, r"needs about .* of memory, more than this machine's"),
    ("panoramia", {"game.test_fraction": 1.0}, r"test_fraction must be in \(0, 1\), got 1\.0\."),
    ("panoramia", {"game.test_fraction": "half"}, r"test_fraction must be a real number, got 'half'\."),
    ("panoramia", {"game.thresholds": 0}, r"thresholds must be an integer in \[1, 100000\], got 0\."),
    ("panoramia", {"game.o1_candidates": -1}, r"o1_candidates must be an integer in \[0, 48842\], got -1\."),
    ("panoramia", {"game.o1_guesses": 501}, r"o1_guesses must be an integer in \[1, 500\], got 501\."),
    # without O(1) (o1_candidates = 0) o1_guesses was not checked at all
    ("panoramia", {"game.o1_candidates": 0, "game.o1_guesses": "ten"}, r"o1_guesses must be an integer, got 'ten'\."),
    ("panoramia", {"game.o1_candidates": 0, "game.o1_guesses": -5}, r"o1_guesses must be an integer >= 1, got -5\."),
]

# -- nested components of the wrong kind, recursive, or with unknown keys ---------------------------------------
_MECHANISM_NAMES = ", ".join(sorted(MECHANISMS.names()))
NESTED = [
    (
        "panoramia",
        {"game.generator": {"name": "classifier-mia"}},
        r"\[game\.generator\] name must be a mechanism \(one of .*synthpop\), got 'classifier-mia', a registered "
        r"attack\.",
    ),
    (
        "panoramia",
        {"game.generator": {"name": "panoramia"}},
        r"\[game\.generator\] name must be a mechanism \(one of .*\), got 'panoramia', a registered game\.",
    ),
    (
        "panoramia",
        {"game.generator": "record"},
        r"\[game\.generator\] name must be a mechanism .* got 'record', a registered game\.",
    ),
    (
        "panoramia",
        {"game.generator": {"name": "mlp"}},
        r"generator must be a table generator \(synthpop, baynet, privbayes, gaussian-mixture\), got 'mlp'\.",
    ),
    ("panoramia", {"game.helper": {"name": "synthpop"}}, r"helper must be a trained model, got 'synthpop'\."),
    (
        "panoramia",
        {"game.helper": {"name": "lira"}},
        r"\[game\.helper\] name must be a mechanism .* got 'lira', a registered game and attack\.",
    ),
    (
        "panoramia",
        {"attack.classifier": {"name": "panoramia"}},
        r"\[attack\.classifier\] name must be a mechanism .* got 'panoramia', a registered game\.",
    ),
    (
        "panoramia",
        {"mechanism.name": "panoramia"},
        r"\[mechanism\] name must be a mechanism .* got 'panoramia', a registered game\.",
    ),
    (
        "panoramia",
        {"attack.name": "synthpop"},
        r"\[attack\] name must be an attack .* got 'synthpop', a registered mechanism\.",
    ),
    (
        "panoramia",
        {"game.generator": {"name": "synthpop", "colour": 1}},
        r"\[game\.generator\] synthpop has no parameter 'colour'; its parameters: n_rows, ",
    ),
    (
        "panoramia",
        {"game.generator": {"name": "synthpop", "generator": {"name": "synthpop"}}},  # nesting itself
        r"\[game\.generator\] synthpop has no parameter 'generator'",
    ),
    (
        "panoramia",
        {"game.helper": {"name": "mlp", "helper": {"name": "mlp"}}},
        r"\[game\.helper\] mlp has no parameter 'helper'",
    ),
    (
        "panoramia",
        {"attack.classifier": {"name": "gradient-boosted-trees", "depth": 3}},
        r"\[attack\.classifier\] gradient-boosted-trees has no parameter 'depth'",
    ),
    (
        "panoramia",
        {"game.generator": {"nam": "synthpop"}},
        rf"\[game\.generator\] name is missing; registered mechanisms: {_MECHANISM_NAMES}\.",
    ),
    ("panoramia", {"game.generator": {"name": 5}}, r"\[game\.generator\] name must be a string, got 5\."),
    ("panoramia", {"game.generator": 5}, r"\[game\] generator must be a table naming a mechanism"),
    ("panoramia", {"game.generator": {"name": "synthpop", "minbucket": -1}}, r"minbucket must be an integer >= 1"),
    ("panoramia", {"game.colour": "red"}, r"\[game\] panoramia has no parameter 'colour'"),
]

# -- [analysis] lists -------------------------------------------------------------------------------------------
ANALYSIS = [
    (base, {f"analysis.{key}": values}, message)
    for base in ("record", "lira", "panoramia")
    for key, values, message in [
        (
            "confidence",
            [0.0],
            r"\[analysis\] confidence must be in \(0, 1\), got 0\.0 \(in the sweep, at confidence = 0\.0\)\.$",
        ),
        (
            "confidence",
            [0.9, 1.0],
            r"confidence must be in \(0, 1\), got 1\.0 \(in the sweep, at confidence = 1\.0\)\.$",
        ),
        ("confidence", [1.5], r"confidence must be in \(0, 1\), got 1\.5 \(in the sweep, at confidence = 1\.5\)\.$"),
        ("confidence", [NAN], r"confidence must be in \(0, 1\), got nan \(in the sweep, at confidence = nan\)\.$"),
        ("confidence", [], r"\[analysis\] confidence is an empty list; a sweep needs at least one value\."),
        ("confidence", [0.9, 0.9], r"\[analysis\] confidence lists the value 0\.9 twice; each swept value once\."),
        (
            "delta",
            [-1e-5],
            r"\[analysis\] delta must be in \[0, 1\), got -1e-05 \(in the sweep, at delta = -1e-05\)\.$",
        ),
        ("delta", [0.0, 1.0], r"delta must be in \[0, 1\), got 1\.0 \(in the sweep, at delta = 1\.0\)\.$"),
        ("delta", [NAN], r"delta must be in \[0, 1\), got nan \(in the sweep, at delta = nan\)\.$"),
        ("delta", [], r"\[analysis\] delta is an empty list; a sweep needs at least one value\."),
        ("confidence", 1.0, r"\[analysis\] confidence must be in \(0, 1\), got 1\.0\.$"),
    ]
]
CASES = SIZES + NESTED + ANALYSIS


@pytest.mark.parametrize(("base", "overrides", "message"), CASES)
def test_a_hostile_config_is_refused_naming_the_field_and_the_rule(base, overrides, message):
    with pytest.raises(ConfigError, match=message):
        parse_config(_config(base, overrides))


# the CLI for a sample of every group: one line, status 2, no results directory
CLI_CASES = SIZES[::6] + NESTED[::3] + ANALYSIS[::5]


@pytest.mark.parametrize(("base", "overrides", "message"), CLI_CASES)
def test_a_hostile_config_through_the_command_is_one_line_and_leaves_nothing(
    tmp_path, capsys, base, overrides, message
):
    config = _write(tmp_path / "c.toml", _config(base, overrides))
    out = tmp_path / "out"
    assert main(["run", str(config), "--out", str(out), "--no-cache"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("privgame: error: ")
    assert pytest.importorskip("re").search(message, line)
    assert not out.exists()


# -- nesting without end ----------------------------------------------------------------------------------------
NESTING_PLUGIN = '''
from dataclasses import dataclass, field
from typing import ClassVar
from privgame.engine.registry import MECHANISMS
from privgame.mechanisms import Mechanism

@MECHANISMS.register
@dataclass(frozen=True, slots=True)
class Nest(Mechanism):
    """A mechanism that nests a mechanism (a parameter typed Mechanism)."""
    name: ClassVar[str] = "pg-nest"
    input_kind: ClassVar[str] = "canary-bits"
    release_kind: ClassVar[str] = "per-canary-values"
    inner: Mechanism | None = None
    def release(self, data, *, rng):
        return data
    def privacy_claim(self):
        return None

@MECHANISMS.register
@dataclass(frozen=True, slots=True)
class SelfNest(Mechanism):
    """A mechanism whose default builds another of itself, without end."""
    name: ClassVar[str] = "pg-self-nest"
    input_kind: ClassVar[str] = "canary-bits"
    release_kind: ClassVar[str] = "per-canary-values"
    inner: Mechanism = field(default_factory=lambda: SelfNest())
    def release(self, data, *, rng):
        return data
    def privacy_claim(self):
        return None
'''
ONE_RUN = """[experiment]
name = "nest"
seed = 1
plugins = ["pg_nesting_plugin"]
[game]
name = "one-run"
m = 100
k_pos = 5
k_neg = 5
[attack]
name = "identity"
"""


@pytest.fixture
def nesting_plugin(tmp_path, monkeypatch):
    (tmp_path / "pg_nesting_plugin.py").write_text(textwrap.dedent(NESTING_PLUGIN))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("pg_nesting_plugin", None)
    for name in ("pg-nest", "pg-self-nest"):
        if name in MECHANISMS:
            MECHANISMS.unregister(name)


@pytest.mark.parametrize("depth", [MAX_NESTING, 500])
def test_components_nested_without_end_are_refused_in_one_line(tmp_path, capsys, nesting_plugin, depth):
    """[mechanism.inner.inner....] a plugin's component nesting itself 500 levels deep ended in an unexpected
    RecursionError (status 1); a few levels still work."""
    head, lines = "mechanism", ["[mechanism]", 'name = "pg-nest"']
    for _ in range(depth):
        head += ".inner"
        lines += [f"[{head}]", 'name = "pg-nest"']
    config = tmp_path / "nest.toml"
    config.write_text(ONE_RUN + "\n".join(lines) + "\n")
    out = tmp_path / "out"
    assert main(["run", str(config), "--out", str(out), "--no-progress", "--no-cache"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert f"tables and lists must be nested at most {MAX_NESTING} levels deep, got more at mechanism.inner." in line
    assert not out.exists()


def test_nesting_up_to_the_limit_still_works(tmp_path, capsys, nesting_plugin):
    head, lines = "mechanism", ["[mechanism]", 'name = "pg-nest"']
    for _ in range(MAX_NESTING - 1):  # [mechanism] is level 1
        head += ".inner"
        lines += [f"[{head}]", 'name = "pg-nest"']
    config = tmp_path / "nest.toml"
    config.write_text(ONE_RUN + "\n".join(lines) + "\n")
    assert main(["run", str(config), "--out", str(tmp_path / "out"), "--no-progress", "--no-cache"]) == 0


def test_a_component_whose_default_nests_itself_is_one_line(tmp_path, capsys, nesting_plugin):
    config = tmp_path / "self.toml"
    config.write_text(ONE_RUN + '[mechanism]\nname = "pg-self-nest"\n')
    assert main(["run", str(config), "--out", str(tmp_path / "out"), "--no-progress", "--no-cache"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "[mechanism] pg-self-nest must be buildable, got a component whose construction recurses" in line


@pytest.mark.parametrize(
    "value", ["[" * 5000 + "1" + "]" * 5000, "{a = " * 5000 + "1" + "}" * 5000], ids=["array", "inline-table"]
)
def test_values_nested_thousands_deep_are_one_line(tmp_path, capsys, value):
    """TOML's parser recurses into nested arrays and inline tables: a RecursionError (status 1) before."""
    config = tmp_path / "deep.toml"
    config.write_text(
        '[experiment]\nseed = 1\n[game]\nname = "one-run"\nm = 100\nk_pos = 5\nk_neg = 5\n[mechanism]\n'
        f'name = "randomized-response"\nepsilon = {value}\n[attack]\nname = "identity"\n'
    )
    out = tmp_path / "out"
    assert main(["run", str(config), "--out", str(out), "--no-cache"]) == 2
    assert f"tables and lists must be nested at most {MAX_NESTING} levels deep" in _one_line(capsys.readouterr().err)
    assert not out.exists()


def test_a_list_nested_forty_deep_is_refused_naming_where(tmp_path, capsys):
    config = {
        "experiment": {"seed": 1},
        "game": {"name": "one-run", "m": 100, "k_pos": 5, "k_neg": 5},
        "mechanism": {"name": "randomized-response", "epsilon": 1.0},
        "attack": {"name": "identity"},
    }
    deep: Any = 1.0
    for _ in range(40):
        deep = [deep]
    config["mechanism"]["epsilon"] = deep
    with pytest.raises(ConfigError, match=r"nested at most 32 levels deep, got more at mechanism\.epsilon\[0\]\[0\]"):
        parse_config(config)


# -- privgame run --repetitions on a game that fixes the trials -------------------------------------------------
def test_repetitions_option_against_a_record_games_targets_names_the_option(tmp_path, capsys):
    config = _write(tmp_path / "c.toml", RECORD)
    assert main(["run", str(config), "--out", str(tmp_path / "o"), "--repetitions", "5"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "--repetitions must be omitted or equal the game's 3 targets (one trial per target), got 5." in line
    with pytest.raises(ConfigError, match=r"^\[experiment\] repetitions must be omitted or equal the game's 3"):
        parse_config(_config("record", {"experiment.repetitions": 5}))


@pytest.mark.parametrize(("value", "message"), [("0", "got 0"), ("-1", "got -1"), ("-0", "got 0")])
def test_repetitions_option_zero_or_negative(tmp_path, capsys, write_config, value, message):
    out = tmp_path / "o"
    assert main(["run", str(write_config()), "--out", str(out), f"--repetitions={value}"]) == 2
    assert f"--repetitions must be an integer >= 1, {message}." in _one_line(capsys.readouterr().err)
    assert not out.exists()


# -- results directories: runs, reanalyses and reports ----------------------------------------------------------
@pytest.fixture
def finished(tmp_path, write_config):
    """A finished one-run experiment (6 trials), and the config file it came from."""
    config = write_config()
    out = tmp_path / "done"
    assert main(["run", str(config), "--out", str(out), "--no-progress", "--no-cache"]) == 0
    return out, config


def test_run_with_fewer_repetitions_than_stored(finished, capsys):
    out, config = finished
    assert main(["run", str(config), "--out", str(out), "--repetitions", "2", "--no-cache"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "holds this experiment with 3 repetitions per grid point; 2 would drop trials" in line


def test_run_into_another_experiments_directory_is_refused_before_any_work(finished, capsys, write_config):
    """With the progress bars on: the refusal came after the analytic ε's bar (a DP-SGD calibration's time)."""
    out, _ = finished
    other = write_config({"experiment": {"seed": 8}}, name="other")
    assert main(["run", str(other), "--out", str(out), "--no-cache"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "holds results of a different config (experiment.seed: 7 → 8); use --force to delete them" in line


def test_reanalyse_into_its_own_directory_a_file_or_a_folder_inside(finished, capsys, tmp_path):
    out, _ = finished
    manifest = (out / "manifest.json").read_bytes()
    afile = tmp_path / "afile"
    afile.write_text("x")
    cases = [
        (str(out), "--out must differ from the directory reanalysed"),
        (str(out / "."), "--out must differ from the directory reanalysed"),
        (str(afile), "is a file, not a directory"),
        (str(afile / "sub"), "cannot be a directory: "),
        (str(out / "again"), "--out must be outside the directory reanalysed"),  # was written into the source
        (str(out / "raw"), "--out must not be a results directory's own file"),  # the outputs rule, first
    ]
    for target, message in cases:
        assert main(["reanalyse", str(out), "--out", target, "--confidence", "0.9"]) == 2, target
        assert message in _one_line(capsys.readouterr().err), target
    assert not (out / "again").exists() and afile.read_text() == "x"
    assert (out / "manifest.json").read_bytes() == manifest


def test_reanalyse_into_another_experiments_directory_is_one_line_without_force_advice(finished, capsys, write_config):
    out, _ = finished
    other = out.parent / "other"
    assert main(["run", str(write_config({"experiment": {"seed": 8}}, name="o")), "--out", str(other)]) == 0
    capsys.readouterr()
    assert main(["reanalyse", str(out), "--out", str(other), "--confidence", "0.9"]) == 2
    line = _one_line(capsys.readouterr().err)  # no "reanalysing ..." announcement or progress bar before it
    assert "holds results of a different config" in line
    assert "choose another --out (a reanalysis deletes no results)" in line and "--force" not in line


@pytest.mark.parametrize(
    ("confidence", "message"),
    [("0", "got 0.0."), ("1", "got 1.0."), ("1.5", "got 1.5."), ("nan", "got nan.")],
)
def test_reanalyse_bad_confidence(finished, capsys, tmp_path, confidence, message):
    out, _ = finished
    target = tmp_path / "re"
    assert main(["reanalyse", str(out), "--out", str(target), "--confidence", confidence]) == 2
    assert f"[analysis] confidence must be in (0, 1), {message}" in _one_line(capsys.readouterr().err)
    assert not target.exists()


def test_report_curves_on_a_game_without_curves_writes_nothing(finished, capsys, tmp_path):
    """The table (or --output) was written, and a note printed, before the refusal."""
    out, _ = finished
    table = tmp_path / "table.txt"
    assert main(["report", str(out), "--curves", str(tmp_path / "c.png"), "--output", str(table)]) == 2
    captured = capsys.readouterr()
    assert "game 'one-run' draws no per-trial curves" in _one_line(captured.err)
    assert captured.out == "" and not table.exists() and not (tmp_path / "c.png").exists()


def test_report_records_on_a_game_without_records(finished, capsys, tmp_path):
    out, _ = finished
    assert main(["report", str(out), "--records", "--output", str(tmp_path / "t.csv")]) == 2
    assert "holds no per-record results: --records needs a record-level game" in _one_line(capsys.readouterr().err)
    assert not (tmp_path / "t.csv").exists()


def test_report_plot_of_one_record_game_writes_nothing(tmp_path, capsys):
    """The scatter needs both record games; the table was written before its error, which named no option."""
    config = tmp_path / "tiny.toml"
    config.write_text(TINY_MODEL_SEEDED)
    out = tmp_path / "out"
    assert main(["run", str(config), "--out", str(out), "--no-progress", "--no-cache"]) == 0
    capsys.readouterr()
    table = tmp_path / "table.txt"
    assert main(["report", str(out), "--plot", str(tmp_path / "p.png"), "--output", str(table)]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "--plot needs both record games (game 'record'" in line and "got only 'model-seeded' rows" in line
    assert not table.exists() and not (tmp_path / "p.png").exists()
    assert main(["report", str(out), "--curves", str(tmp_path / "c.png")]) == 2
    assert "game 'record-model-seeded' draws no per-trial curves" in _one_line(capsys.readouterr().err)


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--delta", "-1e-5", "[analysis] delta must be in [0, 1), got -1e-05."),  # argparse took it for an option
        ("--delta", "-0.5", "[analysis] delta must be in [0, 1), got -0.5."),
        ("--delta", "1", "[analysis] delta must be in [0, 1), got 1.0."),
        ("--confidence", "-inf", "[analysis] confidence must be in (0, 1), got -inf."),
    ],
)
def test_reanalyse_negative_values_reach_the_check(finished, capsys, tmp_path, option, value, message):
    out, _ = finished
    target = tmp_path / "re"
    assert main(["reanalyse", str(out), "--out", str(target), option, value]) == 2
    assert message in _one_line(capsys.readouterr().err)
    assert not target.exists()


def test_reanalyse_config_nested_thousands_deep_is_one_line(finished, capsys, tmp_path):
    out, _ = finished
    settings = tmp_path / "analysis.toml"
    settings.write_text("[analysis]\nconfidence = " + "[" * 5000 + "0.9" + "]" * 5000 + "\n")
    target = tmp_path / "re"
    assert main(["reanalyse", str(out), "--out", str(target), "--config", str(settings)]) == 2
    assert "must nest its values a few levels deep, not thousands" in _one_line(capsys.readouterr().err)
    assert not target.exists()
