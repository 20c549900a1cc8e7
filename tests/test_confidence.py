"""The job's confidence: how likely node and category are right, read from how the verdict was reached."""

from __future__ import annotations

from pathlib import Path

from l4lite.api import AnalyzeOptions, analyze
from l4lite.detect.base import Finding
from l4lite.diagnose.confidence import Basis, basis_of, job_confidence
from l4lite.evaluate.scoreboard import job_paths
from l4lite.records import Record

JOBS = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs"


def confidence(job: str) -> float:
    inc = analyze(job_paths(JOBS / job), AnalyzeOptions(heatmap=False)).to_dict()
    return float(inc["confidence"])


def test_a_named_fault_is_trusted_and_an_unread_cause_is_not() -> None:
    # a full disk read by its own rule
    named = confidence("005-ddp-enospc")
    # one rank's traceback of an exception whose words name no component: the generic rule's default category,
    # right 10 of 31 times on lines the rules had not seen (the real jobs repeat one such message 28 times)
    bare = confidence("001-ddp-exception")
    # a link slowed to 32 kbit/s, whose cause no line names: its category is unknown
    unread = confidence("190-fsdp-netslow")
    # a link down every node lost: every rank waited on the others, the link, whose side is a guess
    link = confidence("049-ddp-netdown")
    assert named >= 0.8 and unread <= 0.5 and bare <= 0.5 and unread < link < named


def test_each_doubt_lowers_the_confidence() -> None:
    sure = Basis("rule", cascade_only=False, rival_roots=0, global_scope=False)
    assert job_confidence(sure) >= job_confidence(Basis("generic", False, 0, False)) > \
        job_confidence(Basis("bare", False, 0, False)) >= job_confidence(Basis("none", False, 0, False))
    for doubt in (Basis("rule", True, 0, False), Basis("rule", False, 2, False), Basis("rule", False, 0, True)):
        assert job_confidence(doubt) < job_confidence(sure)
    assert 0.0 <= job_confidence(Basis("nothing known", True, 3, True)) <= 1.0


def _root(text: str, category: str, data: dict[str, object]) -> Finding:
    record = Record(file="rank0.log", line=1, end_line=1, node="node-a", rank=0, gpu=None, source="python",
                    time=None, level="ERROR", message=text, text=text)
    return Finding(detector="rules", category=category, role="root", score=0.3, explain="", node="node-a",
                   rule="py-exception", records=[record], data=data)


def test_a_bare_exception_whose_words_name_nothing_is_a_guess() -> None:
    # out of sample a generic rule's category was right 43 of 52 times where the root lines named a component
    # and 10 of 31 where they named none (the rule's default category, not a reading)
    named = _root("OSError: [Errno 28] No space left on device", "storage", {"fallback": True})
    bare = _root("RuntimeError: something went wrong in step 3", "software", {"fallback": True})
    read = basis_of([named], ["root"], named, "storage", "node")
    guessed = basis_of([bare], ["root"], bare, "software", "node")
    assert read.decided_by == "generic" and guessed.decided_by == "bare"
    assert job_confidence(guessed) < 0.5 < job_confidence(read)


def test_a_rule_whose_lines_name_another_component_is_doubted() -> None:
    # the rule gave storage; the words of its line name a kernel fault (an illegal memory access: software)
    f = _root("NCCL WARN Cuda failure 'an illegal memory access was encountered' while writing checkpoint",
              "storage", {})
    basis = basis_of([f], ["root"], f, "storage", "node")
    assert basis.decided_by == "rule" and basis.words_other
    assert job_confidence(basis) < job_confidence(Basis("rule", False, 0, False))
