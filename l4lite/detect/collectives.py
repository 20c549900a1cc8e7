"""Matching Flight Recorder dumps across ranks: per process group, who entered which collective.

PyTorch's own analyser (``torch/distributed/flight_recorder/fr_trace.py``) matches each rank's entries by the
collective sequence number of their process group and reports the first collective that not every member
joined. This does the same on the plain data of ``ingest.flight_recorder``: for every process group, each rank's
last entered and last completed sequence number, the first sequence number some member never entered, that
collective's type and sizes (from the ranks that entered it), the members missing from it and the last
collective each missing rank did enter, with its stack. Ranks whose dump is missing are named as such: a rank
that hangs hard may never write one, and the analyser then cannot decide either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from l4lite.ingest.flight_recorder import FlightDump, FlightEntry

MAX_TABLE_RANKS = 512  # rows of the incident's per-rank table: the stuck ranks first, then the lowest ranks


@dataclass
class RankState:
    """One member rank of a process group as its dump shows it."""

    rank: int
    last_entered: int | None  # highest collective sequence number the rank entered (None: no dump)
    last_completed: int | None
    file: str | None
    last_op: str | None = None
    last_time_ns: int | None = None
    frames: tuple[str, ...] = ()


@dataclass
class GroupVerdict:
    """The outcome for one process group; ``seq`` is None when every member entered every collective seen."""

    pg_name: str
    pg_desc: str
    members: list[int]
    states: dict[int, RankState] = field(default_factory=dict)
    seq: int | None = None  # the first collective not all ranks entered
    op: str | None = None
    input_sizes: Any = None
    output_sizes: Any = None
    missing: list[int] = field(default_factory=list)  # members with a dump that never entered ``seq``
    no_dump: list[int] = field(default_factory=list)  # members without a dump
    entered: list[int] = field(default_factory=list)  # members that entered ``seq``
    waiting_frames: tuple[str, ...] = ()  # where the ranks that entered ``seq`` called it
    started_ns: int | None = None  # when the first rank entered ``seq``
    mismatch: list[str] = field(default_factory=list)  # same sequence number, different collective or sizes

    @property
    def stuck(self) -> list[int]:
        """The ranks to blame: members that never entered ``seq``; without them, the members with no dump."""
        return self.missing or (self.no_dump if self.seq is not None else [])


def _group_of(dump: FlightDump, entry: FlightEntry) -> tuple[str, list[int]]:
    """The group an entry belongs to and its members. The gloo recorder of torch 2.13 registers its group under
    the empty name while its entries say ``"0"``; a single unnamed group is then taken for the entries' group."""
    if entry.pg_name in dump.pg_ranks:
        return entry.pg_name, dump.pg_ranks[entry.pg_name]
    if len(dump.pg_ranks) == 1 and "" in dump.pg_ranks:
        return entry.pg_name, dump.pg_ranks[""]
    return entry.pg_name, []


def match_groups(dumps: Sequence[FlightDump]) -> list[GroupVerdict]:
    """One verdict per process group seen in any dump, groups with a missing rank first."""
    per_group: dict[str, dict[int, list[FlightEntry]]] = {}
    members: dict[str, set[int]] = {}
    desc: dict[str, str] = {}
    completed: dict[tuple[str, int], int] = {}
    files: dict[int, str] = {}
    for dump in dumps:
        files.setdefault(dump.rank, dump.file)
        for entry in dump.entries:
            if entry.is_p2p or entry.seq < 0:
                continue
            name, ranks = _group_of(dump, entry)
            per_group.setdefault(name, {}).setdefault(dump.rank, []).append(entry)
            members.setdefault(name, set()).update(ranks)
            desc.setdefault(name, entry.pg_desc)
        for pg_id, st in dump.pg_status.items():
            done = st.get("last_completed_collective", -1)
            if done >= 0:
                completed[(pg_id, dump.rank)] = done
    out = []
    for name, by_rank in per_group.items():
        verdict = _match(name, desc.get(name, ""), sorted(members[name] | set(by_rank)), by_rank, files, completed)
        out.append(verdict)
    out.sort(key=lambda v: (v.seq is None, not v.missing, v.pg_name))
    return out


