"""The analyze pipeline end to end on small hand-written jobs, the incident schema, and the CLI contract."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from l4lite.api import analyze, diagnose
from l4lite.cli.main import main
from l4lite.diagnose.incident import Incident
from l4lite.ingest.files import discover
from l4lite.options import AnalyzeOptions
from l4lite.records import Accounting
from l4lite.scan.job import scan_files, scan_job
from l4lite.scan.scanner import JobScan

T0 = dt.datetime(2024, 5, 7, 1, 0, 0)


def ts(s: float) -> str:
    return (T0 + dt.timedelta(seconds=s)).strftime("%Y-%m-%d %H:%M:%S")


def write_job(root: Path, *, fault: str | None = "xid", nodes: int = 4, iters: int = 120) -> Path:
    """A Megatron-style job: one trainer log and one kernel log per node; the fault hits node 02."""
    for n in range(nodes):
        node = f"gpu-node-{n:02d}"
        d = root / node
        d.mkdir(parents=True, exist_ok=True)
        lines = [f"[{ts(0)}] > initializing torch distributed ...",
                 f"[{ts(1)}] {node}:1234:1234 [0] NCCL INFO NCCL version 2.18.5+cuda12.2",
                 f"[{ts(5)}] building GPT model ...", f"[{ts(9)}] training ..."]
        stop = 100 if (fault and n == 2) else iters
        if fault == "nan":
            stop = iters
        for i in range(1, stop + 1):
            if i == 50:
                lines += [f"[{ts(10 + i * 10)}] saving checkpoint at iteration      50 to /ckpt/run1",
                          f"[{ts(12 + i * 10)}]   successfully saved checkpoint at iteration      50 to /ckpt/run1"]
            loss = "nan" if fault == "nan" and i >= 90 else f"{3 - i * 0.001:.6E}"
            lines.append(f"[{ts(10 + i * 10)}]  iteration {i:8d}/    1000 | elapsed time per iteration (ms): "
                         f"10000.0 | lm loss: {loss} | grad norm: 1.0 |")
        if fault == "xid":
            if n == 2:
                lines.append(f"[{ts(1015)}] RuntimeError: CUDA error: unspecified launch failure")
            else:
                lines.append(f"[{ts(1630)}] [rank{n * 2}]:[E ProcessGroupNCCL.cpp:607] [Rank {n * 2}] Watchdog caught "
                             "collective operation timeout: WorkNCCL(SeqNum=311, OpType=ALLREDUCE, NumelIn=1, "
                             "NumelOut=1, Timeout(ms)=600000) ran for 600034 milliseconds before timing out.")
        else:
            lines.append(f"[{ts(20 + stop * 10)}] [after training is done] datetime: {ts(20 + stop * 10)}")
        (d / "train.log").write_text("\n".join(lines) + "\n")
        kern = ["[Tue May  7 01:00:00 2024] Linux version 5.15.0"]
        if fault == "xid" and n == 2:
            kern.append("[Tue May  7 01:16:52 2024] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the "
                        "bus.")
        (d / "dmesg.log").write_text("\n".join(kern) + "\n")
    return root


def test_gpu_fault_incident(tmp_path: Path) -> None:
    job = write_job(tmp_path / "job")
    inc = analyze([str(job)], AnalyzeOptions())
    assert inc.status == "incident" and inc.category == "gpu_hardware" and inc.phase == "train"
    assert inc.suspects[0].node == "gpu-node-02" and inc.suspects[0].score == 1.0
    assert all(s.score < 0.5 for s in inc.suspects[1:])
    assert inc.iteration == 100 and inc.scope == "node"
    roots = [e for e in inc.evidence if e.role == "root"]
    assert roots and roots[0].file == "gpu-node-02/dmesg.log" and roots[0].line == 2 and roots[0].rule == "xid-79"
    assert all(e.node == "gpu-node-02" for e in roots)
    cascades = [e for e in inc.evidence if e.role == "cascade"]
    assert {e.node for e in cascades} == {"gpu-node-00", "gpu-node-01", "gpu-node-03"}
    assert inc.failure_time == "2024-05-07T01:16:52.000Z"
    assert inc.checkpoint["last_saved"] == {"iteration": 50, "time": "2024-05-07T01:08:30.000Z",
                                            "path": "/ckpt/run1", "complete": True}
    assert any("Drain gpu-node-02" in r for r in inc.recommendations)
    assert any("iteration 50" in r for r in inc.recommendations)
    assert [p.name for p in inc.phases][:3] == ["init", "load", "train"]
    assert inc.stats["files"] == 8 and inc.stats["lines_read"] == inc.stats["records"] > 0
    assert inc.stats["templates"] > 0 and "lines_skipped" in inc.stats
    assert roots[0].context and any(c["line"] == 2 for c in roots[0].context)


def test_incident_json_round_trip_and_extra(tmp_path: Path) -> None:
    inc = analyze([str(write_job(tmp_path / "job"))], AnalyzeOptions())
    path = tmp_path / "incident.json"
    inc.save(path)
    data = json.loads(path.read_text())  # strict JSON: no NaN tokens
    assert data["schema"] == "l4lite.incident/1"
    for key in ("status", "category", "phase", "iteration", "failure_time", "summary", "suspects", "evidence",
                "phases", "checkpoint", "recommendations", "stats"):
        assert key in data
    extra = data["extra"]
    assert extra["nodes"] == [f"gpu-node-{n:02d}" for n in range(4)]
    hm = extra["heatmap"]
    assert len(hm["scores"]) == len(hm["nodes"]) and all(len(r) == len(hm["times"]) for r in hm["scores"])
    assert extra["health"]["series"]["loss"] and extra["health"]["failure_iteration"] == 100
    assert any(e["role"] == "root" for e in extra["timeline"]["events"])
    assert extra["templates"]["total"] == len(extra["templates"]["top"]) or extra["templates"]["top"]
    assert {c["status"] for c in extra["checklist"]} <= {"yes", "no", "unknown"}
    assert Incident.load(path).to_dict() == data


def test_a_verdict_without_the_heatmap_is_the_same_verdict(tmp_path: Path) -> None:
    job = str(write_job(tmp_path / "job"))
    full, lean = (analyze([job], AnalyzeOptions(heatmap=h)).to_dict() for h in (True, False))
    assert "heatmap" in full["extra"] and "heatmap" not in lean["extra"]
    for d in (full, lean):
        d.pop("extra"), d["stats"].pop("seconds"), d["job"]["info"].pop("scan_seconds")
    assert lean == full


def test_healthy_job(tmp_path: Path) -> None:
    inc = analyze([str(write_job(tmp_path / "job", fault=None))], AnalyzeOptions())
    assert inc.status == "healthy" and inc.category is None and inc.phase is None and inc.suspects == []
    assert not any(e.role == "root" for e in inc.evidence)
    assert inc.summary.startswith("No incident")


def test_numerical_fault_is_global(tmp_path: Path) -> None:
    inc = analyze([str(write_job(tmp_path / "job", fault="nan"))], AnalyzeOptions())
    assert inc.status == "incident" and inc.category == "numerical" and inc.scope == "global"
    assert inc.suspects == [] and inc.iteration == 90


def test_diagnose_on_merged_shard_scans_matches_one_pass(tmp_path: Path) -> None:
    job = write_job(tmp_path / "job")
    options = AnalyzeOptions()
    whole = diagnose(scan_job([str(job)], options), options)
    discovered = discover([str(job)], Accounting())
    merged = JobScan()
    for f in discovered.files:  # one shard per file, as a parallel engine would scan them
        merged.merge(scan_files([f], discovered.root, options))
    merged.remap_nodes()
    shard = diagnose(merged, options)
    assert (shard.status, shard.category, shard.phase, shard.iteration) == (
        whole.status, whole.category, whole.phase, whole.iteration)
    assert [s.node for s in shard.suspects[:1]] == [s.node for s in whole.suspects[:1]]


def test_cli_exit_codes_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write_job(tmp_path / "bad")
    out = tmp_path / "inc.json"
    assert main(["analyze", str(bad), "--no-store", "--json", str(out)]) == 1
    printed = capsys.readouterr().out
    assert printed.startswith("INCIDENT  gpu_hardware") and "gpu-node-02" in printed
    assert json.loads(out.read_text())["status"] == "incident"
    good = write_job(tmp_path / "good", fault=None)
    assert main(["analyze", str(good), "--no-store", "--quiet"]) == 0
    assert capsys.readouterr().out == ""
    assert main(["analyze", str(tmp_path / "missing"), "--no-store"]) == 2
    assert "error" in capsys.readouterr().err
    assert main(["analyze", str(good), "--no-store", "--window", "-5"]) == 2


def test_cli_writes_history_when_a_store_is_given(tmp_path: Path) -> None:
    bad = write_job(tmp_path / "bad")
    store = tmp_path / "store.sqlite3"
    assert main(["analyze", str(bad), "--store", str(store), "--quiet"]) == 1
    from l4lite.history.store import Store

    with Store(str(store)) as s:
        jobs = s.jobs()
    assert len(jobs) == 1


def test_baseline_job_filters_its_templates(tmp_path: Path) -> None:
    bad = write_job(tmp_path / "bad")
    good = write_job(tmp_path / "good", fault=None)
    plain = analyze([str(bad)], AnalyzeOptions())
    with_base = analyze([str(bad)], AnalyzeOptions(baselines=[str(good)]))
    anomalies = [e for e in with_base.evidence if e.role == "anomaly" and "Linux version" in e.text]
    assert anomalies == []
    assert with_base.suspects[0].node == plain.suspects[0].node == "gpu-node-02"


def test_an_untimed_traceback_of_a_silent_rank_takes_its_phase_from_the_lines_after_it(tmp_path: Path) -> None:
    # The failing node's ranks log nothing while they train (rank 0 on the other node logs the steps): its
    # traceback inherits the start-up line's time, and only the launcher's teardown line below it says when.
    steps = "".join(f"[default0]:2026-12-03 14:38:{28 + i // 10:02d},{i % 10}00 INFO [rank0] step {i}/40 | epoch 0 | "
                    f"loss {5.7 - i * 0.1:.4f} | grad_norm 0.4 | lr 3.00e-03\n" for i in range(1, 17))
    (tmp_path / "node-a").mkdir()
    (tmp_path / "node-a" / "console.log").write_text(
        "[default0]:2026-12-03 14:38:23,208 INFO [rank0] initialized process group: world_size=4 host=node-a\n"
        + steps + "W1203 14:38:31.193000 16439 torch/distributed/elastic/multiprocessing/api.py:1028] Sending "
        "process 16469 closing signal SIGTERM\n")
    (tmp_path / "node-b").mkdir()
    (tmp_path / "node-b" / "console.log").write_text(
        "[default1]:2026-12-03 14:38:23,219 INFO [rank3] initialized process group: world_size=4 host=node-b\n"
        "[default1]:[rank3]: Traceback (most recent call last):\n"
        "[default1]:[rank3]:   File \"/job/train.py\", line 111, in main\n"
        "[default1]:[rank3]:     check_shapes(step)\n"
        "[default1]:[rank3]: RuntimeError: shape mismatch in attention block: expected key length 64, got 63\n"
        "W1203 14:38:30.475000 16444 torch/distributed/elastic/multiprocessing/api.py:1028] Sending process 16468 "
        "closing signal SIGTERM\n")
    inc = analyze([tmp_path], AnalyzeOptions())
    assert inc.status == "incident" and inc.suspects[0].node == "node-b"
    assert inc.phase == "train"


def test_advice_never_names_a_placeholder_node(tmp_path: Path) -> None:
    """A file that names no host: the advice says which node in words, not the scan's key for it."""
    log = tmp_path / "excerpt.log"
    log.write_text("RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
                   "[E ProcessGroupNCCL.cpp:916] [Rank 1] NCCL watchdog thread terminated with exception: "
                   "CUDA error: uncorrectable ECC error encountered\n")
    inc = analyze([str(log)], AnalyzeOptions())
    assert inc.status == "incident" and inc.category == "gpu_hardware"
    advice = " ".join(inc.recommendations)
    assert "Drain" in advice and "Drain unknown" not in advice and "rank:" not in advice


