"""A gzip'd job and its plain copy are the same evidence: every job-level fact the context works out from the
files' sampled ends (the job's span, each file's last time) is the same for both."""

from __future__ import annotations

import gzip
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from l4lite.ingest.context import build_context
from l4lite.ingest.fileends import HEAD_BYTES, TAIL_BYTES, file_ends
from l4lite.ingest.files import discover
from l4lite.records import Accounting

T0 = datetime(2026, 12, 3, 14, 0, 0, tzinfo=UTC)


def _write_job(root: Path) -> None:
    """Two nodes; node-b's log is far larger than the sampled head, its last lines an hour after its first."""
    for node, n in (("node-a", 40), ("node-b", 4000)):
        (root / node).mkdir(parents=True)
        lines = [f"{(T0 + timedelta(seconds=i)).strftime('%Y-%m-%d %H:%M:%S,%f')[:-3]} INFO step {i} "
                 f"loss 1.{i % 97:02d} tokens/s 1234.5\n" for i in range(n)]
        (root / node / "train.log").write_text("".join(lines))


def _facts(root: Path) -> tuple[float | None, float | None, dict[str, float]]:
    acc = Accounting()
    ctx = build_context(discover([str(root)], acc).files, accounting=acc)
    return ctx.start, ctx.end, {rel.removesuffix(".gz"): t for rel, t in ctx.file_ends.items()}


def test_a_gzipd_copy_gives_the_same_span_and_file_ends(tmp_path: Path) -> None:
    plain, packed = tmp_path / "plain", tmp_path / "packed"
    _write_job(plain)
    assert (plain / "node-b" / "train.log").stat().st_size > HEAD_BYTES + TAIL_BYTES
    shutil.copytree(plain, packed)
    for f in [p for p in packed.rglob("*") if p.is_file()]:
        f.with_name(f.name + ".gz").write_bytes(gzip.compress(f.read_bytes()))
        f.unlink()
    start, end, ends = _facts(plain)
    assert end is not None and start is not None and end - start > 3000  # node-b's last line, not its head's
    assert _facts(packed) == (start, end, ends)


def test_a_gzip_files_ends_are_its_plain_copys(tmp_path: Path) -> None:
    _write_job(tmp_path)
    log = tmp_path / "node-b" / "train.log"
    packed = tmp_path / "train.log.gz"
    packed.write_bytes(gzip.compress(log.read_bytes()))

    class _File:  # what ``files.discover`` hands over, as far as the ends are read
        def __init__(self, path: Path, compressed: bool) -> None:
            self.path, self.compressed, self.encoding = str(path), compressed, "utf-8"

    assert file_ends(_File(packed, True)) == file_ends(_File(log, False))
