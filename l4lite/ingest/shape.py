"""A text's shape: its UTF-8 bytes with every ASCII digit folded to ``0``.

Logs repeat a few shapes with new numbers (every rank, every step). Whatever depends only on the letters of a
line, never on which digit is where, is worked out once per shape and remembered: how ingest splits a line's
headers, the template miner's cluster, the metric parser's plan, the scan's rarer tests, triage's routine lines.
Folding keeps the length and every other byte, so numbers sit at the same offsets in all texts of one shape.
One ``bytes.translate`` does it at C speed (``str.translate`` is several times slower).
"""

from __future__ import annotations

import re

FOLD_DIGITS = bytes.maketrans(b"123456789", b"000000000")


def shape_of(text: str) -> bytes:
    """The shape of ``text`` (lone surrogates are kept as they are, so every text has one)."""
    return text.encode("utf-8", "surrogatepass").translate(FOLD_DIGITS)


# Id-like words: a word (a maximal run of ASCII letters and digits) of digits and lowercase hex letters with at
# least one digit, or ``0x`` and such characters. In a shape they are digits already; ``fold_ids`` folds their
# letters too, so that ``GPU-0b6b7808``, ``ffffcc89007a`` and ``0x7f3a`` of one width are one shape whatever
# their letters. The fold keeps the length and every other byte, and a word of any other character is kept
# whole: a test of a literal whose every word holds a character outside ``[0-9a-fx]`` (``fold_safe``) finds it
# in the same places in every text of one folded shape.
_ID_WORD = re.compile(rb"(?<![A-Za-z0-9])(?:0x)?(?=[0a-f]*[a-f])[0a-f]*0[0a-f]*(?![A-Za-z0-9])"
                      rb"|(?<![A-Za-z0-9])0x[0a-f]*[a-f][0a-f]*(?![A-Za-z0-9])")
_HEX_LETTERS = bytes.maketrans(b"abcdef", b"000000")
_WORD_RUN = re.compile(r"[A-Za-z0-9]+")
_ID_CHARS = frozenset("0123456789abcdefx")


def _fold_word(match: re.Match[bytes]) -> bytes:
    word = match.group()
    return word[:2] + word[2:].translate(_HEX_LETTERS) if word.startswith(b"0x") else word.translate(_HEX_LETTERS)


def fold_ids(key: bytes) -> bytes:
    """A shape (``shape_of``) with the hex letters of its id-like words folded to ``0`` as well."""
    return _ID_WORD.sub(_fold_word, key)


def fold_safe(literal: str) -> bool:
    """Whether a test for ``literal`` in a text finds it where it finds it in every other text of the text's
    folded shape: a word at either end of it (which the text may continue) holds a character no id-like word
    holds, and a word inside it (a whole word of the text) is no id-like word itself. So no folded word holds
    any part of an occurrence, and the fold neither hides one nor makes one."""
    for m in _WORD_RUN.finditer(literal):
        word = m.group()
        if m.start() == 0 or m.end() == len(literal):
            if set(word) <= _ID_CHARS:
                return False
        elif fold_ids(shape_of(word)) != shape_of(word):
            return False
    return True
