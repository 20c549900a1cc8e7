"""A printed line longer than 16 KiB as container log drivers write it: Docker's json-file driver splits it into
records of 16 KiB whose ``log`` has no trailing newline, the kubelet's runtime (CRI) into ``P`` lines ended by an
``F`` one. The parts of one stream are read back as the one line printed, timed by its first part, and every
record of the file stays counted; a part whose end never came (the container killed mid-write) reads as it is."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from l4lite.cli.main import main
from l4lite.ingest.files import InputFile
from l4lite.ingest.reader import IngestOptions, read_file
from l4lite.records import Accounting

PART = 16 * 1024  # bytes in every part but the last (Docker's buffer; containerd's default max line size)
START = datetime(2024, 5, 14, 10, 0, 0, 123000, tzinfo=UTC)
# a 40 KiB last line of a traceback: the tensor a failed check printed
LONG = "RuntimeError: CUDA error: an illegal memory access was encountered; offending values: " + \
    ", ".join(f"{k * 0.37:.4f}" for k in range(4000))
TRACEBACK = ["Traceback (most recent call last):", '  File "/workspace/train.py", line 412, in <module>',
             "    loss = model(batch).mean()", LONG]


def stamp(k: int) -> str:
    return (START + timedelta(milliseconds=40 * k)).strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"


def parts(line: str) -> list[str]:
    """The line as the driver writes it: 16 KiB pieces of its UTF-8, the last ending in the newline."""
    data = (line + "\n").encode()
    return [data[i:i + PART].decode() for i in range(0, len(data), PART)]


def docker(rows: list[tuple[str, str]]) -> str:
    """json-file records of (stream, text) pieces, one each, timed 40 ms apart."""
    return "".join(json.dumps({"log": text, "stream": stream, "time": stamp(k)}) + "\n"
                   for k, (stream, text) in enumerate(rows))


def read(path: Path) -> tuple[list, Accounting]:
    acc = Accounting()
    return list(read_file(InputFile(path=str(path), rel=path.name), IngestOptions(), acc)), acc


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_40_kib_traceback_line_in_three_parts_reads_as_the_plain_file(tmp_path: Path) -> None:
    assert len(parts(LONG)) == 3
    rows = [("stdout", "2024-05-14 10:00:00,100 INFO step 120 loss 2.31\n")]
    rows += [("stderr", x + "\n") for x in TRACEBACK[:-1]] + [("stderr", p) for p in parts(LONG)]
    got, acc = read(write(tmp_path / "docker" / "node07" / "rank3-json.log", docker(rows)))
    plain, _ = read(write(tmp_path / "plain" / "node07" / "rank3.log",
                          "2024-05-14 10:00:00,100 INFO step 120 loss 2.31\n" + "\n".join(TRACEBACK) + "\n"))
    assert [r.text for r in got] == [r.text for r in plain]
    [tb] = [r for r in got if r.text.startswith("Traceback")]
    assert tb.text.splitlines()[-1] == LONG  # whole, with no header of its own in the middle
    assert (tb.line, tb.end_line) == (2, 7)  # to the record of the line's last part
    assert acc.lines_read == 7 and acc.lines_skipped["json_partial_joined"] == 2 and acc.balanced


def test_interleaved_streams_each_join_their_own_parts_at_the_first_parts_time(tmp_path: Path) -> None:
    out_line = "[rank0]: NCCL INFO comm dump " + "x" * 20000
    err_line = "[rank0]: NCCL WARN ring dump " + "y" * 20000
    o, e = parts(out_line), parts(err_line)
    got, acc = read(write(tmp_path / "node07" / "ctr-json.log",
                          docker([("stdout", o[0]), ("stderr", e[0]), ("stdout", o[1]), ("stderr", e[1])])))
    assert {r.text for r in got} == {out_line, err_line}
    times = {r.text[:24]: r.time for r in got}
    assert times["[rank0]: NCCL INFO comm d"[:24]] == datetime.fromisoformat(stamp(0)).timestamp()
    assert times["[rank0]: NCCL WARN ring d"[:24]] == datetime.fromisoformat(stamp(1)).timestamp()
    assert acc.lines_skipped["json_partial_joined"] == 2 and acc.lines_in_records == 2 and acc.balanced


def test_a_part_at_the_end_of_the_file_reads_as_it_is(tmp_path: Path) -> None:
    first = parts(LONG)[0]
    got, acc = read(write(tmp_path / "node07" / "ctr-json.log",
                          docker([("stdout", "step 120 loss 2.31\n"), ("stderr", first)])))
    assert [r.text for r in got] == ["step 120 loss 2.31", first]
    assert got[-1].line == 2
    assert "json_partial_joined" not in acc.lines_skipped and acc.lines_in_records == 2 and acc.balanced


def test_short_records_without_a_newline_are_not_parts(tmp_path: Path) -> None:
    """Collectors that strip the newline (Fluent Bit) write every record so: only a full buffer is a part."""
    got, acc = read(write(tmp_path / "node07" / "ctr-json.log",
                          docker([("stdout", "step 120 loss 2.31"), ("stdout", "step 121 loss 2.30")])))
    assert [r.text for r in got] == ["step 120 loss 2.31", "step 121 loss 2.30"]
    assert not acc.lines_skipped


def test_cri_parts_take_the_first_parts_time_and_a_last_part_is_kept(tmp_path: Path) -> None:
    err = parts(err_line := "[rank0]: NCCL WARN ring dump " + "y" * 20000)
    lines = [f"{stamp(0)} stderr P {err[0]}", f"{stamp(1)} stdout F step 120 loss 2.31",
             f"{stamp(2)} stderr F {err[1].rstrip()}", f"{stamp(3)} stdout P {parts(LONG)[0]}"]
    got, acc = read(write(tmp_path / "pod" / "0.log", "\n".join(lines) + "\n"))
    assert [r.text for r in got] == ["step 120 loss 2.31", err_line, parts(LONG)[0]]
    assert got[1].time == datetime.fromisoformat(stamp(0)).timestamp()
    assert acc.lines_skipped["cri_partial_joined"] == 1 and acc.lines_in_records == 3 and acc.balanced


def test_parse_and_analyze_read_the_docker_job_as_its_plain_files(tmp_path: Path, capsys) -> None:
    rows = [("stdout", "2024-05-14 10:00:00,100 INFO step 120 loss 2.31\n")]
    rows += [("stderr", x + "\n") for x in TRACEBACK[:-1]] + [("stderr", p) for p in parts(LONG)]
    write(tmp_path / "docker" / "node07" / "rank3.log", docker(rows))
    write(tmp_path / "plain" / "node07" / "rank3.log",
          "2024-05-14 10:00:00,100 INFO step 120 loss 2.31\n" + "\n".join(TRACEBACK) + "\n")
    assert main(["parse", str(tmp_path / "docker"), "--quiet"]) == 0
    rows_out = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    assert any(r["text"].endswith(LONG) for r in rows_out)
    assert not any(r["text"].startswith(LONG[:40]) for r in rows_out)  # no half without its traceback
    verdicts = []
    for job in ("plain", "docker"):
        main(["analyze", str(tmp_path / job), "--no-store", "--quiet", "--json", str(tmp_path / f"{job}.json")])
        verdicts.append(json.loads((tmp_path / f"{job}.json").read_text()))
    plain, wrapped = verdicts
    assert wrapped["category"] == plain["category"] and wrapped["phase"] == plain["phase"]
    assert any(LONG[:300] in e["text"] for e in wrapped["evidence"])  # evidence text is cut at 4000 characters
    roots = lambda inc: sorted(e["text"] for e in inc["evidence"] if e["role"] == "root")  # noqa: E731
    assert roots(wrapped) == roots(plain)


def test_tail_joins_the_parts_as_the_batch_reader_does(tmp_path: Path) -> None:
    from l4lite.live.reader import default_reader_factory

    rows = [("stdout", "2024-05-14 10:00:00,100 INFO step 120 loss 2.31\n")]
    rows += [("stderr", x + "\n") for x in TRACEBACK[:-1]] + [("stderr", p) for p in parts(LONG)]
    path = write(tmp_path / "node07" / "rank3-json.log", docker(rows))
    batch, _ = read(path)
    reader = default_reader_factory(str(tmp_path), paths=[str(path)])("node07/rank3-json.log")
    live = []
    for i, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        live.extend(reader.feed(i, text))
        if i == 5:  # the line's first part has come, its end not yet: a restart resumes no later than that part
            assert reader.pending_line is not None and reader.pending_line <= 5
    live += reader.flush()
    assert [r.text for r in live] == [r.text for r in batch] and [r.time for r in live] == [r.time for r in batch]
    assert reader.skipped["json_partial_joined"] == 2 and reader.pending_line is None
