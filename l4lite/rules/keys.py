"""Literal keywords for rules: derived from a rule's regex, cut for the keyword gate, and joined into one regex.

The rule pack runs a rule's own (possibly expensive) regex only on records that contain one of its keywords, so
these functions decide what almost every healthy record costs. They depend on nothing but the standard library,
so that other fast paths can share the same gate words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from re import _constants as sre_constants  # the stdlib regex parser: used only to derive keywords
from re import _parser as sre_parse
from typing import Any

_DIGIT_RUN = re.compile(r"[0-9]+")
# The shape of a text: ASCII lower-cased, digits folded to 0 (one bytes.translate, at C speed). Gate keywords
# have no digits, so they occur in a text exactly when they occur in its shape.
_FOLD = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ123456789", b"abcdefghijklmnopqrstuvwxyz000000000")


def derive_keywords(pattern: str, ignore_case: bool = True) -> tuple[str, ...]:
    """Literal strings one of which every match of ``pattern`` must contain; empty when none can be proven.

    Uses the standard library's regex parser on the pattern (most rule patterns are plain ``re`` syntax); for a
    top-level alternation each branch contributes its longest required literal. Patterns the parser rejects or
    branches without a literal of three or more characters give no keywords (the rule is then always tried).
    """
    try:
        parsed = sre_parse.parse(pattern, re.IGNORECASE if ignore_case else 0)
    except (sre_constants.error, re.error, OverflowError, RecursionError):
        return ()
    branches = _top_branches(list(parsed))
    keywords: list[str] = []
    for branch in branches:
        best = max(_literal_runs(branch), key=len, default="")
        if len(best) < 3:
            return ()
        keywords.append(best)
    return tuple(dict.fromkeys(k.lower() for k in keywords))


def _top_branches(items: list[Any]) -> list[list[Any]]:
    """Split a parsed pattern into its top-level alternatives (a lone group wrapping a BRANCH counts too)."""
    if len(items) == 1:
        op, av = items[0]
        if op == sre_constants.BRANCH:
            return [list(b) for b in av[1]]
        if op == sre_constants.SUBPATTERN and len(av[-1]) == 1 and av[-1][0][0] == sre_constants.BRANCH:
            return [list(b) for b in av[-1][0][1][1]]
    return [items]


def _literal_runs(items: list[Any]) -> list[str]:
    """Runs of consecutive literal characters that every match of the sequence must contain."""
    runs: list[str] = []
    current: list[str] = []
    for op, av in items:
        if op == sre_constants.LITERAL:
            current.append(chr(av))
            continue
        if op == sre_constants.SUBPATTERN and not any(o == sre_constants.BRANCH for o, _ in av[-1]):
            # A group that is always entered: its literals join the run only if it is all literals.
            inner = list(av[-1])
            if all(o == sre_constants.LITERAL for o, _ in inner):
                current.extend(chr(a) for _, a in inner)
                continue
            runs.append("".join(current))
            current = []
            runs.extend(_literal_runs(inner))
            continue
        if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT) and av[0] >= 1:
            runs.append("".join(current))
            current = []
            runs.extend(_literal_runs(list(av[2])))
            continue
        if op in (sre_constants.AT,):
            continue
        runs.append("".join(current))
        current = []
    runs.append("".join(current))
    return [r for r in runs if r]


def gate_keywords(keywords: Sequence[str]) -> tuple[str, ...]:
    """Keywords as the gate uses them: lower case, each cut to its longest digit-free run (at least three
    characters). Empty when some keyword has no such run: the rule is then tried on every record."""
    out: list[str] = []
    for kw in keywords:
        run = max(_DIGIT_RUN.split(kw.lower()), key=len)
        if len(run.strip()) < 3:
            return ()
        out.append(run)
    return tuple(dict.fromkeys(out))


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


def shape(text: str) -> bytes:
    """The text as the keyword gate sees it: lower case, every ASCII digit folded to ``0``, UTF-8."""
    if not text.isascii():
        text = text.lower()
    return text.encode("utf-8", "surrogatepass").translate(_FOLD)


def longest_trie(words: Sequence[bytes]) -> bytes:
    """``trie_regex`` for bytes: it reports the longest word starting where it matches (a word that ends where a
    longer one goes on is an optional tail). Latin-1 maps bytes to characters one to one."""
    return trie_regex(w.decode("latin-1") for w in words).encode("latin-1")


class ReferenceGate:
    """The keyword gate by its definition: the (message rules, text rules) that have no gate keyword or one that
    occurs in the lower-cased text, in pack order. Slow (every keyword of every rule is tested on every text);
    kept as the reference that ``RulePack``'s gate is tested and measured against."""

    def __init__(self, rules: Sequence[Any]) -> None:
        self.rules = [(r, gate_keywords(r.keywords)) for r in rules]

    def candidates(self, text: str) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        low = text.lower()
        picked = [r for r, kws in self.rules if not kws or any(k in low for k in kws)]
        return (tuple(r for r in picked if r.match == "message"), tuple(r for r in picked if r.match == "text"))
