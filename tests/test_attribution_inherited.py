"""Nodes named from the whole job's evidence, not from one file's path: a file whose lines name no host takes its
rank's host or its folder's, a merged file of several nodes gives its hostless lines to none of them, and one
stray line naming an odd host adds no node. Lines are shaped as torchrun, torchelastic and syslog write them
(``fixtures/real_jobs/003-ddp-hang``, ``037-ddp-host_oom``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from l4lite.ingest.attribution import inherited_hosts, mixed_hosts
from l4lite.ingest.context import build_context
from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.records import Accounting, Record


def _launcher(pid: int) -> str:
    return (f"W1203 23:46:55.404000 {pid} torch/distributed/run.py:874] *****************************************\n"
            f"W1203 23:46:55.404000 {pid} torch/distributed/run.py:874] Setting OMP_NUM_THREADS environment "
            "variable for each process to be 1 in default\n")


def _banner(rank: int, local: int, host: str) -> str:
    return (f"[default{local}]:2026-12-03 23:47:04,307 INFO [rank{rank}] initialized process group: backend=gloo "
            f"world_size=4 local_rank={local} host={host}\n")


def _steps(rank: int, n: int = 3) -> str:
    return "".join(f"2026-12-03 23:47:1{i},422 INFO [rank{rank}] step {i + 1}/40 | loss 5.70\n" for i in range(n))


def _kern(host: str, n: int = 3) -> str:
    return "".join(f"Dec  3 23:47:12 {host} kernel: [34297.71186{i}] python3 invoked oom-killer: gfp_mask=0xcc0\n"
                   for i in range(n))


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _ingest(job: Path) -> list[Record]:
    acc = Accounting()
    recs = list(iter_records([str(job)], IngestOptions(), acc))
    assert acc.balanced
    return recs


def _nodes(recs: list[Record]) -> dict[str, set[str | None]]:
    out: dict[str, set[str | None]] = {}
    for r in recs:
        out.setdefault(r.file, set()).add(r.node)
    return out


def test_mixed_needs_two_hosts_each_named_more_than_once() -> None:
    assert mixed_hosts(Counter({"node-a": 6, "node-b": 10}))
    assert not mixed_hosts(Counter({"node-a": 12, "node-b": 1}))  # one stray line
    assert not mixed_hosts(Counter({"node-a": 2}))
    assert not mixed_hosts(Counter())


def test_hostless_files_of_attempt_folders_take_the_host_their_folder_names(tmp_path: Path) -> None:
    """``attempt_N`` folders name no node; a rank's stdout that names no host is its folder-mates' host's."""
    files = {}
    for i, host in enumerate(("worker-a1", "worker-b2")):
        files[f"attempt_{i}/console.log"] = _launcher(100 + i) + _banner(2 * i, 0, host)
        files[f"attempt_{i}/run_x/attempt_0/0/stderr.log"] = _banner(2 * i, 0, host)[len("[default0]:"):]
        files[f"attempt_{i}/run_x/attempt_0/0/stdout.log"] = _steps(2 * i)
    nodes = _nodes(_ingest(_write(tmp_path / "job", files)))
    assert nodes["attempt_0/run_x/attempt_0/0/stdout.log"] == {"worker-a1"}
    assert nodes["attempt_1/run_x/attempt_0/0/stdout.log"] == {"worker-b2"}
    assert nodes["attempt_1/console.log"] == {"worker-b2"}


def test_a_folder_of_two_hosts_gives_its_hostless_files_none(tmp_path: Path) -> None:
    """Every file of the job in one ``logs/`` folder: the folder names no node, so a file naming no host takes
    neither of the hosts its folder-mates name."""
    job = _write(tmp_path / "job", {
        "logs/000-stderr.log": _banner(0, 0, "node-a")[len("[default0]:"):] + _steps(0),
        "logs/001-stderr.log": _banner(2, 0, "node-b")[len("[default0]:"):] + _steps(2),
        "logs/002-stdout.log": "2026-12-03 23:47:14,000 INFO saving checkpoint\n",
    })
    ctx = build_context(discover([str(job)], Accounting()).files)
    assert ctx.node_of("logs/002-stdout.log") is None
    assert ctx.node_of("logs/000-stderr.log") == "node-a"


