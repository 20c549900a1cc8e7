"""The published schema docs/incident.schema.json: the incidents l4lite writes validate against it, and
``l4lite report`` refuses, with one line naming the field, every incident that breaks one of its constraints
(the report's own checker and the schema agree field by field)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from schema_helpers import SCHEMA_PATH, problems

from l4lite.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
REPORTS = sorted((ROOT / "fixtures" / "report").glob("*.json"))
SCHEMA = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
BASE = json.loads((ROOT / "fixtures" / "report" / "gpu_16node.json").read_text(encoding="utf-8"))
BASE["evidence"] = BASE["evidence"][:2]
BASE["evidence"][0]["context"] = [{"line": 1, "text": "before"}]
BASE["stats"].update({"lines_read": 10, "lines_skipped": {"blank": 2}, "warnings": ["a.log: 1 line cut"], "seconds": 1.5,
                      "templates": 3})
BASE["checkpoint"]["saved_after"] = [{"iteration": 20, "path": "/ckpt/step_20", "time": None, "complete": True}]
BASE["checkpoint"]["in_progress"] = {"iteration": 30, "path": "/ckpt/step_30", "time": None, "complete": False}
BASE["attempts"] = [
    {"attempt": 0, "verdict": False, "status": "incident", "category": "storage", "phase": "checkpoint",
     "iteration": 20, "failure_time": "2026-12-03T14:41:30Z", "nodes": ["gpt-worker-1"], "pods": ["gpt-worker-1"],
     "files": ["pods/default_gpt-worker-1_0f3e2d1c-7b6a-4958-8e7f-6a5b4c3d2e1f/pytorch/0.log"], "summary": "x",
     "root": {"file": "pods/default_gpt-worker-1_0f3e2d1c-7b6a-4958-8e7f-6a5b4c3d2e1f/pytorch/0.log", "line": 52,
              "text": "OSError: [Errno 28] No space left on device"}},
    {"attempt": 1, "verdict": True, "status": "incident", "category": "software", "phase": "train"}]


@pytest.mark.parametrize("path", REPORTS, ids=[p.name for p in REPORTS])
def test_fixture_incidents_validate(path: Path) -> None:
    assert problems(json.loads(path.read_text(encoding="utf-8"))) == []


@pytest.mark.parametrize("job", ["jobs/ib-link-down", "suite/000-healthy", "suite/013-loss_divergence",
                                 "suite/009-host_oom"])
def test_analyzed_jobs_validate(job: str, tmp_path: Path) -> None:
    out = tmp_path / "incident.json"
    code = main(["analyze", str(ROOT / "fixtures" / job), "--no-store", "--quiet", "--json", str(out)])
    data = json.loads(out.read_text(encoding="utf-8"))
    assert code == (0 if data["status"] == "healthy" else 1)
    assert problems(data) == []


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    return SCHEMA["$defs"][ref.rsplit("/", 1)[1]] if ref else node


_WRONG = [{"x": 1}, [1], "text", 1.5, 7, True]
_JSON_TYPES = {dict: "object", list: "array", str: "string", float: "number", int: "integer", bool: "boolean"}


def _violations(node: dict[str, Any]) -> Iterator[Any]:
    """Values that break this schema node's own constraints (type, enum, bounds)."""
    types = node.get("type")
    if types is not None:
        allowed = {types} if isinstance(types, str) else set(types)
        for value in _WRONG:
            kind = _JSON_TYPES[type(value)]
            if kind not in allowed and not (kind == "integer" and "number" in allowed):
                yield value
                break
    if "enum" in node:
        yield "no-such-value"
    if "minimum" in node:
        yield node["minimum"] - 1
    if "maximum" in node:
        yield node["maximum"] + 0.5


def _fields() -> Iterator[tuple[tuple[Any, ...], dict[str, Any]]]:
    """(path in BASE, schema node) for every named field the schema constrains, nested objects included."""
    def walk(path: tuple[Any, ...], node: dict[str, Any]) -> Iterator[tuple[tuple[Any, ...], dict[str, Any]]]:
        node = _resolve(node)
        for name, sub in node.get("properties", {}).items():
            if name == "schema":
                continue  # another schema name is another kind of file (tested in test_report)
            yield (*path, name), _resolve(sub)
            yield from walk((*path, name), sub)
        if "items" in node:
            yield from walk((*path, 0), node["items"])
    yield from walk((), SCHEMA)


CASES = [(path, value) for path, node in _fields() for value in _violations(node)]


@pytest.mark.parametrize("path, value", CASES, ids=[f"{'.'.join(map(str, p))}={json.dumps(v)}" for p, v in CASES])
def test_report_refuses_what_the_schema_refuses(path: tuple[Any, ...], value: Any, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    data = copy.deepcopy(BASE)
    node = data
    for key in path[:-1]:
        node = node[key] if not (isinstance(node, dict) and node.get(key) is None) else {}
    node[path[-1]] = value
    assert problems(data), "the schema accepts it"  # the case really is invalid
    bad = tmp_path / "invalid.json"
    bad.write_text(json.dumps(data))
    assert main(["report", str(bad), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and str(bad) in err
    field = str(path[-1]) if not isinstance(path[-1], int) else str(path[-2])
    assert field in err, (path, err)
    assert not (tmp_path / "r.html").exists()


def test_every_schema_field_is_covered() -> None:
    names = {p[-1] for p, _ in CASES}
    for field in ("status", "category", "phase", "iteration", "confidence", "role", "line", "count", "reasons",
                  "last_saved", "complete", "lines_skipped", "warnings", "context", "scope", "seconds", "lines_read",
                  "attempts", "attempt", "verdict", "root", "pods"):
        assert field in names, field


def test_json_to_stdout_is_the_incident_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--json -`` is for a pipe into jq: stdout holds the incident and nothing else, and no file named ``-``."""
    job = Path(__file__).resolve().parent.parent / "fixtures" / "jobs" / "ib-link-down"
    assert main(["analyze", str(job), "--json", "-", "--no-store"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert not problems(doc) and doc["category"] == "network"
    assert not Path("-").exists()
