"""Issue 33 replayed from the command line: every hostile input of the issue, built afresh, and the acceptance
criteria measured on the ``privgame`` command that reads it.

Each item builds its input in a fresh temporary folder (nothing of the user's is read or written: every command
gets ``PRIVGAME_CACHE_DIR`` inside that folder, and the items about the cache name one there with ``--cache-dir``),
then runs one ``privgame`` command in a child process stopped after 30 s and records its exit status, its stderr
(lines, the ``privgame: error:`` line), its wall seconds, whether "Traceback" or "unexpected" appears, whether a
planted module was imported (``privgame_replay_evil``, on the child's ``PYTHONPATH``, writes a marker file when
imported), and whether a file outside the command's own outputs changed (SHA-256 of every file in the folder
before and after; a refused command may not create a file either).  The expected outcome of an item is
``refused`` (exit 2, one line on stderr), ``runs`` (exit 0) or ``recomputed`` (exit 0 and a "corrupted cache
entry" warning); some items also check a message or a result of their own (the trials all finished, the link
removed, the time under 10 s).

Prints a markdown table, one row per item, then ONE JSON line of headline figures.  Exit status 0 only if every
item replayed is as expected.  The item building uses the tests of the fixes (tests/core/test_trust.py and the
others the issue's closing note lists); the configs are the suite's small ones.

    python experiments/hardening_replay.py                 # privgame's Python: 49 items, about 90 s on 2 cores
    python experiments/hardening_replay.py --only fifo     # the items whose name holds "fifo" (case-insensitive)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the suite's small configs and its cache forgery, shared with the tests

from tests.conftest import TINY_MODEL_SEEDED, forge_factory_name, toml_value  # noqa: E402
from tests.data.test_files import DOMAIN as CLINIC_DOMAIN  # noqa: E402

TIMEOUT = 30.0  # seconds a replayed command may take before it counts as hung
SETUP_TIMEOUT = 300.0
EVIL = "privgame_replay_evil"  # the planted module: importing it writes $PRIVGAME_REPLAY_MARKER
PLANTED = """import os
from pathlib import Path

Path(os.environ["PRIVGAME_REPLAY_MARKER"]).write_text("imported")


def factory(*args, **kwargs):
    raise RuntimeError("called")


class Classifier:
    pass
"""
#: modules the configs name by import path, copied from the tests into the children's PYTHONPATH
PLUGIN_FILES = (
    REPO / "tests" / "mechanisms" / "dpsgd" / "torch_factories.py",
    REPO / "tests" / "plugins" / "plain_classifiers.py",
)

# -- the suite's small configs (tests/conftest.py, tests/engine/test_reading_results.py) ---------------------------
ONE_RUN = (
    '[experiment]\nname = "rr"\nseed = 7\nrepetitions = 2\n'
    '[game]\nname = "one-run"\nm = 200\nk_pos = 50\nk_neg = 50\n'
    '[mechanism]\nname = "randomized-response"\nepsilon = [1.0, 2.0]\n[attack]\nname = "identity"\n'
)
RECORD_HEAD = (
    TINY_MODEL_SEEDED.replace('name = "record-model-seeded"', 'name = "record"')
    .replace("random_targets = 0", "random_targets = 1")
    .partition("[attack]")[0]
)
ATTACK_TABLE = '[[attack]]\nname = "closest-distance"\nn_shadows = 4\n'
SMALL_LIRA = {"name": "lira", "pool_size": 60, "n_models": 6, "n_boot": 40}
LOGISTIC = {"name": "logistic-regression", "epochs": 1}
CLINIC_RECORD: dict[str, dict[str, Any]] = {  # a record game on the user's clinic.csv (tests/data/test_files.py)
    "game": {
        "name": "record-model-seeded",
        "dataset_size": 40,
        "auxiliary_size": 80,
        "evaluation_size": 80,
        "rounds": 6,
        "vulnerable_targets": 1,
        "random_targets": 1,
        "n_boot": 40,
    },
    "mechanism": {"name": "synthpop"},
    "attack": {"name": "closest-distance", "n_shadows": 4},
}


def toml(sections: dict[str, dict[str, Any]], *, name: str = "replay", repetitions: int = 1) -> str:
    """A config: ``[experiment]`` (seed 1) and then ``sections`` in their order."""
    tables = {"experiment": {"name": name, "seed": 1, "repetitions": repetitions}, **sections}
    lines = []
    for section, values in tables.items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in values.items()]
    return "\n".join(lines) + "\n"


# -- what a replay is, and what it measured --------------------------------------------------------------------------
@dataclass(frozen=True)
class Replay:
    """One command to replay: ``argv`` run in ``cwd``; it may write only ``outputs``; ``check`` (after the command)
    returns what is wrong with its result by the item's own criteria, or ``None``."""

    argv: list[str]
    cwd: Path
    outputs: tuple[Path, ...] = ()
    check: Callable[[], str | None] | None = None