def test_a_rank_file_takes_the_host_the_job_ties_to_its_rank() -> None:
    got = inherited_hosts(["run/rank2.log", "run/rank5.log", "run/a.log", "node-b/x.log"],
                          {"node-b/x.log": "node-b"}.get, [(2, "node-b"), (5, "node-a"), (5, "node-c")])
    assert got == {"run/rank2.log": "node-b"}  # rank 5 is tied to two hosts: no guess; run/ names no host


def test_a_rank_file_of_a_hostless_folder_is_its_ranks_node(tmp_path: Path) -> None:
    job = _write(tmp_path / "job", {
        "node-a/console.log": _launcher(100) + _banner(0, 0, "node-a") + _banner(1, 1, "node-a"),
        "node-b/console.log": _launcher(200) + _banner(2, 0, "node-b") + _banner(3, 1, "node-b"),
        "ranks/rank3.log": _steps(3) + "2026-12-03 23:47:20,000 ERROR step 4 failed: RuntimeError: boom\n",
    })
    ctx = build_context(discover([str(job)], Accounting()).files)
    assert ctx.node_of("ranks/rank3.log") == "node-b"
    assert _nodes(_ingest(job))["ranks/rank3.log"] == {"node-b"}


def test_a_plain_merged_file_gives_hostless_lines_to_no_node(tmp_path: Path) -> None:
    """``cat`` of two nodes' logs: the kernel log names node-b on many lines, torchrun's banners name node-a; the
    launcher's lines that name no host are neither node's (before, the first host the reader met took them all),
    while a ``[rankN]:`` line still takes its rank's host from the job's ties."""
    text = (_launcher(100) + _banner(0, 0, "node-a") + _banner(1, 1, "node-a")
            + "[rank1]: RuntimeError: Connection closed by peer\n"
            + _launcher(200) + _banner(2, 0, "node-b") + _banner(3, 1, "node-b") + _kern("node-b", 2))
    job = _write(tmp_path / "job", {"job.out": text})
    ctx = build_context(discover([str(job)], Accounting()).files)
    assert "job.out" in ctx.mixed and ctx.node_of("job.out") is None
    recs = _ingest(job)
    launcher = [r for r in recs if "OMP_NUM_THREADS" in r.text]
    assert launcher and all(r.node is None for r in launcher)
    assert {r.node for r in recs if "kernel:" in r.text} == {"node-b"}
    assert {r.node for r in recs if r.text.startswith("[rank1]:")} == {"node-a"}


def test_one_stray_host_line_leaves_the_file_its_own_host(tmp_path: Path) -> None:
    """A node's kernel log with one line of another host (a forwarded message): still one host's file, and its
    hostless lines are that host's."""
    text = _kern("node-b", 6) + _kern("node-z", 1) + "python3 invoked oom-killer: gfp_mask=0xcc0\n"
    job = _write(tmp_path / "job", {"dump/kern.log": text})
    ctx = build_context(discover([str(job)], Accounting()).files)
    assert ctx.mixed == []
    recs = _ingest(job)
    assert recs[-1].node == "node-b"


def _agent_end(pid: int, child: int, host: str, rank: int) -> str:
    """An agent's last lines: it stops a worker, then its failure summary names the worker's host and pid."""
    return (f"W1203 14:40:04.257000 {pid} torch/distributed/elastic/multiprocessing/api.py:1028] Sending process "
            f"{child} closing signal SIGTERM\n"
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
            "============================================================\n"
            "Failures:\n[1]:\n  time      : 2026-12-03_14:40:04\n"
            f"  host      : {host}\n  rank      : {rank} (local_rank: 0)\n"
            f"  exitcode  : -15 (pid: {child})  (SIGTERM)\n"
            "============================================================\n")


def test_pid_hosts_ties_an_agent_through_its_workers() -> None:
    from l4lite.ingest.pids import child_pid, pid_hosts

    line = "W1203 14:40:04.257000 19477 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 19644"
    assert child_pid(line) == ("19477", "19644")
    assert child_pid("E1203 14:40:04.557000 19477 api.py:1002] failed (exitcode: 1) local_rank: 1 (pid: 19646) "
                     "of binary") == ("19477", "19646")
    assert pid_hosts([("19477", "19644")], [("19644", "node-b")]) == {"19644": "node-b", "19477": "node-b"}
    # the same pid on two machines ties neither
    assert pid_hosts([("500", "19644"), ("500", "7")], [("19644", "node-b"), ("7", "node-a")]) == \
        {"19644": "node-b", "7": "node-a"}


