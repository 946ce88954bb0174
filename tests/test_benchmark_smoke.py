"""benchmarks/smoke.py fails CI when a benchmark breaks: every benchmark has a --quick mode, and a benchmark that
exits non-zero or ends without its JSON line is reported and makes the smoke run exit 1."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _smoke():
    spec = importlib.util.spec_from_file_location("benchmark_smoke", BENCHMARKS / "smoke.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("bench", sorted(p.name for p in BENCHMARKS.glob("bench_*.py")))
def test_every_benchmark_has_a_quick_mode(bench: str) -> None:
    assert re.search(r"add_argument\(\s*\"--quick\"", (BENCHMARKS / bench).read_text()), bench


def test_a_broken_benchmark_fails_the_smoke_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bench_fine.py").write_text(
        'import json, sys\nassert sys.argv[1:] == ["--quick"]\nprint(json.dumps({"x": 1}))\n'
    )
    (tmp_path / "bench_raises.py").write_text("raise TypeError(\"'module' object is not callable\")\n")
    (tmp_path / "bench_no_json.py").write_text('print("done")\n')
    assert _smoke().main(["--dir", str(tmp_path), "--timeout", "60"]) == 1
    out = capsys.readouterr().out
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["failed"] == ["bench_no_json", "bench_raises"]
    assert "bench_fine" in summary and "'module' object is not callable" in out
    assert "its last line is not a JSON object" in out and "exit status 1" in out
    assert _smoke().main(["--dir", str(tmp_path), "--only", "bench_fine"]) == 0
