"""The one interface every detector has, in the spirit of scikit-learn estimators.

A detector is configured in ``__init__``, may ``fit`` on healthy data (a baseline job's scan, or the job's own
early windows), and ``detect`` returns findings. Detectors hold no global state and never import each other.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from l4lite.records import Record

if TYPE_CHECKING:
    from l4lite.scan.scanner import JobScan


@dataclass
class Finding:
    """One piece of evidence for (or against) a verdict.

    ``role`` is root, cascade, symptom, confirmation or anomaly; ``score`` is in [0, 1]. ``records`` are the log
    events that prove it (a bounded number); ``count`` is how many matched in all.
    """

    detector: str
    category: str
    role: str
    score: float
    explain: str
    node: str | None = None
    rank: int | None = None
    gpu: int | None = None
    time: float | None = None
    rule: str | None = None
    severity: str = "error"
    action: str | None = None
    records: list[Record] = field(default_factory=list)
    count: int = 1
    data: dict[str, Any] = field(default_factory=dict)


class Detector(ABC):
    """Base class: ``fit`` is optional, ``detect`` is required."""

    name: str = "detector"

    def fit(self, baseline: JobScan) -> Detector:
        """Learn what healthy looks like. The default learns nothing."""
        return self

    @abstractmethod
    def detect(self, scan: JobScan) -> list[Finding]:
        """Return the findings for one scanned job."""