def test_a_merged_agents_line_is_the_node_its_summary_names(tmp_path: Path) -> None:
    """``cat`` of two nodes' consoles: the agent's ``Sending process N closing signal`` names no host, but the
    failure summary below it ties worker N to its host, and the agent's pid with it."""
    text = (_launcher(19408) + _banner(0, 0, "node-a") + _banner(1, 1, "node-a")
            + _launcher(19477) + _banner(2, 0, "node-b") + _banner(3, 1, "node-b")
            + _agent_end(19477, 19644, "node-b", 2))
    job = _write(tmp_path / "job", {"job.out": text})
    ctx = build_context(discover([str(job)], Accounting()).files)
    assert ctx.pids["19477"] == "node-b" and "19408" not in ctx.pids
    recs = _ingest(job)
    assert {r.node for r in recs if "Sending process" in r.text} == {"node-b"}
    assert {r.node for r in recs if " 19477 " in r.text} == {"node-b"}
    assert {r.node for r in recs if " 19408 " in r.text} == {None}  # its agent names no worker: no guess


def test_a_merged_file_is_read_whole_for_its_pids(tmp_path: Path) -> None:
    """The summaries of a large merged file sit between its sampled head and tail: a file that no path names a
    node of is read whole for its pids."""
    filler = "".join(f"[default0]:2026-12-03 14:39:2{i % 10},000 INFO step {i} | loss 5.70 | {'x' * 60}\n"
                     for i in range(800))  # about 70 KB
    text = (_launcher(19408) + filler + _agent_end(19477, 19644, "node-b", 2) + filler
            + _agent_end(19408, 19645, "node-a", 1) + filler)
    job = _write(tmp_path / "job", {"job.out": text})
    ctx = build_context(discover([str(job)], Accounting()).files)
    assert ctx.pids["19477"] == "node-b" and ctx.pids["19408"] == "node-a"
    recs = _ingest(job)
    assert {r.node for r in recs if "Sending process 19644" in r.text} == {"node-b"}
    assert {r.node for r in recs if "OMP_NUM_THREADS" in r.text} == {"node-a"}


def test_a_merged_console_on_stdin_is_read_whole_for_its_pids_and_its_end(monkeypatch) -> None:
    """The same merged file piped in (``cat job.out | l4lite analyze -``): its summaries and last times lie past
    the first 32 KB, which were all that was sampled of stdin. A stream held whole before the job is read is
    sampled at both ends and read for its pids, and its lines are read once, in order."""
    import io
    import sys

    from l4lite.ingest import files as files_mod

    filler = "".join(f"[default0]:2026-12-03 14:39:2{i % 10},000 INFO step {i} | loss 5.70 | {'x' * 60}\n"
                     for i in range(800))  # about 70 KB
    late = "[default0]:2026-12-03 17:05:00,000 INFO step 801 | loss 5.70\n"  # hours after the head's times
    text = (_launcher(19408) + filler + _agent_end(19477, 19644, "node-b", 2) + filler
            + _agent_end(19408, 19645, "node-a", 1) + filler + late)
    files_mod._replays.clear()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    ctx = build_context(discover(["-"], Accounting()).files)
    assert ctx.pids["19477"] == "node-b" and ctx.pids["19408"] == "node-a"
    assert ctx.end is not None and ctx.end >= 1796317500.0  # 2026-12-03 17:05 UTC: the stream's last line
    files_mod._replays.clear()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    acc = Accounting()
    recs = list(iter_records(["-"], IngestOptions(), acc))
    assert acc.balanced and acc.lines_read == text.count("\n")
    assert {r.node for r in recs if "Sending process 19644" in r.text} == {"node-b"}
    assert {r.node for r in recs if "OMP_NUM_THREADS" in r.text} == {"node-a"}
    assert recs[-1].time == 1796317500.0  # the last line keeps its own time: the job's end was sampled
