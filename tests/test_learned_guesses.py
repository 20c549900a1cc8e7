"""What a guess of the learned component model may and may not decide: it names a category, never the scope of
the fault nor the node that is blamed. The excerpts are written for these tests; the model is replaced by one
that is sure of a job-wide category, which is the case the guards are there for."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from l4lite import analyze
from l4lite.evaluate.planting import Excerpt, JobPlanter
from l4lite.rules import learned
from l4lite.rules.components import is_cascade


class _SureOfConfig:
    """A model that calls every line a configuration fault, and is sure of it."""

    classes = ("user_config", "software")

    def support(self, text: str) -> int:
        return len(text.split())

    def known_words(self, text: str) -> frozenset[str]:
        return frozenset(text.lower().split())

    def proba(self, text: str) -> dict[str, float]:
        return {"user_config": 0.9, "software": 0.1}


@pytest.fixture()
def sure_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(learned, "shipped_model", lambda: _SureOfConfig())
    yield


def _run(tmp_path: Path, *lines: str) -> tuple[dict[str, Any], dict[str, Any]]:
    x = Excerpt(id="quiet", source_group="t#quiet", split="dev", status="incident", category="unknown",
                phase="train", faulty="Rank 5", lines=lines)
    job = JobPlanter(x, seed=3).write("node-folders", tmp_path / "job")
    truth = json.loads((job.path / "ground_truth.json").read_text())
    return analyze(str(job.path)).to_dict(), truth


def test_a_guess_about_a_stuck_nodes_own_line_keeps_the_node_blamed(tmp_path: Path, sure_model: None) -> None:
    """The stuck rank's one line of trouble names no component by the lexicon's words; the model's guess may give
    it a category, but a configuration guessed is no job-wide fault: the node that printed it stays the suspect."""
    inc, truth = _run(tmp_path, "shard reader: header of part 0042 looks invalid, skipping it for now",
                      "shard reader: 2048 parts are waiting in the retry queue")
    assert inc["scope"] == "node"
    assert inc["suspects"] and inc["suspects"][0]["node"] == truth["faulty_nodes"][0]


def test_srun_terminating_tasks_is_teardown() -> None:
    """srun reports the tasks it terminated while it tears the step down after another task failed: a cascade,
    never the root (its words read as an error and name nothing)."""
    assert is_cascade("srun: error: gpu-node-17: tasks 8-15: Terminated")
    assert is_cascade("srun: error: gpu-node-17: task 3: Terminated")
    assert not is_cascade("srun: error: gpu-node-17: task 3: Exited with exit code 1")


def test_the_model_does_not_guess_about_a_line_its_logger_rated_a_warning(sure_model: None) -> None:
    """A c10d warning that a socket's peer name "cannot be retrieved" reads as an error by its words, but its own
    logger rated it a warning: the learned model (here sure of a configuration fault) is not asked about it, so it
    gives no component finding; the same words at error level do."""
    from l4lite.detect.components import ComponentDetector
    from l4lite.mining.miner import TemplateMiner
    from l4lite.records import Record
    from l4lite.scan.scanner import Scanner

    def findings(level: str) -> list[str]:
        text = ("[W socket.cpp:755] [c10d] The hostname of the client socket cannot be retrieved. err=-3")
        scanner = Scanner(TemplateMiner())
        for node in ("node-a", "node-b"):
            scanner.add(Record("x.log", 1, 1, node, 0, None, "trainer", 1.0, "info", "step 1", "step 1"))
        scanner.add(Record("a.log", 2, 2, "node-a", 0, None, "trainer", 2.0, level, text, text))
        return [f.category for f in ComponentDetector().detect(scanner.finish())]

    assert findings("warning") == []
    assert findings("error") == ["user_config"]
