"""Bytes of one log file to numbered lines: gzip inflated in bounded steps, UTF-8/UTF-16 decoded, NUL bytes
and terminal escape sequences removed, over-long lines cut, a piece of a large file read from its byte range.

Only newlines end lines (a progress bar's carriage returns do not), so line numbers agree everywhere a file is
read: ingest, the context lines of a report, the pieces of the parallel scan.
"""

from __future__ import annotations

import codecs
import os
import re
import stat
import sys
import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO, NamedTuple

from l4lite.ingest.files import (
    CHUNK_BYTES,
    DEFAULT_MAX_LINE_CHARS,
    GZIP_MAGIC,
    MAX_INFLATE,
    InputFile,
    os_reason,
    stdin_stream,
    utf16_bom,
)
from l4lite.records import Accounting

# A terminal's control sequences (CSI: colours, cursor moves), as Ray's driver, tqdm and rich write them when their
# output is a terminal: ``\x1b[36m(RayTrainWorker pid=94, ip=10.0.0.2)\x1b[0m``. They never hold a newline, so
# removing them keeps every line and its number.
CSI = re.compile("\x1b\\[[0-?]*[ -/]*[@-~]")


def without_escapes(lines: list[str]) -> list[str]:
    """A block of lines with their terminal escape sequences removed, so that prefixes, timestamps, templates and
    rules read the text a terminal showed; a block without any (one search in C) is returned as it came."""
    if "\x1b" not in "\n".join(lines):
        return lines
    return [CSI.sub("", s) if "\x1b" in s else s for s in lines]


def open_lines(input_file: InputFile, accounting: Accounting,
               max_line_chars: int = DEFAULT_MAX_LINE_CHARS) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for every line of a file, newline and NUL bytes removed.

    Problems (unreadable, truncated gzip, bad bytes, over-long lines) become one warning each naming the file;
    what could be read is still yielded.
    """
    for first, lines in iter_line_blocks(input_file, accounting, max_line_chars):
        yield from enumerate(lines, first)


class PieceStart(NamedTuple):
    """Where a piece of a rotated log starts in the line numbers its chain is read with."""

    line: int
    rel: str


def iter_line_blocks(input_file: InputFile, accounting: Accounting,
                     max_line_chars: int = DEFAULT_MAX_LINE_CHARS,
                     pieces: list[PieceStart] | None = None) -> Iterator[tuple[int, list[str]]]:
    """Like ``open_lines`` but yields ``(first_line_number, [lines])`` blocks: the fast path used by ingest. A
    rotated log's pieces are read one after the other, their lines numbered on through them; where each piece
    starts is appended to ``pieces`` as it is reached. Terminal escape sequences are removed here, the one place
    every reader of a file's lines goes through."""
    for first, lines in _line_blocks(input_file, accounting, max_line_chars, pieces):
        yield first, without_escapes(lines)


def _line_blocks(input_file: InputFile, accounting: Accounting, max_line_chars: int,
                 pieces: list[PieceStart] | None) -> Iterator[tuple[int, list[str]]]:
    if input_file.parts:
        offset = 0
        for part in input_file.parts:
            if pieces is not None:
                pieces.append(PieceStart(offset + 1, part.rel))
            last = 0
            for first, lines in _line_blocks(part, accounting, max_line_chars, None):
                yield first + offset, lines
                last = first + len(lines) - 1
            offset += last
        return
    name = input_file.rel
    try:
        if input_file.is_stdin:
            stream = _stdin_binary()
            if stream is None:  # a text-only stdin (tests, embedding): already decoded
                yield from _text_stream_blocks(sys.stdin, max_line_chars, name, accounting)
                return
            limit = None
            owned = False
        elif input_file.is_piece:
            yield from _piece_blocks(input_file, accounting, max_line_chars)
            return
        else:
            stream = open(input_file.path, "rb")  # noqa: SIM115 - closed in finally
            owned = True
            limit = None
            if not input_file.compressed:
                try:
                    st = os.fstat(stream.fileno())
                    limit = st.st_size if stat.S_ISREG(st.st_mode) else None
                except OSError:
                    limit = None
    except OSError as exc:
        accounting.skip_file(os_reason(exc), name, os.strerror(exc.errno) if exc.errno else str(exc))
        return
    accounting.files += 1
    try:
        chunks = _raw_chunks(stream, limit, name, accounting)
        first = next(chunks, b"")
        if first.startswith(GZIP_MAGIC):
            chunks = _gunzip(_prepend(first, chunks), name, accounting)
            first = next(chunks, b"")
        encoding = input_file.encoding
        if utf16_bom(first):
            encoding = "utf-16"
        elif first.startswith(codecs.BOM_UTF8):
            first = first[3:]
        if encoding != "utf-8":
            yield from _decoded_blocks(_prepend(first, chunks), encoding, max_line_chars, name, accounting)
        else:
            yield from _utf8_blocks(_prepend(first, chunks), max_line_chars, name, accounting)
    finally:
        if owned:
            stream.close()


