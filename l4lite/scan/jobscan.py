"""What a scan leaves behind: ``JobScan``, plain data that the detectors read and that shards merge.

``scan.Scanner`` fills it in one streaming pass (see ``l4lite/scan.py``). Everything in it is bounded whatever
the length of the job: per-template statistics, per (node, time bucket, template) counts, capped rule hits,
thinned trainer metric points, phase markers and a few exemplar records per (template, node). Templates are
keyed by stable template ids, so scans of shards merge (``JobScan.merge``) and rank-only node keys are resolved
once the merged rank->node ties are known (``JobScan.remap_nodes``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any

from l4lite.ingest.errorfile import error_record_places
from l4lite.ingest.flight_recorder import FlightDump
from l4lite.records import Accounting, Record, RotatedStreams

UNKNOWN_NODE = "unknown"
DEVICE_EVENT_CAP = 4  # telemetry events kept per (node, GPU); the last one stands for the rest
MARKER_CAP = 5000
HIT_CAP = 20  # hits kept per (rule, node); the rest only counted in hit_totals
EXEMPLAR_CAP = 2  # records kept per (template, node)
METRIC_CAP = 4000  # metric points kept per node before older points are thinned
@dataclass
class TemplateStat:
    """What is known about one template across the job."""

    template_id: str
    template: str
    count: int = 0
    nodes: dict[str, int] = field(default_factory=dict)  # node -> count
    levels: dict[str, int] = field(default_factory=dict)  # level -> count
    sources: dict[str, int] = field(default_factory=dict)  # source -> count
    first_time: float | None = None
    last_time: float | None = None

    def merge(self, other: TemplateStat) -> None:
        self.count += other.count
        for mine, theirs in ((self.nodes, other.nodes), (self.levels, other.levels), (self.sources, other.sources)):
            for k, v in theirs.items():
                mine[k] = mine.get(k, 0) + v
        self.first_time = _min(self.first_time, other.first_time)
        self.last_time = _max(self.last_time, other.last_time)


@dataclass
class Hit:
    """A record that matched a rule of the rule pack; ``groups`` are the rule pattern's named groups."""

    rule_id: str
    record: Record
    groups: dict[str, str] = field(default_factory=dict)
    # The record, or the line just before it that it is the traceback of, says it is harmless (``rules.advisory``)
    advisory: bool = False


@dataclass(slots=True)
class MetricPoint:
    """One trainer progress line: iteration with loss, grad norm and friends, or a validation result."""

    node: str | None
    rank: int | None
    time: float | None
    iteration: int | None
    file: str
    line: int
    loss: float | None = None
    grad_norm: float | None = None
    lr: float | None = None
    iter_time: float | None = None  # seconds per iteration
    loss_scale: float | None = None
    skipped: int | None = None
    nan_count: int | None = None
    val_loss: float | None = None
    throughput: float | None = None  # samples/s or TFLOPs, whatever the framework prints
    kind: str = "train"  # train, val or overflow
    skipped_total: int | None = None  # cumulative skipped steps (DeepSpeed)
    seq: int = 0  # order of the point on its node (stands in for the iteration when a framework prints none)
    text: str = ""  # the line as written, for evidence

    @property
    def flagged(self) -> bool:
        """Non-finite values or skipped/nan counters: points that thinning never drops."""
        for v in (self.loss, self.grad_norm, self.val_loss):
            if v is not None and not math.isfinite(v):
                return True
        return bool(self.nan_count) or self.kind == "overflow"

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # The fields as one tuple: a shard's tens of thousands of points cross to the parent (or a Dask client)
        # in a third less space and half the time of the slots dataclass's own state dicts.
        return MetricPoint, _metric_fields(self)


_metric_fields = attrgetter(*(f.name for f in fields(MetricPoint)))


@dataclass
class Marker:
    """A framework marker: a phase boundary, a checkpoint saved or loaded, a restart, an iteration reached."""

    kind: str  # phase name (init, load, train, checkpoint, eval, shutdown) or checkpoint_saved, restart, ...
    node: str | None
    rank: int | None
    time: float | None
    file: str
    line: int
    iteration: int | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Progress:
    """Training progress of one node: first and last iteration seen, and where the last one was printed."""

    first_iteration: int | None = None
    last_iteration: int | None = None
    first_time: float | None = None
    last_time: float | None = None
    last_file: str = ""
    last_line: int = 0
    points: int = 0
    after_time: float | None = None  # first time seen later in the same file when the last point had none

    @property
    def stop_time(self) -> float | None:
        """When progress was last seen: its own time, else an upper bound from the lines after it."""
        return self.last_time if self.last_time is not None else self.after_time

    def merge(self, other: Progress) -> None:
        if other.points == 0:
            return
        if self.points == 0 or _before(other.first_time, self.first_time):
            self.first_iteration, self.first_time = other.first_iteration, other.first_time
        if self.points == 0 or _later_progress(other, self):
            self.last_iteration, self.last_time = other.last_iteration, other.last_time
            self.last_file, self.last_line = other.last_file, other.last_line
            self.after_time = other.after_time
        self.points += other.points


