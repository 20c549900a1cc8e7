"""The spool (pass 1 of ``l4lite parse``) holds every record's fields as a plain row-by-row build would."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from l4lite.export import spool
from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_job
from l4lite.ingest.shaperun import ShapeRun
from l4lite.mining.miner import TemplateMiner
from l4lite.records import Accounting, Record
from l4lite.simulate import JobSpec, generate

FIELDS = ("file", "line", "end_line", "node", "rank", "gpu", "source", "time", "level", "text")


def _read(path: Path) -> pa.Table:
    with ipc.open_stream(path) as reader:
        return reader.read_all()


def _reference(records: list[Record], clusters: list[int]) -> pa.Table:
    """The rows as ``pa.Table.from_pylist`` builds them, one record at a time."""
    rows = []
    for r, cid in zip(records, clusters, strict=True):
        row = {name: getattr(r, name) for name in FIELDS}
        row["text"] = r.text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates become "?"
        row["time"] = None if r.time is None else round(r.time * 1e6)  # whole microseconds
        row["cluster"] = cid
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=spool.spool_schema())


def _odd_records() -> list[Record]:
    """Records with every field missing that can be, and texts UTF-8 makes hard."""
    texts = ["plain", "", "über 3 µs", "line one\nline two\n  line three", "lone \udc80 surrogate", "tab\there",
             "中文日志 ok", "x" * 5000]
    out = []
    for i, text in enumerate(texts):
        out.append(Record(f"f{i % 3}.log", i + 1, i + 1 + text.count("\n"), None if i % 2 else f"node{i % 4}",
                          None if i % 3 == 0 else i, None if i % 4 == 0 else i % 8, "trainer" if i % 2 else "kernel",
                          None if i % 5 == 0 else 1_700_000_000.25 + i, None if i % 3 == 1 else "INFO",
                          text.split("\n")[0], text))
    return out


@pytest.mark.parametrize("batch_records,batch_bytes", [(32_768, 1 << 28), (3, 1 << 28), (1000, 40)])
def test_records_spool_as_a_row_by_row_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_records: int,
                                             batch_bytes: int) -> None:
    monkeypatch.setattr(spool, "BATCH_RECORDS", batch_records)
    monkeypatch.setattr(spool, "BATCH_TEXT_BYTES", batch_bytes)
    records = _odd_records() * 3
    n = spool.write_spool(iter(records), TemplateMiner(), tmp_path / "s.arrows")
    got = _read(tmp_path / "s.arrows")
    assert n == got.num_rows == len(records)
    miner = TemplateMiner()
    assert got.equals(_reference(records, [miner.add(r.message) for r in records]))
    assert got.column("text").to_pylist()[4] == "lone ? surrogate"
    with ipc.open_stream(tmp_path / "s.arrows") as reader:
        sizes = [b.num_rows for b in reader]
    if batch_records == 3:
        assert max(sizes) <= 3
    if batch_bytes == 40:  # cut by the bytes of their texts, long before 1,000 rows
        assert len(sizes) > 5


def test_runs_spool_as_their_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs go in as arrays (their text from the window's bytes): the rows of their records, also for an srun
    --label file whose lines name their ranks, and with runs cut across batches."""
    monkeypatch.setattr(spool, "BATCH_RECORDS", 1000)
    for k, (fmt, layout) in enumerate((("megatron", "per-node-dir"), ("deepspeed", "merged-slurm"))):
        job = tmp_path / f"job{k}"
        generate(JobSpec("healthy", nodes=2, gpus_per_node=2, iterations=3000, seed=3 + k, fmt=fmt, layout=layout),
                 job)
        acc = Accounting()
        items = list(iter_job(discover([str(job)], acc), IngestOptions(), acc, runs=True))
        runs = [x for x in items if type(x) is ShapeRun]
        assert sum(len(r) for r in runs) > 3000
        assert all(r.raw is not None for r in runs)
        if layout == "merged-slurm":
            assert any(r.name_table is not None for r in runs)
        n = spool.write_spool(iter(items), TemplateMiner(), tmp_path / f"s{k}.arrows")
        got = _read(tmp_path / f"s{k}.arrows")
        records = [r for x in items for r in (x.records() if type(x) is ShapeRun else [x])]
        assert n == len(records)
        miner = TemplateMiner()
        assert got.equals(_reference(records, [miner.add(r.message) for r in records]))


@pytest.mark.parametrize("layout", ["per-node-dir", "merged-slurm"])
def test_a_run_without_its_window_spools_from_its_texts(tmp_path: Path, layout: str) -> None:
    """A run made without its window's bytes (by hand, say) spools from its texts."""
    acc = Accounting()
    job = tmp_path / "job"
    generate(JobSpec("healthy", nodes=2, gpus_per_node=1, iterations=3000, seed=5, layout=layout), job)
    items = list(iter_job(discover([str(job)], acc), IngestOptions(), acc, runs=True))
    assert sum(len(x) for x in items if type(x) is ShapeRun) > 3000
    bare = [ShapeRun(x.file, x.first, x.texts, x.keys, x.times, x.shapes, x.table, x.node, x.rank, x.gpu,
                     x.name_table, x.name_rows) if type(x) is ShapeRun else x for x in items]
    # lines name themselves in runs by their stream prefixes (merged), or by a host in their header (NCCL's
    # host:pid:tid [dev], a syslog host) in either layout
    named = [x for x in bare if type(x) is ShapeRun and x.name_table is not None]
    assert named if layout == "merged-slurm" else all(node is not None for x in named for node, _, _ in x.name_table)
    spool.write_spool(iter(items), TemplateMiner(), tmp_path / "a.arrows")
    spool.write_spool(iter(bare), TemplateMiner(), tmp_path / "b.arrows")
    assert _read(tmp_path / "a.arrows").equals(_read(tmp_path / "b.arrows"))


def test_string_offsets_past_2_gib_are_refused_not_wrapped() -> None:
    import numpy as np

    assert spool._offsets(np.array([3, 0, 5], np.int64)).tolist() == [0, 3, 3, 8]
    with pytest.raises(ValueError, match="2 GiB"):
        spool._offsets(np.array([1 << 30, 1 << 30], np.int64))
