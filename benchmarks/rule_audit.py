"""Rule categories against the labelled threads that hit them.

Usage: python benchmarks/rule_audit.py [--min-threads 3] [--all] [--no-examples] [--spread] [--words] [--fallback]
       [--folds 5]

A rule's category is a claim about every line it matches. The labelled data says what each thread's own
diagnosis found: ``fixtures/real/lines.jsonl`` (failure lines with the thread's category), the dev part of
``fixtures/real/corpus.jsonl`` (incident excerpts; every line that is not a cascade may be the root) and
``fixtures/real/real-failures.jsonl`` (the older excerpts, their ``root_cause`` read in the incident
vocabulary). For each shipped rule of role root or symptom whose category decides (not ``unknown``, not a
fallback, not ``generic``: those yield their line's category to its words), this lists the labels of the threads
it matches, one vote per source group (one GitHub thread copied into two files votes once). The rule pack's own
examples are matched too and shown as a column, but they do not vote: they were written with the rule's category
in mind.

A rule is a defect when at least ``--min-threads`` threads of distinct source groups hit it and their majority
label is another category: the category was most likely chosen from one excerpt. Exit status 1 when a defect is
found (``tests/test_rule_audit.py`` runs the same check).

``--spread`` audits every root or symptom rule (generic and fallback ones too) by the category its finding gets
on each thread's line (``RuleDetector``: a generic rule's words outside its mechanism, a fallback's exception
words, the learned model), beside the category the rule is written with. A rule that is not generic and whose
threads spread over several categories with none holding ``MECHANISM_SHARE`` of them names a mechanism, not a
cause (``MECHANISM``); a generic rule whose reading agrees less often than its written category would is
flagged ``READS-WORSE``. ``--words`` does the same for the lexicon's words (``rules.components``).
``--fallback`` shows, for the threads whose line only the Python exception fallback explains, what each way of
choosing its category would have said. The held-out part of the corpus is never read; a line of the other files
from a held-out thread is dropped too.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from l4lite.detect.rules import RuleDetector  # noqa: E402
from l4lite.evaluate.components_train import LEGACY_CATEGORY, SHARED_CHARS, holdout_sources  # noqa: E402
from l4lite.evaluate.corpus import load_corpus  # noqa: E402
from l4lite.records import Record  # noqa: E402
from l4lite.rules import components  # noqa: E402
from l4lite.rules.pack import RulePack  # noqa: E402
from l4lite.rules.signature import Rule, RuleMatch  # noqa: E402
from l4lite.scan.jobscan import Hit, JobScan  # noqa: E402

MECHANISM_MIN = 4  # threads a rule must be hit by before its spread says anything
AGREE_MIN = 3  # distinct source groups that must agree on another label before a rule takes it
ROLE_ONLY_MIN = 4  # distinct source groups a rule's own category must lose on before it gives the category up
MECHANISM_SHARE = 0.6  # below this share for its top label, a rule's threads spread over several causes
TRACEBACK = re.compile(r"Traceback \(most recent call last\):\s*$")  # a header the reader joins to its frames
GITHUB = re.compile(r"github\.com/([^/\s]+/[^/\s]+)/(?:issues|pull|discussions)/(\d+)")
# the fresh samples whose misses may be read; b, d, f, h, j, l and the -score halves are only scored and never
# enter an audit (a thread of b that the lines file also holds votes through the lines file's entry)
STUDIED_FRESH = ("a", "c", "e", "g", "i", "k", "m-study", "n-study", "o-study", "p-study", "q-study", "r-study",
                 "s-study", "t-study", "u-study", "v-study", "w-study",
                 "x-study")


@dataclass(frozen=True)
class Thread:
    """One labelled thread's lines: the lines file's entry, a dev excerpt or an older excerpt."""

    group: str
    label: str
    lines: tuple[str, ...]
    origin: str  # "lines", "dev", "failures", "fresh" or "jobs"
    id: str = ""  # a dev excerpt's id (a cross-validation fold leaves it out of the learned model's text)


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


def group_of(url: str) -> str:
    """A thread's source group from its URL (``owner/repo#N`` for a GitHub thread, as the other files name it)."""
    m = GITHUB.search(url)
    return f"{m.group(1)}#{m.group(2)}" if m else url


