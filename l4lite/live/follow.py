"""Follow growing log files: new lines per poll, across rotation, truncation, deletion and restarts.

A *stream* is one contiguous byte sequence read from its start (or continued from another stream's offset): a
file's inode from when it was first seen until it is truncated, deleted or rotated away. Streams are identified by
the file's ``(device, inode)`` and a fingerprint (hash of the first bytes), so that

* rotation by rename keeps reading the old inode (held open) to its end while the new file starts at line 1;
* copy-truncate (the size shrinks, or the first bytes change) ends the stream; if the copy is among the followed
  files (same first bytes, same bytes just before the stream's offset), the copy is read from that offset, so that
  lines written between the last poll and the truncation are neither lost nor read twice;
* a compressed rotated file (``*.gz``) whose content starts like a stream already read is read only past that
  stream's offset (usually nothing); any other compressed file is read once;
* after a restart, the committed offsets in the state resume each stream where durable processing stopped.

Offsets are only *committed* by the caller (``Stream.commit``) once the lines before them are durably processed;
``to_state`` saves committed offsets only. Nothing here prints: warnings go to the ``warn`` callback.
"""

from __future__ import annotations

import contextlib
import glob
import os
import stat
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from l4lite.ingest.decode import without_escapes
from l4lite.ingest.files import sniff
from l4lite.live.followio import (
    ACTIVE,
    ENDED,
    FINGERPRINT_BYTES,
    MAX_ENDED_KEPT,
    MAX_LINE_BYTES,
    MAX_READ_BYTES,
    MIN_MATCH_BYTES,
    SHADOW,
    SKIPPED,
    TAIL_BYTES,
    Chunk,
    GzipReader,
    Stream,
    bytes_at,
    fingerprint,
    gzip_complete,
    is_glob,
    is_gzip,
    pattern_root,
    read_prefix,
    rotated_from,
    rotation_stem,
)

__all__ = ["Chunk", "Follower", "GzipReader", "MAX_LINE_BYTES", "Stream", "pattern_root", "rotated_from",
           "rotation_stem"]


