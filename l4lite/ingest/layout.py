"""Which folder level (or file name) of a job's paths names its nodes, decided for the whole job at once.

One path alone cannot tell a host from a run id (``ddp-001_q6b2260f``), a model (``llama-7b``) or a stray file
(``latin1.log``); the job as a whole can. A level of the paths (the first folder, the second, ..., the file name)
is the node level when its names *partition* the job (each name is one folder, found under one parent) and
*agree* with the hosts that the lines themselves name (NCCL headers, syslog host fields, torchelastic summaries,
``hostname`` banners): each name of the level goes with one host, and no host with two names. Lines are the
stronger evidence: a level whose names disagree with them is not the node level, whatever they look like.

Some components are layout, never nodes, because the tool that wrote them says so: torchelastic's
``<run_id>_<random>/attempt_N/<local_rank>/`` folders, ``mpirun --output-filename``'s ``<app>/rank.N/``,
Kubernetes restart files (``<namespace>_<pod>_<uid>/<container>/1.log`` names the pod; ``ingest.attempts``),
bare numbers (ranks, task ids) and dates.
"""

from __future__ import annotations

import os
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from l4lite.ingest.agents import FileAgents, agents_overlapping
from l4lite.ingest.attempts import pod_of_dir, pod_of_file
from l4lite.ingest.attribution import host_from_path, names_no_node, normalize_host, split_rel

_ATTEMPT = re.compile(r"attempt_\d+$")
_NUMBER = re.compile(r"(?!\d{1,3}([.-])\d{1,3}\1\d{1,3}\1\d{1,3}$)[\d._-]+$")
_RANK_DIR = re.compile(r"(?:local_)?rank[-_.]?\d+$", re.I)
_DATE = re.compile(r"\d{4}-?\d\d-?\d\d(?:[T_ -]?\d\d[:-]?\d\d(?:[:-]?\d\d)?)?")
_SEPARATOR = re.compile(r"[^a-z0-9]")
_FOLD = str.maketrans("0123456789", "0000000000")
LOOPBACK = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "::1", "0.0.0.0", "(none)"})


def is_loopback(host: str) -> bool:
    """A name every machine gives itself: it says which process wrote a line, never which node."""
    return host in LOOPBACK or host.startswith("127.")


@dataclass
class NodeLevel:
    """The answer: ``depth`` of the folder level naming nodes (0 = the first folder; -1 = the file name; None =
    no level), how it was found, and the host named in lines for a folder name that differs from it."""

    depth: int | None = None
    how: str = ""
    aliases: dict[str, str] = field(default_factory=dict)
    names: list[str] = field(default_factory=list)  # the level's names that are nodes (empty: all of them)

    def value(self, rel: str) -> str | None:
        """The folder name a file has at the level (None without a folder level)."""
        return value_at(rel, self.depth) if self.depth is not None and self.depth >= 0 else None


def layout_parts(dirs: Sequence[str]) -> set[int]:
    """Indexes of folders that a launcher's layout names, so never a node: torchelastic's run folder, attempt
    and local rank folders, numbers, ranks and dates."""
    out: set[int] = set()
    for i, d in enumerate(dirs):
        if _ATTEMPT.match(d):
            out.update((i - 1, i, i + 1))  # <run_id>_<random>/attempt_N/<local_rank>
        elif _NUMBER.match(d) or _RANK_DIR.match(d) or _DATE.fullmatch(d):
            out.add(i)
    return out


def value_at(rel: str, depth: int) -> str | None:
    """The name a file has at a level (``depth`` -1: its file name, read for a host), or None."""
    dirs, name = split_rel(rel)
    if depth < 0:
        pod = pod_of_file(rel.replace("\\", "/").rsplit("/", 1)[-1])  # a restart layout's file names its pod
        return pod if pod is not None else host_from_path(name)
    if depth >= len(dirs) or depth in layout_parts(dirs) or dirs[depth][:1] in ("", "_", "."):
        return None  # a hidden or private folder (``_meta``, ``.cache``) holds no node's logs
    return normalize_host(pod_of_dir(dirs[depth]) or dirs[depth])


