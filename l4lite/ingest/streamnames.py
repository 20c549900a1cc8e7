"""Which host and GPU each stream of a file is: what the lines say (a syslog host, NCCL's header, a prefix), kept
per stream and per file, rank ties learnt on the way, and the node and GPU of a line that names none filled in.

A mixin of the file reader (``reader._FileReader``), apart from its line loop so that how a line's node is
decided (the answer a wrong reading hurts most) reads in one place; the state it fills is the reader's.
"""

from __future__ import annotations

import re

from l4lite.ingest import lineclass as lc
from l4lite.ingest.attribution import GLOBAL_RANKS, GLOBAL_WEIGHT, NCCL_RANK, SYSLOG_HOST, normalize_host
from l4lite.ingest.relay import relayed

AMBIGUOUS = "\x00"  # a stream that showed two different hosts (or GPUs)
UPTIME_BRACKET = re.compile(r"\[ *(\d+\.\d+)\] *")


class StreamNames:
    """The host and GPU of each stream and of the file, read from its lines (a mixin of the file reader)."""

    def _host(self, raw: str) -> str:
        h = self.hosts.get(raw)
        if h is None:
            h = self.hosts[raw] = self.ctx.addresses.get(h := normalize_host(raw), h)  # an address's node, if known
        return h

    def _syslog_host(self, s: str, p: int, t: float | None, host: str | None
                     ) -> tuple[int, str | None, str | None, tuple[int, int] | None, tuple[int, int] | None]:
        """``host program[pid]: `` after a syslog/journald timestamp; a kernel line may carry an uptime. Also where
        the host and the uptime's digits sit (None for those not there), for the line's plan."""
        m = SYSLOG_HOST.match(s, p)
        if not m or m[1] in lc.LEVEL_WORDS or m[2] in lc.LEVEL_WORDS:  # ``<time> <logger> INFO:``: no host
            return p, host, None, None, None
        p = m.end()
        source = lc.syslog_source(m[2])
        uptime_span = None
        if source == "kernel" and s.startswith("[", p):
            mu = UPTIME_BRACKET.match(s, p)
            if mu:
                if t is not None:
                    self.ts.anchor(t, float(mu[1]))
                uptime_span = mu.span(1)
                p = mu.end()
        return p, self._host(m[1]), source, m.span(1), uptime_span

    def _saw(self, stream: str, host: str | None, gpu: int | None, global_rank: int | None,
             nccl_msg: str | None) -> None:
        """Record what a line says about its stream's host and GPU, and learn rank ties."""
        info = self.streams.get(stream)
        if info is None:
            info = self.streams[stream] = [host, gpu]
        else:
            if host is not None and info[0] != host:
                info[0] = host if info[0] is None else AMBIGUOUS
            if gpu is not None and info[1] != gpu:
                info[1] = gpu if info[1] is None else AMBIGUOUS
        if host is None:
            return
        # an actor's prefix names the node the actor runs on, not the writer of the file (a driver relaying it):
        # the prefix's host is its stream's, never the host of the file's unlabelled lines
        if not relayed(stream, len(stream)):
            if self.file_host is None:
                self.file_host = host
            elif self.file_host != host:
                self.file_host = AMBIGUOUS
        self.hold = False
        if global_rank is not None:
            self.rank_map.tie(global_rank, host)
        if nccl_msg is not None and "nranks" in nccl_msg:
            m = NCCL_RANK.search(nccl_msg)
            if m:
                self.rank_map.tie(int(m[1]), host, int(m[2]))

    def _global_ranks(self, msg: str) -> None:
        """torchelastic's ``global_ranks=[...]`` names the ranks of the agent's own node (the file's node)."""
        m = GLOBAL_RANKS.search(msg) if self.path_node else None
        for r in (m[1].replace(" ", "").split(",") if m else ()):
            if r:
                self.rank_map.tie(int(r), self.path_node, GLOBAL_WEIGHT - 1)

    def _fill(self, stream: str, node: str | None, rank: int | None, gpu: int | None) -> tuple[str | None, int | None]:
        """Node and GPU the line did not give: from its stream (never a mixed file's bare one), file, rank map."""
        info = self.streams.get(stream) if stream or not self.mixed else None
        if info is not None:
            if node is None and info[0] is not None and info[0] != AMBIGUOUS:
                node = info[0]
            if gpu is None and stream and info[1] is not None and info[1] != AMBIGUOUS:
                gpu = info[1]
        if node is None and self.task_hosts is not None:  # an srun label's or a torchrun prefix's host
            node = self.task_hosts.get(stream.split(":", 1)[0].strip())
        if node is None:
            fh = self.file_host
            if fh is not None and fh != AMBIGUOUS:
                node = fh
            elif rank is not None and stream not in self.local_streams:  # a local rank is not in the map
                node = self.rank_map.node_of(rank)
        return node, gpu
