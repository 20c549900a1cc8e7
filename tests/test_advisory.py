"""A line that says it is harmless, and the traceback it caught, is not a root; metadata JSON is not a log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from l4lite.api import analyze
from l4lite.ingest.files import json_document
from l4lite.options import AnalyzeOptions
from l4lite.records import Record
from l4lite.rules.advisory import advisory, follows_advisory, says_harmless

RAY_ADVICE = ("Failed to send resource request for train-5ccd4ac2112f4575b445755d650aaeda. If this only happens "
              "transiently during network partition or CPU being overloaded, it's safe to ignore this error. If "
              "this error persists, file a GitHub issue.")
FRAMES = [
    "Traceback (most recent call last):",
    '  File "/venv/lib/python3.11/site-packages/ray/train/v2/_internal/execution/scaling_policy/'
    'autoscaling_coordinator_client.py", line 58, in send_resource_request',
    "    ray.get(",
    '  File "/venv/lib/python3.11/site-packages/ray/_private/worker.py", line 3009, in get',
    "    values, debugger_breakpoint = worker.get_objects(",
    "ray.exceptions.GetTimeoutError: Get timed out: some object(s) not ready.",
]


def _rec(text: str, line: int = 1, end: int | None = None, file: str = "w.err", rank: int | None = None) -> Record:
    return Record(file=file, line=line, end_line=end or line + text.count("\n"), node="a", rank=rank, gpu=None,
                  source="trainer", time=None, level=None, message=text.splitlines()[-1], text=text)


@pytest.mark.parametrize("line", [
    RAY_ADVICE,
    "UserWarning: Grad strides do not match bucket view strides. This is not an error, but may impair performance.",
    "Some weights of the model checkpoint were not used when initializing BertModel: - This IS expected if you "
    "are initializing BertModel from the checkpoint of a model trained on another task",
    "[W socket.cpp:464] The server socket has failed to bind; the client will retry.",
    "These warnings can be safely ignored.",
    # torch's store server at INFO (real job 227): the IPv6 bind failed, it binds IPv4 and the run goes on
    "[I1207 02:57:20.167554943 TCPStoreLibUvBackend.cpp:1266] [c10d] Failed to bind to ipv6 address, trying ipv4. "
    "Error: The server socket has failed to listen on any local network address. port: 29854, useIpv6: true, "
    "code: -98, name: EADDRINUSE, message: address already in use",
])
def test_lines_that_say_they_need_no_action_are_advisory(line: str) -> None:
    assert says_harmless(_rec(line))


@pytest.mark.parametrize("line", [
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "NCCL WARN NET/IB : Got completion from peer 10.0.0.2 with error 12, retrying",
    "torch.distributed.DistBackendError: NCCL error: unhandled system error, it is expected to fail soon",
    "ignored 3 batches with NaN loss",
    # the store's last word when neither family could be bound: the port is taken
    "[E socket.cpp:957] The server socket has failed to listen on any local network address. port: 29500, "
    "useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use",
])
def test_errors_and_bare_retries_are_not_advisory(line: str) -> None:
    assert not says_harmless(_rec(line))


def test_the_traceback_right_after_an_advisory_line_belongs_to_it() -> None:
    advice = _rec(RAY_ADVICE, line=4)
    tb = _rec("\n".join(FRAMES), line=5)
    assert follows_advisory(advice, tb) and advisory(advice, tb)
    assert not follows_advisory(advice, _rec("\n".join(FRAMES), line=7))  # a line between them
    assert not follows_advisory(advice, _rec("\n".join(FRAMES), line=5, file="other.err"))
    assert not follows_advisory(_rec("Requesting resources: {'CPU': 1} * 4", line=4), tb)


def test_a_json_records_attached_traceback_does_not_make_its_message_less_advisory() -> None:
    # the advisory words are in the message; words deep in the frames do not count
    assert says_harmless(_rec(RAY_ADVICE + "\n" + "\n".join(FRAMES)))
    assert not says_harmless(_rec("\n".join(FRAMES) + "\n# this is expected"))


def _job(tmp_path: Path, err_lines: list[str], json_record: dict | None = None) -> Path:
    """Two nodes that train 40 steps; node a's controller also logs ``err_lines`` (a worker .err file)."""
    for node, ranks in (("node-a", (0, 1)), ("node-b", (2, 3))):
        d = tmp_path / node
        d.mkdir(parents=True)
        for r in ranks:
            (d / f"rank{r}.log").write_text("".join(
                f"2026-12-04 13:50:{s:02d},000 INFO train: step {s}/40 | loss {2.0 - s / 40:.4f} | "
                f"grad_norm 0.48 | 120.0 samples/s\n" for s in range(1, 41)) +
                "2026-12-04 13:50:41,000 INFO train: training finished: 40 steps\n")
    (tmp_path / "node-a" / "worker-239.err").write_text("\n".join(
        [":job_id:01000000", ":actor_name:TrainController", "Requesting resources: {'CPU': 1} * 4", *err_lines,
         "Started training worker group of size 4: "]) + "\n")
    if json_record is not None:
        (tmp_path / "node-a" / "controller.log").write_text(json.dumps(json_record) + "\n")
    return tmp_path


