"""Suspects: the nodes a verdict blames, ranked, each with the reasons and the category its own findings give.

A peer whose only lines are the failure's consequences (watchdog timeouts, teardown) is ranked below the root's
node and carries no category of its own: printing "numerical" beside a node that only timed out waiting would
send the engineer to look at the wrong machine for the wrong thing. A node with a root line of its own (a second
fault) keeps that line's category.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from l4lite.detect.base import Finding
from l4lite.scan.scanner import UNKNOWN_NODE

WEIGHT = {"root": 0.45, "confirmation": 0.4, "anomaly": 0.3, "symptom": 0.2, "cascade": 0.08}
OTHERS_CAP = 0.8  # share of the primary's score another node may reach: the primary's node stays first
MAX_REASONS = 4


class Ranked(NamedTuple):
    """One suspect: ``category`` is None for a node whose findings are only consequences of the failure."""

    node: str
    score: float
    reasons: list[str]
    category: str | None


def own_category(findings: Sequence[Finding], roles: Sequence[str]) -> str | None:
    """The category the first finding that is not a consequence names (a root line on another node counts)."""
    for f, role in zip(findings, roles, strict=True):
        if (role != "cascade" or f.role == "root") and f.category not in (None, "unknown"):
            return f.category
    return None


def rank_suspects(findings: Sequence[Finding], roles: Sequence[str], primary: Finding | None,
                  category: str | None, limit: int) -> list[Ranked]:
    """Nodes ranked by their findings' roles and scores; the primary's node first, with the verdict's category."""
    scores: dict[str, float] = {}
    reasons: dict[str, list[str]] = {}
    mine: dict[str, tuple[list[Finding], list[str]]] = {}
    # a root on no known node (a stopped node no line names): nodes whose lines only followed it are no suspects
    lost_only = primary is not None and primary.node in (None, UNKNOWN_NODE)
    for f, role in zip(findings, roles, strict=True):
        if f.node is None or f.node == UNKNOWN_NODE or (lost_only and role not in ("root", "confirmation")):
            continue  # lines of no known node blame no node
        if f is primary:
            s = 0.7 + 0.3 * min(1.0, f.score)
        elif role == "cascade" and f.role == "root":
            s = 0.5 * WEIGHT["root"] * f.score  # a root line on a node other than the first
        else:
            s = WEIGHT.get(role, 0.1) * min(1.0, f.score)
        scores[f.node] = 1 - (1 - scores.get(f.node, 0.0)) * (1 - s)
        if len(reasons.setdefault(f.node, [])) < MAX_REASONS and f.explain not in reasons[f.node]:
            reasons[f.node].append(f"{role}: {f.explain}")
        fs, rs = mine.setdefault(f.node, ([], []))
        fs.append(f)
        rs.append(role)
    if primary is not None and primary.node in scores:
        top = max(scores.values())
        scores[primary.node] = max(scores.get(primary.node, 0.0), min(1.0, top + 0.05))
        for n in scores:
            if n != primary.node:
                scores[n] = min(scores[n], scores[primary.node] * OTHERS_CAP)
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    lead = primary.node if primary is not None and primary.node in scores else (ranked[0][0] if ranked else None)
    return [Ranked(n, round(min(1.0, s), 3), reasons.get(n, []), category if n == lead else own_category(*mine[n]))
            for n, s in ranked[:limit] if s > 0.02]
