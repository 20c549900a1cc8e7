"""The tail's job context built again as the job grows (``live.jobfacts``), and the scan made again from the lines
processed so far when the new context reads them differently.

A mixin of ``tail.Tailer``: rebuilding is rare and costly, and bounded (at most a tenth of the time, a byte cap on
what is read again), while the poll loop is cheap and frequent; the two read better apart.
"""

from __future__ import annotations

import time

from l4lite.live.jobfacts import REREAD_MAX_BYTES, reread, reread_files
from l4lite.scan.scanner import Scanner


class ContextRefresh:
    """The job context rebuilt and the lines read again with it (a mixin of ``Tailer``)."""

    def _refresh_context(self, now: float, *, final: bool = False) -> bool:
        """Build the job context again when files appeared or grew enough (``live.jobfacts``; at most a tenth of
        the time), or for the ``final`` verdict; when it reads lines differently, read the lines processed so far
        again with it and diagnose soon. True if it changed."""
        readers = self.reader_factory
        if not hasattr(readers, "refresh") or not final and (now - self._built_at < 10 * self._build_seconds or
                not readers.due({s.name: s.committed_offset for s in self.follower.streams.values()})):
            return False
        began = time.perf_counter()
        self._built_at = now
        self.feed.expire(now, force=True)  # open records completed: every line read is processed, and committed
        changed = readers.refresh(self.follower.expand())
        if changed:
            self.feed.slots.clear()  # the lines to come are read with the new context
            self._reread()
        self._build_seconds = time.perf_counter() - began
        return changed

    def _reread(self) -> None:
        """The scan made again from the lines processed so far, read by the batch stages with the job context as
        it now stands; hits are not counted again, nor alerted on at once (the next diagnosis says)."""
        context = getattr(self.reader_factory, "context", None)
        files = reread_files(self.follower.streams.values()) if context is not None else []
        if not files:
            return
        if sum(f.size for f in files) > REREAD_MAX_BYTES:
            if "reread" not in self._problems:
                self._problems.add("reread")
                self.warn("the job's context changed; too many lines to read again: it serves the new lines only")
            return
        scanner = Scanner(self.miner, self.rules, bucket_seconds=self.options.bucket_seconds, root=self.follower.root)
        reread(scanner, files, context, getattr(self.reader_factory, "node_from", None))
        scanner.rules = self._tap
        self._scanner, self._previous = scanner, None
        self._generation_start = self.clock()
        self._records_since_diagnose += 1
        self._last_diagnose = -float("inf")
