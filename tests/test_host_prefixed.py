"""A stream whose every line starts with the host that wrote it (``pdsh -w``, as DeepSpeed's and accelerate's
multi-node launchers run it): the prefix names each line's node, the rest of the line is read as in the host's
own log. Decided per file from its first lines, never per line: ``node1: ...`` in an ordinary log names nothing."""

from __future__ import annotations

import json
from pathlib import Path

from l4lite.api import analyze
from l4lite.ingest.hostprefix import host_prefixed
from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.options import AnalyzeOptions
from l4lite.records import Accounting

PDSH = [
    "104.171.201.171: [2023-04-10 12:00:01,234] [INFO] [engine.py:100:step] step=10, skipped=0, lr=[0.0001]",
    "worker-1: [2023-04-10 12:00:02,234] [INFO] [engine.py:100:step] step=10, skipped=0, lr=[0.0001]",
    "worker-1: Traceback (most recent call last):",
    "104.171.201.171: [2023-04-10 12:00:02,500] [INFO] [engine.py:100:step] step=11, skipped=0, lr=[0.0001]",
    'worker-1:   File "train.py", line 10, in <module>',
    "worker-1: RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1169, unhandled system error",
    "gpu-node-07: [2023-04-10 12:00:03,000] [INFO] [launch.py:318:sigkill_handler] Killing subprocess 4242",
]


def _records(tmp_path: Path, lines: list[str]) -> list:
    (tmp_path / "job.out").write_text("\n".join(lines) + "\n")
    return list(iter_records([str(tmp_path)], IngestOptions(), Accounting()))


def test_the_decision_is_the_files_not_a_lines() -> None:
    assert host_prefixed(PDSH)
    plain = ["2026-12-01 10:00:00 INFO starting", "node1: reachable", "2026-12-01 10:00:01 INFO step 1",
             "wandb: syncing", "INFO: ready", "2026-12-01 10:00:02 INFO step 2"]
    assert not host_prefixed(plain)
    assert not host_prefixed(["wandb: Tracking run", "wandb: View project", "wandb: Run data is saved"])


def test_a_pdsh_stream_names_each_lines_node_time_and_template(tmp_path: Path) -> None:
    recs = _records(tmp_path, PDSH)
    first = recs[0]
    assert first.node == "104.171.201.171" and first.time is not None
    assert not first.message.startswith("104.")
    by_host = {r.node: r for r in recs}
    assert set(by_host) == {"104.171.201.171", "worker-1", "gpu-node-07"}
    tb = next(r for r in recs if "Traceback" in r.text)
    # the host's traceback is one record across the other host's line, its frames without the prefix
    assert tb.node == "worker-1" and tb.end_line == 6 and tb.time is not None
    assert tb.text.split("\n")[1:] == ['  File "train.py", line 10, in <module>',
                                       "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1169, unhandled system error"]
    assert all(not r.message.startswith(("worker-1:", "gpu-node-07:", "104.")) for r in recs)


def test_a_few_lines_that_start_with_a_word_and_a_colon_stay_as_they_were(tmp_path: Path) -> None:
    lines = [f"2026-12-01 10:00:{i:02d} INFO step {i} loss 1.0" for i in range(20)]
    lines[5] = "node1: link up"
    lines[9] = "worker-3: joined"
    recs = _records(tmp_path, lines)
    odd = [r for r in recs if r.message.startswith(("node1:", "worker-3:"))]
    assert len(odd) == 2 and all(r.node is None for r in odd)