@dataclass
class DeviceEvent:
    """A device telemetry reading worth reporting (a GPU clock slowdown that nvidia-smi shows as Active)."""

    kind: str
    record: Record
    detail: dict[str, str] = field(default_factory=dict)
    count: int = 1


@dataclass
class JobScan:
    """Everything the detectors and the localiser see of a job."""

    root: str = ""
    accounting: Accounting = field(default_factory=Accounting)
    bucket_seconds: float = 5.0
    templates: dict[str, TemplateStat] = field(default_factory=dict)
    counts: dict[tuple[str, int, str], int] = field(default_factory=dict)  # (node, bucket, template_id) -> n
    hits: list[Hit] = field(default_factory=list)
    hit_totals: dict[tuple[str, str | None], int] = field(default_factory=dict)  # (rule_id, node) -> n
    metrics: list[MetricPoint] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    exemplars: dict[tuple[str, str], list[Record]] = field(default_factory=dict)  # (template_id, node) -> records
    rank_nodes: dict[int, str] = field(default_factory=dict)
    node_last: dict[str, tuple[float | None, int]] = field(default_factory=dict)  # node -> (last time, records)
    start_time: float | None = None
    end_time: float | None = None
    info: dict[str, Any] = field(default_factory=dict)  # job facts parsed from logs (model, parallelism, ...)
    node_ranks: dict[str, set[int]] = field(default_factory=dict)  # node -> ranks seen on it
    progress: dict[str, Progress] = field(default_factory=dict)  # node -> training progress
    node_first: dict[str, float | None] = field(default_factory=dict)  # node -> first record time
    source_last: dict[str, float] = field(default_factory=dict)  # source -> last record time
    source_first: dict[str, float] = field(default_factory=dict)  # source -> first record time
    device_events: dict[tuple[str, str], list[DeviceEvent]] = field(default_factory=dict)  # (node, gpu) -> events
    flight_records: list[FlightDump] = field(default_factory=list)  # Flight Recorder dumps found with the logs
    # rotated logs read as one stream each: records are named by the stream, evidence by its piece
    streams: RotatedStreams = field(default_factory=RotatedStreams)

    def job_start(self, exclude: tuple[str, ...] = ("kernel", "storage")) -> float | None:
        """When the job itself began logging: a node's kernel log may reach back to its boot, weeks earlier."""
        times = [t for s, t in self.source_first.items() if s not in exclude]
        return min(times) if times else self.start_time

    def job_end(self, exclude: tuple[str, ...] = ("kernel", "storage")) -> float | None:
        """When the job itself last logged: system logs (kernel, storage daemons) outlive a dead job."""
        times = [t for s, t in self.source_last.items() if s not in exclude]
        return max(times) if times else self.end_time

    @property
    def nodes(self) -> list[str]:
        """All nodes seen, sorted."""
        return sorted(self.node_last)

    def merge(self, other: JobScan) -> JobScan:
        """Add another shard's scan into this one (in place) and return self.

        Templates merge by stable id; counts sum (after bringing both to the coarser bucket length); hits
        concatenate and are capped per (rule, node) keeping the earliest; metrics and markers concatenate.
        """
        if other.bucket_seconds != self.bucket_seconds:
            target = max(self.bucket_seconds, other.bucket_seconds)
            self.counts = rebucket(self.counts, self.bucket_seconds, target)
            other_counts = rebucket(other.counts, other.bucket_seconds, target)
            self.bucket_seconds = target
        else:
            other_counts = other.counts
        if not self.root:
            self.root = other.root
        self.accounting.merge(other.accounting)
        for tid, stat in other.templates.items():
            mine = self.templates.get(tid)
            if mine is None:
                self.templates[tid] = TemplateStat(tid, stat.template, stat.count, dict(stat.nodes), dict(stat.levels),
                                                   dict(stat.sources), stat.first_time, stat.last_time)
            else:
                mine.merge(stat)
        add_counts(self.counts, other_counts)
        self.hits = cap_hits(self.hits + other.hits)
        for key, n in other.hit_totals.items():
            self.hit_totals[key] = self.hit_totals.get(key, 0) + n
        self.metrics = thin_metrics(self.metrics + other.metrics)
        self.markers = sorted(self.markers + other.markers, key=_event_key)[:MARKER_CAP]
        for key, recs in other.exemplars.items():
            mine_recs = self.exemplars.setdefault(key, [])
            mine_recs.extend(recs)
            mine_recs.sort(key=_record_key)
            del mine_recs[EXEMPLAR_CAP:]
        self.rank_nodes.update(other.rank_nodes)
        for node, (t, n) in other.node_last.items():
            t0, n0 = self.node_last.get(node, (None, 0))
            self.node_last[node] = (_max(t0, t), n0 + n)
        for node, t in other.node_first.items():
            self.node_first[node] = _min(self.node_first.get(node), t)
        for key, events in other.device_events.items():
            mine_ev = self.device_events.setdefault(key, [])
            mine_ev.extend(events)
            mine_ev.sort(key=lambda e: _record_key(e.record))
            del mine_ev[DEVICE_EVENT_CAP:]
        for src, t in other.source_last.items():
            self.source_last[src] = max(self.source_last.get(src, t), t)
        for src, t in other.source_first.items():
            self.source_first[src] = min(self.source_first.get(src, t), t)
        for node, ranks in other.node_ranks.items():
            self.node_ranks.setdefault(node, set()).update(ranks)
        for node, prog in other.progress.items():
            self.progress.setdefault(node, Progress()).merge(prog)
        self.start_time = _min(self.start_time, other.start_time)
        self.end_time = _max(self.end_time, other.end_time)
        known = {d.file for d in self.flight_records}
        self.flight_records += [d for d in other.flight_records if d.file not in known]
        for k, v in other.info.items():
            self.info.setdefault(k, v)
        self.streams.merge(other.streams)
        return self

    def place_error_records(self) -> JobScan:
        """Give a torchelastic error record that no path or line placed the node and rank of the process whose own
        lines raise its exception (``errorfile.error_record_places``), in place: the rank's error file, wherever
        the archive put it, is that rank's (its rule hit and its exemplar alike)."""
        records = [h.record for h in self.hits] + [r for recs in self.exemplars.values() for r in recs]
        places = error_record_places(records) if any(r.node is None for r in records) else {}
        for r in records:
            where = places.get((r.file, r.line))
            if where is not None and r.node is None:
                r.node, r.rank = where.node, r.rank if r.rank is not None else where.rank
        return self

    def remap_nodes(self, rank_nodes: Mapping[int, str] | None = None) -> JobScan:
        """Replace ``rank:N`` node keys by node names where the rank->node map knows them (in place)."""
        if rank_nodes:
            self.rank_nodes.update(rank_nodes)
        mapping = {f"rank:{r}": n for r, n in self.rank_nodes.items()}
        if not any(key in mapping for key in self.node_last):
            return self

        def m(node: str | None) -> str | None:
            return mapping.get(node, node) if node is not None else None

        for stat in self.templates.values():
            stat.nodes = _sum_keys(stat.nodes, m)
        self.counts = _sum_keys(self.counts, lambda k: (m(k[0]), k[1], k[2]))
        self.hit_totals = _sum_keys(self.hit_totals, lambda k: (k[0], m(k[1])))
        for hit in self.hits:
            _fill_node(hit.record, self.rank_nodes)
        ranks = self.rank_nodes
        for point in self.metrics:  # a rank-only trainer line gets its node from a tie seen anywhere in the job
            point.node = m(point.node) if point.node is not None or point.rank is None else ranks.get(point.rank)
        for marker in self.markers:
            marker.node = m(marker.node) if marker.node is not None or marker.rank is None else ranks.get(marker.rank)
        exemplars: dict[tuple[str, str], list[Record]] = {}
        for (tid, node), recs in self.exemplars.items():
            lst = exemplars.setdefault((tid, m(node) or node), [])
            for r in recs:
                _fill_node(r, self.rank_nodes)
            lst.extend(recs)
            lst.sort(key=_record_key)
            del lst[EXEMPLAR_CAP:]
        self.exemplars = exemplars
        node_last: dict[str, tuple[float | None, int]] = {}
        for node, (t, n) in self.node_last.items():
            t0, n0 = node_last.get(m(node) or node, (None, 0))
            node_last[m(node) or node] = (_max(t0, t), n0 + n)
        self.node_last = node_last
        node_first: dict[str, float | None] = {}
        for node, t in self.node_first.items():
            key = m(node) or node
            node_first[key] = _min(node_first.get(key), t)
        self.node_first = node_first
        node_ranks: dict[str, set[int]] = {}
        for node, ranks in self.node_ranks.items():
            node_ranks.setdefault(m(node) or node, set()).update(ranks)
        self.node_ranks = node_ranks
        progress: dict[str, Progress] = {}
        for node, prog in self.progress.items():
            progress.setdefault(m(node) or node, Progress()).merge(prog)
        self.progress = progress
        device: dict[tuple[str, str], list[DeviceEvent]] = {}
        for (node, gpu), events in self.device_events.items():
            device.setdefault((m(node) or node, gpu), []).extend(events)
        self.device_events = device
        self.hits = cap_hits(self.hits)
        return self


