"""Export and import of a history store as JSON (schema ``l4lite.history/1``), to share a fault library.

Only JSON is read, and every field is checked before anything is written, so a malformed or hostile file
fails with one line naming the file and the field, and leaves the store untouched. Entries carry a random uid
so that importing the same file twice, or files that passed through several clusters, adds nothing twice.

Layout::

    {"schema": "l4lite.history/1", "exported_at": ISO, "store_schema_version": 2,
     "templates": {template_id: template text},
     "faults": [{"uid", "confirmed_at", "category", "cause", "node", "key", "origin", "templates": [id, ...]}],
     "healthy_jobs": [{"uid", "key", "path", "recorded_at", "start_time", "end_time", "lines_read", "info",
                       "counts": {template_id: count}}]}
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from l4lite.errors import L4Error
from l4lite.history import schema
from l4lite.vocab import CATEGORIES

EXPORT_SCHEMA = "l4lite.history/1"
MAX_TEXT = 10_000  # longest string accepted for a template, cause or path
# Builds the error for a bad field (where, problem); the checkers raise it so the message names the input.
_Fail = Callable[[str, str], L4Error]


@dataclass
class Export:
    """A checked export, ready to be written."""

    templates: dict[str, str] = field(default_factory=dict)
    faults: list[dict[str, Any]] = field(default_factory=list)
    healthy_jobs: list[dict[str, Any]] = field(default_factory=list)


def export_store(c: sqlite3.Connection, include_healthy: bool = True) -> dict[str, Any]:
    """Read the fault library (and healthy jobs) from an open store connection into export data."""
    templates: dict[str, str] = {}
    members: dict[int, list[str]] = {}
    for fid, tid, text in c.execute(
        "SELECT ft.fault_id, ft.template_id, t.template FROM fault_templates ft "
        "JOIN templates t ON t.template_id = ft.template_id ORDER BY ft.fault_id, ft.template_id"
    ):
        members.setdefault(fid, []).append(tid)
        templates[tid] = text
    faults = [
        {
            "uid": uid, "confirmed_at": iso_time(confirmed_at), "category": category, "cause": cause, "node": node,
            "key": key, "origin": origin, "templates": members.get(fid, []),
        }
        for fid, uid, confirmed_at, category, cause, node, key, origin in c.execute(
            "SELECT id, uid, confirmed_at, category, cause, node, key, origin FROM faults ORDER BY id"
        )
    ]
    healthy: list[dict[str, Any]] = []
    if include_healthy:
        counts: dict[int, dict[str, int]] = {}
        for job_id, tid, n, text in c.execute(
            "SELECT jt.job_id, jt.template_id, jt.count, t.template FROM job_templates jt "
            "JOIN jobs j ON j.id = jt.job_id JOIN templates t ON t.template_id = jt.template_id "
            "WHERE j.kind = 'healthy' ORDER BY jt.job_id, jt.template_id"
        ):
            counts.setdefault(job_id, {})[tid] = n
            templates[tid] = text
        for job_id, uid, key, path, recorded_at, start, end, lines, info in c.execute(
            "SELECT id, uid, key, path, recorded_at, start_time, end_time, lines_read, info FROM jobs "
            "WHERE kind = 'healthy' ORDER BY id"
        ):
            healthy.append(
                {
                    "uid": uid, "key": key, "path": path, "recorded_at": iso_time(recorded_at), "start_time": start,
                    "end_time": end, "lines_read": lines, "info": json.loads(info or "{}"),
                    "counts": counts.get(job_id, {}),
                }
            )
    return {
        "schema": EXPORT_SCHEMA,
        "exported_at": iso_time(time.time()),
        "store_schema_version": schema.SCHEMA_VERSION,
        "templates": dict(sorted(templates.items())),
        "faults": faults,
        "healthy_jobs": healthy,
    }


def validate_export(data: Any, origin: str) -> Export:
    """Check every field of export data; raise ``L4Error`` with one line naming ``origin`` and the field."""

    def fail(where: str, problem: str) -> L4Error:
        return L4Error(f"{origin}: {where}: {problem}")

    if not isinstance(data, dict):
        raise fail("top level", f"expected a JSON object, got {_kind(data)}")
    if data.get("schema") != EXPORT_SCHEMA:
        raise fail("schema", f"not an l4lite history export (got {data.get('schema')!r}, expected {EXPORT_SCHEMA!r})")
    out = Export()
    templates = data.get("templates", {})
    if not isinstance(templates, dict):
        raise fail("templates", f"expected an object, got {_kind(templates)}")
    for tid, text in templates.items():
        _text(fail, f"templates[{tid!r}]", text, allow_empty=True)
        _id(fail, "templates key", tid)
        out.templates[tid] = text
    for name, target, check in (("faults", out.faults, _fault), ("healthy_jobs", out.healthy_jobs, _healthy)):
        entries = data.get(name, [])
        if not isinstance(entries, list):
            raise fail(name, f"expected a list, got {_kind(entries)}")
        for i, entry in enumerate(entries):
            where = f"{name}[{i}]"
            if not isinstance(entry, dict):
                raise fail(where, f"expected an object, got {_kind(entry)}")
            target.append(check(fail, where, entry))
    return out


def _fault(fail: _Fail, where: str, e: dict[str, Any]) -> dict[str, Any]:
    category = e.get("category")
    if category not in CATEGORIES:
        raise fail(f"{where}.category", f"{category!r} is not one of {', '.join(CATEGORIES)}")
    members = e.get("templates")
    if not isinstance(members, list) or not members:
        raise fail(f"{where}.templates", "expected a non-empty list of template ids")
    for j, tid in enumerate(members):
        _id(fail, f"{where}.templates[{j}]", tid)
    return {
        "uid": _id(fail, f"{where}.uid", e.get("uid")),
        "confirmed_at": _time(fail, f"{where}.confirmed_at", e.get("confirmed_at"), required=True),
        "category": category,
        "cause": _text(fail, f"{where}.cause", e.get("cause")),
        "node": _optional_text(fail, f"{where}.node", e.get("node")),
        "key": _optional_text(fail, f"{where}.key", e.get("key")),
        "templates": sorted(set(members)),
    }


def _healthy(fail: _Fail, where: str, e: dict[str, Any]) -> dict[str, Any]:
    counts = e.get("counts")
    if not isinstance(counts, dict):
        raise fail(f"{where}.counts", f"expected an object of template id -> count, got {_kind(counts)}")
    for tid, n in counts.items():
        _id(fail, f"{where}.counts key", tid)
        if not _is_int(n) or n < 0:
            raise fail(f"{where}.counts[{tid!r}]", f"expected a count >= 0, got {n!r}")
    lines = e.get("lines_read")
    if not _is_int(lines) or lines < 0:
        raise fail(f"{where}.lines_read", f"expected an integer >= 0, got {lines!r}")
    info = e.get("info", {})
    if not isinstance(info, dict):
        raise fail(f"{where}.info", f"expected an object, got {_kind(info)}")
    return {
        "uid": _id(fail, f"{where}.uid", e.get("uid")),
        "key": _text(fail, f"{where}.key", e.get("key")),
        "path": _text(fail, f"{where}.path", e.get("path")),
        "recorded_at": _time(fail, f"{where}.recorded_at", e.get("recorded_at"), required=True),
        "start_time": _time(fail, f"{where}.start_time", e.get("start_time")),
        "end_time": _time(fail, f"{where}.end_time", e.get("end_time")),
        "lines_read": lines,
        "info": info,
        "counts": counts,
    }


def import_into(c: sqlite3.Connection, export: Export, origin: str) -> dict[str, int]:
    """Write a checked export inside the caller's transaction; return what was added and skipped."""
    result = {"faults_added": 0, "faults_skipped": 0, "healthy_added": 0, "healthy_skipped": 0}
    needed = {t for f in export.faults for t in f["templates"]} | {t for j in export.healthy_jobs for t in j["counts"]}
    c.executemany(
        "INSERT INTO templates (template_id, template) VALUES (?, ?) ON CONFLICT (template_id) "
        "DO UPDATE SET template = excluded.template WHERE templates.template = ''",
        [(tid, export.templates.get(tid, "")) for tid in sorted(needed)],
    )
    for f in export.faults:
        if c.execute("SELECT 1 FROM faults WHERE uid = ?", (f["uid"],)).fetchone():
            result["faults_skipped"] += 1
            continue
        cur = c.execute(
            "INSERT INTO faults (uid, job_id, confirmed_at, category, cause, node, key, origin) "
            "VALUES (?, NULL, ?, ?, ?, ?, ?, ?)",
            (f["uid"], f["confirmed_at"], f["category"], f["cause"], f["node"], f["key"], origin[:MAX_TEXT]),
        )
        c.executemany(
            "INSERT INTO fault_templates (fault_id, template_id) VALUES (?, ?)",
            [(cur.lastrowid, tid) for tid in f["templates"]],
        )
        result["faults_added"] += 1
    for j in export.healthy_jobs:
        if c.execute("SELECT 1 FROM jobs WHERE uid = ?", (j["uid"],)).fetchone():
            result["healthy_skipped"] += 1
            continue
        cur = c.execute(
            "INSERT INTO jobs (uid, kind, key, path, recorded_at, start_time, end_time, lines_read, info, "
            "fingerprint) VALUES (?, 'healthy', ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                j["uid"], j["key"], j["path"], j["recorded_at"], j["start_time"], j["end_time"], j["lines_read"],
                json.dumps(j["info"], sort_keys=True, default=str), f"imported:{j['uid']}",
            ),
        )
        c.executemany(
            "INSERT INTO job_templates (job_id, template_id, count) VALUES (?, ?, ?)",
            [(cur.lastrowid, tid, n) for tid, n in sorted(j["counts"].items())],
        )
        result["healthy_added"] += 1
    return result


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), type(value).__name__
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text(fail: _Fail, where: str, value: Any, allow_empty: bool = False) -> str:
    if not isinstance(value, str) or (not allow_empty and not value.strip()):
        raise fail(where, f"expected a non-empty string, got {_kind(value)}")
    if len(value) > MAX_TEXT:
        raise fail(where, f"string longer than {MAX_TEXT} characters")
    return value


def _optional_text(fail: _Fail, where: str, value: Any) -> str | None:
    return None if value is None else _text(fail, where, value)


def _id(fail: _Fail, where: str, value: Any) -> str:
    if not isinstance(value, str) or not value or len(value) > 200:
        raise fail(where, f"expected an id string, got {value!r}"[:200])
    return value


def _time(fail: _Fail, where: str, value: Any, required: bool = False) -> float | None:
    if value is None and not required:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    raise fail(where, f"expected an ISO 8601 time, got {value!r}"[:200])


def iso_time(epoch: float | None) -> str | None:
    """Epoch seconds as ISO 8601 UTC with a Z, the form the store shows and exports."""
    if epoch is None:
        return None
    return datetime.fromtimestamp(float(epoch), UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
