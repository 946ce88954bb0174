"""docs/extending.md: its code and configs are the files of docs/examples/ (shown literally, kept equal here), and
each example registers, keeps the component contract on the plugin data set's own records and runs end to end
through the runner and the report."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from privgame.engine import cli
from privgame.engine.config import load_config
from privgame.engine.registry import ATTACKS, GAMES, MECHANISMS
from privgame.engine.runner import run_experiment
from privgame.engine.testing import check_component

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"
DOC = ROOT / "docs" / "extending.md"
BYO = ROOT / "experiments" / "byo_quick"
_SHOWN = re.compile(r"<!-- (docs/examples/extending_[\w.]+) -->\n```(?:python|toml)\n(.*?)```\n", re.DOTALL)


@pytest.fixture
def plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """After the test, no example module is imported, none of their components is registered and sys.path is as
    before (the data set they register is dropped by tests/conftest.py)."""
    monkeypatch.setattr(sys, "path", list(sys.path))  # a config's folder joins sys.path when its plugins load
    before = {registry.kind: set(registry.names()) for registry in (GAMES, MECHANISMS, ATTACKS)}
    yield
    for module in [m for m in sys.modules if m.startswith("extending_")]:
        del sys.modules[module]
    for registry in (GAMES, MECHANISMS, ATTACKS):
        for name in set(registry.names()) - before[registry.kind]:
            registry.unregister(name)


def test_the_doc_shows_every_example_file_as_it_is():
    text = DOC.read_text(encoding="utf-8")
    shown = _SHOWN.findall(text)
    files = sorted(p.relative_to(ROOT).as_posix() for p in EXAMPLES.glob("extending_*"))
    assert sorted(path for path, _ in shown) == files  # each once
    for path, block in shown:
        assert block == (ROOT / path).read_text(encoding="utf-8"), f"{path} differs from its copy in {DOC.name}"
    for config in (p for p in files if p.endswith(".toml")):  # and says how to run it
        assert f"privgame run {config} --out " in text
        assert f"privgame run {config} --out " in (ROOT / config).read_text(encoding="utf-8")


def test_the_doc_shows_the_pytorch_model_factory_as_it_is():
    """Section 5 shows experiments/own_models.py, the factory of the own-model and Opacus configs, literally."""
    text = DOC.read_text(encoding="utf-8")
    shown = re.search(r"<!-- experiments/own_models.py -->\n```python\n(.*?)```\n", text, re.DOTALL)
    assert shown is not None
    assert shown.group(1) == (ROOT / "experiments" / "own_models.py").read_text(encoding="utf-8")


def test_the_doc_is_linked_from_the_readme_and_the_plugins_section():
    assert "(docs/extending.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
    config = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    assert "(extending.md)" in config[config.index("\n## Plugins") :]


def _generator_extras() -> list[Any]:
    return [sys.modules["extending_generator"].ExactCopy()]  # deterministic by design: the contract accepts it


def _data_extras() -> list[Any]:
    from privgame.attacks import CountingQueries
    from privgame.mechanisms.synth import Synthpop

    return [Synthpop(), CountingQueries(n_shadows=4, n_estimators=5)]  # built-ins, checked on clinic's records


def _checked(rows: pd.DataFrame, name: str) -> None:
    if name == "generator":  # the claim, through dp_accounting: pure ε-DP
        assert sorted(rows["epsilon_analytic"].unique()) == pytest.approx([1.0, 8.0], rel=1e-3)  # at δ = 1e-5
    elif name == "model":
        assert rows["auc"].between(0, 1).all() and rows["train_accuracy"].gt(0.5).all()
    elif name == "canary":  # a non-private MLP memorises its out-of-distribution canaries: a positive bound
        assert rows["epsilon_analytic"].isna().all() and rows["epsilon_lb"].max() > 0
    else:
        assert rows["auc_traditional"].between(0, 1).all()


EXTRAS: dict[str, Callable[[], list[Any]]] = {
    "data": _data_extras,
    "generator": _generator_extras,
    "model": list,
    "canary": list,
}


@pytest.mark.parametrize("name", sorted(EXTRAS))
def test_each_example_keeps_the_contract_and_runs_end_to_end(name, plugins, tmp_path, capsys):
    start = time.perf_counter()
    config = load_config(EXAMPLES / f"extending_{name}.toml")  # imports its plugins, found beside it
    components = {point.mechanism for point in config.grid} | set(EXTRAS[name]())
    for component in components:
        check_component(component, data="clinic")  # the samples: 200 records of the plugin's data set
    checked = time.perf_counter()

    store = run_experiment(config, tmp_path / "out", progress=False, fail_fast=True)
    rows = pd.read_parquet(store.root / "results.parquet")
    assert len(rows) == config.n_trials and not store.failures()
    _checked(rows, name)
    assert cli.main(["report", str(tmp_path / "out"), "--trust-plugins"]) == 0  # the doc's report command
    assert "epsilon_analytic" in capsys.readouterr().out  # the summary table's header
    print(f"{name}: checks {checked - start:.1f} s, run and report {time.perf_counter() - checked:.1f} s")


def test_a_users_file_gives_the_checks_its_records(plugins):
    """The [data] path route of docs/datasets.md: the file checked against its domain and registered, its records
    are the samples too."""
    from privgame.data.files import open_source, register_source
    from privgame.mechanisms.training import GradientBoostedTrees

    register_source(open_source(BYO / "medical.csv", BYO / "medical.domain.toml", label="diagnosis"))
    sys.path.append(str(BYO))
    import byo_generator

    try:
        check_component(byo_generator.IndependentMarginals(), data="medical")
        check_component(GradientBoostedTrees(max_iter=5), data="medical")
    finally:
        sys.modules.pop("byo_generator", None)


@pytest.mark.parametrize("audit", ["whitebox", "blackbox"])
def test_the_loop_examples_run_end_to_end(audit, plugins, tmp_path, capsys):
    """Section 6: the docs' own DP-SGD loop, audited white-box and black-box from its config as shown (one
    repetition here; the doc's two take 21 s and 7 s on 2 cores)."""
    import privgame

    config = EXAMPLES / f"extending_loop_{audit}.toml"
    with privgame.run(config, tmp_path / "out", repetitions=1, progress=False, fail_fast=True) as results:
        rows = results.trials()
    assert len(rows) == 1 and rows["epsilon_analytic"].iloc[0] == pytest.approx(
        2.0 if audit == "whitebox" else 8.0, rel=1e-3
    )
    assert 0 <= rows["epsilon_lb"].iloc[0] < rows["epsilon_analytic"].iloc[0]  # a correct loop is not refuted here
    assert cli.main(["report", str(tmp_path / "out"), "--trust-plugins"]) == 0
