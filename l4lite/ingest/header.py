"""The line reader's header path: a line's prefixes (time, level, host, rank, GPU, stream) read once per line
shape, then replayed as a plan for every later line of the same shape.

``_FileReader`` in ``l4lite.ingest.reader`` inherits it; the state it reads and fills is the reader's.
"""

from __future__ import annotations

from typing import Any

from l4lite.ingest import lineclass as lc
from l4lite.ingest.attribution import (
    ACTOR_PREFIX,
    KUBECTL_PREFIX,
    LEAD_RANK,
    MPI_TAG,
    NAMED_HOST_PREFIX,
    NCCL_HEADER,
    SRUN_LABEL,
    SYSLOG_HOST,
    TORCHRUN_PREFIX,
    UCX_HEADER,
    normalize_host,
    prefix_host,
)
from l4lite.ingest.cri import cri_layout, cri_prefix
from l4lite.ingest.hostprefix import host_prefix
from l4lite.ingest.planlearn import MAX_PLANS, PlanLearning
from l4lite.ingest.plantrust import DIGITS, MISMATCH, planned_level, planned_message
from l4lite.ingest.relay import relayed
from l4lite.ingest.shape import shape_of
from l4lite.ingest.timespots import EPOCH_SPOT, spot_time
from l4lite.records import Record

QUEUED: Any = object()  # ``_head_planned``'s answer for a line it queued as the start of a multi-line record