@dataclass(frozen=True)
class Item:
    name: str
    expected: str  # "refused", "runs" or "recomputed"
    build: Callable[[Workspace], Replay]
    needle: str | None = None  # a phrase stderr must hold
    within: float | None = None  # seconds the command must end within
    requires: str | None = None  # a module without which the item is skipped


@dataclass
class Measured:
    item: Item
    got: str = ""
    status: int | None = None
    seconds: float = 0.0
    lines: list[str] = field(default_factory=list)
    traceback: bool = False
    imported: bool = False
    changed: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    folder: str = ""  # the item's temporary folder, left out of the line shown

    @property
    def as_expected(self) -> bool:
        return self.got == self.item.expected and not self.problems

    def shown_line(self) -> str:
        """The ``privgame: error:`` line, else the first warning of a corrupted cache entry (from its category on:
        its file and line are privgame's), else the last line."""
        lines = [line.replace(self.folder, "") for line in self.lines] if self.folder else self.lines
        for line in lines:
            if "privgame: error:" in line:
                return line
        for line in lines:
            if "corrupted cache entry" in line:
                return line[line.find("UserWarning") :] if "UserWarning" in line else line
        return lines[-1] if lines else ""


ITEMS: list[Item] = []


def item(
    name: str, expected: str, *, needle: str | None = None, within: float | None = None, requires: str | None = None
) -> Callable[[Callable[[Workspace], Replay]], Callable[[Workspace], Replay]]:
    def register(build: Callable[[Workspace], Replay]) -> Callable[[Workspace], Replay]:
        ITEMS.append(Item(name, expected, build, needle, within, requires))
        return build

    return register


class SetupError(RuntimeError):
    """Building an item's input failed (not the replayed command)."""


class Session:
    """The run's temporary folder: the children's PYTHONPATH folder and the finished results directories that
    items copy (built once, on first use)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.site = root / "site"
        self.site.mkdir()
        (self.site / f"{EVIL}.py").write_text(PLANTED)
        for path in PLUGIN_FILES:
            shutil.copy(path, self.site / path.name)
        self._bases: dict[str, Path] = {}

    def env(self, box: Path) -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(self.site), env.get("PYTHONPATH")]))
        env["PRIVGAME_CACHE_DIR"] = str(box / "cache")
        env["PRIVGAME_REPLAY_MARKER"] = str(box / "imported")
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        return env

    def base(self, name: str) -> Path:
        """A folder holding ``<name>.toml`` and its finished results directory ``<name>``."""
        if name not in self._bases:
            folder = self.root / "bases" / name
            folder.mkdir(parents=True)
            (folder / f"{name}.toml").write_text(BASES[name])
            _privgame(folder, self.env(folder), "run", f"{name}.toml", "--out", name, "--no-progress")
            self._bases[name] = folder
        return self._bases[name]


#: the finished results directories items start from
BASES = {"rr": ONE_RUN, "record": RECORD_HEAD + ATTACK_TABLE, "lira": toml({"game": SMALL_LIRA, "mechanism":
         LOGISTIC, "attack": {"name": "lira"}}, name="lira")}  # fmt: skip


def _privgame(cwd: Path, env: dict[str, str], *args: str) -> None:
    """A setup command: it must succeed."""
    done = subprocess.run(
        [sys.executable, "-m", "privgame.engine.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=SETUP_TIMEOUT,
    )
    if done.returncode != 0:
        raise SetupError(f"`privgame {' '.join(args)}` exited {done.returncode}: {done.stderr.strip()[-300:]}")


class Workspace:
    """One item's fresh folder: ``work`` holds its inputs and is the command's folder; the marker file and the
    default cache lie beside it."""

    def __init__(self, box: Path, session: Session) -> None:
        self.box = box
        self.work = box / "work"
        self.work.mkdir()
        self.session = session
        self.env = session.env(box)

    def write(self, name: str, text: str) -> Path:
        path = self.work / name
        path.write_text(text)
        return path

    def privgame(self, *args: str | Path) -> list[str]:
        return [sys.executable, "-m", "privgame.engine.cli", *map(str, args)]

    def setup(self, *args: str | Path) -> None:
        _privgame(self.work, self.env, *map(str, args))

    def results(self, name: str) -> Path:
        """A copy of the finished base ``name`` (its config beside it) in this folder; returns the results."""
        source = self.session.base(name)
        shutil.copy(source / f"{name}.toml", self.work / f"{name}.toml")
        shutil.copytree(source / name, self.work / name, symlinks=True)
        return self.work / name

    def run(self, config: str, *extra: str, check: Callable[[], str | None] | None = None) -> Replay:
        """``privgame run`` of the config text ``config`` into ``out``; a run that finishes must have no failed
        trial."""
        path = self.write("c.toml", config)
        out = self.work / "out"

        def finished() -> str | None:
            failures = out / "failures"
            if out.is_dir() and failures.is_dir() and any(failures.iterdir()):
                return f"failed trials: {sorted(p.name for p in failures.iterdir())}"
            return check() if check else None

        argv = self.privgame("run", path.name, "--out", "out", "--no-progress", *extra)
        return Replay(argv, self.work, (out,), finished)

    def clinic(self, n: int = 400, name: str = "clinic") -> tuple[Path, Path]:
        """A user's data file and its domain (tests/data/test_files.py)."""
        import numpy as np

        rng = np.random.default_rng(3)
        rows = ["age,sex,bmi,diagnosis"] + [
            f"{a},{s},{b:.1f},{d}"
            for a, s, b, d in zip(
                rng.integers(18, 90, n),
                rng.choice(["F", "M"], n),
                rng.normal(27, 5, n).clip(12, 60),
                rng.choice(["healthy", "sick"], n),
                strict=True,
            )
        ]
        return self.write(f"{name}.csv", "\n".join(rows) + "\n"), self.write(f"{name}.domain.toml", CLINIC_DOMAIN)

    def on_data(self, path: str, domain: str = "clinic.domain.toml") -> str:
        """The clinic record config reading the data file ``path``."""
        return toml({"data": {"path": path, "domain": domain}, **CLINIC_RECORD}, name="own_data")


