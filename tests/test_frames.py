"""Where a generic exception was raised (``rules.frames``): the innermost library frame of its traceback names the
component when the exception's own words name none. The tracebacks are written for these tests."""

from __future__ import annotations

import pytest

from l4lite.detect.rules import RuleDetector
from l4lite.records import Record
from l4lite.rules.frames import frame_component, library_frames
from l4lite.rules.pack import RulePack
from l4lite.scan.jobscan import Hit, JobScan

PACK = RulePack.load()
LIB = "/opt/venv/lib/python3.11/site-packages"


def traceback(frames: list[str], last: str) -> str:
    body = [f'  File "{p}", line {10 + i}, in f{i}\n    call()' for i, p in enumerate(frames)]
    return "\n".join(["Traceback (most recent call last):", *body, last])


def finding(text: str):
    message = text.splitlines()[-1]
    r = Record(file="rank0.log", line=1, end_line=1 + text.count("\n"), node="node01", rank=0, gpu=None,
               source="trainer", time=100.0, level="error", message=message, text=text)
    scan = JobScan()
    for m in PACK.match(r):
        scan.hits.append(Hit(m.rule.id, r, m.groups))
    return [f for f in RuleDetector(PACK).detect(scan) if f.role in ("root", "symptom")]


@pytest.mark.parametrize(("frames", "category"), [
    # tensors passed between worker processes through /dev/shm
    ([f"{LIB}/torch/utils/data/dataloader.py", "/usr/lib/python3.10/multiprocessing/queues.py",
      f"{LIB}/torch/multiprocessing/reductions.py"], "user_config"),
    # the DataLoader stacking a batch
    (["train.py", f"{LIB}/torch/utils/data/dataloader.py", f"{LIB}/torch/utils/data/_utils/fetch.py",
      f"{LIB}/torch/utils/data/_utils/collate.py"], "data"),
    (["train.py", f"{LIB}/torch/serialization.py"], "storage"),
    (["train.py", f"{LIB}/torch/distributed/rendezvous.py"], "network"),
    (["train.py", f"{LIB}/transformers/configuration_utils.py"], "user_config"),
    # a Windows install reads alike
    ([r"C:\work\train.py", r"C:\conda\envs\t\lib\site-packages\torch\serialization.py"], "storage"),
])
def test_the_innermost_library_frame_names_the_component(frames: list[str], category: str) -> None:
    found = frame_component(traceback(frames, "RuntimeError: odd"))
    assert found is not None and found.category == category


def test_user_frames_and_wrappers_are_skipped_and_only_the_innermost_library_frames_count() -> None:
    frames = [f"{LIB}/torch/serialization.py", f"{LIB}/torch/nn/modules/module.py", "/home/me/model.py"]
    assert library_frames(traceback(frames, "ValueError: x")) == [f"{LIB}/torch/serialization.py"]
    # a listed frame far out (the training loop's entry) does not speak for the library that raised
    deep = [f"{LIB}/torch/serialization.py", f"{LIB}/numpy/a.py", f"{LIB}/numpy/b.py", f"{LIB}/numpy/c.py"]
    assert frame_component(traceback(deep, "ValueError: x")) is None
    assert frame_component("RuntimeError: no frames at all") is None
    assert frame_component(traceback(["train.py", "model.py"], "RuntimeError: x")) is None


def test_a_generic_exception_raised_in_the_shm_hand_over_is_the_shared_memory_setting() -> None:
    text = traceback(["/usr/lib/python3.10/multiprocessing/queues.py", "/usr/lib/python3.10/multiprocessing/reduction.py",
                      f"{LIB}/torch/multiprocessing/reductions.py"],
                     "RuntimeError: unable to write to file </torch_2211_3079_0>")
    (f,) = finding(text)
    assert f.rule == "python-exception" and f.category == "user_config"
    assert "torch/multiprocessing/reductions.py" in f.data["component"]
    # the same exception without its frames stays the fallback's
    (g,) = finding("RuntimeError: unable to write to file </torch_2211_3079_0>")
    assert g.category != "user_config"


def test_the_line_s_own_words_come_before_the_frames() -> None:
    text = traceback([f"{LIB}/torch/multiprocessing/reductions.py"],
                     "OSError: [Errno 5] Input/output error: '/scratch/cache'")
    (f,) = finding(text)
    assert f.category == "storage"
