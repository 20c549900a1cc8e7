"""Broken and hostile input end to end, through ``l4lite analyze`` and ``l4lite parse`` (issue 9, item 1).

Every case adds one kind of bad input to a small healthy-looking job whose node ``gpu-node-02`` has a real fault
(an Xid 79 in its kernel log), then runs the CLI in-process and checks what a user at 3 a.m. needs:

- the exit code is 1 (an incident), never a traceback;
- stderr has a one-line message naming the bad file (for the kinds of input that lose or change something);
- the rest of the job is still analysed: the Xid line on gpu-node-02 is root evidence and gpu-node-02 the suspect;
- the line accounting is exact: lines read equals the lines the job's files hold (known here), and equals lines
  in records plus lines skipped by reason, both in the incident's stats and in ``parse``'s metadata.

Beyond the inputs of issue 9 (encodings, NULs, binaries, a 10 MB line, CRLF, empty files, truncated gzip,
symlink loops, unreadable files, no node, clock jumps, future times, 100,000 files, a growing file) it covers
what those tests found: corrupt and zero-padded gzip (also through ``tail --once`` and ``--jobs 2``), sparse
zero-filled files, words of 64 KiB and lines of random tokens (template mining must stay linear), and context
lines in files with carriage returns or gzip without a .gz name.

Discovery and reading details are unit-tested in test_sources.py and test_ingest.py; this file tests the whole
path from the command line.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from l4lite.cli.main import main
from l4lite.ingest import files as sources

T0 = dt.datetime(2024, 5, 7, 1, 0, 0)
NODES = ("gpu-node-01", "gpu-node-02", "gpu-node-03")
BAD = "gpu-node-02"
ITERS = 60
XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus."


def stamp(seconds: float) -> str:
    return (T0 + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S")


def write_job(root: Path) -> int:
    """A three-node job whose gpu-node-02 loses a GPU at 01:10:05; returns the number of lines written."""
    n = 0
    for node in NODES:
        d = root / node
        d.mkdir(parents=True, exist_ok=True)
        stop = 50 if node == BAD else ITERS
        lines = [f"[{stamp(0)}] > initializing torch distributed ...", f"[{stamp(5)}] training ..."]
        lines += [f"[{stamp(10 + i * 10)}]  iteration {i:8d}/    1000 | elapsed time per iteration (ms): 10000.0 | "
                  f"lm loss: {3 - i * 0.01:.6E} | grad norm: 1.0 |" for i in range(1, stop + 1)]
        if node == BAD:
            lines.append(f"[{stamp(606)}] RuntimeError: CUDA error: unspecified launch failure")
        (d / "train.log").write_text("\n".join(lines) + "\n")
        kern = ["[Tue May  7 01:00:00 2024] Linux version 5.15.0"]
        if node == BAD:
            kern.append(f"[Tue May  7 01:10:05 2024] {XID}")
        (d / "dmesg.log").write_text("\n".join(kern) + "\n")
        n += len(lines) + len(kern)
    return n


@dataclass
class Run:
    code: int
    out: str
    err: str
    incident: dict


def analyze(capsys: pytest.CaptureFixture[str], tmp: Path, *paths: Path | str, extra: tuple[str, ...] = ()) -> Run:
    out_json = tmp / "incident.json"
    code = main(["analyze", "--no-store", *map(str, paths), "--json", str(out_json), *extra])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    incident = json.loads(out_json.read_text(encoding="utf-8")) if out_json.exists() else {}
    return Run(code, captured.out, captured.err, incident)


def parse(capsys: pytest.CaptureFixture[str], tmp: Path, *paths: Path | str) -> tuple[int, list[dict], dict, str]:
    out = tmp / "records.jsonl"
    code = main(["parse", *map(str, paths), "-o", str(out)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").split("\n") if line] if out.exists() else []
    meta_path = Path(f"{out}.meta.json")
    meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.exists() else {}
    return code, rows, meta, err


def assert_books(stats: dict, expected_lines: int | None = None) -> None:
    """lines read = lines in records + lines skipped by reason (and = the lines the files hold, when known)."""
    skipped = sum(stats["lines_skipped"].values())
    assert stats["lines_read"] == stats["lines_in_records"] + skipped, stats
    if expected_lines is not None:
        assert stats["lines_read"] == expected_lines, stats


def assert_fault_found(run: Run) -> None:
    assert run.code == 1, run.out + run.err
    inc = run.incident
    assert inc["status"] == "incident" and inc["category"] == "gpu_hardware", inc["summary"]
    assert inc["suspects"][0]["node"] == BAD
    roots = [e for e in inc["evidence"] if e["role"] == "root"]
    assert any(e["file"] == f"{BAD}/dmesg.log" and "Xid" in e["text"] for e in roots), roots


def message_lines(err: str, name: str) -> list[str]:
    """The stderr lines naming a file: each a single line that starts with the program's name."""
    return [line for line in err.splitlines() if name in line and line.startswith("l4lite: ")]


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


