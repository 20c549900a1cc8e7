"""A Ray driver's copies of its actors' lines: ``(RayTrainWorker pid=94, ip=10.0.0.2) ...``.

The driver relays every worker's output under the actor's prefix. Such a line belongs to the prefix's node, but it
is a copy written by another process on another machine: it has no time of its own unless it prints one (the
driver file's last time is the driver's, often minutes before the worker wrote it), and the worker's own log line
is the better proof of the same event.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from l4lite.ingest.attribution import ACTOR_PREFIX
from l4lite.records import Record

# Ray Train's controller re-raises a worker's error as ``WorkerGroupError: ... [Rank 0 Error Snippet]:`` followed by
# the worker's traceback: a copy of the rank's own lines, not an error of the controller's node
# (its cut marker, ``... (Output truncated. See individual worker logs for full details) ...``, is part of the copy)
ERROR_SNIPPET = re.compile(r"\[Rank [\d,]+ Error Snippet\]:|\(Output truncated\. See individual worker logs")
# the controller's own lines around the quotes re-raise the workers' errors (``ray.train.WorkerGroupError: Training
# failed due to worker errors:``, the driver's traceback ending in it): the ranks' failure, reported where the
# controller runs, which need not be a failing rank's node
RERAISE = re.compile(r"WorkerGroupError\b|Training failed due to worker errors")
# A collective that gathers every rank's exception and raises one report on each rank quotes each failure under a
# header naming the rank it came from (torch.distributed.checkpoint's ``CheckpointException``: ``Traceback (most
# recent call last): (RANK 0)``): on another node's rank it is a copy of that rank's error, not a failure of its own
RANK_QUOTE = re.compile(r"Traceback \(most recent call last\): \(RANK (\d+)\)")


def relayed(s: str, pos: int) -> bool:
    """Whether a line read up to ``pos`` (its prefixes) is an actor's line relayed by the driver: its prefix
    names the actor's pid (and its node's address when it runs on another node than the driver)."""
    return pos > 0 and s.find(" pid=", 0, pos) >= 0


def relayed_copy(text: str) -> bool:
    """Whether a record is a line the driver relayed under an actor's prefix, or a worker's error the controller
    quotes: a copy of a line the actor's own log holds, so it never counts as its node saying something of its
    own."""
    return (text.find(" pid=", 0, 160) > 0 and ACTOR_PREFIX.search(text, 0, 200) is not None) or quoted_error(text)


def relayed_copies(records: Sequence[Record]) -> bool:
    """Whether a finding stands only on relayed copies (and so on no line of its node's own)."""
    return bool(records) and all(relayed_copy(r.text) for r in records)


def relayed_from_afar(text: str) -> bool:
    """Whether a record is an actor's line the driver relayed from another node (its prefix names the node's
    address): that node's own log holds the line, and the copy is the weaker proof of it."""
    if text.find(", ip=", 0, 160) < 0:
        return False
    m = ACTOR_PREFIX.search(text, 0, 200)
    return m is not None and m[2] is not None


def quoted_ranks(text: str) -> set[int]:
    """The ranks whose errors a record quotes under a per-rank header (``... (RANK 0)``); empty for a rank's own."""
    return {int(m[1]) for m in RANK_QUOTE.finditer(text, 0, 400)}


def quoted_error(text: str) -> bool:
    """Whether a record is a rank's error that Ray Train's controller quotes (``[Rank 0 Error Snippet]:``)."""
    return ERROR_SNIPPET.search(text, 0, 4000) is not None


def controller_copy(text: str) -> bool:
    """Whether a record is Ray Train's controller reporting its workers' errors: a quote of a rank's error or the
    re-raise around the quotes. It tells that ranks failed, not which node failed: that is the ranks' own lines."""
    return quoted_error(text) or RERAISE.search(text, 0, 4000) is not None
