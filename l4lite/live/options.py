"""What ``l4lite tail`` was asked to do (``TailOptions``) and the counts it commits with its offsets (``Totals``).

Kept apart from the tail loop (``live.tail``) so that the loop's module holds the loop.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

STATE_SCHEMA = "l4lite.live.tail-state/1"
STATE_FILE = "state.json"
ROOT_HITS_KEPT = 50  # root-cause hits kept for the immediate (rules-only) verdict
UNCLEAN_MAX_SECONDS = 5.0  # longest wait for a clean checkpoint before open records are completed
INSTANT_MIN_PRIORITY = 40  # root rules at least this strong alert at once; weaker ones wait for a diagnosis


def instant(rule: Any) -> bool:
    """A root-cause signature strong enough to alert on by itself (not a catch-all fallback)."""
    return rule.role == "root" and not rule.fallback and rule.priority >= INSTANT_MIN_PRIORITY


@dataclass
class TailOptions:
    """What ``l4lite tail`` was asked to do. Times in seconds."""

    paths: list[str]
    baselines: list[str] = field(default_factory=list)
    rules_files: list[str] = field(default_factory=list)
    default_rules: bool = True  # the shipped rule pack (besides rules_files)
    state_dir: str | None = None
    alerts_path: str | None = None  # a file whose alerts were already written (de-duplication after a crash)
    html: str | None = None
    poll: float = 0.2
    hang_after: float = 300.0
    once: bool = False
    bucket_seconds: float = 5.0
    diagnose_every: float = 3.0
    checkpoint_every: float = 2.0
    checkpoint_lines: int = 1_000_000
    html_every: float = 5.0
    flush_after: float = 0.3  # a record whose stream went quiet this long is complete
    generation_seconds: float = 900.0  # the sliding scan covers the last one to two generations
    partial_after: float = 5.0
    orphan_idle: float = 5.0
    exclude: list[str] = field(default_factory=list)


@dataclass
class Totals:
    """Counts that are committed together with the offsets (so a restart never counts a line twice)."""

    lines: int = 0
    records: int = 0
    hits: Counter[str] = field(default_factory=Counter)
    alerts: int = 0
    sampled_out: int = 0  # routine records left out of the window statistics while the loop was overloaded

    def to_dict(self) -> dict[str, Any]:
        return {"lines": self.lines, "records": self.records, "hits": dict(sorted(self.hits.items())),
                "alerts": self.alerts, "sampled_out": self.sampled_out}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Totals:
        hits = Counter({str(k): int(v) for k, v in d.get("hits", {}).items()})
        return cls(int(d.get("lines", 0)), int(d.get("records", 0)), hits, int(d.get("alerts", 0)),
                   int(d.get("sampled_out", 0)))
