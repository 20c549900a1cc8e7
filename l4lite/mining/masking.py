"""Masking of log messages for template mining: numbers, hex, PCI addresses, IPs, host names, paths, UUIDs,
durations, sizes and hashes become ``<NUM>``, ``<HEX>``, ``<PCI>`` ... placeholders, token by token, with caches
that rely on masking never telling digits apart (see :data:`DEFAULT_MASKS`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from l4lite.errors import L4Error
from l4lite.ingest.shape import FOLD_DIGITS, hex_key

# Boundaries: a masked value never starts or ends inside a word or a dotted version, so "python3.8", "v1.2",
# "R02-M1" stay as they are, while "core.3613" and "mlx5_0" get their number masked.
_L = r"(?<![A-Za-z0-9])(?<!\d\.)"
_R = r"(?![A-Za-z0-9])"
_X = "[0-9a-fA-F]"
_TLDS = "com|net|org|edu|gov|io|ai|local|internal|lan|localdomain|cluster|cloud"
_PATH_CHAR = r"""[^\s/"'`,;:()\[\]{}<>|=]"""


def _hex(pattern: str) -> str:
    return pattern.replace("X", _X)


#: (name, regex) in priority order; each match becomes ``<name>``. No pattern may match whitespace, so masking
#: works token by token (the miner caches masked tokens) and gives the same text as masking the whole line.
#: No pattern may tell digits apart (``\d``, never ``0`` or ``[0-7]``): the fast path relies on it.
DEFAULT_MASKS: tuple[tuple[str, str], ...] = (
    # The scheme starts where a run of scheme characters starts: tried at every letter of a long word, the
    # possessive scan to the end of the run would make masking quadratic in the length of the word.
    ("URL", r"""(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*+://[^\s"'<>()\[\]{}]+"""),
    ("UUID", _L + _hex("X{8}-X{4}-X{4}-X{4}-X{12}") + _R),
    (
        "TIME",  # 2024-09-11, 2005-06-03-15.42.50.675872, 2025-01-21T04:41:44,283302+00:00, 17:52:11.320
        _L + r"(?:\d{4}-\d{2}-\d{2}(?:[T-]\d{2}[:.]\d{2}[:.]\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?"
        r"|\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?)" + _R,
    ),
    ("PCI", _L + _hex(r"(?:X{4}:X{2}:X{2}(?:\.X)?|X{2}:X{2}\.X)") + _R),  # 0000:cb:00.0, 0019:01:00, cb:00.0
    (
        "IP",  # IPv6 (full, with ::, IPv4-mapped, %scope) and IPv4, each with an optional :port or NCCL's <port>
        r"(?<![A-Za-z0-9.:])"
        + _hex(
            r"(?=X{0,4}:)(?:(?:X{1,4}:){7}X{1,4}|(?:X{1,4}:){1,6}(?::X{1,4}){1,6}|::(?:ffff:)?\d{1,3}(?:\.\d{1,3}){3})"
        )
        + r"(?:%\w+)?(?:<\d{1,5}>)?(?![A-Za-z0-9:])"
        + "|"
        + _L
        + r"\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5}|<\d{1,5}>)?"
        + _R,
    ),
    (
        "HOST",  # FQDNs whose first label has a digit or with a common suffix; node017-like names; r11i6n2
        r"(?<![A-Za-z0-9._/-])(?:"
        r"(?=[a-z-]*+\d[a-z0-9-]*+\.)[a-z0-9-]++(?:\.[a-z0-9-]+)+\.[a-z]{2,}"
        r"|(?=[a-z0-9-]++\.)[a-z0-9-]++(?:\.[a-z0-9-]+)*\.(?:" + _TLDS + ")"
        r"|(?:node|nid|host|compute|worker|login|dgx|hgx|cn|dn|gn)[-_]?\d++(?:-[a-z0-9]+)*"
        r"|r\d+i\d+n\d+)(?::\d{1,5}|<\d{1,5}>)?(?![A-Za-z0-9.-])",
    ),
    (
        "PATH",  # absolute (or ~/, ./, ../) paths; the first component does not start with a digit (/10.0.0.1)
        r"(?<![A-Za-z0-9.:/~_-])(?:~|\.{1,2})?/(?![0-9])" + _PATH_CHAR + "++(?:/" + _PATH_CHAR + "++)*+/?",
    ),
    ("HEX", _L + r"\d[xX]" + _hex("X++") + _R),  # 0x7fe705ea81a2 (and 3x3: no digit is special, see below)
    # Bare hex with digits and letters: ids, pointers, hashes.
    ("HASH", _L + _hex(r"(?=[a-fA-F]*+\d)(?=\d*+[a-fA-F])X{8,}+") + _R),
    # A rate: a number glued to a unit over a unit (tqdm's "1.37it/s" and "132.44s/it", "12.5GB/s"): it changes on
    # every line of a progress bar, and kept as it is it would make each line a template of its own.
    ("RATE", _L + r"\d++(?:\.\d++)?+[A-Za-z]++/[A-Za-z]++" + _R),
    ("DUR", _L + r"-?\d++(?:\.\d++)?+(?:ns|us|µs|ms|s|sec|secs|min|mins|h|hrs?)" + _R),
    ("SIZE", _L + r"\d++(?:\.\d++)?+(?:[KMGTPE]i?B|[kK]B|B|[KMGTP])" + _R),
    ("NUM", _L + r"[-+]?\d++(?:\.\d++)*+(?:[eE][-+]?\d++)?+" + _R),
)

#: Folds every ASCII digit to 0 in the fast path's first cache key.
_has_ascii_digit = re.compile("[0-9]").search

# A word of the miner's key (digits folded, ``shape.hex_key``) of lowercase hex letters and 0s with a 0 in it: an
# id, an address, a pointer's tail (``libc.so.6[7f3a1c2b+ca387]``'s ``ca387``).
_ID_RUN = re.compile(rb"(?<![A-Za-z0-9])[a-f]*0[0a-f]*(?![A-Za-z0-9])")
_EXPONENT_WORD = re.compile(rb"0+e0*")  # a number in exponent form, or its head before a sign (``5e-10``)
_ONE_LETTER = bytes.maketrans(b"bcdef", b"aaaaa")


def _letter_word(match: re.Match[bytes]) -> bytes:
    word = match.group()
    return word if _EXPONENT_WORD.fullmatch(word) else word.translate(_ONE_LETTER)


def letter_form(form: bytes) -> bytes:
    """A key's token (``shape.hex_key`` of its digit-folded bytes) with the letters of its id words all ``a``:
    the default masks (``DEFAULT_MASKS``) mask every token of one letter form alike, but for the digits they keep.
    In such a word they tell letters from digits where they stand (``\\d``, ``[A-Za-z]``), and an ``e`` only in
    a number's exponent (``0+e0*``, kept as it is); every other literal letter of theirs sits in a word with a
    letter no id holds (``node``, ``sec``, ``com``), and ``ffff`` of an IPv4-mapped address holds no 0. So a
    pointer's tail that is new on every line (``ca387``, ``7ac99``) has one form per pattern of its digits."""
    return _ID_RUN.sub(_letter_word, form)


def _compile(masks: Iterable[tuple[str, str]]) -> tuple[re.Pattern[str], dict[str, str]]:
    masks = list(masks)
    try:
        pattern = re.compile("|".join(f"(?P<{name}>{regex})" for name, regex in masks))
    except re.error as exc:
        raise L4Error(f"invalid masking pattern: {exc}") from exc
    return pattern, {name: f"<{name}>" for name, _ in masks}


_DEFAULT_PATTERN, _DEFAULT_TOKENS = _compile(DEFAULT_MASKS)


def _default_repl(match: re.Match[str]) -> str:
    return _DEFAULT_TOKENS[match.lastgroup]  # type: ignore[index]


_NAMED = re.compile(r"([A-Za-z]+)\d+")  # a name with a number: an14, dn228, sda3
LIST_RUN = 3  # named tokens of one stem in a row that make a list


def _lists(tokens: list[str]) -> list[str]:
    """Tokens with a run of ``LIST_RUN`` or more names of one stem (``an14 an15 an16 ...``, a node list)
    numbered as ``an<NUM>``, which then collapse into one: a list of 3 or 40 names is the same event. Whether
    a run is a list depends on the letters only, so masking stays blind to digit values."""
    stems = [m.group(1) if _has_ascii_digit(t) is not None and (m := _NAMED.fullmatch(t)) else None
             for t in tokens]
    out = tokens
    i = 0
    while i < len(stems):
        stem = stems[i]
        j = i + 1
        if stem is not None:
            while j < len(stems) and stems[j] == stem:
                j += 1
            if j - i >= LIST_RUN:
                if out is tokens:
                    out = list(tokens)
                out[i:j] = [stem + "<NUM>"] * (j - i)
        i = j
    return out


def stays_apart(masked: str) -> bool:
    """Whether a masked token that keeps digits stays a token of its own in ``join_masked`` whatever its
    neighbours: it is no name with a number, which a list of names (``_lists``) folds into one."""
    return _has_ascii_digit(masked) is not None and _NAMED.fullmatch(masked) is None


def join_masked(tokens: list[str], lists: bool = True) -> str:
    """Join masked tokens, collapsing a run of one repeated masked token (``blk_<NUM> blk_<NUM>``) into one:
    a list of 1 or 40 block ids is the same event. Tokens that kept digits never collapse, so that masking
    stays blind to digit values, except in a list of names (``_lists``; ``lists=False`` keeps those too)."""
    if lists and any(_has_ascii_digit(t) is not None for t in tokens):
        tokens = _lists(tokens)
    out: list[str] = []
    prev = None
    for token in tokens:
        if token == prev and "<" in token and _has_ascii_digit(token) is None:
            continue
        out.append(token)
        prev = token
    return " ".join(out)


def mask(message: str) -> str:
    """Mask the variable parts of a message (see :data:`DEFAULT_MASKS`).

    Whitespace runs become one space (Drain splits on whitespace anyway) and a run of one repeated masked
    token becomes one token. Numbers with a separate unit keep the unit as a word (``<NUM> GiB``).
    """
    return join_masked(_DEFAULT_PATTERN.sub(_default_repl, message).split())


class Masker:
    """Masks messages token by token with a bounded cache of masked tokens (most tokens are plain words)."""

    def __init__(self, masks: Iterable[tuple[str, str]] = DEFAULT_MASKS, cache_size: int = 200_000) -> None:
        self._pattern, self._tokens = _compile(masks)
        self._cache: dict[str, tuple[str, bool]] = {}
        self._folded: dict[bytes, tuple[str, bool]] = {}
        # digit-folded ASCII token -> where masking replaces what in every token of that form (see ``mask_list``)
        self._spans: dict[bytes, tuple[tuple[int, int, str], ...]] = {}
        # such forms seen once: spans are learnt on a form's second token (a hex id in a kept token,
        # ``libc.so.6[7f3a1c2b+ca387]``, makes most forms new, and learning them would cost more than it saves)
        self._once: dict[bytes, None] = {}
        self._cache_size = max(1, cache_size)

    def _repl(self, match: re.Match[str]) -> str:
        return self._tokens[match.lastgroup]  # type: ignore[index]

    def mask_plain(self, message: str) -> str:
        """Mask a message with one pass over the whole line (no cache)."""
        return join_masked(self._pattern.sub(self._repl, message).split())

    def __call__(self, message: str) -> str:
        """The same text as ``mask_plain``."""
        return self.mask_tokens(message.split())[0]

    def mask_tokens(self, tokens: list[str], lists: bool = True) -> tuple[str, list[int]]:
        """Masked text of a split message, and the indices of tokens whose masked form still has digits."""
        out, kept = self.mask_list(tokens)
        return join_masked(out, lists), kept

    def _learn_spans(self, token: str, folded: bytes, masked: str) -> None:
        """Keep where masking replaced what in ``token`` (ASCII, its masked form ``masked`` keeps digits) for
        every token of its digit-folded form, from the second token of that form on; kept only when splicing
        gives ``masked`` back."""
        if folded not in self._once:
            put_bounded(self._once, folded, None, self._cache_size)
            return
        spans = tuple((m.start(), m.end(), self._tokens[m.lastgroup])  # type: ignore[index]
                      for m in self._pattern.finditer(token))
        if _splice(token, spans) == masked:
            put_bounded(self._spans, folded, spans, self._cache_size)

    def mask_list(self, tokens: list[str]) -> tuple[list[str], list[int]]:
        """``mask_tokens`` before the join: the masked token of each token, one for one.

        Tokens are looked up as they are, then with their digits folded: a masked token without digits is
        the same for every token of the same folded form (masking never tells digits apart), so "29020" and
        "31250" share one entry, and so do tokens whose hex ids differ (the key is then ``hex_key`` of the
        folded token, the miner's own key: ``2278d350122`` and ``945451f674d`` are both ``<HASH>``). A masked
        token that keeps digits (``10.0.5.139@o2ib`` is ``<IP>@o2ib``) is, for every ASCII token of its folded
        form, the token with the same spans replaced: those spans are kept by folded form, so a token with a new
        value on every line costs a few slices, not a regex pass.
        """
        cache = self._cache
        folded_cache = self._folded
        spans_of = self._spans
        out = []
        kept = []
        for i, token in enumerate(tokens):
            hit = cache.get(token)
            if hit is None:
                raw = token.encode("utf-8", "surrogatepass")
                folded = raw.translate(FOLD_DIGITS)
                hit = folded_cache.get(folded)
                if hit is None:
                    spans = spans_of.get(folded)
                    if spans is not None:
                        hit = (_splice(token, spans), True)
                    else:
                        wide = hex_key(folded)
                        if wide != folded:
                            hit = folded_cache.get(wide)
                if hit is None:
                    masked = self._pattern.sub(self._repl, token)
                    hit = (masked, _has_ascii_digit(masked) is not None)
                    if not hit[1]:
                        put_bounded(folded_cache, wide, hit, self._cache_size)
                    elif len(raw) == len(token):
                        self._learn_spans(token, folded, masked)
                if hit[1] or folded == raw:  # digits kept, or a plain word: worth a direct entry
                    put_bounded(cache, token, hit, self._cache_size)
            out.append(hit[0])
            if hit[1]:
                kept.append(i)
        return out, kept


def _splice(token: str, spans: tuple[tuple[int, int, str], ...]) -> str:
    """``token`` with each span ``(start, end, placeholder)`` replaced by its placeholder."""
    parts = []
    prev = 0
    for start, end, text in spans:
        parts.append(token[prev:start])
        parts.append(text)
        prev = end
    parts.append(token[prev:])
    return "".join(parts)


def put_bounded(cache: dict[Any, Any], key: Any, value: Any, size: int) -> None:
    """Insert into a cache that is cleared when full: cheaper than LRU bookkeeping on the hot path, and a
    cleared cache only costs a few misses while it refills."""
    if len(cache) >= size:
        cache.clear()
    cache[key] = value
