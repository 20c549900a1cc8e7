"""Does ``l4lite tail`` say what ``l4lite analyze`` says, on real jobs?

An on-call engineer who watched the live alert and then reads the postmortem must not see two faulty nodes or
two categories. For every job of ``fixtures/real_jobs`` (or the jobs named) this compares ``analyze`` with

* ``once``: ``tail --once`` on the finished job;
* ``live``: a replay. The job's files are written into a temporary folder in time order, in ``--chunks`` pieces
  (each file gets the lines whose time is up to the chunk's cut, appended as a writer would, its write time set
  to its last line's), and one tail follows the job's entries there (those ``analyze`` is given), polling after
  each piece; its final verdict is taken;
* ``resume`` (``--resume``): the same replay, with a ``tail --once --state DIR`` per piece, the verdict of the
  last one taken.

``--transform NAME`` runs every mode on the job archived another way (``benchmarks/archive_variants.py``'s
transforms: a node's clock stepped back, a node in another zone, a merged stream, ...), written to a temporary
folder first; a transform fed on stdin is left out (``tail`` follows files).

``--inside`` moves each file's cuts to the worst place for a reader: inside a multi-line record (a traceback being
written), at the middle of the first one between this cut and the next; ``--chunks 10`` cuts more often.

on the top node, phase, category and iteration. Prints each disagreement and the totals.

    python benchmarks/live_parity.py                         # all real jobs, modes once and live
    python benchmarks/live_parity.py --jobs 001 045 --resume
    python benchmarks/live_parity.py --resume --chunks 10 --inside   # harder cut points
    python benchmarks/live_parity.py --jobs 119 126 --transform clock-step-back   # a job archived another way
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
JOBS = ROOT / "fixtures" / "real_jobs"
FIELDS = ("node", "phase", "category", "iteration")


@dataclass(frozen=True)
class Verdict:
    """What the two modes are compared on."""

    status: str | None
    node: str | None
    phase: str | None
    category: str | None
    iteration: int | None

    @classmethod
    def of(cls, incident: Any) -> Verdict:
        if incident is None:
            return cls(None, None, None, None, None)
        if not incident.is_incident:
            return cls(incident.status, None, None, None, None)
        node = incident.suspects[0].node if incident.suspects and incident.scope != "global" else None
        return cls(incident.status, node, incident.phase, incident.category, incident.iteration)

    def differs(self, other: Verdict) -> list[str]:
        fields = ("status", *FIELDS)
        return [f for f in fields if getattr(self, f) != getattr(other, f)]


def job_inputs(job: Path) -> list[Path]:
    """The job's entries as the scoreboard hands them to ``analyze`` (no ground truth, no generator notes)."""
    from l4lite.evaluate.scoreboard import job_paths

    return [Path(p) for p in job_paths(job)]


def analyze_verdict(job: Path) -> Verdict:
    from l4lite.api import AnalyzeOptions, analyze

    return Verdict.of(analyze([str(p) for p in job_inputs(job)], AnalyzeOptions(heatmap=False)))


def tail_once(paths: Sequence[str], state: str | None = None) -> Any:
    from l4lite.live.tail import Tailer, TailOptions

    return Tailer(TailOptions(paths=list(paths), once=True, state_dir=state)).run()


def analyze_nodes(job: Path) -> dict[tuple[str, int], str | None]:
    """(file path, first line) -> node of every record ``analyze`` reads of the job."""
    from l4lite.ingest.files import discover
    from l4lite.ingest.reader import IngestOptions, read_file
    from l4lite.options import AnalyzeOptions
    from l4lite.records import Accounting
    from l4lite.scan.job import job_context

    accounting = Accounting()
    found = discover([str(p) for p in job_inputs(job)], accounting)
    ingest = IngestOptions().use(job_context(found.files, AnalyzeOptions(), accounting))
    return {(os.path.abspath(f.path), r.line): r.node for f in found.files for r in read_file(f, ingest, accounting)}


def tail_nodes(paths: Sequence[str]) -> dict[tuple[str, int], str | None]:
    """(file path, first line) -> node of every record ``tail --once`` reads (no diagnosis)."""
    from l4lite.live.tail import Tailer, TailOptions

    got: dict[tuple[str, int], str | None] = {}

    class Recording(Tailer):
        def _process(self, record: Any) -> None:
            super()._process(record)
            got[(os.path.abspath(os.path.join(self.follower.root, record.file)), record.line)] = record.node

        def diagnose(self, *, background: bool = False) -> bool:
            return False

    Recording(TailOptions(paths=list(paths), once=True)).run()
    return got