def named_in_stem(rel: str, hosts: Collection[str]) -> str | None:
    """The longest host named in the job's lines that a file name spells out whole, between separators
    (``nccl-tests-worker-1.log`` and host ``nccl-tests-worker-1``): the job, not a list of words, says which
    part of the name is the host. Each run of whole words of the name is looked up (a few dozen per name)."""
    stem = split_rel(rel)[1].lower()
    cuts = [0, *(m.start() for m in _SEPARATOR.finditer(stem)), len(stem)]
    starts = [0, *(c + 1 for c in cuts[1:-1])]
    best = None
    for a in starts[:12]:
        for b in cuts[1:]:
            if b > a and (best is None or b - a > len(best)) and stem[a:b] in hosts:
                best = stem[a:b]
    return best


def varying_hosts(rels: Iterable[str], placed: Mapping[str, str] | None = None, loose: bool = False) -> dict[str, str]:
    """rel -> the host the part of its file name that differs from its siblings' names, for files whose whole name
    names none: ``sbatch --output=%x-%j-%N.out`` gives ``train-4242-node0421.out`` and ``train-4242-node0422.out``,
    whose shared start and end (the job's name and id, the extension) say nothing of which node wrote them. The
    rest is read as a file name is (``host_from_path``: ``node0421`` is a host, a task id ``0`` or ``rank0`` is
    not). Files of one folder with the same extension are siblings; at least two, all differing.

    A host without a digit (``cpu-node-a``, ``gpu-west``) is no host to one file name, but siblings say more: after
    the job's own part of the shared start (up to its last number or kind word: ``train-4242-``), parts of two or
    more words that read alike (``cpu-node-a``, ``cpu-node-b``) are the machines the names were made from, as a
    folder level of such names is. ``placed``: rel -> the host a file's lines name; where one of them disagrees
    with its part, the lines win and the siblings' parts name nothing (``loose_hosts``). Those parts are read only
    with ``loose``, after the files' lines were read whole; then only they are given."""
    groups: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for rel in rels:
        dirs, name = split_rel(rel)
        if value_at(rel, -1) is None:
            groups[("/".join(dirs), rel[len(rel) - (len(rel.rsplit("/", 1)[-1]) - len(name)):])].append((rel, name))
    out: dict[str, str] = {}
    for members in groups.values():
        names = [n for _, n in members]
        if len(names) < 2 or len(set(names)) < len(names):
            continue
        shared = os.path.commonprefix(names)
        end = os.path.commonprefix([n[::-1] for n in names])[::-1]
        end = end[min((i for i, c in enumerate(end) if not c.isalnum()), default=len(end)):]
        # the shared start ends at a separator; hosts may share their own start (``a100-rack2-14``, ``-15``), so
        # the shortest shared start that leaves every name a host is the job's part
        for cut in (0, *(i + 1 for i, c in enumerate(shared) if not c.isalnum())):
            middles = {rel: n[cut:len(n) - len(end)] for rel, n in members}
            hosts = {rel: h for rel, m in middles.items() if m and (h := host_from_path(m)) is not None}
            if len(hosts) == len(members) and len(set(hosts.values())) == len(hosts):
                out.update(hosts if not loose else {})
                break
        else:
            out.update(loose_hosts(members, shared, end, placed or {}) if loose else {})
    return out


def _job_part(shared: str) -> int:
    """Where the job's own part of a shared file-name start ends: after its last whole word that is a number or
    a kind (``train-4242-`` of ``train-4242-cpu-node-``), else 0 (``a100-rack2-1`` is the hosts' own start)."""
    cut, at = 0, 0
    shared = shared.lower()
    for m in _SEPARATOR.finditer(shared):
        word = shared[at:m.start()]
        if word and (word.isdigit() or names_no_node(word)):
            cut = m.end()
        at = m.end()
    return cut


