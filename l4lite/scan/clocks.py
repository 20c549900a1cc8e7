"""The job's span and phases on one node's clock when its nodes' clocks disagree by more than the skew threshold.

A node set up apart (another time zone, a clock hours off) stamps its lines hours from its peers'; ``ingest.skew``
measures the offset from lines every node writes at one moment. Record times stay as logged, but what compares
times of several nodes is wrong by the offset: the job's span and its phase spans would stretch a twenty-second
job over five hours of training, and a node five hours behind would read as having stopped progressing five
hours before the job's end (``detect.health``'s hang). Shifted by the measured offsets onto one node's clock (the
failing node's for the incident's facts, the reference's for the hang), they are the job's own again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from l4lite.scan.scanner import JobScan

MIN_LINES = 3  # simultaneous events an offset needs without a strong one (a rendezvous round, a timeout)


@dataclass(frozen=True)
class JobClock:
    """Whose clock the job's facts are given on (None: every time as logged) and the seconds to subtract from
    each node's times to put them on it."""

    node: str | None = None
    offsets: dict[str | None, float] = field(default_factory=dict)

    def shift(self, node: str | None, t: float | None) -> float | None:
        return None if t is None else t - self.offsets.get(node, 0.0)


def job_clock(scan: JobScan, node: str | None) -> JobClock:
    """The clock of ``node`` (else of the skew's reference) when some node's measured offset is over the
    threshold, over twice its lines' disagreement and rests on a strong event or a few lines; else no shift."""
    skew = scan.info.get("clock_skew") or {}
    if not skew.get("exceeds") or skew.get("corrected"):  # a node in another zone was read in the job's time
        return JobClock()
    threshold = float(skew.get("threshold_seconds") or 0.0)
    measured: dict[str | None, float] = {}
    for name, est in (skew.get("nodes") or {}).items():
        seconds = float(est.get("seconds") or 0.0)
        sure = est.get("strong") or int(est.get("lines") or 0) >= MIN_LINES
        if sure and abs(seconds) > max(threshold, 2 * float(est.get("spread") or 0.0)):
            measured[name] = seconds
    if not measured:
        return JobClock()
    ref = skew.get("reference")
    on = node if node is not None and (node in measured or node == ref or node in scan.node_first) else ref
    base = measured.get(on, 0.0)
    nodes = set(scan.node_first) | set(measured)
    offsets = {n: measured.get(n, 0.0) - base for n in nodes}
    return JobClock(on, {n: s for n, s in offsets.items() if s})


def job_span(scan: JobScan, clock: JobClock) -> tuple[float | None, float | None]:
    """The job's first and last times on ``clock``: each node's first line, and the last of the lines the scan
    kept with their node (rule hits, progress points, phase markers), shifted by their node's offset."""
    if not clock.offsets:
        return scan.start_time, scan.end_time
    firsts = [clock.shift(n, t) for n, t in scan.node_first.items()]
    lasts = [clock.shift(n, last[0]) for n, last in scan.node_last.items()]
    lasts += [clock.shift(h.record.node, h.record.time) for h in scan.hits]
    lasts += [clock.shift(p.node, p.time) for p in scan.metrics]
    lasts += [clock.shift(m.node, m.time) for m in scan.markers]
    lo = min((t for t in firsts if t is not None), default=None)
    hi = max((t for t in lasts if t is not None), default=None)
    return lo, hi
