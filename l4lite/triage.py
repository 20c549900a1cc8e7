"""Which records of a live stream need the full scan, and a fast rule-keyword gate: the hot path of ``tail``.

At tens of thousands of lines per second, running every record through template mining, metric and marker
parsing and the rule pack costs more than one core can give. Training logs are repetitive, though: most lines
repeat an earlier line but for their digits. ``Triage`` remembers such *shapes* (the text with every digit
folded to ``0``) once a full look found nothing in them (no rule keyword, no trainer metric, no phase marker,
not an error), and calls later records of a known shape *routine*. The tail loop always scans records that are
not routine; routine ones are scanned too unless the loop is falling behind, in which case it keeps an evenly
spread sample of them (template counts keep their proportions; the sampling rate is reported).

The shape cache is exact for the rule gate: two texts with the same folded form have the same non-digit
characters at the same positions, so a keyword without digits occurs in both or in neither (keywords with
digits are checked on every record). For metrics and markers it assumes the parsers do not tell digits apart.

``KeywordGate`` is the rule pack's keyword prefilter built as a trie-shaped regular expression over lowercase
text, which Python's ``re`` runs about two orders of magnitude faster than a flat alternation of hundreds of
keywords.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from l4lite.metrics import parse_metric_line
from l4lite.phases import match_marker
from l4lite.records import Record

_FOLD = str.maketrans("123456789", "000000000")
_DIGITS = frozenset("0123456789")


def trie_regex(words: Iterable[str]) -> str:
    """A regular expression matching any of ``words``, shaped as a trie so each position tries one branch."""
    trie: dict[str, Any] = {}
    for w in set(words):
        if not w:
            continue
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        branches = [re.escape(ch) + emit(node[ch]) for ch in sorted(k for k in node if k)]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return emit(trie)


class KeywordGate:
    """The rule pack's keyword index, fast: ``hit`` says whether any rule can match a text, ``match`` matches a
    record the way ``RulePack.match`` does (same candidates, order, source filter and fallbacks)."""

    def __init__(self, pack: Any) -> None:
        self.pack = pack
        plain: set[str] = set()
        digits: set[str] = set()
        self.always = False
        self._order: dict[str, int] = {}
        self._always: dict[str, list[Any]] = {}
        self._by_keyword: dict[str, dict[str, list[Any]]] = {}
        for i, rule in enumerate(pack.rules):
            self._order[rule.id] = i
            keywords = tuple(k.lower() for k in getattr(rule, "keywords", ()))
            if not keywords:
                self.always = True
                self._always.setdefault(rule.match, []).append(rule)
            for kw in keywords:
                self._by_keyword.setdefault(rule.match, {}).setdefault(kw, []).append(rule)
                (digits if _DIGITS.intersection(kw) else plain).add(kw)
        self._plain = re.compile(trie_regex(plain)) if plain else None
        self.digit_keywords = tuple(sorted(digits))
        # Per field: the trie regex, and for each keyword the rules of every keyword that is a prefix of it (the
        # regex reports the longest keyword starting at a position; shorter ones there are its prefixes).
        self._fields: dict[str, tuple[re.Pattern[str], dict[str, list[Any]]]] = {}
        for fld, kws in self._by_keyword.items():
            rules_of = {kw: [r for k2, rules in kws.items() if kw.startswith(k2) for r in rules] for kw in kws}
            self._fields[fld] = (re.compile(trie_regex(kws)), rules_of)

    def candidates(self, low: str, fld: str) -> list[Any]:
        """Rules for field ``fld`` whose keywords occur in the lowercase value, in pack order."""
        found = list(self._always.get(fld, ()))
        entry = self._fields.get(fld)
        if entry is not None:
            rx, rules_of = entry
            m = rx.search(low)
            while m is not None:  # every start position of a keyword, not only non-overlapping ones
                found.extend(rules_of[m.group()])
                m = rx.search(low, m.start() + 1)
        if len(found) > 1:
            found = sorted(set(found), key=lambda r: self._order[r.id])
        return found

    def match(self, record: Record) -> list[Any]:
        """Same result as ``RulePack.match(record)``, with this index as the prefilter."""
        from l4lite.rulepack import RuleMatch

        pack = self.pack
        limit = pack.max_chars
        out: list[Any] = []
        fallbacks: list[Any] = []
        for fld, value in (("message", (record.message or record.text)[:limit]), ("text", record.text[:limit])):
            if not value:
                continue
            for rule in self.candidates(value.lower(), fld):
                if rule.id in pack.disabled or (rule.source and record.source not in rule.source):
                    continue
                m = pack._search(rule, value)  # the pack's regex timeout and bookkeeping
                if m is None:
                    continue
                groups = {k: v for k, v in m.groupdict().items() if v is not None}
                (fallbacks if rule.fallback else out).append(RuleMatch(rule, groups))
        return out or fallbacks

    def plain_hit(self, low: str) -> bool:
        """A digit-free keyword occurs in the lowercase text (invariant under digit folding)."""
        return self.always or (self._plain is not None and self._plain.search(low) is not None)

    def digit_hit(self, low: str) -> bool:
        return any(k in low for k in self.digit_keywords)

    def hit(self, text: str) -> bool:
        low = text.lower()
        return self.plain_hit(low) or (bool(self.digit_keywords) and self.digit_hit(low))


class Triage:
    """Classifies records as routine (a known shape with nothing in it) or worth a full look."""

    def __init__(self, gate: KeywordGate, cache_size: int = 200_000) -> None:
        self.gate = gate
        self.cache_size = cache_size
        self._routine: set[str] = set()
        self.full_looks = 0
        self._last: tuple[Record | None, bool] = (None, False)  # the gate's answer for the last record looked at

    def routine(self, record: Record) -> bool:
        """True for a single-line, non-error record whose shape was seen before with nothing in it."""
        if record.end_line != record.line or record.level == "error":
            return False
        text = record.text
        key = text.translate(_FOLD)
        if key in self._routine:
            return not (self.gate.digit_keywords and self.gate.digit_hit(text.lower()))
        self.full_looks += 1
        hit = self.gate.hit(text)
        self._last = (record, hit)
        if hit:
            return False
        msg = record.message
        if parse_metric_line(msg) is not None or match_marker(msg) is not None:
            return False
        if len(self._routine) >= self.cache_size:
            self._routine.clear()
        self._routine.add(key)
        return False  # a new shape gets its full look this once

    def rule_candidate(self, record: Record) -> bool:
        """Whether the rule pack can match this record at all (the gate on its text)."""
        if self._last[0] is record:
            return self._last[1]
        if record.end_line == record.line and record.text.translate(_FOLD) in self._routine:
            return bool(self.gate.digit_keywords) and self.gate.digit_hit(record.text.lower())
        return self.gate.hit(record.text)


class Sampler:
    """Keeps an evenly spread fraction of routine records; the fraction adapts to how busy the loop is.

    Multiplicative decrease when a poll's work takes more than ``high`` of the time between polls, gentle
    increase below ``low``: the loop stays responsive (a root-cause line waits behind at most one busy poll).
    """

    def __init__(self, minimum: float = 0.01, high: float = 0.6, low: float = 0.3) -> None:
        self.keep = 1.0
        self.minimum = minimum
        self.high = high
        self.low = low
        self._credit = 0.0
        self.kept = 0
        self.dropped = 0

    def take(self) -> bool:
        self._credit += self.keep
        if self._credit >= 1.0:
            self._credit -= 1.0
            self.kept += 1
            return True
        self.dropped += 1
        return False

    def adjust(self, busy: float, interval: float) -> None:
        """``busy`` seconds of work in the last ``interval`` seconds."""
        if interval <= 0:
            return
        load = busy / interval
        if load > self.high:
            self.keep = max(self.minimum, self.keep * max(0.2, min(0.8, self.high / load)))
        elif load < self.low and self.keep < 1.0:
            self.keep = min(1.0, self.keep * 1.25 + 0.005)
