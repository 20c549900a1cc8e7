"""Discovery and reading of a job's log files.

A job path may be a directory tree, one or several files, gzip files or ``-`` (stdin). Text is recognised by
sniffing the first kilobytes, never by extension, because crashed jobs leave logs named ``*.out``, ``*.1`` or
nothing at all next to core dumps and checkpoints. Reading never materialises a whole file: bytes are read in
chunks, decompressed incrementally and split into lines, and a line longer than the cap is truncated while the
rest of it is skipped in chunks, so a 10 MB line of tensor dump costs neither memory nor much time.
PyTorch Flight Recorder dumps are recognised by their first bytes too and listed apart (``Job.dumps``), for
``flight_recorder`` to read: they are evidence, not lines.
"""

from __future__ import annotations

import codecs
import errno
import fnmatch
import json
import os
import re
import stat
import sys
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from l4lite.errors import InputError
from l4lite.ingest.flight_recorder import DumpFile, dump_kind
from l4lite.ingest.unpack import archive_kind, unpack
from l4lite.records import Accounting

SNIFF_BYTES = 8192
CHUNK_BYTES = 1 << 20
DEFAULT_MAX_LINE_CHARS = 64 * 1024
MAX_INFLATE = 4 << 20  # bound on bytes produced per decompress call (gzip bombs)
_SKIP_DIRS = frozenset({".git", ".hg", ".svn", "__pycache__"})
# Files inside a job folder that are not logs of the job: the answer key of a simulated job must never be read
# as evidence. Matched (fnmatch) against file names found while walking a directory, never against paths given
# explicitly.
DEFAULT_EXCLUDE: tuple[str, ...] = ("ground_truth.json",)

GZIP_MAGIC = b"\x1f\x8b"
_BINARY_MAGICS: tuple[tuple[bytes, str], ...] = (
    (b"\x7fELF", "ELF executable or core dump"),
    (b"PK\x03\x04", "zip archive (e.g. a torch checkpoint)"),
    (b"\x89PNG", "PNG image"),
    (b"\x89HDF", "HDF5 file"),
    (b"BZh", "bzip2 data (decompress it first)"),
    (b"\xfd7zXZ\x00", "xz data (decompress it first)"),
    (b"\x28\xb5\x2f\xfd", "zstd data (decompress it first)"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"\x93NUMPY", "numpy array"),
    (b"PAR1", "parquet file"),
    (b"%PDF", "PDF document"),
)
# Bytes that do not occur in text: C0 controls except \t \n \v \f \r and ESC (ANSI colours), plus DEL.
_CONTROL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 11, 12, 13, 27)) + b"\x7f"
_NON_CONTROL = bytes(b for b in range(256) if b not in _CONTROL_BYTES)
_ASCII = bytes(range(128))


@dataclass(frozen=True, slots=True)
class InputFile:
    """One readable text input. ``rel`` is relative to the job root (``-`` for stdin)."""

    path: str
    rel: str
    size: int = 0
    mtime: float | None = None
    encoding: str = "utf-8"
    compressed: bool = False
    # A piece of a large plain file (``l4lite.ingest.pieces``): bytes [start, stop) whose first line is ``first_line``.
    start: int = 0
    stop: int | None = None
    first_line: int = 1
    # A rotated log read as one stream: its pieces oldest first (``x.log.2.gz``, ``x.log.1``, ``x.log``); the
    # input's own path and name are the newest piece's (``rotation.read_chain`` names each line's piece).
    parts: tuple[InputFile, ...] = ()
    # Why the file is no log although it is text (``json_document``): its lines are counted as skipped, unread.
    not_log: str = ""

    @property
    def is_stdin(self) -> bool:
        return self.path == "-"

    @property
    def is_piece(self) -> bool:
        return self.stop is not None


@dataclass
class Job:
    """The files of a job in a deterministic order (sorted by relative path)."""

    root: str
    files: list[InputFile] = field(default_factory=list)
    dumps: list[DumpFile] = field(default_factory=list)  # Flight Recorder dumps: not logs, read apart