# -- measuring ---------------------------------------------------------------------------------------------------------
def snapshot(folder: Path) -> dict[Path, str]:
    """Every path under ``folder``, never following a link or opening anything but a regular file: a regular
    file's SHA-256, a link's target, or its kind."""
    seen: dict[Path, str] = {}
    for top, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(top) / name
            mode = os.lstat(path).st_mode
            if stat.S_ISREG(mode):
                seen[path] = hashlib.sha256(path.read_bytes()).hexdigest()
            elif stat.S_ISLNK(mode):
                seen[path] = "link -> " + os.readlink(path)
            else:
                seen[path] = "dir" if stat.S_ISDIR(mode) else f"special {stat.S_IFMT(mode):o}"
    return seen


def _under(path: Path, outputs: tuple[Path, ...]) -> bool:
    return any(path == out or out in path.parents for out in outputs)


def replay(entry: Item, session: Session) -> Measured:
    measured = Measured(entry)
    with tempfile.TemporaryDirectory(prefix="privgame-replay-") as tmp:
        ws = Workspace(Path(tmp), session)
        measured.folder = f"{ws.work}{os.sep}"
        try:
            plan = entry.build(ws)
        except (SetupError, subprocess.TimeoutExpired) as exc:
            measured.got = "setup failed"
            measured.problems.append(str(exc))
            return measured
        # a refused command writes nothing at all
        outputs = () if entry.expected == "refused" else plan.outputs
        before = snapshot(ws.work)
        started = time.perf_counter()
        try:
            done = subprocess.run(plan.argv, cwd=plan.cwd, env=ws.env, capture_output=True, text=True, timeout=TIMEOUT)
            measured.status, out, err = done.returncode, done.stdout, done.stderr
        except subprocess.TimeoutExpired as exc:
            measured.status, out = None, ""
            err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        measured.seconds = time.perf_counter() - started
        after = snapshot(ws.work)
        measured.lines = [line for line in err.splitlines() if line.strip()]
        measured.traceback = any(word in text for word in ("Traceback", "unexpected") for text in (out, err))
        measured.imported = (ws.box / "imported").exists()
        measured.changed = [
            str(p.relative_to(ws.work)) for p, h in before.items() if not _under(p, outputs) and after.get(p) != h
        ]
        created = [str(p.relative_to(ws.work)) for p in after if p not in before and not _under(p, outputs)]
        measured.got = classify(measured.status, measured.lines, err)
        problems = measured.problems
        if measured.traceback:
            problems.append("traceback or 'unexpected' in the output")
        if measured.imported:
            problems.append(f"{EVIL} imported")
        if measured.changed:
            problems.append(f"changed: {', '.join(measured.changed[:3])}")
        if created:
            problems.append(f"created: {', '.join(created[:3])}")
        if entry.needle and entry.needle not in err:
            problems.append(f"stderr lacks {entry.needle!r}")
        if entry.within is not None and measured.seconds >= entry.within:
            problems.append(f"took {measured.seconds:.1f} s, not under {entry.within:g} s")
        if measured.status is not None and plan.check is not None and (wrong := plan.check()):
            problems.append(wrong)
    return measured


def classify(status: int | None, lines: list[str], err: str) -> str:
    if status is None:
        return f"hung ({TIMEOUT:g} s)"
    if status == 2 and len(lines) == 1:
        return "refused"
    if status == 0:
        return "recomputed" if "corrupted cache entry" in err else "runs"
    return f"exit {status}, {len(lines)} lines"


# -- the items ---------------------------------------------------------------------------------------------------------
def _edit_manifest(root: Path, change: Callable[[dict[str, Any]], Any]) -> None:
    path = root / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))


