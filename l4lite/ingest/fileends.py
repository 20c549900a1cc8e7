"""A file's two ends, the part of every file the job context samples: its first and its last lines.

A gzip'd log is the same evidence as its plain copy, so its tail is read too (inflated from the start, up to
``GZIP_TAIL_BYTES``); a rotated log's ends are its oldest piece's head and its newest piece's tail; stdin's are
what is held of it.
"""

from __future__ import annotations

import gzip
import os
import zlib
from typing import Any

from l4lite.ingest.files import GZIP_MAGIC, stdin_sample

HEAD_BYTES = 32 * 1024  # start-up: NCCL headers, hostname banners, the first times
TAIL_BYTES = 16 * 1024  # the end: torchelastic's failure summary, the last times
GZIP_TAIL_BYTES = 64 << 20  # a gzip file is inflated up to this many bytes to reach its tail


def file_ends(f: Any) -> tuple[list[str], list[str]]:
    """The first and last lines of a file: its head and its tail (a gzip file inflated, ``gzip_ends``)."""
    parts = getattr(f, "parts", ())
    if parts:  # a rotated log: the head of its oldest piece, the tail of its newest
        return file_ends(parts[0])[0], file_ends(parts[-1])[1]
    path = getattr(f, "path", None)
    enc = getattr(f, "encoding", "utf-8") or "utf-8"
    if path == "-":  # stdin: read once and replayed to the reader (``files.stdin_sample``); both ends when whole
        data, whole = stdin_sample()
        if data.startswith(GZIP_MAGIC):
            return [], []
        head = data[:HEAD_BYTES]
        lines = head.decode(enc, "replace").replace("\x00", "").splitlines()
        tail = data[max(HEAD_BYTES, len(data) - TAIL_BYTES):] if whole and len(data) > HEAD_BYTES else b""
        return (lines[:-1] if len(head) == HEAD_BYTES else lines), tail_lines(tail, enc)
    if not path:
        return [], []
    try:
        if getattr(f, "compressed", False):  # its tail too, inflated up to ``GZIP_TAIL_BYTES``: the same evidence
            head, tail = gzip_ends(path)
            head_lines = head.decode(enc, "replace").replace("\x00", "").splitlines()
            return head_lines[:-1] if len(head) == HEAD_BYTES else head_lines, tail_lines(tail, enc)
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            head = fh.read(HEAD_BYTES)
            tail = b""
            if size > HEAD_BYTES:
                fh.seek(max(HEAD_BYTES, size - TAIL_BYTES))
                tail = fh.read(TAIL_BYTES)
    except (OSError, EOFError, zlib.error):  # unreadable, truncated or corrupt: ingest warns about it
        return [], []
    head_lines = head.decode(enc, "replace").replace("\x00", "").splitlines()
    if len(head) == HEAD_BYTES:
        head_lines = head_lines[:-1]
    return head_lines, tail_lines(tail, enc)


def gzip_ends(path: str) -> tuple[bytes, bytes]:
    """The first ``HEAD_BYTES`` and the last ``TAIL_BYTES`` (past the head) of a gzip file inflated; no tail past
    ``GZIP_TAIL_BYTES`` (a gzip file is read from its start to reach its end)."""
    with gzip.open(path, "rb") as fh:
        head = fh.read(HEAD_BYTES)
        tail, seen = b"", len(head)
        while seen < GZIP_TAIL_BYTES and (chunk := fh.read(1 << 20)):
            tail, seen = (tail + chunk)[-TAIL_BYTES:], seen + len(chunk)
        return head, b"" if seen >= GZIP_TAIL_BYTES else tail


def tail_lines(tail: bytes, enc: str) -> list[str]:
    """The whole lines of a file's last bytes (the first one is cut)."""
    return tail.decode(enc, "replace").replace("\x00", "").splitlines()[1:] if tail else []