def labelled_threads(root: Path = ROOT, fresh: bool = False, jobs: bool = False) -> list[Thread]:
    """The lines file's entries, the dev incident excerpts and the older excerpts with a known category (never
    the held-out part, nor a line of another file collected from a held-out thread); with ``fresh``, also the
    studied fresh samples' entries whose thread no other file holds; with ``jobs``, the real jobs' ground-truth
    evidence lines (``job_threads``)."""
    held = holdout_sources(root / "fixtures" / "real" / "corpus.jsonl")
    out: list[Thread] = []
    with open(root / "fixtures" / "real" / "lines.jsonl", encoding="utf-8") as fh:
        for raw in fh:
            if raw.strip():
                row = json.loads(raw)
                if row["source_group"] in held or row.get("source_url") in held:
                    continue
                out.append(Thread(str(row["source_group"]), str(row["category"]),
                                  tuple(str(x) for x in row["lines"]), "lines"))
    for x in load_corpus(root / "fixtures" / "real" / "corpus.jsonl"):
        if x.split != "dev" or x.status != "incident" or x.category in (None, "unknown"):
            continue
        out.append(Thread(x.source_group, str(x.category), tuple(x.lines), "dev", x.id))
    with open(root / "fixtures" / "real" / "real-failures.jsonl", encoding="utf-8") as fh:
        for raw in fh:
            row = json.loads(raw) if raw.strip() else {}
            label = LEGACY_CATEGORY.get(str(row.get("root_cause") or ""))
            url = str(row.get("source_url") or "")
            if label and url not in held and group_of(url) not in held:
                out.append(Thread(group_of(url), label, tuple(str(x) for x in row["lines"]), "failures"))
    seen = {t.group for t in out}
    for name in STUDIED_FRESH if fresh else ():
        with open(root / "fixtures" / "real" / "fresh" / f"{name}.jsonl", encoding="utf-8") as fh:
            for raw in fh:
                row = json.loads(raw) if raw.strip() else {}
                group = str(row.get("source_group") or "")
                if group and group not in seen and group not in held and row.get("category"):
                    seen.add(group)
                    out.append(Thread(group, str(row["category"]), tuple(str(x) for x in row["lines"]), "fresh"))
    return out + (job_threads(root / "fixtures" / "real_jobs") if jobs else [])


def job_threads(jobs: Path) -> list[Thread]:
    """Each real job with a fault category (``fixtures/real_jobs/*/ground_truth.json``) as a labelled thread: the
    lines its ground truth names as evidence, read from the job's files. These jobs were run on this machine with
    injected faults, so their label is the fault injected, not a thread's diagnosis; the same fault run under
    several launchers (``ddp-erofs``, ``deepspeed-erofs``) is one source, so its source group is the fault
    (``real_jobs/erofs``) and it votes once."""
    out: list[Thread] = []
    for truth_file in sorted(jobs.glob("*/ground_truth.json")):
        truth = json.loads(truth_file.read_text(encoding="utf-8"))
        label = str(truth.get("category") or "")
        if truth.get("status") != "incident" or label in ("", "unknown"):
            continue
        lines: list[str] = []
        for ev in truth.get("evidence") or []:
            path = truth_file.parent / str(ev.get("file", ""))
            try:
                text = path.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            n = int(ev.get("line") or 0)
            if 0 < n <= len(text):
                lines.append(text[n - 1])
        if lines:
            fault = str(truth.get("scenario") or truth_file.parent.name).split("-", 1)[-1]
            out.append(Thread(f"real_jobs/{fault}", label, tuple(lines), "jobs"))
    return out


def deciding(rule: Rule) -> bool:
    """A rule whose category becomes its finding's: root or symptom, a category, neither fallback nor generic."""
    return rule.role in ("root", "symptom") and rule.category != "unknown" and not rule.fallback \
        and not getattr(rule, "generic", False)


