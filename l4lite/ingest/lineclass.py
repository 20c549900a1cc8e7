"""What a line is: its level, its source kind, and whether it continues a multi-line record.

Kept apart from ``ingest`` so that the per-line reader stays small: this module holds the vocabulary of real
log formats (level markers, subsystem keywords, traceback and C++ frame-dump shapes, the torchelastic failure
summary), ``ingest`` holds the reading state.
"""

from __future__ import annotations

import re

from l4lite.ingest.attribution import (
    ELASTIC_FIELD,
    ELASTIC_RANK,
    GLOBAL_WEIGHT,
    KUBECTL_PREFIX,
    LEAD_RANK,
    MPI_TAG,
    RANK_IN_MESSAGE,
    SRUN_LABEL,
    RankMap,
    normalize_host,
)
from l4lite.ingest.hostprefix import host_prefix
from l4lite.ingest.stamp_patterns import parse_elastic_time

# record kinds
K_LINE, K_TB, K_FRAMES, K_ELASTIC, K_BANNER, K_NVRM, K_UCX = range(7)
# traceback states
TB_FRAMES, TB_EXC, TB_CHAIN, TB_CFRAMES, TB_LASTERR = range(5)

LEVEL_WORDS = frozenset({"DEBUG", "INFO", "NOTICE", "WARNING", "WARN", "ERROR", "CRITICAL", "FATAL", "TRACE"})
_LEVEL_OF = {"DEBUG": "debug", "TRACE": "debug", "INFO": "info", "NOTICE": "info", "WARNING": "warning",
             "WARN": "warning", "ERROR": "error", "CRITICAL": "error", "FATAL": "error",
             "I": "info", "W": "warning", "E": "error", "F": "error"}
_LW = "(DEBUG|INFO|NOTICE|WARNING|WARN|ERROR|CRITICAL|FATAL|TRACE)"
_LEVEL_BRACKET = re.compile(r"\[" + _LW + r"\] *")
_GLOG_BRACKET = re.compile(r"\[([IWEF]) [^\]\s]+:\d+\] *")  # [E ProcessGroupNCCL.cpp:915]
_LEVEL_SEP = re.compile(r"(?:- (?:[^\s]+ - )?|\| )" + _LW + r" *[|-] *")  # - name - INFO -   | INFO     |
_LEVEL_WORD = re.compile(_LW + r"(?::[\w.<>]*:|\s*[|-]\s+|:\s+|\s+)")  # INFO:root:  INFO -  ERROR:  INFO

HINTS = (
    "CUDA kernel errors might be asynchronously reported",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING",
    "Compile with `TORCH_USE_CUDA_DSA`",
    "Compile with TORCH_USE_CUDA_DSA",
    "Device-side assertion tracking was not enabled",
)
FRAME_STARTS = ("frame #", "<omitting python frames>")
CHAIN_MARKERS = ("The above exception was the direct cause", "During handling of the above exception")
CONTINUATION_STARTS = HINTS + ("Exception raised from ",)
# lines that continue the message of a torch DistBackendError / NCCL exception
NCCL_EXC_LINES = ("ncclRemoteError:", "ncclSystemError:", "ncclInternalError:", "ncclUnhandledCudaError:",
                  "ncclInvalidUsage:", "ncclInvalidArgument:", "ncclInProgress:")
STRONG_CONTINUATION = CONTINUATION_STARTS + FRAME_STARTS + ("  what():", "what():")
WHAT_START = "what():"
WHAT_STARTS = ("  what():", "what():")
_LETTER = re.compile(r"[A-Za-z]")
_EXC_LINE = re.compile(r"[A-Za-z_][\w.]*(?::(?:\s|$)|$)")
# One flat alternation whose branches start with rarer characters: the regex engine skips to candidate
# positions, which is several times faster than a chain of substring tests.
_ERROR = re.compile(r"Error(?!s)|ERROR|Exception|FAIL|Fatal|FATAL|Traceback|Xid|CRITICAL|Killed|"
                    r"Segmentation fault|Bus error|Caught signal|Aborted")
_ERROR_STARTS = ("error:", "srun: error", "slurmstepd: error", "fatal error")
_WARNING = re.compile(r"WARN|Warning")

# Subsystems name themselves at the start of kernel messages; launchers in their logger name or file name.
_STORAGE = ("Lustre", "LNet", "nfs:", "NFS:", "nfs4", "NFS4", "mmfs", "GPFS", "BeeGFS", "beegfs", "wekafs")
_KERNEL = ("NVRM", "mlx5_", "pcieport", "AER:", "oom-kill", "Out of memory", "Memory cgroup out of memory", "EDAC",
           "nvidia-peermem", "nvidia-nvswitch", "ib_core", "mce:", "[Hardware Error]", "INFO: task",
           "watchdog: BUG: soft lockup", "Xid", "kernel:", "nvidia-nvlink", "NVLink", "ib0:", "mlx4_", "bnxt_")
