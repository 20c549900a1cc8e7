"""A concatenated stream's writers' blocks: two lines a few lines apart are one story only within one block, and
a step back in time between them says a new file of the ``cat`` began (``ingest.catblocks``)."""

from __future__ import annotations

from scan_helpers import rec
from test_localize import _scan

from l4lite.detect.base import Finding
from l4lite.diagnose.firstfail import earlier_failure
from l4lite.diagnose.timeline import cat_blocks, close_to, survived
from l4lite.ingest.catblocks import STEP_BACK, block_starts, crosses, other_block, same_block_near
from l4lite.scan.jobscan import Hit, MetricPoint

T = 1_796_392_488.0  # a driver's untimed traceback borrows this time from the stamped line above it


def _traceback(line: int, time: float | None = T) -> Finding:
    r = rec("RuntimeError: training failed", text="Traceback (most recent call last):\nRuntimeError: failed",
            time=time, line=line, end_line=line + 8, file="job.out", node="n0")
    return Finding("rules", "software", "root", 0.8, "traceback", node="n0", time=time, rule="py-traceback",
                   records=[r], data={"generic": True})


def _notice(line: int, time: float) -> Finding:
    r = rec("Module x cannot be loaded: No module named 'opentelemetry'", time=time, line=line, file="job.out",
            node="n0", text="2026-12-04 13:52:36,535\tINFO utils.py:330 -- Module x cannot be loaded")
    return Finding("components", "user_config", "symptom", 0.25, "error line", node="n0", time=time,
                   severity="error", records=[r], data={"component": "config"})


def test_a_line_below_stating_a_time_well_before_the_one_reached_above_is_another_block() -> None:
    upper, lower = _traceback(148).records[0], _notice(174, T - 132).records[0]
    assert other_block(upper, lower) and other_block(lower, upper)  # either order of the arguments
    assert not same_block_near(upper, lower, 50)
    near = _notice(174, T - STEP_BACK + 5).records[0]  # a little back: writers interleaved live, one block
    assert not other_block(upper, near) and same_block_near(upper, near, 50)
    later = _notice(174, T + 30).records[0]
    assert same_block_near(upper, later, 50) and not same_block_near(upper, later, 20)


def test_another_file_or_no_time_is_never_a_block_boundary() -> None:
    upper, lower = _traceback(148).records[0], _notice(174, T - 600).records[0]
    elsewhere = rec("x", time=T - 600, line=174, file="other.log")
    assert not other_block(upper, elsewhere)
    untimed = _traceback(148, time=None).records[0]  # a driver's relayed copy: no time of its own
    assert not other_block(untimed, lower)
    assert other_block(untimed, lower, a_time=T)  # the event it copies was at T: it was not written before


def test_a_startup_notice_of_the_next_file_of_a_cat_is_not_near_the_traceback_above_it() -> None:
    """A Ray session folder cat'ed after the driver's output: the dashboard's first line (an error naming a
    missing module, minutes before the failure) follows the driver's last traceback in the stream."""
    root = _traceback(148)
    assert not close_to(_notice(174, T - 132), root)
    assert close_to(_notice(174, T + 1), root)  # the same writer going on: near


def test_an_error_line_above_the_root_in_an_earlier_block_is_no_earlier_failure() -> None:
    root = _traceback(148)
    above = _notice(120, T + 200)  # above it in the stream, but written after the time the root line reached
    roles = {id(root): "root", id(above): "symptom"}
    assert earlier_failure([root, above], roles, root) is None
    before = _notice(120, T - 10)  # the same writer a few lines before: the first failure
    roles[id(before)] = "symptom"
    assert earlier_failure([root, before], roles, root) is before


def test_block_starts_are_where_the_stream_steps_back() -> None:
    marks = [("job.out", 1, 100.0), ("job.out", 2, 110.0), ("job.out", 9, 40.0), ("job.out", 5, 120.0),
             ("job.out", 12, 95.0), ("job.out", 14, 20.0), ("job.out", 13, None), ("rank0.log", 1, 500.0),
             ("rank0.log", 2, 470.0)]  # 30 s back: writers interleaved live, no new block
    starts = block_starts(marks)
    assert starts == {"job.out": [9, 14]}  # the second block climbs from 40; 20 is back again
    assert crosses(starts, "job.out", 5, 9) and crosses(starts, "job.out", 1, 20)
    assert not crosses(starts, "job.out", 9, 13) and not crosses(starts, "job.out", 14, 99)
    assert not crosses(starts, "rank0.log", 1, 2)


def _worker_steps(first_line: int, time: float) -> list[MetricPoint]:
    """A worker's own log cat'ed after the driver's: steps 1-13, stamped when the worker reported them."""
    return [MetricPoint("n0", None, time + k, k + 1, "job.out", first_line + k,
                        text=f"2026-12-04 13:55:{12 + k // 5:02d},443 INFO step {k + 1}/40 | loss 4.2")
            for k in range(13)]


def test_steps_of_a_later_block_are_later_only_by_their_own_stamp() -> None:
    """A Ray session folder cat'ed after the driver's output: the workers' steps, reported seconds after the time
    the driver's untimed traceback borrowed, sit below it in the stream: training did not go on past it."""
    root = _traceback(148)
    scan = _scan(last_iter=2)
    dashboard = rec("Module x cannot be loaded", time=T - 132, line=174, file="job.out", node="n0",
                    text="2026-12-04 13:52:36,535\tINFO utils.py:330 -- Module x cannot be loaded")
    scan.hits = [Hit("py-traceback", root.records[0])]
    scan.exemplars = {("#1", "n0"): [dashboard]}  # the next file of the cat starts minutes earlier
    scan.metrics = _worker_steps(3000, T + 24)
    assert cat_blocks(scan) == {"job.out": [174]}
    assert not survived(root, scan, 120.0)
    scan.metrics = _worker_steps(3000, T + 400)  # stamped well after it: training went on
    assert survived(root, scan, 120.0)
    scan.exemplars = {}  # no step back between them: one writer's file, its steps below it are later
    scan.metrics = _worker_steps(3000, T + 24)
    assert survived(root, scan, 120.0)