def record_parity(job: Path) -> Counter[str]:
    """How many of the records ``analyze`` reads ``tail --once`` reads from the same line, and places alike."""
    batch, live = analyze_nodes(job), tail_nodes([str(p) for p in job_inputs(job)])
    same = [k for k in batch if k in live]
    return Counter(records=len(batch), matched=len(same), placed=sum(batch[k] == live[k] for k in same),
                   unplaced=sum(batch[k] is not None and live[k] is None for k in same))


# ------------------------------------------------------------------------------------------------ the replay
@dataclass
class FilePlan:
    """One file of the job: its lines and, per chunk, how many of them are written by then."""

    rel: str
    lines: list[bytes]
    cuts: list[int]
    mtime: float
    times: list[float | None]  # write time after each chunk


def record_ends(job: Path) -> dict[str, list[tuple[int, float | None]]]:
    """Per file (relative to the job), the (last line, time) of each record, as ``analyze`` reads them."""
    from l4lite.ingest.files import discover
    from l4lite.ingest.reader import IngestOptions, read_file
    from l4lite.options import AnalyzeOptions
    from l4lite.records import Accounting
    from l4lite.scan.job import job_context

    accounting = Accounting()
    found = discover([str(p) for p in job_inputs(job)], accounting)
    context = job_context(found.files, AnalyzeOptions(), accounting)
    ingest = IngestOptions().use(context)
    out: dict[str, list[tuple[int, float | None]]] = {}
    for f in found.files:
        rows = out.setdefault(os.path.relpath(f.path, job), [])
        rows.extend((record.end_line, record.time) for record in read_file(f, ingest, accounting))
    return out


def groups(rows: list[tuple[int, float | None]]) -> list[tuple[int, float | None]]:
    """A file's records as a writer writes them: each timed record with the untimed ones after it (a traceback
    under its stamped first line), as (last line, time); the untimed ones before the first go with it."""
    out: list[tuple[int, float | None]] = []
    for end, t in sorted(rows):
        if t is None:
            out[-1:] = [(end, out[-1][1] if out else None)]  # extends the record before it
        elif out and out[-1][1] is None:
            out[-1] = (end, t)  # the untimed records before the first timed one go with it
        else:
            out.append((end, t))
    return out


