"""Discovery and reading of broken and hostile input: every problem is one warning naming the file."""

from __future__ import annotations

import codecs
import gzip
import io
import os
import sys
import tarfile
from pathlib import Path

import pytest

from l4lite.errors import InputError
from l4lite.ingest import decode
from l4lite.ingest import files as sources
from l4lite.ingest.decode import open_lines
from l4lite.ingest.files import InputFile, discover, sniff
from l4lite.records import Accounting

ELF = b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 200 + bytes(range(256)) * 4


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    return path


def read_all(path: Path, acc: Accounting | None = None, **kw) -> list[tuple[int, str]]:
    acc = acc if acc is not None else Accounting()
    job = discover([str(path)], acc)
    assert len(job.files) == 1
    return list(open_lines(job.files[0], acc, **kw))


# ------------------------------------------------------------------------------------------------ discovery


def test_tree_sorted_relative_and_binary_skipped(tmp_path: Path) -> None:
    write(tmp_path / "node2" / "train.log", "b\n")
    write(tmp_path / "node1" / "train.out", "a\n")
    write(tmp_path / "node1" / "no_extension", "text without extension\n")
    write(tmp_path / "node1" / "core.1234", ELF)
    write(tmp_path / "node1" / "weights.bin", os.urandom(4096))
    acc = Accounting()
    job = discover([str(tmp_path)], acc)
    assert job.root == str(tmp_path)
    assert [f.rel for f in job.files] == ["node1/no_extension", "node1/train.out", "node2/train.log"]
    assert acc.files_skipped["binary"] == 2
    assert any("core.1234" in w and "binary" in w for w in acc.warnings)


def test_several_files_share_a_root(tmp_path: Path) -> None:
    a = write(tmp_path / "n1" / "a.log", "x\n")
    b = write(tmp_path / "n2" / "b.log", "y\n")
    job = discover([str(b), str(a)], Accounting())
    assert job.root == str(tmp_path)
    assert [f.rel for f in job.files] == ["n1/a.log", "n2/b.log"]


def test_same_file_twice_is_read_once(tmp_path: Path) -> None:
    a = write(tmp_path / "a.log", "x\n")
    os.symlink(a, tmp_path / "link.log")
    job = discover([str(tmp_path), str(a)], Accounting())
    assert len(job.files) == 1


def test_missing_path_warns_when_something_else_is_readable(tmp_path: Path) -> None:
    a = write(tmp_path / "a.log", "x\n")
    acc = Accounting()
    job = discover([str(a), str(tmp_path / "nope")], acc)
    assert len(job.files) == 1
    assert any("nope" in w for w in acc.warnings)


def test_only_missing_paths_raise(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="nope"):
        discover([str(tmp_path / "nope")], Accounting())
    with pytest.raises(InputError):
        discover([], Accounting())


def test_nothing_readable_raises_with_reasons(tmp_path: Path) -> None:
    write(tmp_path / "core", ELF)
    with pytest.raises(InputError, match="binary=1"):
        discover([str(tmp_path)], Accounting())


def test_symlink_loops(tmp_path: Path) -> None:
    write(tmp_path / "d" / "a.log", "x\n")
    os.symlink(tmp_path, tmp_path / "d" / "loop")  # a directory loop
    os.symlink(tmp_path / "f2", tmp_path / "f1")  # a file loop
    os.symlink(tmp_path / "f1", tmp_path / "f2")
    os.symlink(tmp_path / "missing", tmp_path / "dangling")
    acc = Accounting()
    job = discover([str(tmp_path)], acc)
    assert [f.rel for f in job.files] == ["d/a.log"]
    assert acc.files_skipped["symlink_loop"] == 3  # the directory loop and both file links
    assert acc.files_skipped["broken_symlink"] == 1
    assert all(("loop" in w or "f1" in w or "f2" in w or "dangling" in w) for w in acc.warnings)


