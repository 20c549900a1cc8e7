"""`l4lite parse`: Parquet, CSV and JSON lines output with final template ids and balanced line accounting."""

from __future__ import annotations

import csv
import gzip
import json
from datetime import datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from l4lite.cli.main import main
from l4lite.export import spool
from l4lite.mining.miner import template_id

COLUMNS = [
    "file",
    "line",
    "end_line",
    "node",
    "rank",
    "gpu",
    "source",
    "time",
    "level",
    "template_id",
    "template",
    "text",
]


@pytest.fixture()
def job(tmp_path: Path) -> Path:
    """A small job: two nodes, torchrun prefixes, a traceback, NCCL lines, a gzipped dmesg and a binary file."""
    root = tmp_path / "job"
    (root / "rackA-n1").mkdir(parents=True)
    (root / "rackB-n2").mkdir(parents=True)
    trainer = []
    for it in range(1, 31):
        trainer.append(
            f"[default0]:2024-05-07 03:{it:02d}:00,123 INFO iteration {it * 10}/ 1000 | lm loss: "
            f"{2 + it / 100:.4f} | grad norm: {0.3 + it / 1000:.3f}"
        )
    trainer += [
        "[default0]:Traceback (most recent call last):",
        '[default0]:  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/c10d.py", line 2420, in barrier',
        "[default0]:    work = default_pg.barrier(opts=opts)",
        "[default0]:torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process "
        "exited or there was a network error",
    ]
    (root / "rackA-n1" / "trainer.log").write_text("\n".join(trainer) + "\n", encoding="utf-8")
    nccl = [
        f"gpu-node-2:{4000 + i}:{4100 + i} [{i % 8}] NCCL INFO Channel {i:02d}/0 : 0[101c0] -> 1[101d0] via P2P/IPC"
        for i in range(20)
    ]
    nccl.append(
        "gpu-node-2:4007:4107 [7] include/socket.h:403 NCCL WARN Connect to 10.148.3.247<56821> failed : "
        "Connection refused"
    )
    (root / "rackB-n2" / "nccl.log").write_text("\n".join(nccl) + "\n", encoding="utf-8")
    dmesg = (
        "\n".join(
            [
                "[Fri Aug 30 11:43:09 2024] NVRM: Xid (PCI:0000:cb:00): 79, pid=1234, GPU has fallen off the bus.",
                "[Fri Aug 30 11:43:10 2024] NVRM: Xid (PCI:0000:cb:00): 79, pid=1235, GPU has fallen off the bus.",
                "[Fri Aug 30 11:43:11 2024] mlx5_core 0000:1a:00.0: mlx5_ib0: Link down",
            ]
        )
        + "\n"
    )
    (root / "rackB-n2" / "dmesg.txt.gz").write_bytes(gzip.compress(dmesg.encode()))
    (root / "blob.bin").write_bytes(bytes(range(256)) * 64)
    return root


def _run(argv: list[str]) -> int:
    return main(["parse", *argv])


def _balanced(acc: dict) -> bool:
    return (
        acc["lines_read"] == acc["lines_in_records"] + sum(acc["lines_skipped"].values())
        and acc["lines_read"] > 0
    )


