"""Where root evidence and the ground truth part ways on a suite of jobs, grouped by cause.

Usage: python benchmarks/evidence_misses.py [SUITE_DIR] [--top 25]

The scoreboard gives evidence precision and recall per job; this says why. For every incident job with true
evidence lines it runs the pipeline and lists:

- missed truth lines, by the role the incident gave them (``symptom``, ``cascade``, ``confirmation``,
  ``anomaly``, ``absent``: no entry covers the line) and the line's shape (numbers masked, stream labels cut);
- root entries covering no truth line, by whether they are on a faulty node (None: the truth names no node)
  and the shape of the entry's last line;
- the precision a root entry would get if an entry that repeats a true line word for word (the same shape, the
  same node) counted as a hit: the truth names the lines a search found with a limit, so a second copy of one
  line (another file of the same rank, the other rank of a job-wide fault) is scored as a false root.

With ``--per-job``, also each scored job's root entries, hits, truth lines, precision, recall and F1, lowest F1
first (the jobs at F1 1.0 left out).

Default SUITE_DIR: fixtures/real_jobs (every job of it may be read).
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from l4lite.evaluate.scoreboard import load_truth, pipeline_analyzer, score_job

_NUM = re.compile(r"\d+")
_LABELS = re.compile(r"^(?:\[[^\]\n]{0,40}\]:\s*)*")


class Line(NamedTuple):
    file: str
    line: int


def shape(text: str) -> str:
    """A line with its stream labels cut and its numbers masked: what copies of one line share."""
    return _NUM.sub("N", _LABELS.sub("", text.strip()))[:90]


def covers(entry: Mapping[str, Any], truth: Line) -> bool:
    lo = int(entry.get("line") or 0)
    hi = int(entry.get("end_line") or lo)
    f = str(entry.get("file") or "")
    return lo <= truth.line <= hi and (f == truth.file or f.endswith("/" + truth.file) or truth.file.endswith("/" + f))


def last_line(entry: Mapping[str, Any]) -> str:
    lines = str(entry.get("text") or "").splitlines()
    return lines[-1] if lines else ""


def read_line(job: Path, t: Line) -> str:
    try:
        lines = (job / t.file).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return lines[t.line - 1] if 0 < t.line <= len(lines) else ""


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("suite", nargs="?", default="fixtures/real_jobs")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--per-job", action="store_true", help="print each job's precision, recall and F1")
    args = ap.parse_args(argv)
    run = pipeline_analyzer()
    missed: Counter[tuple[str, str]] = Counter()
    false: Counter[tuple[bool | None, str]] = Counter()
    where: dict[tuple[Any, str], str] = {}
    strict, copies, jobs = [], [], 0
    per_job: list[tuple[float, str, str]] = []
    for job in sorted(p for p in Path(args.suite).iterdir() if (p / "ground_truth.json").exists()):
        truth = load_truth(job)
        lines = [Line(str(e["file"]), int(e["line"])) for e in truth.get("evidence") or []]
        if truth.get("status") != "incident" or not lines:
            continue
        incident = run(job)
        row = score_job(job, truth, incident, "l4lite", 0.0)
        prf = row.evidence_prf()
        if prf is None:
            continue
        per_job.append((prf[2], job.name, f"roots {row.ev_pred:2d} hit {row.ev_pred_hit:2d}  truth {row.ev_truth:2d} "
                                          f"found {row.ev_truth_hit:2d}  P {prf[0]:.2f} R {prf[1]:.2f} F1 {prf[2]:.2f}"))
        jobs += 1
        entries = [e for e in incident.get("evidence") or [] if isinstance(e, Mapping)]
        roots = [e for e in entries if e.get("role") == "root"]
        for t in lines:
            roles = [str(e.get("role")) for e in entries if covers(e, t)]
            if "root" not in roles:
                key = (roles[0] if roles else "absent", shape(read_line(job, t)))
                missed[key] += 1
                where.setdefault(key, job.name)
        faulty = set(truth.get("faulty_nodes") or [])
        true_shapes = {(t.file.split("/")[0], shape(read_line(job, t))) for t in lines}
        hits = copy_hits = 0
        for e in roots:
            hit = any(covers(e, t) for t in lines)
            copy = hit or (str(e.get("file") or "").split("/")[0], shape(last_line(e))) in true_shapes
            hits += hit
            copy_hits += copy
            if not hit:
                key2 = ((e.get("node") in faulty) if faulty else None, shape(last_line(e)))
                false[key2] += 1
                where.setdefault(key2, job.name)
        strict.append(hits / len(roots) if roots else 0.0)
        copies.append(copy_hits / len(roots) if roots else 0.0)
    print(f"{jobs} jobs; missed truth lines {sum(missed.values())}, root entries off the truth {sum(false.values())}")
    print(f"precision {sum(strict) / max(jobs, 1):.3f}; counting word-for-word copies of a true line on its node "
          f"as hits {sum(copies) / max(jobs, 1):.3f}")
    if args.per_job:
        print("\nper job, lowest F1 first:")
        for f1, name, text in sorted(per_job):
            if f1 < 1.0:
                print(f"  {name:40s} {text}")
    print("\nmissed truth lines (role given, line):")
    for (role, text), n in missed.most_common(args.top):
        print(f"{n:4d}  {role:12s} {json.dumps(text)[:100]}  e.g. {where[(role, text)]}")
    print("\nroot entries covering no truth line (on a faulty node, last line):")
    for (on, text), n in false.most_common(args.top):
        print(f"{n:4d}  {str(on):5s} {json.dumps(text)[:100]}  e.g. {where[(on, text)]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