def is_host(key: str) -> bool:
    """Whether a node key names a machine: not the key of records of no known node (``unknown``, ``rank:N``)."""
    return key != UNKNOWN_NODE and not key.startswith("rank:")


def job_nodes(node_last: dict[str, Any]) -> int:
    """How many nodes a job has: the hosts its records name. Records of no known node (``unknown``, ``rank:N``)
    make no node beside them: a job-level file (a launcher's metadata, a stray file) is one odd file, not a
    machine; only a job with no host at all counts its keys as they are."""
    return sum(1 for n in node_last if is_host(n)) or len(node_last)


def node_key(record: Record) -> str:
    """The node a record counts under during the pass: its node, else ``rank:N``, else ``unknown``."""
    if record.node:
        return record.node
    if record.rank is not None:
        return f"rank:{record.rank}"
    return UNKNOWN_NODE


def cap_hits(hits: list[Hit], cap: int = HIT_CAP) -> list[Hit]:
    """Keep the earliest ``cap`` hits per (rule, node), ordered by time then file position."""
    hits = sorted(hits, key=lambda h: _record_key(h.record))
    kept: Counter[tuple[str, str]] = Counter()
    out: list[Hit] = []
    for h in hits:
        key = (h.rule_id, node_key(h.record))
        if kept[key] < cap:
            kept[key] += 1
            out.append(h)
    return out


