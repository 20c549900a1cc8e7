"""Pieces of large plain files: cut at record starts, read with the right line numbers and stream hosts, and
scanned in parallel to the same scan, records and verdict as one pass over the whole file."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import l4lite.ingest.pieces as pieces
from l4lite.api import analyze, diagnose
from l4lite.cli.main import main
from l4lite.ingest.decode import iter_line_blocks
from l4lite.ingest.files import InputFile, discover
from l4lite.ingest.reader import IngestOptions, read_file
from l4lite.options import AnalyzeOptions
from l4lite.records import Accounting
from l4lite.scale.engine import LocalEngine, PoolEngine, scan_job_parallel
from l4lite.scale.parallel import auto_jobs
from l4lite.scale.shards import SHARD_ROUNDS, job_shards
from l4lite.scan.job import load_rules, scan_job

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_engine import JOBS, SUITE, signature, verdict  # noqa: E402

MERGED = SUITE / "004-nvlink_error" / "slurm-512293.out"  # srun --label output of 8 ranks, 1,300 lines


def _whole(path: Path) -> InputFile:
    return InputFile(path=str(path), rel=path.name, size=path.stat().st_size)


def _lines(f: InputFile, cap: int = 4096) -> tuple[list[tuple[int, str]], Accounting]:
    acc = Accounting()
    out = [(first + i, line) for first, block in iter_line_blocks(f, acc, cap) for i, line in enumerate(block)]
    return out, acc


@pytest.fixture(autouse=True)
def _every_round(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fixture jobs are small: ``analyze`` would cut them into one round of shards (``ROUND_MIN_BYTES``);
    here they are cut into every round, so that the merges of a round's small shards are tested too."""
    import l4lite.scale.engine

    monkeypatch.setattr(l4lite.scale.engine, "ROUND_MIN_BYTES", 0)


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces of a few kilobytes, so that the committed fixture jobs are cut many times."""
    monkeypatch.setattr(pieces, "MIN_PIECE_BYTES", 4096)


# ------------------------------------------------------------------------------------------------ cutting
def test_cuts_fall_on_record_starts_and_the_pieces_partition_the_file() -> None:
    f = _whole(MERGED)
    data = MERGED.read_bytes()
    parts = pieces.split_file(f, 9)
    assert len(parts) == 9
    assert parts[0].start == 0 and parts[-1].stop == f.size
    for a, b in zip(parts, parts[1:], strict=False):
        assert a.stop == b.start and data[b.start - 1:b.start] == b"\n"
        assert pieces.RECORD_START.match(data, b.start), data[b.start:b.start + 80]
        assert b.first_line == data.count(b"\n", 0, b.start) + 1
    assert sum(p.size for p in parts) == f.size


def test_lines_that_continue_a_record_are_never_a_cut(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    lines = []
    for i in range(200):
        lines.append(f"[2024-05-07 01:00:{i % 60:02d},000] [INFO] step {i}")
        if i % 3 == 0:
            lines += ["Traceback (most recent call last):", '  File "train.py", line 9, in <module>',
                      "RuntimeError: boom"]
    path.write_text("\n".join(lines) + "\n")
    data = path.read_bytes()
    for p in pieces.split_file(_whole(path), 13)[1:]:
        assert data[p.start:p.start + 1] == b"["


def test_a_file_without_record_starts_stays_whole(tmp_path: Path) -> None:
    path = tmp_path / "blob.txt"
    path.write_text("no timestamp here\n" * 5000)
    f = _whole(path)
    assert pieces.split_file(f, 4) == [f]


def test_only_large_plain_files_are_cut(tmp_path: Path) -> None:
    big = InputFile(path="x", rel="x", size=100 << 20)
    assert pieces.splittable(big, 32 << 20)
    assert not pieces.splittable(InputFile(path="x", rel="x", size=100 << 20, compressed=True), 32 << 20)
    assert not pieces.splittable(InputFile(path="x", rel="x", size=100 << 20, encoding="utf-16"), 32 << 20)
    assert not pieces.splittable(InputFile(path="x", rel="x", size=50 << 20), 32 << 20)
    assert not pieces.splittable(InputFile(path="-", rel="-", size=100 << 20), 32 << 20)
    small = []
    for i in range(3):  # 1,000 bytes, all but the last line starting a record: a cut is found where one is asked for
        (tmp_path / f"f{i}").write_bytes(b"2024-04-26 10:00:00 INFO step %05d\n" % i * 27 + b"x" * 27 + b"\n")
        small.append(InputFile(path=str(tmp_path / f"f{i}"), rel=f"f{i}", size=(tmp_path / f"f{i}").stat().st_size))
    assert [f.size for f in small] == [1000] * 3
    # the first of two shards (2 : 3) ends 200 bytes into the middle file: a piece of 200 bytes, not of 300
    assert pieces.split_large(small, [2, 3], min_bytes=300) == small
    assert len(pieces.split_large(small, [2, 3], min_bytes=100)) == 4  # the middle file cut there
    gone = [InputFile(path=str(tmp_path / f"gone{i}"), rel=f"gone{i}", size=1000) for i in range(3)]
    assert pieces.split_large(gone, 8, min_bytes=100) == gone  # large enough, but gone: read whole


# ------------------------------------------------------------------------------------------------ reading
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_pieces_read_the_same_numbered_lines_as_the_whole_file(newline: str, tmp_path: Path) -> None:
    """CRLF, invalid UTF-8, NUL bytes, an over-long line, a BOM and no final newline: line by line the same."""
    path = tmp_path / "merged.log"
    rows = []
    for i in range(600):
        body = f"{i % 8}: [2024-05-07 01:{i // 60:02d}:{i % 60:02d},000] [INFO] step {i} ünïcode"
        rows.append(body.encode())
        if i % 97 == 5:
            rows.append(b"  bad \xff\xfe bytes and a NUL \x00 here")
        if i % 151 == 7:
            rows.append(b"x" * 9000)
    path.write_bytes(b"\xef\xbb\xbf" + newline.encode().join(rows))  # no newline at the end
    f = _whole(path)
    whole, acc_whole = _lines(f)
    parts = pieces.split_file(f, 7)
    assert len(parts) == 7
    read: list[tuple[int, str]] = []
    acc = Accounting()
    for p in parts:
        got, a = _lines(p)
        read += got
        acc.merge(a)
    assert read == whole
    assert acc.files == acc_whole.files == 1  # the file counts once, by its first piece
    assert whole[0][1].startswith("0: [2024")  # the BOM is dropped once, at the file's start


def test_a_later_piece_knows_each_streams_host_from_the_files_start(tmp_path: Path) -> None:
    """srun --label output: NCCL's start-up lines tie each stream to its host; later lines name only the rank."""
    path = tmp_path / "slurm-1.out"
    rows = [f"{r}: node{r // 2:02d}:{100 + r}:{100 + r} [{r % 2}] NCCL INFO Bootstrap : Using ib0" for r in range(4)]
    rows += [f"{r}: [2024-05-07 01:{i // 60:02d}:{i % 60:02d},000] [INFO] iteration {i} | lm loss: 2.5"
             for i in range(500) for r in range(4)]
    path.write_text("\n".join(rows) + "\n")
    f = _whole(path)
    options = IngestOptions()
    whole = [(r.line, r.node, r.rank, r.gpu, r.time, r.text) for r in read_file(f, options, Accounting())]
    parts = pieces.split_file(f, 5)
    assert len(parts) == 5
    split = [(r.line, r.node, r.rank, r.gpu, r.time, r.text)
             for p in parts for r in read_file(p, IngestOptions(), Accounting())]
    assert split == whole
    assert {node for _, node, *_ in split} == {"node00", "node01"}


