"""Collective desync: ranks whose collective sequence numbers disagree name the rank that is behind (or ahead).

Every rank of a process group issues the same collectives in the same order, each numbered (``SeqNum``). When a
collective times out, each rank's NCCL watchdog prints the number it was stuck at
(``[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, ...)``). Ranks
that reached collective N wait there for the ones that never issued it: the ranks with the lowest number are
behind, and in a hang the rank behind is the likely culprit (stuck in compute, a dead GPU, a blocked peer). PyTorch's
desync report (``TORCH_NCCL_DESYNC_DEBUG``) says it outright: ``[2, 3] finished collective #811, but didn't join
collective #812``. One finding names the rank(s) and their node, as a symptom: the numbers tell who stopped, not
why, so the category stays unknown and the root evidence stays with the lines that say why (a hang, an Xid); the
rank also goes in ``failed_rank`` for the localiser's node. A rank waiting in another collective than every other
rank (``detect.pending``) is the exception: a code path the others did not take is the program's own doing, so that
finding is the root, software, with the odd rank's own lines and its launcher's exit line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from l4lite.detect.base import Detector, Finding
from l4lite.detect.pending import odd_collective
from l4lite.records import Record
from l4lite.scan.jobscan import JobScan

WATCHDOG_RULE = "nccl-watchdog-timeout"
REPORT_RULE = "nccl-desync-report"
EXIT_RULE = "elastic-worker-failed"  # torchelastic's ``failed (exitcode: 1) local_rank: 0 (pid: 4711)``
_LOCAL_RANK = re.compile(r"\blocal_rank: (\d{1,5})\b")
HOROVOD_RANKS_RULE = "horovod-stalled-ranks"  # one line per missing rank, right under the stall warning
_RANK = re.compile(r"\[(?:PG (?P<pg>[^\]\s]+)(?: \([^)]*\))? )?Rank (?P<rank>\d{1,7})\]")
_FINGERPRINT = re.compile(r"Rank (?P<rank>\d{1,7}) is running (?:inconsistent )?collective:\s*CollectiveFingerPrint\("
                          r"(?:SequenceNumber=(?P<seq>\d{1,20}),?\s*)?OpType=(?P<op>\w{1,40})")
_NOT_JOINED = re.compile(r"\b[Rr]anks? (?P<ranks>\d{1,7}(?:\s*,\s*\d{1,7})*) (?:is|are|has|have) not (?:joined|joining)")


@dataclass(frozen=True, slots=True)
class SeqReport:
    """One rank's timed-out collective: which process group, which number, which line says so."""

    group: str
    rank: int
    seq: int
    record: Record


def seq_reports(scan: JobScan) -> list[SeqReport]:
    """The watchdog lines of the scan's rule hits, each with its rank and sequence number."""
    out: list[SeqReport] = []
    for hit in scan.hits:
        if hit.rule_id != WATCHDOG_RULE or "seq" not in hit.groups:
            continue
        m = _RANK.search(hit.record.message)
        rank = int(m.group("rank")) if m else hit.record.rank
        if rank is None:
            continue
        group = (m.group("pg") if m else None) or "default"
        out.append(SeqReport(group, rank, int(hit.groups["seq"]), hit.record))
    return out


