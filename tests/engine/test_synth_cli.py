"""``privgame synth``: parameter parsing, generator construction, outputs, the fidelity report and every error."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pytest

from privgame.analysis.discretise import public_bins
from privgame.data import (
    ADULT_COLUMNS,
    ADULT_PUBLIC_BINS,
    ADULT_PUBLIC_RANGES,
    COMPAS_PUBLIC_BINS,
    COMPAS_PUBLIC_RANGES,
    load_adult,
)
from privgame.engine.cli import main
from privgame.engine.registry import MECHANISMS
from privgame.engine.synth_cli import build_generator, parse_params, parse_value, report_path, table_generators
from privgame.mechanisms._base import Mechanism


@dataclass(frozen=True, slots=True)
class Bootstrap(Mechanism):
    """Test-only table generator: resample the rows with replacement."""

    name: ClassVar[str] = "test-bootstrap"
    input_kind: ClassVar[str] = "table"
    release_kind: ClassVar[str] = "table"

    n_rows: int | None = None
    label: str = "x"

    def release(self, data: Any, *, rng: np.random.Generator) -> pd.DataFrame:
        n = len(data) if self.n_rows is None else self.n_rows
        return data.iloc[rng.integers(0, len(data), n)].reset_index(drop=True)

    def privacy_claim(self) -> None:
        return None


@dataclass(frozen=True, slots=True)
class Ranged(Mechanism):
    """Test-only table generator with a public-ranges parameter and no n_rows."""

    name: ClassVar[str] = "test-ranged"
    input_kind: ClassVar[str] = "table"
    release_kind: ClassVar[str] = "table"

    ranges: tuple[tuple[str, int, int], ...] = ()

    def release(self, data: Any, *, rng: np.random.Generator) -> pd.DataFrame:
        return data.copy()

    def privacy_claim(self) -> None:
        return None


@pytest.fixture(autouse=True)
def test_generators():
    MECHANISMS.register(Bootstrap)
    MECHANISMS.register(Ranged)
    yield
    MECHANISMS.unregister("test-bootstrap")
    MECHANISMS.unregister("test-ranged")


def synth(tmp_path, *extra: str, out: str = "s.csv") -> tuple[int, Any]:
    path = tmp_path / out
    return main(["synth", "--generator", "test-bootstrap", "--train-rows", "200", "--out", str(path), *extra]), path


def strict_json(text: str) -> Any:
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in JSON")

    return json.loads(text, parse_constant=refuse)


def test_parse_value_and_params():
    assert parse_value("2") == 2 and isinstance(parse_value("2"), int)
    assert parse_value("1.5") == 1.5 and parse_value("1e-3") == 0.001 and parse_value(".5") == 0.5
    assert parse_value("true") is True and parse_value("False") is False
    assert parse_value('"hill climb"') == "hill climb" and parse_value("hillclimb") == "hillclimb"
    assert parse_value('[["age", 17, 90]]') == (("age", 17, 90),)
    assert parse_value("inf") == float("inf")
    assert parse_params(["k=2", " epsilon = 1.0", "structure=hillclimb"]) == {
        "k": 2,
        "epsilon": 1.0,
        "structure": "hillclimb",
    }
    assert parse_params([]) == {}
    for bad in ("k", "=2", "k=", "two words=1", "1k=2"):
        with pytest.raises(ValueError, match="--param must be KEY=VALUE"):
            parse_params([bad])
    with pytest.raises(ValueError, match="given more than once"):
        parse_params(["k=1", "k=2"])
    with pytest.raises(ValueError, match="--param n_rows is set by --rows"):
        parse_params(["n_rows=5"])
    with pytest.raises(ValueError, match="--param name is set by --generator"):
        parse_params(["name=baynet"])


def test_build_generator():
    assert "test-bootstrap" in table_generators() and "randomized-response" not in table_generators()
    assert build_generator("test-bootstrap", {"label": "y"}, n_rows=7) == Bootstrap(n_rows=7, label="y")
    # public ranges of the data set, unless given
    assert build_generator("test-ranged", data="adult").ranges == ADULT_PUBLIC_RANGES
    assert build_generator("test-ranged", data="compas").ranges == COMPAS_PUBLIC_RANGES
    assert build_generator("test-ranged", {"ranges": (("age", 0, 1),)}, data="adult").ranges == (("age", 0, 1),)
    # and its public bins, for a generator with a bins parameter (PrivBayes, BayNet), unless given or unless the
    # ranges are the caller's own (the data set's bins need not fit them)
    assert build_generator("privbayes", {"epsilon": 1}, data="adult").bins == public_bins(ADULT_PUBLIC_BINS)
    assert build_generator("privbayes", {"epsilon": 1}, data="compas").bins == public_bins(COMPAS_PUBLIC_BINS)
    assert build_generator("baynet", data="adult").bins == public_bins(ADULT_PUBLIC_BINS)
    assert build_generator("baynet").bins is None
    assert build_generator("privbayes", {"epsilon": 1, "bins": ()}, data="adult").bins is None
    own = build_generator("privbayes", {"epsilon": 1, "ranges": (("age", 0, 99),)}, data="adult")
    assert own.ranges == (("age", 0.0, 99.0),) and own.bins is None
    with pytest.raises(ValueError, match=r"table generators .*test-bootstrap, test-ranged.*, got 'nope'"):
        build_generator("nope")
    with pytest.raises(ValueError, match=r"'randomized-response' is not a table generator.*'canary-bits'"):
        build_generator("randomized-response", {"epsilon": 1.0})
    with pytest.raises(ValueError, match=r"^test-bootstrap has no parameter 'k'; its parameters: n_rows, label"):
        build_generator("test-bootstrap", {"k": 2})
    with pytest.raises(ValueError, match="generator 'test-ranged' has no n_rows parameter"):
        build_generator("test-ranged", n_rows=5)


def test_csv_output_reproducible_and_seeded(tmp_path, capsys):
    rc, path = synth(tmp_path, "--seed", "3")
    assert rc == 0
    assert "test-bootstrap: 200 synthetic rows from the first 200 rows of adult" in capsys.readouterr().out
    table = pd.read_csv(path)
    assert list(table.columns) == list(ADULT_COLUMNS) and len(table) == 200
    # trained on the first 200 rows: every synthetic row is one of them
    first = load_adult().iloc[:200]
    assert set(table["fnlwgt"]) <= set(first["fnlwgt"])
    again = tmp_path / "again.csv"
    assert (
        main(["synth", "--generator", "test-bootstrap", "--train-rows", "200", "--seed", "3", "--out", str(again)]) == 0
    )
    assert again.read_bytes() == path.read_bytes()
    other = tmp_path / "other.csv"
    assert (
        main(["synth", "--generator", "test-bootstrap", "--train-rows", "200", "--seed", "4", "--out", str(other)]) == 0
    )
    assert other.read_bytes() != path.read_bytes()
    assert not report_path(path).exists()


def test_parquet_keeps_dtypes_and_rows_and_sample(tmp_path):
    rc, path = synth(tmp_path, "--rows", "50", "--sample", "--param", 'label="z"', out="sub/s.parquet")
    assert rc == 0
    table = pd.read_parquet(path)
    real = load_adult()
    assert len(table) == 50
    for column in ADULT_COLUMNS:
        assert table[column].dtype == real[column].dtype, column
    # a sample of the whole split, not the first 200 rows
    assert not set(table["fnlwgt"]) <= set(real["fnlwgt"].iloc[:200])


def test_report_adult(tmp_path, capsys):
    rc, path = synth(tmp_path, "--report", out="r.parquet")
    assert rc == 0
    out = capsys.readouterr().out
    assert "marginal TV distance" in out and "predict income = >50K" in out
    document = strict_json(report_path(path).read_text())
    assert report_path(path).name == "r.fidelity.json"
    assert document["generator"] == "test-bootstrap" and document["params"] == {"n_rows": None, "label": "x"}
    summary = document["summary"]
    assert summary["n_real"] == 200 and summary["n_test"] == 16281 and summary["target"] == "income"
    # a bootstrap copies real rows, and its classifier is about as good as the real one
    assert summary["copy_fraction"] == 1.0
    assert 0.7 < summary["tstr_auc"] <= 1 and 0.7 < summary["trtr_auc"] <= 1
    assert set(document["columns"]) == set(ADULT_COLUMNS)


def test_report_compas_uses_the_rows_not_trained_on(tmp_path, capsys):
    path = tmp_path / "c.csv"
    args = ["synth", "--generator", "test-bootstrap", "--data", "compas", "--train-rows", "300", "--report"]
    assert main([*args, "--out", str(path)]) == 0
    summary = strict_json(report_path(path).read_text())["summary"]
    assert summary["n_test"] == 7214 - 300 and summary["target"] == "two_year_recid" and summary["positive"] == 1
    # all rows trained: no held-out rows, no utility metrics
    assert main([*args[:6], "7214", "--report", "--out", str(path)]) == 0
    document = strict_json(report_path(path).read_text())
    assert document["summary"]["n_test"] == 0 and document["summary"]["tstr_auc"] is None
    assert document["test"] is None


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--generator", "nope"], "--generator must be one of the table generators"),
        (["--generator", "randomized-response", "--param", "epsilon=1"], "is not a table generator"),
        (["--data", "wine"], "--data must be one of adult, compas, digits (data sets that serve table), got 'wine'"),
        (["--train-rows", "40000"], "--train-rows must be at most 32561"),
        (["--train-rows", "0"], "--train-rows must be an integer >= 1"),
        (["--param", "label"], "--param must be KEY=VALUE"),
        (["--param", "k=2"], "test-bootstrap has no parameter 'k'"),
        (["--out", "x.xlsx"], "--out must end in .csv or .parquet"),
        (["--seed", "-1"], "--seed must be an integer >= 0"),
        (["--rows", "0"], "--rows must be an integer >= 1"),
    ],
)
def test_errors(tmp_path, capsys, extra, message):
    args = {"--generator": "test-bootstrap", "--train-rows": "100", "--out": str(tmp_path / "e.csv")}
    rest = []
    i = 0
    while i < len(extra):
        if extra[i] in args:
            args[extra[i]] = extra[i + 1]
        else:
            rest += extra[i : i + 2]
        i += 2
    argv = ["synth", *[x for pair in args.items() for x in pair], *rest]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("privgame: error: ") and message in err
    assert not (tmp_path / "e.csv").exists()


def test_an_out_named_as_a_directory_is_refused(tmp_path, capsys):
    """``--out s.csv/`` names a directory; it was written as the file s.csv (Path drops the slash)."""
    out = f"{tmp_path / 's.csv'}/"
    assert main(["synth", "--generator", "test-bootstrap", "--train-rows", "100", "--out", out]) == 2
    assert f"--out {out!r} names a directory (it ends in '/')" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("generator", ["baynet", "synthpop"])
def test_end_to_end_with_a_real_generator(tmp_path, capsys, generator):
    path = tmp_path / "s.parquet"
    assert main(["synth", "--generator", generator, "--train-rows", "300", "--report", "--out", str(path)]) == 0
    table = pd.read_parquet(path)
    real = load_adult()
    assert list(table.columns) == list(ADULT_COLUMNS) and len(table) == 300
    assert all(table[c].dtype == real[c].dtype for c in ADULT_COLUMNS)
    summary = strict_json(report_path(path).read_text())["summary"]
    # loose sanity bounds: a faithful generator keeps the marginals close and the classifier useful
    assert summary["tv_mean"] < 0.2 and summary["tstr_auc"] > 0.6


def test_privbayes_gets_the_public_ranges_of_the_data_set(tmp_path):
    """PrivBayes refuses numeric columns without public ranges; the command passes Adult's own."""
    path = tmp_path / "p.csv"
    argv = ["synth", "--generator", "privbayes", "--param", "epsilon=1", "--train-rows", "200", "--out", str(path)]
    assert main(argv) == 0
    table = pd.read_csv(path)
    assert list(table.columns) == list(ADULT_COLUMNS) and len(table) == 200
    low, high = dict((c, (lo, hi)) for c, lo, hi in ADULT_PUBLIC_RANGES)["age"]
    assert table["age"].between(low, high).all()
    # and Adult's public bins: 0 is a bin of its own, so with little noise the synthetic capital gains and losses are
    # exactly 0 about as often as the real ones (93.5 % of these rows for both; a value drawn uniformly in the old first
    # bin [0, 4999] was almost never 0)
    argv = [*argv[:3], "--param", "epsilon=1000", "--param", "k=1", *argv[5:]]
    assert main(argv) == 0
    table = pd.read_csv(path)
    assert (table["capital_gain"] == 0).mean() > 0.8 and (table["capital_loss"] == 0).mean() > 0.8


