"""Alerts of ``l4lite tail``: one alert per incident, updates as it evolves, JSON lines and a Slack-style webhook.

An on-call channel must not get one message per log line: the tracker turns the stream of verdicts (a fresh
incident every few seconds) into *one* alert per incident, identified by a hash of its category, top suspect and
first root-cause rule at the time it was raised, plus an ``update`` whenever it gains something a person should
know (a new suspect, a new kind of evidence, more root-cause lines, another category or phase). What an alert has
already said is kept as sets that only grow, so a verdict that wobbles (e.g. after a restart rebuilt the windows
from fewer lines) does not re-announce anything. The tracker's state round-trips through JSON (the tail state
file) and can also be rebuilt from the alert log itself, so an alert written just before a crash is not repeated.

Sinks: ``JsonLinesSink`` (a file, fsynced, or stdout) and ``WebhookSink`` (POST from a background thread with
retries and backoff; failures end in a warning, never in an exception in the tail loop).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import queue
import threading
import time
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

from l4lite.diagnose.incident import Evidence, Incident

ALERT_SCHEMA = "l4lite.alert/1"
EVIDENCE_IN_ALERT = 20
SUSPECT_MIN_SCORE = 0.3
TEXT_IN_ALERT = 2000
EVIDENCE_FIELDS = ("file", "line", "end_line", "node", "rank", "gpu", "time", "text", "template_id", "rule", "role",
                   "score", "category", "explain", "count", "source")


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def evidence_row(ev: Evidence) -> dict[str, Any]:
    """An evidence entry with the incident JSON's field names (context left out, text bounded)."""
    row = {k: getattr(ev, k) for k in EVIDENCE_FIELDS}
    if isinstance(row["text"], str) and len(row["text"]) > TEXT_IN_ALERT:
        row["text"] = row["text"][:TEXT_IN_ALERT] + " ..."
    return row


def first_root(incident: Incident) -> Evidence | None:
    """The earliest root-cause evidence with a rule (the first root entry when no time is known)."""
    roots = [e for e in incident.evidence if e.role == "root" and e.rule]
    if not roots:
        return None
    timed = [e for e in roots if e.time]
    return min(timed, key=lambda e: str(e.time)) if timed else roots[0]


def first_root_rule(incident: Incident) -> str | None:
    root = first_root(incident)
    return root.rule if root is not None else None


def top_suspect(incident: Incident) -> str | None:
    return incident.suspects[0].node if incident.suspects else None


def incident_id(category: str | None, suspect: str | None, rule: str | None, where: str | None = None) -> str:
    """Stable id of an incident (category, top suspect, first root rule and its line): the same verdict after a
    restart gets the same id."""
    key = json.dumps([category, suspect, rule, where])
    return "l4a-" + hashlib.blake2b(key.encode(), digest_size=6).hexdigest()


@dataclass
class Alert:
    """One message about an incident: ``kind`` is ``new`` or ``update``; ``changes`` says what is new."""

    alert_id: str
    kind: str
    seq: int
    time: str
    incident: dict[str, Any]
    changes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        inc = self.incident
        return {
            "schema": ALERT_SCHEMA,
            "alert_id": self.alert_id,
            "kind": self.kind,
            "seq": self.seq,
            "time": self.time,
            "changes": self.changes,
            **inc,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, default=str)


@dataclass
class _Known:
    """What an open alert has already told: only ever grows."""

    alert_id: str
    seq: int
    category: str | None
    suspect: str | None
    rule: str | None
    categories: set[str] = field(default_factory=set)
    suspects: set[str] = field(default_factory=set)
    rules: set[str] = field(default_factory=set)
    roots: set[str] = field(default_factory=set)
    phase: str | None = None
    opened: float = 0.0
    updated: float = 0.0
    told_roots: int = 0  # root-cause lines when last announced: more are news only once they double

    def to_dict(self) -> dict[str, Any]:
        return {"alert_id": self.alert_id, "seq": self.seq, "category": self.category, "suspect": self.suspect,
                "rule": self.rule, "categories": sorted(self.categories), "suspects": sorted(self.suspects),
                "rules": sorted(self.rules), "roots": sorted(self.roots), "phase": self.phase,
                "opened": self.opened, "updated": self.updated, "told_roots": self.told_roots}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> _Known:
        return cls(alert_id=str(d["alert_id"]), seq=int(d.get("seq", 1)), category=d.get("category"),
                   suspect=d.get("suspect"), rule=d.get("rule"), categories=set(d.get("categories", [])),
                   suspects=set(d.get("suspects", [])), rules=set(d.get("rules", [])),
                   roots=set(d.get("roots", [])), phase=d.get("phase"), opened=float(d.get("opened", 0.0)),
                   updated=float(d.get("updated", 0.0)), told_roots=int(d.get("told_roots", 0)))


