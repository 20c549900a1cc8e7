"""A regex of many alternatives answered without the regex for most lines: words one of which every match holds.

Python's regex engine tries every alternative of a pattern at every position of a line: 20-60 us on a line of
120 characters for the lexicons of cascades, advisories and error words, asked of each exemplar line of a job on
every diagnosis. Each alternative holds a literal word in every match, so an ASCII line that holds none of those
words (lower case) cannot match, and a substring test per word costs a few microseconds. Beyond ASCII, case
folding pairs more than ``str.lower`` does (a long s with ``s``, the Kelvin sign with ``k``): the regex decides.
The words are written beside each pattern; ``tests/test_word_gates.py`` checks every alternative against them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class WordGate:
    """``pattern.search`` behind a test of ``words`` (lower case): one of them is in every match of ``pattern``."""

    pattern: re.Pattern[str]
    words: tuple[str, ...]

    def search(self, text: str) -> re.Match[str] | None:
        """``self.pattern.search(text)``: None without the regex when an ASCII ``text`` holds none of the words."""
        if text.isascii():
            low = text.lower()
            if not any(w in low for w in self.words):
                return None
        return self.pattern.search(text)
