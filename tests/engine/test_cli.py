"""The CLI's list and report commands, end to end on a small run."""

from __future__ import annotations

import io
import subprocess
import sys

import pandas as pd
import pytest

from privgame.analysis.ladder import LADDER
from privgame.engine.cli import main
from privgame.engine.registry import ATTACKS, GAMES, MECHANISMS


@pytest.fixture
def results(write_config, tmp_path):
    out = tmp_path / "out"
    assert main(["run", str(write_config()), "--out", str(out), "--no-progress", "--n-jobs", "2"]) == 0
    return out


def test_list_names_every_registered_component(capsys):
    assert main(["list"]) == 0
    text = capsys.readouterr().out
    for registry in (GAMES, MECHANISMS, ATTACKS):
        for name in registry.names():
            assert any(line.strip().startswith(name + " ") for line in text.splitlines())


REPORT_COLUMNS = [
    "mechanism.epsilon",
    "epsilon_analytic",
    "epsilon_lb_mean",
    "epsilon_lb_median",
    "ceiling",  # of the game's own bound (Steinke's on k_pos + k_neg guesses, every one right), and its marker
    "at_ceiling",
    "epsilon_lb_min",
    "epsilon_lb_max",
    "tightness",
    "over_claim",  # trials whose bound exceeds the claim (none here: randomized response is correct)
    "over_claim_allowed",  # the most that chance allows under a true claim (1 of 3 at 95 %)
    "verdict_p",
    "verdict",  # one verdict per claim, from the binomial test of the exceedances
    "n_trials",
]


def test_report_csv(results, capsys):
    capsys.readouterr()
    assert main(["report", str(results), "--format", "csv"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(table.columns) == REPORT_COLUMNS
    assert list(table["mechanism.epsilon"]) == [1.0, 2.0]
    assert list(table["n_trials"]) == [3, 3]
    assert list(table["over_claim"]) == [0, 0] and list(table["over_claim_allowed"]) == [1, 1]
    assert list(table["verdict"]) == ["not refuted", "not refuted"]
    assert (table["epsilon_lb_max"] <= table["epsilon_analytic"] + 1).all()
    assert table["tightness"].tolist() == pytest.approx(
        (table["epsilon_lb_median"] / table["epsilon_analytic"]).tolist()
    )


@pytest.mark.parametrize(
    ("fmt", "marker"), [("table", "mechanism.epsilon"), ("markdown", "|---:|"), ("latex", r"\toprule")]
)
def test_report_formats(results, capsys, fmt, marker):
    capsys.readouterr()
    assert main(["report", str(results), "--format", fmt]) == 0
    out = capsys.readouterr().out
    assert marker in out and len(out.strip().splitlines()) >= 3


def test_report_plot_and_output_file(results, tmp_path, capsys):
    png, pdf, table = tmp_path / "f.png", tmp_path / "f.pdf", tmp_path / "t.md"
    assert main(["report", str(results), "--plot", str(png), "--format", "markdown", "--output", str(table)]) == 0
    assert main(["report", str(results), "--plot", str(pdf)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG" and pdf.read_bytes()[:4] == b"%PDF"
    assert table.read_text().startswith("| mechanism.epsilon |")


def test_report_errors(tmp_path, results, capsys):
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "not a privgame results directory" in capsys.readouterr().err
    assert main(["report", str(results), "--plot", str(tmp_path / "f.gif")]) == 2
    assert "must end in .png, .pdf or .svg" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["report", str(results), "--format", "html"])


def test_report_ladder(results, tmp_path, capsys):
    capsys.readouterr()
    figure = tmp_path / "ladder.png"
    assert main(["report", str(results), "--ladder", str(figure), "--format", "csv"]) == 0
    out = capsys.readouterr().out
    ladder_part = out.split("\n\n", 1)[1]
    table = pd.read_csv(io.StringIO(ladder_part))
    assert set(table.columns) == {"setting", "estimator", "epsilon", "epsilon_true"}
    assert set(table["setting"]) == {"mechanism.epsilon=1.0", "mechanism.epsilon=2.0"}
    steinke = table[table["estimator"] == "one-run (Steinke)"]
    assert (steinke["epsilon"] <= steinke["epsilon_true"] + 0.5).all()
    assert figure.read_bytes()[:4] == b"\x89PNG"


def test_ladder_command(tmp_path, capsys):
    figure = tmp_path / "g.png"
    assert main(["ladder", "--mu", "1", "--n", "2000", "--plot", str(figure), "--format", "csv"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(table) == len(LADDER) and (table["epsilon"] <= table["epsilon_true"]).all()
    assert figure.exists()


def test_sigma_too_small_to_account_is_one_line_and_nothing_is_made(write_config, tmp_path, capsys):
    """The Gaussian mechanism at σ = 1e-300 has an ε beyond the largest float: refused before --out exists."""
    config = write_config(
        {"mechanism": {"name": "gaussian", "sigma": 1e-300}, "analysis": {"delta": 1e-5}}, drop=("mechanism.epsilon",)
    )
    out = tmp_path / "out"
    assert main(["run", str(config), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.replace("\r", "\n").splitlines() if line.strip() and "analytic ε" not in line]
    assert lines == [
        "privgame: error: sigma = 1e-300 is too small to account: its ε at delta = 1e-05 is about 1e600, beyond the "
        "largest float (about 1.8e308); use sigma >= 1e-154."
    ]
    assert "Traceback" not in err
    assert not out.exists()


# -- the command's exit ------------------------------------------------------------------------------------------


def _exit_now(body: str) -> subprocess.CompletedProcess[str]:
    code = "import atexit, sys, threading, time\nfrom privgame.engine.cli import exit_now\n" + body
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_exit_now_runs_the_atexit_handlers_flushes_the_streams_and_keeps_the_status():
    done = _exit_now(
        "atexit.register(lambda: print('atexit ran', flush=True))\n"
        "sys.stdout.write('unflushed ')\nsys.stderr.write('to stderr')\nexit_now(3)\n"
    )
    assert done.returncode == 3 and done.stdout == "unflushed atexit ran\n" and done.stderr == "to stderr"


def test_exit_now_lets_a_running_thread_that_is_not_a_daemon_finish():
    done = _exit_now(
        "def work():\n    time.sleep(0.5)\n    print('thread finished', flush=True)\n"
        "threading.Thread(target=work).start()\nexit_now(0)\n"
    )
    assert done.returncode == 0 and done.stdout == "thread finished\n"


def test_the_privgame_command_exits_with_main_s_status(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from privgame.engine.cli import console; console()",
            "run",
            str(tmp_path / "no.toml"),
            "--out",
            "x",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "does not exist" in done.stderr
