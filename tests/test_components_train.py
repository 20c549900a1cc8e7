"""What the learned component model is trained on: the labelled failure lines of ``fixtures/real/lines.jsonl``
join the training text, and no line from a thread of the corpus's held-out part ever does. The corpus rows and
lines are written for these tests."""

from __future__ import annotations

import json
from pathlib import Path

from l4lite.evaluate import components_train

HELD = "acme/trainer#7"
DEV = "acme/trainer#8"


def _write(path: Path, rows: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _root(tmp_path: Path) -> Path:
    corpus = [
        {"id": "held-1", "source_group": HELD, "source_url": "https://example.org/acme/trainer/issues/7",
         "split": "holdout", "status": "incident", "category": "storage", "lines": ["x"]},
        {"id": "dev-1", "source_group": DEV, "source_url": "https://example.org/acme/trainer/issues/8",
         "split": "dev", "status": "incident", "category": "network",
         "lines": ["quokka transport dropped the wombat link to its peer during allreduce"]},
    ]
    lines = [
        {"id": "a", "source_group": HELD, "source_url": "https://example.org/other", "category": "storage",
         "lines": ["zebrafish volume refused the platypus write of shard 3"], "notes": "same thread, another copy"},
        {"id": "b", "source_group": "acme/trainer#9", "source_url": "https://example.org/acme/trainer/issues/7",
         "category": "storage", "lines": ["narwhal bucket answered late to the axolotl reader"], "notes": "same URL"},
        {"id": "c", "source_group": "acme/trainer#10", "source_url": "https://example.org/acme/trainer/issues/10",
         "category": "data", "lines": ["capybara sample 17 has an unreadable header"], "notes": "kept"},
        {"id": "d", "source_group": "acme/trainer#11", "source_url": "https://example.org/acme/trainer/issues/11",
         "category": "network", "lines": ["quokka transport dropped the wombat link to its peer during allreduce"],
         "notes": "shares a line with the dev excerpt"},
    ]
    _write(tmp_path / "fixtures" / "real" / "corpus.jsonl", corpus)
    _write(tmp_path / "fixtures" / "real" / "lines.jsonl", lines)
    return tmp_path


def test_lines_of_a_held_out_thread_never_reach_the_training_text(tmp_path: Path) -> None:
    docs, labels = components_train.training_text(_root(tmp_path))
    text = "\n".join(docs)
    assert "capybara sample 17" in text  # a line from another thread is read
    assert "zebrafish" not in text  # its source_group is held out
    assert "narwhal" not in text  # its source_url is a held-out excerpt's
    assert labels[docs.index("capybara sample 17 has an unreadable header")] == "data"


def test_the_held_out_sources_are_read_from_the_split_field_only(tmp_path: Path) -> None:
    found = components_train.holdout_sources(_root(tmp_path) / "fixtures" / "real" / "corpus.jsonl")
    assert found == {HELD, "https://example.org/acme/trainer/issues/7"}


def test_a_cross_validation_fold_also_drops_the_lines_that_copy_it(tmp_path: Path) -> None:
    root = _root(tmp_path)
    everything, _ = components_train.training_text(root)
    assert sum("quokka" in d for d in everything) == 2  # the dev excerpt and the line copied from it
    without, _ = components_train.training_text(root, exclude={"dev-1"})
    assert not any("quokka" in d for d in without)
    assert any("capybara" in d for d in without)


def test_the_shipped_lines_file_holds_no_held_out_thread() -> None:
    root = Path(__file__).resolve().parent.parent
    held = components_train.holdout_sources(root / "fixtures" / "real" / "corpus.jsonl")
    rows = [json.loads(x) for x in (root / "fixtures" / "real" / "lines.jsonl").read_text(encoding="utf-8").splitlines()
            if x.strip()]
    assert len(rows) >= 480 and len({r["source_group"] for r in rows}) >= 450
    assert len({r["id"] for r in rows}) == len(rows)
    assert not [r["id"] for r in rows if r["source_group"] in held or r["source_url"] in held]
    for r in rows:
        assert r["category"] in components_train.CATEGORIES and 1 <= len(r["lines"]) <= 6 and r["notes"]


def test_the_studied_fresh_samples_are_read_and_the_score_only_ones_never(tmp_path: Path) -> None:
    root = _root(tmp_path)
    fresh = tmp_path / "fixtures" / "real" / "fresh"
    _write(fresh / "c.jsonl", [
        {"id": "c1", "source_group": "acme/loader#20", "source_url": "https://example.org/acme/loader/issues/20",
         "category": "storage", "lines": ["OSError: tapir shard 4 vanished from the okapi volume"], "notes": "studied"},
        {"id": "c2", "source_group": HELD, "source_url": "https://example.org/x", "category": "storage",
         "lines": ["gecko volume lost the ibex index"], "notes": "a held-out thread collected again"},
    ])
    _write(fresh / "d.jsonl", [
        {"id": "d1", "source_group": "acme/loader#21", "source_url": "https://example.org/acme/loader/issues/21",
         "category": "data", "lines": ["ValueError: marmot record 9 has no lemur field"], "notes": "score only"},
    ])
    docs, labels = components_train.training_text(root, fresh=components_train.STUDIED_FRESH)
    text = "\n".join(docs)
    assert "tapir shard 4" in text and labels[docs.index("OSError: tapir shard 4 vanished from the okapi volume")] == \
        "storage"
    assert "gecko" not in text  # a held-out thread stays out whichever file holds it
    assert "marmot" not in text  # a score-only sample is never training text
    assert "d" not in components_train.STUDIED_FRESH and "c" in components_train.STUDIED_FRESH
    shipped, _ = components_train.training_text(root)  # the shipped model's text: no fresh sample
    assert not any("tapir" in d for d in shipped)


def test_text_shared_with_a_score_only_sample_never_reaches_the_model(tmp_path: Path) -> None:
    root = _root(tmp_path)
    fresh = tmp_path / "fixtures" / "real" / "fresh"
    copied = "RuntimeError: the dormouse allocator gave back the hedgehog page twice"
    _write(fresh / "m-study.jsonl", [
        {"id": "m1", "source_group": "acme/loader#30", "source_url": "https://example.org/acme/loader/issues/30",
         "category": "software", "lines": [copied, "pangolin frame 2 of the jackal module"], "notes": "studied"},
        {"id": "m2", "source_group": "acme/loader#31", "source_url": "https://example.org/acme/loader/issues/31",
         "category": "storage", "lines": ["OSError: the civet mount went stale"], "notes": "same thread, scored"},
    ])
    _write(fresh / "m-score.jsonl", [
        {"id": "m3", "source_group": "acme/loader#31", "source_url": "https://example.org/acme/loader/issues/32",
         "category": "storage", "lines": ["OSError: the civet mount went stale under load"], "notes": "score only"},
        {"id": "m4", "source_group": "acme/loader#33", "source_url": "https://example.org/acme/loader/issues/33",
         "category": "software", "lines": [copied], "notes": "score only, the line copied into a studied entry"},
    ])
    docs, labels = components_train.training_text(root, fresh=components_train.STUDIED_FRESH)
    text = "\n".join(docs)
    assert "m-study" in components_train.STUDIED_FRESH and "m-score" in components_train.SCORE_ONLY
    assert "pangolin frame 2" in text  # the studied entry is read ...
    assert "dormouse" not in text  # ... without the line a score-only entry also holds
    assert "civet" not in text  # a thread with an entry in a score-only sample is never training text
    assert not set(components_train.STUDIED_FRESH) & set(components_train.SCORE_ONLY)
