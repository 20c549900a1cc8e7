"""A node whose lines name no host (job 161's preempted node: its agent was stopped before any line said where it
ran) beside a node whose lines do: its folder is a node like its sibling's, and its rank files are never placed on
the sibling by lines both nodes print alike."""

from __future__ import annotations

import shutil
from pathlib import Path

from l4lite.ingest.context import JobContext, build_context
from l4lite.ingest.files import discover
from l4lite.ingest.layout import infer_level
from l4lite.records import Accounting

JOB = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs" / "161-lightning-preempt"
NAMED, SILENT = "trn-sjc2-r08-n3", "trn-sjc2-r08-n4"  # only n3's lines name their host


def _context(root: Path) -> JobContext:
    acc = Accounting()
    return build_context(discover([str(root)], acc).files, accounting=acc)


def test_a_folder_holding_a_nodes_files_is_a_node_though_its_lines_name_no_host(tmp_path: Path) -> None:
    shutil.copytree(JOB / NAMED, tmp_path / "a")
    shutil.copytree(JOB / SILENT, tmp_path / "b")
    ctx = _context(tmp_path)
    assert ctx.node_of("a/console.log") == NAMED
    assert ctx.node_of("b/console.log") == "b"
    run = next((tmp_path / "b" / "torchelastic").iterdir()).name
    assert ctx.node_of(f"b/torchelastic/{run}/attempt_0/0/stderr.log") == "b"


def test_a_folder_of_other_files_is_no_node() -> None:
    rels = ["a/console.log", "a/torchelastic/r_abcdefgh/attempt_0/0/stderr.log", "b/console.log",
            "b/torchelastic/r_bcdefghi/attempt_0/0/stderr.log", "config/train.yaml"]
    level = infer_level(rels, {rels[0]: NAMED, rels[1]: NAMED})
    assert level.depth == 0
    assert "b" in level.names and "config" not in level.names


def test_a_rank_file_is_not_placed_by_lines_a_console_no_path_places_holds_too(tmp_path: Path) -> None:
    """n4's console saved apart under a name that names no host, its agent's run folder in a shared ``logs/``:
    the rank files' first lines (a library's warning) are copied in both nodes' consoles, so n3's copies say
    nothing of whose they are."""
    shutil.copytree(JOB / NAMED, tmp_path / NAMED)
    shutil.copy(JOB / SILENT / "console.log", tmp_path / "console-2.log")
    run = next((JOB / SILENT / "torchelastic").iterdir())
    shutil.copytree(run, tmp_path / "logs" / run.name)
    ctx = _context(tmp_path)
    assert ctx.node_of(f"{NAMED}/console.log") == NAMED
    for rank in ("0", "1"):
        assert ctx.node_of(f"logs/{run.name}/attempt_0/{rank}/stdout.log") != NAMED
