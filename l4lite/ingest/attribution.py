"""Which node, rank and GPU wrote a line.

Node, rank and GPU stay three separate facts unless a line ties them: a per-rank file named ``rank3.log`` says
nothing about its host, a ``[default3]:`` prefix is a local rank and says nothing about the global rank, and a
NCCL header ``host:pid:tid [3]`` names a host and a local CUDA device but no rank. Lines that do tie them (NCCL
``ncclCommInitRank ... rank 6 nranks 16``, the torchelastic failure summary's ``host``/``rank`` fields, a
``[rankN]:`` prefix on a line that names its host) feed a ``RankMap`` that later fills the node of records
that only know their rank.

Host names are normalised to their lowercase short form (``dgx017.cluster.local`` -> ``dgx017``) so that the
path, NCCL, syslog and torchelastic spellings of one machine agree; IPv4 addresses are kept whole.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Container, Iterable
from typing import Any

from l4lite.ingest.logdirs import run_folder
from l4lite.records import Record

# ------------------------------------------------------------------------------------------- line patterns
# name.host [stderr]   (milabench and similar multi-node runners); a tag that is an index (``opt-1_3b.0``, the
# per-device ``bench.D3``) names a process, not a host: see ``prefix_host``
NAMED_HOST_PREFIX = re.compile(r"([^\s\[\]]+)\.([A-Za-z0-9][\w-]*) \[(?:stdout|stderr)\] ")
_INDEX_TAG = re.compile(r"[Dd]?\d+")


def prefix_host(tag: str) -> bool:
    """Whether the tag of a ``name.tag [stderr]`` prefix can be a host: milabench tags a single-node run's
    processes by their index (``opt-1_3b.0``) or device (``bench.D0``), which are never machines."""
    return _INDEX_TAG.fullmatch(tag) is None
# [pod/trainer-0/pytorch]  (``kubectl logs --prefix``: every pod's lines in one stream, each after its pod and
# container); the pod stands for its node as a node folder does
KUBECTL_PREFIX = re.compile(r"\[pod/([a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)/[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\] ")
# "  3: "  (srun --label)
SRUN_LABEL = re.compile(r" *(\d{1,6}): ")
# [1,3]<stdout>:  (mpirun --tag-output: job id, rank, stream)
MPI_TAG = re.compile(r"\[\d+,(\d{1,6})\]<std(?:out|err|diag)>: ?")
# (RayTrainWorker pid=4242, ip=10.0.0.2)  (Ray)  /  (worker1, rank=1, pid=4242, ip=10.0.0.2)  (SkyPilot)
ACTOR_PREFIX = re.compile(r"\((?:[\w.-]+ )?[\w.-]+(?:, rank=(\d{1,6}))?,? pid=\d+(?:, ip=(\d{1,3}(?:\.\d{1,3}){3}))?\) ")
# [rank3]:  [default3]:  (torchrun --tee / --role); an optional "[pid] " first
TORCHRUN_PREFIX = re.compile(r" *(?:\[\d+\] )?\[([A-Za-z_]+?)(\d{1,6})\]:")
# host:pid:tid [dev]  (NCCL)
NCCL_HEADER = re.compile(r"([A-Za-z0-9][\w.-]*):(\d+):(\d+) \[(\d+)\] ")
# [host:pid :0:tid]  (UCX)
UCX_HEADER = re.compile(r"\[([A-Za-z0-9][\w.-]*):(\d+) *:\d+:\d+\] ")
# host program[pid]:  after a syslog/journald timestamp
SYSLOG_HOST = re.compile(r"([A-Za-z0-9][\w.-]*) ([\w./@-]+?)(?:\[(\d+)\])?: ")
# [Rank 3]  inside torch and DeepSpeed messages (rank of the default process group); [rank3] as training scripts
# log it after torch's own prefix (global rank)
RANK_IN_MESSAGE = re.compile(r"\[[Rr]ank ?(\d+)\]")
# the global rank a message states first: Lightning's ``[rank: 2] `` (``rank_prefixed_message``), torch's
# ``[Rank 3] ``; after torchrun's tee prefix (``[default0]:``, a local rank) it is the line's rank
LEAD_RANK = re.compile(r"\[[Rr]ank(?:: ?| ?)(\d{1,6})\] ")
# ncclCommInitRank comm 0x.. rank 6 nranks 16 cudaDev 6 ... / Init timings: rank 2 nranks 16
NCCL_RANK = re.compile(r"\brank (\d+) nranks (\d+)\b")
NCCL_RANK_PLAIN = re.compile(r"NCCL INFO Rank (\d+)\b")
# torchelastic failure summary fields
ELASTIC_FIELD = re.compile(r"\s*(time|host|rank|exitcode|error_file|traceback)\s*: ?(.*)$")
ELASTIC_RANK = re.compile(r"(\d+)(?: \(local_rank: (\d+)\))?")
# torchelastic agent: global_ranks=[0, 1, 2, 3]
GLOBAL_RANKS = re.compile(r"global_ranks=\[([\d, ]*)\]")

_IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}$")


def normalize_host(host: str) -> str:
    """Lowercase short host name; dotted IPv4 addresses stay whole."""
    h = host.strip().lower()
    if _IPV4.match(h):
        return h
    return h.split(".", 1)[0]


# ------------------------------------------------------------------------------------------- path patterns
_STRIP_EXT = re.compile(r"\.(?:gz|log|txt|out|err|stdout|stderr|json|jsonl|csv|\d{1,3})$", re.I)
# A JAX process index and a Slurm task id (``srun -o %t``) are global ranks by another name.
_RANK_IN_PATH = re.compile(r"(?<!local_)(?<!local)(?<![a-z])(?:rank|process|task)[-_]?(\d{1,6})(?!\d)", re.I)
_RANK_PART = re.compile(r"(?<![a-z])(?:local_)?rank[-_]?\d+", re.I)
_IP_DASHED = re.compile(r"(?:ip-)?\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}$", re.I)
_HOSTLIKE = re.compile(r"[a-z][a-z0-9-]*\d[a-z0-9-]*$", re.I)
_NOT_HOST = re.compile(
    r"(?:rank|localrank|local_rank|local|proc|process|pid|task|job|jobid|slurm|step|gpu|dev|device|cuda|part|shard|"
    r"epoch|iter|iteration|run|attempt|v|ver|version|exp|experiment|trial|seed|ckpt|checkpoint|batch|chunk|"
    r"split|log|logs|stdout|stderr|out|err|output|test|tmp|day|week|py|python|torch|nccl|ib|mlx|sd|tp|pp|dp|"
    r"ep|world|try|retry|restart|fold|model|layer|stage|round|array|id|n|x|r|p|t|e|s|fp|bf|int|sm|cu|"
    r"cp|mp|ds|zero|top|k|gen|release|py3|utf|results?|eval|val|valid|save|data|sample|bench)[-_]?\d+$",
    re.I,
)
_MODEL_SIZE = re.compile(r"(?:^|-)\d+(?:\.\d+)?[bmk]$", re.I)
_MODEL_NAME = re.compile(r"(?:gpt|llama|bert|roberta|t5|opt|bloom|mistral|mixtral|qwen|resnet|vit|gemma|phi|"
                         r"falcon|yolo|yolov|unet|sdxl|sd|deepseek|glm|internlm|baichuan)[-_.]?\d", re.I)
_VERSION_TOKEN = re.compile(r"v\d+$", re.I)
_KIND_WORDS = frozenset(
    ["dmesg", "syslog", "kern", "kernel", "messages", "journal", "journalctl", "nccl", "slurm", "stdout", "stderr", "output", "out", "err", "error", "errors", "train", "training", "trainer", "log", "logs", "console", "nvidia-smi", "nvidia", "nvsmi", "smi", "fabricmanager", "fm", "job", "run", "host", "node-log", "agent", "launcher", "torchrun", "srun", "mpirun", "worker-log"]
)


def names_no_node(name: str) -> bool:
    """A folder name that says what its files are or which run, try or part they belong to (``output``,
    ``logs``, ``job-12345``, ``attempt_1``, ``part-0001``, ``2026-12-01``), never which machine wrote them."""
    low = name.lower()
    if _IPV4.match(low) or _IP_DASHED.match(low):  # an address names a machine, though it is all digits
        return False
    tokens = [t for t in re.split(r"[-_.]", low) if t]
    return bool(not tokens or all(t in _KIND_WORDS or t.isdigit() for t in tokens) or _NOT_HOST.match(low)
                or _DATE_NAME.search(low))


_DATE_NAME = re.compile(r"(?<!\d)(?:19|20)\d\d-?[01]\d-?[0-3]\d(?!\d)")


def _host_in_segment(seg: str) -> str | None:
    if not seg:
        return None
    if _IP_DASHED.match(seg):
        return seg.lower()
    seg = _RANK_PART.sub("", seg).strip("-_")
    for part in seg.split("_"):
        tokens = part.split("-")
        while tokens and tokens[0].lower() in _KIND_WORDS:
            tokens.pop(0)
        while tokens and tokens[-1].lower() in _KIND_WORDS:
            tokens.pop()
        cand = "-".join(tokens)
        if not cand:
            continue
        if _IP_DASHED.match(cand):
            return cand.lower()
        if not _HOSTLIKE.match(cand) or _NOT_HOST.match(cand) or _MODEL_SIZE.search(cand) \
                or _MODEL_NAME.match(cand):
            continue
        if len(tokens) > 5 or not any(ch.isdigit() for ch in tokens[-1]) \
                or any(_VERSION_TOKEN.match(t) for t in tokens):
            continue
        return cand.lower()
    return None


def host_from_path(rel: str) -> str | None:
    """A host name in the file name or its directories (nearest first), or None."""
    if rel in ("", "-"):
        return None
    dirs, name = split_rel(rel)
    return _host_in_component(name) or _host_in_dirs("/".join(dirs))


def split_rel(rel: str) -> tuple[list[str], str]:
    """A relative path's folders and its file name without the log extensions."""
    parts = rel.replace("\\", "/").split("/")
    name = parts[-1]
    while True:
        stripped = _STRIP_EXT.sub("", name)
        if stripped == name or not stripped:
            break
        name = stripped
    return parts[:-1], name


