"""Whether a rule's pattern answers alike for every line of one line shape: read once from the pattern.

Kernel and storage lines that a rule meets carry a new id, address or count on nearly every line
(``LustreError: 11-0: scratch-OST011d-osc-ffffcc89007a: ... rc = -16``), so a memo of rule answers by message
rarely answers, and each line pays the rules' searches. Most shipped patterns never tell two digits apart
(``\\d``, ``[^\\n]``, ``\\S``, words of letters), so whether they match is the same for every text of one shape
(``ingest.shape.shape_of``: digits folded); many never tell an id's hex letters from its digits either, so it is
the same for every text of one folded shape (``shape.fold_ids``). ``blindness`` reads the pattern once (the
standard library's parser, as ``rules.needs``) and says which of the two holds; the scan's run path then
searches a rule once per shape of a run (``scan.runpath``) instead of once per line.

Two texts of one shape differ only where both hold a digit; of one folded shape, also where both hold a digit
or a lowercase hex letter inside an id-like word (a word of ``[0-9a-f]`` with a digit and a letter, or ``0x``
and such characters). A pattern cannot tell them apart when every character test it makes gives one answer
for all those characters: a class or ``.`` holds all of them or none; a literal is none of them, or, for a
folded shape, a hex letter that the pattern's own literal word places beside a letter no id-like word holds
(``LustreError``'s ``e`` sits in a word with an ``L``, so the text's word there is no id). Anchors and word
edges treat them alike (all are word characters). Back references, conditionals and anything the parser does
not know (or warns about: ``[[:digit:]]`` means a class to the ``regex`` module, a set of characters to the
standard parser) give no answer: the pattern is searched on every line, as before.
"""

from __future__ import annotations

import re
import warnings
from functools import lru_cache
from re import _constants as sre_constants  # the stdlib regex parser, as in rules.needs
from re import _parser as sre_parse
from typing import Any

from l4lite.rules.signature import RuleMatch, with_fallback

NONE, SHAPE, FOLDED = 0, 1, 2  # blind to nothing, to digits (a shape's lines), to digits and ids' hex letters

