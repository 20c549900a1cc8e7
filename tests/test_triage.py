"""The tail hot path: the fast keyword gate agrees with the rule pack; routine shapes; the adaptive sampler."""

from __future__ import annotations

import json
import re
from pathlib import Path

from l4lite.live.lane import RootLane
from l4lite.live.triage import KeywordGate, Sampler, Triage
from l4lite.records import Record
from l4lite.rules.keys import trie_regex
from l4lite.rules.pack import RulePack

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "real-failures.jsonl"

HEALTHY = [
    "gpu-node003:4101:4203 [1] NCCL INFO Channel 07/0 : 3[1] -> 4[0] via P2P/IPC/read",
    "[rank3]:[2026-01-05 10:00:01,120] INFO data_loader.py:142 prefetched shard 17 (1100 samples) in 12.5 ms",
    "[rank3]:[2026-01-05 10:00:01,120] INFO training.py:1021  iteration     1201/  500000 | consumed samples:"
    "  1229824 | elapsed time per iteration (ms): 991.2 | learning rate: 2.999E-04 | global batch size:  1024 |"
    " lm loss: 2.4100E+00 | loss scale: 1.0 | grad norm: 0.331 | number of skipped iterations:   0 |"
    " number of nan iterations:   0 |",
]


def rec(text: str, *, line: int = 1, end: int | None = None, level: str | None = None) -> Record:
    return Record("f.log", line, end or line, None, None, None, "other", None, level, text.strip(), text)


def corpus() -> list[str]:
    lines = list(HEALTHY)
    for row in FIXTURES.read_text().splitlines():
        lines.extend(json.loads(row)["lines"])
    return lines


def test_trie_regex_matches_exactly_the_words() -> None:
    words = ["nan", "nan iterations", "xid", "x(d", "error"]
    rx = re.compile(trie_regex(words))
    assert rx.fullmatch("nan") and rx.fullmatch("nan iterations") and rx.fullmatch("x(d")
    assert not rx.fullmatch("na") and not rx.fullmatch("xi")
    assert rx.search("number of nan iterations: 0").group() == "nan iterations"  # the longest at a position


def test_routine_never_hides_a_rule_match() -> None:
    pack = RulePack.load()
    triage = Triage(KeywordGate(pack))
    lines = corpus()
    for text in lines + lines:  # the second time every shape is known
        if pack.match(rec(text)):
            assert not triage.routine(rec(text)), text
            assert triage.rule_candidate(rec(text)), text
    assert sum(1 for t in lines if pack.match(rec(t))) > 20  # the corpus does exercise the rules


def test_root_prefilter_finds_every_root_cause_line() -> None:
    pack = RulePack.load()
    lane = RootLane(pack)
    lines = corpus()
    data = "\n".join(lines).encode()
    spans = {data[a:b].decode() for a, b in lane.lines(data)}
    roots = 0
    for text in lines:
        if any(m.rule.role == "root" for m in pack.match(rec(text))):
            roots += 1
            assert text in spans, text
            if not text.startswith(" "):
                assert lane.may_match(text), text
    assert roots > 10
    assert not lane.lines(HEALTHY[0].encode()) and not lane.may_match(HEALTHY[1])
    assert not lane.may_match("[rank8]:[2026-01-05 10:00:00,000] INFO checkpointing.py:88 async save queue depth 1")


def test_routine_needs_a_known_shape_without_anything_in_it() -> None:
    triage = Triage(KeywordGate(RulePack.load()))
    nccl = HEALTHY[0]
    assert not triage.routine(rec(nccl))  # first sight: a full look
    assert triage.routine(rec(nccl.replace("07/0", "12/0").replace("4203", "4207")))  # same shape
    assert not triage.rule_candidate(rec(nccl.replace("07/0", "12/0")))
    progress = HEALTHY[2]
    assert not triage.routine(rec(progress)) and not triage.routine(rec(progress))  # a metric line, always looked at
    xid = "NVRM: Xid (PCI:0000:cb:00): 79, pid=1234, name=python, GPU has fallen off the bus."
    assert not triage.routine(rec(xid)) and not triage.routine(rec(xid))
    assert triage.rule_candidate(rec(xid))
    err = "[rank3]:[2026-01-05 10:00:01,120] INFO step done"
    triage.routine(rec(err))
    assert triage.routine(rec(err)) and not triage.routine(rec(err, level="error"))
    assert not triage.routine(rec(err, line=3, end=5))  # multi-line records are never routine


def test_the_rule_gate_does_not_tell_digits_apart() -> None:
    """What the shape cache relies on: candidates depend on the text with its digits folded."""
    pack = RulePack.load()
    for text in corpus():
        folded = text.translate(str.maketrans("123456789", "000000000"))
        for fld in ("message", "text"):
            assert set(pack.candidates(text, fld)) == set(pack.candidates(folded, fld)), text


def test_sampler_backs_off_under_load_and_recovers() -> None:
    s = Sampler()
    assert all(s.take() for _ in range(10))
    for _ in range(5):
        s.adjust(busy=0.19, interval=0.2)
    assert s.keep < 0.2
    kept = sum(s.take() for _ in range(1000))
    assert abs(kept - 1000 * s.keep) <= 2  # evenly spread, not random
    for _ in range(200):
        s.adjust(busy=0.01, interval=0.2)
    assert s.keep == 1.0
