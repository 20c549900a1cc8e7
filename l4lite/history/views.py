"""Read-only listings of the history store: the fault library, the fleet view and recorded jobs.

Split from ``l4lite.history.store`` so that the store class keeps the writes and the matching; these queries only
read and turn rows into the JSON-ready dicts the ``history`` command prints.
"""

from __future__ import annotations

import re
import sqlite3
import time
from datetime import UTC, datetime
from typing import Any

from l4lite.errors import L4Error
from l4lite.history.transfer import iso_time


def list_faults(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """The fault library, newest first."""
    rows = conn.execute(
        "SELECT f.id, f.confirmed_at, f.category, f.cause, f.node, f.job_id, f.origin, "
        "(SELECT COUNT(*) FROM fault_templates t WHERE t.fault_id = f.id), "
        "(SELECT COUNT(*) FROM jobs j WHERE j.matched_fault = f.id) "
        "FROM faults f ORDER BY f.confirmed_at DESC, f.id DESC"
    ).fetchall()
    return [
        {
            "fault_id": r[0], "confirmed_at": iso_time(r[1]), "category": r[2], "cause": r[3], "node": r[4],
            "job_id": r[5], "origin": r[6], "templates": r[7], "matches": r[8],
        }
        for r in rows
    ]


def fleet_nodes(conn: sqlite3.Connection, since: float | str | datetime | None = None) -> list[dict[str, Any]]:
    """Nodes ranked by the incidents in which they were the top suspect (most first, then most recent).

    ``since`` (epoch seconds, ISO date/time or datetime) keeps incidents whose failure time (else end of
    logs, else recording time) is not earlier.
    """
    cutoff = since_cutoff(since)
    when = "COALESCE(failure_time, end_time, recorded_at)"
    rows = conn.execute(
        f"SELECT top_node, COALESCE(category, 'unknown'), COUNT(*), MAX({when}), MAX(id) FROM jobs "
        f"WHERE kind = 'analysis' AND status = 'incident' AND top_node IS NOT NULL AND {when} >= ? "
        "GROUP BY top_node, COALESCE(category, 'unknown')",
        (cutoff,),
    ).fetchall()
    confirmed = dict(
        conn.execute(
            "SELECT node, COUNT(*) FROM faults WHERE node IS NOT NULL AND confirmed_at >= ? GROUP BY node",
            (cutoff,),
        ).fetchall()
    )
    fleet: dict[str, dict[str, Any]] = {}
    for node, category, n, last, last_job in rows:
        entry = fleet.setdefault(
            node, {"node": node, "incidents": 0, "categories": {}, "last_seen": 0.0, "last_job": None}
        )
        entry["incidents"] += n
        entry["categories"][category] = n
        if last >= entry["last_seen"]:
            entry["last_seen"], entry["last_job"] = last, last_job
    for entry in fleet.values():
        entry["confirmed_faults"] = int(confirmed.get(entry["node"], 0))
        entry["categories"] = dict(sorted(entry["categories"].items(), key=lambda kv: (-kv[1], kv[0])))
    ranked = sorted(fleet.values(), key=lambda e: (-e["incidents"], -e["last_seen"], e["node"]))
    for entry in ranked:
        entry["last_seen"] = iso_time(entry["last_seen"])
    return ranked


def list_jobs(conn: sqlite3.Connection, limit: int | None = 50, kind: str | None = None) -> list[dict[str, Any]]:
    """Recorded jobs, newest first."""
    sql = (
        "SELECT j.id, j.kind, j.key, j.path, j.recorded_at, j.status, j.category, j.phase, j.failure_time, "
        "j.top_node, j.summary, j.lines_read, j.matched_fault, f.id FROM jobs j "
        "LEFT JOIN faults f ON f.job_id = j.id"
    )
    params: list[Any] = []
    if kind is not None:
        sql += " WHERE j.kind = ?"
        params.append(kind)
    sql += " ORDER BY j.recorded_at DESC, j.id DESC"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(int(limit))
    return [
        {
            "job_id": r[0], "kind": r[1], "key": r[2], "path": r[3], "recorded_at": iso_time(r[4]),
            "status": r[5], "category": r[6], "phase": r[7], "failure_time": iso_time(r[8]), "top_node": r[9],
            "summary": r[10], "lines_read": r[11], "matched_fault": r[12], "fault_id": r[13],
        }
        for r in conn.execute(sql, params).fetchall()
    ]


def epoch_of(value: str | float | None) -> float | None:
    """Epoch seconds of an ISO time or a number (naive times are UTC); None when it is neither."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def since_cutoff(value: float | str | datetime | None) -> float:
    """The earliest epoch ``--since`` keeps: datetime, epoch seconds, ISO date/time, or ``7d`` / ``24h`` / ``2w``."""
    if value is None:
        return -1e300
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    if isinstance(value, int | float):
        return float(value)
    relative = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([dhw])\s*", str(value))
    if relative:
        unit = {"h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}[relative.group(2)]
        return time.time() - float(relative.group(1)) * unit
    epoch = epoch_of(value)
    if epoch is None:
        raise L4Error(f"--since {value!r}: expected a date like 2026-11-03, 2026-11-03T12:00 or 7d / 24h")
    return epoch
