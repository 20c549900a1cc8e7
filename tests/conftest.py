"""Shared test setup: no test may write to the user's real history store."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_history_store(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    store_dir = tmp_path_factory.mktemp("store")
    monkeypatch.setenv("L4LITE_STORE", str(store_dir / "history.sqlite3"))
    monkeypatch.setenv("XDG_DATA_HOME", str(store_dir / "xdg"))
