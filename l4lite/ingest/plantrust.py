"""Whether a header plan learnt from one line may read another line of the same shape.

A plan replays the offsets of a line's header fields; it may read a line only where the message starts at the
same place for the same reasons, and where nothing the full header reader looks at (a stream prefix, an NCCL
header, a launcher's line) sits elsewhere. The header path (``ingest.header``) and the first-sight learning of
folded shapes (``ingest.firstsight``) ask the same questions, here.
"""

from __future__ import annotations

from l4lite.ingest import lineclass as lc

DIGITS = frozenset("0123456789")
MISMATCH = "\x00"  # ``planned_level``'s answer for a level marker that ends elsewhere than the plan's


def planned_message(s: str, a: int, has_nccl: bool, bracket: bool) -> str | None:
    """The message of line ``s`` read from a header plan whose message starts at ``a``, or None where the plan
    cannot be trusted for it: a message that starts like a header's field, an NCCL line under a plan of none (or
    the reverse), a stream prefix, a carriage return, or a launcher line the full reader treats apart."""
    c = s[a:a + 1]
    if not c or c.isspace() or c in DIGITS or (bracket and c == "[") or (s.find("NCCL", 0, 240) > 0) != has_nccl \
            or not no_prefix(s):
        return None
    msg = s[a:].rstrip()
    if "\r" in msg or "global_ranks=[" in msg or msg.startswith(("srun: error: ", "slurmstepd: error: ")):
        return None
    return msg


def no_prefix(s: str) -> bool:
    """Whether the header reader (``HeaderReading._header``) tries no stream prefix on ``s`` (a non-blank line):
    none of the texts that make it try one (``name.host [stdout]``, an ``srun --label``, an MPI tag, a Ray actor,
    a torchrun prefix) is where it looks for them."""
    if s.find(" [std", 0, 160) > 0:
        return False
    c = s[0]
    if c == " ":
        return s.find(": ", 0, 9) <= 0 and s.find("]:", 0, 48) <= 0
    if c == "[":
        return s.find(">:", 0, 26) <= 0 and s.find("]:", 0, 48) <= 0
    if c == "(":
        return s.find(" pid=", 0, 64) <= 0
    return c not in DIGITS or s.find(": ", 0, 9) <= 0


def planned_level(s: str, msg: str, kind: str, ts_level: str | None, marker_at: int, marker_end: int) -> str | None:
    """The level of line ``s`` as its plan reads it: the timestamp's, the level marker's at the plan's place, or
    the message's words; ``MISMATCH`` where the marker ends elsewhere (another level word: the plan is not this
    line's)."""
    level = ts_level
    if marker_at >= 0:
        level, end = lc.level_marker(s, marker_at)
        if end != marker_end:
            return MISMATCH
    if level is None:
        level = "error" if kind == lc.K_TB else lc.content_level(msg)
    return level