def _decider(matches: Iterable[RuleMatch], rank: Callable[[Rule], bool] = deciding) -> set[str]:
    """The rules whose category a line's finding would take: among the ``rank`` rules that match it, those of
    the strongest role (root before symptom) and the highest priority. A generic phrase that a more specific
    rule also matches (ENOSPC in NCCL's shared-memory warning) does not decide that line."""
    ms = [m.rule for m in matches if rank(m.rule)]
    if not ms:
        return set()
    role = "root" if any(r.role == "root" for r in ms) else "symptom"
    top = max(r.priority for r in ms if r.role == role)
    return {r.id for r in ms if r.role == role and r.priority == top}


def _records(lines: Sequence[str]) -> list[tuple[Record, bool]]:
    """A thread's lines as the records a job would hold: each line that is not a cascade alone, and the lines read
    as one record (a traceback: its text rules read its frames, its message is its last line); the flag says
    that only text rules are asked about the record."""
    def record(i: int, message: str, text: str, end: int) -> Record:
        return Record(file="rank0.log", line=i, end_line=end, node="node01", rank=0, gpu=None, source="trainer",
                      time=None, level="error", message=message, text=text)

    out = [(record(i, line, line, i), False) for i, line in enumerate(lines, 1)
           if line.strip() and not components.is_cascade(line) and not TRACEBACK.search(line)]
    body = [x for x in lines if x.strip()]
    if len(body) > 1 and not components.is_cascade("\n".join(body)):
        out.append((record(1, body[-1], "\n".join(body), len(body)), True))
    return out


def rules_hit(pack: RulePack, lines: Sequence[str]) -> set[str]:
    """Ids of the rules that decide a line of ``lines`` that is not a cascade, or the lines read as one record."""
    hit: set[str] = set()
    for rec, whole in _records(lines):
        hit |= _decider(m for m in pack.match_fields(rec.message, rec.text) if not whole or m.rule.match == "text")
    return hit


def any_cause(rule: Rule) -> bool:
    """A root or symptom rule, whatever decides its category (its own, its words', a fallback's)."""
    return rule.role in ("root", "symptom")


class Reading(NamedTuple):
    """The category a rule's finding took on a line, and whether the line's words (or the learned model) gave
    it rather than the rule."""

    category: str
    named: bool


def readings(pack: RulePack, lines: Sequence[str], off: Iterable[str] = ()) -> dict[str, Reading]:
    """Rule id -> the category its finding takes on the thread's lines (``RuleDetector``, as a job would give
    it), for every root or symptom rule that decides one of them; the first line decided wins. ``off``: rules
    switched off for these lines (those written from them)."""
    detector = RuleDetector(pack)
    out: dict[str, Reading] = {}
    saved = set(pack.disabled)
    pack.disabled |= set(off)
    try:
        _read(pack, detector, lines, out)
    finally:
        pack.disabled = saved
    return out


def _read(pack: RulePack, detector: RuleDetector, lines: Sequence[str], out: dict[str, Reading]) -> None:
    for rec, whole in _records(lines):
        # the lines read as one record add a text rule's reading of the frames, not a second fallback
        ms = [m for m in pack.match(rec) if not whole or (m.rule.match == "text" and not m.rule.fallback)]
        for rid in sorted(_decider(ms, any_cause) - set(out)):
            scan = JobScan()
            scan.hits.append(Hit(rid, rec, next(m.groups for m in ms if m.rule.id == rid)))
            found = [f for f in detector.detect(scan) if f.role in ("root", "symptom")]
            if found:
                out[rid] = Reading(found[0].category, "component" in found[0].data)


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


class Vote(NamedTuple):
    """One thread's say about a rule: its label, the category the rule's finding took on its line, and where
    the thread comes from."""

    label: str
    read: str
    origin: str
    named: bool = False  # the line's words gave the category (a generic or fallback rule's reading)


