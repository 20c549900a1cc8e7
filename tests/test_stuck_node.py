"""A node that stopped without saying why, in an 8-node job whose other nodes print cascades: which node is
blamed and which lines are its root evidence. The excerpts are written for these tests; the planter supplies
the healthy nodes' watchdog timeouts, broken connections and their agents' SIGTERM teardown."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from l4lite import analyze
from l4lite.detect.hang import FORMAT_WORD, VALUE_WORDS, HangDetector, line_format
from l4lite.evaluate.planting import LAYOUTS, Excerpt, JobPlanter
from l4lite.evaluate.scoreboard import job_paths
from l4lite.options import AnalyzeOptions
from l4lite.scan.job import load_rules, scan_job


def _excerpt(name: str, *lines: str, faulty: str | None = "Rank 5", phase: str = "train") -> Excerpt:
    return Excerpt(id=name, source_group=f"t#{name}", split="dev", status="incident", category="unknown",
                   phase=phase, faulty=faulty, lines=lines)


def _run(tmp_path: Path, x: Excerpt, layout: str = "node-folders") -> tuple[dict[str, Any], dict[str, Any]]:
    job = JobPlanter(x, seed=3).write(layout, tmp_path / layout)
    truth = json.loads((job.path / "ground_truth.json").read_text())
    return analyze(str(job.path)).to_dict(), truth


def _roots(inc: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in inc["evidence"] if e["role"] == "root"]


OWN_TIMEOUT = _excerpt(
    "own-timeout",
    "[E ProcessGroupNCCL.cpp:901] [Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, "
    "OpType=BROADCAST, NumelIn=64, NumelOut=64, Timeout(ms)=600000) ran for 600412 milliseconds before timing out.",
    "Aborted (core dumped)",
    phase="init",  # at start-up the peers' cascades are lost connections to the store, then their agents' SIGTERM
)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_peers_torn_down_after_reporting_the_lost_peer_are_not_the_stuck_ones(tmp_path, layout: str) -> None:
    """Every healthy node's first rank reports the lost connection and is then SIGTERMed by its agent: it was
    waiting like the others, so the node blamed is the one whose rank stayed quiet, not a torn-down peer."""
    job = JobPlanter(OWN_TIMEOUT, seed=3).write(layout, tmp_path / layout)
    truth = json.loads((job.path / "ground_truth.json").read_text())
    options = AnalyzeOptions()
    scan = scan_job(job_paths(job.path), options, rules=load_rules(options))
    assert [f.node for f in HangDetector().detect(scan)] == truth["faulty_nodes"]
    inc = analyze(str(job.path)).to_dict()
    assert inc["status"] == "incident" and inc["suspects"][0]["node"] == truth["faulty_nodes"][0]


LATE_TIMEOUT = _excerpt(
    "late-timeout",
    "[rank13]:[E ProcessGroupNCCL.cpp:611] [Rank 13] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=90210, OpType=REDUCE_SCATTER, NumelIn=4096, NumelOut=256, Timeout(ms)=900000) ran for "
    "900377 milliseconds before timing out.", faulty="Rank 13")


def test_a_stuck_nodes_root_evidence_is_its_own_lines_not_its_peers_reports(tmp_path) -> None:
    """The node's other rank stayed quiet; its own rank's timeout is shown as root, the lower ranks' timeouts on
    other nodes (which the stuck node made wait) are not."""
    inc, truth = _run(tmp_path, LATE_TIMEOUT)
    planted = {(e["file"], e["line"]) for e in truth["evidence"]}
    roots = _roots(inc)
    assert roots and all(e["node"] == truth["faulty_nodes"][0] for e in roots)
    assert any((e["file"], e["line"]) in planted for e in roots)


def test_an_abort_closing_a_ranks_own_timeout_names_no_category(tmp_path) -> None:
    """``Aborted (core dumped)`` just below the rank's watchdog timeout is how the watchdog ended the process:
    it does not make the stuck rank a software fault."""
    inc, _ = _run(tmp_path, OWN_TIMEOUT)
    assert inc["category"] == "unknown"


QUIET_COMPLAINT = _excerpt(
    "quiet-complaint",
    "prefetch worker: shard 0118 header looks invalid, will retry on the next pass",
    "prefetch worker: retry queue now holds 4096 entries",
    faulty="Rank 5",
)


def test_a_stuck_nodes_own_words_of_trouble_beat_its_peers_timeouts_as_root(tmp_path) -> None:
    """The stuck rank printed a line no rule knows and that names no component, but reads as trouble ("invalid"),
    new to the job near the stall: that line, not a peer's watchdog timeout, is the root evidence."""
    inc, truth = _run(tmp_path, QUIET_COMPLAINT)
    planted = {(e["file"], e["line"]) for e in truth["evidence"]}
    assert inc["suspects"][0]["node"] == truth["faulty_nodes"][0]
    roots = _roots(inc)
    assert roots and all((e["file"], e["line"]) in planted for e in roots)


