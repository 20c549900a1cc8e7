"""The one host-like folder a whole job was copied into (the submit host's ``login-node-01/``) is no node when the
job's files show several: a file naming several hosts, or agents of two nodes running at once."""

from __future__ import annotations

import shutil
from pathlib import Path

from l4lite.api import analyze
from l4lite.ingest.context import JobContext, build_context
from l4lite.ingest.files import discover
from l4lite.options import AnalyzeOptions
from l4lite.records import Accounting

JOB = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs" / "103-ddp-restart_srun"
SUBMIT = "login-node-01"


def _context(root: Path) -> JobContext:
    acc = Accounting()
    return build_context(discover([str(root)], acc).files, accounting=acc)


def _copied(tmp_path: Path) -> Path:
    """Every file of job 103 (``srun --label`` output of two nodes, a kernel log per node) in one folder."""
    dest = tmp_path / SUBMIT
    dest.mkdir()
    shutil.copy(JOB / "slurm-4203.out", dest / "002-slurm-4203.out")
    shutil.copy(JOB / "h100-sxm-031" / "kern.log", dest / "000-kern.log")
    shutil.copy(JOB / "h100-sxm-044" / "kern.log", dest / "001-kern.log")
    return tmp_path


def test_the_submit_hosts_folder_of_a_job_of_two_nodes_names_no_node(tmp_path: Path) -> None:
    root = _copied(tmp_path)
    ctx = _context(root)
    assert {ctx.node_of(f"{SUBMIT}/{n}") for n in ("000-kern.log", "001-kern.log", "002-slurm-4203.out")} == {None}
    incident = analyze(root, AnalyzeOptions(store=None))
    assert incident.suspects and incident.suspects[0].node == "h100-sxm-031", incident.summary


def test_a_host_folder_of_one_nodes_files_stands_for_it(tmp_path: Path) -> None:
    (tmp_path / "gpu-node-07").mkdir()
    (tmp_path / "gpu-node-07" / "train.log").write_text("2026-12-03 14:38:23,219 INFO step 1 loss 2.5\n"
                                                       "2026-12-03 14:38:24,219 INFO step 2 loss 2.4\n")
    (tmp_path / "gpu-node-07" / "kern.log").write_text("Dec  3 14:38:20 kernel: [ 3.2] EDAC MC0: ok\n")
    ctx = _context(tmp_path)
    assert ctx.node_of("gpu-node-07/train.log") == "gpu-node-07"
    assert ctx.node_of("gpu-node-07/kern.log") == "gpu-node-07"
