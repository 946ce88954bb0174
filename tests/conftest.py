"""Suite-wide fixtures: no test writes to the user's real artefact cache."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRIVGAME_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "privgame-cache"))
