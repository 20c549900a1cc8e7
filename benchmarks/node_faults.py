"""The faulty node on every planted node fault, not only those whose thread names the node.

Usage: python benchmarks/node_faults.py [--part dev|real-failures|paraphrased] [--layouts A,B] [--show]

``l4lite eval --corpus`` scores the faulty node only where the thread names it (and job-wide faults, which blame
no node). In a planted job the faulty node is known either way: it is the node that printed the excerpt while
the other seven printed cascades. Counting every node fault (incident, category not job-wide) gives localisation
about three times as many dev jobs to be judged on. ``--show`` prints each miss: the truth, the verdict's
category and scope, its top suspects and its root evidence, and each phase miss. The held-out part is not offered: its rows are only
ever scored in aggregate, by ``l4lite eval``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from l4lite.api import analyze
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


def load(part: str) -> list[Excerpt]:
    if part == "real-failures":
        return legacy(ROOT / "fixtures" / "real" / "real-failures.jsonl")
    if part == "paraphrased":
        return legacy(ROOT / "fixtures" / "rules" / "paraphrased.jsonl")
    return [x for x in load_corpus(ROOT / "fixtures" / "real" / "corpus.jsonl") if x.split == part]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="dev", choices=("dev", "real-failures", "paraphrased"))
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--show", action="store_true", help="one block per miss")
    args = ap.parse_args(argv)
    layouts = args.layouts.split(",")
    tally: dict[str, list[int]] = {lay: [0, 0] for lay in layouts}
    phases: dict[str, list[int]] = {lay: [0, 0] for lay in layouts}
    missed: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for x in load(args.part):
            if x.status != "incident":
                continue
            job_wide = x.category in GLOBAL_CATEGORIES
            planter = JobPlanter(x, 0)
            planted = norm_node(planter.hosts[planter.faulty_node])
            for lay in layouts:
                job = planter.write(lay, Path(tmp) / lay / x.id)
                inc = analyze(job_paths(job.path), AnalyzeOptions()).to_dict()
                suspects = [norm_node(s.get("node")) for s in inc.get("suspects") or []]
                if job_wide:
                    ok = not suspects or inc.get("scope") == "global"
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
                if args.show:
                    roots = [e for e in inc.get("evidence") or [] if e.get("role") == "root"]
                    print(f"MISS {x.id}@{lay}: truth {x.category} named={x.faulty!r} planted={planted}; verdict "
                          f"{inc.get('category')} scope={inc.get('scope')} suspects={suspects[:3]}")
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