def _match(name: str, desc: str, members: list[int], by_rank: dict[int, list[FlightEntry]],
           files: dict[int, str], completed: dict[tuple[str, int], int]) -> GroupVerdict:
    verdict = GroupVerdict(pg_name=name, pg_desc=desc, members=members)
    for rank in members:
        entries = by_rank.get(rank)
        if not entries:
            verdict.states[rank] = RankState(rank, None, None, files.get(rank))
            if rank not in files:
                verdict.no_dump.append(rank)
            continue
        last = max(entries, key=lambda e: (e.seq, e.record_id))
        done = completed.get((last.pg_id, rank)) if last.pg_id else None
        if done is None:
            finished = [e.seq for e in entries if e.state == "completed" or e.retired]
            done = max(finished) if finished else None
        verdict.states[rank] = RankState(rank, last.seq, done, files.get(rank), last.op, last.time_ns, last.frames)
    entered = {r: s.last_entered for r, s in verdict.states.items() if s.last_entered is not None}
    if not entered:
        return verdict
    low, high = min(entered.values()), max(entered.values())
    if low < high:
        seq = low + 1
        verdict.missing = sorted(r for r, s in entered.items() if s < seq)
    elif verdict.no_dump:
        seq = high  # every dumped rank entered the last one; the ranks without a dump are the unknowns
    else:
        seq = None
    _mismatch(verdict, by_rank)
    if seq is None:
        return verdict
    verdict.seq = seq
    at_seq = [(r, e) for r, entries in by_rank.items() for e in entries if e.seq == seq]
    verdict.entered = sorted({r for r, _ in at_seq})
    if at_seq:
        first = min(at_seq, key=lambda re_: (re_[1].time_ns or 0, re_[0]))[1]
        verdict.op, verdict.input_sizes, verdict.output_sizes = first.op, first.input_sizes, first.output_sizes
        verdict.waiting_frames = first.frames
        times = [e.time_ns for _, e in at_seq if e.time_ns]
        verdict.started_ns = min(times) if times else None
    return verdict


def _mismatch(verdict: GroupVerdict, by_rank: dict[int, list[FlightEntry]]) -> None:
    """Sequence numbers at which ranks entered different collectives (a desync rather than a missing rank)."""
    seen: dict[int, dict[tuple[str, str], list[int]]] = {}
    for rank, entries in by_rank.items():
        for e in entries:
            seen.setdefault(e.seq, {}).setdefault((e.op, repr(e.input_sizes)), []).append(rank)
    for seq in sorted(seen):
        kinds = seen[seq]
        if len(kinds) > 1:
            parts = "; ".join(f"ranks {_ranks(rs)}: {op} {sizes}" for (op, sizes), rs in sorted(kinds.items()))
            verdict.mismatch.append(f"#{seq}: {parts}")
            if len(verdict.mismatch) >= 3:
                break


def _ranks(ranks: Sequence[int]) -> str:
    return ", ".join(str(r) for r in sorted(ranks))


def hang_table(verdict: GroupVerdict, rank_nodes: dict[int, str]) -> dict[str, Any]:
    """The incident's ``hang`` section for one process group (plain JSON data)."""
    per_rank = {}
    stuck = verdict.stuck
    first = set(stuck) | set(verdict.no_dump)
    shown = sorted(verdict.members, key=lambda r: (r not in first, r))[:MAX_TABLE_RANKS]
    for rank in sorted(shown):
        st = verdict.states.get(rank)
        per_rank[str(rank)] = {
            "node": rank_nodes.get(rank),
            "last_entered": st.last_entered if st else None,
            "last_completed": st.last_completed if st else None,
            "last_op": st.last_op if st else None,
            "dump": st.file if st else None,
            "entered_stuck_collective": rank in verdict.entered if verdict.seq is not None else None,
        }
    stack = next((verdict.states[r].frames for r in stuck if r in verdict.states and verdict.states[r].frames), ())
    return {
        "process_group": f"{verdict.pg_name}:{verdict.pg_desc}" if verdict.pg_desc else verdict.pg_name,
        "collective": verdict.op,
        "seq": verdict.seq,
        "input_sizes": verdict.input_sizes,
        "output_sizes": verdict.output_sizes,
        "stuck_ranks": stuck,
        "stuck_nodes": sorted({rank_nodes[r] for r in stuck if r in rank_nodes}),
        "missing_dumps": verdict.no_dump,
        "per_rank_last_seq": per_rank,
        "ranks_not_shown": len(verdict.members) - len(shown),
        "stuck_stack": list(stack),
        "waiting_stack": list(verdict.waiting_frames),
        "mismatch": verdict.mismatch,
        "source": "flight_recorder",
    }
