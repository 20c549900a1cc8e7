"""Prometheus metrics of ``l4lite tail``: ``/metrics`` in the text exposition format (version 0.0.4).

The tail loop publishes a ``MetricsSnapshot`` (plain numbers, taken on the loop's own thread) after its polls;
the HTTP server only formats the latest one, so a scrape never reads the loop's state while it changes and a
slow scraper never holds up a poll. No client library is needed: the format is a few lines of text.

Names (all prefixed ``l4lite_tail_``; counters end in ``_total``):

* ``lines_read_total``, ``records_total``, ``lines_skipped_total{reason}``, ``rule_hits_total{rule}``
* ``alerts_total{category,node,kind}``: alert messages sent (``kind`` new or update; ``node`` the top suspect,
  empty for a job-wide fault)
* ``incident`` (1 while the current verdict is an incident), ``node_anomaly_score{node}`` (the latest
  diagnosis' suspect scores, 0 for the other nodes seen)
* ``last_iteration{node}``, ``seconds_since_progress{node}``: training progress as the scanner keeps it (per
  node: the node whose ranks print the iteration lines), and how long ago tail last saw it move
* ``rank_last_iteration{node,rank}``, ``rank_seconds_since_progress{node,rank}``: the same per rank, for the
  ranks that print progress lines (``rank`` empty where a node's lines name none). A rank stuck while its peers
  still step shows here first. Bounded: at most ``max_ranks`` ranks are shown, the stalest first (ties: the one
  behind), so a 1,000-rank job gives at most 2 x ``max_ranks`` series; ``progress_ranks`` counts every rank seen
* ``files``, ``diagnose_seconds``, ``up``

The server binds to 127.0.0.1 unless told otherwise: the metrics name nodes and rules of the job.
"""

from __future__ import annotations

import http.server
import math
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from l4lite.diagnose.incident import Incident
from l4lite.scan.scanner import RankProgress

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
PREFIX = "l4lite_tail_"
MAX_RANKS = 256  # per-rank series shown by default: 2 x 256 series, whatever the size of the job


@dataclass
class MetricsSnapshot:
    """What one scrape shows; filled by the tail loop (``Tailer.metrics_snapshot``)."""

    lines_read: int = 0
    records: int = 0
    files: int = 0
    skipped: Mapping[str, int] = field(default_factory=dict)
    rule_hits: Mapping[str, int] = field(default_factory=dict)
    alerts: Mapping[tuple[str, str, str], int] = field(default_factory=dict)  # (category, node, kind) -> count
    incident: bool = False
    node_scores: Mapping[str, float] = field(default_factory=dict)
    last_iteration: Mapping[str, int] = field(default_factory=dict)
    since_progress: Mapping[str, float] = field(default_factory=dict)
    rank_last_iteration: Mapping[tuple[str, str], int] = field(default_factory=dict)  # (node, rank) -> iteration
    rank_since_progress: Mapping[tuple[str, str], float] = field(default_factory=dict)
    progress_ranks: int = 0
    diagnose_seconds: float = 0.0


