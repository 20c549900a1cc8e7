"""PyTorch Flight Recorder dumps: each rank's ring buffer of the collectives it entered, read as plain data.

A hung job leaves one dump per rank (``TORCH_NCCL_DUMP_ON_TIMEOUT=1`` with ``TORCH_NCCL_DEBUG_INFO_TEMP_FILE=<prefix>``
writes ``<prefix><rank>``; ``_dump_fr_trace`` / ``_dump_nccl_trace`` return the same pickle, the ``*_json``
variants JSON). Dumps are binary, so discovery would skip them as such: ``dump_kind`` recognises them from their
first bytes (never from their names) and ``read_dump`` turns one into a ``FlightDump``.

The pickle form is read by an unpickler that refuses every global: a dump is a dict of lists, strings and
numbers, so a file that asks for a class or a function (``os.system`` via ``__reduce__``) is not a dump, and
refusing the lookup means nothing of it runs. A refused or malformed dump raises ``DumpError`` with one line
naming the file, which ``read_dumps`` turns into an input warning.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from l4lite.ingest.attribution import host_from_path
from l4lite.records import Accounting

MAX_DUMP_BYTES = 64 << 20  # a dump of 20,000 entries with stacks is a few MB
MAX_ENTRIES = 50_000  # entries kept per dump (the newest): the ring buffer's default is 2,000
MAX_FRAMES = 12  # stack frames kept per entry, innermost first as the dump has them
_RANK_IN_NAME = re.compile(r"(\d+)(?:\.json|\.pkl|\.pickle)?(?:\.gz)?$")
_PICKLE_PROTOCOLS = frozenset({2, 3, 4, 5})
_DUMP_KEYS = (b"pg_config", b"entries", b"collective_seq_id", b"profiling_name")


class DumpFile(NamedTuple):
    """A dump found by discovery: where it is, its path relative to the job root, and its form."""

    path: str
    rel: str
    kind: str  # pickle or json
    compressed: bool = False  # gzip'd (``gzip -r`` over a job's folder): read through a bounded inflate


class DumpError(ValueError):
    """A file that looked like a Flight Recorder dump but cannot be read as one (the message names the file)."""


@dataclass(frozen=True, slots=True)
class FlightEntry:
    """One collective (or point-to-point op) a rank entered, as the recorder saw it."""

    record_id: int
    pg_id: str  # the key of the group's ``pg_status``
    pg_name: str
    pg_desc: str
    seq: int  # collective_seq_id: the n-th collective of this rank in this process group
    p2p_seq: int
    op: str  # profiling_name, e.g. "nccl:all_reduce"
    input_sizes: Any
    output_sizes: Any
    state: str  # scheduled, started, completed
    retired: bool | None
    time_ns: int | None  # when the rank entered it (time_created_ns)
    is_p2p: bool
    frames: tuple[str, ...] = ()  # "name at file:line", innermost first


@dataclass
class FlightDump:
    """One rank's dump: its process groups (name -> member ranks), their status and the entries."""

    file: str  # relative to the job root
    rank: int
    node: str | None  # the host its path names, if any
    version: str
    kind: str  # pickle or json
    pg_ranks: dict[str, list[int]] = field(default_factory=dict)
    pg_desc: dict[str, str] = field(default_factory=dict)
    pg_status: dict[str, dict[str, int]] = field(default_factory=dict)  # pg id -> last_completed_collective, ...
    entries: list[FlightEntry] = field(default_factory=list)


class _NoGlobals(pickle.Unpickler):
    """An unpickler that builds only dicts, lists, tuples, strings, numbers, bools and None."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refused to load {module}.{name}: a dump holds only plain data")

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("refused a persistent id: a dump holds only plain data")


def dump_kind(head: bytes) -> str | None:
    """``"pickle"`` or ``"json"`` when the first bytes of a file are those of a Flight Recorder dump, else None."""
    if len(head) >= 2 and head[0] == 0x80 and head[1] in _PICKLE_PROTOCOLS:
        return "pickle" if any(k in head for k in _DUMP_KEYS) else None
    text = head.lstrip()
    if text.startswith(b"{") and b'"entries"' in text and any(b'"' + k + b'"' in text for k in _DUMP_KEYS[:1]
                                                              + _DUMP_KEYS[2:]):
        return "json"
    return None


def rank_of(rel: str) -> int | None:
    """The rank in a dump's file name: the recorder writes ``<prefix><rank>``."""
    m = _RANK_IN_NAME.search(os.path.basename(rel))
    return int(m.group(1)) if m else None


def load_plain(data: bytes, kind: str) -> Any:
    """The dump's object: JSON, or a pickle of plain data only (raises ``pickle.UnpicklingError`` otherwise)."""
    if kind == "json":
        return json.loads(data.decode("utf-8"))
    return _NoGlobals(io.BytesIO(data)).load()


