"""Container logs as the kubelet's runtime writes them (``/var/log/pods/.../0.log``): every line prefixed with
``<RFC3339Nano> <stdout|stderr> <F|P> ``, long lines split into partial (P) pieces. Read through the prefix, the
job gives the same records and the same verdict as its plain files."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from l4lite.cli.main import main
from l4lite.ingest.files import InputFile
from l4lite.ingest.reader import IngestOptions, read_file
from l4lite.live.reader import default_reader_factory
from l4lite.records import Accounting

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "fixtures" / "jobs" / "ib-link-down"
START = datetime(2024, 7, 11, 6, 3, 40, tzinfo=UTC)
PIECE = 100  # containerd splits at 16 KiB; shorter pieces here so that many lines are split

# As containerd wrote them for a pod whose trainer printed an NCCL line (no time of its own), a traceback on
# stderr split across two writes while stdout went on, and an empty line.
SAMPLE = """\
2024-07-11T06:08:52.120034512Z stdout F node073:43171:43410 [3] NCCL INFO Channel 00/0 : 11[3] -> 12[4] via P2P/IPC
2024-07-11T06:08:52.731908271Z stderr P [rank11]: Traceback (most recent call last):
2024-07-11T06:08:52.731911004Z stdout F  [2024-07-11 06:08:52] iteration      117/     250 | lm loss: 2.1E+00 |
2024-07-11T06:08:52.731915120+00:00 stderr F  (rank 11 of 32)
2024-07-11T06:08:53Z stdout F \n"""


def cri(text: str, at: datetime, stream: str = "stdout") -> list[str]:
    stamp = at.strftime("%Y-%m-%dT%H:%M:%S.%f") + "123Z"
    pieces = [text[i:i + PIECE] for i in range(0, len(text), PIECE)] or [""]
    return [f"{stamp} {stream} {'F' if k == len(pieces) - 1 else 'P'} {p}" for k, p in enumerate(pieces)]


def as_container_logs(src: Path, dst: Path) -> int:
    """The job's files rewritten with CRI prefixes; returns how many partial lines that made."""
    partial = 0
    for f in sorted(src.rglob("*.log")):
        out: list[str] = []
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines()):
            rows = cri(line, START + timedelta(milliseconds=37 * i), "stderr" if "Traceback" in line else "stdout")
            partial += len(rows) - 1
            out += rows
        target = dst / f.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(out) + "\n", encoding="utf-8")
    return partial


def records(path: Path, rel: str) -> tuple[list, Accounting]:
    acc = Accounting()
    got = list(read_file(InputFile(path=str(path), rel=rel), IngestOptions(), acc))
    return got, acc


def test_sample_lines_lose_their_prefix_and_partials_are_joined(tmp_path: Path) -> None:
    f = tmp_path / "default_gpt-worker-3_5b1c9f2e-0d7a-4c4e-9e61-2f7f1d0c8a11" / "trainer" / "0.log"
    f.parent.mkdir(parents=True)
    f.write_text(SAMPLE, encoding="utf-8")
    got, acc = records(f, str(f.relative_to(tmp_path)))
    texts = [r.text for r in got]
    assert texts[0].startswith("node073:43171:43410 [3] NCCL INFO Channel 00/0")
    assert "[rank11]: Traceback (most recent call last): (rank 11 of 32)" in texts  # the stderr pieces, joined
    assert any(t.startswith(" [2024-07-11 06:08:52] iteration      117") for t in texts)
    assert not any("stdout F" in t or "stderr P" in t for t in texts)
    nccl = got[0]
    assert nccl.node == "node073" and nccl.gpu == 3
    assert nccl.time == datetime(2024, 7, 11, 6, 8, 52, 120034, tzinfo=UTC).timestamp() or \
        abs(nccl.time - 1720678132.120034) < 1e-3  # the runtime's time, the line having none
    assert acc.lines_read == 5 and acc.lines_skipped["cri_partial_joined"] == 1 and acc.lines_skipped["blank"] == 1
    assert acc.balanced


def test_one_plain_line_at_the_top_does_not_leave_the_pod_log_unread(tmp_path: Path) -> None:
    f = tmp_path / "pod" / "0.log"
    f.parent.mkdir(parents=True)
    f.write_text("log copied from the node at 12:00\n" + SAMPLE, encoding="utf-8")
    got, acc = records(f, "pod/0.log")
    texts = [r.text for r in got]
    assert texts[0] == "log copied from the node at 12:00"
    assert not any("stdout F" in t or "stderr P" in t for t in texts)
    assert "[rank11]: Traceback (most recent call last): (rank 11 of 32)" in texts
    assert acc.balanced


