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


_ZERO_RUN = re.compile(rb"0{2,}")
# a word (ASCII letters and digits) with a digit in it, a name glued to a number that may be a hex number; or a
# word of hex letters alone, a hex number without a digit (a pointer's ``+fdca``)
_NUMBERED_WORD = re.compile(rb"[A-Za-z]*0[A-Za-z0-9]*|(?<![A-Za-z0-9])[a-f]+(?![A-Za-z0-9])")


def _fold_numbered(match: re.Match[bytes]) -> bytes:
    return match.group().translate(_HEX_LETTERS)


def fold_class(folded: bytes) -> bytes:
    """The token class of a folded shape (``fold_ids``): the hex letters of every word with a digit and of every
    word of hex letters alone folded to ``0`` (a name glued to a hex index, Lustre's ``OST00ce``, is one word
    whatever its index, and a hex number may have no digit: ``fdca``), then every run of ``0`` one ``0``, so
    that a number of any width, a hex word of any length or letters and such a name with any index are one
    token (``ingest.firstsight``). Words of other letters are kept: another message is another class."""
    return _ZERO_RUN.sub(b"0", _NUMBERED_WORD.sub(_fold_numbered, folded))


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


# The template miner's key (``mining.miner``). In a digit-folded key: a word of 8+ lowercase hex characters with a digit (0) and a letter, standing alone
# (no letter or digit on either side). The miner's masking gives every such word the same fate whatever its letters, as
# long as its first character is a digit or not (a path component may not start with a digit) and it is not a
# number in exponent form (``12e45678``): see ``hex_key``.
# A lowercase ``0x`` word is ``<HEX>`` or kept whole, whatever its digits and length.
_HEX_WORD = re.compile(rb"(?<![A-Za-z0-9])(?:0x[0a-f]+|(?=[a-f]*0)(?=0*[a-f])[0a-f]{8,})(?![A-Za-z0-9])")
# The same words, found faster: the pattern starts with the class of its first character, so the engine skips
# to candidates at C speed instead of trying two lookarounds at every byte, and the test that a long word has
# both a 0 and a letter is left to ``_fold_hex_word`` (a word of [0a-f] bounded by no letter or digit on either
# side is a whole run of them, so a run that fails it holds no other match). ``tests/test_fastpath.py`` checks
# that both find the same words.
_HEX_RUN = re.compile(rb"[0a-f](?<![A-Za-z0-9][0a-f])(?:(?<=0)x[0a-f]+|[0a-f]{7,})(?![A-Za-z0-9])")
_EXPONENT = re.compile(rb"0*e0+")


# 0xff never occurs in UTF-8, so a folded word cannot be mistaken for text
_FOLDED_HEX = {(first, n): b"\xff" + first + str(n).encode() + b"\xff" for first in (b"0", b"a") for n in range(8, 65)}


def _fold_hex_word(match: re.Match[bytes]) -> bytes:
    word = match.group()
    if word[1] == 120:  # 0x...
        return b"\xffx\xff"
    zeros = word.count(48)
    if not zeros or zeros == len(word):  # no digit or no letter: not a hex word (see _HEX_RUN)
        return word
    if 101 in word and _EXPONENT.fullmatch(word):  # an "e" in it: maybe 12e45678
        return word
    first = b"0" if word[0] == 48 else b"a"
    n = len(word)
    return _FOLDED_HEX[first, n] if n <= 64 else b"\xff" + first + str(n).encode() + b"\xff"


def hex_key(key: bytes) -> bytes:
    """A digit-folded key with its hex words (ids, pointers, hashes) folded as well: the messages of one key
    mask to the same text, except for tokens that keep digits, which the miner compares itself. Kernel and
    storage lines carry a new hex id on almost every line; this key makes them one entry per line layout."""
    return _HEX_RUN.sub(_fold_hex_word, key)


# In a folded shape (``fold_ids``): a ``0x`` word, which ``hex_key`` folds whatever its characters, and a word of
# 8 or more 0s, which it folds or keeps as the letters the line has there tell (``wide_signature``)
_WIDE_SPAN = re.compile(rb"(?<![A-Za-z0-9])(?:0x0+|0{8,})(?![A-Za-z0-9])")


def wide_spans(folded: bytes) -> list[tuple[int, int, int]]:
    """(start, end, length, 0 for a ``0x`` word) of the words of a folded shape ``hex_key`` may fold."""
    return [(m.start(), m.end(), 0 if m.group()[1] == 120 else m.end() - m.start())
            for m in _WIDE_SPAN.finditer(folded)]


def wide_fold(key: bytes, spans: list[tuple[int, int, int]]) -> bytes:
    """``hex_key`` of ``key``, a message of a folded shape whose ``wide_spans`` are ``spans``, from a few slices:
    ``hex_key`` folds nothing outside the spans where the message starts and ends at a word's edge (a word it
    folds is a whole word of ``[0a-f]`` with a ``0``, or ``0x`` and such characters, which the folded shape
    holds as a span). A message cut inside a word is not: its first word may fold where the line's does not.
    ``tests/test_fold.py`` compares both."""
    parts = []
    prev = 0
    for s, e, n in spans:
        parts.append(key[prev:s])
        prev = e
        if not n:
            parts.append(b"\xffx\xff")
            continue
        word = key[s:e]
        zeros = word.count(48)
        # (a number in exponent form, ``0*e0+``: one letter, an "e" and not the last)
        if not zeros or zeros == n or (zeros == n - 1 and word[-1] != 101 and 101 in word):
            parts.append(word)
        else:
            first = b"0" if word[0] == 48 else b"a"
            parts.append(_FOLDED_HEX[first, n] if n <= 64 else b"\xff" + first + str(n).encode() + b"\xff")
    parts.append(key[prev:])
    return b"".join(parts)


def wide_signature(key: bytes, spans: list[tuple[int, int, int]]) -> bytes:
    """What ``hex_key`` of ``key`` depends on, among the keys of one folded shape (``spans`` its ``wide_spans``):
    the bytes outside the spans, nothing of a ``0x`` word, and of a long word whether ``hex_key`` keeps it (then
    the word itself) or folds it (then whether it starts with a digit). A few slices and a count instead of the
    regex pass, so that the lines of a folded shape find their miner key in a memo (``mining.runmine.mine_run``).
    Two keys of one folded shape with one signature have one ``hex_key`` (``tests/test_fold.py``)."""
    parts = []
    prev = 0
    for s, e, n in spans:
        parts.append(key[prev:s])
        prev = e
        if n:
            word = key[s:e]
            zeros = word.count(48)
            if zeros and zeros != n and not (101 in word and _EXPONENT.fullmatch(word)):
                parts.append(b"\xfd0" if word[0] == 48 else b"\xfda")
            else:
                parts.append(b"\xfc" + word)
    parts.append(key[prev:])
    return b"".join(parts)
