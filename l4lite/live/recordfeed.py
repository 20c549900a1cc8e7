"""Records from followed streams, with commit points that make a restart exact.

Each stream has its record reader (a record may wait for continuation lines across polls) and the chunks read
since its committed offset. A stream's committed position is just before the oldest record still being
assembled; records are completed when their stream goes quiet, or when they got no line for ``flush_after``
seconds while other lines kept coming. ``clean`` says whether the committed positions and the records handed
on so far describe the same lines (interleaved multi-line records can break that for a moment): only then may
a checkpoint be written.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from l4lite.live.follow import Chunk, Follower, Stream
from l4lite.live.reader import ReaderFactory, RecordReader
from l4lite.records import Record

STEP_WORK_SECONDS = 0.25  # the record path reads about this much work per poll when it is behind
MIN_READ_BYTES = 64 << 10
MAX_READ_BYTES = 4 << 20


@dataclass
class Slot:
    """A stream's record reader and what committing its offset exactly needs."""

    reader: RecordReader
    last_data: float  # when lines last arrived
    marks: deque[tuple[float, int]] = field(default_factory=deque)  # (time, last line fed) per poll
    ripe: int = 0  # lines up to here were fed at least ``flush_after`` seconds ago
    chunks: deque[Chunk] = field(default_factory=deque)  # read, not yet committed past
    max_end: int = 0  # the last line of any record emitted



class RecordFeed:
    """Feeds follower chunks to per-stream readers; hands complete records to ``process`` in line order."""

    def __init__(self, follower: Follower, reader_factory: ReaderFactory, process: Callable[[Record], None],
                 flush_after: float) -> None:
        self.follower = follower
        self.reader_factory = reader_factory
        self.process = process
        self.flush_after = flush_after
        self.slots: dict[str, Slot] = {}
        # Set while the loop sheds load: a line it returns True for is counted by it and not parsed at all.
        self.skip: Callable[[str], bool] | None = None

    def node_hint(self, sid: str) -> str | None:
        """The node the stream's lines were attributed to so far, if its reader knows."""
        slot = self.slots.get(sid)
        return getattr(slot.reader, "node_hint", None) if slot is not None else None

    def reader(self, s: Stream, start: int) -> RecordReader:
        """The stream's reader, taking it up at byte ``start``: a resumed tail, or lines read again after the job's
        context changed, read on with what the file's lines before tell (``IngestLineReader``)."""
        if start and not s.compressed and getattr(self.reader_factory, "resumes", False):
            return self.reader_factory(s.name, start)
        return self.reader_factory(s.name)

    def consume(self, chunk: Chunk, now: float) -> int:
        s = chunk.stream
        slot = self.slots.get(s.sid)
        if slot is None:
            slot = self.slots[s.sid] = Slot(self.reader(s, chunk.start), now)
        feed = slot.reader.feed
        emit = self._emit
        skip = self.skip
        line_no = chunk.first_line
        for text in chunk.lines:
            if skip is not None and skip(text):
                slot.max_end = line_no  # a record of its own, already counted: past any open record
            else:
                records = feed(line_no, text)
                if records:
                    emit(slot, records)
            line_no += 1
        if chunk.lines:
            slot.last_data = now
            slot.marks.append((now, line_no - 1))
            slot.chunks.append(chunk)
        if chunk.final:
            emit(slot, slot.reader.flush())
            del self.slots[s.sid]
            s.commit(s.line, s.offset)
        else:
            self._commit(s, slot)
        return len(chunk.lines)

    def pace(self, seconds: float) -> None:
        """Keep a poll's record work near ``STEP_WORK_SECONDS`` when the records are behind (reads were capped),
        so that the next poll, and the fast lane's next look, are never far away."""
        f = self.follower
        if seconds > 1.5 * STEP_WORK_SECONDS:
            f.max_read = max(MIN_READ_BYTES, f.max_read // 2)
        elif seconds < 0.5 * STEP_WORK_SECONDS:
            f.max_read = min(MAX_READ_BYTES, f.max_read * 2)

    def _emit(self, slot: Slot, records: list[Record]) -> None:
        process = self.process
        for record in records:
            process(record)
            if record.end_line > slot.max_end:
                slot.max_end = record.end_line

    @staticmethod
    def _commit(s: Stream, slot: Slot) -> None:
        """Move the stream's committed position to just before the oldest record still being assembled."""
        pending = slot.reader.pending_line
        chunks = slot.chunks
        if pending is None:
            s.commit(s.line, s.offset)
            chunks.clear()
            return
        while chunks and chunks[0].first_line + len(chunks[0].lines) <= pending:
            chunks.popleft()
        if chunks and chunks[0].first_line <= pending:
            c = chunks[0]
            off = c.offset_of(pending)
            rel = off - c.start
            s.commit(pending - 1, off, c.data[max(0, rel - 64):rel])

    def expire(self, now: float, force: bool) -> None:
        """Complete records whose continuation is not coming: the stream went quiet, or the record got no line
        for ``flush_after`` seconds while other lines kept coming (an error line in a busy file)."""
        horizon = now - self.flush_after
        for sid, slot in list(self.slots.items()):
            marks = slot.marks
            while marks and marks[0][0] <= horizon:
                slot.ripe = marks.popleft()[1]
            pending = slot.reader.pending_line
            if pending is None:
                continue
            if force or slot.last_data <= horizon:
                records = slot.reader.flush()
            elif slot.ripe >= pending:
                records = slot.reader.expire(slot.ripe)
            else:
                continue
            self._emit(slot, records)
            stream = self.follower.streams.get(sid)
            if stream is not None:
                self._commit(stream, slot)

    def clean(self) -> bool:
        """No emitted record reaches past a stream's commit point (interleaved multi-line records can), so the
        committed offsets and the totals describe the same lines."""
        for slot in self.slots.values():
            pending = slot.reader.pending_line
            if pending is not None and slot.max_end >= pending:
                return False
        return True