class DesyncDetector(Detector):
    """Ranks whose collective sequence numbers disagree, or that a desync report says did not join."""

    name = "desync"

    def __init__(self, role: str = "symptom") -> None:
        self.role = role

    def detect(self, scan: JobScan) -> list[Finding]:
        out = [f for f in (self._reported(scan), self._fingerprints(scan), self._from_seqnums(scan),
                          self._odd_collective(scan)) if f is not None]
        return out[:1]  # the report, when there is one, says it best

    def _node(self, scan: JobScan, rank: int, record: Record) -> str | None:
        return scan.rank_nodes.get(rank) or record.node

    def _reported(self, scan: JobScan) -> Finding | None:
        horovod = self._horovod(scan)
        if horovod is not None:
            return horovod
        for hit in scan.hits:
            ranks: list[int] = []
            if hit.rule_id == REPORT_RULE and hit.groups.get("lagging"):
                ranks = [int(r) for r in re.findall(r"\d{1,7}", hit.groups["lagging"])]
            elif "not join" in hit.record.message:
                m = _NOT_JOINED.search(hit.record.message)
                ranks = [int(r) for r in re.findall(r"\d{1,7}", m.group("ranks"))] if m else []
            if ranks:
                return self._finding(scan, ranks, "behind", hit.record, [hit.record],
                                     "PyTorch's desync report says rank(s) " + ", ".join(map(str, ranks))
                                     + " never joined the collective the others were waiting in")
        return None

    def _horovod(self, scan: JobScan) -> Finding | None:
        """Horovod's stall inspector: under "Missing ranks:" (older releases: "Stalled ranks:") one line per rank
        that has not submitted the tensors the others wait with, ``4: [allreduce.fc.weight, ...]``. The ranks of
        the first report (its consecutive lines in one file) are behind."""
        hits = sorted((h for h in scan.hits if h.rule_id == HOROVOD_RANKS_RULE and h.groups.get("lagging")),
                      key=lambda h: (h.record.time if h.record.time is not None else float("inf"), h.record.file,
                                     h.record.line))
        if not hits:
            return None
        first = hits[0].record
        report = [first]
        for h in sorted((h for h in hits if h.record.file == first.file and h.record.line > first.line),
                        key=lambda h: h.record.line):
            if h.record.line != report[-1].end_line + 1:
                break
            report.append(h.record)
        ranks = sorted({int(m.group(1)) for r in report if (m := re.match(r"\s*(\d{1,7}):", r.message))})
        if not ranks:
            return None
        return self._finding(scan, ranks, "behind", first, report[:4],
                             "Horovod's stall inspector lists rank(s) " + ", ".join(map(str, ranks))
                             + " as missing from the collectives the other ranks wait in")

    def _fingerprints(self, scan: JobScan) -> Finding | None:
        """``TORCH_DISTRIBUTED_DEBUG=DETAIL``: "Detected mismatch between collectives on ranks. Rank 0 is running
        collective: CollectiveFingerPrint(SequenceNumber=5, OpType=ALLREDUCE, ...), but Rank 1 is running
        collective: CollectiveFingerPrint(SequenceNumber=6, OpType=REDUCE, ...)". The rank named second differs
        from the rank that reports it; the one most reports name second is the odd one out."""
        blamed: dict[int, list[Record]] = {}
        for records in scan.exemplars.values():
            for record in records:
                if "mismatch between collectives" not in record.message:
                    continue
                prints = list(_FINGERPRINT.finditer(record.message))
                other = re.search(r"but Rank (\d{1,7}) is running", record.message)
                if other is not None:
                    blamed.setdefault(int(other.group(1)), []).append(record)
                elif prints:
                    blamed.setdefault(int(prints[0].group("rank")), []).append(record)
        if not blamed:
            return None
        rank = max(blamed, key=lambda r: (len(blamed[r]), -r))
        records = sorted(blamed[rank], key=lambda r: (r.time if r.time is not None else float("inf"), r.line))
        return self._finding(scan, [rank], "out of step with", records[0], records[:4],
                             f"rank {rank} runs a different collective than the ranks that compared fingerprints "
                             "with it")

    def _from_seqnums(self, scan: JobScan) -> Finding | None:
        by_group: dict[str, dict[int, SeqReport]] = {}
        for r in seq_reports(scan):
            ranks = by_group.setdefault(r.group, {})
            if r.rank not in ranks or r.seq < ranks[r.rank].seq:
                ranks[r.rank] = r  # a rank's lowest number: where it stopped
        for group, ranks in sorted(by_group.items()):
            values = sorted({r.seq for r in ranks.values()})
            if len(ranks) < 2 or len(values) < 2:
                continue
            low = [r for r in ranks.values() if r.seq == values[0]]
            high = [r for r in ranks.values() if r.seq != values[0]]
            if len(low) <= len(high):
                culprits, where = low, "behind"
            else:  # most ranks agree on the lower number: the few ahead took another path
                top = values[-1]
                culprits, where = [r for r in ranks.values() if r.seq == top], "ahead"
            culprits.sort(key=lambda r: r.rank)
            others = sorted({r.seq for r in ranks.values()} - {c.seq for c in culprits})
            records = [c.record for c in culprits[:4]] + [r.record for r in sorted(
                ranks.values(), key=lambda r: r.rank) if r not in culprits][:2]
            what = (f"rank(s) {', '.join(str(c.rank) for c in culprits)} timed out at collective "
                    f"#{culprits[0].seq} while the other ranks of process group {group} were at "
                    f"#{', #'.join(map(str, others[:3]))}")
            return self._finding(scan, [c.rank for c in culprits], where, culprits[0].record, records, what)
        return None

    def _odd_collective(self, scan: JobScan) -> Finding | None:
        """Every rank timed out in a collective and one rank (or a few on one node) waited in another op than all
        the others (``detect.pending``): that rank took a code path the others did not."""
        odd = odd_collective(scan)
        if odd is None:
            return None
        ranks = [p.rank for p in odd.odd]
        # the odd rank's own lines (each copy) and its launcher's record of its exit; the others' timeouts follow
        # from it and stay their own cascades
        records = [r for p in odd.odd[:4] for r in p.copies[:2]] + self._exit_lines(scan, ranks[:4])
        what = (f"rank(s) {', '.join(map(str, ranks))} timed out waiting in {odd.odd[0].op} while the other "
                f"{len(odd.others)} rank(s) timed out waiting in {odd.others[0].op}")
        # waiting in another collective than every other rank is a code path the others did not take: the
        # program's own doing (a rank-conditional collective), and the timeouts every rank prints follow from it
        stamped = next((r for r in odd.odd[0].copies if r.time is not None), odd.odd[0].record)  # its time
        finding = self._finding(scan, ranks, "out of step with", stamped, records, what, category="software",
                                role="root")
        # its timeout is what names the collective it waited in: the proof, not a cascade of another rank's fault
        finding.data["timeout_is_proof"] = True
        return finding

    def _exit_lines(self, scan: JobScan, ranks: list[int]) -> list[Record]:
        """The launcher's ``failed (exitcode: N) local_rank: L`` line of each of ``ranks``: a node's launcher numbers
        its workers from 0 in global-rank order (torchrun's contiguous ranks per node)."""
        out: list[Record] = []
        for rank in ranks:
            node = scan.rank_nodes.get(rank)
            if node is None:
                continue
            local = sorted(r for r, n in scan.rank_nodes.items() if n == node).index(rank)
            out += [h.record for h in scan.hits if h.rule_id == EXIT_RULE and h.record.node == node and
                    (m := _LOCAL_RANK.search(h.record.message)) is not None and int(m.group(1)) == local][:1]
        return out

    def _finding(self, scan: JobScan, ranks: list[int], where: str, first: Record, records: list[Record],
                 what: str, *, category: str = "unknown", role: str | None = None) -> Finding:
        node = self._node(scan, ranks[0], first)
        nodes = sorted({n for r in ranks if (n := scan.rank_nodes.get(r))})
        on = f" on {', '.join(nodes)}" if nodes else (f" on {node}" if node else "")
        explain = (f"collective desync: {what}; rank {ranks[0]}{on} is {where} the others and is the likely "
                   "culprit (look at its last lines, its GPU and its process)")
        return Finding(self.name, category, role or self.role, 0.5, explain, node=node, rank=ranks[0], time=first.time,
                       records=records, data={"signal": "desync", "ranks": ranks, "where": where,
                                              "scope": "node", "phase_hint": "train",
                                              "failed_rank": ranks[0]})
