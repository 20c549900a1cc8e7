"""The learned component model (``rules.learned``): what it reads besides words, and that the shipped numpy
inference reads a text exactly as the scikit-learn pipeline it was trained with. The lines are written for
these tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from l4lite.errors import L4Error
from l4lite.evaluate import components_train
from l4lite.rules import learned
from l4lite.rules.learned import NAMES, WORDS, model_from_dict, names

TRACEBACK = """Traceback (most recent call last):
  File "/home/me/proj/train.py", line 88, in <module>
    main()
  File "/opt/conda/lib/python3.11/site-packages/torch/serialization.py", line 652, in save
    _save(obj, opened_zipfile)
  File "/opt/conda/lib/python3.11/site-packages/torch/cuda/__init__.py", line 301, in _lazy_init
    torch._C._cuda_init()
OSError: [Errno 28] No space left on device: '/ckpt/step_9.pt'"""


def test_names_are_the_exception_its_message_the_frames_packages_and_errno() -> None:
    found = names(TRACEBACK)
    assert "exc=oserror" in found
    assert {"msg=space", "msg=left", "msg=device"} <= set(found)
    assert {"mod=torch/cuda", "mod=torch", "mod=app"} <= set(found)
    assert "errno=enospc" in found


def test_a_qualified_exception_gives_its_package_and_a_model_file_its_architecture() -> None:
    tb = ('  File "/usr/lib/python3/dist-packages/transformers/models/llama/modeling_llama.py", line 9, in f\n'
          '  File "/usr/lib/python3/dist-packages/transformers/modeling_utils.py", line 9, in g\n'
          "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge")
    found = names(tb)
    assert "exc=safetensorerror" in found and "excpkg=safetensors_rust" in found
    assert "mod=transformers/models" in found and "mod=transformers/modeling" in found


def test_a_line_without_names_gives_none_and_errno_words_count() -> None:
    assert names("loss went up at step 100") == []
    assert names("write failed: EDQUOT on /scratch") == ["errno=edquot"]
    assert names("ECC page retired") == []  # an upper-case word that is no errno name


DOCS = [TRACEBACK, "NET/IB : Got completion with error 12, vendor err 129", "CUDA out of memory. Tried to allocate",
        "OSError: [Errno 5] Input/output error", "KeyError: 'lr_scheduler' in config", "ValueError: bad label 7",
        "RuntimeError: NCCL error in: socket timeout from peer", "MemoryError: cannot allocate"]
LABELS = ["storage", "network", "oom", "storage", "user_config", "data", "network", "host"]


@pytest.mark.parametrize("kind", [WORDS, NAMES])
def test_numpy_inference_equals_the_scikit_learn_pipeline(kind: str) -> None:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    model = components_train.train(DOCS, LABELS, max_features=10**6, features=kind)
    vec = TfidfVectorizer(analyzer=lambda d: learned.grams(d, components_train.TOKEN_PATTERN, 2, kind),
                          sublinear_tf=True)
    clf = LogisticRegression(max_iter=3000, C=components_train.C, random_state=0).fit(vec.fit_transform(DOCS), LABELS)
    for text in ("OSError: [Errno 28] No space left on device", "IB completion error from peer", "nothing here"):
        ours = model.proba(text)
        theirs = dict(zip(clf.classes_, clf.predict_proba(vec.transform([text]))[0], strict=True))
        assert np.allclose([ours[c] for c in clf.classes_], [theirs[c] for c in clf.classes_], atol=1e-6)


def test_a_model_file_round_trips_and_an_unknown_feature_kind_is_refused() -> None:
    model = components_train.train(DOCS, LABELS, features=NAMES)
    data = json.loads(json.dumps(model.to_dict()))
    again = model_from_dict(data)
    assert again.kind == NAMES
    assert again.proba(TRACEBACK) == pytest.approx(model.proba(TRACEBACK), abs=1e-4)
    del data["features"]  # a file written before the names were read is a words model
    assert model_from_dict(dict(data)).kind == WORDS
    with pytest.raises(L4Error):
        model_from_dict({**data, "features": "characters"})


def test_no_guess_about_a_line_that_only_says_something_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    from l4lite.rules import components

    model = components_train.train(DOCS, LABELS, features=NAMES)
    monkeypatch.setattr(learned, "shipped_model", lambda: model)
    monkeypatch.setattr(components, "LEARNED_MIN", 0.0)  # any answer the model gives is taken
    assert model.support("Last error:") == 0
    assert components.component("Last error:", learned=True) is None
    assert components.component("Error: the call failed", learned=True) is None
    found = components.component("peer completion lost while reading from socket", learned=True)
    assert found is not None and found.words == (components.LEARNED_WORDS,)


def test_the_shipped_model_is_what_the_trainer_writes_now() -> None:
    """The model file stores the fingerprint of the text and settings it was fitted with; it must be the one
    ``components_train`` computes from the fixtures today (else: ``python -m l4lite.evaluate.components_train``,
    then measure; docs/evaluation.md)."""
    root = Path(__file__).resolve().parent.parent
    stored = json.loads(learned.MODEL_FILE.read_text(encoding="utf-8")).get("training")
    assert stored is not None, "the shipped model carries no training fingerprint"
    docs, labels = components_train.training_text(root)
    assert stored["documents"] == len(docs)
    assert stored["fingerprint"] == components_train.fingerprint(docs, labels)


def test_the_fingerprint_moves_with_a_document_a_label_or_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    base = components_train.fingerprint(DOCS, LABELS)
    assert components_train.fingerprint(list(DOCS), list(LABELS)) == base
    assert components_train.fingerprint(DOCS[:-1] + ["MemoryError: cannot allocate!"], LABELS) != base
    assert components_train.fingerprint(DOCS, LABELS[:-1] + ["oom"]) != base
    assert components_train.fingerprint(DOCS[:-1], LABELS[:-1]) != base
    monkeypatch.setattr(components_train, "C", components_train.C * 2)
    assert components_train.fingerprint(DOCS, LABELS) != base
