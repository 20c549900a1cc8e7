"""The scan: one streaming pass over a job's records that keeps only what the detectors need.

``analyze`` never holds every record in memory. Instead each record, as it streams past, updates bounded
aggregates: per-template statistics, per (node, time bucket, template) counts, rule hits (capped), trainer
metric points, phase markers and a few exemplar records per (template, node). A ``JobScan`` is plain data and
scans of shards merge with ``JobScan.merge`` (l4lite/jobscan.py; templates are keyed by stable template ids, so
shards agree). The names of ``jobscan`` are importable from here too.

During the pass records carry local template-miner cluster ids (``template_id == "#<cluster>"``); ``finish``
maps them to stable template ids, and remaps rank-only node keys (``rank:N``) to node names with the rank->node
map learned from lines that name both. The count table coarsens its time buckets (doubling their length) when
it grows past ``max_cells``, so memory stays bounded whatever the length of the job.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, Protocol

from l4lite.ingest.shape import FOLD_DIGITS
from l4lite.ingest.shaperun import ShapeRun
from l4lite.records import Accounting, Record, stamped
from l4lite.rules.advisory import advisory
from l4lite.scan.jobscan import (
    DEVICE_EVENT_CAP,
    EXEMPLAR_CAP,
    HIT_CAP,
    MARKER_CAP,
    METRIC_CAP,
    UNKNOWN_NODE,
    DeviceEvent,
    Hit,
    JobScan,
    Marker,
    MetricPoint,
    Progress,
    TemplateStat,
    cap_hits,
    collapsed,
    is_host,
    node_key,
    rebucket,
    thin_metrics,
)
from l4lite.scan.metric_plans import DeferredPlan, MetricParser
from l4lite.scan.metrics import parse_job_facts, telemetry_header, telemetry_slowdown
from l4lite.scan.phases import match_marker
from l4lite.scan.points import (
    EXEMPLAR_BUDGET,
    G_CLOCKS,
    G_FACT,
    G_MARKER,
    G_METRIC,
    G_RARE,
    LONG_LINE,
    METRIC_CACHE,
    PHASE_OF_KIND,
    PendingPoint,
    is_flagged,
    message_gates,
    point,
    remember,
    thin_series,
)
from l4lite.scan.runpath import RunPath, hit_rule_id

__all__ = ["EXEMPLAR_CAP", "HIT_CAP", "MAX_CELLS", "METRIC_CAP", "UNKNOWN_NODE", "DeviceEvent", "Hit", "JobScan",
           "Marker", "MetricPoint", "Progress", "Scanner", "TemplateStat", "cap_hits", "is_host", "node_key", "scan_records",
           "thin_metrics"]

MAX_CELLS = 150_000  # count-table cells (about 170 bytes each) before buckets double in length
_PHASE_OF_MARKER = {"checkpoint_saved": "train", "restart": "init", "load_done": "load"}
class RankProgress(NamedTuple):
    """One rank's training progress as the scan saw it (``rank`` None: a node's lines name no rank)."""

    node: str
    rank: int | None
    last_iteration: int | None
    points: int


class Miner(Protocol):
    """What the scan needs of a template miner (``l4lite.templates.TemplateMiner``)."""

    def add(self, message: str, key: bytes | None = None) -> int: ...

    def finalize(self) -> dict[int, tuple[str, str]]: ...


class Matcher(Protocol):
    """What the scan needs of a rule pack (``l4lite.rules.pack.RulePack``): ``match(record) -> [RuleMatch]``."""

    def match(self, record: Record) -> list[Any]: ...


class _Stat:
    __slots__ = ("count", "levels", "sources", "first", "last")

    def __init__(self) -> None:
        self.count = 0
        self.levels: dict[str, int] = {}
        self.sources: dict[str, int] = {}
        self.first: float | None = None
        self.last: float | None = None


def steps_per_epoch(total_steps: int, num_epochs: int | None) -> float:
    """Optimizer steps per epoch from Hugging Face's start-up banner (one epoch when the banner gave none)."""
    return total_steps / num_epochs if num_epochs else float(total_steps)


