"""Verdicts ``tail`` raises without waiting for a full diagnosis: from root-cause rule hits alone, and hangs.

A root-cause line (an Xid 79, an uncorrectable ECC error, an InfiniBand link down) already says what broke and
where; the alert for it goes out within the poll that read it, and the periodic diagnosis later refines it
(suspect scores, phase, cascades). A hang shows no line at all: training progress stops while other lines
(heartbeats, watchdog warnings) keep coming, which only a live follower can see on the wall clock.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from l4lite.diagnose.incident import Evidence, Incident, Suspect
from l4lite.records import Record
from l4lite.scan.scanner import UNKNOWN_NODE


@dataclass
class RootHit:
    """A record that matched a root-cause rule, with the rule's explanation and action filled in."""

    rule: Any  # l4lite.rules.signature.Rule
    groups: dict[str, str]
    record: Record
    explain: str
    action: str
    seen_at: float = 0.0  # monotonic time it was found


def iso(t: float | None) -> str | None:
    if t is None or not math.isfinite(t):
        return None
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def node_or_none(key: str) -> str | None:
    """A scan node key (``rank:N`` and ``unknown`` stand in for nodes not known) as an incident node."""
    return None if key == UNKNOWN_NODE or key.startswith("rank:") else key


def rules_incident(hits: Sequence[RootHit], template_of: Callable[[Record], str],
                   stats: dict[str, Any]) -> Incident:
    """The incident the root-cause hits make on their own: the earliest hit names category and first suspect."""
    hits = sorted(hits, key=lambda h: (h.record.time if h.record.time is not None else math.inf,
                                       h.record.file, h.record.line))
    first = hits[0]
    evidence = [Evidence(file=h.record.file, line=h.record.line, node=h.record.node, rank=h.record.rank,
                         time=iso(h.record.time), text=h.record.text, template_id=template_of(h.record),
                         rule=h.rule.id, role="root", score=1.0, end_line=h.record.end_line, source=h.record.source,
                         gpu=h.record.gpu, category=h.rule.category, explain=h.explain) for h in hits]
    suspects: list[Suspect] = []
    if not first.rule.is_global:
        seen: dict[str, Suspect] = {}
        for h in hits:
            node = h.record.node or (f"rank {h.record.rank}" if h.record.rank is not None else None)
            if node and node not in seen and not h.rule.is_global:
                seen[node] = Suspect(node, round(1.0 / (1 + len(seen)), 3), [h.explain], h.rule.category)
        suspects = list(seen.values())
    where = f"{suspects[0].node}, " if suspects else ""
    summary = f"{first.explain} ({where}{first.record.file}:{first.record.line})"
    actions = list(dict.fromkeys(h.action for h in hits if h.action))[:3]
    return Incident(status="incident", category=first.rule.category, phase=first.rule.phase_hint, iteration=None,
                    failure_time=iso(first.record.time), summary=summary, suspects=suspects, evidence=evidence,
                    recommendations=actions, stats=stats, scope="global" if first.rule.is_global else "node")


def hang_incident(progress: Mapping[str, Any], stalled: float, last_lines: Mapping[str, str],
                  stats: dict[str, Any]) -> Incident:
    """No training progress for ``stalled`` seconds: the last progress line of each node is the evidence; nodes
    that stopped at an earlier iteration than the others are the suspects."""
    last = {node: p for node, p in progress.items() if p.last_iteration is not None}
    top = max((p.last_iteration for p in last.values()), default=None)
    behind = sorted(n for n, p in last.items() if top is not None and p.last_iteration < top)
    evidence = [Evidence(file=p.last_file, line=p.last_line, node=node_or_none(n), rank=None, time=iso(p.last_time),
                         text=last_lines.get(n) or f"iteration {p.last_iteration}", template_id="", rule="hang",
                         role="symptom", score=0.5)
                for n, p in sorted(last.items(), key=lambda kv: kv[1].last_iteration or 0)[:10]]
    suspects = [Suspect(node_or_none(n) or n, 0.6, [f"stopped at iteration {last[n].last_iteration}, "
                                                    f"others reached {top}"]) for n in behind]
    who = f"; {', '.join(behind)} stopped first" if behind else ""
    summary = (f"Training hang: no progress for {stalled:.0f} s after iteration {top} while logs are still "
               f"written{who}.")
    return Incident(status="incident", category="unknown", phase="train", iteration=top, failure_time=None,
                    summary=summary, suspects=suspects, evidence=evidence, scope="node" if behind else "global",
                    recommendations=["Dump the stacks of the stuck ranks (py-spy dump) before restarting the job."],
                    stats=stats)
