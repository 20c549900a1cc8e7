"""The collective each rank was waiting in when it timed out, and the rank whose collective no other rank is in.

Every rank of a process group issues the same collectives in the same order. When one rank takes a code path the
others do not (a ``dist.barrier()`` under ``if rank == ...``, an ``all_gather`` in one rank's logging), it waits in
a collective nobody else joins while the others wait in the next collective of the step, and every rank times out.
Without sequence numbers (gloo, older NCCL) the ranks' timeouts still say where each waited: the op in the message
(NCCL's ``WorkNCCL(SeqNum=.., OpType=ALLREDUCE, ..)``) or the innermost frame of the traceback that is a collective
(``distributed_c10d.py ... in barrier``).

Collectives the model wrapper issues for the step itself (DDP's buffer broadcast in its forward, the gradient
reduction autograd runs in backward, FSDP's gathers) read as one op, "the step's collectives": ranks can be one op
apart inside the step without any fault (a broadcast's root waits to send while the ranks that got the tensor are
already in backward), so only a collective called from outside the step stands apart from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from l4lite.records import Record
from l4lite.scan.jobscan import JobScan

STEP = "the step's collectives"
TIMEOUT_RULES = frozenset({"python-exception", "nccl-watchdog-timeout"})
# a rank whose peer closed the connection while it waited: the peer gave up (its own timeout) first, and the
# rank's traceback still says which collective it was in
LOST_PEER_RULES = frozenset({"nccl-socket-closed"})
_LOST_PEER = re.compile(r"Connection closed by (?:remote )?peer|Connection reset by peer")
_TIMED_OUT = re.compile(r"Timed out|timed out|Watchdog caught collective operation timeout|"
                        r"\bTimeout\(ms\)=|timeout after \d", re.I)
_OPTYPE = re.compile(r"OpType=_?(?P<op>[A-Za-z_]{2,40})")
_RANK = re.compile(r"\[(?:PG [^\]\s]+(?: \([^)]*\))? )?Rank (?P<rank>\d{1,7})\]")
_FRAME = re.compile(r'File "(?P<path>[^"]{1,500})", line \d{1,7}, in (?P<func>[\w<>.]{1,100})')
# the collectives of torch.distributed's API, by the function name its frame shows
_C10D_OPS = {
    "barrier": "barrier", "monitored_barrier": "barrier",
    "all_reduce": "all_reduce", "all_reduce_coalesced": "all_reduce",
    "all_gather": "all_gather", "all_gather_into_tensor": "all_gather", "_all_gather_base": "all_gather",
    "all_gather_object": "all_gather", "all_gather_coalesced": "all_gather",
    "reduce_scatter": "reduce_scatter", "reduce_scatter_tensor": "reduce_scatter",
    "_reduce_scatter_base": "reduce_scatter",
    "broadcast": "broadcast", "broadcast_object_list": "broadcast",
    "reduce": "reduce", "gather": "gather", "gather_object": "gather", "scatter": "scatter",
    "scatter_object_list": "scatter", "all_to_all": "all_to_all", "all_to_all_single": "all_to_all",
    "send": "send", "recv": "recv", "isend": "send", "irecv": "recv", "batch_isend_irecv": "send/recv",
}
_C10D_FILE = re.compile(r"torch/distributed/(?:distributed_c10d|c10d_logger)\.py$")
# frames of the model wrapper's forward and backward: the step's own collectives
_STEP_FILE = re.compile(r"torch/(?:nn/parallel/distributed|autograd/|distributed/fsdp/|distributed/_composable/)|"
                        r"deepspeed/runtime/(?:engine|zero/)")


@dataclass(frozen=True, slots=True)
class Pending:
    """One rank's timed-out collective as its own lines tell it."""

    rank: int
    op: str
    record: Record
    copies: tuple[Record, ...] = ()  # every copy of the rank's line (its own file's first), ``record`` among them


def pending_op(record: Record) -> str | None:
    """The collective a timed-out rank's line says it waited in: the innermost collective frame of its traceback,
    else the op its message names; None when neither says."""
    frames = list(_FRAME.finditer(record.text))
    for m in reversed(frames):
        path, func = m.group("path"), m.group("func")
        if _C10D_FILE.search(path) and func in _C10D_OPS:
            return _C10D_OPS[func]
        if _STEP_FILE.search(path):
            return STEP
    m = _OPTYPE.search(record.message)
    if m is None:
        return None
    op = m.group("op").lower()
    return re.sub(r"_(?:base|coalesced|tensor)$", "", op.removeprefix("_"))


def pending_collectives(scan: JobScan) -> dict[int, Pending] | None:
    """Each rank's timed-out collective; None when a rank's lines disagree with each other. Of a rank's copies of
    its line, the one in a file of its own (its ``stderr.log``) rather than one the launcher's tee shares with its
    node-mates."""
    found: list[Pending] = []
    for hit in sorted(scan.hits, key=lambda h: (h.record.file, h.record.line)):
        record = hit.record
        timed_out = hit.rule_id in TIMEOUT_RULES and _TIMED_OUT.search(record.message)
        if not timed_out and not (hit.rule_id in LOST_PEER_RULES and _LOST_PEER.search(record.message)):
            continue
        m = _RANK.search(record.message)
        rank = int(m.group("rank")) if m else record.rank
        op = pending_op(record)
        if rank is not None and op is not None:
            found.append(Pending(rank, op, record))
    file_ranks: dict[str, set[int]] = {}
    for p in found:
        file_ranks.setdefault(p.record.file, set()).add(p.rank)
    out: dict[int, Pending] = {}
    for p in sorted(found, key=lambda p: len(file_ranks[p.record.file]) > 1):  # stable: file order kept
        seen = out.get(p.rank)
        if seen is not None and seen.op != p.op:
            return None
        out[p.rank] = Pending(p.rank, p.op, seen.record, (*seen.copies, p.record)) if seen is not None else \
            Pending(p.rank, p.op, p.record, (p.record,))
    return out


@dataclass(frozen=True, slots=True)
class OddCollective:
    """The rank(s) waiting in a collective that none of the job's other ranks is in."""

    odd: list[Pending]
    others: list[Pending]


def odd_collective(scan: JobScan) -> OddCollective | None:
    """When every rank of the job timed out in a collective that its lines name, and all but a minority on one
    node agree on it, that minority; None otherwise (a rank unread, no majority, the odd ranks on several nodes)."""
    pending = pending_collectives(scan)
    if not pending or len(pending) < 3:
        return None
    if scan.rank_nodes and set(scan.rank_nodes) - set(pending):
        return None  # a rank that did not time out (or did not say where) may be the one that stopped
    groups: dict[str, list[Pending]] = {}
    for p in sorted(pending.values(), key=lambda p: p.rank):
        groups.setdefault(p.op, []).append(p)
    if len(groups) != 2:
        return None
    small, large = sorted(groups.values(), key=len)
    if len(small) * 2 >= len(pending):
        return None
    nodes = {scan.rank_nodes.get(p.rank) or p.record.node for p in small}
    if len(nodes) != 1 or None in nodes:
        return None
    return OddCollective(small, large)
