"""Structured (JSON-lines) logs read as the lines they carry.

Production trainers often log one JSON object per line (python-json-logger, structlog's ``JSONRenderer``, loguru
``serialize=True``), or a collector wraps every printed line in one (Docker's json-file driver, Fluent Bit's
Kubernetes ``{"log": ...}``, Cloud Logging's ``textPayload`` / ``jsonPayload``). The failure then sits in one
escaped string field (``exc_info``, ``exception``, ``stack_trace``...), where no signature and no traceback
reader sees it. Which keys carry the message, time, level, logger, rank and exception is worked out once per file
from its first lines (``learn_json_keys``); each JSON-object line is then turned back into the lines the process
would have printed (``json_text``): a header line (time, level, logger and message, in Python logging's usual
layout) followed by the exception's lines, or a wrapper's own printed line. Other lines go on unchanged, and a file
whose first lines show no such object costs nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from l4lite.ingest.attribution import normalize_host
from l4lite.ingest.cri import cri_prefix, without_cri_prefix
from l4lite.ingest.layout import is_loopback
from l4lite.records import Record

HEAD_LINES = 16  # non-empty lines looked at to learn a file's keys
LATE_TRIES = 32  # lines ending in ``}`` tried after the head, when the head showed no record (``late_json_keys``)
# Docker's json-file driver writes a printed line longer than its 16 KiB buffer as several records, every one but
# the last a full buffer whose ``log`` has no trailing newline; they are joined back into the line printed
DOCKER_PART_BYTES = 16 * 1024

# the stream labels before the object, layer on layer as each collector added its own: ``kubectl logs --prefix``
# (``[pod/NAME/CONTAINER] ``, with ``--timestamps`` the time it received the line), ``srun --label`` (``3: ``),
# torchrun (``[default0]:``, ``[rank3]:``); ``[pod/w-0/c] [default0]:{...}`` is one record behind two labels
_LEAD = re.compile(r"(?:\[pod/[a-z0-9][a-z0-9.-]*/[a-z0-9][a-z0-9-]*\] (?:\d{4}-\d\d-\d\dT[\d:.]+Z )?"
                   r"|\[(?:rank|default)\d+\]: ?|\s*\d+: ){0,4}(?=\{)")
# a collector's field holding the printed text itself, with its own header (Docker, Fluent Bit, Cloud Logging)
_TEXT_KEYS = ("log", "textPayload")
_MESSAGE_KEYS = ("message", "msg", "event", "MESSAGE")
_TIME_KEYS = ("time", "timestamp", "@timestamp", "asctime", "ts", "datetime", "date", "created", "t")
_LEVEL_KEYS = ("level", "levelname", "severity", "lvl", "loglevel", "log.level")
_LOGGER_KEYS = ("logger", "name", "logger_name", "module")
_RANK_KEYS = ("rank", "global_rank", "RANK")
_EXC_KEYS = ("exc_info", "exception", "exc_text", "stack_trace", "stacktrace", "traceback", "stack_info", "stack",
             "error.stack")
_NESTED = ("jsonPayload",)
# where a record names the machine that wrote it, the machine's own name first: a logger's ``host`` field,
# journald's ``_HOSTNAME``, Fluent Bit's Kubernetes metadata, Cloud Logging's resource labels; a pod's name only
# where no machine is named (a training job's pod is one worker)
_HOST_PATHS: tuple[tuple[str, ...], ...] = (
    ("host",), ("hostname",), ("nodename",), ("node",), ("node_name",), ("_HOSTNAME",), ("HOSTNAME",),
    ("kubernetes", "host"), ("resource", "labels", "node_name"), ("labels", "compute.googleapis.com/resource_name"),
    ("kubernetes", "pod_name"), ("resource", "labels", "pod_name"), ("pod_name",))
_HOST_HINTS = ('"host', '"node', 'HOSTNAME"', 'pod_name"', 'resource_name"')  # a line without one of these names no host
_FAILING = frozenset(("ERROR", "CRITICAL", "FATAL", "EXCEPTION", "ALERT", "EMERGENCY", "PANIC", "ERR", "CRIT"))  # Cloud Logging: the record's own fields one level down


@dataclass(frozen=True)
class JsonKeys:
    """Which keys of a file's JSON records carry what (None: not in its records)."""

    text: str | None  # a wrapper's printed line (``log``); the other keys then describe the wrapper
    message: str | None
    time: str | None
    level: str | None
    logger: str | None
    rank: str | None
    exceptions: tuple[str, ...]
    nested: str | None  # a key whose object holds the record's fields (``jsonPayload``)
    inner: JsonKeys | None = None  # a wrapper's printed lines that are JSON records themselves (a JSON logger's pod log)


