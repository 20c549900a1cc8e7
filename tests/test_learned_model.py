"""The learned component classifier: its numpy inference equals scikit-learn's, character n-grams read new
spellings of a word, and a cross-validation fold leaves out what was copied from it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from l4lite.evaluate import components_train
from l4lite.rules.learned import char_grams, model_from_dict, shipped_model

sklearn = pytest.importorskip("sklearn")

GPU = ["kernel launch failed with cudaErrorLaunchFailure on device 3",
       "cudaErrorLaunchFailure: unspecified launch failure in the fused optimizer",
       "the device reported cudaErrorLaunchFailure after the all-gather",
       "GPU 5 stopped answering: cudaErrorLaunchFailure"]
NET = ["ibv_post_send returned an error on the second port of the adapter",
       "the fabric port went down and ibv_post_send failed",
       "retransmissions exhausted on the adapter, ibv_post_send error",
       "ibv_post_send failure while sending the gradient bucket"]


def test_char_grams_are_scikit_learns_char_wb():
    from sklearn.feature_extraction.text import TfidfVectorizer

    analyse = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5)).build_analyzer()
    for text in ("OSError: [Errno 28]  No space left\ton device", "a bc", "NCCL WARN NET/IB : Got completion"):
        assert char_grams(text, 3, 5) == analyse(text)


def test_shipped_inference_equals_scikit_learn():
    model = components_train.train(GPU + NET, ["gpu_hardware"] * 4 + ["network"] * 4, max_features=200)
    vec = components_train._vectorizers(model.vocabulary, {g: i - len(model.vocabulary)
                                                            for g, i in model.char_vocabulary.items()})
    x = vec.fit_transform(GPU + NET)
    for text, row in zip(GPU + NET, x.toarray(), strict=True):
        assert np.allclose(model.features(text), row)
    again = model_from_dict(json.loads(json.dumps(model.to_dict())))
    text = "device 2: cudaErrorLaunchFailure while the adapter was fine"
    assert again.proba(text) == pytest.approx(model.proba(text), abs=1e-4)  # JSON keeps 5 decimals


def test_character_ngrams_read_another_spelling_of_the_same_word():
    docs, labels = GPU + NET, ["gpu_hardware"] * 4 + ["network"] * 4
    spelled = "CUDA_ERROR_LAUNCH_FAILED returned by the driver"  # no word token in common with GPU's lines
    with_chars = components_train.train(docs, labels)
    p = with_chars.proba(spelled)
    assert max(p, key=lambda c: p[c]) == "gpu_hardware"
    words_only = components_train.train(docs, labels, chars=False)
    assert words_only.char_vocabulary == {}
    q = words_only.proba(spelled)
    assert q["gpu_hardware"] < p["gpu_hardware"]


def test_models_of_the_first_schema_still_load():
    old = {"schema": "l4lite.components_model/1", "classes": ["a", "b"], "vocabulary": {"disk": 0},
           "idf": [1.0], "coef": [[1.0], [-1.0]], "intercept": [0.0, 0.0], "token_pattern": "[a-z]+", "ngrams": 1}
    model = model_from_dict(old)
    assert model.char_vocabulary == {}
    assert model.proba("disk")["a"] > 0.5


def test_a_fold_leaves_out_the_rule_examples_copied_from_it(tmp_path: Path):
    import tomllib

    from l4lite.resources import rules_dir

    pack = tomllib.loads((rules_dir() / "default.toml").read_text(encoding="utf-8"))
    example = next(e for r in pack["rule"] if r.get("role") == "root" and r.get("category") == "storage"
                   for e in r.get("examples", []) if len(e) >= components_train.SHARED_CHARS)
    row = {"id": "x1", "source_group": "g1", "split": "dev", "status": "incident", "category": "storage",
           "lines": ["step 10 done", example]}
    (tmp_path / "fixtures" / "real").mkdir(parents=True)
    (tmp_path / "fixtures" / "real" / "corpus.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    docs, _ = components_train.training_text(tmp_path)
    assert example in docs and "step 10 done\n" + example in docs
    docs, _ = components_train.training_text(tmp_path, exclude={"x1"})
    assert not any(example in d for d in docs)


@pytest.mark.parametrize(("line", "category"), [
    ("torch.OutOfMemoryError: tried to grab 3.1 GiB more on the accelerator while building the optimizer state",
     "oom"),
    ("NCCL WARN NET/IB : mlx5_2:1 async event: port went down, link lost", "network"),
    ("OSError: [Errno 122] Disk quota exceeded while writing shard 7 of the checkpoint", "storage"),
])
def test_shipped_model_on_lines_in_other_words(line, category):
    model = shipped_model()
    assert model is not None and model.char_vocabulary
    p = model.proba(line)
    assert max(p, key=lambda c: p[c]) == category
