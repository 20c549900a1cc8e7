"""Assemble the incident from a verdict: evidence entries, phases, the last complete checkpoint, what to do now,
and the one-sentence summary. Plain functions over plain data; nothing here reads logs.
"""

from __future__ import annotations

import math
import os
import re
from datetime import UTC, datetime
from typing import Any

from l4lite.detect.base import Finding
from l4lite.diagnose.allwaited import WHY as ALL_WAITED
from l4lite.diagnose.copies import collapse_copies
from l4lite.diagnose.errorfiles import error_files
from l4lite.diagnose.evidence import raised_in_destructor
from l4lite.diagnose.incident import EVIDENCE_TEXT_CHARS, Evidence, Incident, PhaseSpan, Suspect
from l4lite.diagnose.localize import Verdict
from l4lite.diagnose.phasing import node_trackers, second_end
from l4lite.diagnose.stopped import REASON_RULES
from l4lite.ingest.attribution import KUBECTL_PREFIX
from l4lite.ingest.relay import RANK_QUOTE, relayed_from_afar
from l4lite.records import Record
from l4lite.scan.clocks import JobClock, job_clock, job_span
from l4lite.scan.jobscan import job_nodes
from l4lite.scan.phases import spans
from l4lite.scan.scanner import JobScan

CATEGORY_LABELS = {
    "gpu_hardware": "GPU hardware", "network": "network", "storage": "storage", "host": "host", "oom": "out-of-memory",
    "numerical": "numerical", "data": "data", "software": "software", "user_config": "user configuration",
    "unknown": "unexplained",
}
MAX_EVIDENCE = 150

_CATEGORY_ACTION = {
    "gpu_hardware": "Drain {node} and run GPU diagnostics (nvidia-smi -q, dcgmi diag -r 3) before it takes jobs again.",
    "network": "Drain {node} and check its fabric links (ibstat, the switch port and cable, mlx5 counters).",
    "storage": "Check the file system {node} writes to (mount state, free space and quota, server health).",
    "host": "Drain {node} and check the host (memory, kernel log, power and CPU).",
    "oom": "Reduce the memory footprint on {node} (micro-batch size, activation checkpointing) or look for a leak.",
    "data": "Inspect the input data the job was reading on {node} when it failed.",
    "software": "Read the first traceback on {node}; it is the failing code path.",
    "unknown": "Take stack dumps (py-spy dump) on {node} before the job is killed, then drain it for diagnostics.",
}


def iso(t: float | None) -> str | None:
    """ISO 8601 UTC for an epoch time."""
    if t is None or not math.isfinite(t):
        return None
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def relative(file: str, root: str) -> str:
    """A record's file relative to the job root (records usually carry it so already)."""
    if root and os.path.isabs(file):
        try:
            rel = os.path.relpath(file, root)
            if not rel.startswith(".."):
                return rel
        except ValueError:
            pass
    return file


# ---------------------------------------------------------------------- evidence
def build_evidence(scan: JobScan, verdict: Verdict, max_entries: int = MAX_EVIDENCE) -> list[Evidence]:
    out: list[Evidence] = []
    seen: set[tuple[str, int]] = set()
    lasts: dict[int, str] = {}  # an entry's last line, whole (its text is cut at EVIDENCE_TEXT_CHARS)
    for f, role, records in zip(verdict.findings, verdict.roles, verdict.records, strict=True):
        if verdict.status != "incident" and role == "root":
            role = "symptom"
        if verdict.scope == "node":  # the node's own lines before the driver's copies of them (Ray)
            records = [r for r in records if not relayed_from_afar(r.text)] or records
        for r in records:
            key = (r.file, r.line)
            if key in seen:
                continue
            seen.add(key)
            out.append(_evidence(scan, f, r, role))
            lasts[id(out[-1])] = r.text.rstrip("\n").rsplit("\n", 1)[-1]
            if len(out) >= max_entries:
                return in_pieces(scan, collapse_copies(tidied(out, lasts)))
        if role == "root" and verdict.status == "incident" and f.detector != "rules":
            # a rule's finding has the copies its rule matched; lines a detector chose without one (the timeouts
            # around a stuck rank) bring the rank's error file, which repeats them in words no rule knows
            for r in error_files(scan, records):
                if (r.file, r.line) not in seen:
                    seen.add((r.file, r.line))
                    out.append(_evidence(scan, f, r, role))
    return in_pieces(scan, collapse_copies(tidied(out, lasts)))


