"""How the header path learns its plans: a line's shape with the offsets its prefixes were read at, its
header's shape alone (kernel, storage and NCCL lines), and the folded shape runs may take.

The learning half of ``header.HeaderReading`` (which inherits it): kept apart from reading and replaying so that
what is remembered, and under which key, is in one place; the state it fills is the file reader's.
"""

from __future__ import annotations

from l4lite.ingest import lineclass as lc
from l4lite.ingest.attribution import RANK_IN_MESSAGE
from l4lite.ingest.clocks import fold_key, folded_shape
from l4lite.ingest.plantrust import no_prefix
from l4lite.ingest.shape import fold_class, shape_of
from l4lite.ingest.timespots import time_layout, zoned_layout

MAX_PLANS = 4096  # line shapes remembered per book (see shaperun.ShapeBook)


_KERN_WORDS = (b"kern", b"user", b"mail", b"daemon", b"auth", b"syslog", b"lpr", b"news", b"uucp", b"cron", b"ftp",
               b"local")
_TIME_WORDS = (b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
               b"Mon", b"Tue", b"Wed", b"Thu", b"Fri", b"Sat", b"Sun", b"DEBUG", b"INFO", b"WARN", b"ERROR",
               b"CRITICAL")


def _stampless(key: bytes, at: int) -> bool:
    """Whether the timestamp parser finds no timestamp at ``at`` in any line of this shape, whichever its digits:
    it decides that from letters alone there (a word, a brace, a tab), not from digit values (``2024-13-40`` is
    no date, ``2024-11-30`` is). Conservative: any start a timestamp form may take says no."""
    c = key[at:at + 1]
    if not c:
        return True
    nxt = key[at + 1:at + 2]
    if c == b"0":
        return key[at + 4:at + 5] not in (b"-", b"/") and key[at + 2:at + 3] != b"/"
    if c == b"[":
        return nxt.isalpha() and nxt.islower()
    if c.isupper():
        return nxt.isalpha() and not key.startswith(_TIME_WORDS, at)
    return not key.startswith(_KERN_WORDS, at)