def loose_hosts(members: Sequence[tuple[str, str]], shared: str, end: str,
                placed: Mapping[str, str]) -> dict[str, str]:
    """``varying_hosts`` for names whose parts pass no one-name host test: rel -> its part after the job's part of
    the shared start, when every part has two or more words, none is a kind, an id or a rank, they all start
    alike (three characters or more: one family of machines), and no file's lines name another host."""
    cut = _job_part(shared)
    parts = {rel: normalize_host(name[cut:len(name) - len(end)]) for rel, name in members}
    words = [p.split("-") for p in parts.values()]
    if len(set(parts.values())) < len(parts) or any(len(w) < 2 or not all(w) for w in words) \
            or any(names_no_node(p) or not _LOOSE_HOST.fullmatch(p) for p in parts.values()) \
            or len(os.path.commonprefix(list(parts.values()))) < 3:
        return {}
    if any(placed.get(rel, host) != host for rel, host in parts.items()):
        return {}
    return parts


_LOOSE_HOST = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)+")


def spelled_hosts(rels: Iterable[str], node_of: Callable[[str], str | None], named: set[str]) -> dict[str, str]:
    """rel -> the host its file name spells out whole (``named_in_stem``), for files no path or line places;
    each file name is looked up once (a job repeats a few names over many folders)."""
    seen: dict[str, str | None] = {}
    out: dict[str, str] = {}
    for rel in rels:
        if node_of(rel) is None:
            name = rel.rsplit("/", 1)[-1]
            if name not in seen:
                seen[name] = named_in_stem(name, named)
            if (host := seen[name]) is not None:
                out[rel] = host
    return out


