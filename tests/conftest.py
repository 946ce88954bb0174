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
