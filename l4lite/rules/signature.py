"""One failure signature: the ``Rule`` a ``[[rule]]`` table becomes, a match of it, and how its pattern is
compiled without letting a huge repetition count stall the process.

Apart from the pack so that the file reader (``rulefile``) and the matcher (``pack``) share it without importing
each other, and so that code that only reads rules does not need the matching machinery.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from re import _constants as sre_constants  # the stdlib regex parser: used only to size patterns
from re import _parser as sre_parse
from typing import Any

import regex

from l4lite.errors import L4Error
from l4lite.rules.keys import gate_keywords
from l4lite.rules.needs import Needs, needs

RULE_ROLES: tuple[str, ...] = ("root", "cascade", "symptom", "confirmation")
MATCH_FIELDS: tuple[str, ...] = ("message", "text")
SCOPES: tuple[str, ...] = ("node", "global")
_QUANTIFIER = re.compile(r"\{\s*(\d+)\s*(?:,\s*(\d*)\s*)?\}")
# The regex module expands counted repetitions when it compiles, so that a{4294967294} or (?:a{1000}){1000}
# takes seconds to minutes and gigabytes before it fails. No record is searched beyond its first 32,768
# characters anyway (RulePack.max_chars), so larger counts are refused before compiling.
MAX_REPEAT = 32_768


@dataclass(frozen=True)
class Rule:
    """One failure signature.

    ``match`` names the record field the pattern is searched in: ``message`` (the header-stripped line, or the
    final exception line of a traceback) or ``text`` (the record as written, continuation lines included: use it
    for tracebacks, torchelastic summaries and kernel messages wrapped over several lines).
    """

    id: str
    pattern: str
    category: str
    role: str
    severity: str
    explain: str
    action: str = ""
    match: str = "message"
    source: tuple[str, ...] = ()
    phase_hint: str | None = None
    priority: int = 50
    scope: str = "node"
    keywords: tuple[str, ...] = ()
    ignore_case: bool = False
    fallback: bool = False
    generic: bool = False  # the phrase says that something failed, not what: the line's words give the category
    wraps: bool = False  # the line re-raises an error caught elsewhere: that error's signature reads it (diagnose)
    category_by_phase: tuple[tuple[str, str], ...] = ()
    examples: tuple[str, ...] = ()
    counter_examples: tuple[str, ...] = ()
    origin: str = ""
    shipped: bool = False  # from the package's own rule files (reviewed patterns, see RulePack._search)

    @property
    def is_global(self) -> bool:
        return self.scope == "global"

    @cached_property
    def compiled(self) -> Any:
        """The pattern compiled with the ``regex`` module, on first use (kept on the instance)."""
        return compile_pattern(self.pattern, self.ignore_case, f"{self.origin}: rule {self.id!r}")

    @cached_property
    def needs(self) -> Needs | None:
        """Literals a text must hold before the pattern can match it (``rules.needs``), on first use."""
        return needs(self.pattern, gate_keywords(self.keywords))


@dataclass
class RuleMatch:
    """A rule that matched a record, with the pattern's named groups (unmatched groups left out)."""

    rule: Rule
    groups: dict[str, str] = field(default_factory=dict)


def with_fallback(found: list[RuleMatch]) -> list[RuleMatch]:
    """The matches of the rules that are no fallback, in order, and the highest-priority fallback's when none of
    them explains the record: a rule that only says where the program was (a symptom of unknown category, such
    as a traceback through a checkpoint load) does not, and the generic fallback still says that it failed."""
    fallbacks = [m for m in found if m.rule.fallback]
    if not fallbacks:
        return found
    out = [m for m in found if not m.rule.fallback]
    if any(m.rule.role != "symptom" or m.rule.category != "unknown" for m in out):
        return out
    return out + [max(fallbacks, key=lambda m: m.rule.priority)]


def compile_pattern(pattern: str, ignore_case: bool, label: str) -> Any:
    """A rule pattern compiled with the ``regex`` module; ``L4Error`` (naming ``label``) when it cannot be."""
    too_big = _too_big(pattern)
    if too_big:
        raise L4Error(f"{label}: pattern too large to compile: {too_big}")
    flags = (regex.IGNORECASE if ignore_case else 0) | regex.VERSION0
    try:
        return regex.compile(pattern, flags)
    except (regex.error, ValueError, OverflowError, RecursionError, MemoryError) as e:
        raise L4Error(f"{label}: invalid pattern: {e}") from None


def _too_big(pattern: str) -> str:
    """Why compiling ``pattern`` would cost too much (see MAX_REPEAT), or "" when it would not."""
    for m in _QUANTIFIER.finditer(pattern):
        for count in m.groups():
            if count and (len(count) > 9 or int(count) > MAX_REPEAT):
                return f"a repetition count of {count} (at most {MAX_REPEAT})"
    try:  # nested counts multiply: the minimum length of a match, from the standard library's parser
        shortest = sre_parse.parse(pattern).getwidth()[0]
    except (sre_constants.error, re.error, OverflowError, RecursionError, ValueError, TypeError):
        return ""  # syntax of the regex module only: the count check above is all there is
    if shortest > MAX_REPEAT:
        return f"a match needs at least {shortest} characters (at most {MAX_REPEAT} are searched)"
    return ""
