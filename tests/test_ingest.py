"""Records from jobs: headers stripped, attribution, multi-line records, source and level, and line accounting.

Every test goes through ``ingest()``, which asserts that the books balance: lines read = lines in records +
lines skipped by reason.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from l4lite.errors import L4Error
from l4lite.ingest import files as sources
from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, RankMap, iter_records, read_file
from l4lite.records import Accounting, Record

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "ingest"
REAL = ROOT / "fixtures" / "real" / "real-failures.jsonl"


def ts(*args: int, us: int = 0) -> float:
    return datetime(*args, tzinfo=UTC).timestamp() + us / 1e6


def ingest(*paths: Path | str, **kw) -> tuple[list[Record], Accounting, IngestOptions]:
    acc = Accounting()
    opt = IngestOptions(**kw)
    recs = list(iter_records([str(p) for p in paths], opt, acc))
    assert acc.balanced, acc.to_dict()
    assert acc.records == len(recs)
    assert acc.lines_in_records == sum(_lines_of(r) for r in recs)
    last: dict[str, int] = {}
    for r in recs:  # each file's records in the order of their first line
        assert r.line > last.get(r.file, 0)
        last[r.file] = r.line
    return recs, acc, opt


def _lines_of(r: Record) -> int:
    return r.text.count("\n") + 1


def real_lines(excerpt_id: str) -> list[str]:
    with open(REAL, encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            if d["id"] == excerpt_id:
                return d["lines"]
    raise KeyError(excerpt_id)


def ingest_real(tmp_path: Path, excerpt_id: str, name: str | None = None, **kw):
    p = tmp_path / (name or "excerpt.log")
    p.write_text("\n".join(real_lines(excerpt_id)) + "\n", encoding="utf-8")
    return ingest(p, **kw)


def by_line(recs: list[Record], line: int) -> Record:
    return next(r for r in recs if r.line == line)


# ------------------------------------------------------------------------------------- real excerpts


def test_real_nccl_headers(tmp_path: Path) -> None:
    recs, _, _ = ingest_real(tmp_path, "nccl-1235-connection-closed-plus-nccl-oom")
    r = recs[0]
    assert (r.node, r.gpu, r.rank, r.source, r.level) == ("ng30903", 0, None, "nccl", "warning")
    assert r.message.startswith("misc/socket.cc:49 NCCL WARN socketProgress")
    oom = next(r for r in recs if "Cuda failure 'out of memory'" in r.message)
    assert (oom.node, oom.gpu) == ("ng30903", 3)
    assert by_line(recs, 2).level == "info"


def test_real_c10_rank_prefix_and_glog_time(tmp_path: Path) -> None:
    recs, _, _ = ingest_real(tmp_path, "llamafactory-6269-watchdog-reduce-scatter", year=2024)
    r = recs[0]
    assert r.rank == 0 and r.level == "error" and r.source == "nccl"
    assert r.time == pytest.approx(ts(2024, 12, 6, 18, 44, 12, us=715299), abs=1e-6)
    assert r.message.startswith("[Rank 0] Watchdog caught collective operation timeout")
    assert r.text.startswith("[rank0]:[E1206")
    assert [x.rank for x in recs] == [0, 0, 4, 4, 3]


def test_real_pid_then_rank_prefix(tmp_path: Path) -> None:
    recs, _, _ = ingest_real(tmp_path, "llamafactory-7396-watchdog-allreduce", year=2025)
    assert [r.rank for r in recs] == [0, 4, 0, 3]
    assert recs[0].time == pytest.approx(ts(2025, 3, 21, 2, 7, 8, us=408271), abs=1e-6)


def test_real_named_host_stderr_prefix(tmp_path: Path) -> None:
    recs, _, opt = ingest_real(tmp_path, "milabench-269-dinov2-multinode-watchdog-reduce", year=2024)
    first = recs[0]
    assert (first.node, first.rank, first.level) == ("cn-d004", 14, "error")
    assert first.message.startswith("[Rank 14] Watchdog caught")
    assert opt.rank_map.as_dict() == {11: "cn-d004", 12: "cn-d004", 14: "cn-d004", 15: "cn-d004"}


def test_real_dmesg_t_xid(tmp_path: Path) -> None:
    recs, _, _ = ingest_real(tmp_path, "gpud-46-dmesg-xid13-xid109-pytorch")
    xid = by_line(recs, 2)
    assert xid.source == "kernel" and xid.level == "error"
    assert xid.time == ts(2024, 8, 30, 11, 43, 9)
    assert xid.message.startswith("NVRM: Xid (PCI:0000:cb:00): 13")
    assert by_line(recs, 1).level == "error"  # nvidia-peermem ... ERROR detected


def test_real_syslog_kernel_lustre(tmp_path: Path) -> None:
    recs, _, _ = ingest_real(tmp_path, "pcluster-2701-fsx-lustre-network-error-after-oom", year=2021)
    r = recs[0]
    assert (r.node, r.source) == ("ip-10-0-33-4", "storage")
    assert r.time == ts(2021, 4, 30, 14, 49, 44)
    assert r.message.startswith("Lustre: 3315:0:(client.c:2116:ptlrpc_expire_one_request())")


def test_real_dmesg_t_lustre_lnet(tmp_path: Path) -> None:
    recs, _, _ = ingest_real(tmp_path, "jade-14-lustre-lnet-client-errors-gpu-cluster")
    assert {r.source for r in recs} == {"storage"}
    assert recs[-1].level == "error" and recs[-1].message.startswith("LustreError: 11-0:")


def test_real_deepspeed_launcher(tmp_path: Path) -> None:
    recs, _, _ = ingest_real(tmp_path, "deepspeed-2946-t5-11b-sigkill-handler")
    r = recs[0]
    assert (r.source, r.level) == ("launcher", "info")
    assert r.time == pytest.approx(ts(2023, 3, 5, 6, 40, 25, us=173000))
    assert r.message == "[launch.py:318:sigkill_handler] Killing subprocess 3698707"


def test_real_deepspeed_rank_in_message(tmp_path: Path) -> None:
    recs, _, _ = ingest_real(tmp_path, "openrlhf-841-normal-deepspeed-init")
    assert recs[0].rank == 0 and recs[1].rank is None


def test_real_torchelastic_block_vlmevalkit(tmp_path: Path) -> None:
    recs, _, opt = ingest_real(tmp_path, "vlmevalkit-1131-childfailed-sigabrt-odd-ranks")
    block = next(r for r in recs if "FAILED" in r.message)
    n = len(real_lines("vlmevalkit-1131-childfailed-sigabrt-odd-ranks"))
    assert (block.line, block.end_line) == (5, n)
    assert block.message == "run.py FAILED (failed ranks: 1, 3, 5, 7)"
    assert (block.source, block.level, block.node) == ("launcher", "error", "ip-172-31-21-134")
    assert opt.rank_map.as_dict() == {r: "ip-172-31-21-134" for r in (1, 3, 5, 7)}
    exc = by_line(recs, 4)
    assert exc.message == "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:"


def test_real_torchelastic_root_cause(tmp_path: Path) -> None:
    recs, _, opt = ingest_real(tmp_path, "cppo-6-grpo-childfailed-sigkill")
    block = recs[-1]
    assert block.message == ("src/open_r1/grpo_gsm.py FAILED (root cause: rank 0, exitcode -9 (pid: 14750), "
                             "Signal 9 (SIGKILL) received by PID 14750)")
    assert block.rank == 0 and block.time == ts(2025, 5, 21, 15, 43, 3)
    assert opt.rank_map.node_of(0) == "mlxlab115rp2n7682d40d9-20250521025625-6dyyd3-8nir8b-worker"


def test_real_python_traceback(tmp_path: Path) -> None:
    recs, _, _ = ingest_real(tmp_path, "nematus-8-nfs-ioerror-on-save")
    assert len(recs) == 1
    r = recs[0]
    assert (r.line, r.end_line, r.level) == (1, 14, "error")
    assert r.message == "IOError: [Errno 5] Input/output error"
    assert r.text.split("\n")[0] == "Traceback (most recent call last):"


def test_damaged_bytes_inside_a_traceback_do_not_cut_it(tmp_path: Path) -> None:
    """A line of undecodable bytes with no word in it (a crash's or a copy's damage) inside the frames: the
    traceback still ends with its exception line, so no fragment reads as an exception with its last line lost."""
    p = tmp_path / "console.log"
    p.write_bytes(b'Traceback (most recent call last):\n  File "/bin/torchrun", line 8, in <module>\n'
                  b"    sys.exit(main())\n\x00\x9c\xff\x13\x88\x01\xfe\x07\x1b\x80\xc3\x02\n"
                  b'  File "run.py", line 1028, in main\n'
                  b"torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
                  b"plain line after it\n")
    recs, _, _ = ingest(p)
    assert [(r.line, r.end_line) for r in recs] == [(1, 6), (7, 7)]
    assert recs[0].message.startswith("torch.distributed.elastic.multiprocessing.errors.ChildFailedError")
    # a worded line still ends the frames
    p.write_text('Traceback (most recent call last):\n  File "a.py", line 1, in f\nsomething else\n')
    assert [(r.line, r.end_line) for r in ingest(p)[0]] == [(1, 2), (3, 3)]


def test_another_writers_line_inside_a_traceback_leaves_it_open(tmp_path: Path) -> None:
    """A whole line with its own time written between a traceback's frames (another thread's logger, a clock
    that jumped) is a record of its own; the traceback still ends with its exception line. More such lines than
    ``INTERLEAVED`` mean the traceback was cut short."""
    p = tmp_path / "console.log"
    head = 'Traceback (most recent call last):\n  File "/bin/torchrun", line 8, in <module>\n    sys.exit(main())\n'
    tail = '  File "run.py", line 1028, in main\nRuntimeError: boom\n2024-05-01 10:00:03,000 INFO after\n'
    p.write_text(head + "2099-06-01 00:00:00,000 clock jumped\n" + tail)
    recs, _, _ = ingest(p)
    assert [(r.line, r.end_line) for r in recs] == [(1, 6), (4, 4), (7, 7)]
    assert recs[0].message == "RuntimeError: boom" and recs[1].message.endswith("clock jumped")
    assert recs[1].time == recs[2].time or recs[1].time is None or recs[1].time < recs[2].time  # no 2099
    # a launcher's failure summary keeps its failed rank across such a line
    p.write_text("=" * 60 + "\nrun.py FAILED\n" + "-" * 60 + "\nFailures:\n  <NO_OTHER_FAILURES>\n" + "-" * 60
                 + "\nRoot Cause (first observed failure):\n[0]:\n  time      : 2024-05-01_10:00:02\n"
                 + "2024-05-01 10:00:02,500 WARNING elsewhere\n  host      : node-7\n  rank      : 3 (local_rank: 1)\n"
                 + "  exitcode  : -9 (pid: 14750)\n" + "=" * 60 + "\n")
    recs, _, opt = ingest(p)
    assert [(r.line, r.end_line) for r in recs] == [(1, 14), (10, 10)]
    assert opt.rank_map.node_of(3) == "node-7"
    # a traceback cut short: the lines after it are not held inside it for ever
    p.write_text(head + "".join(f"2024-05-01 10:00:0{i},000 INFO step {i}\n" for i in range(5))
                 + "    indented later\n")
    assert [(r.line, r.end_line) for r in ingest(p)[0]][:2] == [(1, 3), (4, 4)]


def test_real_rank_prefixed_traceback(tmp_path: Path) -> None:
    n = len(real_lines("gemma3-finetune-3-resume-corrupt-deepspeed-ckpt"))
    recs, _, _ = ingest_real(tmp_path, "gemma3-finetune-3-resume-corrupt-deepspeed-ckpt")
    assert len(recs) == 1  # the excerpt stops inside the traceback: one record, no exception line yet
    tb = recs[0]
    assert (tb.rank, tb.line, tb.end_line, tb.level) == (0, 1, n, "error")
    assert tb.message == "Traceback (most recent call last):"
    # with the exception line the message becomes the exception
    p = tmp_path / "with-exc.log"
    p.write_text("[rank0]: Traceback (most recent call last):\n[rank0]:   File \"a.py\", line 1, in f\n"
                 "[rank1]: unrelated line of another rank\n[rank0]: OSError: [Errno 28] No space left on device\n")
    recs, _, _ = ingest(p)
    assert (recs[0].line, recs[0].end_line, recs[0].message) == (1, 4, "OSError: [Errno 28] No space left on device")


def test_real_cpp_frame_dump_joins_hints_and_frames(tmp_path: Path) -> None:
    recs, _, _ = ingest_real(tmp_path, "kohya-1434-ecc-then-watchdog-2xh100")
    exc = next(r for r in recs if r.message.startswith("RuntimeError: CUDA error: uncorrectable ECC"))
    assert (exc.line, exc.end_line) == (3, 6)  # the CUDA hints belong to the exception
    wd = next(r for r in recs if "NCCL watchdog thread terminated" in r.message)
    assert (wd.line, wd.end_line, wd.rank, wd.level) == (7, 12, 1, "error")
    assert "frame #0:" in wd.text


def test_real_frames_without_header(tmp_path: Path) -> None:
    recs, _, _ = ingest_real(tmp_path, "megatron-935-watchdog-terminate-reduce-scatter")
    assert (recs[0].line, recs[0].end_line) == (1, 7)


def test_real_nvrm_multi_line(tmp_path: Path) -> None:
    recs, _, _ = ingest_real(tmp_path, "nvsentinel-155-fallen-off-bus-no-xid")
    r = recs[0]
    assert (r.line, r.end_line, r.source) == (1, 3, "kernel")
    assert "fallen off the bus and is not responding to commands" in r.message
    assert r.time is None  # a dmesg uptime without an anchor: ordered by position only


def test_real_nccl_init_lines_feed_the_rank_map(tmp_path: Path) -> None:
    _, _, opt = ingest_real(tmp_path, "nccl-1412-normal-init-complete-timings")
    assert opt.rank_map.as_dict() == {r: "swat1-04" for r in (0, 1, 2, 4, 5, 6)}


def test_real_local_rank_prefix(tmp_path: Path) -> None:
    recs, _, _ = ingest_real(tmp_path, "bs176-normal-iteration")
    assert [r.rank for r in recs] == [7, 7, 7]
    assert recs[1].message.startswith("iteration    31250/")


def test_real_mmengine_and_loguru_and_fabric_manager(tmp_path: Path) -> None:
    recs, _, _ = ingest_real(tmp_path, "xtuner-187-grad-norm-nan-mmengine", year=2023)
    assert recs[0].time == ts(2023, 10, 30, 22, 18, 2) and recs[0].level == "info"
    assert recs[0].message.startswith("Epoch(train) [1][200/735]")
    recs, _, _ = ingest_real(tmp_path, "dddd-trainer-36-corrupt-ckpt-after-disk-full")
    assert recs[0].level == "info" and recs[0].time == pytest.approx(ts(2023, 7, 26, 9, 59, 13, us=215000))
    assert recs[1].time == recs[0].time  # a line without timestamp inherits the previous one
    recs, _, _ = ingest_real(tmp_path, "gpud-testdata-fabricmanager-normal-nvls-team-setup")
    assert recs[0].time == ts(2025, 2, 25, 13, 59, 45) and recs[0].source == "other"


def test_every_real_excerpt_balances(tmp_path: Path) -> None:
    with open(REAL, encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            d = json.loads(line)
            p = tmp_path / f"{i:02d}.log"
            p.write_text("\n".join(d["lines"]) + "\n", encoding="utf-8")
    recs, acc, _ = ingest(tmp_path)
    assert acc.files == 57 and recs


# ------------------------------------------------------------------------------------- fixture jobs


def test_tree_per_node_dirs() -> None:
    recs, acc, opt = ingest(FIXTURES / "tree", year=2024)
    assert acc.files == 4
    assert {r.node for r in recs} == {"node017", "node018"}
    tb = next(r for r in recs if r.file == "node017/rank0.log" and r.line == 7)
    assert tb.end_line == 20 and tb.level == "error" and tb.rank == 0
    assert tb.message == "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"
    assert "^^^^" in tb.text and "The above exception was the direct cause" in tb.text
    assert tb.text.count("\n") == 11  # 14 lines less the blank lines 13 and 15 (skipped as blank)
    assert acc.lines_skipped["blank"] == 5
    xid = next(r for r in recs if "Xid" in r.message)
    assert (xid.node, xid.source, xid.level) == ("node017", "kernel", "error")
    dump = next(r for r in recs if r.file == "node018/rank8.log" and r.line == 3)
    assert dump.end_line == 10 and "frame #1:" in dump.text and dump.rank == 8
    term = next(r for r in recs if r.message.startswith("terminate called"))
    assert "what():" in term.message and term.end_line == term.line + 1
    kern = [r for r in recs if r.file == "node018/kern.log"]
    assert [r.source for r in kern] == ["storage", "storage", "other"]
    assert opt.rank_map.as_dict() == {0: "node017"}


def test_per_rank_files_and_back_fill_of_the_host() -> None:
    recs, _, opt = ingest(FIXTURES / "per-rank")
    r1 = [r for r in recs if r.file == "rank-1.log"]
    assert [r.rank for r in r1] == [1, 1, 1, 1]
    assert [r.node for r in r1] == ["gpu-a100-017"] * 4  # lines before the NCCL line get the host too
    assert r1[2].gpu == 1 and r1[0].gpu is None  # the GPU stays on the line that names it
    r0 = [r for r in recs if r.file == "rank-0.log"]
    assert [r.node for r in r0] == [None, None]  # no node detectable: still parsed
    assert opt.rank_map.as_dict() == {1: "gpu-a100-017"}


def test_merged_srun_label_file_with_interleaved_tracebacks() -> None:
    recs, acc, opt = ingest(FIXTURES / "merged" / "slurm-1234.out")
    assert acc.lines_read == 18
    tb1 = next(r for r in recs if r.line == 5)
    tb0 = next(r for r in recs if r.line == 6)
    assert (tb1.rank, tb1.node, tb1.end_line) == (1, "gpu-a100-018", 15)
    assert tb1.message.startswith("torch.distributed.DistBackendError: NCCL error in:")
    assert "Connection reset by peer" in tb1.text  # "Last error:" and its detail belong to the exception
    raw = (FIXTURES / "merged" / "slurm-1234.out").read_text().splitlines()
    first, *rest = tb1.text.split("\n")  # only rank 1's lines; its continuation lines without the label
    assert first.startswith("1: ") and all("1: " + ln in raw for ln in rest) and not any(
        ln.startswith(("0: ", "1: ")) for ln in rest)
    assert (tb0.rank, tb0.node, tb0.end_line) == (0, "gpu-a100-017", 16)
    assert tb0.message == "RuntimeError: CUDA error: uncorrectable ECC error encountered"
    it = next(r for r in recs if r.line == 3)
    assert it.time == ts(2024, 12, 2, 15, 40, 41) and it.message.startswith("iteration        1/")
    srun = [r for r in recs if r.message.startswith("srun: error")]
    assert [(r.node, r.source, r.level) for r in srun] == [("gpu-a100-017", "launcher", "error"),
                                                           ("gpu-a100-018", "launcher", "error")]
    assert opt.rank_map.as_dict() == {0: "gpu-a100-017", 1: "gpu-a100-018"}


def test_rank_map_shared_across_files_fills_nodes(tmp_path: Path) -> None:
    (tmp_path / "a-nccl.log").write_text(
        "hostx:1:2 [3] NCCL INFO ncclCommInitRank comm 0x1 rank 3 nranks 8 cudaDev 3 - Init COMPLETE\n")
    (tmp_path / "b-rank3.log").write_text("[rank3]: something failed\n")
    recs, _, _ = ingest(tmp_path)
    assert recs[-1].rank == 3 and recs[-1].node == "hostx"


def test_local_rank_is_not_looked_up_in_the_rank_map(tmp_path: Path) -> None:
    (tmp_path / "a-nccl.log").write_text(
        "hostx:1:2 [3] NCCL INFO ncclCommInitRank comm 0x1 rank 3 nranks 8 cudaDev 3 - Init COMPLETE\n")
    (tmp_path / "b-agent.log").write_text("[default3]: local rank 3 of some other node\n")
    recs, _, _ = ingest(tmp_path)
    assert recs[-1].rank == 3 and recs[-1].node is None


def test_torch_rank_prefix_after_torchrun_local_rank_prefix_is_the_rank(tmp_path: Path) -> None:
    # torchrun --tee prefixes "[default<local rank>]:", torch's own prefix "[rank<global rank>]:" follows; lines
    # of one shape are read from a plan after the first, so both paths must take the global rank
    (tmp_path / "a-nccl.log").write_text(
        "hostx:1:2 [1] NCCL INFO ncclCommInitRank comm 0x1 rank 3 nranks 8 cudaDev 1 - Init COMPLETE\n")
    (tmp_path / "b-console.log").write_text("".join(
        f"[default1]:[rank3]:   File \"/job/train.py\", line {100 + i}, in step_{i}\n" for i in range(40)))
    recs, _, _ = ingest(tmp_path)
    tee = [r for r in recs if r.file.endswith("b-console.log")]
    assert len(tee) == 40 and {(r.rank, r.node) for r in tee} == {(3, "hostx")}


def test_read_file_with_its_own_rank_map(tmp_path: Path) -> None:
    p = tmp_path / "x.log"
    p.write_text("[rank2]: 2: hi\n")
    acc = Accounting()
    f = discover([str(p)], acc).files[0]
    rm = RankMap()
    recs = list(read_file(f, IngestOptions(), acc, rm))
    assert len(recs) == 1 and acc.balanced


def test_node_from_option(tmp_path: Path) -> None:
    d = tmp_path / "job" / "host_a17"
    d.mkdir(parents=True)
    (d / "out.txt").write_text("hello\n")
    recs, _, _ = ingest(tmp_path / "job", node_from=r"host_(?P<node>\w+)")
    assert recs[0].node == "a17"
    with pytest.raises(L4Error, match="--node-from"):
        ingest(tmp_path / "job", node_from="(bad")


# ------------------------------------------------------------------------------------- bad input


def test_broken_job_is_still_parsed_and_balances(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job = tmp_path / "job"
    (job / "node1").mkdir(parents=True)
    (job / "node1" / "train.log").write_bytes(b"2024-01-01 00:00:00,000 INFO start\r\nok \xff\xfe\n\x00\x00\n")
    (job / "node1" / "core.999").write_bytes(b"\x7fELF" + bytes(range(256)) * 16)
    (job / "node1" / "empty.log").write_bytes(b"")
    (job / "node1" / "utf16.log").write_bytes("wide line\n".encode("utf-16"))
    (job / "node1" / "big.log").write_bytes(b"x" * (10 * 1024 * 1024) + b"\nsmall\n")
    data = gzip.compress(b"".join(b"gz %d\n" % i for i in range(5000)))
    (job / "node1" / "cut.log.gz").write_bytes(data[: len(data) // 2])
    (job / "node1" / "secret.log").write_text("hidden\n")
    os.symlink(job, job / "node1" / "loop")
    real_open = open

    def fake_open(path, *args, **kwargs):
        if str(path).endswith("secret.log"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(sources, "open", fake_open, raising=False)
    recs, acc, _ = ingest(job, tmp_path / "missing-dir", max_line_chars=4096)
    files = {r.file for r in recs}
    assert files == {"node1/train.log", "node1/utf16.log", "node1/big.log", "node1/cut.log.gz"}
    assert acc.files_skipped["binary"] == 1 and acc.files_skipped["unreadable"] == 1
    assert acc.files_skipped["symlink_loop"] == 1
    big = [r for r in recs if r.file == "node1/big.log"]
    assert len(big) == 2 and len(big[0].text) == 4096 and big[1].message == "small"
    train = [r for r in recs if r.file == "node1/train.log"]
    assert [r.message for r in train] == ["start", "ok \u00ff\u00fe"]
    assert acc.lines_skipped["blank"] >= 1  # the NUL-only line
    assert all(r.node == "node1" for r in recs)
    text = "\n".join(acc.warnings)
    for needle in ("core.999", "secret.log", "missing-dir", "loop", "cut.log.gz", "big.log", "train.log"):
        assert needle in text
    assert all("\n" not in w for w in acc.warnings)  # one line each


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"[rank1]: hello\r\n\r\nbye\n")))
    recs, acc, _ = ingest("-")
    assert [(r.file, r.line, r.rank, r.message) for r in recs] == [("-", 1, 1, "hello"), ("-", 3, None, "bye")]
    assert acc.lines_skipped["blank"] == 1


def test_clock_jumping_backwards_keeps_line_order(tmp_path: Path) -> None:
    p = tmp_path / "node1.log"
    p.write_text("2024-01-01 10:00:05 INFO a\n2024-01-01 09:00:00 INFO b (clock stepped back)\nno time\n"
                 "2024-01-01 10:00:06 INFO c\n")
    recs, acc, _ = ingest(p)
    assert [r.line for r in recs] == [1, 2, 3, 4]
    # an hour before both its file's first time and the job's start, for one line: a clock stepped back for a
    # moment, which must not stretch the job back to it; the line keeps the time before it and is counted
    assert [r.time for r in recs] == [ts(2024, 1, 1, 10, 0, 5), ts(2024, 1, 1, 10, 0, 5), ts(2024, 1, 1, 10, 0, 5),
                                      ts(2024, 1, 1, 10, 0, 6)]
    assert any("node1.log:2:" in w and "wrong clock" in w for w in acc.warnings)


def test_timestamps_in_the_future_are_ignored_with_a_warning(tmp_path: Path) -> None:
    p = tmp_path / "node1.log"
    p.write_text("2024-01-01 10:00:05 INFO a\n2099-01-01 00:00:00 INFO from a broken clock\n"
                 "2024-01-01 10:00:07 INFO b\n")
    recs, acc, _ = ingest(p)
    assert [r.time for r in recs] == [ts(2024, 1, 1, 10, 0, 5), ts(2024, 1, 1, 10, 0, 5), ts(2024, 1, 1, 10, 0, 7)]
    assert recs[1].message == "from a broken clock"
    assert any("node1.log:2" in w and "future" in w for w in acc.warnings)


def test_file_growing_while_read(tmp_path: Path) -> None:
    p = tmp_path / "grow.log"
    p.write_text("".join(f"INFO line {i}\n" for i in range(2000)))
    acc = Accounting()
    it = iter_records([str(p)], IngestOptions(), acc)
    first = next(it)
    with open(p, "a") as fh:
        fh.write("INFO appended\n" * 500)
    rest = list(it)
    assert first.line == 1 and len(rest) == 1999
    assert acc.balanced and acc.lines_read == 2000


def test_consumer_stopping_early_still_balances(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    p.write_text("".join(f"line {i}\n" for i in range(100)))
    acc = Accounting()
    it = iter_records([str(p)], IngestOptions(), acc)
    next(it)
    it.close()
    assert acc.balanced


def test_uptime_anchored_by_a_syslog_kernel_line(tmp_path: Path) -> None:
    p = tmp_path / "node5-kern.log"
    p.write_text("Apr 30 14:49:44 node5 kernel: [100.000000] first\n[110.500000] later, uptime only\n")
    recs, _, _ = ingest(p, year=2021)
    assert recs[1].time == pytest.approx(ts(2021, 4, 30, 14, 49, 54, us=500000))
    assert recs[1].source == "kernel" and recs[1].node == "node5"


def test_plain_dmesg_anchored_by_the_nodes_kern_log(tmp_path: Path) -> None:
    node = tmp_path / "node5"
    node.mkdir()
    (node / "dmesg.txt").write_text("[  100.000000] Linux booted\n"
                                    "[  200.500000] NVRM: Xid (PCI:0000:4e:00): 79, GPU has fallen off the bus.\n")
    (node / "kern.log").write_text("Apr 30 14:49:44 node5 kernel: [150.000000] first\n"
                                   "Apr 30 14:50:44 node5 kernel: [210.000000] second (latest boot anchor)\n")
    (tmp_path / "node6").mkdir()
    (tmp_path / "node6" / "dmesg.txt").write_text("[  5.000000] no anchor for this node\n")
    recs, _, opt = ingest(tmp_path, year=2021)
    boot = ts(2021, 4, 30, 14, 50, 44) - 210.0
    assert opt.boot_anchors == {"node5": boot}
    xid = next(r for r in recs if "Xid" in r.message)
    assert xid.time == pytest.approx(boot + 200.5) and xid.node == "node5"
    assert next(r for r in recs if r.node == "node6").time is None


def test_record_line_cap(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    p.write_text("Traceback (most recent call last):\n" + '  File "x.py", line 1, in f\n' * 30 + "ValueError: x\n")
    recs, _, _ = ingest(p, max_record_lines=10)
    assert recs[0].end_line == 10 and len(recs) > 1


def test_interleaved_streams_keep_line_order_in_output(tmp_path: Path) -> None:
    lines = []
    for i in range(300):
        lines.append(f"{i % 3}: Traceback (most recent call last):" if i % 50 == 0 else f"{i % 3}:   File \"f.py\", line {i}")
    (tmp_path / "merged.out").write_text("\n".join(lines) + "\n")
    recs, _, _ = ingest(tmp_path / "merged.out")
    assert [r.line for r in recs] == sorted(r.line for r in recs)


def test_many_tiny_files(tmp_path: Path) -> None:
    # 20,000 here to keep the suite fast; benchmarks/ingest_throughput.py --tiny-files 100000 runs the full size
    n = 20_000
    for i in range(n):
        d = tmp_path / f"n{i // 1000:03d}"
        if i % 1000 == 0:
            d.mkdir()
        (d / f"{i}.log").write_bytes(b"x\n")
    recs, acc, _ = ingest(tmp_path)
    assert acc.files == n and len(recs) == n


_FRAGMENTS = st.sampled_from([
    "", " ", "\t", "3: ", "[rank1]:", "[default0]: ", "host:1:2 [0] ", "NCCL INFO ", "NCCL WARN ",
    "2024-01-01 00:00:00,000 ", "[2024-01-01 00:00:00] ", "Nov 29 10:11:12 h kernel: ", "[12.5] ", "[  +0.1] ",
    "E1129 10:11:12.345678 1 a.cc:1] ", "[E1206 18:44:12.715 X.cpp:1] ", "kern  :err   : ", "Traceback (most recent call last):",
    '  File "a.py", line 1, in f', "    ^^^^", "ValueError: boom", "The above exception was the direct cause of the following exception:",
    "Exception raised from x at y:1 (most recent call first):", "frame #0: f + 0x1", "=" * 60, "x.py FAILED",
    "  host      : n1", "  rank      : 1 (local_rank: 1)", "Root Cause (first observed failure):", "NVRM: Xid (PCI:0:1:0): 79",
    "              NVRM: more", "srun: error: n1: task 3: Exited", "\r", "\x00", "\udcff", "\u00e9",
    "job.n1 [stderr] ", "[80746] ", "  what():  x", "Last error:", "ncclRemoteError: x", "[W x.cpp:1] ",
    "[INFO|t.py:1] ", "09/11/2024 17:52:18 ", "12/09 06:49:23 - mmengine - INFO - ", "- INFO - ", "| ERROR | ",
])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(_FRAGMENTS, max_size=4).map("".join), max_size=40))
def test_property_log_like_lines_always_balance(tmp_path_factory: pytest.TempPathFactory, lines: list[str]) -> None:
    p = tmp_path_factory.mktemp("h") / "x.log"
    # a plain first line keeps the file text to the binary sniffer, so that every fragment reaches the parser
    data = ("2024-01-01 00:00:00 INFO " + "x" * 200 + "\n" + "\n".join(lines)).encode("utf-8", "surrogateescape")
    p.write_bytes(data)
    _, acc, _ = ingest(p)
    assert acc.lines_read == data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=3000), st.booleans())
def test_property_arbitrary_bytes_never_raise(tmp_path_factory: pytest.TempPathFactory, data: bytes, zipped: bool) -> None:
    d = tmp_path_factory.mktemp("b")
    (d / "x").write_bytes(gzip.compress(data) if zipped else data)
    (d / "ok.log").write_text("ok\n")
    recs, acc, _ = ingest(d)
    assert any(r.message == "ok" for r in recs)


def test_torchrun_prefix_with_and_without_a_blank_is_one_stream(tmp_path: Path) -> None:
    """``[rank0]:ValueError`` and ``[rank0]:  File ...`` come from one rank: the second line closes the first
    record, so an unprefixed line after them cannot reach back into it (records of one stream never overlap)."""
    f = tmp_path / "merged.out"
    f.write_text('[rank0]:ValueError: boom\n[rank0]:  File "a.py", line 1, in f\n'
                 "Exception raised from f at a.cpp:1 (most recent call first):\n")
    recs, acc, _ = ingest(f)
    assert [(r.line, r.end_line) for r in recs] == [(1, 1), (2, 2), (3, 3)]
    assert acc.lines_in_records == 3


def test_record_kinds_start_with_a_kind_start() -> None:
    """The per-line gate before ``record_kind`` never hides a record opener from it."""
    from l4lite.ingest import lineclass as lc

    openers = ["Traceback (most recent call last):", "==== backtrace (tid:   5704) ====", "=" * 40,
               "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
               "Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:44",
               "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7a71e4e84617 in libc10.so)"]
    for msg in openers:
        assert lc.record_kind(msg) != lc.K_LINE, msg
        assert msg[:1] in lc.KIND_STARTS, msg


def test_a_level_after_a_tab_is_the_lines_level(tmp_path: Path) -> None:
    """Ray's loggers separate the time and the level by a tab ("<time>\\tINFO utils.py:330 -- ..."): the level
    is the logger's, not one read from the message's words ("cannot be loaded ... Error: No module named ...")."""
    p = tmp_path / "dashboard.log"
    p.write_text("2026-12-04 13:48:06,944\tINFO utils.py:330 -- Module ray.dashboard.modules.x cannot be loaded "
                 "because we cannot import all dependencies. Error: No module named 'opentelemetry'\n"
                 "2026-12-04 13:48:07,000\tERROR worker.py:1 -- boom\n"
                 "2026-12-04 13:48:08,000\t\tWARNING monitor.py:222 -- `prometheus_client` not found\n")
    recs, _, _ = ingest(p)
    assert [r.level for r in recs] == ["info", "error", "warning"]
    assert recs[0].message.startswith("utils.py:330 -- Module")