def _piece_blocks(piece: InputFile, accounting: Accounting, cap: int) -> Iterator[tuple[int, list[str]]]:
    """The blocks of one piece of a plain UTF-8 file, numbered from the piece's first line. The whole file is
    counted once, by its first piece; the pieces' lines and skips add up to the file's."""
    name = piece.rel
    assert piece.stop is not None
    try:
        stream = open(piece.path, "rb")  # noqa: SIM115 - closed in finally
    except OSError as exc:
        if not piece.start:
            accounting.skip_file(os_reason(exc), name, os.strerror(exc.errno) if exc.errno else str(exc))
        else:
            accounting.warn(f"{name}: bytes {piece.start}-{piece.stop} unreadable ({exc}); skipped")
        return
    if not piece.start:
        accounting.files += 1
    try:
        stream.seek(piece.start)
        chunks = _range_chunks(stream, piece.stop - piece.start, name, accounting)
        if not piece.start:
            first = next(chunks, b"")
            chunks = _prepend(first[3:] if first.startswith(codecs.BOM_UTF8) else first, chunks)
        yield from _utf8_blocks(chunks, cap, name, accounting, piece.first_line)
    finally:
        stream.close()


def _range_chunks(stream: BinaryIO, length: int, name: str, accounting: Accounting) -> Iterator[bytes]:
    left = length
    try:
        while left > 0:
            chunk = stream.read(min(CHUNK_BYTES, left))
            if not chunk:
                return
            left -= len(chunk)
            yield chunk
    except OSError as exc:
        accounting.warn(f"{name}: read error after {length - left} bytes of a piece ({exc}); kept what was read")


def _stdin_binary() -> BinaryIO | None:
    return stdin_stream()  # type: ignore[return-value]  # its first bytes may have been read for the job context


