"""Reading a results directory that is not what a run leaves: one attack compared alone (``report --compare``),
identical attack tables, and rows, manifests and raw files edited by hand — each refused in one line naming the
file, by every reader (report, report --compare, reanalyse, ``privgame.load``), or read correctly."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import privgame
from privgame.engine.cli import main
from privgame.engine.compare import compare_attacks
from privgame.engine.config import ConfigError, load_config
from privgame.engine.runner import run_experiment
from privgame.engine.store import ResultsStore, StoreError
from tests.conftest import TINY_MODEL_SEEDED

# the tiny record run of tests/conftest.py, playing both games on two targets, its attack as one [[attack]] table
RECORD_HEAD, _, _ = (
    TINY_MODEL_SEEDED.replace('name = "record-model-seeded"', 'name = "record"')
    .replace("random_targets = 0", "random_targets = 1")
    .partition("[attack]")
)
ATTACK_TABLE = '[[attack]]\nname = "closest-distance"\nn_shadows = 4\n'
ONE_RUN = (
    '[experiment]\nname = "rr"\nseed = 7\nrepetitions = 2\n'
    '[game]\nname = "one-run"\nm = 200\nk_pos = 50\nk_neg = 50\n'
    '[mechanism]\nname = "randomized-response"\nepsilon = [1.0, 2.0]\n[attack]\nname = "identity"\n'
)
LIRA = (
    '[experiment]\nname = "lira"\nseed = 5\nrepetitions = 1\n'
    '[game]\nname = "lira"\npool_size = 60\nn_models = 6\nn_boot = 40\n'
    '[mechanism]\nname = "logistic-regression"\nepochs = 1\n[attack]\nname = "lira"\n'
)
#: the lowest --risk there is: every record a single attack scores above chance counts as at risk
RISK = 0.501


def _run(root: Path, name: str, text: str) -> Path:
    config = root / f"{name}.toml"
    config.write_text(text)
    run_experiment(load_config(config), root / name, config_bytes=config.read_bytes(), progress=False)
    return root / name


@pytest.fixture(scope="module")
def record_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A record run of one [[attack]] table: a comparison of one attack (about 2 s)."""
    return _run(tmp_path_factory.mktemp("record"), "record", RECORD_HEAD + ATTACK_TABLE)


@pytest.fixture(scope="module")
def one_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two grid points of two one-run trials each (well under a second)."""
    return _run(tmp_path_factory.mktemp("one_run"), "rr", ONE_RUN)


def _one_line(args: list[str], capsys: pytest.CaptureFixture[str], status: int = 2) -> str:
    """Run the command; check its exit status and that stderr is one line; return that line."""
    assert main(args) == status
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in lines[0] and "unexpected" not in lines[0], lines
    return lines[0]


# -- item 1: one attack compared alone; identical attack tables ------------------------------------------------------
def _check_alone(table: Any, only: Any) -> None:
    """Every record the one attack finds at risk is its own, with no other attack's AUC beside it."""
    assert len(table) >= 1 and (table["grid_point"] == 0).all()
    assert table["at_risk"].sum() > 0, "no record at risk: the test would not reach the records found alone"
    assert (table["only_this"] == table["at_risk"]).all() and len(only) == table["at_risk"].sum()
    assert only["best_other_auc"].isna().all() and (only["auc"] >= RISK).all()


