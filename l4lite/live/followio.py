"""The pieces the follower is made of: streams and their saved form, chunks of lines, a progressive gzip
reader, content fingerprints and log-rotation file names.
"""

from __future__ import annotations

import hashlib
import os
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

FINGERPRINT_BYTES = 1024  # the first bytes that identify a stream's content
MIN_MATCH_BYTES = 64  # shorter prefixes are too weak to call two files the same content
TAIL_BYTES = 64  # bytes just before an offset, checked before a copy continues a stream there
MAX_READ_BYTES = 4 << 20  # per stream per poll, so that one file catching up cannot starve the others
MAX_LINE_BYTES = 1 << 20  # a longer line is cut there; the rest of it is skipped
MAX_ENDED_KEPT = 2000  # ended streams remembered (for matching later copies) in the state
GZIP_MAGIC = b"\x1f\x8b"

ACTIVE, SHADOW, ENDED, SKIPPED = "active", "shadow", "ended", "skipped"


def fingerprint(prefix: bytes) -> str:
    return hashlib.blake2b(prefix, digest_size=12).hexdigest()


_COMPRESSED_SUFFIX = re.compile(r"\.(?:gz|z|bz2|xz|zst)$", re.IGNORECASE)
# logrotate suffixes: ".1" (numbered) or "-20250101" / "-2025-01-01-1700" (dateext, any separator)
_SUFFIX = r"(?:\.\d{1,6}|[._-]\d{4}-?\d\d-?\d\d(?:[-_T]?\d{2,6})?)"
_ROTATION_SUFFIX = re.compile("(?:" + _SUFFIX + ")+$")
_ROTATION_REST = re.compile("(?:" + _SUFFIX + r")+(?:\.(?:gz|z|bz2|xz|zst))?$", re.IGNORECASE)


def rotation_stem(name: str) -> str:
    """``train.log.2.gz`` -> ``train.log``; ``train.log-20250101`` -> ``train.log``."""
    return _ROTATION_SUFFIX.sub("", _COMPRESSED_SUFFIX.sub("", name))


def rotated_from(candidate: str, original: str) -> bool:
    """Whether file name ``candidate`` is what log rotation makes of ``original`` (same folder assumed):
    ``x.log.1``, ``x.log.1.gz``, ``x.log-20250101``, ``x-20250101.log`` (dateext with extension)."""
    if candidate == original:
        return False  # the same name again is a new file (recreated), not a copy
    for base in {original, rotation_stem(original)}:
        if candidate != base and candidate.startswith(base) and _ROTATION_REST.fullmatch(candidate[len(base):]):
            return True
        stem, dot, ext = base.rpartition(".")
        if dot and stem:
            rest = _COMPRESSED_SUFFIX.sub("", candidate)
            if rest.startswith(stem) and rest.endswith("." + ext) and len(rest) > len(base) and (
                    _ROTATION_SUFFIX.fullmatch(rest[len(stem):-len(ext) - 1])):
                return True
    return False


class GzipReader:
    """Decompresses a gzip file progressively (multi-member aware); a file still being written reads as far as
    it goes, a truncated one yields everything decodable. ``complete`` once the last member ended at file end."""

    def __init__(self, path: str) -> None:
        self.fh = open(path, "rb")  # noqa: SIM115 - closed by close()
        self.d = zlib.decompressobj(31)
        self.buf = bytearray()
        self.at_eof = False
        self.complete = False
        self.trailing = False  # bytes after the last member that are not another member (zero padding, garbage)

    def fill(self, n: int) -> None:
        """Decompress until ``n`` bytes are buffered or the file (as written so far) is exhausted."""
        self.at_eof = False
        while len(self.buf) < n:
            raw = self.fh.read(1 << 16)
            if not raw:
                self.at_eof = True
                self.complete = self.d.eof and (self.trailing or not self.d.unused_data)
                return
            if self.trailing:
                continue
            self.buf += self.d.decompress(raw)
            while self.d.eof and self.d.unused_data:
                rest = self.d.unused_data
                if not rest.startswith(GZIP_MAGIC[: len(rest)]):
                    self.trailing = True  # what sources ignores after a member too (a crashed node's padding)
                    break
                if len(rest) < len(GZIP_MAGIC):
                    break  # the next member's magic is cut by the read: more input completes it
                self.d = zlib.decompressobj(31)
                self.buf += self.d.decompress(rest)
        self.complete = False

    def skip(self, n: int) -> int:
        """Drop the first ``n`` decompressed bytes; returns how many could be dropped."""
        done = 0
        while done < n:
            self.fill(min(n - done, 1 << 20))
            take = min(len(self.buf), n - done)
            if take == 0:
                break
            del self.buf[:take]
            done += take
        return done

    def read(self, n: int) -> bytes:
        self.fill(n)
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def close(self) -> None:
        self.fh.close()


