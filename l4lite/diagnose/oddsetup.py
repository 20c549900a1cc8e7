"""A rank set up apart: a line every rank printed in the same words, one node's number differing from the number
every other rank printed (its model's size, a layer count), when the job failed with nothing but lost peers.

A rank whose model, code or configuration differs from its peers' need not fail by itself: FSDP shards each rank's
own model without comparing them, and the ranks' collectives then go out of step and time out on every rank (real
job 174, one rank with one more block). Its one trace is what it said of itself as it started: the line every other
rank printed, with another number. The reading asks for a line of few copies (a start-up line, not a step's), the
same count of numbers in each, one position where they differ, at least ``MIN_AGREE`` copies on more than one node
agreeing and the other value on one node only. An error's own record (a traceback, an ERROR line, an exception's
text) is not a start-up line: ranks that time out in one collective print the same traceback with another source
line of the transport (a send's timeout against a recv's, real job 188), which says nothing of how they were set up.
"""

from __future__ import annotations

import re
from collections import defaultdict

from l4lite.detect.base import Finding
from l4lite.records import Record
from l4lite.scan.scanner import JobScan, is_host

_NUM = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?![\w.])|(?<![\w.,])\d+(?![\w.,])")  # integers (1,024 or 1024)
MIN_AGREE = 3  # copies that agree on the common value
MAX_COPIES = 4  # copies of the line per rank at most (its own file, the launcher's console, a merged file...)
SCORE = 0.25  # as the components finding: below every signature


_ERROR_TEXT = re.compile(r"Traceback|\b[A-Z]\w*(?:Error|Exception)\b")
_ERROR_LEVELS = frozenset({"ERROR", "CRITICAL", "FATAL"})


def _said_at_start(r: Record) -> bool:
    """Whether the record can be a rank's account of itself: one line, not an error's (see the module)."""
    if r.end_line > r.line or (r.level or "").upper() in _ERROR_LEVELS:
        return False
    return not _ERROR_TEXT.search(r.message[:400])


def _numbers(r: Record) -> tuple[str, ...]:
    return tuple(m.group(0) for m in _NUM.finditer(r.message[:400]))


def odd_setup(scan: JobScan) -> Finding | None:
    """The line whose copies agree on every node but one, where one number differs (see the module); None when no
    line reads so, or more than one does (two lines pointing apart prove nothing)."""
    hosts = {n for n in scan.node_last if is_host(n)}
    ranks = max(len(scan.rank_nodes), len(hosts))
    if len(hosts) < 2 or ranks < MIN_AGREE + 1:
        return None
    by_template: dict[str, list[Record]] = defaultdict(list)
    for (tid, node), recs in scan.exemplars.items():
        if node in hosts:
            by_template[tid].extend(r for r in recs if _said_at_start(r))
    found: list[Finding] = []
    for tid, recs in by_template.items():
        stat = scan.templates.get(tid)
        if stat is None or stat.count > ranks * MAX_COPIES or len(recs) < MIN_AGREE + 1:
            continue
        values = [_numbers(r) for r in recs]
        if not values[0] or len({len(v) for v in values}) != 1:
            continue
        groups: dict[tuple[str, ...], list[Record]] = defaultdict(list)
        for v, r in zip(values, recs, strict=True):
            groups[v].append(r)
        if len(groups) != 2:
            continue
        (common, many), (odd, few) = sorted(groups.items(), key=lambda kv: -len(kv[1]))
        apart = {r.node for r in few}
        if len(many) < MIN_AGREE or len(few) >= len(many) or len(apart) != 1 or len({r.node for r in many}) < 2:
            continue
        if sum(a != b for a, b in zip(common, odd, strict=True)) != 1:
            continue
        node = next(iter(apart))
        first = min(few, key=lambda r: (r.file, r.line))
        found.append(Finding(
            "components", "user_config", "symptom", SCORE,
            f"One rank on {node} printed this start-up line with {' '.join(odd)} where every other rank printed "
            f"{' '.join(common)}: it was set up apart (its model, code or configuration), and the job's ranks then "
            "lost each other.", node=node, rank=first.rank, time=first.time, severity="warning",
            records=sorted(few, key=lambda r: (r.file, r.line))[:4], count=len(few),
            data={"own_lines": True, "odd_setup": True, "distinct_records": True}))
    return found[0] if len(found) == 1 else None