def read_dump(path: str, rel: str, kind: str, compressed: bool = False) -> FlightDump:
    """Read one dump; ``DumpError`` (naming ``rel``) when it is refused, too large or not a dump. A gzip'd dump
    reads as the plain one: compression is how the job was archived, not what it says."""
    try:
        size = os.path.getsize(path)
        if size > MAX_DUMP_BYTES:
            raise DumpError(f"{rel}: Flight Recorder dump of {size} bytes is over the {MAX_DUMP_BYTES} byte limit")
        with open(path, "rb") as fh:
            data = fh.read(MAX_DUMP_BYTES + 1)
        if compressed:
            data = _inflate(data, rel)
    except OSError as exc:
        raise DumpError(f"{rel}: cannot read Flight Recorder dump: {exc.strerror or exc}") from None
    try:
        obj = load_plain(data, kind)
    except pickle.UnpicklingError as exc:
        raise DumpError(f"{rel}: Flight Recorder dump refused: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - a truncated or corrupt file fails in many ways; all mean "not readable"
        raise DumpError(f"{rel}: not a readable Flight Recorder dump ({type(exc).__name__}: {exc})"[:300]) from None
    return to_dump(obj, rel, kind)


def _inflate(data: bytes, rel: str) -> bytes:
    """A gzip'd dump's bytes, at most ``MAX_DUMP_BYTES`` of them (a gzip bomb is refused, not inflated)."""
    d = zlib.decompressobj(wbits=31)
    try:
        out = d.decompress(data, MAX_DUMP_BYTES + 1)
    except zlib.error as exc:
        raise DumpError(f"{rel}: not a readable compressed Flight Recorder dump ({exc})") from None
    if len(out) > MAX_DUMP_BYTES or d.unconsumed_tail:
        raise DumpError(f"{rel}: compressed Flight Recorder dump inflates past the {MAX_DUMP_BYTES} byte limit")
    return out


def to_dump(obj: Any, rel: str, kind: str) -> FlightDump:
    """Check the shape of a loaded dump and keep what the analysis needs."""
    if not isinstance(obj, dict) or not isinstance(obj.get("entries", []), list):
        raise DumpError(f"{rel}: not a Flight Recorder dump (no list of entries)")
    rank = obj.get("rank") if isinstance(obj.get("rank"), int) else rank_of(rel)
    if rank is None:
        raise DumpError(f"{rel}: Flight Recorder dump without a rank (its name should end in the rank)")
    dump = FlightDump(file=rel, rank=rank, node=host_from_path(rel), version=str(obj.get("version", "")), kind=kind)
    config = obj.get("pg_config")
    if isinstance(config, dict):
        for key, cfg in config.items():
            if not isinstance(cfg, dict):
                continue
            dump.pg_ranks[str(key)] = _ranks(cfg.get("ranks"))
            dump.pg_desc[str(key)] = str(cfg.get("desc", ""))
    status = obj.get("pg_status")
    if isinstance(status, dict):
        for key, st in status.items():
            if isinstance(st, dict):
                dump.pg_status[str(key)] = {str(k): _int(v, -1) for k, v in st.items()}
    raw = obj.get("entries") or []
    for e in raw[-MAX_ENTRIES:]:
        if isinstance(e, dict):
            dump.entries.append(_entry(e))
    dump.entries.sort(key=lambda e: e.record_id)
    return dump


def read_dumps(paths: Sequence[DumpFile], accounting: Accounting) -> list[FlightDump]:
    """Read the dumps discovery found; each one refused or unreadable costs one warning and nothing else."""
    out: list[FlightDump] = []
    for d in paths:
        try:
            out.append(read_dump(d.path, d.rel, d.kind, d.compressed))
        except DumpError as exc:
            accounting.files_skipped["flight_recorder_refused"] += 1
            accounting.warn(str(exc))
    out.sort(key=lambda d: (d.rank, d.file))
    return out


def _entry(e: dict[str, Any]) -> FlightEntry:
    pg = e.get("process_group")
    name, desc = (str(pg[0]), str(pg[1])) if isinstance(pg, list | tuple) and len(pg) >= 2 else (str(pg or ""), "")
    frames = e.get("frames") or []
    shown = tuple(f"{f.get('name', '?')} at {f.get('filename', '?')}:{f.get('line', '?')}"
                  for f in frames[:MAX_FRAMES] if isinstance(f, dict))
    retired = e.get("retired")
    return FlightEntry(
        record_id=_int(e.get("record_id"), 0), pg_id=str(e.get("pg_id", "")), pg_name=name, pg_desc=desc, seq=_int(e.get("collective_seq_id"), -1),
        p2p_seq=_int(e.get("p2p_seq_id"), -1), op=str(e.get("profiling_name", "")),
        input_sizes=_plain(e.get("input_sizes")), output_sizes=_plain(e.get("output_sizes")),
        state=str(e.get("state", "")), retired=retired if isinstance(retired, bool) else None,
        time_ns=_int(e.get("time_created_ns"), 0) or None, is_p2p=bool(e.get("is_p2p", False)), frames=shown)


def _ranks(value: Any) -> list[int]:
    """Member ranks: the recorder writes them as the string ``"[0, 1, 2, 3]"`` (or a list)."""
    if isinstance(value, str):
        return [int(x) for x in re.findall(r"\d+", value[:1_000_000])]
    if isinstance(value, list | tuple):
        return [v for v in value if isinstance(v, int)]
    return []


def _int(value: Any, default: int) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    try:
        return int(str(value))
    except ValueError:
        return default


def _plain(value: Any) -> Any:
    """Sizes as JSON-ready lists (a dump may hold tuples)."""
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value if isinstance(value, int | float | str) or value is None else str(value)
