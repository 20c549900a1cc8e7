"""Rule texts (``explain``, ``action``) filled from a match's named groups and tables.

Templates may come from a user's rule file and values from log lines, so this is a small placeholder language
with no attribute access and no format specs, not ``str.format``.
"""

from __future__ import annotations

import re
from typing import Any

_PLACEHOLDER = re.compile(r"\{(\w+(?:/\w+)*)(?:\|(\w+))?\}")
_OPTIONAL_SEGMENT = re.compile(r"\[\[(.*?)\]\]")


def render(template: str, values: dict[str, Any], tables: dict[str, dict[str, str]] | None = None) -> str:
    """Fill placeholders from the named groups (and context); no attribute access, no format specs.

    ``{name}`` is the value, ``{a/b}`` the first of ``a``, ``b`` that has one, ``{name|table}`` the value looked
    up in ``[tables.table]`` (its ``default`` entry, else the value itself, when absent). ``[[ ... ]]`` is an
    optional segment, dropped when a placeholder inside it has no value; elsewhere a missing value shows as ``?``.
    ``str.format`` is deliberately not used: templates may come from a user's rule file and values from log lines.
    """
    tables = tables or {}

    def lookup(m: re.Match[str]) -> str | None:
        for name in m.group(1).split("/"):
            value = values.get(name)
            text = "" if value is None else str(value).strip()
            if text:
                if m.group(2):
                    table = tables.get(m.group(2), {})
                    return table.get(text, table.get("default", text))
                return text
        return None

    def optional(seg: re.Match[str]) -> str:
        parts = [lookup(m) for m in _PLACEHOLDER.finditer(seg.group(1))]
        if any(p is None for p in parts):
            return ""
        return _PLACEHOLDER.sub(lambda m: lookup(m) or "", seg.group(1))

    return _PLACEHOLDER.sub(lambda m: lookup(m) or "?", _OPTIONAL_SEGMENT.sub(optional, template))