_LAUNCHER = ("srun:", "srun ", "slurmstepd", "mpirun", "torchrun", "[launch.py", "launch.py", "[runner.py",
             "[multinode_runner.py", "deepspeed.launcher", "[deepspeed.launcher", "torch.distributed.elastic",
             "torch.distributed.run", "--------------------------------------------------------------------------")
_LAUNCHER_PATHS = ("distributed/elastic", "distributed.elastic", "distributed/run.py", "distributed.run",
                   "launcher/api.py")
_SYSLOG_LAUNCHER = frozenset({"slurmd", "slurmstepd", "slurmctld", "srun", "sbatch", "mpirun", "torchrun"})


class OpenRecord:
    """A record being built: its first line is known, continuation lines may still come."""

    __slots__ = ("line", "end", "node", "rank", "gpu", "source", "time", "level", "message", "first", "parts",
                 "n", "kind", "state", "closed", "stream", "extra", "foreign", "resumed")

    def __init__(self, line: int, node: str | None, rank: int | None, gpu: int | None, source: str,
                 time: float | None, level: str | None, message: str, first: str, kind: int, stream: str) -> None:
        self.line = line
        self.end = line
        self.node = node
        self.rank = rank
        self.gpu = gpu
        self.source = source
        self.time = time
        self.level = level
        self.message = message
        self.first = first
        self.parts: list[str] | None = None
        self.n = 1
        self.kind = kind
        self.state = 0
        self.closed = False
        self.stream = stream
        self.extra: list[str] | None = None
        self.foreign = 0  # whole lines of another writer met inside it (``interleaved``)
        self.resumed = False  # a frame line came after them: the traceback goes on

    def add(self, lineno: int, raw: str) -> None:
        if self.parts is None:
            self.parts = [self.first]
        self.parts.append(raw)
        self.end = lineno
        self.n += 1


def default_source(rel: str) -> str:
    """The source of lines that say nothing about themselves, from the file name."""
    low = rel.lower()
    if "dmesg" in low or "kern" in low:
        return "kernel"
    if "syslog" in low or "messages" in low or "journal" in low or "fabricmanager" in low:
        return "other"
    return "trainer"


def syslog_source(program: str) -> str:
    if program.startswith("kernel"):
        return "kernel"
    if program in _SYSLOG_LAUNCHER:
        return "launcher"
    if program.startswith(("mmfs", "lustre", "lnet")):
        return "storage"
    return "other"


_FOLD = str.maketrans("123456789", "000000000")
# Words above that hold a digit ("mlx5_", "nfs4"): messages of one line shape ("mlx4_core", "mlx5_core") may
# start with one or not, so a line that starts with such a word folded is no model for its shape's source.
_CLASSIFY_DIGITS = tuple(sorted({w.translate(_FOLD) for w in _STORAGE + _KERNEL + _LAUNCHER if any(map(str.isdigit, w))}))
_STORAGE_DIGITS = tuple(sorted({w.translate(_FOLD) for w in _STORAGE if any(map(str.isdigit, w))}))


def source_by_digits(msg: str, kernel: bool = False) -> bool:
    """Whether the digits of ``msg`` may decide its source: ``classify``'s (``kernel_or_storage``'s with
    ``kernel``), so that the line reader plans no shape on it."""
    return msg[:8].translate(_FOLD).startswith(_STORAGE_DIGITS if kernel else _CLASSIFY_DIGITS)


def kernel_or_storage(msg: str) -> str:
    return "storage" if msg.startswith(_STORAGE) else "kernel"


def classify(line: str, msg: str) -> str | None:
    """Source kind from the line's content, or None when nothing in it tells."""
    if "NCCL" in msg:
        return "nccl"
    if msg.startswith(_STORAGE):
        return "storage"
    if msg.startswith(_KERNEL) or "oom-killer" in msg:
        return "kernel"
    if msg.startswith(_LAUNCHER) or "ChildFailedError" in msg:
        return "launcher"
    if "distributed" in line:
        for k in _LAUNCHER_PATHS:
            if k in line:
                return "launcher"
    return None


