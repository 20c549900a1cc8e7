"""The scan's per-message gates (metric line, telemetry header, job fact, phase marker) of a folded line shape
(``shape.fold_ids``): every gate word is ``fold_safe``, so all messages of one folded shape have one answer, and
the scan's run path finds it once per folded shape, not once per run of it."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import pytest
from test_fold import _MESSAGES, _fill, _id_scan

from l4lite.ingest.shape import fold_ids, shape_of
from l4lite.resources import rules_dir
from l4lite.scan import runpath
from l4lite.scan.points import message_gates

# messages with a gate word and an id next to it
_GATED = [
    "Saving checkpoint to /ckpt/{h8}", "loss {h8} at iteration {d}", "NCCL INFO Bootstrap : Using {h8}",
    "NCCL INFO comm 0x{h8} rank {d} Init COMPLETE", "clocks_throttle {h8}", "total steps = {d} id {h8}",
    "world size {d} id {h8}", "epoch {d} {h8} 12.5it/s", "Validation DataLoader {h8}", "training done {h8}",
]


def test_messages_of_one_folded_shape_have_one_gate_answer() -> None:
    rnd = random.Random(3)
    by_shape: dict[bytes, set[int]] = {}
    for _ in range(4000):
        msg = _fill(rnd, rnd.choice(_MESSAGES + _GATED))
        by_shape.setdefault(fold_ids(shape_of(msg)), set()).add(message_gates(msg))
    assert all(len(answers) == 1 for answers in by_shape.values())
    assert sum(1 for answers in by_shape.values() if answers != {0}) > 10


def test_the_run_path_gates_a_folded_shape_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines with new ids, some holding gate words, in many runs (a record between every few hundred lines):
    the scan equals the per-line reader's, and asks ``message_gates`` about each folded message shape once."""
    calls: list[bytes] = []
    gates = runpath.message_gates

    def counted(msg: str) -> int:
        calls.append(fold_ids(shape_of(msg)))
        return gates(msg)

    monkeypatch.setattr(runpath, "message_gates", counted)
    rnd = random.Random(11)
    lines = []
    for i in range(9000):
        stamp = datetime.fromtimestamp(1_733_011_200.0 + i * 0.7, tz=UTC)
        head = f"{stamp:%b} {stamp.day:2d} {stamp:%H:%M:%S} gpu-node01"
        if i % 300 == 299:  # a record of two lines: the run ends before it
            lines.append(f"{head} kernel: [{1000 + i * 0.7:12.6f}] NVRM: Xid (PCI:0000:3b:00): 13, pid={i}")
            continue
        pick = rnd.choice(_MESSAGES[:5]) if rnd.random() < 0.9 else rnd.choice(_GATED[:5])
        lines.append(f"{head} kernel: [{1000 + i * 0.7:12.6f}] {_fill(rnd, pick)}")
    f = tmp_path / "node001" / "kern.log"
    f.parent.mkdir()
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    folded, in_runs = _id_scan([str(f)], rules_dir() / "default.toml", fold_shapes=True)
    assert in_runs > 5000, in_runs
    asked = len(calls)
    plain, _ = _id_scan([str(f)], rules_dir() / "default.toml", line_shapes=False)
    assert folded == plain
    # once per folded shape of the lines in runs: about 370 shapes, as a line's own shape is learnt at first sight
    # where its token class (``shape.fold_class``) is known
    assert asked == len(set(calls[:asked])) < 400, asked
