"""A stuck process's background thread that died before it: what the process was waiting for.

A Python thread that raises dies alone (``Exception in thread ckpt-upload:`` and its traceback on stderr) and the
main thread trains on, so the line is one training outlived, which ``localize`` reads as a symptom: it cannot be
what stopped the job. A thread's death is different in kind: the main thread goes on until it waits for what the
thread was to do (an upload to finish, a queue to fill, a prefetch), and then waits for good; its peers time out
in their next collective and the process is found silent. The traceback can then be hundreds or thousands of lines
above the stall. When the verdict is a stuck process inferred from its peers' timeouts and its own lines name
nothing near the stall, the last thread death of that process is the line that says why it stopped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from l4lite.detect.base import Finding
from l4lite.diagnose.lone import READ_FROM_LINES
from l4lite.diagnose.timeline import finding_key
from l4lite.rules.components import is_cascade

# the outermost frame of every traceback a thread other than the main one raises
_THREAD_FRAME = re.compile(r'File "[^"\n]*threading\.py", line \d+, in _bootstrap_inner')
_HEAD = 600  # characters of a record's start where the thread's first frame is


def died_in_thread(f: Finding) -> bool:
    """Whether the finding's first record is the traceback of a thread other than the main one."""
    return bool(f.records) and _THREAD_FRAME.search(f.records[0].text[:_HEAD]) is not None


def dead_thread(findings: Sequence[Finding], stuck: Finding) -> Finding | None:
    """The last error a background thread of the stuck process (``stuck``: a hang inferred from its peers) died
    of, read from its words (not a cascade, not unknown); None when that process's threads raised nothing."""
    hang = stuck.data.get("hang") or {}
    ranks = set(hang.get("stuck_ranks") or ())
    nodes = set(hang.get("stuck_nodes") or ()) | ({stuck.node} if stuck.node is not None else set())
    died = [f for f in findings if f.detector in READ_FROM_LINES and f.category != "unknown" and f.node in nodes
            and died_in_thread(f) and not is_cascade(f.records[0].text)
            and (not ranks or f.records[0].rank is None or f.records[0].rank in ranks) and not _after(f, stuck)]
    return max(died, key=finding_key) if died else None


def _after(f: Finding, stuck: Finding) -> bool:
    """Whether the thread died after the stall was seen (its traceback's time, inherited from the stamped line
    above it, later than the stuck finding's): a thread torn down with its process is no cause."""
    t = f.time if f.time is not None else f.records[0].time
    return t is not None and stuck.time is not None and t > stuck.time
