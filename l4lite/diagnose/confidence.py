"""The job's confidence: how likely the verdict's node and category are both right.

The per-suspect scores rank the nodes; they are not this number. A clean single exception is a low-scored finding
(an error line, no hardware signature) and yet the easiest verdict to get right, so the primary's score read as a
probability says "30 %" exactly where the engineer should trust it. The confidence is read instead from how the
verdict was reached, each reading one the diagnosis already made:

- how the category was decided: a specific rule, a generic rule (an exception) whose lines name a component or
  none ("bare"), a component named by the lexicon, a guess of the learned model, the training numbers, an
  inference from silence (a hang), or nothing;
- whether the words of the root lines name another category than the rule that gave it;
- whether the root evidence is only cascades (a peer went away: the node is inferred, the cause unread);
- whether other nodes printed root lines of their own (rival roots: the earliest was chosen, not proven);
- whether the verdict is job-wide: on the dev corpus a job-wide reading is right less often than the same
  reading on one node (a setting met by one rank is easily read as everyone's).

``TIERS`` holds the share of right verdicts per way the category was decided where the rules had not seen the
lines, ``PENALTIES`` a factor for each doubt present. The dev corpus, whose lines the rules were written from, said
0.97 for a specific rule, and the held-out part found verdicts above 0.8 right only 72 % of the time. The values
are read (``benchmarks/confidence_tiers.py --pool``) from 429 verdicts the rules had not seen: the dev corpus
out of fold with each fold's own rules and learned model dropped (``category_cv.py --drop-fold-rules``) and the
studied fresh line sets (``fresh_lines.py --jobs``), by one rule: tiers and factors are ratios of verdicts right to
verdicts expected right, read by turns, each shrunk by 5 pseudo-verdicts (a tier towards the pooled share right,
0.73; a factor towards 1, never above; no tier above 0.95). Two readings were added because they separate right
from wrong out of sample: a generic rule's category where the root lines name no component is the rule's
default, not a reading ("bare": right 10 of 31 against 43 of 52 where the words named one), and a rule whose
lines' words name another category than its own (right 9 of 13). Readings those verdicts lack keep a prior: a
link read from every rank waiting on the others (``diagnose.allwaited``: 3 of 5 such real jobs had both right)
and rival roots. The real jobs, where 28 of the 34 bare verdicts are one planted exception message (all right),
are right more often than this says. A table of plain numbers, not a fitted model: a logistic fit on the same
readings did no better in a grouped cross-validation over the same verdicts (docs/evaluation.md, 2026-12-06).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from l4lite.detect.base import Finding
from l4lite.diagnose.traits import inferred
from l4lite.rules.components import LEARNED_WORDS, component, is_cascade

TIERS: dict[str, float] = {
    "rule": 0.85, "health": 0.95, "lexicon": 0.79, "inferred": 0.88, "confirmed": 0.77, "generic": 0.85, "bare": 0.4,
    "learned": 0.42, "waited": 0.6, "none": 0.39,
}
RULE_TIERS = ("rule", "generic", "confirmed")  # the tiers whose category a rule gave
PENALTIES: dict[str, float] = {"global_scope": 0.89, "cascade_only": 0.92, "rival_roots": 0.9, "words_other": 0.91}


@dataclass(frozen=True)
class Basis:
    """What the confidence is read from; every field is a reading the diagnosis made."""

    decided_by: str  # a key of TIERS
    cascade_only: bool  # every root line reports a lost peer
    rival_roots: int  # other nodes with root lines of their own
    global_scope: bool
    words_other: bool = False  # the root lines' words name another category than the rule gave


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
    own = [t for t in lines if not is_cascade(t)]
    said = component("\n".join(own)) if own else None
    tier = decided_by(giver, category)
    if tier == "generic" and said is None:
        tier = "bare"  # a bare exception whose lines name no component: the category is the rule's default
    other = tier in RULE_TIERS and said is not None and said.category != category
    return Basis(tier, bool(lines) and all(is_cascade(t) for t in lines),
                 len(rivals) if scope != "global" else 0, scope == "global", other)


def job_confidence(basis: Basis) -> float:
    """The probability the node and category are right, from the share right per reading on unseen lines."""
    p = TIERS.get(basis.decided_by, TIERS["none"])
    if basis.global_scope:
        p *= PENALTIES["global_scope"]
    if basis.cascade_only:
        p *= PENALTIES["cascade_only"]
    if basis.rival_roots:
        p *= PENALTIES["rival_roots"]
    if basis.words_other:
        p *= PENALTIES["words_other"]
    return round(min(1.0, max(0.0, p)), 3)
