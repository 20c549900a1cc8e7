"""A generic NCCL error takes its category from the NCCL WARN line its rank printed just before it.

The generic result (``nccl-system-error``, ``nccl-internal-error``, ``nccl-invalid-usage``, ``nccl-remote-error``,
or a Python exception quoting one of them, "unhandled cuda error" among them) is the symptom; the WARN line
naming the failing call is the payload (``rules.ncclwarn.read_warn``). A WARN line a rule or the lexicon already
read is its own finding and outranks the generic rule; this step covers the WARN lines only their call's meaning
reads (a ring without a rank, a topology file, a CUDA error string).

Only the root's node, only WARN lines above the root line: in the same file at most ``LINES`` lines above it and
in one writer's block, or, both timed, at most ``BEFORE`` seconds before it; of the same rank when both carry
one. The nearest such line with a reading wins.
"""

from __future__ import annotations

import math
import re

from l4lite.detect.base import Finding
from l4lite.detect.components import ComponentDetector
from l4lite.ingest.catblocks import same_block_near
from l4lite.records import Record
from l4lite.rules.ncclwarn import WARN, read_warn
from l4lite.scan.scanner import JobScan, node_key

GENERIC = frozenset({"nccl-system-error", "nccl-internal-error", "nccl-invalid-usage", "nccl-remote-error"})
# the same results where only a fallback rule (a Python exception) matched the line
RESULTS = re.compile(r"unhandled (?:system|cuda) error|\bnccl(?:System|UnhandledCuda|Internal|Remote)Error\b|"
                     r"internal error - please report|invalid usage \(run with NCCL_DEBUG|"
                     r"remote process exited or there was a network error")
BEFORE = 60.0  # seconds
LINES = 40
SCORE = 0.6


def _above(r: Record, root: Record) -> bool:
    if r.time is not None and root.time is not None and r.file != root.file:
        return root.time - BEFORE <= r.time <= root.time
    return r.file == root.file and r.line < root.line and same_block_near(r, root, LINES, r.time, root.time)


def warn_payload(scan: JobScan, primary: Finding) -> Finding | None:
    """A root finding from the WARN line behind a generic NCCL error ``primary``; None without one."""
    if primary.detector != "rules" or not primary.records:
        return None
    root = primary.records[0]
    if primary.rule not in GENERIC and not (primary.data.get("fallback") and RESULTS.search(root.text)):
        return None
    node = primary.node or node_key(root)
    best: tuple[tuple[int, float], Record, str, str] | None = None
    for (_, where), recs in scan.exemplars.items():
        if where != node:
            continue
        for r in recs:
            if WARN not in r.text or not _above(r, root):
                continue
            if r.rank is not None and root.rank is not None and r.rank != root.rank:
                continue
            reading = read_warn(r.text)
            if reading is None or reading.category == primary.category:
                continue
            key = (0 if r.file == root.file else 1, (root.line - r.line) if r.file == root.file else
                   (root.time or 0.0) - (r.time if r.time is not None else -math.inf))
            if best is None or key < best[0]:
                best = (key, r, reading.category, reading.words)
    if best is None:
        return None
    _, rec, category, words = best
    return Finding(ComponentDetector.name, category, "symptom", SCORE,
                   f"NCCL's generic error follows the rank's own NCCL WARN line, which names the failing call "
                   f"({words[:80]}): {category.replace('_', ' ')}.",
                   node=node, rank=rec.rank, gpu=rec.gpu, time=rec.time, severity="error",
                   records=[rec], count=1, data={"component": words, "nccl_warn": True})
