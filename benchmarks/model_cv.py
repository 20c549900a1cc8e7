"""The learned component model's settings, judged by cross-validation grouped by thread on studied text only.

Usage: python benchmarks/model_cv.py [--folds 5] [--grid] [--generic] [--prior]

The studied text is the dev part of the corpus and the studied fresh halves (``components_train.STUDIED_FRESH``);
``fixtures/real/lines.jsonl`` is training text in every fold. Each entry goes to a fold by its ``source_group``;
for each fold the model is trained without the fold's threads and without any line the fold holds (a rule
example copied from a fold entry would tell the model the answer), and each entry of the fold is classified from
its non-cascade lines. The held-out part of the corpus and the score-only fresh halves are never read here
(only ``components_train.score_only`` compares their threads and lines with training text, to drop them).

``--grid`` scores variants of the classifier (regularisation, word or word-and-name features, class weights,
character n-grams); the shipped model's settings are the first row. ``--generic`` looks at the lines a generic
or fallback rule matches whose words name no component (the rule's own category then stands): for each
probability floor, how often the fold model's best class would be right where it overrules the rule.
``--prior`` reweights the shipped settings' fold probabilities of the two categories given most often
(user_config, software) by a factor below 1, renormalised: a prior correction, scored as the rows of ``--grid``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from category_cv import fold_of  # noqa: E402

from l4lite.detect.rules import words_left  # noqa: E402
from l4lite.evaluate import components_train  # noqa: E402
from l4lite.evaluate.corpus import load_corpus  # noqa: E402
from l4lite.rules import components  # noqa: E402
from l4lite.rules.learned import NAMES, WORDS, grams  # noqa: E402
from l4lite.rules.pack import RulePack  # noqa: E402

FLOORS = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
PRIOR_WEIGHTS = (1.0, 0.8, 0.6, 0.5)  # factors tried on user_config and on software probabilities (``--prior``)


class Entry(NamedTuple):
    """One studied entry: its thread, label, where it comes from and its lines."""

    id: str
    group: str
    truth: str
    origin: str
    lines: tuple[str, ...]


def studied(root: Path) -> list[Entry]:
    """The dev excerpts with a category and the studied fresh halves' entries."""
    out = [Entry(x.id, x.source_group, str(x.category), "dev", tuple(x.lines))
           for x in load_corpus(root / "fixtures" / "real" / "corpus.jsonl")
           if x.split == "dev" and x.status == "incident" and x.category in components_train.CATEGORIES]
    for name in components_train.STUDIED_FRESH:
        path = root / "fixtures" / "real" / "fresh" / f"{name}.jsonl"
        for row in (json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()):
            if row.get("category") in components_train.CATEGORIES:
                out.append(Entry(str(row["id"]), str(row["source_group"]), str(row["category"]), "fresh",
                                 tuple(str(v) for v in row["lines"])))
    return out


def doc(e: Entry) -> str:
    return "\n".join(x for x in e.lines if not components.is_cascade(x))


class Variant(NamedTuple):
    name: str
    fit: Callable[[list[str], list[str]], Callable[[str], dict[str, float]]]


def sk_variant(name: str, c: float, kind: str = NAMES, weight: str | None = None, chars: bool = False,
               shipped: bool = False, estimator: str = "logistic") -> Variant:
    """A classifier variant: the shipped truncated model (``shipped``) or a plain scikit-learn pipeline whose
    ``estimator`` is a logistic regression, a complement naive Bayes (``"cnb"``, ``c`` its smoothing) or a linear
    SVM with sigmoid-calibrated probabilities (``"svm"``)."""

    def fit(docs: list[str], labels: list[str]) -> Callable[[str], dict[str, float]]:
        if shipped:
            model = components_train.train(docs, labels, features=kind, c=c)
            return model.proba
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline, make_union

        words = TfidfVectorizer(analyzer=lambda d: grams(d, components_train.TOKEN_PATTERN, 2, kind),
                                sublinear_tf=True)
        vec = make_union(words, TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True,
                                                min_df=2)) if chars else words
        if estimator == "cnb":
            from sklearn.naive_bayes import ComplementNB

            pipe = make_pipeline(vec, ComplementNB(alpha=c))
        elif estimator == "svm":
            from sklearn.calibration import CalibratedClassifierCV
            from sklearn.svm import LinearSVC

            pipe = make_pipeline(vec, CalibratedClassifierCV(LinearSVC(C=c, class_weight=weight), cv=3))
        else:
            pipe = make_pipeline(vec, LogisticRegression(max_iter=3000, C=c, class_weight=weight, random_state=0))
        pipe.fit(docs, labels)
        classes = [str(k) for k in pipe.classes_]
        return lambda text: dict(zip(classes, (float(v) for v in pipe.predict_proba([text])[0]), strict=True))

    return Variant(name, fit)


VARIANTS = (
    sk_variant("shipped: names C=5 top-3000", 5.0, shipped=True),
    sk_variant("names C=5 all features", 5.0),
    sk_variant("names C=1", 1.0),
    sk_variant("names C=2", 2.0),
    sk_variant("names C=10", 10.0),
    sk_variant("names C=20", 20.0),
    sk_variant("words C=5", 5.0, kind=WORDS),
    sk_variant("names C=5 balanced", 5.0, weight="balanced"),
    sk_variant("names+chars C=5", 5.0, chars=True),
    sk_variant("names, complement NB a=0.3", 0.3, estimator="cnb"),
    sk_variant("names, calibrated linear SVM C=0.5", 0.5, estimator="svm"),
)


class Generic(NamedTuple):
    """A line a generic or fallback rule matched whose words name nothing: the rule's category and the model's."""

    truth: str
    own: str
    best: str
    p: float
    support: int