def host_from_dirs(rel: str) -> str | None:
    """A host named by a file's folders only (nearest first): what one path can say without its job, since a
    file name alone (``latin1.log``, ``stderr.log``, ``0.log``) is as often a kind or a rank as a host."""
    parts = rel.replace("\\", "/").split("/")
    return _host_in_dirs("/".join(parts[:-1])) if len(parts) > 1 else None


@functools.lru_cache(maxsize=4096)
def _host_in_dirs(dirs: str) -> str | None:
    """The host named by a file's directories, nearest first: the same for every file of a folder (a job of
    100,000 small files has a few hundred folders), so it is worked out once per folder."""
    for comp in reversed(dirs.split("/")):
        host = _host_in_component(comp)
        if host:
            return host
    return None


def _host_in_component(comp: str) -> str | None:
    if _IPV4.match(comp):
        return comp
    for seg in comp.split("."):
        host = _host_in_segment(seg)
        if host:
            return host
    return None


def rank_from_path(rel: str) -> int | None:
    """``rank3.log``, ``rank-3/``, ``rank_03.out``, ``process_3.log``, ``task-3.out`` give a (global) rank; the
    nearest component wins."""
    found = _RANK_IN_PATH.findall(rel)
    return int(found[-1]) if found else None


def compile_node_from(pattern: str | None) -> re.Pattern[str] | None:
    """Compile ``--node-from``; raises ValueError with a readable message for a bad pattern."""
    if not pattern:
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"--node-from: invalid regular expression {pattern!r}: {exc}") from None


