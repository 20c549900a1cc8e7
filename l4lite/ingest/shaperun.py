"""The data a run of one-line records is handed on as (``ShapeRun``), and the line shapes one pass has learnt
(``ShapeBook``): what ``ingest.runs`` produces and every consumer of runs (the spool, the scan, the miner) reads,
kept apart from how runs are worked out."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import repeat

import numpy as np

from l4lite.ingest.blocks import RunShape
from l4lite.records import Record


@dataclass(slots=True)
class ShapeRun:
    """Consecutive one-line records of known shapes from one file: ``records()`` builds them; a columnar
    consumer reads the fields as lists."""

    file: str
    first: int  # line number of the first line
    texts: list[str]
    keys: list[bytes]
    times: list[float]
    shapes: list[int]  # index into ``table`` per line
    table: list[RunShape]
    node: str | None  # of every line, unless ``name_table`` gives them line by line
    rank: int | None
    gpu: int | None
    # where lines name their own ranks (a stream prefix): the distinct (node, rank, GPU) and each line's index
    name_table: list[tuple[str | None, int | None, int | None]] | None = None
    name_rows: np.ndarray | None = None
    raw: bytes | None = None  # UTF-8 of the window the lines were read from ("surrogatepass": as keys are made)
    bounds: np.ndarray | None = None  # where each line starts in ``raw``, and one past the newline of the last
    # ``times`` and ``shapes`` as numpy arrays too, where the window worked them out so: a columnar consumer
    # (the spool) takes them without converting the lists back
    time_array: np.ndarray | None = None
    shape_array: np.ndarray | None = None

    def retime(self, times: np.ndarray) -> None:
        """Give the run new times (a clock read back, whole-second ties ordered), in both of its forms."""
        self.times = times.tolist()
        if self.time_array is not None:
            self.time_array = times

    def __len__(self) -> int:
        return len(self.texts)

    def part(self, a: int, b: int) -> ShapeRun:
        """Lines ``a:b`` of the run."""
        return ShapeRun(self.file, self.first + a, self.texts[a:b], self.keys[a:b], self.times[a:b], self.shapes[a:b],
                        self.table, self.node, self.rank, self.gpu, self.name_table,
                        None if self.name_rows is None else self.name_rows[a:b], self.raw,
                        None if self.bounds is None else self.bounds[a:b + 1],
                        None if self.time_array is None else self.time_array[a:b],
                        None if self.shape_array is None else self.shape_array[a:b])

    def shape_codes(self) -> np.ndarray:
        """``shapes`` as an int64 array."""
        return self.shape_array if self.shape_array is not None else np.array(self.shapes, np.int64)

    def time_values(self) -> np.ndarray:
        """``times`` as a float64 array."""
        return self.time_array if self.time_array is not None else np.array(self.times, np.float64)

    def line_names(self) -> list[tuple[str | None, int | None, int | None]] | None:
        """(node, rank, GPU) of every line where the lines name their own ranks, else None (``node``, ``rank``
        and ``gpu`` hold for every line)."""
        if self.name_table is None or self.name_rows is None:
            return None
        return list(map(self.name_table.__getitem__, self.name_rows.tolist()))

    def records(self) -> list[Record]:
        file, table = self.file, self.table
        names = self.line_names() or repeat((self.node, self.rank, self.gpu), len(self.texts))
        out = []
        lineno = self.first
        for s, key, t, x, (node, rank, gpu) in zip(self.texts, self.keys, self.times, self.shapes, names,
                                                    strict=True):
            sh = table[x]
            out.append(Record(file, lineno, lineno, node, rank, gpu, sh.source, t, sh.level,
                              s[sh.msg_start:sh.msg_end], s, "", "", sh.rank_local, key))
            lineno += 1
        return out


@dataclass
class ShapeBook:
    """The line shapes learnt in one pass, shared by the files of the pass that read a shape alike.

    How the first line of a shape was read (its plan, ``ingest._FileReader._learn``) depends on the line and on
    two facts of its file: the source of lines that say nothing about themselves (from the file's name), and
    whether the path names a rank (a rank in the message is read only when it does not). Files that agree on
    those (and on whether the path names a node, kept in the key to be safe) read every line of a shape alike,
    so they share one book: the eighth rank file of a node starts with the shapes of the first seven, and its
    lines go in runs from its first window instead of one by one until it has learnt them again.
    """

    plans: dict[bytes, tuple] = field(default_factory=dict)  # line shape -> how its first line was read
    run_index: dict[bytes, int] = field(default_factory=dict)  # line shape -> its entry in run_table
    run_table: list[RunShape] = field(default_factory=list)  # appended to, replaced when full: runs refer to it
    run_pending: list[tuple] = field(default_factory=list)  # run_shape()'s arguments of plans learnt since
    # header shape -> how the first line's header was read (``_learn_head``), and the header lengths known:
    # a few per format, kept when the shapes are forgotten (lines of new shapes are what they are for)
    heads: dict[bytes, tuple] = field(default_factory=dict)
    head_lengths: list[int] = field(default_factory=list)
    head_seen: set[bytes] = field(default_factory=set)  # line shapes read once from their header's plan
    # folded line shape (``shape.fold_ids``) -> its entry in run_table, for lines read from their header's plan
    # (``PlanLearning._learn_folded``), and the folded shapes met once
    fold_index: dict[bytes, int] = field(default_factory=dict)
    fold_seen: set[bytes] = field(default_factory=set)
    # the token classes of the folded shapes learnt (``firstsight.fold_class``): a line of a new folded shape of
    # one of them has its shape learnt at its first sight
    fold_classes: set[bytes] = field(default_factory=set)
    # line shape -> its entry in run_table for lines read from their own plan amid a run, where the plan reads a
    # time the window does not (``RunReading._absorb``): one entry per shape, not per line
    absorb_index: dict[bytes, int] = field(default_factory=dict)
    absorb_refused: set[bytes] = field(default_factory=set)  # line shapes whose plan a run may not read

    def restart(self) -> None:
        """Forget every line shape (the book is full). The run table is replaced, not cleared: runs refer to it."""
        self.plans.clear()
        self.run_index = {}
        self.run_table = []
        self.run_pending.clear()
        self.fold_index = {}
        self.fold_seen.clear()
        self.fold_classes.clear()
        self.absorb_index = {}
        self.absorb_refused.clear()
