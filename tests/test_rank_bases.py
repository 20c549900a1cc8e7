"""Two nodes' writers in one stream told apart without a host name: torchrun's ``[defaultL]:[rankG]:`` prefixes
give each node one first rank (``G - L``), so lines of two first ranks in one file are two nodes' (job 163: a
throttled node's console names no host, its peer's failure summary names its own; 161 as ``srun --label`` leaves
it)."""

from __future__ import annotations

from pathlib import Path

from l4lite.ingest.context import JobContext, build_context
from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.ingest.writers import rank_bases, vote_lines
from l4lite.records import Accounting

JOBS = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs"


def test_a_nodes_workers_share_one_first_rank() -> None:
    assert rank_bases([(0, 0), (1, 1)]) == {0}
    assert rank_bases([(2, 0), (3, 1)]) == {2}
    assert rank_bases([(0, 0), (1, 1), (2, 0), (3, 1)]) == {0, 2}
    one = vote_lines(["[default0]:[rank2]: Traceback", "[default1]:[rank3]: x", "[rank2]: no local prefix"])
    assert one.bases == {2}
    two = vote_lines(["[default0]:[rank0]: x", "[default1]:[rank1]: y", "[default0]:[rank2]: z"])
    assert two.bases == {0, 2}


def _cat(job: str, root: Path) -> None:
    """The job's node consoles, in one file as ``cat`` writes them."""
    root.mkdir()
    with (root / "job.out").open("wb") as fh:
        for p in sorted((JOBS / job).glob("*/console.log")):
            fh.write(p.read_bytes())


def _context(root: Path) -> JobContext:
    acc = Accounting()
    return build_context(discover([str(root)], acc).files, accounting=acc)


def test_a_cat_whose_workers_show_two_first_ranks_is_two_nodes(tmp_path: Path) -> None:
    """163: a100-rack2-14's console (ranks 0 and 1, its failure summary names it) above a100-rack2-15's (ranks 2
    and 3, no host named). The lines of ranks 2 and 3 are not the named host's."""
    _cat("163-accelerate-cpu_throttle", tmp_path / "job")
    ctx = _context(tmp_path / "job")
    assert "job.out" in ctx.mixed and ctx.node_of("job.out") is None
    recs = list(iter_records([str(tmp_path / "job")], IngestOptions(), Accounting()))
    other = [r for r in recs if r.text.startswith(("[default0]:[rank2]:", "[default1]:[rank3]:"))]
    assert other and all(r.node != "a100-rack2-14" for r in other)
    mine = [r for r in recs if r.text.startswith("[default0]:[rank0]:")]
    assert mine and all(r.node == "a100-rack2-14" for r in mine)


def test_an_srun_label_of_other_first_ranks_takes_no_host_another_label_named(tmp_path: Path) -> None:
    """161 as ``srun --label`` leaves it: label 0 (n3, ranks 0 and 1) names its host, label 1 (n4, ranks 2 and
    3, preempted) names none. Label 1's lines are not n3's: its ranks start elsewhere."""
    root = tmp_path / "job"
    root.mkdir()
    consoles = sorted((JOBS / "161-lightning-preempt").glob("*/console.log"))
    with (root / "job.out").open("wb") as fh:
        for label, p in enumerate(consoles):
            fh.writelines(f"{label}: ".encode() + ln for ln in p.read_bytes().splitlines(keepends=True))
    assert "job.out" in _context(root).mixed
    recs = list(iter_records([str(root)], IngestOptions(), Accounting()))
    stop = [r for r in recs if "Received 15 death signal" in r.text]
    assert stop and all(r.node != "trn-sjc2-r08-n3" for r in stop)