def test_one_attack_table_is_compared_alone(record_run, capsys):
    table, only = compare_attacks(str(record_run), risk=RISK)
    _check_alone(table, only)
    assert list(table["game"]) == ["traditional", "model-seeded"]
    assert main(["report", str(record_run), "--compare", "--risk", str(RISK)]) == 0
    noun = "record" if len(only) == 1 else "records"
    assert f"{len(only)} {noun} at risk under one attack only" in capsys.readouterr().err
    assert main(["report", str(record_run), "--compare", "--records", "--risk", str(RISK), "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith("record,auc,best_other_auc")


def test_a_lira_run_of_one_attack_is_compared_alone(tmp_path, capsys):
    root = _run(tmp_path, "lira", LIRA)
    table, only = compare_attacks(str(root), risk=RISK)
    _check_alone(table, only)
    assert list(table["game"]) == ["lira"] and int(table["records"].iloc[0]) == 60
    assert main(["report", str(root), "--compare", "--risk", str(RISK)]) == 0


@pytest.mark.parametrize(
    ("attacks", "needles"),
    [
        (ATTACK_TABLE * 2, ("grid points 0 and 1 alike", "[[attack]] tables 1 and 2 are the same attack")),
        (ATTACK_TABLE + ATTACK_TABLE.replace("n_shadows = 4", "n_shadows = [2, 4]"), ("grid points 0 and 2",)),
        ('[attack]\nname = "closest-distance"\nn_shadows = [4, 4]\n', ("grid points 0 and 1", "n_shadows = 4")),
    ],
)
def test_a_play_given_twice_is_refused_when_the_config_is_read(attacks, needles, tmp_path, run_refused):
    path = tmp_path / "twice.toml"
    path.write_text(RECORD_HEAD + attacks)
    with pytest.raises(ConfigError, match="each grid point must play its own"):
        load_config(path)
    line = run_refused(RECORD_HEAD + attacks, "each grid point must play its own", *needles)
    assert "repetitions" in line


def test_identical_tables_are_refused_under_an_analysis_sweep_too(tmp_path):
    """Each play is analysed at every confidence: the grid points 0 and 2 are the same attack's."""
    path = tmp_path / "swept.toml"
    path.write_text(RECORD_HEAD + ATTACK_TABLE * 2 + "[analysis]\nconfidence = [0.9, 0.95]\n")
    with pytest.raises(ConfigError, match=r"grid points 0 and 2 alike .*tables 1 and 2 are the same attack"):
        load_config(path)


# -- items 2 and 3: rows, manifests and raw files edited by hand ---------------------------------------------------
def _row(root: Path, trial: int, **values: Any) -> None:
    path = root / "trials" / f"trial-{trial:06d}.parquet"
    row = pq.read_table(path).to_pylist()[0]
    pq.write_table(pa.Table.from_pylist([{**row, **values}]), path)


def _without_raw(root: Path, trial: int, key: str) -> None:
    """The raw file without one array, its checksum in the row updated (a checksum guards against accidents, not
    against someone who edits both)."""
    path = root / "raw" / f"trial-{trial:06d}.npz"
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files if k != key}
    np.savez(path, **arrays)
    _row(root, trial, sha256_raw=hashlib.sha256(path.read_bytes()).hexdigest())


def _manifest(root: Path, change: Callable[[dict[str, Any]], Any]) -> None:
    path = root / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))


TAMPERED = {
    "grid point beyond the grid": (
        lambda root: _row(root, 1, grid_point=99),
        "trials/trial-000001.parquet: grid_point must be one of the manifest's grid points",
    ),
    "negative grid point": (
        lambda root: _row(root, 1, grid_point=-1),
        "trials/trial-000001.parquet: grid_point must be one of the manifest's grid points",
    ),
    "grid point as a float": (
        lambda root: _row(root, 1, grid_point=0.0),
        "trials/trial-000001.parquet: grid_point must be one of the manifest's grid points",
    ),
    "negative repetition": (
        lambda root: _row(root, 1, repetition=-1),
        "trials/trial-000001.parquet: repetition must be one of the manifest's repetitions per grid point",
    ),
    "another trial's place": (
        lambda root: _row(root, 1, grid_point=0, repetition=0),
        "trials/trial-000001.parquet: (grid_point, repetition) must name one trial, got (0, 0), which trial 0",
    ),
    "grid without params": (
        lambda root: _manifest(root, lambda m: m["grid"][0].pop("params")),
        "manifest.json: grid point 0 must give its params as a table",
    ),
}


def _readers(root: Path, compare: bool) -> list[list[str]]:
    reports = [["report", str(root)], ["report", str(root), "--ladder", str(root.parent / "ladder.png")]]
    if compare:
        reports = [["report", str(root), "--compare"], ["report", str(root), "--compare", "--baseline", "0"]]
    return [*reports, ["reanalyse", str(root), "--out", str(root.parent / "again"), "--confidence", "0.9"]]


@pytest.mark.parametrize("damage", list(TAMPERED))
@pytest.mark.parametrize("fixture", ["one_run", "record_run"])
def test_a_tampered_row_or_manifest_is_one_line_in_every_reader(damage, fixture, request, tmp_path, capsys):
    edit, message = TAMPERED[damage]
    root = tmp_path / "tampered"
    shutil.copytree(request.getfixturevalue(fixture), root)
    edit(root)
    for args in _readers(root, compare=fixture == "record_run"):
        if args[0] == "reanalyse" and damage == "grid without params":
            continue  # reanalyse rebuilds the grid from the stored config: below
        line = _one_line(args, capsys)
        assert message in line, (args, line)
        assert not (root.parent / "again").exists()
    if damage == "grid without params":
        # a reanalysis reads no stored params: it plays the stored config's grid again, with the params it makes
        assert main(_readers(root, compare=False)[-1]) == 0
        assert "params" in json.loads((root.parent / "again" / "manifest.json").read_text())["grid"][0]
    with pytest.raises(StoreError, match=message.split(": ", 1)[1].replace("(", r"\(").replace(")", r"\)")):
        privgame.load(root).summary()


