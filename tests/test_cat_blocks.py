"""A concatenated stream's writers' blocks: two lines a few lines apart are one story only within one block, and
a step back in time between them says a new file of the ``cat`` began (``ingest.catblocks``)."""

from __future__ import annotations

from scan_helpers import rec

from l4lite.detect.base import Finding
from l4lite.diagnose.firstfail import earlier_failure
from l4lite.diagnose.timeline import close_to
from l4lite.ingest.catblocks import STEP_BACK, other_block, same_block_near

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