def _healthy(name: str, *lines: str) -> Excerpt:
    return Excerpt(id=name, source_group=f"t#{name}", split="dev", status="healthy", category=None, phase="train",
                   faulty=None, lines=lines)


ALARMING_BUT_FINISHED = [
    _healthy("ecc-then-done", "RuntimeError: CUDA error: uncorrectable ECC error encountered"),
    _healthy("reset-then-done", "[W socket.cpp:601] [c10d] recvValue failed: Connection reset by peer; the store "
                                "client will reconnect"),
]


@pytest.mark.parametrize("excerpt", ALARMING_BUT_FINISHED, ids=lambda x: x.id)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_line_the_run_reported_finishing_well_after_raises_no_incident(tmp_path, excerpt: Excerpt,
                                                                         layout: str) -> None:
    """Every rank trains on after the line and prints that training finished: whatever the line says, it did not
    stop this job, so there is no incident to diagnose."""
    inc, _ = _run(tmp_path, excerpt, layout)
    assert inc["status"] == "healthy"


def test_the_same_line_without_a_good_end_is_still_an_incident(tmp_path) -> None:
    failed = Excerpt(id="ecc-failed", source_group="t#ecc-failed", split="dev", status="incident",
                     category="gpu_hardware", phase="train", faulty="Rank 5",
                     lines=ALARMING_BUT_FINISHED[0].lines)
    inc, truth = _run(tmp_path, failed)
    assert inc["status"] == "incident" and inc["suspects"][0]["node"] == truth["faulty_nodes"][0]


UNSTAMPED_ABORT = _excerpt(
    "unstamped-abort",
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f00aa001122 in libc10.so)",
    "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout() + 0x1c2 (0x7f00ab002233 in libtorch_cuda.so)",
    "terminate called after throwing an instance of 'c10::DistBackendError'",
    faulty="Rank 12")


def test_the_peer_whose_address_the_cascades_say_they_lost_is_the_suspect(tmp_path) -> None:
    """The faulty rank's own lines carry no timestamp, so the peers' stamped cascades come first in time; but
    the peers name the address they lost ("Connection closed by ... peer 10.x.y.z"), and the faulty node's own
    NCCL start-up line binds that address: that node is the suspect, and its own lines are the root."""
    inc, truth = _run(tmp_path, UNSTAMPED_ABORT)
    planted = {(e["file"], e["line"]) for e in truth["evidence"]}
    assert inc["suspects"][0]["node"] == truth["faulty_nodes"][0]
    assert any((e["file"], e["line"]) in planted for e in _roots(inc))


OWN_PROGRESS_FORMAT = _excerpt(
    "own-progress-format",
    "INFO:trainer:[step 31877]  ctc_loss=0.734  acc=0.81  throughput=9.1K tks/s  lr=0.0003",
    "INFO:trainer:[step 31878]  ctc_loss=0.729  acc=0.81  throughput=9.0K tks/s  lr=0.0003",
    faulty="Rank 5",
)


def test_steps_in_another_line_format_do_not_put_every_other_rank_behind(tmp_path) -> None:
    """The stuck rank printed its own progress format with far higher step numbers than the job's iteration
    lines: the two counts are not one series, so the other ranks are not behind it, and the quiet node is
    the suspect."""
    job = JobPlanter(OWN_PROGRESS_FORMAT, seed=3).write("node-folders", tmp_path / "j")
    truth = json.loads((job.path / "ground_truth.json").read_text())
    options = AnalyzeOptions()
    scan = scan_job(job_paths(job.path), options, rules=load_rules(options))
    assert [f.node for f in HangDetector().detect(scan)] == truth["faulty_nodes"]
    inc = analyze(str(job.path)).to_dict()
    assert inc["suspects"][0]["node"] == truth["faulty_nodes"][0]


LAST_WORDS = _excerpt(
    "last-words",
    "[loop] eval pass: starting batch 88 of 87",
    "[loop] eval pass: rank 5 holds one batch more than its group",
    faulty="Rank 5", phase="eval",
)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_stuck_nodes_last_lines_of_its_own_are_the_root_when_none_reads_as_an_error(tmp_path, layout: str) -> None:
    """The quiet rank's last lines before its peers timed out are informational and name nothing, yet they are
    where it stopped, and no other node printed them: they are the root evidence, not the peers' timeouts."""
    inc, truth = _run(tmp_path, LAST_WORDS, layout)
    planted = {(e["file"], e["line"]) for e in truth["evidence"]}
    assert inc["suspects"][0]["node"] == truth["faulty_nodes"][0]
    roots = _roots(inc)
    assert roots and all((e["file"], e["line"]) in planted for e in roots)


