"""Folded shapes learnt at first sight by token class (``l4lite.ingest.firstsight``): syslog and dmesg lines whose
numbers change width on nearly every line go in runs, and the records are the per-line reader's."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path

import pytest
from scan_helpers import spool_of

from l4lite.ingest.reader import IngestOptions
from l4lite.ingest.runs import RunReading
from l4lite.ingest.shape import fold_class

# numbers of several widths, hex words without leading zeros, addresses: a new folded shape on many lines
_MESSAGES = (
    "python[{pid}]: segfault at {h} ip {h} sp {h} error 4 in libc.so.6[{h}+{s}]",
    "IPv4: martian source 10.{a}.{b}.{c} from 10.{a}.0.{c}, on dev ib{d}",
    "LustreError: 11-0: scratch-OST{ost:04x}-osc: operation ost_connect to node 10.{a}.{b}.{c}@o2ib failed: rc = -{rc}",
    "CPU{b}: Core temperature above threshold, cpu clock throttled (total events = {pid})",
    "nfs: server fs{d}.cluster.local not responding, still trying",
    "mmfs: [E] Unable to access file system gpfs{d}, error {rc} (disk {b})",
)


def _fill(rnd: random.Random, template: str) -> str:
    return template.format(pid=rnd.randrange(1, 4_000_000), h=f"{rnd.getrandbits(44):x}",
                           s=f"{rnd.getrandbits(20):x}", a=rnd.randrange(0, 16),
                           b=rnd.randrange(0, 256), c=rnd.randrange(1, 255), d=rnd.randrange(4),
                           rc=rnd.choice((5, 16, 110)), ost=rnd.randrange(40))


def _job(tmp_path: Path) -> list[str]:
    paths = []
    for node in (3, 4):
        rnd = random.Random(node)
        up, t, lines = 950.818166, 1_764_388_862.0, []
        for i in range(8000):
            up += rnd.expovariate(0.5)
            t += rnd.expovariate(0.5)
            msg = _fill(rnd, _MESSAGES[i % len(_MESSAGES)])
            stamp = datetime.fromtimestamp(t, tz=UTC)
            head = f"{stamp:%b} {stamp.day:2d} {stamp:%H:%M:%S} node{node:02d}"
            if msg.startswith("mmfs"):
                lines.append(f"{head} {msg}")
            elif i % 2:
                lines.append(f"[{up:12.6f}] {msg}")
            else:
                lines.append(f"{head} kernel: [{up:12.6f}] {msg}")
        f = tmp_path / f"node{node:03d}" / "kern.log"
        f.parent.mkdir()
        f.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(str(f))
    return paths


def test_token_class_folds_runs_of_zeros_only() -> None:
    assert fold_class(b"pid 0000 at 0x0000 [ 000.000000]") == b"pid 0 at 0x0 [ 0.0]"
    assert fold_class(b"scratch-OST000d-osc") == b"scratch-OST0d-osc"
    assert fold_class(b"no digits") == b"no digits"


def test_lines_of_new_widths_go_in_runs_with_the_per_line_records(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """More than 93 % of the lines come in runs and the spool (rows, times, templates, cache hits, accounting) is
    the per-line reader's (a line given its shape after its window's clocks were worked out keeps its own time);
    without learning at first sight (a shape on its second line only) more than three times as many lines are
    read one by one."""
    paths = _job(tmp_path)
    total = 16000
    folded, state_f, in_runs = spool_of(paths, IngestOptions(fold_shapes=True), True, tmp_path / "f.arrows")
    plain, state_p, _ = spool_of(paths, IngestOptions(line_shapes=False), False, tmp_path / "p.arrows")
    assert folded.equals(plain)
    assert state_f == state_p
    assert in_runs > 0.93 * total, in_runs
    monkeypatch.setattr(RunReading, "_first_sight", lambda self, s, key, folded: None)
    _, _, second_sight = spool_of(paths, IngestOptions(fold_shapes=True), True, tmp_path / "s.arrows")
    assert total - in_runs < (total - second_sight) / 3, (in_runs, second_sight)