def test_synth_on_your_own_csv_and_its_domain(tmp_path, capsys):
    """--data FILE.csv --domain FILE: the file is checked against its domain, the generator trains on its first
    rows, and utility is measured on the rest (it has no published split); the dtypes follow the domain."""
    from pathlib import Path

    byo = Path(__file__).resolve().parents[2] / "experiments" / "byo_quick"
    out = tmp_path / "s.parquet"
    args = ["synth", "--generator", "test-bootstrap", "--data", str(byo / "medical.csv"), "--train-rows", "300"]
    assert main([*args, "--domain", str(byo / "medical.domain.toml"), "--out", str(out), "--report"]) == 0
    synthetic = pd.read_parquet(out)
    assert synthetic.shape == (300, 6) and synthetic["bmi"].dtype == np.float64
    assert json.loads(report_path(out).read_text())["test"] == "rows not trained on"
    capsys.readouterr()
    assert main([*args, "--out", str(tmp_path / "t.csv")]) == 2
    assert "is a file: give --domain FILE" in capsys.readouterr().err
    assert main(["synth", "--generator", "test-bootstrap", "--domain", "x.toml", "--out", str(tmp_path / "u.csv")]) == 2
    assert "--domain belongs to --data FILE.csv|.parquet" in capsys.readouterr().err
