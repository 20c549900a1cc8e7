"""A rotated log read as one stream, its records named by the piece each line is in.

``files.chain_rotated`` makes one input of ``x.log.2.gz``, ``x.log.1`` and ``x.log`` (oldest first) and ``decode``
reads them one after the other, numbering lines on through them, so that the reader keeps its state across a
rotation: a traceback cut in two by logrotate is one record, and the first lines of a piece keep the time of the
line before them. What the user opens are the pieces, so every record and run is named by the piece its first
line is in, with that piece's line numbers (a record that runs on into the next piece ends past its piece's
last line): so ``parse`` writes them. The scan keeps the stream's own name and line numbers instead
(``IngestOptions.streams``), so that the diagnosis compares positions along the one log, and names its evidence
by piece at the end (``records.RotatedStreams.piece_of``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import replace

from l4lite.ingest.decode import PieceStart
from l4lite.ingest.shaperun import ShapeRun
from l4lite.records import Record


def read_chain(items: Iterable[Record | ShapeRun], starts: list[PieceStart]) -> Iterator[Record | ShapeRun]:
    """The reader's records and runs of a chain, each named by its piece (a run that crosses pieces is cut).
    ``starts`` grows as the chain is read (``decode.iter_line_blocks``): a piece is listed before any of its
    lines reaches a record."""
    firsts: list[int] = []
    for item in items:
        if len(firsts) != len(starts):
            firsts = [s.line for s in starts]
        if type(item) is ShapeRun:
            a, n = 0, len(item)
            while a < n:
                line = item.first + a
                k = max(0, bisect_right(firsts, line) - 1)
                b = n if k + 1 >= len(firsts) else min(n, firsts[k + 1] - item.first)
                piece = item if (a, b) == (0, n) else item.part(a, b)
                piece.file, piece.first = starts[k].rel, line - firsts[k] + 1
                yield piece
                a = b
        else:
            k = max(0, bisect_right(firsts, item.line) - 1)
            shift = firsts[k] - 1
            yield replace(item, file=starts[k].rel, line=item.line - shift, end_line=item.end_line - shift)