@dataclass
class Spread:
    """One rule's threads by source group."""

    rule: Rule
    votes: dict[str, Vote] = field(default_factory=dict)
    written_from: int = 0  # threads one of its examples copies a line of: they do not vote for it

    @property
    def labels(self) -> Counter[str]:
        return Counter(v.label for v in self.votes.values())

    @property
    def written(self) -> int:
        """Threads whose label is the rule's written category."""
        return sum(v.label == self.rule.category for v in self.votes.values())

    @property
    def read(self) -> int:
        """Threads whose label is the category the rule's finding took."""
        return sum(v.label == v.read for v in self.votes.values())

    @property
    def unnamed(self) -> Counter[str]:
        """The labels of the threads whose words named nothing: what the rule's own category stands for."""
        return Counter(v.label for v in self.votes.values() if not v.named)

    @property
    def origins(self) -> Counter[str]:
        return Counter(v.origin for v in self.votes.values())

    @property
    def soft(self) -> bool:
        """Its category yields to the line's words (generic, fallback or ``unknown``)."""
        return self.rule.generic or self.rule.fallback or self.rule.category == "unknown"

    @property
    def mechanism(self) -> bool:
        """Hit by enough threads, and no label holds ``MECHANISM_SHARE`` of them: a mechanism, not a cause."""
        n = len(self.votes)
        return n >= MECHANISM_MIN and self.labels.most_common(1)[0][1] < MECHANISM_SHARE * n

    def verdict(self) -> str:
        """What the labels say about the rule's own category, read only on the threads where it decides (the
        line's words named nothing): ``category X`` when at least ``AGREE_MIN`` source groups, more than half of
        them, carry another label X; ``role-only`` when at least ``ROLE_ONLY_MIN`` groups decide and another
        label outnumbers its own (it says that something failed, not what); empty otherwise."""
        decisive = self.unnamed
        n = sum(decisive.values())
        if not n or self.rule.category == "unknown":
            return ""
        top, k = decisive.most_common(1)[0]
        if top != self.rule.category and k >= AGREE_MIN and 2 * k > n:
            return f"category {top}"
        if n >= ROLE_ONLY_MIN and k > decisive[self.rule.category]:
            return "role-only"
        return ""

    def fitted(self) -> str:
        """A category chosen from one source: where the rule's own category decides (the line's words named
        nothing), at most one source group carries it while at least two carry one other label that outnumbers
        it. ``category X`` when that label also reaches ``AGREE_MIN`` groups (the threads' majority can replace
        it), ``component`` otherwise (the line's words should decide, as for a generic rule); empty when not."""
        decisive = self.unnamed
        own = decisive[self.rule.category]
        others = [(k, label) for label, k in decisive.items() if label != self.rule.category]
        if self.rule.category == "unknown" or self.rule.fallback or not others or own > 1:
            return ""
        k, label = max(others)
        if k < 2 or k <= own:
            return ""
        return f"category {label}" if k >= AGREE_MIN and 2 * k > sum(decisive.values()) else "component"

    def flag(self) -> str:
        if self.soft:
            return "READS-WORSE" if len(self.votes) >= MECHANISM_MIN and self.read < self.written else ""
        return "MECHANISM" if self.mechanism else ""


def _copied(rule: Rule) -> set[str]:
    """The long lines of a rule's examples: a thread holding one is a thread the rule was written from."""
    return {x.strip() for ex in rule.examples for x in ex.splitlines() if len(x.strip()) >= SHARED_CHARS}


def spread(pack: RulePack | None = None, threads: Iterable[Thread] | None = None, folds: int = 0) -> list[Spread]:
    """Every shipped root or symptom rule with its threads' labels and its findings' categories there.

    Each thread is read as a new failure would be: the rules written from it (an example copies one of its
    lines) are off, so that the rule a more general pattern stands in for is judged, and with ``folds`` the
    learned model is one trained without the thread's fold (by source group); 0 reads with the shipped model,
    which was trained on these threads."""
    pack = pack or RulePack.load()
    table = {r.id: Spread(r) for r in pack.rules if r.shipped and any_cause(r)}
    copied = {r.id: _copied(r) for r in pack.rules if r.shipped and r.examples}
    todo = list(threads if threads is not None else labelled_threads())
    for part in _folds(todo, folds):
        for t in part:
            own = {rid for rid, lines in copied.items() if any(x.strip() in lines for x in t.lines)}
            for rid in own & set(table):
                table[rid].written_from += 1
            for rid, got in readings(pack, t.lines, own).items():
                if rid in table:
                    table[rid].votes.setdefault(t.group, Vote(t.label, got.category, t.origin, got.named))
    return sorted((s for s in table.values() if s.votes), key=lambda s: (-len(s.votes), s.rule.id))