_DIGITS = "0123456789"
_HEX = "abcdef"
# a literal letter no id-like word holds: its word in the text is no id (upper case, or a letter past ``f``
# other than the ``x`` of ``0x``)
_APART = frozenset("ghijklmnopqrstuvwyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_APART_ANY_CASE = frozenset("ghijklmnopqrstuvwyzGHIJKLMNOPQRSTUVWYZ")
_REPEATS = {sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, sre_constants.POSSESSIVE_REPEAT}
_CATEGORIES = {
    sre_constants.CATEGORY_DIGIT: str.isdigit,
    sre_constants.CATEGORY_NOT_DIGIT: lambda c: not c.isdigit(),
    sre_constants.CATEGORY_SPACE: str.isspace,
    sre_constants.CATEGORY_NOT_SPACE: lambda c: not c.isspace(),
    sre_constants.CATEGORY_WORD: lambda c: c.isalnum() or c == "_",
    sre_constants.CATEGORY_NOT_WORD: lambda c: not (c.isalnum() or c == "_"),
    sre_constants.CATEGORY_LINEBREAK: lambda c: c == "\n",
    sre_constants.CATEGORY_NOT_LINEBREAK: lambda c: c != "\n",
}


class _Unknown(Exception):
    """A construct the reading does not vouch for."""


@lru_cache(maxsize=1024)
def blindness(pattern: str, ignore_case: bool = False) -> int:
    """``FOLDED`` when every text of one folded shape meets ``pattern`` alike, ``SHAPE`` when every text of one
    shape does, ``NONE`` when neither is sure."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            parsed = sre_parse.parse(pattern)
    except (Warning, sre_constants.error, re.error, OverflowError, RecursionError, TypeError, ValueError):
        return NONE
    ic = ignore_case or bool(parsed.state.flags & sre_constants.SRE_FLAG_IGNORECASE)
    try:
        if not _blind(list(parsed), _DIGITS, ic):
            return NONE
        return FOLDED if _blind(list(parsed), _DIGITS + _HEX, ic) else SHAPE
    except _Unknown:
        return NONE


def _blind(items: list[Any], alike: str, ic: bool) -> bool:
    """Whether a sequence of parsed items tests the characters ``alike`` all alike."""
    folded = len(alike) > len(_DIGITS)
    for k, (op, av) in enumerate(items):
        if op == sre_constants.LITERAL:
            ch = chr(av)
            if _in_literal(ch, av, ic, alike) and (ch in _DIGITS or not folded or not _beside_apart(items, k, ic)):
                return False
        elif op == sre_constants.NOT_LITERAL:
            if _in_literal(chr(av), av, ic, alike):
                return False
        elif op == sre_constants.IN:
            if len({_in_class(av, c, ic) for c in alike}) > 1:
                return False
        elif op == sre_constants.ANY or op == sre_constants.AT:
            continue  # ``.`` holds every one of them; anchors and word edges treat all word characters alike
        elif op == sre_constants.SUBPATTERN:
            add, remove = av[1], av[2]
            sub_ic = (ic or bool(add & sre_constants.SRE_FLAG_IGNORECASE)) and \
                not remove & sre_constants.SRE_FLAG_IGNORECASE
            if not _blind(list(av[3]), alike, sub_ic):
                return False
        elif op == sre_constants.BRANCH:
            if not all(_blind(list(b), alike, ic) for b in av[1]):
                return False
        elif op in _REPEATS:
            if not _blind(list(av[2]), alike, ic):
                return False
        elif op == sre_constants.ATOMIC_GROUP:
            if not _blind(list(av), alike, ic):
                return False
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            if not _blind(list(av[1]), alike, ic):
                return False
        else:  # back references, conditionals, anything else
            raise _Unknown(op)
    return True


def _in_literal(ch: str, code: int, ic: bool, alike: str) -> bool:
    """Whether a literal (any case when ``ic``) meets one of the characters ``alike``."""
    return ch in alike or (ic and (ch.lower() in alike or ch.upper() in alike)) or code > 127 and ic


def _beside_apart(items: list[Any], k: int, ic: bool) -> bool:
    """Whether literal ``k``, a hex letter, sits in a run of literal ASCII letters and digits of the pattern that
    holds a letter no id-like word holds: the text's word there then is no id, and its letters are kept."""
    apart = _APART_ANY_CASE if ic else _APART
    for step in (-1, 1):
        j = k
        while 0 <= j < len(items) and items[j][0] == sre_constants.LITERAL and chr(items[j][1]).isascii() \
                and chr(items[j][1]).isalnum():
            if chr(items[j][1]) in apart:
                return True
            j += step
    return False


def _in_class(av: list[Any], c: str, ic: bool) -> bool:
    """Whether character ``c`` is in a parsed class: with ``ic`` when it or its other case is in the class's
    items (a negated class then holds what neither case meets)."""
    cases = {c, c.lower(), c.upper()} if ic else {c}
    negate = False
    found = False
    for op, arg in av:
        if op == sre_constants.NEGATE:
            negate = True
        elif op == sre_constants.LITERAL:
            found = found or chr(arg) in cases
        elif op == sre_constants.RANGE:
            found = found or any(arg[0] <= ord(x) <= arg[1] for x in cases)
        elif op == sre_constants.CATEGORY:
            test = _CATEGORIES.get(arg)
            if test is None:
                raise _Unknown(arg)
            found = found or any(test(x) for x in cases)
        else:
            raise _Unknown(op)
    return found != negate


class ShapeRules:
    """The rules a shape's lines may meet (``RulePack.line_rules``, message rules of one source), with the answer
    of each rule blind to what differs between the lines (``blindness`` at ``level``) searched once, on the
    shape's first line: ``ids`` of a line searches only the others, and gives what ``RulePack.match_ids`` of all
    of them gives (the matches in the rules' order, the fallback rule's choice made per combination of matches)."""

    __slots__ = ("_combined", "_met", "_pack", "_rest", "_source", "alike", "per_line")

    def __init__(self, pack: Any, rules: tuple[Any, ...], level: int, message: str, source: str | None) -> None:
        self._pack = pack
        self._source = source
        met: list[bool | None] = []
        for rule in rules:
            met.append(pack.meets(rule, message, source) if blindness(rule.pattern, rule.ignore_case) >= level
                       else None)
        self._met = tuple(zip(rules, met, strict=True))
        self._rest = tuple(rule for rule, m in self._met if m is None)
        self.alike = any(m is not None for m in met)  # some rule is searched once for the shape
        self.per_line = bool(self._rest)  # some rule is searched on each line
        self._combined: dict[tuple[bool, ...], tuple[str, ...]] = {}

    def ids(self, message: str) -> tuple[str, ...]:
        """``RulePack.match_ids`` of the rules on ``message``, a line of the shape."""
        meets, source, rest = self._pack.meets, self._source, self._rest
        hits = (meets(rest[0], message, source),) if len(rest) == 1 else \
            tuple(meets(rule, message, source) for rule in rest)
        ids = self._combined.get(hits)
        if ids is None:
            met = iter(hits)
            found = [RuleMatch(rule) for rule, m in self._met if (next(met) if m is None else m)]
            ids = self._combined[hits] = tuple(str(m.rule.id or m.rule) for m in with_fallback(found))
        return ids


_BEHIND = -1  # the direction of a lookbehind in a parsed ASSERT / ASSERT_NOT


@lru_cache(maxsize=1024)
def literal_head(pattern: str, ignore_case: bool = False) -> str | None:
    """The literal text (three characters or more) that every match of ``pattern`` starts with, where nothing the
    pattern tests looks before a match's start (no lookbehind): then whether a text meets the pattern is whether
    its part from the first place that text occurs does. None otherwise (a class, group or anchor first, a case
    left open, anything the parser does not know).

    A trainer's metric line (``... | number of nan iterations:   0 |``) is new on every line, so a memo of rule
    answers by message never answers it; by that part it does (``scan.runpath``)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            parsed = sre_parse.parse(pattern)
    except (Warning, sre_constants.error, re.error, OverflowError, RecursionError, TypeError, ValueError):
        return None
    if ignore_case or parsed.state.flags & sre_constants.SRE_FLAG_IGNORECASE:
        return None
    items = list(parsed)
    head = []
    for op, av in items:
        if op != sre_constants.LITERAL:
            break
        head.append(chr(av))
    if len(head) < 3 or _looks_behind(items):
        return None
    return "".join(head)


def _looks_behind(items: list[Any]) -> bool:
    """Whether a parsed sequence holds a lookbehind, or a construct it cannot read, at any depth."""
    for op, av in items:
        if op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            if av[0] == _BEHIND or _looks_behind(list(av[1])):
                return True
        elif op == sre_constants.SUBPATTERN:
            if _looks_behind(list(av[3])):
                return True
        elif op == sre_constants.BRANCH:
            if any(_looks_behind(list(b)) for b in av[1]):
                return True
        elif op in _REPEATS:
            if _looks_behind(list(av[2])):
                return True
        elif op == sre_constants.ATOMIC_GROUP:
            if _looks_behind(list(av)):
                return True
        elif op == sre_constants.GROUPREF_EXISTS:
            if _looks_behind(list(av[1])) or av[2] is not None and _looks_behind(list(av[2])):
                return True
        elif op not in (sre_constants.LITERAL, sre_constants.NOT_LITERAL, sre_constants.IN, sre_constants.ANY,
                        sre_constants.AT, sre_constants.GROUPREF, sre_constants.CATEGORY):
            return True
    return False


def rule_heads(rules: tuple[Any, ...]) -> tuple[str, ...] | None:
    """``literal_head`` of each rule, or None when one has none: a text meets each rule as its part from the
    first place one of the heads occurs does (a rule whose head it lacks meets neither)."""
    heads = []
    for rule in rules:
        head = literal_head(rule.pattern, rule.ignore_case)
        if head is None:
            return None
        heads.append(head)
    return tuple(dict.fromkeys(heads))


def from_head(message: str, heads: tuple[str, ...]) -> str:
    """The part of ``message`` from the first place one of ``heads`` occurs, empty where none does."""
    if len(heads) == 1:
        at = message.find(heads[0])
    else:
        found = [p for p in map(message.find, heads) if p >= 0]
        at = min(found) if found else -1
    return message[at:] if at >= 0 else ""
