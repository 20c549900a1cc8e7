"""Which node a line is of when the archive's folders do not say it: stream prefixes that name no host, files
that are no node's, and ``srun --label`` tasks tied to the hosts their lines name."""

from __future__ import annotations

import json
from pathlib import Path

from l4lite.ingest.attribution import prefix_host
from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.records import Accounting, Record

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "real" / "corpus.jsonl"


def _dev_lines(excerpt_id: str) -> list[str]:
    with open(CORPUS, encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            if d["id"] == excerpt_id and d["split"] == "dev":
                return d["lines"]
    raise KeyError(excerpt_id)


def _ingest(*paths: Path) -> list[Record]:
    acc = Accounting()
    recs = list(iter_records([str(p) for p in paths], IngestOptions(), acc))
    assert acc.balanced
    return recs


def test_index_tags_are_no_hosts() -> None:
    assert not prefix_host("0")
    assert not prefix_host("D3")
    assert prefix_host("cn-d004")
    assert prefix_host("n1")


def test_milabench_index_prefix_names_no_node(tmp_path: Path) -> None:
    # real: ``opt-1_3b.0 [stderr] ...`` (mila-iqia/milabench#183), a single-node run's process index
    p = tmp_path / "excerpt.log"
    p.write_text("\n".join(_dev_lines("milabench183-nccl2143-reverse-path")) + "\n", encoding="utf-8")
    recs = _ingest(p)
    assert recs and {r.node for r in recs} == {None}
    assert any(r.message.startswith("ncclInternalError") for r in recs)