def _label(value: str) -> str:
    """A label value as the exposition format wants it: backslash, double quote and line feed escaped."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def render(snapshot: MetricsSnapshot) -> str:
    """The snapshot in the Prometheus text format, families in a fixed order, samples sorted by label."""
    out: list[str] = []

    def family(name: str, kind: str, text: str, samples: list[tuple[dict[str, str], float]]) -> None:
        full = PREFIX + name
        out.append(f"# HELP {full} {text}")
        out.append(f"# TYPE {full} {kind}")
        sample_name = full
        for labels, value in samples:
            inner = ",".join(f'{k}="{_label(v)}"' for k, v in labels.items())
            out.append(f"{sample_name}{{{inner}}} {_number(value)}" if inner else f"{sample_name} {_number(value)}")

    s = snapshot
    family("up", "gauge", "1 while l4lite tail runs.", [({}, 1)])
    family("lines_read_total", "counter", "Lines read from the followed files.", [({}, s.lines_read)])
    family("records_total", "counter", "Log records built from the lines read.", [({}, s.records)])
    family("lines_skipped_total", "counter", "Lines read but not parsed into records, by reason.",
           [({"reason": r}, n) for r, n in sorted(s.skipped.items())])
    family("files", "gauge", "Files followed.", [({}, s.files)])
    family("rule_hits_total", "counter", "Lines matched by each rule of the signature pack.",
           [({"rule": r}, n) for r, n in sorted(s.rule_hits.items())])
    family("alerts_total", "counter", "Alert messages sent, by category, top suspect node and kind (new, update).",
           [({"category": c, "node": n, "kind": k}, v) for (c, n, k), v in sorted(s.alerts.items())])
    family("incident", "gauge", "1 while the current verdict is an incident.", [({}, s.incident)])
    family("node_anomaly_score", "gauge", "Suspicion score of each node in the latest diagnosis (0 to 1).",
           [({"node": n}, v) for n, v in sorted(s.node_scores.items())])
    family("last_iteration", "gauge", "Last training iteration seen, per node.",
           [({"node": n}, v) for n, v in sorted(s.last_iteration.items())])
    family("seconds_since_progress", "gauge", "Seconds since tail last saw training progress, per node.",
           [({"node": n}, round(v, 3)) for n, v in sorted(s.since_progress.items())])
    family("rank_last_iteration", "gauge", "Last training iteration seen, per rank (the stalest ranks, capped).",
           [({"node": n, "rank": r}, v) for (n, r), v in sorted(s.rank_last_iteration.items())])
    family("rank_seconds_since_progress", "gauge",
           "Seconds since tail last saw a rank's training progress move (the stalest ranks, capped).",
           [({"node": n, "rank": r}, round(v, 3)) for (n, r), v in sorted(s.rank_since_progress.items())])
    family("progress_ranks", "gauge", "Ranks (or nodes without rank) that printed training progress lines.",
           [({}, s.progress_ranks)])
    family("diagnose_seconds", "gauge", "Duration of the latest diagnosis.", [({}, s.diagnose_seconds)])
    return "\n".join(out) + "\n"


class MetricsServer:
    """Serves the latest published snapshot at ``/metrics`` from a daemon thread."""

    def __init__(self, port: int, host: str = "127.0.0.1") -> None:
        self._text = render(MetricsSnapshot())
        self._lock = threading.Lock()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
                if self.path.split("?", 1)[0] != "/metrics":
                    self.send_error(404, "only /metrics is served")
                    return
                body = owner.text().encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's signature
                pass  # scrapes are not news

        self._server = http.server.ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="l4lite-metrics", daemon=True)
        self._thread.start()

    @property
    def address(self) -> tuple[str, int]:
        """Where it listens (the port chosen by the system when 0 was asked for)."""
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def publish(self, snapshot: MetricsSnapshot) -> None:
        text = render(snapshot)
        with self._lock:
            self._text = text

    def text(self) -> str:
        with self._lock:
            return self._text

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5.0)


class TailMetrics:
    """The tail loop's side of the metrics: counts alerts as they are sent, notes when each node's progress last
    and each rank's progress last moved (by the wall clock: a log's own clock may be off or replayed), and
    publishes snapshots. ``max_ranks`` caps the per-rank series (0: none)."""

    def __init__(self, server: MetricsServer | None = None, max_ranks: int = MAX_RANKS) -> None:
        self.server = server
        self.max_ranks = max(0, max_ranks)
        self.alerts: Counter[tuple[str, str, str]] = Counter()
        self._moved: dict[str, tuple[tuple[int | None, int], float]] = {}
        self._rank_moved: dict[tuple[str, int | None], tuple[RankProgress, float]] = {}
        self.snapshot = MetricsSnapshot()

    def alert(self, category: str | None, node: str | None, kind: str) -> None:
        self.alerts[(category or "unknown", node or "", kind)] += 1

    def update(self, *, now: float, lines_read: int, records: int, files: int, skipped: Mapping[str, int],
               rule_hits: Mapping[str, int], progress: Mapping[str, tuple[int | None, int]],
               incident: Incident | None, diagnose_seconds: float,
               ranks: Iterable[RankProgress] = ()) -> MetricsSnapshot:
        """A new snapshot from the loop's figures (``progress``: node -> (last iteration, points); ``ranks``: the
        scan's per-rank progress)."""
        for node, mark in progress.items():
            seen = self._moved.get(node)
            if seen is None or seen[0] != mark:
                self._moved[node] = (mark, now)
        for rank in ranks:
            key = (rank.node, rank.rank)
            was = self._rank_moved.get(key)
            if was is None and rank.rank is not None and rank.node != f"rank:{rank.rank}":
                ghost = self._rank_moved.pop((f"rank:{rank.rank}", rank.rank), None)  # its node is known now
                if ghost is not None and ghost[0][2:] == rank[2:]:
                    was = (rank, ghost[1])
            if was is None or was[0] != rank:
                was = (rank, now)
            self._rank_moved[key] = was
        shown = self._stalest_ranks()
        scores: dict[str, float] = {}
        if incident is not None:
            nodes = incident.extra.get("nodes") if isinstance(incident.extra, dict) else None
            scores = {str(n): 0.0 for n in nodes or [] if isinstance(n, str)}
            scores.update({s.node: float(s.score or 0.0) for s in incident.suspects})
        self.snapshot = MetricsSnapshot(
            lines_read=lines_read, records=records, files=files, skipped=dict(skipped), rule_hits=dict(rule_hits),
            alerts=dict(self.alerts), incident=bool(incident is not None and incident.is_incident),
            node_scores=scores,
            last_iteration={n: it for n, ((it, _), _) in self._moved.items() if it is not None},
            since_progress={n: max(0.0, now - t) for n, (_, t) in self._moved.items()},
            rank_last_iteration={_rank_key(p): p.last_iteration for p, _ in shown if p.last_iteration is not None},
            rank_since_progress={_rank_key(p): max(0.0, now - t) for p, t in shown},
            progress_ranks=len(self._rank_moved), diagnose_seconds=diagnose_seconds)
        if self.server is not None:
            self.server.publish(self.snapshot)
        return self.snapshot

    def _stalest_ranks(self) -> list[tuple[RankProgress, float]]:
        """The ``max_ranks`` ranks whose progress moved longest ago (ties: the one behind in iterations, then by
        node and rank), the ones an on-call engineer looks for; the set is stable while the job steps in
        lockstep."""
        entries = sorted(self._rank_moved.values(), key=lambda e: (
            e[1], -1 if e[0].last_iteration is None else e[0].last_iteration, e[0].node,
            -1 if e[0].rank is None else e[0].rank))
        return entries[:self.max_ranks]

    def close(self) -> None:
        if self.server is not None:
            self.server.close()


def _rank_key(progress: RankProgress) -> tuple[str, str]:
    return progress.node, "" if progress.rank is None else str(progress.rank)
