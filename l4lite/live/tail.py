"""``l4lite tail``: the analyze pipeline fed incrementally from followed files, with state kept between polls.

One poll: the follower (``l4lite.live.follow``) returns new complete lines per stream; ``RecordFeed`` turns them into
records with the ingest stage's parser (multi-line records may span polls); each record goes through the
streaming ``Scanner`` (the same one ``analyze`` uses: templates, windows, rule hits, metrics, markers). Then

* a strong root-cause rule hit raises (or updates) an alert at once, from the hits alone; the fast lane
  (``l4lite.live.lane``) finds such lines in the raw bytes even before the records ahead of them are built;
* every few seconds ``pipeline.diagnose`` runs on the sliding scan (on a worker thread; spatial and temporal
  scores once enough windows exist) and the alert follows its verdict;
* hang: training progress stopped for ``hang_after`` seconds while the logs are still written.

When lines come faster than the records can be built, polls stay short (reads are paced) and routine lines
(known shapes no rule can match, see ``l4lite.live.triage``) are shed before parsing except for an evenly spread
sample; every line is still counted and every line a rule could match is still read.

Exactly-once across ``kill -9``: a stream's committed offset only moves past lines whose records were handed on
(a record still being assembled keeps the offset at its first line), and the state file saves those offsets
together with the line/record/hit totals they account for, the template miner and the alerts already sent, in
one atomic write, every few seconds and right after an alert, and only at a clean cut (``RecordFeed.clean``).
After a restart the lines after the checkpoint are read again: totals resume from the checkpoint (nothing counted
twice) and alerts are keyed by incident id and checked against the alert log (nothing announced twice).
"""

from __future__ import annotations

import concurrent.futures
import functools
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from l4lite.diagnose.incident import Incident
from l4lite.errors import L4Error
from l4lite.ingest.shape import shape_of
from l4lite.live.alerts import Alert, AlertSink, AlertTracker
from l4lite.live.follow import Follower, Stream
from l4lite.live.lane import FastLane, RootLane
from l4lite.live.metrics import TailMetrics
from l4lite.live.options import ROOT_HITS_KEPT, TailOptions, Totals, instant
from l4lite.live.reader import ReaderFactory, default_reader_factory
from l4lite.live.recordfeed import MIN_READ_BYTES, RecordFeed
from l4lite.live.refresh import ContextRefresh
from l4lite.live.tailstate import TailState
from l4lite.live.triage import KeywordGate, RuleTap, Sampler, Triage
from l4lite.live.verdict import RootHit, hang_incident, rules_incident
from l4lite.mining.miner import TemplateMiner, template_id
from l4lite.records import Accounting, Record
from l4lite.scan.job import note_context
from l4lite.scan.scanner import JobScan, Scanner