def inside_records(marks: list[int], rows: list[tuple[int, float | None]]) -> list[int]:
    """Cuts (``marks``, the last line written by each cut, the file's end last) moved inside a multi-line group of
    ``rows`` (last line, time): each cut but the last goes to the middle of the first group of two lines or more that
    starts after it and ends by the next cut, so that its writer has written half of that record."""
    out = list(marks)
    starts = [1] + [end + 1 for end, _ in rows[:-1]]
    for k in range(len(out) - 1):
        lo, hi = out[k], marks[k + 1]
        for start, (end, _) in zip(starts, rows, strict=True):
            if start > lo and end <= hi and end > start:
                out[k] = start - 1 + max(1, (end - start + 1) // 2)
                break
    return out


def plan(job: Path, chunks: int, inside: bool = False) -> list[FilePlan]:
    """Each file's lines split at ``chunks`` cuts of the job's time span: chunk k holds the records written by its
    cut (an untimed record goes with the timed one before it); a file with no time is split evenly, at record
    ends; a JSON document (an error file) is written whole, at the end. ``inside``: cuts moved inside multi-line
    records (``inside_records``)."""
    ends = record_ends(job)
    every = sorted(t for rows in ends.values() for _, t in rows if t is not None)
    # a job with no time anywhere is still cut in ``chunks`` pieces, evenly
    cuts: list[float | None] = [None] * (chunks - 1)
    if every:
        cuts = [every[min(len(every) - 1, (k + 1) * len(every) // chunks)] for k in range(chunks - 1)]
    out = []
    for entry in job_inputs(job):
        files = [entry] if entry.is_file() else sorted(p for p in entry.rglob("*") if p.is_file())
        for path in files:
            rel = os.path.relpath(path, job)
            lines = path.read_bytes().splitlines(keepends=True)
            rows = ends.get(rel, [])
            timed = any(t is not None for _, t in rows)
            rows = groups(rows) if timed else sorted(rows)
            mtime = path.stat().st_mtime
            marks: list[int] = []
            times: list[float | None] = []
            for k, cut in enumerate(cuts):
                if timed and cut is not None:
                    upto = [(ln, t) for ln, t in rows if t is not None and t <= cut]
                    marks.append(upto[-1][0] if upto else 0)
                    times.append(upto[-1][1] if upto else None)
                    continue
                times.append(None)
                if not rows:  # a document, or nothing read
                    marks.append(0)
                    continue
                target = len(lines) * (k + 1) // chunks
                marks.append(max((ln for ln, _ in rows if ln <= target), default=0))
            marks = [min(n, len(lines)) for n in marks] + [len(lines)]
            if inside and rows:
                marks = inside_records(marks, rows)
            times.append(mtime)
            out.append(FilePlan(rel, lines, marks, mtime, times))
    return out


def write_chunk(folder: Path, files: Sequence[FilePlan], k: int) -> None:
    """Append chunk ``k`` of every file, as its writer would."""
    for f in files:
        begin = f.cuts[k - 1] if k else 0
        end = f.cuts[k]
        path = folder / f.rel
        if end <= begin and k:
            if k == len(f.cuts) - 1 and path.exists():  # at the end, the folder is the job as analyze reads it
                os.utime(path, (f.mtime, f.mtime))
            continue
        if end == 0 and k < len(f.cuts) - 1:
            continue  # not created yet
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab") as fh:
            fh.write(b"".join(f.lines[begin:end]))
        t = f.times[k]
        if t is not None:
            os.utime(path, (t, t))


def followed(job: Path, folder: Path) -> list[str]:
    """The job's entries (``job_inputs``) under ``folder``, where it is written, its folders made: the tail follows
    what ``analyze`` reads, so that a job held whole in one folder (``--transform submit-host-folder``) names its
    files from inside it, not by that folder's name."""
    out = []
    for entry in job_inputs(job):
        path = folder / entry.name
        if entry.is_dir():
            path.mkdir(parents=True, exist_ok=True)
        out.append(str(path))
    return out


def replay_live(job: Path, chunks: int, inside: bool = False) -> Any:
    """One tail following the job's entries in the folder it is written into, a poll after each chunk."""
    from l4lite.live.tail import Tailer, TailOptions

    files = plan(job, chunks, inside)
    with tempfile.TemporaryDirectory(prefix="l4lite-parity-") as tmp:
        folder = Path(tmp) / job.name
        folder.mkdir()
        tailer = Tailer(TailOptions(paths=followed(job, folder), diagnose_every=0.0, flush_after=0.0,
                                    partial_after=0.0))
        try:
            for k in range(chunks):
                write_chunk(folder, files, k)
                while tailer.step():
                    pass
                tailer.diagnose()
        finally:
            tailer.close()
        return tailer.incident


def replay_resume(job: Path, chunks: int, inside: bool = False) -> Any:
    """``tail --once --state`` after each chunk; the last run's verdict."""
    files = plan(job, chunks, inside)
    with tempfile.TemporaryDirectory(prefix="l4lite-parity-") as tmp:
        folder = Path(tmp) / job.name
        folder.mkdir()
        paths = followed(job, folder)
        state = Path(tmp) / "state"
        incident = None
        for k in range(chunks):
            write_chunk(folder, files, k)
            if any(p.is_file() for p in folder.rglob("*")):  # a writer that has written nothing yet is not run on
                incident = tail_once(paths, str(state))
        return incident


def transformed(job: Path, name: str, into: Path) -> Path | None:
    """The job archived as ``archive_variants``' transform ``name`` would (its neighbour the next real job, as
    there), written under ``into``; None for a transform fed on stdin, or one that writes the job unchanged."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from archive_transforms import GROUND_TRUTH, Job, identity, load_job, write_variant
    from archive_variants import TRANSFORMS

    jobs = sorted(p for p in JOBS.iterdir() if p.is_dir() and (p / GROUND_TRUTH).exists())
    neighbour = jobs[(jobs.index(job) + 1) % len(jobs)] if job in jobs else None
    loaded = Job(job.name, job, load_job(job), json.loads((job / GROUND_TRUTH).read_text()), [])
    if neighbour is not None:
        loaded.neighbour = max((s for s in load_job(neighbour) if s.lines), key=lambda s: len(s.lines or ()))
    loaded.root_files = [str(e["file"]) for e in loaded.truth.get("evidence") or []]
    v = TRANSFORMS[name](loaded)
    if v.stdin is not None or v.outs == identity(loaded).outs:
        return None
    write_variant(v, into / job.name)
    folder = (into / job.name / v.target).resolve()
    (folder / GROUND_TRUTH).write_text(json.dumps(loaded.truth))  # a marker for the job list; never read as a log
    return folder


# ------------------------------------------------------------------------------------------------ main
def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", nargs="*", default=[], help="job name prefixes (default: every real job)")
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--resume", action="store_true", help="also replay with --once --state per chunk")
    ap.add_argument("--inside", action="store_true", help="cut inside multi-line records (tracebacks being written)")
    ap.add_argument("--no-live", action="store_true", help="leave out the live replay")
    ap.add_argument("--json", metavar="FILE", help="write per-job verdicts here")
    ap.add_argument("--transform", metavar="NAME", help="each job archived so first (archive_variants' names)")
    ap.add_argument("--records", action="store_true",
                    help="only compare each record's node (tail --once's reader against analyze's), no verdicts")
    args = ap.parse_args(argv)
    import logging

    logging.disable(logging.WARNING)
    jobs = sorted(p for p in JOBS.iterdir() if p.is_dir() and (p / "ground_truth.json").exists())
    if args.jobs:
        jobs = [j for j in jobs if any(j.name.startswith(x) for x in args.jobs)]
    holder = tempfile.TemporaryDirectory(prefix="l4lite-parity-variants-") if args.transform else None
    if holder is not None:
        made = [transformed(j, args.transform, Path(holder.name)) for j in jobs]
        print(f"{args.transform}: {sum(m is not None for m in made)} of {len(jobs)} jobs changed by it", flush=True)
        jobs = [m for m in made if m is not None]
    if args.records:
        return records_main(jobs, holder)
    modes = ["once"] + ([] if args.no_live else ["live"]) + (["resume"] if args.resume else [])
    wrong: dict[str, Counter[str]] = {m: Counter() for m in modes}
    rows = []
    started = time.perf_counter()
    for job in jobs:
        batch = analyze_verdict(job)
        row: dict[str, Any] = {"job": job.name, "analyze": batch.__dict__}
        for mode in modes:
            try:
                if mode == "once":
                    got = Verdict.of(tail_once([str(p) for p in job_inputs(job)]))
                elif mode == "live":
                    got = Verdict.of(replay_live(job, args.chunks, args.inside))
                else:
                    got = Verdict.of(replay_resume(job, args.chunks, args.inside))
            except Exception as exc:  # noqa: BLE001 - a failure is a disagreement, reported
                print(f"{job.name} {mode}: {exc.__class__.__name__}: {exc}", flush=True)
                wrong[mode]["error"] += 1
                wrong[mode]["any"] += 1
                continue
            row[mode] = got.__dict__
            diff = batch.differs(got)
            for f in diff:
                wrong[mode][f] += 1
            if diff:
                wrong[mode]["any"] += 1
                said = ", ".join(f"{f} {getattr(batch, f)!r} -> {getattr(got, f)!r}" for f in diff)
                print(f"{job.name} {mode}: {said}", flush=True)
        rows.append(row)
    n = len(jobs)
    print(f"\n{n} jobs, {time.perf_counter() - started:.0f} s")
    for mode in modes:
        w = wrong[mode]
        cols = "  ".join(f"{f} {n - w[f]}/{n}" for f in ("status", *FIELDS))
        print(f"{mode:7s} agree {n - w['any']}/{n}   {cols}" + (f"  errors {w['error']}" if w["error"] else ""))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    if holder is not None:
        holder.cleanup()
    return 0


def records_main(jobs: Sequence[Path], holder: Any) -> int:
    """``--records``: per job, the records ``tail --once`` places on another node than ``analyze`` (or not at all)."""
    total: Counter[str] = Counter()
    alike = 0
    for job in jobs:
        c = record_parity(job)
        total += c
        alike += c["placed"] == c["matched"] == c["records"]
        if c["placed"] != c["matched"] or c["matched"] != c["records"]:
            print(f"{job.name}: {c['records']} records, {c['matched']} read alike, {c['placed']} placed alike, "
                  f"{c['unplaced']} unplaced by tail", flush=True)
    print(f"\n{len(jobs)} jobs, every record alike in {alike}; records {total['records']}, read alike "
          f"{total['matched']}, placed alike {total['placed']}, unplaced by tail {total['unplaced']}")
    if holder is not None:
        holder.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