def _edit_row(root: Path, trial: int, **values: Any) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = root / "trials" / f"trial-{trial:06d}.parquet"
    row = pq.read_table(path).to_pylist()[0]
    pq.write_table(pa.Table.from_pylist([{**row, **values}]), path)


def _absent(path: Path) -> Callable[[], str | None]:
    return lambda: f"{path.name} was created" if os.path.lexists(path) else None


def _entries(cache: Path, ext: str) -> list[Path]:
    found = sorted(cache.rglob(f"*.{ext}"))
    if not found:
        raise SetupError(f"the setup run left no *.{ext} entry in {cache}")
    return found


# Code run from files privgame does not trust
@item(
    "cache entry (v1/arrays npz) names evil:factory, marker rewritten",
    "recomputed",
    needle="which its mechanism does not name",
)
def _cache_names_a_factory(ws: Workspace) -> Replay:

    config = toml(
        {
            "game": {**SMALL_LIRA, "data": "digits"},
            "mechanism": {
                "name": "dpsgd-mlp",
                "model": "torch_factories:two_layer_mlp",
                "noise_multiplier": 1.0,
                "steps": 2,
                "sampling_rate": 0.2,
            },
            "attack": {"name": "lira"},
        }
    )
    ws.write("c.toml", config)
    cache = ws.work / "cache"
    ws.setup("run", "c.toml", "--out", "first", "--no-progress", "--cache-dir", cache)
    for entry in _entries(cache, "npz"):
        try:
            forge_factory_name(entry, f"{EVIL}:factory")
        except ValueError as exc:
            raise SetupError(str(exc)) from None
    argv = ws.privgame("run", "c.toml", "--out", "again", "--no-progress", "--cache-dir", cache)
    return Replay(argv, ws.work, (ws.work / "again", cache))


def _plant(kind: str) -> Callable[[Workspace], Replay]:
    def build(ws: Workspace) -> Replay:
        root = ws.results("rr")

        def change(manifest: dict[str, Any]) -> None:  # tests/core/test_trust.py
            config = manifest["config"]
            if kind == "a plugin module":
                config["experiment"]["plugins"] = [EVIL]
            elif kind == "an estimator":
                config["mechanism"] = {"name": "sklearn", "estimator": f"{EVIL}.Classifier"}
            else:
                config["mechanism"] = {"name": "dpsgd-blackbox", "noise_multiplier": 1.0, "model": f"{EVIL}:factory"}

        _edit_manifest(root, change)
        again = ws.work / "again"
        return Replay(ws.privgame("reanalyse", "rr", "--out", "again", "--no-progress"), ws.work, (again,))

    return build


for _kind in ("a model factory", "an estimator", "a plugin module"):
    item(f"reanalyse: a stranger's manifest names {_kind}", "refused", needle="--trust-plugins")(_plant(_kind))


# Data overwritten or lost
@item("domain own.csv --output own.csv", "refused", needle="which this command reads")
def _domain_over_its_data(ws: Workspace) -> Replay:
    ws.clinic(name="own")
    return Replay(ws.privgame("domain", "own.csv", "--output", "own.csv"), ws.work)


@item("report DIR --output DIR/manifest.json", "refused", needle="must not be a results directory's own file")
def _report_over_the_manifest(ws: Workspace) -> Replay:
    ws.results("rr")
    return Replay(ws.privgame("report", "rr", "--output", "rr/manifest.json"), ws.work)


@item('run --cache-dir ""', "refused", needle="--cache-dir is empty")
def _empty_cache_dir(ws: Workspace) -> Replay:
    return ws.run(ONE_RUN, "--cache-dir", "")


# Hangs
@item("FIFO as [data] domain (run)", "refused", needle="must be a regular file, got a pipe (FIFO)", within=10)
def _fifo_domain(ws: Workspace) -> Replay:
    _, domain = ws.clinic()
    domain.unlink()
    os.mkfifo(domain)
    return ws.run(ws.on_data("clinic.csv"))


@item("FIFO as `privgame domain FILE`'s input", "refused", needle="got a pipe (FIFO)", within=10)
def _fifo_data(ws: Workspace) -> Replay:
    os.mkfifo(ws.work / "pipe.csv")
    return Replay(ws.privgame("domain", "pipe.csv"), ws.work)


@item("FIFO in the cache (payloads and markers)", "recomputed", within=TIMEOUT)
def _fifo_cache(ws: Workspace) -> Replay:
    ws.write("tiny.toml", TINY_MODEL_SEEDED)
    cache = ws.work / "cache"
    ws.setup("run", "tiny.toml", "--out", "first", "--no-progress", "--cache-dir", cache)
    for path in _entries(cache, "npz"):  # the generator's tables (privgame.core.cache's frame form)
        for entry in (path, path.with_suffix(".sha256")):
            entry.unlink()
            os.mkfifo(entry)
    argv = ws.privgame("run", "tiny.toml", "--out", "again", "--no-progress", "--cache-dir", cache)
    return Replay(argv, ws.work, (ws.work / "again", cache))