def in_pieces(scan: JobScan, entries: list[Evidence]) -> list[Evidence]:
    """Entries of a rotated log, worked out on its stream's line numbers, named by the piece each is in (what
    the user opens), in place."""
    if scan.streams.starts:
        for e in entries:
            e.file, e.line, e.end_line = scan.streams.piece_of(e.file, e.line, e.end_line)
    return entries


# torchrun's "[default0]:[rank0]:" stream prefixes, after an ``srun --label`` label ("0: ") or a ``kubectl logs
# --prefix`` pod ("[pod/NAME/CONTAINER] ") in a merged stream
_PREFIX = rf"^(?:{KUBECTL_PREFIX.pattern})?(?:\s*\d{{1,6}}: )?(?:\[[^\]\n]{{0,40}}\]:)*\s*"
_FRAME = re.compile(_PREFIX + r'File "[^"\n]+", line \d+')
_RAISED = re.compile(_PREFIX + r"(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Failure)\b")
FRAME_REACH = 60  # lines from a traceback's frame down to its exception line


def whole_tracebacks(entries: list[Evidence]) -> list[Evidence]:
    """Root lines that are frames of one traceback, shown apart from its exception line just below them in the
    same file and rank, become one entry with it: the failure is the whole block, frames to exception line."""
    drop: set[int] = set()
    for k, e in enumerate(entries):
        if e.role != "root" or (e.end_line or e.line) != e.line or not _FRAME.match(e.text):
            continue
        below = [x for x in entries if x is not e and x.role == "root" and x.file == e.file and x.rank == e.rank
                 and 0 < (x.end_line or x.line) - e.line <= FRAME_REACH and _RAISED.match(x.text.splitlines()[-1] if x.text else "")]
        if below:
            target = min(below, key=lambda x: x.line)
            target.end_line = target.end_line or target.line
            target.line = min(target.line, e.line)
            drop.add(k)
    return [e for k, e in enumerate(entries) if k not in drop]


# torch's ExceptionWrapper re-raising in the parent what a DataLoader worker, a replica or a pin-memory thread
# raised: "RuntimeError: Caught JSONDecodeError in DataLoader worker process 1." then "Original Traceback ..."
_CAUGHT = re.compile(r"\bCaught ([A-Z]\w*) in (?:DataLoader worker process|replica|pin memory thread)\b")


def rewrapped_tracebacks(entries: list[Evidence], lasts: dict[int, str] | None = None) -> list[Evidence]:
    """A root traceback that re-raises an error caught in a worker (``_CAUGHT``) and the root entry just below
    it in the same file and rank whose exception line raises that error (the worker's original traceback, quoted
    below the re-raise) are one failure: one entry, from the re-raise's first line to the original's exception.
    ``lasts``: entries' whole last lines by ``id``, where an entry's text was cut short."""
    drop: set[int] = set()
    lasts = lasts or {}
    for e in entries:
        last = (lasts.get(id(e)) or (e.text.splitlines()[-1] if e.text else "")) if e.role == "root" else ""
        m = _CAUGHT.search(last)
        if m is None:
            continue
        end = e.end_line or e.line
        below = [(k, x) for k, x in enumerate(entries) if k not in drop and x is not e and x.role == "root"
                 and x.file == e.file and x.rank == e.rank and 0 < (x.end_line or x.line) - end <= FRAME_REACH
                 and re.search(rf"\b{m[1]}\b", x.text.splitlines()[-1] if x.text else "")]
        if below:
            k, x = min(below, key=lambda kx: kx[1].line)
            e.end_line = x.end_line or x.line
            drop.add(k)
    return [e for k, e in enumerate(entries) if k not in drop]


def tidied(entries: list[Evidence], lasts: dict[int, str]) -> list[Evidence]:
    """The root entries as one failure each: a traceback with its frames, a re-raise with the error it wraps, a
    report with the ranks' errors it quotes, and a destructor's ignored error after the failure left out of root."""
    return after_destructors(quoting_reports(rewrapped_tracebacks(whole_tracebacks(entries), lasts)))


