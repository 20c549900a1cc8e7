"""What ``l4lite tail`` keeps across a restart: committed offsets, the totals they account for, the template miner,
the alerts already sent and the rank ties, saved in one atomic write and read back on start.

A mixin of ``tail.Tailer`` (the state it saves is the tailer's): the exactly-once contract of the tail module's
docstring rests on what is saved together here, so it reads in one place apart from the poll loop.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from l4lite.diagnose.incident import write_atomic
from l4lite.errors import L4Error
from l4lite.live.alerts import read_alert_log
from l4lite.live.options import STATE_FILE, STATE_SCHEMA, UNCLEAN_MAX_SECONDS, Totals
from l4lite.live.verdict import iso
from l4lite.mining.miner import TemplateMiner


class TailState:
    """Checkpoint and restore of the tail's state (a mixin of ``Tailer``)."""

    _whole: dict[str, Any] | None = None  # what ``hold_whole`` kept for the next checkpoint

    @property
    def state_path(self) -> Path | None:
        return Path(self.options.state_dir) / STATE_FILE if self.options.state_dir else None

    def _restore(self) -> None:
        """Resume from the state directory (offsets, totals, template miner, alerts) and the alert log."""
        path = self.state_path
        if path is not None and path.exists():
            try:
                state = json.loads(path.read_text(encoding="utf-8"))
                if state.get("schema") != STATE_SCHEMA:
                    raise ValueError(f"schema {state.get('schema')!r}")
                self.follower.load_state(state.get("follower", {}))
                self.totals = Totals.from_dict(state.get("totals", {}))
                if state.get("templates"):
                    self.miner = TemplateMiner.from_state(state["templates"])
                self.tracker.load_state(state.get("alerts", []))
                if state.get("rank_map"):
                    self._rank_map.merge(type(self._rank_map).from_dict(state["rank_map"]))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise L4Error(f"{path}: unreadable tail state ({exc}); remove it to start over") from exc
        if self.options.alerts_path and self.options.alerts_path != "-":
            for row in read_alert_log(self.options.alerts_path):
                self.tracker.absorb(row)

    def hold_whole(self) -> None:
        """Keep the state a restart resumes from as it stands before the records still open are completed by force
        (the end of a ``--once`` run, a stop): committed up to the last complete record, so that a traceback still
        being written is read whole by the next run, not as the half seen here and a new record after it. The
        records completed by force still make this run's verdict; only a clean cut is kept (``RecordFeed.clean``)."""
        self._whole = self._resumable() if self.state_path is not None and self.feed.clean() else None

    def _resumable(self) -> dict[str, Any]:
        """What a restart resumes from: committed offsets, the totals they account for, the miner, the rank ties."""
        totals = self.totals.to_dict()
        totals["lines"] = self.follower.lines_committed
        return {"follower": self.follower.to_state(), "totals": totals,
                "rank_map": self.rank_map.to_dict() if hasattr(self.rank_map, "to_dict") else None,
                "templates": self.miner.to_state()}

    def checkpoint(self) -> bool:
        """Save committed offsets, the totals they account for, the miner and the alerts, in one atomic write.

        Only at a clean cut (see ``_clean``); after a few seconds without one, open records are completed to
        make one; after ``hold_whole``, what it kept is saved with the alerts sent since. Returns whether the state
        was written.
        """
        if not self.feed.clean():
            now = self.clock()
            if self._unclean_since is None:
                self._unclean_since = now
            if now - self._unclean_since < UNCLEAN_MAX_SECONDS:
                return False
            self.feed.expire(now, force=True)
        self._unclean_since = None
        self.totals.lines = self.follower.lines_committed
        self._last_checkpoint = self.clock()
        self._uncommitted_lines = 0
        path = self.state_path
        if path is None:
            return False
        state = {
            "schema": STATE_SCHEMA,
            "saved_at": iso(self.wall()),
            "paths": self.options.paths,
            **(self._whole or self._resumable()),
            "perf": {**self.perf, "sample_keep": round(self.sampler.keep, 4), "full_looks": self.triage.full_looks},
            "alerts": self.tracker.to_state(),
        }
        state["totals"] = {**state["totals"], "alerts": self.totals.alerts}  # those sent after ``hold_whole`` too
        write_atomic(path, json.dumps(state, separators=(",", ":")))
        return True

    @property
    def rank_map(self) -> Any:
        """The rank -> node map the readers share (a new one after the job context changed)."""
        return getattr(self.reader_factory, "rank_map", self._rank_map)