def test_lead_of_a_far_piece_is_the_files_head_and_the_lines_before_it(tmp_path: Path) -> None:
    path = tmp_path / "big.log"
    path.write_text("".join(f"[2024-05-07 01:00:00,000] line {i:06d}\n" for i in range(20000)))
    parts = pieces.split_file(_whole(path), 4)
    lead = pieces.lead_of(parts[2], head=4096, tail=2048)
    assert lead[0].start == 0 and lead[0].stop <= 4096
    assert lead[1].stop == parts[2].start and parts[2].start - lead[1].start <= 2048
    data = path.read_bytes()
    assert data[lead[0].stop - 1:lead[0].stop] == b"\n" and data[lead[1].start - 1:lead[1].start] == b"\n"
    assert pieces.lead_of(parts[0]) == []


# ------------------------------------------------------------------------------------------------ the job
def test_every_fixture_job_scans_the_same_in_pieces(small_pieces: None) -> None:
    """Merged srun files cut into ~4 KB pieces, scanned shard by shard and merged: the one-pass scan."""
    options = AnalyzeOptions()
    rules = load_rules(options)

    class Many(LocalEngine):
        workers = 8

    cut = 0
    for job in JOBS:
        found = discover([str(job)], Accounting())
        cut += sum(p.is_piece for p in pieces.split_large(found.files, 16))
        whole = scan_job([str(job)], options, rules=rules)
        sharded = scan_job_parallel([str(job)], options, engine=Many())
        assert signature(sharded) == signature(whole), job.name
    assert cut > 50  # the merged-file jobs were really cut


