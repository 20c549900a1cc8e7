"""Rule files read and checked: a TOML file's ``[[rule]]`` tables become ``Rule``s, with a one-line error
naming the file, line and rule for anything wrong.

Validation is a job of its own beside matching (``pack``): it runs once per file text (the parse is memoised),
and every check a user rule file must pass is listed here in one place.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from l4lite.errors import L4Error
from l4lite.resources import rules_dir
from l4lite.rules.keys import derive_keywords
from l4lite.rules.signature import MATCH_FIELDS, RULE_ROLES, SCOPES, Rule, compile_pattern
from l4lite.vocab import CATEGORIES, GLOBAL_CATEGORIES, PHASES, SEVERITIES, SOURCES

_REQUIRED = ("id", "pattern", "category", "role", "severity", "explain")
_OPTIONAL = (
    "action", "match", "source", "phase_hint", "priority", "scope", "keywords", "ignore_case", "fallback",
    "generic", "wraps", "enabled", "examples", "counter_examples", "category_by_phase", "note",
)
_RULE_HEADER = re.compile(r"^[ \t]*\[\[[ \t]*rule[ \t]*\]\]", re.MULTILINE)


def load_file(path: Path) -> tuple[list[Rule], dict[str, dict[str, str]], list[str]]:
    """A rule file's rules, tables and disabled ids. Text read before is not parsed again: an evaluation or a
    live tail analyses many jobs in one process with the same pack (the rules are frozen, and a pattern compiled
    for one pack serves the next)."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise L4Error(f"{path}: cannot read rule file: {e.strerror or e}") from None
    rules, tables, disabled = parse_rule_file(path, raw)
    return list(rules), {name: dict(table) for name, table in tables.items()}, list(disabled)