class StdinReplay:
    """stdin read once: its first bytes can be looked at before the job is read (``peek``, for the job context)
    and are read again, then the rest of the stream, by ``read``."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self.head = b""
        self.pos = 0

    def peek(self, n: int) -> bytes:
        """The first ``n`` bytes (fewer at the end of the stream), read from stdin once."""
        while len(self.head) < n and self.pos == 0:
            chunk = self.raw.read(n - len(self.head))
            if not chunk:
                break
            self.head += chunk
        return self.head[:n]

    def read(self, n: int = -1) -> bytes:
        if self.pos < len(self.head):
            end = len(self.head) if n < 0 else self.pos + n
            out = self.head[self.pos:end]
            self.pos += len(out)
            return out
        return self.raw.read(n)


_replays: dict[int, StdinReplay] = {}


def stdin_stream() -> StdinReplay | None:
    """The binary stdin of this process behind its replay (the same object for every reader); None for a stdin
    that is text only (tests, embedding)."""
    raw = getattr(sys.stdin, "buffer", None)
    if raw is None:
        return None
    replay = _replays.get(id(raw))
    if replay is None or replay.raw is not raw:
        replay = _replays[id(raw)] = StdinReplay(raw)
    return replay


STDIN_WHOLE_BYTES = 16 << 20  # stdin up to this size is held before the job is read: sampled at both ends


class StdinSample(NamedTuple):
    """stdin's first bytes and whether they are all of it."""

    data: bytes
    whole: bool


def stdin_sample() -> StdinSample:
    """stdin's first bytes (up to ``STDIN_WHOLE_BYTES``, kept for the reader to read again) and whether they are
    all of it: a job piped in whole (``cat *.log | l4lite analyze -``) ends with its failure summaries and its
    last times, which the job's facts need as a file's last kilobytes give them."""
    stream = stdin_stream()
    if stream is None:
        return StdinSample(b"", False)
    data = stream.peek(STDIN_WHOLE_BYTES)
    return StdinSample(data, len(data) < STDIN_WHOLE_BYTES)


def utf16_bom(head: bytes) -> bool:
    """Whether a file's first bytes are UTF-16 text behind a byte-order mark. The two bytes alone are not enough:
    a log whose first line starts with stray bytes ``FF FE`` (a truncated write, a terminal's noise) would be read
    as UTF-16 and every line of it turned to nonsense. UTF-16 log text is mostly ASCII, so it carries NUL bytes;
    UTF-8 text after the two bytes carries none."""
    if not head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return False
    rest = head[2:]
    return not rest or 0 in rest or not _utf8_text(rest)


