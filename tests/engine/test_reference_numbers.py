"""The quick reference numbers (experiments/reference/quick_numbers.toml; README.md, "Quick reference numbers").

The file is consistent with itself and with the configs, the README's tables are printed from it, and the slow
suite checks that every quick config, run at its own seed, still gives each stored figure (they are seeded, so
tightly) inside its stored run-to-run range.  Those runs are the ones tests/engine/test_experiments.py already
plays: each of its tests of a quick config hands its finished results to :func:`check_reference_numbers` (the
slow suite's budget has no room to play them twice), and :data:`CHECKED_BY` names the test that checks each config.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "experiments" / "reference_numbers.py"

CHECKED_BY = {
    "quickstart": "test_the_quickstart_reproduces_steinke_et_al_at_epsilon_4_and_top_k_falls_short",
    "dpsgd_whitebox_quick": "test_quick_experiment_stays_below_the_pld_epsilon",
    "dpsgd_blackbox_quick": "test_quick_experiment_stays_below_the_pld_epsilon",
    "dpsgd_multirun_quick": "test_quick_experiment_stays_below_the_pld_epsilon",
    "panoramia_adult_quick": "test_panoramia_quick_experiment_runs_and_reports",
    "panoramia_digits_quick": "test_panoramia_quick_experiment_runs_and_reports",
    "krco_adult_quick": "test_krco_quick_experiment_runs_and_reports",
    "lira_adult_quick": "test_lira_quick_experiment_shows_the_small_m_miscalibration",
}
"""Each quick config, and the test of tests/engine/test_experiments.py that runs it and checks its figures."""


def _script() -> Any:
    if "reference_numbers" not in sys.modules:
        spec = importlib.util.spec_from_file_location("reference_numbers", SCRIPT)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["reference_numbers"] = module  # its dataclasses look their module up
        spec.loader.exec_module(module)
    return sys.modules["reference_numbers"]


def check_reference_numbers(name: str, run_dir: str | Path) -> None:
    """The finished run of ``experiments/NAME.toml`` in ``run_dir`` (at the config's own seed) gives every figure the
    reference file stores for it, to a relative 1e-6, inside the stored range."""
    script = _script()
    entry = script.load_reference()[name]
    manifest = json.loads((Path(run_dir) / "manifest.json").read_text())
    assert (manifest["name"], manifest["seed"]) == (name, entry["seed"]), (manifest["name"], manifest["seed"])
    values = script.read_figures(run_dir, entry["figures"])
    assert script.differences(entry, values) == [], f"{name}: update experiments/reference/quick_numbers.toml, README"


def test_every_quick_config_has_reference_numbers_that_agree_with_themselves():
    script = _script()
    reference = script.load_reference()
    assert list(reference) == [q.name for q in script.QUICK] == list(CHECKED_BY)
    for q in script.QUICK:
        entry = reference[q.name]
        seeds = entry["seeds"]
        assert entry["seed"] == seeds[0] == script.config_seed(q.name) and entry["game"] == q.game, q.name
        assert len(set(seeds)) == len(seeds) >= 5 and entry["n_jobs"] == q.n_jobs, q.name
        assert len(entry["seconds"]) == len(entry["load_average"]) == len(seeds), q.name
        assert [(f["label"], f["column"], f["where"]) for f in entry["figures"]] == [
            (f.label, f.column, dict(f.where)) for f in q.figures
        ], q.name
        for figure in entry["figures"]:
            values = figure["by_seed"]
            assert len(values) == len(seeds) and figure["value"] == values[0], (q.name, figure["label"])
            assert figure["range"] == [min(values), max(values)], (q.name, figure["label"])
            assert all(math.isfinite(v) for v in values), (q.name, figure["label"])


def test_the_readme_tables_are_printed_from_the_reference_file():
    script = _script()
    readme = (ROOT / "README.md").read_text()
    section = script.readme_section(script.load_reference())
    assert section in readme, "README.md's tables differ: paste `python experiments/reference_numbers.py table`"
    assert readme.count(script.README_START) == 1


def test_every_quick_config_is_checked_by_the_slow_test_that_runs_it():
    """Each test named in CHECKED_BY calls check_reference_numbers and names its config: a config added to the
    reference file without a slow test that checks it fails here."""
    tree = ast.parse((ROOT / "tests" / "engine" / "test_experiments.py").read_text())
    functions = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    for name, test in CHECKED_BY.items():
        function = functions[test]
        calls = [
            node
            for node in ast.walk(function)
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "check_reference_numbers"
        ]
        strings = {node.value for node in ast.walk(function) if isinstance(node, ast.Constant)}
        assert calls and name in strings, (name, test)
        assert function.decorator_list and "slow" in ast.unparse(function.decorator_list[0]), test


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """A small run that calls itself the quickstart (its seed, its ε grid): the script's reading and checking."""
    import privgame

    config = {
        "experiment": {"name": "quickstart", "seed": 2026, "repetitions": 2},
        "game": {"name": "one-run", "m": 1000, "k_pos": 100, "k_neg": 100},
        "mechanism": {"name": "randomized-response", "epsilon": [0.5, 1, 2, 4, 8]},
        "attack": {"name": "identity"},
        "analysis": {"estimators": ["steinke"]},
    }
    out = tmp_path_factory.mktemp("reference") / "run"
    privgame.run(config, out).close()
    other = tmp_path_factory.mktemp("reference") / "other-seed"
    privgame.run({**config, "experiment": {**config["experiment"], "seed": 7}}, other).close()
    return out, other


def _reference_for(script: Any, run: Path, path: Path, *, shift: float = 0.0) -> None:
    """A reference file whose quickstart entry is ``run``'s own figures (the first moved by ``shift``)."""
    q = script.quick("quickstart")
    values = script.read_figures(run, q.figures)
    values[0] += shift
    figures = [
        {"label": f.label, "column": f.column, "where": dict(f.where), "value": v, "range": [v - 1.0, v + 1.0]}
        for f, v in zip(q.figures, values, strict=True)
    ]
    script.write_reference({"quickstart": {"seed": 2026, "figures": figures}}, path)


def test_check_passes_on_the_stored_figures_and_names_a_changed_one(small_run, tmp_path, capsys):
    script = _script()
    run, other = small_run
    _reference_for(script, run, tmp_path / "same.toml")
    assert script.main(["check", "quickstart", str(run), "--file", str(tmp_path / "same.toml")]) == 0
    assert capsys.readouterr().out.endswith("matches the reference\n")
    _reference_for(script, run, tmp_path / "moved.toml", shift=0.01)
    assert script.main(["check", "quickstart", str(run), "--file", str(tmp_path / "moved.toml")]) == 1
    assert "differs:\nmedian ε_lb of 20, ε = 0.5: " in capsys.readouterr().out
    # another seed is compared with the range only: within 1 of the stored values here
    _reference_for(script, run, tmp_path / "range.toml")
    assert script.main(["check", "quickstart", str(other), "--file", str(tmp_path / "range.toml")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("the run's seed is 7, not the reference's 2026: the range only\n"), out
    assert out.endswith("within the reference's range\n"), out


def test_differences_names_a_value_outside_its_range():
    entry = {"figures": [{"label": "f", "value": 0.5, "range": [0.4, 0.6]}]}
    assert _script().differences(entry, [0.5]) == []
    assert _script().differences(entry, [0.5 + 1e-5]) == ["f: 0.50001, stored 0.5"]
    assert _script().differences(entry, [0.55], same_seed=False) == []
    assert _script().differences(entry, [0.7], same_seed=False) == ["f: 0.7 outside the stored range [0.4, 0.6]"]


def test_reading_refuses_a_missing_column_or_a_where_that_picks_no_single_row(small_run):
    script = _script()
    run, _ = small_run
    with pytest.raises(ValueError, match=r"column must be one of the summary's columns, got 'auc'"):
        script.read_figures(run, [script.Figure("x", "auc")])
    with pytest.raises(ValueError, match=r"where must pick one row of the summary, got 0 rows"):
        script.read_figures(run, [script.Figure("x", "epsilon_lb_median", {"mechanism.epsilon": 3.0})])
    with pytest.raises(ValueError, match=r"where must pick one row of the summary, got 5 rows for \{\}"):
        script.read_figures(run, [script.Figure("x", "epsilon_lb_median")])


def test_the_reference_file_reads_back_as_written(tmp_path):
    script = _script()
    entry = {
        "game": 'a "game"',
        "seed": 3,
        "seeds": [3, 1],
        "seconds": [1.5, 2.0],
        "figures": [{"label": "f", "column": "c", "where": {"mechanism.epsilon": 0.5}, "value": 0.1 + 0.2}],
    }
    script.write_reference({"quickstart": entry, "not-a-quick-config": entry}, tmp_path / "r.toml")
    assert script.load_reference(tmp_path / "r.toml") == {"quickstart": entry}  # QUICK's configs only


def test_unknown_configs_and_configs_without_a_seed_line_are_refused(monkeypatch, tmp_path):
    script = _script()
    with pytest.raises(ValueError, match=r"config must be one of quickstart, .*, got 'nope'"):
        script.quick("nope")
    (tmp_path / "unseeded.toml").write_text('[experiment]\nname = "unseeded"\n')
    monkeypatch.setattr(script, "EXPERIMENTS", tmp_path)
    with pytest.raises(ValueError, match=r"experiments/unseeded.toml must have a 'seed = N' line, got none"):
        script.seeded_config("unseeded", 1)
    (tmp_path / "seeded.toml").write_text("# seed = 1 in a comment\n[experiment]\nseed = 2026  # the root\n")
    assert script.seeded_config("seeded", 5) == "# seed = 1 in a comment\n[experiment]\nseed = 5  # the root\n"
