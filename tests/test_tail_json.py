"""JSON-lines logs followed live read as ``analyze`` reads them, and a JSON record's host key as the node of its
file's lines (decided with the rest of the job's host evidence)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

from l4lite.api import analyze
from l4lite.ingest.context import build_context
from l4lite.ingest.files import discover
from l4lite.ingest.jsonlog import record_host
from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.live.alerts import JsonLinesSink
from l4lite.live.reader import default_reader_factory
from l4lite.live.tail import Tailer, TailOptions
from l4lite.options import AnalyzeOptions
from l4lite.records import Accounting

REAL_104 = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs" / "104-ddp-json_exception"
TRACEBACK = ("Traceback (most recent call last):\n  File \"/workspace/train.py\", line 88, in <module>\n"
             "    loss.backward()\nRuntimeError: CUDA error: an illegal memory access was encountered\n")


def fluent_bit(log: str, t: str, host: str, pod: str) -> str:
    """A record as Fluent Bit's tail input and Kubernetes filter write it (docs.fluentbit.io, filter kubernetes)."""
    return json.dumps({"log": log, "stream": "stderr", "time": t, "kubernetes": {
        "pod_name": pod, "namespace_name": "train", "pod_id": "5f1c0d7e-1a2b-4c3d-9e8f-001122334455",
        "labels": {"app": "trainer"}, "host": host, "container_name": "pytorch", "docker_id": "4d5e6f7a8b9c",
        "container_image": "nvcr.io/nvidia/pytorch:24.05-py3"}})


def pod_log(host: str, pod: str, fail: bool, steps: int = 30) -> str:
    lines = [fluent_bit(f"2026-12-01 10:00:{s:02d},100 INFO train: step {s} loss {2.0 - s * 0.01:.3f}\n",
                        f"2026-12-01T10:00:{s:02d}.100Z", host, pod) for s in range(1, steps)]
    if fail:
        lines += [fluent_bit(x, f"2026-12-01T10:00:{steps:02d}.{j:03d}Z", host, pod)
                  for j, x in enumerate(TRACEBACK.splitlines(True))]
    return "\n".join(lines) + "\n"


def fluent_bit_job(root: Path) -> Path:
    """Two pods' collected logs in files named after the pods' workers, not their machines."""
    root.mkdir(parents=True)
    (root / "worker-0.log").write_text(pod_log("gke-a100-pool-7f3a", "trainer-worker-0", False))
    (root / "worker-1.log").write_text(pod_log("gke-a100-pool-9b2c", "trainer-worker-1", True))
    return root


def ingest_records(root: Path) -> list:
    files = discover([str(root)], Accounting()).files
    return list(iter_records([str(root)], IngestOptions().use(build_context(files, open_end=True)), Accounting()))


def fed_records(root: Path, rel: str, lines: list[str]) -> list:
    reader = default_reader_factory(str(root), paths=[str(root / rel)])(rel)
    got = []
    for i, text in enumerate(lines, 1):
        got.extend(reader.feed(i, text))
    return got + reader.flush()


def tail_once(root: Path, state: Path) -> Tailer:
    t = Tailer(TailOptions(paths=[str(root)], state_dir=str(state), once=True), sinks=[JsonLinesSink(stream=io.StringIO())])
    t.run()
    t.close()
    return t


def verdict(incident) -> tuple:
    return (incident.status, incident.category, incident.phase, incident.iteration,
            [s.node for s in incident.suspects[:1]], sorted((e.file, e.line) for e in incident.evidence))


# ------------------------------------------------------------------------------------------- tail reads JSON
def test_incremental_reader_unwraps_a_real_ranks_json_log_as_ingest_does(tmp_path: Path) -> None:
    src = next(REAL_104.glob("dgx-b200-11/torchelastic/*/attempt_0/0/stderr.log"))
    log = tmp_path / "dgx-b200-11" / "stderr.log"
    log.parent.mkdir()
    shutil.copy(src, log)
    expected = ingest_records(tmp_path)
    got = fed_records(tmp_path, "dgx-b200-11/stderr.log", log.read_text().splitlines())
    assert [r.as_row() for r in got] == [r.as_row() for r in expected]
    assert any(r.text.startswith("[rank2]:Traceback") for r in got)  # the exc_info field's traceback


