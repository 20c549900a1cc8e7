"""Parquet files join into the file that one writer of all their batches makes, byte for byte."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from l4lite.export.parquet_join import ParquetJoinError, join_parquet, read_footer, write_footer


def _batches(start: int, stop: int, step: int) -> list[pa.RecordBatch]:
    out = []
    for a in range(start, stop, step):
        rows = range(a, min(stop, a + step))
        out.append(pa.record_batch({
            "n": pa.array(list(rows), pa.int64()),
            "word": pa.array([f"w{i % 7}" if i % 5 else None for i in rows], pa.string()),
            "text": pa.array([f"line {i} " * (i % 4) for i in rows]),
            "flag": pa.array([i % 3 == 0 for i in rows]),
            "values": pa.array([[i, -i] if i % 2 else [] for i in rows], pa.list_(pa.int32())),
            "x": pa.array([i / 7 for i in rows]),
        }))
    return out


def _write(path: Path, batches: list[pa.RecordBatch], **options: object) -> Path:
    schema = _batches(0, 1, 1)[0].schema.with_metadata({"note": "kept", "rows": "all"})
    with pq.ParquetWriter(str(path), schema, compression="zstd", use_dictionary=["word"], **options) as writer:
        for batch in batches:
            writer.write_batch(batch.replace_schema_metadata(schema.metadata))
    return path


def _footer(path: Path) -> bytes:
    data = path.read_bytes()
    length = int.from_bytes(data[-8:-4], "little")
    return data[-8 - length:-8]


@pytest.mark.parametrize("options", [{}, {"write_statistics": False}, {"write_page_index": True},
                                     {"data_page_size": 512}])
def test_footers_are_written_back_as_read(tmp_path: Path, options: dict[str, object]) -> None:
    """Twenty row groups: more than the fifteen a short Thrift list header holds."""
    footer = _footer(_write(tmp_path / "a.parquet", _batches(0, 2000, 100), **options))
    assert write_footer(read_footer(footer)) == footer


@pytest.mark.parametrize("options", [{}, {"write_statistics": False}, {"data_page_size": 512}])
def test_parts_join_into_the_file_of_one_writer(tmp_path: Path, options: dict[str, object]) -> None:
    whole = _write(tmp_path / "whole.parquet", _batches(0, 4000, 150), **options)
    cuts = [(0, 600), (600, 600), (600, 3000), (3000, 4000)]  # the second part has no rows at all
    parts = [_write(tmp_path / f"part{k}.parquet", _batches(a, b, 150), **options) for k, (a, b) in enumerate(cuts)]
    joined = tmp_path / "joined.parquet"
    join_parquet(parts, joined)
    assert joined.read_bytes() == whole.read_bytes()
    read = pq.ParquetFile(joined)
    assert read.metadata.num_rows == 4000 and read.metadata.num_row_groups == 27
    assert read.read_row_group(26).column("n").to_pylist() == list(range(3900, 4000))
    assert read.schema_arrow.metadata[b"note"] == b"kept"


@pytest.mark.parametrize("kernel_copy", [True, False])
def test_one_part_is_copied_as_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernel_copy: bool) -> None:
    """Also where the kernel cannot copy between the two files (another file system): through memory."""
    import errno
    import os

    if not kernel_copy:
        def refuse(*args: object) -> int:
            raise OSError(errno.EXDEV, "Invalid cross-device link")

        monkeypatch.setattr(os, "copy_file_range", refuse, raising=False)
    part = _write(tmp_path / "part.parquet", _batches(0, 700, 100))
    join_parquet([part, part], tmp_path / "joined.parquet")
    assert pq.read_table(tmp_path / "joined.parquet").equals(pa.concat_tables([pq.read_table(part)] * 2))
    join_parquet([part], tmp_path / "joined.parquet")
    assert (tmp_path / "joined.parquet").read_bytes() == part.read_bytes()


def test_parts_that_cannot_join_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    good = _write(tmp_path / "good.parquet", _batches(0, 300, 100))
    indexed = _write(tmp_path / "indexed.parquet", _batches(300, 600, 100), write_page_index=True)
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"n": [1, 2]}), str(other))
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(good.read_bytes()[:-20] + good.read_bytes()[-8:])
    footer = _footer(good)
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(good.read_bytes()[:-8 - len(footer)] + footer[:-5] + (len(footer) - 5).to_bytes(4, "little")
                    + b"PAR1")
    not_parquet = tmp_path / "notes.txt"
    not_parquet.write_text("hello, this is not a Parquet file\n")
    out = tmp_path / "out.parquet"
    for bad, words in ((indexed, "page index"), (other, "schema differs"), (broken, "footer ends .* before"),
                       (cut, "footer ends inside"), (not_parquet, "not a plain Parquet file")):
        with pytest.raises(ParquetJoinError, match=words) as caught:
            join_parquet([good, bad], out)
        assert str(bad) in str(caught.value)
        assert not out.exists()
    with pytest.raises(ParquetJoinError, match="nothing"):
        join_parquet([], out)
