"""Template ids of a run's lines (``ingest.shaperun.ShapeRun``), per line shape at once where the miner can say.

A run's lines of one shape have messages of one digit-folded key, so the miner's cache answers them all at once
(``cached_id``); a message the cache cannot answer goes to ``add``. ``l4lite parse`` mines each message without
its file's learnt header (``mining.headers``): a header ends at the same token in every message of one shape (the
tokens are cut at blanks, which folding digits keeps), so it is cut once per shape, and the cut messages are
mined per shape as the others.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from operator import itemgetter
from typing import Any

from l4lite.ingest.blocks import wide_key
from l4lite.ingest.shape import hex_key, shape_of
from l4lite.ingest.shaperun import ShapeRun

_UNSEEN: Any = object()  # a key not yet looked up in ``mine_run``'s memo of getters
_MINE_ROUNDS = 8  # looks at the miner's cache per run stretch before adding its messages one by one


def mine_run(run: ShapeRun, miner: Any, strip: Callable[[str], str] | None = None) -> list[int]:
    """Cluster ids of a run's messages, as ``miner.add`` of each in order would give them: per line shape at
    once where the miner's cache answers (``cached_id``), one by one where it does not (and with a miner
    without that cache, ``TemplateMiner(cache_size=0)`` say). The lines of folded shapes
    (``RunShape.fold_from``) each have their own message shape: each is given the miner's own key of it
    (``shape.hex_key``, under which the miner files its answers; ``add`` of a message with it is ``add`` with its
    digit-folded key), found in a memo of its folded shape by the few bytes that key depends on
    (``blocks.wide_key``), and is looked up in the cache as the other lines are.

    ``strip`` (``HeaderCut.strip``) gives the part of a message that is mined, a suffix of it: it is cut at the
    same offset in every message of one line shape, so it is asked once per shape; lines of folded shapes, whose
    hex letters may change a token's kind, are then mined one by one."""
    shapes = run.shapes
    table = run.table
    if not getattr(miner, "cache_size", 0) or not hasattr(miner, "run_answers") or strip is not None and any(
            table[x].fold_from >= 0 for x in set(shapes)):
        return _add_each(run, 0, len(shapes), miner, strip=strip)
    starts: dict[int, int] = {}  # where each shape's mined message starts
    key_of: dict[int, bytes] = {}
    checked: set[int] = set()  # shapes whose messages the miner checks token by token: one by one
    folded: set[int] = set()  # shapes of folded keys: each message with its own key
    for x in set(shapes):
        sh = table[x]
        starts[x] = sh.msg_start
        if sh.fold_from >= 0:
            folded.add(x)
            continue
        key = sh.miner_key if strip is None else None
        if key is None:
            key = sh.msg_key
            if key is None or strip is not None:  # every message of one line shape has the same key
                msg = run.texts[shapes.index(x)][sh.msg_start:sh.msg_end]
                if strip is not None:
                    starts[x] += len(msg) - len(strip(msg))
                key = shape_of(msg[starts[x] - sh.msg_start:])
            # the miner files a key's answers under its hex-folded form (``add`` of a message with either key is
            # the same): an NCCL init line's ``comm 0xd481636bf2`` is a new shape and key on every line, not this
            key = hex_key(key)
            if strip is None:  # the key of the shape's whole message: the same in every run of it
                sh.miner_key = key
        key_of[x] = key
        if miner.needs_tokens(key):
            checked.add(x)
    if not checked and not folded:
        return _mine_stretch(run, 0, len(shapes), key_of, miner, starts)
    keys = run.keys
    # one pass: a line of a checked shape goes to ``add`` with its key; the others (and the lines of folded shapes,
    # by their own keys) take the id the cache gave their key, which holds until an ``add`` changes a cluster
    # (``changes``); their hits are counted per cluster at the end (a cluster's size is all that counting changes)
    # A message of a key the miner checks token by token takes the id ``add`` gave a message of the same key,
    # the same itemgetter of kept tokens and the same kept tokens (the miner's own test on a hit), until then.
    # A line of a folded shape whose key is new may still be answered by the key with its free kept tokens
    # left out (``TemplateMiner.free_kept``), once its tokens there are checked (``kept_stays``): per shape, the
    # indices of those tokens and an itemgetter of the others (the tokens of a folded shape sit alike in all its
    # lines), learnt from a line ``add`` answered
    out: list[int] = []
    add, cached_id, kept_getter, kept_stays = miner.add, miner.cached_id, miner.kept_getter, miner.kept_stays
    loose_answer, same_fixed = miner.loose_answer, miner.same_fixed
    answers = miner.run_answers()  # what earlier runs learnt, while no cluster changed since
    if answers.table is not table:  # shapes are indices into one run table
        answers.free_shapes.clear()
        answers.free_ids.clear()
        answers.table = table
    free_of = answers.free_shapes
    cids, kept_cids, free_ids = answers.ids, answers.kept_ids, answers.free_ids
    hits: dict[int, int] = {}
    # the keys the cache did not answer, each with its kept-token getter: both depend on the miner's entry of
    # the key alone, which only ``add`` changes, and only the entry of the key it files its answer under
    # (``TemplateMiner.filed``) unless its full cache was emptied (``key_resets``) or a cluster changed (which
    # makes entries stale): that key alone leaves the memo. An ``add`` of kept tokens new to an unchanged cluster
    # (an NCCL ``Bootstrap`` line's new address, on every such line) thus keeps the other keys' getters
    getters: dict[bytes, Any] = {}
    # the keys whose kept tokens are partly free (``TemplateMiner.loose_answer``), by the same entry: a Lustre
    # line's ``scratch-OST00d3-osc-ffff8f2a:`` is new on every line where its cluster has a wildcard, and its
    # ``10.0.3.7@o2ib`` only has to mask as before, which ``add`` would check with more steps around it
    loose_of: dict[bytes, Any] = {}
    for i, (s, x) in enumerate(zip(run.texts, shapes, strict=True)):
        key = wide_key(table[x], keys[i]) if x in folded else key_of[x]
        cid = cids.get(key)
        getter = _UNSEEN
        # a shape whose free kept tokens are known: its keys are mostly new (a new id in such a token), so the
        # key without them is looked up before the miner's entry of the key itself
        if cid is None and x in free_of:
            kept, others = free_of[x]
            parts = key.split()
            cid = free_ids.get((x, kept, others(parts)))
            if cid is not None:
                # the message's tokens are its key's, one for one (``_learn_free``): each kept one by its form
                tokens = s[starts[x]:table[x].msg_end].split()
                for k in kept:
                    if not kept_stays(tokens[k], parts[k]):
                        cid = None
                        break
        if cid is None:
            getter = getters.get(key, _UNSEEN)
            if getter is _UNSEEN:
                if x not in checked:
                    cid = cached_id(key)
                    if cid is not None:
                        cids[key] = cid
                if cid is None:
                    getter = getters[key] = kept_getter(key)
        if cid is None:
            msg = s[starts[x]:table[x].msg_end]
            if getter is not None:
                tokens = msg.split()
                memo = (key, getter, getter(tokens))
                cid = kept_cids.get(memo)
                if cid is None:  # new kept tokens: those where the cluster has wildcards may be anything
                    loose = loose_of.get(key, _UNSEEN)
                    if loose is _UNSEEN:
                        loose = loose_of[key] = loose_answer(key)
                    if loose is not None and same_fixed(loose, tokens):
                        cid = kept_cids[memo] = loose.cluster_id  # as after ``add``: these values again hit
            if cid is None:
                changes, resets = miner.changes, miner.key_resets
                miner.filed = None
                cid = add(msg, key, x in folded)
                filed = miner.filed
                out.append(cid)
                if miner.changes != changes:  # every entry of the cluster's length may be stale
                    getters.clear()
                    loose_of.clear()
                    cids.clear()
                    kept_cids.clear()
                    free_ids.clear()
                    continue
                if miner.key_resets != resets:
                    getters.clear()
                    loose_of.clear()
                elif filed is not None:  # only this key's entry changed
                    getters.pop(filed, None)
                    loose_of.pop(filed, None)
                if getter is not None:
                    kept_cids[memo] = cid
                if x in folded:
                    _learn_free(x, msg, key, cid, miner, free_of, free_ids)
                continue
        hits[cid] = hits.get(cid, 0) + 1
        out.append(cid)
    for cid, k in hits.items():
        miner.count_cluster_hits(cid, k)
    answers.changes = miner.changes  # the answers left hold from the last change on
    return out