class HeaderReading(PlanLearning):
    """``_header`` and the replay of the shape plans it learns (``PlanLearning``); a mixin of the file reader."""

    label_ranks: bool = True  # an ``srun --label`` label is a rank (see ``JobContext.label_tasks``)
    host_prefixed: bool | None = None  # every line starts with the host that wrote it (pdsh), decided per file
    cri_partial: dict[str, str]  # per stream, the text of CRI partial lines waiting for their end
    cri_first_time: dict[str, float | None]  # and the time of their first part

    def unwrap_cri(self, s: str) -> str | None:
        """A container log line without its CRI prefix (or the line as it is, when it has none). The prefix's time
        becomes the time of a line that prints none of its own; a partial (P) line is kept until the line that
        ends it, and None is returned for it (the caller counts it as joined to the next one)."""
        m = cri_prefix(s)
        if m is None:
            return s
        label = s[:m.start()]  # a merge's stream label before the container's prefix (``srun --label``) stays
        text = s[m.end():]
        key = label + m[1]
        held = self.cri_partial.pop(key, None)
        if held is None:  # the prefix's time (``parse``'s, read from its parts where its minute is known)
            t = self.ts.zoned_time(s, cri_layout(s, m.start()))
            if t is None:
                t = self.ts.parse(s, m.start())[0]
        else:
            t = self.cri_first_time.pop(key, None)
        if held is not None:
            text = held + text
        if m[2] == "P":
            self.cri_partial[key] = text
            self.cri_first_time[key] = t  # the joined line is timed by its first part, as the plain line would be
            return None
        if t is not None:
            self.last_time = t
        return label + text

    def _header(self, s: str) -> tuple | None:
        """Split a line's prefixes and headers off: stream prefix end, rank, host, GPU, time, level, message start.

        ``spans`` (the last field) says where each value sits in the line and which timestamp calls were made,
        so that a later line of the same shape can be read from the same offsets (see ``_planned``); a syslog host
        and a kernel line's uptime after it are spans too, for ``_planned`` changes the reading state from them as
        this does (the file's hosts, the boot anchor). It is None when the header took a path that also changed
        reading state in a way a plan does not repeat (UCX).
        None when the line is blank once its prefixes are removed.
        """
        pos = 0
        rank: int | None = None
        global_rank = False
        local_rank = False
        host: str | None = None
        gpu: int | None = None
        host_span: tuple[int, int] | None = None
        gpu_span: tuple[int, int] | None = None
        rank_span: tuple[int, int] | None = None
        uptime_span: tuple[int, int] | None = None
        # ---- stream prefixes: pdsh's host:, [pod/name/container] or name.host [stderr], srun label, torchrun
        # [rankN]:/[defaultN]:
        if self.host_prefixed and (m := host_prefix(s)) is not None:
            host = self._host(m[1])
            host_span = m.span(1)
            pos = m.end()
        elif s.startswith("[pod/"):
            m = KUBECTL_PREFIX.match(s)
            if m:
                host = self._host(m[1])
                host_span = m.span(1)
                pos = m.end()
        elif s.find(" [std", 0, 160) > 0:
            m = NAMED_HOST_PREFIX.match(s)
            if m:
                if prefix_host(m[2]):
                    host = self._host(m[2])
                    host_span = m.span(2)
                pos = m.end()
        c = s[pos] if pos < len(s) else ""
        if (c == " " or c in DIGITS) and s.find(": ", pos, pos + 9) > 0:
            m = SRUN_LABEL.match(s, pos)
            if m:
                if self.label_ranks:  # else a task of several ranks (``srun --label torchrun``): its node only
                    rank = int(m[1])
                    rank_span = m.span(1)
                    global_rank = True
                pos = m.end()
                c = s[pos] if pos < len(s) else ""
        if c == "[" and s.find(">:", pos, pos + 26) > 0:
            m = MPI_TAG.match(s, pos)
            if m:
                rank = int(m[1])
                rank_span = m.span(1)
                global_rank = True
                pos = m.end()
                c = s[pos] if pos < len(s) else ""
        if c == "(" and s.find(" pid=", pos, pos + 64) > 0:
            m = ACTOR_PREFIX.match(s, pos)
            if m:
                if m[1] is not None:
                    rank = int(m[1])
                    rank_span = m.span(1)
                    global_rank = True
                if m[2] is not None:
                    host = self._host(m[2])
                    host_span = m.span(2)
                pos = m.end()
                c = s[pos] if pos < len(s) else ""
        if (c == "[" or c == " ") and s.find("]:", pos, pos + 48) > 0:
            m = TORCHRUN_PREFIX.match(s, pos)
            if m:
                if m[1] == "rank":
                    rank = int(m[2])
                    rank_span = m.span(2)
                    global_rank = True
                elif rank is None:
                    rank = int(m[2])  # a local rank: the best there is
                    rank_span = m.span(2)
                    local_rank = True
                pos = m.end()
                if m[1] != "rank" and s.startswith("[rank", pos):
                    # "[default1]:[rank3]: ...": torchrun's tee names the local rank, torch's own prefix the
                    # global one, which is the rank; also after "1: " of ``srun --label torchrun``, one task
                    # per node, where the task id is the node's index and not a rank
                    m = TORCHRUN_PREFIX.match(s, pos)
                    if m and m[1] == "rank":
                        rank = int(m[2])
                        rank_span = m.span(2)
                        global_rank, local_rank = True, False
                        pos = m.end()
                if local_rank and (m := LEAD_RANK.match(s, pos)) is not None:
                    # "[default0]:[rank: 2] Seed set": Lightning's message states the global rank; it stays the
                    # message's own words (no prefix of torchrun's), so the stream prefix ends where it did
                    rank = int(m[1])
                    rank_span = m.span(1)
                    global_rank, local_rank = True, False
                if s.startswith(" ", pos):
                    pos += 1
        if pos and (pos >= len(s) or s[pos:].isspace()):
            return None
        # ---- headers: NCCL host:pid:tid [dev], timestamp, syslog host/program, level marker
        p = pos
        header = False
        nccl = False
        cacheable = True  # a relayed copy's time is none of its own (``_line``, ``_plan_time``)
        has_nccl = s.find("NCCL", p, p + 240) > 0
        if has_nccl:
            m = NCCL_HEADER.match(s, p)
            if m:
                host = self._host(m[1])
                host_span = m.span(1)
                gpu = int(m[4])
                gpu_span = m.span(4)
                p = m.end()
                header = nccl = True
        ts_first = p
        ts_second = -1
        t, end, level, kind = self.ts.parse(s, p)
        if not end and s.startswith(" ", p):  # " [2024-09-11 17:52:18] iteration ..." (Megatron)
            p1 = p + 1
            while s.startswith(" ", p1) and p1 - p < 8:
                p1 += 1
            ts_second = p1
            t, end, level, kind = self.ts.parse(s, p1)
        inner = False  # the time sits inside the message (a JSON record's field): the message keeps it
        if not end and self.spot and (s[p:p + 1] in ("[", "{") or self.spot[-1] == "=" or self.spot == EPOCH_SPOT):
            at, (t, end, level, kind) = spot_time(self.ts, s, p, self.spot)
            if at >= 0:
                ts_second = at
                inner = s.startswith("{", p) or self.spot[-1] == "="  # a logfmt line is all message too
                if not end:  # where later lines of this shape may have a time: no plan
                    cacheable = False
        ts_end, ts_kind, ts_level = end, kind, level
        source = None
        if inner and end:
            header = True
        elif end:
            p = end
            header = True
            if kind == "iso":
                pass
            elif kind == "syslog" or kind == "rfc3339":
                p, host, source, syslog_span, uptime_span = self._syslog_host(s, p, t, host)
                if syslog_span is not None:
                    host_span = syslog_span
            elif kind == "uptime" and (j := SYSLOG_HOST.match(s, p)) is not None and (j[3] or j[2] == "kernel"):
                # ``journalctl -o short-monotonic``: "[ 8123.456789] host python[4242]: ", the program's line (a
                # kernel line only where the program is the kernel), its host the journal's
                p, host, source, syslog_span, _ = self._syslog_host(s, p, t, host)
                if syslog_span is not None:
                    host_span = syslog_span
            elif kind == "uptime" or kind == "delta" or kind[0] in "dk":  # dmesg forms, kern facility
                source = "kernel"
            elif kind == "fm":
                source = "other"
            if has_nccl and not nccl:
                m = NCCL_HEADER.match(s, p)
                if m:
                    host = self._host(m[1])
                    host_span = m.span(1)
                    gpu = int(m[4])
                    gpu_span = m.span(4)
                    p = m.end()
                    nccl = True
        elif c == "[" and ":" in s:
            m = UCX_HEADER.match(s, p)
            if m:
                host = normalize_host(m[1])
                p = m.end()
                header = True
                cacheable = False
        marker_at = -1  # where a level marker was looked for (a line's header plan looks again)
        if level is None and p < len(s):
            marker_at = p
            level, p2 = lc.level_marker(s, p)
            if p2 != p:
                p = p2
                header = True
        spans = (rank_span, host_span, gpu_span, ts_first, ts_second, ts_end, ts_kind, ts_level, uptime_span,
                 marker_at) if cacheable else None
        return pos, rank, global_rank, local_rank, host, gpu, nccl, header, t, level, p, source, spans

    def _plan_time(self, lineno: int, s: str, layout: Any, ts_first: int, ts_second: int, ts_end: int, ts_kind: Any,
                   ts_level: Any, uptime_span: tuple[int, int] | None, copy: bool = False) -> tuple[bool, float | None]:
        """The time a plan reads from a line (the last good one when it has none or a wrong clock's; a relayed
        ``copy``, none), or (False, None) when its timestamp does not end as it did where the plan was learnt (the
        caller takes the slow path). A syslog kernel line's uptime anchors the dmesg clock, as ``_syslog_host``
        does ("host kernel: [  950.818166] ")."""
        t = None if layout is None else self.ts.iso_time(s, layout) if len(layout) == 3 else self.ts.zoned_time(s, layout)
        if t is None:
            known, t = self.ts.planned_time(s, ts_first, ts_end, ts_kind) if ts_second < 0 and \
                (ts_level is None or ts_kind == "glog") \
                else (False, None)
            if not known:
                parse = self.ts.parse
                t, end, lvl, kind = parse(s, ts_first)
                if ts_second >= 0:
                    if end:
                        return False, None
                    if self.spot[-1:] == "=" or self.spot == EPOCH_SPOT:  # a logfmt time and its level, an epoch head
                        t, end, lvl, kind = spot_time(self.ts, s, ts_first, self.spot)[1]
                    else:
                        t, end, lvl, kind = (self.ts.epoch if ts_kind == "epoch" else parse)(s, ts_second)
                if end != ts_end or kind != ts_kind or lvl != ts_level:
                    return False, None
            if uptime_span is not None and t is not None:
                self.ts.anchor(t, float(s[uptime_span[0]:uptime_span[1]]))
        if t is None or ((t > self.future or t < self.past) and self._future_time(lineno, t)):  # a wrong clock?
            return True, None if copy else self.last_time
        self.last_time = t
        return True, t

    def _head_planned(self, lineno: int, s: str, key: bytes, plan: tuple, queue: bool = False) -> Record | None:
        """Read a line from its header's plan (``_learn_head``) and its message as ``_line`` does, or None where
        ``_line`` must (the message changes reading state; or it opens a record, an error say, and ``queue`` is
        false). With ``queue``, a line whose message opens a record (``NVRM:``, ``LustreError``, ``[E]``) is
        queued as ``_line`` queues it, and ``QUEUED`` returned: a third of a kernel log's lines. The second line
        of a shape read so learns the shape's own plan, as ``_line`` would have on the first (a shape seen once
        is not worth one: kernel lines with a new id each), the first where runs may take the shape."""
        (a, nccl, has_nccl, ts_first, ts_second, ts_end, ts_kind, ts_level, layout, host_span, gpu_span,
         uptime_span, marker_at, marker_end, head_source, spans, bracket) = plan
        msg = planned_message(s, a, has_nccl, bracket)
        if msg is None:
            return None
        kind = lc.record_kind(msg) if msg[0] in lc.KIND_STARTS else lc.K_LINE
        if kind != lc.K_LINE and (nccl or not queue):
            return None
        level = planned_level(s, msg, kind, ts_level, marker_at, marker_end)
        if level == MISMATCH or level == "error" and (nccl or not queue):
            return None
        ok, t = self._plan_time(lineno, s, layout, ts_first, ts_second, ts_end, ts_kind, ts_level, uptime_span)
        if not ok:
            return None
        if kind != lc.K_LINE or level == "error":
            return self._head_opens(lineno, s, msg, plan, t, level, kind)
        learn = True
        if nccl:
            source = "nccl"
        elif head_source is None or head_source == "other":
            source = lc.classify(s, msg) or head_source or self.default_source
            learn = not lc.source_by_digits(msg)
        elif head_source == "kernel":
            source = lc.kernel_or_storage(msg)
            learn = not lc.source_by_digits(msg, kernel=True)
        else:
            source = head_source
        host = self._host(s[host_span[0]:host_span[1]]) if host_span is not None else None
        gpu = int(s[gpu_span[0]:gpu_span[1]]) if gpu_span is not None else None
        if host is not None or gpu is not None:
            self._saw("", host, gpu, None, msg if nccl else None)
        rank = self.path_rank
        rank_in_msg = False
        if rank is None and ("[Rank " in msg or "[rank" in msg):
            rank = lc.rank_in_message(msg)
            rank_in_msg = True
        if learn and self.opt.fold_shapes and not nccl:
            self._learn_folded(s, key, plan, msg, level, source, False)
        if learn:
            seen = self.head_seen
            if key in seen or (layout is not None and host_span is None):  # a shape runs may take: at once
                self._learn(s, msg, spans, 0, a, False, False, nccl, level, source, rank_in_msg, head_source)
            else:
                if len(seen) >= MAX_PLANS:
                    seen.clear()
                seen.add(key)
        node = host if host is not None else self.path_node
        if node is None and (self.streams or rank is not None):
            node, gpu = self._fill("", node, rank, gpu)
        if node is None and rank is None:
            self.nameless += 1
        return Record(self.f.rel, lineno, lineno, node, rank, gpu, source, t, level, msg, s)

    def _head_opens(self, lineno: int, s: str, msg: str, plan: tuple, t: float | None, level: str | None,
                    kind: int) -> Any:
        """What ``_line`` does with a line of no stream prefix, a header and a message that opens a record (not
        NCCL): the unprefixed stream's open record is closed, and this one queued and opened in its place.
        ``_head_planned`` has read the header and the time; returns ``QUEUED``."""
        host_span, gpu_span, head_source = plan[9], plan[10], plan[14]
        if head_source is None or head_source == "other":
            source = lc.classify(s, msg) or head_source or self.default_source
        elif head_source == "kernel":
            source = lc.kernel_or_storage(msg)
        else:
            source = head_source
        host = self._host(s[host_span[0]:host_span[1]]) if host_span is not None else None
        gpu = int(s[gpu_span[0]:gpu_span[1]]) if gpu_span is not None else None
        if host is not None or gpu is not None:
            self._saw("", host, gpu, None, None)
        rank = self.path_rank
        if rank is None and ("[Rank " in msg or "[rank" in msg):
            rank = lc.rank_in_message(msg)
        if self.opt.fold_shapes and not plan[1] and kind != lc.K_TB and not lc.source_by_digits(
                msg, kernel=head_source == "kernel") and "[Rank " not in msg and "[rank" not in msg:
            self._learn_folded(s, shape_of(s), plan, msg, level, source, True)
        op = self.open.pop("", None)
        if op is not None:
            op.closed = True
        new = lc.OpenRecord(lineno, host if host is not None else self.path_node, rank, gpu, source, t, level, msg,
                            s, kind, "")
        self.open[""] = new
        self.last_open = new
        self.out.append(new)
        return QUEUED

    def _planned_simple(self, lineno: int, s: str, plan: tuple) -> Record | None:
        """``_planned`` for the most common shape: an ISO timestamp first, no prefix, host or GPU in the line."""
        layout, ma, mb, level, source, rank_in_msg = plan
        t = self.ts.iso_time(s, layout)
        if t is None:
            return None
        if (t > self.future or t < self.past) and self._future_time(lineno, t):
            t = self.last_time
        else:
            self.last_time = t
        msg = s[ma:mb]
        rank = self.path_rank
        if rank is None and rank_in_msg:
            rank = lc.rank_in_message(msg)
        node = self.path_node
        gpu = None
        if node is None and (self.streams or rank is not None):
            node, gpu = self._fill("", node, rank, gpu)
        if node is None and rank is None:
            self.nameless += 1
        return Record(self.f.rel, lineno, lineno, node, rank, gpu, source, t, level, msg, s)

    def _planned(self, lineno: int, s: str, plan: tuple) -> Record | None:
        """Read a line of a known shape from the offsets of the first line of that shape.

        Every test the slow path makes on a line (prefix and header regexes, level and source words, record
        kind) looks at literal letters and at character classes, never at which digit is where, so lines that
        differ only in their ASCII digits take the same path; the timestamp is parsed for real and must end
        where it ended before, else None (the caller takes the slow path).
        """
        got = self._planned_names(lineno, s, plan)
        if got is None:
            return None
        return Record(self.f.rel, lineno, lineno, got[1], got[2], got[3], plan[5], got[0], plan[4],
                      s[plan[6]:plan[7]], s, rank_local=plan[2] and plan[10] is not None)

    def _planned_names(self, lineno: int, s: str, plan: tuple) -> tuple[float | None, str | None, int | None,
                                                                        int | None] | None:
        """``_planned``'s time, node, rank and GPU of a line, with every change of reading state it makes, but no
        record: what a run that takes the line needs (``RunReading._absorb``; its level, source and message
        offsets are the plan's)."""
        (pos, global_rank, local_rank, nccl, _, _, ma, mb, rank_in_msg, layout,
         rank_span, host_span, gpu_span, ts_first, ts_second, ts_end, ts_kind, ts_level, uptime_span, _) = plan
        ok, t = self._plan_time(lineno, s, layout, ts_first, ts_second, ts_end, ts_kind, ts_level, uptime_span,
                                pos > 0 and relayed(s, pos))
        if not ok:
            return None
        stream = s[:pos].rstrip(" ")
        rank = int(s[rank_span[0]:rank_span[1]]) if rank_span is not None else None
        host = self._host(s[host_span[0]:host_span[1]]) if host_span is not None else None
        gpu = int(s[gpu_span[0]:gpu_span[1]]) if gpu_span is not None else None
        msg = s[ma:mb]
        if local_rank and stream not in self.local_streams:
            self.local_streams.add(stream)
        if host is not None or gpu is not None:
            self._saw(stream, host, gpu, rank if global_rank else None, msg if nccl else None)
        if rank is None:
            rank = self.path_rank
            if rank is None and rank_in_msg:
                rank = lc.rank_in_message(msg)
        node = host if host is not None else self.path_node
        if (node is None and (self.streams or rank is not None)) or (gpu is None and stream):
            node, gpu = self._fill(stream, node, rank, gpu)
        if node is None and rank is None:
            self.nameless += 1
        return t, node, rank, gpu

    # ------------------------------------------------------------------------------------------ helpers


def ends_record(plan: tuple) -> bool:
    """Whether a line read by ``plan`` (a line plan of ``HeaderReading._learn`` or a header plan of ``_learn_head``)
    ends the open record of the unprefixed stream, as ``_FileReader._line`` decides: it has no stream prefix and a
    timestamp (so a header: never a continuation line), and is not an NCCL line (which leaves the record open)."""
    if len(plan) == 6:  # an ISO timestamp first
        return True
    if len(plan) == 17:  # a header plan: (a, nccl, has_nccl, ts_first, ts_second, ts_end, ...)
        return not plan[1] and plan[5] > 0
    return plan[0] == 0 and not plan[3] and plan[15] > 0  # (pos, global_rank, local_rank, nccl, ..., ts_end, ...)