def test_job_shards_shrink_round_by_round_and_join_a_shards_pieces_again(small_pieces: None, tmp_path: Path) -> None:
    """Small files first, then one large merged file: its pieces are cut finely enough for rounds of shards
    that shrink, and each shard reads one piece of it, numbered from the right line."""
    small = []
    for i in range(4):
        (tmp_path / f"a{i}.log").write_bytes(b"x\n" * 500)
        small.append(InputFile(path=str(tmp_path / f"a{i}.log"), rel=f"a{i}.log", size=1000))
    big = tmp_path / "slurm.out"
    big.write_bytes(b"".join(b"%4d: 2024-04-26 10:%02d:%02d INFO step %d\n" % (i % 8, i // 60 % 60, i % 60, i)
                             for i in range(20_000)))
    files = [*small, InputFile(path=str(big), rel="slurm.out", size=big.stat().st_size)]
    shards = job_shards(files, 2)
    assert len(shards) == 2 * len(SHARD_ROUNDS)
    sizes = [sum(f.size for f in s) for s in shards]
    assert all(a > b for a, b in zip(sizes, sizes[2:], strict=False))  # each round smaller than the last
    cut = [f for s in shards for f in s if f.is_piece]
    assert [sum(f.is_piece for f in s) for s in shards] == [1] * len(shards)
    assert cut[0].start == 0 and cut[-1].stop == files[-1].size
    assert all(a.stop == b.start for a, b in zip(cut, cut[1:], strict=False))
    data = big.read_bytes()
    assert [p.first_line for p in cut] == [data[:p.start].count(b"\n") + 1 for p in cut]
    assert job_shards(files, 1)[0][:4] == small


def test_shards_end_at_their_shares_when_other_files_come_before_a_merged_one(small_pieces: None,
                                                                               tmp_path: Path) -> None:
    """Telemetry files ahead of the merged trainer file: the merged file is cut where each shard's share of the
    job ends, so every shard is within a line of its share (equal pieces of the merged file, shifted by the
    files before it, gave one shard a piece too many)."""
    small = []
    for i in range(3):
        gpu = tmp_path / f"gpu{i}.log"
        gpu.write_bytes(b"2024/04/26 10:00:00.000, 0, 35, Not Active\n" * 700)
        small.append(InputFile(path=str(gpu), rel=gpu.name, size=gpu.stat().st_size))
    big = tmp_path / "slurm.out"
    big.write_bytes(b"".join(b"%4d: 2024-04-26 10:%02d:%02d INFO step %d\n" % (i % 8, i // 60 % 60, i % 60, i)
                             for i in range(20_000)))
    files = [*small, InputFile(path=str(big), rel="slurm.out", size=big.stat().st_size)]
    total = sum(f.size for f in files)
    weights = [w for w in SHARD_ROUNDS for _ in range(2)]
    shares = [total * w / sum(weights) for w in weights]
    sizes = [sum(f.size for f in s) for s in job_shards(files, 2)]
    assert sum(sizes) == total
    assert all(abs(size - share) < 60 for size, share in zip(sizes, shares, strict=True)), (sizes, shares)


def test_pool_verdict_on_a_merged_file_in_pieces(small_pieces: None) -> None:
    name = "002-xid79_fallen_off_bus"  # one merged srun file: without pieces, a single shard
    ref = analyze([str(SUITE / name)], AnalyzeOptions())
    with PoolEngine(2) as engine:
        options = AnalyzeOptions()
        scan = scan_job_parallel([str(SUITE / name)], options, engine=engine)
        inc = diagnose(scan, options)
    assert scan.info["shards"] == 2 * len(SHARD_ROUNDS)  # a round of shards per worker, cut from one file
    assert verdict(inc) == verdict(ref)
    assert inc.stats["lines_read"] == ref.stats["lines_read"] and inc.stats["files"] == ref.stats["files"]


def test_parse_in_pieces_writes_the_same_records(small_pieces: None, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    job = SUITE / "013-loss_divergence"
    one, two = tmp_path / "one.parquet", tmp_path / "two.parquet"
    assert main(["parse", str(job), "-o", str(one), "--quiet", "--jobs", "1"]) == 0
    assert main(["parse", str(job), "-o", str(two), "--quiet", "--jobs", "2"]) == 0
    a, b = pq.read_table(one), pq.read_table(two)
    assert a.num_rows == b.num_rows > 1000
    assert a.equals(b)


def test_auto_jobs_counts_the_pieces_of_one_large_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(pieces, "MIN_PIECE_BYTES", 1000)
    path = tmp_path / "slurm-7.out"
    path.write_text("0: [2024-05-07 01:00:00,000] hello\n" * 300)  # ~10 KB: ten minimum pieces
    assert auto_jobs([str(path)], threshold=1000, cores=2) == 2
    gz = tmp_path / "slurm-8.out.gz"
    gz.write_bytes(path.read_bytes())
    assert auto_jobs([str(gz)], threshold=1000, cores=2) == 1  # a gzip stream cannot be cut


@pytest.mark.parametrize("chunk", [7, 64, 8 << 20])
def test_count_lines_counts_the_newlines_of_a_byte_range(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         chunk: int) -> None:
    import random

    monkeypatch.setattr(pieces, "_COUNT_BYTES", chunk)
    rnd = random.Random(3)
    data = b"".join(rnd.choice([b"\n", b"ab", b"\xc3\xa9\n", b"x" * 9, b"\r\n"]) for _ in range(5000))
    path = tmp_path / "f.log"
    path.write_bytes(data)
    with path.open("rb") as fh:
        for start, stop in ((0, len(data)), (1, 2), (5, 5), (13, 4001), (len(data) - 3, len(data)),
                            (100, len(data) + 50)):
            assert pieces.count_lines(fh, start, stop) == data[start:stop].count(b"\n")


@pytest.mark.parametrize(("span", "threads"), [(10, 3), (97, 2), (1 << 20, 1)])
def test_count_lines_before_numbers_each_offset_from_the_files_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    span: int, threads: int) -> None:
    import random

    monkeypatch.setattr(pieces, "_COUNT_BYTES", 7)
    monkeypatch.setattr(pieces, "_COUNT_SPAN", span)
    rnd = random.Random(5)
    data = b"".join(rnd.choice([b"\n", b"ab", b"\xc3\xa9\n", b"x" * 9]) for _ in range(3000))
    path = tmp_path / "slurm-9.out"
    path.write_bytes(data)
    offsets = [1, 2, 2, 333, 334, 4000, len(data) - 1, len(data)]
    assert pieces.count_lines_before(str(path), offsets, threads) == [data[:o].count(b"\n") for o in offsets]
    assert pieces.count_lines_before(str(path), [], threads) == []
    assert pieces.count_lines_before(str(path), [0], threads) == [0]
