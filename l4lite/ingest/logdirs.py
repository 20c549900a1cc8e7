"""Torchelastic's log folders kept apart from their node's other logs, placed by the node whose lines name them.

Each node's agent writes its ranks' ``stdout.log``, ``stderr.log`` and ``error.json`` under
``--log-dir``/``<run_id>_<random>/attempt_N/<local_rank>/``; with the log dir on shared storage, or the files
collected into one ``logs/`` folder beside the job's ``--output`` files, no path names their node. The agent names
the folder in its own console (the failure summary's ``error_file: .../run-083_0ybzhjzr/attempt_0/1/error.json``,
``no error file defined for parent, to copy child error file (...)``), and the random suffix makes the folder
one agent's: a file under it belongs to the one node whose placed files name it. Worked out once per job, from all
the lines of the placed files (a bytes search; the summary sits anywhere in a merged stream).

An agent started with ``--tee`` also copies each rank's lines to its console, prefixed by the rank's local
label (``[default1]:``): a rank's file whose lines are found so in the placed files of exactly one node is that
node's (``tee_hosts``), though no line of the console names the folder (an agent that died before its summary).
"""

from __future__ import annotations

import gzip
import mmap
import re
import zlib
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

# ``<run_id>_<random>/attempt_N/``: ``tempfile.mkdtemp(prefix=f"{run_id}_")`` adds eight random characters
_RUN_DIR = re.compile(r"(?:^|/)([^/]+_[A-Za-z0-9_]{8})/attempt_\d+/")
_LOCAL_DIR = re.compile(r"(?:^|/)attempt_\d+/(\d+)/[^/]+$")
TEE_LINES = 8  # first lines of a rank's file looked for in the consoles
MAX_NEEDLES = 256  # lines looked for in all (a job of thousands of unplaced files is searched for some)
MAX_HITS = 64  # copies of one line looked at in one file (each local rank's label it is found under)
TEE_BUDGET = 4 << 30  # bytes searched in all (needles x placed bytes): a huge job's consoles are searched in part
_TEE_MIN = 24  # characters a line needs to tell one rank's copy from another's (not a bare ``Traceback``)
_UNKNOWN = "\x01"  # the node of a console no path places, as a vote (never a host's name)
MAX_BYTES = 256 << 20  # a placed file larger than this is not searched (its summary is in its console anyway)


class LinePrefix(NamedTuple):
    """How a merged stream's lines name their own writers (pdsh's ``host: ``, ``ingest.hostprefix``): whether a
    file's first lines are such a merge, and the host one line's prefix names. Handed in, as this module sits
    below the attribution it serves."""

    merged: Callable[[list[str]], bool]
    host: Callable[[str], str | None]


def _prefixed(data: Any, prefix: LinePrefix | None) -> bool:
    """Whether a file's bytes are a merge whose lines name their writers: each line then names its own node,
    whatever node the file as a whole has or lacks."""
    if prefix is None:
        return False
    head = bytes(data[: 1 << 14]).decode("utf-8", "replace").splitlines()
    return prefix.merged(head[:-1] if len(head) > 1 else head)


def _line_host(data: Any, at: int, prefix: LinePrefix) -> str | None:
    """The host the prefix of the line holding byte ``at`` names."""
    start = data.rfind(b"\n", 0, at) + 1
    return prefix.host(bytes(data[start: min(at, start + 80)]).decode("utf-8", "replace"))


def run_folder(rel: str) -> str | None:
    """The agent's run folder a file sits under (``run-083_0ybzhjzr``), or None."""
    m = _RUN_DIR.search(rel.replace("\\", "/"))
    return m[1] if m else None


def _names(f: Any, needles: dict[str, bytes], node: str | None, prefix: LinePrefix | None) -> dict[str, set[str]]:
    """folder -> the nodes naming it, for the run folders whose ``<folder>/attempt_`` a file's bytes hold (a gzip'd
    file's as it inflates): the file's ``node``, or in a pdsh merge no path places, the host of each line naming
    it (``_line_host``)."""
    path = getattr(f, "path", "")
    if not path or path == "-" or getattr(f, "parts", ()) or not 0 < getattr(f, "size", 0) <= MAX_BYTES:
        return {}
    try:
        if getattr(f, "compressed", False):
            return {t: {node} for t in _inflated_names(path, needles)} if node is not None else {}
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            if node is not None:
                return {t: {node} for t, needle in needles.items() if data.find(needle) >= 0}
            if prefix is None or not _prefixed(data, prefix):
                return {}
            out: dict[str, set[str]] = {}
            for t, needle in needles.items():
                at, hits = data.find(needle), 0
                while at >= 0 and hits < MAX_HITS:
                    hits += 1
                    if (host := _line_host(data, at, prefix)) is not None:
                        out.setdefault(t, set()).add(host)
                    at = data.find(needle, at + 1)
            return out
    except (OSError, ValueError, EOFError, zlib.error):
        return {}


def _inflated_names(path: str, needles: dict[str, bytes]) -> set[str]:
    """``_names`` of a gzip file: a ``.gz`` console is the same evidence as its plain copy. Searched chunk by
    chunk, a needle's length of each chunk carried into the next; no more than ``MAX_BYTES`` inflated."""
    found: set[str] = set()
    keep = max(len(n) for n in needles.values()) - 1
    carry, seen = b"", 0
    with gzip.open(path, "rb") as fh:
        while seen < MAX_BYTES and len(found) < len(needles) and (chunk := fh.read(1 << 20)):
            data, seen = carry + chunk, seen + len(chunk)
            found.update(t for t, needle in needles.items() if t not in found and needle in data)
            carry = data[-keep:] if keep > 0 else b""
    return found


