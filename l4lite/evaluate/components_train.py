"""Build the learned component classifier (``rules/components_model.json``) from text the rules may learn from.

Training text: every example of the rule pack's root and symptom rules (labelled with the rule's category), the
excerpts the rules were written from (``fixtures/real/real-failures.jsonl``, ``fixtures/rules/paraphrased.jsonl``),
the *dev* part of the real corpus and the labelled failure lines of ``fixtures/real/lines.jsonl`` (one or a few
lines per public thread, many projects: the corpus alone is too little text to generalise from). The held-out
part is never read here: only its ``source_group``, ``source_url`` and long lines are, compared with the training
text and never shown (``holdout_sources``, ``holdout_lines``), so that a line collected from a held-out thread, or
copying a held-out line, is dropped before training; the score-only fresh samples are filtered alike
(``score_only``, ``Unseen``). Cascade lines are taken out of each excerpt first, since they say
nothing about the cause.

Run from a source checkout: ``python -m l4lite.evaluate.components_train`` (writes the shipped model file).
"""

from __future__ import annotations

import hashlib
import json
import sys
import tomllib
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from l4lite.evaluate.corpus import load_corpus
from l4lite.evaluate.planting import Excerpt
from l4lite.resources import rules_dir
from l4lite.rules.components import is_cascade
from l4lite.rules.learned import MODEL_FILE, NAMES, LinearTextModel, grams

CATEGORIES = ("gpu_hardware", "network", "storage", "host", "oom", "numerical", "data", "software", "user_config")
LEGACY_CATEGORY = {
    "gpu_hardware": "gpu_hardware", "oom": "oom", "storage": "storage", "network": "network",
    "numerical_divergence": "numerical", "user_code/config": "user_config", "software_bug": "software",
    "data": "data", "host": "host",
}
TOKEN_PATTERN = r"[a-z_][a-z_0-9/]+"
MAX_FEATURES = 3000
FEATURES = NAMES  # words and the names with one meaning across projects (``rules.learned.names``)
C = 5.0  # inverse regularisation of the logistic regression
SHARED_CHARS = 30  # a line this long found in two documents is one copied line
# The fresh samples (``fixtures/real/fresh``) whose misses were studied while the layers changed: labelled text
# the model may learn from (``training_text(fresh=STUDIED_FRESH)``; ``a`` is already in ``lines.jsonl``). The shipped
# model is trained without them: with them it cost the held-out category a point (docs/evaluation.md, 2026-12-06,
# "every studied fresh half"). The score-only samples never are: they stay text no layer saw; an entry of one of
# their threads (or of the corpus's held-out part) is dropped wherever it was collected, and so is a line they hold.
STUDIED_FRESH = ("c", "e", "g", "i", "k", "m-study", "n-study", "o-study", "p-study", "q-study", "r-study",
                 "s-study", "t-study", "u-study", "v-study", "w-study", "x-study")
SCORE_ONLY = ("b", "d", "f", "h", "j", "l", "m-score", "n-score", "o-score", "p-score", "q-score", "r-score",
              "s-score", "t-score", "u-score", "v-score", "w-score", "x-score", "neg-f", "neg-h", "neg-j",
              "neg-k", "neg-l", "neg-n")  # a sample not yet collected is skipped


def _doc(lines: Sequence[str]) -> str:
    return "\n".join(line for line in lines if not is_cascade(line))


def shared(doc: str, lines: Collection[str]) -> bool:
    """Whether a document holds one of ``lines`` (stripped, at least ``SHARED_CHARS`` long): a copied line."""
    return any(line.strip() in lines for line in doc.splitlines() if len(line.strip()) >= SHARED_CHARS)


def excerpt_lines(excerpts: Sequence[Excerpt], ids: Collection[str]) -> set[str]:
    """The long lines of the excerpts ``ids``: what a rule example or an older excerpt copied from them holds."""
    return {line.strip() for x in excerpts if x.id in ids for line in x.lines if len(line.strip()) >= SHARED_CHARS}


def _held_out_rows(corpus: Path) -> list[dict]:
    """The corpus rows not marked dev (anything not marked dev is treated as held out)."""
    if not corpus.exists():
        return []
    rows = (json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip())
    return [row for row in rows if row.get("split") != "dev"]