def node_from_regex(rel: str, regex: re.Pattern[str]) -> str | None:
    """The named group ``node``, else group 1, else the whole match of ``--node-from`` on the path."""
    m = regex.search(rel)
    if not m:
        return None
    if "node" in regex.groupindex:
        value = m.group("node")
    elif regex.groups:
        value = m.group(1)
    else:
        value = m.group(0)
    return normalize_host(value) if value else None


def attribute_path(rel: str, node_from: re.Pattern[str] | None = None) -> tuple[str | None, int | None]:
    """``(node, rank)`` that the path alone reveals."""
    node = node_from_regex(rel, node_from) if node_from is not None else None
    if node is None:
        node = host_from_path(rel)
    return node, rank_from_path(rel)


# ------------------------------------------------------------------------------------------- rank map
GLOBAL_WEIGHT = 1 << 30


class RankMap:
    """Global rank -> node, learned from lines that tie them.

    Each tie has a weight: explicit global ties (torchelastic summaries, a rank prefix on a line that names its
    host) beat NCCL communicator ranks, and among those the largest communicator (most likely the world) wins,
    because ranks inside a tensor- or pipeline-parallel communicator are not global ranks.
    """

    __slots__ = ("_ties", "conflicts")

    def __init__(self) -> None:
        self._ties: dict[int, tuple[int, str]] = {}
        self.conflicts = 0

    def tie(self, rank: int, node: str, weight: int = GLOBAL_WEIGHT) -> None:
        old = self._ties.get(rank)
        if old is None or weight > old[0]:
            self._ties[rank] = (weight, node)
        elif weight == old[0] and old[1] != node:
            self.conflicts += 1

    def node_of(self, rank: int | None) -> str | None:
        if rank is None:
            return None
        t = self._ties.get(rank)
        return t[1] if t else None

    def learn(self, record: Record) -> bool:
        """Learn the ties a record shows (NCCL init lines, torchelastic summaries); True if it tied any."""
        tied = False
        text = record.text
        if record.node and "nranks" in text:
            m = NCCL_RANK.search(text)
            if m:
                self.tie(int(m[1]), record.node, int(m[2]))
                tied = True
        if "host" in text and "rank" in text and "\n" in text:
            for rank, host in elastic_ties(text.split("\n")):
                self.tie(rank, host)
                tied = True
        return tied

    def as_dict(self) -> dict[int, str]:
        return {r: n for r, (_, n) in sorted(self._ties.items())}

    def __len__(self) -> int:
        return len(self._ties)

    def __contains__(self, rank: object) -> bool:
        return rank in self._ties

    def merge(self, other: RankMap) -> RankMap:
        for rank, (weight, node) in other._ties.items():
            self.tie(rank, node, weight)
        self.conflicts += other.conflicts
        return self

    def to_dict(self) -> dict[str, Any]:
        return {"ties": [[r, n, w] for r, (w, n) in sorted(self._ties.items())], "conflicts": self.conflicts}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RankMap:
        rm = cls()
        for r, n, w in data.get("ties", []):
            rm._ties[int(r)] = (int(w), str(n))
        rm.conflicts = int(data.get("conflicts", 0))
        return rm


