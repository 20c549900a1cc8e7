"""A process's log whose clock is off from its node's by whole quarter hours, found against the zone-free time the
process's own error file states.

A node's zone (``zones``) and its clock's step (``steps``) are facts of the whole node. A clock can also move
between one file of a node and the next with no file showing the move: a node logging naive local time springs
forward for daylight saving after its console's last sampled line, and a restarted rank's ``stderr.log`` (one
or two lines) is wholly an hour late. Read as written, that file is the last of the job: its node looks like the
last to fail, and the job's end moves by an hour.

torchelastic writes a rank's error file (``attempt_N/R/error.json``) beside the rank's ``stderr.log`` when the
process fails, stating the moment in epoch seconds (zone-free). A file of that folder is read back by ``d`` only
when both hold:

- its last sampled time, in the job's time, lies whole quarter hours ``d`` (within ``MAX_PAUSE``) past the time the
  error file beside it states (a process logs nothing a quarter of an hour after its own error file);
- as written it lies past every other node's last time, and read back by ``d`` it lies within their span.

A node's files that agree with their error files, a rank that hung for hours before its error file (its lines lie
before the stated time, not after), and a node whose whole log is in another zone (already read in the job's time
by ``zones``) are not moved. A node whose clock stepped (``steps``) is left to its step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from posixpath import dirname

from l4lite.ingest.jumps import MAX_PAUSE, quarters
from l4lite.ingest.spans import FileSpan


def file_offsets(spans: Mapping[str, FileSpan], stated: Mapping[str, float], node_of: Callable[[str], str | None],
                 shifts: Mapping[str, float], steps: Mapping[str, object]) -> dict[str, float]:
    """rel -> seconds the file's clock is ahead of its node's (see the module docstring). ``spans``: each file's
    sampled span as the job's steps read it; ``stated``: error file rel -> the epoch seconds it states;
    ``shifts``: node -> seconds its zone is ahead (``zones``); ``steps``: the stepped nodes (left alone)."""
    folders: dict[str, float] = {}
    for rel, t in stated.items():
        folder = dirname(rel)
        folders[folder] = max(t, folders.get(folder, t))
    if not folders:
        return {}
    ends: dict[str, tuple[float, float]] = {}  # node -> its first and last time in the job's time
    for rel, span in spans.items():
        node = node_of(rel)
        if node is None or span.system:
            continue
        own = shifts.get(node, 0.0)
        lo, hi = ends.get(node, (span.first - own, span.last - own))
        ends[node] = (min(lo, span.first - own), max(hi, span.last - own))
    out: dict[str, float] = {}
    for rel, span in spans.items():
        node = node_of(rel)
        said = folders.get(dirname(rel))
        if node is None or said is None or span.system or node in steps or rel in stated:
            continue
        own = shifts.get(node, 0.0)
        first, last = span.first - own, span.last - own
        d = quarters(last - said)
        peers = [v for other, v in ends.items() if other != node]
        if d <= 0 or not peers:
            continue
        lo = min(a for a, _ in peers) - MAX_PAUSE
        hi = max(b for _, b in peers) + MAX_PAUSE
        if first > hi and lo <= first - d and last - d <= hi:
            out[rel] = d
    return out
