"""L4's log filtering: keep the templates that are new to this job, local to few nodes and new near the failure.

L4 (Jiang et al., FSE 2025) finds failure-indicating lines without signatures by three filters over templates:

- cross-job: templates that healthy jobs of the same setup also print are dropped (``fit`` on baseline scans,
  or ``baseline_rates`` from the history store);
- spatial: a fault on one node makes that node print what its peers do not, so templates seen on few nodes stay;
- temporal: templates that first appear near the failure (the end of training progress, else the end of the
  logs) stay; those present since the start of the job are routine, and so are those printed before training
  began when the failure came during training (in a job shorter than the horizon, start-up is near the end too).

What survives is reported per (template, node) as "anomaly" findings with the template's first records. The
localiser uses them as evidence and, when no signature matched, as the lines to show.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from l4lite.detect.base import Detector, Finding
from l4lite.detect.windows import BAD_WORDS as _BAD_WORDS
from l4lite.ingest.timestamps import TimestampParser
from l4lite.rules.components import is_listing
from l4lite.scan.scanner import JobScan, TemplateStat

_LEVEL_WEIGHT = {"error": 1.0, "warning": 0.6, "info": 0.25, "debug": 0.1}


@dataclass
class Candidate:
    """A template that passed the filters, on one node."""

    stat: TemplateStat
    node: str
    count: int
    score: float


class FilterDetector(Detector):
    """Cross-job, spatial and temporal filtering of templates (L4)."""

    name = "filters"

    def __init__(self, *, baseline_rates: dict[str, float] | None = None, spatial_fraction: float = 0.25,
                 horizon_fraction: float = 0.1, min_horizon: float = 120.0, max_findings: int = 30,
                 rate_factor: float = 20.0, min_weight: float = 0.5) -> None:
        self.baseline: dict[str, float] = dict(baseline_rates or {})
        self.spatial_fraction = spatial_fraction
        self.horizon_fraction = horizon_fraction
        self.min_horizon = min_horizon
        self.max_findings = max_findings
        self.rate_factor = rate_factor
        self.min_weight = min_weight

    def fit(self, baseline: JobScan) -> FilterDetector:
        """Remember the templates (and their rate per record) of a healthy job; may be called for several jobs."""
        total = max(1, sum(s.count for s in baseline.templates.values()))
        for tid, stat in baseline.templates.items():
            self.baseline[tid] = max(self.baseline.get(tid, 0.0), stat.count / total)
        return self

    def reference_time(self, scan: JobScan) -> float | None:
        """Where the failure is assumed to be: the last training progress if logs went on after it, else the end."""
        stops = [p.stop_time for p in scan.progress.values() if p.stop_time is not None]
        if stops and scan.end_time is not None and scan.end_time > max(stops):
            return max(stops)
        return scan.end_time

    def candidates(self, scan: JobScan) -> list[Candidate]:
        total = max(1, sum(s.count for s in scan.templates.values()))
        n_nodes = len(scan.node_last)
        spatial_limit = max(1, math.floor(self.spatial_fraction * n_nodes)) if n_nodes >= 4 else n_nodes
        ref = self.reference_time(scan)
        horizon = None
        if ref is not None and scan.start_time is not None:
            horizon = max(self.min_horizon, self.horizon_fraction * (ref - scan.start_time))
        began = min((p.first_time for p in scan.progress.values() if p.first_time is not None), default=None)
        trained = began is not None and ref is not None and ref > began
        out: list[Candidate] = []
        for tid, stat in scan.templates.items():
            base = self.baseline.get(tid)
            if base is not None and stat.count / total < self.rate_factor * base:
                continue  # cross-job: healthy jobs print it too (at a similar rate)
            if len(stat.nodes) > spatial_limit:
                continue  # spatial: printed across the job
            if ref is not None and horizon is not None and (
                    stat.first_time is None or stat.first_time < ref - horizon):
                continue  # temporal: present long before the failure (or never dated)
            if trained and stat.first_time is not None and stat.first_time < began:
                continue  # temporal: start-up, printed before the training that then failed
            weight = self._weight(stat)
            if weight < self.min_weight:
                continue  # routine informational lines are not failure-indicating
            if _says_nothing(scan, tid, stat) or is_listing(stat.template):
                continue  # a logger's header with an empty message, a banner's frame, a setting: nothing happened
            for node, count in stat.nodes.items():
                out.append(Candidate(stat, node, count, weight))
        out.sort(key=lambda c: (-c.score, c.stat.first_time if c.stat.first_time is not None else math.inf))
        return out

    @staticmethod
    def _weight(stat: TemplateStat) -> float:
        levels = stat.levels
        level = max(levels, key=lambda k: _LEVEL_WEIGHT.get(k, 0.0)) if levels else None
        w = _LEVEL_WEIGHT.get(level, 0.25) if level else 0.25
        if _BAD_WORDS.search(stat.template):
            w = max(w, 0.7) + 0.2
        if "trainer" in stat.sources and not _BAD_WORDS.search(stat.template) and level not in ("error", "warning"):
            w *= 0.5
        return min(1.0, w)

    def detect(self, scan: JobScan) -> list[Finding]:
        findings: list[Finding] = []
        for c in self.candidates(scan)[: self.max_findings]:
            records = list(scan.exemplars.get((c.stat.template_id, c.node), []))
            first = records[0] if records else None
            n_nodes = len(c.stat.nodes)
            explain = (f"template new to this job, seen on {n_nodes} node{'s' if n_nodes != 1 else ''} "
                       f"and first near the failure: {c.stat.template[:160]}")
            findings.append(Finding(self.name, "unknown", "anomaly", round(c.score, 3), explain, node=c.node,
                                    rank=first.rank if first else None,
                                    time=first.time if first and first.time is not None else c.stat.first_time,
                                    records=records,
                                    count=c.count, data={"template_id": c.stat.template_id,
                                                         "template": c.stat.template, "nodes": sorted(c.stat.nodes)}))
        return findings


def _says_nothing(scan: JobScan, tid: str, stat: TemplateStat) -> bool:
    """Whether the template's lines say nothing: a timestamp header with an empty message, or rules of ``*`` and
    ``=`` (a launcher banner's frame), which no failure is written in."""
    for node in stat.nodes:
        for r in scan.exemplars.get((tid, node), ()):
            msg = r.message.strip()
            end = TimestampParser().parse(msg)[1]
            return not any(ch.isalnum() for ch in msg[end:])
    return False
