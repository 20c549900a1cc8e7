"""The incident: the one result of ``analyze``, saved as JSON (schema ``l4lite.incident/1``).

Everything the HTML report shows is in here, so ``l4lite report INCIDENT.json`` needs no logs. The named fields
of the schema are fixed; ``extra`` sections (heatmap, health series, timeline, checklist, templates) are
bounded in size so that the incident and the report stay small whatever the length of the logs.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from l4lite.vocab import INCIDENT_SCHEMA


@dataclass
class Suspect:
    node: str
    score: float
    reasons: list[str] = field(default_factory=list)
    category: str | None = None


EVIDENCE_TEXT_CHARS = 4000  # what an evidence entry keeps of its record's text (a longer record is cut)


@dataclass
class Evidence:
    file: str
    line: int
    node: str | None
    rank: int | None
    time: str | None
    text: str
    template_id: str
    rule: str | None
    role: str
    score: float
    end_line: int | None = None
    source: str | None = None
    gpu: int | None = None
    category: str | None = None
    explain: str | None = None
    count: int = 1
    context: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class PhaseSpan:
    name: str
    start: str | None
    end: str | None


@dataclass
class Incident:
    status: str
    category: str | None
    phase: str | None
    iteration: int | None
    failure_time: str | None
    summary: str
    suspects: list[Suspect] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    phases: list[PhaseSpan] = field(default_factory=list)
    checkpoint: dict[str, Any] = field(default_factory=lambda: {"last_saved": None})
    recommendations: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    job: dict[str, Any] = field(default_factory=dict)
    scope: str | None = None  # "node" when suspects are blamed, "global" when the fault is job-wide
    confidence: float | None = None  # how likely node and category are both right (``diagnose.confidence``)
    matched_fault: dict[str, Any] | None = None
    # A hang's stuck rank: process_group, collective, seq, stuck_ranks, stuck_nodes, per_rank_last_seq, source
    # (flight_recorder or logs). None when the incident is not a hang with a named stuck rank.
    hang: dict[str, Any] | None = None
    # a restarted job's attempts in order (``api.diagnose_attempts``): the verdict is the last failed one's
    attempts: list[dict[str, Any]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    schema: str = INCIDENT_SCHEMA

    @property
    def is_incident(self) -> bool:
        return self.status == "incident"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        ordered = {"schema": data.pop("schema")}
        ordered.update(data)
        return ordered

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, default=str)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Incident:
        if data.get("schema") != INCIDENT_SCHEMA:
            raise ValueError(f"not an l4lite incident (schema {data.get('schema')!r}, expected {INCIDENT_SCHEMA!r})")
        known = {f for f in cls.__dataclass_fields__}
        kwargs = {k: v for k, v in data.items() if k in known}
        kwargs["suspects"] = [Suspect(**s) for s in data.get("suspects", [])]
        kwargs["evidence"] = [Evidence(**_known(Evidence, e)) for e in data.get("evidence", [])]
        kwargs["phases"] = [PhaseSpan(**p) for p in data.get("phases", [])]
        return cls(**kwargs)

    def save(self, path: str | os.PathLike[str]) -> None:
        write_atomic(Path(path), self.to_json())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Incident:
        with open(path, encoding="utf-8") as fh:
            return cls.from_dict(json.load(fh))


def _known(klass: type, data: dict[str, Any]) -> dict[str, Any]:
    fields = klass.__dataclass_fields__
    return {k: v for k, v in data.items() if k in fields}


def write_atomic(path: Path, text: str, encoding: str = "utf-8") -> None:
    """Write via a temporary file in the same folder and rename, so readers never see half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates 0600; give the file the permissions a plain open() would have.
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding=encoding) as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
