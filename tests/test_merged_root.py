"""One error in a merged stream is read as in the per-node layout: a rank's error file repeating its traceback is
not a second failure, and a rank's own file replayed below its console's traceback is not training that went on."""

from __future__ import annotations

import json

from scan_helpers import rec
from test_localize import _scan

from l4lite.detect.base import Finding
from l4lite.diagnose.errorfiles import restates
from l4lite.diagnose.firstfail import earlier_failure
from l4lite.diagnose.timeline import survived
from l4lite.records import Record
from l4lite.scan.jobscan import MetricPoint

SHAPE = "RuntimeError: shape mismatch in attention block: expected key length 64, got 63 (sequence packing bug)"
OTHER = "RuntimeError: Connection closed by peer [127.0.0.1]:10434, a remote worker crashed"
T = 1796448557.71


def _error_json(message: str) -> str:
    stack = f'Traceback (most recent call last):\n  File "train.py", line 51, in main\n    step()\n{message}\n'
    return json.dumps({"message": {"message": message, "extraInfo": {"py_callstack": stack,
                                                                     "timestamp": "1796448558"}}})


def _traceback(message: str, *, line: int = 218, node: str = "n1") -> Record:
    text = f'[rank1]: Traceback (most recent call last):\n[rank1]:   File "train.py", line 51\n[rank1]: {message}'
    return rec(message, node=node, rank=1, time=T, line=line, file="job.out", end_line=line + 2, text=text)


def _root(message: str = SHAPE) -> Finding:
    return Finding("rules", "software", "root", 0.3, "python-exception", node="n1", rank=1, time=T,
                   rule="python-exception", records=[_traceback(message)])


def _error_file(message: str = SHAPE, *, node: str | None = "n1", line: int = 214) -> Finding:
    r = rec(message, node=node, time=T + 1.289, line=line, file="job.out", level="error", text=_error_json(message))
    return Finding("components", "data", "symptom", 0.25, "An error line", node=node, time=r.time,
                   records=[r], data={"component": "sequence packing"})


def test_an_error_file_restating_the_roots_exception_is_the_same_error() -> None:
    root = _root()
    assert restates(_error_file(), root.records)
    assert restates(_error_file(node=None), root.records)  # a merged stream that named no node
    assert not restates(_error_file(OTHER), root.records)  # another exception
    assert not restates(_error_file(node="n2"), root.records)  # another node's
    plain = Finding("components", "data", "symptom", 0.25, "x", node="n1",
                    records=[rec(SHAPE, node="n1", line=214, file="job.out", text=SHAPE)])
    assert not restates(plain, root.records)  # a line of its own, not an error record


def test_the_roots_error_file_merged_just_above_it_is_not_an_earlier_failure() -> None:
    """``cat`` put rank 1's error.json four lines above its traceback: the same failure, not a data fault first."""
    root, copy = _root(), _error_file()
    assert earlier_failure([root, copy], {id(root): "root", id(copy): "symptom"}, root) is None
    other = _error_file(OTHER)  # an error of its own there still tells what failed first
    assert earlier_failure([root, other], {id(root): "root", id(other): "symptom"}, root) is other


def _steps(iterations: range, first_line: int) -> list[MetricPoint]:
    return [MetricPoint("n1", 0, T, i, "job.out", first_line + k, text=f"step {i}/40 | loss 5.0")
            for k, i in enumerate(iterations)]


def test_steps_a_merged_stream_replays_below_an_untimed_traceback_are_not_later() -> None:
    """A pod's stream holds its console (steps 1-14, the traceback) then rank 0's own file (steps 1-16 again)."""
    root = _root()
    scan = _scan(last_iter=2)
    scan.metrics = _steps(range(1, 15), 100) + _steps(range(1, 17), 300)
    assert not survived(root, scan, 120.0)
    scan.metrics = _steps(range(1, 15), 100) + _steps(range(15, 30), 300)  # steps past the ones above: went on
    assert survived(root, scan, 120.0)