def test_unreadable_file_is_skipped_with_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = write(tmp_path / "good.log", "fine\n")
    bad = write(tmp_path / "secret.log", "hidden\n")
    real_open = open

    def fake_open(path, *args, **kwargs):
        if str(path).endswith("secret.log"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(sources, "open", fake_open, raising=False)
    monkeypatch.setattr(decode, "open", fake_open, raising=False)
    acc = Accounting()
    job = discover([str(tmp_path)], acc)
    assert [f.rel for f in job.files] == ["good.log"]
    assert acc.files_skipped["unreadable"] == 1
    assert any("secret.log" in w and "Permission denied" in w for w in acc.warnings)
    # unreadable between discovery and reading: still one warning, no exception
    f = InputFile(path=str(bad), rel="secret.log")
    assert list(open_lines(f, acc)) == []
    assert acc.files_skipped["unreadable"] == 2
    assert list(open_lines(job.files[0], acc)) == [(1, "fine")]
    assert good.exists()


def test_simulator_answer_key_is_never_read(tmp_path: Path) -> None:
    write(tmp_path / "ground_truth.json", '{"faulty_nodes": ["node3"]}\n')
    write(tmp_path / "node3" / "rank0.log", "x\n")
    acc = Accounting()
    job = discover([str(tmp_path)], acc)
    assert [f.rel for f in job.files] == ["node3/rank0.log"]
    assert acc.files_skipped["excluded"] == 1


def test_tar_archive_inside_a_folder_is_skipped_with_advice(tmp_path: Path) -> None:
    """Named on the command line an archive is read (``tests/test_unpack.py``); found while walking a folder it
    may be a checkpoint or a dataset shard, and is skipped with what to do."""
    inner = write(tmp_path / "src" / "a.log", "x\n")
    (tmp_path / "job").mkdir()
    with tarfile.open(tmp_path / "job" / "job.tar.gz", "w:gz") as tf:
        tf.add(inner, arcname="a.log")
    write(tmp_path / "job" / "other.log", "y\n")
    acc = Accounting()
    job = discover([str(tmp_path / "job")], acc)
    assert [f.rel for f in job.files] == ["other.log"]
    assert acc.files_skipped["archive"] == 1
    assert any("command line" in w for w in acc.warnings)


@pytest.mark.parametrize(
    ("head", "text"),
    [(b"", True), (b"plain text\n", True), (codecs.BOM_UTF16_LE + "hi".encode("utf-16-le"), True),
     ("ascii as utf-16\n".encode("utf-16-le"), True), ("caf\u00e9 latin\n".encode("latin-1"), True),
     ("\u4e2d\u6587\u65e5\u5fd7\n".encode() * 20, True), (b"\x1b[31mred\x1b[0m\n", True),
     (ELF, False), (bytes(range(256)) * 8, False), (b"PK\x03\x04" + b"x" * 100, False)],
)
def test_sniff(head: bytes, text: bool) -> None:
    assert (sniff(head)[0] is not None) == text


# ------------------------------------------------------------------------------------------------ reading


def test_crlf_nul_and_no_final_newline(tmp_path: Path) -> None:
    acc = Accounting()
    lines = read_all(write(tmp_path / "a.log", b"one\r\ntw\x00o\r\n\r\nlast"), acc)
    assert lines == [(1, "one"), (2, "two"), (3, ""), (4, "last")]
    assert any("NUL" in w and "a.log" in w for w in acc.warnings)


def test_invalid_utf8_is_kept_as_latin1_and_counted(tmp_path: Path) -> None:
    acc = Accounting()
    lines = read_all(write(tmp_path / "a.log", b"ok\nbad \xff\xfe byte\ncaf\xc3\xa9\n"), acc)
    assert lines == [(1, "ok"), (2, "bad \u00ff\u00fe byte"), (3, "caf\u00e9")]
    assert any("a.log:2" in w and "UTF-8" in w for w in acc.warnings)


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16(tmp_path: Path, codec: str) -> None:
    data = "first line\r\nsecond \u00e9\n".encode(codec)
    if codec != "utf-16":  # no BOM: recognised by its NUL pattern
        assert not data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    assert read_all(write(tmp_path / "u.log", data)) == [(1, "first line"), (2, "second \u00e9")]


@pytest.mark.parametrize("wrap", [bytes, gzip.compress])
def test_stray_utf16_bom_bytes_before_utf8_text_do_not_turn_the_file_to_utf16(tmp_path: Path, wrap) -> None:
    """A log whose first two bytes happen to be FF FE (noise before the first line) is still UTF-8 text: read as
    UTF-16 its traceback would vanish into nonsense characters."""
    acc = Accounting()
    name = "a.log.gz" if wrap is gzip.compress else "a.log"
    data = b"\xff\xfe noise\nTraceback (most recent call last):\nRuntimeError: CUDA error\n"
    lines = read_all(write(tmp_path / name, wrap(data)), acc)
    assert lines == [(1, "\u00ff\u00fe noise"), (2, "Traceback (most recent call last):"), (3, "RuntimeError: CUDA error")]
    assert any(f"{name}:1" in w and "UTF-8" in w for w in acc.warnings)


def test_utf8_bom_removed(tmp_path: Path) -> None:
    assert read_all(write(tmp_path / "a.log", codecs.BOM_UTF8 + b"x\ny\n")) == [(1, "x"), (2, "y")]


def test_empty_file(tmp_path: Path) -> None:
    acc = Accounting()
    assert read_all(write(tmp_path / "empty.log", b""), acc) == []
    assert acc.files == 1 and not acc.warnings


def test_ten_megabyte_line_is_truncated_in_bounded_memory(tmp_path: Path) -> None:
    big = b"A" * (10 * 1024 * 1024)
    acc = Accounting()
    lines = read_all(write(tmp_path / "big.log", b"before\n" + big + b"\nafter\n"), acc, max_line_chars=1000)
    assert [n for n, _ in lines] == [1, 2, 3]
    assert lines[1][1] == "A" * 1000 and lines[2] == (3, "after")
    assert any("big.log:2" in w and "truncated" in w for w in acc.warnings)
    # the same without a newline at all
    acc = Accounting()
    lines = read_all(write(tmp_path / "big2.log", big), acc, max_line_chars=1000)
    assert lines == [(1, "A" * 1000)]


def test_long_lines_inside_a_block(tmp_path: Path) -> None:
    data = b"".join(b"%d " % i + b"x" * 3000 + b"\n" for i in range(5))
    lines = read_all(write(tmp_path / "a.log", data), max_line_chars=100)
    assert len(lines) == 5 and all(len(t) == 100 for _, t in lines)


def test_gzip_whatever_the_name_and_multi_member(tmp_path: Path) -> None:
    p = tmp_path / "rotated.1"
    p.write_bytes(gzip.compress(b"a\nb\n") + gzip.compress(b"c\n"))
    assert read_all(p) == [(1, "a"), (2, "b"), (3, "c")]


def test_truncated_gzip_keeps_what_decoded(tmp_path: Path) -> None:
    data = gzip.compress(b"".join(b"line %d %s\n" % (i, os.urandom(8).hex().encode()) for i in range(20000)))
    p = write(tmp_path / "dead-node.log.gz", data[: len(data) // 2])
    acc = Accounting()
    lines = read_all(p, acc)
    assert 1000 < len(lines) < 20000
    assert [n for n, _ in lines] == list(range(1, len(lines) + 1))
    assert all(t.startswith("line ") for _, t in lines[:-1])
    assert any("dead-node.log.gz" in w and "truncated gzip" in w for w in acc.warnings)


def test_corrupt_gzip(tmp_path: Path) -> None:
    data = bytearray(gzip.compress(b"hello\n" * 1000))
    data[30:60] = b"\xff" * 30
    acc = Accounting()
    read_all(write(tmp_path / "c.gz", bytes(data)), acc)
    assert any("c.gz" in w and "gzip" in w for w in acc.warnings)


def _fake_stdin(data: bytes) -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", _fake_stdin(b"x\r\ny\n"))
    acc = Accounting()
    job = discover(["-"], acc)
    assert job.root == "-" and job.files[0].rel == "-"
    assert list(open_lines(job.files[0], acc)) == [(1, "x"), (2, "y")]


def test_stdin_gzip_and_text_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", _fake_stdin(gzip.compress(b"zipped\n")))
    assert list(open_lines(InputFile(path="-", rel="-"), Accounting())) == [(1, "zipped")]
    monkeypatch.setattr(sys, "stdin", io.StringIO("text\nonly"))
    assert list(open_lines(InputFile(path="-", rel="-"), Accounting())) == [(1, "text"), (2, "only")]


def test_file_growing_while_read_is_a_snapshot(tmp_path: Path) -> None:
    p = write(tmp_path / "grow.log", "".join(f"line {i}\n" for i in range(5)))
    acc = Accounting()
    job = discover([str(p)], acc)
    it = open_lines(job.files[0], acc)
    first = next(it)
    with open(p, "a") as fh:
        fh.write("appended later\n" * 3)
    rest = list(it)
    assert [first, *rest] == [(i + 1, f"line {i}") for i in range(5)]


def test_file_truncated_while_read(tmp_path: Path) -> None:
    p = write(tmp_path / "shrink.log", "".join(f"line {i}\n" for i in range(100000)))
    acc = Accounting()
    job = discover([str(p)], acc)
    it = open_lines(job.files[0], acc)
    next(it)
    with open(p, "r+") as fh:
        fh.truncate(10)
    rest = list(it)  # no exception; what was already buffered is still returned, in order
    assert [n for n, _ in rest] == list(range(2, len(rest) + 2))
    assert all(t.startswith("line ") for _, t in rest[:-1])