def _fifo_failures(ws: Workspace) -> Path:
    """Trial 1 unfinished with a FIFO for its failure record; a stray FIFO and a link to /dev/zero beside it."""
    root = ws.results("rr")
    (root / "trials" / "trial-000001.parquet").unlink()
    os.mkfifo(root / "failures" / "trial-000001.json")
    os.mkfifo(root / "failures" / "trial-000007.json")
    (root / "failures" / "trial-000008.json").symlink_to("/dev/zero")
    return root


@item("FIFO in a results directory's failures/: report", "runs", needle="trials failed", within=10)
def _fifo_failures_report(ws: Workspace) -> Replay:
    _fifo_failures(ws)
    return Replay(ws.privgame("report", "rr"), ws.work)


@item("FIFO in a results directory's failures/: resume", "runs", within=TIMEOUT)
def _fifo_failures_resume(ws: Workspace) -> Replay:
    root = _fifo_failures(ws)

    def resumed() -> str | None:
        if not (root / "trials" / "trial-000001.parquet").is_file():
            return "trial 1 not played again"
        return "the FIFO for trial 1 is left" if os.path.lexists(root / "failures" / "trial-000001.json") else None

    return Replay(ws.privgame("run", "rr.toml", "--out", "rr", "--no-progress"), ws.work, (root,), resumed)


# Wrong answers accepted silently
@item("one Linear layer used twice (dpsgd-whitebox, torch_factories:linear_twice)", "runs")
def _linear_twice(ws: Workspace) -> Replay:
    game = {"name": "one-run", "m": 40, "k_pos": 5, "k_neg": 5, "data": "digits", "train_rows": 100}
    mechanism = {
        "name": "dpsgd-whitebox",
        "model": "torch_factories:linear_twice",
        "canary_layout": "reserved",  # a user's model takes no dense canaries
        "noise_multiplier": 1.0,
        "steps": 2,
        "sampling_rate": 0.1,
        "clip_norm": 1.0,
        "learning_rate": 0.1,
    }
    return ws.run(toml({"game": game, "mechanism": mechanism, "attack": {"name": "identity"}}))


DUPLICATE = "age,sex,age,bmi,diagnosis,sex,sex\n40,F,41,20.0,sick,F,M\n"


@item("CSV with duplicate column names: domain", "refused", needle="column names must be distinct")
def _duplicate_domain(ws: Workspace) -> Replay:
    ws.write("dup.csv", DUPLICATE)
    return Replay(ws.privgame("domain", "dup.csv"), ws.work)


@item("CSV with duplicate column names: run", "refused", needle="column names must be distinct")
def _duplicate_run(ws: Workspace) -> Replay:
    ws.clinic()
    ws.write("dup.csv", DUPLICATE)
    return ws.run(ws.on_data("dup.csv"))


def _nested_parquet(ws: Workspace) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"age": [40, 41], "bmi": [[1, 2], [3]]}), ws.work / "nested.parquet")


@item("Parquet column of lists: domain", "refused", needle="must hold one number or text per cell")
def _lists_domain(ws: Workspace) -> Replay:
    _nested_parquet(ws)
    return Replay(ws.privgame("domain", "nested.parquet"), ws.work)


@item("Parquet column of lists: run", "refused", needle="must hold one number or text per cell")
def _lists_run(ws: Workspace) -> Replay:
    ws.clinic()
    _nested_parquet(ws)
    return ws.run(ws.on_data("nested.parquet"))


def _tampered(edit: Callable[[Path], None], *command: str) -> Callable[[Workspace], Replay]:
    def build(ws: Workspace) -> Replay:
        root = ws.results("rr")
        edit(root)
        argv = ws.privgame(*[part.format(root="rr") for part in command])
        return Replay(argv, ws.work, (ws.work / "again",), _absent(ws.work / "again"))

    return build


GRID_POINT = "grid_point must be one of the manifest's grid points"
item("results row with a negative grid point: report", "refused", needle=GRID_POINT)(
    _tampered(lambda root: _edit_row(root, 1, grid_point=-1), "report", "{root}")
)


# Crashes
RISK = "0.501"  # the lowest --risk: every record one attack scores above chance is at risk (records found alone)


@item("report --compare, one [[attack]] table", "runs", needle="at risk under one attack only")
def _compare_one(ws: Workspace) -> Replay:
    ws.results("record")
    return Replay(ws.privgame("report", "record", "--compare", "--risk", RISK), ws.work)


@item("two identical [[attack]] tables: run", "refused", needle="each grid point must play its own")
def _identical_tables(ws: Workspace) -> Replay:
    return ws.run(RECORD_HEAD + ATTACK_TABLE * 2)


@item("report --compare on a LiRA run", "runs")
def _compare_lira(ws: Workspace) -> Replay:
    ws.results("lira")
    return Replay(ws.privgame("report", "lira", "--compare", "--risk", RISK), ws.work)


