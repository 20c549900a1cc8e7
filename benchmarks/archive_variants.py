"""The same job archived another way must give the same verdict: a metamorphic check over real jobs.

Every job of fixtures/real_jobs and fixtures/jobs is copied in ways an SRE meets (node folders renamed, extra
folder levels, everything flattened, merged into one file, gzip'd, rotated, CRLF, a BOM, garbage bytes, a
truncated last line, empty files, a file whose clock is off, a stale file of another job, stdin) and analysed
again. The verdict (status, category, phase, first suspect, failure time within a few seconds, root evidence
lines) is compared with the verdict on a plain copy of the job. Lines keep their origin through every
transform, so evidence in a merged or rotated file is compared by the original file and line it came from;
a suspect named by a renamed folder is compared through the name it replaced.

    .venv/bin/python benchmarks/archive_variants.py [--jobs 2] [--only TRANSFORM ...] [--job NAME ...] [-v]

Prints a table: per transform, the jobs whose verdict was kept and changed, and which field changed.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from multiprocessing import Pool
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from archive_transforms import (  # noqa: E402  (the transforms live beside this script)
    GROUND_TRUTH,
    Job,
    Origin,
    Variant,
    identity,
    load_job,
    named_in_lines,
    write_variant,
)
from archive_transforms import TRANSFORMS as ARCHIVE_TRANSFORMS  # noqa: E402
from job_transforms import JOB_TRANSFORMS  # noqa: E402
from site_shapes import SITE_SHAPES  # noqa: E402
from stream_transforms import STREAM_TRANSFORMS  # noqa: E402
from time_shapes import TIME_SHAPES  # noqa: E402
from time_transforms import TIME_TRANSFORMS  # noqa: E402

TRANSFORMS = {**ARCHIVE_TRANSFORMS, **TIME_TRANSFORMS, **TIME_SHAPES, **STREAM_TRANSFORMS, **JOB_TRANSFORMS,
              **SITE_SHAPES}

ROOT = Path(__file__).resolve().parent.parent
TIME_SLACK = 5.0  # seconds a failure time may move
__all__ = ["TRANSFORMS", "Job", "Variant", "load_job", "write_variant"]


# ------------------------------------------------------------------------------------------------ verdicts
@dataclass(frozen=True)
class Verdict:
    status: str
    category: str | None
    phase: str | None
    node: str | None
    time: float | None
    evidence: frozenset[Origin]
    said: frozenset[str] = frozenset()  # the root lines' messages: one line told in two files is one


_STREAM = re.compile(r"^(?:\s*\d{1,6}: |\[[A-Za-z_]*\d{1,6}\]: ?)+")


def _message(job_lines: dict[str, list[bytes]], origin: Origin) -> str:
    lines = job_lines.get(origin[0])
    if lines is None or not 0 < origin[1] <= len(lines):
        return f"{origin[0]}:{origin[1]}"
    return _STREAM.sub("", lines[origin[1] - 1].decode("utf-8", "replace")).strip()


FIELDS = ("status", "category", "phase", "node", "time", "evidence", "lines")


def _seconds(stamp: str | None) -> float | None:
    if not stamp:
        return None
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def verdict_of(incident: dict[str, Any], v: Variant, job: Job) -> Verdict:
    """The verdict of an incident, its evidence mapped back to the original files and lines."""
    origins: dict[str, list[Origin | None]] = {o.rel: o.origin for o in v.outs if o.raw is None}
    dumps = {o.rel: o.origin[0] for o in v.outs if o.raw is not None and o.origin}
    if v.stdin:
        origins["-"] = origins[v.stdin]
    evidence = set()
    for e in incident.get("evidence") or []:
        if e.get("role") != "root":
            continue
        f = str(e.get("file") or "")
        # a file of the analysed folder is named from it (``stdin``'s dumps: ``-`` plus the folder ``dumps``)
        f = next((r for r in (*origins, *dumps) if f == r or f.endswith("/" + r) or r == f"{v.target}/{f}"), f)
        line = int(e.get("line") or 0)
        if f in dumps:
            evidence.add(dumps[f])
            continue
        table = origins.get(f)
        evidence.add(table[line - 1] if table and 0 < line <= len(table) and table[line - 1] else (f"?{f}", line))
    suspects = incident.get("suspects") or []
    from l4lite.scan.jobscan import is_host

    node = suspects[0].get("node") if suspects else None
    node = v.renamed.get(node, node) if node else None  # a task's label the variant wrote for a node: that node
    if node and not is_host(node):  # ``rank:N``, ``unknown``: the node of lines no line placed, named by none
        node = None
    when = _seconds(incident.get("failure_time"))
    return Verdict(incident.get("status") or "", incident.get("category"), incident.get("phase"),
                   node, None if when is None else when - v.shift,
                   frozenset(evidence), frozenset(_message(job.lines, o) for o in evidence))


def analyse(v: Variant, dest: Path) -> dict[str, Any]:
    from l4lite.api import analyze
    from l4lite.options import AnalyzeOptions

    write_variant(v, dest)
    if v.stdin is None:
        return analyze([str(dest / v.target)], AnalyzeOptions()).to_dict()
    out = dest.parent / (dest.name + ".json")
    extra = [str(dest / v.target)] if v.target else []
    with open(dest / v.stdin, "rb") as fh:
        subprocess.run([sys.executable, "-m", "l4lite.cli.main", "analyze", "-", *extra, "--json", str(out),
                        "--no-store", "--quiet"], stdin=fh, capture_output=True, check=False)
    return json.loads(out.read_text())


def unspelled(node: str | None, v: Variant, job: Job) -> bool:
    """A node that only a folder named in the plain copy (no line names it), which no path of the variant spells
    out any more (a folder renamed to a kind or an id, files merged or numbered): nothing left can tell it, and no
    node (None) is the honest answer there."""
    if not node or named_in_lines(job, node):
        return False
    word = re.compile(r"(?<![A-Za-z0-9.-])" + re.escape(node) + r"(?![A-Za-z0-9-])", re.I)
    return not any(word.search(o.rel) for o in v.outs) and (v.kinds or node not in v.renamed.values())


def changed(a: Verdict, b: Verdict, unspelt: bool = False) -> list[str]:
    """The fields in which two verdicts differ (failure times within a few seconds are the same); ``unspelt``:
    the plain copy's node is one nothing in the variant names (``unspelled``), so no node is no change."""
    out = [f for f in ("status", "category", "phase", "node") if getattr(a, f) != getattr(b, f)
           and not (f == "node" and unspelt and b.node is None)]
    if a.evidence != b.evidence and a.said != b.said:
        out.append("evidence")
    if (a.time is None) != (b.time is None) or (a.time is not None and b.time is not None
                                                 and abs(a.time - b.time) > TIME_SLACK):
        out.insert(4, "time")
    return out


