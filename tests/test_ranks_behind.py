"""The ranks behind in the NCCL watchdog's sequence numbers, and counters too far apart to compare."""

from __future__ import annotations

from scan_helpers import rec

from l4lite.detect.base import Finding
from l4lite.diagnose.evidence import ranks_behind

LINE = "[E ProcessGroupNCCL.cpp:828] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={s}, " \
       "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 milliseconds before timing out."


def _timeouts(seqs: dict[int, int]) -> list[Finding]:
    return [Finding("rules", "unknown", "cascade", 0.35, "watchdog", rank=r,
                    records=[rec(LINE.format(r=r, s=s), rank=r, line=r + 1)]) for r, s in seqs.items()]


def test_the_rank_a_few_collectives_behind_is_named() -> None:
    assert ranks_behind(_timeouts({0: 40217, 1: 40217, 2: 40216, 3: 40217})) == [2]


def test_counters_a_million_apart_name_no_rank() -> None:
    # one rank's line quotes another process group's (or another run's) counter: nobody is behind anybody
    assert ranks_behind(_timeouts({0: 40217, 1: 40217, 2: 1132079, 3: 1132079})) == []
    assert ranks_behind(_timeouts({0: 40217, 1: 40217, 2: 40217})) == []