LOST_HEARTBEAT = _excerpt(
    "lost-heartbeat",
    "WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node 'gpu-a17_4411_0' has failed to send "
    "a keep-alive heartbeat to the rendezvous 'job-9' due to an error of type RendezvousConnectionError.",
    faulty="Rank 5",
)


def test_a_stuck_nodes_own_lost_heartbeat_is_its_root_not_its_peers_timeouts(tmp_path) -> None:
    """The quiet node's agent could not reach the rendezvous: a line a rule calls a cascade, but the node's own,
    so it is the root evidence of the hang rather than the timeouts of the peers that waited for it."""
    inc, truth = _run(tmp_path, LOST_HEARTBEAT)
    planted = {(e["file"], e["line"]) for e in truth["evidence"]}
    assert inc["suspects"][0]["node"] == truth["faulty_nodes"][0]
    roots = _roots(inc)
    assert roots and all((e["file"], e["line"]) in planted for e in roots)


WORDED_APART = Excerpt(
    id="worded-apart", source_group="t#worded-apart", split="dev", status="incident", category="network",
    phase="load", faulty=None,
    lines=("  downloading shard 7 of the tokenizer files from the mirror", "ConnectionResetError: [Errno 104] "
           "Connection reset by peer"))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_one_node_whose_lost_connection_is_worded_apart_is_where_it_began(tmp_path, layout: str) -> None:
    """Every line is a lost connection, but seven nodes lost the store alike while one node's reset came from
    its own download: that node's line, not a peer's store error, is the root evidence."""
    inc, truth = _run(tmp_path, WORDED_APART, layout)
    planted = {(e["file"], e["line"]) for e in truth["evidence"]}
    roots = _roots(inc)
    assert roots and all((e["file"], e["line"]) in planted for e in roots)


def test_a_progress_line_format_is_the_same_worked_out_per_shape() -> None:
    """``line_format`` is cached by the line's shape; it must equal the words read from the line itself."""
    def plain(text: str) -> str:
        return " ".join(w for w in FORMAT_WORD.findall(text[:400]) if w.lower() not in VALUE_WORDS)

    rng = random.Random(3)
    alphabet = "abcXYZ_019 |:=.-[]x\t" + "é٣ß日\udcff\U0001f600"  # multi-byte, a lone surrogate, beyond the BMP
    lines = ["[rank3]: iteration 120/ 5000 | lm loss: 2.31E+00 | grad norm: nan |",
             "{'loss': 8.7554, 'grad_norm': 2.23, 'epoch': 0.03}", "step:  9  loss:  8.02  mfu: 12.2%"]
    lines += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80))) for _ in range(2000)]
    lines += [re.sub(r"\d", lambda _m: str(rng.randint(0, 9)), t) for t in lines[:3] for _ in range(20)]
    assert [line_format(t) for t in lines] == [plain(t) for t in lines]

# A stall that lasts hours: the quiet rank's own output goes on (its last progress line, at a higher step than
# its peers' because it counts from another start, then a scheduler's pulses), so its node's progress does not
# look stopped first while its peers' does; its peers' cascades name its address.
STALL_WITH_PULSES = _excerpt(
    "stall-with-pulses",
    "[default1]: iteration    88000/  120000 | consumed samples:     90112000 | elapsed time per iteration (s): "
    "96.50 | learning rate: 2.1E-05 | global batch size:  1024",
    "[default1]:evaluation at step 88000 | eval loss 2.118 | eval ppl 8.31",
    "[2024-05-14 11:00:05] HEARTBEAT: job run-42 alive for 1-02:10:44 (queue gpu_long)",
    "[2024-05-14 12:00:09] HEARTBEAT: job run-42 alive for 1-03:10:48 (queue gpu_long)",
    "[2024-05-14 13:00:12] HEARTBEAT: job run-42 alive for 1-04:10:51 (queue gpu_long)",
    faulty="node", phase="eval")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_inferences_on_different_nodes_defer_to_the_node_the_cascades_lost(tmp_path, layout: str) -> None:
    """Progress read alone blames whichever node's common lines stopped first (all stopped at one step); the
    silence read from the timeouts and the peer address the cascades say they lost name the stuck node."""
    inc, truth = _run(tmp_path, STALL_WITH_PULSES, layout)
    assert inc["status"] == "incident" and inc["suspects"][0]["node"] == truth["faulty_nodes"][0]


def test_the_rank_never_heard_of_is_the_one_every_other_rank_waited_for() -> None:
    """163: a node throttled to 1 ms of CPU a second; ranks 0, 1 and 2 time out in the step's collectives and rank
    3 (the last rank of the last node, above every rank heard of) prints nothing at all: it is the stuck one, on
    the node that shows fewer ranks."""
    job = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs" / "163-accelerate-cpu_throttle"
    options = AnalyzeOptions()
    scan = scan_job(job_paths(job), options, rules=load_rules(options))
    found = [(f.node, f.rank) for f in HangDetector().detect(scan)]
    assert found == [("a100-rack2-15", 3)]
