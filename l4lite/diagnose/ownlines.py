"""What a suspect node said itself, when no signature explains the failure and its peers only print cascades.

A node that went away leaves its peers printing watchdog timeouts, broken pipes and SIGTERMs; those lines say
that it went, not why. Its own lines often do, in words no rule was written for: a DeepSpeed memory report at
95 % of the host's RAM, a DCGM table that fails GPU 0, an IB async event. Such a line is

- the node's own: its template is printed by few nodes of the job (a line every node prints is routine);
- not a cascade and not a line a rule has already placed (a launcher's report of its killed ranks);
- near the failure (minutes before it, or after it while the peers time out), and after the node's first
  training iteration if it trained at all (start-up banners and environment notices come before it);
- about a component, by the lexicon's words (``rules.components``): the learned model is not asked, since
  informational lines are read here too and only a named component makes one worth showing;
- not a progress line (an iteration's loss, loss scale, skipped steps: the scan's training and validation points):
  it reports each step's numbers, and one printed on the last rank alone reads as the node's own. Under fp16 the
  first steps' loss-scale search counts skipped iterations in it (real job 191, cut off at its 14th step), which
  is no fault; the health detector reads those numbers.
"""

from __future__ import annotations

import math
import re

from l4lite.detect.base import Finding
from l4lite.diagnose.evidence import own_time
from l4lite.records import Record
from l4lite.rules.components import component, first_failure, is_cascade, is_listing, named_component
from l4lite.scan.jobscan import is_host
from l4lite.scan.scanner import JobScan

SPATIAL_FRACTION = 0.25  # as the filters': a template on more than this share of the nodes is routine
BEFORE = 300.0  # seconds before the failure a node's own line may be
AFTER = 900.0  # and after it (the peers' watchdogs fire minutes later)
MAX_RECORDS = 6
SCORE = 0.25  # as a component finding: below every signature
_SUMMARY = re.compile(r"^\s*exitcode\s*:", re.M)  # a launcher's per-rank failure report


def near(r: Record, t0: float | None) -> bool | None:
    """Whether a record is within the failure's window; None when either time is unknown.

    A line without a timestamp of its own is dated by the stamped line before it in its file: the lines a rank
    prints as it fails are seldom stamped (a DCGM table, an NCCL WARN after a traceback).
    """
    t = own_time(r) or r.time
    if t is None or t0 is None or not math.isfinite(t0):
        return None
    return t0 - BEFORE <= t <= t0 + AFTER


def node_said(scan: JobScan, node: str | None, t0: float | None, placed: set[tuple[str, int]]) -> Finding | None:
    """A symptom finding from the node's own lines that name a component near ``t0``; None when there are none.

    ``placed``: (file, line) of the records a rule matched. Lines of unknown time count only when ``t0`` is
    unknown too (a job whose lines carry no dates).
    """
    if node is None:
        return None
    n_nodes = len(scan.node_last)
    limit = max(1, math.floor(SPATIAL_FRACTION * n_nodes)) if n_nodes >= 4 else n_nodes
    # a node that trained before it failed printed its start-up lines (launcher banners, environment notices)
    # before its first iteration: those are not lines of the failure
    # (often only rank 0 logs progress: then the job's first iteration stands for the node's)
    train = [p for p in scan.metrics if p.kind == "train" and p.time is not None]
    started = min((p.time for p in train if p.node == node), default=None) or \
        min((p.time for p in train if p.time is not None), default=None)
    progress = {(p.file, p.line) for p in scan.metrics if p.kind in ("train", "val")}
    found: list[tuple[Record, str, tuple[str, ...]]] = []
    for (tid, where), recs in scan.exemplars.items():
        stat = scan.templates.get(tid)
        if where != node or stat is None or len(stat.nodes) > limit:
            continue
        for r in recs:
            if (r.file, r.line) in placed or (r.file, r.line) in progress or is_cascade(r.text) or is_listing(r.text):
                continue
            ok = near(r, t0)
            if ok is False or (ok is None and t0 is not None):
                continue
            t = own_time(r) or r.time
            if started is not None and t is not None and t <= started:
                continue
            named = component(r.text)
            if named is not None:
                found.append((r, named.category, named.words))
    if not found:
        return None
    found.sort(key=lambda it: (it[0].time if it[0].time is not None else math.inf, it[0].file, it[0].line))
    category = found[0][1]
    same = [it for it in found if it[1] == category][:MAX_RECORDS]
    words = ", ".join(dict.fromkeys(w for _, _, ws in same for w in ws))
    first = same[0][0]
    return Finding("components", category, "symptom", SCORE,
                   f"The node's own lines, printed by few nodes near the failure, name the "
                   f"{category.replace('_', ' ')} component ({words[:120]}).",
                   node=node, rank=first.rank, gpu=first.gpu, time=first.time, severity="warning",
                   records=[r for r, _, _ in same], count=len(same), data={"component": words, "own_lines": True})


