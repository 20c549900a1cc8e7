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
from typing import Any, Protocol

from l4lite.jobscan import (
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
    _rebucket,
    cap_hits,
    collapsed,
    node_key,
    thin_metrics,
)
from l4lite.metrics import parse_job_facts, telemetry_header, telemetry_slowdown
from l4lite.metrics_fast import DeferredPlan, MetricParser, may_be_metric_line
from l4lite.phases import match_marker, may_be_marker
from l4lite.records import Accounting, Record
from l4lite.runs import ShapeRun, mine_run
from l4lite.shape import FOLD_DIGITS, shape_of

__all__ = ["EXEMPLAR_CAP", "HIT_CAP", "MAX_CELLS", "METRIC_CAP", "UNKNOWN_NODE", "DeviceEvent", "Hit", "JobScan",
           "Marker", "MetricPoint", "Progress", "Scanner", "TemplateStat", "cap_hits", "node_key", "scan_records",
           "thin_metrics"]

EXEMPLAR_BUDGET = 200_000  # exemplar records kept in all before only error and warning lines get one
METRIC_CACHE = 4096  # distinct metric messages whose parse is remembered
MAX_CELLS = 150_000  # count-table cells (about 170 bytes each) before buckets double in length
_PHASE_OF_MARKER = {"checkpoint_saved": "train", "restart": "init", "load_done": "load"}
_PHASE_OF_KIND = {"train": "train", "val": "eval"}  # metric line kind -> the phase it implies
GATE_CACHE = 8192  # message shapes whose gate bits are remembered
_G_CLOCKS, _G_FACT, _G_MARKER, _G_METRIC = 1, 2, 4, 8
_G_RARE = _G_CLOCKS | _G_FACT | _G_MARKER


def _gates_of(msg: str) -> int:
    """Which of the scan's per-message tests (metric line, telemetry header, job facts, phase markers) may apply.

    Every test is a search for digit-free words, so its answer is the same for all messages of one shape (the
    message with each digit a 0): the answer is remembered per shape.
    """
    gates = _G_METRIC if may_be_metric_line(msg) else 0
    if "clocks_" in msg:
        gates |= _G_CLOCKS
    if "steps =" in msg or "world size" in msg or " ....." in msg:
        gates |= _G_FACT
    if (" NCCL INFO " not in msg or "NCCL version" in msg or "Init COMPLETE" in msg or "Bootstrap" in msg) \
            and may_be_marker(msg):
        gates |= _G_MARKER
    return gates


def _may_be_active(text: str) -> bool:
    """Whether a line of ``nvidia-smi`` CSV may hold a field that is ``Active`` (a clock slowdown): more
    ``active`` than ``not active`` in it, in any case. A field that is ``Active`` adds an ``active`` that no
    ``not`` precedes (a comma does), so no such line is missed; lines of ``Not Active`` only, nearly all of a
    GPU's telemetry, then take the run's path (0.9 s of CPU against 2.6 s for 40 MB of telemetry)."""
    low = text.lower()
    return low.count("active") > low.count("not active")


class Miner(Protocol):
    """What the scan needs of a template miner (``l4lite.templates.TemplateMiner``)."""

    def add(self, message: str, key: bytes | None = None) -> int: ...

    def finalize(self) -> dict[int, tuple[str, str]]: ...


class Matcher(Protocol):
    """What the scan needs of a rule pack (``l4lite.rulepack.RulePack``): ``match(record) -> [RuleMatch]``."""

    def match(self, record: Record) -> list[Any]: ...


class _Stat:
    __slots__ = ("count", "levels", "sources", "first", "last")

    def __init__(self) -> None:
        self.count = 0
        self.levels: dict[str, int] = {}
        self.sources: dict[str, int] = {}
        self.first: float | None = None
        self.last: float | None = None


