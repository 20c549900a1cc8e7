"""Node, rank and GPU attribution: from paths, from line headers, and the rank -> node map."""

from __future__ import annotations

import pytest

from l4lite.ingest.attribution import (
    NAMED_HOST_PREFIX,
    NCCL_HEADER,
    SRUN_LABEL,
    SYSLOG_HOST,
    TORCHRUN_PREFIX,
    RankMap,
    attribute_path,
    compile_node_from,
    elastic_ties,
    host_from_path,
    normalize_host,
    rank_from_path,
)
from l4lite.records import Record


@pytest.mark.parametrize(
    ("rel", "node", "rank"),
    [
        ("node017/rank3.log", "node017", 3),
        ("node017/stdout.txt", "node017", None),
        ("gpu-a100-017.log", "gpu-a100-017", None),
        ("dmesg-node017.txt", "node017", None),
        ("slurm-1234.node017.out", "node017", None),
        ("10-0-3-17/syslog", "10-0-3-17", None),
        ("ip-10-0-3-17.log", "ip-10-0-3-17", None),
        ("logs/dgx017.cluster.local/train.log", "dgx017", None),
        ("10.0.3.17/kern.log", "10.0.3.17", None),
        ("rank-3.log", None, 3),
        ("rank_03.out", None, 3),
        ("node017_rank3.log", "node017", 3),
        ("node017/syslog.1", "node017", None),
        ("llama-7b/node017.out.gz", "node017", None),
        ("cn-d004/stdout.txt", "cn-d004", None),
        ("kp-ddp-worker-0.log", "kp-ddp-worker-0", None),
        # not hosts: run/experiment names, model names, dates, local ranks
        ("exp2/run3/train.log", None, None),
        ("gpt2/train.log", None, None),
        ("bert-base-v2/x.log", None, None),
        ("2024-01-01/out.log", None, None),
        ("local_rank3.log", None, None),
        ("nematus-8-nfs-ioerror-on-save.log", None, None),
        ("train.log", None, None),
        ("-", None, None),
    ],
)
def test_path_attribution(rel: str, node: str | None, rank: int | None) -> None:
    assert attribute_path(rel) == (node, rank)


def test_node_from_regex_named_group_group1_and_whole_match() -> None:
    rel = "job-77/host_a17/out.txt"
    assert attribute_path(rel, compile_node_from(r"host_(?P<node>\w+)"))[0] == "a17"
    assert attribute_path(rel, compile_node_from(r"host_(\w+)"))[0] == "a17"
    assert attribute_path(rel, compile_node_from(r"host_a\d+"))[0] == "host_a17"
    # no match: fall back to the built-in heuristics
    assert attribute_path("node003/x.log", compile_node_from(r"zzz(\d+)"))[0] == "node003"


def test_node_from_bad_regex() -> None:
    with pytest.raises(ValueError, match="--node-from"):
        compile_node_from("(unclosed")


@pytest.mark.parametrize(
    ("host", "norm"),
    [("dgx017.cluster.local", "dgx017"), ("H100-2", "h100-2"), ("10.0.3.17", "10.0.3.17"),
     ("ip-172-31-21-134.ec2.internal", "ip-172-31-21-134")],
)
def test_normalize_host(host: str, norm: str) -> None:
    assert normalize_host(host) == norm


def test_host_and_rank_helpers_direct() -> None:
    assert host_from_path("a/b/c") is None
    assert rank_from_path("node1/rank12/out.log") == 12
    # a JAX process index and a Slurm task id (``srun -o %t``) are global ranks; a local rank is not
    assert rank_from_path("cpu-node-b/process_2.log") == 2
    assert rank_from_path("logs/task-7.out") == 7
    assert rank_from_path("node1/local_rank3.log") is None


# ---- line patterns on real excerpts (fixtures/real/real-failures.jsonl)


def test_nccl_header_real() -> None:
    m = NCCL_HEADER.match("ng30903:3063025:3066048 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed")
    assert m and (m[1], m[2], m[3], m[4]) == ("ng30903", "3063025", "3066048", "0")
    m = NCCL_HEADER.match("kp-ddp-worker-0:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion")
    assert m and m[1] == "kp-ddp-worker-0" and m[4] == "4"


