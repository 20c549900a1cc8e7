"""How the planter lays an excerpt's own host and kernel lines into an 8-node job: a planted line must read as
the planted node's, or the evaluation scores a job that no real cluster would log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from l4lite import analyze
from l4lite.evaluate.planting import LAYOUTS, Excerpt, JobPlanter


def _excerpt(name: str, *lines: str, category: str = "host") -> Excerpt:
    return Excerpt(id=name, source_group=f"t#{name}", split="dev", status="incident", category=category,
                   phase="train", faulty="node", lines=lines)


SYSLOG_MCE = _excerpt(
    "syslog-mce",
    "Jan 12 03:28:16 gpu-node-114 kernel: mce: [Hardware Error]: Machine check events logged",
    "Jan 12 03:28:16 gpu-node-114 kernel: EDAC sbridge MC1: HANDLING MCE MEMORY ERROR",
    "Jan 12 03:28:17 gpu-node-114 kernel: EDAC MC1: 1 UE memory read error on CPU_SrcID#1_Ha#0_Chan#2_DIMM#0",
)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_syslog_kernel_line_is_planted_with_the_planted_nodes_host_and_the_jobs_date(tmp_path, layout) -> None:
    job = JobPlanter(SYSLOG_MCE, seed=1).write(layout, tmp_path / layout)
    truth = job.truth
    host = truth["faulty_nodes"][0]
    planted = [(job.path / e["file"]).read_text().splitlines()[e["line"] - 1] for e in truth["evidence"]]
    assert len(planted) == 3 and host != "gpu-node-114"
    assert all(f" {host} kernel: " in line and "gpu-node-114" not in line and not line.startswith("Jan 12")
               for line in planted)
    assert all(line.count("kernel:") == 1 for line in planted)  # one header, not the excerpt's and a new one
    inc = analyze(str(job.path)).to_dict()
    assert inc["suspects"][0]["node"] == host
    assert "gpu-node-114" not in {s["node"] for s in inc["suspects"]}


def test_a_planted_syslog_header_pads_the_day_and_never_the_hour() -> None:
    """rsyslog's header pads a day of the month below 10 with a space ("May  5 06:33:45"); the hour is always two
    digits. The planter once padded the first " 0" it met, which on a day from the 10th on was the hour's ("May 15
    6:33:45"): no syslog stamp, so the planted kernel line had no time (m-study's LlamaFactory#3230 read unknown)."""
    from datetime import UTC, datetime

    from l4lite.evaluate.planting import _syslog
    from l4lite.ingest.timestamps import TimestampParser

    for when, header in ((datetime(2024, 5, 15, 6, 33, 45, tzinfo=UTC), "May 15 06:33:45 n1 kernel: "),
                         (datetime(2024, 5, 5, 6, 33, 45, tzinfo=UTC), "May  5 06:33:45 n1 kernel: "),
                         (datetime(2024, 5, 5, 16, 3, 5, tzinfo=UTC), "May  5 16:03:05 n1 kernel: ")):
        assert _syslog(when.timestamp(), "n1") == header
        assert TimestampParser(2024).parse(header + "oom-kill:constraint=CONSTRAINT_MEMCG")[0] == when.timestamp()


NCCL_NO_DIGITS = _excerpt(
    "nccl-no-digits",
    "hostname-test:984:1357 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.5<0>",
    "hostname-test:984:1357 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
    "10.0.0.6<39741> with error 12, opcode 32758, len 0, vendor err 129",
    category="network",
)


def test_an_nccl_host_without_digits_is_the_planted_nodes_name(tmp_path) -> None:
    """The excerpt's lines name their host; the job's node must be that host, not a folder of another name."""
    job = JobPlanter(NCCL_NO_DIGITS, seed=2).write("node-folders", tmp_path / "job")
    truth = json.loads((job.path / "ground_truth.json").read_text())
    assert truth["faulty_nodes"] == ["hostname-test"] and "hostname-test" in truth["node_names"]
    assert (job.path / "hostname-test").is_dir()
    assert analyze(str(job.path)).to_dict()["suspects"][0]["node"] == "hostname-test"


def test_a_word_before_pid_and_thread_that_is_no_host_name_keeps_the_generated_hosts(tmp_path: Path) -> None:
    x = _excerpt("nccl-word", "NCCL:984:1357 [0] NCCL WARN Call to ibv_modify_qp failed with error Invalid argument",
                 category="network")
    job = JobPlanter(x, seed=2).write("node-folders", tmp_path / "job")
    assert "nccl" not in job.truth["node_names"]


def _job_wide(faulty: str | None) -> Excerpt:
    return Excerpt(id="fp8-option", source_group="t#fp8", split="dev", status="incident", category="user_config",
                   phase="train", faulty=faulty, lines=(
                       "hgx-gpu7:1050:1315 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.5<0>",
                       "[rank3]:     output = torch._scaled_mm(",
                       "[rank3]: RuntimeError: cutlass cannot initialize"))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_job_wide_fault_pinned_on_no_node_is_printed_by_every_node_under_its_own_names(tmp_path, layout) -> None:
    job = JobPlanter(_job_wide(None), seed=3).write(layout, tmp_path / layout)
    truth = job.truth
    assert truth["faulty_nodes"] == [] and truth["node_scored"]
    planted = [(job.path / e["file"]).read_text().splitlines()[e["line"] - 1] for e in truth["evidence"]]
    assert len(planted) == 3 * 8
    errors = [line for line in planted if "cutlass cannot initialize" in line]
    assert len({line.split("[rank")[1].split("]")[0] for line in errors}) == 8  # each copy under its own rank
    hosts = {h for h in truth["node_names"] if any(line.startswith(f"{h}:") or f": {h}:" in line for line in planted)}
    assert hosts == set(truth["node_names"])  # and its own host
    text = "\n".join(p.read_text() for p in job.path.rglob("*") if p.is_file() and p.suffix in (".out", ".log"))
    lost = ("Watchdog caught", "Broken pipe", "closed by", "ncclUniqueId")
    assert sum(text.count(w) for w in lost) >= 8  # the ranks that did not print it lost their peers


def test_a_job_wide_fault_whose_thread_names_a_rank_is_still_printed_by_every_node(tmp_path) -> None:
    # The rank a thread names for a configuration fault is where its log came from: the truth blames no node, so
    # the logs must not say "one node" either.
    job = JobPlanter(_job_wide("rank 3"), seed=3).write("node-folders", tmp_path / "job")
    assert job.truth["faulty_nodes"] == [] and job.truth["node_scored"]
    assert len(job.truth["evidence"]) == 3 * 8