def _facets(incident: Incident) -> tuple[set[str], set[str], set[str], set[str]]:
    categories = {incident.category} if incident.category else set()
    top = incident.suspects[0].score if incident.suspects else 0.0
    # Weak suspects (a fraction of the top score) come and go with the windows: not worth a message.
    suspects = {s.node for s in incident.suspects[:3] if s.score >= max(SUSPECT_MIN_SCORE, 0.5 * top)}
    rules = {e.rule for e in incident.evidence if e.rule and e.role in ("root", "symptom", "confirmation")}
    roots = {f"{e.file}:{e.line}" for e in incident.evidence if e.role == "root"}
    return categories, suspects, rules, roots


class AlertTracker:
    """Turns successive verdicts into one alert per incident plus updates; deterministic, no I/O."""

    def __init__(self, *, evidence_limit: int = EVIDENCE_IN_ALERT, reopen_after: float = 3600.0) -> None:
        self.evidence_limit = evidence_limit
        self.reopen_after = reopen_after  # an alert quiet this long is closed: a later verdict is a new incident
        self.alerts: dict[str, _Known] = {}

    # -- state ---------------------------------------------------------------------------------------
    def to_state(self) -> list[dict[str, Any]]:
        return [k.to_dict() for k in self.alerts.values()]

    def load_state(self, data: Iterable[dict[str, Any]]) -> None:
        for d in data:
            known = _Known.from_dict(d)
            mine = self.alerts.get(known.alert_id)
            if mine is None or known.seq > mine.seq:
                self.alerts[known.alert_id] = known

    def absorb(self, alert: dict[str, Any]) -> None:
        """Learn from an alert already written (the alert log), so that it is not written again."""
        if alert.get("schema") != ALERT_SCHEMA or "alert_id" not in alert:
            return
        inc = Incident.from_dict({k: v for k, v in alert.items() if k in Incident.__dataclass_fields__}
                                 | {"schema": "l4lite.incident/1"})
        aid, seq = str(alert["alert_id"]), int(alert.get("seq", 1))
        known = self.alerts.get(aid)
        if known is None:
            known = self.alerts[aid] = _Known(aid, seq, inc.category, top_suspect(inc), first_root_rule(inc))
        when = alert.get("time")
        if isinstance(when, str):
            with contextlib.suppress(ValueError):
                known.updated = max(known.updated, datetime.fromisoformat(when.replace("Z", "+00:00")).timestamp())
        known.seq = max(known.seq, seq)
        self._grow(known, inc)

    @property
    def open_ids(self) -> list[str]:
        return list(self.alerts)

    # -- verdicts ------------------------------------------------------------------------------------
    def observe(self, incident: Incident, now: float | None = None) -> Alert | None:
        """The alert to send for this verdict, or None when it tells nothing new."""
        if not incident.is_incident:
            return None
        now = time.time() if now is None else now
        suspect, root = top_suspect(incident), first_root(incident)
        rule = root.rule if root is not None else None
        known = self._find(incident.category, suspect, rule, now)
        if known is None:
            aid = incident_id(incident.category, suspect, rule, f"{root.file}:{root.line}" if root else None)
            known = _Known(aid, 1, incident.category, suspect, rule, opened=now, updated=now)
            self.alerts[aid] = known
            self._grow(known, incident)
            return self._alert(known, "new", incident, now, ["raised"])
        changes = self._changes(known, incident)
        if not changes:
            return None
        known.seq += 1
        known.updated = now
        self._grow(known, incident)
        return self._alert(known, "update", incident, now, changes)

    def _find(self, category: str | None, suspect: str | None, rule: str | None, now: float) -> _Known | None:
        """The open alert this verdict belongs to: same top suspect, or same first root rule, or same global
        category; the most recently updated wins. Alerts quiet for ``reopen_after`` seconds are closed."""
        best: _Known | None = None
        for k in self.alerts.values():
            if now - k.updated > self.reopen_after:
                continue
            same = (suspect is not None and (k.suspect == suspect or suspect in k.suspects)) or (
                rule is not None and k.rule == rule) or (
                suspect is None and k.suspect is None and category is not None and category in k.categories)
            if same and (best is None or k.updated > best.updated):
                best = k
        return best

    @staticmethod
    def _changes(known: _Known, incident: Incident) -> list[str]:
        categories, suspects, rules, roots = _facets(incident)
        changes = []
        if incident.category and incident.category != known.category and incident.category not in known.categories:
            changes.append(f"category {known.category} -> {incident.category}")
        new_suspects = sorted(suspects - known.suspects)
        if new_suspects:
            changes.append("new suspects: " + ", ".join(new_suspects))
        new_rules = sorted(rules - known.rules)
        if new_rules:
            changes.append("new evidence rules: " + ", ".join(new_rules))
        total_roots = len(roots | known.roots)
        if total_roots >= max(1, 2 * known.told_roots) and total_roots > known.told_roots and not new_rules:
            changes.append(f"{total_roots - known.told_roots} more root-cause line(s)")
        return changes

    @staticmethod
    def _grow(known: _Known, incident: Incident) -> None:
        categories, suspects, rules, roots = _facets(incident)
        known.categories |= categories
        known.suspects |= suspects
        known.rules |= rules
        known.roots |= roots
        known.told_roots = len(known.roots)
        if incident.category:
            known.category = incident.category
        if incident.phase:
            known.phase = incident.phase

    def _alert(self, known: _Known, kind: str, incident: Incident, now: float, changes: list[str]) -> Alert:
        body = {
            "status": incident.status,
            "category": incident.category,
            "phase": incident.phase,
            "iteration": incident.iteration,
            "failure_time": incident.failure_time,
            "summary": incident.summary,
            "scope": incident.scope,
            "suspects": [{"node": s.node, "score": s.score, "reasons": list(s.reasons)} for s in incident.suspects[:10]],
            "evidence": [evidence_row(e) for e in incident.evidence[: self.evidence_limit]],
            "recommendations": list(incident.recommendations),
            "stats": {k: v for k, v in incident.stats.items() if isinstance(v, int | float | str)},
        }
        return Alert(known.alert_id, kind, known.seq, _iso(now), body, changes)


