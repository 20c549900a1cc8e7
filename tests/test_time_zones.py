"""A node whose whole log is in another time zone (no offset written) is read in the job's time, only when more
than one piece of evidence agrees; a node that joined late or ran on is not moved."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from l4lite.ingest.context import build_context
from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.ingest.zones import NodeClock, zone_shifts
from l4lite.records import Accounting

T0 = datetime(2026, 12, 3, 14, 0, 0, tzinfo=UTC)


def _lines(start: datetime, n: int, last: str = "INFO step") -> str:
    stamps = [(start + timedelta(seconds=10 * i)).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3] for i in range(n)]
    return "".join(f"{s} {'INFO step ' + str(i) if i < n - 1 else last}\n" for i, s in enumerate(stamps))


def _job(tmp: Path, ahead: dict[str, timedelta], error_at: dict[str, datetime] | None = None) -> None:
    """Nodes gpu-node-1.. logging 10 lines each from T0, each moved by its clock's ``ahead``; a node in ``error_at`` has a
    torchelastic error file stating that time in epoch seconds (zone-free)."""
    for node, delta in ahead.items():
        (tmp / node).mkdir()
        (tmp / node / "train.log").write_text(_lines(T0 + delta, 10, "ERROR boom" if node == "gpu-node-1" else "INFO end"))
        if error_at and node in error_at:
            record = {"message": {"message": "RuntimeError: boom", "extraInfo": {
                "py_callstack": "Traceback", "timestamp": str(int(error_at[node].timestamp()))}}}
            (tmp / node / "error.json").write_text(json.dumps(record) + "\n")


def _ends(tmp: Path) -> dict[str, float]:
    acc = Accounting()
    ctx = build_context(discover([str(tmp)], acc).files, accounting=acc)
    options = IngestOptions()
    options.use(ctx)
    last: dict[str, float] = {}
    for r in iter_records([str(tmp)], options, Accounting()):
        if r.time is not None and r.file.endswith("train.log"):
            last[r.file] = max(last.get(r.file, r.time), r.time)
    return last


def test_a_node_eight_hours_ahead_among_three_is_read_in_the_jobs_time(tmp_path: Path) -> None:
    _job(tmp_path, {"gpu-node-1": timedelta(0), "gpu-node-2": timedelta(0), "gpu-node-3": timedelta(hours=8)})
    acc = Accounting()
    ctx = build_context(discover([str(tmp_path)], acc).files, accounting=acc)
    assert ctx.node_shifts == {"gpu-node-3": 8 * 3600.0}
    assert ctx.end is not None and ctx.end - ctx.start < 120  # the job's span is not stretched by eight hours
    assert any("gpu-node-3" in w and "its first line" in w and "its last line" in w for w in acc.warnings)
    ends = _ends(tmp_path)
    assert abs(ends["gpu-node-3/train.log"] - ends["gpu-node-1/train.log"]) < 1  # the ERROR on gpu-node-1 is the job's last line again


def test_two_nodes_split_evenly_are_told_apart_by_an_error_files_epoch_seconds(tmp_path: Path) -> None:
    ahead = T0 + timedelta(seconds=95)
    _job(tmp_path, {"gpu-node-1": timedelta(0), "gpu-node-2": timedelta(hours=8)}, {"gpu-node-2": ahead})
    assert build_context(discover([str(tmp_path)], Accounting()).files).node_shifts == {"gpu-node-2": 8 * 3600.0}


def test_a_gzipd_copy_of_the_job_is_read_in_the_same_zones(tmp_path: Path) -> None:
    # a .gz and its plain copy are the same evidence: the error file's epoch seconds are read inflated
    ahead = T0 + timedelta(seconds=95)
    _job(tmp_path, {"gpu-node-1": timedelta(0), "gpu-node-2": timedelta(hours=8)}, {"gpu-node-2": ahead})
    for f in [p for p in tmp_path.rglob("*") if p.is_file()]:
        f.with_name(f.name + ".gz").write_bytes(gzip.compress(f.read_bytes()))
        f.unlink()
    assert build_context(discover([str(tmp_path)], Accounting()).files).node_shifts == {"gpu-node-2": 8 * 3600.0}


def test_two_nodes_with_nothing_zone_free_are_left_as_written(tmp_path: Path) -> None:
    _job(tmp_path, {"gpu-node-1": timedelta(0), "gpu-node-2": timedelta(hours=8)})
    ctx = build_context(discover([str(tmp_path)], Accounting()).files)
    assert ctx.node_shifts == {}
    # which clock is right is unknown, but the offset is: stated as the job's clock skew, for phases and spans
    assert ctx.clock_skew["exceeds"] and ctx.clock_skew["reference"] == "gpu-node-1"
    assert ctx.clock_skew["nodes"]["gpu-node-2"]["seconds"] == 8 * 3600.0


def test_a_node_of_another_zone_does_not_move_the_phase(tmp_path: Path) -> None:
    # a real two-node JAX job killed in training, cpu-node-b's glog lines eight hours ahead: nothing zone-free says
    # which clock is right, and the failure must still read as in training on the clock of the lines that tell it
    import re
    import shutil

    from l4lite.api import analyze
    from l4lite.options import AnalyzeOptions

    job = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs" / "074-jax-sigkill"
    shutil.copytree(job, tmp_path / "job", ignore=shutil.ignore_patterns("ground_truth.json"))

    def ahead(m: re.Match[str]) -> str:
        t = datetime.strptime("2024" + m[2], "%Y%m%d %H:%M:%S") + timedelta(hours=8)
        return m[1] + t.strftime("%m%d %H:%M:%S")
    for p in (tmp_path / "job" / "cpu-node-b").glob("*.log"):
        p.write_text(re.sub(r"^([IWEF])(\d{4} \d\d:\d\d:\d\d)", ahead, p.read_text(), flags=re.M))
    incident = analyze([str(tmp_path / "job")], AnalyzeOptions())
    assert incident.phase == "train", incident.summary


def test_a_late_joiner_or_a_node_that_ran_on_is_not_moved() -> None:
    t = T0.timestamp()
    peers = {"gpu-node-1": NodeClock(t, t + 600, []), "gpu-node-2": NodeClock(t + 1, t + 601, [])}
    late = NodeClock(t + 3600, t + 600, [])  # restarted an hour later, failed with the others
    longer = NodeClock(t, t + 600 + 3600, [])  # started with them, logged an hour more
    assert zone_shifts({**peers, "gpu-node-3": late}, {}) == []
    assert zone_shifts({**peers, "gpu-node-3": longer}, {}) == []
    moved = NodeClock(t + 3600, t + 4200, [])
    assert [z.node for z in zone_shifts({**peers, "gpu-node-3": moved}, {})] == ["gpu-node-3"]
    # the simultaneous events say its clock agrees with the others: it really ran an hour later
    assert zone_shifts({**peers, "gpu-node-3": moved}, {"gpu-node-1": 0.0, "gpu-node-2": 0.5, "gpu-node-3": 1.0}) == []


def test_an_offset_of_no_whole_quarter_hours_is_no_zone() -> None:
    t = T0.timestamp()
    peers = {"gpu-node-1": NodeClock(t, t + 600, []), "gpu-node-2": NodeClock(t, t + 600, [])}
    assert zone_shifts({**peers, "gpu-node-3": NodeClock(t + 3600 + 300, t + 4200 + 300, [])}, {}) == []


def test_an_error_file_no_node_is_known_for_still_tells_an_even_split_apart(tmp_path: Path) -> None:
    # every file in one folder under a number: the error file's writer is unknown, but the epoch time it states
    # is the job's time at the failure, so the node whose last line lies eight hours from it is the one off
    ahead = T0 + timedelta(seconds=95)
    _job(tmp_path, {"gpu-node-1": timedelta(0), "gpu-node-2": timedelta(hours=8)}, {"gpu-node-2": ahead})
    (tmp_path / "gpu-node-2" / "error.json").rename(tmp_path / "error.json")
    ctx = build_context(discover([str(tmp_path)], Accounting()).files)
    assert ctx.node_of("error.json") is None
    assert ctx.node_shifts == {"gpu-node-2": 8 * 3600.0}
