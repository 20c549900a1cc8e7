"""One Parquet file from Parquet files of the same schema, joined without decoding them.

A Parquet file is ``PAR1``, the column chunks of its row groups, a footer (Thrift ``FileMetaData`` in the compact
protocol), the footer's length and ``PAR1`` again. The footer says where each column chunk starts, as offsets from
the start of the file, and nothing inside the chunks points elsewhere. So files join by copying their bodies one
after the other and writing one footer that lists all their row groups, each offset moved by where its body now
starts. (A page index, which pyarrow writes only when asked, holds offsets of its own: parts with one are
refused.) This is how ``parse --jobs N`` writes its one output: the workers encode and compress the row groups of
their shards at the same time, and the parent only copies bytes.

The footer is read into a tree that keeps every field, known to this module or not, and written back byte for
byte (``tests/test_parquet_join.py`` checks that on files that pyarrow writes), so only the offsets, the row
group ordinals and the row count change.

CSV and JSON lines parts (``join_text``) need no footer: they join by the same copy, one after the other.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

MAGIC = b"PAR1"

# Thrift compact protocol types
_TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(1, 13)
_INTS = (_I16, _I32, _I64)

# parquet.thrift field ids
_FILE_NUM_ROWS, _FILE_ROW_GROUPS, _FILE_SCHEMA = 3, 4, 2
_GROUP_COLUMNS, _GROUP_FILE_OFFSET, _GROUP_ORDINAL = 1, 5, 7
_CHUNK_FILE_OFFSET, _CHUNK_META = 2, 3
_CHUNK_PAGE_INDEX = (4, 6)  # offset_index_offset, column_index_offset
_META_OFFSETS = (9, 10, 11, 14)  # data_page_offset, index_page_offset, dictionary_page_offset, bloom_filter_offset

Struct = list  # of [field id, type, value]


class ParquetJoinError(ValueError):
    """A part that is not a plain Parquet file, or whose schema differs from the first part's."""


# -- Thrift compact protocol -----------------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = value = 0
        while True:
            b = self.byte()
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ParquetJoinError("footer ends inside a value")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def value(self, kind: int) -> Any:
        """A value of ``kind`` inside a container (a bool there is a byte of its own, kept as read)."""
        if kind in (_TRUE, _FALSE, _BYTE):
            return self.byte()
        if kind in _INTS:
            return self.zigzag()
        if kind == _DOUBLE:
            return self.take(8)
        if kind == _BINARY:
            return self.take(self.varint())
        if kind in (_LIST, _SET):
            head = self.byte()
            size, element = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            return element, [self.value(element) for _ in range(size)]
        if kind == _MAP:
            size = self.varint()
            if not size:
                return 0, 0, []
            types = self.byte()
            key, val = types >> 4, types & 0x0F
            return key, val, [(self.value(key), self.value(val)) for _ in range(size)]
        if kind == _STRUCT:
            return self.struct()
        raise ParquetJoinError(f"unknown Thrift type {kind}")

    def struct(self) -> Struct:
        fields: Struct = []
        last = 0
        while True:
            head = self.byte()
            if head == 0:
                return fields
            delta, kind = head >> 4, head & 0x0F
            field = last + delta if delta else self.zigzag()
            last = field
            # a bool field is its type alone
            fields.append([field, kind, kind == _TRUE if kind in (_TRUE, _FALSE) else self.value(kind)])


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()

    def varint(self, n: int) -> None:
        while n > 0x7F:
            self.out.append((n & 0x7F) | 0x80)
            n >>= 7
        self.out.append(n)

    def zigzag(self, n: int) -> None:
        self.varint((n << 1) ^ (n >> 63))

    def value(self, kind: int, value: Any) -> None:
        if kind in (_TRUE, _FALSE, _BYTE):
            self.out.append(value)
        elif kind in _INTS:
            self.zigzag(value)
        elif kind == _DOUBLE:
            self.out += value
        elif kind == _BINARY:
            self.varint(len(value))
            self.out += value
        elif kind in (_LIST, _SET):
            element, items = value
            if len(items) < 15:
                self.out.append(len(items) << 4 | element)
            else:
                self.out.append(0xF0 | element)
                self.varint(len(items))
            for item in items:
                self.value(element, item)
        elif kind == _MAP:
            key, val, items = value
            self.varint(len(items))
            if items:
                self.out.append(key << 4 | val)
                for k, v in items:
                    self.value(key, k)
                    self.value(val, v)
        elif kind == _STRUCT:
            self.struct(value)
        else:
            raise ParquetJoinError(f"unknown Thrift type {kind}")

    def struct(self, fields: Struct) -> None:
        last = 0
        for field, kind, value in fields:
            if kind in (_TRUE, _FALSE):
                kind = _TRUE if value else _FALSE
            delta = field - last
            if 0 < delta <= 15:
                self.out.append(delta << 4 | kind)
            else:
                self.out.append(kind)
                self.zigzag(field)
            last = field
            if kind not in (_TRUE, _FALSE):
                self.value(kind, value)
        self.out.append(0)


def read_footer(data: bytes) -> Struct:
    """The footer's ``FileMetaData`` as a tree of ``[field id, type, value]``."""
    reader = _Reader(data)
    try:
        fields = reader.struct()
    except (IndexError, RecursionError):
        raise ParquetJoinError("footer ends inside a value") from None
    if reader.pos != len(data):
        raise ParquetJoinError(f"footer ends {len(data) - reader.pos} bytes before its length says")
    return fields