def generic_lines(e: Entry, pack: RulePack, proba: Callable[[str], dict[str, float]],
                  support: Callable[[str], int]) -> Generic | None:
    """The entry's first line a root or symptom rule with a category matches, when that rule is generic (or a
    fallback) and the words it leaves name no component."""
    for line in e.lines:
        if components.is_cascade(line):
            continue
        for m in pack.match_fields(line, line):
            rule = m.rule
            if rule.role not in ("root", "symptom") or rule.category in (None, "unknown"):
                continue
            if not (rule.generic or rule.fallback):
                return None
            left = words_left(rule, line) if rule.generic else line
            if components.component(left) is not None:
                return None
            rest = components.without_advice(left)
            if not rest.strip():
                return None
            p = proba(rest)
            best = max(p, key=lambda c: p[c])
            return Generic(e.truth, str(rule.category), best, p[best], support(rest))
    return None


def reweighted(p: dict[str, float], weights: dict[str, float]) -> dict[str, float]:
    """``p`` with each class's probability times its weight (1 when not named), summing to 1 again."""
    q = {c: v * weights.get(c, 1.0) for c, v in p.items()}
    total = sum(q.values()) or 1.0
    return {c: v / total for c, v in q.items()}


def prior_table(scored: Sequence[tuple[str, dict[str, float]]]) -> None:
    """Best class right and right/answered at the pipeline's floors for each pair of prior factors."""
    for uc in PRIOR_WEIGHTS:
        for sw in PRIOR_WEIGHTS:
            got = [(t, reweighted(p, {"user_config": uc, "software": sw})) for t, p in scored]
            best = [(t, max(q, key=lambda c: q[c]), q) for t, q in got]
            right = sum(t == b for t, b, _ in best)
            prec = " ".join(f"{f}:{sum(t == b for t, b, q in best if q[b] >= f)}/"
                            f"{sum(q[b] >= f for _, b, q in best)}" for f in FLOORS[3:6])
            given = {c: f"{sum(t == b for t, b, _ in best if b == c)}/{sum(b == c for _, b, _ in best)}"
                     for c in ("user_config", "software")}
            print(f"  user_config x{uc}, software x{sw}: best class right {right}/{len(best)}; right/answered {prec};"
                  f" precision user_config {given['user_config']}, software {given['software']}")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--grid", action="store_true")
    ap.add_argument("--generic", action="store_true")
    ap.add_argument("--prior", action="store_true")
    args = ap.parse_args(argv)
    entries = studied(ROOT)
    base = components_train.score_only(ROOT)
    variants = VARIANTS if args.grid else VARIANTS[:1]
    pack = RulePack.load()
    right: Counter[tuple[str, str]] = Counter()
    sure: Counter[tuple[str, float]] = Counter()
    answered: Counter[tuple[str, float]] = Counter()
    generic: list[Generic] = []
    scored: list[tuple[str, dict[str, float]]] = []
    for fold in range(args.folds):
        part = [e for e in entries if fold_of(e.group, args.folds) == fold]
        groups = {e.group for e in part}
        fold_lines = {x.strip() for e in part for x in e.lines if len(x.strip()) >= components_train.SHARED_CHARS}
        unseen = components_train.Unseen(base.sources | groups, base.lines | fold_lines)
        docs, labels = components_train.training_text(
            ROOT, exclude={e.id for e in part if e.origin == "dev"}, exclude_lines=groups,
            fresh=components_train.STUDIED_FRESH, unseen=unseen)
        for v in variants:
            proba = v.fit(docs, labels)
            for e in part:
                text = components.without_advice(doc(e))
                p = proba(text) if text.strip() else {}
                best = max(p, key=lambda c: p[c]) if p else None
                if args.prior and v is variants[0] and p:
                    scored.append((e.truth, p))
                right[(v.name, e.origin)] += best == e.truth
                for floor in FLOORS:
                    if best is not None and p[best] >= floor:
                        answered[(v.name, floor)] += 1
                        sure[(v.name, floor)] += best == e.truth
            if args.generic and v is variants[0]:
                model = components_train.train(docs, labels)
                for e in part:
                    g = generic_lines(e, pack, model.proba, model.support)
                    if g is not None:
                        generic.append(g)
        print(f"fold {fold}: {len(part)} entries, {len(docs)} training documents", flush=True)
    n = Counter(e.origin for e in entries)
    print(f"studied entries: dev {n['dev']}, fresh {n['fresh']}")
    for v in variants:
        cells = ", ".join(f"{o} {right[(v.name, o)]}/{n[o]}" for o in ("dev", "fresh"))
        total = right[(v.name, "dev")] + right[(v.name, "fresh")]
        prec = " ".join(f"{f}:{sure[(v.name, f)]}/{answered[(v.name, f)]}" for f in FLOORS[3:7])
        print(f"  {v.name:28s} best class right {total}/{len(entries)} ({cells}); right/answered at floor {prec}")
    if args.prior:
        print(f"prior correction of the shipped settings' fold probabilities ({len(scored)} entries):")
        prior_table(scored)
    if args.generic:
        print(f"generic or fallback rule lines whose words name nothing: {len(generic)}")
        own = sum(g.own == g.truth for g in generic)
        print(f"  the rule's own category right: {own}/{len(generic)}")
        for floor in FLOORS:
            for sup in (1, 2):
                got = [g.best if g.p >= floor and g.support >= sup else g.own for g in generic]
                flips = sum(g.p >= floor and g.support >= sup and g.best != g.own for g in generic)
                ok = sum(x == g.truth for x, g in zip(got, generic, strict=True))
                print(f"  model over the rule at p >= {floor}, support >= {sup}: right {ok}/{len(generic)} "
                      f"({flips} overruled)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