@pytest.mark.parametrize("missing", ["scores", "membership"])
def test_a_raw_file_without_its_scores_is_a_damaged_trial_named_in_one_line(missing, record_run, tmp_path, capsys):
    """The file is broken whatever the manifest says: the trial counts as not run, as a file failing its checksum
    does — left out of a report with one line naming it, refused by reanalyse before it writes, run again by run."""
    root = tmp_path / "tampered"
    shutil.copytree(record_run, root)
    _without_raw(root, 1, missing)
    said = f"trial 1: raw/trial-000001.npz lacks the trial's {missing}"
    assert ResultsStore(root).damaged() == {1: f"raw/trial-000001.npz lacks the trial's {missing}"}
    for args in (["report", str(root)], ["report", str(root), "--compare"]):
        assert main(args) == 0
        err = capsys.readouterr().err
        assert "Traceback" not in err and [line for line in err.splitlines() if said in line], err
    line = _one_line(_readers(root, compare=True)[-1], capsys)
    assert said in line and "cannot be reanalysed" in line and not (tmp_path / "again").exists()
    with pytest.warns(UserWarning, match=said):
        assert len(privgame.load(root).summary()) == 1
    with pytest.raises(StoreError, match=rf"raw/trial-000001.npz: a trial's raw arrays must hold {missing}, got"):
        ResultsStore(root).load_outcome(1)
    config = tmp_path / "record.toml"
    config.write_text(RECORD_HEAD + ATTACK_TABLE)
    assert main(["run", str(config), "--out", str(root), "--no-progress"]) == 0
    assert ResultsStore(root).done() == {0, 1} and not ResultsStore(root).damaged()


def _one_array(path: Path) -> None:
    with path.open("wb") as fh:
        np.save(fh, np.zeros(3))


