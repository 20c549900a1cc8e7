"""Structured (JSON-lines) logs read as the lines they carry: a traceback in an exception field becomes one
traceback record at the object's line, the time and level come from their keys, a collector's ``log`` field is
read with its own header, and plain lines of the same file read as before."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

from l4lite.ingest.files import InputFile
from l4lite.ingest.jsonlog import json_text, learn_json_keys
from l4lite.ingest.reader import IngestOptions, read_file
from l4lite.records import Accounting

DATA = Path(__file__).resolve().parent / "data" / "json_logs"
FAIL_AT = datetime(2024, 5, 2, 9, 14, 3, 904000, tzinfo=UTC).timestamp()


def records(path: Path) -> tuple[list, Accounting]:
    acc = Accounting()
    got = list(read_file(InputFile(path=str(path), rel=path.name), IngestOptions(), acc))
    return got, acc


def tracebacks(recs: list) -> list:
    return [r for r in recs if "Traceback (most recent call last):" in r.text]


def test_exception_field_becomes_one_traceback_record() -> None:
    recs, acc = records(DATA / "python_json_logger.jsonl")
    assert acc.balanced
    # the file's own lines are what was read; the traceback's lines are counted as carried by its record
    assert acc.lines_read == len((DATA / "python_json_logger.jsonl").read_text().splitlines())
    assert acc.lines_unwrapped > 0
    [tb] = tracebacks(recs)
    assert (tb.line, tb.end_line) == (2, 2)  # the object's own line: evidence points into the file as it is
    assert tb.text.splitlines()[-1].endswith("RuntimeError: CUDA error: an illegal memory access was encountered")
    assert "\\n" not in tb.text and "{" not in tb.text
    head = next(r for r in recs if r.line == 2 and r is not tb)
    assert head.message.endswith("training failed") and head.level == "error"
    assert abs(head.time - FAIL_AT) < 1e-3
    assert {r.rank for r in recs} == {5}  # the record's rank key


def test_time_and_level_from_keys() -> None:
    recs, _ = records(DATA / "python_json_logger.jsonl")
    first = recs[0]
    assert first.level == "info" and first.message.endswith("step 120 loss 2.31")
    assert abs(first.time - datetime(2024, 5, 2, 9, 14, 1, 120000, tzinfo=UTC).timestamp()) < 1e-3


def test_docker_log_field_is_read_with_its_own_header() -> None:
    recs, acc = records(DATA / "docker_json_file.log")
    assert acc.balanced
    step = recs[0]
    assert step.text == "2024-05-02 09:14:01,120 INFO step 120 loss 2.31" and step.level == "info"
    [tb] = tracebacks(recs)
    assert (tb.line, tb.end_line) == (2, 5)  # one printed line per object: the traceback spans four of them
    assert tb.text.splitlines()[-1].startswith("RuntimeError: CUDA error")
    assert abs(tb.time - FAIL_AT) < 1e-2  # the wrapper's time for lines that print none of their own


def test_loguru_serialized_text_is_the_printed_record() -> None:
    recs, _ = records(DATA / "loguru_serialize.jsonl")
    [tb] = tracebacks(recs)
    assert tb.line == 2 and tb.text.splitlines()[-1].startswith("RuntimeError: CUDA error")
    assert all('"record"' not in r.text for r in recs)


def test_plain_lines_of_a_json_file_read_as_before(tmp_path: Path) -> None:
    f = tmp_path / "rank0.log"
    shutil.copy(DATA / "python_json_logger.jsonl", f)
    with f.open("a", encoding="utf-8") as out:
        out.write("2024-05-02 09:14:05,000 WARNING plain line after the records\n")
    recs, _ = records(f)
    assert recs[-1].text == "2024-05-02 09:14:05,000 WARNING plain line after the records"


def test_files_without_message_objects_are_left_alone() -> None:
    # a metrics dump and a torchelastic error file are JSON objects with no message string: not records
    assert learn_json_keys(['{"step": 3, "loss": 2.1}', '{"step": 4, "loss": 2.0}']) is None
    assert learn_json_keys(['{"message": {"message": "RuntimeError: x", "extraInfo": {}}}']) is None
    assert learn_json_keys(["2024-05-02 09:14:01,120 INFO plain"]) is None


def test_labelled_object_keeps_its_label_on_every_line() -> None:
    keys = learn_json_keys(['[default0]:{"time": "2024-05-02 09:14:03,904", "level": "ERROR", "message": "boom",'
                            ' "exception": "Traceback (most recent call last):\\nValueError: x\\n"}'])
    assert keys is not None and keys.message == "message"
    got = json_text('[default0]:{"time": "2024-05-02 09:14:03,904", "level": "ERROR", "message": "boom",'
                    ' "exception": "Traceback (most recent call last):\\nValueError: x\\n"}', keys)
    assert got is not None
    assert got.lines == ["[default0]:2024-05-02 09:14:03,904 ERROR boom",
                         "[default0]:Traceback (most recent call last):", "[default0]:ValueError: x"]


def test_an_object_behind_several_stream_labels_is_read_layer_by_layer(tmp_path: Path) -> None:
    # ``kubectl logs --prefix`` (with ``--timestamps``) or ``srun --label`` around a torchrun label around the record
    record = ('{"time": "2024-05-02 09:14:03,904", "level": "ERROR", "message": "boom",'
              ' "exception": "Traceback (most recent call last):\\nValueError: x\\n"}')
    for lead in ("[pod/train-worker-1/train] [default0]:", "[pod/train-worker-1/train] 2024-05-02T09:14:03.905Z ",
                 "  1: [default0]:"):
        keys = learn_json_keys([lead + record])
        assert keys is not None and keys.message == "message", lead
        got = json_text(lead + record, keys)
        assert got is not None and got.lines[-1] == lead + "ValueError: x", lead
    log = tmp_path / "kubectl-logs.txt"
    log.write_text("".join(f"[pod/train-worker-1/train] [default0]:{record}\n" for _ in range(3)))
    recs, _ = records(log)
    assert len(tracebacks(recs)) == 3 and all(r.node == "train-worker-1" for r in tracebacks(recs))


def test_epoch_time_and_nested_level() -> None:
    line = '{"timestamp": 1714641243904, "level": {"name": "error"}, "msg": "boom"}'
    keys = learn_json_keys([line])
    assert keys is not None
    got = json_text(line, keys)
    assert got is not None and got.lines == ["2024-05-02T09:14:03.904000Z ERROR boom"]


def test_structlog_event_and_cloud_logging_payload() -> None:
    line = ('{"event": "training failed", "level": "error", "timestamp": "2024-05-02T09:14:03.904Z", '
            '"exception": "Traceback (most recent call last):\\nValueError: x"}')
    keys = learn_json_keys([line])
    assert keys is not None and keys.message == "event"
    got = json_text(line, keys)
    assert got is not None and got.lines[0] == "2024-05-02T09:14:03.904Z ERROR training failed"
    assert got.lines[1:] == ["Traceback (most recent call last):", "ValueError: x"]
    gke = '{"jsonPayload": {"message": "boom", "severity": "ERROR"}, "timestamp": "2024-05-02T09:14:03.904Z"}'
    keys = learn_json_keys([gke])
    assert keys is not None and keys.nested == "jsonPayload"
    got = json_text(gke, keys)
    assert got is not None and got.lines == ["ERROR boom"]


def test_a_warning_s_traceback_was_handled() -> None:
    line = ('{"time": "2024-05-02 09:14:03,904", "level": "WARNING", "message": "retrying", '
            '"exc_text": "Traceback (most recent call last):\\nTimeoutError: x"}')
    keys = learn_json_keys([line])
    assert keys is not None
    got = json_text(line, keys)
    assert got is not None and got.lines == ["2024-05-02 09:14:03,904 WARNING retrying"]


def test_json_records_inside_a_pod_log(tmp_path: Path) -> None:
    # containerd's prefix first, the application's JSON record after it
    f = tmp_path / "0.log"
    lines = (DATA / "python_json_logger.jsonl").read_text(encoding="utf-8").splitlines()
    f.write_text("".join(f"2024-05-02T09:14:0{k}.000000001Z stderr F {x}\n" for k, x in enumerate(lines)),
                 encoding="utf-8")
    recs, acc = records(f)
    assert acc.balanced
    [tb] = tracebacks(recs)
    assert tb.line == 2 and tb.text.splitlines()[-1].endswith("an illegal memory access was encountered")


def test_a_line_nested_past_the_parser_s_stack_is_an_ordinary_line(tmp_path: Path) -> None:
    """Log lines are untrusted: an object nested deeper than json's recursion limit is read as a plain line."""
    path = tmp_path / "app.jsonl"
    good = '{"time": "2026-12-05T10:00:00Z", "level": "INFO", "message": "step 1"}'
    hostile = '{"message": ' + "[" * 5_000 + "]" * 5_000 + "}"  # within the line length limit
    path.write_text("\n".join([good] * 20 + [hostile, good]) + "\n")
    recs, acc = records(path)
    assert acc.balanced and acc.lines_read == 22
    assert any(r.text.startswith('{"message": [[[') for r in recs)