def unaccounted(incident: dict[str, Any], v: Variant) -> str:
    """Lines of the variant that are neither in a record nor counted as skipped with a reason ("" if none)."""
    stats = incident.get("stats") or {}
    written = sum(len(o.lines) for o in v.outs if o.raw is None)  # the stdin stream and the folder beside it
    read = int(stats.get("lines_read", -1))
    books = int(stats.get("lines_in_records", 0)) + sum((stats.get("lines_skipped") or {}).values())
    if read == written and books == read + int(stats.get("lines_unwrapped", 0)):
        return ""
    return f"{written} written, {read} read, {books} in records or skipped"


def job_list() -> list[Path]:
    dirs = [ROOT / "fixtures" / "real_jobs", ROOT / "fixtures" / "jobs"]
    return sorted(p.parent for d in dirs for p in d.glob(f"*/{GROUND_TRUTH}"))


def prepare(path: Path, tmp: Path, neighbour: Path | None = None) -> tuple[Job, Verdict]:
    """A job with the verdict of its plain copy (what every variant is compared with)."""
    srcs = load_job(path)
    job = Job(path.name, path, srcs, json.loads((path / GROUND_TRUTH).read_text()), [])
    if neighbour is not None:
        job.neighbour = max((s for s in load_job(neighbour) if s.lines), key=lambda s: len(s.lines or ()))
    v = identity(job)
    incident = analyse(v, tmp / f"{path.name}-base")
    job.root_files = [e["file"] for e in incident.get("evidence") or [] if e.get("role") == "root"]
    return job, verdict_of(incident, v, job)


