"""A rank's progress lines in two files at once (its own log and the agent's ``--tee`` copy in the console): the
copy's series runs beside the original, not after it."""

from __future__ import annotations

from scan_helpers import DigitMiner, rec

from l4lite.detect.health import HealthDetector
from l4lite.detect.series import align_copies
from l4lite.records import Record
from l4lite.scan.jobscan import MetricPoint
from l4lite.scan.scanner import scan_records

LOSSES = [5.7, 5.68, 5.65, 5.6, 5.55, 5.49, 5.42, 5.35, 22.1, 89.2, 172.0, 259.0, 360.0, 466.0, 559.0, 646.0]


def bar(k: int, loss: float) -> str:
    """An Ignite progress bar: a loss and no step of its own."""
    return f"Epoch [1/2]: [{k}/20]  {5 * k}%|███       , batch loss={loss} [00:00<00:00]"


def copies(prefix: str, file: str) -> list[Record]:
    return [rec(prefix + bar(k, loss), node="a100-rack2-14", rank=0, time=1000.0, file=file, line=k + 1)
            for k, loss in enumerate(LOSSES)]


def test_a_tee_copy_of_one_rank_is_no_recovery() -> None:
    """Both files named by global rank 0 (a ``run/<host>/rank0/`` tree): counted on across the two files, the
    copy's first, low losses came after the original's last and read as a recovery (an anomaly, not a root)."""
    records = copies("[default0]:", "run/a100-rack2-14/console.log") + copies("", "run/a100-rack2-14/rank0/stderr.log")
    scan = scan_records(records, DigitMiner())
    spike = next(f for f in HealthDetector().detect(scan) if f.data.get("signal") == "loss_spike")
    assert spike.role == "root" and spike.data["sustained"] and spike.category == "numerical"


def point(file: str, seq: int, time: float | None) -> MetricPoint:
    return MetricPoint("n1", 0, time, None, file, seq, loss=1.0, seq=seq)


def test_a_later_file_keeps_the_scans_order_and_a_side_by_side_one_restarts() -> None:
    first = [point("a.log", k, 10.0 + k) for k in range(1, 5)]  # seq 1-4, times 11-14
    later = [point("b.log", k, 20.0 + k) for k in range(5, 7)]  # a restarted attempt: after a.log
    beside = [point("c.log", k, 5.0 + k) for k in range(7, 9)]  # begins at 12, the time of a.log's second point
    untimed = [point("d.log", 9, None)]
    out = align_copies(first + later + beside + untimed)
    assert [p.seq for p in out] == [1, 2, 3, 4, 5, 6, 2, 3, 9]
    assert [p.seq for p in beside] == [7, 8]  # the scan's points are not changed in place
