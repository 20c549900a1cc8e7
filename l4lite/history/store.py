"""The history store: memory across jobs for cross-job filtering, the fault library and the fleet view.

L4's two strongest ideas need to remember earlier jobs. Cross-job filtering drops the templates that healthy
runs of the same setup also print (``add_healthy`` / ``baseline_templates``). The fault library matches a new
failure against confirmed past ones before anything else (``confirm`` / ``match_fault``). The fleet view answers
which nodes keep failing (``nodes``). Every ``analyze`` with a store records its job (``record_analysis``).

The store is one SQLite file (schema and locking in ``l4lite.history.schema``). Jobs are matched by a key built
from the job facts the scan parsed from the logs (``job_key``), or by an explicit tag. Export and import are JSON
only (``l4lite.history.transfer``); nothing is ever unpickled.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
import uuid
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Any

from l4lite.diagnose.incident import Incident
from l4lite.errors import L4Error
from l4lite.history import schema, views
from l4lite.history.transfer import export_store, import_into, iso_time, validate_export
from l4lite.scan.scanner import JobScan
from l4lite.vocab import CATEGORIES

STORE_ENV = "L4LITE_STORE"
STORE_FILENAME = "history.sqlite3"

# Job facts (keys of ``JobScan.info``) that identify "the same setup". Jobs whose present facts agree share
# healthy baselines. Facts the logs do not give are left out of the key, so two jobs that print nothing about
# their setup share the key "default".
DEFAULT_KEY_FIELDS: tuple[str, ...] = (
    "framework",
    "model",
    "model_size",
    "world_size",
    "nodes",
    "gpus_per_node",
    "tensor_parallel",
    "pipeline_parallel",
)
# Other spellings of the same facts, as frameworks print them.
KEY_ALIASES: dict[str, str] = {
    "num_nodes": "nodes",
    "nnodes": "nodes",
    "node_count": "nodes",
    "nproc_per_node": "gpus_per_node",
    "tp": "tensor_parallel",
    "tensor_model_parallel_size": "tensor_parallel",
    "tensor_parallel_size": "tensor_parallel",
    "pp": "pipeline_parallel",
    "pipeline_model_parallel_size": "pipeline_parallel",
    "pipeline_parallel_size": "pipeline_parallel",
    "model_name": "model",
}
DEFAULT_MATCH_THRESHOLD = 0.5  # Jaccard overlap of root-evidence templates for a fault-library match


def job_key(scan: JobScan, tag: str | None = None, key_fields: Sequence[str] = DEFAULT_KEY_FIELDS) -> str:
    """The matching key of a job: ``tag=T`` when a tag is given, else ``field=value;...`` of its known facts.

    Values are compared as lower-cased strings; facts missing from ``scan.info`` are left out; with no facts at
    all the key is ``default``.
    """
    if tag is not None and tag.strip():
        return f"tag={tag.strip()}"
    facts: dict[str, str] = {}
    for name, value in (scan.info or {}).items():
        canonical = KEY_ALIASES.get(str(name).lower(), str(name).lower())
        if value is None or value == "" or canonical in facts:
            continue
        facts[canonical] = str(value).strip().lower()
    parts = [f"{name}={facts[name]}" for name in key_fields if name in facts]
    return ";".join(parts) if parts else "default"


def describe_match(match: dict[str, Any]) -> str:
    """One sentence for the terminal and the summary, e.g. 'matches confirmed fault #12 of 2026-11-03: ...'."""
    where = f" on {match['node']}" if match.get("node") else ""
    return f"matches confirmed fault #{match['fault_id']} of {match['confirmed_at'][:10]}: {match['cause']}{where}"


class Store:
    """One history store file. Use as a context manager or call ``close``.

    Every public write is one transaction; any number of processes may use the same file at once.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        busy_timeout: float = schema.DEFAULT_BUSY_TIMEOUT,
        match_threshold: float = DEFAULT_MATCH_THRESHOLD,
    ) -> None:
        self.path = Path(path) if path is not None else self.default_path()
        self.match_threshold = match_threshold
        self._conn = schema.connect(self.path, busy_timeout)

    # -- lifecycle -------------------------------------------------------------------------------------------
    @staticmethod
    def default_path() -> Path:
        """``$L4LITE_STORE``, else the user's data folder (``$XDG_DATA_HOME`` or ``~/.local/share``)."""
        env = os.environ.get(STORE_ENV)
        if env:
            return Path(env).expanduser()
        if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
            base = Path(os.environ["LOCALAPPDATA"])
        else:
            xdg = os.environ.get("XDG_DATA_HOME")
            base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
        return base / "l4lite" / STORE_FILENAME

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def schema_version(self) -> int:
        return schema.schema_version(self._conn)

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        return schema.write_transaction(self._conn, self.path)

    def _read(self) -> AbstractContextManager[sqlite3.Connection]:
        return schema.read_transaction(self._conn)

    # -- settings --------------------------------------------------------------------------------------------
    @property
    def key_fields(self) -> tuple[str, ...]:
        """The job facts this store matches jobs by (``set_key_fields`` changes them for every user)."""
        row = self._conn.execute("SELECT value FROM meta WHERE name = 'key_fields'").fetchone()
        if row is None:
            return DEFAULT_KEY_FIELDS
        return tuple(json.loads(row[0]))

    def set_key_fields(self, fields: Sequence[str]) -> None:
        cleaned = [KEY_ALIASES.get(f.strip().lower(), f.strip().lower()) for f in fields if f.strip()]
        if not cleaned:
            raise L4Error(f"{self.path}: key fields must not be empty")
        with self._write() as c:
            c.execute(
                "INSERT INTO meta (name, value) VALUES ('key_fields', ?) "
                "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (json.dumps(cleaned),),
            )

    def job_key(self, scan: JobScan, tag: str | None = None) -> str:
        """``job_key`` with this store's key fields."""
        return job_key(scan, tag, self.key_fields)

    # -- healthy baselines -----------------------------------------------------------------------------------
    def add_healthy(self, scan: JobScan, key: str, job_path: str | None = None) -> int:
        """Record a healthy job's templates and counts under ``key``; re-adding the same job replaces it."""
        path = job_path or scan.root
        with self._write() as c:
            job_id = self._upsert_job(c, "healthy", key, path, scan)
            c.execute("DELETE FROM job_templates WHERE job_id = ?", (job_id,))
            self._put_templates(c, ((s.template_id, s.template) for s in scan.templates.values()))
            c.executemany(
                "INSERT INTO job_templates (job_id, template_id, count) VALUES (?, ?, ?)",
                [(job_id, s.template_id, s.count) for s in scan.templates.values()],
            )
        return job_id

    def baseline_templates(self, key: str) -> dict[str, float]:
        """Templates seen in the healthy jobs of ``key`` with their rate (occurrences per log line, pooled)."""
        with self._read() as c:
            lines = c.execute(
                "SELECT COALESCE(SUM(lines_read), 0) FROM jobs WHERE kind = 'healthy' AND key = ?", (key,)
            ).fetchone()[0]
            rows = c.execute(
                "SELECT jt.template_id, SUM(jt.count) FROM job_templates jt JOIN jobs j ON j.id = jt.job_id "
                "WHERE j.kind = 'healthy' AND j.key = ? GROUP BY jt.template_id",
                (key,),
            ).fetchall()
        return {tid: total / max(lines, 1) for tid, total in rows}

    def baseline_summary(self, key: str) -> dict[str, int]:
        """How much healthy history backs ``key``: jobs, lines and distinct templates."""
        jobs, lines = self._conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(lines_read), 0) FROM jobs WHERE kind = 'healthy' AND key = ?", (key,)
        ).fetchone()
        templates = self._conn.execute(
            "SELECT COUNT(DISTINCT jt.template_id) FROM job_templates jt JOIN jobs j ON j.id = jt.job_id "
            "WHERE j.kind = 'healthy' AND j.key = ?",
            (key,),
        ).fetchone()[0]
        return {"jobs": int(jobs), "lines": int(lines), "templates": int(templates)}

    # -- analysed jobs ---------------------------------------------------------------------------------------
    def record_analysis(self, incident: Incident, scan: JobScan, key: str, job_path: str | None = None) -> int:
        """Record an analysed job: verdict, suspects and evidence. Re-analysing the same job updates it."""
        path = job_path or scan.root
        top = incident.suspects[0] if incident.suspects and incident.is_incident else None
        matched = (incident.matched_fault or {}).get("fault_id")
        verdict = {
            "status": incident.status,
            "category": incident.category,
            "phase": incident.phase,
            "failure_time": views.epoch_of(incident.failure_time),
            "summary": incident.summary,
            "top_node": top.node if top else None,
            "matched_fault": int(matched) if isinstance(matched, int) else None,
        }
        names = {tid: s.template for tid, s in scan.templates.items()}
        with self._write() as c:
            job_id = self._upsert_job(c, "analysis", key, path, scan, verdict)
            c.execute("DELETE FROM suspects WHERE job_id = ?", (job_id,))
            c.execute("DELETE FROM evidence WHERE job_id = ?", (job_id,))
            c.executemany(
                "INSERT INTO suspects (job_id, position, node, score, category, reasons) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (job_id, i, s.node, float(s.score), s.category or incident.category, json.dumps(s.reasons))
                    for i, s in enumerate(incident.suspects)
                ],
            )
            self._put_templates(
                c,
                ((e.template_id, names.get(e.template_id) or e.text.split("\n", 1)[0]) for e in incident.evidence),
            )
            c.executemany(
                "INSERT INTO evidence (job_id, position, template_id, role, rule, node, file, line, text) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (job_id, i, e.template_id or "", e.role, e.rule, e.node, e.file, e.line, e.text[:2000])
                    for i, e in enumerate(incident.evidence)
                ],
            )
        return job_id

    def _upsert_job(
        self,
        c: sqlite3.Connection,
        kind: str,
        key: str,
        path: str,
        scan: JobScan,
        verdict: dict[str, Any] | None = None,
    ) -> int:
        """Insert the job row, or update the row of the same job (same kind, path and first timestamp)."""
        fingerprint = f"{scan.start_time!r}"
        values = {
            "kind": kind,
            "key": key,
            "path": path,
            "recorded_at": time.time(),
            "start_time": scan.start_time,
            "end_time": scan.end_time,
            "lines_read": int(scan.accounting.lines_read),
            "info": json.dumps(scan.info or {}, default=str, sort_keys=True),
            "fingerprint": fingerprint,
            **(verdict or {}),
        }
        row = c.execute(
            "SELECT id FROM jobs WHERE kind = ? AND path = ? AND fingerprint = ?", (kind, path, fingerprint)
        ).fetchone()
        if row is not None:
            sets = ", ".join(f"{name} = ?" for name in values)
            c.execute(f"UPDATE jobs SET {sets} WHERE id = ?", (*values.values(), row[0]))
            return int(row[0])
        values["uid"] = uuid.uuid4().hex
        cols = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        cur = c.execute(f"INSERT INTO jobs ({cols}) VALUES ({marks})", tuple(values.values()))
        return int(cur.lastrowid)

    @staticmethod
    def _put_templates(c: sqlite3.Connection, pairs: Iterable[tuple[str, str]]) -> None:
        c.executemany(
            "INSERT INTO templates (template_id, template) VALUES (?, ?) ON CONFLICT (template_id) "
            "DO UPDATE SET template = excluded.template WHERE templates.template = ''",
            [(tid, text or "") for tid, text in pairs if tid],
        )

    def remove_job(self, job_id: int) -> None:
        """Forget a job (e.g. a baseline that was not healthy after all); a fault confirmed from it stays."""
        with self._write() as c:
            if c.execute("DELETE FROM jobs WHERE id = ?", (job_id,)).rowcount == 0:
                raise L4Error(f"{self.path}: no job #{job_id} in the history store")

    # -- fault library ---------------------------------------------------------------------------------------
    def confirm(self, job_id: int, category: str, cause: str, node: str | None = None) -> int:
        """Add the confirmed cause of an analysed job to the fault library; confirming again updates it.

        The fault's signature is the set of the job's root-evidence templates (all evidence templates when the
        job has no root evidence).
        """
        if category not in CATEGORIES:
            raise L4Error(f"unknown category {category!r}; one of: {', '.join(CATEGORIES)}")
        if not cause.strip():
            raise L4Error("the cause must not be empty")
        with self._write() as c:
            job = c.execute("SELECT kind, key FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if job is None:
                raise L4Error(f"{self.path}: no job #{job_id} in the history store (see 'l4lite history jobs')")
            if job[0] != "analysis":
                raise L4Error(f"{self.path}: job #{job_id} was recorded as healthy; confirm an analysed job")
            rows = c.execute(
                "SELECT role, template_id FROM evidence WHERE job_id = ? AND template_id != ''", (job_id,)
            ).fetchall()
            roots = {tid for role, tid in rows if role == "root"} or {tid for _, tid in rows}
            if not roots:
                raise L4Error(f"{self.path}: job #{job_id} has no evidence to build a fault signature from")
            existing = c.execute("SELECT id FROM faults WHERE job_id = ?", (job_id,)).fetchone()
            if existing is not None:
                fault_id = int(existing[0])
                c.execute(
                    "UPDATE faults SET confirmed_at = ?, category = ?, cause = ?, node = ?, key = ? WHERE id = ?",
                    (time.time(), category, cause.strip(), node, job[1], fault_id),
                )
                c.execute("DELETE FROM fault_templates WHERE fault_id = ?", (fault_id,))
            else:
                cur = c.execute(
                    "INSERT INTO faults (uid, job_id, confirmed_at, category, cause, node, key) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (uuid.uuid4().hex, job_id, time.time(), category, cause.strip(), node, job[1]),
                )
                fault_id = int(cur.lastrowid)
            c.executemany(
                "INSERT INTO fault_templates (fault_id, template_id) VALUES (?, ?)",
                [(fault_id, tid) for tid in sorted(roots)],
            )
        return fault_id

    def match_fault(self, incident: Incident) -> dict[str, Any] | None:
        """The confirmed fault whose signature overlaps the incident's root evidence most (Jaccard), if any.

        Returns ``{fault_id, confirmed_at, category, cause, node, similarity, same_node, job_id, message}`` when
        the best overlap reaches ``match_threshold``; the newest fault wins ties.
        """
        signature = incident_signature(incident)
        if not signature:
            return None
        with self._read() as c:
            faults = c.execute(
                "SELECT id, confirmed_at, category, cause, node, job_id FROM faults ORDER BY confirmed_at DESC"
            ).fetchall()
            members: dict[int, set[str]] = {}
            for fid, tid in c.execute("SELECT fault_id, template_id FROM fault_templates"):
                members.setdefault(fid, set()).add(tid)
        best: tuple[float, tuple[Any, ...]] | None = None
        for row in faults:
            sig = members.get(row[0], set())
            if not sig:
                continue
            similarity = len(sig & signature) / len(sig | signature)
            if similarity >= self.match_threshold and (best is None or similarity > best[0]):
                best = (similarity, row)
        if best is None:
            return None
        similarity, (fid, confirmed_at, category, cause, node, job_id) = best
        top = incident.suspects[0].node if incident.suspects else None
        match = {
            "fault_id": int(fid),
            "confirmed_at": iso_time(confirmed_at),
            "category": category,
            "cause": cause,
            "node": node,
            "similarity": round(similarity, 3),
            "same_node": bool(node) and node == top,
            "job_id": job_id,
        }
        match["message"] = describe_match(match)
        return match

    def faults(self) -> list[dict[str, Any]]:
        """The fault library, newest first."""
        return views.list_faults(self._conn)

    # -- fleet and job listings ------------------------------------------------------------------------------
    def nodes(self, since: float | str | datetime | None = None) -> list[dict[str, Any]]:
        """Nodes ranked by the incidents in which they were the top suspect (most first, then most recent).

        ``since`` (epoch seconds, ISO date/time or datetime) keeps incidents whose failure time (else end of
        logs, else recording time) is not earlier.
        """
        return views.fleet_nodes(self._conn, since)

    def jobs(self, limit: int | None = 50, kind: str | None = None) -> list[dict[str, Any]]:
        """Recorded jobs, newest first."""
        return views.list_jobs(self._conn, limit, kind)

    # -- sharing ---------------------------------------------------------------------------------------------
    def export_json(self, include_healthy: bool = True) -> dict[str, Any]:
        """The fault library (and healthy baselines) as plain JSON data; see ``l4lite.history.transfer``."""
        with self._read() as c:
            return export_store(c, include_healthy)

    def import_json(self, data: Any, origin: str = "<json>") -> dict[str, int]:
        """Merge an export into this store in one transaction; entries already present (same uid) are skipped.

        ``origin`` (usually the file name) names the input in error messages and in the faults' origin column.
        """
        export = validate_export(data, origin)
        with self._write() as c:
            return import_into(c, export, origin)


def incident_signature(incident: Incident) -> set[str]:
    """Root-evidence template ids of an incident (all evidence templates when none is root)."""
    roots = {e.template_id for e in incident.evidence if e.role == "root" and e.template_id}
    return roots or {e.template_id for e in incident.evidence if e.template_id}
