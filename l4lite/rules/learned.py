"""The learned component classifier: TF-IDF and logistic regression, shipped as plain data.

Trained at build time by ``l4lite.evaluate.components_train`` from the rule pack's examples, the excerpts the
rules were written from, the dev part of the real corpus and the labelled failure lines of public threads
(``fixtures/real/lines.jsonl``; never a thread of the corpus's held-out part), and saved as JSON: the
vocabulary, the idf weights and the coefficients of the features that matter. Nothing is unpickled; inference is
a few lines of numpy. ``rules.components.component`` asks it only when the lexicon names nothing.

Besides the words and word pairs of a text, a model may read *names* (``features = "words+names"``): the class
of a traceback's last exception and the words of its message, the packages of its innermost frames
(``torch/cuda``, ``torch/distributed``, ``datasets``, ``fsspec``, ``safetensors``, ``transformers/modeling``)
and errno names. Words are what one project prints; these names mean the same in every project that hits the
same component, which is what a model has to carry to logs it was not trained on.
"""

from __future__ import annotations

import errno
import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from l4lite.errors import L4Error
from l4lite.rules.exceptions import exception_class

MODEL_FILE = Path(__file__).resolve().parent / "components_model.json"
MODEL_SCHEMA = "l4lite.components_model/1"
WORDS = "words"
NAMES = "words+names"

_FRAME_PATH = re.compile(r'File "(?P<path>[^"\n]{1,400})", line \d+')
_PACKAGES = re.compile(r"(?:site|dist)-packages/(?P<mod>[\w.-]{1,80}(?:/[\w.-]{1,80})?)")
_ERRNO_NUMBER = re.compile(r"\[Errno (\d{1,4})\]|\berrno[:=]? ?(\d{1,4})\b", re.I)
_ERRNO_NAME = re.compile(r"\bE(?:[A-Z]{3,12})\b")
_MSG_WORD = re.compile(r"[a-z_][a-z_0-9]{2,}")
INNER_FRAMES = 3  # the frames nearest the failure say which library failed
# Words that say that something failed, not what: they carry no component.
FAILURE_WORDS = frozenset({
    "error", "errors", "err", "failed", "failure", "fail", "fails", "exception", "fatal", "last", "warning", "warn",
    "traceback", "most", "recent", "call", "the", "a", "an", "in", "at", "of", "on", "to", "is", "was", "with",
    "for", "by", "from", "and", "or", "not", "no", "this", "that", "line", "file", "raise", "raised", "occurred",
})


ERRNO_NAMES: dict[int, str] = dict(errno.errorcode)
ERRNO_KNOWN = frozenset(ERRNO_NAMES.values())


def _module(path: str) -> str:
    """A frame's package and subpackage (``torch/cuda``, ``transformers/modeling``), or ``app`` for code
    outside installed packages: the name, not the checkout path, says which library it is."""
    m = _PACKAGES.search(path.replace("\\", "/"))  # Windows paths too
    if m is None:
        return "app"
    parts = m.group("mod").lower().split("/")
    top = parts[0].split(".")[0].split("-")[0]
    if len(parts) == 1:
        return top
    if parts[1].startswith("modeling_"):  # transformers' one file per architecture
        return f"{top}/modeling"
    if parts[1].endswith((".py", ".so")):
        return top
    return f"{top}/{parts[1]}"


def names(text: str) -> list[str]:
    """The names in ``text`` that mean the same across projects, as tokens the word pattern never makes."""
    head = text[:20000]
    out: list[str] = []
    cls = exception_class(head)
    if cls is not None:
        out.append("exc=" + cls.rsplit(".", 1)[-1].lower())
        if "." in cls:
            out.append("excpkg=" + cls.split(".", 1)[0].lower())
        line = next((ln for ln in reversed(head.splitlines()) if cls in ln), "")
        message = line.split(cls, 1)[-1].lower()
        out += ["msg=" + w for w in dict.fromkeys(_MSG_WORD.findall(message[:300]))]
    frames = [m.group("path") for m in _FRAME_PATH.finditer(head)]
    out += ["mod=" + m for m in dict.fromkeys(_module(p) for p in frames[-INNER_FRAMES:])]
    for m in _ERRNO_NUMBER.finditer(head):
        code = int(next(g for g in m.groups() if g))
        if code in ERRNO_NAMES:
            out.append("errno=" + ERRNO_NAMES[code].lower())
    out += ["errno=" + w.lower() for w in _ERRNO_NAME.findall(head) if w in ERRNO_KNOWN]
    return list(dict.fromkeys(out))


def grams(text: str, token_pattern: str, ngrams: int, features: str = WORDS) -> list[str]:
    """The terms a model counts in ``text``: words, word n-grams and (``features`` = NAMES) the names."""
    tokens = re.findall(token_pattern, text.lower())
    out = list(tokens)
    for n in range(2, ngrams + 1):
        out += [" ".join(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
    if features == NAMES:
        out += names(text)
    return out


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
    kind: str = WORDS  # WORDS, or NAMES: the words and the names with one meaning across projects

    def features(self, text: str) -> np.ndarray:
        x = np.zeros(len(self.vocabulary))
        for gram, count in Counter(grams(text, self.token_pattern, self.ngrams, self.kind)).items():
            k = self.vocabulary.get(gram)
            if k is not None:
                x[k] = (1.0 + math.log(count)) * self.idf[k]
        norm = float(np.linalg.norm(x))
        return x / norm if norm > 0 else x

    def support(self, text: str) -> int:
        """How many distinct words of ``text`` the model knows, besides the words every failure prints: a guess
        about a line that holds fewer ("Last error:", "Error: failed") rests on the model's priors alone."""
        return len(self.known_words(text))

    def known_words(self, text: str) -> frozenset[str]:
        """The distinct words of ``text`` the model knows, besides the words every failure prints."""
        words = set(re.findall(self.token_pattern, text.lower())) - FAILURE_WORDS
        return frozenset(w for w in words if w in self.vocabulary)

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
                "ngrams": self.ngrams, "features": self.kind}


def model_from_dict(data: dict[str, object], origin: str = "model") -> LinearTextModel:
    if not isinstance(data, dict) or data.get("schema") != MODEL_SCHEMA:
        raise L4Error(f"{origin}: not a {MODEL_SCHEMA} file")
    if data.get("features", WORDS) not in (WORDS, NAMES):
        raise L4Error(f"{origin}: unknown features {data.get('features')!r}")
    try:
        return LinearTextModel(
            classes=tuple(str(c) for c in data["classes"]),  # type: ignore[attr-defined]
            vocabulary={str(k): int(v) for k, v in data["vocabulary"].items()},  # type: ignore[attr-defined]
            idf=np.asarray(data["idf"], dtype=float), coef=np.asarray(data["coef"], dtype=float),
            intercept=np.asarray(data["intercept"], dtype=float), token_pattern=str(data["token_pattern"]),
            ngrams=int(data["ngrams"]),  # type: ignore[call-overload]
            kind=str(data.get("features", WORDS)),
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