@lru_cache(maxsize=32)
def parse_rule_file(path: Path, raw: bytes) -> tuple[tuple[Rule, ...], dict[str, dict[str, str]], tuple[str, ...]]:
    """The rules of one file's text (kept per text: ``parse_rule_file.cache_clear()`` forgets them)."""
    try:
        text = raw.decode("utf-8")
        data = tomllib.loads(text)
    except UnicodeDecodeError:
        raise L4Error(f"{path}: rule file is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as e:
        raise L4Error(f"{path}: invalid TOML: {e}") from None
    unknown_top = set(data) - {"rule", "tables", "meta"}
    if unknown_top:
        raise L4Error(f"{path}: unknown top-level key(s) {sorted(unknown_top)} (expected [[rule]], [tables.NAME])")
    lines = [text.count("\n", 0, m.start()) + 1 for m in _RULE_HEADER.finditer(text)]
    shipped = path.resolve().parent == rules_dir().resolve()
    tables: dict[str, dict[str, str]] = {}
    for name, table in (data.get("tables") or {}).items():
        if not isinstance(table, dict):
            raise L4Error(f"{path}: [tables.{name}] must be a table of strings")
        tables[name] = {str(k): str(v) for k, v in table.items()}
    entries = data.get("rule", [])
    if not isinstance(entries, list):
        raise L4Error(f"{path}: 'rule' must be an array of tables ([[rule]])")
    rules: list[Rule] = []
    disabled: list[str] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        where = f"{path}:{lines[i]}" if i < len(lines) else str(path)
        rule_id = entry.get("id") if isinstance(entry, dict) else None
        label = f"{where}: rule {rule_id!r}" if rule_id else f"{where}: rule #{i + 1}"
        if isinstance(entry, dict) and entry.get("enabled") is False and isinstance(rule_id, str):
            disabled.append(rule_id)
            continue
        rule = _build_rule(entry, label, where, shipped)
        if rule.id in seen:
            raise L4Error(f"{label}: duplicate rule id in the same file")
        seen.add(rule.id)
        rules.append(rule)
    return tuple(rules), tables, tuple(disabled)


def _build_rule(entry: Any, label: str, where: str, shipped: bool = False) -> Rule:
    if not isinstance(entry, dict):
        raise L4Error(f"{label}: each [[rule]] must be a table")
    missing = [k for k in _REQUIRED if k not in entry]
    if missing:
        raise L4Error(f"{label}: missing required field(s) {missing}")
    unknown = sorted(set(entry) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise L4Error(f"{label}: unknown field(s) {unknown}")
    for key in ("id", "pattern", "category", "role", "severity", "explain"):
        if not isinstance(entry[key], str) or not entry[key]:
            raise L4Error(f"{label}: field {key!r} must be a non-empty string")
    rule_id = entry["id"]
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.:-]*", rule_id):
        raise L4Error(f"{label}: id may only contain letters, digits and _ . : -")
    _check_choice(label, "category", entry["category"], CATEGORIES)
    _check_choice(label, "role", entry["role"], RULE_ROLES)
    _check_choice(label, "severity", entry["severity"], SEVERITIES)
    match = entry.get("match", "message")
    _check_choice(label, "match", match, MATCH_FIELDS)
    sources = entry.get("source", ())
    if isinstance(sources, str):
        sources = (sources,)
    if not isinstance(sources, list | tuple) or not all(isinstance(s, str) for s in sources):
        raise L4Error(f"{label}: 'source' must be a string or a list of strings")
    for s in sources:
        _check_choice(label, "source", s, SOURCES)
    phase_hint = entry.get("phase_hint")
    if phase_hint is not None:
        _check_choice(label, "phase_hint", phase_hint, PHASES)
    by_phase = entry.get("category_by_phase", {})
    if not isinstance(by_phase, dict):
        raise L4Error(f"{label}: 'category_by_phase' must be a table phase = category")
    for ph, cat in by_phase.items():
        _check_choice(label, "category_by_phase key", ph, PHASES)
        _check_choice(label, "category_by_phase value", cat, CATEGORIES)
    priority = entry.get("priority", 50)
    if not isinstance(priority, int) or isinstance(priority, bool) or not 0 <= priority <= 100:
        raise L4Error(f"{label}: 'priority' must be an integer from 0 to 100")
    scope = entry.get("scope", "global" if entry["category"] in GLOBAL_CATEGORIES else "node")
    _check_choice(label, "scope", scope, SCOPES)
    for key in ("ignore_case", "fallback", "generic", "wraps"):
        if not isinstance(entry.get(key, False), bool):
            raise L4Error(f"{label}: {key!r} must be true or false")
    for key in ("explain", "action"):
        if key in entry and not isinstance(entry[key], str):
            raise L4Error(f"{label}: {key!r} must be a string")
    lists: dict[str, tuple[str, ...]] = {}
    for key in ("keywords", "examples", "counter_examples"):
        value = entry.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise L4Error(f"{label}: {key!r} must be a list of non-empty strings")
        lists[key] = tuple(value)
    ignore_case = bool(entry.get("ignore_case", False))
    # A user's pattern is compiled now, so that a broken one is reported at load with its file and rule; the
    # shipped ones (reviewed, and compiled by the tests) wait for their first use.
    compiled = None if shipped else compile_pattern(entry["pattern"], ignore_case, label)
    keywords = tuple(k.lower() for k in lists["keywords"]) or derive_keywords(entry["pattern"])
    rule = Rule(
        id=rule_id, pattern=entry["pattern"], category=entry["category"], role=entry["role"],
        severity=entry["severity"], explain=entry["explain"], action=entry.get("action", ""), match=match,
        source=tuple(sources), phase_hint=phase_hint, priority=priority, scope=scope, keywords=keywords,
        ignore_case=ignore_case, fallback=bool(entry.get("fallback", False)),
        generic=bool(entry.get("generic", False)), wraps=bool(entry.get("wraps", False)),
        category_by_phase=tuple(sorted(by_phase.items())), examples=lists["examples"],
        counter_examples=lists["counter_examples"], origin=where, shipped=shipped,
    )
    if compiled is not None:
        rule.__dict__["compiled"] = compiled  # where the cached property keeps its value
    return rule


def _check_choice(label: str, key: str, value: Any, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise L4Error(f"{label}: unknown {key} {value!r} (expected one of: {', '.join(allowed)})")
