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
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from l4lite.errors import L4Error

MODEL_FILE = Path(__file__).resolve().parent / "components_model.json"
MODEL_SCHEMA = "l4lite.components_model/1"


@dataclass(frozen=True)
class LinearTextModel:
    """TF-IDF (sublinear tf, l2 norm, word n-grams) followed by a multinomial logistic regression."""

    classes: tuple[str, ...]
    vocabulary: dict[str, int]
    idf: np.ndarray
    coef: np.ndarray  # classes x features
    intercept: np.ndarray
    token_pattern: str
    ngrams: int

    def features(self, text: str) -> np.ndarray:
        tokens = re.findall(self.token_pattern, text.lower())
        grams = list(tokens)
        for n in range(2, self.ngrams + 1):
            grams += [" ".join(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
        x = np.zeros(len(self.vocabulary))
        for gram, count in Counter(grams).items():
            k = self.vocabulary.get(gram)
            if k is not None:
                x[k] = (1.0 + math.log(count)) * self.idf[k]
        norm = float(np.linalg.norm(x))
        return x / norm if norm > 0 else x

    def proba(self, text: str) -> dict[str, float]:
        z = self.coef @ self.features(text) + self.intercept
        e = np.exp(z - z.max())
        p = e / e.sum()
        return {c: float(v) for c, v in zip(self.classes, p, strict=True)}

    def to_dict(self) -> dict[str, object]:
        return {"schema": MODEL_SCHEMA, "classes": list(self.classes), "vocabulary": self.vocabulary,
                "idf": [round(float(v), 5) for v in self.idf],
                "coef": [[round(float(v), 5) for v in row] for row in self.coef],
                "intercept": [round(float(v), 5) for v in self.intercept], "token_pattern": self.token_pattern,
                "ngrams": self.ngrams}


def model_from_dict(data: dict[str, object], origin: str = "model") -> LinearTextModel:
    if not isinstance(data, dict) or data.get("schema") != MODEL_SCHEMA:
        raise L4Error(f"{origin}: not a {MODEL_SCHEMA} file")
    try:
        return LinearTextModel(
            classes=tuple(str(c) for c in data["classes"]),  # type: ignore[attr-defined]
            vocabulary={str(k): int(v) for k, v in data["vocabulary"].items()},  # type: ignore[attr-defined]
            idf=np.asarray(data["idf"], dtype=float), coef=np.asarray(data["coef"], dtype=float),
            intercept=np.asarray(data["intercept"], dtype=float), token_pattern=str(data["token_pattern"]),
            ngrams=int(data["ngrams"]),  # type: ignore[call-overload]
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
