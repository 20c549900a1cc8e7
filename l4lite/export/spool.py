"""Pass 1 of ``l4lite parse``: records and runs of lines, mined, into Arrow batches spooled to disk (Arrow IPC).

A batch is built a column at a time. A run (``l4lite.ingest.shaperun.ShapeRun``) goes in as a few arrays rather than a value
per line: its line numbers are a range, its file, node, rank and GPU are mostly one value each, its source and
level are those of its shapes, and its text is the UTF-8 of the window it was read from (``BlockPlan.raw``),
which is already encoded. Columns of few distinct values (file, node, rank, GPU, source, level) are held as
codes into the batch's values and become plain Arrow columns when the batch is written, so the spool's rows are
those of a record-by-record build (``tests/test_runs.py`` compares both).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import attrgetter
from pathlib import Path
from typing import Any

import numpy as np

from l4lite.ingest.shaperun import ShapeRun
from l4lite.mining.headers import cut_by_file
from l4lite.mining.runmine import mine_run
from l4lite.records import Record

BATCH_RECORDS = 32_768
BATCH_TEXT_BYTES = 1 << 28  # a batch's text stays far below Arrow's 2 GiB string offsets
_CODED = ("file", "node", "rank", "gpu", "source", "level")
_INT32 = np.dtype(np.int32)
_GETTERS = {name: attrgetter(name) for name in (*_CODED, "line", "end_line", "time", "text")}  # ``add_records``


def spool_schema() -> Any:
    import pyarrow as pa

    return pa.schema([("file", pa.string()), ("line", pa.int64()), ("end_line", pa.int64()), ("node", pa.string()),
                      ("rank", pa.int64()), ("gpu", pa.int64()), ("source", pa.string()),
                      ("time", pa.timestamp("us", tz="UTC")),
                      ("level", pa.string()), ("text", pa.string()), ("cluster", pa.int64())])


def strings(values: list[str | None]) -> Any:
    """An Arrow string array of ``values``; lone surrogates (which UTF-8 cannot hold) become ``?``."""
    import pyarrow as pa

    encoded = [b"" if v is None else v.encode("utf-8", "replace") for v in values]
    offsets = _offsets(np.fromiter(map(len, encoded), np.int64, len(encoded)))
    null = np.fromiter((v is None for v in values), np.bool_, len(values))
    return pa.StringArray.from_buffers(len(values), pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded)),
                                       _validity(null))


def _offsets(lengths: np.ndarray) -> np.ndarray:
    """Arrow's int32 string offsets of texts of ``lengths`` bytes. Callers hold far less than 2 GiB (a batch's
    text is at most ``BATCH_TEXT_BYTES``); more is refused rather than wrapped."""
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] >= 1 << 31:
        raise ValueError("2 GiB or more of text for one Arrow string array")
    return offsets.astype(np.int32)


def numbers(values: np.ndarray, arrow_type: Any, null: np.ndarray | None = None) -> Any:
    """An Arrow array over numpy ``values`` of the same width, null where ``null``.

    Built from the buffers, as ``strings`` is: ``pa.array`` and ``pa.scalar`` import pandas on their first call
    (to tell pandas objects apart), 0.3 s per process that parsing has no other use for."""
    import pyarrow as pa

    data = np.ascontiguousarray(values)
    return pa.Array.from_buffers(arrow_type, len(data), [_validity(null), pa.py_buffer(data)])


def _validity(null: np.ndarray | None) -> Any:
    """Arrow's validity bitmap (a set bit: a value), or None when no value is null."""
    import pyarrow as pa

    if null is None or not null.any():
        return None
    return pa.py_buffer(np.packbits(~null, bitorder="little"))