def _npz(path: Path, members: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> None:
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def _npy(array: Any, *, shape: tuple[int, ...] | None = None) -> bytes:
    """``array`` as .npy bytes; with ``shape``, a header that declares that shape over the same data."""
    out = io.BytesIO()
    if shape is None:
        np.lib.format.write_array(out, np.asarray(array), allow_pickle=True)
    else:
        header = {"descr": np.lib.format.dtype_to_descr(np.asarray(array).dtype), "fortran_order": False}
        np.lib.format.write_array_header_1_0(out, {**header, "shape": shape})
        out.write(np.asarray(array).tobytes())
    return out.getvalue()


MEMBERSHIP = _npy(np.ones(8, dtype=bool))


@pytest.mark.parametrize(
    ("write", "message"),
    [
        (lambda path: path.write_bytes(b"not an archive"), "must be an npz archive"),
        (_one_array, "must be an npz archive"),
        (lambda path: np.savez(path, scores=np.array([np.nan]), membership=[True]), "scores must be finite"),
        # a header declaring a trillion scores over 64 bytes: used to be 'out of memory', exit 1
        (
            lambda path: _npz(path, {"scores.npy": _npy(np.zeros(8), shape=(10**12,)), "membership.npy": MEMBERSHIP}),
            r"scores.npy declares 8,000,000,000,000 bytes of data, but holds 64",
        ),
        # a few kilobytes unpacking to 800 MB (privgame stores its arrays uncompressed)
        (
            lambda path: _npz(
                path, {"scores.npy": _npy(np.zeros(10**8)), "membership.npy": MEMBERSHIP}, zipfile.ZIP_DEFLATED
            ),
            r"scores.npy is compressed",
        ),
        (
            lambda path: _npz(
                path, {"scores.npy": _npy(np.array([1, "x"], dtype=object)), "membership.npy": MEMBERSHIP}
            ),
            r"scores.npy holds Python objects \(a pickle\)",
        ),
        (lambda path: _npz(path, {"scores.npy": _npy(np.zeros(8)), "notes.txt": b"hi"}), "'notes.txt' is not an array"),
    ],
)
def test_a_raw_file_that_is_not_a_trials_arrays_is_refused_naming_it(write, message, one_run, tmp_path):
    root = tmp_path / "tampered"
    shutil.copytree(one_run, root)
    path = root / "raw" / "trial-000001.npz"
    write(path)
    with pytest.raises(StoreError, match=rf"trial-000001.npz: .*{message}"):
        ResultsStore(root).load_outcome(1)


def test_rows_without_a_column_their_game_summarises_are_one_line(one_run, tmp_path, capsys):
    root = tmp_path / "tampered"
    shutil.copytree(one_run, root)
    for path in (root / "trials").glob("trial-*.parquet"):
        table = pq.read_table(path)
        pq.write_table(table.drop_columns(["epsilon_analytic"]), path)
    line = _one_line(["report", str(root)], capsys)
    assert "the rows of grid point 0 (trials 0, 1) must have the column 'epsilon_analytic'" in line


def test_a_tampered_row_stops_a_resume_before_it_deletes_anything(one_run, tmp_path, capsys):
    """A row that does not fit the manifest may as well be a manifest edited to fit no row: nothing is discarded."""
    root = tmp_path / "tampered"
    shutil.copytree(one_run, root)
    _row(root, 1, grid_point=99)
    config = tmp_path / "rr.toml"
    config.write_text(ONE_RUN)
    before = sorted(p.name for p in (root / "trials").iterdir())
    line = _one_line(["run", str(config), "--out", str(root), "--no-progress"], capsys)
    assert "trial-000001.parquet: grid_point must be one of the manifest's grid points" in line
    assert sorted(p.name for p in (root / "trials").iterdir()) == before


def test_rows_whose_column_types_disagree_are_one_line_naming_the_folder(one_run, tmp_path, capsys):
    root = tmp_path / "tampered"
    shutil.copytree(one_run, root)
    _row(root, 1, epsilon_analytic="abc")
    line = _one_line(["report", str(root)], capsys)
    assert "trials: the rows cannot be read as one table" in line and "epsilon_analytic" in line


def test_a_row_file_of_millions_of_rows_is_a_damaged_trial_read_in_a_moment(one_run, tmp_path, capsys, no_hang):
    """A few kilobytes of run-length code standing for 50 million rows: the footer is read, not the rows (which used
    to take every reader minutes and gigabytes)."""
    root = tmp_path / "tampered"
    shutil.copytree(one_run, root)
    path = root / "trials" / "trial-000001.parquet"
    pq.write_table(pa.table({"trial": pa.array(np.ones(50_000_000, dtype=np.int64))}), path, compression="zstd")
    assert path.stat().st_size < 1 << 20
    assert ResultsStore(root).damaged() == {
        1: "trials/trial-000001.parquet is unreadable (trials/trial-000001.parquet holds 50,000,000 rows, not 1)"
    }
    assert main(["report", str(root), "--format", "csv"]) == 0
    assert "trial 1: trials/trial-000001.parquet is unreadable" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # an ε no float holds: --ladder used to end in 'unexpected OverflowError'
        (lambda m: m["grid"][0].__setitem__("epsilon_analytic", 10**400), "grid point 0's epsilon_analytic must be"),
        (lambda m: m["grid"][1].__setitem__("epsilon_analytic", "1.0"), "grid point 1's epsilon_analytic must be"),
    ],
)
def test_a_manifest_number_no_float_holds_is_one_line(change, message, one_run, tmp_path, capsys):
    root = tmp_path / "tampered"
    shutil.copytree(one_run, root)
    _manifest(root, change)
    for args in (["report", str(root)], ["report", str(root), "--ladder", str(tmp_path / "ladder.png")]):
        assert message in _one_line(args, capsys)
    assert not (tmp_path / "ladder.png").exists()
    with pytest.raises(StoreError, match=message):
        privgame.load(root).summary()


def test_a_manifest_nested_thousands_deep_is_one_line(one_run, tmp_path, capsys):
    """Used to end in 'unexpected RecursionError' in every reader and in a resume."""
    root = tmp_path / "tampered"
    shutil.copytree(one_run, root)
    (root / "manifest.json").write_text('{"format": 1, "config": ' + "[" * 100_000 + "]" * 100_000 + "}")
    config = tmp_path / "rr.toml"
    config.write_text(ONE_RUN)
    for args in [*_readers(root, compare=False), ["run", str(config), "--out", str(root), "--no-progress"]]:
        assert "manifest.json: JSON nested too deep" in _one_line(args, capsys), args
    with pytest.raises(StoreError, match="nested too deep"):
        privgame.load(root).summary()


def test_a_failure_record_nested_thousands_deep_is_listed_as_unreadable(one_run, tmp_path):
    root = tmp_path / "tampered"
    shutil.copytree(one_run, root)
    (root / "trials" / "trial-000001.parquet").unlink()
    (root / "failures" / "trial-000001.json").write_text("[" * 100_000 + "]" * 100_000)
    (root / "progress" / "trial-000001.json").write_text("[" * 1000 + "]" * 24)  # 1 KiB, as deep as it can be
    store = ResultsStore(root)
    assert store.failures() == {1: {"trial": 1, "error": "unreadable failure record trial-000001.json"}}
    assert store.progress_done(1) == 0