QUOTE_GAP = 2  # lines between a report's exception line and the first rank's error it quotes


def quoting_reports(entries: list[Evidence]) -> list[Evidence]:
    """A collective's report of every rank's failure (torch.distributed.checkpoint's ``CheckpointException ranks:
    dict_keys([0, 1])``) raised on a rank, with each rank's own traceback quoted just below it under a header
    naming the rank (``Traceback (most recent call last): (RANK 0)``, ``ingest.relay.RANK_QUOTE``), is not a
    failure apart from the errors it quotes: the report's root entry and the first quote's root entry below it in
    the same file and rank become one entry, report to quoted exception. The quotes keep their own entries."""
    drop: set[int] = set()
    for k, e in enumerate(entries):
        if e.role != "root" or RANK_QUOTE.search(e.text.split("\n", 1)[0]):
            continue  # a quote is not a report: each rank's quoted error keeps its entry
        end = e.end_line or e.line
        below = [x for x in entries if x is not e and x.role == "root" and x.file == e.file and x.rank == e.rank
                 and 0 < x.line - end <= QUOTE_GAP and RANK_QUOTE.search(x.text.split("\n", 1)[0])]
        if below:
            x = min(below, key=lambda x: x.line)
            x.end_line = x.end_line or x.line
            x.line = e.line
            drop.add(k)
    return [e for k, e in enumerate(entries) if k not in drop]


def after_destructors(entries: list[Evidence]) -> list[Evidence]:
    """A root traceback whose innermost frame is a ``__del__`` is an error a destructor met while the objects of
    a failure were torn down (an object whose ``__init__`` raised has no attribute to delete): Python printed it
    and ignored it, so it ended nothing. When another root entry says what failed, it is a cascade of that
    failure; alone it stays root (nothing better says what happened). In place."""
    roots = [e for e in entries if e.role == "root"]
    ignored = [e for e in roots if raised_in_destructor(e.text)]
    if ignored and len(ignored) < len(roots):
        for e in ignored:
            e.role = "cascade"
    return entries


def _evidence(scan: JobScan, f: Finding, r: Record, role: str) -> Evidence:
    return Evidence(file=relative(r.file, scan.root), line=r.line, node=r.node or f.node,
                    rank=r.rank if r.rank is not None else f.rank, time=iso(r.time), text=r.text[:EVIDENCE_TEXT_CHARS],
                    template_id=r.template_id, rule=f.rule, role=role, score=round(float(f.score), 3),
                    end_line=r.end_line, source=r.source, gpu=r.gpu if r.gpu is not None else f.gpu,
                    category=f.category, explain=f.explain, count=f.count)


# ---------------------------------------------------------------------- phases and checkpoints
def phase_spans(scan: JobScan, clock: JobClock | None = None) -> list[PhaseSpan]:
    """The job's phases, on ``clock`` when its nodes' clocks disagree (``scan.clocks``)."""
    clock = clock or JobClock()
    _, events = node_trackers(scan, clock)
    return [PhaseSpan(name, iso(start), iso(end)) for name, start, end in spans(events, job_span(scan, clock)[1])]


TIE_SECONDS = 1.0  # many trainers stamp whole seconds: a save this close to the failure may be on either side


def _before(save: dict[str, Any], failure_time: float | None, failure_iteration: int | None, diverged: bool) -> bool:
    """Whether a save was written before the failure. Its time decides when it is clear; within a second of the
    failure, or untimed, its iteration does. After a divergence a save of the diverging iteration already holds
    its weights, so it is not before."""
    t = save["time"]
    if failure_time is not None and t is not None:
        # a failure timed to the second (a stuck rank's last second) may come anywhere in that second
        if t > second_end(failure_time):
            return False
        if t < failure_time - TIE_SECONDS:
            return True
    it = save["iteration"]
    if failure_iteration is not None and it is not None:
        return it < failure_iteration if diverged else it <= failure_iteration
    return True


def _near_after(save: dict[str, Any], failure_time: float | None) -> bool:
    return failure_time is not None and save["time"] is not None and 0 < save["time"] - failure_time <= TIE_SECONDS