class _CodedColumn:
    """A column of few distinct values: an int32 code per row (-1 for null), in chunks, into the batch's values."""

    __slots__ = ("index", "values", "chunks")

    def __init__(self) -> None:
        self.index: dict[Any, int] = {None: -1}
        self.values: list[Any] = []
        self.chunks: list[Any] = []  # numpy arrays and lists of codes

    def code(self, value: Any) -> int:
        c = self.index.get(value)  # None: -1
        if c is None:
            c = self.index[value] = len(self.values)
            self.values.append(value)
        return c

    def fill(self, value: Any, n: int) -> None:
        self.chunks.append(np.full(n, self.code(value), _INT32))

    def extend(self, values: Sequence[Any]) -> None:
        # the values new to the batch first (a code is an index into its values, in any order), then every
        # value's code in one pass of ``dict.get``, not a call per value
        index = self.index
        for value in set(values).difference(index):
            self.code(value)
        self.chunks.append(list(map(index.get, values)))

    def array(self, arrow_type: Any) -> Any:
        """The column as Arrow values, and a fresh start for the next batch."""
        import pyarrow as pa

        codes = _concat(self.chunks, _INT32)
        if arrow_type == pa.string():
            values = strings(self.values)
        else:
            values = numbers(np.array(self.values, np.int64), arrow_type)
        self.index = {None: -1}
        self.values = []
        self.chunks = []
        return values.take(numbers(codes, pa.int32(), codes < 0))


def _concat(chunks: list[Any], dtype: np.dtype) -> np.ndarray:
    if not chunks:
        return np.zeros(0, dtype)
    return np.concatenate([np.asarray(c, dtype) for c in chunks])


class SpoolBatch:
    """The columns of the next spool batch."""

    def __init__(self) -> None:
        self._start()

    def _start(self) -> None:
        self.coded = {name: _CodedColumn() for name in _CODED}
        self.lines: list[Any] = []  # chunks of line numbers, of end lines, of times, of cluster ids
        self.end_lines: list[Any] = []
        self.times: list[Any] = []
        self.clusters: list[Any] = []
        self.text: list[bytes] = []  # UTF-8, texts back to back
        self.text_lengths: list[Any] = []  # chunks of byte lengths
        self.rows = 0
        self.text_bytes = 0

    def add_records(self, records: list[Record], clusters: list[int]) -> None:
        """Records' fields into the columns, each read by a ``map`` of its getter (no Python frame per record): a
        file read record by record (a CRI or journal file) spools every line here."""
        if not records:
            return
        coded = self.coded
        for name in _CODED:
            coded[name].extend(list(map(_GETTERS[name], records)))
        self.lines.append(list(map(_GETTERS["line"], records)))
        self.end_lines.append(list(map(_GETTERS["end_line"], records)))
        self.times.append(np.array(list(map(_GETTERS["time"], records)), np.float64))  # no time: NaN
        self.clusters.append(list(clusters))
        self._add_texts(list(map(_GETTERS["text"], records)))
        self.rows += len(records)

    def add_run(self, run: ShapeRun, clusters: list[int]) -> None:
        n = len(run)
        coded = self.coded
        coded["file"].fill(run.file, n)
        if run.name_table is None or run.name_rows is None:
            coded["node"].fill(run.node, n)
            coded["rank"].fill(run.rank, n)
            coded["gpu"].fill(run.gpu, n)
        else:  # the few distinct (node, rank, GPU) of the lines' stream prefixes
            for k, name in enumerate(("node", "rank", "gpu")):
                column = coded[name]
                codes = np.array([column.code(names[k]) for names in run.name_table], _INT32)
                column.chunks.append(codes[run.name_rows])
        self._add_shape_columns(run)
        lines = np.arange(run.first, run.first + n, dtype=np.int64)
        self.lines.append(lines)
        self.end_lines.append(lines)
        self.times.append(run.time_values())
        self.clusters.append(clusters)
        if run.raw is not None and run.bounds is not None:  # the lines as read; none holds a newline (plan_block)
            bounds = run.bounds
            self._add_text(run.raw[bounds[0]:bounds[-1] - 1].replace(b"\n", b""), np.diff(bounds) - 1)
        else:
            self._add_texts(run.texts)
        self.rows += n

    def _add_shape_columns(self, run: ShapeRun) -> None:
        """Source and level, from the run's shapes: one value each when the run is of one shape."""
        table, shapes = run.table, run.shapes
        first = shapes[0]
        if shapes.count(first) == len(shapes):
            for name in ("source", "level"):
                self.coded[name].fill(getattr(table[first], name), len(shapes))
            return
        distinct, inverse = np.unique(run.shape_codes(), return_inverse=True)
        for name in ("source", "level"):
            column = self.coded[name]
            codes = np.array([column.code(getattr(table[x], name)) for x in distinct.tolist()], _INT32)
            column.chunks.append(codes[inverse])

    def _add_texts(self, texts: Sequence[str]) -> None:
        joined = "".join(texts)
        if joined.isascii():  # a character is a byte: encoded once, each text's length its byte length
            self._add_text(joined.encode("ascii"), list(map(len, texts)))
            return
        encoded = [text.encode("utf-8", "surrogatepass") for text in texts]
        self._add_text(b"".join(encoded), list(map(len, encoded)))

    def _add_text(self, data: bytes, lengths: Any) -> None:
        self.text.append(data)
        self.text_lengths.append(lengths)
        self.text_bytes += len(data)

    def full(self) -> bool:
        return self.rows >= BATCH_RECORDS or self.text_bytes >= BATCH_TEXT_BYTES

    def write(self, writer: Any, schema: Any) -> int:
        """Write the batch (if any rows) and start the next; returns its rows."""
        import pyarrow as pa

        n = self.rows
        if not n:
            return 0
        times = _concat(self.times, np.dtype(np.float64))
        columns = {name: self.coded[name].array(schema.field(name).type) for name in _CODED}
        columns["line"] = numbers(_concat(self.lines, np.dtype(np.int64)), pa.int64())
        columns["end_line"] = numbers(_concat(self.end_lines, np.dtype(np.int64)), pa.int64())
        missing = np.isnan(times)
        micros = np.round(np.where(missing, 0.0, times) * 1e6).astype(np.int64)
        columns["time"] = numbers(micros, schema.field("time").type, missing)
        columns["text"] = self._text_array()
        columns["cluster"] = numbers(_concat(self.clusters, np.dtype(np.int64)), pa.int64())
        writer.write_batch(pa.record_batch([columns[name] for name in schema.names], schema=schema))
        self._start()
        return n

    def _text_array(self) -> Any:
        import pyarrow as pa

        data = b"".join(self.text)
        offsets = _offsets(_concat(self.text_lengths, np.dtype(np.int64)))
        array = pa.StringArray.from_buffers(self.rows, pa.py_buffer(offsets), pa.py_buffer(data))
        try:
            array.validate(full=True)
        except pa.ArrowInvalid:  # lone surrogates (kept by "surrogatepass"): as ``strings`` replaces them
            bounds = offsets.tolist()
            return strings([data[a:b].decode("utf-8", "surrogatepass") for a, b in zip(bounds, bounds[1:], strict=False)])
        return array