def write_footer(fields: Struct) -> bytes:
    writer = _Writer()
    writer.struct(fields)
    return bytes(writer.out)


def _field(fields: Struct, field_id: int) -> list[Any] | None:
    for f in fields:
        if f[0] == field_id:
            return f
    return None


# -- joining ---------------------------------------------------------------------------------------------------


def _footer_of(src: BinaryIO, name: str) -> tuple[Struct, int]:
    """A part's footer and where its body ends."""
    size = os.fstat(src.fileno()).st_size
    if size < 12:
        raise ParquetJoinError(f"{name}: too short for a Parquet file ({size} bytes)")
    src.seek(0)
    head = src.read(4)
    src.seek(size - 8)
    tail = src.read(8)
    if head != MAGIC or tail[4:] != MAGIC:
        raise ParquetJoinError(f"{name}: not a plain Parquet file (encrypted footers are not joined)")
    length = int.from_bytes(tail[:4], "little")
    body_end = size - 8 - length
    if body_end < 4:
        raise ParquetJoinError(f"{name}: footer length {length} does not fit the file")
    src.seek(body_end)
    try:
        return read_footer(src.read(length)), body_end
    except ParquetJoinError as exc:
        raise ParquetJoinError(f"{name}: {exc}") from None


def _shift(group: Struct, by: int, ordinal: int) -> None:
    """Move a row group's offsets ``by`` bytes and give it its place among the joined row groups. An offset of
    0 (which would point at the magic) stands for none: Arrow writes the deprecated ``file_offset`` of a column
    chunk so."""
    for field in group:
        if field[0] == _GROUP_FILE_OFFSET and field[2]:
            field[2] += by
        elif field[0] == _GROUP_ORDINAL:
            field[2] = ordinal
        elif field[0] == _GROUP_COLUMNS:
            for chunk in field[2][1]:
                for f in chunk:
                    if f[0] == _CHUNK_FILE_OFFSET and f[2]:
                        f[2] += by
                    elif f[0] in _CHUNK_PAGE_INDEX:
                        raise ParquetJoinError("a page index holds offsets of its own; parts are written without")
                    elif f[0] == _CHUNK_META:
                        for m in f[2]:
                            if m[0] in _META_OFFSETS and m[2]:
                                m[2] += by


def _copy(src: BinaryIO, dst: BinaryIO, start: int, length: int) -> None:
    """Bytes ``start:start + length`` of ``src`` onto the end of ``dst``: by the kernel where it can copy between
    the two files, else through memory (from the start again, over what a failed kernel copy left)."""
    dst.flush()
    try:
        src_fd, dst_fd = src.fileno(), dst.fileno()
        offset = dst.tell()
        done = 0
        while done < length:
            n = os.copy_file_range(src_fd, dst_fd, length - done, start + done, offset + done)
            if n <= 0:
                raise OSError("copy_file_range copied nothing")
            done += n
        dst.seek(offset + length)
        return
    except (AttributeError, OSError):  # no copy_file_range here: copy through memory
        pass
    src.seek(start)
    left = length
    while left:
        chunk = src.read(min(left, 1 << 22))
        if not chunk:
            raise ParquetJoinError("part ended before the bytes it was to give")
        dst.write(chunk)
        left -= len(chunk)


def join_parquet(parts: Sequence[Path], out: Path) -> None:
    """Write the row groups of ``parts``, in order, as one Parquet file ``out``, with the first part's schema
    and key-value metadata. Every part must have the same schema; all are checked before ``out`` is written."""
    if not parts:
        raise ParquetJoinError("nothing to join")
    footers = []
    for part in parts:
        with part.open("rb") as src:
            footers.append(_footer_of(src, str(part)))
    merged = footers[0][0]
    groups: list[Any] = []
    rows = 0
    start = len(MAGIC)  # where the part's body begins in ``out``
    for part, (footer, body_end) in zip(parts, footers, strict=True):
        if _field(footer, _FILE_SCHEMA) != _field(merged, _FILE_SCHEMA):
            raise ParquetJoinError(f"{part}: its schema differs from {parts[0]}'s")
        found = _field(footer, _FILE_ROW_GROUPS)
        try:
            for group in found[2][1] if found else []:
                _shift(group, start - len(MAGIC), len(groups))
                groups.append(group)
        except ParquetJoinError as exc:
            raise ParquetJoinError(f"{part}: {exc}") from None
        num_rows = _field(footer, _FILE_NUM_ROWS)
        rows += num_rows[2] if num_rows else 0
        start += body_end - len(MAGIC)
    for field in merged:
        if field[0] == _FILE_NUM_ROWS:
            field[2] = rows
        elif field[0] == _FILE_ROW_GROUPS:
            field[2] = (_STRUCT, groups)
    footer_bytes = write_footer(merged)
    with out.open("wb") as dst:
        dst.write(MAGIC)
        for part, (_, body_end) in zip(parts, footers, strict=True):
            with part.open("rb") as src:
                _copy(src, dst, len(MAGIC), body_end - len(MAGIC))
        dst.write(footer_bytes)
        dst.write(len(footer_bytes).to_bytes(4, "little"))
        dst.write(MAGIC)


def join_text(parts: Sequence[Path], out: Path) -> None:
    """Text parts (CSV after the first without its header, JSON lines) one after the other as ``out``."""
    with out.open("wb") as dst:
        for part in parts:
            with part.open("rb") as src:
                _copy(src, dst, 0, os.fstat(src.fileno()).st_size)