def log_dir_hosts(unplaced: Iterable[Any], placed: Iterable[Any], node_of: Callable[[str], str | None],
                  prefix: LinePrefix | None = None) -> dict[str, str]:
    """rel -> node for the files of ``unplaced`` under a run folder that the files of exactly one node name
    (``placed``: the job's files, each searched when ``node_of`` places it and it is under no such folder; a merge
    no path places, by the host each naming line's ``prefix`` names)."""
    folders = {f.rel: t for f in unplaced if node_of(f.rel) is None and (t := run_folder(f.rel))}
    if not folders:
        return {}
    needles = {t: f"{t}/attempt_".encode() for t in set(folders.values())}
    named: dict[str, set[str]] = {}
    seen: set[str] = set()
    for f in placed:
        node = node_of(f.rel)
        if f.rel in folders or getattr(f, "path", "") in seen:
            continue
        seen.add(getattr(f, "path", ""))
        for t, nodes in _names(f, needles, node, prefix).items():
            named.setdefault(t, set()).update(nodes)
    return {rel: next(iter(named[t])) for rel, t in folders.items() if len(named.get(t, ())) == 1}


def _head(f: Any, n: int) -> list[bytes]:
    """The first ``n`` distinct lines of a plain file long enough to be told apart (none for stdin or gzip)."""
    path = getattr(f, "path", "")
    if not path or path == "-" or getattr(f, "parts", ()) or getattr(f, "compressed", False):
        return []
    out: list[bytes] = []
    try:
        with open(path, "rb") as fh:
            for raw in fh:
                line = raw.rstrip(b"\r\n")
                if len(line.strip()) >= _TEE_MIN and line not in out:
                    out.append(line)
                    if len(out) >= n:
                        break
    except OSError:
        return []
    return out


def tee_hosts(unplaced: Iterable[Any], placed: Iterable[Any], node_of: Callable[[str], str | None],
              prefix: LinePrefix | None = None) -> dict[str, str]:
    """rel -> node for the rank files (``attempt_N/<local_rank>/stdout.log``) of ``unplaced`` that no path places
    whose first lines the placed files of one node hold as an agent's ``--tee`` copies under that local rank's
    label (``[<role><local_rank>]:<line>``). A line found on two nodes (a message every rank prints alike) says
    nothing; the files of one rank folder are placed together, on the one node their lines' copies point at. A
    file renamed out of its rank folder is not placed so: without its attempt folder a restarted group's files
    would join the first attempt's node and time (126 hosts-in-lines)."""
    if not any(node_of(f.rel) is not None for f in placed):
        return {}
    folders: dict[str, list[Any]] = {}
    locals_: dict[str, bytes] = {}  # rank folder -> its local rank
    for f in unplaced:
        if node_of(f.rel) is None and (m := _LOCAL_DIR.search(f.rel.replace("\\", "/"))):
            folders.setdefault(f.rel[: m.end(1)], []).append(f)
            locals_[f.rel[: m.end(1)]] = m[1].encode()
    if not folders:
        return {}
    wanted: dict[bytes, set[str]] = {}  # a line's tee copy -> the rank folders whose files start with it
    for folder, fs in folders.items():
        for f in fs:
            for line in _head(f, TEE_LINES):
                wanted.setdefault(b"]:" + line, set()).add(folder)
        if len(wanted) > MAX_NEEDLES:
            break
    label = re.compile(rb"\[[A-Za-z_]*(\d+)$")
    found: dict[bytes, set[str]] = {}
    seen: set[str] = set()
    budget = TEE_BUDGET
    for f in sorted(placed, key=lambda f: getattr(f, "size", 0)):  # the small consoles first
        # a console no path places is a writer of its own, unknown: a line it holds too may be its node's (in a
        # pdsh merge, the host its own prefix names)
        node = node_of(f.rel) or f"{_UNKNOWN}{f.rel}"
        path = getattr(f, "path", "")
        if path in seen or _LOCAL_DIR.search(f.rel.replace("\\", "/")) or \
                not 0 < getattr(f, "size", 0) <= MAX_BYTES or getattr(f, "compressed", False) or path == "-":
            continue
        seen.add(path)
        budget -= f.size * len(wanted)
        if budget < 0:
            break
        try:
            with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                prefixed = node.startswith(_UNKNOWN) and _prefixed(data, prefix)
                for needle in wanted:
                    at, hits = data.find(needle), 0
                    while at >= 0 and hits < MAX_HITS:  # a line printed thousands of times: its first copies
                        hits += 1
                        tag = label.search(data[max(0, at - 24):at])
                        if tag and data[at + len(needle): at + len(needle) + 1] in (b"\n", b"\r", b""):
                            writer = (_line_host(data, at, prefix) if prefixed and prefix else None) or node
                            found.setdefault(needle, set()).add(f"{writer}\0{tag[1].decode()}")
                        at = data.find(needle, at + 1)
        except (OSError, ValueError):
            continue
    votes: dict[str, set[str]] = {}
    for needle, where in found.items():
        for folder in wanted[needle]:
            local = locals_.get(folder)
            nodes = {w.split("\0")[0] for w in where if local is None or w.endswith("\0" + local.decode())}
            if len(nodes) == 1:  # a line copied on two nodes (every rank prints it alike) says nothing
                votes.setdefault(folder, set()).update(nodes)
    return {f.rel: node for folder, fs in folders.items() if len(votes.get(folder, ())) == 1
            and not (node := next(iter(votes[folder]))).startswith(_UNKNOWN) for f in fs}