def infer_level(rels: Sequence[str], file_hosts: Mapping[str, str], line_hosts: Collection[str] = ()) -> NodeLevel:
    """The node level of a job (see the module docstring). ``file_hosts``: the one host a file's lines name as
    their writer, for the files that have one; ``line_hosts``: every host the job's lines name, which a file
    name spelling one out whole stands for (an alias of what ``value_at`` reads in it)."""
    if not rels:
        return NodeLevel()
    max_depth = max(len(split_rel(r)[0]) for r in rels)
    stems = {r: v for r in rels if (v := value_at(r, -1))}
    spelled: dict[str, str] = {}
    hosts = frozenset(line_hosts)
    seen: dict[str, str | None] = {}  # per file name: a job of many files repeats a few names
    for r, v in stems.items():
        name = split_rel(r)[1]
        if name not in seen:
            seen[name] = named_in_stem(name, hosts) if hosts else None
        h = seen[name]
        if h is not None and h != v and spelled.setdefault(v, h) != h:
            spelled[v] = ""  # two hosts behind one reading: no alias
    spelled = {v: h for v, h in spelled.items() if h}
    verified: list[tuple[tuple, int, dict[str, str], list[str]]] = []
    unverified: list[tuple[tuple, int, list[str]]] = []
    for depth in [*range(max_depth), -1]:
        values = {r: value_at(r, depth) for r in rels}
        if depth < 0 and spelled:
            values = {r: spelled.get(v, v) if v else v for r, v in values.items()}
        named = {r: v for r, v in values.items() if v}
        distinct = set(named.values())
        if not distinct or (depth >= 0 and _crossed(named, stems)):
            continue
        by_value: dict[str, Counter[str]] = defaultdict(Counter)
        for r, v in named.items():
            h = file_hosts.get(r)
            if h:
                by_value[v][h] += 1
        hosts_of = {v: c.most_common(1)[0][0] for v, c in by_value.items()}
        # one name holds files of several hosts (one odd file aside, unless the name is a kind or an id: ``logs/``
        # names no machine, so any file of another host there says the folder is not one node's; nor is a file
        # odd that is as many as the majority: one file of each of two hosts is a folder of two nodes)
        coarser = any(len(c) > 1 and (_second(c) > 1 or _second(c) == max(c.values()) or names_no_node(v))
                      for v, c in by_value.items())
        finer = len(set(hosts_of.values())) < len(hosts_of)
        if by_value:
            if coarser or finer:
                continue  # one name holds files of several hosts, or one host's files sit under several names
            agree = sum(c[hosts_of[v]] for v, c in by_value.items())
            aliases = {v: h for v, h in hosts_of.items() if v != h}
            names = sorted(v for v in distinct if v in hosts_of or _alike(v, hosts_of)
                           or (depth >= 0 and _same_files(v, named, hosts_of)))
            # on a tie, the level whose names spell out the hosts themselves (``run/<host>/rank0/``: ``run``
            # holds every file, so it agrees with the one host the lines name as well as the host folder does)
            exact = len(hosts_of) - len(aliases)
            verified.append(((agree, len(named), exact, depth >= 0, -depth), depth, aliases, names))
            continue
        if depth >= 0:  # with no host in the lines to agree with, a folder naming a kind, an id or a date is no node
            named = {r: v for r, v in named.items() if not names_no_node(v)}
            distinct = set(named.values())
        if len(distinct) < 2 or not _partitions(named, depth) or (depth < 0 and not _one_family(distinct)):
            continue
        names = sorted(family_members(distinct)) if depth < 0 else sorted(_machines(distinct))
        unverified.append(((depth >= 0, len(distinct), -depth), depth, names))
    if verified:
        _, depth, aliases, names = max(verified, key=lambda v: v[0])
        level = NodeLevel(depth, "folder names agreeing with hosts in lines" if depth >= 0
                          else "file names agreeing with hosts in lines", aliases, names)
    elif unverified:
        _, depth, names = max(unverified, key=lambda v: v[0])
        level = NodeLevel(depth, "folder names partitioning the job" if depth >= 0
                          else "file names of one family", {}, names)
    else:
        return NodeLevel()
    if level.depth is not None and level.depth < 0 and spelled:
        # the level was judged on the hosts the names spell out; files are read by ``value_at`` again later
        chosen = set(level.names)
        raw = {v for v, h in spelled.items() if h in chosen}
        level.aliases = {**{v: level.aliases.get(h, h) for v, h in spelled.items() if v in raw}, **level.aliases}
        level.names = sorted(chosen | raw)
    return level


def _second(counts: Counter[str]) -> int:
    """The second largest count."""
    return sorted(counts.values())[-2]


def _crossed(named: Mapping[str, str], stems: Mapping[str, str]) -> bool:
    """A host-like file name found under two names of a folder level (``kernel/n1.log``, ``gpu/n1.log``): the
    folders sort the files by kind, the file names name the nodes."""
    where: dict[str, str] = {}
    for r, stem in stems.items():
        v = named.get(r)
        if v is not None and where.setdefault(stem, v) != v:
            return True
    return False


def _alike(name: str, evidenced: Mapping[str, str]) -> bool:
    """A name without hosts in its lines, beside names with them: a node when it reads like them (same name with
    digits folded, or a common start: ``cpu-node-a`` beside ``cpu-node-b``); a ``config`` folder is not."""
    folded = name.translate(_FOLD)
    for other in evidenced:
        if other.translate(_FOLD) == folded or len(os.path.commonprefix([name, other])) >= 3:
            return True
    return False


def _same_files(name: str, named: Mapping[str, str], evidenced: Mapping[str, str]) -> bool:
    """A folder without hosts in its lines beside folders with them is a node like them when it holds the files a
    node's folder holds (``b/console.log`` and ``b/.../attempt_0/0/stderr.log`` beside ``a/`` of the same names):
    a node that printed no host of its own (a preempted node's agent) is a sibling, not a folder of the run's
    output. A kind (``logs``, ``part-0002``) stays no node."""
    if names_no_node(name):
        return False
    mine = {split_rel(r)[1] for r, v in named.items() if v == name}
    theirs = {split_rel(r)[1] for r, v in named.items() if v in evidenced}
    return bool(mine) and mine <= theirs