@dataclass(frozen=True)
class JsonText:
    """A JSON record as printed lines: ``lines`` (each with the record's stream label) and, for a wrapper, the
    time string it stamps the line with (the time of a line that prints none of its own)."""

    lines: list[str]
    wrapper_time: str | None
    host: str | None = None  # the host the record names (``_HOST_PATHS``), where asked for


def _object(s: str) -> tuple[str, dict] | None:
    """The stream label and the object of a line that is one JSON object (after an optional label), else None."""
    m = _LEAD.match(s)
    if m is None or not s.rstrip().endswith("}"):
        return None
    try:
        obj = json.loads(s[m.end():])
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser's stack (a hostile line)
        return None
    return (s[:m.end()], obj) if isinstance(obj, dict) else None


def _first(obj: dict, keys: Sequence[str], kind: type | tuple[type, ...]) -> str | None:
    return next((k for k in keys if isinstance(obj.get(k), kind)), None)


def learn_json_keys(lines: Sequence[str], cri: bool = False, wrapped: bool = True) -> JsonKeys | None:
    """The keys of a file's JSON records from its first non-empty lines (``cri``: a pod log's, read after their
    container runtime's prefix), or None when none of them is a JSON object with a text or message string (a file
    of plain lines, a metrics dump, a torchelastic error file). A wrapper's keys come with those of the JSON
    records it wraps, if it wraps some (``wrapped``; one level only)."""
    head = [x for x in lines[:4 * HEAD_LINES] if x.strip()][:HEAD_LINES]
    head = [without_cri_prefix(x) for x in head] if cri else head
    for s in head:
        got = _object(s)
        if got is None:
            continue
        obj = got[1]
        nested = _first(obj, _NESTED, dict)
        rec = obj[nested] if nested else obj
        text = _first(obj, _TEXT_KEYS, str) or ("text" if "record" in obj and isinstance(obj.get("text"), str)
                                                else None)  # loguru's serialize: the formatted text
        message = None if text else _first(rec, _MESSAGE_KEYS, str)
        if text is None and message is None:
            continue
        inner = None
        if text and wrapped:  # the wrapped lines' own keys, learnt once from the texts of the head's records
            texts = [w[1][text] for x in head if (w := _object(x)) is not None and isinstance(w[1].get(text), str)]
            inner = learn_json_keys([y for x in texts for y in x.split("\n")], wrapped=False)
        return JsonKeys(text, message, _first(obj if text else rec, _TIME_KEYS, (str, int, float, dict)),
                        _first(rec, _LEVEL_KEYS, (str, dict)), _first(rec, _LOGGER_KEYS, str),
                        _first(rec, _RANK_KEYS, int), _EXC_KEYS, nested, inner)
    return None