@item("report --curves NAME whose grid point's file is a folder", "refused", needle="is a directory; give a file")
def _curves_folder(ws: Workspace) -> Replay:
    ws.results("rr")
    (ws.work / "c-p1.png").mkdir()
    return Replay(ws.privgame("report", "rr", "--curves", "c.png"), ws.work)


@item("run --force on a results directory whose raw/ is a symlink", "runs")
def _force_linked_raw(ws: Workspace) -> Replay:
    root = ws.results("rr")
    elsewhere = ws.work / "elsewhere"
    shutil.move(root / "raw", elsewhere)
    (root / "raw").symlink_to(elsewhere, target_is_directory=True)
    text = ONE_RUN.replace("seed = 7", "seed = 8")
    ws.write("other.toml", text)

    def link_removed() -> str | None:
        raw = root / "raw"
        if raw.is_symlink() or not raw.is_dir():
            return "raw/ is still a link"
        return None if len(list(raw.iterdir())) == 4 else f"raw/ holds {len(list(raw.iterdir()))} files, not 4"

    argv = ws.privgame("run", "other.toml", "--out", "rr", "--force", "--no-progress")
    return Replay(argv, ws.work, (root,), link_removed)


item("tampered row: grid point 99 (report)", "refused", needle=GRID_POINT)(
    _tampered(lambda root: _edit_row(root, 1, grid_point=99), "report", "{root}")
)
item("tampered row: grid point 99 (reanalyse)", "refused", needle=GRID_POINT)(
    _tampered(lambda root: _edit_row(root, 1, grid_point=99), "reanalyse", "{root}", "--out", "again")
)
item("tampered manifest: grid without params (report)", "refused", needle="must give its params as a table")(
    _tampered(lambda root: _edit_manifest(root, lambda m: m["grid"][0].pop("params")), "report", "{root}")
)


def _without_scores(root: Path) -> None:
    """Trial 1's raw arrays without the scores, the row's checksum updated (tests/engine/test_reading_results.py)."""
    import numpy as np

    path = root / "raw" / "trial-000001.npz"
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files if k != "scores"}
    np.savez(path, **arrays)
    _edit_row(root, 1, sha256_raw=hashlib.sha256(path.read_bytes()).hexdigest())


item("tampered raw: without scores (report leaves the trial out)", "runs", needle="lacks the trial's scores")(
    _tampered(_without_scores, "report", "{root}")
)
item("tampered raw: without scores (reanalyse)", "refused", needle="cannot be reanalysed")(
    _tampered(_without_scores, "reanalyse", "{root}", "--out", "again")
)


def _plain_classifier(name: str) -> Callable[[Workspace], Replay]:
    def build(ws: Workspace) -> Replay:
        mechanism = {"name": "sklearn", "estimator": f"plain_classifiers.{name}", "params": {"smoothing": 2.0}}
        return ws.run(toml({"game": SMALL_LIRA, "mechanism": mechanism, "attack": {"name": "lira"}}))

    return build


item("sklearn classifier without _parameter_constraints (Prior)", "runs")(_plain_classifier("Prior"))
item("sklearn-like classifier without BaseEstimator (Counts)", "runs")(_plain_classifier("Counts"))


@item("cache entry replaced by a folder", "recomputed")
def _folder_cache(ws: Workspace) -> Replay:
    ws.write("tiny.toml", TINY_MODEL_SEEDED)
    cache = ws.work / "cache"
    ws.setup("run", "tiny.toml", "--out", "first", "--no-progress", "--cache-dir", cache)
    kept = []
    for path in _entries(cache, "npz"):  # the generator's tables (privgame.core.cache's frame form)
        path.unlink()
        path.mkdir()
        (path / "keep").write_text("a stranger's file")
        kept.append(path / "keep")

    def kept_folders() -> str | None:
        lost = [p for p in kept if not p.is_file() or p.read_text() != "a stranger's file"]
        return f"{len(lost)} folders in the cache lost their file" if lost else None

    argv = ws.privgame("run", "tiny.toml", "--out", "again", "--no-progress", "--cache-dir", cache)
    return Replay(argv, ws.work, (ws.work / "again", cache), kept_folders)


# Accepted, then every trial fails
def _lira(mechanism: dict[str, Any], attack: dict[str, Any] | None = None, **game: Any) -> str:
    return toml({"game": {**SMALL_LIRA, **game}, "mechanism": mechanism, "attack": attack or {"name": "lira"}})


item("mlp hidden = [] (no hidden layer)", "runs")(lambda ws: ws.run(_lira({"name": "mlp", "hidden": [], "epochs": 1})))
item("LiRA n_models = 4 with fix_variance", "refused", needle="n_models must be at least 6")(
    lambda ws: ws.run(_lira(LOGISTIC, {"name": "lira", "fix_variance": True}, n_models=4))
)