def checkpoints(scan: JobScan, failure_time: float | None, failure_iteration: int | None = None,
                diverged: bool = False) -> dict[str, Any]:
    """The last checkpoint saved completely before the failure, a save cut short by it, and the saves written
    after it (``diverged``: the failure is a divergence, so those hold diverged weights)."""
    saves: list[dict[str, Any]] = []
    ordered = sorted((m for m in scan.markers if m.kind in ("checkpoint", "checkpoint_saved")),
                     key=lambda m: (m.time if m.time is not None else math.inf, m.file, m.line))
    for m in ordered:
        path = m.detail.get("path")
        same = next((s for s in reversed(saves) if m.iteration is not None and s["iteration"] == m.iteration), None)
        if same is None and m.kind == "checkpoint_saved":
            same = next((s for s in reversed(saves) if not s["complete"]), None)
        if same is None:
            same = {"iteration": m.iteration, "time": m.time, "path": path, "complete": False}
            saves.append(same)
        if same["path"] is None and path:
            same["path"] = path
        if same["iteration"] is None and m.iteration is not None:
            same["iteration"] = m.iteration
        if m.kind == "checkpoint_saved":
            same["complete"] = True
            same["done_time"] = m.time
    train = [p for p in scan.metrics if p.kind == "train"]
    for s in saves:
        if s["complete"]:
            continue
        for p in train:  # training went on after the save: it finished
            if (s["iteration"] is not None and p.iteration is not None and p.iteration > s["iteration"]) or \
                    (s["time"] is not None and p.time is not None and p.time > s["time"] + 1.0 and
                     s["iteration"] is None):
                s["complete"] = True
                break
    before = [s for s in saves if _before(s, failure_time, failure_iteration, diverged)]
    after = [s for s in saves if s not in before and s["complete"]]
    done = [s for s in before if s["complete"]]
    last = done[-1] if done else None
    cut = before[-1] if before and not before[-1]["complete"] else None
    if cut is None:  # a save that never finished, begun in the second after the failure's first line (the full
        # disk's error is logged as the save starts): the one the failure cut short
        cut = next((s for s in saves if s not in before and not s["complete"] and _near_after(s, failure_time)), None)

    def fmt(s: dict[str, Any]) -> dict[str, Any]:
        return {"iteration": s["iteration"], "time": iso(s["time"]), "path": s["path"], "complete": s["complete"]}

    return {"last_saved": fmt(last) if last else None, "in_progress": fmt(cut) if cut else None,
            "saves_seen": len(saves), "saved_after": [fmt(s) for s in after[:5]]}