def test_a_caught_traceback_that_its_line_calls_safe_to_ignore_makes_no_incident(tmp_path: Path) -> None:
    job = _job(tmp_path, [RAY_ADVICE, *FRAMES, RAY_ADVICE, *FRAMES], {
        "asctime": "2026-12-04 13:49:17,352", "levelname": "WARNING", "message": RAY_ADVICE,
        "filename": "autoscaling_coordinator_client.py", "exc_text": "\n".join(FRAMES)})
    inc = analyze([str(job)], AnalyzeOptions())
    assert inc.status == "healthy", inc.summary


def test_the_same_traceback_without_the_advice_is_still_a_fault(tmp_path: Path) -> None:
    job = _job(tmp_path, FRAMES)
    inc = analyze([str(job)], AnalyzeOptions())
    assert inc.status == "incident" and inc.category == "software"
    assert any("GetTimeoutError" in e.text for e in inc.evidence if e.role == "root")


def test_a_pretty_printed_json_document_is_set_apart_and_its_lines_counted(tmp_path: Path) -> None:
    job = _job(tmp_path, [])
    meta = tmp_path / "_meta"
    meta.mkdir()
    doc = json.dumps({"ranks": {"0": {"host": "node-a", "time": "2026-12-04T13:50:41.417Z"}}, "injections": []},
                     indent=1)
    (meta / "run.json").write_text(doc + "\n")
    head = (meta / "run.json").read_bytes()
    assert json_document(str(meta / "run.json"), head, len(head), False)
    inc = analyze([str(job)], AnalyzeOptions())
    assert inc.status == "healthy"
    acc = inc.stats
    assert acc["lines_skipped"].get("not_a_log") == doc.count("\n") + 1
    assert acc["lines_read"] == acc["lines_in_records"] + sum(acc["lines_skipped"].values())
    assert "unknown" not in str(acc["nodes"]) and acc["files_skipped"] == {"not_a_log": 1}


def test_a_gzipped_json_document_is_set_apart_like_the_plain_one(tmp_path: Path) -> None:
    """Compression is how a job was archived: ``run.json.gz`` is the same metadata as ``run.json``."""
    import gzip

    job = _job(tmp_path, [])
    meta = tmp_path / "_meta"
    meta.mkdir()
    doc = json.dumps({"ranks": {"0": {"host": "node-a", "time": "2026-12-04T13:50:41.417Z"}}}, indent=1) + "\n"
    (meta / "run.json.gz").write_bytes(gzip.compress(doc.encode()))
    inc = analyze([str(job)], AnalyzeOptions())
    acc = inc.stats
    assert inc.status == "healthy" and acc["files_skipped"] == {"not_a_log": 1}
    assert acc["lines_skipped"].get("not_a_log") == doc.count("\n")
    assert "unknown" not in str(acc["nodes"])


@pytest.mark.parametrize("text", [
    '{"asctime": "2026-12-04 13:49:17,352", "levelname": "WARNING", "message": "x"}\n',  # a one-record JSON log
    '{"a": 1}\n{"a": 2}\n',  # JSON lines
    "{\n  not json\n",  # a brace, then text
    '[\n {"time": "2026-12-04T13:49:17Z", "level": "error", "message": "x"}\n]\n',  # an exported list of records
])
def test_json_logs_are_still_read(tmp_path: Path, text: str) -> None:
    p = tmp_path / "f.json"
    p.write_text(text)
    head = p.read_bytes()
    assert json_document(str(p), head, len(head), False) == ""
