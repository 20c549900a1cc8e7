"""What a user can choose about an analysis, in two parts kept apart on purpose.

``AnalyzeOptions`` changes the verdict (windows, baselines, rules, node naming, the history store); the same
options give the same incident wherever the analysis runs. ``ExecutionOptions`` only changes how the work is
spread and reported (processes, a Dask scheduler, a progress callback); it never changes the verdict, which the
engine tests check.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

ProgressFn = Callable[[int, int, int], None]  # (bytes done, bytes total, records so far)


@dataclass
class AnalyzeOptions:
    """Detection options; the CLI flags of ``analyze`` map onto these fields."""

    window_seconds: float | None = None  # None: windows.DEFAULT_WINDOW, bounded by the job's length
    baselines: list[str] = field(default_factory=list)  # healthy job paths for cross-job filtering
    rules_files: list[str] = field(default_factory=list)
    node_from: str | None = None  # regex with a group naming the node in a file's relative path
    store: str | None = None  # history store path; None means no store
    tag: str | None = None  # history key override
    bucket_seconds: float = 5.0
    context_lines: int = 3
    max_context_entries: int = 40
    heatmap: bool = True  # the report's node x window heatmap: a forest of its own; scoring a verdict needs none


@dataclass
class ExecutionOptions:
    """Where the scan runs and how it reports progress: ``jobs`` processes, or a Dask ``scheduler``
    (``local:N`` or ``tcp://HOST:PORT``; it wins over ``jobs``)."""

    jobs: int = 1
    scheduler: str | None = None
    progress: ProgressFn | None = None

    @property
    def parallel(self) -> bool:
        return self.jobs > 1 or bool(self.scheduler)
