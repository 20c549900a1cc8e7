"""The rule pack: known failure signatures as data (TOML, read and checked by ``rulefile``), matched against
records.

A signature is a ``[[rule]]`` table (see ``l4lite/rules/default.toml`` for the full field list). Rules live in data
so that operators can add their own with ``--rules FILE`` without touching code: a user rule with the id of a
shipped rule replaces it (``enabled = false`` switches it off), any other id is added.

Matching has to be cheap because every record of a job passes through it, and almost all of them are healthy.
Every rule therefore carries literal keywords (declared, or derived from its pattern). One keyword regex over
all rules (both matched fields) finds the keywords a record contains, and only the candidate rules' own regexes
run; the answer depends only on the record's *shape* (lower case, digits folded to ``0``), so it is kept per
shape and most records cost one ``translate`` and one dict lookup. Patterns are compiled with the ``regex``
module and run with a timeout, so a catastrophic user pattern costs at most a bounded time per record and is
switched off after a few timeouts.

A pattern is compiled the first time a record passes its rule's keyword gate: a job touches a few dozen of the
shipped rules, and compiling all of them would cost more than matching a small job. User rule files are
compiled when they load, so that a broken pattern is reported at once with its file, line and rule id.
"""

from __future__ import annotations

import copy
import functools
import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from l4lite.records import Record
from l4lite.resources import rules_dir
from l4lite.rules.keys import gate_keywords, longest_trie, shape
from l4lite.rules.needs import may_match
from l4lite.rules.render import render
from l4lite.rules.rulefile import load_file
from l4lite.rules.signature import MATCH_FIELDS, Rule, RuleMatch, with_fallback

_MAX_GATE_SEARCHES = 64  # keyword positions searched one by one, then one substring test per keyword
# In a lower-cased shape (digits folded to 0): a word (a run of ASCII letters, digits and ``_``) made of hex
# letters, ``x`` and 0s, with at least one 0: a number of any width, a hex id, pointer or hash. Kernel and storage
# lines carry a new one on nearly every line; the gate's memo is keyed by the shape with each such word a 0
# (``fold_key``), which leaves the keywords found unchanged for every keyword ``fold_safe`` accepts.
_FOLD_WORD = re.compile(rb"\b[a-fx]*0[0a-fx]*\b")
_EDGE_RUNS = re.compile(rb"^(\w*)(?:.*?(\w*))?$", re.DOTALL)
_HEXISH = re.compile(rb"[a-fx]+")


def fold_key(key: bytes) -> bytes:
    """A lower-cased shape with each of its hex words and numbers (``_FOLD_WORD``) folded to ``0``."""
    return _FOLD_WORD.sub(b"0", key)


def fold_safe(word: bytes) -> bool:
    """Whether a gate keyword (lower case, no digit) occurs in a shape exactly when it occurs in ``fold_key`` of it.

    A keyword has no 0, so it never meets a folded ``0`` and every occurrence in the folded key is one in the key.
    The other way, an occurrence lost to the fold overlaps a folded word, whose characters are hex letters, ``x``
    and 0s and whose edges are non-word characters: the keyword then holds the word's part without a 0, either
    whole (a keyword of hex letters alone) or up to a non-word character of the keyword, so the keyword starts or
    ends with a word of hex letters and ``x`` (``bad parameter``, ``dead``). Any other keyword is safe.
    """
    first, last = _EDGE_RUNS.fullmatch(word).groups()  # type: ignore[union-attr]
    return not (first and _HEXISH.fullmatch(first)) and not (last and _HEXISH.fullmatch(last))


