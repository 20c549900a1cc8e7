"""The job context: nodes found from the whole job (layouts of real launchers, hosts named inside lines), a year
and a span that one bad line cannot move, and the same records through every entry point.

Every layout is built from real lines: excerpts of fixtures/real/real-failures.jsonl (hosts renamed where the
layout needs other hosts) and lines of a torchrun job run on this machine (fixtures/real_jobs)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from layout_jobs import LAYOUTS, REAL, ROOT, SUMMARY, kubernetes_pods, torchrun_logdir, write

from l4lite.api import analyze
from l4lite.ingest.context import JobContext, build_context
from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.options import AnalyzeOptions
from l4lite.records import Accounting


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_layout_names_the_faulty_node_first_and_no_path_part_as_a_node(layout: str, tmp_path: Path) -> None:
    job = tmp_path / "job"
    faulty, hosts = LAYOUTS[layout](job)
    acc = Accounting()
    nodes = {r.node for r in iter_records([str(job)], IngestOptions(), acc)}
    assert nodes - {None} <= set(hosts), nodes
    incident = analyze([str(job)], AnalyzeOptions())
    suspects = [s.node for s in incident.suspects]
    assert incident.status == "incident"
    assert faulty is None or (suspects and suspects[0] == faulty), suspects
    # no folder, file name or "unknown" is ever a suspect (a rank whose node no line names may be)
    assert {s for s in suspects if not s.startswith("rank:")} <= set(hosts), suspects


def test_torchrun_run_folders_and_stray_files_are_not_nodes(tmp_path: Path) -> None:
    torchrun_logdir(tmp_path)
    files = discover([str(tmp_path)], Accounting()).files
    ctx = build_context(files)
    assert {ctx.node_of(f.rel) for f in files} == {"cpu-node-a", "cpu-node-b", None}
    assert ctx.node_of("latin1.log") is None and ctx.depth == 0


def test_loopback_names_in_lines_are_not_hosts(tmp_path: Path) -> None:
    summary = [line.replace("mlxlab115rp2n7682d40d9-20250521025625-6dyyd3-8nir8b-worker", "localhost")
               for line in SUMMARY]
    write(tmp_path / "node-a" / "console.log", summary)
    write(tmp_path / "node-b" / "console.log", summary)
    files = discover([str(tmp_path)], Accounting()).files
    ctx = build_context(files)
    assert sorted(ctx.node_of(f.rel) or "" for f in files) == ["node-a", "node-b"] and not ctx.rank_ties


def test_context_is_plain_data(tmp_path: Path) -> None:
    kubernetes_pods(tmp_path)
    ctx = build_context(discover([str(tmp_path)], Accounting()).files)
    again = JobContext.from_dict(json.loads(json.dumps(ctx.to_dict())))
    assert again == ctx and again.node_of("kp-ddp-worker-1.log") == "kp-ddp-worker-1"


# ---------------------------------------------------------------------------------------------- time
FIXTURE_JOBS = sorted(p.parent for p in (ROOT / "fixtures").glob("*/*/ground_truth.json")
                      if p.parent.parent.name in ("suite", "jobs", "real_jobs"))


def verdict(job: Path) -> tuple:
    from l4lite.evaluate.scoreboard import job_paths

    inc = analyze(job_paths(job), AnalyzeOptions())
    return inc.status, inc.category, inc.phase, inc.failure_time, [s.node for s in inc.suspects[:1]]


def _with_2099_line(job: Path, dest: Path) -> Path:
    """A copy of ``job`` with one line dated 2099 at the start of one of its logs: the faulty node's kernel log
    if it has one (its times date the root cause), else another kernel log, else the first log."""
    shutil.copytree(job, dest)
    logs = sorted(p for p in dest.rglob("*") if p.is_file() and p.name != "ground_truth.json" and p.stat().st_size
                  and "_meta" not in p.parts)
    faulty = json.loads((dest / "ground_truth.json").read_text()).get("faulty_nodes") or [""]
    kernel = [p for p in logs if "kern" in p.name or "dmesg" in p.name or "kernel" in p.parts]
    target = next((p for p in kernel if faulty[0] in str(p.relative_to(dest))), (kernel or logs)[0])
    target.write_text("2099-06-01 00:00:00,000 clock jumped\n" + target.read_text())
    return dest


@pytest.mark.parametrize("job", FIXTURE_JOBS, ids=[p.name for p in FIXTURE_JOBS])
def test_one_line_dated_2099_changes_no_verdict(job: Path, tmp_path: Path) -> None:
    assert verdict(_with_2099_line(job, tmp_path / job.name)) == verdict(job)


def test_year_and_span_follow_most_files_not_one_line(tmp_path: Path) -> None:
    write(tmp_path / "n1" / "kern.log", ["2099-06-01T00:00:00.000000+00:00 n1 kernel: clock jumped",
                                         *REAL["pcluster-2701-fsx-lustre-network-error-after-oom"]["lines"]])
    for n in ("n1", "n2"):
        write(tmp_path / n / "train.log", [f"[2021-04-30 14:4{i}:00,000] INFO step {i}" for i in range(5)])
    files = discover([str(tmp_path)], Accounting()).files
    ctx = build_context(files)
    # from the first trainer line to the last kernel line; not to 2099
    assert ctx.year == 2021 and ctx.end is not None and ctx.end - ctx.start == 584
    recs = list(iter_records([str(tmp_path)], IngestOptions(), Accounting()))
    lustre = [r for r in recs if "Lustre" in r.text]
    assert lustre and all(r.time is not None and time.gmtime(r.time).tm_year == 2021 for r in lustre)


# ---------------------------------------------------------------------------------------------- entry points
def _entry_job(job: Path) -> None:
    """The torchrun layout plus a node whose plain dmesg capture carries only uptimes, anchored by its kern.log
    (real lines: fixtures/real/real-failures.jsonl), and enough trainer lines for the parallel scan to cut."""
    torchrun_logdir(job)
    write(job / "cpu-node-a" / "dmesg.txt", REAL["nvsentinel-155-fallen-off-bus-no-xid"]["lines"])
    write(job / "cpu-node-a" / "kern.log", [line.replace("ip-10-0-33-4", "cpu-node-a") for line in
                                            REAL["pcluster-2701-fsx-lustre-network-error-after-oom"]["lines"]])
    steps = [f"2026-12-03 14:36:{22 + i // 100:02d},{i % 100:03d} INFO [rank0] step {i}/40 | loss 3.5 | lr 3.00e-03"
             for i in range(3000)]
    write(job / "cpu-node-a" / "torchelastic" / "ddp-exception-001_ikil2jrv" / "attempt_0" / "0" / "stderr.log",
          steps)


def _rows(records) -> list[tuple]:
    return sorted((r.file, r.line, r.node, r.rank, None if r.time is None else round(r.time, 3)) for r in records)


def _parse_rows(job: Path, out: Path, jobs: str) -> list[tuple]:
    from datetime import datetime

    from l4lite.cli.main import main

    assert main(["parse", str(job), "-o", str(out), "--quiet", "--jobs", jobs]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return sorted((r["file"], r["line"], r["node"], r["rank"],
                   None if r["time"] is None else round(datetime.fromisoformat(r["time"]).timestamp(), 3))
                  for r in rows)


def test_every_entry_point_reads_the_job_alike(tmp_path: Path) -> None:
    from l4lite.live.reader import default_reader_factory
    from l4lite.scale.engine import PoolEngine, scan_job_parallel
    from l4lite.scan.job import scan_job

    job = tmp_path / "job"
    _entry_job(job)
    files = discover([str(job)], Accounting()).files
    expected = _rows(iter_records([str(job)], IngestOptions(), Accounting()))
    assert {row[2] for row in expected} == {"cpu-node-a", "cpu-node-b", None}
    anchored = [row for row in expected if row[0] == "cpu-node-a/dmesg.txt"]
    assert anchored and all(row[4] is not None for row in anchored)  # the kern.log's boot anchor dates the dmesg
    assert _parse_rows(job, tmp_path / "one.jsonl", "1") == expected
    assert _parse_rows(job, tmp_path / "two.jsonl", "2") == expected
    make = default_reader_factory(str(job), paths=[f.path for f in files])
    live = []
    for f in files:
        reader = make(f.rel)
        for i, text in enumerate(Path(f.path).read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            live.extend(reader.feed(i, text))
        live.extend(reader.flush())
    assert _rows(live) == expected
    one = scan_job([str(job)], AnalyzeOptions())
    with PoolEngine(2) as engine:
        sharded = scan_job_parallel([str(job)], AnalyzeOptions(), engine=engine)
    assert sharded.info["shards"] >= 2
    for scan in (one, sharded):
        assert (scan.node_first, scan.node_last, scan.rank_nodes, scan.start_time, scan.end_time) == \
            (one.node_first, one.node_last, one.rank_nodes, one.start_time, one.end_time)
        assert scan.info["job_span"] == one.info["job_span"] and scan.info["node_layout"] == one.info["node_layout"]
        assert scan.info["clock_skew"] == one.info["clock_skew"]
    assert one.info["clock_skew"]["nodes"]["cpu-node-b"]["lines"] == 1  # both nodes' process groups initialised
    assert set(one.node_last) >= {"cpu-node-a", "cpu-node-b"} and not set(one.node_last) - {
        "cpu-node-a", "cpu-node-b", "unknown"}


def test_lines_of_no_known_node_blame_no_node(tmp_path: Path) -> None:
    write(tmp_path / "train.log", REAL["nematus-8-nfs-ioerror-on-save"]["lines"])
    incident = analyze([str(tmp_path)], AnalyzeOptions())
    assert incident.status == "incident" and "unknown" not in [s.node for s in incident.suspects]


def test_a_reset_clock_years_before_the_job_is_not_its_time(tmp_path: Path) -> None:
    """A line from a clock reset to 1970 keeps the time of the line before it, as a future one does, so the
    untimed lines after it are not dated decades early; a kernel line from the node's boot weeks before stays."""
    write(tmp_path / "n1" / "train.log", ["2021-04-30 14:40:00,000 INFO step 1",
                                          "1970-01-01 00:00:00,000 clock reset",
                                          "Traceback (most recent call last):",
                                          "RuntimeError: CUDA error: an illegal memory access was encountered",
                                          *[f"2021-04-30 14:4{i}:00,000 INFO step {i}" for i in range(2, 6)]])
    write(tmp_path / "n1" / "kern.log", ["2021-03-02T00:00:00.000000+00:00 n1 kernel: Linux version 5.15",
                                         "2021-04-30T14:41:00.000000+00:00 n1 kernel: eth0: link up"])
    acc = Accounting()
    recs = list(iter_records([str(tmp_path)], IngestOptions(), acc))
    years = {r.text.split()[0] if r.file.endswith("train.log") else "kern": time.gmtime(r.time).tm_year
             for r in recs if r.time is not None}
    assert all(y == 2021 for y in years.values()), years
    assert any("years before the rest of the job" in w for w in acc.warnings)


