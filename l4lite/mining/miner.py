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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, NamedTuple

from drain3.drain import Drain, LogCluster, Node

from l4lite.errors import L4Error
from l4lite.ingest.shape import FOLD_DIGITS, hex_key
from l4lite.mining.masking import (
    DEFAULT_MASKS,
    Masker,
    join_masked,
    letter_form,
    mask,
    put_bounded,
    stays_apart,
)
from l4lite.records import Record

__all__ = ["DEFAULT_MASKS", "BoundedDrain", "Masker", "TemplateMiner", "hex_key", "mask", "template_id"]


def template_id(template: str) -> str:
    """Stable id of a template text: ``T`` + 16 hex digits of its BLAKE2b hash."""
    return "T" + hashlib.blake2b(template.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


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


@dataclass
class RunAnswers:
    """The ids ``add`` gave messages of runs, by key (``ids``) and by key, kept-token getter and kept tokens
    (``kept_ids``), valid while ``changes`` equals the miner's own count: kept across runs, since a job's runs
    repeat the same few keys and kept tokens (a kernel log's ``CPU7:`` lines come in hundreds of short runs)."""

    ids: dict[bytes, int] = field(default_factory=dict)
    kept_ids: dict[tuple[bytes, Any, Any], int] = field(default_factory=dict)
    # by a message's key with its free kept tokens left out (``TemplateMiner.free_kept``): a kept token that
    # holds a new id on every line (``libc.so.6[7f3a1c2b+1f0e0]``) makes every key new, not this
    free_ids: dict[tuple[Any, Any, Any], int] = field(default_factory=dict)
    # per run shape, the indices of its key's free kept tokens and an itemgetter of its other tokens, as
    # ``mining.runmine`` learnt them from a line ``add`` answered: a segfault line's shape is in most of a kernel
    # log's runs, and learning it anew in each cost an ``add`` per shape and run. They index ``free_ids`` and say
    # nothing of clusters (a change empties ``free_ids``), so they stay until the run table changes (``table``)
    free_shapes: dict[int, tuple[tuple[int, ...], Any]] = field(default_factory=dict)
    table: Any = None
    changes: int = 0


class LooseAnswer(NamedTuple):
    """A key's cluster while its cache entry stands (``TemplateMiner.loose_answer``), for every message whose kept
    tokens outside the cluster's wildcards (``loose``: their itemgetter, values and masked values) mask alike."""

    cluster_id: int
    loose: tuple[Any, Any, Any]


def _free(hit: tuple[Any, ...]) -> bool:
    """Whether a key's cache entry (``TemplateMiner._by_key``) lets every kept token change (``_loose`` found
    each where the cluster has a wildcard): ``add`` then answers each message of the key from the entry while it
    is valid, whatever its kept tokens (a Lustre line's ``o400->scratch-OST00d3-osc@10.1.0.211@o2ib:28/4``)."""
    loose = hit[3]
    return loose is not None and loose[0] is None


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
        # key -> the indices of its kept tokens, where its entry lets every one change (``free_kept``)
        self._free_kept: dict[bytes, tuple[int, ...]] = {}
        self._stays: dict[bytes, bool] = {}  # a kept token's form -> ``kept_stays``
        # the indices of kept tokens -> one itemgetter of them: a key's entry rewritten by ``add`` keeps its getter
        # when its kept tokens sit where they sat, so what runs learnt by (key, getter, kept tokens) still answers
        self._getters: dict[tuple[int, ...], Any] = {}
        self._letters = self.masks == DEFAULT_MASKS  # forms of one ``letter_form`` mask alike (the default masks)
        self.hits = 0
        self.drain_calls = 0
        self.changes = 0  # clusters created or changed: an answer ``cached_id`` gave holds while this stays
        # the key whose cache entry the last ``add`` that did more than count a hit wrote (``filed``), and how
        # often a full cache of entries was emptied: the entry of every other key stands while this stays
        self.filed: bytes | None = None
        self.key_resets = 0
        self._answers = RunAnswers()

    # -- mining ---------------------------------------------------------------------------------------

    def add(self, message: str, key: bytes | None = None, wide: bool = False) -> int:
        """Assign one message to a cluster and return the cluster's local id.

        ``key`` may be given when the caller already has it: the UTF-8 bytes with every ASCII digit a 0, or
        with ``wide`` its ``hex_key`` (which folds nothing more of it).
        """
        if not self.cache_size:
            return self._drain_add(self.masker.mask_plain(message))[0].cluster_id
        if key is None:
            key = message.encode("utf-8", "surrogatepass").translate(FOLD_DIGITS)
        hit = self._by_key.get(key)
        if hit is None and not wide:  # entries are stored under the hex-folded key (the key itself without hex)
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
        masked = join_masked(masked_tokens)
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
                put_bounded(self._by_masked, masked, entry, self.cache_size)
        getter = None
        if kept:
            at = tuple(kept)
            getter = self._getters.get(at)
            if getter is None:
                getter = itemgetter(*at)
                put_bounded(self._getters, at, getter, max(1, self.cache_size))
        expected = None
        loose = None
        if getter is not None:
            expected = getter(tokens)
            put_bounded(self._by_kept, (key, " ".join([masked_tokens[i] for i in kept])), entry, self.cache_size)
            if len(masked_tokens) == len(entry[0].log_template_tokens):
                loose = self._loose(tokens, masked_tokens, kept, entry[0])
                if loose is not None and form is not None:
                    put_bounded(self._by_form, form,
                                 (entry, loose[0], None if loose[0] is None else loose[0](masked_tokens)),
                                 self.cache_size)
        if len(self._by_key) >= self.cache_size:
            self.key_resets += 1  # ``put_bounded`` empties the entries of every key
        self.filed = key
        put_bounded(self._by_key, key, (entry, getter, expected, loose), self.cache_size)
        if loose is not None and loose[0] is None and all(stays_apart(masked_tokens[i]) for i in kept):
            put_bounded(self._free_kept, key, tuple(kept), self.cache_size)
        elif key in self._free_kept:
            del self._free_kept[key]
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
            put_bounded(self._kept_masked, kept, masked, max(1, self.cache_size))
        return masked

    def cached_id(self, key: bytes) -> int | None:
        """The cluster id ``add`` would return for a message with this key (as for ``add``) straight from its cache,
        with no token check and no template changed; None when ``add`` would do more (then it may well for the
        next message of the key: see ``needs_tokens``). Changes nothing: ``count_hits`` counts."""
        hit = self._by_key.get(key) if self.cache_size else None
        if hit is None or (hit[1] is not None and not _free(hit)):
            return None
        entry = hit[0]
        return entry[0].cluster_id if entry[1][0] == entry[2] else None

    def free_kept(self, key: bytes) -> tuple[int, ...] | None:
        """The indices of the kept tokens of a message of this key (hex-folded, as ``add`` files it) where each
        may change freely (``_loose``: the cluster has a wildcard there, no other cluster of its leaf a word, no
        routing by it) and each stays a token of its own (``masking.stays_apart``); None otherwise, or when the
        key's entry is stale. A message whose other tokens have the same keys and whose tokens at these indices
        mask to tokens that keep digits and stay apart (``kept_stays``) then goes to the same cluster, changing
        none: Drain sees the same text but for tokens where every cluster it weighs has a wildcard."""
        kept = self._free_kept.get(key)
        if kept is None:
            return None
        hit = self._by_key.get(key)
        if hit is None or not _free(hit) or hit[0][1][0] != hit[0][2]:
            return None
        return kept

    def kept_stays(self, token: str, form: bytes | None = None) -> bool:
        """Whether ``token`` masks to a token that keeps digits and stays a token of its own (``free_kept``).

        ``form``, the token's ``hex_key`` (digits folded, hex words folded as the miner's key folds them), lets
        the answer be remembered for every token of that form: masking never tells digits apart and masks the
        hex words ``hex_key`` folds alike (the masker's own caches rely on it), so whether a token keeps digits
        is its form's; a name with a number (``stays_apart``) is one word of letters then digits, never a
        folded hex word (``<HASH>``), so it is the form's too. A segfault line's ``libc.so.6[7f3a1c2b+ca387]``
        is new on every line, its form is not."""
        if form is not None:
            hit = self._stays.get(form)
            if hit is not None:
                return hit
            if self._letters:  # a pointer's tail new on every line: one answer per pattern of its digits
                form = letter_form(form)
                hit = self._stays.get(form)
                if hit is not None:
                    return hit
        masked, kept = self.masker.mask_list([token])
        stays = bool(kept) and stays_apart(masked[0])
        if form is not None:
            put_bounded(self._stays, form, stays, max(1, self.cache_size))
        return stays

    def loose_answer(self, key: bytes) -> LooseAnswer | None:
        """What ``add`` answers a message of this key by while its cache entry stands, when the key's kept tokens
        are partly free (``_loose``: some sit where the cluster has a wildcard, the others must mask as they
        did): the cluster id and the check of the others (``same_fixed``). None when the entry is stale, every
        kept token must stay, or every one may change (``cached_id`` answers those). Valid until the next
        ``add`` that does more than count a hit."""
        hit = self._by_key.get(key) if self.cache_size else None
        if hit is None or hit[1] is None or hit[3] is None or hit[3][0] is None:
            return None
        entry = hit[0]
        if entry[1][0] != entry[2]:
            return None
        return LooseAnswer(entry[0].cluster_id, hit[3])

    def same_fixed(self, answer: LooseAnswer, tokens: list[str]) -> bool:
        """Whether a message of the key of ``answer`` (split at blanks) goes to its cluster: its kept tokens that
        must stay mask as the cached message's did, as ``add`` checks them."""
        return self._same_fixed(answer.loose, tokens)

    def needs_tokens(self, key: bytes) -> bool:
        """Whether every message with this key is checked token by token (digits kept in its template, not all
        of them where the cluster has wildcards)."""
        hit = self._by_key.get(key)
        return hit is not None and hit[1] is not None and not _free(hit)

    def run_answers(self) -> RunAnswers:
        """The answers runs saved (``mining.runmine.mine_run``), emptied when a cluster changed since or they grew
        past the cache's size."""
        answers = self._answers
        full = len(answers.ids) + len(answers.kept_ids) + len(answers.free_ids) + len(answers.free_shapes) > \
            self.cache_size
        if full:
            answers.free_shapes.clear()
        if answers.changes != self.changes or full:
            answers.ids.clear()
            answers.kept_ids.clear()
            answers.free_ids.clear()
            answers.changes = self.changes
        return answers

    def count_hits(self, key: bytes, n: int) -> None:
        """``add`` of ``n`` messages with this key, which ``cached_id`` answered."""
        self._by_key[key][0][0].size += n
        self.hits += n

    def kept_getter(self, key: bytes) -> Callable[[list[str]], Any] | None:
        """The itemgetter of the kept tokens ``add`` compares for a message of this key, None when it compares
        none or the key is not cached. Two messages of one key with the same kept tokens get one answer."""
        hit = self._by_key.get(key) if self.cache_size else None
        return None if hit is None else hit[1]

    def count_cluster_hits(self, cluster_id: int, n: int) -> None:
        """``add`` of ``n`` messages that ``cached_id`` answered with this cluster (its entry may be gone since)."""
        self.drain.id_to_cluster[cluster_id].size += n
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
            self.changes += 1
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