def elastic_ties(lines: Iterable[str]) -> list[tuple[int, str]]:
    """``(rank, host)`` pairs of a torchelastic failure summary (``host : X`` then ``rank : N``)."""
    out: list[tuple[int, str]] = []
    host: str | None = None
    for line in lines:
        m = ELASTIC_FIELD.match(strip_stream_prefix(line))
        if not m:
            continue
        if m[1] == "host":
            host = normalize_host(m[2]) if m[2].strip() else None
        elif m[1] == "rank" and host:
            rm = ELASTIC_RANK.match(m[2])
            if rm:
                out.append((int(rm[1]), host))
            host = None
    return out


def stream_label(raw: str) -> tuple[str, int] | None:
    """The label of a merged stream's line and where it ends: an ``srun --label`` task id (``3``) or, for
    ``kubectl logs --prefix``, ``pod/<name>``; None for a line without one. A label's lines name its host (or its
    ranks tie it to one) wherever they sit in the file (``writers.label_hosts``)."""
    if raw[:1] in " 0123456789" and (m := SRUN_LABEL.match(raw)):
        return m[1], m.end()
    if raw.startswith("[pod/") and (m := KUBECTL_PREFIX.match(raw)):
        return "pod/" + m[1], m.end()
    return None


def pod_hosts(labels: dict[str, str] | None) -> dict[str, str]:
    """pod -> the host its lines name, from a file's label hosts: a ``kubectl --prefix`` line is that host's."""
    return {k[4:]: h for k, h in (labels or {}).items() if k.startswith("pod/")}


