"""What a rule's text must contain before its regex can match: literal strings read from the pattern.

The keyword gate (``keys``) picks the rules a record may meet by one keyword each; on kernel and storage lines
it lets through rules whose patterns then fail on most lines (``mlx5_core ... syndrome 0x`` on every
``mlx5_core`` line), and such a search costs up to ten times a substring test. ``needs`` reads the pattern once
(the standard library's parser, as ``derive_keywords``) into alternatives of clauses: each top-level branch of
the pattern is a list of clauses, a clause a tuple of literals one of which every match of the branch contains.
``may_match`` is False only when no branch can match, so skipping the regex then changes no answer.

Literals are lower case and ASCII; they are looked for in the lower-cased ASCII text (a non-ASCII text is always
searched), so a rule's case-insensitivity and the lower-casing agree: an ASCII letter matches only its two
cases. A literal with a non-ASCII character (which a case-insensitive pattern may match in other ways) gives no
clause.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from re import _constants as sre_constants  # the stdlib regex parser, as in keys.derive_keywords
from re import _parser as sre_parse
from typing import Any

from l4lite.ingest.shape import fold_safe

Needs = tuple[tuple[tuple[str, ...], ...], ...]  # branches -> clauses -> literals (one of which must occur)
_REPEATS = {sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, sre_constants.POSSESSIVE_REPEAT}


def needs(pattern: str, keywords: Sequence[str] = ()) -> Needs | None:
    """The clauses of each top-level branch of ``pattern``; None when some branch needs nothing that the gate
    has not already checked (a clause that every keyword of the rule implies is left out)."""
    try:
        parsed = list(sre_parse.parse(pattern))
    except (sre_constants.error, re.error, OverflowError, RecursionError, TypeError, ValueError):
        return None
    if len(parsed) == 1 and parsed[0][0] == sre_constants.BRANCH:
        branches = [list(b) for b in parsed[0][1][1]]
    else:
        branches = [parsed]
    out = []
    for branch in branches:
        # a clause of short literals (``: ``) is met by nearly every line: not worth its test
        clauses = [c for c in _clauses(branch) if min(map(len, c)) >= 3 and not _implied(c, keywords)]
        if not clauses:
            return None
        out.append(tuple(dict.fromkeys(clauses)))
    return tuple(out)


def may_match(need: Needs, low: str) -> bool:
    """Whether some branch has each of its clauses in ``low`` (the lower-cased text)."""
    for clauses in need:
        for literals in clauses:
            for literal in literals:
                if literal in low:
                    break
            else:
                break
        else:
            return True
    return False


def _implied(clause: tuple[str, ...], keywords: Sequence[str]) -> bool:
    """Every keyword holds one of the clause's literals: a text past the gate holds one too."""
    return bool(keywords) and all(any(lit in kw.lower() for lit in clause) for kw in keywords)


def _clauses(items: list[Any]) -> list[tuple[str, ...]]:
    """Clauses every match of a sequence of parsed items meets: its runs of literal characters, and for a group
    of alternatives the union of one clause of each alternative (none if an alternative has none)."""
    out: list[tuple[str, ...]] = []
    run: list[str] = []

    def flush() -> None:
        text = "".join(run).lower()
        run.clear()
        if text and text.isascii():
            out.append((text,))

    for op, av in items:
        if op == sre_constants.LITERAL:
            run.append(chr(av))
            continue
        flush()
        if op == sre_constants.SUBPATTERN:
            out.extend(_clauses(list(av[-1])))
        elif op == sre_constants.BRANCH:
            union: list[str] = []
            for alternative in av[1]:
                best = _best(_clauses(list(alternative)))
                if best is None:
                    union = []
                    break
                union.extend(best)
            if union:
                out.append(tuple(dict.fromkeys(union)))
        elif op in _REPEATS and av[0] >= 1:
            out.extend(_clauses(list(av[2])))
        # anything else (classes, anchors, look-arounds, back references, optional parts) needs nothing
    flush()
    return out


def _best(clauses: list[tuple[str, ...]]) -> tuple[str, ...] | None:
    """The clause whose shortest literal is longest (the rarest to meet), or None."""
    return max(clauses, key=lambda c: min(len(lit) for lit in c), default=None)


_FOLD_DIGITS = str.maketrans("123456789", "000000000")


@lru_cache(maxsize=4096)
def shape_need(need: Needs) -> Needs:
    """``need`` for a line's shape (digits folded to 0, lower-cased): each literal with its digits folded too, as a
    literal that occurs in a line occurs folded in the line's shape. So ``may_match(shape_need(need), shape)``
    False means ``may_match(need, line)`` False for every line of the shape."""
    return tuple(tuple(tuple(lit.translate(_FOLD_DIGITS) for lit in clause) for clause in clauses)
                 for clauses in need)


@lru_cache(maxsize=4096)
def folded_need(need: Needs) -> Needs | None:
    """``need`` for a line's folded shape (``ingest.shape.fold_ids``: hex letters of id-like words folded too): a
    clause keeps only literals without a digit that the fold never hides nor makes (``fold_safe``), which occur
    in the folded shape exactly where they occur in the line; a clause holding another literal is left out (taken
    as met). None when some branch then needs nothing."""
    out = []
    for clauses in need:
        kept = tuple(c for c in clauses if all(lit == lit.translate(_FOLD_DIGITS) and "0" not in lit
                                               and fold_safe(lit) for lit in c))
        if not kept:
            return None
        out.append(kept)
    return tuple(out)


def shape_candidates(candidates: tuple[tuple[Any, ...], tuple[Any, ...]], key: bytes, msg_start: int,
                     msg_end: int, folded: bool = False) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """(message rules, text rules) of ``candidates`` that may match some line of an ASCII line shape ``key``
    whose message is ``key[msg_start:msg_end]`` (the whole line when that is empty): a rule whose ``needs`` the
    shape already rules out (``shape_need``, or ``folded_need`` for a ``folded`` shape) is left out, so its
    literal test is not run on every line of the shape. A shape with another byte keeps every rule (such lines
    are searched whatever their literals)."""
    if not key.isascii():
        return candidates
    line = key.lower().decode("ascii")
    message = line[msg_start:msg_end] or line
    out = []
    for rules, low in zip(candidates, (message, line), strict=True):
        kept = []
        for rule in rules:
            need = rule.needs
            if need is not None:
                need = folded_need(need) if folded else shape_need(need)
            if need is None or may_match(need, low):
                kept.append(rule)
        out.append(tuple(kept) if len(kept) < len(rules) else rules)
    return out[0], out[1]