def _prepend(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    if first:
        yield first
    yield from rest


def _raw_chunks(stream: BinaryIO, limit: int | None, name: str, accounting: Accounting) -> Iterator[bytes]:
    """Chunks of the file as it was when opened: a file that grows meanwhile is read up to its size at opening,
    finishing the line in progress, so that one read is a consistent snapshot."""
    total = 0
    try:
        while True:
            chunk = stream.read(CHUNK_BYTES)
            if not chunk:
                return
            if limit is not None and total + len(chunk) >= limit:
                cut = chunk.find(b"\n", max(0, limit - total - 1))
                if cut >= 0:
                    yield chunk[: cut + 1]
                    if cut + 1 < len(chunk) or stream.read(1):
                        accounting.warn(f"{name}: grew while it was read; read as it was when opened "
                                        f"({total + cut + 1} bytes)")
                    return
            total += len(chunk)
            yield chunk
    except OSError as exc:
        accounting.warn(f"{name}: read error after {total} bytes ({exc}); kept what was read")


def _gunzip(chunks: Iterator[bytes], name: str, accounting: Accounting) -> Iterator[bytes]:
    """Incremental gzip (multi-member) decompression; a truncated or corrupt stream keeps what decoded."""
    d = zlib.decompressobj(wbits=31)
    fed = False  # the current member has received input
    produced = 0
    try:
        for chunk in chunks:
            data = chunk
            while data:
                fed = True
                out = d.decompress(data, MAX_INFLATE)
                produced += len(out)
                if out:
                    yield out
                while d.unconsumed_tail:
                    out = d.decompress(d.unconsumed_tail, MAX_INFLATE)
                    produced += len(out)
                    if out:
                        yield out
                if d.eof:
                    data = d.unused_data
                    d = zlib.decompressobj(wbits=31)
                    fed = False
                    if data and not data.startswith(GZIP_MAGIC):
                        if data.strip(b"\x00"):
                            accounting.warn(f"{name}: trailing garbage after gzip data ignored")
                        return
                else:
                    data = b""
        if fed and not d.eof:
            out = d.flush()
            if out:
                produced += len(out)
                yield out
            accounting.warn(f"{name}: truncated gzip; kept the {produced} bytes that decoded")
    except zlib.error as exc:
        accounting.warn(f"{name}: corrupt gzip after {produced} bytes ({exc}); kept what decoded")


def _utf8_blocks(chunks: Iterator[bytes], cap: int, name: str, accounting: Accounting,
                 lineno: int = 1) -> Iterator[tuple[int, list[str]]]:
    """Split byte chunks on newlines and decode each complete block at once (fast path); fall back per line."""
    carry = b""
    discarding = False  # inside an over-long line, skipping to its newline
    stats = _ReadStats()
    for chunk in chunks:
        if discarding:
            nl = chunk.find(b"\n")
            if nl < 0:
                continue
            chunk = chunk[nl + 1:]
            discarding = False
        data = carry + chunk if carry else chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            if len(data) > cap:
                stats.long_line(lineno)
                lines = [_decode_line(data[:cap], stats, lineno, cut=True)]
                yield lineno, lines
                lineno += 1
                carry = b""
                discarding = True
            else:
                carry = data
            continue
        carry = data[cut + 1:]
        block = data[:cut]
        lines = _decode_block(block, cap, stats, lineno)
        yield lineno, lines
        lineno += len(lines)
        if len(carry) > cap:
            stats.long_line(lineno)
            yield lineno, [_decode_line(carry[:cap], stats, lineno, cut=True)]
            lineno += 1
            carry = b""
            discarding = True
    if carry:
        yield lineno, [_decode_line(carry, stats, lineno, cut=True)]
    stats.report(name, accounting)


def _decode_block(block: bytes, cap: int, stats: _ReadStats, lineno: int) -> list[str]:
    if b"\x00" in block:
        if not stats.nul:
            stats.first_nul = lineno + block.count(b"\n", 0, block.find(b"\x00"))
        stats.nul += block.count(0)
        block = block.replace(b"\x00", b"")
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError:
        raws = block.split(b"\n")
        lines = []
        for i, raw in enumerate(raws):
            cut = len(raw) > cap
            if cut:
                stats.long_line(lineno + i)
                raw = raw[:cap]
            lines.append(_decode_line(raw, stats, lineno + i, nul_done=True, cut=cut))
        return lines
    lines = text.split("\n")
    if "\r" in text:
        lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
    if len(block) > cap and max(map(len, lines)) > cap:  # one pass in C; the loop only for a block with a long line
        for i, ln in enumerate(lines):
            if len(ln) > cap:
                stats.long_line(lineno + i)
                lines[i] = ln[:cap]
    return lines


def _decode_line(raw: bytes, stats: _ReadStats, lineno: int, nul_done: bool = False, cut: bool = False) -> str:
    """Decode one line; ``cut`` says the line was cut short (over-long, or the end of a file without a final
    newline), so that an incomplete UTF-8 character at its end is dropped rather than read as latin-1."""
    if not nul_done and b"\x00" in raw:
        if not stats.nul:
            stats.first_nul = lineno
        stats.nul += raw.count(0)
        raw = raw.replace(b"\x00", b"")
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if cut and exc.end == len(raw) and exc.reason == "unexpected end of data":  # a character cut short
            try:
                return raw[: exc.start].decode("utf-8")
            except UnicodeDecodeError:
                pass
        stats.bad_line(lineno)
        return raw.decode("latin-1")


def _decoded_blocks(chunks: Iterator[bytes], encoding: str, cap: int, name: str,
                    accounting: Accounting) -> Iterator[tuple[int, list[str]]]:
    """Non-UTF-8 encodings (UTF-16): incremental decode, then the same line splitting on text."""
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")

    def texts() -> Iterator[str]:
        for c in chunks:
            yield decoder.decode(c)
        yield decoder.decode(b"", final=True)

    yield from _text_chunks_blocks(texts(), cap, name, accounting, strip_bom=True)


def _text_stream_blocks(stream, cap: int, name: str, accounting: Accounting) -> Iterator[tuple[int, list[str]]]:
    def chunks() -> Iterator[str]:
        while True:
            c = stream.read(CHUNK_BYTES)
            if not c:
                return
            yield c

    yield from _text_chunks_blocks(chunks(), cap, name, accounting, strip_bom=True)


def _text_chunks_blocks(chunks: Iterator[str], cap: int, name: str, accounting: Accounting,
                        strip_bom: bool) -> Iterator[tuple[int, list[str]]]:
    lineno = 1
    carry = ""
    discarding = False
    stats = _ReadStats()
    first = True
    for chunk in chunks:
        if not chunk:
            continue
        if first and strip_bom and chunk.startswith("\ufeff"):
            chunk = chunk[1:]
        first = False
        if discarding:
            nl = chunk.find("\n")
            if nl < 0:
                continue
            chunk = chunk[nl + 1:]
            discarding = False
        data = carry + chunk
        cut = data.rfind("\n")
        if cut < 0:
            if len(data) > cap:
                stats.long_line(lineno)
                yield lineno, [_no_nul(data[:cap], stats).rstrip("\r")]
                lineno += 1
                carry = ""
                discarding = True
            else:
                carry = data
            continue
        carry = data[cut + 1:]
        lines = _no_nul(data[:cut], stats).split("\n")
        for i, ln in enumerate(lines):
            if ln.endswith("\r"):
                ln = lines[i] = ln[:-1]
            if len(ln) > cap:
                stats.long_line(lineno + i)
                lines[i] = ln[:cap]
        yield lineno, lines
        lineno += len(lines)
        if len(carry) > cap:
            stats.long_line(lineno)
            yield lineno, [_no_nul(carry[:cap], stats)]
            lineno += 1
            carry = ""
            discarding = True
    if carry:  # NULs are removed only now, so that a last line of NULs counts as a line, as in UTF-8 files
        yield lineno, [_no_nul(carry, stats).rstrip("\r")]
    stats.report(name, accounting)


def _no_nul(text: str, stats: _ReadStats) -> str:
    if "\x00" in text:
        stats.nul += text.count("\x00")
        return text.replace("\x00", "")
    return text


class _ReadStats:
    """Per-file reading problems, reported as one warning each at the end of the file."""

    __slots__ = ("nul", "first_nul", "long", "first_long", "bad", "first_bad")

    def __init__(self) -> None:
        self.nul = 0
        self.first_nul = 0
        self.long = 0
        self.first_long = 0
        self.bad = 0
        self.first_bad = 0

    def long_line(self, lineno: int) -> None:
        if not self.long:
            self.first_long = lineno
        self.long += 1

    def bad_line(self, lineno: int) -> None:
        if not self.bad:
            self.first_bad = lineno
        self.bad += 1

    def report(self, name: str, accounting: Accounting) -> None:
        if self.long:
            accounting.warn(f"{name}:{self.first_long}: {self.long} over-long line(s) truncated")
        if self.bad:
            accounting.warn(f"{name}:{self.first_bad}: {self.bad} line(s) not valid UTF-8, read as latin-1")
        if self.nul:
            where = f"{name}:{self.first_nul}" if self.first_nul else name
            accounting.warn(f"{where}: {self.nul} NUL byte(s) removed")


def set_apart_file(input_file: Any, why: str, accounting: Accounting, reason: str = "set_apart") -> None:
    """Count the lines of a file set apart (``JobContext.set_apart``, a file that is no log) as skipped, with one
    warning naming it."""
    if not getattr(input_file, "start", 0):  # the first piece of a file cut in pieces names it
        accounting.skip_file(reason, input_file.rel, why)
    n = sum(1 for _ in open_lines(input_file, accounting))
    accounting.lines_read += n
    accounting.skip_lines(reason, n)