def strip_stream_prefix(line: str) -> str:
    """A line without its ``kubectl --prefix`` pod, ``srun --label`` label or MPI tag and its torchrun prefix."""
    if line.startswith("[pod/") and (k := KUBECTL_PREFIX.match(line)):
        line = line[k.end():]
    m = SRUN_LABEL.match(line) or MPI_TAG.match(line)
    if m:
        line = line[m.end():]
    m = TORCHRUN_PREFIX.match(line)
    if m:
        line = line[m.end():]
    return line


def address_nodes(statements: dict[str, Counter[tuple[str, str]]], node_of: Callable[[str], str | None]) -> dict[str, str]:
    """IP -> node where every statement about that address names one node: a host beside it, or the node of the
    file stating its own address (host ""). ``statements``: per file, the (IP, host) pairs its lines state."""
    votes: dict[str, set[str]] = {}
    for rel, pairs in statements.items():
        for ip, host in pairs:
            node = host or node_of(rel)
            if node and node != ip:
                votes.setdefault(ip, set()).add(node)
    return {ip: next(iter(nodes)) for ip, nodes in votes.items() if len(nodes) == 1}


# ------------------------------------------------------------------------------------------- job-wide evidence
STRAY_MENTIONS = 1  # a host named by no more lines than this in a file is a stray mention, not a writer


def mixed_hosts(hosts: Counter[str]) -> bool:
    """Whether a file's lines name two or more hosts as their writers, each more than once: a merged file (``cat``
    of several nodes' logs), whose lines that name no host belong to no one host of it. One stray line naming an
    odd host does not make a file mixed."""
    return sum(1 for n in hosts.values() if n > STRAY_MENTIONS) > 1


def inherited_hosts(rels: Iterable[str], node_of: Callable[[str], str | None],
                    rank_ties: Iterable[tuple[int, str]], apart: Container[str] = ()) -> dict[str, str]:
    """rel -> host for files whose path and lines name none: a rank's file (``rank3.log``, ``rank-3/``) takes the
    host the whole job ties to that rank; another file takes the one host that the files of its nearest folder
    holding any name (``attempt_1/.../0/stdout.log`` beside ``.../0/stderr.log``, whose lines name the host). A
    folder whose files name two hosts (``logs/`` of a whole job) gives none: the lines, not the folder, decide;
    nor does any folder to the files ``apart`` (in a folder known to hold several nodes' logs, one naming none)."""
    ranks: dict[int, set[str]] = {}
    for rank, host in rank_ties:
        ranks.setdefault(rank, set()).add(host)
    rels = list(rels)
    known = {rel: node for rel in rels if (node := node_of(rel))}
    by_dir: dict[str, set[str]] = {}
    for rel, node in known.items():
        parts = rel.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            by_dir.setdefault("/".join(parts[:i]), set()).add(node)
    out: dict[str, str] = {}
    for rel in rels:
        if rel in known:
            continue
        rank = rank_from_path(rel)
        if rank is not None:
            if len(ranks.get(rank, ())) == 1:
                out[rel] = next(iter(ranks[rank]))
            continue  # a rank's file is its rank's, never its folder's
        if rel in apart:
            continue
        parts = rel.split("/")[:-1]
        for i in range(len(parts), _run_floor(parts), -1):
            hosts = by_dir.get("/".join(parts[:i]))
            if hosts:
                if len(hosts) == 1:
                    out[rel] = next(iter(hosts))
                break
    return out


