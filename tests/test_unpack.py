"""A job archive named on the command line is read as the tree it holds, members' write times kept; unsafe members
are refused and counted; an archive found while walking a folder stays skipped."""

from __future__ import annotations

import io
import json
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from l4lite.cli.main import main
from l4lite.ingest.files import discover
from l4lite.ingest.unpack import archive_kind
from l4lite.records import Accounting

JOB = Path(__file__).resolve().parent.parent / "fixtures" / "jobs" / "ib-link-down"


def verdict(capsys: pytest.CaptureFixture[str], tmp: Path, given: Path) -> dict:
    out = tmp / f"{given.name}.json"
    code = main(["analyze", str(given), "--json", str(out), "--no-store", "-q"])
    capsys.readouterr()
    assert code == 1
    inc = json.loads(out.read_text())
    return {"node": inc["suspects"][0]["node"], "category": inc["category"], "phase": inc["phase"],
            "iteration": inc.get("iteration"), "evidence": [e["file"].removeprefix("job/") for e in inc["evidence"]]}


@pytest.mark.parametrize("mode", ["w:gz", "w:xz", "w", "zip"])
def test_an_archived_job_gets_the_verdict_of_its_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                        mode: str) -> None:
    archive = tmp_path / ("job.zip" if mode == "zip" else "job.tar" + {"w:gz": ".gz", "w:xz": ".xz", "w": ""}[mode])
    if mode == "zip":
        with zipfile.ZipFile(archive, "w") as zf:
            for f in sorted(JOB.rglob("*")):
                zf.write(f, Path("job") / f.relative_to(JOB))
    else:
        with tarfile.open(archive, mode) as tf:
            tf.add(JOB, arcname="job")
    (tmp_path / "tree").mkdir()
    folder = tmp_path / "tree" / "job"
    os.symlink(JOB, folder)
    assert verdict(capsys, tmp_path, archive) == verdict(capsys, tmp_path, folder)


def member(tf: tarfile.TarFile, name: str, data: bytes = b"x\n", kind: bytes = tarfile.REGTYPE,
           mtime: int = 1_700_000_000, link: str = "") -> None:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.mtime, info.linkname = kind, len(data) if kind == tarfile.REGTYPE else 0, mtime, link
    tf.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


def test_unsafe_members_are_refused_and_counted_and_write_times_kept(tmp_path: Path) -> None:
    archive = tmp_path / "job.tgz"
    with tarfile.open(archive, "w:gz") as tf:
        member(tf, "job/node01/rank0.log", b"2026-12-05 10:00:00 INFO step 1\n", mtime=1_764_900_000)
        member(tf, "../escape.log")
        member(tf, "/abs/rank1.log")  # the data filter keeps it inside the folder, as abs/rank1.log
        member(tf, "job/node01/link.log", kind=tarfile.SYMTYPE, link="/etc/passwd")
        member(tf, "job/node01/fifo", kind=tarfile.FIFOTYPE)
    acc = Accounting()
    job = discover([str(archive)], acc)
    assert [f.rel for f in job.files] == ["abs/rank1.log", "job/node01/rank0.log"]
    assert job.files[1].mtime == 1_764_900_000
    assert acc.files_skipped["archive_member"] == 3
    assert not Path("/abs/rank1.log").exists()
    assert not (tmp_path / "escape.log").exists()
    assert all("job.tgz!" in w for w in acc.warnings)


def test_an_archive_found_inside_a_job_folder_is_not_unpacked(tmp_path: Path) -> None:
    (tmp_path / "node01").mkdir()
    (tmp_path / "node01" / "rank0.log").write_text("2026-12-05 10:00:00 INFO step 1\n")
    with tarfile.open(tmp_path / "node01" / "shard.tar", "w") as tf:
        member(tf, "data/0001.txt")
    acc = Accounting()
    job = discover([str(tmp_path)], acc)
    assert [f.rel for f in job.files] == ["node01/rank0.log"]
    assert acc.files_skipped["archive"] == 1


def test_a_log_is_no_archive(tmp_path: Path) -> None:
    log = tmp_path / "rank0.log"
    log.write_text("PK is how this line starts\n")
    assert archive_kind(str(log)) is None