# ---------------------------------------------------------------------- words
def recommendations(verdict: Verdict, checkpoint: dict[str, Any], matched: dict[str, Any] | None) -> list[str]:
    out: list[str] = []
    p = verdict.primary
    if matched:
        out.append(f"This failure matches confirmed fault #{matched.get('fault_id')}: {matched.get('cause')}.")
    if p is not None and p.action:
        out.append(p.action)
    if verdict.status == "incident" and p is not None:
        signal = p.data.get("signal")
        if verdict.scope == "node" and p.node:
            if signal == "stuck_rank" and p.action and verdict.category in ("software", "unknown"):
                pass  # it printed no error: its own action says which stacks to dump, and no traceback exists
            elif signal == "hang":
                out.append(f"Take stack dumps (py-spy dump --pid) of the ranks on {node_name(p.node)} before killing the job;"
                           " then drain it for diagnostics.")
            else:
                out.append(_CATEGORY_ACTION.get(verdict.category or "unknown",
                                                _CATEGORY_ACTION["unknown"]).format(node=node_name(p.node)))
        elif verdict.alike:
            out.append("Every node failed with the same error: fix what they share (the file, data, configuration "
                       "or code the error names) and resubmit; draining a node would not help.")
        elif verdict.category == "numerical" and str(signal).startswith("loss_scale"):
            out.append("The loss scaler skipped every overflowing step, so the weights stopped changing rather "
                       "than diverged: find what leaves fp16's range (a layer's activations or gradients, a data "
                       "batch), or train in bf16; a checkpoint resumes with its scaler's collapsed scale unless "
                       "the scale is reset.")
        elif verdict.category == "numerical":
            out.append("Resume from a checkpoint before the divergence with a lower learning rate, or skip the "
                       "data batches around it; check the loss scale and the gradient clipping.")
        elif verdict.category == "user_config":
            out.append("Fix the job's configuration or code named in the first error and resubmit; no node is at "
                       "fault.")
        elif signal == "hang":
            out.append("Take stack dumps (py-spy dump --pid) of every rank before killing the job: the hang has "
                       "no error line.")
        last = checkpoint.get("last_saved")
        cut = checkpoint.get("in_progress")
        if cut:
            at = f" at iteration {cut['iteration']}" if cut.get("iteration") is not None else ""
            out.append(f"Do not resume from the checkpoint{at}"
                       f"{' (' + cut['path'] + ')' if cut.get('path') else ''}: it was being written when the job "
                       "failed and is incomplete.")
        if last:
            where = f" at {last['path']}" if last.get("path") else ""
            which = (f"the checkpoint at iteration {last['iteration']}" if last.get("iteration") is not None
                     else "the last checkpoint")
            out.append(f"Resume from {which}{where}"
                       + (", after excluding the suspect node." if verdict.scope == "node" and p.node else "."))
        elif checkpoint.get("saved_after"):
            its = ", ".join(str(s["iteration"]) for s in checkpoint["saved_after"] if s.get("iteration") is not None)
            which = f" (iteration {its})" if its else ""
            if str(signal).startswith("loss_scale"):
                out.append(f"Every checkpoint seen{which} was written after the overflows began: skipped steps "
                           "change nothing, so it holds the weights of before them, with the collapsed loss scale; "
                           "reset the scale when resuming from it.")
            else:
                harm = ("they hold the diverged weights" if verdict.category == "numerical"
                        else "check them before resuming")
                out.append(f"Every checkpoint seen{which} was written after the failure: {harm}; resume from one "
                           "saved before it (an earlier run's), or from the start.")
        elif checkpoint.get("saves_seen", 0) == 0:
            out.append("No checkpoint save was seen in the logs: check the checkpoint directory before resuming.")
    seen: set[str] = set()
    return [r for r in out if r and not (r in seen or seen.add(r))][:8]  # type: ignore[func-returns-value]


def node_name(node: str) -> str:
    """A node key as a person reads it (the scan keys lines without a node by rank, or as 'unknown')."""
    if node == "unknown":
        return "the node that logged it (its name is not in the logs)"
    if node.startswith("rank:"):
        return f"the node of rank {node[5:]}"
    return node


def summary(scan: JobScan, verdict: Verdict, cascades: int) -> str:
    n_nodes = job_nodes(scan.node_last)
    if verdict.status != "incident" or verdict.primary is None:
        its = [p.last_iteration for p in scan.progress.values() if p.last_iteration is not None]
        upto = f" trained to iteration {max(its)}" if its else ""
        return (f"No incident: {n_nodes} node{'s' if n_nodes != 1 else ''}{upto} with no root-cause signature, no "
                "numerical problem and no hang.")
    p = verdict.primary
    when = f" at {iso(verdict.failure_time)}" if verdict.failure_time is not None else ""
    at = f" at iteration {verdict.iteration}" if verdict.iteration is not None else ""
    what = p.explain.rstrip(".")
    if p.data.get("all_waited"):  # the category came from every rank's wait, not from this line's words
        what += f"; the category is read from the ranks: {ALL_WAITED}"
    label = CATEGORY_LABELS.get(verdict.category or "unknown", verdict.category or "unexplained")
    if verdict.scope == "node" and p.node:
        head = f"{label} fault on {node_name(p.node)} during {verdict.phase}{at}{when}: {what}"
    elif verdict.alike:
        head = (f"job-wide {label} fault during {verdict.phase}{at}{when}: {what}; every node "
                f"({len(verdict.alike)}) failed with this same error at about the same time, which points to what "
                "they share (the checkpoint, the data set, the configuration or the code), not to one node; no "
                "node is blamed")
        cascades = 0  # the other nodes' errors are this error, not cascades of it
    else:
        head = f"job-wide {label} fault during {verdict.phase}{at}{when}: {what}; no node is blamed"
    if cascades:
        head += f"; {cascades} other node{'s' if cascades != 1 else ''} logged cascading errors"
    ended = next((f for f, role in zip(verdict.findings, verdict.roles, strict=False)
                  if f.rule in REASON_RULES and role != "root" and f is not p), None)
    if ended is not None:  # the on-call engineer must not read the limit as the cause, nor miss it
        said = ended.explain.rstrip(".")
        head += f"; afterwards {said[0].lower() + said[1:]}, a consequence: the job had already stopped"
    return head[0].upper() + head[1:] + "."


