"""The ids of the rules a line's message meets, which is all the run path needs of a line where each of them has
kept its evidence of the line's node in full (``Scanner._add_hit``: ``hit_cap`` hits per rule and node): its
hits are only counted in ``hit_totals``. ``RulePack.match_line`` also reads each match's named groups and builds a
match per rule; on a storage log most lines of a run meet a rule whose evidence filled up early (``LustreError``
on every line), and those steps are a third of its cost there.

Only for the lines whose answers ``RunPath._rule_answers_of`` remembers by message: shipped rules tried on the
message alone, of at most ``trusted_chars`` characters, which ``match_line`` searches without a timeout.
``tests/test_rule_ids.py`` holds ``matched_rule_ids`` equal to the ids of ``match_line``'s matches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from l4lite.rules.needs import may_match


def matched_rule_ids(pack: Any, rules: Sequence[Any], message: str, source: str | None) -> tuple[str, ...]:
    """The ids (``hit_rule_id``) of ``pack.match_line((rules, ()), message, text, source)``'s matches, in its
    order, for shipped ``rules`` on a ``message`` of at most ``pack.trusted_chars`` characters."""
    out: list[Any] = []
    fallbacks: list[Any] = []
    disabled = pack.disabled
    fold = pack.fold
    low = None
    for rule in rules:
        if rule.id in disabled or (rule.source and source not in rule.source):
            continue
        need = rule.needs if fold else None
        if need is not None:
            if low is None:
                low = message.lower() if message.isascii() else ""
            if low and not may_match(need, low):
                continue
        if rule.compiled.search(message) is None:
            continue
        (fallbacks if rule.fallback else out).append(rule)
    if fallbacks and not any(rule.role != "symptom" or rule.category != "unknown" for rule in out):
        out.append(max(fallbacks, key=lambda rule: rule.priority))
    return tuple(str(rule.id or rule) for rule in out)