class Tailer(TailState, ContextRefresh):
    """The tail loop. ``step()`` is one poll; ``run()`` loops until stopped; ``close()`` checkpoints."""

    def __init__(
        self,
        options: TailOptions,
        *,
        sinks: Sequence[AlertSink] = (),
        reader_factory: ReaderFactory | None = None,
        warn: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        metrics: TailMetrics | None = None,  # Prometheus figures, published about once a second
    ) -> None:
        self.options = options
        self.sinks = list(sinks)
        self.metrics = metrics
        self.warn = warn or (lambda message: None)
        self.clock = clock
        self.wall = wall
        exclude = list(options.exclude)
        for p in (options.alerts_path, options.html, options.state_dir):
            if p and p != "-":
                exclude.append(p)
        self.follower = Follower(options.paths, warn=self.warn, partial_after=options.partial_after,
                                 orphan_idle=options.orphan_idle, clock=clock)
        self.follower.exclude |= {os.path.abspath(p) for p in exclude}
        self.totals = Totals()
        self.tracker = AlertTracker()
        self.miner = TemplateMiner()
        self.rules = self._load_rules(options.rules_files, options.default_rules)
        from l4lite.ingest.attribution import RankMap

        self._rank_map = RankMap()
        self._restore()
        self.reader_factory = reader_factory or default_reader_factory(
            self.follower.root, self.warn, rank_map=self._rank_map, paths=self.follower.expand(), finished=options.once)
        self.feed = RecordFeed(self.follower, self.reader_factory, self._process, options.flush_after)
        self._unclean_since: float | None = None
        gate = KeywordGate(self.rules)
        self.triage = Triage(gate)
        self._lane = None if options.once else FastLane(
            RootLane(self.rules, instant), self.follower, self._scratch_record, self.triage.routine_shapes, self._root_hit)
        if not options.once:
            self.follower.max_read = MIN_READ_BYTES * 4  # grows while polls stay short (RecordFeed.pace)
        self.sampler = Sampler()
        self._tap = RuleTap(self.rules, self.triage, self._on_hit)
        self._scanner = self._new_scanner()
        self._previous: JobScan | None = None  # the last generation, finished
        self._built_at, self._build_seconds = clock(), 0.0  # the job context's last build (``live.jobfacts``)
        self._generation_start = clock()
        self._root_hits: list[RootHit] = []
        self._new_root_hits = 0
        self._records_since_diagnose = 0
        self._uncommitted_lines = 0
        now = clock()
        self._last_checkpoint = now
        self._last_diagnose = now
        self._last_html = self._last_metrics = now
        self._last_lines = now
        self._progress_mark: tuple[int, int] | None = None
        self._last_progress: float | None = None
        self._hang_raised = False
        self._last_step: float | None = None
        self._last_busy = 0.0
        self.incident: Incident | None = None
        self._html_incident: Incident | None = None
        self._baseline_scans = self._load_baselines(options.baselines)
        from l4lite import api as pipeline

        self._pipeline = pipeline
        self.perf: dict[str, float] = {"diagnose_seconds": 0.0, "diagnose_max": 0.0, "diagnoses": 0}
        self._worker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="l4lite-tail")
        self._job: concurrent.futures.Future[Any] | None = None
        self._html_job: concurrent.futures.Future[Any] | None = None
        self._html_written: Incident | None = None
        self._problems: set[str] = set()
        self.alerts_sent: list[Alert] = []
        if any(s.committed_offset for s in self.follower.streams.values()):
            self._reread()  # resumed: the lines processed before the restart make the scan again

    # ----------------------------------------------------------------------------------------------- setup
    @staticmethod
    def _load_rules(files: Sequence[str], include_default: bool) -> Any:
        from l4lite.rules.pack import RulePack

        return RulePack.load(files, include_default=include_default)

    def _load_baselines(self, paths: Sequence[str]) -> list[JobScan]:
        if not paths:
            return []
        from l4lite import api as pipeline

        options = pipeline.AnalyzeOptions(rules_files=list(self.options.rules_files))
        return [pipeline.scan_job([p], options, rules=self.rules) for p in paths]

    def _new_scanner(self) -> Scanner:
        return Scanner(self.miner, self._tap, bucket_seconds=self.options.bucket_seconds, root=self.follower.root)

    # ----------------------------------------------------------------------------------------------- the loop
    def run(self, stop: threading.Event | None = None) -> Incident | None:
        """Poll until ``stop`` is set (or, with ``once``, until everything present is read); then close."""
        stop = stop or threading.Event()
        try:
            missing = [p for p in self.options.paths if not self.follower.expand_one(p)]
            if self.options.once and len(missing) == len(self.options.paths):
                what = "no log files in it" if all(os.path.isdir(p) for p in missing) else "no such file or directory"
                raise L4Error(f"{', '.join(missing)}: {what}")
            for p in missing:
                self.warn(f"{p}: nothing matches yet; waiting for it to appear")
            if self.options.once:
                while self.step() and not stop.is_set():
                    pass
                self.hold_whole()  # a record still being written is not committed half
                self.step(finish=True)
                self.diagnose()
            else:
                while not stop.is_set():
                    started = self.clock()
                    self.step()
                    if not self.behind:
                        stop.wait(max(0.0, self.options.poll - (self.clock() - started)))
        finally:
            self.close()
        return self.incident

    def step(self, *, finish: bool = False) -> int:
        """One poll: read, build records, scan, alert, checkpoint. Returns the number of lines read."""
        now = self.clock()
        if not self.options.once and self._last_step is not None:
            self.sampler.adjust(self._last_busy, now - self._last_step)
        self._last_step = now
        chunks = self.follower.poll(finish=finish)
        if self._lane is not None and self._lane.scan(chunks):
            self._new_root_hits += 1
        n = 0
        began = self.clock()
        self.feed.skip = self._shed if self.sampler.keep < 1.0 else None
        for chunk in chunks:
            n += self.feed.consume(chunk, now)
        if not self.options.once:
            self.feed.pace(self.clock() - began)
        self.feed.expire(now, force=finish)
        if n:
            self._last_lines = now
        self._uncommitted_lines += n
        alerted = False
        if self._new_root_hits and not self.options.once:  # --once reports the full diagnosis only
            self._new_root_hits = 0
            alerted |= self._observe(self._rules_incident())
        alerted |= self._collect()
        # Diagnose every few seconds, but never spend more than about a fifth of the time on it.
        every = max(self.options.diagnose_every, 5 * self.perf["diagnose_seconds"])
        if not self.options.once and now - self._last_diagnose >= every:
            alerted |= self.diagnose(background=True)
        alerted |= self._check_hang(now)
        if n:  # after the alerts: a new context's re-read never holds one up
            self._refresh_context(now)
        if alerted or now - self._last_checkpoint >= self.options.checkpoint_every or (
                self._uncommitted_lines >= self.options.checkpoint_lines):
            self.checkpoint()
        if self.options.html and now - self._last_html >= self.options.html_every:
            self._write_html(background=not self.options.once)
        if not self.options.once and now - self._generation_start >= self.options.generation_seconds:
            self._rotate_generation()
        if self.metrics is not None and now - self._last_metrics >= 1.0:
            self.publish_metrics()
        self._last_busy = self.clock() - now
        return n

    @property
    def behind(self) -> bool:
        """The last poll left bytes unread: poll again at once."""
        return self.follower.capped

    def _process(self, record: Record) -> None:
        self.totals.records += 1
        self._records_since_diagnose += 1
        self.triage.routine(record)  # learns the shapes that ``_shed`` may drop
        self._scanner.add(record)

    def _shed(self, text: str) -> bool:
        """While overloaded: drop a line of a known routine shape before it is even parsed, unless the sampler
        keeps it (an evenly spread fraction is kept, so template counts keep their proportions)."""
        if shape_of(text) not in self.triage.routine_shapes:
            return False
        if self.sampler.take():
            return False
        self.totals.records += 1
        self.totals.sampled_out += 1
        self._records_since_diagnose += 1
        return True

    def _on_hit(self, match: Any, record: Record) -> None:
        rule = match.rule
        self.totals.hits[rule.id] += 1
        if not instant(rule):
            return
        self._prune_hits()
        same = sum(1 for h in self._root_hits if h.rule.id == rule.id and h.record.node == record.node)
        if same >= 5 or len(self._root_hits) >= ROOT_HITS_KEPT:
            return
        self._root_hits.append(self._root_hit(match, record))
        self._new_root_hits += 1

    def _scratch_record(self, stream: Stream, line_no: int, text: str) -> Record | None:
        """One line parsed on its own (headers, host, rank), the node filled from what its file showed so far."""
        reader = self.reader_factory(stream.name)
        records = reader.feed(line_no, text) + reader.flush()
        if not records:
            return None
        record = records[0]
        if record.node is None:
            record.node = self.feed.node_hint(stream.sid)
        return record

    def _root_hit(self, match: Any, record: Record) -> RootHit:
        rule, groups = match.rule, dict(match.groups)
        context = {"node": record.node or "the node", "rank": record.rank, "gpu": record.gpu, "count": 1,
                   "source": record.source}
        return RootHit(rule, groups, record, self.rules.explain(rule, groups, context),
                       self.rules.action(rule, groups, context), seen_at=self.clock())

    def _prune_hits(self) -> None:
        """The instant verdict is about what happened lately: hits older than a generation are dropped."""
        horizon = self.clock() - self.options.generation_seconds
        if self._root_hits and self._root_hits[0].seen_at < horizon:
            self._root_hits = [h for h in self._root_hits if h.seen_at >= horizon]
        if self._lane is not None:
            self._lane.prune(horizon)

    # ----------------------------------------------------------------------------------------------- verdicts
    def _rules_incident(self) -> Incident:
        """The immediate verdict from root-cause rule hits alone (before any window statistics)."""
        self._prune_hits()
        hits = list(self._root_hits)
        seen = {(h.record.file, h.record.line, h.rule.id) for h in hits}
        if self._lane is not None:
            hits.extend(h for h in self._lane.hits if (h.record.file, h.record.line, h.rule.id) not in seen)
        return rules_incident(hits, self._template_id, self._stats())

    def _template_id(self, record: Record) -> str:
        tid = record.template_id
        if tid.startswith("#"):
            try:
                return template_id(self.miner.template(int(tid[1:])))
            except (KeyError, ValueError):
                return ""
        return tid

    def scan(self) -> JobScan:
        """The sliding scan: the previous generation (if any) and the current one, with what the job context
        decided (``scan.job.note_context``: the span, the clock skew the diagnosis reads), as ``analyze`` gives it."""
        # Tail counts lines (committed offsets) and records; blank lines are not told apart here.
        accounting = Accounting(files=len(self.follower.streams), lines_read=self.totals.lines,
                                lines_in_records=self.totals.lines, records=self.totals.records)
        rank_map, context = self.rank_map, getattr(self.reader_factory, "context", None)
        scan = self._scanner.finish(accounting, rank_map.as_dict() if hasattr(rank_map, "as_dict") else None)
        if self._previous is not None:
            scan = JobScan(root=scan.root, bucket_seconds=scan.bucket_seconds).merge(self._previous).merge(scan)
            scan.accounting = accounting
        if context is not None:
            note_context(scan, context)
        return scan

    def diagnose(self, *, background: bool = False) -> bool:
        """Run the analyze detectors on the sliding scan and alert on the verdict (True if an alert went out).

        With ``background`` the scan is taken here but the detectors run on the worker thread, so that a poll
        is never held up by them; the verdict is picked up by a later ``step``.
        """
        if self._job is not None:
            if background:
                return False  # one diagnosis at a time (tried again next poll)
            self._collect(wait=True)
        self._last_diagnose = self.clock()
        if not self._records_since_diagnose and self.incident is not None:
            return False
        self._records_since_diagnose = 0
        scan = self.scan()
        work = functools.partial(self._diagnose_scan, scan, self._stats())
        if background:
            self._job = self._worker.submit(work)
            return False
        return self._take(work())

    def _diagnose_scan(self, scan: JobScan, stats: dict[str, Any]) -> tuple[Incident | None, float, str | None]:
        started = time.perf_counter()
        pipeline = self._pipeline
        options = pipeline.AnalyzeOptions(rules_files=list(self.options.rules_files),
                                          bucket_seconds=self.options.bucket_seconds)
        try:
            incident = pipeline.diagnose(scan, options, self._baseline_scans, rules=self.rules)
        except Exception as exc:  # a detector failing on odd data must not end the monitoring
            return None, time.perf_counter() - started, f"diagnosis failed: {exc.__class__.__name__}: {exc}"
        incident.stats.update(stats)
        return incident, time.perf_counter() - started, None

    def _collect(self, wait: bool = False) -> bool:
        """Pick up a finished background diagnosis."""
        job = self._job
        if job is None or not (wait or job.done()):
            return False
        self._job = None
        return self._take(job.result())

    def _take(self, result: tuple[Incident | None, float, str | None]) -> bool:
        incident, took, problem = result
        self.perf["diagnose_seconds"] = round(took, 4)
        self.perf["diagnose_max"] = round(max(self.perf["diagnose_max"], took), 4)
        self.perf["diagnoses"] += 1
        if incident is None:
            if problem and problem not in self._problems:
                self._problems.add(problem)
                self.warn(problem)
            return False
        self.incident = incident
        return self._observe(incident)

    def _observe(self, incident: Incident) -> bool:
        if incident.is_incident and (self.incident is None or not self.incident.is_incident):
            self._html_incident = incident
        alert = self.tracker.observe(incident, now=self.wall())
        if alert is None:
            return False
        self._html_incident = incident
        self.totals.alerts += 1
        self.alerts_sent.append(alert)
        if self.metrics is not None:
            self.metrics.alert(incident.category, incident.suspects[0].node if incident.suspects else None, alert.kind)
        del self.alerts_sent[:-100]
        for sink in self.sinks:
            try:
                sink.emit(alert)
            except OSError as exc:
                self.warn(f"alert output: {exc}")
        return True

    def _check_hang(self, now: float) -> bool:
        """No new training iteration for ``hang_after`` seconds while lines keep arriving."""
        progress = self._scanner.node_progress()
        mark = (sum((p.last_iteration or 0) for p in progress.values()), sum(p.points for p in progress.values()))
        if mark[1] == 0:
            return False
        if mark != self._progress_mark:
            self._progress_mark, self._last_progress = mark, now
            self._hang_raised = False
            return False
        if self._hang_raised or self._last_progress is None:
            return False
        stalled = now - self._last_progress
        if stalled < self.options.hang_after or now - self._last_lines >= self.options.hang_after:
            return False
        self._hang_raised = True
        return self._observe(hang_incident(progress, stalled, self._last_progress_lines(), self._stats()))

    def publish_metrics(self) -> None:
        """Hand the metrics their figures (on the loop's thread, so a scrape never sees them change)."""
        self._last_metrics = self.clock()
        progress = self._scanner.node_progress()
        skipped = Counter(getattr(self.reader_factory, "skipped", {})) + Counter(sampled_out=self.totals.sampled_out)
        if self.metrics is not None:
            self.metrics.update(
                now=self.wall(), lines_read=self.follower.lines_committed, records=self.totals.records,
                files=len(self.follower.streams), skipped=skipped, rule_hits=self.totals.hits, incident=self.incident,
                progress={n: (p.last_iteration, p.points) for n, p in progress.items()},
                diagnose_seconds=float(self.perf["diagnose_seconds"]), ranks=self._scanner.rank_progress())

    def _last_progress_lines(self) -> dict[str, str]:
        """Per node, the text of its last progress line (kept by the scanner with the metric points)."""
        return self._scanner.last_progress_texts()

    # ----------------------------------------------------------------------------------------------- state
    def _stats(self) -> dict[str, Any]:
        return {"files": len(self.follower.streams), "lines_read": self.follower.lines_committed,
                "records": self.totals.records, "alerts": self.totals.alerts}

    def _write_html(self, *, background: bool = False) -> None:
        self._last_html = self.clock()
        incident = self.incident if self.incident is not None and self.incident.is_incident else (
            self._html_incident or self.incident)
        if incident is None or self.options.html is None or incident is self._html_written:
            return
        if background and self._html_job is not None and not self._html_job.done():
            return
        self._html_written = incident
        if background:
            self._html_job = self._worker.submit(self._render, incident)
        else:
            self._render(incident)

    def _render(self, incident: Incident) -> None:
        try:
            from l4lite.report.html import render_html
        except ImportError:
            return
        try:
            render_html(incident, self.options.html)
        except (OSError, ValueError) as exc:
            self.warn(f"{self.options.html}: report not written: {exc}")

    def _rotate_generation(self) -> None:
        self._previous = self._scanner.finish()
        self._scanner = self._new_scanner()
        self._generation_start = self.clock()

    def close(self) -> None:
        """Flush pending records, checkpoint, write the final report, finish deliveries."""
        if self._whole is None:
            self.hold_whole()
        self.feed.expire(self.clock(), force=True)
        self._collect(wait=True)
        if self.totals.records and not self.options.once:
            self._refresh_context(self.clock(), final=True)  # the final verdict reads with the final context
        if self._new_root_hits and not self.options.once:
            self._new_root_hits = 0
            self._observe(self._rules_incident())
        if self.totals.records and (self._records_since_diagnose or self.incident is None):
            self.diagnose()  # the final verdict on everything read
        self.checkpoint()
        if self.options.html:
            if self._html_job is not None:
                self._html_job.result()
            self._write_html()
        self._worker.shutdown(wait=True)
        if self.metrics is not None:
            self.publish_metrics()
        for sink in self.sinks:
            sink.close()
        self.follower.close()
