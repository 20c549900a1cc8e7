"""Every rank of every node failed waiting in a collective and in nothing else (real jobs 049, 050, 188, 191, 201:
a node's interface down): the link between them, not a rank; a rank that printed no wait of its own (stuck,
stopped, gone) or raised its own error leaves the reading unmade."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from l4lite.api import analyze
from l4lite.detect.base import Finding
from l4lite.diagnose.allwaited import all_ranks_waited, own_timeouts
from l4lite.records import Record
from l4lite.scan.jobscan import Hit, JobScan

REPO = Path(__file__).resolve().parents[1]
JOBS = REPO / "fixtures" / "real_jobs"
NODES = {0: "node-a", 1: "node-a", 2: "node-b", 3: "node-b"}
SEND = ("RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:129] Timed out waiting "
        "30000ms for send operation to complete")
RECV = SEND.replace(":129]", ":78]").replace("send", "recv")
CLOSED = ("RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer "
          "[10.0.0.1]:3741. This is typically caused by a remote worker crashing.")


def _hit(rank: int, message: str, rule: str = "python-exception") -> Hit:
    rec = Record(file=f"{NODES[rank]}/console.log", line=10 + rank, end_line=10 + rank, node=NODES[rank],
                 rank=rank, gpu=None, source="stderr", time=100.0, level="ERROR", message=message, text=message)
    return Hit(rule, rec)


def _scan(hits: list[Hit]) -> JobScan:
    scan = JobScan()
    scan.rank_nodes = dict(NODES)
    scan.node_ranks = {"node-a": {0, 1}, "node-b": {2, 3}}
    scan.hits = hits
    return scan


def test_every_rank_timing_out_or_losing_its_pair_is_the_link() -> None:
    assert all_ranks_waited(_scan([_hit(0, CLOSED), _hit(1, SEND), _hit(2, RECV), _hit(3, RECV)]))


@pytest.mark.parametrize("hits", [
    [_hit(0, SEND), _hit(1, RECV), _hit(2, RECV)],  # rank 3 printed no wait: stuck, stopped or gone
    [_hit(0, SEND), _hit(1, RECV), _hit(2, RECV), _hit(3, RECV), _hit(3, "ValueError: bad metrics value")],
    [_hit(0, CLOSED), _hit(1, CLOSED), _hit(2, CLOSED), _hit(3, CLOSED)],  # lost peers only: someone left first
    [_hit(0, SEND), _hit(1, RECV), _hit(2, RECV), _hit(3, "Failed to disconnect from the local raylet: IOError: "
                                                         "Connection reset by peer")],  # no collective's
])
def test_a_rank_without_a_collective_wait_of_its_own_leaves_it_unread(hits: list[Hit]) -> None:
    assert not all_ranks_waited(_scan(hits))


def test_a_launcher_s_summary_quoting_a_rank_is_not_the_rank_s_own_wait() -> None:
    hits = [_hit(0, SEND), _hit(1, RECV), _hit(2, RECV), _hit(3, RECV, rule="elastic-root-cause")]
    assert not all_ranks_waited(_scan(hits))


@pytest.mark.parametrize("job", ["049-ddp-netdown", "188-fabric-netdown", "201-accelerate-netdown"])
def test_a_node_cut_off_is_read_as_the_network(job: str) -> None:
    incident = analyze([JOBS / job])
    assert incident.category == "network"
    # the summary says where the category came from when the primary's own line names no component
    assert "which points to the link between them" in incident.summary, incident.summary


@pytest.mark.parametrize("job", ["003-ddp-hang", "113-ddp-collective_mismatch", "163-accelerate-cpu_throttle"])
def test_a_stuck_rank_a_stray_collective_or_a_silent_node_is_no_link(job: str) -> None:
    assert analyze([JOBS / job]).category != "network"


def _finding(rank: int, message: str, source: str = "stderr") -> Finding:
    rec = _hit(rank, message).record
    rec.source = source
    return Finding("rules", "network", "cascade", 0.8, "", node=NODES[rank], rank=rank, records=[rec])


def test_the_suspect_node_s_own_timeouts_are_root_and_nothing_else_is() -> None:
    own = _finding(2, RECV)
    lost = _finding(3, CLOSED)  # a lost pair says someone left, not that the link failed
    quote = _finding(3, SEND, source="launcher")  # a launcher's summary quoting the rank
    elsewhere = _finding(0, SEND)  # the other node's timeouts stay cascades
    findings = [own, lost, quote, elsewhere]
    roles = {id(f): "cascade" for f in findings}
    assert own_timeouts(findings, roles, "node-b") == [own]
    assert roles[id(own)] == "root" and own.data["timeout_is_proof"]
    assert [roles[id(f)] for f in (lost, quote, elsewhere)] == ["cascade"] * 3


@pytest.mark.parametrize("job", ["050-deepspeed-netdown", "191-amp-netdown"])
def test_a_node_cut_off_is_proved_by_its_own_ranks_timeouts(job: str) -> None:
    truth = json.loads((JOBS / job / "ground_truth.json").read_text())
    timeouts = [(e["file"], e["line"]) for e in truth["evidence"]]  # the faulty node's ranks' timeout lines
    roots = [e for e in analyze([JOBS / job]).evidence if e.role == "root"]
    assert any(e.file.endswith(f) and e.line <= line <= (e.end_line or e.line) for e in roots for f, line in timeouts)


def _unplaced(rank: int, message: str) -> Hit:
    rec = Record(file="slurm-4318.out", line=10 + rank, end_line=10 + rank, node=None, rank=rank, gpu=None,
                 source="stderr", time=100.0, level="ERROR", message=message, text=message)
    return Hit("python-exception", rec)


def test_ranks_no_host_places_count_as_a_node_of_their_own() -> None:
    """Real job 218: an `srun --label` task whose lines never name its machine; its two ranks time out as the
    named node's do, and they number as many as a node holds."""
    scan = JobScan()
    scan.rank_nodes = {0: "node-a", 1: "node-a"}
    scan.node_ranks = {"node-a": {0, 1}, "rank:2": {2}, "rank:3": {3}}
    scan.hits = [_hit(0, RECV), _hit(1, SEND), _unplaced(2, RECV), _unplaced(3, RECV)]
    assert all_ranks_waited(scan)
    scan.hits = scan.hits[:3]  # the unplaced rank 3 printed no wait: stuck, stopped or gone
    assert not all_ranks_waited(scan)
    scan.node_ranks = {"node-a": {0, 1}, "rank:2": {2}}  # one rank of a node of two: the other never named
    scan.hits = [_hit(0, RECV), _hit(1, SEND), _unplaced(2, RECV)]
    assert not all_ranks_waited(scan)