def level_marker(s: str, p: int) -> tuple[str | None, int]:
    """A level marker at ``p`` (``[INFO]``, ``- name - ERROR -``, ``| WARNING |``, ``INFO:root:``, ``[E x.cpp:1]``)."""
    c = s[p]
    if c == "\t":  # a header of tab-separated fields (Ray's "<time>\tINFO utils.py:330 -- ")
        q = p + 1
        while q < len(s) and s[q] == "\t":
            q += 1
        level, end = level_marker(s, q) if q < len(s) and s[q] != "\t" else (None, p)
        return (level, end) if level is not None else (None, p)
    m = None
    if c == "[":
        m = _LEVEL_BRACKET.match(s, p) or _GLOG_BRACKET.match(s, p)
    elif c == "-" or c == "|":
        m = _LEVEL_SEP.match(s, p)
    elif c in "DIWECNFT":
        m = _LEVEL_WORD.match(s, p)
    if m is None:
        return None, p
    return _LEVEL_OF[m[1]], m.end()


def content_level(msg: str) -> str | None:
    """Level from the words of a message without a level marker."""
    if "NCCL " in msg:
        if "NCCL WARN" in msg:
            return "warning"
        if "NCCL INFO" in msg:
            return "info"
    if _ERROR.search(msg) or msg.startswith(_ERROR_STARTS):
        return "error"
    if _WARNING.search(msg):
        return "warning"
    return None


def rank_in_message(msg: str) -> int | None:
    m = RANK_IN_MESSAGE.search(msg) or LEAD_RANK.match(msg)
    return int(m[1]) if m else None


def _is_rule(text: str, ch: str) -> bool:
    t = text.strip()
    return len(t) >= 10 and t.count(ch) == len(t)


# The first characters of the messages ``record_kind`` can tell apart from a plain line: a caller on the per-line
# path asks it only for messages that start with one of them.
KIND_STARTS = frozenset("T=fEN[")


def record_kind(msg: str) -> int:
    c = msg[:1]
    if c == "T" and msg.startswith("Traceback (most recent call last)"):
        return K_TB
    if c == "[" and msg.startswith("[Rank ") and msg.endswith(" Error Snippet]:"):
        return K_TB  # Ray Train quoting a rank's traceback: the traceback that follows is this record's
    if c == "=":
        if msg.startswith("==== backtrace"):
            return K_UCX
        if _is_rule(msg, "="):
            return K_BANNER
    elif c == "f" or c == "E":
        if msg.startswith(FRAME_STARTS) or msg.startswith("Exception raised from "):
            return K_FRAMES
    elif c == "N" and msg.startswith("NVRM: "):
        return K_NVRM
    return K_LINE


def continues(op: OpenRecord, content: str, rank_map: RankMap) -> bool:
    """Whether a line without header continues the open record ``op`` of its stream (and absorb it if so)."""
    k = op.kind
    if k == K_TB:
        return _traceback(op, content)
    if k in (K_LINE, K_FRAMES):
        st = content.lstrip()
        if st.startswith(HINTS):
            return True
        if st.startswith("Exception raised from "):
            op.kind = K_FRAMES
            return True
        if k == K_FRAMES and st.startswith(FRAME_STARTS):
            return True
        if st.startswith(WHAT_START) and op.message.startswith("terminate called"):
            op.message = f"{op.message} {st}"
            return True
        return False
    if k == K_NVRM:
        if content[:1] in (" ", "\t"):
            st = content.strip()
            if st.startswith("NVRM: "):
                op.message = f"{op.message} {st[6:]}"
                return True
        return False
    if k == K_BANNER:
        st = content.strip()
        if st.endswith(" FAILED"):
            op.kind = K_ELASTIC
            op.extra = [st]
            return True
        return False
    if k == K_ELASTIC:
        assert op.extra is not None
        op.extra.append(content)
        if _is_rule(content, "="):
            op.closed = True
        return True
    if k == K_UCX:
        if _is_rule(content, "="):
            op.closed = True
        return True
    return False


INTERLEAVED = 3  # another writer's lines a traceback or a launcher's summary may take before they end it


def interleaved(op: OpenRecord) -> bool:
    """Whether a line with a header of its own leaves ``op`` open: a Python traceback is printed line by line, and
    another thread's logger (or another process on a shared stream) may write a whole line between its frames or
    inside torchelastic's failure summary. Ending the record there would cut the exception off from its frames,
    or the failed rank off from its summary; a few such lines are another writer's, more mean the record was cut
    short (the process died while printing it)."""
    if op.foreign >= INTERLEAVED or not (op.kind == K_ELASTIC or op.kind == K_TB and op.state == TB_FRAMES
                                         and not op.message.startswith("[Rank ")):
        return False
    op.foreign += 1
    return True


