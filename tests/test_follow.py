"""File following: growth, late files, rotation (rename, copy-truncate), truncation, deletion, gzip, restarts."""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

from l4lite.live.follow import MAX_LINE_BYTES, Follower, pattern_root


class Clock:
    """A hand-driven monotonic clock, so that idle timeouts need no sleeping."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def make(patterns, **kw) -> tuple[Follower, Clock, list[str]]:
    clock = Clock()
    warnings: list[str] = []
    kw.setdefault("partial_after", 3600.0)
    f = Follower([str(p) for p in patterns], clock=clock, warn=warnings.append, **kw)
    return f, clock, warnings


def drain(f: Follower, *, finish: bool = False) -> list[tuple[str, int, str]]:
    """Poll once; commit everything read (as a consumer without multi-line records would)."""
    out = []
    for c in f.poll(finish=finish):
        for i, text in enumerate(c.lines):
            out.append((c.stream.name, c.first_line + i, text))
        c.stream.commit(c.stream.line, c.stream.offset)
    return out


def write(path: Path, lines: list[str], mode: str = "a") -> None:
    with open(path, mode, encoding="utf-8") as fh:
        fh.writelines(line + "\n" for line in lines)


def lines(prefix: str, a: int, b: int) -> list[str]:
    return [f"{prefix} line {i:06d} some padding text to make the line longer than a few bytes" for i in range(a, b)]


def texts(got) -> list[str]:
    return [t for _, _, t in got]


def test_growth_and_partial_lines(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    write(log, lines("a", 0, 3))
    f, _, _ = make([log])
    got = drain(f)
    assert [(n, i) for n, i, _ in got] == [("a.log", 1), ("a.log", 2), ("a.log", 3)]
    with open(log, "a") as fh:
        fh.write("half a li")
    assert drain(f) == []
    with open(log, "a") as fh:
        fh.write("ne\nnext\n")
    assert drain(f) == [("a.log", 4, "half a line"), ("a.log", 5, "next")]
    assert drain(f) == []


def test_unterminated_last_line_taken_on_finish(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("one\ntwo")
    f, _, _ = make([log])
    assert texts(drain(f)) == ["one"]
    assert texts(drain(f, finish=True)) == ["two"]
    assert f.streams["s1"].line == 2


def test_crlf_and_invalid_utf8(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(b"one\r\nt\xffwo\n")
    f, _, _ = make([log])
    assert texts(drain(f)) == ["one", "t\ufffdwo"]


def test_late_files_by_glob(tmp_path: Path) -> None:
    (tmp_path / "n1").mkdir()
    write(tmp_path / "n1" / "rank0.log", lines("r0", 0, 2))
    f, _, _ = make([tmp_path / "n*" / "*.log"])
    assert len(drain(f)) == 2
    (tmp_path / "n2").mkdir()
    write(tmp_path / "n2" / "rank1.log", lines("r1", 0, 5))
    got = drain(f)
    assert {n for n, _, _ in got} == {os.path.join("n2", "rank1.log")}
    assert len(got) == 5


def test_directory_is_walked(tmp_path: Path) -> None:
    (tmp_path / "job" / "node1").mkdir(parents=True)
    write(tmp_path / "job" / "node1" / "x.txt", ["a", "b"])
    f, _, _ = make([tmp_path / "job"])
    assert [(n, i) for n, i, _ in drain(f)] == [(os.path.join("node1", "x.txt"), 1), (os.path.join("node1", "x.txt"), 2)]


def test_rename_rotation_reads_old_inode_to_end(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    write(log, lines("old", 0, 10))
    f, clock, _ = make([log], orphan_idle=5.0)
    assert len(drain(f)) == 10
    # The writer still has the old file open: lines land in it after the rename.
    fh = open(log, "a", encoding="utf-8")  # noqa: SIM115 - stays open across the rename
    os.rename(log, tmp_path / "train.log.1")
    fh.write("\n".join(lines("old", 10, 15)) + "\n")
    fh.flush()
    write(log, lines("new", 0, 4))
    got = drain(f)
    assert sorted(texts(got)) == sorted(lines("old", 10, 15) + lines("new", 0, 4))
    # Old inode keeps its line numbers, the new file starts at 1.
    assert [i for _, i, t in got if t.startswith("old")] == list(range(11, 16))
    assert [i for _, i, t in got if t.startswith("new")] == [1, 2, 3, 4]
    fh.write(lines("old", 15, 16)[0] + "\n")
    fh.close()
    assert texts(drain(f)) == lines("old", 15, 16)
    clock.t += 10
    assert drain(f) == []
    old = [s for s in f.streams.values() if s.status == "ended"]
    assert len(old) == 1 and old[0].line == 16
    assert f.lines_committed == 16 + 4


def test_rename_rotation_within_glob_keeps_following(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    write(log, lines("old", 0, 3))
    f, _, _ = make([tmp_path / "train.log*"])
    drain(f)
    os.rename(log, tmp_path / "train.log.1")
    write(tmp_path / "train.log.1", lines("old", 3, 5))
    write(log, lines("new", 0, 2))
    got = drain(f)
    assert sorted(texts(got)) == sorted(lines("old", 3, 5) + lines("new", 0, 2))
    assert {n for n, _, t in got if t.startswith("old")} == {"train.log.1"}


def test_copy_truncate_with_copy_followed(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    write(log, lines("a", 0, 20))
    f, _, warnings = make([tmp_path / "train.log*"])
    assert len(drain(f)) == 20
    write(log, lines("a", 20, 30))  # written after our last read, before the rotation
    shutil.copyfile(log, tmp_path / "train.log.1")
    os.truncate(log, 0)
    write(log, lines("b", 0, 3))
    got = drain(f)
    assert sorted(texts(got)) == sorted(lines("a", 20, 30) + lines("b", 0, 3))
    assert [(n, i) for n, i, t in got if t.startswith("a")] == [("train.log.1", i) for i in range(21, 31)]
    assert [i for _, i, t in got if t.startswith("b")] == [1, 2, 3]
    assert not warnings
    assert drain(f) == []
    assert f.lines_committed == 33


def test_copy_truncate_copy_appears_before_truncation(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    write(log, lines("a", 0, 20))
    f, _, _ = make([tmp_path / "train.log*"])
    drain(f)
    write(log, lines("a", 20, 25))
    shutil.copyfile(log, tmp_path / "train.log.1")
    got = drain(f)  # the copy is only a shadow while the original is intact
    assert texts(got) == lines("a", 20, 25)
    write(log, lines("a", 25, 27))
    shutil.copyfile(log, tmp_path / "train.log.1")  # logrotate copies again (same inode), then truncates
    os.truncate(log, 0)
    write(log, lines("b", 0, 2))
    got = drain(f)
    assert sorted(texts(got)) == sorted(lines("a", 25, 27) + lines("b", 0, 2))
    assert drain(f) == []


def test_truncation_without_copy_starts_again(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    write(log, lines("a", 0, 10))
    f, _, warnings = make([log])
    drain(f)
    with open(log, "w") as fh:
        fh.write("fresh 1\nfresh 2\n")
    got = drain(f)
    assert got == [("a.log", 1, "fresh 1"), ("a.log", 2, "fresh 2")]
    assert any("truncated" in w for w in warnings)


def test_truncation_then_regrowth_past_old_offset(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    write(log, lines("a", 0, 3))
    f, _, _ = make([log])
    drain(f)
    write(log, lines("b", 0, 8), mode="w")  # larger than before: only the first bytes reveal it
    assert texts(drain(f)) == lines("b", 0, 8)


def test_deletion_reads_rest_then_ends(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    write(log, lines("a", 0, 2))
    f, clock, _ = make([log], orphan_idle=5.0)
    drain(f)
    write(log, lines("a", 2, 4))
    os.unlink(log)
    assert texts(drain(f)) == lines("a", 2, 4)
    clock.t += 2
    drain(f)
    assert [s.status for s in f.streams.values()] == ["ended"]
    assert not f._open


def test_gzip_rotated_copy_not_read_twice(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    write(log, lines("a", 0, 50))
    f, clock, _ = make([tmp_path / "train.log*"])
    assert len(drain(f)) == 50
    # logrotate: rename, compress the renamed file, remove it; meanwhile the writer finished 2 more lines.
    write(log, lines("a", 50, 52))
    os.rename(log, tmp_path / "train.log.1")
    with open(tmp_path / "train.log.1", "rb") as src, gzip.open(tmp_path / "train.log.1.gz", "wb") as dst:
        dst.write(src.read())
    got = drain(f)
    assert texts(got) == lines("a", 50, 52)
    os.unlink(tmp_path / "train.log.1")
    clock.t += 10
    assert drain(f) == []
    assert drain(f) == []
    assert f.lines_committed == 52


def test_gzip_holds_lines_missed_before_deletion(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    write(log, lines("a", 0, 30))
    f, clock, _ = make([tmp_path / "train.log*"])
    drain(f)
    f.close()  # as if the handle had been evicted (too many open files): a deleted file is gone
    write(log, lines("a", 30, 35))
    with open(log, "rb") as src, gzip.open(tmp_path / "train.log.1.gz", "wb") as dst:
        dst.write(src.read())
    os.unlink(log)
    got = drain(f)
    assert texts(got) == lines("a", 30, 35)
    assert [i for _, i, _ in got] == list(range(31, 36))
    assert drain(f) == []


def test_unrelated_gzip_read_once(tmp_path: Path) -> None:
    with gzip.open(tmp_path / "old.log.2.gz", "wt") as fh:
        fh.write("\n".join(lines("z", 0, 7)) + "\n")
    f, _, _ = make([tmp_path / "*.gz"])
    got = drain(f)
    assert texts(got) == lines("z", 0, 7)
    assert drain(f) == []
    state = f.to_state()
    g, _, _ = make([tmp_path / "*.gz"])
    g.load_state(state)
    assert drain(g) == []


def test_copy_with_same_start_but_other_content_is_read_fully(tmp_path: Path) -> None:
    banner = lines("banner", 0, 30)
    write(tmp_path / "run1.log", banner + ["run1 tail"])
    f, _, _ = make([tmp_path / "*.log"])
    drain(f)
    os.unlink(tmp_path / "run1.log")
    drain(f, finish=True)
    write(tmp_path / "run2.log", banner + ["run2 tail", "more"])
    got = drain(f)
    assert texts(got) == banner + ["run2 tail", "more"]


def test_binary_file_skipped(tmp_path: Path) -> None:
    (tmp_path / "core").write_bytes(b"\x7fELF\x00\x00\x01" * 100)
    write(tmp_path / "a.log", ["x"])
    f, _, warnings = make([tmp_path])
    assert texts(drain(f)) == ["x"]
    assert any("binary" in w for w in warnings)


def test_overlong_line_cut_and_counted_once(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(b"x" * (MAX_LINE_BYTES + 5000) + b"\nafter\n")
    f, _, _ = make([log])
    got = drain(f) + drain(f)
    assert [i for _, i, _ in got] == [1, 2]
    assert got[1][2] == "after"


def test_restart_resumes_from_committed_offsets(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    write(log, lines("a", 0, 10))
    f, _, _ = make([log])
    chunks = f.poll()
    c = chunks[0]
    c.stream.commit(6, c.offset_of(7))  # only the first 6 lines durably processed
    state = f.to_state()
    f.close()
    write(log, lines("a", 10, 12))
    g, _, _ = make([log])
    g.load_state(state)
    got = drain(g)
    assert [i for _, i, _ in got] == list(range(7, 13))
    assert texts(got) == lines("a", 6, 12)


def test_restart_after_rename_rotation_while_down(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    write(log, lines("a", 0, 5))
    f, _, _ = make([log])
    drain(f)
    state = f.to_state()
    f.close()
    write(log, lines("a", 5, 8))
    os.rename(log, tmp_path / "train.log.1")  # outside the pattern; found again by inode in its folder
    write(log, lines("b", 0, 2))
    g, clock, _ = make([log])
    g.load_state(state)
    got = drain(g)
    assert sorted(texts(got)) == sorted(lines("a", 5, 8) + lines("b", 0, 2))


def test_restart_after_truncation_while_down(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    write(log, lines("a", 0, 5))
    f, _, _ = make([log])
    drain(f)
    state = f.to_state()
    f.close()
    write(log, lines("b", 0, 9), mode="w")
    g, _, _ = make([log])
    g.load_state(state)
    assert texts(drain(g)) == lines("b", 0, 9)


def test_excluded_paths_are_not_followed(tmp_path: Path) -> None:
    write(tmp_path / "a.log", ["x"])
    write(tmp_path / "alerts.jsonl", ["{}"])
    (tmp_path / "state").mkdir()
    write(tmp_path / "state" / "state.json", ["{}"])
    f, _, _ = make([tmp_path], exclude=[tmp_path / "alerts.jsonl", tmp_path / "state"])
    assert {n for n, _, _ in drain(f)} == {"a.log"}


def test_chunk_offsets(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("aa\nbbbb\nc\n")
    f, _, _ = make([log])
    c = f.poll()[0]
    assert [c.offset_of(i) for i in (1, 2, 3, 4)] == [0, 3, 8, 10]


def test_pattern_root(tmp_path: Path) -> None:
    (tmp_path / "job" / "n1").mkdir(parents=True)
    assert pattern_root([str(tmp_path / "job" / "n*" / "*.log")]) == str(tmp_path / "job")
    assert pattern_root([str(tmp_path / "job")]) == str(tmp_path / "job")


def test_identical_files_in_other_folders_are_not_copies(tmp_path: Path) -> None:
    for node in ("node000", "node001"):
        (tmp_path / node).mkdir()
        write(tmp_path / node / "train.log", lines("same", 0, 40))
    (tmp_path / "node000" / "train.log.1").write_text("")  # a rotated name, but other content
    f, _, _ = make([tmp_path])
    got = drain(f)
    assert len(got) == 80
    write(tmp_path / "node001" / "train.log", ["x"])
    assert texts(drain(f)) == ["x"]


def test_rotation_names() -> None:
    from l4lite.live.follow import rotated_from

    assert rotated_from("train.log.1", "train.log")
    assert rotated_from("train.log.1.gz", "train.log")
    assert rotated_from("train.log.2.gz", "train.log.1")
    assert rotated_from("train.log-20250101", "train.log")
    assert rotated_from("train-20250101.log.gz", "train.log")
    assert not rotated_from("train.log", "train.log")
    assert not rotated_from("rank2.log", "rank1.log")
    assert not rotated_from("node-002", "node-001")


def test_ended_streams_are_retired_without_losing_their_line_count(tmp_path: Path, monkeypatch) -> None:
    import l4lite.live.follow as follow

    monkeypatch.setattr(follow, "MAX_ENDED_KEPT", 2)
    f, clock, _ = make([tmp_path / "*.log"], orphan_idle=1.0)
    for k in range(5):
        write(tmp_path / f"run{k}.log", lines(f"r{k}", 0, 3))
        drain(f)
        os.unlink(tmp_path / f"run{k}.log")
        clock.t += 2
        drain(f)
        clock.t += 2
        drain(f)
    state = f.to_state()
    assert len(state["streams"]) == 2 and state["retired_lines"] == 9
    assert f.lines_committed == 15
    g, _, _ = make([tmp_path / "*.log"])
    g.load_state(state)
    assert g.lines_committed == 15


def test_terminal_escapes_are_removed_as_lines_are_read(tmp_path: Path) -> None:
    """A colour-coded console reads as the batch reader reads it: prefixes and rules see the text a terminal showed."""
    log = tmp_path / "driver.log"
    write(log, ["\x1b[36m(RayTrainWorker pid=94, ip=10.0.0.2)\x1b[0m RuntimeError: boom", "plain line"])
    f, _, _ = make([log])
    assert texts(drain(f)) == ["(RayTrainWorker pid=94, ip=10.0.0.2) RuntimeError: boom", "plain line"]
