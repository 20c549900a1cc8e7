"""A zone belongs to a writer, not to a file: inside one ``kubectl logs --prefix`` (or ``srun --label``) file, a
pod whose container logs local time hours ahead is read in the job's time, found from its own first and last
lines against its peers' (``ingest.writerclocks``), so that it cannot move the job's failure time."""

from __future__ import annotations

from pathlib import Path

from l4lite.ingest.context import build_context
from l4lite.ingest.files import discover
from l4lite.ingest.writerclocks import WriterLines, writer_spans
from l4lite.ingest.zones import in_writer_zones
from l4lite.records import Accounting, Record


def _pod(name: str, host: str, hour: int, last: str = "") -> list[str]:
    lines = [f"2026-12-03 {hour:02d}:{m:02d}:05,100 INFO [rank0] initialized process group: host={host}"
             for m in range(0, 20, 2)]
    lines += [f"2026-12-03 {hour:02d}:20:05,300 INFO step 100 loss 2.31", *([last] if last else [])]
    return [f"[pod/{name}/train] {ln}" for ln in lines]


def _context(tmp_path: Path, ahead: int):
    body = [*_pod("w-0", "node-a", 14), *_pod("w-1", "node-b", 14),
            *_pod("w-2", "node-c", 14 + ahead, "Traceback (most recent call last):")]
    (tmp_path / "kubectl-logs.txt").write_text("\n".join(body) + "\n")
    return build_context(discover([str(tmp_path)], Accounting()).files, accounting=Accounting())


def test_a_pod_hours_ahead_inside_one_merged_file_is_read_in_the_jobs_time(tmp_path: Path) -> None:
    ctx = _context(tmp_path, 8)
    assert ctx.node_shifts == {"node-c": 8 * 3600.0}
    assert ctx.end is not None and ctx.end < ctx.start + 3600  # the job's span is its majority's hour, not 8 h


def test_writers_on_one_clock_move_nothing(tmp_path: Path) -> None:
    ctx = _context(tmp_path, 0)
    assert ctx.node_shifts == {}


def test_a_writers_span_skips_untimed_lines_and_keeps_its_stated_epoch() -> None:
    w = WriterLines()
    lines = ["3: 2026-12-03 14:00:01 INFO start", "3:   File \"x.py\", line 3", "3: 2026-12-03 14:05:09 INFO end",
             '3: {"message": {"message": "RuntimeError: x", "extraInfo": {"timestamp": "1796313909"}}}', "3: Traceback (most"]
    for ln in lines:
        w.feed(ln, 3)
    got = writer_spans({"3": w, "4": WriterLines()}, {"3": "node-a", "4": "node-b"}.get, 2026, 2026)
    assert list(got) == ["node-a"]  # a label with no timed line gives no clock
    span = got["node-a"]
    assert span.last - span.first == 308.0
    assert span.stated == [1796313909.999]


def test_a_line_far_outside_its_writers_own_span_keeps_the_jobs_time() -> None:
    # node-c logs 8 h ahead from 10000 to 10600 as written; its one UTC-stamped line (a component of its own clock)
    # reads 8 h before that span and is already in the job's time
    def rec(t: float) -> Record:
        return Record("kubectl-logs.txt", 1, 1, "node-c", None, None, "app", t, None, "x", "x")

    got = list(in_writer_zones(iter([rec(10300.0), rec(10300.0 - 28800)]), {"node-c": 28800.0}, None,
                               {"node-c": (10000.0, 10600.0)}))
    assert [r.time for r in got] == [10300.0 - 28800, 10300.0 - 28800]


def _pdsh_context(tmp_path: Path, ahead: int):
    """One ``pdsh -w`` file of three hosts, each line after ``host: ``; node-c logs ``ahead`` hours ahead."""
    parts = [("node-a", _pod("w-0", "node-a", 14)), ("node-b", _pod("w-1", "node-b", 14)),
             ("node-c", _pod("w-2", "node-c", 14 + ahead, "Traceback (most recent call last):"))]
    body = [f"{host}: {ln.split('] ', 1)[1]}" for host, lines in parts for ln in lines]
    (tmp_path / "job.out").write_text("\n".join(body) + "\n")
    return build_context(discover([str(tmp_path)], Accounting()).files, accounting=Accounting())


def test_a_pdsh_host_hours_ahead_inside_one_merged_file_is_read_in_the_jobs_time(tmp_path: Path) -> None:
    # pdsh's ``host: `` prefix is its writer's label, as a pod's ``[pod/...]`` is: each host's part a clock
    ctx = _pdsh_context(tmp_path, 8)
    assert ctx.node_shifts == {"node-c": 8 * 3600.0}
    assert ctx.end is not None and ctx.end < ctx.start + 3600


def test_pdsh_hosts_on_one_clock_move_nothing(tmp_path: Path) -> None:
    assert _pdsh_context(tmp_path, 0).node_shifts == {}


def test_host_like_first_words_of_a_file_that_is_no_pdsh_merge_are_no_writers(tmp_path: Path) -> None:
    # a log whose lines only now and then open with ``word-1: `` is no host-prefixed merge: no writer of its own
    lines = [f"2026-12-03 14:{m:02d}:05,100 INFO step {m} loss 2.31" for m in range(40)]
    lines[5] = "node-a: 2026-12-03 14:05:05,100 INFO reachable"
    lines[30] = "node-c: 2026-12-03 22:30:05,100 INFO reachable"
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    ctx = build_context(discover([str(tmp_path)], Accounting()).files, accounting=Accounting())
    assert ctx.writer_lines == {} and ctx.node_shifts == {}
