"""Writers of ``l4lite parse`` output: the spool's batches as Parquet, CSV or JSON lines, written atomically.

The spool (``export.spool``) holds records with template ids only; ``finalize_spool`` joins the final template
table in as the batches are read back.
"""

from __future__ import annotations

import json
import os
import queue
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from l4lite.errors import L4Error
from l4lite.export.spool import strings

ACCOUNTING_KEY = "l4lite.accounting"
COLUMNS = ("file", "line", "end_line", "node", "rank", "gpu", "source", "time", "level", "template_id",
           "template", "text")


def output_schema(metadata: dict[str, Any] | None = None) -> Any:
    import pyarrow as pa

    schema = pa.schema([("file", pa.string()), ("line", pa.int64()), ("end_line", pa.int64()), ("node", pa.string()),
                        ("rank", pa.int64()), ("gpu", pa.int64()), ("source", pa.string()),
                        ("time", pa.timestamp("us", tz="UTC")), ("level", pa.string()),
                        ("template_id", pa.string()), ("template", pa.string()), ("text", pa.string())])
    if metadata:
        schema = schema.with_metadata({k: json.dumps(v) for k, v in metadata.items()})
    return schema


def finalize_spool(path: Path, table: dict[int, tuple[str, str]]) -> Iterator[Any]:
    """Batches of final records: the spool's batches with the template id and text of their cluster."""
    import pyarrow as pa
    import pyarrow.compute as pc

    size = max(table, default=0) + 1
    ids: list[str] = [""] * size
    texts: list[str] = [""] * size
    for cid, (tid, text) in table.items():
        ids[cid] = tid
        texts[cid] = text
    id_array = strings(ids)
    text_array = strings(texts)
    schema = output_schema()
    with pa.OSFile(str(path), "rb") as source, pa.ipc.open_stream(source) as reader:
        for batch in reader:
            cluster = batch.column("cluster")
            columns = {
                **{name: batch.column(name) for name in ("file", "line", "end_line", "node", "rank", "gpu", "source",
                                                         "time", "level")},
                "template_id": pc.take(id_array, cluster),
                "template": pc.take(text_array, cluster),
                "text": batch.column("text"),
            }
            yield pa.record_batch([columns[name] for name in COLUMNS], schema=schema)


# -- writers -------------------------------------------------------------------------------------------


def prefetched(batches: Iterable[Any], depth: int = 2) -> Iterator[Any]:
    """``batches``, worked out in a background thread while the caller writes the ones before: Arrow's kernels
    and its Parquet writer release the GIL, so finalising the spool and writing the file overlap on two cores.
    An error in the thread is raised here; the thread stops when the caller stops early."""
    box: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()
    end = object()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                box.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for batch in batches:
                if not put(batch):
                    return
            put(end)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            put(exc)

    thread = threading.Thread(target=work, name="l4lite-finalize", daemon=True)
    thread.start()
    try:
        while True:
            item = box.get()
            if item is end:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        thread.join()


def iso_times(batch: Any) -> Any:
    """The time column as ISO 8601 text, ``2024-07-25T11:09:50.116000Z``: what ``strftime`` with
    ``%Y-%m-%dT%H:%M:%SZ`` gives, at a seventh of its cost (a cast without a time zone skips the zone lookups)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from l4lite.export.jsonlines import string_scalar

    naive = batch.column("time").cast(pa.timestamp("us")).cast(pa.string())  # UTC values, without the zone
    return pc.binary_join_element_wise(pc.replace_substring(naive, " ", "T", max_replacements=1),
                                       string_scalar("Z"), string_scalar(""))


def write_jsonl(batches: Iterable[Any], out: IO[bytes]) -> None:
    """JSON lines, one object per record, time as ISO 8601 (UTC)."""
    from l4lite.export.jsonlines import write_jsonl_batches

    write_jsonl_batches(batches, COLUMNS, out, {"time": iso_times})


def write_output(batches: Iterable[Any], path: Path, fmt: str, metadata: dict[str, Any]) -> None:
    """Write the records atomically; CSV and JSON lines get a sidecar ``<output>.meta.json`` with the
    accounting."""

    write_atomically(path, lambda tmp: write_file(batches, tmp, fmt, metadata), sidecar(fmt, metadata))


def sidecar(fmt: str, metadata: dict[str, Any]) -> dict[str, Any] | None:
    """What ``<output>.meta.json`` holds: the metadata, for CSV and JSON lines; Parquet keeps it in its footer."""
    return None if fmt == "parquet" else metadata


def write_file(batches: Iterable[Any], path: Path, fmt: str, metadata: dict[str, Any], header: bool = True) -> None:
    """The records as one file of ``fmt``; ``header=False`` leaves out the CSV header (of a part that joins
    another)."""
    if fmt == "parquet":
        write_parquet(batches, path, metadata)
    elif fmt == "csv":
        write_csv(batches, path, header)
    else:
        with path.open("wb") as fh:
            write_jsonl(batches, fh)


def write_atomically(path: Path, fill: Callable[[Path], None], sidecar: dict[str, Any] | None = None) -> None:
    """``fill`` a temporary file in ``path``'s folder, then rename it to ``path``: a reader never sees half a file.
    With ``sidecar``, ``<path>.meta.json`` holds it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise L4Error(f"{path}: cannot write: {exc.strerror or exc}") from None
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        fill(tmp)
        if sidecar is not None:
            from l4lite.diagnose.incident import write_atomic

            write_atomic(Path(f"{path}.meta.json"), json.dumps(sidecar, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, path)
    except OSError as exc:
        raise L4Error(f"{path}: cannot write: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)


DICTIONARY_COLUMNS = ("file", "node", "rank", "gpu", "source", "level", "template_id", "template")
UNSORTED_COLUMNS = ("text", "template")  # written without min/max statistics


def write_parquet(batches: Iterable[Any], path: Path, metadata: dict[str, Any]) -> None:
    import pyarrow.parquet as pq

    schema = output_schema(metadata)
    # Dictionary pages only for the few-valued columns: for the text (every line different) Arrow would build
    # a dictionary per row group and throw it away; zstd level 1 packs these columns as small as the default.
    # No min/max statistics for the two long texts, the line and its template: no reader skips a row group by
    # their sort order (``template_id`` keeps its statistics for that). The template's took a tenth of the
    # writer's instructions: a record's template mostly equals the one it is compared with, so every compare
    # runs to its end (callgrind, 100,000 records of a merged Slurm file: 482M instructions, 433M without both).
    with pq.ParquetWriter(str(path), schema, compression="zstd", compression_level=1,
                          use_dictionary=list(DICTIONARY_COLUMNS),
                          write_statistics=[name for name in COLUMNS if name not in UNSORTED_COLUMNS]) as writer:
        for batch in batches:
            writer.write_batch(batch.replace_schema_metadata(schema.metadata))


def write_csv(batches: Iterable[Any], path: Path | IO[bytes], header: bool = True) -> None:
    import pyarrow as pa
    import pyarrow.csv as pcsv

    schema = output_schema()
    csv_schema = schema.set(COLUMNS.index("time"), pa.field("time", pa.string()))
    with pcsv.CSVWriter(str(path) if isinstance(path, Path) else path, csv_schema,
                        write_options=pcsv.WriteOptions(include_header=header)) as writer:
        for batch in batches:
            columns = [iso_times(batch) if name == "time" else batch.column(name) for name in COLUMNS]
            writer.write_batch(pa.record_batch(columns, schema=csv_schema))