def test_a_reset_clock_casts_no_year_vote(tmp_path: Path) -> None:
    """Year-less trainer lines (glog's ``W1203``) and one line dated 1970: the job's year is not 1970."""
    write(tmp_path / "n1" / "console.log", [f"W1203 14:46:0{i}.155000 26743 torch/distributed/run.py:874] x"
                                            for i in range(5)])
    write(tmp_path / "n1" / "error.json", ["1970-01-01 00:00:00,000 clock reset", '{"message": "boom"}'])
    ctx = build_context(discover([str(tmp_path)], Accounting()).files)
    assert ctx.year != 1970 and ctx.start is not None and time.gmtime(ctx.start).tm_year > 2000


def test_a_ray_worker_line_is_the_node_whose_raylet_states_its_address(tmp_path: Path) -> None:
    # Ray's driver names a worker's node by address only; each node's raylet.out states that address beside its
    # host name (lines as Ray 2.60 wrote them on this machine, without the driver's ANSI colours)
    for host, ip in (("cpu-node-a", "10.0.0.1"), ("cpu-node-b", "10.0.0.2")):
        write(tmp_path / host / "ray" / "session_2026-12-04_13-47-58_968271_6" / "logs" / "raylet.out", [
            "[2026-12-04 13:48:21,301 I 76 76] (raylet) node_manager.cc:355: Raylet of id, b02dd997911a55b3c46ea"
            f"f95608da7427c6f52db4cd7350109bd2693 started. Raylet consists of node_manager and object_manager. "
            f"node_manager address: {ip}:0 object_manager address: {ip}:40635 hostname: {host}"])
    write(tmp_path / "cpu-node-a" / "driver.log", [
        "(RayTrainWorker pid=95, ip=10.0.0.2) worker 1/4 up on cpu-node-b (local rank 1)",
        "(RayTrainWorker pid=323) worker 2/4 up on cpu-node-a (local rank 0)",
        "(RayTrainWorker pid=96, ip=10.0.0.9) an address no node states"])
    files = discover([str(tmp_path)], Accounting()).files
    ctx = build_context(files)
    assert ctx.addresses == {"10.0.0.1": "cpu-node-a", "10.0.0.2": "cpu-node-b"}
    recs = [r for r in iter_records([str(tmp_path)], IngestOptions(), Accounting()) if r.file.endswith("driver.log")]
    assert [(r.node, r.text.split(") ", 1)[1][:10]) for r in recs] == [
        ("cpu-node-b", "worker 1/4"), ("cpu-node-a", "worker 2/4"), ("10.0.0.9", "an address")]
