"""A container runtime's line prefix (CRI: containerd, CRI-O), as the kubelet writes a pod's log."""

from __future__ import annotations

import re

from l4lite.ingest.attribution import KUBECTL_PREFIX, SRUN_LABEL
from l4lite.ingest.hostprefix import host_prefix

# What the kubelet's container runtime (containerd, CRI-O) writes before each line of a container's log:
# "<RFC3339Nano time> <stdout|stderr> <F|P> <text>"; P marks a partial line whose text goes on in the next one.
CRI_PREFIX = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d) (stdout|stderr) ([FP])(?: |$)")
# What ``kubectl logs --timestamps`` prints before each line, after its ``--prefix`` pod: the runtime's time alone
# (kubectl has read the CRI prefix and joined the partial lines). Two empty groups stand for a CRI prefix's stream
# and F/P mark: the line is whole, and a pod's lines are one stream.
KUBECTL_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d) ()()")
# A file is a container log when any of its first non-empty lines has the prefix: one plain line at the top (a
# note, a copy's banner) must not leave the whole pod log unread, and a plain line passes unwrapping unchanged.
CRI_HEAD_LINES = 16


def without_cri_prefix(s: str) -> str:
    """A line without its container runtime's prefix, if it has one (``cri_prefix``)."""
    m = cri_prefix(s)
    return s[m.end():] if m else s


def cri_prefix(s: str) -> re.Match[str] | None:
    """A container log line's CRI prefix, at the line's start or after a stream label (several pods' logs merged
    into one stream with ``srun --label``-style labels, or pdsh's hosts), or None. After a ``kubectl logs --prefix`` pod, the time
    ``--timestamps`` prints is read as one too: it is the runtime's time, not the program's header, so the
    program's line after it is read as in the pod's own log (a traceback's lines continue their record)."""
    m = CRI_PREFIX.match(s)
    if m is None and s[:1] in " 0123456789" and (label := SRUN_LABEL.match(s)) is not None:
        m = CRI_PREFIX.match(s, label.end())
    elif m is None and s.startswith("[pod/") and (pod := KUBECTL_PREFIX.match(s)) is not None:
        m = CRI_PREFIX.match(s, pod.end()) or KUBECTL_TIME.match(s, pod.end())
    elif m is None and (host := host_prefix(s)) is not None:  # pdsh's ``host: `` (a runtime's prefix after it)
        m = CRI_PREFIX.match(s, host.end())
    return m


def cri_layout(s: str, pos: int) -> tuple[int, int, int, int, int]:
    """Where the parts of the time of a CRI prefix (or ``kubectl logs --timestamps``' time) that ``cri_prefix``
    found at ``pos`` sit, as ``stamp_patterns.zoned_layout`` gives them (date-time, fraction and its width, UTC
    offset), for ``zoned_time`` to read it without the header pattern: the runtime trims the fraction's trailing
    zeros, so its width, and the offset's place, change from line to line."""
    end = s.find(" ", pos + 19)
    off = end - 1 if s[end - 1] == "Z" else end - 6
    if s[pos + 19] == ".":
        return pos, pos + 20, off - pos - 20, off, end
    return pos, -1, 0, off, end
