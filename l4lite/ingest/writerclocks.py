"""Each writer's clock inside one merged file (``kubectl logs --prefix``, ``srun --label``): the lines that open and
close each label's part, and the zone-free times its torchelastic error records state, kept on the one pass that
reads such a file whole (``writers.vote_whole``).

A merged file has one span, but its writers may log in different zones (a pod whose container sets ``TZ``). The
zone belongs to the writer, so ``zones.read_zones`` weighs each writer's first and last times, and what its error
records state, as a clock of the job beside the nodes' own files: one writer read in another zone then no longer
moves the job's failure time. Only a few lines per label are kept; their times are read once, per job.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from l4lite.ingest.errorfile import stated_time
from l4lite.ingest.timespots import strip_stream_prefixes
from l4lite.ingest.timestamps import TimestampParser

KEPT = 4  # timed-looking lines kept at each end of a writer's part
# what a line's own time opens with after its stream labels (``[default1]:``): a date, glog's ``W1205``, ``[2024``
TIMED_HEAD = re.compile(r"\s?(?:\[\w+\]:)*\[?[IWEFD]?\d\d")
MAX_WRITERS = 64  # labels kept per file: a merge of more is read as one clock, as before


@dataclass
class WriterLines:
    """The first and last lines one label wrote in a merged file (without the label), and the epoch seconds its error
    records state."""

    first: list[str] = field(default_factory=list)
    last: deque[str] = field(default_factory=lambda: deque(maxlen=KEPT))
    stated: list[float] = field(default_factory=list)

    def feed(self, raw: str, at: int) -> None:
        """Keep ``raw`` (its label ending at ``at``) when its text opens with what may be a time."""
        if TIMED_HEAD.match(raw, at):
            line = raw[at:]  # without its label: a pdsh prefix is no stream prefix the time reader knows
            if len(self.first) < KEPT:
                self.first.append(line)
            self.last.append(line)
        elif '"timestamp"' in raw[-80:] and (t := stated_time(raw.rstrip())) is not None:
            self.stated.append(t)  # a torchelastic error record copied into the stream: zone-free


def feed_writer(writers: dict[str, WriterLines], label: str, raw: str, at: int) -> None:
    """Keep ``raw`` as a line of ``label``'s part (``MAX_WRITERS`` labels at most)."""
    w = writers.get(label)
    if w is None:
        if len(writers) >= MAX_WRITERS:
            return
        w = writers[label] = WriterLines()
    w.feed(raw, at)


class WriterSpan(NamedTuple):
    """One writer's first and last times in a merged file, as written, and what its error records state."""

    first: float
    last: float
    stated: list[float]


def writer_spans(writers: Mapping[str, WriterLines], host_of: Callable[[str], str | None], year: int | None,
                 near: int | None) -> dict[str, WriterSpan]:
    """host -> its ``WriterSpan`` for the labels ``host_of`` names a host for and whose kept lines give a time at
    both ends, the first not after the last; a host of two labels gets their union."""
    parser = TimestampParser(year, None, near)

    def times(lines: Sequence[str]) -> list[float]:
        return [t for raw in lines if (t := parser.parse(strip_stream_prefixes(raw.rstrip("\n")))[0]) is not None]

    out: dict[str, WriterSpan] = {}
    for label, w in writers.items():
        host = host_of(label)
        heads, tails = times(w.first), times(w.last)
        if host is None or not heads or not tails:
            continue
        first, last = min(heads), max(tails)
        if first > last:  # its part's ends on two clocks: no one clock of its own
            continue
        if (seen := out.get(host)) is not None:
            out[host] = WriterSpan(min(seen.first, first), max(seen.last, last), seen.stated + w.stated)
        else:
            out[host] = WriterSpan(first, last, list(w.stated))
    return out