def _traceback(op: OpenRecord, content: str) -> bool:
    st = op.state
    c0 = content[:1]
    if st == TB_FRAMES:
        if op.n == 1 and op.message.startswith("[Rank "):  # a quoted rank's error: its traceback, if one follows
            return content.startswith("Traceback (most recent call last)")
        if c0 == " " or c0 == "\t":
            # after another writer's line only a frame goes on (a traceback cut short, then someone else's
            # indented text, stays cut)
            if op.foreign and not op.resumed:  # a frame, its code line or the carets under that
                st = content.lstrip()
                op.resumed = st.startswith('File "') or not st.strip("^~ ") or (
                    op.parts is not None and op.parts[-1].lstrip().startswith('File "'))
                return op.resumed
            return True
        if content.startswith("Traceback (most recent call last)"):
            return False
        line = content.strip()
        if _EXC_LINE.match(line):
            op.message = line
            op.state = TB_EXC
            return True
        # undecodable bytes with no word in them (a crash's or a copy's damage) inside the frames do not end them
        return _LETTER.search(line) is None and any(c < " " or c > "~" for c in line)
    if st == TB_EXC:
        line = content.strip()
        if line.startswith(CHAIN_MARKERS):
            op.state = TB_CHAIN
            return True
        if line.startswith(HINTS) or line.startswith(NCCL_EXC_LINES):
            return True
        if line == "Last error:":
            op.state = TB_LASTERR
            return True
        if line.startswith("Exception raised from "):
            op.state = TB_CFRAMES
            return True
        return c0 == "\t" or content.startswith("  ")
    if st == TB_LASTERR:  # the detail line after "Last error:"
        op.state = TB_EXC
        return True
    if st == TB_CHAIN:
        if content.startswith("Traceback (most recent call last)"):
            op.state = TB_FRAMES
            return True
        return False
    line = content.lstrip()  # TB_CFRAMES
    return line.startswith(FRAME_STARTS) or line.startswith(HINTS)


def finish_elastic(op: OpenRecord, rank_map: RankMap) -> None:
    """Summarise a torchelastic failure block into its message and learn its rank -> host ties."""
    lines = op.extra or []
    failed = lines[0] if lines else "FAILED"
    root: dict[str, str] = {}
    in_root = False
    host = None
    failures: list[int] = []
    hosts: set[str] = set()
    in_tb = False
    for raw in lines[1:]:
        text = raw.strip()
        if text.startswith("Root Cause"):
            in_root = True
            continue
        m = ELASTIC_FIELD.match(raw)
        if not m:
            # a multi-line "traceback :" field: its last line is the exception
            if in_tb:
                if text.startswith(("[", "---", "===")):
                    in_tb = False
                elif in_root and text and text != "..." and not text.startswith("File "):
                    root["traceback"] = text
            continue
        key, value = m[1], m[2].strip()
        in_tb = key == "traceback" and value.startswith("Traceback")
        if key == "host":
            host = normalize_host(value) if value else None
        elif key == "rank" and host:
            rm = ELASTIC_RANK.match(value)
            if rm:
                rank_map.tie(int(rm[1]), host, GLOBAL_WEIGHT)
                failures.append(int(rm[1]))
                hosts.add(host)
        if in_root:
            root[key] = value
    parts = []
    rank = None
    if "rank" in root:
        rm = ELASTIC_RANK.match(root["rank"])
        if rm:
            rank = int(rm[1])
            parts.append(f"rank {rank}")
    if "exitcode" in root:
        parts.append(f"exitcode {root['exitcode']}")
    if root.get("traceback") and not root["traceback"].startswith("To enable traceback"):
        parts.append(root["traceback"])
    if parts:
        op.message = f"{failed} (root cause: {', '.join(parts)})"
    elif failures:
        op.message = f"{failed} (failed ranks: {', '.join(str(r) for r in failures)})"
    else:
        op.message = failed
    op.level = "error"
    op.source = "launcher"
    if op.rank is None and rank is not None:
        op.rank = rank
    if op.node is None and root.get("host"):
        op.node = normalize_host(root["host"])
    elif op.node is None and len(hosts) == 1:
        op.node = next(iter(hosts))
    if op.time is None and root.get("time"):
        op.time = parse_elastic_time(root["time"])


LABEL_START = frozenset(" 0123456789")  # a line that may start with an ``srun --label`` label


def unlabelled(s: str, hosts: bool = False) -> str:
    """A continuation line without the ``srun --label``, ``mpirun --tag-output`` or ``kubectl logs --prefix``
    prefix that the launcher put before each line of its task (or, in a host-prefixed file, ``hosts``, pdsh's
    ``host: ``): a record's text is what the program wrote (a torchelastic summary's fields read as in a file of
    its own), and its first line keeps the label that names the task."""
    if hosts and (h := host_prefix(s)) is not None:
        return s[h.end():]
    if s[:1] in LABEL_START:
        m = SRUN_LABEL.match(s)
    elif s[:1] == "[":
        m = KUBECTL_PREFIX.match(s) if s.startswith("[pod/") else MPI_TAG.match(s)
    else:
        return s
    return s[m.end():] if m else s