def _partitions(named: Mapping[str, str], depth: int) -> bool:
    """Each name of the level sits under one parent path: ``node1/gpu0`` and ``node2/gpu0`` do not partition."""
    if depth <= 0:
        return True
    parent: dict[str, str] = {}
    for r, v in named.items():
        p = "/".join(split_rel(r)[0][:depth])
        if parent.setdefault(v, p) != p:
            return False
    return True


def _one_family(names: set[str]) -> bool:
    """File names that name nodes look alike (``node017``, ``node018``); when most do, one odd name
    (``latin1``) does not make the level wrong, it is left out by ``family_members``."""
    return max(Counter(n.translate(_FOLD) for n in names).values()) >= 2


def _machines(names: set[str]) -> set[str]:
    """The folder names of a level that can be machines when no line names a host: beside a family of numbered
    names (``worker-0``, ``worker-1``), a name with no digit at all (``checkpoints``, ``tensorboard``) is a folder
    of the run's output, not a node; names with no family keep every name (hosts called ``titan``, ``saturn``)."""
    numbered = {n for n in names if any(c.isdigit() for c in n)}
    if len(numbered) < 2 or len(numbered) == len(names) or not _one_family(numbered):
        return names
    return numbered


def family_members(names: set[str]) -> set[str]:
    """The names of the largest family (digits folded) when it has at least two members, else all names."""
    fam = Counter(n.translate(_FOLD) for n in names)
    top, count = fam.most_common(1)[0]
    if count < 2:
        return set(names)
    return {n for n in names if n.translate(_FOLD) == top or fam[n.translate(_FOLD)] >= 2}


class KindSplit(NamedTuple):
    """``kind_split``'s answer: files no one's by their folder; those of them whose folder only its agents split
    (its lines name one host: no folder above or below stands for a node either); the most agents one folder's
    files ran at once."""

    nodes: dict[str, None]
    apart: set[str]
    agents: int


def kind_split(kind: set[str], nodes: Mapping[str, str | None], aliases: Mapping[str, str], level: NodeLevel,
               agents_of: Callable[[str], FileAgents | None],
               rels: Iterable[str]) -> KindSplit:
    """A folder that names no machine (``logs/``) stands for the one host its sampled files name only until its
    files read whole name another writer, or show torchelastic agents of two nodes running at once (a preempted
    node's console names no host, but its agent ran beside the named node's): then it is a folder of several
    nodes, and its files that no line places are no one's by their folder (their content, their rank or a
    console's copies may still place them). ``agents_of``: what a file shows of its agents."""
    hosts: dict[str, set[str]] = {}
    for rel in kind:
        if (v := level.value(rel)) is not None and (node := nodes.get(rel)) is not None:
            hosts.setdefault(v, set()).add(node)
    folders = {level.value(rel) for rel in kind} - {None}
    agents: dict[str, list[FileAgents]] = {}
    for rel in rels:
        if (v := level.value(rel)) in folders and (found := agents_of(rel)) is not None:
            agents.setdefault(v, []).append(found)
    at_once = {v: agents_overlapping(found) for v, found in agents.items()}
    by_hosts = {v for v in folders if len(hosts.get(v, set()) | {aliases.get(v, "")} - {""}) > 1}
    by_agents = {v for v in folders if at_once.get(v, 0) > 1} - by_hosts
    split = {rel: None for rel in kind if rel not in nodes and level.value(rel) in by_hosts | by_agents}
    return KindSplit(split, {rel for rel in split if level.value(rel) in by_agents}, max(at_once.values(), default=0))
