"""A generic rule (any exception, a code error by its class) says that something failed, not what: the words of
its line decide the category, through the lexicon and then the learned model. The lines are written for these
tests."""

from __future__ import annotations

import pytest
from test_rulepack import rec, scan_with

from l4lite.detect import rules as rules_detector
from l4lite.detect.rules import RuleDetector
from l4lite.rules.pack import RulePack

PACK = RulePack.load()


def _only(line: str) -> tuple[str | None, str]:
    (f,) = [f for f in RuleDetector(PACK).detect(scan_with([rec(line)])) if f.role == "root"]
    return f.rule, f.category


def test_a_full_shared_memory_is_a_setting_and_a_full_disk_is_storage() -> None:
    assert _only("OSError: [Errno 28] No space left on device: '/dev/shm/torch_77_1024'") == \
        ("enospc-shm", "user_config")
    assert _only("posix_fallocate failed on /dev/shm/nccl-q8: No space left on device") == \
        ("enospc-shm", "user_config")
    assert _only("OSError: [Errno 28] No space left on device: '/lustre/run7/ckpt/step_900.pt'") == \
        ("enospc", "storage")


def test_a_code_error_class_takes_the_category_its_words_name() -> None:
    # an attribute of nothing: the code's own bug, not its configuration
    assert _only("[rank2]: AttributeError: 'NoneType' object has no attribute 'rotary_dim'") == \
        ("python-code-error", "software")
    # words that name nothing: the class's own category stays
    assert _only("KeyError: 'rope_scaling_kind'")[1] == "user_config"


def test_the_learned_model_reads_a_generic_exception_the_lexicon_cannot_place(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a launch that never set up its process group: the model has seen such lines called configuration
    line = "RuntimeError: Default process group has not been initialized, please make sure to call init_process_group."
    assert _only(line) == ("python-exception", "user_config")
    monkeypatch.setattr(rules_detector, "GENERIC_LEARNED", False)
    assert _only(line) == ("python-exception", "software")
