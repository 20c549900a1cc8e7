"""Category of a file of labelled failure lines by the shipped layers, without retraining.

Usage: python benchmarks/fresh_lines.py FILE [FILE ...] [--show] [--jobs] [--tiers FILE]

Each entry (``fixtures/real/lines.jsonl`` schema) is classified as ``benchmarks/lines_cv.py --shipped`` does:
the rule layer, names, the lexicon, the shipped model and the shipped order (``pipeline`` = the rule when one
matches, else names, the lexicon, then the model when it is sure enough). For a file whose threads the model was
not trained on (``fixtures/real/fresh``) this is the honest measure; ``--show`` prints one line per miss with the
layer that decided. ``--jobs`` also plants each entry in an 8-node job (as ``benchmarks/category_cv.py --lines``
does) and analyses it end to end with the shipped rules and model: the category an analysis would report, where
a generic or fallback rule's category is read again from the line's words. ``--tiers FILE`` (with ``--jobs``)
writes each verdict's confidence reading and whether it was right (``confidence_tiers.py``), for studied sets only.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from category_cv import decided_by, labelled_lines  # noqa: E402
from confidence_tiers import TierRow, capturing, row_of, write_rows  # noqa: E402
from lines_cv import Seen, decide, look  # noqa: E402

from l4lite.api import AnalyzeOptions, analyze  # noqa: E402
from l4lite.evaluate.planting import JobPlanter  # noqa: E402
from l4lite.evaluate.scoreboard import job_paths, load_truth, score_job  # noqa: E402
from l4lite.rules import components, learned  # noqa: E402
from l4lite.rules.pack import RulePack  # noqa: E402


def decider(s: Seen) -> str:
    """Which layer gave the pipeline's answer."""
    if s.rule is not None:
        return "rule"
    if s.named is not None:
        return "named"
    if s.lexicon is not None:
        return "lexicon"
    if decide(s, False, components.LEARNED_MIN, components.LEARNED_SUPPORT) is not None:
        return "learned"
    return "none"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--show", action="store_true", help="one line per entry the pipeline gets wrong")
    ap.add_argument("--jobs", action="store_true", help="also the end-to-end category of each entry in a planted job")
    ap.add_argument("--tiers", type=Path, help="with --jobs: write each verdict's confidence reading here")
    args = ap.parse_args(argv)
    pack, model = RulePack.load(), learned.shipped_model()
    tier_rows: list[TierRow] = []
    for path in args.files:
        rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
        seen = [look(r, model, pack) for r in rows]
        n = len(seen)
        pipe = [s.rule or decide(s, False, components.LEARNED_MIN, components.LEARNED_SUPPORT) for s in seen]
        layers = {"rule": [s.rule for s in seen], "lexicon": [s.lexicon for s in seen],
                  "learned": [s.best for s in seen], "pipeline": pipe}
        print(f"{path}: {n} entries")
        for name, got in layers.items():
            right = sum(agrees(g, s.truth) for g, s in zip(got, seen, strict=True))
            answered = sum(g is not None for g in got)
            print(f"  {name:9s} right {right:3d}/{n} ({100 * right / n:5.1f} %), answers {answered}/{n}")
        by = Counter(decider(s) for s in seen)
        ok = Counter(decider(s) for s, g in zip(seen, pipe, strict=True) if agrees(g, s.truth))
        print("  decided by: " + ", ".join(f"{k} {ok[k]}/{v}" for k, v in sorted(by.items())))
        truths = Counter(s.truth for s in seen)
        print("  per category: " + ", ".join(
            f"{c} {sum(agrees(g, s.truth) for g, s in zip(pipe, seen, strict=True) if s.truth == c)}/{k}"
            for c, k in sorted(truths.items())))
        if args.show:
            for g, s in zip(pipe, seen, strict=True):
                if not agrees(g, s.truth):
                    print(f"  {s.id}: truth {s.truth}, got {g} by {decider(s)} (rule {s.rule}, lexicon {s.lexicon},"
                          f" learned {s.best} {s.proba:.2f} support {s.support})")
        if args.jobs:
            tier_rows += end_to_end(path, args.show)
    if args.tiers is not None:
        write_rows(args.tiers, tier_rows)
    return 0


def agrees(got: str | None, truth: str) -> bool:
    """A layer that gives no answer leaves the category unknown, which is right when the thread says unknown."""
    return (got or "unknown") == truth


class Reported(NamedTuple):
    """One entry analysed end to end: its label, the category the incident reports and what decided it."""

    id: str
    truth: str
    got: str
    layer: str


def reported(path: Path, tiers: list[TierRow] | None = None) -> list[Reported]:
    """Each entry planted in a job of rank files and analysed (``tests/test_fresh_lines.py`` pins the totals);
    with ``tiers``, each judged verdict's confidence reading is appended to it."""
    got: list[Reported] = []
    with tempfile.TemporaryDirectory(prefix="l4lite-fresh-") as tmp:
        for x in labelled_lines(path):
            job = JobPlanter(x).write("rank-files", Path(tmp) / x.id).path
            with capturing() as seen:
                inc = analyze(job_paths(job), AnalyzeOptions()).to_dict()
            got.append(Reported(x.id, str(x.category), str(inc.get("category")), decided_by(inc)))
            if tiers is not None:
                row = row_of(f"{path.stem}/{x.id}", seen, score_job(job, load_truth(job), inc, "ours", 0.0), inc)
                if row is not None:
                    tiers.append(row)
    return got


def end_to_end(path: Path, show: bool) -> list[TierRow]:
    """Each entry planted in a job of rank files and analysed: the reported category and what decided it; returns
    the judged verdicts' confidence readings."""
    tiers: list[TierRow] = []
    got = reported(path, tiers)
    ok = sum(t == g for _, t, g, _ in got)
    print(f"  end to end right {ok:3d}/{len(got)} ({100 * ok / max(len(got), 1):5.1f} %), "
          f"unknown {sum(g == 'unknown' for _, _, g, _ in got)}")
    if show:
        for i, t, g, layer in got:
            if t != g:
                print(f"  {i}: truth {t}, got {g} ({layer})")
    return tiers


if __name__ == "__main__":
    sys.exit(main())