def _folds(threads: list[Thread], folds: int) -> Iterable[list[Thread]]:
    """The threads in one part (``folds`` 0), or fold by fold with the learned model retrained without the fold
    (``components_train.training_text``; the older excerpts stay in its text) put in place of the shipped one."""
    if folds <= 0:
        yield threads
        return
    import hashlib

    from l4lite.evaluate import components_train
    from l4lite.rules import learned

    saved = learned.shipped_model
    try:
        for k in range(folds):
            part = [t for t in threads if int(hashlib.sha1(t.group.encode()).hexdigest(), 16) % folds == k]
            docs, labels = components_train.training_text(
                ROOT, exclude={t.id for t in part if t.id}, exclude_lines={t.group for t in part})
            model = components_train.train(docs, labels)
            learned.shipped_model = lambda m=model: m  # type: ignore[assignment]
            yield part
    finally:
        learned.shipped_model = saved  # type: ignore[assignment]


def _counts(c: Counter[str]) -> str:
    return ", ".join(f"{k} {n}" for k, n in c.most_common())


def print_spread(rows: Sequence[Spread]) -> None:
    print(f"{'rule':28s} {'category':12s} {'kind':8s} {'n':>3s} {'written':>7s} {'read':>5s} {'own':>4s}  "
          "origins; labels")
    for s in rows:
        kind = "fallback" if s.rule.fallback else "generic" if s.rule.generic else \
            "unknown" if s.rule.category == "unknown" else "cause"
        print(f"{s.rule.id:28s} {s.rule.category:12s} {kind:8s} {len(s.votes):3d} {s.written:7d} {s.read:5d} "
              f"{s.written_from:4d}  {_counts(s.origins)}; {_counts(s.labels)} {s.flag()}"
              + (f" VERDICT {s.verdict()}" if s.verdict() else "") + (f" FITTED {s.fitted()}" if s.fitted() else ""))
        if s.soft and s.unnamed and s.unnamed != s.labels:
            print(f"{'':28s} words named nothing on {sum(s.unnamed.values())}: {_counts(s.unnamed)}")


def fallback_choices(pack: RulePack, threads: list[Thread], folds: int = 0,
                     rule_id: str = "python-exception") -> Counter[tuple[str, bool]]:
    """For the threads whose line only the fallback explains, each way of choosing its category when the
    exception's words name nothing: ``software`` (the rule's), the learned model at the fallback's floor
    (``FALLBACK_LEARNED_MIN``), at the model's own floor, or whatever it guesses; ``engine`` is what the rule
    detector gives. Returns (choice, right) counts; the lexicon's answer, when it has one, stands in all."""
    from l4lite.detect.rules import FALLBACK_LEARNED_MIN

    score: Counter[tuple[str, bool]] = Counter()
    for part in _folds(threads, folds):
        from l4lite.rules.learned import shipped_model

        model = shipped_model()
        for t in part:
            rec = next((r for r, whole in _records(t.lines)
                        if not whole and rule_id in _decider(pack.match(r), any_cause)), None)
            if rec is None:
                continue
            lex = components.component(rec.message)
            p = model.proba(components.without_advice(rec.message)) if model is not None else {"software": 1.0}
            best = max(p, key=lambda c: p[c])
            support = model is not None and model.support(components.without_advice(rec.message)) \
                >= components.LEARNED_SUPPORT
            engine = readings(pack, [rec.message]).get(rule_id)
            picks = {"engine": engine.category if engine else "software", "software": "software",
                     f"learned>={FALLBACK_LEARNED_MIN}": best if support and p[best] >= FALLBACK_LEARNED_MIN
                     else "software",
                     f"learned>={components.LEARNED_MIN}": best if support and p[best] >= components.LEARNED_MIN
                     else "software",
                     "learned-any": best}
            for k, v in picks.items():
                score[(k, (lex.category if lex else v) == t.label)] += 1
            named = f"lexicon {lex.category}" if lex else f"model {best} {p[best]:.2f}"
            print(f"  {t.label:12s} engine {picks['engine']:12s} {named:22s} {t.group}: {rec.message[:80]}")
    n = score[("software", True)] + score[("software", False)]
    print(f"{rule_id} decides a line of {n} threads; right per choice: "
          + ", ".join(f"{k} {score[(k, True)]}/{n}" for k in dict.fromkeys(k for k, _ in score)))
    return score