def _deepspeed_job() -> list[str]:
    """Two nodes' DeepSpeed output as ``deepspeed --hostfile`` prints it through pdsh: only the prefix says which
    node raised the CUDA error; the other node's rank times out waiting for it."""
    lines = []
    for i in range(40):
        for host in ("gpu-node-1", "gpu-node-2"):
            lines.append(f"{host}: [2023-04-10 12:00:{i:02d},100] [INFO] [engine.py:1800:step] step={i + 1}, "
                         f"skipped=0, lr=[0.0001], mom=[(0.9, 0.999)]")
    lines += [
        "gpu-node-2: Traceback (most recent call last):",
        'gpu-node-2:   File "/opt/train.py", line 88, in <module>',
        "gpu-node-2:     loss.backward()",
        "gpu-node-2: RuntimeError: CUDA error: an illegal memory access was encountered",
        "gpu-node-1: [2023-04-10 12:10:41,000] [E ProcessGroupNCCL.cpp:475] [Rank 0] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=2001, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
        "ran for 600043 milliseconds before timing out.",
        "gpu-node-2: [2023-04-10 12:00:41,500] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 4242",
        "gpu-node-1: [2023-04-10 12:10:42,000] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 4141",
    ]
    return lines


def test_analyze_of_a_pdsh_merged_job_names_the_node_that_broke(tmp_path: Path) -> None:
    (tmp_path / "job.out").write_text("\n".join(_deepspeed_job()) + "\n")
    inc = analyze([str(tmp_path)], AnalyzeOptions()).to_dict()
    assert inc["suspects"][0]["node"] == "gpu-node-2", json.dumps(inc["suspects"][:2])


def test_container_lines_under_pdsh_hosts_lose_their_runtime_prefix(tmp_path: Path) -> None:
    recs = _records(tmp_path, [
        "worker-0: 2026-12-03T23:49:34.766369990Z stderr F [rank1]: Traceback (most recent call last):",
        "worker-1: 2026-12-03T23:49:34.800000000Z stdout F step 3 loss 1.0",
        'worker-0: 2026-12-03T23:49:34.766370355Z stderr F [rank1]:   File "train.py", line 3, in <module>',
        "worker-0: 2026-12-03T23:49:34.766370355Z stderr F [rank1]: RuntimeError: shape mismatch",
    ])
    tb = next(r for r in recs if "Traceback" in r.text)
    assert tb.node == "worker-0" and tb.rank == 1 and tb.end_line == 4 and tb.time is not None
    assert "stderr F" not in tb.text


def _long_pdsh(dest: Path, hosts: tuple[str, ...]) -> None:
    lines = []
    for i in range(3000):
        host = hosts[i % len(hosts)]
        t = f"2023-04-10 12:{i // 600:02d}:{i // 10 % 60:02d},{i % 10}00"
        lines.append(f"{host}: [{t}] [INFO] [logging.py:96:log_dist] [Rank {i % len(hosts)}] step={i}, skipped=0")
        if i % 3 == 0:
            lines.append(f"{host}: {{'loss': {1 + i / 7:.4f}, 'epoch': {i / 1000:.2f}}}")
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "train.log").write_text("\n".join(lines) + "\n")


def test_runs_read_a_pdsh_stream_as_the_per_line_path_does(tmp_path: Path) -> None:
    from dataclasses import astuple

    from l4lite.ingest.files import discover
    from l4lite.ingest.reader import iter_job
    from l4lite.ingest.shaperun import ShapeRun

    _long_pdsh(tmp_path / "merged", ("10.0.0.2", "10.0.0.3", "gpu-node-07"))  # one file: no path names a node
    _long_pdsh(tmp_path / "job" / "gpu-node-09", ("gpu-node-09",))  # a node's own file under its folder
    for root in (tmp_path / "merged", tmp_path / "job"):
        ways = []
        for opts in (IngestOptions(), IngestOptions(line_runs=False), IngestOptions(line_shapes=False)):
            ways.append([astuple(r)[:-1] for r in iter_records([str(root)], opts, Accounting())])
        assert ways[0] == ways[1] == ways[2]
        assert {r[3] for r in ways[0]} >= {"gpu-node-07"} or {r[3] for r in ways[0]} == {"gpu-node-09"}
        acc = Accounting()
        in_runs = sum(len(x) for x in iter_job(discover([str(root)], acc), IngestOptions(), acc, runs=True)
                      if type(x) is ShapeRun)
        assert in_runs > 0.8 * len(ways[0])  # the fast path keeps the prefix
