"""A fault every node met alike: the suspect's last words are every node's, so no node is blamed."""

from __future__ import annotations

from pathlib import Path

from scan_helpers import DigitMiner, rec

from l4lite.api import analyze
from l4lite.detect.base import Finding
from l4lite.diagnose.alike import said_alike
from l4lite.evaluate.planting import Excerpt, JobPlanter
from l4lite.evaluate.scoreboard import job_paths
from l4lite.records import Record
from l4lite.scan.scanner import JobScan, scan_records

NODES = ["n1", "n2", "n3", "n4"]
WATCHDOG = "[E ProcessGroupNCCL.cpp:828] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, " \
           "OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600081 milliseconds before timing out."


def _job(closing: dict[str, list[str]], then_timeout: bool = False) -> tuple[JobScan, list[Finding]]:
    """Each node's rank prints 20 iterations, then its ``closing`` lines (and, ``then_timeout``, a watchdog
    timeout after them, as a rank that lost a peer does)."""
    records: list[Record] = []
    cascades: list[Finding] = []
    for k, node in enumerate(NODES):
        line = 0
        for i in range(1, 21):
            line += 1
            records.append(rec(f"12:00:{i:02d} iteration {i}/1000 | lm loss: 2.0 |", node=node, rank=k,
                               time=1000.0 + i, line=line, file=f"{node}.log"))
        for text in closing.get(node, []):
            line += 1
            records.append(rec(text, node=node, rank=k, time=1021.0 + 0.1 * k, line=line, file=f"{node}.log"))
        if then_timeout:
            line += 1
            r = rec(WATCHDOG.format(r=k), node=node, rank=k, time=1051.0, line=line, file=f"{node}.log")
            records.append(r)
            cascades.append(Finding("rules", "unknown", "cascade", 0.35, "watchdog", node=node, rank=k,
                                    time=1051.0, rule="nccl-watchdog-timeout", records=[r]))
    return scan_records(records, DigitMiner()), cascades


ADVICE = ["CUDA kernel errors might be asynchronously reported at some other API call.",
          "For debugging consider passing CUDA_LAUNCH_BLOCKING=1."]


def test_every_node_printing_the_suspects_last_lines_makes_the_fault_job_wide() -> None:
    scan, findings = _job({n: ADVICE for n in NODES})
    shared = said_alike(scan, findings, "n2", "software")
    assert shared is not None and shared.nodes == NODES
    assert shared.finding.node == "n2" and shared.finding.category == "software"
    assert [r.text for r in shared.finding.records] == ADVICE


def test_the_lines_every_node_printed_say_what_failed_in_their_own_words() -> None:
    """Standing in for a hang, which names no component, the shared lines give the category their words name;
    lines that name nothing keep the category they were given."""
    nan = ["Nan loss occured in the second epoch"]
    scan, findings = _job({n: nan for n in NODES})
    shared = said_alike(scan, findings, "n2", "software")
    assert shared is not None and shared.finding.category == "numerical"
    scan, findings = _job({n: ["all done here, leaving now"] for n in NODES})
    shared = said_alike(scan, findings, "n2", "software")
    assert shared is not None and shared.finding.category == "software"


def test_lines_naming_nothing_after_a_verdict_that_read_none_are_the_jobs_settings() -> None:
    """A stall or a peer's timeout lends no category (``unknown``): what every node stopped at alike, naming no
    part, is the settings every rank was given."""
    shape = ["Global shape mismatch for loaded ((1024, 768)) and expected ((512, 768)) tensor for key embedding"]
    scan, findings = _job({n: shape for n in NODES})
    shared = said_alike(scan, findings, "n2", "unknown")
    assert shared is not None and shared.finding.category == "user_config"
    nan = ["Nan loss occured in the second epoch"]  # words that name a part still decide
    scan, findings = _job({n: nan for n in NODES})
    shared = said_alike(scan, findings, "n2", "unknown")
    assert shared is not None and shared.finding.category == "numerical"


