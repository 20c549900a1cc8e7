"""The job's confidence: how likely node and category are right, read from how the verdict was reached."""

from __future__ import annotations

from pathlib import Path

from l4lite.api import AnalyzeOptions, analyze
from l4lite.diagnose.confidence import Basis, job_confidence
from l4lite.evaluate.scoreboard import job_paths

JOBS = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs"


def confidence(job: str) -> float:
    inc = analyze(job_paths(JOBS / job), AnalyzeOptions(heatmap=False)).to_dict()
    return float(inc["confidence"])


def test_a_clean_exception_is_trusted_and_an_unread_cause_is_not() -> None:
    # one rank's traceback, read by the generic exception rule: a low-scored finding, an easy verdict (it read 30 %)
    clean = confidence("001-ddp-exception")
    # a link slowed to 32 kbit/s, whose cause no line names: its category is unknown
    unread = confidence("190-fsdp-netslow")
    # a link down every node lost (it read 100 %): every rank waited on the others, the link, whose side is a guess
    link = confidence("049-ddp-netdown")
    assert clean >= 0.7 and unread <= 0.5 and unread < link < clean


def test_each_doubt_lowers_the_confidence() -> None:
    sure = Basis("rule", cascade_only=False, rival_roots=0, global_scope=False)
    assert job_confidence(sure) > job_confidence(Basis("generic", False, 0, False)) > \
        job_confidence(Basis("none", False, 0, False))
    for doubt in (Basis("rule", True, 0, False), Basis("rule", False, 2, False), Basis("rule", False, 0, True)):
        assert job_confidence(doubt) < job_confidence(sure)
    assert 0.0 <= job_confidence(Basis("nothing known", True, 3, True)) <= 1.0
