"""RuleDetector: turns the rule hits the scan collected into findings.

The scan matched every record against the rule pack (``RulePack.match``) and kept the first hits per
(rule, node) plus the totals. Here the hits of one rule on one node become one finding: the rule gives its
category, role, severity, explanation and action (filled with the pattern's named groups), the hits give the
evidence records, the count and the time of the first occurrence. Choosing among findings (root beats cascade,
the earliest root wins ties) is left to ``localize``.

Scores encode both severity and the rule's priority so that localisation can compare findings of different rules:
``score = weight(severity) * (0.3 + 0.7 * priority / 100)``.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from l4lite.detect.base import Detector, Finding
from l4lite.records import Record
from l4lite.rules.components import (
    LEARNED_WORDS,
    cascade_payload,
    cascade_search,
    chained_cause,
    component,
    first_failure,
    is_cascade,
    named_component,
    says_more,
)
from l4lite.rules.xid import xid_entry
from l4lite.scan.phases import PhaseTracker, phase_at, phase_from_traceback
from l4lite.scan.scanner import (
    node_key,  # the scan keys hit totals by node this way: findings must use the same key
)

if TYPE_CHECKING:
    from l4lite.rules.pack import RulePack
    from l4lite.rules.signature import Rule
    from l4lite.scan.scanner import Hit, JobScan

SEVERITY_WEIGHT = {"critical": 1.0, "error": 0.8, "warning": 0.5, "info": 0.2}


def rule_score(severity: str, priority: int) -> float:
    """The score of a rule's finding in [0, 1]: severity first, priority second."""
    return round(SEVERITY_WEIGHT.get(severity, 0.5) * (0.3 + 0.7 * max(0, min(priority, 100)) / 100), 4)


def _order(record: Record) -> tuple[float, str, int]:
    """Earliest first; records without a time after all timed ones, then by file and line."""
    return (record.time if record.time is not None else math.inf, record.file, record.line)


# how sure the learned line model must be to give a fallback exception rule another category than its own: a
# guess barely over the model's own floor (0.5) read a shape mismatch as a configuration on every framework's job
FALLBACK_LEARNED_MIN = 0.6
PAYLOAD_CHARS = 20000  # as much of a record as the component reading looks at (and more)


def words_left(rule: Rule, text: str) -> str:
    """``text`` without the mechanism a generic rule's pattern matched (a device-side assert, a launch failure),
    keeping the pattern's named groups (an exception's name and message): the words left say what failed."""

    def groups(m: Any) -> str:
        return " ".join(v for v in m.groupdict().values() if v)

    try:
        return str(rule.compiled.sub(groups, text[:PAYLOAD_CHARS], timeout=1.0))
    except TimeoutError:
        return text


_FRAMING: dict[tuple[str, str, tuple[str, ...]], tuple[str, ...]] = {}


def framing(rule: Rule) -> tuple[str, ...]:
    """A generic rule's own examples without its mechanism: the words every line of it prints around what it
    matched ("RuntimeError: CUDA error:"), which say nothing of the component."""
    key = (rule.id, rule.pattern, rule.examples)
    if key not in _FRAMING:
        _FRAMING[key] = tuple(words_left(rule, ex) for ex in rule.examples)
    return _FRAMING[key]


# A non-finite warning the dynamic loss scaler answers: apex's "NaN or Inf found in input tensor." just before its
# "Gradient overflow. Skipping step, loss scaler 0 reducing loss scale to ...", on the same stream. That is the fp16
# scale search doing its work (the step is skipped, the scale halved); the incident, if any, is a scale that
# collapses, which the health detector reads from the same cuts.
SKIP_WINDOW = 3  # lines after the warning within which the scaler's skip of that step is printed
NON_FINITE = re.compile(r"\b(?:nan|inf|infinity|non-finite)\b", re.IGNORECASE)


def scaler_skips(scan: JobScan) -> dict[tuple[str, int | None], list[int]]:
    """The lines where a dynamic loss scaler announced a skipped step, per stream (file, rank), sorted."""
    out: dict[tuple[str, int | None], list[int]] = {}
    for p in scan.metrics:
        if p.kind == "overflow":
            out.setdefault((p.file, p.rank), []).append(p.line)
    for lines in out.values():
        lines.sort()
    return out


def answered_by_scaler(record: Record, skips: dict[tuple[str, int | None], list[int]]) -> bool:
    """The record reports a non-finite value and its stream's scaler skipped the step right after it."""
    lines = skips.get((record.file, record.rank))
    if not lines or NON_FINITE.search(record.text[:PAYLOAD_CHARS]) is None:
        return False
    i = bisect.bisect_right(lines, record.end_line)
    return i < len(lines) and lines[i] <= record.end_line + SKIP_WINDOW


