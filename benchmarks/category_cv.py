"""Category on excerpts the category mechanisms were not fitted to: grouped cross-validation over the dev part.

Usage: python benchmarks/category_cv.py [--folds 5] [--layout rank-files] [--drop-fold-rules] [--no-jobs] [--show]
       [--learned-min P] [--learned-support N] [--learned-first] [--lines] [--fresh] [--in-sample] [--tiers FILE]

``--lines`` plants the entries of ``fixtures/real/lines.jsonl`` (short labelled failure text from threads outside
the corpus) instead of the dev part, folds by their source groups: a second proxy, on text no rule was written
from.

The held-out part of the real corpus is the judge of the category mechanisms, and it may be read only rarely;
this is the stand-in made inside the dev part. The dev excerpts are split into ``--folds`` folds by
``source_group`` (one thread never on both sides). For each fold the learned component model is retrained
without the fold (``components_train.training_text(exclude=...)``, which also drops the rule examples and older
excerpts that share a line with the fold) and put in place of the shipped one; the fold's excerpts are planted
in 8-node jobs of one layout and analysed end to end. The held-out part is never read.

``--drop-fold-rules`` also switches off, per fold, every rule one of whose examples shares a line with the
fold: such a rule was most likely written from that excerpt, and would not have been there for a new failure.
The number with it is the pessimistic one (a general rule written from a fold excerpt goes too), the number
without it the optimistic one; a mechanism that generalises raises both.

``--tiers FILE`` writes one row per judged verdict: the reading its confidence was taken from
(``diagnose.confidence.Basis``) and whether node and category were both right; ``confidence_tiers.py`` tables
them. ``--in-sample`` keeps the shipped model and rules in every fold (the dev shares the rules were written
from), for comparison.

Besides the end-to-end category it scores each decision layer on the excerpt's non-cascade lines (the rule
pack's first root or symptom rule with a category, the lexicon, the learned model, lexicon then learned), prints
the confusion table (truth x predicted) and, for each miss, what decided the category: the rule id of the root
evidence line, the lexicon or the learned model (a line no rule matched), the suspect's own lines
(``diagnose.ownlines``), a health signal, or nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from confidence_tiers import TierRow, capturing, row_of, summary, write_rows  # noqa: E402

from l4lite.api import AnalyzeOptions, analyze  # noqa: E402
from l4lite.evaluate import components_train  # noqa: E402
from l4lite.evaluate.corpus import load_corpus  # noqa: E402
from l4lite.evaluate.planting import Excerpt, JobPlanter  # noqa: E402
from l4lite.evaluate.scoreboard import job_paths, load_truth, score_job  # noqa: E402
from l4lite.rules import components, learned  # noqa: E402
from l4lite.rules.pack import RulePack  # noqa: E402
from l4lite.vocab import CATEGORIES  # noqa: E402


class Outcome(NamedTuple):
    """One excerpt's end-to-end category, with what decided it."""

    id: str
    truth: str
    got: str
    layer: str


def labelled_lines(path: Path) -> list[Excerpt]:
    """The entries of ``fixtures/real/lines.jsonl`` as excerpts of failed jobs in training (no phase or node is
    labelled): short failure text no rule was written from, planted like the corpus's excerpts."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [Excerpt(id=str(r["id"]), source_group=str(r["source_group"]), split="lines", status="incident",
                    category=r.get("category"), phase=None, faulty=None, lines=tuple(str(x) for x in r["lines"]))
            for r in rows]


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


def decided_by(inc: Mapping[str, Any]) -> str:
    """What gave the incident its category: the root evidence line's rule, the component classifier, the
    suspect's own lines, a health signal; "nothing" without root evidence."""
    roots = [e for e in inc.get("evidence") or [] if e.get("role") == "root"]
    lead = next((e for e in roots if e.get("category") == inc.get("category")), roots[0] if roots else None)
    if lead is None:
        return "nothing"
    explain = str(lead.get("explain") or "")
    if lead.get("rule"):
        return f"rule:{lead['rule']}"
    if "own lines" in explain:
        return "ownlines"
    if "no known signature" in explain:
        return "learned" if components.LEARNED_WORDS in explain else "lexicon"
    return f"other:{explain[:40]}"


def fold_rules(pack_file: Path, fold_lines: set[str]) -> list[str]:
    """Ids of the shipped rules with an example sharing a line with the fold."""
    import tomllib

    pack = tomllib.loads(pack_file.read_text(encoding="utf-8"))
    return [str(r["id"]) for r in pack.get("rule", [])
            if any(components_train.shared(ex, fold_lines) for ex in r.get("examples", []))]