def test_lines_of_the_suspect_alone_or_on_some_nodes_keep_the_fault_local() -> None:
    alone, findings = _job({"n2": ADVICE})
    assert said_alike(alone, findings, "n2") is None
    some, findings = _job({n: ADVICE for n in NODES[:3]})  # n4 went on training without a word
    assert said_alike(some, findings, "n2") is None
    # the same advice everywhere, but the suspect also said something no other node did
    own, findings = _job({**{n: ADVICE for n in NODES}, "n2": ADVICE + ["NVRM: Xid (PCI:0000:3b:00): 79, GPU has "
                                                                      "fallen off the bus."]})
    assert said_alike(own, findings, "n2") is None


def test_ranks_that_went_on_to_lose_a_peer_did_not_fail_alike() -> None:
    # every rank logs the same checkpoint notice; one then hangs and the others time out waiting for it
    notice = ["[INFO] saving checkpoint at iteration 20 to /ckpt/iter_0000020"]
    scan, findings = _job({n: notice for n in NODES}, then_timeout=True)
    assert said_alike(scan, findings, "n2") is None


def test_too_few_nodes_or_routine_lines_say_nothing() -> None:
    scan, findings = _job({})  # only progress lines: nothing closes the node's log
    assert said_alike(scan, findings, "n2") is None
    assert said_alike(scan, findings, None) is None


def _planted(tmp_path: Path, category: str) -> tuple[dict, str]:
    # lines no rule knows: NCCL's informational lines as it falls back to sockets and gives up
    lines = ("dgx1:1050:1315 [0] NCCL INFO Channel 13/0 : 0[90000] -> 1[1000] [send] via NET/Socket/5",
             "dgx1:1050:1316 [0] NCCL INFO include/net.h:25 -> 2",
             "dgx1:1050:1316 [0] NCCL INFO transport/net.cc:515 -> 2")
    x = Excerpt(id=f"sockets-{category}", source_group="t", split="dev", status="incident", category=category,
                phase="init", faulty=None, lines=lines)
    planter = JobPlanter(x, 0)
    job = planter.write("rank-files", tmp_path / category)
    return analyze(job_paths(job.path)).to_dict(), planter.hosts[planter.faulty_node]


def test_a_planted_job_wide_fault_blames_no_node_and_a_node_fault_keeps_its_node(tmp_path: Path) -> None:
    shared, _ = _planted(tmp_path, "user_config")  # printed by a rank of every node
    assert shared["scope"] == "global" and shared["suspects"] == []
    roots = [e for e in shared["evidence"] if e["role"] == "root"]
    assert any("include/net.h:25 -> 2" in e["text"] for e in roots)
    # the start-up lines every rank printed (those that lost a peer too) close a short job but are not its fault
    assert not any("initializing torch distributed" in e["text"] or "NCCL version" in e["text"] for e in roots)
    local, node = _planted(tmp_path, "software")  # printed by one rank; every other node loses it
    assert local["scope"] == "node" and local["suspects"][0]["node"] == node


def test_the_alike_lines_words_name_the_category_and_a_part_every_node_has_reads_as_their_setting() -> None:
    # every rank stops on the same full disk: what the lines name, not the rule's reading of one line
    full = ["OSError: [Errno 28] No space left on device: '/shared/ckpt/iter_0000020/model.pt'"]
    scan, findings = _job({n: full for n in NODES})
    shared = said_alike(scan, findings, "n2", "software")
    assert shared is not None and shared.finding.category == "storage"
    # every node fails to reach a docker bridge's address at once: an interface they were all told to use
    nic = ["misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 172.17.0.1<40945> failed : Software "
           "caused connection abort"]
    scan, findings = _job({n: nic for n in NODES})
    shared = said_alike(scan, findings, "n2", "network")
    assert shared is not None and shared.finding.category == "user_config"
