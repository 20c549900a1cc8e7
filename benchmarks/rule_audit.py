"""Rule categories against the labelled threads that hit them.

Usage: python benchmarks/rule_audit.py [--min-threads 3] [--all] [--no-examples]

A rule's category is a claim about every line it matches. The labelled data says what each thread's own
diagnosis found: ``fixtures/real/lines.jsonl`` (failure lines with the thread's category) and the dev part of
``fixtures/real/corpus.jsonl`` (incident excerpts; every line that is not a cascade may be the root). For each
shipped rule of role root or symptom whose category decides (not ``unknown``, not a fallback, not ``generic``:
those yield their line's category to its words), this lists the labels of the threads it matches, one vote per
source group (one GitHub thread copied into both files votes once). The rule pack's own examples are matched
too and shown as a column, but they do not vote: they were written with the rule's category in mind.

A rule is a defect when at least ``--min-threads`` threads of distinct source groups hit it and their majority
label is another category: the category was most likely chosen from one excerpt. The held-out part of the
corpus is never read. Exit status 1 when a defect is found (``tests/test_rule_audit.py`` runs the same check).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from l4lite.evaluate.corpus import load_corpus  # noqa: E402
from l4lite.rules import components  # noqa: E402
from l4lite.rules.pack import Rule, RuleMatch, RulePack  # noqa: E402


@dataclass(frozen=True)
class Thread:
    """One labelled thread's lines: the lines file's entry or a dev excerpt."""

    group: str
    label: str
    lines: tuple[str, ...]
    origin: str  # "lines" or "dev"


@dataclass
class Audit:
    """One rule's votes: source group -> label, and how many of its own examples it matches."""

    rule: Rule
    votes: dict[str, str] = field(default_factory=dict)
    examples: int = 0

    @property
    def counts(self) -> Counter[str]:
        return Counter(self.votes.values())

    @property
    def majority(self) -> tuple[str, int] | None:
        """The label more than half of the threads carry, with its count; None without one."""
        if not self.votes:
            return None
        label, n = self.counts.most_common(1)[0]
        return (label, n) if 2 * n > len(self.votes) else None

    def defect(self, min_threads: int) -> bool:
        """At least ``min_threads`` independent threads, and their majority says another category."""
        top = self.majority
        return len(self.votes) >= min_threads and top is not None and top[0] != self.rule.category


def labelled_threads(root: Path = ROOT) -> list[Thread]:
    """The lines file's entries and the dev incident excerpts with a known category (never the held-out part)."""
    out: list[Thread] = []
    with open(root / "fixtures" / "real" / "lines.jsonl", encoding="utf-8") as fh:
        for raw in fh:
            if raw.strip():
                row = json.loads(raw)
                out.append(Thread(str(row["source_group"]), str(row["category"]),
                                  tuple(str(x) for x in row["lines"]), "lines"))
    for x in load_corpus(root / "fixtures" / "real" / "corpus.jsonl"):
        if x.split != "dev" or x.status != "incident" or x.category in (None, "unknown"):
            continue
        out.append(Thread(x.source_group, str(x.category), tuple(x.lines), "dev"))
    return out


def deciding(rule: Rule) -> bool:
    """A rule whose category becomes its finding's: root or symptom, a category, neither fallback nor generic."""
    return rule.role in ("root", "symptom") and rule.category != "unknown" and not rule.fallback \
        and not getattr(rule, "generic", False)


def _decider(matches: Iterable[RuleMatch]) -> set[str]:
    """The rules whose category a line's finding would take: among the deciding rules that match it, those of
    the strongest role (root before symptom) and the highest priority. A generic phrase that a more specific
    rule also matches (ENOSPC in NCCL's shared-memory warning) does not decide that line."""
    ms = [m.rule for m in matches if deciding(m.rule)]
    if not ms:
        return set()
    role = "root" if any(r.role == "root" for r in ms) else "symptom"
    top = max(r.priority for r in ms if r.role == role)
    return {r.id for r in ms if r.role == role and r.priority == top}


def rules_hit(pack: RulePack, lines: Sequence[str]) -> set[str]:
    """Ids of the rules that decide a line of ``lines`` that is not a cascade, or the lines read as one record
    (a traceback's text rules read its frames; its message is its last line)."""
    hit: set[str] = set()
    for line in lines:
        if line.strip() and not components.is_cascade(line):
            hit |= _decider(pack.match_fields(line, line))
    body = [x for x in lines if x.strip()]
    if len(body) > 1:
        text = "\n".join(body)
        if not components.is_cascade(text):
            hit |= _decider(m for m in pack.match_fields(body[-1], text) if m.rule.match == "text")
    return hit


def audit(pack: RulePack | None = None, threads: Iterable[Thread] | None = None,
          with_examples: bool = True) -> list[Audit]:
    """Every deciding shipped rule with the votes of the labelled threads it matches."""
    pack = pack or RulePack.load()
    table = {r.id: Audit(r) for r in pack.rules if r.shipped and deciding(r)}
    for t in threads if threads is not None else labelled_threads():
        for rid in rules_hit(pack, t.lines):
            if rid in table:
                table[rid].votes.setdefault(t.group, t.label)
    if with_examples:
        for a in table.values():
            a.examples = sum(1 for ex in a.rule.examples if rules_hit(pack, ex.splitlines()) & {a.rule.id})
    return sorted(table.values(), key=lambda a: (-len(a.votes), a.rule.id))


def defects(audits: Iterable[Audit], min_threads: int = 3) -> list[Audit]:
    return [a for a in audits if a.defect(min_threads)]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-threads", type=int, default=3)
    ap.add_argument("--all", action="store_true", help="every rule a thread hits, not only the disagreeing ones")
    ap.add_argument("--no-examples", action="store_true", help="skip matching the rules' own examples")
    args = ap.parse_args(argv)
    threads = labelled_threads()
    audits = audit(threads=threads, with_examples=not args.no_examples)
    bad = defects(audits, args.min_threads)
    hit = [a for a in audits if a.votes]
    print(f"labelled threads {len(threads)} ({len({t.group for t in threads})} source groups); "
          f"deciding rules {len(audits)}, hit {len(hit)}, defects {len(bad)} (>= {args.min_threads} threads)")
    for a in (hit if args.all else bad):
        agree = a.counts.get(a.rule.category, 0)
        votes = ", ".join(f"{c} {n}" for c, n in a.counts.most_common())
        flag = "DEFECT " if a in bad else ""
        print(f"{flag}{a.rule.id} ({a.rule.category}): agrees {agree}/{len(a.votes)} threads [{votes}]"
              f", own examples matched {a.examples}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
