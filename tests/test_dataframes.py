"""Where a generic exception was raised (``diagnose.dataframes``) and a stuck process's dead thread
(``diagnose.threads``), read from real tracebacks of ``fixtures/real_jobs``."""

from __future__ import annotations

from pathlib import Path

from l4lite.detect.base import Finding
from l4lite.diagnose.dataframes import raised_loading_data
from l4lite.diagnose.threads import dead_thread, died_in_thread
from l4lite.records import Record

JOBS = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs"


def _traceback(job: str, host: str, until: str, start: int = 0) -> str:
    """The lines of ``host``'s console from the first traceback at or after line ``start`` to the line ``until``."""
    lines = (JOBS / job / host / "console.log").read_text().splitlines()[start:]
    first = next(i for i, line in enumerate(lines) if "Traceback (most recent call last)" in line)
    last = next(i for i, line in enumerate(lines) if i > first and until in line)
    return "\n".join(lines[first:last + 1])


def _finding(text: str, node: str, rank: int | None, line: int, category: str = "storage") -> Finding:
    record = Record(file=f"{node}/console.log", line=line, end_line=line + text.count("\n"), node=node, rank=rank,
                    gpu=None, source="trainer", time=None, level="error", message=text.splitlines()[-1], text=text)
    return Finding(detector="rules", category=category, role="root", score=0.5, explain="", node=node,
                   records=[record])


def test_a_collate_error_is_raised_loading_data_and_a_model_error_is_not() -> None:
    collate = _traceback("094-ddp-short_sample", "h100-sxm-044", "stack expects each tensor")
    assert raised_loading_data(collate)
    # the same job's other node: its rank lost its peer inside DDP's forward (a model frame is innermost)
    lost = _traceback("094-ddp-short_sample", "h100-sxm-031", "Connection closed by peer")
    assert "dataloader.py" not in lost and not raised_loading_data(lost)
    # a user's own error raised in the training loop, not in a data frame
    user = _traceback("001-ddp-exception", "a100-rack2-15", "shape mismatch in attention block")
    assert not raised_loading_data(user)


def test_the_dataloader_s_own_timeout_is_raised_loading_data() -> None:
    assert raised_loading_data(_traceback("107-ddp-loader_stall", "trn-sjc2-r08-n3", "DataLoader timed out"))


def test_a_background_thread_s_death_names_the_stuck_rank_s_cause() -> None:
    node = "gpu-node-07"
    upload = _traceback("108-ddp-upload_enospc", node, "No space left on device")
    assert died_in_thread(_finding(upload, node, 0, 512))
    stuck = Finding(detector="hang", category="software", role="root", score=0.9, explain="", node=node,
                    data={"inferred": True, "hang": {"stuck_ranks": [0], "stuck_nodes": [node]}})
    died = _finding(upload, node, 0, 512)
    assert dead_thread([died, stuck], stuck) is died
    # another rank's thread, or the main thread's own traceback, says nothing of the stuck rank
    assert dead_thread([_finding(upload, node, 1, 512), stuck], stuck) is None
    main = _traceback("001-ddp-exception", "a100-rack2-15", "shape mismatch in attention block")
    assert dead_thread([_finding(main, node, 0, 40, "software"), stuck], stuck) is None
    # a thread that died after the stall was seen went down with its process
    stuck.time, died.time = 100.0, 200.0
    assert dead_thread([died, stuck], stuck) is None
    died.time = 50.0
    assert dead_thread([died, stuck], stuck) is died


def test_a_cut_shard_read_by_the_dataset_is_raised_loading_data() -> None:
    # numpy's reader fails inside the dataset's __getitem__ (fixtures/real_jobs/148: one node's copy cut short)
    assert raised_loading_data(_traceback("148-ddp-shard_truncated", "h100-sxm-044", "Failed to read all data"))


def test_a_framework_s_own_data_package_is_raised_loading_data() -> None:
    """184: a node's cut copy of Megatron's index file fails in ``megatron/core/datasets/indexed_dataset.py``, a
    data package inside a framework whose other frames (its layers) are the model's."""
    text = _traceback("184-megatron-idx_truncated", "h100-sxm-044", "ValueError: buffer is smaller")
    assert "megatron/core/datasets/indexed_dataset.py" in text
    assert raised_loading_data(text)
    layers = ('Traceback (most recent call last):\n  File "/v/site-packages/megatron/core/tensor_parallel/'
              'layers.py", line 9, in forward\n    x()\nValueError: bad')
    assert not raised_loading_data(layers)
