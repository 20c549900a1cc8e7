"""Shared test setup: no test may write to the user's real history store."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _isolated_history_store(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    store_dir = tmp_path_factory.mktemp("store")
    monkeypatch.setenv("L4LITE_STORE", str(store_dir / "history.sqlite3"))
    monkeypatch.setenv("XDG_DATA_HOME", str(store_dir / "xdg"))


@pytest.fixture(autouse=True, scope="session")
def _incidents_match_the_published_schema() -> Iterator[None]:
    """Every incident the code under test saves (``Incident.save``: ``analyze --json``, the API) is validated
    against docs/incident.schema.json; the session fails at its end if one did not match."""
    from schema_helpers import problems

    from l4lite.diagnose.incident import Incident

    bad: list[str] = []
    save = Incident.save

    def checked_save(self: Incident, path: str | os.PathLike[str]) -> None:
        save(self, path)
        found = problems(json.loads(self.to_json()))
        if found:
            bad.append(f"{path}: {found[0]}")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Incident, "save", checked_save)
        yield
    if bad:
        raise AssertionError(f"{len(bad)} incident(s) saved by the tests do not match the schema:\n" + "\n".join(bad[:20]))