class Scanner:
    """Consumes records one at a time (``add``) and produces a ``JobScan`` (``finish``).

    ``finish`` does not consume the scanner's state, so a live follower (tail) can keep adding records and
    take a fresh scan whenever it wants one.
    """

    def __init__(self, miner: Miner, rules: Matcher | None = None, *, bucket_seconds: float = 5.0,
                 root: str = "", max_cells: int = MAX_CELLS, hit_cap: int = HIT_CAP) -> None:
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
        self._hit_kept: Counter[tuple[str, str]] = Counter()
        self._hit_totals: Counter[tuple[str, str]] = Counter()
        self._metrics: dict[str, list[_PendingPoint]] = {}
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
        self._await_time: dict[str, str] = {}  # file -> node whose last progress line had no time
        self._phase_now: dict[str, str] = {}  # node -> phase implied by its latest marker or metric line
        self._source_last: dict[str, float] = {}
        self._source_first: dict[str, float] = {}
        self._csv_headers: dict[str, list[str]] = {}  # file -> nvidia-smi CSV columns
        self._metric_cache: dict[str, Any] = {}
        self._metric_parser = MetricParser()
        self._cid_names: dict[int, str] = {}  # cluster id -> provisional template id "#id"
        self._gates: dict[bytes, int] = {}  # message shape -> which tests it may pass (see _gates_of)
        self._rule_gate: dict[bytes, bool] = {}  # line shape -> whether a rule may match (Record.shape)
        self._exemplar_count = 0
        self._device: dict[tuple[str, str], list[DeviceEvent]] = {}
        self._total_steps: int | None = None  # "Total optimization steps = N" (Hugging Face): epoch -> iteration
        self.info: dict[str, Any] = {}
        self.start_time: float | None = None
        self.end_time: float | None = None

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
        gates_memo = self._gates
        rule_gate = self._rule_gate
        could_match = getattr(rules, "could_match_line", None)
        bucket_seconds = self.bucket_seconds
        inf = math.inf
        for record in records:
            if type(record) is ShapeRun:
                self._add_run(record)
                bucket_seconds = self.bucket_seconds
                continue
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
            if rank is not None:
                ranks = node_ranks.get(node)
                if ranks is None:
                    node_ranks[node] = {rank}
                elif rank not in ranks:
                    ranks.add(rank)
                if record.node and rank not in rank_nodes:
                    rank_nodes[rank] = record.node
            if rules is not None:
                key = record.shape
                may = True
                if key is not None and could_match is not None:
                    may = rule_gate.get(key)
                    if may is None:
                        may = _remember(rule_gate, key, could_match(key))
                if may:
                    for match in rules.match(record):
                        self._add_hit(match, record, node)
            gates = gates_memo.get(shape)
            if gates is None:
                gates = _remember(gates_memo, shape, _gates_of(msg))
            if gates & _G_METRIC:
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
            if gates & _G_RARE:
                self._rare(record, node, msg, gates, in_csv)

    def _add_run(self, run: ShapeRun) -> None:
        """``add_many`` of a run's records (``l4lite.runs``), with what depends only on a line's shape worked out
        once per shape, and a record built only where one is kept (an exemplar, a metric point). A line that a
        rule may match or that may be a rare line (marker, job fact, telemetry header) goes as a record, and so
        does a line of GPU telemetry that may report a slowdown (``_may_be_active``)."""
        hot: set[int] = set()
        if self._csv_headers and run.file in self._csv_headers and _may_be_active("\n".join(run.texts)):
            hot = {i for i, text in enumerate(run.texts) if _may_be_active(text)}
        table = run.table
        shapes = run.shapes
        texts = run.texts
        rules = self.rules
        could_match = getattr(rules, "could_match_line", None)
        line_rules = getattr(rules, "line_rules", None)
        gates_of: dict[int, int] = {}
        deferred_of: list[_Deferred | None] = [None] * len(table)
        rules_of: list[Any] = [None] * len(table)
        parser = self._metric_parser
        slow: set[int] = set()
        for x in set(shapes):
            sh = table[x]
            if rules is not None:
                may = could_match is None or self._rule_gate.get(sh.key)
                if may is None:
                    may = _remember(self._rule_gate, sh.key, could_match(sh.key))
                if may:
                    rules_of[x] = line_rules(sh.key) if line_rules is not None else None
                    if rules_of[x] is None:
                        slow.add(x)
                        continue
            msg = texts[shapes.index(x)][sh.msg_start:sh.msg_end]
            msg_key = sh.msg_key if sh.msg_key is not None else shape_of(msg)
            gates = self._gates.get(msg_key)
            if gates is None:
                gates = _remember(self._gates, msg_key, _gates_of(msg))
            if gates & _G_RARE:
                slow.add(x)
            gates_of[x] = gates
            if gates & _G_METRIC:
                deferred_of[x] = _deferred_metric(parser.deferred(msg_key), sh.msg_start, sh.msg_end)
        if not slow and not hot:
            self._add_run_lines(run, gates_of, deferred_of, rules_of)
            return
        a = 0
        for i, x in enumerate(shapes):
            if x in slow or i in hot:
                if a < i:
                    self._add_run_lines(run.part(a, i), gates_of, deferred_of, rules_of)
                self.add_many(run.part(i, i + 1).records())
                a = i + 1
        if a < len(shapes):
            self._add_run_lines(run.part(a, len(shapes)), gates_of, deferred_of, rules_of)

    def _add_run_lines(self, run: ShapeRun, gates_of: dict[int, int], deferred_of: list[_Deferred | None],
                       rules_of: list[Any]) -> None:
        """``_add_run`` of lines of shapes without rare tests (``gates_of``: their gates). A metric line of a shape
        in ``deferred_of`` is kept with its plan, not its values (``_deferred_metric``); a line of a shape in
        ``rules_of`` is matched against the rules its shape may meet (``RulePack.line_rules``), and is a record
        only if one does."""
        table = run.table
        shapes = run.shapes
        texts = run.texts
        cids = mine_run(run, self.miner)
        cid_names = self._cid_names
        for cid in set(cids):
            if cid not in cid_names:
                cid_names[cid] = f"#{cid}"
        name_table, name_rows = run.name_table, run.name_rows
        file = run.file
        cells = self._cells
        exemplars = self._exemplars
        metric_cache = self._metric_cache
        metric_parse = self._metric_parser.parse_gated
        match_line = getattr(self.rules, "match_line", None)
        metrics = self._metrics
        seqs = self._seq
        progress = self._progress
        phase_now = self._phase_now
        flag_nodes = self._flag_nodes
        bucket_seconds = self.bucket_seconds
        inf = math.inf
        times = run.times
        if self._await_time:  # every line of a run has a time: the first one is the time after the progress line
            waiting = self._await_time.pop(file, None)
            if waiting is not None and self._progress[waiting].after_time is None:
                self._progress[waiting].after_time = times[0]
        # per (node, rank, GPU) of the run: [lines, first time, last time, last line, node key]; the node tables
        # take them after the loop (in the order the lines gave them)
        seen: dict[tuple[str | None, int | None, int | None], list[Any]] = {}
        if name_table is None or name_rows is None:
            rows = None
            rec_node, rank, gpu = run.node, run.rank, run.gpu
            node = rec_node or (f"rank:{rank}" if rank is not None else UNKNOWN_NODE)
            seen[(rec_node, rank, gpu)] = [len(times), times[0], times[-1], len(times) - 1, node]
        else:  # lines that name their own ranks: each line's entry in the name table, and the table's aggregates
            rows = name_rows.tolist()
            aggs: list[list[Any] | None] = [None] * len(name_table)
        lineno = run.first - 1
        k = -1
        for s, key, t, x, cid in zip(texts, run.keys, times, shapes, cids, strict=True):
            lineno += 1
            k += 1
            sh = table[x]
            if rows is not None:
                row = rows[k]
                agg = aggs[row]
                rec_node, rank, gpu = nm = name_table[row]
                if agg is None:  # two entries of the table may be one (node, rank, GPU)
                    agg = seen.get(nm)
                    if agg is None:
                        agg = seen[nm] = [0, t, t, k, rec_node or (f"rank:{rank}" if rank is not None
                                                                   else UNKNOWN_NODE)]
                    aggs[row] = agg
                agg[0] += 1
                agg[2] = t
                agg[3] = k
                node = agg[4]
            level = sh.level
            ckey = (cid, level, sh.source)
            cell = cells.get(ckey)
            if cell is None:
                cell = cells[ckey] = [0, inf, -inf]
            cell[0] += 1
            if t < cell[1]:
                cell[1] = t
            if t > cell[2]:
                cell[2] = t
            bkey = (node, int(t // bucket_seconds), cid)
            counts = self._counts
            counts[bkey] = counts.get(bkey, 0) + 1
            if len(counts) > self.max_cells:
                self._coarsen()
                bucket_seconds = self.bucket_seconds
            ekey = (cid, node)
            ex = exemplars.get(ekey)
            if ex is None:
                if self._exemplar_count < EXEMPLAR_BUDGET or level in ("error", "warning"):
                    exemplars[ekey] = [Record(file, lineno, lineno, rec_node, rank, gpu, sh.source, t, level,
                                              s[sh.msg_start:sh.msg_end], s, cid_names[cid], "", key)]
                    self._exemplar_count += 1
            elif len(ex) < EXEMPLAR_CAP:
                ex.append(Record(file, lineno, lineno, rec_node, rank, gpu, sh.source, t, level,
                                 s[sh.msg_start:sh.msg_end], s, cid_names[cid], "", key))
                self._exemplar_count += 1
            may_match = rules_of[x]
            if may_match is not None:
                msg = s[sh.msg_start:sh.msg_end]
                found = match_line(may_match, msg or s, s, sh.source)
                if found:
                    record = Record(file, lineno, lineno, rec_node, rank, gpu, sh.source, t, level, msg, s,
                                    cid_names[cid], "", key)
                    for match in found:
                        self._add_hit(match, record, node)
            deferred = deferred_of[x]
            if deferred is not None:  # _add_metric of a point that can wait for its values (kind and gates known)
                token, convert, ia, ib, nan_count, kind, implied = deferred
                iteration = convert(s[ia:ib]) if convert is not None else None
                if nan_count is not None and (nan_count[0](s[nan_count[1]:nan_count[2]]) or (
                        nan_count[3] and iteration is None and self._total_steps)):
                    # flagged by its NaN counter, or an epoch stands in for the iteration: its values now
                    self._add_metric(token[0].values(s[token[1]:token[2]]), node, rec_node, rank, t, file, lineno,
                                     s)
                    continue
                seq_key = (node, rank)
                seq = seqs[seq_key] = seqs.get(seq_key, 0) + 1
                series = metrics.get(node)
                if series is None:
                    series = metrics[node] = []
                series.append((token, iteration, seq, rec_node, rank, t, file, lineno, s))
                if len(series) > METRIC_CAP:
                    metrics[node] = _thin_series(series, METRIC_CAP // 2, node in flag_nodes)
                if kind == "train":
                    prog = progress.get(node)
                    if prog is None:
                        prog = progress[node] = Progress(iteration, iteration, t, t)
                    prog.points += 1
                    last = prog.last_iteration
                    if iteration is None or last is None or iteration >= last or iteration < last // 2:
                        if iteration is not None:
                            prog.last_iteration = iteration
                        prog.last_time = t
                        prog.last_file, prog.last_line = file, lineno
                        prog.after_time = None
                if implied is not None and phase_now.get(node) != implied and len(self._markers) < MARKER_CAP:
                    phase_now[node] = implied
                    self._markers.append(Marker(implied, rec_node, rank, t, file, lineno, iteration,
                                                {"implied": True}))
            elif gates_of[x] & _G_METRIC:
                msg = s[sh.msg_start:sh.msg_end]
                values = metric_cache.get(msg)
                if values is None:
                    values = metric_parse(msg, sh.msg_key)
                    if values is not None:
                        if len(metric_cache) >= METRIC_CACHE:
                            metric_cache.clear()
                        metric_cache[msg] = values
                if values is not None:
                    self._add_metric(values, node, rec_node, rank, t, file, lineno, s)
        self._run_nodes(seen)

    def _run_nodes(self, seen: dict[tuple[str | None, int | None, int | None], list[Any]]) -> None:
        """The node tables' share of a run's lines, per (node, rank, GPU): what ``add_many`` does line by line."""
        node_count = self._node_count
        node_first = self._node_first
        for (rec_node, rank, _gpu), (n, t0, _t1, _k, node) in seen.items():
            have = node_count.get(node)
            if have is None:
                node_count[node] = n
                node_first[node] = t0
            else:
                node_count[node] = have + n
                if node_first[node] is None:
                    node_first[node] = t0
            if rank is not None:
                ranks = self._node_ranks.get(node)
                if ranks is None:
                    self._node_ranks[node] = {rank}
                else:
                    ranks.add(rank)
                if rec_node and rank not in self._rank_nodes:
                    self._rank_nodes[rank] = rec_node
        for _names, (_n, _t0, t1, _k, node) in sorted(seen.items(), key=lambda item: item[1][3]):
            self._node_time[node] = t1  # the time of the node's last line

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
        if gates & _G_CLOCKS and not in_csv:
            header = telemetry_header(msg)
            if header is not None:
                self._csv_headers[record.file] = header
        if gates & _G_FACT:
            self._job_fact(msg)
        marker = match_marker(msg) if gates & _G_MARKER else None
        if marker is not None and len(self._markers) < MARKER_CAP:
            self._phase_now[node] = _PHASE_OF_MARKER.get(marker.kind, marker.kind)
            self._markers.append(Marker(marker.kind, record.node, record.rank, record.time, record.file,
                                        record.line, marker.iteration, marker.detail))

    def _add_hit(self, match: Any, record: Record, node: str) -> None:
        rule = getattr(match, "rule", None)
        rule_id = str(getattr(rule, "id", None) or getattr(match, "rule_id", None) or rule)
        key = (rule_id, node)
        self._hit_totals[key] += 1
        if self._hit_kept[key] < self.hit_cap:
            self._hit_kept[key] += 1
            groups = getattr(match, "groups", None) or {}
            self._hits.append(Hit(rule_id, record, {k: v for k, v in dict(groups).items() if v is not None}))

    def _add_metric(self, values: dict[str, Any], node: str, rec_node: str | None, rank: int | None,
                    t: float | None, file: str, line: int, text: str) -> None:
        """A metric line (``values``) of a record (its node, rank, time, file, line and text) from ``node``."""
        seq_key = (node, rank)
        seq = self._seq[seq_key] = self._seq.get(seq_key, 0) + 1
        iteration = values.get("iteration")
        if iteration is None and self._total_steps and values.get("epoch") is not None:
            iteration = int(round(values["epoch"] * self._total_steps))  # (values is shared: never mutated)
        kind = values.get("kind", "train")
        series = self._metrics.get(node)
        if series is None:
            series = self._metrics[node] = []
        point = (values, iteration, seq, rec_node, rank, t, file, line, text)
        series.append(point)
        if node not in self._flag_nodes and _flagged(point):
            self._flag_nodes.add(node)
        if len(series) > METRIC_CAP:
            self._metrics[node] = _thin_series(series, METRIC_CAP // 2, node in self._flag_nodes)
        if kind == "train":
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
        implied = _PHASE_OF_KIND.get(kind)
        if implied is not None and self._phase_now.get(node) != implied and len(self._markers) < MARKER_CAP:
            self._phase_now[node] = implied
            self._markers.append(Marker(implied, rec_node, rank, t, file, line, iteration, {"implied": True}))

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
        if "total_steps" in facts and self._total_steps is None:
            self._total_steps = int(facts["total_steps"])

    def _coarsen(self) -> None:
        while len(self._counts) > self.max_cells // 2:
            if collapsed(self._counts):
                # one bucket per node and template is more than the table may hold: longer buckets cannot help
                # (they would double until the float overflows), so the table grows instead
                self.max_cells = 2 * len(self._counts)
                return
            self._counts = _rebucket(self._counts, self.bucket_seconds, self.bucket_seconds * 2)
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

        scan.hits = [Hit(h.rule_id, fix(h.record), dict(h.groups)) for h in self._hits]
        scan.hit_totals = dict(self._hit_totals)
        scan.metrics = [_point(p) for series in self._metrics.values() for p in series]
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
        scan.remap_nodes(rank_nodes)
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


# ---------------------------------------------------------------------- helpers
# A metric line as the scan keeps it until ``finish``: (values, iteration, seq, node, rank, time, file, line, text)
# (a plain tuple: a line of a run needs no record). Most points of a long job are thinned away before then, so
# the ``MetricPoint`` is only built for the ones that stay. For a line of a run, ``values`` may be a token
# (plan, message start, message end) instead: the values are worked out in ``_point`` for the points that stay.
_PendingPoint = tuple[Any, "int | None", int, "str | None", "int | None", "float | None", str, int, str]
# A metric shape of a run whose values can wait: (token, iteration conversion, its start and end in the line,
# what may make a line of the shape need its values now, kind, phase it implies). What may: (NaN counter
# conversion, start, end, whether the shape has an epoch), None if nothing can.
_Deferred = tuple[tuple[DeferredPlan, int, int], Any, int, int, "tuple[Any, int, int, bool] | None", str, "str | None"]


def _deferred_metric(plan: DeferredPlan | None, msg_start: int, msg_end: int) -> _Deferred | None:
    if plan is None:
        return None
    convert, a, b = plan.iteration if plan.iteration is not None else (None, 0, 0)
    now = None
    if plan.nan_count is not None or plan.epoch:
        count, na, nb = plan.nan_count if plan.nan_count is not None else (_nothing, 0, 0)
        now = (count, msg_start + na, msg_start + nb, plan.epoch)
    return ((plan, msg_start, msg_end), convert, msg_start + a, msg_start + b, now, plan.kind,
            _PHASE_OF_KIND.get(plan.kind))


def _nothing(_text: str) -> None:
    return None


def _remember(memo: dict[bytes, Any], key: bytes, value: Any) -> Any:
    """Store a per-shape answer in a memo bounded to ``GATE_CACHE`` entries (cleared when full); return it."""
    if len(memo) >= GATE_CACHE:
        memo.clear()
    memo[key] = value
    return value


def _flagged(p: _PendingPoint, isfinite: Any = math.isfinite) -> bool:
    """``MetricPoint.flagged`` of the point ``p`` will be (unrolled: thinning asks it of every other point)."""
    if type(p[0]) is tuple:
        return False  # a deferred point: a line of its shape that is flagged (by its NaN counter) has values
    get = p[0].get
    v = get("loss")
    if v is not None and not isfinite(v):
        return True
    v = get("grad_norm")
    if v is not None and not isfinite(v):
        return True
    v = get("val_loss")
    if v is not None and not isfinite(v):
        return True
    return bool(get("nan_count")) or get("kind") == "overflow"


def _point(p: _PendingPoint) -> MetricPoint:
    values, iteration, seq, node, rank, t, file, line, text = p
    if type(values) is tuple:
        plan, a, b = values
        values = plan.values(text[a:b])
    get = values.get
    return MetricPoint(node, rank, t, iteration, file, line, get("loss"), get("grad_norm"), get("lr"),
                       get("iter_time"), get("loss_scale"), get("skipped"), get("nan_count"), get("val_loss"),
                       get("throughput"), get("kind", "train"), get("skipped_total"), seq, text[:500])


def _thin_series(series: list[_PendingPoint], target: int, flagged: bool = True) -> list[_PendingPoint]:
    """Thin one node's series (in arrival order) to about ``target`` points, as ``thin_metrics`` does.
    ``flagged``: whether any point of the series may be flagged (if not, every other point goes)."""
    keep_tail = target // 2
    head, tail = series[:-keep_tail], series[-keep_tail:]
    while len(head) + len(tail) > target:
        thinner = [p for i, p in enumerate(head) if i % 2 == 0 or _flagged(p)] if flagged else head[::2]
        if len(thinner) == len(head):
            break
        head = thinner
    return head + tail