def build_incident(scan: JobScan, verdict: Verdict, *, seconds: float = 0.0, matched: dict[str, Any] | None = None,
                   extra: dict[str, Any] | None = None) -> Incident:
    evidence = build_evidence(scan, verdict)
    checkpoint = checkpoints(scan, verdict.failure_time, verdict.iteration, verdict.category == "numerical")
    primary_node = verdict.primary.node if verdict.primary is not None else None
    clock = job_clock(scan, primary_node if verdict.status == "incident" else None)
    cascade_nodes = {e.node for e in evidence if e.role == "cascade" and e.node and e.node != primary_node}
    acc = scan.accounting
    stats = {"files": acc.files, "lines_read": acc.lines_read, "records": acc.records,
             "lines_skipped": dict(sorted(acc.lines_skipped.items())), "templates": len(scan.templates),
             "seconds": round(seconds, 3), "lines_in_records": acc.lines_in_records,
             "lines_unwrapped": acc.lines_unwrapped,
             "files_skipped": dict(sorted(acc.files_skipped.items())), "warnings": list(acc.warnings[:50]),
             "nodes": job_nodes(scan.node_last), "rule_hits": sum(scan.hit_totals.values())}
    incident = Incident(
        status=verdict.status,
        category=verdict.category if verdict.status == "incident" else None,
        phase=verdict.phase if verdict.status == "incident" else None,
        iteration=verdict.iteration if verdict.status == "incident" else _last_iteration(scan),
        failure_time=iso(verdict.failure_time) if verdict.status == "incident" else None,
        summary=summary(scan, verdict, len(cascade_nodes)),
        suspects=[Suspect(node=s.node, score=s.score, reasons=s.reasons, category=s.category) for s in verdict.suspects],
        evidence=evidence,
        phases=phase_spans(scan, clock),
        checkpoint=checkpoint,
        recommendations=recommendations(verdict, checkpoint, matched),
        stats=stats,
        job=_job(scan, clock),
        scope=verdict.scope if verdict.status == "incident" else None,
        confidence=verdict.confidence,
        matched_fault=matched,
        hang=hang_section(verdict),
        extra=extra or {},
    )
    return incident


def _job(scan: JobScan, clock: JobClock) -> dict[str, Any]:
    """The job's facts; the clock skew between its nodes (``ingest.skew``) on its own, as it qualifies every time.
    Its span is on one node's clock (``clock``, named) when the nodes' clocks disagree."""
    info = dict(scan.info)
    skew = info.pop("clock_skew", None)
    start, end = job_span(scan, clock)
    job = {"root": scan.root, "nodes": job_nodes(scan.node_last), "start": iso(start), "end": iso(end)}
    if clock.offsets:
        job["clock"] = clock.node
    if skew:
        job["clock_skew"] = skew
    job["info"] = info
    return job


def hang_section(verdict: Verdict) -> dict[str, Any] | None:
    """The stuck rank's table when a hang finding leads the verdict (or confirms its node)."""
    if verdict.status != "incident" or verdict.primary is None:
        return None
    hangs = [f for f in verdict.findings if f.detector == "hang" and f.data.get("hang")]
    lead = next((f for f in hangs if f is verdict.primary), None) or next(
        (f for f in hangs if f.node is not None and f.node == verdict.primary.node), None)
    return dict(lead.data["hang"]) if lead is not None else None


def _last_iteration(scan: JobScan) -> int | None:
    its = [p.last_iteration for p in scan.progress.values() if p.last_iteration is not None]
    return max(its) if its else None
