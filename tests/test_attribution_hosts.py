"""Which node a line is of when the archive's folders do not say it: stream prefixes that name no host, files
that are no node's, and ``srun --label`` tasks tied to the hosts their lines name."""

from __future__ import annotations

import json
from pathlib import Path

from l4lite.ingest.attribution import prefix_host
from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.records import Accounting, Record
from l4lite.scan.jobscan import job_nodes

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


def _srun_label_torchrun(tmp_path: Path) -> Path:
    """The two node consoles of a real 2-node torchrun job as ``srun --label torchrun`` writes them: one task per
    node, so the label is the node's index, and each task's lines hold two ranks (``[default0]:``, ``[default1]:``)."""
    job = ROOT / "fixtures" / "real_jobs" / "003-ddp-hang"
    out = []
    for label, node in enumerate(("llm-pretrain-7f9c4-worker-0", "llm-pretrain-7f9c4-worker-1")):
        lines = (job / node / "console.log").read_text(encoding="utf-8").splitlines()
        out += [f"{label}: {line}" for line in lines]
    p = tmp_path / "slurm-1234.out"
    p.write_text("\n".join(out) + "\n", encoding="utf-8")
    return p


def test_srun_label_of_a_task_of_several_ranks_is_its_node_not_a_rank(tmp_path: Path) -> None:
    acc = Accounting()
    opt = IngestOptions()
    recs = list(iter_records([str(_srun_label_torchrun(tmp_path))], opt, acc))
    assert acc.balanced
    kill = next(r for r in recs if "Sending process 19644 closing signal" in r.text)
    # the agent of node 1 wrote it: its node from the label's host, no rank (label 1 is not global rank 1)
    assert (kill.node, kill.rank) == ("llm-pretrain-7f9c4-worker-1", None)
    # ranks tie to the hosts their own lines name, not to the label's node
    assert opt.rank_map.as_dict() == {0: "llm-pretrain-7f9c4-worker-0", 1: "llm-pretrain-7f9c4-worker-0",
                                      2: "llm-pretrain-7f9c4-worker-1", 3: "llm-pretrain-7f9c4-worker-1"}


def test_labelled_summary_reads_as_in_its_own_file(tmp_path: Path) -> None:
    recs = _ingest(_srun_label_torchrun(tmp_path))
    blocks = [r for r in recs if "Root Cause (first observed failure)" in r.text]
    assert [(r.node, r.rank) for r in blocks] == [("llm-pretrain-7f9c4-worker-0", 0),
                                                  ("llm-pretrain-7f9c4-worker-1", 3)]
    last = blocks[-1]
    assert last.text.startswith("1: ====") and "\n1: " not in last.text
    assert "\n  host      : llm-pretrain-7f9c4-worker-1\n  rank      : 3 (local_rank: 1)\n" in last.text
    assert "(root cause: rank 3, exitcode 1" in last.message


def test_a_file_of_no_node_adds_no_node() -> None:
    assert job_nodes({"node1": (1.0, 5), "node2": (2.0, 5), "unknown": (None, 3), "rank:4": (None, 1)}) == 2
    assert job_nodes({"unknown": (None, 3)}) == 1  # a job with no host at all still has its one stream
    assert job_nodes({"rank:0": (None, 3), "rank:1": (None, 3)}) == 2


def test_real_job_metadata_file_is_no_node() -> None:
    # fixtures/real_jobs keep the harness's ``_meta/run.json`` beside the two node folders
    from l4lite.api import analyze
    from l4lite.options import AnalyzeOptions

    job = ROOT / "fixtures" / "real_jobs" / "002-ddp-sigkill"
    assert (job / "_meta" / "run.json").is_file()
    incident = analyze([str(job)], AnalyzeOptions()).to_dict()
    assert incident["job"]["nodes"] == 2 and incident["stats"]["nodes"] == 2
