"""Folded shapes learnt at a line's first sight, where a line of its token class was learnt before.

A syslog or dmesg line's folded shape (``shape.fold_ids``: digits and the letters of hex ids folded) is its whole
line's bytes, so a number that changes its width (a pid, an IP address, a counter, a hex id without leading
zeros) makes a new folded shape. The line reader learns a folded shape on its second line
(``PlanLearning._learn_folded``): a shape seen once is not worth one. Until then each line of a new shape
leaves the run it was in and is read line by line, with the short runs around it (``runs.MIN_CLOCK_RUN``): a
storage log read 13 % of its lines so.

The token class of a folded shape (``shape.fold_class``) is that shape with every run of ``0`` one ``0``: a number of
any width, a hex word of any length, each is one token of one class. Where a line's class is the class of a
folded shape already learnt, lines of its kind keep coming with new widths, so its own folded shape is learnt
at once, from the line itself (``first_sight``), as ``_head_planned`` and ``_head_opens`` would learn it on its
second line. The class only decides when to learn; the shape is the line's own, so the records are the same.
"""

from __future__ import annotations

from l4lite.ingest import lineclass as lc
from l4lite.ingest.blocks import RunShape
from l4lite.ingest.clocks import fold_key, folded_shape
from l4lite.ingest.plantrust import MISMATCH, planned_level, planned_message


def first_sight(s: str, key: bytes, plan: tuple, default_source: str) -> tuple[bytes, RunShape] | None:
    """The folded shape and run shape ``HeaderReading._learn_folded`` would make of line ``s`` (digit shape
    ``key``) read from its header's ``plan`` by the per-line loop (``_head_planned`` with ``queue``, and
    ``_head_opens`` for a line that opens a record), or None where that loop would learn none from it. The
    caller checks that the path names the node (``_learn_folded``'s first test)."""
    (a, nccl, has_nccl, _, _, _, _, ts_level, _, _, _, _, marker_at, marker_end, head_source, _, bracket) = plan
    if nccl:
        return None
    msg = planned_message(s, a, has_nccl, bracket)
    if msg is None or "[Rank " in msg or "[rank" in msg:
        return None
    kind = lc.record_kind(msg) if msg[0] in lc.KIND_STARTS else lc.K_LINE
    level = planned_level(s, msg, kind, ts_level, marker_at, marker_end)
    if level == MISMATCH:
        return None
    opens = kind != lc.K_LINE or level == "error"
    if opens and kind == lc.K_TB:
        return None
    if head_source is None or head_source == "other":
        source = lc.classify(s, msg) or head_source or default_source
        if lc.source_by_digits(msg):
            return None
    elif head_source == "kernel":
        source = lc.kernel_or_storage(msg)
        if lc.source_by_digits(msg, kernel=True):
            return None
    else:
        source = head_source
        if opens and lc.source_by_digits(msg):
            return None
    found = fold_key(s, key, plan)
    if found is None:
        return None
    folded, fold_from = found
    shape = folded_shape(s, folded, fold_from, plan, level, source, opens)
    return None if shape is None else (folded, shape)