@item("LiRA on an integer label of three classes", "runs")
def _three_classes(ws: Workspace) -> Replay:
    import numpy as np

    rng = np.random.default_rng(3)
    ages, sexes, grades = rng.integers(18, 90, 200), rng.choice(["F", "M"], 200), rng.integers(1, 4, 200)
    rows = ["age,sex,grade"] + [f"{a},{s},{g}" for a, s, g in zip(ages, sexes, grades, strict=True)]
    ws.write("clinic.csv", "\n".join(rows) + "\n")
    ws.write(
        "clinic.domain.toml",
        '[columns.age]\nkind = "int"\nrange = [18, 99]\n[columns.sex]\nkind = "category"\ncategories = ["F", "M"]\n'
        '[columns.grade]\nkind = "int"\nrange = [1, 3]\n',
    )
    data = {"path": "clinic.csv", "domain": "clinic.domain.toml", "label": "grade"}
    game = {**SMALL_LIRA}
    return ws.run(
        toml({"data": data, "game": game, "mechanism": LOGISTIC, "attack": {"name": "lira", "online": False}})
    )


RECORD_GAME = {"name": "record-model-seeded", "dataset_size": 50, "rounds": 2, "vulnerable_targets": 1}
item("record game on PrivBayes without public ranges", "refused", needle="needs a public range")(
    lambda ws: ws.run(
        toml(
            {
                "game": RECORD_GAME,
                "mechanism": {"name": "privbayes", "epsilon": 1.0},
                "attack": {"name": "closest-distance", "n_shadows": 2},
            }
        )
    )
)
item("record game with sizes 2/2/2", "refused", needle="dataset_size must be at least 5")(
    lambda ws: ws.run(
        toml(
            {
                "game": {
                    "name": "record",
                    "dataset_size": 2,
                    "auxiliary_size": 2,
                    "evaluation_size": 2,
                    "vulnerable_targets": 1,
                    "random_targets": 0,
                },
                "mechanism": {"name": "synthpop"},
                "attack": {"name": "closest-distance", "n_shadows": 2},
            }
        )
    )
)
item("LiRA on the digits", "runs")(lambda ws: ws.run(_lira(LOGISTIC, data="digits")))
item("mlp with a huge hidden layer (8 x 65,536)", "refused", needle="of memory")(
    lambda ws: ws.run(_lira({"name": "mlp", "hidden": [65536] * 8, "epochs": 1}, data="adult", pool_size=200))
)
item('device = "cuda:99"', "refused", needle="device must be")(
    lambda ws: ws.run(_lira({**LOGISTIC, "device": "cuda:99"}))
)
item("PANORAMIA with the CNN classifier on a table", "refused", needle="mechanism 'cnn' reads images")(
    lambda ws: ws.run(
        toml(
            {
                "game": {
                    "name": "panoramia",
                    "data": "adult",
                    "train_size": 600,
                    "generator_rows": 200,
                    "m": 200,
                    "helper_rows": 200,
                    "o1_candidates": 0,
                },
                "mechanism": {"name": "mlp", "epochs": 1},
                "attack": {"name": "classifier-mia"},
                "attack.classifier": {"name": "cnn", "image": [1, 9, 12]},
            }
        )
    )
)


@item(
    "opacus-whitebox, default model, 40 canaries > its 16 coordinates",
    "refused",
    needle="16 trainable coordinates",
    requires="opacus",
)
def _opacus_coordinates(ws: Workspace) -> Replay:
    columns = "abcdefg"  # seven features and a binary label: logistic regression has 7·2 + 2 = 16 coordinates
    rows = [",".join([*columns, "y"])] + [
        ",".join(str((i + k) % 5) for k in range(7)) + f",{i % 2}" for i in range(120)
    ]
    ws.write("tiny.csv", "\n".join(rows) + "\n")
    domain = "".join(f'[columns.{c}]\nkind = "int"\nrange = [0, 4]\n' for c in columns)
    ws.write("tiny.domain.toml", domain + '[columns.y]\nkind = "int"\nrange = [0, 1]\n')
    mechanism = {
        "name": "opacus-whitebox",
        "sampling_rate": 0.1,
        "noise_multiplier": 1.0,
        "steps": 2,
        "clip_norm": 1.0,
        "learning_rate": 0.1,
    }
    sections: dict[str, dict[str, Any]] = {
        "data": {"path": "tiny.csv", "domain": "tiny.domain.toml", "label": "y"},
        "game": {"name": "one-run", "m": 40, "k_pos": 5, "k_neg": 5, "train_rows": 100},
        "mechanism": mechanism,
        "attack": {"name": "identity"},
    }
    return ws.run(toml(sections))


@item("report --plot /dev/full (an unwritable device)", "refused", needle="is a device")
def _plot_device(ws: Workspace) -> Replay:
    ws.results("rr")
    return Replay(ws.privgame("report", "rr", "--plot", "/dev/full"), ws.work)