def test_json_nested_past_the_parser_s_stack_never_stops_the_analysis(tmp_path: Path) -> None:
    """A metadata document and a torchelastic-shaped error record nested deeper than json's recursion limit: the
    job is still analysed and every line accounted for."""
    from l4lite.api import analyze

    node = tmp_path / "node1"
    node.mkdir()
    (node / "meta.json").write_text('{\n"a": ' + "[" * 5_000 + "]" * 5_000 + "\n}\n")
    (node / "err.log").write_text('{"message": {"message": "RuntimeError: x", "extraInfo": {"py_callstack": '
                                  + "[" * 5_000 + "]" * 5_000 + "}}}\n")
    (node / "train.log").write_text("2026-12-05 10:00:00 INFO step 1 loss 2.0\n")
    incident = analyze(str(tmp_path))
    assert incident.stats["lines_read"] == 5


def test_records_that_begin_after_a_plain_head_are_read_as_json(tmp_path: Path) -> None:
    # one host's stream: a launcher's plain lines (some ending in a brace), then a JSON logger's records
    record = ('{"asctime": "2024-05-02 09:14:03,904", "levelname": "ERROR", "message": "Error in training function:'
              '\\nTraceback (most recent call last):\\nFloatingPointError: loss is nan"}')
    plain = [f"2024-05-02 09:13:{i:02d},000 INFO resources: {{CPU: 2, memory: {i}}}" for i in range(40)]
    log = tmp_path / "train-4242-node-a.out"
    log.write_text("\n".join([*plain, record]) + "\n")
    recs, acc = records(log)
    assert [r.line for r in tracebacks(recs)] == [41]
    assert "FloatingPointError: loss is nan" in tracebacks(recs)[0].text
    assert acc.lines_unwrapped >= 1