def _utf8_text(data: bytes) -> bool:
    """Whether ``data`` decodes as UTF-8 but for a character cut at its end."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(data) - 4
    return True


def sniff(head: bytes) -> tuple[str | None, str]:
    """Classify the first bytes of a file: ``(encoding, "")`` for text, ``(None, why)`` for binary."""
    if not head:
        return "utf-8", ""
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8", ""
    if utf16_bom(head):
        return "utf-16", ""
    if head[257:262] == b"ustar":
        return None, "tar archive (name it on the command line to read it)"
    for magic, what in _BINARY_MAGICS:
        if head.startswith(magic):
            return None, what
    n = len(head)
    nul = head.count(0)
    if nul > n // 4 and n >= 4:
        # UTF-16 without a BOM: every other byte is NUL (ASCII text).
        even, odd = head[0::2], head[1::2]
        if odd.count(0) > 0.9 * len(odd) and even.count(0) < 0.1 * len(even):
            return "utf-16-le", ""
        if even.count(0) > 0.9 * len(even) and odd.count(0) < 0.1 * len(odd):
            return "utf-16-be", ""
    if nul:
        # NUL bytes alone do not make a file binary: a node that died leaves its log's tail zero-filled (the
        # size grew but the data never reached the disk) and the reader removes them. What is left decides.
        head = head.replace(b"\x00", b"")
        n = len(head)
        if not n:  # no text at all where a log starts (a preallocated or sparse file): not worth reading through
            return None, "only NUL bytes (a zero-filled file)"
    control = n - len(head.translate(None, _CONTROL_BYTES))
    if control > 0.10 * n:
        return None, "binary data"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < n - 4:  # not merely a character cut at the end of the sample
            high = len(head.translate(None, _ASCII))
            if high > 0.30 * n:
                return None, "binary data"
    return "utf-8", ""


MAX_DOCUMENT = 1 << 20  # a metadata or configuration file is small; a larger JSON file is read as lines


def json_document(path: str, head: bytes, size: int, compressed: bool) -> str:
    """Why a text file is not a log but one JSON document (a run's metadata, a config), or "" for a log.

    A JSON log has one record per line; a pretty-printed document opens with a line holding only its brace and
    parses whole, as one object. Its lines hold no event of the job (a time in it is a value, not a stamp), and
    read as lines they would make a node of their own. Small files only, so the check costs one read."""
    if size > MAX_DOCUMENT or head.lstrip(codecs.BOM_UTF8 + b" \t\r\n")[:1] != b"{" or \
            head.lstrip(codecs.BOM_UTF8).split(b"\n", 1)[0].strip() != b"{":
        return ""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_DOCUMENT + 1)
        if compressed:  # a gzip'd document is the same document
            data = zlib.decompressobj(wbits=31).decompress(data, MAX_DOCUMENT + 1)
        doc = json.loads(data.decode("utf-8-sig"))
    except (OSError, ValueError, RecursionError, zlib.error):
        return ""
    return "one JSON document (metadata or configuration), not a log" if isinstance(doc, dict) else ""


def _read_head(path: str) -> tuple[bytes, bool]:
    """The first bytes of a file, decompressed when it is gzip (whatever its name)."""
    with open(path, "rb") as fh:
        head = fh.read(SNIFF_BYTES)
        if not head.startswith(GZIP_MAGIC):
            return head, False
        raw = head + fh.read(64 * 1024)
    d = zlib.decompressobj(wbits=31)
    try:
        out = d.decompress(raw, SNIFF_BYTES)
    except zlib.error:
        out = b""
    return out, True


def discover(paths: Sequence[str], accounting: Accounting,
             exclude: Sequence[str] = DEFAULT_EXCLUDE) -> Job:
    """List the readable text files of a job; warn about (and count) everything else.

    Raises InputError only when nothing readable remains.
    """
    if not paths:
        raise InputError("no input given: pass a job directory, log files or - for stdin")
    found: dict[tuple[int, int] | str, tuple[str, os.stat_result | None, str]] = {}
    roots: list[str] = []
    missing: list[str] = []
    stdin = False
    for given in paths:
        if given == "-":
            stdin = True
            continue
        apath = os.path.abspath(given)
        try:
            st = os.stat(apath)
        except OSError as exc:
            why = os_reason(exc)
            if os.path.islink(apath):
                accounting.skip_file(why, given, os.strerror(exc.errno or 0) if exc.errno else str(exc))
            else:
                accounting.warn(f"{given}: {os.strerror(exc.errno) if exc.errno else exc}")
            missing.append(given)
            continue
        kind = None if stat.S_ISDIR(st.st_mode) else archive_kind(apath)
        if kind is not None:
            apath = unpack(apath, kind, accounting, given)
            st = os.stat(apath)
        if stat.S_ISDIR(st.st_mode):
            roots.append(apath)
            _walk(apath, st, found, accounting, tuple(exclude))
        else:
            roots.append(os.path.dirname(apath))
            _add_file(apath, st, found, accounting, explicit=True)
    root = _common_root(roots) if roots else ("-" if stdin else "")
    prefix = root.rstrip(os.sep) + os.sep
    files: list[InputFile] = []
    dumps: list[DumpFile] = []
    for apath, st, how in found.values():
        if root in ("", "-"):
            rel = os.path.basename(apath)
        elif apath.startswith(prefix):  # the usual case, without relpath's cost per file
            rel = apath[len(prefix):]
        else:
            rel = os.path.relpath(apath, root)
        if how == "pipe":
            files.append(InputFile(path=apath, rel=rel, size=0, mtime=None))
            continue
        try:
            head, compressed = _read_head(apath)
        except OSError as exc:
            accounting.skip_file("unreadable", rel, os.strerror(exc.errno) if exc.errno else str(exc))
            continue
        kind = dump_kind(head)
        if kind is not None:
            dumps.append(DumpFile(apath, rel, kind, compressed))
            continue
        encoding, why = sniff(head)
        if encoding is None:
            accounting.skip_file("archive" if why.startswith("tar") else "binary", rel, why)
            continue
        assert st is not None
        files.append(InputFile(path=apath, rel=rel, size=st.st_size, mtime=st.st_mtime,
                               encoding=encoding, compressed=compressed,
                               not_log=json_document(apath, head, st.st_size, compressed)))
    files = chain_rotated(files)
    files.sort(key=lambda f: f.rel)
    if stdin:
        files.insert(0, InputFile(path="-", rel="-"))
    dumps.sort(key=lambda d: d.rel)
    if not files and not dumps:
        skipped = sum(accounting.files_skipped.values())
        detail = f"; {skipped} files skipped (" + ", ".join(
            f"{k}={v}" for k, v in sorted(accounting.files_skipped.items())) + ")" if skipped else ""
        names = ", ".join(paths)
        if missing and len(missing) == len(paths):
            raise InputError(f"{missing[0]}: no such file or directory" if len(missing) == 1
                             else f"none of the inputs exist: {names}")
        raise InputError(f"{names}: no readable text log files{detail}")
    return Job(root=root, files=files, dumps=dumps)


# x.log.1, x.log.2.gz (logrotate), x.log-20241203(.gz) (its dateext; hourly ``-%Y%m%d%H``, and ``-%Y%m%d-%s``
# with the epoch seconds, as its manual suggests for more than one piece a day), 0.log.20241203-144221(.gz) (the
# kubelet)
_ROTATED = re.compile(r"(.+?)(?:\.(\d{1,3})|[.-](\d{8}(?:\d\d)?(?:-\d{6}|-\d{10})?))(?:\.gz)?$")


def rotation_key(rel: str) -> tuple[str, int, str]:
    """How the pieces of one rotated log sort: by the current file's path, oldest first (``x.log.2.gz``,
    ``x.log.1``, ``x.log``; dated pieces by date, before the current file), so that a log is read in the order
    it was written."""
    m = _ROTATED.fullmatch(rel)
    if m is None:
        return rel, 0, ""
    if m[2] is not None:
        return m[1], -int(m[2]), ""
    return m[1], -1, m[3]  # dated pieces: the oldest date first, all before the current file


def chain_rotated(files: list[InputFile]) -> list[InputFile]:
    """The pieces of each rotated log as one input (``InputFile.parts``), read as one stream in the order they
    were written, so that a traceback cut by the rotation stays one record and an untimed line at the top of a
    piece keeps the time of the line before it. A chain needs its current file (``x.log`` beside ``x.log.1``):
    ``out.0``, ``out.1`` without an ``out`` are one file per task, not a rotated log."""
    groups: dict[str, list[InputFile]] = {}
    for f in files:
        groups.setdefault(rotation_key(f.rel)[0], []).append(f)
    out: list[InputFile] = []
    for base, members in groups.items():
        if len(members) < 2 or base not in {m.rel for m in members} \
                or any(m.rel.endswith((".0", ".0.gz")) for m in members):
            out.extend(members)
            continue
        members.sort(key=lambda f: rotation_key(f.rel))
        newest = members[-1]
        mtimes = [m.mtime for m in members if m.mtime is not None]
        out.append(InputFile(newest.path, newest.rel, sum(m.size for m in members), max(mtimes, default=None),
                             newest.encoding, any(m.compressed for m in members), parts=tuple(members)))
    return out


def os_reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "symlink_loop"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "unreadable"
    if exc.errno == errno.ENOENT:
        return "broken_symlink"
    return "unreadable"


def _common_root(roots: list[str]) -> str:
    try:
        return os.path.commonpath(roots)
    except ValueError:  # different drives
        return roots[0]


def _add_file(apath: str, st: os.stat_result, found: dict, accounting: Accounting, explicit: bool) -> None:
    mode = st.st_mode
    if stat.S_ISREG(mode):
        key: tuple[int, int] | str = (st.st_dev, st.st_ino)
        if key not in found:
            found[key] = (apath, st, "file")
    elif explicit and (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
        found[apath] = (apath, None, "pipe")  # e.g. <(zcat ...): sniffed while reading
    else:
        accounting.skip_file("not_regular", apath)


def _walk(top: str, top_st: os.stat_result, found: dict, accounting: Accounting,
          exclude: tuple[str, ...] = ()) -> None:
    """Depth-first walk following directory symlinks, with loop detection on (device, inode)."""
    visited: set[tuple[int, int]] = {(top_st.st_dev, top_st.st_ino)}
    excluded = re.compile("|".join(fnmatch.translate(p) for p in exclude)).match if exclude else None
    stack = [top]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            accounting.skip_file(os_reason(exc), d, os.strerror(exc.errno) if exc.errno else str(exc))
            continue
        for entry in reversed(entries):
            if excluded is not None and excluded(os.path.normcase(entry.name)):
                accounting.files_skipped["excluded"] += 1
                continue
            try:
                st = entry.stat(follow_symlinks=True)
            except OSError as exc:
                accounting.skip_file(os_reason(exc), entry.path,
                                     os.strerror(exc.errno) if exc.errno else str(exc))
                continue
            if stat.S_ISDIR(st.st_mode):
                if entry.name in _SKIP_DIRS:
                    continue
                key = (st.st_dev, st.st_ino)
                if key in visited:
                    if entry.is_symlink():
                        accounting.skip_file("symlink_loop", entry.path, "directory already visited")
                    continue
                visited.add(key)
                stack.append(entry.path)
            else:
                _add_file(entry.path, st, found, accounting, explicit=False)


# ----------------------------------------------------------------------------------------------- reading