def holdout_sources(corpus: Path) -> set[str]:
    """The ``source_group`` and ``source_url`` of every held-out corpus excerpt, and nothing else of them: text
    from those threads must never reach the model, whichever file it was collected into."""
    return {str(row[k]) for row in _held_out_rows(corpus) for k in ("source_group", "source_url") if row.get(k)}


def holdout_lines(corpus: Path) -> set[str]:
    """The long lines (``SHARED_CHARS``) of the held-out excerpts, only ever compared with training text, never
    shown: a rule example or a collected line that copies one must not teach the model the held-out answer."""
    return {x.strip() for row in _held_out_rows(corpus) for x in row.get("lines", [])
            if len(x.strip()) >= SHARED_CHARS}


class Unseen(NamedTuple):
    """What of the text no layer may learn from reaches the filter: threads (``source_group`` and
    ``source_url``) and long lines."""

    sources: set[str]
    lines: set[str]


def score_only(root: Path, names: Sequence[str] = SCORE_ONLY) -> Unseen:
    """The threads and long lines of the score-only fresh samples ``names`` and of the corpus's held-out part,
    compared with training text and never shown."""
    corpus = root / "fixtures" / "real" / "corpus.jsonl"
    sources, lines = holdout_sources(corpus), holdout_lines(corpus)
    for name in names:
        path = root / "fixtures" / "real" / "fresh" / f"{name}.jsonl"
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                sources.update(str(row[k]) for k in ("source_group", "source_url") if row.get(k))
                lines.update(x.strip() for x in row.get("lines", []) if len(x.strip()) >= SHARED_CHARS)
    return Unseen(sources, lines)


def group_lines(path: Path, groups: Collection[str]) -> set[str]:
    """The long lines (``SHARED_CHARS``) of the ``lines.jsonl`` entries of ``groups``."""
    if not groups or not path.exists():
        return set()
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    return {line.strip() for r in rows if r.get("source_group") in groups for line in r["lines"]
            if len(line.strip()) >= SHARED_CHARS}


def labelled_lines(path: Path, held_out: Collection[str], left_out: Collection[str] = (),
                   groups_out: Collection[str] = ()) -> tuple[list[str], list[str]]:
    """(documents, categories) from ``lines.jsonl``: one document per entry, its cascade lines taken out.

    An entry whose ``source_group`` or ``source_url`` is in ``held_out`` (the corpus's held-out threads) is
    dropped, as is one from a thread in ``groups_out`` or sharing a line with ``left_out`` (a cross-validation
    fold): the file is collected by hand and a guard must not depend on its collector's care."""
    docs: list[str] = []
    labels: list[str] = []
    if not path.exists():
        return docs, labels
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("source_group") in held_out or row.get("source_url") in held_out:
            continue
        if row.get("source_group") in groups_out or row.get("category") not in CATEGORIES:
            continue
        doc = _doc(row["lines"])
        if doc.strip() and not shared(doc, left_out):
            docs.append(doc)
            labels.append(str(row["category"]))
    return docs, labels