def _corpus_row(row_id: str) -> dict:
    rows = (Path(__file__).resolve().parent.parent / "fixtures" / "real" / "corpus.jsonl").read_text().splitlines()
    return next(r for r in map(json.loads, rows) if r["id"] == row_id)


def test_one_nodes_error_lines_that_name_a_component_are_the_fault(tmp_path: Path) -> None:
    """Lines of one node only (a pasted excerpt): no peer's cascade shows it failed, yet its kernel's error lines
    name the GPU. With a second, quiet node beside it the same lines stay symptoms, as before."""
    row = _corpus_row("rocm4021-mi300x-aca-hw-error")  # a dev row
    log = tmp_path / "alone" / "dmesg.log"
    log.parent.mkdir()
    log.write_text("\n".join(row["lines"]) + "\n")
    inc = analyze([str(log.parent)], AnalyzeOptions())
    assert inc.status == "incident" and inc.category == "gpu_hardware"
    assert any(e.role == "root" and "uncorrectable hardware error" in e.text for e in inc.evidence)
    for node in ("gpu-a", "gpu-b"):
        (tmp_path / "two" / node).mkdir(parents=True)
    (tmp_path / "two" / "gpu-a" / "dmesg.log").write_text(log.read_text())
    (tmp_path / "two" / "gpu-b" / "dmesg.log").write_text("[13850.912648] gpu-b: link up\n")
    assert analyze([str(tmp_path / "two")], AnalyzeOptions()).status == "healthy"


def test_checkpoints_written_after_a_divergence_are_not_offered(tmp_path: Path) -> None:
    """A save stamped in the same second as the first NaN loss, of a later step, holds the diverged weights:
    the advice must not resume from it (real Accelerate job, whole-second stamps)."""
    job = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs" / "062-accelerate-nan"
    inc = analyze([str(job)], AnalyzeOptions())
    assert inc.category == "numerical" and inc.iteration == 14
    assert inc.checkpoint["last_saved"] is None
    assert [s["iteration"] for s in inc.checkpoint["saved_after"]] == [20, 40]
    assert not any(r.startswith("Resume from the checkpoint at iteration") for r in inc.recommendations)
    assert any("written after the failure" in r and "diverged weights" in r for r in inc.recommendations)


def test_a_stuck_rank_is_not_told_to_read_a_traceback() -> None:
    """A rank that hung printed no error: the advice is its stack dump, once, and no traceback to read."""
    job = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs" / "011-hf-hang"
    inc = analyze([str(job)], AnalyzeOptions())
    assert inc.suspects[0].node == "cpu-node-a"
    assert not any("traceback" in r for r in inc.recommendations)
    assert sum("py-spy dump" in r for r in inc.recommendations) == 1