@item("report --ladder whose table name is taken (a folder)", "refused", needle="is a directory")
def _ladder_taken(ws: Workspace) -> Replay:
    ws.results("rr")
    (ws.work / "taken.tex").mkdir()
    return Replay(ws.privgame("report", "rr", "--ladder", "taken.png"), ws.work)


def _wide(ws: Workspace) -> None:
    """A million columns, 7 MB: pandas alone takes minutes and gigabytes on the header."""
    ws.write("wide.csv", ",".join(f"c{i}" for i in range(10**6)) + "\n" + ",".join("1" for _ in range(10**6)) + "\n")


@item("7 MB CSV of 10^6 columns: domain", "refused", needle="must have at most 10,000 columns", within=10)
def _wide_domain(ws: Workspace) -> Replay:
    _wide(ws)
    return Replay(ws.privgame("domain", "wide.csv"), ws.work)


@item("7 MB CSV of 10^6 columns: run", "refused", needle="must have at most 10,000 columns", within=10)
def _wide_run(ws: Workspace) -> Replay:
    ws.clinic()
    _wide(ws)
    return ws.run(ws.on_data("wide.csv"))


ZERO = "must be a regular file, got a device or socket"


@item("data file a link to /dev/zero: domain", "refused", needle=ZERO, within=10)
def _zero_domain(ws: Workspace) -> Replay:
    (ws.work / "zero.csv").symlink_to("/dev/zero")
    return Replay(ws.privgame("domain", "zero.csv"), ws.work)


@item("data file a link to /dev/zero: run", "refused", needle="'/dev/zero'", within=10)
def _zero_data_run(ws: Workspace) -> Replay:
    ws.clinic()
    (ws.work / "zero.csv").symlink_to("/dev/zero")
    return ws.run(ws.on_data("zero.csv"))


@item("domain file a link to /dev/zero: run", "refused", needle=ZERO, within=10)
def _zero_domain_run(ws: Workspace) -> Replay:
    _, domain = ws.clinic()
    domain.unlink()
    domain.symlink_to("/dev/zero")
    return ws.run(ws.on_data("clinic.csv"))


API = """import sys
import pandas
import privgame
try:
    privgame.run(pandas.DataFrame({"a": [1, 2, 3], "b": [4, 5, 6]}), progress=False)
except (TypeError, ValueError) as exc:  # the API raises: its message must be one line
    print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
    sys.exit(2)
"""


@item("API: privgame.run(DataFrame) raises, message on one line", "refused", needle="a DataFrame of shape (3, 2)")
def _api_dataframe(ws: Workspace) -> Replay:
    return Replay([sys.executable, "-c", API], ws.work)


# -- the table ---------------------------------------------------------------------------------------------------------
def _cell(text: str, width: int = 100) -> str:
    text = text.replace("|", "\\|")
    return text if len(text) <= width else text[: width - 1] + "…"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", metavar="SUBSTRING", help="replay only the items whose name holds SUBSTRING")
    args = parser.parse_args(argv)
    chosen = [i for i in ITEMS if args.only is None or args.only.lower() in i.name.lower()]
    if not chosen:
        parser.error(f"no item's name holds {args.only!r}")
    started = time.perf_counter()
    results: list[Measured] = []
    skipped: list[str] = []
    print("| item | expected | got | exit | stderr lines | seconds | line |")
    print("| --- | --- | --- | --- | ---: | ---: | --- |")
    with tempfile.TemporaryDirectory(prefix="privgame-replay-session-") as tmp:
        session = Session(Path(tmp))
        for entry in chosen:
            if entry.requires is not None:
                import importlib.util

                if importlib.util.find_spec(entry.requires) is None:
                    skipped.append(entry.name)
                    print(
                        f"| {_cell(entry.name, 80)} | {entry.expected} | skipped ({entry.requires} missing) | | | | |"
                    )
                    continue
            measured = replay(entry, session)
            results.append(measured)
            got = measured.got if not measured.problems else f"{measured.got}; {'; '.join(measured.problems)}"
            status = "timeout" if measured.status is None else str(measured.status)
            mark = "" if measured.as_expected else "**NOT AS EXPECTED** "
            print(
                f"| {_cell(entry.name, 80)} | {entry.expected} | {mark}{_cell(got, 160)} | {status} "
                f"| {len(measured.lines)} | {measured.seconds:.2f} | {_cell(measured.shown_line())} |",
                flush=True,
            )
    headline = {
        "items": len(results),
        "as_expected": sum(m.as_expected for m in results),
        "max_seconds": round(max((m.seconds for m in results), default=0.0), 2),
        "tracebacks": sum(m.traceback for m in results),
        "imports": sum(m.imported for m in results),
        "inputs_changed": sum(bool(m.changed) for m in results),
    }
    print(f"\n{len(results)} items replayed in {time.perf_counter() - started:.0f} s; skipped: {skipped or 'none'}")
    print(json.dumps(headline))
    return 0 if headline["as_expected"] == headline["items"] else 1


if __name__ == "__main__":
    sys.exit(main())
