"""The fast lane of ``tail``: root-cause lines found in raw bytes, ahead of the record path.

The record path (ingest, triage, scan) reads each file in order and may fall behind when lines arrive faster
than it goes. The lane looks at every byte once, as soon as it is in the file: lines whose digit-folded shape
is known to be routine are skipped with one set lookup; the others are searched for root-cause keywords, and
only the root rules of the keywords found are tried on the line. A line that matches is parsed on its own and
becomes a root hit at once, so the alert does not wait for the records ahead of it; the record path still
processes the line later, in order, and the alert tracker sees the same incident again.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from l4lite.ingest.decode import CSI
from l4lite.ingest.shape import FOLD_DIGITS
from l4lite.live.follow import Chunk, Follower, Stream
from l4lite.live.verdict import RootHit
from l4lite.records import Record
from l4lite.rules.keys import gate_keywords, trie_regex

LANE_READ_BYTES = 16 << 20  # read-ahead per stream per poll
HITS_KEPT = 50


class RootLane:
    """Finds lines that a root-cause rule matches, in raw bytes, cheaply: a keyword search over a whole region,
    then only the regexes of the root rules whose keywords the line contains (on the raw line: a pattern anchored
    to the start of the message is left to the record path)."""

    def __init__(self, pack: Any, eligible: Callable[[Any], bool] | None = None) -> None:
        self.pack = pack
        self.eligible = eligible or (lambda rule: getattr(rule, "role", None) == "root")
        by_word: dict[str, list[Any]] = {}
        for rule in pack.rules:
            if not self.eligible(rule):
                continue
            for word in gate_keywords(getattr(rule, "keywords", ())):
                by_word.setdefault(word, []).append(rule)
        self.words = tuple(sorted(by_word))
        pattern = trie_regex(self.words) if self.words else None
        self.bytes_rx = re.compile(pattern.encode("utf-8")) if pattern else None
        self._rx = re.compile(pattern) if pattern else None
        # The regex reports the longest word starting at a position; the rules of shorter words there (its
        # prefixes) are candidates too.
        self._rules_of = {w: [r for w2, rules in by_word.items() if w.startswith(w2) for r in rules]
                          for w in self.words}

    def lines(self, data: bytes, routine: set[bytes] | frozenset[bytes] = frozenset()) -> list[tuple[int, int]]:
        """(start, end) byte spans of the lines of ``data`` that contain a root keyword (lower-case match).

        Lines whose digit-folded form is in ``routine`` (shapes known to hold no rule keyword, see ``Triage``)
        are not searched: one ``translate`` and one set lookup per line instead of a regex run over every byte.
        """
        rx = self.bytes_rx
        if rx is None:
            return []
        out = []
        pos = 0
        search = rx.search
        for raw, folded in zip(data.split(b"\n"), data.translate(FOLD_DIGITS).split(b"\n"), strict=True):
            n = len(raw)
            if n and folded not in routine and search(raw.lower()) is not None:
                out.append((pos, pos + n))
            pos += n + 1
        return out

    def may_match(self, text: str) -> bool:
        """Some root rule whose keyword occurs in ``text`` has a pattern that matches it."""
        rx = self._rx
        if rx is None:
            return False
        low = text.lower()
        tried: set[str] = set()
        m = rx.search(low)
        while m is not None:
            for rule in self._rules_of[m.group()]:
                if rule.id in tried:
                    continue
                tried.add(rule.id)
                try:
                    if rule.compiled.search(text, timeout=self.pack.timeout) is not None:
                        return True
                except TimeoutError:
                    continue
            m = rx.search(low, m.start() + 1)
        return False


class FastLane:
    """Scans what each poll read and what lies beyond it; keeps the root hits found (see the module doc)."""

    def __init__(self, lane: RootLane, follower: Follower,
                 parse: Callable[[Stream, int, str], Record | None], routine: set[bytes],
                 make_hit: Callable[[Any, Record], RootHit]) -> None:
        self.lane = lane
        self.follower = follower
        self.parse = parse
        self.routine = routine
        self.make_hit = make_hit
        self.hits: list[RootHit] = []
        self._seen: set[tuple[str, int]] = set()
        self._pos: dict[str, tuple[int, int]] = {}  # stream -> (byte offset, lines) scanned up to

    def prune(self, horizon: float) -> None:
        """Forget hits found before ``horizon`` (monotonic time) and bound the memory of lines looked at."""
        if self.hits and self.hits[0].seen_at < horizon:
            self.hits = [h for h in self.hits if h.seen_at >= horizon]
        if len(self._seen) > 100_000:
            self._seen = {(h.record.file, h.record.line) for h in self.hits}

    def scan(self, chunks: list[Chunk]) -> int:
        """Scan the chunks just read and the bytes beyond them up to the end of each file; each byte once.
        What a file held when first seen is left to the record path: the lane is for what is written while we
        watch. Returns the number of new root hits."""
        found = 0
        for c in chunks:
            s = c.stream
            pos, line = self._pos.get(s.sid, (c.start, c.first_line - 1))
            if pos >= c.end:
                continue  # scanned ahead already
            if pos < c.start:
                pos, line = c.start, c.first_line - 1
            data = c.data[pos - c.start:]
            found += self._region(s, data, line)
            self._pos[s.sid] = (c.end, line + data.count(b"\n"))
        for s in self.follower.streams.values():
            if s.status != "active" or s.compressed or s.handle is None or s.size <= s.offset:
                continue
            pos, line = self._pos.get(s.sid) or self._start(s)
            if pos < s.offset:
                pos, line = s.offset, s.line
            data = self.follower.read_ahead(s, pos, LANE_READ_BYTES)
            if data:
                found += self._region(s, data, line)
                self._pos[s.sid] = (pos + len(data), line + data.count(b"\n"))
        return found

    def _start(self, s: Stream) -> tuple[int, int]:
        """Where the lane starts on a stream it has not seen: the end of the complete lines there now."""
        pos, line = s.offset, s.line
        while True:
            data = self.follower.read_ahead(s, pos, 1 << 20)
            if not data:
                return pos, line
            pos, line = pos + len(data), line + data.count(b"\n")

    def _region(self, stream: Stream, data: bytes, line_before: int) -> int:
        """Complete lines ``data`` whose first line is ``line_before + 1``."""
        found = 0
        for start, end in self.lane.lines(data, self.routine):
            text = data[start:end].decode("utf-8", "replace").rstrip("\r")
            if "\x1b" in text:
                text = CSI.sub("", text)
            if self.lane.may_match(text):
                found += self._line(stream, line_before + 1 + data.count(b"\n", 0, start), text)
        return found

    def _line(self, stream: Stream, line_no: int, text: str) -> int:
        key = (stream.name, line_no)
        if key in self._seen or len(self.hits) >= HITS_KEPT:
            return 0
        record = self.parse(stream, line_no, text)
        if record is None:
            return 0
        found = 0
        for match in self.lane.pack.match(record):
            if self.lane.eligible(match.rule):
                self.hits.append(self.make_hit(match, record))
                found += 1
        if found:
            self._seen.add(key)
        return found
