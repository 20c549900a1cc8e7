"""When findings happened relative to each other: time order with untimed lines last, whether training outlived a
line, and whether a line belongs to the failure another finding reports or infers (minutes around it, or near it
in the same file when either is untimed)."""

from __future__ import annotations

import math

from l4lite.detect.base import Finding
from l4lite.diagnose.evidence import own_time
from l4lite.ingest.boots import is_kernel_log
from l4lite.ingest.catblocks import block_starts, crosses, same_block_near
from l4lite.ingest.stamp_patterns import parse_elastic_time
from l4lite.records import stamped
from l4lite.scan.scanner import JobScan

SURVIVE_POINTS = 5  # iterations logged after a root line for training to have survived it


def finding_key(f: Finding) -> tuple[float, str, int]:
    """Time order of a finding; untimed ones (and inherited times) sort after timed ones, by file position."""
    r = f.records[0] if f.records else None
    t = own_time(r) if r is not None else f.time
    return (t if t is not None else math.inf, r.file if r else "", r.line if r else 0)


def cat_blocks(scan: JobScan) -> dict[str, list[int]]:
    """Where the scan's files step back in time to another writer's block (``ingest.catblocks``), from every
    line the scan kept with its place and time: progress lines, rule hits, markers, template exemplars."""
    marks = [(p.file, p.line, p.time) for p in scan.metrics]
    marks += [(h.record.file, h.record.line, h.record.time) for h in scan.hits]
    marks += [(m.file, m.line, m.time) for m in scan.markers]
    marks += [(r.file, r.line, r.time) for recs in scan.exemplars.values() for r in recs]
    return block_starts(marks)


class CatBlocks:
    """A scan's ``cat_blocks``, worked out on first use and then kept: most jobs never ask (only an untimed root
    line's survival does), and a large scan's kept lines take a moment to sort."""

    def __init__(self, scan: JobScan) -> None:
        self.scan = scan
        self.starts: dict[str, list[int]] | None = None

    def __call__(self) -> dict[str, list[int]]:
        if self.starts is None:
            self.starts = cat_blocks(self.scan)
        return self.starts


def survived(f: Finding, scan: JobScan, grace: float, blocks: CatBlocks | None = None) -> bool:
    """Did training go on for a while after this finding (so it cannot be what stopped the job)? ``blocks``:
    the scan's blocks, kept by the caller across findings (else worked out here)."""
    r = f.records[0] if f.records else None
    t = own_time(r) if r is not None else f.time
    train = [p for p in scan.metrics if p.kind == "train" and (p.iteration is not None or p.seq)]
    if not train:
        return False
    own = [p for p in train if p.node == f.node] or train
    if r is not None and r.rank is not None:
        own = [p for p in own if p.rank == r.rank] or own
    if t is not None:
        later = [p for p in own if p.time is not None and p.time > t + grace and stamped(p.text)]
    elif r is not None:  # below it in its file, and not stamped before the time it borrowed (a merged stream
        # holds one process's file after another's: its steps below are not later), nor steps already printed
        # above it (a merged stream's copy of a rank's own file replays the steps its console showed)
        above = [p for p in own if p.file == r.file and p.line < r.line]
        steps_above = max((p.iteration for p in above if p.iteration is not None), default=-1)
        seqs_above = max((p.seq for p in above if p.iteration is None and p.seq), default=-1)
        later = [p for p in own if p.file == r.file and p.line > r.end_line
                 and (p.time is None or r.time is None or p.time >= r.time)
                 and (p.iteration > steps_above if p.iteration is not None else p.seq > seqs_above)]
        # below it past the start of another writer's block of a concatenation, a step's place says nothing:
        # only its own stamp, later than the time the line borrowed by more than the grace, does
        starts = (blocks or CatBlocks(scan))() if later else {}
        later = [p for p in later if not crosses(starts, r.file, r.end_line, p.line)
                 or (p.time is not None and r.time is not None and p.time > r.time + grace and stamped(p.text))]
    else:
        return False
    steps = {p.iteration if p.iteration is not None else p.seq for p in later}
    return len(steps) >= SURVIVE_POINTS


def finished_around(f: Finding, scan: JobScan) -> bool:
    """Is this an undatable line of a node's kernel or system log, on a node whose every training rank said it
    finished well? Such a line with no time of its own (dmesg in seconds since a boot it does not state, or without
    its prefix, a syslog without a year) cannot be put before or after anything; but that log speaks for the host,
    which matters to the job only through its processes: when each training rank of the node went on to report a
    good finish, whenever the host printed it, it stopped none of them. A line of the job's own processes (a
    controller's traceback in its .err file) is not such a line: that process may have failed while ranks finished."""
    r = f.records[0] if f.records else None
    if r is None or not (r.source == "kernel" or is_kernel_log(r.file)) or f.node is None or own_time(r) is not None \
            or any(p.file == r.file for p in scan.metrics):
        return False
    ranks = {p.rank for p in scan.metrics if p.kind == "train" and p.node == f.node}
    done = {m.rank for m in scan.markers if m.kind == "shutdown" and m.detail.get("success") and m.node == f.node}
    if not ranks or not done:
        return False
    return ranks <= done or None in done and None in ranks and len(ranks) == 1


def named_time(f: Finding) -> float:
    """The first-failure time a launcher summary states (torchelastic ``time : 2025-05-21_15:43:03``)."""
    when = (f.data.get("groups") or {}).get("when")
    if when:
        t = parse_elastic_time(str(when))
        if t is not None:
            return t
    return finding_key(f)[0]


def close_to(f: Finding, g: Finding, before: float = 300.0, after: float = 600.0, lines: int = 50) -> bool:
    """Whether ``f`` belongs to the failure ``g`` reports: minutes around it, or near it in the same file."""
    t, t0 = finding_key(f)[0], finding_key(g)[0]
    if math.isfinite(t) and math.isfinite(t0):
        return t0 - before <= t <= t0 + after
    a, b = (f.records[0] if f.records else None), (g.records[0] if g.records else None)
    # near in the file, and not across a concatenation's step back in time from one writer's block to the next
    return a is not None and b is not None and same_block_near(a, b, lines, f.time, g.time)


def around_failure(f: Finding, g: Finding, before: float = 300.0, after: float = 900.0) -> bool:
    """Whether ``f`` is a line of the failure that ``g`` infers (a hang stalls at ``g.time``; its peers time out
    minutes later). A line without a timestamp of its own is dated by the stamped line before it in its file:
    the lines a rank prints as it fails are seldom stamped (a DCGM table, an NCCL WARN after a traceback). A line
    that cannot be dated at all (a kernel log in seconds since a boot it does not state) is taken on the inferred
    node itself."""
    r = f.records[0] if f.records else None
    t = (own_time(r) or r.time) if r is not None else f.time
    t0 = g.time if g.time is not None else finding_key(g)[0]
    if t is None and f.node is not None and f.node == g.node:
        return True
    if t is None or not math.isfinite(t0):
        return close_to(f, g)
    return t0 - before <= t <= t0 + after
