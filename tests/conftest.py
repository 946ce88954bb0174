"""Suite-wide fixtures: no test writes to the user's real artefact cache."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRIVGAME_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "privgame-cache"))


@pytest.fixture(autouse=True)
def _data_set_catalogue_restored():
    """Every data set a test registers (a plugin's, a config's [data] file) is gone after it."""
    from games.datasets.dataset import _CATALOGUE, dataset_names

    dataset_names()  # the built-ins first
    before = dict(_CATALOGUE)
    yield
    _CATALOGUE.clear()
    _CATALOGUE.update(before)


@pytest.fixture
def run_refused(tmp_path, capsys):
    """``run_refused(text, *needles)``: ``privgame run`` on the config ``text`` exits 2 with one line on stderr that
    holds every needle, and makes no results directory; returns that line."""
    from games.cli import main

    def check(text: str, *needles: str) -> str:
        config = tmp_path / "refused.toml"
        config.write_text(text)
        out = tmp_path / "refused-out"
        assert main(["run", str(config), "--out", str(out), "--no-progress"]) == 2
        lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert len(lines) == 1 and all(n in lines[0] for n in needles), lines
        assert not out.exists()
        return lines[0]

    return check