def training_text(root: Path, exclude: Collection[str] = (), exclude_lines: Collection[str] = (),
                  fresh: Sequence[str] = (), unseen: Unseen | None = None) -> tuple[list[str], list[str]]:
    """(documents, categories) from the rule pack, the legacy excerpts, the corpus's dev part and the labelled
    failure lines (``labelled_lines``, without the held-out threads), with the studied fresh samples ``fresh``
    (``fixtures/real/fresh/<name>.jsonl``, read as ``lines.jsonl`` is).

    ``exclude``: ids of dev excerpts to leave out (a cross-validation fold, ``benchmarks/category_cv.py``); the
    rule examples and older excerpts that share a line with them go too, since many rule examples were copied
    from dev excerpts and would tell the model the answer. ``exclude_lines``: source groups of ``lines.jsonl`` to
    leave out the same way (``benchmarks/lines_cv.py``). ``unseen`` (by default ``score_only(root)``): an entry
    of a held-out or score-only thread is dropped, and so is every line a document shares with their text."""
    corpus = root / "fixtures" / "real" / "corpus.jsonl"
    excerpts = load_corpus(corpus) if corpus.exists() else []
    lines_file = root / "fixtures" / "real" / "lines.jsonl"
    left_out = excerpt_lines(excerpts, set(exclude)) | group_lines(lines_file, set(exclude_lines))
    docs: list[str] = []
    labels: list[str] = []
    pack = tomllib.loads((rules_dir() / "default.toml").read_text(encoding="utf-8"))
    for rule in pack.get("rule", []):
        if rule.get("category") in CATEGORIES and rule.get("role") in ("root", "symptom"):
            for example in rule.get("examples", []):
                if not shared(example, left_out):
                    docs.append(example)
                    labels.append(rule["category"])
    for name in ("real/real-failures.jsonl", "rules/paraphrased.jsonl"):
        path = root / "fixtures" / name
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                cat = LEGACY_CATEGORY.get(row.get("root_cause") or "")
                doc = _doc(row["lines"])
                if cat and not shared(doc, left_out):
                    docs.append(doc)
                    labels.append(cat)
    for x in excerpts:
        if x.split == "dev" and x.status == "incident" and x.category in CATEGORIES and x.id not in exclude:
            docs.append(_doc(x.lines))
            labels.append(str(x.category))
    fold_groups = {x.source_group for x in excerpts if x.id in exclude} | set(exclude_lines)
    unseen = unseen if unseen is not None else score_only(root)
    for path in [lines_file] + [root / "fixtures" / "real" / "fresh" / f"{name}.jsonl" for name in fresh]:
        more, more_labels = labelled_lines(path, unseen.sources, left_out, fold_groups)
        docs += more
        labels += more_labels
    kept = [(doc, label) for doc, label in zip((without(d, unseen.lines) for d in docs), labels, strict=True)
            if doc.strip()]
    return [d for d, _ in kept], [lab for _, lab in kept]


def without(doc: str, lines: Collection[str]) -> str:
    """``doc`` without the lines it shares with ``lines`` (stripped, compared whole)."""
    return "\n".join(line for line in doc.splitlines() if line.strip() not in lines)


def train(docs: Sequence[str], labels: Sequence[str], max_features: int = MAX_FEATURES,
          features: str | None = None, c: float | None = None) -> LinearTextModel:
    """Fit TF-IDF + logistic regression and keep the ``max_features`` features with the largest weights.

    The terms are the ones the shipped model counts at inference (``rules.learned.grams``), so that the two can
    never disagree on how a text is read."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    kind = features or FEATURES
    vec = TfidfVectorizer(analyzer=lambda d: grams(d, TOKEN_PATTERN, 2, kind), sublinear_tf=True)
    x = vec.fit_transform(docs)
    clf = LogisticRegression(max_iter=3000, C=c if c is not None else C, random_state=0).fit(x, list(labels))
    coef = np.asarray(clf.coef_)
    keep = np.argsort(-np.abs(coef).max(axis=0))[:max_features]
    keep.sort()
    terms = vec.get_feature_names_out()
    return LinearTextModel(
        classes=tuple(str(c) for c in clf.classes_), vocabulary={str(terms[k]): i for i, k in enumerate(keep)},
        idf=np.asarray(vec.idf_)[keep], coef=coef[:, keep], intercept=np.asarray(clf.intercept_),
        token_pattern=TOKEN_PATTERN, ngrams=2, kind=kind,
    )


def fingerprint(docs: Sequence[str], labels: Sequence[str]) -> str:
    """A hash of the training text and the settings the model is fitted with, stored in the model file: a test
    recomputes it from the fixtures, so that the shipped model cannot drift from what this module writes (a rule
    example, a collected line or the score-only filter changed without retraining)."""
    settings = {"token_pattern": TOKEN_PATTERN, "ngrams": 2, "features": FEATURES, "max_features": MAX_FEATURES,
                "c": C}
    text = json.dumps({"settings": settings, "docs": list(docs), "labels": list(labels)}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def main(argv: Sequence[str] | None = None) -> int:
    root = Path(argv[0] if argv else ".").resolve()
    docs, labels = training_text(root)
    model = train(docs, labels)
    data = model.to_dict() | {"training": {"documents": len(docs), "fingerprint": fingerprint(docs, labels)}}
    tmp = MODEL_FILE.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
    tmp.replace(MODEL_FILE)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
