"""Category of the labelled failure lines (``fixtures/real/lines.jsonl``) by models that never saw their thread:
grouped cross-validation over the lines file, one decision layer at a time.

Usage: python benchmarks/lines_cv.py [--folds 5] [--grid] [--show] [--shipped] [--dev]

Each entry's lines are split into ``--folds`` folds by ``source_group``. For each fold the learned component
model is retrained without the fold (``components_train.training_text(exclude_lines=...)``, which also leaves out
every rule example, older excerpt and other lines entry that shares a line with the fold: a message copied
verbatim elsewhere would tell the model the answer) and each entry of the fold is classified from its
non-cascade lines by:

- ``rule``: the first root or symptom rule with a category that matches a line (the rules were never written
  from this file);
- ``named``: a name with one meaning (``rules.exceptions``);
- ``lexicon``: names, then the lexicon's words (``components.component``);
- ``learned``: the model's most probable category, always answering;
- ``lex+learned``: names, the lexicon, then the model when it is sure enough (the shipped order);
- ``learned-first``: names, the model when it is sure enough, then the lexicon;
- ``pipeline``: the rule when one matches, else ``lex+learned`` (what a line gets in an analysis).

``--dev`` scores the dev part of the corpus the same way instead (incident excerpts with a known category, folds
by source group, the model retrained without the fold as ``benchmarks/category_cv.py`` does), which is quick
and shows the layers and the grid without planting a job. ``--shipped`` classifies every entry with the shipped model instead (no retraining: the baseline of a model
that was not trained on this file). ``--grid`` also scores both orders over a grid of ``LEARNED_MIN`` and ``LEARNED_SUPPORT`` (the held-out part of the
corpus is never read; only its source groups are, to keep its threads out of training).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from l4lite.evaluate import components_train  # noqa: E402
from l4lite.evaluate.corpus import load_corpus  # noqa: E402
from l4lite.rules import components, learned  # noqa: E402
from l4lite.rules.learned import LinearTextModel  # noqa: E402
from l4lite.rules.pack import RulePack  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from category_cv import fold_of, rule_category  # noqa: E402  (the same folds and rule layer as the excerpt CV)

MINS = (0.3, 0.4, 0.5, 0.6, 0.7)
SUPPORTS = (1, 2, 3, 4)


class Seen(NamedTuple):
    """What each layer needs to know about one entry, computed once per fold."""

    id: str
    truth: str
    rule: str | None
    named: str | None
    lexicon: str | None
    best: str | None
    proba: float
    support: int


def look(row: dict[str, object], model: LinearTextModel, pack: RulePack) -> Seen:
    """Every layer's view of one entry."""
    lines = [str(x) for x in row["lines"]]  # type: ignore[attr-defined]
    doc = "\n".join(x for x in lines if not components.is_cascade(x))
    named = components.named_component(doc)
    lex = components.component(doc)
    rest = components.without_advice(doc)
    proba = model.proba(rest) if rest.strip() else {}
    best = max(proba, key=lambda c: proba[c]) if proba else None
    return Seen(str(row["id"]), str(row["category"]), rule_category(pack, lines), named.category if named else None,
                lex.category if lex else None, best, proba.get(best, 0.0) if best else 0.0,
                model.support(rest) if rest.strip() else 0)


def decide(s: Seen, first: bool, minimum: float, support: int) -> str | None:
    """The classifier's answer for one order and one pair of thresholds (``components.component``'s logic)."""
    if s.named is not None:
        return s.named
    guess = s.best if s.best is not None and s.support >= support and s.proba >= minimum else None
    return (guess or s.lexicon) if first else (s.lexicon or guess)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--grid", action="store_true", help="score both orders over a grid of thresholds")
    ap.add_argument("--show", action="store_true", help="one line per entry the shipped order gets wrong")
    ap.add_argument("--shipped", action="store_true", help="the shipped model for every entry, no retraining")
    ap.add_argument("--dev", action="store_true", help="the corpus's dev excerpts instead of the lines file")
    args = ap.parse_args(argv)
    path = ROOT / "fixtures" / "real" / "lines.jsonl"
    held = components_train.holdout_sources(ROOT / "fixtures" / "real" / "corpus.jsonl")
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    rows = [r for r in rows if r["source_group"] not in held and r["source_url"] not in held]
    if args.dev:
        rows = [{"id": x.id, "source_group": x.source_group, "category": x.category, "lines": list(x.lines)}
                for x in load_corpus(ROOT / "fixtures" / "real" / "corpus.jsonl")
                if x.split == "dev" and x.status == "incident" and x.category not in (None, "unknown")]
    pack = RulePack.load()
    seen: list[Seen] = []
    shipped = learned.shipped_model() if args.shipped else None
    for fold in range(args.folds):
        part = [r for r in rows if fold_of(r["source_group"], args.folds) == fold]
        if shipped is not None:
            seen += [look(r, shipped, pack) for r in part]
            continue
        if args.dev:
            docs, labels = components_train.training_text(ROOT, exclude={str(r["id"]) for r in part})
        else:
            docs, labels = components_train.training_text(ROOT, exclude_lines={r["source_group"] for r in part})
        model = components_train.train(docs, labels)
        seen += [look(r, model, pack) for r in part]
    n = len(seen)
    minimum, support = components.LEARNED_MIN, components.LEARNED_SUPPORT
    layers = {
        "rule": [s.rule for s in seen],
        "named": [s.named for s in seen],
        "lexicon": [s.lexicon for s in seen],
        "learned": [s.best for s in seen],
        "lex+learned": [decide(s, False, minimum, support) for s in seen],
        "learned-first": [decide(s, True, minimum, support) for s in seen],
        "pipeline": [s.rule or decide(s, False, minimum, support) for s in seen],
        "pipeline-lf": [s.rule or decide(s, True, minimum, support) for s in seen],
    }
    print(("shipped model; " if shipped is not None else "") + ("dev excerpts" if args.dev else "lines")
          + f" {n} from {len({r['source_group'] for r in rows})} threads, {args.folds} folds by source group, "
          f"learned-min {minimum}, learned-support {support}")
    for name, got in layers.items():
        right = sum(g == s.truth for g, s in zip(got, seen, strict=True))
        answered = sum(g is not None for g in got)
        print(f"  {name:13s} right {right:3d}/{n} ({100 * right / n:5.1f} %), answers {answered}/{n}")
    truths = Counter(s.truth for s in seen)
    print("  per category (lex+learned): " + ", ".join(
        f"{c} {sum(g == s.truth for g, s in zip(layers['lex+learned'], seen, strict=True) if s.truth == c)}/{k}"
        for c, k in sorted(truths.items())))
    if args.grid:
        print("grid: min support -> lex+learned, learned-first (right of " + str(n) + ")")
        for m in MINS:
            for sup in SUPPORTS:
                a = sum(decide(s, False, m, sup) == s.truth for s in seen)
                b = sum(decide(s, True, m, sup) == s.truth for s in seen)
                print(f"  {m:.1f} {sup} -> {a:3d} {b:3d}")
    if args.show:
        for g, s in zip(layers["lex+learned"], seen, strict=True):
            if g != s.truth:
                print(f"{s.id}: truth {s.truth}, got {g} (learned {s.best} {s.proba:.2f}, support {s.support})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
