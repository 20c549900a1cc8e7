"""torchelastic agents told apart: two agents running at once are two nodes' writers, so a merged file (or a shared
folder) whose lines name one host is not all that host's (job 161: the preempted node's console names no host)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from l4lite.api import analyze
from l4lite.ingest.agents import FileAgents, GlogSpans, agents_at_once, agents_overlapping
from l4lite.ingest.context import JobContext, build_context
from l4lite.ingest.files import discover
from l4lite.options import AnalyzeOptions
from l4lite.records import Accounting

JOB = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs" / "161-lightning-preempt"
NAMED, SILENT = "trn-sjc2-r08-n3", "trn-sjc2-r08-n4"  # only n3's lines name their host
STOP = "Received 15 death signal, shutting down workers"


def _spans(lines: list[str]) -> GlogSpans:
    spans = GlogSpans()
    for line in lines:
        spans.feed(line)
    return spans


def _agent(t: str, pid: int, text: str) -> str:
    return f"W1206 07:{t} {pid} torch/distributed/elastic/multiprocessing/api.py:1028] {text}"


def test_an_agent_below_another_but_logging_before_its_end_ran_beside_it() -> None:
    a = [_agent("26:08.900000", 5156, "Sending process 5301 closing signal SIGTERM"), "trace", "summary"]
    b = [_agent("26:06.532000", 5215, "Sending process 5294 closing signal SIGTERM")]
    children = [("5156", "5301"), ("5215", "5294")]
    assert agents_at_once(_spans(a + b), children) == 2  # a ``cat`` of two consoles
    restarted = [_agent("27:30.000000", 5215, "Sending process 5294 closing signal SIGTERM")]
    assert agents_at_once(_spans(a + restarted), children) == 0  # one node's agent, then its next run's


def test_agents_of_files_apart_overlap_in_time_only() -> None:
    start = "W1206 07:25:48.283000 5156 torch/distributed/run.py:874] *****"
    a = _spans([start, _agent("26:09.165000", 5156, "failed (exitcode: 1) local_rank: 0 (pid: 5295)")])
    b = _spans([_agent("25:51.199000", 5215, "x"), _agent("26:06.532000", 5215, STOP)])
    assert a.launchers == {"5156"}
    assert agents_overlapping([FileAgents(a, []), FileAgents(b, [("5215", "5294")])]) == 2
    later = _spans([_agent("30:00.000000", 5400, "Sending process 5501 closing signal SIGTERM")])
    assert agents_overlapping([FileAgents(a, []), FileAgents(later, [("5400", "5501")])]) == 0


def _cat(root: Path) -> Path:
    """Every file of job 161, n3's first, in one file (``cat``)."""
    out = root / "job.out"
    with out.open("wb") as fh:
        for p in sorted(q for q in JOB.rglob("*") if q.is_file() and q.parent != JOB and "_meta" not in q.parts):
            fh.write(p.read_bytes())
    return out


def _context(root: Path) -> JobContext:
    acc = Accounting()
    return build_context(discover([str(root)], acc).files, accounting=acc)


def test_a_cat_of_two_nodes_whose_one_host_is_named_is_not_that_hosts(tmp_path: Path) -> None:
    (tmp_path / "job").mkdir()
    _cat(tmp_path / "job")
    ctx = _context(tmp_path / "job")
    assert ctx.node_of("job.out") is None and "job.out" in ctx.mixed and ctx.agents == 2
    incident = analyze(tmp_path / "job", AnalyzeOptions(store=None))
    assert incident.category == "host", incident.summary
    roots = [e for e in incident.evidence if e.role == "root"]
    assert roots and all(STOP in e.text and e.node != NAMED for e in roots)
    assert not incident.suspects or incident.suspects[0].node != NAMED


def test_a_shared_folder_whose_agents_ran_at_once_is_no_one_node(tmp_path: Path) -> None:
    """n3's and n4's consoles side by side in ``logs/`` (``hosts-in-lines``): the folder stands for n3 only
    while nothing shows another node's agent running beside n3's."""
    (tmp_path / "logs").mkdir()
    shutil.copy(JOB / NAMED / "console.log", tmp_path / "logs" / "000-console.log")
    shutil.copy(JOB / SILENT / "console.log", tmp_path / "logs" / "007-console.log")
    ctx = _context(tmp_path)
    assert ctx.node_of("logs/000-console.log") == NAMED
    assert ctx.node_of("logs/007-console.log") != NAMED
    incident = analyze(tmp_path, AnalyzeOptions(store=None))
    assert not incident.suspects or incident.suspects[0].node != NAMED


@pytest.mark.parametrize("folder", ["login-node-01", "flat", "slurm-4821937"])
def test_the_one_folder_of_a_whole_job_is_no_one_node_when_its_agents_ran_at_once(tmp_path: Path, folder: str) -> None:
    """Every file of the job copied into one folder named after the submit host, or any name that is not the
    host the lines name: that the lines name n3 says nothing of n4, whose agent ran beside n3's."""
    (tmp_path / folder).mkdir()
    shutil.copy(JOB / NAMED / "console.log", tmp_path / folder / "000-console.log")
    shutil.copy(JOB / SILENT / "console.log", tmp_path / folder / "007-console.log")
    ctx = _context(tmp_path)
    assert ctx.node_of(f"{folder}/000-console.log") == NAMED
    assert ctx.node_of(f"{folder}/007-console.log") != NAMED and ctx.agents == 2


def test_the_one_folder_of_a_one_node_job_stands_for_its_named_host(tmp_path: Path) -> None:
    """The same folder holding one node's console and its ranks' files: one agent, so the folder is its host's."""
    (tmp_path / "login-node-01").mkdir()
    shutil.copy(JOB / NAMED / "console.log", tmp_path / "login-node-01" / "console.log")
    (tmp_path / "login-node-01" / "stdout.log").write_text("[2026-12-06 07:20:01] step 1 loss 2.5\n")
    ctx = _context(tmp_path)
    assert ctx.node_of("login-node-01/console.log") == NAMED
    assert ctx.node_of("login-node-01/stdout.log") == NAMED


def test_consoles_apart_whose_agents_spoke_at_other_moments_still_ran_at_once(tmp_path: Path) -> None:
    """Job 168 (accelerate): each agent logs only when its node stops (beta's at 08:02:44, alpha's 2 s later), but
    each console runs from its workers' first lines on: the two agents ran at once, so beta's console is not the
    shared folder's one named host's."""
    job = JOB.parent / "168-accelerate-preempt"
    (tmp_path / "logs").mkdir()
    shutil.copy(job / "compute-alpha" / "console.log", tmp_path / "logs" / "000-console.log")
    shutil.copy(job / "compute-beta" / "console.log", tmp_path / "logs" / "007-console.log")
    ctx = _context(tmp_path)
    assert ctx.node_of("logs/000-console.log") == "compute-alpha"
    assert ctx.node_of("logs/007-console.log") != "compute-alpha" and ctx.agents == 2


def test_one_console_of_a_restarted_agent_is_one_node_in_a_shared_folder() -> None:
    """A node's console holding its first agent and, after it, its next run's: the file's span covers both, which
    says nothing of two agents at once."""
    first = _agent("26:08.900000", 5156, "Sending process 5301 closing signal SIGTERM")
    second = _agent("27:30.000000", 5400, "Sending process 5501 closing signal SIGTERM")
    console = FileAgents(_spans([first, second]), [("5156", "5301"), ("5400", "5501")], 1796541900.0, 1796542100.0)
    assert agents_overlapping([console]) == 0
