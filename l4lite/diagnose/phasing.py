"""The phase and iteration a finding happened in.

The phase: the innermost frame of its traceback, then the markers of its node, the rule's hint and the job's
markers, in that order; an untimed line is placed by the next stamped line of its own file, and so is its time.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from l4lite.detect.base import Finding
from l4lite.diagnose.evidence import own_time
from l4lite.ingest.errorfile import error_lines, stated_time
from l4lite.ingest.jumps import quarters
from l4lite.ingest.stamp_patterns import parse_elastic_time
from l4lite.records import Record
from l4lite.scan.clocks import JobClock, job_clock
from l4lite.scan.phases import (
    PhaseEvent,
    PhaseTracker,
    evidence_phase,
    loop_frames,
    phase_at,
    phase_from_traceback,
)
from l4lite.scan.scanner import JobScan

ZONE_TOLERANCE = 60.0  # seconds an offset between two nodes' clocks may lie from whole quarter hours
# seconds a file's clock may go back between two of its lines: the interleaved streams of one console. More is
# another file's part of a concatenation (a ``cat`` of a node's files, a ``kubectl logs`` pod's files in turn)
RESTART = 5.0
_MATE_WINDOW = 60.0  # seconds between a frameless failure and its node-mate's traceback that date it alike
_SUMMARY_WINDOW = 600.0  # seconds after an untimed root line in which its node's launcher summary counts
# a progress line that states its step as the run's last: a step counter's word, then N/N (``step 40/40``,
# Megatron's ``iteration       40/      40``); a bar's bare ``40/40`` may count one epoch's batches
_LAST_STEP = r"\b(?:step|iteration|iter|global_step)\s*[:=]?\s*{n}\s*/\s*{n}\b"


def written_by(scan: JobScan, records: Sequence[Record]) -> float | None:
    """The time by which the untimed ones of ``records`` were written: the earliest time of a line the scan kept (a
    rule hit, a progress line, a phase marker) further down the same origin; None when there is none.

    An untimed line inherits the time of the last stamped line above it, which for a rank that logs nothing of its
    own while it trains is its start-up banner: a traceback at step 17 then reads as written at init. Any later
    line of its origin bounds it from above. The origin is the file and, in a file merged from several nodes (a
    ``cat`` or an ``srun --label`` output), the node: a later line of another node's part says nothing of when
    this one was written. Each copy of one error (a console and a rank's ``stderr.log``) bounds it alone: the
    earliest bound of any copy holds. Where the file's clock goes back by more than ``RESTART`` below the line,
    the lines from there on are another file's part of a concatenation, written before: they bound nothing."""
    untimed = [r for r in records if own_time(r) is None]
    if not untimed:
        return None
    files = {r.file for r in untimed}  # only the untimed lines' own files can bound them
    # a rule hit that inherited its time bounds nothing: it was written after its stamp too
    later = [(h.record.file, h.record.line, own_time(h.record), h.record.node) for h in scan.hits
             if h.record.file in files]
    later += [(p.file, p.line, p.time, p.node) for p in scan.metrics if p.file in files]
    later += [(m.file, m.line, m.time, m.node) for m in scan.markers if m.file in files]
    copies = {(r.file, r.line) for r in records}  # a copy further down a merged file is the same line
    later = sorted((x for x in later if x[2] is not None and (x[0], x[1]) not in copies), key=lambda x: x[:2])
    best: float | None = None
    for r in untimed:
        peak: float | None = None
        for file, line, t, node in later:
            if file != r.file or line <= r.end_line or not (node is None or r.node is None or node == r.node):
                continue
            if peak is not None and t < peak - RESTART:
                break  # the file's clock went back: another file's part of a concatenation starts here
            peak = t if peak is None else max(peak, t)
            if best is None or t < best:
                best = t
    return best


def node_trackers(scan: JobScan, clock: JobClock | None = None) -> tuple[dict[str | None, list[PhaseEvent]],
                                                                         list[PhaseEvent]]:
    """Phase events per node, and for the job as a whole (all markers in time order); with ``clock``, each
    node's marker times shifted onto it (``scan.clocks``)."""
    per_node: dict[str | None, PhaseTracker] = {}
    job = PhaseTracker()
    shift = clock.shift if clock is not None else (lambda _node, t: t)
    timed = [(shift(m.node, m.time), m) for m in scan.markers]
    ordered = sorted(timed, key=lambda tm: (tm[0] if tm[0] is not None else math.inf, tm[1].file, tm[1].line))
    for t, m in ordered:
        per_node.setdefault(m.node, PhaseTracker()).feed(m.kind, t, m.file, m.line, m.node, m.iteration)
        job.feed(m.kind, t, m.file, m.line, m.node, m.iteration)
    return {n: t.events for n, t in per_node.items()}, job.events


def finding_trackers(scan: JobScan, f: Finding) -> tuple[dict[str | None, list[PhaseEvent]], list[PhaseEvent]]:
    """``node_trackers`` on the clock of the node that wrote the finding's first line, when the nodes' clocks
    disagree by time zones (``scan.clocks``): its time is on that clock, and the job's markers of a node hours off
    would otherwise place it before training began. An offset of no zone (a clock reset, one wild line) moves
    nothing."""
    node = f.records[0].node if f.records and f.records[0].node is not None else f.node
    clock = job_clock(scan, node)
    zoned = clock.offsets and all(quarters(s, ZONE_TOLERANCE) for s in clock.offsets.values())
    return node_trackers(scan, clock if zoned else None)


def phase_of(f: Finding, scan: JobScan, trackers: dict[str | None, list[PhaseEvent]],
             job_events: list[PhaseEvent], others: Sequence[Finding] = ()) -> str:
    """The phase of a finding: the traceback's innermost frame, the node's markers, the rule's hint, the job's;
    with none of those, whether its lines or the job's other findings (``others``) show training under way."""
    if f.detector == "health" and f.data.get("phase_hint"):
        return str(f.data["phase_hint"])  # a slowdown is measured on training iterations
    r = f.records[0] if f.records else None
    # one failure is often printed several times (the launcher's tee, the rank's stderr, torchelastic's
    # error.json): any copy that carries the traceback says where the program was; error.json holds it on one
    # line, escaped, so a one-line record counts when it carries a whole traceback
    for rec in f.records:
        if rec.end_line > rec.line or rec is not r or "Traceback (most recent call last)" in rec.text:
            tb = phase_from_traceback(rec.text)
            if tb is not None:
                return tb
    phase = _phase_of_lines(f, scan, trackers, job_events, others)
    if phase == "checkpoint" and any(loop_frames(rec.text) for rec in f.records):
        # a save's start marker still standing (its end printed nothing a marker knows), while the failure's own
        # frames are the training loop's: the next step's batches, backward pass or optimizer step
        return "train"
    if phase == "train" and after_last_step(scan, f.time if f.time is not None else (r.time if r else None)):
        return "shutdown"
    return phase


def second_end(t: float) -> float:
    """The latest moment a time may stand for: a timestamp to the whole second covers that whole second."""
    return t + 0.999 if t == int(t) else t


def after_last_step(scan: JobScan, t: float | None) -> bool:
    """Whether time ``t`` falls after the run's last training step: the job's last progress line states its step
    as the run's last (``step 40/40``). The loop was over by then, so what fails later (a rank that never reaches
    the closing barrier, a teardown) fails in the run's shutdown, whether or not the trainer prints an end line."""
    train = [p for p in scan.metrics if p.kind == "train" and p.time is not None and p.iteration]
    if t is None or not train:
        return False
    last = max(train, key=lambda p: (p.time, p.iteration))
    if second_end(t) < last.time:
        return False
    return re.search(_LAST_STEP.format(n=last.iteration), last.text, re.I) is not None


def _phase_of_lines(f: Finding, scan: JobScan, trackers: dict[str | None, list[PhaseEvent]],
                    job_events: list[PhaseEvent], others: Sequence[Finding]) -> str:
    """``phase_of`` when no frame of the finding's traceback names the phase: its time among the markers."""
    r = f.records[0] if f.records else None
    t = f.time if f.time is not None else (r.time if r else None)
    if t is not None:
        t = second_end(t)
    where = (r.file, r.line) if r else (None, None)
    seen = bool(job_events)
    if r is not None and own_time(r) is None:
        job_events = orderable_events(scan, job_events, f)
    phase = _phase_at_time(f, scan, trackers, job_events, t, where, others, seen)
    # An untimed line was written after the stamped line whose time it inherited and before the lines below it:
    # unless a marker of its own file above it says where it was, the phase just before the next known line is
    # the better guess (a silent rank's traceback at step 17 inherits its start-up banner's time). A teardown or
    # a restart after the failure is no phase it failed in.
    bound = written_by(scan, f.records)
    if bound is not None and (t is None or bound > t) and r is not None and \
            not any(e.file == r.file and e.line <= r.line for e in trackers.get(f.node, [])):
        later = _phase_at_time(f, scan, trackers, job_events, bound - 0.001, where, others, seen)
        if later not in ("init", "shutdown"):
            return later
    if phase == "init" and r is not None and own_time(r) is None:
        return _copy_below_marker(f, trackers) or phase
    return phase


def orderable_events(scan: JobScan, events: list[PhaseEvent], f: Finding) -> list[PhaseEvent]:
    """The job's phase events an untimed finding can be placed among by time: those with a time of their own, and
    any of the finding's own files. An untimed line carries the time of the last stamped line above it, often
    its launcher's start-up; so does another node's untimed marker (Megatron's ``training ...``), with that node's
    own start-up time: the two times say nothing of which line was written first."""
    lent = {(m.file, m.line) for m in scan.markers if m.detail.get("untimed")}
    own = {r.file for r in f.records}
    return [e for e in events if e.file in own or (e.file, e.line) not in lent]


def _copy_below_marker(f: Finding, trackers: dict[str | None, list[PhaseEvent]]) -> str | None:
    """For an untimed line read as start-up: the phase of the last marker above another copy of it in that
    copy's own file (a rank's stderr.log copy inherits its start-up banner's time, the launcher's tee copy sits
    below the training lines it followed); None when the line has no copy elsewhere, or its own file has a
    marker above it (its place there already decided), or no copy is below a marker of a later phase."""
    events = trackers.get(f.node, [])
    first = f.records[0]
    if any(e.file == first.file and e.line <= first.line for e in events):
        return None
    best: PhaseEvent | None = None
    for rec in f.records[1:]:
        if rec.file == first.file:
            continue
        above = [e for e in events if e.file == rec.file and e.line <= rec.line]
        last = max(above, key=lambda e: e.line) if above else None
        if last is not None and (best is None or last.line > best.line):
            best = last
    return best.phase if best is not None and best.phase not in ("init", "shutdown") else None


def _phase_at_time(f: Finding, scan: JobScan, trackers: dict[str | None, list[PhaseEvent]],
                   job_events: list[PhaseEvent], t: float | None, where: tuple[str | None, int | None],
                   others: Sequence[Finding], seen: bool) -> str:
    """The phase at time ``t`` (or at ``where`` in a file): the node's markers, the rule's hint, the job's, then
    what the lines of the finding and of ``others`` say. ``seen``: whether the job has phase markers at all
    (``job_events`` may hold only those the finding can be placed among)."""
    node_phase = phase_at(trackers.get(f.node, []), t, *where) if f.node in trackers else None
    hint = f.data.get("phase_hint")
    if node_phase in ("checkpoint", "eval", "load", "shutdown"):
        return node_phase
    if t is not None:  # checkpoints and evaluations are often logged by rank 0 alone: the job's markers say
        job_phase = phase_at(job_events, t)
        if job_phase in ("checkpoint", "eval"):
            return job_phase
    if hint:
        return str(hint)
    if node_phase == "init" and t is not None and phase_at(job_events, t) == "train" and \
            (any(evidence_phase(r.text) == "train" for r in f.records) or _node_mate_trained(f, others, t)):
        # a rank that logs nothing while it trains leaves its start-up as its node's last marker; the job was
        # training by then and the failure's own frames are the training loop's (a batch handed out, a backward),
        # or, for a line of no frames (the kernel's OOM kill), those of another process of its node at that moment
        return "train"
    if node_phase:
        return node_phase
    job_phase = phase_at(job_events, t, *where)
    if job_phase:
        return job_phase
    if f.data.get("signal") in ("nan", "loss_spike", "loss_scale_collapse", "slowdown", "straggler", "hang"):
        return "train"
    if scan.progress:
        return "train"
    # Nothing in the job says where it was: what the lines of the findings say, the primary's first; with no word
    # either way, training, where most failures of a large job happen (three in four in L4's study).
    said = [evidence_phase(r.text) for g in (f, *others) for r in g.records]
    return next((p for p in said if p is not None), "train" if not seen else "init")


def _node_mate_trained(f: Finding, others: Sequence[Finding], t: float) -> bool:
    """Whether another process of the finding's node, failing within ``_MATE_WINDOW`` of ``t``, shows the training
    loop in its own frames: a process killed from outside (the kernel's OOM killer) prints no traceback, while its
    node-mate's report of the peer it lost says where the node's processes were."""
    return any(r.node == f.node and r.time is not None and abs(r.time - t) <= _MATE_WINDOW and
               evidence_phase(r.text) == "train" for g in others if g is not f for r in g.records)


def iteration_of(scan: JobScan, primary: Finding, failure_time: float | None) -> int | None:
    """The iteration a fault happened in: a health signal's own, else the last training step logged by then."""
    if primary.data.get("signal") in ("nan", "loss_spike", "loss_scale_collapse", "val_rising") and \
            primary.data.get("iteration") is not None:
        return int(primary.data["iteration"])
    best: int | None = None
    slack = 1.0
    for p in scan.metrics:
        if p.kind != "train" or p.iteration is None:
            continue
        if failure_time is not None and p.time is not None and p.time > failure_time + slack:
            continue
        if best is None or p.iteration > best:
            best = p.iteration
    if best is None:
        its = [p.last_iteration for p in scan.progress.values() if p.last_iteration is not None]
        best = max(its) if its else None
    return best


def failure_time_of(scan: JobScan, primary: Finding, findings: Sequence[Finding] = ()) -> float | None:
    """When the fault happened.

    An untimed root line carries the time of the last stamped line above it, which for a rank that logs nothing
    while it trains is its start-up banner. Two later facts bound it better, up to the next known line of the
    root's file: the job's last training progress (a synchronous job does not step without the failing rank)
    and the first-failure time the node's launcher summary states (torchelastic's ``time :``, to the second).
    A root with no time at all, a rank's error file, is dated by the epoch seconds the file states."""
    first = primary.records[0] if primary.records else None
    t = primary.time if primary.time is not None else (first.time if first else None)
    if t is None:  # an error file read alone states its time inside it, as it does read within a merged stream
        stated = min((w for x in primary.records if error_lines(x.text) is not None
                      and (w := stated_time(x.text)) is not None), default=None)
        # else the first failure its node's launcher states (a root file whose stamps no reader reads)
        return stated if stated is not None else min(summary_times(scan, primary, findings), default=None)
    # the copy whose time it is (a rank's stderr.log copy of the console's line may have none)
    r = next((x for x in primary.records if x.time == t), None) if t is not None else None
    if r is None or own_time(r) is not None:
        return t
    bound = written_by(scan, [x for x in primary.records if x.time == t])  # every copy of the line bounds it
    # a later line that inherited the same time bounds nothing: then only the launcher's summary, within minutes
    hi = bound if bound is not None and bound > t else t + _SUMMARY_WINDOW
    later = [p.time for p in scan.metrics if p.kind == "train" and p.time is not None and t < p.time <= hi] \
        if hi == bound else []
    later += [said for said in summary_times(scan, primary, findings) if t < said <= hi]
    return max(later, default=t)


def summary_times(scan: JobScan, primary: Finding, findings: Sequence[Finding]) -> list[float]:
    """The first-failure times the launcher summaries of the primary's node state (torchelastic's ``time :``), in
    the job's time: the summary states it on its node's clock, as written, so a node read in the job's time from
    another zone (``ingest.zones``) has it read back alike."""
    shift = float((scan.info.get("node_shifts") or {}).get(primary.node or "", 0.0))
    out = []
    for f in findings:
        when = (f.data.get("groups") or {}).get("when") if f.node == primary.node else None
        said = parse_elastic_time(str(when)) if when else None
        if said is not None:
            out.append(said - shift)
    return out
