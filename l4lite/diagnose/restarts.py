"""A worker group torchelastic restarted: its failure follows the first attempt's.

With ``--max-restarts N`` the agent restarts every worker of its node after one fails, in a new rendezvous round,
and writes the new workers' logs under ``attempt_1/``, ``attempt_2/`` beside ``attempt_0/``. The restarted group
often cannot even start: its peers on the other nodes are still being torn down, so it fails connecting to them
(gloo's ``connectFullMesh failed ... Connection refused``), and a failure that comes back ends the job the same
way, or the restarted workers resume from the checkpoint the first attempt's killed save left cut short and fail
reading it. Either way the first attempt's failure is what the job met; a root line printed after the restart
began is its consequence, read as a cascade, as long as an earlier root line, or an agent's report of a worker
that died without a word (its exit code, a confirmation), says what failed first. Lines that name no
attempt (the agent's console, where the workers' output is teed) are placed by their own time against the
restarted workers' first stamped line. Where no path names an attempt (the logs in one file, renamed or flattened
files), the agent says it: an agent that reports a failed worker twice, of two worker pids seconds apart, restarted
its group in between, so the restart began at its first report.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from l4lite.detect.base import Finding
from l4lite.diagnose.evidence import own_time
from l4lite.diagnose.traits import SEVERE
from l4lite.ingest.pids import GLOG_PID
from l4lite.records import Record
from l4lite.scan.scanner import JobScan

# torchelastic's own layout, ``<run id>/attempt_N/<local rank>/<file>``: a folder named ``attempt_1`` higher up
# (a node's folder, a collector's run folder) says nothing about a restart of the workers
_LATER_ATTEMPT = re.compile(r"(?:^|/)attempt_([1-9]\d*)/\d+/[^/]+$")
# the agent's report of a failed worker group: ``E1205 05:32:29.897000 412 torch/.../api.py:1002] failed (exitcode:
# 1) local_rank: 0 (pid: 456) of binary: ...`` (the header's number is the agent's pid, the last the worker's)
_AGENT_FAILED = re.compile(r"\] failed \(exitcode: -?\d+\) local_rank: \d+ \(pid: (\d+)\)")
_APART = 1.0  # seconds between an agent's two reports of one restart: not two ranks of one failed group


def restart_time(scan: JobScan, findings: Sequence[Finding]) -> float | None:
    """The first stamped line of a restarted worker (a file under ``attempt_N/``, N > 0); None without one."""
    times = [t for f in findings for r in f.records if _LATER_ATTEMPT.search(r.file)
             for t in [own_time(r)] if t is not None]
    times += [m.time for m in scan.markers if m.time is not None and _LATER_ATTEMPT.search(m.file)]
    reported = agent_restart(findings)
    return min((*times, *([reported] if reported is not None else [])), default=None)


def agent_restart(findings: Sequence[Finding]) -> float | None:
    """When an agent restarted its workers, from its own reports: just after the first of two reports of failed
    workers (other worker pids, at least ``_APART`` seconds later) by one agent on one node, so that first report
    (a worker killed without a word) stays before the restart; None when no agent reported twice."""
    reports: dict[tuple[str | None, str], dict[str, float]] = {}
    for f in findings:
        for r in f.records:
            if r.time is not None and (g := GLOG_PID.match(r.text)) and (m := _AGENT_FAILED.search(r.text, g.end())):
                pids = reports.setdefault((r.node, g[1]), {})
                pids[m[1]] = min(pids.get(m[1], r.time), r.time)
    starts = []
    for pids in reports.values():
        times = sorted(pids.values())
        if len(times) > 1 and times[-1] - times[0] >= _APART:
            starts.append(math.nextafter(times[0], math.inf))
    return min(starts, default=None)


def _after(r: Record, start: float) -> bool:
    """Whether a line was printed after the restart began: in a restarted worker's file, or stamped (by its own
    time, else the time it inherited, which is never later than its own) at or after it."""
    t = own_time(r)
    t = r.time if t is None else t
    return bool(_LATER_ATTEMPT.search(r.file)) or t is not None and t >= start


def _before(r: Record, start: float) -> bool:
    """Whether a line is known to be printed before the restart began: stamped before it, outside a restarted
    worker's file. An untimed line (a worker's ``error.json`` copy of its traceback) is placed by neither."""
    t = own_time(r)
    t = r.time if t is None else t
    return not _LATER_ATTEMPT.search(r.file) and t is not None and t < start


def restarted_roots(scan: JobScan, findings: Sequence[Finding], roles: dict[int, str]) -> list[Finding]:
    """Root findings printed after the workers were restarted, while an earlier root says what failed first;
    their roles become cascades (``data["restarted"]``). Returns them."""
    start = restart_time(scan, findings)
    if start is None:
        return []
    roots = [f for f in findings if roles.get(id(f)) == "root" and f.records]
    later = [f for f in roots if not any(_before(r, start) for r in f.records)
             and any(_after(r, start) for r in f.records)]
    earlier = [f for f in roots if f not in later]
    # a worker that died without a word of its own (SIGKILL while it saved) is told by its agent's report, a
    # confirmation: printed before the restart, it says what failed first as well as a root line would
    earlier += [f for f in findings if roles.get(id(f)) == "confirmation" and f.records and f.severity in SEVERE
                and any(_before(r, start) for r in f.records)]
    if not earlier:
        return []
    for f in later:
        roles[id(f)] = "cascade"
        f.data["restarted"] = True
    # the restarted workers' other error lines (an agent's report of their exit, the launcher's summary of the
    # last attempt) are the same consequence: none of them says what broke
    for f in findings:
        role = roles.get(id(f))
        if role in ("symptom", "confirmation") and f.records and not any(_before(r, start) for r in f.records) \
                and any(_after(r, start) for r in f.records):
            f.data["restarted"] = True
            roles[id(f)] = "symptom"
    return later
