"""A node's clock ahead at the failure, found against the zone-free time a process's own error file states, where
no file of the node shows a step in its sampled times (``steps``).

A clock can move between one file of a node and the next with no file showing the move: a node logging naive
local time springs forward for daylight saving after its console's last sampled line, and a restarted rank's
``stderr.log`` (one or two lines) is wholly an hour late; or a clock that ran an hour fast is stepped back right
after its last line. Read as written, those lines are the last of the job: the node looks like the last to fail,
and the job's end moves by an hour.

torchelastic writes a rank's error file (``attempt_N/R/error.json``) beside the rank's ``stderr.log`` when the
process fails, stating the moment in epoch seconds (zone-free). The node's clock is taken to be ``d`` ahead at the
end when all hold:

- a file of the error file's folder has its last sampled time, in the job's time, whole quarter hours ``d``
  (within ``MAX_PAUSE``) past the stated time (a process logs nothing a quarter of an hour after its own error
  file; a watchdog that fires half an hour after its peers died states its own, late, time);
- as written that file lies past every other node's last time, and read back by ``d`` it lies within their span;
- every such file of the node says the same ``d``.

The node's times past its peers' end that back by ``d`` lie within their span are then its ahead part, read back as
a step's is (``steps.clock_steps``' form: ``[seconds, after, until]``), in every file of the node. A rank that hung
for hours before its error file (its lines lie before the stated time), a node whose whole log is in another zone
(read in the job's time by ``zones`` first) and a node whose step a file shows are left as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from posixpath import dirname

from l4lite.ingest.jumps import MAX_PAUSE, quarters
from l4lite.ingest.spans import FileSpan


def stated_steps(spans: Mapping[str, FileSpan], stated: Mapping[str, float], node_of: Callable[[str], str | None],
                 shifts: Mapping[str, float], steps: Mapping[str, object]) -> dict[str, list[float]]:
    """node -> its clock's step (``[seconds, after, until]``, times as written) found against its error files (see
    the module docstring). ``spans``: each file's sampled span as the job's steps read it; ``stated``: error file
    rel -> the epoch seconds it states; ``shifts``: node -> seconds its zone is ahead (``zones``); ``steps``: the
    nodes whose step a file shows (left alone)."""
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
    found: dict[str, set[float]] = {}
    for rel, span in spans.items():
        node = node_of(rel)
        said = folders.get(dirname(rel))
        if node is None or said is None or span.system or node in steps or rel in stated:
            continue
        own = shifts.get(node, 0.0)
        first, last = span.first - own, span.last - own
        d = quarters(last - said)
        lo, hi = _peers(ends, node)
        if d > 0 and first > hi and lo <= first - d and last - d <= hi:
            found.setdefault(node, set()).add(d)
    out: dict[str, list[float]] = {}
    for node, ds in found.items():
        if len(ds) != 1:
            continue
        d = next(iter(ds))
        own = shifts.get(node, 0.0)
        lo, hi = _peers(ends, node)
        ahead = [t - own for rel, span in spans.items() if node_of(rel) == node and not span.system
                 for t in span.times if t - own > hi and lo <= t - own - d <= hi]
        if ahead:
            out[node] = [d, max(hi, min(ahead) - MAX_PAUSE) + own, max(ahead) + own]
    return out


def _peers(ends: Mapping[str, tuple[float, float]], node: str) -> tuple[float, float]:
    """The other nodes' span (within ``MAX_PAUSE``), in the job's time."""
    peers = [v for other, v in ends.items() if other != node]
    if not peers:
        return 0.0, -1.0
    return min(a for a, _ in peers) - MAX_PAUSE, max(b for _, b in peers) + MAX_PAUSE