def _learn_free(x: int, msg: str, key: bytes, cid: int, miner: Any, free_of: dict[int, tuple[tuple[int, ...], Any]],
                free_ids: dict[tuple[Any, Any, Any], int]) -> None:
    """Remember the answer ``add`` gave a message of folded shape ``x`` by its key without its free kept tokens
    (``TemplateMiner.free_kept``), where the message's tokens are its key's (ASCII, no other blank)."""
    kept = miner.free_kept(key)
    if kept is None:
        return
    found = free_of.get(x)
    if found is None or found[0] != kept:
        parts = key.split()
        if not msg.isascii() or len(parts) != len(msg.split()):
            return
        rest = [k for k in range(len(parts)) if k not in kept]
        found = free_of[x] = (kept, itemgetter(*rest) if len(rest) > 1 else _Pick(rest))
    free_ids[x, kept, found[1](key.split())] = cid


class _Pick:
    """An itemgetter of none or one index that returns a tuple, as one of several does."""

    __slots__ = ("at",)

    def __init__(self, at: list[int]) -> None:
        self.at = at

    def __call__(self, parts: list[bytes]) -> tuple[bytes, ...]:
        return tuple(parts[k] for k in self.at)


def _mine_stretch(run: ShapeRun, start: int, end: int, key_of: dict[int, bytes], miner: Any,
                  starts: dict[int, int]) -> list[int]:
    """``mine_run`` of lines ``start:end`` (none of a shape checked token by token)."""
    shapes = run.shapes
    out: list[int] = []
    rounds = 0
    while start < end:
        rounds += 1
        if rounds > _MINE_ROUNDS:  # the cache keeps failing (templates still changing): one by one
            out += _add_each(run, start, end, miner, starts)
            break
        rest = shapes[start:end]
        distinct = set(rest)
        cids = {x: miner.cached_id(key_of[x]) for x in distinct}
        stale = [x for x, cid in cids.items() if cid is None]
        if not stale:
            if len(distinct) == 1:
                miner.count_hits(key_of[rest[0]], len(rest))
            else:
                for x, n in Counter(rest).items():
                    miner.count_hits(key_of[x], n)
            out += map(cids.__getitem__, rest)
            break
        # one by one up to the first message the cache cannot answer (that one renews its entry)
        stop = start + min(rest.index(x) for x in stale) + 1
        out += _add_each(run, start, stop, miner, starts)
        start = stop
    return out


def _add_each(run: ShapeRun, start: int, end: int, miner: Any, starts: dict[int, int] | None = None,
              strip: Callable[[str], str] | None = None) -> list[int]:
    """``miner.add`` of the messages of lines ``start:end``, one by one, from ``starts`` (per shape) or cut by
    ``strip``."""
    add = miner.add
    table = run.table
    pairs = zip(run.texts[start:end], run.shapes[start:end], strict=True)
    if starts is not None:
        return [add(s[starts[x]:table[x].msg_end]) for s, x in pairs]
    if strip is not None:
        return [add(strip(s[table[x].msg_start:table[x].msg_end])) for s, x in pairs]
    return [add(s[table[x].msg_start:table[x].msg_end]) for s, x in pairs]