class RulePack:
    """A validated set of rules with a keyword prefilter (patterns compiled on first use, see ``Rule.compiled``).

    ``timeout`` bounds one regex search in seconds; a rule that times out ``max_timeouts`` times is switched off
    for the rest of the run. ``max_chars`` caps the part of a record a rule pattern sees (a 10 MB tensor dump is
    not searched ten times over). ``max_cache`` and ``max_cache_bytes`` bound the per-shape memo of the keyword
    gate (entries, and bytes of shape keys). Timeouts and their one-line warnings are kept on the instance
    (``timeouts``, ``warnings``) for the caller to report; nothing here prints.
    """

    def __init__(
        self,
        rules: Sequence[Rule],
        tables: dict[str, dict[str, str]] | None = None,
        timeout: float = 0.05,
        max_timeouts: int = 3,
        max_chars: int = 32_768,
        max_cache: int = 100_000,
        trusted_chars: int = 4096,
        max_cache_bytes: int = 32 << 20,
        fold: bool = True,
    ) -> None:
        self.rules: list[Rule] = list(rules)
        self.tables: dict[str, dict[str, str]] = dict(tables or {})
        self.timeout = timeout
        self.max_timeouts = max_timeouts
        self.max_chars = max_chars
        self.max_cache = max_cache
        self.max_cache_bytes = max_cache_bytes
        self.trusted_chars = trusted_chars
        # key the gate's memo by ``fold_key`` and test a pattern's literals before it runs (``Rule.needs``); False:
        # the reference, every candidate's pattern on its record and a memo by the shape itself
        self.fold = fold
        self.timeouts: Counter[str] = Counter()
        self.warnings: list[str] = []
        self.disabled: set[str] = set()
        self.by_id: dict[str, Rule] = {r.id: r for r in self.rules}
        self._build_index()

    # ----------------------------------------------------------------------------------------------- loading
    @classmethod
    def load(cls, paths: Sequence[str | Path] = (), include_default: bool = True, **kwargs: Any) -> RulePack:
        """Load the shipped pack (unless ``include_default`` is false) and then each user file in order.

        A later rule with an existing id replaces the earlier one in place; ``enabled = false`` removes it.
        Raises ``L4Error`` with a one-line message naming the file and the rule (id and line) at fault.
        """
        files: list[Path] = []
        if include_default:
            files.extend(sorted(rules_dir().glob("*.toml")))
        files.extend(Path(p) for p in paths)
        ordered: dict[str, Rule] = {}
        tables: dict[str, dict[str, str]] = {}
        for path in files:
            file_rules, file_tables, disabled = load_file(path)
            for name, table in file_tables.items():
                tables.setdefault(name, {}).update(table)
            for rule in file_rules:
                ordered[rule.id] = rule
            for rule_id in disabled:
                ordered.pop(rule_id, None)
        return cls(list(ordered.values()), tables, **kwargs)

    @classmethod
    def shared(cls, paths: Sequence[str | Path] = ()) -> RulePack:
        """``load(paths)`` read and indexed once per process and handed out ``fresh``: an evaluation or a long-lived
        worker scans many jobs, and a forked pool worker inherits the parent's pack instead of parsing the TOML
        and building the gate again. Each file's modification time and size are part of the key, so a rule file
        edited since is read again."""
        files = [*sorted(rules_dir().glob("*.toml")), *(Path(p) for p in paths)]
        return _loaded(tuple(str(p) for p in paths), tuple(_stamp(f) for f in files)).fresh()

    def fresh(self) -> RulePack:
        """A pack of the same rules, tables, limits and keyword gate, with timeouts, warnings, switched-off rules
        and memos of its own, as a newly built one has them (one scan's counters are not another's)."""
        new = copy.copy(self)
        new.rules, new.by_id = list(self.rules), dict(self.by_id)  # containers of its own; the rules are frozen
        new.tables = {name: dict(table) for name, table in self.tables.items()}
        new.timeouts = Counter()
        new.warnings = []
        new.disabled = set()
        new._cache = {}
        new._cache_bytes = 0
        new._by_mask = {}
        return new

    def _build_index(self) -> None:
        """The keyword gate: one regex over the gate keywords of every rule, and a memo of its answers per shape.

        Gate keywords are the rules' keywords reduced to their longest run without digits (``gate_keywords``),
        so the candidates for a record depend only on its shape (``shape``): healthy lines that differ only in
        numbers (iteration lines, NCCL channel lines) share one memo entry and cost one dict lookup. Rules are
        bits of an int mask (bit i: ``self.rules[i]``); the regex reports the longest keyword starting at a
        position, and the mask of a keyword includes the rules of the keywords that are prefixes of it.
        """
        always = 0
        by_word: dict[bytes, int] = {}
        for i, rule in enumerate(self.rules):
            words = gate_keywords(rule.keywords)
            if not words:
                always |= 1 << i
            for kw in words:
                word = kw.encode("utf-8", "surrogatepass")
                by_word[word] = by_word.get(word, 0) | 1 << i
        self._always_mask = always
        self._word_mask: dict[bytes, int] = {}
        for word in by_word:
            mask = 0
            for k in range(1, len(word) + 1):
                mask |= by_word.get(word[:k], 0)
            self._word_mask[word] = mask
        self._gate: Any = re.compile(longest_trie(list(by_word))) if by_word else None
        # keywords a fold may hide (see fold_safe): looked for in the shape itself, one substring test each
        self._unsafe = tuple((word, mask) for word, mask in self._word_mask.items() if not fold_safe(word))
        self._cache: dict[bytes, int] = {}  # (folded) shape -> mask of candidate rules
        self._cache_bytes = 0
        self._by_mask: dict[int, tuple[tuple[Rule, ...], tuple[Rule, ...]]] = {}

    # ---------------------------------------------------------------------------------------------- matching
    def candidates(self, text: str, fld: str) -> tuple[Rule, ...]:
        """Rules of field ``fld`` whose keywords occur in ``text`` (plus keyword-less rules), in pack order."""
        return self._lookup(text)[MATCH_FIELDS.index(fld)]

    @property
    def gate_words(self) -> tuple[bytes, ...]:
        """The keywords of the gate (lower case, no digits): a caller whose keys fold more than digits (the scan's
        folded run shapes) tests the ones its fold may hide in each line's own key."""
        return tuple(self._word_mask)

    def could_match_line(self, line_shape: bytes) -> bool:
        """False when no rule can match a one-line record whose text has this shape (``Record.shape``: the
        UTF-8 bytes with ASCII digits folded to 0) and whose message is a part of the text: no rule's keywords
        occur in it. The answer depends on the shape only, so a caller may remember it per shape."""
        found = self.line_rules(line_shape)
        return found is None or bool(found[0] or found[1])

    def line_rules(self, line_shape: bytes) -> tuple[tuple[Rule, ...], tuple[Rule, ...]] | None:
        """(message rules, text rules) that may match a one-line record whose text has this shape and whose
        message is a part of the text, for ``match_line`` on every line of the shape; None for a text too long
        to decide by its shape (cut to max_chars characters, message and text may be looked up apart)."""
        if len(line_shape) > self.max_chars:
            return None
        if line_shape.isascii():
            key = line_shape.lower()  # digits are folded already; bytes.lower() is ASCII-only, as shape() is
        else:
            key = shape(line_shape.decode("utf-8", "surrogatepass"))
        return self._lookup_shape(key)

    def _lookup(self, text: str) -> tuple[tuple[Rule, ...], tuple[Rule, ...]]:
        """(message rules, text rules) whose keywords occur in ``text``; memoised on the text's shape."""
        return self._lookup_shape(shape(text))

    def _lookup_shape(self, key: bytes) -> tuple[tuple[Rule, ...], tuple[Rule, ...]]:
        memo = _FOLD_WORD.sub(b"0", key) if self.fold else key
        mask = self._cache.get(memo)
        if mask is None:
            mask = self._mask(memo)
            if len(self._cache) >= self.max_cache or self._cache_bytes + len(memo) > self.max_cache_bytes:
                self._cache.clear()
                self._by_mask.clear()
                self._cache_bytes = 0
            self._cache[memo] = mask
            self._cache_bytes += len(memo)
        if self.fold:
            for word, bits in self._unsafe:
                if bits & ~mask and word in key:
                    mask |= bits
        found = self._by_mask.get(mask)
        if found is None:
            found = self._by_mask[mask] = self._split(mask)
        return found

    def _candidates(self, key: bytes) -> tuple[tuple[Rule, ...], tuple[Rule, ...]]:
        """(message rules, text rules) whose keywords occur in a shape (or have none), in pack order."""
        return self._split(self._mask(key))

    def _mask(self, key: bytes) -> int:
        """The candidate rules of a shape as a mask: one regex search per position where a keyword starts.

        A text with very many such positions (a long or repetitive record) switches to one substring test per
        keyword not found yet, which bounds the cost by the number of keywords instead.
        """
        mask = self._always_mask
        gate = self._gate
        if gate is not None:
            word_mask = self._word_mask
            m = gate.search(key)
            searches = 0
            while m is not None:
                mask |= word_mask[m.group()]
                searches += 1
                if searches == _MAX_GATE_SEARCHES:
                    for word, bits in word_mask.items():
                        if bits & ~mask and word in key:
                            mask |= bits
                    break
                m = gate.search(key, m.start() + 1)
        return mask

    def _split(self, mask: int) -> tuple[tuple[Rule, ...], tuple[Rule, ...]]:
        """The rules of a mask: (message rules, text rules), in pack order."""
        by_message: list[Rule] = []
        by_text: list[Rule] = []
        rest = mask
        while rest:
            low_bit = rest & -rest
            rule = self.rules[low_bit.bit_length() - 1]
            (by_message if rule.match == "message" else by_text).append(rule)
            rest ^= low_bit
        return tuple(by_message), tuple(by_text)

    def match(self, record: Record) -> list[RuleMatch]:
        """All rules that match the record; when none explains it, also the best fallback rule that matches (if any)."""
        return self.match_fields(record.message or record.text, record.text, record.source)

    def match_fields(self, message: str, text: str, source: str | None = None) -> list[RuleMatch]:
        if len(message) > self.max_chars:
            message = message[: self.max_chars]
        if len(text) > self.max_chars:
            text = text[: self.max_chars]
        # The message is normally a part of the text (the line without its headers): one gate lookup on the
        # text then serves both fields (a superset for the message; each rule's own regex decides).
        if message in text:
            by_message, by_text = self._lookup(text)
        else:
            by_message, by_text = self._lookup(message)[0], self._lookup(text)[1] if text else ()
        if not by_message and not by_text:
            return []
        return self.match_line((by_message, by_text), message, text, source)

    def match_line(self, candidates: tuple[tuple[Rule, ...], tuple[Rule, ...]], message: str, text: str,
                   source: str | None = None) -> list[RuleMatch]:
        """``match_fields`` of a line of at most max_chars characters whose rules ``line_rules`` gave."""
        by_message, by_text = candidates
        found = self._searches(by_message, message, source) if by_message else []
        if by_text:
            found += self._searches(by_text, text, source)
        out = [RuleMatch(rule, {k: v for k, v in m.groupdict().items() if v is not None}) for rule, m in found]
        return with_fallback(out) if out else out

    def match_ids(self, rules: Sequence[Rule], message: str, source: str | None = None) -> tuple[str, ...]:
        """The ids of ``match_line((rules, ()), message, ...)``'s rules, without their groups: all a scan needs of
        a line whose rules' evidence is full (the run path then only counts the hits)."""
        found = [RuleMatch(rule) for rule, _ in self._searches(rules, message, source)]
        return tuple(str(m.rule.id or m.rule) for m in with_fallback(found))

    def meets(self, rule: Rule, message: str, source: str | None = None) -> bool:
        """Whether ``match_ids((rule,), message, source)`` is not empty (one rule: the fallback choice keeps a lone
        match), without its match objects: ``ShapeRules.ids`` asks it of a shape's per-line rules on every line."""
        return bool(self._searches((rule,), message, source))

    def _searches(self, rules: Iterable[Rule], value: str, source: str | None) -> list[tuple[Rule, Any]]:
        """The rules of ``rules`` for ``source`` whose pattern ``value`` meets, with their matches."""
        out = []
        low = None
        for rule in rules:
            if rule.id in self.disabled or (rule.source and source not in rule.source):
                continue
            need = rule.needs if self.fold else None
            if need is not None:  # literals the pattern needs (rules.needs): a test costs less than a search
                if low is None:
                    low = value.lower() if value.isascii() else ""
                if low and not may_match(need, low):
                    continue
            m = self._search(rule, value)
            if m is not None:
                out.append((rule, m))
        return out

    def _search(self, rule: Rule, value: str) -> Any:
        # The timeout costs several microseconds per search in the regex module, so the reviewed shipped
        # patterns skip it on ordinary record lengths (the tests run each of them on hostile inputs under a
        # timeout); user patterns always run under it.
        if rule.shipped and len(value) <= self.trusted_chars:
            return rule.compiled.search(value)
        try:
            return rule.compiled.search(value, timeout=self.timeout)
        except TimeoutError:
            self.timeouts[rule.id] += 1
            n = self.timeouts[rule.id]
            if n == 1:
                self.warnings.append(
                    f"{rule.origin}: rule {rule.id!r}: pattern timed out after {self.timeout}s on a record; skipped"
                )
            if n >= self.max_timeouts:
                self.disabled.add(rule.id)
                self.warnings.append(f"{rule.origin}: rule {rule.id!r}: disabled after {n} timeouts")
            return None

    # ------------------------------------------------------------------------------------------- rendering
    def explain(self, rule: Rule, groups: dict[str, str], context: dict[str, Any] | None = None) -> str:
        return render(rule.explain, {**(context or {}), **groups}, self.tables)

    def action(self, rule: Rule, groups: dict[str, str], context: dict[str, Any] | None = None) -> str:
        return render(rule.action, {**(context or {}), **groups}, self.tables) if rule.action else ""

    def __len__(self) -> int:
        return len(self.rules)

    def __iter__(self) -> Iterable[Rule]:  # type: ignore[override]
        return iter(self.rules)

    def get(self, rule_id: str) -> Rule | None:
        return self.by_id.get(rule_id)


@functools.lru_cache(maxsize=4)
def _loaded(paths: tuple[str, ...], stamps: tuple[tuple[int, int], ...]) -> RulePack:
    """The pack of ``RulePack.shared`` as loaded (``stamps``: only part of the key)."""
    return RulePack.load(list(paths))


def _stamp(path: Path) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (0, -1)  # loading reports the missing file
    return (st.st_mtime_ns, st.st_size)
