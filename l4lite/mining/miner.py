"""Template mining: masking, drain3's Drain, a cache in front of it and stable template ids.

A record's ``message`` (headers already stripped by ingest) is masked first: numbers, hex, PCI addresses, IPs,
host names, paths, UUIDs, durations, sizes and hashes become ``<NUM>``, ``<HEX>``, ``<PCI>`` ... placeholders.
The masked text goes to :class:`drain3.drain.Drain` (a dependency, used directly: drain3's own ``TemplateMiner``
persists with jsonpickle, which must never touch user paths). A template id is a hash of the final template
text, so two runs, two shards or two jobs that find the same template give it the same id.

Fast path. Drain costs tens of microseconds per line and masking several, so :meth:`TemplateMiner.add` first
looks the message up with every digit folded to 0. Masking never tells digits apart, so two messages with the
same folded form mask to the same text, except for digits that masking keeps (``P2P``, ``mlx5_<NUM>``): the
tokens holding those are compared as well. On a miss the message is masked (with a cache of masked tokens) and
the masked text looked up; Drain runs only when both miss. A cached answer is used only while no cluster with
the same token count was created or changed since it was cached (Drain's choice for a message depends on
nothing else), so the fast path assigns exactly the clusters that calling Drain on every line assigns;
``cache_size=0`` is that plain path.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator
from operator import itemgetter
from typing import Any

from drain3.drain import Drain, LogCluster, Node

from l4lite.errors import L4Error
from l4lite.ingest.shape import FOLD_DIGITS, hex_key
from l4lite.records import Record

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


def _finish(tokens: list[str], lists: bool = True) -> str:
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
    return _finish(_DEFAULT_PATTERN.sub(_default_repl, message).split())


def template_id(template: str) -> str:
    """Stable id of a template text: ``T`` + 16 hex digits of its BLAKE2b hash."""
    return "T" + hashlib.blake2b(template.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


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
        return _finish(self._pattern.sub(self._repl, message).split())

    def __call__(self, message: str) -> str:
        """The same text as ``mask_plain``."""
        return self.mask_tokens(message.split())[0]

    def mask_tokens(self, tokens: list[str], lists: bool = True) -> tuple[str, list[int]]:
        """Masked text of a split message, and the indices of tokens whose masked form still has digits."""
        out, kept = self.mask_list(tokens)
        return _finish(out, lists), kept

    def _learn_spans(self, token: str, folded: bytes, masked: str) -> None:
        """Keep where masking replaced what in ``token`` (ASCII, its masked form ``masked`` keeps digits) for
        every token of its digit-folded form, from the second token of that form on; kept only when splicing
        gives ``masked`` back."""
        if folded not in self._once:
            _put_bounded(self._once, folded, None, self._cache_size)
            return
        spans = tuple((m.start(), m.end(), self._tokens[m.lastgroup])  # type: ignore[index]
                      for m in self._pattern.finditer(token))
        if _splice(token, spans) == masked:
            _put_bounded(self._spans, folded, spans, self._cache_size)

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
                        _put_bounded(folded_cache, wide, hit, self._cache_size)
                    elif len(raw) == len(token):
                        self._learn_spans(token, folded, masked)
                if hit[1] or folded == raw:  # digits kept, or a plain word: worth a direct entry
                    _put_bounded(cache, token, hit, self._cache_size)
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


def _put_bounded(cache: dict[Any, Any], key: Any, value: Any, size: int) -> None:
    """Insert into a cache that is cleared when full: cheaper than LRU bookkeeping on the hot path, and a
    cleared cache only costs a few misses while it refills."""
    if len(cache) >= size:
        cache.clear()
    cache[key] = value


MAX_LEAF_CLUSTERS = 100  # real logs have at most ~16 clusters in one leaf of Drain's tree (loghub, simulated jobs)


class BoundedDrain(Drain):
    """Drain whose leaves stop growing at ``max_leaf`` clusters.

    Lines of random tokens (base64 payloads, printed text samples, random ids) match no cluster, so plain Drain
    opens one cluster per line, all in one leaf of its tree, and compares every later line with all of them:
    quadratic time (8,000 such lines took minutes) and unbounded memory. A full leaf merges an unmatched
    message into its most similar cluster instead, which soon becomes a catch-all of wildcards. Leaves below
    the bound behave exactly as in Drain.
    """

    def __init__(self, *args: Any, max_leaf: int = MAX_LEAF_CLUSTERS, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_leaf = max(1, max_leaf)

    def fast_match(self, cluster_ids: Any, tokens: list, sim_th: float, include_params: bool) -> Any:
        match = super().fast_match(cluster_ids, tokens, sim_th, include_params)
        if match is None and len(cluster_ids) >= self.max_leaf:
            match = super().fast_match(cluster_ids, tokens, -1.0, include_params)
        return match


# A cache entry: (cluster, generation cell of its token count, generation when cached). It stays valid while
# cell[0] == generation, i.e. while no cluster of that token count was created or changed.
_Entry = tuple[LogCluster, list[int], int]

_STATE_VERSION = 1


class TemplateMiner:
    """Assigns messages to Drain clusters; cluster ids are local, template ids (after ``finalize``) stable.

    ``cache_size`` bounds each of the two caches of the fast path (a full cache is cleared); 0 disables
    both and calls Drain on every message (the plain path, kept to check that both agree).
    """

    def __init__(
        self,
        sim_th: float = 0.5,
        depth: int = 4,
        max_children: int = 100,
        cache_size: int = 100_000,
        masks: Iterable[tuple[str, str]] = DEFAULT_MASKS,
    ) -> None:
        if not 0.0 <= sim_th <= 1.0:
            raise L4Error(f"template similarity threshold must be within [0, 1], got {sim_th}")
        if depth < 3:
            raise L4Error(f"template tree depth must be at least 3, got {depth}")
        self.sim_th = sim_th
        self.depth = depth
        self.max_children = max_children
        self.cache_size = max(0, int(cache_size))
        self.masks = tuple(masks)
        self.drain = BoundedDrain(sim_th=sim_th, depth=depth, max_children=max_children)
        self.masker = Masker(self.masks, cache_size=self.cache_size)
        self._generation: dict[int, list[int]] = {}
        self._by_key: dict[bytes, tuple[_Entry, Callable[[list[str]], Any] | None, Any]] = {}
        self._by_masked: dict[str, _Entry] = {}
        # (key, the masked tokens that keep digits) -> entry: "CPU2:" and "CPU8:" lines of one key both stay
        # cached, and "10.0.0.7@o2ib" and "10.0.0.9@o2ib" (both "<IP>@o2ib") share one entry
        self._by_kept: dict[tuple[bytes, Any], _Entry] = {}
        # masked text with its kept tokens blanked -> (entry, an itemgetter of the kept tokens that must stay, their
        # masked values): a kept token that is new on each line (``libc.so.6[7f3a1c2b+1f000]``) needs no Drain
        self._by_form: dict[str, tuple[_Entry, Any, Any]] = {}
        # kept tokens (as an itemgetter returns them) -> their masked text: a kernel line's "CPU7:" or
        # "mlx5_cmd_out_err:801:" differs from the last line's of its key on most lines, and takes a few values
        self._kept_masked: dict[Any, str] = {}
        self.hits = 0
        self.drain_calls = 0

    # -- mining ---------------------------------------------------------------------------------------

    def add(self, message: str, key: bytes | None = None) -> int:
        """Assign one message to a cluster and return the cluster's local id.

        ``key`` may be given when the caller already has it: the UTF-8 bytes with every ASCII digit a 0.
        """
        if not self.cache_size:
            return self._drain_add(self.masker.mask_plain(message))[0].cluster_id
        if key is None:
            key = message.encode("utf-8", "surrogatepass").translate(FOLD_DIGITS)
        hit = self._by_key.get(key)
        if hit is None:  # entries are stored under the hex-folded key (it is the key itself when it has no hex)
            wide = hex_key(key)
            if wide != key:
                key = wide
                hit = self._by_key.get(key)
        tokens = None
        if hit is not None:
            entry, getter, expected, loose = hit
            if getter is not None:
                tokens = message.split()
                got = getter(tokens)
                if got != expected:  # the kept tokens differ from the last message's: seen before?
                    if loose is not None and entry[1][0] == entry[2] and \
                            (loose[0] is None or self._same_fixed(loose, tokens)):
                        pass  # they differ only where the cluster has a wildcard (see ``_loose``)
                    else:
                        entry = self._by_kept.get((key, self._mask_kept(got)))  # type: ignore[assignment]
            if entry is not None and entry[1][0] == entry[2]:
                cluster = entry[0]
                cluster.size += 1
                self.hits += 1
                return cluster.cluster_id
        if tokens is None:
            tokens = message.split()
        masked_tokens, kept = self.masker.mask_list(tokens)
        masked = _finish(masked_tokens)
        entry = self._by_masked.get(masked)
        form = None
        if entry is not None and entry[1][0] == entry[2]:
            entry[0].size += 1
            self.hits += 1
        else:
            entry = None
            # the same masked text but for kept tokens where the cluster has wildcards? (see _loose); not when a
            # list of names folded into one token, as Drain then sees fewer tokens than the form has
            if kept and masked.count(" ") + 1 == len(masked_tokens):
                form = list(masked_tokens)
                for i in kept:
                    form[i] = "\x00"
                form = " ".join(form)
                known = self._by_form.get(form)
                if known is not None:
                    entry, fixed, values = known
                    if entry[1][0] == entry[2] and (fixed is None or fixed(masked_tokens) == values):
                        entry[0].size += 1
                        self.hits += 1
                    else:
                        entry = None
            if entry is None:
                entry = self._drain_add(masked)
                _put_bounded(self._by_masked, masked, entry, self.cache_size)
        getter = itemgetter(*kept) if kept else None
        expected = None
        loose = None
        if getter is not None:
            expected = getter(tokens)
            _put_bounded(self._by_kept, (key, " ".join([masked_tokens[i] for i in kept])), entry, self.cache_size)
            if len(masked_tokens) == len(entry[0].log_template_tokens):
                loose = self._loose(tokens, masked_tokens, kept, entry[0])
                if loose is not None and form is not None:
                    _put_bounded(self._by_form, form,
                                 (entry, loose[0], None if loose[0] is None else loose[0](masked_tokens)),
                                 self.cache_size)
        _put_bounded(self._by_key, key, (entry, getter, expected, loose), self.cache_size)
        return entry[0].cluster_id

    def _same_fixed(self, loose: tuple[Any, Any, Any], tokens: list[str]) -> bool:
        """Whether the kept tokens that ``loose`` (see ``_loose``) fixes mask as they did: the same values, or
        new values with the same masked text (``10.0.5.139@o2ib`` and ``10.0.7.2@o2ib`` are both ``<IP>@o2ib``;
        Drain sees only the masked text)."""
        got = loose[0](tokens)
        if got == loose[1]:
            return True
        return self.masker.mask_list([got] if isinstance(got, str) else list(got))[0] == loose[2]

    def _loose(self, tokens: list[str], masked: list[str], kept: list[int], cluster: LogCluster
               ) -> tuple[Any, Any, Any] | None:
        """Which kept tokens (masked, they still hold digits) may change with Drain's answer staying ``cluster``
        unchanged, so that a message of the same key needs neither masking nor Drain when only those changed:
        (an itemgetter of the other kept tokens or None, their values now, their masked values); None when
        every one must stay.

        ``masked`` (of ``tokens``) went to ``cluster`` (unmasked tokens: one masked token each, none collapsed). Drain routes a
        message by its token count and first ``depth - 2`` tokens, then takes the most similar cluster of
        that leaf, where a wildcard counts for nothing; it changes the cluster's template only where they
        differ. So a token may change freely where it routes nothing, ``cluster`` has a wildcard and no other
        cluster of the leaf has a word (the new value might be it). Valid while no cluster of this token
        count is created or changed, as every cache entry (``_Entry``)."""
        drain = self.drain
        template = cluster.log_template_tokens
        node = drain.root_node.key_to_child_node.get(str(len(masked)))
        if node is None:
            return None
        routed = 0  # tokens tree_search routes by
        for token in masked:
            if routed + 1 >= drain.max_node_depth or routed + 1 == len(masked):
                break
            child = node.key_to_child_node.get(token) or node.key_to_child_node.get(drain.param_str)
            if child is None:
                return None
            node = child
            routed += 1
        if cluster.cluster_id not in node.cluster_ids:
            return None
        others = [c.log_template_tokens for c in map(drain.id_to_cluster.get, node.cluster_ids)
                  if c is not None and c is not cluster]
        wild = drain.param_str
        fixed = [i for i in kept if i < routed or template[i] != wild or any(o[i] != wild for o in others)]
        if len(fixed) == len(kept):
            return None
        if not fixed:
            return None, None, None
        getter = itemgetter(*fixed)
        return getter, getter(tokens), [masked[i] for i in fixed]

    def _mask_kept(self, kept: Any) -> str:
        """The masked text of the tokens an itemgetter of kept tokens returned (one token or a tuple)."""
        masked = self._kept_masked.get(kept)
        if masked is None:
            # without lists: kept tokens side by side here need not be side by side in the message
            masked = self.masker.mask_tokens([kept] if isinstance(kept, str) else list(kept), lists=False)[0]
            _put_bounded(self._kept_masked, kept, masked, max(1, self.cache_size))
        return masked

    def cached_id(self, key: bytes) -> int | None:
        """The cluster id ``add`` would return for a message with this key (as for ``add``) straight from its cache,
        with no token check and no template changed; None when ``add`` would do more (then it may well for the
        next message of the key: see ``needs_tokens``). Changes nothing: ``count_hits`` counts."""
        hit = self._by_key.get(key) if self.cache_size else None
        if hit is None or hit[1] is not None:
            return None
        entry = hit[0]
        return entry[0].cluster_id if entry[1][0] == entry[2] else None

    def needs_tokens(self, key: bytes) -> bool:
        """Whether every message with this key is checked token by token (digits kept in its template)."""
        hit = self._by_key.get(key)
        return hit is not None and hit[1] is not None

    def count_hits(self, key: bytes, n: int) -> None:
        """``add`` of ``n`` messages with this key, which ``cached_id`` answered."""
        self._by_key[key][0][0].size += n
        self.hits += n

    def _drain_add(self, masked: str) -> _Entry:
        self.drain_calls += 1
        cluster, change = self.drain.add_log_message(masked)
        n = len(cluster.log_template_tokens)
        cell = self._generation.get(n)
        if cell is None:
            cell = self._generation[n] = [0]
        if change != "none":
            cell[0] += 1  # a new or changed cluster of this length: cached answers for this length are stale
        return cluster, cell, cell[0]

    def template(self, cluster_id: int) -> str:
        """The current template text of a cluster."""
        cluster = self.drain.id_to_cluster.get(cluster_id)
        if cluster is None:
            raise KeyError(cluster_id)
        return cluster.get_template()

    def finalize(self) -> dict[int, tuple[str, str]]:
        """Cluster id -> (template id, template text), from the clusters' final templates."""
        out: dict[int, tuple[str, str]] = {}
        for cluster in self.drain.id_to_cluster.values():
            text = cluster.get_template()
            out[cluster.cluster_id] = (template_id(text), text)
        return out

    def __len__(self) -> int:
        return len(self.drain.id_to_cluster)

    def assign(self, records: Iterable[Record]) -> Iterator[Record]:
        """Fill ``template_id`` and ``template`` of records. Buffers all records: final ids need every line."""
        buffered = list(records)
        ids = [self.add(r.message) for r in buffered]
        table = self.finalize()
        for record, cid in zip(buffered, ids, strict=True):
            record.template_id, record.template = table[cid]
            yield record

    # -- state ----------------------------------------------------------------------------------------

    def to_state(self) -> dict[str, Any]:
        """The miner as plain JSON-safe data: parameters, clusters and Drain's prefix tree."""
        return {
            "version": _STATE_VERSION,
            "params": {"sim_th": self.sim_th, "depth": self.depth, "max_children": self.max_children},
            "masks": [list(m) for m in self.masks],
            "clusters_counter": self.drain.clusters_counter,
            "clusters": [
                [c.cluster_id, c.size, list(c.log_template_tokens)] for c in self.drain.id_to_cluster.values()
            ],
            "tree": _node_to_state(self.drain.root_node),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any], cache_size: int = 100_000) -> TemplateMiner:
        """Rebuild a miner saved with ``to_state``; it continues mining exactly where the saved one stopped.

        Without a saved tree (e.g. clusters merged from shards) the prefix tree is rebuilt by re-adding every
        cluster, as Drain does when it creates one.
        """
        try:
            if int(state.get("version", 0)) != _STATE_VERSION:
                raise L4Error(f"unsupported template miner state version {state.get('version')!r}")
            params = state["params"]
            masks = [(str(n), str(p)) for n, p in state.get("masks", DEFAULT_MASKS)]
            miner = cls(
                sim_th=float(params["sim_th"]),
                depth=int(params["depth"]),
                max_children=int(params["max_children"]),
                cache_size=cache_size,
                masks=masks,
            )
            drain = miner.drain
            for cid, size, tokens in state["clusters"]:
                cluster = LogCluster([str(t) for t in tokens], int(cid))
                cluster.size = int(size)
                drain.id_to_cluster[cluster.cluster_id] = cluster
            drain.clusters_counter = int(state.get("clusters_counter", max(drain.id_to_cluster, default=0)))
            tree = state.get("tree")
            if tree is not None:
                drain.root_node = _node_from_state(tree)
            else:
                for cluster in sorted(drain.id_to_cluster.values(), key=lambda c: c.cluster_id):
                    drain.add_seq_to_prefix_tree(drain.root_node, cluster)
        except (KeyError, TypeError, ValueError) as exc:
            raise L4Error(f"invalid template miner state: {exc!r}") from exc
        return miner


def _node_to_state(node: Node) -> list[Any]:
    children = {key: _node_to_state(child) for key, child in node.key_to_child_node.items()}
    return [list(node.cluster_ids), children]


def _node_from_state(data: list[Any]) -> Node:
    root = Node()
    stack = [(root, data)]
    while stack:
        node, (cluster_ids, children) = stack.pop()
        node.cluster_ids = [int(c) for c in cluster_ids]
        for key, child_data in children.items():
            child = Node()
            node.key_to_child_node[str(key)] = child
            stack.append((child, child_data))
    return root
