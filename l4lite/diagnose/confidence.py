"""The job's confidence: how likely the verdict's node and category are both right.

The per-suspect scores rank the nodes; they are not this number. A clean single exception is a low-scored finding
(an error line, no hardware signature) and yet the easiest verdict to get right, so the primary's score read as a
probability says "30 %" exactly where the engineer should trust it. The confidence is read instead from how the
verdict was reached, each reading one the diagnosis already made:

- how the category was decided: a specific rule, a generic rule (a bare exception), a component named by the
  lexicon, a guess of the learned model, the training numbers, an inference from silence (a hang), or nothing;
- whether the root evidence is only cascades (a peer went away: the node is inferred, the cause unread);
- whether other nodes printed root lines of their own (rival roots: the earliest was chosen, not proven);
- whether the verdict is job-wide: on the dev corpus a job-wide reading is right less often than the same
  reading on one node (a setting met by one rank is easily read as everyone's).

``TIERS`` holds the share of right verdicts per way the category was decided on the dev corpus (planted in every
layout, 531 verdicts, 2026-12-06); ``PENALTIES`` multiply it for each doubt present. Readings the dev corpus has
too few of are priors, not measurements: the learned model's guess (none on dev; below a lexicon hit), a link read
from every rank waiting on the others (``diagnose.allwaited``: the category, while which side of the link is at fault
is a guess; 3 of 5 such real jobs had both right), a launcher's
account (as an inference), rival roots (none on dev), and "none" (0.69 right on dev only because some excerpts
are labelled unknown; on the real jobs no verdict without a category was right, so it stays a coin toss). A table
of plain numbers, not a fitted model: a logistic fit on the same features calibrated the dev corpus slightly
better and the real jobs worse (docs/evaluation.md, 2026-12-06).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from l4lite.detect.base import Finding
from l4lite.diagnose.traits import inferred
from l4lite.rules.components import LEARNED_WORDS, is_cascade

TIERS: dict[str, float] = {
    "rule": 0.97, "health": 0.95, "lexicon": 0.85, "inferred": 0.85, "confirmed": 0.85, "generic": 0.75,
    "learned": 0.6, "waited": 0.6, "none": 0.5,
}
PENALTIES: dict[str, float] = {"global_scope": 0.87, "cascade_only": 0.85, "rival_roots": 0.9}


@dataclass(frozen=True)
class Basis:
    """What the confidence is read from; every field is a reading the diagnosis made."""

    decided_by: str  # a key of TIERS
    cascade_only: bool  # every root line reports a lost peer
    rival_roots: int  # other nodes with root lines of their own
    global_scope: bool


def decided_by(finding: Finding | None, category: str | None) -> str:
    """How the finding that gave the verdict its category read it."""
    if finding is None or not category or category == "unknown":
        return "none"
    data = finding.data
    if data.get("all_waited"):  # every rank waited on the others: the link, whose side of it is a guess
        return "waited"
    if finding.detector == "components":
        return "learned" if data.get("component") == LEARNED_WORDS else "lexicon"
    if finding.detector == "health":
        return "health"
    if inferred(finding) or finding.detector in ("hang", "desync", "iforest", "filters"):
        return "inferred"
    if finding.role == "confirmation":
        return "confirmed"
    return "generic" if data.get("fallback") or data.get("generic") else "rule"


def basis_of(findings: Sequence[Finding], roles: Sequence[str], primary: Finding | None, category: str | None,
             scope: str | None) -> Basis:
    """The readings of a finished verdict (findings and roles in their final order)."""
    roots = [f for f, role in zip(findings, roles, strict=True) if role == "root"]
    giver = next((f for f in roots if f.category == category), primary)
    lines = [r.text for f in roots for r in f.records]
    node = primary.node if primary is not None else None
    rivals = {f.node for f in findings if f.role == "root" and f.detector == "rules" and f.node is not None
              and f.node != node and not any(is_cascade(r.text) for r in f.records)}
    return Basis(decided_by(giver, category), bool(lines) and all(is_cascade(t) for t in lines),
                 len(rivals) if scope != "global" else 0, scope == "global")


def job_confidence(basis: Basis) -> float:
    """The probability the node and category are right, from the dev corpus's share right per reading."""
    p = TIERS.get(basis.decided_by, TIERS["none"])
    if basis.global_scope:
        p *= PENALTIES["global_scope"]
    if basis.cascade_only:
        p *= PENALTIES["cascade_only"]
    if basis.rival_roots:
        p *= PENALTIES["rival_roots"]
    return round(min(1.0, max(0.0, p)), 3)
