"""Which records of a live stream need the full scan, and a fast rule-keyword gate: the hot path of ``tail``.

At tens of thousands of lines per second, running every record through template mining, metric and marker
parsing and the rule pack costs more than one core can give. Training logs are repetitive, though: most lines
repeat an earlier line but for their digits. ``Triage`` remembers such *shapes* (the text with every digit
folded to ``0``) once a full look found nothing in them (no rule keyword, no trainer metric, no phase marker,
not an error), and calls later records of a known shape *routine*. The tail loop always scans records that are
not routine; routine ones are scanned too unless the loop is falling behind, in which case it keeps an evenly
spread sample of them (template counts keep their proportions; the sampling rate is reported).

The shape cache is exact for the rule gate because the rule pack's gate itself only looks at the text with its
digits masked (its keywords are cut to their digit-free runs): two texts of one shape get the same candidate
rules. For metrics and markers it assumes the parsers do not tell digits apart.

The keyword words and their trie-shaped regular expression come from ``rulekeys`` (``gate_keywords``,
``trie_regex``), as the rule pack's own gate does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from l4lite.ingest.shape import shape_of
from l4lite.records import Record
from l4lite.scan.metrics import parse_metric_line
from l4lite.scan.phases import match_marker


class KeywordGate:
    """Whether any rule of the pack can match a text: ``RulePack.candidates`` on both fields. The rule pack's
    gate looks at the text with its digits masked, so the answer is the same for every text of one shape."""

    def __init__(self, pack: Any) -> None:
        self.pack = pack

    def hit(self, text: str) -> bool:
        pack = self.pack
        return bool(pack.candidates(text, "message") or pack.candidates(text, "text"))


class Triage:
    """Classifies records as routine (a known shape with nothing in it) or worth a full look."""

    def __init__(self, gate: KeywordGate, cache_size: int = 200_000) -> None:
        self.gate = gate
        self.cache_size = cache_size
        self._routine: set[bytes] = set()
        self.full_looks = 0
        self._last: tuple[Record | None, bool] = (None, False)  # the gate's answer for the last record looked at

    @property
    def routine_shapes(self) -> set[bytes]:
        """The digit-folded texts (UTF-8) of the shapes known to be routine."""
        return self._routine

    def routine(self, record: Record) -> bool:
        """True for a single-line, non-error record whose shape was seen before with nothing in it."""
        if record.end_line != record.line or record.level == "error":
            return False
        text = record.text
        key = shape_of(text)
        if key in self._routine:
            return True
        self.full_looks += 1
        msg = record.message
        if parse_metric_line(msg) is not None or match_marker(msg) is not None:
            return False
        hit = self.gate.hit(text)
        self._last = (record, hit)
        if hit:
            return False
        if len(self._routine) >= self.cache_size:
            self._routine.clear()
        self._routine.add(key)
        return False  # a new shape gets its full look this once

    def rule_candidate(self, record: Record) -> bool:
        """Whether the rule pack can match this record at all (the gate on its text)."""
        if self._last[0] is record:
            return self._last[1]
        if record.end_line == record.line and (
                shape_of(record.text) in self._routine):
            return False
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


class RuleTap:
    """Stands between the scanner and the rule pack: skips records of routine shapes (no rule can match them)
    and hands every hit to ``on_hit`` (the tail loop counts hits and keeps root-cause hits for an instant alert)."""

    def __init__(self, pack: Any, triage: Triage, on_hit: Callable[[Any, Record], None]) -> None:
        self.pack = pack
        self.triage = triage
        self.on_hit = on_hit

    def match(self, record: Record) -> list[Any]:
        if not self.triage.rule_candidate(record):
            return []
        matches = self.pack.match(record)
        for m in matches:
            self.on_hit(m, record)
        return matches