@dataclass
class Stream:
    """One followed byte stream. ``offset``/``line`` are what was read; ``committed_*`` what was processed."""

    sid: str
    path: str  # current path of the file
    name: str  # path relative to the followed root, as records name it
    dev: int
    ino: int
    compressed: bool = False
    offset: int = 0  # bytes consumed (complete lines)
    line: int = 0  # lines consumed
    committed_offset: int = 0
    committed_line: int = 0
    fp: str = ""
    fp_len: int = 0
    status: str = ACTIVE
    shadow_of: str | None = None
    continued_by: str | None = None
    base_line: int = 0  # a copy continuing another stream starts counting after the origin's lines
    skipping: bool = False  # inside an over-long line: bytes up to the next newline are dropped
    tail: bytes = b""  # the bytes just before ``offset``
    committed_tail: bytes = b""
    size: int = -1  # size at the last poll, to skip unchanged files cheaply
    sig: tuple[int, int] = (-1, -1)  # (size, mtime_ns) of an ended stream's file, to notice it changing
    last_data: float = 0.0  # monotonic time bytes last arrived
    orphan_since: float | None = None  # when the path stopped pointing at this inode
    handle: Any = None  # int fd for plain files, GzipReader for compressed ones

    def commit(self, line: int, offset: int, tail: bytes | None = None) -> None:
        """Record that every line up to ``line`` (ending at byte ``offset``) is durably processed."""
        self.committed_line, self.committed_offset = line, offset
        if tail is not None:
            self.committed_tail = tail
        elif offset == self.offset:
            self.committed_tail = self.tail

    def to_dict(self) -> dict[str, Any]:
        return {
            "sid": self.sid, "path": self.path, "name": self.name, "dev": self.dev, "ino": self.ino,
            "compressed": self.compressed, "offset": self.committed_offset, "line": self.committed_line,
            "fp": self.fp, "fp_len": self.fp_len, "status": self.status, "shadow_of": self.shadow_of,
            "continued_by": self.continued_by, "base_line": self.base_line, "tail": self.committed_tail.hex(),
            "skipping": self.skipping and self.committed_offset == self.offset, "sig": list(self.sig),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Stream:
        s = cls(sid=str(d["sid"]), path=str(d["path"]), name=str(d["name"]), dev=int(d["dev"]), ino=int(d["ino"]),
                compressed=bool(d.get("compressed")), fp=str(d.get("fp", "")), fp_len=int(d.get("fp_len", 0)),
                status=str(d.get("status", ACTIVE)), shadow_of=d.get("shadow_of"),
                continued_by=d.get("continued_by"), base_line=int(d.get("base_line", 0)),
                skipping=bool(d.get("skipping")))
        s.offset = s.committed_offset = int(d.get("offset", 0))
        s.line = s.committed_line = int(d.get("line", 0))
        s.tail = s.committed_tail = bytes.fromhex(str(d.get("tail", "")))
        sig = d.get("sig") or (-1, -1)
        s.sig = (int(sig[0]), int(sig[1]))
        return s


@dataclass(slots=True)
class Chunk:
    """Complete lines read from one stream in one poll. ``final``: the stream ends here (flush pending records)."""

    stream: Stream
    first_line: int  # number of lines[0] (1-based)
    start: int  # byte offset of lines[0]
    data: bytes  # the bytes consumed, newlines included
    lines: list[str]
    final: bool = False

    @property
    def end(self) -> int:
        return self.start + len(self.data)

    def offset_of(self, line_no: int) -> int:
        """Byte offset where line ``line_no`` starts (``first_line <= line_no <= last + 1``); scans from the end."""
        last = self.first_line + len(self.lines) - 1
        if line_no > last:
            return self.end
        if line_no <= self.first_line:
            return self.start
        pos = len(self.data) - 1  # the newline that ends the last line
        for _ in range(last - line_no + 1):
            pos = self.data.rfind(b"\n", 0, pos)
        return self.start + pos + 1


def is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def pattern_root(patterns: Sequence[str]) -> str:
    """The deepest folder holding everything the patterns can match: records name files relative to it."""
    bases = []
    for p in patterns:
        if is_glob(p):
            fixed: list[str] = []
            for part in os.path.normpath(p).split(os.sep):
                if is_glob(part):
                    break
                fixed.append(part)
            base = os.sep.join(fixed) or "."
            bases.append(os.path.abspath(base if os.path.isdir(base) else os.path.dirname(base) or "."))
        elif os.path.isdir(p):
            bases.append(os.path.abspath(p))
        else:
            bases.append(os.path.dirname(os.path.abspath(p)))
    return os.path.commonpath(bases) if bases else os.getcwd()


def bytes_at(path: str, compressed: bool, offset: int, n: int) -> bytes | None:
    """``n`` bytes of a file (decompressed when ``compressed``) at ``offset``; None when they cannot be read."""
    if n == 0:
        return b""
    try:
        if compressed:
            gz = GzipReader(path)
            try:
                if gz.skip(offset) < offset:
                    return None
                return gz.read(n)
            finally:
                gz.close()
        with open(path, "rb") as fh:
            fh.seek(offset)
            return fh.read(n)
    except (OSError, zlib.error):
        return None


def is_gzip(path: str) -> bool | None:
    """Whether a file starts with gzip's magic bytes; None when it cannot be opened."""
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == GZIP_MAGIC
    except OSError:
        return None


def gzip_complete(path: str) -> bool:
    """Whether a gzip file ends its last member: a rotated file still being compressed does not."""
    try:
        gz = GzipReader(path)
    except OSError:
        return False
    try:
        while not gz.at_eof:
            gz.fill(len(gz.buf) + (1 << 20))
        return gz.complete
    except zlib.error:
        return True  # corrupt: nothing more will come; read what decodes
    finally:
        gz.close()


def read_prefix(path: str, n: int, compressed: bool) -> bytes | None:
    """A file's first ``n`` bytes (decompressed when ``compressed``); None when they cannot be read."""
    try:
        if compressed:
            gz = GzipReader(path)
            try:
                return gz.read(n)
            finally:
                gz.close()
        with open(path, "rb") as fh:
            return fh.read(n)
    except (OSError, zlib.error):
        return None
