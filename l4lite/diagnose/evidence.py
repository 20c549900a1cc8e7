"""Which lines prove the verdict: choosing the records each finding shows, and which of them are root evidence.

Three rules, each from how real failures look in logs:

- A launcher summary (torchelastic's failure report, a Slurm task exit) quotes the error of the rank that died;
  the quote is not the error. Records that matched a confirmation rule are removed from every other finding.
- On the faulty node, the first fault lines of one failure are root evidence together, even when a rule alone
  calls a line a symptom: the Xid and the Row Remapper line after it, the trainer's CUDA error on that GPU, the
  thermal throttling messages of a slow node. Launcher lines and lines of unknown meaning are left out.
- A line repeated (the same rule with the same details on the same rank, e.g. NCCL's "Last error:" quoting its
  own warning) counts once. For a job-wide fault every rank prints the same error: the copies of the lowest
  ranks stand for all of them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from l4lite.detect.base import Finding
from l4lite.diagnose.killreport import kill_report
from l4lite.ingest.attribution import strip_stream_prefix
from l4lite.ingest.errorfile import error_lines
from l4lite.ingest.relay import quoted_error
from l4lite.records import Record, stamped
from l4lite.rules.components import first_failure, is_cascade
from l4lite.scan.scanner import JobScan

LOW_RANKS = 4  # copies of a job-wide error shown, lowest ranks first
MAX_ROOT_RECORDS = 10  # root records per finding
RANKS_PER_NODE = 3  # ranks of one node whose copies of one error are shown
COMPANION_BEFORE = 300.0  # seconds before the primary a companion line may be (node clocks drift apart:
COMPANION_AFTER = 600.0  # a kernel log minutes off the trainer's is common), and after
VAGUE = frozenset({"unknown", "software"})
INFERRED_SIGNALS = frozenset({"hang", "slowdown", "straggler", "gpu_slowdown"})  # any concrete line explains them


# A collective blocks until every rank joins it, so a straggler lags its peers by a few operations; counters a
# thousand apart are not one process group's (another group's counter, another run's lines).
MAX_SEQ_GAP = 1000
_SEQ = re.compile(r"SeqNum=(\d+)")
_LAST_DONE = re.compile(r"last completed NCCL work:\s*(\d+)")
_RANK = re.compile(r"\[(?:PG \S+ (?:\(\S+\) )?)?Rank (\d+)\]")
# A node's own address, as NCCL prints it at start-up ("Bootstrap : Using eth0:10.0.0.5<0>", "NET/Socket : Using
# [0]ib0:10.0.0.5<0>"), and the address of a peer a cascade says it lost ("Connection closed by remote peer
# 10.0.0.5<43210>", gloo's "Connection closed by peer [10.0.0.5]:29500").
_OWN_ADDR = re.compile(r"(?:Bootstrap|NET/Socket|NET/IB)\s*:\s*Using\b[^\n]*?\b\w+:(\d+\.\d+\.\d+\.\d+)<")
_PEER_ADDR = re.compile(r"(?:closed by (?:remote )?peer|reset by peer|peer)\s*\[?(\d+\.\d+\.\d+\.\d+)\]?[<:]")


def own_time(record: Record) -> float | None:
    """The record's time if its first line carries a timestamp, else None.

    Ingest gives a line without a timestamp the time of the last stamped line of its file (a Hugging Face loss
    dict, a traceback, a merged Slurm output); that time can be minutes early, so it must not decide which
    error came first or whether training went on after one.
    """
    if record.time is None:
        return None
    return record.time if stamped(record.text) else None


def summary_lines(findings: Sequence[Finding]) -> set[tuple[str, int]]:
    """(file, line) of the records that matched a confirmation rule (launcher summaries)."""
    return {(r.file, r.line) for f in findings if f.detector == "rules" and f.role == "confirmation"
            for r in f.records}


def strip_summaries(findings: Sequence[Finding], roles: dict[int, str]) -> None:
    """Remove quoted copies from the findings of other rules; a finding left with only quotes is a confirmation."""
    quoted = summary_lines(findings)
    if not quoted:
        return
    for f in findings:
        if f.detector != "rules" or f.role == "confirmation":
            continue
        kept = [r for r in f.records if (r.file, r.line) not in quoted]
        if len(kept) == len(f.records):
            continue
        if kept:
            f.count = max(1, f.count - (len(f.records) - len(kept)))
            f.records = kept
            f.time = kept[0].time
            f.node = kept[0].node or f.node
        else:
            roles[id(f)] = "confirmation"


AFTER_CASCADE_LINES = 12  # how far below a rank's cascade its own abort and exit report may be


def ends_cascade(f: Finding, findings: Sequence[Finding]) -> bool:
    """Whether a vague rule line (an abort, ``terminate called``, a launcher's exit report) closes a cascade
    just above it in the same file: the process died of the collective error it reported, not of its own."""
    if f.detector != "rules" or f.category not in VAGUE or not f.records:
        return False
    r = f.records[0]
    return any(g.role == "cascade" and g.node == f.node and g.records and g.records[0].file == r.file and
               0 < r.line - g.records[0].line <= AFTER_CASCADE_LINES for g in findings)


def ended_well_after(f: Finding, scan: JobScan) -> bool:
    """Whether the run said it finished well (``Training finished``, ``WorkerState.SUCCEEDED``) after this
    finding's line, on its node: a run that completed was not stopped by it, whatever its words. Later in the
    same file, or later by the line's own timestamp."""
    r = f.records[0] if f.records else None
    if r is None:
        return False
    t = own_time(r)
    for m in scan.markers:
        if m.kind != "shutdown" or not m.detail.get("success") or m.node != f.node and m.file != r.file:
            continue  # a node that finished says nothing of another that failed
        if m.file == r.file and m.line > r.end_line or t is not None and m.time is not None and m.time > t:
            return True
    return False


# seconds by which another node's clock may run ahead of this one's: NTP keeps nodes within a second, a node
# whose time service failed drifts by seconds
OTHER_CLOCK_SLACK = 10.0


def after_success(f: Finding, scan: JobScan) -> bool:
    """Whether a peer-went-away line came after the run said, on any node, that it finished well: the
    connections a finished job drops while its processes exit are its teardown, not a failure. Only a line with a
    timestamp of its own can say it came later; another node's success counts a few seconds early, as its clock
    may differ (``OTHER_CLOCK_SLACK``). An unstamped line (a launcher's task-exit notice) is later when it stands
    below its own process's success in its own file (same rank, or same node): one output's order is its order in
    time, and in a merged output another process's success says nothing of this one."""
    r = f.records[0] if f.records else None
    t = own_time(r) if r is not None else None
    if t is None:
        return r is not None and any(
            m.kind == "shutdown" and m.detail.get("success") and m.file == r.file and m.line < r.line
            and (m.rank is not None and m.rank == r.rank or m.node is not None and m.node == r.node)
            for m in scan.markers)
    return any(m.kind == "shutdown" and m.detail.get("success") and m.time is not None
               and m.time < t + (0.0 if m.node == r.node else OTHER_CLOCK_SLACK) for m in scan.markers)


def after_kill(f: Finding, stuck: Finding) -> bool:
    """Whether ``f`` was printed below the agent's SIGTERM of a stuck rank in the same file: the traceback a rank
    prints as the signal tears it down says where it was killed and which connection then broke, not what held
    it up."""
    r = f.records[0] if f.records else None
    kills = [k for k in stuck.records if is_cascade(k.text) and "SIG" in k.text]
    return r is not None and any(k.file == r.file and k.line < r.line for k in kills)


def names_cascade(f: Finding) -> bool:
    """Whether a finding reports a reaction to a failure elsewhere; for a launcher summary, whether the failure
    it names first is one (its quoted traceback ends in a lost connection or a collective timeout). That rank is
    a victim, and a summary on another node naming a rank that died of its own accord (a signal, an error of its
    own) names the culprit, even a second later or with a host name that sorts after it: torchelastic stamps a
    signalled rank when its agent next looks (up to its monitor interval late), a rank that raised when it
    raised, so the named times alone cannot decide."""
    return bool(f.records) and is_cascade(first_failure(f.records[0].text))


ROOT_CAUSE = "Root Cause (first observed failure)"  # torchelastic's summary of the first failed rank


def silent_abort(findings: Sequence[Finding], named: Sequence[Finding]) -> Finding | None:
    """When every launcher summary that names a culprit names a victim (its rank lost a peer), the summary of a
    rank that aborted (SIGABRT) having printed no line of its own: the peer the victims lost. An abort is read as
    a cascade because the NCCL watchdog aborts a rank after its own timeout line; a rank that printed nothing
    before its abort died of its own accord (a failed check in native code, an abort() it called)."""
    if not named or not all(names_cascade(f) for f in named):
        return None
    spoken = {r.rank for f in findings for r in f.records  # a launcher's summary speaks of its ranks, not for them
              if r.rank is not None and ROOT_CAUSE not in r.text}
    aborts = []
    for f in findings:
        groups = f.data.get("groups") or {}
        if f.role != "cascade" or str(groups.get("exitcode")) != "-6" or "failed_rank" not in groups \
                or not f.records or ROOT_CAUSE not in f.records[0].text:
            continue
        try:
            rank = int(groups["failed_rank"])
        except (TypeError, ValueError):
            continue
        if rank not in spoken:
            aborts.append(f)
    if len(aborts) != 1:
        return None
    abort = aborts[0]
    # what the signal's own rule reads in the same summary, over "a fault elsewhere"
    at = (abort.records[0].file, abort.records[0].line)
    told = [f for f in findings if f is not abort and f.detector == "rules" and f.category != "unknown"
            and f.role == "symptom" and any((r.file, r.line) == at for r in f.records)]
    if told:
        abort.category = told[0].category
    abort.data["silent_abort"] = True
    groups = abort.data["groups"]
    abort.explain = (f"rank {groups.get('failed_rank')} on host {groups.get('host')} aborted (SIGABRT) without a line "
                     "of its own, while every rank that printed an error had lost a peer: it died "
                     "of its own accord (a failed check or an uncaught exception in native code)")
    return abort


_EXIT_LINE = re.compile(r"failed \(exitcode: (-?\d+)\) local_rank: \d+ \(pid: (\d+)\)")
_FIRST_PID = re.compile(r"Root Cause \(first observed failure\):.*?exitcode\s*:\s*-?\d+\s*\(pid:\s*(\d+)\)", re.S)
TEARDOWN_EXITS = frozenset({-15, 143})  # the agent's own SIGTERM: how a peer was stopped, not a failure


def exit_line(findings: Sequence[Finding], primary: Finding) -> Finding | None:
    """The launcher's line that the failing worker exited (torchelastic: ``failed (exitcode: -9) local_rank: 1
    (pid: 4711)``) on the primary's node, when the launcher alone tells the failure (a worker killed by a signal
    leaves no traceback): with the launcher's report it is the whole event. A rank's own traceback or a kernel
    line, when there is one, is the event and the exit line only confirms it. The pid its node's report names as
    the first failure decides (a worker the primary names itself, before it); without a report, the node's first
    such line that is not the agent's SIGTERM."""
    if primary.node is None or primary.data.get("source") != "launcher":
        return None
    first = None
    # a restarted worker group's summary and exit lines (``restarts``) tell its own failure, not the first one
    findings = [f for f in findings if not f.data.get("restarted")]
    for f in findings:
        if f.node == primary.node and f.records and ROOT_CAUSE in f.records[0].text:
            m = _FIRST_PID.search(f.records[0].text)
            first = m.group(1) if m else first
    own = (primary.data.get("groups") or {}).get("pid")  # a worker the primary names itself comes first
    first = str(own) if own is not None else first
    exits = []
    for f in findings:
        if f.detector != "rules" or f.node != primary.node or f is primary or not f.records:
            continue
        m = _EXIT_LINE.search(f.records[0].text[:400])
        if m is not None and int(m.group(1)) not in TEARDOWN_EXITS and (first is None or m.group(2) == first):
            exits.append(f)
    return min(exits, key=lambda f: (f.records[0].file, f.records[0].line)) if exits else None


_AGENT_SIGNAL = re.compile(r"Sending process (\d+) closing signal SIG(?:TERM|INT)")


def signal_line(findings: Sequence[Finding], primary: Finding) -> Finding | None:
    """The agent's SIGTERM of the worker the primary says it could not stop (torchelastic: ``Sending process 4711
    closing signal SIGTERM``, then ``Unable to shutdown process 4711 via 15, forcefully exiting via 9``): the two
    lines are one event, the signal the worker did not act on and the kill that followed. Only the line of that
    pid, above the primary in the same file; None without one."""
    pid = (primary.data.get("groups") or {}).get("pid")
    if pid is None or primary.node is None or not primary.records or primary.data.get("source") != "launcher":
        return None
    top = primary.records[0]
    for f in findings:
        if f is primary or f.node != primary.node:
            continue
        for r in f.records:
            m = _AGENT_SIGNAL.search(r.text[:400])
            if m is not None and m.group(1) == str(pid) and r.file == top.file and r.line < top.line:
                return Finding(f.detector, primary.category, "root", f.score, f.explain, node=f.node, rank=r.rank,
                               time=r.time, rule=f.rule, severity=f.severity, records=[r],
                               data={"source": "launcher", "signalled": str(pid)})
    return None


_KILLED = re.compile(r"Killed process (\d+)")
_NAMED_PID = re.compile(r"(?:\bpid(?:\(s\))?:?|\bPID)\s*(\d+)")


def names_pid(r: Record, pids: set[str]) -> bool:
    """Whether a record's first line, or its last one (a traceback's exception line), names one of ``pids``."""
    lines = r.text.splitlines() if r.text else []

    def names(line: str) -> bool:
        return _KILLED.search(line) is None and any(m.group(1) in pids for m in _NAMED_PID.finditer(line[:400]))

    return bool(lines) and (names(lines[0]) or len(lines) > 1 and names(lines[-1]))


def killed_lines(findings: Sequence[Finding], primary: Finding) -> Finding | None:
    """A rank's own lines on the primary's node that name the process a kernel kill line killed (the OOM
    killer's ``Killed process 4711``, the rank's ``DataLoader worker (pid 4711) is killed by signal``): the
    kernel says what it killed, the rank what that did to training, and the pid ties the two, so no timing or
    wording guess is needed. A launcher's lines about the pid (its exit line, its report) only confirm the kill,
    as they do for a worker that raised. None without a kill line or a rank line naming its pid."""
    if primary.node is None:
        return None
    pids = {m.group(1) for r in primary.records for m in _KILLED.finditer(r.text[:4000])}
    if not pids:
        return None
    found: dict[tuple[str, int], Record] = {}
    source = None
    for f in findings:
        if f is primary or f.node != primary.node:
            continue
        for r in f.records:
            if r.source not in ("launcher", "kernel") and names_pid(r, pids):
                found.setdefault((r.file, r.line), r)
                source = source or f
    if source is None:
        return None
    recs = sorted(found.values(), key=lambda r: (r.file, r.line))
    first = recs[0]
    return Finding(source.detector, primary.category, "root", source.score, primary.explain, node=primary.node,
                   rank=first.rank, time=first.time, rule=source.rule, severity=source.severity, records=recs,
                   data={"killed": sorted(pids)})


_PREFIXES = re.compile(r"^(?:\[[^\]\n]{0,40}\]:\s*)*")  # torchrun's "[default0]:[rank0]:" stream prefixes
_ERROR_WORDS = re.compile(r"(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception)\b:\s*(.{30,})")
QUOTE_CHARS = 60  # how much of the primary's exception message a line must repeat


def repeats_error(findings: Sequence[Finding], primary: Finding, roles: dict[int, str],
                  scan: JobScan | None = None) -> Finding | None:
    """The trainer's own lines on the primary's node that repeat the primary's exception message (a framework's
    logger: Ignite's ``Engine run is terminating due to exception: <message>``), when no rule placed them: the
    framework telling the error it is about to raise, one event with the traceback. Not a launcher's line (its
    summary quotes the error: the quote is not the error). The scan's exemplars add the copies in the rank's
    own files. None without such lines."""
    if primary.node is None or not primary.records:
        return None
    m = _ERROR_WORDS.search(primary.records[0].text[-4000:].replace("\\n", "\n"))
    if m is None:
        return None
    quote = m.group(1).split("\n")[0].strip().rstrip('"}')[:QUOTE_CHARS]
    if len(quote) < 30:
        return None
    placed = {(r.file, r.line) for f in findings if roles.get(id(f)) == "root" for r in f.records}
    found: dict[tuple[str, int], Record] = {}
    pools = [f.records for f in findings if f.detector != "rules" and f.node == primary.node]
    if scan is not None:
        pools += [recs for (_, node), recs in scan.exemplars.items() if node == primary.node]
    for recs in pools:
        for r in recs:
            head = r.text.splitlines()[0] if r.text else ""
            if r.source == "trainer" and (r.file, r.line) not in placed and quote in head and \
                    _ERROR_WORDS.match(_PREFIXES.sub("", head).strip()) is None:
                found.setdefault((r.file, r.line), r)
    if not found:
        return None
    recs = sorted(found.values(), key=lambda r: (r.file, r.line))
    return Finding("rules", primary.category, "root", primary.score, primary.explain, node=primary.node,
                   rank=recs[0].rank, time=recs[0].time, rule=primary.rule, severity=primary.severity,
                   records=recs, data={"repeats": True})


def _time(f: Finding) -> float | None:
    if f.records:
        return own_time(f.records[0])
    return f.time


def is_companion(f: Finding, primary: Finding) -> bool:
    """A line on the primary's node, close to it in time, that reports a fault of its own kind or a concrete one."""
    if f.detector != "rules" or f.node is None or f.node != primary.node:
        return False
    if f.category in VAGUE or f.data.get("source") == "launcher" or f.severity not in ("critical", "error", "warning"):
        return False  # vague, a launcher's report, or informational (an fp16 overflow skip in warm-up)
    if f.category != primary.category and primary.data.get("signal") not in INFERRED_SIGNALS:
        return False
    t, t0 = _time(f), _time(primary)
    if t is None or t0 is None:
        return f.records and primary.records and f.records[0].file == primary.records[0].file and \
            abs(f.records[0].line - primary.records[0].line) <= 50  # type: ignore[return-value]
    return t0 - COMPANION_BEFORE <= t <= t0 + COMPANION_AFTER


# the innermost frame of a traceback raised in a destructor: CPython cannot raise it, it prints "Exception
# ignored in: <function X.__del__ ...>" and the traceback, and the process goes on (or goes on exiting)
_IN_DEL = re.compile(r'File "[^"\n]+", line \d+, in __del__\s*$')


def raised_in_destructor(text: str) -> bool:
    """Whether a traceback's innermost frame is a ``__del__``: an error Python printed and ignored."""
    frames = [ln for ln in text.splitlines() if 'File "' in ln]
    return bool(frames) and _IN_DEL.search(frames[-1]) is not None


def hit_groups(scan: JobScan) -> dict[tuple[str, int, str], tuple[tuple[str, str], ...]]:
    """(file, line, rule) -> the rule pattern's named groups, from the scan's hits."""
    return {(h.record.file, h.record.line, h.rule_id): tuple(sorted(h.groups.items())) for h in scan.hits}


def node_root_records(f: Finding, groups: dict[tuple[str, int, str], tuple[tuple[str, str], ...]],
                      scan: JobScan | None = None) -> list[Record]:
    """The root records of a node fault: one per (rank, details), first occurrence first; the node's own lines
    only, when it has any (a stuck rank's finding quotes its peers' timeouts too: they are about it, not its).
    An untimed line after which its file goes on logging training steps did not stop it."""
    out: list[Record] = []
    seen: set[tuple[object, ...]] = set()
    ranks: set[int] = set()
    own = [r for r in f.records if f.node is not None and r.node == f.node]
    if scan is not None and own:
        own = [r for r in own if r.time is not None or not went_on(r, scan)] or own
    # a destructor's ignored error (printed after the failure it follows) is taken after the failures, so the
    # ranks shown are the ranks that failed
    for r in sorted(own or f.records, key=lambda r: (raised_in_destructor(r.text),
                                                     r.rank if r.rank is not None else -1, _order(r))):
        if r.rank is not None and r.rank not in ranks and f.detector == "rules":
            if len(ranks) >= RANKS_PER_NODE:
                continue  # the same error on every rank of the node: the lowest ranks show it
            ranks.add(r.rank)
        g = groups.get((r.file, r.line, f.rule or ""))
        # A rank quoting its own error ("Last error: ...") repeats rule and details in its file; kernel lines
        # (no rank) that repeat are separate reports and all count, and so does the copy of a rank's error in
        # another file (the launcher's tee of its stderr), and so does a rank's error record merged into the
        # stream of its other copies (its error file, where one file holds the whole job).
        # A file that holds several streams (a ``cat`` or ``kubectl logs`` of the launcher's tee and the ranks'
        # own stderr) keeps each stream's copy apart, as separate files do.
        where = (r.file, stream_of(r))
        key: tuple[object, ...] = (r.file, r.line) if r.rank is None else \
            (where, r.rank, g, error_lines(r.text) is not None) if g else (where, r.rank, r.message)
        if key in seen:
            continue
        seen.add(key)
        out.append(r)
        if len(out) >= MAX_ROOT_RECORDS:
            break
    return out


def stream_of(r: Record) -> str:
    """The stream labels before a record's first line (``[default1]:``, ``3: [rank1]:``, a kubectl pod), "" for
    none: one rank's error in a launcher's tee and in its own stderr are two copies even inside one file."""
    head = r.text.split("\n", 1)[0]
    return head[:len(head) - len(strip_stream_prefix(head))]


def went_on(r: Record, scan: JobScan, points: int = 5) -> bool:
    """Whether the record's file logs ``points`` training steps after it (of any node: a driver's console relays
    its workers' steps). A torchelastic error record never did: it is written as its process ends, and what a
    merged stream holds below it is other processes' files."""
    if error_lines(r.text) is not None:
        return False
    steps = {p.iteration for p in scan.metrics if p.kind == "train" and p.file == r.file and p.line > r.end_line
             and p.iteration is not None}
    return len(steps) >= points


def low_rank_records(f: Finding, limit: int = LOW_RANKS) -> list[Record]:
    """For the lowest ``limit`` ranks, each rank's first record in every file it was written to (a launcher's
    tee, the rank's own stderr), then records without a rank, one per file; at most ``MAX_ROOT_RECORDS``. A file
    that several of those ranks wrote to shows only its earliest copy, unless a rank has no other file.

    One error is often printed in several files (torchelastic's console, the rank's stderr.log, its error.json):
    each copy is where a reader of that file finds it, and none stands for the others."""
    by_rank: dict[int, dict[str, Record]] = {}
    unranked: dict[str, Record] = {}
    for r in sorted(f.records, key=_order):
        if r.rank is None:
            had = unranked.get(r.file)
            if had is None or (quoted_error(had.text) and not quoted_error(r.text)):
                unranked[r.file] = r  # a file's own line before a rank's error it quotes (Ray Train's controller)
        else:
            by_rank.setdefault(r.rank, {}).setdefault(r.file, r)
    ranked = [r for k in sorted(by_rank)[:limit] for r in sorted(by_rank[k].values(), key=_order)]
    # a file several ranks write to (the launcher's console) shows its first copy, where its reader meets it,
    # when the other ranks' copies are shown in files of their own (their stderr.log)
    first: dict[str, Record] = {}
    for r in ranked:
        if r.file not in first or r.line < first[r.file].line:
            first[r.file] = r
    ranked = [r for r in ranked if first[r.file] is r or r.rank is None or len(by_rank[r.rank]) == 1]
    return (ranked + list(unranked.values()))[:max(limit, MAX_ROOT_RECORDS)]


def global_root_records(findings: Sequence[Finding], limit: int = LOW_RANKS) -> dict[int, list[Record]]:
    """For a job-wide fault: per signature (rule or health signal), the copies of the lowest ranks.

    Returns the chosen records per finding (by ``id``); a rule's findings are one per node, so the choice is
    made across them.
    """
    by_sig: dict[str, list[tuple[Finding, Record]]] = {}
    out: dict[int, list[Record]] = {id(f): [] for f in findings}
    for f in findings:
        if f.data.get("distinct_records"):  # separate events (three evaluations), not copies of one
            out[id(f)] = list(f.records[:MAX_ROOT_RECORDS])
            continue
        sig = f.rule or str(f.data.get("signal") or f.detector)
        by_sig.setdefault(sig, []).extend((f, r) for r in f.records)
    for pairs in by_sig.values():
        owner = {id(r): f for f, r in pairs}
        merged = Finding("", "", "", 0.0, "", records=[r for _, r in pairs])
        for r in low_rank_records(merged, limit):
            out[id(owner[id(r)])].append(r)
    return out


def _order(r: Record) -> tuple[float, str, int]:
    return (r.time if r.time is not None else math.inf, r.file, r.line)


def ranks_behind(findings: Sequence[Finding]) -> list[int]:
    """Ranks that lag in the NCCL watchdog's view: a lower timed-out SeqNum or last completed work than the rest."""
    seqs: dict[int, int] = {}
    for f in findings:
        for r in f.records:
            mr = _RANK.search(r.text)
            if mr is None:
                continue
            m = _LAST_DONE.search(r.text) or _SEQ.search(r.text)
            if m is None:
                continue
            rank = int(mr.group(1))
            seqs[rank] = min(seqs.get(rank, 1 << 62), int(m.group(1)))
    if len(seqs) < 2:
        return []
    low = min(seqs.values())
    if low == max(seqs.values()) or max(seqs.values()) - low > MAX_SEQ_GAP:
        return []  # all alike, or counters of different process groups (or runs): no rank is behind the others
    return sorted(r for r, s in seqs.items() if s == low)


def node_of_lost_peer(scan: JobScan, cascades: Sequence[Finding]) -> str | None:
    """The node the cascades name as the peer they lost: the address most of them name, tied to a node by the
    node's own start-up line binding it; None when no address or no node is known, or two addresses tie."""
    nodes: dict[str, str] = {}
    for (_, node), recs in scan.exemplars.items():
        for r in recs:
            m = _OWN_ADDR.search(r.text[:400])
            if m is not None:
                nodes.setdefault(m.group(1), node)
    if not nodes:
        return None
    votes: dict[str, set[str | None]] = {}
    for f in cascades:
        for r in f.records:
            for m in _PEER_ADDR.finditer(r.text[:4000]):
                if m.group(1) in nodes and nodes[m.group(1)] != f.node:
                    votes.setdefault(m.group(1), set()).add(f.node)
    ranked = sorted(votes.items(), key=lambda kv: -len(kv[1]))
    if not ranked or len(ranked) > 1 and len(ranked[1][1]) == len(ranked[0][1]):
        return None
    return nodes[ranked[0][0]]


def stated_by_rule(findings: Sequence[Finding], roles: dict[int, str], primary: Finding,
                   metric_lines: set[tuple[str, int]]) -> None:
    """A health signal's metric lines (``loss nan`` in a progress line) confirm a numerical fault that a rule's
    line of the trainer states in words (``FloatingPointError: loss is nan at step 12``, a monitor's "metric is
    not finite"): the stated error is what the run stopped on; the progress lines show the value it saw. Only
    when such a rule line, off the metric lines, is root too. The primary's lines are shown as confirmation too;
    it stays the verdict's finding (its time, step and phase)."""
    stated = any(f.detector == "rules" and roles.get(id(f)) == "root" and f.category == "numerical" and
                 any((r.file, r.line) not in metric_lines for r in f.records) for f in findings)
    if not stated:
        return
    for f in findings:
        if f.detector == "health" and f.category == "numerical" and roles.get(id(f)) == "root":
            roles[id(f)] = "confirmation"


def tell_together(scan: JobScan, findings: list[Finding], roles: dict[int, str], primary: Finding,
                  scope: str) -> None:
    """The lines of one event as one root: for a job-wide fault a rule on the metric lines confirms the health
    signal (``confirm_metric_rules``) and a stated numerical error goes over the loss lines (``stated_by_rule``); on the faulty node a rank's lines naming the pid the kernel killed (``killed_lines``),
    else the trainer's lines repeating the failing rank's exception (``repeats_error``), added as a root
    finding; and the launcher's report of the exit the kernel's kill caused (``killreport``)."""
    if scope == "global":
        metric_lines = {(p.file, p.line) for p in scan.metrics}
        confirm_metric_rules(metric_lines, findings, roles, primary)
        stated_by_rule(findings, roles, primary, metric_lines)
    elif scope == "node":
        told = killed_lines(findings, primary) or repeats_error(findings, primary, roles, scan)
        if told is not None:
            findings.append(told)
            roles[id(told)] = "root"
        reported = kill_report(findings, primary)
        if reported is not None:
            findings.append(reported)
            roles[id(reported)] = "root"


def confirm_metric_rules(metric_lines: set[tuple[str, int]], findings: list[Finding], roles: dict[int, str],
                         primary: Finding) -> None:
    """A job-wide fault: a rule that matched only the trainer's metric lines says what the health signal (root)
    says, so it confirms rather than stands as a root of its own."""
    if not any(g.detector == "health" and roles[id(g)] == "root" for g in findings):
        return
    for f in findings:
        if f is not primary and f.detector == "rules" and roles[id(f)] == "root" and f.records and \
                all((r.file, r.line) in metric_lines for r in f.records):
            roles[id(f)] = "confirmation"