def _run_floor(parts: list[str]) -> int:
    """How far up a file's folders ``inherited_hosts`` may climb: not above a torchelastic run folder
    (``<run_id>_<random>/attempt_N/``), which is one agent's; the folder holding it may be a shared ``logs/`` of
    every agent, whose other placed files say nothing of this agent's node."""
    folder = run_folder("/".join(parts) + "/")
    return parts.index(folder) if folder is not None and folder in parts else 0


# "node_manager address: 10.0.0.2:0 object_manager address: ... hostname: node-b" (an address beside a host name);
# "Local node IP: 10.0.0.2" (ray start), "node_ip_address=10.0.0.2" (a node's own address, in its own file)
_ESCAPE = re.compile("\x1b\\[[0-?]*[ -/]*[@-~]")  # a terminal's colour codes around an actor's prefix
_ADDRESS_HOST = re.compile(r"\baddress:? (\d{1,3}(?:\.\d{1,3}){3})\b.{0,160}?\bhostname:? ([A-Za-z0-9][\w.-]*)")
_OWN_ADDRESS = re.compile(r"\b(?:[Ll]ocal node IP:? |node_ip_address[=:] ?'?)(\d{1,3}(?:\.\d{1,3}){3})\b")


def address_of(line: str, out: Counter[tuple[str, str]], host_of: Callable[[str], str | None],
               banner: Callable[[str], str | None] | None = None) -> None:
    """Count the address a line ties to a host (or to its own node, host ""). With ``banner`` (the host a process
    banner names), an actor's line relayed from the address in its prefix whose message is the actor's banner
    (``(RayTrainWorker pid=95, ip=10.0.0.2) worker 1/4 up on node-b``) ties that address to the banner's host."""
    m = _ADDRESS_HOST.search(line)
    if m:
        host = host_of(m[2])
        if host:
            out[(m[1], host)] += 1
        return
    m = _OWN_ADDRESS.search(line)
    if m:
        out[(m[1], "")] += 1
        return
    if banner is not None and "ip=" in line:
        a = actor_prefix(line)
        if a is not None and a[2] is not None and (host := banner(a.string[a.end():])):
            out[(a[2], host)] += 1


def actor_prefix(line: str) -> re.Match[str] | None:
    """The Ray actor prefix a relayed line carries near its start (after a container runtime's or a label's
    prefix, around a terminal's colour codes), or None. Its ``ip=`` names the actor's node when that is not the
    driver's: a prefix without one is an actor on the driver's own node."""
    if " pid=" not in line[:200]:
        return None
    text = _ESCAPE.sub("", line) if "\x1b" in line else line
    return ACTOR_PREFIX.search(text, 0, 200)


# ------------------------------------------------------------------------------------------- hosts a stream names
# A host named as somewhere else (``connecting to node-a:29500``, ``master=node-a``, ``peers node-a``) is not
# where the line's process runs: after such a word, or as an endpoint's host (``node-a:29500``).
_TOWARD = re.compile(r"(?:\b(?:to|from|with|via|peers?|master|coordinator|leader|server|addr(?:ess)?|endpoint|"
                     r"rendezvous|rdzv\w*)|[@=])[\s:=]*$", re.I)
