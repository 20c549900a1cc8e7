"""Category on excerpts the learned model was not trained from: grouped cross-validation over the corpus's dev part.

Usage: python benchmarks/category_cv.py [--folds 5] [--layout rank-files] [--no-jobs] [--show]

The held-out part of the real corpus is the judge of the category mechanisms, and it may be read only rarely;
this is the stand-in made inside the dev part. The dev excerpts are split into ``--folds`` folds by
``source_group`` (one thread never on both sides). For each fold the learned component model is retrained
without the fold (``components_train.training_text(exclude=...)``) and put in place of the shipped one; the
fold's excerpts are planted in 8-node jobs of one layout and analysed end to end. The held-out part is never
read.

Besides the end-to-end category it scores each decision layer on the excerpt's non-cascade lines, so that a
wrong category shows which layer said it: the rule pack (first root or symptom rule with a category), the
lexicon (``rules.components``), the learned model, and lexicon-then-learned as the pipeline asks them. The
lexicon and the rules were written from the whole dev part, so their numbers here are optimistic; the learned
model's are honest.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from l4lite.api import AnalyzeOptions, analyze  # noqa: E402
from l4lite.evaluate import components_train  # noqa: E402
from l4lite.evaluate.corpus import load_corpus  # noqa: E402
from l4lite.evaluate.planting import Excerpt, JobPlanter  # noqa: E402
from l4lite.evaluate.scoreboard import job_paths, load_truth, score_job  # noqa: E402
from l4lite.rules import components, learned  # noqa: E402
from l4lite.rules.pack import RulePack  # noqa: E402


def fold_of(group: str, k: int) -> int:
    """A stable fold per source group."""
    return int(hashlib.sha1(group.encode()).hexdigest(), 16) % k


def rule_category(pack: RulePack, lines: Sequence[str]) -> str | None:
    """The category of the first line a root or symptom rule with a category matches; None without one."""
    for line in lines:
        for m in pack.match_fields(line, line):
            if m.rule.role in ("root", "symptom") and m.rule.category not in (None, "unknown"):
                return m.rule.category
    return None


def layers(x: Excerpt, pack: RulePack) -> dict[str, str | None]:
    """What each decision layer says about the excerpt's non-cascade lines."""
    doc = "\n".join(line for line in x.lines if not components.is_cascade(line))
    lex = components.component(doc)
    both = components.component(doc, learned=True)
    model = learned.shipped_model()
    learnt = None
    if model is not None and doc.strip():
        p = model.proba(doc)
        learnt = max(p, key=lambda c: p[c])
    return {"rule": rule_category(pack, x.lines), "lexicon": lex.category if lex else None,
            "learned": learnt, "lex+learned": both.category if both else None}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--layout", default="rank-files")
    ap.add_argument("--corpus", default=str(ROOT / "fixtures" / "real" / "corpus.jsonl"))
    ap.add_argument("--no-jobs", action="store_true", help="score the layers only, no end-to-end jobs")
    ap.add_argument("--show", action="store_true", help="one line per wrong end-to-end category")
    ap.add_argument("--learned-min", type=float, default=components.LEARNED_MIN,
                    help="probability at which the learned model answers for a line the lexicon cannot place")
    args = ap.parse_args(argv)
    components.LEARNED_MIN = args.learned_min
    dev = [x for x in load_corpus(args.corpus) if x.split == "dev"]  # the held-out part is never read
    pack = RulePack.load()
    hits: Counter[str] = Counter()
    answered: Counter[str] = Counter()
    n_cat = 0
    e2e = e2e_ok = e2e_unknown = 0
    wrong: list[str] = []
    with tempfile.TemporaryDirectory(prefix="l4lite-cv-") as tmp:
        for fold in range(args.folds):
            part = [x for x in dev if fold_of(x.source_group, args.folds) == fold]
            docs, labels = components_train.training_text(ROOT, exclude={x.id for x in part})
            model = components_train.train(docs, labels)
            learned.shipped_model.cache_clear()
            saved = learned.shipped_model
            learned.shipped_model = lambda m=model: m  # type: ignore[assignment]
            try:
                for x in part:
                    scored = x.status == "incident" and x.category not in (None, "unknown")
                    if scored:
                        n_cat += 1
                        for name, cat in layers(x, pack).items():
                            answered[name] += cat is not None
                            hits[name] += cat == x.category
                    if args.no_jobs:
                        continue
                    job = JobPlanter(x).write(args.layout, Path(tmp) / x.id).path
                    inc = analyze(job_paths(job), AnalyzeOptions()).to_dict()
                    r = score_job(job, load_truth(job), inc, "ours", 0.0)
                    if r.category_ok is not None:
                        e2e += 1
                        e2e_ok += bool(r.category_ok)
                        e2e_unknown += inc.get("category") == "unknown"
                        if not r.category_ok:
                            wrong.append(f"{x.id}: truth {x.category}, got {inc.get('category')}")
            finally:
                learned.shipped_model = saved  # type: ignore[assignment]
    print(f"dev excerpts {len(dev)}, with a category {n_cat}, {args.folds} folds by source group")
    for name in ("rule", "lexicon", "learned", "lex+learned"):
        print(f"  {name:12s} right {hits[name]:3d}/{n_cat} ({100 * hits[name] / max(n_cat, 1):5.1f} %), "
              f"answers {answered[name]}/{n_cat}")
    if e2e:
        print(f"  end to end   right {e2e_ok:3d}/{e2e} ({100 * e2e_ok / e2e:5.1f} %), unknown {e2e_unknown}, "
              f"layout {args.layout}, learned-min {args.learned_min}")
    if args.show:
        print("\n".join(wrong))
    return 0


if __name__ == "__main__":
    sys.exit(main())