class PlanLearning:
    """The plans ``HeaderReading`` replays, learnt from lines read the slow way (a mixin of the file reader)."""

    def _learn(self, s: str, msg: str, spans: tuple, pos: int, p: int, global_rank: bool, local_rank: bool,
               nccl: bool, level: str | None, source: str, rank_in_msg: bool, head_source: str | None = None) -> None:
        """Remember how a directly emitted line was read, under its shape (its bytes with digits folded), and
        how its header was read, under the header's shape (``_learn_head``)."""
        if not self.opt.line_shapes:
            return
        key, a, end = self._learn_header(s, msg, spans, pos, p, nccl, head_source)
        if a < 0:
            return
        if self.opt.fold_shapes and not pos and not nccl and not rank_in_msg and self.head_lengths:
            head = self.head_plan(key)
            if head is not None and head[0] == a:  # a line of this shape gets a plan: its folded shape a run shape
                self._learn_folded(s, key, head, msg, level, source, False, at_once=True)
        plans = self.plans
        if len(plans) >= MAX_PLANS:
            self.book.restart()
            self.use_book()
        ts_first, ts_second, ts_end, ts_kind, ts_level = spans[3:8]
        layout = time_layout(s, spans)
        # a shape a run may take, for RunReading to make a RunShape of (only if the file is long enough for runs)
        pending = self.run_pending
        if len(pending) >= MAX_PLANS:  # a file whose blocks never take runs: keep this bounded
            pending.clear()
        # the rank of a line that names it in its message ("[Rank 3] step=...") sits at the same offsets in every
        # line of the shape (the search looks at letters and digit classes only)
        msg_rank = None
        if rank_in_msg and self.path_rank is None:
            m = RANK_IN_MESSAGE.search(msg)
            msg_rank = (a + m.start(1), a + m.end(1)) if m else None
        if layout is not None and not pos and spans[:3] == (None, None, None) and ts_second < 0:
            plans[key] = (layout, a, end, level, source, rank_in_msg)  # the common shape: see _planned_simple
            if msg_rank is not None:
                pending.append((key, layout, a, end, level, source, 0, msg_rank))
            elif not rank_in_msg or self.path_rank is not None:
                pending.append((key, layout, a, end, level, source))
        else:
            # (a time with a UTC offset is read from its offsets by this plan alone: runs' windows do not read one)
            own_layout = layout if layout is not None else zoned_layout(s, spans)
            plans[key] = (pos, global_rank, local_rank, nccl, level, source, a, end, rank_in_msg, own_layout) + spans
            if spans[0] is None and spans[1] is not None and spans[8] is None and not ts_end and ts_second < 0 \
                    and _stampless(key, ts_first) and not rank_in_msg and self.path_node is not None \
                    and not self.host_prefixed \
                    and (nccl and not pos and spans[2] is not None or pos and not nccl and spans[2] is None):
                # NCCL's "host:pid:tid [dev] NCCL INFO ..." or a Ray actor's "(RayTrainWorker pid=N, ip=A) " (a
                # relayed copy), no time: a run reads the host (and GPU) once per distinct header
                # (``RunReading._prefixed_names``), the rank a line ties to its host ("nranks") line by line, and
                # the time of the line before (none for a copy). Only where the path names the node: then the
                # host a line names changes no other line's node.
                pending.append((key, None, a, end, level, source, pos, None, False, spans[1], spans[2],
                                nccl and "nranks" in msg, not nccl))
            elif self.host_prefixed and spans[1] is not None and not spans[1][0] and spans[0] is None \
                    and spans[2] is None and not nccl and (not rank_in_msg or msg_rank is not None) \
                    and (layout is not None or not ts_end and ts_second < 0 and _stampless(key, ts_first)):
                # pdsh's "host: ", then a line read as any: a run reads the host (and a rank its message names)
                # once per distinct prefix (``RunReading._prefixed_names``), the time as a line's without the prefix
                pending.append((key, layout, a, end, level, source, pos, msg_rank, False, spans[1], None, False, False))
            elif spans[1:3] != (None, None) or nccl:
                pass
            elif layout is None and (ts_end or not _stampless(key, ts_first)
                                     or (ts_second >= 0 and not _stampless(key, ts_second))):
                pass  # a timestamp the run path does not read, or a line a later one of its shape may read one in
            elif not pos and spans[0] is None:  # " [2024-09-11 17:52:18] iteration ...", or no timestamp
                if msg_rank is not None:
                    pending.append((key, layout, a, end, level, source, 0, msg_rank))
                elif not rank_in_msg or self.path_rank is not None:
                    pending.append((key, layout, a, end, level, source))
            elif spans[0] is not None and (global_rank or local_rank):
                # "  3: 2024-..." (srun --label), "[rank3]: ...", "[default3]: ..." (a local rank)
                pending.append((key, layout, a, end, level, source, pos, spans[0], local_rank and not global_rank))

    def _learn_header(self, s: str, msg: str, spans: tuple, pos: int, p: int, nccl: bool,
                      head_source: str | None) -> tuple[bytes, int, int]:
        """The line's shape and where its message starts and ends (start -1 where the line's text does not end
        with ``msg``); learns its header's plan (``_learn_head``) where it has a header and then a message.
        Called for a directly emitted line (``_learn``) and for a line that opens a record (``_line``): the
        header's plan reads the header alone, and ``_head_planned`` decides about the message line by line."""
        key = shape_of(s)
        end = len(s.rstrip())
        a = len(s) - len(s[p:].lstrip())
        if a >= end:
            a = len(s) - len(s[pos:].lstrip())
        if s[a:end] != msg:
            return key, -1, end
        if not pos and spans[0] is None and (spans[5] or nccl) and 0 < p <= a < end and key[a:a + 1] != b"0" \
                and key[:a] not in self.heads:  # (a header, then a message)
            self._learn_head(s, key, a, spans, nccl, head_source)
        return key, a, end

    def _learn_head(self, s: str, key: bytes, a: int, spans: tuple, nccl: bool, head_source: str | None) -> None:
        """Remember how the header of a line without a stream prefix was read, under the header's shape alone
        (``key[:a]``, up to the message): kernel, storage and NCCL lines carry ids of varying widths and hex
        letters, so nearly every line is a shape of its own, while their headers (a syslog time, host and
        uptime, NCCL's ``host:pid:tid [dev]``) have a few. Only where ``_header`` decides nothing from the
        message: no stream prefix is tried (``no_prefix``), "NCCL" within its reach means the NCCL header, and
        the message starts with no digit (a level marker or a timestamp could read on into it)."""
        head = key[:a]
        has_nccl = s.find("NCCL", 0, 240) > 0
        if not head.isascii() or has_nccl != nccl or not no_prefix(s):
            return
        heads = self.heads
        if len(heads) >= MAX_PLANS:
            heads.clear()
            self.head_lengths.clear()
        ts_first, ts_second, ts_end, ts_kind, ts_level = spans[3:8]
        # after a syslog time, the host field is looked for, and a kernel line's uptime where its message
        # starts: a line without them has its message decide
        bracket = ts_kind in ("syslog", "rfc3339") and head_source == "kernel" and spans[8] is None
        if (ts_kind in ("syslog", "rfc3339") and spans[1] is None) or (bracket and key[a:a + 1] == b"["):
            return
        layout = time_layout(s, spans)
        marker_at = spans[9]
        marker_end = lc.level_marker(s, marker_at)[1] if marker_at >= 0 else -1
        heads[head] = (a, nccl, has_nccl, ts_first, ts_second, ts_end, ts_kind, ts_level, layout, spans[1],
                       spans[2], spans[8], marker_at, marker_end, head_source, spans, bracket)
        if a not in self.head_lengths and len(self.head_lengths) < 8:
            self.head_lengths.append(a)

    def head_plan(self, key: bytes) -> tuple | None:
        """The header plan of a line of a shape with no plan of its own (see ``_learn_head``)."""
        heads = self.heads
        for a in self.head_lengths:
            plan = heads.get(key[:a])
            if plan is not None and plan[0] == a:
                return plan
        return None

    def _learn_folded(self, s: str, key: bytes, plan: tuple, msg: str, level: str | None, source: str,
                      opens: bool, at_once: bool = False) -> None:
        """Make a run shape, keyed by the line's folded shape (``clocks.fold_key``), of a syslog or dmesg line read
        from its header's plan, on the second line of that folded shape (at once with ``at_once``: a line whose
        own shape gets a plan): kernel and storage lines carry ids in hex of one width and new letters on every
        line, so their digit shapes seldom repeat, their folded shapes do. Only where the path names the node:
        the host a line names then changes no other line's node."""
        if self.path_node is None or "[Rank " in msg or "[rank" in msg:
            return
        found = fold_key(s, key, plan)
        if found is None:
            return
        folded, fold_from = found
        if folded in self.fold_index:
            return
        seen = self.fold_seen
        if folded not in seen and not at_once:
            if len(seen) >= MAX_PLANS:
                seen.clear()
            seen.add(folded)
            return
        shape = folded_shape(s, folded, fold_from, plan, level, source, opens)
        if shape is None:
            return
        if len(self.fold_index) >= MAX_PLANS:
            self.book.restart()
            self.use_book()
        self.fold_index[folded] = len(self.run_table)
        self.run_table.append(shape)
        self.book.fold_classes.add(fold_class(folded))