def _time_text(v: object) -> str | None:
    """A record's time as a header prints it: ISO text as written, an epoch number (seconds, milli-, micro- or
    nanoseconds by its size) in UTC; loguru's and similar ``{"repr": ..., "timestamp": ...}`` objects by their
    number."""
    if isinstance(v, dict):
        v = next((v[k] for k in ("timestamp", "abs", "repr") if k in v), None)
    if isinstance(v, str):
        return v if v[:1].isdigit() else None
    if isinstance(v, int | float) and not isinstance(v, bool) and v > 0:
        while v > 1e11:  # milli-, micro-, nanoseconds
            v /= 1000
        return datetime.fromtimestamp(v, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return None


def _level_text(v: object) -> str | None:
    if isinstance(v, dict):
        v = v.get("name")
    return v.upper() if isinstance(v, str) and v else None


def json_text(s: str, keys: JsonKeys, host: bool = False) -> JsonText | None:
    """The lines a JSON record stands for, or None for a line that is not one of the file's records (it reads
    as it is). A message with embedded newlines and an exception field become lines of their own, as the process
    would have printed them. With ``host``, also the host the record names."""
    got = _object(s)
    if got is None:
        return None
    text = _record_text(got[0], got[1], keys)
    return JsonText(text.lines, text.wrapper_time, _object_host(got[1])) if text is not None and host else text


def _record_text(label: str, obj: dict, keys: JsonKeys) -> JsonText | None:
    if keys.text is not None:
        text = obj.get(keys.text)
        if not isinstance(text, str):
            return None
        wrapper_time = obj.get(keys.time) if keys.time else None
        lines = text.rstrip("\n").split("\n")
        if keys.inner is not None:  # the wrapped line is a record of the process's own JSON logger
            unwrapped: list[str] = []
            for x in lines:
                inner = json_text(x, keys.inner)
                unwrapped.extend(inner.lines if inner is not None else (x,))
            lines = unwrapped
        return JsonText([label + x for x in lines], wrapper_time if isinstance(wrapper_time, str) else None)
    rec = obj.get(keys.nested) if keys.nested else obj
    if not isinstance(rec, dict):
        return None
    message = rec.get(keys.message) if keys.message else None
    if not isinstance(message, str):
        return None
    level = _level_text(rec.get(keys.level)) if keys.level else None
    head = [x for x in (_time_text(rec.get(keys.time)) if keys.time else None, level) if x]
    logger = rec.get(keys.logger) if keys.logger else None
    if isinstance(logger, str) and logger:
        head.append(logger + ":")
    rank = rec.get(keys.rank) if keys.rank else None
    if not label and isinstance(rank, int) and not isinstance(rank, bool):
        label = f"[rank{rank}]:"
    lines = (" ".join(head) + " " + message if head else message).rstrip("\n").split("\n")
    # an exception logged below ERROR was handled (``logger.warning(..., exc_info=True)``, Ray's retries): the
    # process went on, so its traceback is not read as a failure; the record keeps its message line
    for k in keys.exceptions if level is None or level in _FAILING else ():
        exc = rec.get(k)
        if isinstance(exc, list):  # a formatter that keeps ``traceback.format_exception``'s list
            exc = "".join(x for x in exc if isinstance(x, str))
        if isinstance(exc, str) and exc.strip():
            lines.extend(exc.rstrip("\n").split("\n"))
    return JsonText([label + x for x in lines], None)


def _at(obj: dict, path: tuple[str, ...]) -> object:
    for k in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(k)
    return obj


def record_host(s: str) -> str | None:
    """The host a JSON record names as its writer (``_HOST_PATHS``, in the record or in its ``jsonPayload``), as
    written; None for any other line. A container runtime's prefix before the record is passed over."""
    if "{" not in s[:80] or not any(h in s for h in _HOST_HINTS):
        return None
    if (m := cri_prefix(s)) is not None:
        s = s[m.end():]
    got = _object(s)
    if got is None:
        return None
    return _object_host(got[1])


def _object_host(obj: dict) -> str | None:
    for rec in (obj, obj.get("jsonPayload")):
        if isinstance(rec, dict):
            for path in _HOST_PATHS:
                v = _at(rec, path)
                if isinstance(v, str) and v.strip():
                    return v.strip()
    return None


def docker_part(s: str, held: dict[str, tuple[str, dict]]) -> str | None:
    """A Docker json-file record joined with the parts of its line held before it (``held``: per stream label and
    stream, the parts so far as one record with the first part's time), or None when it is a part itself, whose
    line goes on in the stream's next record. Any other line is returned as it is."""
    got = _object(s)
    text = got[1].get("log") if got is not None else None
    if got is None or not isinstance(text, str):
        return s
    label, obj = got
    key = label + str(obj.get("stream", ""))
    first = held.pop(key, None)
    if first is not None:
        first[1]["log"] += text
    part = not text.endswith("\n") and len(text.encode("utf-8", "surrogatepass")) >= DOCKER_PART_BYTES
    if part:
        held[key] = first if first is not None else (label, obj)
        return None
    return s if first is None else first[0] + json.dumps(first[1], ensure_ascii=False)


class JsonReading:
    """The file reader's side of it (a mixin of the file reader): the file's keys, learnt with its first block,
    and each record's printed lines fed to the line reader at the record's line number."""

    json_keys: JsonKeys | None = None
    mixed: bool = False  # several hosts' lines (``context``): each record's lines take the host it names
    path_node: str | None = None
    json_path_node: tuple[str | None] | None = None  # the path's node, kept while a record's host stands in for it
    json_parts: dict[str, tuple[str, dict]] | None = None  # Docker json-file parts waiting for their line's end
    parts_held: int = 0  # Docker parts joined to the record after them (``join_parts``)
    parts_flushed: tuple[int, int] = (0, 0)  # CRI and Docker lines whose end never came, read as they were
    json_late: int = 0  # lines tried by ``late_json_keys``

    def late_json_keys(self, s: str, cri: bool) -> JsonKeys | None:
        """The keys of a file whose JSON records begin after its head (a ``cat`` of a plain log and a JSON
        logger's, one host's stream of Ray's plain and JSON-lines files), learnt from the first such record; at
        most ``LATE_TRIES`` lines are tried, so a file of JSON metrics dumps costs little."""
        if _LEAD.match(without_cri_prefix(s) if cri else s) is None:  # a plain line ending in a brace
            return None
        self.json_late += 1
        keys = learn_json_keys([s], cri)
        if keys is not None:
            self.json_keys = keys
        return keys

    def join_parts(self, s: str, cri: bool) -> str | None:
        """A line with the parts of it written before (a CRI runtime's ``P`` lines, Docker json-file's 16 KiB
        records) joined in front, or None for a part whose line goes on (the reader counts it as joined)."""
        if cri and (s := self.unwrap_cri(s)) is None:
            return None
        keys = self.json_keys
        if keys is None or keys.text != "log" or (len(s) < DOCKER_PART_BYTES // 4 and not self.json_parts):
            return s  # a part is 16 KiB of UTF-8: at least 4 Ki characters
        if self.json_parts is None:
            self.json_parts = {}
        got = docker_part(s, self.json_parts)
        if got is None:
            self.parts_held += 1
        return got

    def count_joined(self, joined: int) -> None:
        """Count the parts ``join_parts`` joined to a later line as read into it, under their format's name."""
        cri_flushed, docker_flushed = self.parts_flushed
        if joined - self.parts_held - cri_flushed:
            self.acc.skip_lines("cri_partial_joined", joined - self.parts_held - cri_flushed)
        if self.parts_held - docker_flushed:
            self.acc.skip_lines("json_partial_joined", self.parts_held - docker_flushed)

    def flush_parts(self, lineno: int) -> Generator[Record, None, None]:
        """At the end of the file, a line whose last part never came (a container killed mid-write) is read as
        far as it got, at the file's last line; its last part counts as that line instead of as joined."""
        cri = [key[:-6] + text for key, text in self.cri_partial.items()]  # the key: label + stdout/stderr
        docker = [label + json.dumps(obj, ensure_ascii=False) for label, obj in (self.json_parts or {}).values()]
        self.cri_partial.clear()
        self.json_parts = None
        self.parts_flushed = (self.parts_flushed[0] + len(cri), self.parts_flushed[1] + len(docker))
        for s in cri + docker:
            if self.json_keys is not None:
                s = yield from self.json_line(lineno, s)
            yield from self.printed_line(lineno, s)

    def json_head(self, lines: Sequence[str]) -> list[str]:
        """A file's first lines as printed (for what is learnt from them, such as where the time sits)."""
        keys = self.json_keys
        if keys is None:
            return list(lines)
        out: list[str] = []
        for s in lines[:4 * HEAD_LINES]:
            got = json_text(s, keys)
            out.extend(got.lines if got is not None else (s,))
        return out

    def json_line(self, lineno: int, s: str) -> Generator[Record, None, str]:
        """Read a JSON record's printed lines but the last at ``lineno`` (yielding the records they finish) and
        return the last for the caller's loop; any other line is returned as it is. The lines beyond the first
        are counted as unwrapped (not lines of the file), so that every line still ends in a record or a skip counter."""
        mixed = self.mixed
        got = json_text(s, self.json_keys, mixed) if self.json_keys is not None else None
        if mixed:
            self.json_record_node(got.host if got is not None else None)
        if got is None:
            return s
        if got.wrapper_time is not None and (t := self.ts.parse(got.wrapper_time, 0)[0]) is not None:
            self.last_time = t  # the time of a wrapped line that prints none of its own
        *lines, last = got.lines
        self.acc.lines_unwrapped += len(lines)
        for x in lines:
            yield from self.printed_line(lineno, x)
        return last

    def printed_line(self, lineno: int, x: str) -> Generator[Record, None, None]:
        """One line read at ``lineno`` outside the reader's loop (a record's inner line, a part flushed at the end),
        counted as the loop counts its lines, and the records it finishes."""
        acc = self.acc
        r = self._line(lineno, x) if x.strip() else None
        if isinstance(r, Record):
            acc.lines_in_records += 1
            acc.records += 1
            yield r
        elif r is not None or not x.strip():
            acc.skip_lines("blank", 1)
        out = self.out
        while out and out[0].closed and not self.hold:
            yield self._finish(out.popleft())

    def json_record_node(self, host: str | None) -> None:
        """In a file of several hosts' records, the lines of a record that names its host are that host's (as a
        header's host field makes its line's); the other lines keep the node of the file's path, if any."""
        if self.json_path_node is None:
            self.json_path_node = (self.path_node,)
        node = normalize_host(host) if host else None
        self.path_node = node if node and not is_loopback(node) else self.json_path_node[0]