def test_a_json_record_in_cri_pieces_is_joined_then_unwrapped(tmp_path: Path) -> None:
    record = json.dumps({"time": "2026-12-01T10:00:05.100Z", "level": "ERROR", "logger": "train",
                         "message": "training failed", "exc_info": TRACEBACK})
    head = [json.dumps({"time": f"2026-12-01T10:00:0{s}.000Z", "level": "INFO", "logger": "train",
                        "message": f"step {s} loss 1.5"}) for s in range(1, 5)]
    cut = len(record) // 2
    lines = [f"2026-12-01T10:00:0{s}.000000001Z stderr F {x}" for s, x in enumerate(head, 1)] + [
        f"2026-12-01T10:00:05.100000001Z stderr P {record[:cut]}",
        f"2026-12-01T10:00:05.100000002Z stderr F {record[cut:]}"]
    log = tmp_path / "node-a" / "0.log"
    log.parent.mkdir()
    log.write_text("\n".join(lines) + "\n")
    expected = ingest_records(tmp_path)
    got = fed_records(tmp_path, "node-a/0.log", lines)
    assert [r.as_row() for r in got] == [r.as_row() for r in expected]
    assert any("RuntimeError: CUDA error: an illegal memory access" in r.text for r in got)


def test_tail_and_analyze_agree_on_a_real_json_job(tmp_path: Path) -> None:
    job = tmp_path / "job"
    shutil.copytree(REAL_104, job, ignore=shutil.ignore_patterns("ground_truth.json", "_meta"))
    t = tail_once(job, tmp_path / "state")
    assert t.incident is not None
    assert verdict(t.incident) == verdict(analyze([str(job)], AnalyzeOptions()))
    assert t.incident.category == "software" and t.incident.iteration is not None