def test_torchrun_prefixes_real() -> None:
    m = TORCHRUN_PREFIX.match("[rank0]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog")
    assert m and (m[1], m[2]) == ("rank", "0")
    m = TORCHRUN_PREFIX.match("[default7]: iteration    45000/  115311")
    assert m and (m[1], m[2]) == ("default", "7")
    m = TORCHRUN_PREFIX.match("[80746] [rank4]:[E321 02:07:08.414640780 ProcessGroupNCCL.cpp:607] x")
    assert m and m[2] == "4"
    assert TORCHRUN_PREFIX.match("[Rank 0] Watchdog") is None
    assert TORCHRUN_PREFIX.match("[0]:") is None


def test_named_host_prefix_real() -> None:
    line = "dinov2-giant-nodes.cn-d004 [stderr] [rank14]:[E909 09:55:29.307629539 ProcessGroupNCCL.cpp:607] x"
    m = NAMED_HOST_PREFIX.match(line)
    assert m and (m[1], m[2]) == ("dinov2-giant-nodes", "cn-d004")
    assert line[m.end():].startswith("[rank14]:")


def test_srun_label_and_syslog_host() -> None:
    m = SRUN_LABEL.match("  3: hello")
    assert m and m[1] == "3"
    assert SRUN_LABEL.match("10:11:12 not a label") is None
    m = SYSLOG_HOST.match("ip-10-0-33-4 kernel: [271848.483268] Lustre: x")
    assert m and (m[1], m[2]) == ("ip-10-0-33-4", "kernel")
    m = SYSLOG_HOST.match("node1 systemd[1]: Started x")
    assert m and (m[1], m[2], m[3]) == ("node1", "systemd", "1")


# ---- the rank map


def _rec(text: str, node: str | None = None) -> Record:
    return Record("f", 1, 1, node, None, None, "nccl", None, None, text, text)


def test_rank_map_prefers_the_largest_communicator_and_explicit_ties() -> None:
    rm = RankMap()
    rm.tie(2, "tp-node", weight=8)  # rank 2 of an 8-rank tensor-parallel communicator
    rm.tie(2, "world-node", weight=16)  # rank 2 of the world
    assert rm.node_of(2) == "world-node"
    rm.tie(2, "tp-other", weight=8)  # smaller communicator: ignored
    assert rm.node_of(2) == "world-node"
    rm.tie(2, "explicit")  # torchelastic summary: wins
    assert rm.node_of(2) == "explicit"
    rm.tie(2, "contradiction")
    assert rm.node_of(2) == "explicit" and rm.conflicts == 1
    assert rm.node_of(None) is None and rm.node_of(99) is None


def test_rank_map_learns_from_nccl_init_record_and_roundtrips() -> None:
    rm = RankMap()
    text = ("swat1-04:2017630:2017675 [6] NCCL INFO ncclCommInitRank comm 0x8ec0ac0 rank 6 nranks 16 cudaDev 6 "
            "nvmlDev 6 busId c8000 commId 0x49bbd7790311d5eb - Init COMPLETE")
    assert rm.learn(_rec(text, node="swat1-04"))
    assert not rm.learn(_rec("nothing here", node="swat1-04"))
    assert rm.node_of(6) == "swat1-04"
    other = RankMap()
    other.tie(7, "swat1-05")
    rm.merge(other)
    back = RankMap.from_dict(rm.to_dict())
    assert back.as_dict() == {6: "swat1-04", 7: "swat1-05"} and len(back) == 2 and 7 in back


def test_elastic_ties_real_vlmevalkit_block() -> None:
    block = """[1]:
  time      : 2025-07-10_21:46:37
  host      : ip-172-31-21-134.ec2.internal
  rank      : 1 (local_rank: 1)
  exitcode  : -6 (pid: 32051)
[2]:
  time      : 2025-07-10_21:46:37
  host      : ip-172-31-21-134.ec2.internal
  rank      : 3 (local_rank: 3)"""
    assert elastic_ties(block.split("\n")) == [(1, "ip-172-31-21-134"), (3, "ip-172-31-21-134")]
    rm = RankMap()
    assert rm.learn(_rec(block, node=None))
    assert rm.node_of(3) == "ip-172-31-21-134"
