"""The faulty node on every planted node fault, not only those whose thread names the node.

Usage: python benchmarks/node_faults.py [--part dev|lines|real-failures|paraphrased] [--layouts A,B] [--show]

``l4lite eval --corpus`` scores the faulty node only where the thread names it (and job-wide faults, which blame
no node). In a planted job the faulty node is known either way: it is the node that printed the excerpt while
the other seven printed cascades. Counting every node fault (incident, category not job-wide) gives localisation
about three times as many dev jobs to be judged on. ``--show`` prints each miss: the truth, the verdict's
category and scope, what made it job-wide (``Verdict.scope_by``) or which finding led it to another node, its
top suspects and its root evidence, and each phase miss. The held-out part is not offered: its rows are only
ever scored in aggregate, by ``l4lite eval``.

``--part lines`` plants each entry of ``fixtures/real/lines.jsonl`` (short labelled failure text from threads
outside the corpus, as ``category_cv.py --lines`` does) on one node of an 8-node job; an entry whose category is
not job-wide is a node fault whose truth is the node it was planted on: a second, larger proxy that no rule and
no localisation step was written from. Every part ends with the misses counted by mechanism.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from category_cv import labelled_lines

from l4lite import api
from l4lite.api import analyze
from l4lite.diagnose.localize import Localizer, Verdict
from l4lite.evaluate.components_train import LEGACY_CATEGORY
from l4lite.evaluate.corpus import load_corpus
from l4lite.evaluate.planting import LAYOUTS, Excerpt, JobPlanter
from l4lite.evaluate.scoreboard import job_paths, norm_node
from l4lite.options import AnalyzeOptions
from l4lite.vocab import GLOBAL_CATEGORIES

ROOT = Path(__file__).resolve().parent.parent
LEGACY_PHASE = {"iterative_training": "train", "checkpoint_save": "checkpoint", "checkpoint_load": "load",
                "init": "init", "eval": "eval", "shutdown": "shutdown"}


def legacy(path: Path) -> list[Excerpt]:
    """The older excerpt files (``root_cause``/``phase`` labels) as corpus excerpts."""
    out: list[Excerpt] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        healthy = r.get("root_cause") == "none"
        out.append(Excerpt(id=r["id"], source_group=r["id"], split="dev", status="healthy" if healthy else "incident",
                           category=None if healthy else LEGACY_CATEGORY.get(r.get("root_cause") or "", "unknown"),
                           phase=None if healthy else LEGACY_PHASE.get(r.get("phase") or ""),
                           faulty=r.get("faulty_rank_or_node"), lines=tuple(r["lines"])))
    return out


class RecordingLocalizer(Localizer):
    """The localiser, keeping its last verdict: what made a verdict job-wide is not in the incident."""

    last: Verdict | None = None

    def localize(self, scan: Any, findings: Any) -> Verdict:
        verdict = super().localize(scan, findings)
        RecordingLocalizer.last = verdict
        return verdict


def mechanism(verdict: Verdict | None, job_wide: bool) -> str:
    """Which reading decided a miss: for a wrong job-wide verdict the one that made it global, else the kind of
    finding that led (its detector and rule, and the localiser's marks on it)."""
    if verdict is None or verdict.primary is None:
        return "healthy"
    if verdict.scope == "global" and not job_wide:
        return f"global:{verdict.scope_by}"
    p = verdict.primary
    marks = [k for k in ("own_lines", "said_apart", "said_alike", "inferred", "fallback", "generic", "alone")
             if p.data.get(k)]
    return f"{'node' if not job_wide else 'blamed'}:{p.detector}:{p.rule or '-'}" + \
        (f"[{','.join(marks)}]" if marks else "")


def load(part: str) -> list[Excerpt]:
    if part == "lines":
        return labelled_lines(ROOT / "fixtures" / "real" / "lines.jsonl")
    if part == "real-failures":
        return legacy(ROOT / "fixtures" / "real" / "real-failures.jsonl")
    if part == "paraphrased":
        return legacy(ROOT / "fixtures" / "rules" / "paraphrased.jsonl")
    return [x for x in load_corpus(ROOT / "fixtures" / "real" / "corpus.jsonl") if x.split == part]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="dev", choices=("dev", "lines", "real-failures", "paraphrased"))
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--show", action="store_true", help="one block per miss")
    args = ap.parse_args(argv)
    layouts = args.layouts.split(",")
    tally: dict[str, list[int]] = {lay: [0, 0] for lay in layouts}
    phases: dict[str, list[int]] = {lay: [0, 0] for lay in layouts}
    missed: list[str] = []
    causes: Counter[str] = Counter()
    wide = [0, 0]  # job-wide faults judged job-wide
    api.Localizer = RecordingLocalizer  # type: ignore[misc]
    with tempfile.TemporaryDirectory() as tmp:
        for x in load(args.part):
            if x.status != "incident":
                continue
            job_wide = x.category in GLOBAL_CATEGORIES
            planter = JobPlanter(x, 0)
            planted = norm_node(planter.hosts[planter.faulty_node])
            for lay in layouts:
                job = planter.write(lay, Path(tmp) / lay / x.id)
                RecordingLocalizer.last = None
                inc = analyze(job_paths(job.path), AnalyzeOptions()).to_dict()
                verdict = RecordingLocalizer.last
                suspects = [norm_node(s.get("node")) for s in inc.get("suspects") or []]
                if job_wide:
                    ok = not suspects or inc.get("scope") == "global"
                    wide[0] += ok
                    wide[1] += 1
                    if args.part == "lines":  # the planted node is not the truth of a job-wide fault
                        continue
                else:
                    ok = bool(suspects) and suspects[0] == planted
                tally[lay][0] += ok
                tally[lay][1] += 1
                if x.phase:
                    phases[lay][0] += inc.get("phase") == x.phase
                    phases[lay][1] += 1
                    if args.show and inc.get("phase") != x.phase:
                        print(f"PHASE {x.id}@{lay}: truth {x.phase}, verdict {inc.get('phase')}")
                if ok:
                    continue
                missed.append(f"{x.id}@{lay}")
                cause = mechanism(verdict, job_wide)
                causes[cause.split("[")[0]] += 1
                if args.show:
                    roots = [e for e in inc.get("evidence") or [] if e.get("role") == "root"]
                    print(f"MISS {x.id}@{lay}: truth {x.category} named={x.faulty!r} planted={planted}; verdict "
                          f"{inc.get('category')} scope={inc.get('scope')} suspects={suspects[:3]} by {cause}")
                    for line in x.lines[:3] if args.part == "lines" else ():
                        print(f"    line {line[:140]}")
                    for e in roots[:3]:
                        print(f"    root {e.get('node')} {e.get('file')}:{e.get('line')} "
                              f"{str(e.get('text')).splitlines()[0][:140]}")
    for lay, (hit, n) in tally.items():
        good, m = phases[lay]
        print(f"{lay:13s} top-1 {hit}/{n} = {100 * hit / max(1, n):.1f} %, phase {good}/{m} = "
              f"{100 * good / max(1, m):.1f} %")
    hit = sum(h for h, _ in tally.values())
    n = sum(m for _, m in tally.values())
    print(f"{'overall':13s} top-1 {hit}/{n} = {100 * hit / max(1, n):.1f} %")
    if args.part == "lines":
        print(f"job-wide entries judged job-wide {wide[0]}/{wide[1]} (not in top-1)")
    print("misses by mechanism: " + ", ".join(f"{k} {v}" for k, v in causes.most_common()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
