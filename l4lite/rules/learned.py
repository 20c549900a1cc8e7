"""The learned component classifier: TF-IDF and logistic regression, shipped as plain data.

Trained at build time by ``l4lite.evaluate.components_train`` from the rule pack's examples, the excerpts the
rules were written from and the dev part of the real corpus (never its held-out part), and saved as JSON: the
vocabulary, the idf weights and the coefficients of the features that matter. Nothing is unpickled; inference is
a few lines of numpy. ``rules.components.component`` asks it only when the lexicon names nothing.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from l4lite.errors import L4Error

MODEL_FILE = Path(__file__).resolve().parent / "components_model.json"
MODEL_SCHEMA = "l4lite.components_model/2"
_SCHEMAS = ("l4lite.components_model/1", MODEL_SCHEMA)
_WHITE = re.compile(r"\s\s+")


def char_grams(text: str, lo: int, hi: int) -> list[str]:
    """scikit-learn's ``char_wb`` analyser: the ``lo``..``hi`` character n-grams of each space-padded word.

    Character n-grams read the parts of a word a new phrasing keeps (``cudaErrorLaunchFailure`` and
    ``CUDA_ERROR_LAUNCH_FAILED`` share ``cuda`` and ``launch``; ``ENOSPC`` and ``ENOSPC:`` are one word),
    which word tokens miss; the grouped cross-validation of ``benchmarks/category_cv.py`` prefers them.
    """
    out: list[str] = []
    for w in _WHITE.sub(" ", text.lower()).split():
        w = f" {w} "
        for n in range(lo, hi + 1):
            offset = 0
            out.append(w[offset:offset + n])
            while offset + n < len(w):
                offset += 1
                out.append(w[offset:offset + n])
            if offset == 0:  # a word shorter than n counts once
                break
    return out


@dataclass(frozen=True)
class LinearTextModel:
    """TF-IDF (sublinear tf, l2 norm per part) of word n-grams and, when ``char_vocabulary`` is set, of
    character n-grams of words, followed by a multinomial logistic regression over both parts side by side."""

    classes: tuple[str, ...]
    vocabulary: dict[str, int]
    idf: np.ndarray  # word features, then character features
    coef: np.ndarray  # classes x features
    intercept: np.ndarray
    token_pattern: str
    ngrams: int
    char_vocabulary: dict[str, int] = field(default_factory=dict)  # indices after the word features
    char_ngrams: tuple[int, int] = (3, 5)

    def features(self, text: str) -> np.ndarray:
        tokens = re.findall(self.token_pattern, text.lower())
        grams = list(tokens)
        for n in range(2, self.ngrams + 1):
            grams += [" ".join(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
        x = np.zeros(len(self.vocabulary) + len(self.char_vocabulary))
        for vocab, counts in ((self.vocabulary, Counter(grams)),
                              (self.char_vocabulary, Counter(char_grams(text, *self.char_ngrams))
                               if self.char_vocabulary else Counter())):
            idx = [(k, count) for gram, count in counts.items() if (k := vocab.get(gram)) is not None]
            for k, count in idx:
                x[k] = (1.0 + math.log(count)) * self.idf[k]
            if idx:  # each part is normalised on its own, as scikit-learn's FeatureUnion of two TF-IDFs
                part = [k for k, _ in idx]
                norm = float(np.linalg.norm(x[part]))
                if norm > 0:
                    x[part] /= norm
        return x

    def proba(self, text: str) -> dict[str, float]:
        z = self.coef @ self.features(text) + self.intercept
        e = np.exp(z - z.max())
        p = e / e.sum()
        return {c: float(v) for c, v in zip(self.classes, p, strict=True)}

    def to_dict(self) -> dict[str, object]:
        return {"schema": MODEL_SCHEMA, "classes": list(self.classes), "vocabulary": self.vocabulary,
                "char_vocabulary": self.char_vocabulary, "char_ngrams": list(self.char_ngrams),
                "idf": [round(float(v), 5) for v in self.idf],
                "coef": [[round(float(v), 5) for v in row] for row in self.coef],
                "intercept": [round(float(v), 5) for v in self.intercept], "token_pattern": self.token_pattern,
                "ngrams": self.ngrams}


def model_from_dict(data: dict[str, object], origin: str = "model") -> LinearTextModel:
    if not isinstance(data, dict) or data.get("schema") not in _SCHEMAS:
        raise L4Error(f"{origin}: not a {MODEL_SCHEMA} file")
    try:
        lo, hi = data.get("char_ngrams") or (3, 5)  # type: ignore[misc]
        return LinearTextModel(
            classes=tuple(str(c) for c in data["classes"]),  # type: ignore[attr-defined]
            vocabulary={str(k): int(v) for k, v in data["vocabulary"].items()},  # type: ignore[attr-defined]
            idf=np.asarray(data["idf"], dtype=float), coef=np.asarray(data["coef"], dtype=float),
            intercept=np.asarray(data["intercept"], dtype=float), token_pattern=str(data["token_pattern"]),
            ngrams=int(data["ngrams"]),  # type: ignore[call-overload]
            char_vocabulary={str(k): int(v)
                             for k, v in (data.get("char_vocabulary") or {}).items()},  # type: ignore[attr-defined]
            char_ngrams=(int(lo), int(hi)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise L4Error(f"{origin}: malformed component model ({exc})") from exc


@lru_cache(maxsize=1)
def shipped_model() -> LinearTextModel | None:
    """The model shipped with the package, or None when it is not there (the lexicon then works alone)."""
    if not MODEL_FILE.exists():
        return None
    try:
        data = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise L4Error(f"{MODEL_FILE}: cannot read the component model ({exc})") from exc
    return model_from_dict(data, str(MODEL_FILE))