def lexicon_words(threads: Iterable[Thread], min_threads: int = MECHANISM_MIN) -> list[tuple[str, str, Counter[str]]]:
    """(category, word, labels) for each lexicon word (``rules.components``) that won a line of at least
    ``min_threads`` threads while fewer than ``MECHANISM_SHARE`` of them carry its category: a word the threads
    contradict, or one that names a mechanism. Every line of a thread counts, as the component readings see them
    (a rule's exception line, a line no rule matched, a suspect's own line)."""
    votes: dict[tuple[str, str], dict[str, str]] = {}
    for t in threads:
        for rec, whole in _records(t.lines):
            named = None if whole else components.component(rec.message)
            for word in named.words if named is not None else ():
                votes.setdefault((named.category, word), {}).setdefault(t.group, t.label)
    out = []
    for (category, word), by_group in votes.items():
        labels = Counter(by_group.values())
        if len(by_group) >= min_threads and labels[category] < MECHANISM_SHARE * len(by_group):
            out.append((category, word, labels))
    return sorted(out, key=lambda x: (-sum(x[2].values()), x[1]))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-threads", type=int, default=3)
    ap.add_argument("--all", action="store_true", help="every rule a thread hits, not only the disagreeing ones")
    ap.add_argument("--no-examples", action="store_true", help="skip matching the rules' own examples")
    ap.add_argument("--spread", action="store_true", help="every rule's threads by label and by finding category")
    ap.add_argument("--fallback", action="store_true", help="the Python exception fallback's threads")
    ap.add_argument("--words", action="store_true", help="lexicon words whose threads mostly carry another label")
    ap.add_argument("--fresh", action="store_true",
                    help="also the studied fresh samples (" + ", ".join(STUDIED_FRESH) + ")")
    ap.add_argument("--jobs", action="store_true", help="also the real jobs' ground-truth evidence lines")
    ap.add_argument("--folds", type=int, default=0,
                    help="with --spread, --fallback: read each thread with a learned model trained without its fold")
    args = ap.parse_args(argv)
    threads = labelled_threads(fresh=args.fresh, jobs=args.jobs)
    print(f"labelled threads {len(threads)} ({len({t.group for t in threads})} source groups; "
          f"{_counts(Counter(t.origin for t in threads))})")
    if args.spread:
        rows = spread(threads=threads, folds=args.folds)
        print_spread(rows)
        print(f"rules hit {len(rows)}; mechanism {sum(s.flag() == 'MECHANISM' for s in rows)}, "
              f"reads worse {sum(s.flag() == 'READS-WORSE' for s in rows)}, "
              f"verdicts {sum(bool(s.verdict()) for s in rows)}, fitted {sum(bool(s.fitted()) for s in rows)}")
    if args.fallback:
        fallback_choices(RulePack.load(), threads, args.folds)
    if args.words:
        for category, word, labels in lexicon_words(threads):
            print(f"lexicon {category:12s} {word!r}: agrees {labels[category]}/{sum(labels.values())} [{_counts(labels)}]")
    audits = audit(threads=threads, with_examples=not args.no_examples)
    bad = defects(audits, args.min_threads)
    hit = [a for a in audits if a.votes]
    print(f"deciding rules {len(audits)}, hit {len(hit)}, defects {len(bad)} (>= {args.min_threads} threads)")
    for a in (hit if args.all else bad):
        agree = a.counts.get(a.rule.category, 0)
        flag = "DEFECT " if a in bad else ""
        print(f"{flag}{a.rule.id} ({a.rule.category}): agrees {agree}/{len(a.votes)} threads [{_counts(a.counts)}]"
              f", own examples matched {a.examples}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
