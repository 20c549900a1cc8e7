"""Text from logs made safe for a terminal.

Log lines, file names and node names are attacker-controllable text, and the CLI prints some of them (evidence
lines, warnings naming files, errors). Printed raw, an escape sequence in a log line can clear the screen, retitle
the window, hide the lines after it or, on some terminals, write to the clipboard; a newline in a file name splits
one warning into two lines, and Unicode bidirectional controls make a line read differently from what it holds.
``printable`` shows such characters as visible escapes instead (``\\x1b``, ``\\n``, ``\\u202e``), so that what the
user reads is exactly what the file holds, on one line.
"""

from __future__ import annotations

import re

# C0 controls except tab, DEL, C1 controls, and the Unicode line/paragraph separators and bidi controls.
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")


_NAMED = {"\n": "\\n", "\r": "\\r"}


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def printable(text: str) -> str:
    """``text`` with every character that could act on a terminal (or break a line) shown as an escape."""
    return _UNSAFE.sub(_escape, text)