class Follower:
    """Polls paths, directories and globs (re-expanded every poll) and returns new complete lines as chunks."""

    def __init__(
        self,
        patterns: Sequence[str],
        *,
        root: str | None = None,
        exclude: Iterable[str] = (),  # files and folders never followed
        warn: Callable[[str], None] | None = None,
        orphan_idle: float = 5.0,
        partial_after: float = 5.0,
        max_open: int = 512,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.patterns = list(patterns)
        self.root = root or pattern_root(self.patterns)
        self.exclude = {os.path.abspath(p) for p in exclude}
        self.warn = warn or (lambda message: None)
        self.orphan_idle = orphan_idle
        self.partial_after = partial_after
        self.max_open = max_open
        self.max_read = MAX_READ_BYTES  # per stream per poll; the caller may lower it to bound a poll's work
        self.capped = False  # the last poll left bytes unread because of ``max_read``
        self.clock = clock
        self.streams: dict[str, Stream] = {}
        self._by_inode: dict[tuple[int, int], str] = {}  # live (dev, ino) -> sid of its current stream
        self._next_id = 1
        self._open: dict[str, None] = {}  # sids with an open handle, oldest first
        self._restored: set[str] = set()  # streams from a saved state, not yet checked against their file
        self._unreadable: set[str] = set()
        self.retired_lines = 0  # committed lines of ended streams no longer kept

    # ----------------------------------------------------------------------------------------------- state
    def to_state(self) -> dict[str, Any]:
        """Committed positions of every stream (ended ones beyond the most recent are retired first)."""
        self._retire()
        return {"next_id": self._next_id, "root": self.root, "retired_lines": self.retired_lines,
                "streams": [s.to_dict() for s in self.streams.values()]}

    def _retire(self) -> None:
        """Forget the oldest ended streams (their lines stay counted in ``retired_lines``)."""
        ended = [s for s in self.streams.values() if s.status == ENDED]
        for s in ended[: max(0, len(ended) - MAX_ENDED_KEPT)]:
            self.retired_lines += s.committed_line - s.base_line
            del self.streams[s.sid]
            if self._by_inode.get((s.dev, s.ino)) == s.sid:
                del self._by_inode[(s.dev, s.ino)]

    def load_state(self, data: dict[str, Any]) -> None:
        """Resume from saved committed offsets; each file is re-identified on the next poll."""
        self._next_id = max(self._next_id, int(data.get("next_id", 1)))
        self.retired_lines = int(data.get("retired_lines", 0))
        for d in data.get("streams", []):
            s = Stream.from_dict(d)
            self.streams[s.sid] = s
            self._by_inode[(s.dev, s.ino)] = s.sid  # later streams of a reused inode win
            if s.status != ENDED:
                self._restored.add(s.sid)

    @property
    def lines_committed(self) -> int:
        """Lines durably processed over all streams (a continued copy counts only its own new lines)."""
        return self.retired_lines + sum(s.committed_line - s.base_line for s in self.streams.values())

    # ----------------------------------------------------------------------------------------------- discovery
    def expand(self) -> list[str]:
        """Current files matching the patterns (directories walked), in a stable order."""
        seen: dict[str, None] = {}
        for pattern in self.patterns:
            for path in self.expand_one(pattern):
                seen.setdefault(path, None)
        return list(seen)

    def expand_one(self, pattern: str) -> list[str]:
        """The files one path, directory or glob stands for right now (excluded paths left out)."""
        out: list[str] = []
        candidates = sorted(glob.glob(pattern, recursive=True)) if is_glob(pattern) else [pattern]
        for c in candidates:
            if os.path.isdir(c):
                for dirpath, dirnames, filenames in os.walk(c):
                    dirnames.sort()
                    out.extend(os.path.join(dirpath, f) for f in sorted(filenames))
            elif os.path.exists(c):
                out.append(c)
        return [p for p in out if not self._excluded(os.path.abspath(p))]

    def _excluded(self, apath: str) -> bool:
        """An excluded file, or a file inside an excluded folder (the tail's own outputs and state)."""
        if apath in self.exclude:
            return True
        parent = os.path.dirname(apath)
        while parent and parent != os.path.dirname(parent):
            if parent in self.exclude:
                return True
            parent = os.path.dirname(parent)
        return False

    def _rel(self, path: str) -> str:
        rel = os.path.relpath(os.path.abspath(path), self.root)
        return path if rel.startswith("..") else rel

    # ----------------------------------------------------------------------------------------------- polling
    def poll(self, *, finish: bool = False) -> list[Chunk]:
        """Rescan the patterns, notice rotation/truncation/deletion, and read new complete lines.

        ``finish``: also take unterminated last lines and end orphaned streams now (the last poll of --once).
        """
        now = self.clock()
        chunks: list[Chunk] = []
        self.capped = False
        seen = self._rescan(chunks, now)
        done: set[str] = set()
        while True:  # streams started during the pass (after a truncation, a copy taking over) are read too
            todo = [s for s in self.streams.values() if s.status == ACTIVE and s.sid not in done]
            if not todo:
                return chunks
            for s in todo:
                done.add(s.sid)
                if s.status != ACTIVE:
                    continue
                if (s.dev, s.ino) in seen:
                    s.orphan_since = None
                elif s.orphan_since is None:
                    s.orphan_since = now
                if s.compressed:
                    self._read_gzip(s, chunks, now, finish)
                else:
                    self._read_plain(s, chunks, now, finish)

    def _rescan(self, chunks: list[Chunk], now: float) -> set[tuple[int, int]]:
        seen: set[tuple[int, int]] = set()
        fresh: list[tuple[str, os.stat_result]] = []
        for path in self.expand():
            try:
                st = os.stat(path)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            ident = (st.st_dev, st.st_ino)
            if ident in seen:
                continue  # a hard link to a file already listed
            seen.add(ident)
            sid = self._by_inode.get(ident)
            if sid is None:
                fresh.append((path, st))
                continue
            s = self.streams[sid]
            if s.status == ENDED and (st.st_size, st.st_mtime_ns) != s.sig:
                # An ended stream's file changed: a compressed copy is only re-checked, anything else (or a
                # reused inode number) is a new file.
                if s.compressed and self._intact(s):
                    s.sig = (st.st_size, st.st_mtime_ns)
                else:
                    del self._by_inode[ident]
                    fresh.append((path, st))
                continue
            if s.path != path:
                s.path, s.name = path, self._rel(path)
        if self._restored:
            self._check_restored(seen, chunks, now)
        for path, st in fresh:
            self._adopt(path, st, chunks)
        return seen

    def _check_restored(self, seen: set[tuple[int, int]], chunks: list[Chunk], now: float) -> None:
        """After a restart: a stream continues only if its inode still starts with the same bytes."""
        for sid in sorted(self._restored, key=lambda x: int(x[1:]) if x[1:].isdigit() else 0):
            s = self.streams[sid]
            if (s.dev, s.ino) not in seen:
                found = self._find_in_folder(s)  # renamed out of the patterns while we were down
                if found is None:
                    self._by_inode.pop((s.dev, s.ino), None)
                    if s.status == ACTIVE:
                        self._end(s, chunks)
                    else:
                        s.status = ENDED
                    continue
                s.path, s.orphan_since = found, now
            if s.status == SKIPPED:
                continue
            prefix = read_prefix(s.path, s.fp_len, s.compressed)
            if prefix is None or len(prefix) != s.fp_len or fingerprint(prefix) != s.fp:
                self._replaced(s, chunks)
        self._restored.clear()

    @staticmethod
    def _find_in_folder(s: Stream) -> str | None:
        folder = os.path.dirname(s.path) or "."
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for e in entries:
                with contextlib.suppress(OSError):
                    if e.inode() == s.ino and e.is_file() and e.stat().st_dev == s.dev:
                        return e.path
        return None

    def _adopt(self, path: str, st: os.stat_result, chunks: list[Chunk]) -> None:
        """A file not seen before: a copy or compressed copy of a known stream, or new content read from 0."""
        compressed = is_gzip(path)
        if compressed is None:
            return
        head = read_prefix(path, FINGERPRINT_BYTES, compressed)
        if head is None:
            if path not in self._unreadable:
                self._unreadable.add(path)
                self.warn(f"{path}: cannot be read yet (unreadable or not a valid gzip); will retry")
            return
        if compressed and len(head) < FINGERPRINT_BYTES and not gzip_complete(path):
            return  # still being compressed: decide once its first bytes are all there
        s = self._new_stream(path, st, compressed)
        encoding, why = sniff(head)
        if encoding not in ("utf-8", None) and not why:
            why = f"{encoding} text (tail reads UTF-8)"
        if why:
            s.status = SKIPPED
            self.warn(f"{path}: skipped ({why})")
            return
        s.fp_len, s.fp = len(head), fingerprint(head)
        origin = self._match(path, head, exclude=s)
        if origin is None:
            return
        if origin.status == ACTIVE and origin.continued_by is None and self._intact(origin):
            s.status, s.shadow_of = SHADOW, origin.sid  # a copy of a live file: read only if that one ends
            return
        self._continue(s, origin)

    def _match(self, path: str, head: bytes, exclude: Stream) -> Stream | None:
        """The stream that file ``path`` is a rotated copy of: its name is a rotation of the stream's name in
        the same folder and it starts with the stream's first bytes; the furthest read wins."""
        best: Stream | None = None
        folder, base = os.path.split(os.path.abspath(path))
        for s in self.streams.values():
            if s is exclude or s.status in (SKIPPED, SHADOW) or s.fp_len < MIN_MATCH_BYTES or s.fp_len > len(head):
                continue
            s_folder, s_base = os.path.split(os.path.abspath(s.path))
            if s_folder != folder or not rotated_from(base, s_base):
                continue
            if fingerprint(head[: s.fp_len]) != s.fp:
                continue
            if best is None or s.offset > best.offset:
                best = s
        return best

    def _continue(self, copy: Stream, origin: Stream) -> bool:
        """``copy`` holds ``origin``'s content: read it from where ``origin`` stopped (if the bytes agree)."""
        tail = origin.tail
        if origin.offset and bytes_at(copy.path, copy.compressed, origin.offset - len(tail), len(tail)) != tail:
            copy.status, copy.shadow_of = ACTIVE, None  # same start, other content: a file of its own
            return False
        copy.status, copy.shadow_of = ACTIVE, None
        copy.offset = copy.committed_offset = origin.offset
        copy.line = copy.committed_line = copy.base_line = origin.line
        copy.tail = copy.committed_tail = tail
        origin.continued_by = copy.sid
        for other in self.streams.values():
            if other.status == SHADOW and other.shadow_of == origin.sid:
                other.shadow_of = copy.sid
        return True

    def _new_stream(self, path: str, st: os.stat_result, compressed: bool) -> Stream:
        sid = f"s{self._next_id}"
        self._next_id += 1
        s = Stream(sid=sid, path=path, name=self._rel(path), dev=st.st_dev, ino=st.st_ino, compressed=compressed,
                   last_data=self.clock())
        self.streams[sid] = s
        self._by_inode[(st.st_dev, st.st_ino)] = sid
        return s

    # ----------------------------------------------------------------------------------------------- ending
    def _end(self, s: Stream, chunks: list[Chunk]) -> None:
        """The stream will not grow any more: close it, tell the caller, hand over to a copy that holds more."""
        self._close(s)
        s.status = ENDED
        if self._by_inode.get((s.dev, s.ino)) == s.sid:
            try:
                st = os.stat(s.path)
                if (st.st_dev, st.st_ino) != (s.dev, s.ino):
                    raise FileNotFoundError(s.path)
                s.sig = (st.st_size, st.st_mtime_ns)  # still there (e.g. a compressed file read to its end)
            except OSError:
                del self._by_inode[(s.dev, s.ino)]  # gone: the inode number may be reused by a new file
        chunks.append(Chunk(s, s.line + 1, s.offset, b"", [], final=True))
        if s.continued_by is not None:
            return
        for shadow in [x for x in self.streams.values() if x.status == SHADOW and x.shadow_of == s.sid]:
            if self._continue(shadow, s):
                break

    def _replaced(self, s: Stream, chunks: list[Chunk]) -> None:
        """Truncated, or the inode now holds other content: end the old stream, read the file again from 0."""
        self._end(s, chunks)
        if s.continued_by is None:
            self.warn(f"{s.path}: truncated or replaced after line {s.line}; "
                      "lines written just before the truncation may be missed (no copy of them is followed)")
        self._by_inode.pop((s.dev, s.ino), None)
        try:
            st = os.stat(s.path)
        except OSError:
            return
        if (st.st_dev, st.st_ino) == (s.dev, s.ino):
            fresh = self._new_stream(s.path, st, bool(is_gzip(s.path)))
            self._refresh_fp(fresh)

    # ----------------------------------------------------------------------------------------------- reading
    def _read_plain(self, s: Stream, chunks: list[Chunk], now: float, finish: bool) -> None:
        fd = self._handle(s)
        if fd is None:
            self._end(s, chunks)
            return
        try:
            st = os.fstat(fd)
        except OSError:
            self._end(s, chunks)
            return
        if st.st_size != s.size:
            if st.st_size < s.offset or not self._intact(s, fd):
                self._replaced(s, chunks)
                return
            s.size = st.st_size
        if s.offset < st.st_size:
            want = min(self.max_read, st.st_size - s.offset)
            if want < st.st_size - s.offset:
                self.capped = True
            try:
                data = os.pread(fd, want, s.offset)
            except OSError as exc:
                self.warn(f"{s.path}: read error: {exc}")
                data = b""
            orphan_idle = s.orphan_since is not None and now - max(s.last_data, s.orphan_since) >= self.orphan_idle
            at_end = len(data) == st.st_size - s.offset
            stale = finish or orphan_idle or time.time() - st.st_mtime >= self.partial_after
            chunk = self._cut(s, data, final_partial=at_end and stale)
            if chunk is not None:
                chunks.append(chunk)
                s.last_data = now
                if s.fp_len < FINGERPRINT_BYTES:
                    self._refresh_fp(s, fd)
        if s.orphan_since is not None and s.offset >= st.st_size:
            idle = now - max(s.last_data, s.orphan_since)
            if finish or idle >= self.orphan_idle or (st.st_nlink == 0 and idle >= min(1.0, self.orphan_idle)):
                self._end(s, chunks)

    def _read_gzip(self, s: Stream, chunks: list[Chunk], now: float, finish: bool) -> None:
        """Compressed files do not grow once written: read to the end (a slice per poll), then end the stream."""
        gz = self._handle(s)
        if gz is None:
            self._end(s, chunks)
            return
        try:
            gz.fill(self.max_read)
        except (OSError, zlib.error) as exc:
            gz.at_eof, gz.complete = True, False
            self.warn(f"{s.path}: corrupt gzip after line {s.line}: {exc}")
            finish = True
        data = bytes(gz.buf[: self.max_read])
        if len(gz.buf) > self.max_read:
            self.capped = True
        done = gz.at_eof and len(data) == len(gz.buf)
        if done and not gz.complete and not finish:
            try:
                age = time.time() - os.stat(s.path).st_ctime
            except OSError:
                age = self.partial_after
            if age < self.partial_after:
                done = False  # still being written
            else:
                self.warn(f"{s.path}: truncated gzip; reading what decodes (after line {s.line})")
        chunk = self._cut(s, data, final_partial=done) if data else None
        if chunk is not None:
            del gz.buf[: len(chunk.data)]
            chunks.append(chunk)
            s.last_data = now
        if done and not gz.buf:
            self._end(s, chunks)

    def read_ahead(self, s: Stream, start: int, limit: int) -> bytes:
        """Complete lines of a plain active stream from byte ``start``, without moving its read position (the
        fast lane looks ahead of a reader that is behind)."""
        if s.status != ACTIVE or s.compressed or s.handle is None:
            return b""
        try:
            data = os.pread(s.handle, limit, start)
        except OSError:
            return b""
        return data[: data.rfind(b"\n") + 1]

    def _cut(self, s: Stream, data: bytes, *, final_partial: bool) -> Chunk | None:
        """Turn bytes into complete lines and move the stream's read position past them."""
        start, skipped = s.offset, 0
        if s.skipping:
            nl = data.find(b"\n")
            if nl < 0:
                s.offset += len(data)
                s.tail = data[-TAIL_BYTES:]
                return None
            skipped = nl + 1
            data = data[skipped:]
            s.skipping = False
        nl = data.rfind(b"\n")
        if nl < 0 and not final_partial:
            if len(data) < MAX_LINE_BYTES:
                if skipped:
                    s.offset += skipped
                return None
            body, s.skipping = data[:MAX_LINE_BYTES], True
            self.warn(f"{s.path}:{s.line + 1}: line longer than {MAX_LINE_BYTES} bytes, cut")
        else:
            body = data if final_partial else data[: nl + 1]
        text = body.decode("utf-8", "replace")
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if "\r" in text:
            lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
        if "\x1b" in text:  # terminal colours and cursor moves, removed as the batch reader removes them
            lines = without_escapes(lines)
        consumed = data[: len(body)]
        chunk = Chunk(s, s.line + 1, start + skipped, consumed, lines)
        s.offset = start + skipped + len(body)
        s.line += len(lines)
        s.tail = (s.tail + consumed)[-TAIL_BYTES:] if len(consumed) < TAIL_BYTES else consumed[-TAIL_BYTES:]
        return chunk

    # ----------------------------------------------------------------------------------------------- helpers
    def _handle(self, s: Stream) -> Any:
        if s.handle is not None:
            self._open.pop(s.sid, None)
            self._open[s.sid] = None
            return s.handle
        try:
            st = os.stat(s.path)
        except OSError:
            return None
        if (st.st_dev, st.st_ino) != (s.dev, s.ino):
            return None
        try:
            if s.compressed:
                gz = GzipReader(s.path)
                if gz.skip(s.offset) < s.offset:
                    self.warn(f"{s.path}: shorter than the saved offset {s.offset}")
                s.handle = gz
            else:
                s.handle = os.open(s.path, os.O_RDONLY)
        except (OSError, zlib.error) as exc:
            self.warn(f"{s.path}: cannot open: {exc}")
            return None
        while self._open and len(self._open) >= self.max_open:
            oldest = next(iter(self._open))
            if oldest in self.streams:
                self._close(self.streams[oldest])
            else:
                self._open.pop(oldest)
        self._open[s.sid] = None
        return s.handle

    def _close(self, s: Stream) -> None:
        self._open.pop(s.sid, None)
        if s.handle is None:
            return
        with contextlib.suppress(OSError):
            if isinstance(s.handle, int):
                os.close(s.handle)
            else:
                s.handle.close()
        s.handle = None

    def close(self) -> None:
        for s in self.streams.values():
            self._close(s)

    def _intact(self, s: Stream, fd: int | None = None) -> bool:
        """The file still starts with the bytes this stream started with."""
        if s.fp_len == 0:
            return True
        try:
            prefix = os.pread(fd, s.fp_len, 0) if fd is not None else read_prefix(s.path, s.fp_len, s.compressed)
        except OSError:
            return False
        return prefix is not None and len(prefix) == s.fp_len and fingerprint(prefix) == s.fp

    def _refresh_fp(self, s: Stream, fd: int | None = None) -> None:
        try:
            prefix = os.pread(fd, FINGERPRINT_BYTES, 0) if fd is not None else read_prefix(
                s.path, FINGERPRINT_BYTES, s.compressed)
        except OSError:
            return
        if prefix is not None:
            s.fp_len, s.fp = len(prefix), fingerprint(prefix)