_ENDPOINT_AFTER = re.compile(r"(?:\.[A-Za-z][\w-]*)*:\d")


def known_hosts_pattern(hosts: Iterable[str | None]) -> re.Pattern[str] | None:
    """A pattern finding the job's known hosts as whole words (``node-a`` but not ``node-ab`` nor
    ``/data/node-a-x``), or None for a job of no known host."""
    names = sorted({h for h in hosts if h}, key=len, reverse=True)
    if not names:
        return None
    return re.compile(r"(?<![\w.\-/])(" + "|".join(map(re.escape, names)) + r")(?![\w-])", re.I)


def stream_key(line: str) -> str | None:
    """The stream a labelled line belongs to, as the reader keys it: an ``srun --label`` label (``2``) or a
    torchrun prefix (``[rank2]``, ``[default0]``); None for an unlabelled line."""
    m = SRUN_LABEL.match(line) or TORCHRUN_PREFIX.match(line)
    return line[:m.end()].split(":", 1)[0].strip() if m else None


def stream_hosts(lines: Iterable[str], known: re.Pattern[str]) -> dict[str, str]:
    """stream -> host for the labelled streams whose own lines name exactly one of the job's known hosts where
    their process runs (``2: process 2/4 on compute-beta``): named more than once, or once by a stream that never
    names another. A host named as a peer or an endpoint (``_TOWARD``, ``_ENDPOINT_AFTER``) says nothing of where
    the stream runs; a line naming several hosts (a peer list) ties nothing, but its hosts count as named."""
    single: dict[str, Counter[str]] = {}
    named: dict[str, set[str]] = {}
    for line in lines:
        key = stream_key(line)
        if key is None:
            continue
        hosts: set[str] = set()
        own: set[str] = set()
        for m in known.finditer(line):
            host = m[1].lower()
            hosts.add(host)
            if not _ENDPOINT_AFTER.match(line, m.end()) and not _TOWARD.search(line, 0, m.start()):
                own.add(host)
        if not own:  # only peers and endpoints: nothing about this stream
            continue
        named.setdefault(key, set()).update(own)
        if len(hosts) == 1:
            single.setdefault(key, Counter())[own.pop()] += 1
    out: dict[str, str] = {}
    for key, counts in single.items():
        if len(counts) == 1:
            host, n = next(iter(counts.items()))
            if n > 1 or named[key] == {host}:
                out[key] = host
    return out


def stream_rank(key: str, label_tasks: bool) -> int | None:
    """The global rank a stream key names: an ``srun --label`` task id (unless the file's labels are tasks of
    several ranks each, ``label_tasks``) or ``[rankN]``; a ``[defaultN]`` local rank names none."""
    if key.isdigit():
        return None if label_tasks else int(key)
    m = TORCHRUN_PREFIX.fullmatch(key + ":")
    return int(m[2]) if m and m[1] == "rank" else None


def tie_streams(task_hosts: dict[str, dict[str, str]], rel: str, found: dict[str, str],
                label_tasks: bool) -> list[tuple[int, str]]:
    """Add a file's ``stream_hosts`` to the job's ``task_hosts`` (a stream whose label has a host already keeps
    it); the rank ties they make (``stream_rank``). Local ranks (``[default0]``) repeat on every node: their
    streams are tied only in a file whose local streams all name one host (one node's console), never in a
    merged file where ``[default0]`` of two nodes name two."""
    ties: list[tuple[int, str]] = []
    local = {host for key, host in found.items() if key.startswith("[") and stream_rank(key, label_tasks) is None}
    labels = task_hosts.setdefault(rel, {}) if found else {}
    for key, host in found.items():
        if key not in labels and not (len(local) > 1 and key.startswith("[") and stream_rank(key, False) is None):
            labels[key] = host
            if (rank := stream_rank(key, label_tasks)) is not None:
                ties.append((rank, host))
    return ties