# --------------------------------------------------------------------------------------------- hostile files
# Each case writes its files into the job and returns (lines those files hold, name to find in a message or None
# when nothing is lost or changed and no message is due, a check of the parsed rows of that file or None).

Case = Callable[[Path], tuple[int, str | None, Callable[[list[dict]], None] | None]]


def invalid_utf8(job: Path):
    write(job / "gpu-node-01" / "bad-bytes.log", b"ok \xff\xfe byte\nlatin-1 caf\xe9\nutf-8 caf\xc3\xa9\n")

    def check(rows: list[dict]) -> None:
        assert [r["text"] for r in rows] == ["ok \u00ff\u00fe byte", "latin-1 caf\u00e9", "utf-8 caf\u00e9"]

    return 3, "gpu-node-01/bad-bytes.log:1", check


def latin1_file(job: Path):
    lines = [f"[{stamp(20 + i)}] Gr\u00f6\u00dfe des Puffers: {i} \u00b5s, r\u00e9sum\u00e9" for i in range(40)]
    write(job / "gpu-node-03" / "latin1.log", ("\n".join(lines) + "\n").encode("latin-1"))

    def check(rows: list[dict]) -> None:
        assert len(rows) == 40 and all("Gr\u00f6\u00dfe" in r["text"] and "\u00b5s" in r["text"] for r in rows)

    return 40, "gpu-node-03/latin1.log", check


def utf16_bom(job: Path):
    text = "".join(f"[{stamp(30 + i)}] Windows tool line {i} \u00e9\r\n" for i in range(25))
    write(job / "gpu-node-01" / "utf16.log", text.encode("utf-16"))

    def check(rows: list[dict]) -> None:
        assert [r["text"] for r in rows][:2] == [f"[{stamp(30)}] Windows tool line 0 \u00e9",
                                                 f"[{stamp(31)}] Windows tool line 1 \u00e9"]
        assert rows[0]["time"].startswith("2024-05-07T01:00:30") and rows[0]["node"] == "gpu-node-01"

    return 25, None, check


def mixed_encodings(job: Path):
    data = ("utf-8 \u00e9\u00e8\n".encode() + "latin-1 \u00e9\u00e8\n".encode("latin-1")
            + "\u4e2d\u6587 utf-8\n".encode() + b"cp1252 \x93quoted\x94\n")
    write(job / "gpu-node-03" / "mixed.log", data)

    def check(rows: list[dict]) -> None:
        texts = [r["text"] for r in rows]
        assert texts[0] == "utf-8 \u00e9\u00e8" and texts[1] == "latin-1 \u00e9\u00e8"
        assert texts[2] == "\u4e2d\u6587 utf-8" and texts[3].startswith("cp1252 ")

    return 4, "gpu-node-03/mixed.log:2", check


def nul_bytes(job: Path):
    write(job / "gpu-node-01" / "nul.log", b"before\nin\x00side\n\x00\x00\x00\x00\nafter\n")

    def check(rows: list[dict]) -> None:
        assert [r["text"] for r in rows] == ["before", "inside", "after"]

    return 4, "gpu-node-01/nul.log", check


def nul_filled_tail(job: Path):
    # A node that died: the file system extended the file but the data never reached it (zeros at the end).
    write(job / "gpu-node-03" / "died.log", f"[{stamp(40)}] last words before the crash\n".encode() + b"\x00" * 20000)

    def check(rows: list[dict]) -> None:
        assert rows[0]["text"].endswith("last words before the crash") and len(rows) == 1

    return 2, "gpu-node-03/died.log", check