def thin_metrics(points: list[MetricPoint], cap: int = METRIC_CAP) -> list[MetricPoint]:
    """Bound the metric points per node: halve the density of the older points, never dropping flagged ones.

    The newest quarter of each node's series is always kept in full, because failures happen at the end.
    """
    by_node: dict[str | None, list[MetricPoint]] = {}
    for p in points:
        by_node.setdefault(p.node, []).append(p)
    out: list[MetricPoint] = []
    for series in by_node.values():
        series.sort(key=lambda p: (p.seq, p.time if p.time is not None else -math.inf, p.line))
        while len(series) > cap:
            keep_tail = cap // 4
            head, tail = series[:-keep_tail], series[-keep_tail:]
            head = [p for i, p in enumerate(head) if i % 2 == 0 or p.flagged]
            if len(head) + len(tail) >= len(series):
                break
            series = head + tail
        out.extend(series)
    return out


def collapsed(counts: dict[tuple[str, int, Any], int]) -> bool:
    """Whether every time bucket of a count table is 0 (or negative: no time), so that longer buckets cannot
    make it smaller (``rebucket``)."""
    return all(bucket <= 0 for _node, bucket, _key in counts)


def add_counts(into: dict[Any, int], other: dict[Any, int]) -> None:
    """Add the counts of ``other`` into ``into`` (in place), in the order a loop of ``into[k] = into.get(k, 0) + n``
    over ``other`` would leave the keys. Shards of different files mostly count different (node, bucket, template)
    cells, so the keys both hold are found first (a set operation in C) and only those are summed one by one; a
    table of a hundred thousand cells then merges by two ``dict.update`` calls instead of a Python loop."""
    if not into:
        into.update(other)
        return
    sums = {k: into[k] + other[k] for k in into.keys() & other.keys()}
    into.update(other)  # new keys appended in other's order, keys held already keep their place
    into.update(sums)


def rebucket(counts: dict[tuple[str, int, Any], int], old: float, new: float) -> dict[tuple[str, int, Any], int]:
    ratio = int(round(new / old))
    if ratio <= 1:
        return dict(counts)
    out: dict[tuple[str, int, Any], int] = {}
    get = out.get
    for (node, bucket, tid), n in counts.items():
        key = (node, bucket // ratio if bucket >= 0 else bucket, tid)
        out[key] = get(key, 0) + n
    return out


def _sum_keys(d: dict[Any, int], f: Any) -> dict[Any, int]:
    out: dict[Any, int] = {}
    for k, v in d.items():
        k2 = f(k)
        out[k2] = out.get(k2, 0) + v
    return out


def _fill_node(record: Record, rank_nodes: Mapping[int, str]) -> None:
    if record.node is None and record.rank is not None and record.rank in rank_nodes and not record.rank_local:
        record.node = rank_nodes[record.rank]


def _record_key(r: Record) -> tuple[float, str, int]:
    return (r.time if r.time is not None else math.inf, r.file, r.line)


def _event_key(m: Marker) -> tuple[float, str, int]:
    return (m.time if m.time is not None else math.inf, m.file, m.line)


def _before(a: float | None, b: float | None) -> bool:
    return a is not None and (b is None or a < b)


def _later_progress(a: Progress, b: Progress) -> bool:
    if a.last_time is not None and b.last_time is not None:
        return a.last_time > b.last_time
    return (a.last_iteration or -1) > (b.last_iteration or -1)


def _min(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if a < b else b


def _max(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return a if a > b else b