def test_a_job_in_container_logs_reads_and_diagnoses_as_its_plain_files(tmp_path: Path) -> None:
    pods = tmp_path / "pods"
    partial = as_container_logs(JOB, pods)
    assert partial > 100
    plain, plain_acc = records(JOB / "node073" / "rank11.log", "node073/rank11.log")
    wrapped, wrapped_acc = records(pods / "node073" / "rank11.log", "node073/rank11.log")
    assert [(r.text, r.node, r.rank, r.gpu, r.level, r.source) for r in wrapped] == \
        [(r.text, r.node, r.rank, r.gpu, r.level, r.source) for r in plain]
    assert wrapped_acc.lines_read == plain_acc.lines_read + wrapped_acc.lines_skipped["cri_partial_joined"]
    assert wrapped_acc.balanced

    verdicts = []
    for job, name in ((JOB, "plain.json"), (pods, "cri.json")):
        assert main(["analyze", str(job), "--no-store", "--quiet", "--json", str(tmp_path / name)]) == 1
        verdicts.append(json.loads((tmp_path / name).read_text()))
    plain_inc, cri_inc = verdicts
    for key in ("category", "phase", "iteration", "failure_time", "scope"):
        assert cri_inc[key] == plain_inc[key], key
    assert [s["node"] for s in cri_inc["suspects"][:3]] == [s["node"] for s in plain_inc["suspects"][:3]]
    roots = lambda inc: sorted(e["text"] for e in inc["evidence"] if e["role"] == "root")  # noqa: E731
    assert roots(cri_inc) == roots(plain_inc)
    skipped = cri_inc["stats"]["lines_skipped"]
    assert skipped["cri_partial_joined"] == partial


@pytest.mark.parametrize("note", [None, "log copied from the node at 12:00"])
def test_tail_reads_container_logs_as_ingest_does(tmp_path: Path, note: str | None) -> None:
    pods = tmp_path / "pods"
    shutil.copytree(JOB / "node073", tmp_path / "plain" / "node073")
    as_container_logs(tmp_path / "plain", pods)
    path = pods / "node073" / "rank11.log"
    if note:  # one plain line at the top: both readers still take the prefixes off the rest
        path.write_text(note + "\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
    make = default_reader_factory(str(pods), paths=[str(path)])
    reader = make("node073/rank11.log")
    got = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        got += reader.feed(n, line)
    got += reader.flush()
    expected, _ = records(path, "node073/rank11.log")
    assert [r.text for r in got] == [r.text for r in expected]
    assert make.skipped["cri_partial_joined"] > 0  # type: ignore[attr-defined]


def test_tail_holds_its_offset_at_a_partial_line_until_the_line_ends(tmp_path: Path) -> None:
    make = default_reader_factory(str(tmp_path))
    reader = make("gpt-worker-3.log")
    rows = SAMPLE.splitlines()
    assert [r.text for r in reader.feed(1, rows[0])][0].startswith("node073:43171:43410")
    assert reader.feed(2, rows[1]) == [] and reader.pending_line == 2  # the offset may not pass it
    got = reader.feed(3, rows[2])
    assert reader.pending_line is not None and reader.pending_line <= 2
    got += reader.feed(4, rows[3])
    got += reader.flush()
    assert "[rank11]: Traceback (most recent call last): (rank 11 of 32)" in [r.text for r in got]
    assert reader.pending_line is None
    # a partial line whose end never comes is given out as it is when the stream is flushed
    assert reader.feed(6, "2024-07-11T06:09:00.000000001Z stderr P RuntimeError: NCCL communicator was ab") == []
    assert [r.text for r in reader.flush()] == ["RuntimeError: NCCL communicator was ab"]


# ``kubectl logs --prefix --timestamps`` of two pods: each line after its pod and the runtime's time, a rank's
# traceback over several lines, an NCCL line with no time of its own.
KUBECTL = """\
[pod/gpt-worker-3/trainer] 2024-07-11T06:08:52.120034512Z node073:43171:43410 [3] NCCL INFO Channel 00/0 : 11[3] -> 12[4] via P2P/IPC
[pod/gpt-worker-3/trainer] 2024-07-11T06:08:52.731908271Z Traceback (most recent call last):
[pod/gpt-worker-3/trainer] 2024-07-11T06:08:52.731909004Z   File "/opt/train.py", line 12, in <module>
[pod/gpt-worker-3/trainer] 2024-07-11T06:08:52.731910120Z     step()
[pod/gpt-worker-3/trainer] 2024-07-11T06:08:52.731911120Z RuntimeError: NCCL communicator was aborted
[pod/gpt-worker-4/trainer] 2024-07-11T06:08:53.000000001Z  [2024-07-11 06:08:51] iteration      117/     250 |
"""


def test_kubectl_timestamps_are_the_runtimes_time_and_a_traceback_stays_one_record(tmp_path: Path) -> None:
    f = tmp_path / "kubectl-logs.txt"
    f.write_text(KUBECTL, encoding="utf-8")
    got, acc = records(f, "kubectl-logs.txt")
    assert [(r.line, r.end_line) for r in got] == [(1, 1), (2, 5), (6, 6)]
    assert not any("2024-07-11T06:08:5" in r.text for r in got)  # no runtime time left in a record's text
    assert got[1].text.splitlines()[-1] == "RuntimeError: NCCL communicator was aborted"
    assert abs(got[0].time - 1720678132.120034) < 1e-3  # the runtime's time, the line having none
    assert abs(got[2].time - 1720678131.0) < 1e-3  # the program's own time wins
    assert got[2].node == "gpt-worker-4" and acc.balanced


def test_tail_reads_a_kubectl_timestamps_stream_as_ingest_does(tmp_path: Path) -> None:
    f = tmp_path / "kubectl-logs.txt"
    f.write_text(KUBECTL, encoding="utf-8")
    reader = default_reader_factory(str(tmp_path), paths=[str(f)])("kubectl-logs.txt")
    got = []
    for n, line in enumerate(KUBECTL.splitlines(), 1):
        got += reader.feed(n, line)
    got += reader.flush()
    expected, _ = records(f, "kubectl-logs.txt")
    assert [(r.line, r.end_line, r.text) for r in got] == [(r.line, r.end_line, r.text) for r in expected]