def test_parquet_output_has_final_templates_and_accounting(job: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out" / "records.parquet"
    assert _run([str(job), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "lines read" in err and "records" in err
    table = pq.read_table(out)
    assert table.column_names == COLUMNS
    assert str(table.schema.field("time").type) == "timestamp[us, tz=UTC]"
    acc = json.loads(table.schema.metadata[b"l4lite.accounting"])
    assert _balanced(acc)
    assert acc["files_skipped"]  # the binary file
    assert table.num_rows == acc["records"]
    rows = table.to_pylist()
    assert all(r["template_id"] == template_id(r["template"]) for r in rows)
    traceback = [r for r in rows if "Traceback" in r["text"]]
    assert len(traceback) == 1 and traceback[0]["end_line"] > traceback[0]["line"]
    xid = [r for r in rows if "Xid" in r["text"]]
    assert len(xid) == 2 and xid[0]["template_id"] == xid[1]["template_id"]
    assert "<PCI>" in xid[0]["template"]
    assert sorted(p.name for p in out.parent.iterdir()) == ["records.parquet"]  # no temporary files left
    group = pq.ParquetFile(out).metadata.row_group(0)
    stats = {group.column(i).path_in_schema: group.column(i).is_stats_set for i in range(group.num_columns)}
    assert stats["time"] and stats["node"] and stats["template_id"]  # readers skip row groups by these
    assert not stats["text"] and not stats["template"]  # no reader skips by a long text's sort order


def test_same_job_gives_same_template_ids(job: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    assert _run([str(job), "-o", str(a), "--quiet"]) == 0
    assert _run([str(job), "-o", str(b), "--quiet"]) == 0
    assert (
        pq.read_table(a).column("template_id").to_pylist()
        == pq.read_table(b).column("template_id").to_pylist()
    )


def test_csv_output_with_sidecar(job: Path, tmp_path: Path) -> None:
    out = tmp_path / "records.csv"
    assert _run([str(job), "-o", str(out), "--quiet"]) == 0
    with out.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    meta = json.loads(Path(f"{out}.meta.json").read_text())
    assert _balanced(meta["l4lite.accounting"])
    assert len(rows) == meta["l4lite.accounting"]["records"] == meta["records"]
    assert list(rows[0]) == COLUMNS
    times = [r["time"] for r in rows if r["time"]]
    assert times and all(datetime.fromisoformat(t).tzinfo is not None for t in times)
    assert any("\n" in r["text"] for r in rows)  # the traceback survives quoting


def test_jsonl_to_stdout_and_file(job: Path, tmp_path: Path, capsys) -> None:
    assert _run([str(job)]) == 0
    captured = capsys.readouterr()
    rows = [json.loads(line) for line in captured.out.splitlines()]
    assert rows and list(rows[0]) == COLUMNS
    assert "lines read" in captured.err
    out = tmp_path / "records.jsonl"
    assert _run([str(job), "-o", str(out), "--quiet"]) == 0
    assert [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()] == rows
    meta = json.loads(Path(f"{out}.meta.json").read_text())
    assert meta["l4lite.accounting"]["records"] == len(rows)
    assert any(r["time"] and r["time"].endswith("Z") for r in rows)


def test_node_from_names_nodes(job: Path, tmp_path: Path) -> None:
    out = tmp_path / "records.parquet"
    assert _run([str(job), "-o", str(out), "--quiet", "--node-from", r"^(rack\w)-"]) == 0
    rows = pq.read_table(out).to_pylist()
    assert {r["node"] for r in rows if r["file"].startswith("rackA-n1/")} == {"racka"}  # host names are lowercased
    assert {r["node"] for r in rows if r["file"] == "rackB-n2/dmesg.txt.gz"} == {"rackb"}


def test_many_batches_give_the_same_rows(job: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one = tmp_path / "one.parquet"
    assert _run([str(job), "-o", str(one), "--quiet"]) == 0
    monkeypatch.setattr(spool, "BATCH_RECORDS", 7)
    many = tmp_path / "many.parquet"
    assert _run([str(job), "-o", str(many), "--quiet"]) == 0
    assert pq.read_table(many).to_pylist() == pq.read_table(one).to_pylist()
    assert pq.ParquetFile(many).metadata.num_rows == pq.ParquetFile(one).metadata.num_rows


def test_empty_job_writes_an_empty_table(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "x.log").write_text("")
    out = tmp_path / "r.parquet"
    assert _run([str(tmp_path / "empty"), "-o", str(out), "--quiet"]) == 0
    table = pq.read_table(out)
    assert table.num_rows == 0 and table.column_names == COLUMNS


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["{missing}", "-o", "{tmp}/r.parquet"], "missing"),
        (["{job}", "-o", "{tmp}/r.txt"], "r.txt"),
        (["{job}", "--format", "parquet"], "parquet"),
    ],
)
def test_errors_are_one_line(job: Path, tmp_path: Path, capsys, argv: list[str], message: str) -> None:
    argv = [a.format(missing=tmp_path / "missing", tmp=tmp_path, job=job) for a in argv]
    assert _run(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("l4lite: error:") and "\n" not in err and message in err


def test_prefetched_batches_keep_their_order_and_errors() -> None:
    import threading

    from l4lite.export.writers import prefetched

    assert list(prefetched(iter(range(100)), depth=2)) == list(range(100))

    def broken():  # noqa: ANN202
        yield 1
        raise OSError("spool gone")

    got = []
    with pytest.raises(OSError, match="spool gone"):
        for item in prefetched(broken()):
            got.append(item)
    assert got == [1]
    before = threading.active_count()
    stream = prefetched(iter(range(10_000)), depth=1)
    assert next(stream) == 0
    stream.close()  # the writer stopped early: the thread ends too
    assert threading.active_count() == before


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_parse_leaves_pandas_unloaded(job: Path, tmp_path: Path, jobs: str) -> None:
    """pyarrow imports pandas on the first ``pa.array`` or ``pa.scalar`` (0.3 s of CPU); parse builds its arrays
    from buffers, so a Parquet output never loads it."""
    import subprocess
    import sys

    code = ("import sys; from l4lite.cli.main import main; code = main(sys.argv[1:]); "
            "sys.exit(3 if 'pandas' in sys.modules else code)")
    out = tmp_path / "records.parquet"
    done = subprocess.run([sys.executable, "-c", code, "parse", str(job), "-o", str(out), "--quiet", "--jobs", jobs],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert pq.read_table(out).num_rows > 0


def test_parallel_parse_progress_ends_at_its_total_with_gzip_files(tmp_path: Path) -> None:
    """The shards weigh a gzip file by its uncompressed size; the progress total is counted the same way, so
    ``--jobs 2`` on rotated ``.gz`` logs ends at 100 % (it went past it when the total was the size on disk)."""
    from l4lite.export.parse_engine import parse_parallel

    text = "".join(f"2024-04-26 10:00:{i % 60:02d} INFO step {i} loss {2 + i % 7 / 10}\n" for i in range(4000))
    for i in range(4):
        folder = tmp_path / "job" / f"node{i}"
        folder.mkdir(parents=True)
        if i % 2:
            (folder / "train.log.gz").write_bytes(gzip.compress(text.encode()))
        else:
            (folder / "train.log").write_text(text)

    class Serial:
        workers = 2

        def map(self, fn, items):  # noqa: ANN001, ANN202
            return map(fn, items)

    seen: list[tuple[int, int]] = []
    results, _, _ = parse_parallel([str(tmp_path / "job")], None, Serial(), tmp_path,  # type: ignore[arg-type]
                                   lambda done, total, records: seen.append((done, total)))
    assert sum(r.records for r in results) == 16000
    assert seen[-1][0] == seen[-1][1] == 4 * len(text)