def run_job(args: tuple[Path, Path | None, Sequence[str], str]) -> list[tuple[str, str, list[str], str]]:
    path, neighbour, names, tmp = args
    rows = []
    with tempfile.TemporaryDirectory(dir=tmp) as d:
        job, base = prepare(path, Path(d), neighbour)
        for name in names:
            v = TRANSFORMS[name](job)
            try:
                incident = analyse(v, Path(d) / name)
                got = verdict_of(incident, v, job)
                diff = changed(base, got, unspelled(base.node, v, job))
                detail = "; ".join(f"{f}: {_show(getattr(base, f))} -> {_show(getattr(got, f))}" for f in diff)
                lost = unaccounted(incident, v)
                if lost:
                    diff.append("lines")
                    detail += f"; lines: {lost}"
            except Exception as exc:  # noqa: BLE001 - a crash is a changed verdict, shown as such
                diff, detail = ["error"], f"{type(exc).__name__}: {exc}"
            rows.append((name, job.name, diff, detail))
    return rows


def _show(value: Any) -> str:
    if isinstance(value, frozenset):
        return "{" + ", ".join(f"{f}:{n}" for f, n in sorted(value)) + "}"
    if isinstance(value, float):
        return datetime.fromtimestamp(value, UTC).strftime("%H:%M:%S.%f")[:-3]
    return str(value)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2, help="processes (default 2)")
    ap.add_argument("--only", nargs="*", default=list(TRANSFORMS), help="transforms to run")
    ap.add_argument("--job", nargs="*", default=None, help="job names to run (default: all)")
    ap.add_argument("-v", "--verbose", action="store_true", help="list every changed verdict")
    args = ap.parse_args(argv)
    jobs = job_list()
    pairs = [(p, jobs[(i + 1) % len(jobs)]) for i, p in enumerate(jobs)]
    if args.job:
        pairs = [(p, n) for p, n in pairs if p.name in args.job]
    started = time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        tasks = [(p, n, args.only, tmp) for p, n in pairs]
        if args.jobs > 1:
            with Pool(args.jobs) as pool:
                results = pool.map(run_job, tasks, chunksize=1)
        else:
            results = [run_job(t) for t in tasks]
    rows = [r for rs in results for r in rs]
    print(f"| transform | jobs kept | changed | {' | '.join(FIELDS)} |")
    print("| --- | --- | --- |" + " --- |" * len(FIELDS))
    total = Counter()
    for name in args.only:
        mine = [r for r in rows if r[0] == name]
        fields = Counter(f for r in mine for f in r[2])
        bad = sum(1 for r in mine if r[2])
        total["kept"] += len(mine) - bad
        total["all"] += len(mine)
        cells = " | ".join(str(fields.get(f, 0) or "") for f in FIELDS)
        errors = f" (errors: {fields['error']})" if fields.get("error") else ""
        print(f"| {name} | {len(mine) - bad}/{len(mine)} | {bad}{errors} | {cells} |")
    print(f"\nkept {total['kept']} of {total['all']} verdicts; parent CPU {time.process_time() - started:.1f} s")
    if args.verbose:
        for name, job, diff, detail in rows:
            if diff:
                print(f"{name} {job}: {detail}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