def confusion(outcomes: Sequence[Outcome]) -> str:
    """Truth (rows) x predicted (columns) over the categories that occur."""
    cats = [c for c in dict.fromkeys((*CATEGORIES, "unknown")) if any(c in (o.truth, o.got) for o in outcomes)]
    counts = Counter((o.truth, o.got) for o in outcomes)
    short = {c: c[:7] for c in cats}
    head = "truth \\ got  " + " ".join(f"{short[c]:>7s}" for c in cats)
    rows = [head] + [f"{c:12s} " + " ".join(f"{counts[(c, g)] or '.':>7}" for g in cats) for c in cats]
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--layout", default="rank-files")
    ap.add_argument("--corpus", default=str(ROOT / "fixtures" / "real" / "corpus.jsonl"))
    ap.add_argument("--drop-fold-rules", action="store_true",
                    help="switch off, per fold, the rules whose examples share a line with the fold")
    ap.add_argument("--lines", action="store_true",
                    help="plant the labelled failure lines (fixtures/real/lines.jsonl) instead of the dev part")
    ap.add_argument("--no-jobs", action="store_true", help="score the layers only, no end-to-end jobs")
    ap.add_argument("--fresh", action="store_true",
                    help="retrain each fold with the studied fresh samples too (components_train.STUDIED_FRESH)")
    ap.add_argument("--show", action="store_true", help="the confusion table and one line per wrong category")
    ap.add_argument("--in-sample", action="store_true",
                    help="keep the shipped model and rules in every fold (no retraining, no rules off)")
    ap.add_argument("--tiers", type=Path, help="write each verdict's confidence reading and rightness here (JSON lines)")
    ap.add_argument("--learned-min", type=float, default=components.LEARNED_MIN,
                    help="probability at which the learned model answers for a line the lexicon cannot place")
    ap.add_argument("--learned-support", type=int, default=components.LEARNED_SUPPORT,
                    help="words the model must know in a line before it guesses")
    ap.add_argument("--learned-first", action="store_true", default=components.LEARNED_FIRST,
                    help="the learned model answers before the lexicon")
    args = ap.parse_args(argv)
    components.LEARNED_MIN = args.learned_min
    components.LEARNED_SUPPORT = args.learned_support
    components.LEARNED_FIRST = args.learned_first
    everything = load_corpus(args.corpus)
    dev = [x for x in everything if x.split == "dev"]  # the held-out part is never read
    if args.lines:
        dev = labelled_lines(ROOT / "fixtures" / "real" / "lines.jsonl")
    pack = RulePack.load()
    fresh = components_train.STUDIED_FRESH if args.fresh else ()
    hits: Counter[str] = Counter()
    answered: Counter[str] = Counter()
    n_cat = dropped = 0
    outcomes: list[Outcome] = []
    tier_rows: list[TierRow] = []
    shipped = learned.shipped_model()
    with tempfile.TemporaryDirectory(prefix="l4lite-cv-") as tmp:
        for fold in range(args.folds):
            part = [x for x in dev if fold_of(x.source_group, args.folds) == fold]
            if args.in_sample:
                model = shipped
            elif args.lines:
                model = components_train.train(*components_train.training_text(
                    ROOT, exclude_lines={x.source_group for x in part}, fresh=fresh))
            else:
                model = components_train.train(*components_train.training_text(
                    ROOT, exclude={x.id for x in part}, fresh=fresh))
            options = AnalyzeOptions()
            if args.drop_fold_rules and not args.in_sample:
                off = fold_rules(ROOT / "l4lite" / "rules" / "default.toml",
                                 components_train.excerpt_lines(dev, {x.id for x in part}))
                dropped += len(off)
                override = Path(tmp) / f"off-{fold}.toml"
                override.write_text("".join(f'[[rule]]\nid = "{r}"\nenabled = false\n\n' for r in off),
                                    encoding="utf-8")
                options = AnalyzeOptions(rules_files=[str(override)])
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
                    with capturing() as seen:
                        inc = analyze(job_paths(job), options).to_dict()
                    r = score_job(job, load_truth(job), inc, "ours", 0.0)
                    row = row_of(x.id, seen, r, inc)
                    if row is not None:
                        tier_rows.append(row)
                    if r.category_ok is not None:
                        outcomes.append(Outcome(x.id, str(x.category), str(inc.get("category")), decided_by(inc)))
            finally:
                learned.shipped_model = saved  # type: ignore[assignment]
    print(f"dev excerpts {len(dev)}, with a category {n_cat}, {args.folds} folds by source group"
          + (f", {dropped} fold rules off" if args.drop_fold_rules else ""))
    for name in ("rule", "lexicon", "learned", "lex+learned"):
        print(f"  {name:12s} right {hits[name]:3d}/{n_cat} ({100 * hits[name] / max(n_cat, 1):5.1f} %), "
              f"answers {answered[name]}/{n_cat}")
    if outcomes:
        ok = sum(o.truth == o.got for o in outcomes)
        unknown = sum(o.got == "unknown" for o in outcomes)
        print(f"  end to end   right {ok:3d}/{len(outcomes)} ({100 * ok / len(outcomes):5.1f} %), unknown {unknown}, "
              f"layout {args.layout}, learned-min {args.learned_min}, support {args.learned_support}"
              + (", learned first" if args.learned_first else ""))
    if args.tiers is not None:
        write_rows(args.tiers, tier_rows)
        print("  confidence readings (verdicts, right): " + ", ".join(
            f"{k} {v['right']}/{v['n']}" for k, v in summary(tier_rows).items()))
    if args.show and outcomes:
        print(confusion(outcomes))
        by_layer = Counter(o.layer.split(":")[0] for o in outcomes if o.truth != o.got)
        print("misses by deciding layer: " + ", ".join(f"{k} {v}" for k, v in by_layer.most_common()))
        for o in outcomes:
            if o.truth != o.got:
                print(f"{o.id}: truth {o.truth}, got {o.got} ({o.layer})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