def test_a_json_record_written_in_two_pieces_is_read_whole(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    log = job / "node-b.log"
    text = pod_log("gke-a100-pool-9b2c", "trainer-worker-1", True)
    last = text.rstrip("\n").rsplit("\n", 1)[1]
    log.write_text(text[: len(text) - len(last) // 2 - 1])  # the last record cut in its middle, no newline
    t = Tailer(TailOptions(paths=[str(job)], state_dir=str(tmp_path / "state")),
               sinks=[JsonLinesSink(stream=io.StringIO())])
    t.step()
    log.write_text(text)
    t.step(finish=True)
    t.diagnose()
    t.close()
    assert t.incident is not None
    assert verdict(t.incident) == verdict(analyze([str(job)], AnalyzeOptions()))
    assert t.incident.category == "software"


def wrapped_real_job(root: Path) -> Path:
    """Real job 104's console logs (torchrun's plain warnings, then the ranks' JSON records) as Fluent Bit collects
    a pod's output: each printed line in a record's ``log``, the machine in ``kubernetes.host``; the files are
    named after the pods."""
    root.mkdir(parents=True)
    for k, host in enumerate(("dgx-b200-03", "dgx-b200-11")):
        lines = (REAL_104 / host / "console.log").read_text().splitlines()
        (root / f"trainer-worker-{k}.log").write_text("".join(
            fluent_bit(x + "\n", f"2026-12-05T13:09:{40 + i // 20:02d}.{i % 20 * 50:03d}000000Z", host,
                       f"trainer-worker-{k}") + "\n" for i, x in enumerate(lines)))
    return root


def test_a_collectors_records_of_a_json_loggers_lines_read_as_the_lines_themselves(tmp_path: Path) -> None:
    job = wrapped_real_job(tmp_path / "job")
    incident = analyze([str(job)], AnalyzeOptions())
    plain = analyze([str(REAL_104)], AnalyzeOptions())
    assert (incident.category, incident.phase, incident.iteration) == (plain.category, plain.phase, plain.iteration)
    assert incident.suspects[0].node == plain.suspects[0].node == "dgx-b200-11"
    rel = "trainer-worker-1.log"
    lines = (job / rel).read_text().splitlines()
    assert [r.as_row() for r in fed_records(job, rel, lines)] == [r.as_row() for r in ingest_records(job)
                                                                   if r.file == rel]
    t = tail_once(job, tmp_path / "state")
    assert t.incident is not None and verdict(t.incident) == verdict(incident)


# ------------------------------------------------------------------------------------------- host keys
def test_record_host_reads_collectors_and_loggers_host_keys() -> None:
    assert record_host(fluent_bit("x\n", "2026-12-01T10:00:01Z", "gke-a100-pool-7f3a", "w-0")) == "gke-a100-pool-7f3a"
    gke = {"textPayload": "step 3", "resource": {"type": "k8s_container", "labels": {
        "cluster_name": "train", "namespace_name": "default", "pod_name": "trainer-worker-1",
        "container_name": "pytorch"}}, "labels": {"compute.googleapis.com/resource_name": "gke-train-a3-2c1d"},
        "timestamp": "2026-12-01T10:00:01.123Z", "severity": "INFO"}
    assert record_host(json.dumps(gke)) == "gke-train-a3-2c1d"
    del gke["labels"]
    assert record_host(json.dumps(gke)) == "trainer-worker-1"  # no machine named: the pod
    journald = {"__REALTIME_TIMESTAMP": "1764583201000000", "_HOSTNAME": "gpu-node-3", "SYSLOG_IDENTIFIER": "kernel",
                "MESSAGE": "NVRM: Xid (PCI:0000:cb:00): 79, pid=1234, name=python, GPU has fallen off the bus."}
    assert record_host(json.dumps(journald)) == "gpu-node-3"
    assert record_host('{"message": "no host here"}') is None
    assert record_host("host=node-a plain line") is None


def test_a_records_host_key_names_its_files_node(tmp_path: Path) -> None:
    job = fluent_bit_job(tmp_path / "job")
    incident = analyze([str(job)], AnalyzeOptions())
    assert incident.suspects[0].node == "gke-a100-pool-9b2c"  # not the file's name, worker-1
    t = tail_once(job, tmp_path / "state")
    assert t.incident is not None and t.incident.suspects[0].node == "gke-a100-pool-9b2c"


def test_one_odd_record_does_not_move_a_files_node(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    lines = pod_log("gke-a100-pool-9b2c", "trainer-worker-1", True).splitlines()
    odd = json.loads(lines[5])
    odd["kubernetes"]["host"] = "gke-a100-pool-0000"
    lines[5] = json.dumps(odd)
    (job / "worker-1.log").write_text("\n".join(lines) + "\n")
    records = ingest_records(job)
    assert {r.node for r in records} == {"gke-a100-pool-9b2c"}


def test_a_merged_file_of_several_hosts_records_is_not_one_node(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    a = pod_log("gke-a100-pool-7f3a", "trainer-worker-0", False).splitlines()
    b = pod_log("gke-a100-pool-9b2c", "trainer-worker-1", False).splitlines()
    loopback = json.loads(a[3])
    loopback["kubernetes"]["host"] = "localhost"  # every machine's name for itself: no node
    a[3] = json.dumps(loopback)
    (job / "all.log").write_text("\n".join(x for pair in zip(a, b, strict=True) for x in pair) + "\n")
    files = discover([str(job)], Accounting()).files
    ctx = build_context(files)
    assert ctx.mixed == ["all.log"]
    lines = (job / "all.log").read_text().splitlines()
    records = ingest_records(job)
    assert len(records) == len(lines)
    assert [r.node for r in records] == [None if (h := record_host(x)) == "localhost" else h for x in lines]
    assert [r.node for r in fed_records(job, "all.log", lines)] == [r.node for r in records]
