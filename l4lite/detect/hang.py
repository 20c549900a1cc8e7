"""The stuck rank of a hang: from Flight Recorder dumps, else from what the logs leave out.

In a hang every rank but the stuck one reports a collective timeout, and the stuck one reports nothing, so the
loudest node is the wrong one. Two sources name the quiet one:

- Flight Recorder dumps (``scan.flight_records``): per process group, the first collective that not every
  member entered and the members missing from it (``collectives.match_groups``, the matching PyTorch's
  analyser does). A root finding per stuck node, with the per-rank table in ``data["hang"]``.
- The logs, by absence: the ranks whose timeouts, watchdog lines and torchelastic failure entries name them
  against the ranks the job has (its rank map); the rank that printed no error while its peers timed out, the
  rank its agent had to SIGTERM because it was still running, the ranks a desync report calls lagging
  (``TORCH_NCCL_DESYNC_DEBUG``), the rank whose progress lines stop first, and Megatron's straggler lines
  (``MxRtt/Rnk``). Only when every error the
  ranks printed is a collective error: a rank that raised its own exception is a crash, not a hang.
  When every rank heard of timed out, the rank no line names (missing from the rank numbers, on the node that
  shows fewer ranks: a rank that never reached its collective, slowed or stopped, and never printed) is the one.
- The logs, when no rank timed out but every other rank lost its connection to a peer: the one rank that reported
  nothing (no error, no failure entry) while its agent's failure report lists a node-mate that lost it left first,
  without a word (a ``sys.exit(0)`` on one rank's code path: a launcher lists the workers that failed).
- The logs, when nothing timed out, was lost or raised before the job ended (a collective timeout longer than the
  wait, then a scheduler's time limit or a cancel): the node whose ranks' progress lines stop a step before their
  peers', followed by a silence of many step intervals, is the node that stopped making progress.

When the dumps name the stuck rank, agreeing log evidence is a confirmation.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from l4lite.detect.base import Detector, Finding
from l4lite.detect.collectives import GroupVerdict, hang_table, match_groups
from l4lite.ingest.flight_recorder import FlightDump
from l4lite.ingest.stamp_patterns import parse_elastic_time
from l4lite.records import Record
from l4lite.scan.scanner import UNKNOWN_NODE, JobScan, MetricPoint

TIMED_OUT = re.compile(
    r"Timed out waiting \d+ ?ms|Watchdog caught collective operation timeout|Timeout at NCCL work|"
    r"collective operation timeout|ran for \d+ milliseconds before timing out|DistBackendError[^\n]*?time", re.I)
# What a rank prints when a peer died or aborted first: a reaction, not a wait of its own.
PEER_GONE = re.compile(r"Connection closed by (?:remote )?peer|Connection reset by peer|NCCL communicator was aborted|"
                       r"Broken pipe|DistNetworkError", re.I)
# JAX's coordination client ending its process on the service's fatal error: a peer gone, unless it had crashed first
TOLD_GONE = re.compile(r"indicates that another task died", re.I)
# the service naming the task it lost (its heartbeats stopped): that line places it, not the others' silence
NAMED_GONE = re.compile(r"heartbeat timeout|stopped sending heartbeats", re.I)
# A lost connection met while the process was leaving anyway (Ray's core worker: ``Failed to disconnect from the
# local raylet: IOError: Broken pipe`` at shutdown): its own teardown, not a wait for a peer that went first.
LEAVING = re.compile(r"\bdisconnect|\bshut(?:ting)? ?down|\bexiting\b", re.I)
# A traceback that runs through a signal handler: the rank was still busy when its agent sent SIGTERM.
SIGNALLED = re.compile(r"signal_handler\(signum, frame\)|_terminate_process_handler|SignalException|"
                       r"Signal 15 \(SIGTERM\)|Signals\.SIGTERM")
TIMEOUT_MS = re.compile(r"Timed out waiting (\d+) ?ms|Timeout\(ms\)=(\d+)|ran for (\d+) milliseconds")
# The global rank a line names: NCCL's "[PG 0 (default_pg) Rank 3]" or torch's "[rank3]:" prefix (ingest may have
# given the line torchrun's local rank from its "[default1]:" prefix).
RANK_IN_LINE = re.compile(r"\[(?:PG \S+ (?:\(\S+\) )?)?[Rr]ank ?(\d+)\]")
SEQ_IN_LINE = re.compile(r"SeqNum=(\d+)|Timeout at NCCL work: (\d+)")
DONE_IN_LINE = re.compile(r"last completed NCCL work: (\d+)")
OP_IN_LINE = re.compile(r"OpType=(\w+)")
LAGGING = re.compile(r"\[([\d, ]+)\] (?:finished collective #\d+, but didn.t join|joined but didn.t finish)")
STRAGGLER = re.compile(r"MnRtt/Rnk:\s*[\d.]+\s*\w*/(\d+)\s*\|\s*MxRtt/Rnk:\s*([\d.]+)\s*\w*/(\d+)")
# One worker of torchelastic's failure report: its rank, exit code and the last line of its traceback.
ELASTIC_ENTRY = re.compile(
    r"\[\d+\]:\s*\n\s*time\s*:\s*(?P<when>\S+)\s*\n\s*host\s*:\s*(?P<host>\S+)\s*\n\s*rank\s*:\s*(?P<rank>\d+)"
    r"[^\n]*\n\s*exitcode\s*:\s*(?P<exit>-?\d+)(?:\s*\(pid:\s*(?P<pid>\d+)\))?[^\n]*\n\s*error_file:[^\n]*\n\s*traceback\s*:(?P<tb>.*?)"
    r"(?=\n-{8,}|\n={8,}|\n\[\d+\]:|\Z)", re.S)
# The agent's SIGTERM to one worker process, by pid (torchelastic: "Sending process 4711 closing signal SIGTERM").
AGENT_KILL = re.compile(r"Sending process (\d+) closing signal SIG(?:TERM|KILL|INT)")
FORMAT_WORD = re.compile(r"[A-Za-z][A-Za-z_]+")
# words that are values, not format: a non-finite loss, a stamp's day and month
VALUE_WORDS = frozenset({"nan", "inf", "mon", "tue", "wed", "thu", "fri", "sat", "sun", "jan", "feb", "mar", "apr",
                         "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"})
STAMP = re.compile(r"\d{1,2}:\d\d:\d\d")  # a line with its own time (not one inherited from the line above)
SIGTERM_EXITS = frozenset({-15, 143})
MAX_GROUPS = 3  # process groups reported from the dumps
# A job whose ranks logged no progress for this many of its usual step intervals (and at least STALL_MIN_S) before
# its logs end had stopped: whatever ended it later (a scheduler's time limit, a cancel) came after the hang.
STALL_STEPS = 20
STALL_MIN_S = 10.0


@dataclass
class RankFacts:
    """What the logs say of each rank: collective errors, other errors, agent kills, lagging reports."""

    known: dict[int, str | None] = field(default_factory=dict)  # rank -> node
    unplaced: dict[int, str] = field(default_factory=dict)  # rank -> its scan key (``rank:N``): no line placed it
    timed_out: dict[int, list[Record]] = field(default_factory=dict)  # waited in a collective until its timeout
    peer_gone: dict[int, list[Record]] = field(default_factory=dict)  # a peer closed the connection
    crashed: dict[int, list[Record]] = field(default_factory=dict)  # an error of its own (not a collective one)
    told_gone: dict[int, list[Record]] = field(default_factory=dict)  # a coordination service's report of a peer
    named_gone: list[Record] = field(default_factory=list)  # the service naming the task it lost
    told: set[int] = field(default_factory=set)  # ranks whose told_gone counted as a peer gone
    killed: dict[int, Record] = field(default_factory=dict)  # SIGTERMed by its agent while still running
    kill_line: dict[int, Record] = field(default_factory=dict)  # the agent's own line sending it the signal
    pids: dict[int, int] = field(default_factory=dict)  # rank -> pid, from the launcher's failure report
    lagging: dict[int, Record] = field(default_factory=dict)
    straggler: dict[int, Record] = field(default_factory=dict)
    behind: dict[int, Record] = field(default_factory=dict)  # its last progress line is older than its peers'
    last_done: dict[int, int] = field(default_factory=dict)  # last completed collective (watchdog lines)
    timeout_seconds: float | None = None
    first_error: float | None = None
    op: str | None = None
    seq: int | None = None


class HangDetector(Detector):
    """Names the stuck rank of a hang and its node."""

    name = "hang"

    def __init__(self, *, dump_score: float = 0.95, log_score: float = 0.6) -> None:
        self.dump_score = dump_score
        self.log_score = log_score

    def detect(self, scan: JobScan) -> list[Finding]:
        facts = rank_facts(scan)
        found = self._from_dumps(scan, scan.flight_records)
        logs = self._from_logs(scan, facts)
        if found:
            stuck_nodes = {f.node for f in found}
            for f in logs:  # the logs agree: a confirmation of the dumps' verdict
                if f.node in stuck_nodes:
                    f.role = "confirmation"
                    found.append(f)
                    if f.data.get("killed_busy"):  # and their lines about the stuck rank go with the dumps'
                        for g in found:
                            if g.node == f.node and g is not f:
                                g.records = g.records + [r for r in f.records if r not in g.records]
            return found
        return logs

    # ------------------------------------------------------------------ dumps
    def _from_dumps(self, scan: JobScan, dumps: list[FlightDump]) -> list[Finding]:
        if not dumps:
            return []
        verdicts = [v for v in match_groups(dumps) if v.stuck][:MAX_GROUPS]
        if not verdicts:
            return []
        path_nodes = {d.rank: d.node for d in dumps if d.node}
        rank_nodes = {**path_nodes, **scan.rank_nodes}
        main = min(verdicts, key=lambda v: (not v.missing, v.started_ns or 1 << 62))
        table = hang_table(main, rank_nodes)
        table["groups"] = [hang_table(v, rank_nodes) for v in verdicts if v is not main]
        out = []
        by_node: dict[str | None, list[int]] = {}
        for rank in main.stuck:
            by_node.setdefault(rank_nodes.get(rank), []).append(rank)
        for node, ranks in by_node.items():
            t = _stall_time(main, ranks)
            records = [_dump_record(main, r, rank_nodes.get(r), t) for r in ranks[:4]]
            how = "never entered" if main.missing else "left no dump for"
            score = self.dump_score if main.missing else self.dump_score - 0.25
            explain = (f"Flight Recorder: rank{'s' if len(ranks) > 1 else ''} {_join(ranks)} {how} collective "
                       f"#{main.seq} ({main.op or '?'}, sizes {main.input_sizes}) of process group "
                       f"{table['process_group']} that rank{'s' if len(main.entered) != 1 else ''} "
                       f"{_join(main.entered)} entered and waited in: the stuck rank of a hang")
            out.append(Finding(self.name, "software", "root", score, explain, node=node, rank=ranks[0], time=t,
                               records=records, count=len(ranks), severity="error",
                               action=f"Take a stack dump (py-spy dump --pid) of rank {ranks[0]} on {node or '?'} "
                                      "before killing the job; its last collective call is in the report.",
                               data={"signal": "stuck_rank", "scope": "node", "hang": table,
                                     "phase_hint": "train"}))
        return out

    # ------------------------------------------------------------------ logs
    def _from_logs(self, scan: JobScan, facts: RankFacts) -> list[Finding]:
        if facts.crashed:
            return []
        if not facts.timed_out:
            return self._vanished(facts, scan) or self._stalled(facts, scan)
        # A rank waited if it timed out itself, or saw a peer go before it was killed (a rank whose SIGTERM
        # handler fails on the closed connection was busy elsewhere when the signal came; one that reported the
        # lost peer first and was torn down after it was waiting, like the rest).
        waited = set(facts.timed_out) | {r for r in facts.peer_gone if reported_first(facts, r)}
        quiet = {r for r in facts.known if r not in waited}
        unheard: dict[int, str | None] = {}
        if not quiet:  # every rank heard of waited: the one no line names (a slow or stopped rank that never got
            missing, nodes = _unheard(facts)  # to its collective), on the node that shows fewer ranks
            unheard = {r: next(iter(nodes)) for r in missing}
            quiet = set(unheard)
        candidates = quiet | set(facts.lagging) | set(facts.behind)
        if not candidates or len(quiet) >= len(facts.known):
            return []
        by_node: dict[str | None, list[int]] = {}
        for r in sorted(candidates):
            by_node.setdefault(facts.known.get(r) or scan.rank_nodes.get(r) or unheard.get(r)
                           or facts.unplaced.get(r), []).append(r)
        t = _log_stall_time(scan, facts)
        out = []
        table = _log_table(facts, candidates, scan.rank_nodes)
        for node, ranks in by_node.items():
            if node is None:
                continue
            score = self.log_score
            why = []
            busy = {r: rec for r, rec in facts.killed.items() if r not in waited}
            for named, bonus, reason in (
                    (busy, 0.15, "its agent had to SIGTERM it because it was still running"),
                    (facts.lagging, 0.1, "the desync report calls it lagging"),
                    (facts.behind, 0.1, "its progress stopped first"),
                    (facts.straggler, 0.05, "Megatron's straggler report gives it the longest round trip")):
                if any(r in named for r in ranks):
                    score += bonus
                    why.append(reason)
            if len(by_node) > 1:
                score -= 0.2
            peers = sorted(set(facts.timed_out) - set(ranks))
            explain = (f"rank{'s' if len(ranks) > 1 else ''} {_join(ranks)} printed no error while rank"
                       f"{'s' if len(peers) > 1 else ''} {_join(peers)} timed out in a collective"
                       + (f" ({'; '.join(why)})" if why else "") + ": the stuck rank of a hang")
            # the stuck rank's own lines are the evidence; the peers' reports about it only when it left none.
            # Killed while busy: the agent's line signalling it says so of it alone (the launcher's report that
            # quotes it also quotes its peers' errors), and the node's other ranks that timed out waiting are
            # the witnesses on its own node.
            records = [facts.kill_line.get(r) or facts.killed[r] for r in ranks if r in facts.killed][:2]
            if any(r in facts.kill_line for r in ranks):
                records += [rec for r, recs in sorted(facts.timed_out.items()) if r not in ranks
                            and facts.known.get(r) == node for rec in recs if not is_report(rec)][:4]
            records += [facts.straggler[r] for r in ranks if r in facts.straggler][:1]
            records += [facts.behind[r] for r in ranks if r in facts.behind][:4]
            if not records:
                records = [facts.lagging[r] for r in ranks if r in facts.lagging][:1]
                # the node's other ranks' reports first: they are the node's own lines
                records += [recs[0] for r, recs in sorted(facts.timed_out.items(),
                                                          key=lambda kv: (facts.known.get(kv[0]) != node, kv[0]))][:4]
            out.append(Finding(self.name, "software", "root", round(min(score, 0.9), 3), explain, node=node,
                               rank=ranks[0], time=t, records=records, count=len(ranks), severity="error",
                               action=f"Take a stack dump (py-spy dump --pid) of rank {ranks[0]} on {node} before "
                                      "killing the job; turn on the Flight Recorder (TORCH_FR_BUFFER_SIZE, "
                                      "TORCH_NCCL_DUMP_ON_TIMEOUT=1) to see which collective it never entered.",
                               data={"signal": "stuck_rank", "inferred": True, "scope": "node",
                                     "killed_busy": any(r in facts.kill_line for r in ranks), "why": why,
                                     "hang": dict(table, stuck_ranks=ranks, stuck_nodes=[node]),
                                     "phase_hint": "train"}))
        return out


    def _vanished(self, facts: RankFacts, scan: JobScan) -> list[Finding]:
        """The rank that left first without a word: every other rank lost its connection to a peer, none timed
        out or raised an error of its own, and one node's rank reported nothing at all (no error, no failure
        entry, no signal from its agent): it ended on its own (a ``sys.exit(0)`` on one rank's code path) or
        without a trace, and the loud nodes only report losing it."""
        gone = set(facts.peer_gone)
        quiet = {r for r in facts.known if r not in gone and r not in facts.killed}
        nodes = {facts.known.get(r) or scan.rank_nodes.get(r) for r in quiet}
        if not quiet:  # it printed nothing with its rank on it: the rank missing from the rank numbers, on the
            quiet, nodes = _unheard(facts)  # node that shows fewer ranks than the others
        if not quiet or len(gone) < 2 or len(quiet) >= len(gone) or len(nodes) != 1 or None in nodes:
            return []
        node = next(iter(nodes))
        # its node lived on: its agent's failure report names a node-mate that lost the quiet rank, and not the
        # quiet rank itself (a launcher lists the workers that failed; one that ended with status 0 is not there).
        # A node that failed as a whole, or a rank no report accounts for, is no rank that left. Processes started
        # without a launcher that reports (JAX's, each on its own): a node-mate that lost the quiet rank itself.
        mates = any(facts.known.get(r) == node and (r in facts.pids or not facts.pids) for r in gone)
        if not mates or quiet & set(facts.pids) or not facts.pids and not gone <= facts.told:
            return []  # without a launcher, only every peer told by the coordination service that a task died
        ranks = sorted(quiet)
        peers = sorted(gone)
        explain = (f"rank{'s' if len(ranks) > 1 else ''} {_join(ranks)} printed no error and no failure while "
                   f"rank{'s' if len(peers) > 1 else ''} {_join(peers)} lost the connection to a peer: the rank that "
                   "left first (it ended without an error of its own, or was stopped without a trace)")
        # the peers' reports, its own node's first: they are all that shows it left
        records = [recs[0] for r, recs in sorted(facts.peer_gone.items(),
                                                 key=lambda kv: (facts.known.get(kv[0]) != node, kv[0]))][:4]
        # a rank the launcher's report leaves out ended with status 0 (its own code path); without a launcher's
        # report nothing says how it ended (killed, stopped or exited)
        category = "software" if facts.pids else "unknown"
        return [Finding(self.name, category, "root", round(self.log_score - 0.1, 3), explain, node=node,
                        rank=ranks[0], time=facts.first_error, records=records, count=len(ranks), severity="error",
                        action=f"Find why rank {ranks[0]} on {node} ended early: an exit on a rank-dependent code "
                               "path (an early return, a sys.exit), or its process log on the node (dmesg, the "
                               "scheduler's record of its exit status).",
                        data={"signal": "vanished_rank", "inferred": True, "scope": "node", "ranks": ranks,
                              "phase_hint": "train"})]

    def _stalled(self, facts: RankFacts, scan: JobScan) -> list[Finding]:
        """The stuck rank of a hang that no timeout reported: no rank timed out, lost a peer or raised an error of
        its own, one node's ranks' progress stops before their peers' (the peers went on to the next collective
        and waited there), and then no rank made progress for many step intervals until the logs end. The job
        had stopped before whatever ended it; the node that stopped first is where, its last progress when."""
        if not facts.behind or facts.peer_gone or facts.crashed:
            return []
        nodes = {facts.known.get(r) or scan.rank_nodes.get(r) for r in facts.behind}
        if len(nodes) != 1 or None in nodes:
            return []
        node = next(iter(nodes))
        formats = {line_format(rec.text) for rec in facts.behind.values()}
        series: dict[int, list[MetricPoint]] = {}
        for p in scan.metrics:
            if p.kind == "train" and p.iteration is not None and p.time is not None and p.text \
                    and line_format(p.text) in formats:
                m = RANK_IN_LINE.search(p.text)
                rank = int(m.group(1)) if m else p.rank
                if rank is not None:
                    series.setdefault(rank, []).append(p)
        ahead = [r for r in series if r not in facts.behind]
        ends = [t for n, (t, _) in scan.node_last.items() if n != UNKNOWN_NODE and t is not None]
        if not ahead or not ends:
            return []
        gaps = sorted(b.time - a.time for pts in series.values()
                      for a, b in zip(pts, pts[1:], strict=False) if b.time > a.time)
        step = gaps[len(gaps) // 2] if gaps else 0.0
        last = {r: max(pts, key=lambda p: (p.iteration, p.time)) for r, pts in series.items()}
        quiet = min(ends) - max(p.time for p in last.values())
        if quiet < max(STALL_MIN_S, STALL_STEPS * step):
            return []
        ranks = sorted(facts.behind)
        stopped = min(p.time for r, p in last.items() if r in facts.behind)
        # the witness that the job went on: a peer on another node first (a node-mate may share the fault)
        peer = max((last[r] for r in ahead), key=lambda p: (p.iteration, p.node != node, -p.time))
        own = min(last[r].iteration for r in ranks if r in last)
        explain = (f"rank{'s' if len(ranks) > 1 else ''} {_join(ranks)} on {node} stopped making progress after "
                   f"iteration {own} while rank{'s' if len(ahead) > 1 else ''} {_join(sorted(ahead))} logged "
                   f"iteration {peer.iteration}; then no rank made progress for {quiet:.0f} s until the logs end, and "
                   "no collective timed out: the stuck rank of a hang")
        records = [facts.behind[r] for r in ranks][:4] + [_point_record(peer, None)]
        table = _log_table(facts, ranks, scan.rank_nodes)
        return [Finding(self.name, "software", "root", round(self.log_score + 0.1, 3), explain, node=node,
                        rank=ranks[0], time=stopped, records=records, count=len(ranks), severity="error",
                        action=f"Take a stack dump (py-spy dump --pid) of rank {ranks[0]} on {node} when a job stops "
                               "making progress; a collective timeout shorter than the job's time limit makes the "
                               "peers report the wait.",
                        data={"signal": "stuck_rank", "inferred": True, "scope": "node", "why": ["its progress "
                              "stopped first"], "stalled_for": round(quiet, 1),
                              "hang": dict(table, stuck_ranks=ranks, stuck_nodes=[node]), "phase_hint": "train"})]


def _point_record(p: MetricPoint, rank: int | None) -> Record:
    """A progress point as a record (the trainer's line it was read from)."""
    return Record(file=p.file, line=p.line, end_line=p.line, node=p.node, rank=rank if rank is not None else p.rank,
                  gpu=None, source="trainer", time=p.time, level="info", message=p.text or "",
                  text=p.text or f"last progress: iteration {p.iteration}")


def _unheard(facts: RankFacts) -> tuple[set[int], set[str | None]]:
    """Ranks of the job (below the highest rank heard of, or the node count times the most ranks a node showed)
    that no line names, and the one node they can be on: the node with fewer ranks heard of than the others (a
    launcher numbers ranks node by node, as many on each node)."""
    per_node: dict[str, set[int]] = {}
    for r, n in facts.known.items():
        if n is not None:
            per_node.setdefault(n, set()).add(r)
    if len(per_node) < 2 or not facts.known:
        return set(), set()
    full = max(len(v) for v in per_node.values())
    # as many ranks on each node: the last node's last rank may be the one never heard of
    missing = set(range(max(max(facts.known) + 1, full * len(per_node)))) - set(facts.known)
    short = [n for n, v in per_node.items() if len(v) < full]
    if not missing or len(short) != 1 or len(missing) > full - len(per_node[short[0]]):
        return set(), set()
    return missing, {short[0]}


def is_report(rec: Record) -> bool:
    """Whether a record is torchelastic's failure report (it quotes several ranks' errors, none its own)."""
    return "Failures:" in rec.text or "Root Cause (first observed failure)" in rec.text


def _before(a: Record, b: Record) -> bool:
    """Whether ``a`` was printed before ``b``: by position in one file, else by their own timestamps."""
    if a.file == b.file:
        return a.line < b.line
    if a.time is not None and b.time is not None and STAMP.search(a.text[:120]) and STAMP.search(b.text[:120]):
        return a.time < b.time
    return False


def reported_first(facts: RankFacts, rank: int) -> bool:
    """Whether a rank reported its lost peer before any SIGTERM reached it: a rank its agent tears down after
    it lost a peer was waiting; one killed first was busy elsewhere."""
    kill = facts.killed.get(rank)
    return kill is None or any(_before(rec, kill) for rec in facts.peer_gone.get(rank, ()))


def rank_facts(scan: JobScan) -> RankFacts:
    """Per-rank facts from the rule hits: every rank-attributed line the scan kept, and torchelastic's reports."""
    facts = RankFacts(known={r: n for r, n in scan.rank_nodes.items()})
    seen_on: dict[int, set[str]] = {}
    for node, ranks in scan.node_ranks.items():  # ranks that logged anything, for those no line tied to a node
        if node != UNKNOWN_NODE and not node.startswith("rank:"):
            for r in ranks:
                seen_on.setdefault(r, set()).add(node)
    for r, nodes in seen_on.items():
        if r not in facts.known and len(nodes) == 1:
            facts.known[r] = next(iter(nodes))
    blocks: set[tuple[str, int]] = set()
    kills: dict[int, list[Record]] = {}
    for hit in scan.hits:
        rec = hit.record
        text = rec.text
        m = AGENT_KILL.search(text[:400])
        if m:
            kills.setdefault(int(m.group(1)), []).append(rec)
        if is_report(rec):
            if (rec.file, rec.line) not in blocks:
                blocks.add((rec.file, rec.line))
                _elastic(facts, rec)
            continue
        for m in LAGGING.finditer(text):
            for r in _int_list(m.group(1)):
                facts.lagging.setdefault(r, rec)
        m = STRAGGLER.search(text)
        if m:
            facts.straggler.setdefault(int(m.group(3)), rec)
        rank = rec.rank
        mr = RANK_IN_LINE.search(text)
        if mr:
            rank = int(mr.group(1))
        if rank is None:
            continue
        facts.known.setdefault(rank, rec.node)
        _classify(facts, rank, rec, text, own_time=True)
    _progress(facts, scan)
    for r in facts.killed:  # the agent's line that signalled the busy rank: a line of its node about it alone
        recs = kills.get(facts.pids.get(r, -1), [])
        node = facts.known.get(r)
        line = next((k for k in recs if node is not None and k.node == node), None) or \
            (recs[0] if len(recs) == 1 else None)  # pids repeat across hosts: only the rank's node's line counts
        if line is not None:
            facts.kill_line[r] = line
    # ranks that logged only in files no line placed on a node (the scan keys them ``rank:N``): ranks of the job
    # all the same, whose silence counts; the node they stand for is the one no line names
    for node, ranks in scan.node_ranks.items():
        if node.startswith("rank:"):
            for r in ranks:
                if r not in facts.known and r not in seen_on:
                    facts.known[r] = None
                    facts.unplaced[r] = node
    for r, recs in facts.told_gone.items():  # the service's report of a peer gone, unless it named the task it lost
        if not facts.named_gone and not any(c.file == t.file and c.line < t.line and c.end_line > c.line and "Traceback" in c.text
                   for c in facts.crashed.get(r, ()) for t in recs[:1]):  # unless its own traceback came first
            facts.peer_gone.setdefault(r, []).extend(recs)
            facts.told.add(r)
            for t in recs:
                _note_error(facts, t, t.text, r)
        else:  # read as before: the line of an error of its own
            facts.crashed.setdefault(r, []).extend(t for t in recs if t.level in ("error", "critical"))
    for r in list(facts.crashed):  # a rank whose own traceback ends in a collective error is not a crash
        if r in facts.timed_out or r in facts.peer_gone or r in facts.killed:
            del facts.crashed[r]
    return facts


def _classify(facts: RankFacts, rank: int, rec: Record, text: str, *, own_time: bool,
              exit_code: int | None = None) -> None:
    """Sort one error of one rank: killed while busy, timed out waiting, a peer gone, or an error of its own."""
    if NAMED_GONE.search(text):
        facts.named_gone.append(rec)
    if SIGNALLED.search(text) or exit_code in SIGTERM_EXITS:
        facts.killed.setdefault(rank, rec)
    elif TIMED_OUT.search(text):
        facts.timed_out.setdefault(rank, []).append(rec)
        _note_error(facts, rec, text, rank, own_time=own_time)
    elif PEER_GONE.search(text) and not LEAVING.search(text, 0, 300):
        facts.peer_gone.setdefault(rank, []).append(rec)
        _note_error(facts, rec, text, rank, own_time=own_time)
    elif TOLD_GONE.search(text) and not NAMED_GONE.search(text):
        facts.told_gone.setdefault(rank, []).append(rec)
    elif exit_code is not None and exit_code < 0 or rec.end_line > rec.line and "Traceback" in text \
            or exit_code is None and rec.level in ("error", "critical"):
        facts.crashed.setdefault(rank, []).append(rec)


def line_format(text: str) -> str:
    """The words of a progress line in order, numbers and stamps left out: one trainer's format, whatever its
    values and its rank prefix. A word is letters only, so the lines of one shape (digits folded) share it: it
    is worked out once per shape, for a long run has a progress line per rank and step."""
    # bytes.translate reads a 256-byte table where str.translate looks each character up in a dict (8x faster on
    # a long job's tens of thousands of points); a UTF-8 digit is one byte that no multi-byte character holds
    return _format_of_shape(text[:400].encode("utf-8", "surrogatepass").translate(_DIGITS_TO_ZERO))


_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")


@functools.lru_cache(maxsize=4096)
def _format_of_shape(shape: bytes) -> str:
    words = FORMAT_WORD.findall(shape.decode("utf-8", "surrogatepass"))
    return " ".join(w for w in words if w.lower() not in VALUE_WORDS)


def _progress(facts: RankFacts, scan: JobScan) -> None:
    """Ranks whose last training step is behind the others' (only where several ranks print their steps), within
    one line format: steps a callback or another trainer counts are no measure of where the job's loop stood."""
    last: dict[str, dict[int, MetricPoint]] = {}
    for p in scan.metrics:
        if p.kind != "train" or p.iteration is None:
            continue
        m = RANK_IN_LINE.search(p.text)
        rank = int(m.group(1)) if m else p.rank
        if rank is None:
            continue
        series = last.setdefault(line_format(p.text), {})
        if rank not in series or p.iteration > (series[rank].iteration or 0):
            series[rank] = p
    for series in last.values():
        if len(series) < 2:
            continue
        top = max(p.iteration or 0 for p in series.values())
        for rank, p in series.items():
            if (p.iteration or 0) < top and rank not in facts.behind:
                facts.behind[rank] = _point_record(p, rank)
                facts.known.setdefault(rank, p.node)


def _elastic(facts: RankFacts, rec: Record) -> None:
    for m in ELASTIC_ENTRY.finditer(rec.text):
        rank, code = int(m.group("rank")), int(m.group("exit"))
        facts.known.setdefault(rank, None)
        if m.group("pid"):
            facts.pids.setdefault(rank, int(m.group("pid")))
        before = len(facts.timed_out.get(rank, ())) + len(facts.peer_gone.get(rank, ()))
        _classify(facts, rank, rec, m.group("tb"), own_time=False, exit_code=code)
        if len(facts.timed_out.get(rank, ())) + len(facts.peer_gone.get(rank, ())) > before:
            when = parse_elastic_time(m.group("when"))  # when the worker failed: its error's own time
            if when is not None and (facts.first_error is None or when < facts.first_error):
                facts.first_error = when


def _note_error(facts: RankFacts, rec: Record, text: str, rank: int, own_time: bool = True) -> None:
    m = TIMEOUT_MS.search(text)
    if m:
        facts.timeout_seconds = int(next(g for g in m.groups() if g)) / 1000.0
    if own_time and rec.time is not None and STAMP.search(rec.text[:120]) and \
            (facts.first_error is None or rec.time < facts.first_error):
        facts.first_error = rec.time
    m = DONE_IN_LINE.search(text)
    if m:
        facts.last_done[rank] = int(m.group(1))
    m = SEQ_IN_LINE.search(text)
    if m and facts.seq is None:
        facts.seq = int(next(g for g in m.groups() if g))
    m = OP_IN_LINE.search(text)
    if m and facts.op is None:
        facts.op = m.group(1)


def _log_stall_time(scan: JobScan, facts: RankFacts) -> float | None:
    """When the stuck rank stopped: the first timeout minus its length, else the last progress before it."""
    if facts.first_error is None:
        return None
    if facts.timeout_seconds:
        return facts.first_error - facts.timeout_seconds
    before = [p.time for p in scan.metrics if p.time is not None and p.time <= facts.first_error]
    return max(before) if before else facts.first_error


def _log_table(facts: RankFacts, stuck: Iterable[int], rank_nodes: dict[int, str]) -> dict[str, Any]:
    per_rank = {}
    for r in sorted(facts.known):
        if r in facts.timed_out:
            state = "timed out"
        elif r in facts.killed:
            state = "killed by its agent while busy"
        else:
            state = "peer gone" if r in facts.peer_gone else "silent"
        per_rank[str(r)] = {"node": facts.known.get(r) or rank_nodes.get(r), "last_completed": facts.last_done.get(r),
                            "last_entered": None, "state": state}
    return {"process_group": None, "collective": facts.op, "seq": facts.seq, "stuck_ranks": sorted(stuck),
            "stuck_nodes": [], "per_rank_last_seq": per_rank, "source": "logs"}


def _stall_time(v: GroupVerdict, ranks: list[int]) -> float | None:
    """When the stuck ranks stopped: their last collective, else when the others entered the one they missed."""
    times = [v.states[r].last_time_ns for r in ranks if r in v.states and v.states[r].last_time_ns]
    ns = max(times) if times else v.started_ns
    return ns / 1e9 if ns else None


def _dump_record(v: GroupVerdict, rank: int, node: str | None, t: float | None) -> Record:
    """The dump's own words as a record: no line of a log, so line 0 (reports show no context for it)."""
    st = v.states.get(rank)
    stamp = datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%d %H:%M:%S") + " " if t else ""
    if st is not None and st.last_entered is not None:
        text = (f"{stamp}Flight Recorder, rank {rank}: last collective entered #{st.last_entered} ({st.last_op}), "
                f"last completed #{st.last_completed}; never entered #{v.seq} ({v.op}, sizes {v.input_sizes}) "
                f"that ranks {_join(v.entered)} entered")
        where = st.file or ""
    else:
        text = (f"{stamp}Flight Recorder: no dump from rank {rank}; ranks {_join(v.entered)} entered #{v.seq} "
                f"({v.op}, sizes {v.input_sizes}) and waited")
        where = next((s.file for s in v.states.values() if s.file), "")
    return Record(file=where, line=0, end_line=0, node=node, rank=rank, gpu=None, source="flight_recorder", time=t,
                  level="error", message=text, text=text)


def _int_list(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", text)]


def _join(ranks: Iterable[int]) -> str:
    return ", ".join(str(r) for r in sorted(ranks)) or "none"