def write_spool(records: Iterable[Record | ShapeRun], miner: Any, path: Path) -> int:
    """Mine every record and spool it with its local cluster id, in batches. Returns the number of records.
    A message is mined without its file's learnt header (``mining.headers``: BGL's nine columns, HDFS's date,
    pid, level and class); the record keeps the whole message.

    A ``ShapeRun`` goes into the columns as it is, without a record per line, and is mined per shape."""
    import pyarrow as pa

    schema = spool_schema()
    n = 0
    batch = SpoolBatch()
    pending: list[Record] = []
    clusters: list[int] = []
    pending_chars = 0
    add = miner.add
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
        for record, cut in cut_by_file(records):
            if type(record) is ShapeRun:
                batch.add_records(pending, clusters)
                pending, clusters, pending_chars = [], [], 0
                batch.add_run(record, mine_run(record, miner, cut.strip if cut.cut else None))
                if batch.full():
                    n += batch.write(writer, schema)
                continue
            pending.append(record)
            clusters.append(add(cut.strip(record.message) if cut.cut else record.message))
            pending_chars += len(record.text)
            if len(pending) + batch.rows >= BATCH_RECORDS or pending_chars + batch.text_bytes >= BATCH_TEXT_BYTES:
                batch.add_records(pending, clusters)
                pending, clusters, pending_chars = [], [], 0
                n += batch.write(writer, schema)
        batch.add_records(pending, clusters)
        n += batch.write(writer, schema)
    return n
