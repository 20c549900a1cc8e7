"""Why the training diverged: an error line naming a component near a health signal gives the category."""

from __future__ import annotations

from scan_helpers import rec

from l4lite.detect.base import Finding
from l4lite.diagnose.diverged import diverged_because
from l4lite.rules.components import LEARNED_WORDS

STAMP = "2024-05-01 12:00:00 "  # a line's own stamp (the record's time is what counts)


def _nan(time: float = 1000.0) -> Finding:
    r = rec(STAMP + "{'loss': 0.0, 'grad_norm': nan, 'epoch': 0.4}", time=time, line=10)
    return Finding("health", "numerical", "root", 0.9, "the gradient norm became NaN/Inf", node="node1",
                   time=time, records=[r], data={"signal": "nan", "scope": "global"})


def _said(text: str, category: str, time: float, *, detector: str = "components", severity: str = "error",
          component: str = "words", line: int = 20) -> Finding:
    r = rec(STAMP + text, time=time, line=line)
    return Finding(detector, category, "symptom", 0.25, "named", node="node1", time=time, severity=severity,
                   records=[r], rule="some-rule" if detector == "rules" else None, data={"component": component})


def test_an_error_line_naming_a_component_near_the_signal_says_why_it_diverged() -> None:
    nan = _nan()
    ima = _said("RuntimeError: CUDA error: an illegal memory access was encountered", "software", 1030.0)
    roles = {id(nan): "root", id(ima): "symptom"}
    assert diverged_because([nan, ima], roles, nan) is ima
    # a specific rule's line counts too (a truncated record the reader reported)
    trunc = _said("DataLossError: truncated record at 72435675", "data", 1010.0, detector="rules")
    roles[id(trunc)] = "root"
    assert diverged_because([nan, ima, trunc], roles, nan) is trunc  # the earliest


def test_lines_that_name_the_numbers_nothing_or_only_a_guess_or_come_long_after_leave_the_signal() -> None:
    nan = _nan()
    numbers = _said("FloatingPointError: Minimum loss scale reached (0.0001).", "numerical", 1010.0)
    guess = _said("worker 3 stopped", "software", 1010.0, component=LEARNED_WORDS)
    warned = _said("the dataloader is slow", "data", 1010.0, severity="warning")
    late = _said("OSError: [Errno 28] No space left on device", "storage", 1000.0 + 7200.0)
    peer = _said("RuntimeError: Connection reset by peer", "network", 1010.0)
    found = [nan, numbers, guess, warned, late, peer]
    roles = {id(f): "symptom" for f in found} | {id(nan): "root"}
    assert diverged_because(found, roles, nan) is None
    # a signature that is not a health signal of the numbers is left alone
    ima = _said("RuntimeError: CUDA error: an illegal memory access was encountered", "software", 1030.0)
    hang = Finding("health", "software", "root", 0.5, "progress stopped", node="node1", time=1000.0,
                   records=[rec("iteration 5", time=1000.0)], data={"signal": "hang"})
    assert diverged_because([hang, ima], {id(hang): "root", id(ima): "symptom"}, hang) is None