class Scanner(RunPath):
    """Consumes records one at a time (``add``) and produces a ``JobScan`` (``finish``).

    ``finish`` does not consume the scanner's state, so a live follower (tail) can keep adding records and
    take a fresh scan whenever it wants one.
    """

    def __init__(self, miner: Miner, rules: Matcher | None = None, *, bucket_seconds: float = 5.0,
                 root: str = "", max_cells: int = MAX_CELLS, hit_cap: int = HIT_CAP,
                 steps_per_epoch: float | None = None) -> None:
        self.miner = miner
        self.rules = rules
        self.root = root
        self.bucket_seconds = float(bucket_seconds)
        self.max_cells = max_cells
        self.hit_cap = hit_cap
        # (cluster, level, source) -> [records, first time, last time]: one table for the template stats, the
        # sources' first and last times and the job's time span (folded in finish; one look-up per record)
        self._cells: dict[tuple[int, str | None, str], list[Any]] = {}
        self._counts: dict[tuple[str, int, int], int] = {}
        self._hits: list[Hit] = []
        self._prev: Record | None = None  # the last record added (add_many may be called once per file or batch)
        self._hit_kept: Counter[tuple[str, str]] = Counter()
        self._hit_totals: Counter[tuple[str, str]] = Counter()
        self._metrics: dict[str, list[PendingPoint]] = {}
        self._seq: dict[tuple[str, int | None], int] = {}
        self._flag_nodes: set[str] = set()  # nodes with a flagged metric point (one that thinning keeps)
        self._markers: list[Marker] = []
        self._exemplars: dict[tuple[int, str], list[Record]] = {}
        self._rank_nodes: dict[int, str] = {}
        self._node_time: dict[str, float] = {}  # node -> time of its last timed record
        self._node_count: dict[str, int] = {}  # node -> records
        self._node_first: dict[str, float | None] = {}
        self._node_ranks: dict[str, set[int]] = {}
        self._progress: dict[str, Progress] = {}
        # (node, rank) -> [last iteration, training points]: what tail's per-rank staleness watches move
        self._rank_marks: dict[tuple[str, int | None], list[Any]] = {}
        self._await_time: dict[str, str] = {}  # file -> node whose last progress line had no time
        self._phase_now: dict[str, str] = {}  # node -> phase implied by its latest marker or metric line
        self._source_last: dict[str, float] = {}
        self._source_first: dict[str, float] = {}
        self._csv_headers: dict[str, list[str]] = {}  # file -> nvidia-smi CSV columns
        self._metric_cache: dict[str, Any] = {}
        self._metric_parser = MetricParser()
        self._cid_names: dict[int, str] = {}  # cluster id -> provisional template id "#id"
        self._gates: dict[bytes, int] = {}  # message shape -> which tests it may pass (see gates_of)
        # line shape (Record.shape) -> the rules that may match a line of it (``RulePack.line_rules``, or the
        # pack's ``match`` alone: LONG_LINE)
        self._rule_gate: dict[bytes, Any] = {}
        # (id of candidate rules, source) -> (those rules, their answers by message or None): ``RunPath._add_run_lines``
        self._rule_answers: dict[tuple[int, str], tuple[Any, dict[str, Any] | None]] = {}
        self._rule_answers_by_ids: dict[tuple[tuple[str, ...], str], dict[str, Any]] = {}  # the memos themselves
        # (line shape, message start, end, folded) -> (the gate's rules, those the shape's literals leave): ``_add_run``
        self._shape_rules: dict[tuple[bytes, int, int, bool], Any] = {}
        # (line shape, message start, end, folded, source) -> (its message rules, ``runpath.shape_rules`` of them)
        self._shape_answers: dict[tuple[bytes, int, int, bool, str], Any] = {}
        self._hidden_words: tuple[bytes, ...] | None = None  # gate keywords a folded run shape may hide
        self._exemplar_count = 0
        self._device: dict[tuple[str, str], list[DeviceEvent]] = {}
        # Hugging Face logs a fractional epoch, not a step: "Total optimization steps = N" over "Num Epochs = E"
        # turns it into an iteration
        self._steps_per_epoch = steps_per_epoch
        self._num_epochs: int | None = None
        self.info: dict[str, Any] = {}
        self.start_time: float | None = None
        self.end_time: float | None = None

    def rank_nodes_seen(self) -> dict[int, str]:
        """Rank -> node as first seen on lines that name both (before ``finish`` folds in the weighted ties)."""
        return dict(self._rank_nodes)

    def phase_now(self) -> dict[str, str]:
        """Node -> the phase its latest marker or metric line implies."""
        return dict(self._phase_now)

    # ------------------------------------------------------------------ the hot path
    def add(self, record: Record) -> None:
        self.add_many((record,))

    def add_many(self, records: Iterable[Record]) -> None:
        """Add records in order. One loop over many records keeps the scanner's tables in local names."""
        miner_add = self.miner.add
        cid_names = self._cid_names
        cells = self._cells
        node_time = self._node_time
        exemplars = self._exemplars
        node_count = self._node_count
        node_first = self._node_first
        node_ranks = self._node_ranks
        rank_nodes = self._rank_nodes
        rules = self.rules
        metric_cache = self._metric_cache
        metric_parse = self._metric_parser.parse_gated  # the gates below say may_be_metric_line
        metric_deferred = self._metric_parser.deferred
        gates_memo = self._gates
        rule_gate = self._rule_gate
        match_line = getattr(rules, "match_line", None)
        line_rules = getattr(rules, "line_rules", None) if match_line is not None else None
        bucket_seconds = self.bucket_seconds
        inf = math.inf
        prev = self._prev
        for record in records:
            if type(record) is ShapeRun:
                self._add_run(record)
                bucket_seconds = self.bucket_seconds
                prev = None
                continue
            before, prev = prev, record  # the record before this one: an advisory line its traceback follows
            node = record.node or (f"rank:{record.rank}" if record.rank is not None else UNKNOWN_NODE)
            t = record.time
            msg = record.message
            shape = msg.encode("utf-8", "surrogatepass").translate(FOLD_DIGITS)
            cid = miner_add(msg, shape)
            name = cid_names.get(cid)
            if name is None:
                name = cid_names[cid] = f"#{cid}"
            record.template_id = name
            level = record.level
            ckey = (cid, level, record.source)
            cell = cells.get(ckey)
            if cell is None:
                cell = cells[ckey] = [0, inf, -inf]
            cell[0] += 1
            if t is not None:
                if t < cell[1]:
                    cell[1] = t
                if t > cell[2]:
                    cell[2] = t
                bucket = int(t // bucket_seconds)
                if self._await_time:
                    waiting = self._await_time.pop(record.file, None)
                    if waiting is not None and self._progress[waiting].after_time is None:
                        self._progress[waiting].after_time = t
                node_time[node] = t
            else:
                bucket = -1
            key = (node, bucket, cid)
            counts = self._counts
            counts[key] = counts.get(key, 0) + 1
            if len(counts) > self.max_cells:
                self._coarsen()
                bucket_seconds = self.bucket_seconds
            ekey = (cid, node)
            ex = exemplars.get(ekey)
            if ex is None:
                # Past the budget (thousands of templates on thousands of nodes) only alarming lines get one.
                if self._exemplar_count < EXEMPLAR_BUDGET or level in ("error", "warning"):
                    exemplars[ekey] = [record]
                    self._exemplar_count += 1
            elif len(ex) < EXEMPLAR_CAP:
                ex.append(record)
                self._exemplar_count += 1
            n = node_count.get(node)
            if n is None:
                node_count[node] = 1
                node_first[node] = t
            else:
                node_count[node] = n + 1
                if t is not None and node_first[node] is None:
                    node_first[node] = t
            rank = record.rank
            if rank is not None and not record.rank_local:  # a local rank names a worker of its node, not the job's
                ranks = node_ranks.get(node)
                if ranks is None:
                    node_ranks[node] = {rank}
                elif rank not in ranks:
                    ranks.add(rank)
                if record.node and rank not in rank_nodes:
                    rank_nodes[rank] = record.node
            if rules is not None:
                key = record.shape
                found = LONG_LINE
                if key is not None and line_rules is not None:
                    found = rule_gate.get(key)
                    if found is None:
                        found = remember(rule_gate, key, line_rules(key) or LONG_LINE)
                if found is LONG_LINE:
                    for match in rules.match(record):
                        self._add_hit(match, record, node, before)
                elif found[0] or found[1]:
                    # RulePack.match of a one-line record, with the rules its shape gave: the message is a part
                    # of the text (else the pack looks both up)
                    text = record.text
                    line_msg = msg or text
                    found = match_line(found, line_msg, text, record.source) if line_msg in text \
                        else rules.match(record)
                    for match in found:
                        self._add_hit(match, record, node, before)
            gates = gates_memo.get(shape)
            if gates is None:
                gates = remember(gates_memo, shape, message_gates(msg))
            if gates & G_METRIC:
                # a line of a learnt shape waits for its values, as a run's line does (``_add_deferred``)
                plan = metric_deferred(shape)
                text = record.text
                if plan is not None and text.endswith(msg) and self._add_deferred(plan, record, node,
                                                                                 len(text) - len(msg)):
                    if plan.kind == "train":
                        continue  # a progress line is no phase marker (as below)
                else:
                    values = metric_cache.get(msg)
                    if values is None:
                        values = metric_parse(msg, shape)
                        if values is not None:  # every rank often prints the same progress line: parse it once
                            if len(metric_cache) >= METRIC_CACHE:
                                metric_cache.clear()
                            metric_cache[msg] = values
                    if values is not None:
                        self._add_metric(values, node, record.node, record.rank, t, record.file, record.line,
                                         record.text)
                        if values.get("kind") == "train":
                            continue  # a progress line is no phase marker (and is most of a training log)
            in_csv = bool(self._csv_headers) and record.file in self._csv_headers
            if in_csv:
                self._telemetry(record, node, record.text)
            if gates & G_RARE:
                self._rare(record, node, msg, gates, in_csv)
        self._prev = prev

    def _fold_cells(self) -> None:
        """The job's time span and each source's first and last time, from the cells."""
        first: dict[str, float] = {}
        last: dict[str, float] = {}
        for (_cid, _level, source), (_n, t0, t1) in self._cells.items():
            if t0 < first.get(source, math.inf):
                first[source] = t0
            if t1 > last.get(source, -math.inf):
                last[source] = t1
        self._source_first = first
        self._source_last = last
        self.start_time = min(first.values()) if first else None
        self.end_time = max(last.values()) if last else None

    def _template_stats(self) -> dict[int, _Stat]:
        """Per cluster: records, levels, sources, first and last time, from the cells."""
        stats: dict[int, _Stat] = {}
        for (cid, level, source), (n, t0, t1) in self._cells.items():
            st = stats.get(cid)
            if st is None:
                st = stats[cid] = _Stat()
            st.count += n
            if level:
                st.levels[level] = st.levels.get(level, 0) + n
            st.sources[source] = st.sources.get(source, 0) + n
            if t0 != math.inf and (st.first is None or t0 < st.first):
                st.first = t0
            if t1 != -math.inf and (st.last is None or t1 > st.last):
                st.last = t1
        return stats

    def _rare(self, record: Record, node: str, msg: str, gates: int, in_csv: bool) -> None:
        """The tests few lines pass: nvidia-smi CSV header, job facts, phase markers."""
        if gates & G_CLOCKS and not in_csv:
            header = telemetry_header(msg)
            if header is not None:
                self._csv_headers[record.file] = header
        if gates & G_FACT:
            self._job_fact(msg)
        marker = match_marker(msg) if gates & G_MARKER else None
        if marker is not None and len(self._markers) < MARKER_CAP:
            self._phase_now[node] = _PHASE_OF_MARKER.get(marker.kind, marker.kind)
            if record.time is not None and not stamped(record.text):  # a time lent by the line above
                marker.detail["untimed"] = True
            self._markers.append(Marker(marker.kind, record.node, record.rank, record.time, record.file,
                                        record.line, marker.iteration, marker.detail))

    def _add_hit(self, match: Any, record: Record, node: str, before: Record | None = None) -> None:
        rule_id = hit_rule_id(match)
        key = (rule_id, node)
        self._hit_totals[key] += 1
        if self._hit_kept[key] < self.hit_cap:
            self._hit_kept[key] += 1
            groups = getattr(match, "groups", None) or {}
            self._hits.append(Hit(rule_id, record, {k: v for k, v in dict(groups).items() if v is not None},
                                  advisory(before, record)))

    def _add_metric(self, values: dict[str, Any], node: str, rec_node: str | None, rank: int | None,
                    t: float | None, file: str, line: int, text: str) -> None:
        """A metric line (``values``) of a record (its node, rank, time, file, line and text) from ``node``."""
        iteration = values.get("iteration")
        if iteration is None and self._steps_per_epoch and values.get("epoch") is not None:
            iteration = int(round(values["epoch"] * self._steps_per_epoch))  # (values is shared: never mutated)
        self._add_point(values, iteration, values.get("kind", "train"), node, rec_node, rank, t, file, line, text)

    def _add_deferred(self, plan: DeferredPlan, record: Record, node: str, at: int) -> bool:
        """``_add_metric`` of a record's metric line whose shape has a deferred plan (``MetricParser.deferred``),
        its message ``record.text[at:]``: kept with the plan and its place, its values worked out only if the
        point is kept (``points.point``), as the run path keeps its lines. False, with nothing added, where the
        line needs its values now: its NaN counter is set, or an epoch stands in for a missing iteration."""
        text = record.text
        iteration = None
        if plan.iteration is not None:
            convert, a, b = plan.iteration
            iteration = convert(text[at + a:at + b])
        if plan.nan_count is not None:
            convert, a, b = plan.nan_count
            if convert(text[at + a:at + b]):
                return False
        if plan.epoch and iteration is None and self._steps_per_epoch:
            return False
        self._add_point((plan, at, len(text)), iteration, plan.kind, node, record.node, record.rank, record.time,
                        record.file, record.line, text)
        return True

    def _add_point(self, values: Any, iteration: int | None, kind: str, node: str, rec_node: str | None,
                   rank: int | None, t: float | None, file: str, line: int, text: str) -> None:
        """A metric line's point (``values``: its values, or a deferred plan's token) and what it says of the
        node's progress and phase."""
        seq_key = (node, rank)
        seq = self._seq[seq_key] = self._seq.get(seq_key, 0) + 1
        series = self._metrics.get(node)
        if series is None:
            series = self._metrics[node] = []
        point = PendingPoint(values, iteration, seq, rec_node, rank, t, file, line, text)
        series.append(point)
        if node not in self._flag_nodes and is_flagged(point):
            self._flag_nodes.add(node)
        if len(series) > METRIC_CAP:
            self._metrics[node] = thin_series(series, METRIC_CAP // 2, node in self._flag_nodes)
        if kind == "train":
            mark = self._rank_marks.get(seq_key)
            if mark is None:
                mark = self._rank_marks[seq_key] = [None, 0]
            mark[1] += 1
            if iteration is not None:
                mark[0] = iteration
            prog = self._progress.get(node)
            if prog is None:
                prog = self._progress[node] = Progress(iteration, iteration, t, t)
            prog.points += 1
            it = iteration
            if it is None or prog.last_iteration is None or it >= prog.last_iteration or it < (
                    prog.last_iteration // 2):  # a restart from an earlier checkpoint also counts as progress
                if it is not None:
                    prog.last_iteration = it
                prog.last_time = t
                prog.last_file, prog.last_line = file, line
                prog.after_time = None
                if t is None:
                    self._await_time[file] = node
        implied = PHASE_OF_KIND.get(kind)
        if implied is not None and self._phase_now.get(node) != implied and len(self._markers) < MARKER_CAP:
            self._phase_now[node] = implied
            self._markers.append(Marker(implied, rec_node, rank, t, file, line, iteration, {"implied": True}))

    def node_progress(self) -> dict[str, Progress]:
        """Per node, its training progress so far (what a live hang check compares between two looks)."""
        return dict(self._progress)

    def rank_progress(self) -> list[RankProgress]:
        """Per rank (or per node where lines name no rank), its last iteration and how many training progress
        lines it printed so far; a rank-only node key takes the rank's node once a line has tied them."""
        out = []
        for (node, rank), (iteration, points) in self._rank_marks.items():
            if rank is not None and node == f"rank:{rank}":
                node = self._rank_nodes.get(rank, node)
            out.append(RankProgress(node, rank, iteration, points))
        return out

    def last_progress_texts(self) -> dict[str, str]:
        """Per node, the text of its latest metric line (what a hang alert quotes)."""
        return {node: series[-1][8][:500] for node, series in self._metrics.items() if series}

    def _telemetry(self, record: Record, node: str, msg: str) -> None:
        event = telemetry_slowdown(self._csv_headers[record.file], msg)
        if event is None:
            return
        events = self._device.setdefault((node, event["gpu"]), [])
        if len(events) < DEVICE_EVENT_CAP:
            events.append(DeviceEvent("gpu_slowdown", record, event))
        else:
            events[-1] = DeviceEvent("gpu_slowdown", record, event, events[-1].count + 1)

    def _job_fact(self, msg: str) -> None:
        facts = parse_job_facts(msg)
        for k, v in facts.items():
            self.info.setdefault(k, v)
        if "num_epochs" in facts and self._num_epochs is None:
            self._num_epochs = facts["num_epochs"]
        if "total_steps" in facts and self._steps_per_epoch is None:
            self._steps_per_epoch = steps_per_epoch(facts["total_steps"], self._num_epochs)

    def _coarsen(self) -> None:
        while len(self._counts) > self.max_cells // 2:
            if collapsed(self._counts):
                # one bucket per node and template is more than the table may hold: longer buckets cannot help
                # (they would double until the float overflows), so the table grows instead
                self.max_cells = 2 * len(self._counts)
                return
            self._counts = rebucket(self._counts, self.bucket_seconds, self.bucket_seconds * 2)
            self.bucket_seconds *= 2

    # ------------------------------------------------------------------ the end of the pass
    def finish(self, accounting: Accounting | None = None, rank_nodes: Mapping[int, str] | None = None,
               info: Mapping[str, Any] | None = None) -> JobScan:
        """Map cluster ids to stable template ids and node keys to nodes; return the scan."""
        self._fold_cells()
        final = self.miner.finalize()
        tid_of: dict[int, str] = {}
        scan = JobScan(root=self.root, accounting=accounting if accounting is not None else Accounting(),
                       bucket_seconds=self.bucket_seconds)
        per_node: dict[int, dict[str, int]] = {}
        for (node, _bucket, cid), n in self._counts.items():
            d = per_node.setdefault(cid, {})
            d[node] = d.get(node, 0) + n
        for cid, st in self._template_stats().items():
            tid, text = final.get(cid, (f"c{cid}", ""))
            tid_of[cid] = tid
            stat = TemplateStat(tid, text, st.count, per_node.get(cid, {}), dict(st.levels), dict(st.sources),
                                st.first, st.last)
            mine = scan.templates.get(tid)
            if mine is None:
                scan.templates[tid] = stat
            else:
                mine.merge(stat)
        text_of = {tid: stat.template for tid, stat in scan.templates.items()}
        for (node, bucket, cid), n in self._counts.items():
            key = (node, bucket, tid_of[cid])
            scan.counts[key] = scan.counts.get(key, 0) + n

        def fix(rec: Record) -> Record:
            if rec.template_id.startswith("#"):
                tid = tid_of.get(int(rec.template_id[1:]), "")
                rec.template_id, rec.template = tid, text_of.get(tid, "")
            return rec

        scan.hits = [Hit(h.rule_id, fix(h.record), dict(h.groups), h.advisory) for h in self._hits]
        scan.hit_totals = dict(self._hit_totals)
        scan.metrics = [point(p) for series in self._metrics.values() for p in series]
        scan.markers = list(self._markers)
        for (cid, node), recs in self._exemplars.items():
            lst = scan.exemplars.setdefault((tid_of[cid], node), [])
            lst.extend(fix(r) for r in recs)
            del lst[EXEMPLAR_CAP:]
        scan.rank_nodes = dict(self._rank_nodes)
        scan.node_last = {n: (self._node_time.get(n), c) for n, c in self._node_count.items()}
        scan.node_first = dict(self._node_first)
        scan.node_ranks = {k: set(v) for k, v in self._node_ranks.items()}
        scan.progress = {k: Progress(p.first_iteration, p.last_iteration, p.first_time, p.last_time, p.last_file,
                                     p.last_line, p.points, p.after_time) for k, p in self._progress.items()}
        scan.start_time, scan.end_time = self.start_time, self.end_time
        scan.source_last = dict(self._source_last)
        scan.source_first = dict(self._source_first)
        scan.device_events = {k: list(v) for k, v in self._device.items()}
        scan.info.update(self.info)
        if info:
            scan.info.update(info)
        scan.remap_nodes(rank_nodes).place_error_records()
        scan.hits = cap_hits(scan.hits, self.hit_cap)
        return scan


def scan_records(records: Iterable[Record], miner: Miner, rules: Matcher | None = None, *,
                 bucket_seconds: float = 5.0, root: str = "", accounting: Accounting | None = None,
                 rank_nodes: Mapping[int, str] | None = None) -> JobScan:
    """Scan a stream of records in one pass."""
    scanner = Scanner(miner, rules, bucket_seconds=bucket_seconds, root=root)
    for record in records:
        scanner.add(record)
    return scanner.finish(accounting, rank_nodes)