# How an agent tears its workers down, and its report of them: what was done to the node, not what it said.
TEARDOWN = re.compile(r"closing signal SIG|Killing subprocess|SignalException|got signal: ?\d+|Received SIGTERM|"
                      r"SIGTERM received|RendezvousClosedError|ChildFailedError|^\s*exitcode\s*:", re.M)


def last_words(scan: JobScan, node: str | None, t0: float | None, placed: set[tuple[str, int]]) -> Finding | None:
    """A stuck node's last lines of its own near the stall, when none of them reads as an error; None without.

    What an engineer reads first in a hang is where the quiet rank was when it stopped: a stall inspector's
    warning, a validation loop's last batch, a stack dump, a shutdown notice. Those lines seldom name a component
    and no rule knows them, yet they are the stuck node's and its peers' watchdog timeouts are not. Only lines no
    other node printed (a template of this node alone), not cascades nor rule hits nor launcher lines nor
    progress lines, near ``t0`` and after the node's first training step; the last of them, in file order.
    Without such lines, the node's own rule hits near ``t0`` that are not its teardown (its agent's lost
    heartbeat to the rendezvous, its own timeout) still say more of it than its peers' lines.
    """
    if node is None or t0 is None:
        return None
    unnamed = not is_host(node)

    def mine(where: str | None) -> bool:
        """A line of the stuck node: its key, or, for a node no line names (``rank:N``), any line no line placed:
        its other ranks' files and its console are keyed apart from it, yet are the same machine's."""
        return where == node or (unnamed and (where is None or not is_host(where)))

    metric_lines = {(p.file, p.line) for p in scan.metrics}
    train = [p.time for p in scan.metrics if p.kind == "train" and p.time is not None and mine(p.node)]
    started = min(train, default=None)

    def fits(r: Record) -> bool:
        t = own_time(r) or r.time
        return bool(near(r, t0)) and (r.file, r.line) not in metric_lines and \
            not (started is not None and t is not None and t <= started)

    found: list[Record] = []
    for (tid, where), recs in scan.exemplars.items():
        stat = scan.templates.get(tid)
        if not mine(where) or stat is None or len(stat.nodes) > 1 and (not unnamed or any(map(is_host, stat.nodes))):
            continue
        found += [r for r in recs if (r.file, r.line) not in placed and r.source != "launcher"
                  and not is_cascade(r.text) and fits(r)]
    if not found:
        seen: set[tuple[str, int]] = set()
        for h in scan.hits:
            r = h.record
            if mine(r.node) and (r.file, r.line) not in seen and not TEARDOWN.search(r.text[:4000]) and fits(r):
                seen.add((r.file, r.line))
                found.append(r)
    if not found:
        return None
    found.sort(key=lambda r: (r.time if r.time is not None else math.inf, r.file, r.line))
    last = sorted(found[-MAX_RECORDS:], key=lambda r: (r.file, r.line))
    first = last[0]
    data: dict[str, object] = {"own_lines": True, "last_words": True}
    # read together, the lines may name what no line names alone: the frames of a traceback cut above its header
    # (a remote-storage client's read, a checkpoint writer); a refused connection or a parse warning that no
    # signature knows still names its component in the lexicon's or the learned model's reading, unless that
    # reading is software: a stall's own words (a stall inspector's "deadlock") are no diagnosis
    said = "\n".join(r.text for r in last)
    named = named_component(said)
    if named is None:
        read = component(said, learned=True)
        named = read if read is not None and read.category != "software" else None
    if named is not None:
        data["component"] = ", ".join(named.words)
    return Finding("components", named.category if named is not None else "unknown", "symptom", SCORE,
                   "The stuck node's own last lines near the stall, printed by no other node: where it was when "
                   "it stopped" + (f"; they name the {named.category.replace('_', ' ')} component "
                                   f"({', '.join(named.words)[:120]})." if named is not None else "."),
                   node=node, rank=first.rank, gpu=first.gpu, time=first.time, severity="warning",
                   records=last, count=len(last), data=data)


_WORD = re.compile(r"[A-Za-z][A-Za-z_]+")


