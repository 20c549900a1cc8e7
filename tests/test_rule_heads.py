"""Rule answers by a message's part from the rules' literal heads: the same answers, far fewer searches."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import pytest
from scan_helpers import counted_scan, real_job_lines

from l4lite.rules.blind import from_head, literal_head, rule_heads
from l4lite.rules.pack import RulePack
from l4lite.scan import runpath

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import format_zoo  # noqa: E402


@pytest.mark.parametrize(("pattern", "ignore_case", "head"), [
    (r"number of nan iterations:\s{0,200}(?P<n>[1-9]\d{0,200})\b", False, "number of nan iterations:"),
    (r"CUDA error: (?P<what>[^\n]{1,80})", False, "CUDA error: "),
    (r"abc(?<!b)d", False, None),  # a lookbehind may look before the match's start
    (r"abc(?:x|(?<=c)y)", False, None),
    (r"abc(?=d)", False, "abc"),  # a lookahead does not
    (r"\babc", False, None),  # a word edge first looks at the character before
    (r"^abc", False, None),
    (r"(?i)abc", False, None),
    (r"abc", True, None),
    (r"ab\d", False, None),  # too short a head
    (r"foo|bar", False, None),
    (r"(foo)bar", False, None),
    (r"(", False, None),
])
def test_heads(pattern: str, ignore_case: bool, head: str | None) -> None:
    assert literal_head(pattern, ignore_case) == head


def _texts() -> list[str]:
    """Zoo trainer lines, real-job lines and every rule's examples, each also behind a stretch of another text,
    and with a rule's head doubled."""
    rnd = random.Random(7)
    out = []
    for fmt in ("megatron", "megatron-deepspeed", "deepspeed", "nemo", "storage"):
        it = format_zoo.FORMATS[fmt][0](1, random.Random(3))
        out += [next(it) for _ in range(100)]
    out += real_job_lines(rnd, 30)
    pack = RulePack.load()
    for rule in pack.rules:
        out += [str(x) for x in (*getattr(rule, "examples", ()), *getattr(rule, "counter_examples", ()))]
    more = []
    for text in out:
        cut = rnd.randrange(len(text) + 1)
        more.append(text[cut:] + " | " + text)
        more.append(text[:cut] + text)
    return out + more


def test_a_rule_meets_a_text_as_it_meets_its_part_from_the_head() -> None:
    pack = RulePack.load()
    headed = [(rule, literal_head(rule.pattern, rule.ignore_case)) for rule in pack.rules]
    headed = [(rule, head) for rule, head in headed if head is not None]
    assert len(headed) > 20
    met = 0
    for text in _texts():
        for rule, head in headed:
            expect = bool(pack.match_ids((rule,), text, None))
            met += expect
            assert bool(pack.match_ids((rule,), from_head(text, (head,)), None)) == expect, (rule.id, text)
    assert met > 50
    # several rules: from the first place any of their heads occurs
    rules = tuple(rule for rule, _ in headed[:6])
    heads = rule_heads(rules)
    assert heads is not None
    for text in _texts()[::5]:
        assert pack.match_ids(rules, text, None) == pack.match_ids(rules, from_head(text, heads), None)


def _scan(job: Path, monkeypatch: pytest.MonkeyPatch, heads: bool) -> tuple[dict[str, Any], int]:
    return counted_scan(job, monkeypatch, *(() if heads else ((runpath, "rule_heads"),)))


def test_megatron_metric_lines_searched_once_per_head_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each Megatron iteration line is new (its losses and times) and its gate lets ``nan-iterations`` in: by
    message, every line was searched; by its part from ``number of nan iterations:`` nearly none is."""
    format_zoo.generate("megatron", tmp_path / "megatron", 64_000)
    by_head, head_calls = _scan(tmp_path / "megatron", monkeypatch, True)
    by_message, message_calls = _scan(tmp_path / "megatron", monkeypatch, False)
    assert by_head == by_message
    # (about 18,700 by message since lines a plan reads join runs; the contrast is what is asserted)
    assert message_calls > 15_000 and head_calls < 100, (head_calls, message_calls)