def sparse_zeros(job: Path):
    # A preallocated log that never got its data (a sparse file of 4 GiB of zeros): skipped, not read through.
    with open(job / "gpu-node-03" / "preallocated.log", "wb") as fh:
        fh.truncate(4 << 30)
    return 0, "gpu-node-03/preallocated.log", None


def binary_core_dump(job: Path):
    write(job / "gpu-node-01" / "core.4242", b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 64)
    write(job / "gpu-node-01" / "model.bin", os.urandom(20000))
    return 0, "gpu-node-01/core.4242", None


def ten_megabyte_line(job: Path):
    big = (b"tensor([" + b"0.1234, " * (10 * 1024 * 1024 // 8) + b"])")
    write(job / "gpu-node-03" / "dump.log", b"before the dump\n" + big + b"\nafter the dump\n")

    def check(rows: list[dict]) -> None:
        assert [r["line"] for r in rows] == [1, 2, 3]
        assert rows[2]["text"] == "after the dump" and len(rows[1]["text"]) <= 64 * 1024

    return 3, "gpu-node-03/dump.log:2", check


def crlf(job: Path):
    text = "".join(f"[{stamp(50 + i)}] windows line {i}\r\n" for i in range(30)) + "\r\n"
    write(job / "gpu-node-01" / "crlf.log", text)

    def check(rows: list[dict]) -> None:
        assert len(rows) == 30 and not any("\r" in r["text"] for r in rows)

    return 31, None, check


def empty_files(job: Path):
    write(job / "gpu-node-01" / "empty.log", b"")
    write(job / "gpu-node-03" / "stderr.txt", b"")
    write(job / "gpu-node-03" / "empty.log.gz", gzip.compress(b""))
    return 0, None, None


def truncated_gzip(job: Path):
    data = gzip.compress("".join(f"[{stamp(i % 600)}] rotated line {i}\n" for i in range(20000)).encode())
    write(job / "gpu-node-01" / "train.log.1.gz", data[: len(data) // 2])
    return None, "gpu-node-01/train.log.1.gz", None  # how many lines survive depends on zlib


def corrupt_gzip(job: Path):
    data = bytearray(gzip.compress("".join(f"[{stamp(i % 600)}] rotated line {i}\n" for i in range(5000)).encode()))
    data[30:60] = b"\xff" * 30  # a bit flip in the first block: nothing decodes
    write(job / "gpu-node-03" / "train.log.2.gz", bytes(data))
    return None, "gpu-node-03/train.log.2.gz", None


def symlink_loops(job: Path):
    os.symlink(job, job / "gpu-node-01" / "loop")
    os.symlink(job / "gpu-node-01" / "f2", job / "gpu-node-01" / "f1")
    os.symlink(job / "gpu-node-01" / "f1", job / "gpu-node-01" / "f2")
    os.symlink(job / "nowhere", job / "gpu-node-03" / "dangling.log")
    return 0, "gpu-node-01/loop", None


CASES: dict[str, Case] = {
    "invalid-utf8": invalid_utf8, "latin-1": latin1_file, "utf-16-bom": utf16_bom, "mixed-encodings": mixed_encodings,
    "nul-bytes": nul_bytes, "nul-filled-tail": nul_filled_tail, "sparse-zeros": sparse_zeros, "binary-in-tree": binary_core_dump,
    "10mb-line": ten_megabyte_line, "crlf": crlf, "empty": empty_files, "truncated-gz": truncated_gzip, "corrupt-gz": corrupt_gzip,
    "symlink-loops": symlink_loops,
}


@pytest.mark.parametrize("kind", list(CASES))
def test_hostile_file_in_a_job(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job"
    base = write_job(job)
    extra, name, check = CASES[kind](job)
    expected = None if extra is None else base + extra

    run = analyze(capsys, tmp_path, job)
    assert_fault_found(run)
    assert_books(run.incident["stats"], expected)
    if name is not None:
        assert message_lines(run.err, name), run.err
        assert any(name.split(":")[0] in w for w in run.incident["stats"]["warnings"])

    code, rows, meta, err = parse(capsys, tmp_path, job)
    assert code == 0
    acc = meta["l4lite.accounting"]
    assert_books(acc, expected)
    assert acc["lines_read"] == run.incident["stats"]["lines_read"]
    assert meta["records"] == acc["records"] == len(rows)
    assert sum(r["end_line"] - r["line"] + 1 for r in rows) == acc["lines_in_records"]
    if name is not None:
        assert message_lines(err, name), err
    xid = [r for r in rows if "Xid" in r["text"]]
    assert [(r["file"], r["node"], r["source"]) for r in xid] == [(f"{BAD}/dmesg.log", BAD, "kernel")]
    if check is not None:
        file = next(f for f in {r["file"] for r in rows} - {f"{n}/{x}" for n in NODES for x in ("train.log",
                                                                                                    "dmesg.log")})
        check([r for r in rows if r["file"] == file])


def test_long_words_are_masked_in_linear_time(tmp_path: Path) -> None:
    """Masking a 64 KiB word (a tensor dump cut at the line cap) must be linear: a quadratic mask pattern took
    about 15 s per line, so these 26 lines took minutes.

    Run as a subprocess with a generous timeout, so that a regression fails instead of hanging the suite.
    """
    job = tmp_path / "job"
    write_job(job)
    words = b"".join(bytes([97 + i]) * 100_000 + b"\n" for i in range(26))
    write(job / "gpu-node-01" / "letters.log", words)
    code = ("import sys; from l4lite.cli.main import main; "
            f"sys.exit(main(['analyze', '--no-store', '--quiet', {str(job)!r}]))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240, check=False)
    assert res.returncode == 1, res.stderr[-2000:]


# ------------------------------------------------------------------------------------------ unreadable files
def test_unreadable_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    job = tmp_path / "job"
    base = write_job(job)
    secret = write(job / "gpu-node-01" / "secret.log", "hidden line\n")
    secret.chmod(0)
    if os.geteuid() == 0:  # root reads anything: make the open fail the way it fails for a normal user
        real_open = open

        def fake_open(path, *args, **kwargs):
            if str(path).endswith("secret.log"):
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr(sources, "open", fake_open, raising=False)
    run = analyze(capsys, tmp_path, job)
    assert_fault_found(run)
    assert_books(run.incident["stats"], base)
    assert run.incident["stats"]["files_skipped"] == {"unreadable": 1}
    assert message_lines(run.err, "secret.log") and "Permission denied" in run.err
    code, rows, meta, err = parse(capsys, tmp_path, job)
    assert code == 0 and message_lines(err, "secret.log")
    assert_books(meta["l4lite.accounting"], base)


def test_unreadable_directory_and_missing_path(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    job = tmp_path / "job"
    base = write_job(job)
    locked = job / "gpu-node-03" / "locked"
    write(locked / "inside.log", "x\n")
    real_scandir = os.scandir

    def fake_scandir(path):
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(sources.os, "scandir", fake_scandir)
    run = analyze(capsys, tmp_path, job, tmp_path / "no-such-dir")
    assert_fault_found(run)
    assert_books(run.incident["stats"], base)
    assert message_lines(run.err, "locked") and message_lines(run.err, "no-such-dir")


def test_nothing_readable_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "job" / "core", b"\x7fELF" + bytes(range(256)) * 8)
    assert main(["analyze", "--no-store", str(tmp_path / "job")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("l4lite: error: ") and "job" in lines[0] and "binary" in lines[0]
    assert main(["parse", str(tmp_path / "missing")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "missing" in lines[0]


# ------------------------------------------------------------------------------------------ node and time
def test_no_node_detectable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job"
    base = write_job(job)
    lines = [f"[{stamp(20 + i)}] loader worker {i} done" for i in range(30)]
    write(job / "stdout.txt", "\n".join(lines) + "\n")
    run = analyze(capsys, tmp_path, job)
    assert_fault_found(run)
    assert_books(run.incident["stats"], base + 30)
    assert message_lines(run.err, "stdout.txt"), run.err
    code, rows, meta, err = parse(capsys, tmp_path, job)
    assert {r["node"] for r in rows if r["file"] == "stdout.txt"} == {None}
    assert message_lines(err, "stdout.txt")
    assert_books(meta["l4lite.accounting"], base + 30)


def test_clock_jumping_backwards(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job"
    base = write_job(job)
    # NTP steps gpu-node-03's clock back by an hour in the middle of its log, twice.
    lines = [f"[{stamp(i * 10 - (3600 if 20 <= i < 40 else 0) - (7200 if i >= 40 else 0))}] data loader step {i}"
             for i in range(60)]
    write(job / "gpu-node-03" / "loader.log", "\n".join(lines) + "\n")
    run = analyze(capsys, tmp_path, job)
    assert_fault_found(run)
    assert_books(run.incident["stats"], base + 60)
    assert run.incident["failure_time"].startswith("2024-05-07T01:10:05")
    code, rows, meta, _ = parse(capsys, tmp_path, job)
    loader = [r for r in rows if r["file"] == "gpu-node-03/loader.log"]
    assert [r["line"] for r in loader] == list(range(1, 61))  # line order kept, whatever the clock did
    assert loader[20]["time"] < loader[19]["time"]


def test_timestamps_in_the_future(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job"
    base = write_job(job)
    lines = [f"[{stamp(20 + i)}] monitor sample {i}" for i in range(10)]
    lines += [f"[2099-01-01 00:00:{i:02d}] monitor sample with a broken clock {i}" for i in range(10)]
    write(job / "gpu-node-01" / "monitor.log", "\n".join(lines) + "\n")
    run = analyze(capsys, tmp_path, job)
    assert_fault_found(run)
    assert_books(run.incident["stats"], base + 20)
    assert run.incident["failure_time"].startswith("2024-05-07T01:10:05")
    assert run.incident["job"]["end"] < "2025", run.incident["job"]  # the broken clock does not stretch the job
    assert message_lines(run.err, "gpu-node-01/monitor.log:11"), run.err


# ------------------------------------------------------------------------------------------ scale and races
def test_hundred_thousand_tiny_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job"
    base = write_job(job)
    n = 100_000
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    for i in range(n):  # os-level calls: pathlib would double the time spent writing the files
        d = f"{job}/gpu-node-{i % 3 + 1:02d}/shards/s{i // 3000:02d}"
        if i % 3000 < 3:
            os.makedirs(d)
        fd = os.open(f"{d}/{i}.log", flags)
        os.write(fd, b"shard %d opened\n" % i)
        os.close(fd)
    run = analyze(capsys, tmp_path, job)
    assert_fault_found(run)
    stats = run.incident["stats"]
    assert stats["files"] == n + 6
    assert_books(stats, base + n)


def test_file_growing_while_analyzed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job"
    base = write_job(job)
    grow = job / "gpu-node-03" / "growing.log"
    initial = 200_000
    write(grow, "".join(f"[{stamp(i % 600)}] step {i} ok\n" for i in range(initial)))
    stop = threading.Event()
    appended = [0]

    def appender() -> None:
        with open(grow, "a", buffering=1) as fh:
            while not stop.is_set():
                fh.write(f"[{stamp(599)}] appended {appended[0]}\n")
                appended[0] += 1
                if appended[0] % 100 == 0:
                    time.sleep(0.001)

    t = threading.Thread(target=appender, daemon=True)
    t.start()
    try:
        run = analyze(capsys, tmp_path, job)
    finally:
        stop.set()
        t.join()
    assert appended[0] > 0
    assert_fault_found(run)
    stats = run.incident["stats"]
    assert_books(stats)
    assert base + initial <= stats["lines_read"] <= base + initial + appended[0]
    assert message_lines(run.err, "gpu-node-03/growing.log: grew while it was read"), run.err


# ------------------------------------------------------------------------------------------ context lines
def test_context_lines_agree_with_evidence_in_awkward_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Context lines around the evidence are numbered as ingest numbers lines: a tqdm progress bar's carriage
    returns do not start lines, a rotated log gzipped without a .gz name is decompressed."""
    job = tmp_path / "job"
    write_job(job)
    bar = "\r".join(f"{p:3d}%|{'#' * (p // 10):<10}| {p}/100 [00:0{p % 10}<00:10]" for p in range(0, 101, 10))
    train = job / BAD / "train.log"
    lines = train.read_text().splitlines()
    train.write_text("\n".join(lines[:5] + [bar] * 3 + lines[5:]) + "\n")
    kern = job / BAD / "dmesg.log"
    kern.rename(job / BAD / "dmesg.log.1")
    (job / BAD / "dmesg.log.1").write_bytes(gzip.compress((job / BAD / "dmesg.log.1").read_bytes()))
    run = analyze(capsys, tmp_path, job)
    assert run.code == 1 and run.incident["suspects"][0]["node"] == BAD
    checked = 0
    for ev in run.incident["evidence"]:
        if not ev.get("context"):
            continue
        at = {c["line"]: c["text"] for c in ev["context"]}
        first = ev["text"].split("\n")[0]
        assert at.get(ev["line"], "")[:200] == first[:200], (ev["file"], ev["line"], at)
        checked += 1
    assert checked and any(e["file"] == f"{BAD}/dmesg.log.1" and e.get("context") for e in run.incident["evidence"])


def test_parallel_engine_on_a_hostile_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--jobs 2`` reads shards in worker processes: the same books, the same messages, the same verdict."""
    job = tmp_path / "job"
    base = write_job(job)
    expected = base
    for case in (invalid_utf8, utf16_bom, nul_bytes, binary_core_dump, corrupt_gzip, empty_files, crlf):
        extra, _, _ = case(job)
        expected += extra or 0
    single = analyze(capsys, tmp_path, job)
    parallel = analyze(capsys, tmp_path, job, extra=("--jobs", "2"))
    for run in (single, parallel):
        assert_fault_found(run)
        assert_books(run.incident["stats"], expected)
        for name in ("gpu-node-01/bad-bytes.log", "gpu-node-01/core.4242", "gpu-node-03/train.log.2.gz"):
            assert message_lines(run.err, name), (name, run.err)
    keys = ("files", "lines_read", "records", "lines_in_records", "lines_skipped", "files_skipped")
    assert {k: parallel.incident["stats"][k] for k in keys} == {k: single.incident["stats"][k] for k in keys}


@pytest.mark.parametrize("tail_bytes", [b"\x00" * 512, b"garbage after the last member\n"])
def test_tail_reads_a_gzip_log_with_trailing_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   tail_bytes: bytes) -> None:
    """A node that crashed leaves its compressed log zero-padded; ``analyze`` keeps the members, so must ``tail``."""
    job = tmp_path / "job"
    (job / "gpu-node-01").mkdir(parents=True)
    lines = "".join(f"[{stamp(i)}] step {i} ok\n" for i in range(20)).encode()
    write(job / "gpu-node-01" / "train.log.1.gz", gzip.compress(lines) + tail_bytes)
    write(job / "gpu-node-01" / "train.log", f"[{stamp(30)}] still running\n")
    code = main(["tail", "--once", str(job), "--alerts", str(tmp_path / "alerts.jsonl")])
    err = capsys.readouterr().err
    assert code in (0, 1) and "Traceback" not in err
    summary = [line for line in err.splitlines() if line.startswith("l4lite tail: ")]
    assert summary and summary[-1].startswith("l4lite tail: 21 lines"), err
    run = analyze(capsys, tmp_path, job)
    assert_books(run.incident["stats"], 21)


def test_lines_of_random_tokens_keep_templates_bounded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Base64 payloads or printed text samples match no template: plain Drain opened one cluster per line in one
    leaf of its tree and compared every line with all of them (quadratic; minutes for a few thousand lines).
    A full leaf now merges into its closest cluster, so the number of templates stays bounded."""
    import base64
    import random

    rnd = random.Random(9)
    job = tmp_path / "job"
    write_job(job)
    noise = "".join(f"{base64.b64encode(rnd.randbytes(24)).decode()}\n" for _ in range(3000))
    noise += "".join(" ".join(base64.b64encode(rnd.randbytes(6)).decode() for _ in range(5)) + "\n"
                     for _ in range(3000))
    write(job / "gpu-node-03" / "samples.log", noise)
    code, rows, meta, _ = parse(capsys, tmp_path, job)
    assert code == 0 and len(rows) == meta["records"]
    assert meta["templates"] < 1000, meta["templates"]
    run = analyze(capsys, tmp_path, job)
    assert_fault_found(run)