def odd_cascade(findings: list[Finding], roles: dict[int, str]) -> Finding | None:
    """The one node whose lost-peer lines are worded like no other node's, when every other node's are alike.

    When a job falls apart and no line names a cause, the nodes that merely lost a peer all report it in the
    same words (the same store error, the same watchdog timeout), while the node where it began says something
    of its own, even if that too reads as a lost connection (a reset while downloading, a closed bootstrap
    socket). Teardown lines (SIGTERM, the launcher's report) are left out. None unless exactly one node words
    all its cascades apart and every other node (at least two) words all of its own as some other node does.
    """
    by_node: dict[str, dict[str, list[Record]]] = {}
    for f in findings:
        if f.detector != "rules" or roles.get(id(f)) not in ("cascade", "confirmation"):
            continue
        for r in f.records:
            if r.node is None or TEARDOWN.search(r.text[:4000]) or not is_cascade(r.text):
                continue
            words = " ".join(_WORD.findall(r.text[:4000]))
            by_node.setdefault(r.node, {}).setdefault(words, []).append(r)
    if len(by_node) < 3:
        return None
    nodes_of: dict[str, set[str]] = {}
    for node, worded in by_node.items():
        for words in worded:
            nodes_of.setdefault(words, set()).add(node)
    # a node is apart when none of its wordings is another node's, alike when each of them is
    apart = [node for node, worded in by_node.items() if all(nodes_of[w] == {node} for w in worded)]
    alike = [node for node, worded in by_node.items() if all(len(nodes_of[w]) > 1 for w in worded)]
    if len(apart) != 1 or len(alike) < 2 or len(apart) + len(alike) != len(by_node):
        return None
    odd = apart
    recs = sorted((r for recs in by_node[odd[0]].values() for r in recs), key=lambda r: (r.file, r.line))
    recs = recs[:MAX_RECORDS]
    first = recs[0]
    return Finding("components", "unknown", "symptom", SCORE,
                   "The one node whose lost-connection lines are worded like no other node's: where the failure "
                   "began, while every other node reported losing a peer alike.", node=odd[0], rank=first.rank,
                   gpu=first.gpu, time=first.time, severity="warning", records=recs, count=len(recs),
                   data={"own_lines": True, "odd_cascade": True})


def only_cascades(f: Finding) -> bool:
    """Whether every line a finding shows is a cascade (an agent's SIGTERM, a peer's watchdog timeout).

    A stuck rank inferred from its silence is shown by such lines when it printed nothing else: they prove that
    the job was torn down around it, not what held it up, so they name no category (``software`` would be the
    cascade rule's guess). A launcher's failure summary that lists the rank killed by its own agent says more:
    the rank was still running when its peers had failed, which is the hang itself; so does its last progress
    line.
    """
    return bool(f.records) and all(is_cascade(first_failure(r.text)) and not _SUMMARY.search(r.text[:4000])
                                   for r in f.records)


EXCEPTION_LINES = 60  # how far below its traceback's first line an exception line may be


def its_exception(findings: list[Finding], roles: dict[int, str], primary: Finding) -> Finding | None:
    """The exception line of a generic traceback when a line printed inside it cut it in two; None without one.

    A log line of another thread between the frames ends the traceback's record early: the traceback then names
    nothing, and its exception line, matched on its own a few lines below in the same file, says what failed.
    """
    if not primary.data.get("fallback") or primary.data.get("component") or not primary.records:
        return None
    top = primary.records[0]
    for f in findings:
        if f is primary or roles.get(id(f)) != "root" or not f.data.get("component") or not f.records:
            continue
        r = f.records[0]
        if f.node == primary.node and r.file == top.file and 0 < r.line - top.line <= EXCEPTION_LINES:
            return f
    return None


def node_apart(findings: list[Finding], roles: dict[int, str]) -> Finding | None:
    """The one node that said something of its own while every other node only echoed the failure.

    When no line names a cause and the lead is a peer's cascade, the lines new to the job near the failure (the
    filters' anomalies) tell the nodes apart: a node that lost a peer adds nothing but cascades and its agent's
    teardown, while the node where it began printed something else: a signal handler's banner, a socket timeout
    of its own, a traceback that is not a lost connection. None unless exactly one node printed such lines and at
    least two other nodes printed cascades.
    """
    own: dict[str, list[Record]] = {}
    for f in findings:
        if f.detector != "filters" or f.role != "anomaly" or f.node is None:
            continue
        recs = [r for r in f.records if r.source != "launcher" and not is_cascade(first_failure(r.text))
                and not TEARDOWN.search(r.text[:4000])]
        if recs:
            own.setdefault(f.node, []).extend(recs)
    if len(own) != 1:
        return None
    node, recs = next(iter(own.items()))
    echoes = {f.node for f in findings if roles.get(id(f)) == "cascade" and f.node not in (None, node)}
    if len(echoes) < 2:
        return None
    recs = sorted(recs, key=lambda r: (r.file, r.line))[:MAX_RECORDS]
    named = component("\n".join(r.text for r in recs))
    first = recs[0]
    return Finding("components", named.category if named is not None else "unknown", "symptom", SCORE,
                   "The one node that printed lines of its own near the failure while every other node only "
                   "reported losing a peer: where the failure began.", node=node, rank=first.rank, gpu=first.gpu,
                   time=first.time, severity="warning", records=recs, count=len(recs),
                   data={"own_lines": True, "apart": True})


def said_apart(findings: list[Finding], roles: dict[int, str], category: str) -> Finding | None:
    """Everyone lost a peer: the node whose lost-peer lines are worded apart (taking the cascade's
    ``category``), else the one node that said anything but cascades; None without either."""
    said = odd_cascade(findings, roles)
    if said is not None:
        said.category = category
        return said
    return node_apart(findings, roles)