# ------------------------------------------------------------------------------------------------ sinks
class AlertSink(ABC):
    """Where alerts go. ``emit`` must not raise for delivery problems (warn instead)."""

    @abstractmethod
    def emit(self, alert: Alert) -> None: ...

    def close(self, timeout: float = 5.0) -> None:  # noqa: B027 - optional hook
        """Finish pending deliveries (bounded by ``timeout``)."""


class JsonLinesSink(AlertSink):
    """One JSON object per line to an open text stream (stdout) or a file opened in append mode (fsynced)."""

    def __init__(self, stream: IO[str] | None = None, path: str | os.PathLike[str] | None = None) -> None:
        if (stream is None) == (path is None):
            raise ValueError("give a stream or a path")
        self.path = path
        self.stream: IO[str] = stream if stream is not None else open(path, "a", encoding="utf-8")  # noqa: SIM115
        self._owned = stream is None

    def emit(self, alert: Alert) -> None:
        self.stream.write(alert.to_json() + "\n")
        self.stream.flush()
        if self._owned:
            with contextlib.suppress(OSError):
                os.fsync(self.stream.fileno())

    def close(self, timeout: float = 5.0) -> None:
        if self._owned:
            self.stream.close()


def read_alert_log(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The alerts already written to a JSON-lines file (a torn last line is ignored)."""
    out: list[dict[str, Any]] = []
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                with contextlib.suppress(ValueError):
                    data = json.loads(line)
                    if isinstance(data, dict) and data.get("schema") == ALERT_SCHEMA:
                        out.append(data)
    except FileNotFoundError:
        pass
    return out


def slack_body(alert: Alert, title: str | None = None) -> dict[str, Any]:
    """A Slack-compatible message: ``text`` (fallback/notification) and ``blocks`` (Block Kit). ``title`` (say
    the scheduler's job id) replaces the ``[new]``/``[update]`` mark of a live alert."""
    inc = alert.incident
    where = ", ".join(s["node"] for s in inc.get("suspects", [])[:3]) or ("job-wide" if inc.get("scope") == "global"
                                                                           else "no node blamed")
    head = f"{title or '[' + alert.kind + ']'} {inc.get('category') or 'unknown'} on {where}"
    text = f"l4lite {head}: {inc.get('summary', '')}"
    facts = [f"*Category:* {inc.get('category')}", f"*Phase:* {inc.get('phase')}", f"*Suspects:* {where}"]
    if inc.get("iteration") is not None:
        facts.append(f"*Iteration:* {inc['iteration']}")
    if alert.changes and alert.kind == "update":
        facts.append("*Changes:* " + "; ".join(alert.changes))
    lines = []
    for ev in inc.get("evidence", [])[:5]:
        first = str(ev.get("text", "")).split("\n", 1)[0][:300]
        lines.append(f"{ev.get('role')} {ev.get('file')}:{ev.get('line')} {ev.get('node') or ''} {first}")
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": ("l4lite " + head)[:150]}},
        {"type": "section", "text": {"type": "mrkdwn", "text": str(inc.get("summary", ""))[:2900] or "-"}},
        {"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(facts)[:2900]}},
    ]
    if lines:
        blocks.append({"type": "section", "text": {"type": "mrkdwn",
                                                   "text": ("```" + "\n".join(lines))[:2890] + "```"}})
    blocks.append({"type": "context", "elements": [
        {"type": "mrkdwn", "text": f"alert {alert.alert_id} #{alert.seq} at {alert.time}"}]})
    return {"text": text[:3000], "blocks": blocks}


class WebhookSink(AlertSink):
    """POSTs alerts as JSON from a background thread, in order; retries with exponential backoff."""

    def __init__(self, url: str, *, warn: Callable[[str], None] | None = None, retries: int = 3,
                 backoff: float = 0.5, timeout: float = 5.0,
                 body: Callable[[Alert], dict[str, Any]] = slack_body) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"webhook URL must start with http:// or https://, got {url!r}")
        self.url = url
        self.warn = warn or (lambda message: None)
        self.retries = retries
        self.backoff = backoff
        self.timeout = timeout
        self.body = body
        self.sent = 0
        self.failed = 0
        self._queue: queue.Queue[Alert | None] = queue.Queue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="l4lite-webhook", daemon=True)
        self._thread.start()

    def emit(self, alert: Alert) -> None:
        self._queue.put(alert)

    def close(self, timeout: float = 5.0) -> None:
        self._queue.put(None)
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._stop.set()
            self.warn(f"webhook: {self._queue.qsize()} alert(s) not delivered before exit")

    def _run(self) -> None:
        while True:
            alert = self._queue.get()
            if alert is None:
                return
            self._deliver(alert)

    def _deliver(self, alert: Alert) -> None:
        data = json.dumps(self.body(alert), ensure_ascii=False, default=str).encode("utf-8")
        delay = self.backoff
        problem = ""
        for attempt in range(self.retries + 1):
            if attempt:
                if self._stop.wait(delay):
                    break
                delay *= 2
            request = urllib.request.Request(self.url, data=data, method="POST",
                                             headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 - user's URL
                    response.read()
                self.sent += 1
                return
            except urllib.error.HTTPError as exc:
                problem = f"HTTP {exc.code}"
                if 400 <= exc.code < 500 and exc.code not in (408, 429):
                    break  # the request itself is refused: retrying will not help
                retry_after = exc.headers.get("Retry-After") if exc.headers else None
                if retry_after and retry_after.isdigit():
                    delay = max(delay, min(float(retry_after), 30.0))
            except (urllib.error.URLError, OSError, ValueError) as exc:
                problem = str(getattr(exc, "reason", exc))
        self.failed += 1
        self.warn(f"webhook {self.url}: alert {alert.alert_id} #{alert.seq} not delivered ({problem})")


def post_incident(url: str, incident: Incident, *, title: str | None = None, warn: Callable[[str], None] | None = None,
                  timeout: float = 30.0) -> bool:
    """Post one finished incident (``analyze --webhook``: a batch job's epilog) as the live alert's message, with
    the same retries; True when it was delivered. A healthy verdict posts nothing."""
    alert = AlertTracker().observe(incident)
    if alert is None:
        return False
    sink = WebhookSink(url, warn=warn, body=lambda a: slack_body(a, title))
    sink.emit(alert)
    sink.close(timeout)
    return sink.sent == 1
