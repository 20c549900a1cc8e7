"""The first failure on the root's node: an error line no signature knows, printed just before the root line.

A signature names what its line says, and that line is not always the first thing that went wrong: an NCCL
communicator torn down by an IB completion error ends in a CUDA call that reports an illegal memory access; a
failed NVLink SHARP set-up ends a kernel on an invalid address. The root line's category is then the
consequence's. When the same node printed, shortly before the root line, an error line that no rule matched and
whose words or names give another component, that line is the first failure and its component is the category.

Only error lines of the component detector count (not warnings, not a guess of the learned model, not a line
training outlived), only on the root's node, and only within ``BEFORE`` seconds (or, untimed, a few lines above
it in the same file): an old error the job lived through says nothing about this failure. The root's own error
file restating its exception is the same failure, not an earlier one, wherever a merged stream placed it. A line that names a
setting (a path that is not there, a cancelled job) does not take the place of a node's own fault (a lost node, a
GPU, its memory, a link, a file system): a node going away takes its daemons' sockets and files with it, and
the words of what went missing then read as a configuration.
"""

from __future__ import annotations

import math

from l4lite.detect.base import Finding
from l4lite.detect.components import ComponentDetector
from l4lite.diagnose.errorfiles import restates
from l4lite.diagnose.timeline import finding_key
from l4lite.ingest.catblocks import same_block_near
from l4lite.rules.components import LEARNED_WORDS

BEFORE = 120.0  # seconds before the root line
NODE_FAULTS = frozenset({"gpu_hardware", "host", "network", "storage"})
LINES = 50  # lines above it in the same file, when either is untimed


def _shortly_before(f: Finding, root: Finding) -> bool:
    t, t0 = finding_key(f)[0], finding_key(root)[0]
    if math.isfinite(t) and math.isfinite(t0):
        return t0 - BEFORE <= t <= t0 and finding_key(f) < finding_key(root)
    a, b = (f.records[0] if f.records else None), (root.records[0] if root.records else None)
    # a few lines above it, and not across a concatenation's step back from one writer's block to the next
    return a is not None and b is not None and b.line > a.line and \
        same_block_near(a, b, LINES, f.time, root.time)


def earlier_failure(findings: list[Finding], roles: dict[int, str], root: Finding) -> Finding | None:
    """The earliest error line of the root's node that names another component shortly before it; None."""
    if root.detector != "rules" or root.node is None:
        return None
    found = [f for f in findings if f.detector == ComponentDetector.name and f.severity == "error"
             and roles.get(id(f)) == "symptom" and f.node == root.node
             and f.category not in ("unknown", root.category) and f.data.get("component") != LEARNED_WORDS
             and not (f.category == "user_config" and root.category in NODE_FAULTS)
             and not f.data.get("survived") and not f.data.get("in_baseline") and _shortly_before(f, root)
             and not restates(f, root.records)]  # the root's own error file, merged into the stream above it
    return min(found, key=finding_key) if found else None
