"""A node's clock that ran an hour fast and was stepped back mid-job (``chronyd``'s ``makestep``): its lines before
the step read an hour late, in every file of the node, and a rank's short file may hold only such lines. The
step is worked out once per job from all the node's files against its peers (``ingest.steps``), so the job's
span, its skew and its verdict stay those of the plain copy. Built on the real two-node job ``002-ddp-sigkill``
(a rank killed by SIGKILL on cpu-node-a: a host fault in the train phase)."""

from __future__ import annotations

import shutil
from pathlib import Path

from l4lite.api import analyze
from l4lite.ingest.context import build_context
from l4lite.ingest.files import discover
from l4lite.ingest.spans import FileSpan
from l4lite.ingest.steps import clock_steps, step_back
from l4lite.options import AnalyzeOptions
from l4lite.records import Accounting

JOB = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs" / "002-ddp-sigkill"
# cpu-node-b's clock ran an hour fast until between rank 3's and rank 2's first lines: its launcher's banner and
# rank 3's one timed line (all of that rank's ``stderr.log``) read an hour late; every later line as it was
AHEAD = {"W1203 14:38:35.": "W1203 15:38:35.", "2026-12-03 14:38:43,392": "2026-12-03 15:38:43,392"}


def _stepped(tmp_path: Path) -> Path:
    """A copy of the job with cpu-node-b's times before the step an hour ahead, in every file of the node."""
    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    for f in (job / "cpu-node-b").rglob("*.log"):
        text = f.read_text()
        for old, new in AHEAD.items():
            text = text.replace(old, new)
        f.write_text(text)
    return job


def test_a_node_stepped_back_keeps_the_jobs_span_and_verdict(tmp_path: Path) -> None:
    plain = build_context(discover([str(JOB)], Accounting()).files)
    job = _stepped(tmp_path)
    ctx = build_context(discover([str(job)], Accounting()).files)
    assert (ctx.start, ctx.end) == (plain.start, plain.end)  # a rank's file wholly ahead moves no end
    assert not ctx.clock_skew.get("exceeds"), ctx.clock_skew
    incident = analyze([str(job)], AnalyzeOptions())
    base = analyze([str(JOB)], AnalyzeOptions())
    assert (incident.category, incident.phase, incident.failure_time) == (base.category, base.phase, base.failure_time)
    assert incident.to_dict()["job"]["end"] == base.to_dict()["job"]["end"]
    assert set(ctx.clock_steps) == {"cpu-node-b"} and ctx.clock_steps["cpu-node-b"][0] == 3600.0


def _span(*times: float) -> FileSpan:
    return FileSpan(False, min(times), max(times), True, tuple(times), len(times))


def test_only_a_step_back_from_past_the_peers_into_their_span_is_a_step() -> None:
    t0 = 1796308715.0
    peer = {"a/x.log": _span(t0, t0 + 10.0, t0 + 40.0)}
    node = {"a": "a", "b": "b"}

    def of(rel: str) -> str | None:
        return node.get(rel.split("/")[0])
    stepped = {**peer, "b/x.log": _span(t0 + 3605.0, t0 + 3612.0, t0 + 15.0, t0 + 38.0), "b/r.log": _span(t0 + 3606.0)}
    steps = clock_steps(stepped, of)
    assert steps["b"][0] == 3600.0 and step_back(t0 + 3606.0, steps["b"]) == t0 + 6.0
    assert step_back(t0 + 38.0, steps["b"]) == t0 + 38.0  # after the step: as written
    assert step_back(t0 + 200.0, steps["b"]) == t0 + 200.0  # a restart after the peers stopped: not ahead
    # a last line flushed an hour late goes back too, but from within the peers' span: no step
    assert clock_steps({**peer, "b/x.log": _span(t0 + 5.0, t0 + 20.0, t0 + 20.0 - 3600.0)}, of) == {}
    # a node that logs on an hour after its peers stopped (a hang cut later) keeps its times
    assert clock_steps({**peer, "b/x.log": _span(t0 + 5.0, t0 + 30.0, t0 + 3630.0)}, of) == {}