class RuleDetector(Detector):
    """One finding per (rule, node) from the scan's rule hits.

    ``max_records`` caps the evidence records kept per finding (the full count is in ``Finding.count``).
    """

    name = "rules"

    def __init__(self, pack: RulePack, max_records: int = 20) -> None:
        self.pack = pack
        self.max_records = max_records

    def detect(self, scan: JobScan) -> list[Finding]:
        # Hits whose line says it is harmless (or that are the traceback such a line caught) make a finding of
        # their own, so that the same rule's real failure on the node keeps its role.
        # A numerical warning the loss scaler answered by skipping the step is grouped the same way.
        grouped: dict[tuple[str, str, bool], list[Hit]] = {}
        skips = scaler_skips(scan)
        answered: set[int] = set()
        for hit in scan.hits:
            harmless = hit.advisory
            if not harmless and skips and self._numerical(hit.rule_id) and answered_by_scaler(hit.record, skips):
                harmless = True
                answered.add(id(hit))
            grouped.setdefault((hit.rule_id, node_key(hit.record), harmless), []).append(hit)
        phases = _PhaseLookup(scan)
        findings: list[Finding] = []
        for (rule_id, key, harmless), hits in grouped.items():
            rule = self.pack.get(rule_id)
            if rule is None:  # a hit recorded with another rule pack (merged or restored state)
                continue
            hits.sort(key=lambda h: _order(h.record))
            finding = self._finding(rule, key, hits, scan, phases)
            calm = len(grouped.get((rule_id, key, True), ()))
            if not harmless and calm:
                finding.count = max(len(hits), finding.count - calm)
            if harmless:
                finding.data["advisory"] = True
                if all(id(h) in answered for h in hits):
                    finding.data["scaler_skipped"] = True
                finding.count = len(hits)
                if finding.role in ("root", "cascade", "confirmation"):
                    finding.role = "symptom"  # the program said it went on: a note, never the cause
            findings.append(finding)
        findings.sort(key=lambda f: (_order(f.records[0]), -f.score))
        return findings

    def _numerical(self, rule_id: str) -> bool:
        rule = self.pack.get(rule_id)
        return rule is not None and rule.category == "numerical"

    def _finding(self, rule: Rule, key: str, hits: Sequence[Hit], scan: JobScan, phases: _PhaseLookup) -> Finding:
        first = hits[0].record
        groups: dict[str, str] = {}
        for h in hits:  # the first hit's groups, completed by later hits where the first left a group empty
            for k, v in h.groups.items():
                groups.setdefault(k, v)
        count = scan.hit_totals.get((rule.id, key), len(hits))
        ranks = {h.record.rank for h in hits}
        gpus = {h.record.gpu for h in hits}
        context: dict[str, Any] = {
            "node": first.node or "the node",
            "rank": first.rank,
            "gpu": first.gpu,
            "count": count,
            "source": first.source,
        }
        category = rule.category
        phase = None
        if rule.category_by_phase:
            phase = phases.phase(first)
            category = dict(rule.category_by_phase).get(phase or "", category)
        data: dict[str, Any] = {
            "scope": rule.scope,
            "priority": rule.priority,
            "groups": groups,
            "ranks": sorted(r for r in ranks if r is not None),
            "source": first.source,
            "origin": rule.origin,
            "fallback": rule.fallback,
        }
        if rule.wraps:
            data["wraps"] = True
        if rule.phase_hint:
            data["phase_hint"] = rule.phase_hint
        if phase is not None:
            data["phase"] = phase
        role = rule.role
        severity = rule.severity
        records = [h.record for h in hits[: self.max_records]]
        text = first.text
        explain = self.pack.explain(rule, groups, context)
        if rule.id.startswith("xid-"):
            entry, caused = xid_entry(text)
            if entry is not None and (caused or rule.id == "xid-other"):
                # NVIDIA's catalogue for the codes without a signature of their own, and "caused by previous
                # Xid N" read as Xid N
                category, role, severity = entry.category, entry.role, entry.severity
                explain = f"Xid {entry.code}: {entry.name}" + (" (reported as the cause of a later Xid)"
                                                              if caused else "") + f"; {explain}"
                data["xid"] = entry.code
        if role in ("root", "symptom") and is_cascade(text):
            role = "cascade"  # a collective's or launcher's reaction to a failure elsewhere is never its cause
            data["cascade_class"] = True
        elif role == "cascade" and cascade_search(text[:4000]):
            payload = cascade_payload(text)
            if payload is not None:  # a watchdog quoting the CUDA error that stopped its rank
                role, category = "root", payload.category
                data["payload"] = ", ".join(payload.words)
                # only the lines that quote the cause prove it; the rest of the abort is still a cascade
                records = [r for r in records if cascade_payload(r.text) is not None] or records
        if rule.fallback or rule.generic or category == "unknown":
            # A generic rule (any Python exception, an unknown Xid, a device-side assert) says that something
            # failed, not what: the words of the line name the component (for a rule declared generic, those
            # outside the mechanism it matched); the learned line model too, for a generic rule and a fallback.
            read = first_failure(text) if rule.match == "text" else f"{first.message}\n{text}"
            left = words_left(rule, read) if rule.generic else read
            # the learned model reads a generic rule's words only when they say more than its own framing
            named = component(left, learned=rule.generic and says_more(left, framing(rule)))
            if named is not None and rule.generic and named.words == (LEARNED_WORDS,) and \
                    named.score < FALLBACK_LEARNED_MIN:
                # what a generic rule's match leaves is often only its framing ("cuda runtime error (700) :"):
                # a near coin toss of the model on those words does not overrule the mechanism the rule matched
                named = None
            if named is None and rule.fallback and rule.match == "message":
                # the exception line alone for the learned model: the paths of a traceback's frames are no fault's
                named = component(first.message, learned=True)
                if named is not None and named.score < FALLBACK_LEARNED_MIN:
                    named = None  # a near coin toss of the model does not overrule what the exception's name says
            if named is not None and named.category != category:
                category = named.category
                data["component"] = ", ".join(named.words)
            elif named is None and rule.generic:
                data["generic"] = True  # its words name nothing: the suspect's other lines may (``localize``)
            if rule.generic:
                data["generic_rule"] = True  # whatever its words read as, the rule matched a mechanism of any part
        elif role in ("root", "symptom") and groups.get("exc") and \
                (caught := named_component(f"{groups['exc']}: {first.message}")) is not None and \
                caught.category != category:
            # A rule that reports an exception it caught (a DataLoader worker's) gives its own category; the
            # caught exception's name, when it has one meaning (a remote store's timeout, a missing file), says
            # what failed.
            category = caught.category
            data["component"] = ", ".join(caught.words)
        elif rule.match == "text" and first.end_line > first.line and \
                not first.message.rstrip().endswith("Traceback (most recent call last):"):
            # A signature read in a traceback's frames (a save, a load) says where it failed; the exception
            # line, when it names a component, says what failed (unless it only wraps another traceback, as a
            # DataLoader worker's re-raised exception does).
            named = component(first.message)
            if named is not None and named.category != category and named.category != "software":
                category = named.category
                data["component"] = ", ".join(named.words)
        cause = chained_cause(text) if role in ("root", "symptom") else None
        if cause is not None:
            # a chained traceback: the first exception is the failure, the later ones what handling it hit
            named = component(cause)
            if named is not None and named.category not in (category, "software"):
                category = named.category
                data["component"] = ", ".join(named.words)
                data["cause"] = cause
        if category != rule.category:
            data["category_from_phase"] = True
        # A launcher summary names the host and rank that failed first: give them to localisation.
        for name in ("host", "failed_rank", "peer"):
            if groups.get(name):
                data[name] = groups[name]
        return Finding(
            detector=self.name,
            category=category,
            role=role,
            score=rule_score(severity, rule.priority),
            explain=explain,
            node=first.node,
            rank=first.rank,
            gpu=first.gpu if len(gpus) == 1 else None,
            time=first.time,
            rule=rule.id,
            severity=severity,
            action=self.pack.action(rule, groups, context) or None,
            records=records,
            count=count,
            data=data,
        )


class _PhaseLookup:
    """The phase in force at a record: its traceback's innermost frame, else its node's phase markers."""

    def __init__(self, scan: JobScan) -> None:
        self._scan = scan
        self._events: dict[str | None, list[Any]] | None = None

    def phase(self, record: Record) -> str | None:
        if record.end_line > record.line:
            tb = phase_from_traceback(record.text)
            if tb is not None:
                return tb
        if self._events is None:
            self._events = {}
            trackers: dict[str | None, PhaseTracker] = {}
            markers = sorted(self._scan.markers,
                             key=lambda m: (m.time if m.time is not None else math.inf, m.file, m.line))
            for m in markers:
                trackers.setdefault(m.node, PhaseTracker()).feed(m.kind, m.time, m.file, m.line, m.node,
                                                                 m.iteration)
            self._events = {n: t.events for n, t in trackers.items()}
        events = self._events.get(record.node, [])
        return phase_at(events, record.time, record.file, record.line)
