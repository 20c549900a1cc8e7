"""The scan: one streaming pass over a job's records that keeps only what the detectors need.

``analyze`` never holds every record in memory. Instead each record, as it streams past, updates bounded
aggregates: per-template statistics, per (node, time bucket, template) counts, rule hits (capped), trainer
metric points, phase markers and a few exemplar records per (template, node). A ``JobScan`` is plain data and
scans of shards merge with ``JobScan.merge`` (templates are keyed by stable template ids, so shards agree).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from l4lite.records import Accounting, Record


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


@dataclass
class Hit:
    """A record that matched a rule of the rule pack; ``groups`` are the rule pattern's named groups."""

    rule_id: str
    record: Record
    groups: dict[str, str] = field(default_factory=dict)


@dataclass
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
