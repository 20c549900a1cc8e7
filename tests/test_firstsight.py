"""Folded shapes learnt at first sight by token class (``l4lite.ingest.firstsight``): syslog and dmesg lines whose
numbers change width on nearly every line go in runs, and the records are the per-line reader's."""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from scan_helpers import spool_of

from l4lite.ingest import planlearn
from l4lite.ingest import runs as runs_module
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


def test_token_class_folds_runs_of_zeros_and_the_hex_letters_of_numbered_words() -> None:
    assert fold_class(b"pid 0000 at 0x0000 [ 000.000000]") == b"pid 0 at 0x0 [ 0.0]"
    # a name glued to a hex index is one token whatever the index's letters and width
    assert fold_class(b"scratch-OST000d-osc") == fold_class(b"scratch-OST00ce-osc") == b"scratch-OST0-osc"
    assert fold_class(b"00.0.0.000@o0ib") == fold_class(b"00.00.000.0@o0ib")
    # words without a digit keep their letters: the class of another message stays another
    assert fold_class(b"no digits") == b"no digits"
    # a hex number may have no digit (a pointer's tail): a word of hex letters alone is one
    assert fold_class(b"libc.so.0[00000+fdca]") == fold_class(b"libc.so.0[0000+00a0]") == b"libc.so.0[0+0]"
    assert fold_class(b"deadbeef failed 00") == b"0 failed 0" != fold_class(b"deadbeef fail 00")
    assert fold_class(b"OST0d bad") != fold_class(b"OST0d bid")


def _ost_job(tmp_path: Path) -> list[str]:
    """Lustre errors of OST targets over the whole hex range of their index (``OST00ce``, ``OST011d``) and IP
    addresses of every width: each line of a new folded shape, and of a new token class before the index's
    letters were folded."""
    paths = []
    for node in (1, 2):
        rnd = random.Random(node)
        up, t, lines = 5000.014231, 1_764_388_862.0, []
        for i in range(6000):
            up += rnd.expovariate(0.3)
            t += rnd.expovariate(0.3)
            stamp = datetime.fromtimestamp(t, tz=UTC)
            msg = (f"LustreError: 11-0: scratch-OST{rnd.randrange(300):04x}-osc-ffff{rnd.getrandbits(32):08x}: "
                   f"operation ost_connect to node 10.{node}.{rnd.randrange(256)}.{rnd.randrange(1, 255)}@o2ib "
                   f"failed: rc = -{rnd.choice((16, 19, 107, 110))}" if i % 2 else
                   f"nfs: server fs{i % 4}.cluster.local not responding, still trying")
            lines.append(f"{stamp:%b} {stamp.day:2d} {stamp:%H:%M:%S} node{node:02d} kernel: [{up:12.6f}] {msg}")
        f = tmp_path / f"node{node:03d}" / "kern.log"
        f.parent.mkdir()
        f.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(str(f))
    return paths


def test_names_with_hex_indices_go_in_runs_with_the_per_line_records(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A line whose folded shape is new only for a name's hex index (``OST00ce`` after ``OST011d``) is learnt at
    first sight: more than 97 % of the lines come in runs, and the spool is the per-line reader's; with a token
    class that keeps those letters more than four times as many lines are read one by one."""
    paths = _ost_job(tmp_path)
    total = 12000
    fast, state_f, in_runs = spool_of(paths, IngestOptions(fold_shapes=True), True, tmp_path / "f.arrows")
    plain, state_p, _ = spool_of(paths, IngestOptions(line_shapes=False), False, tmp_path / "p.arrows")
    assert fast.equals(plain)
    assert state_f == state_p
    assert in_runs > 0.97 * total, in_runs
    zeros = re.compile(rb"0{2,}")
    monkeypatch.setattr(runs_module, "fold_class", lambda folded: zeros.sub(b"0", folded))
    monkeypatch.setattr(planlearn, "fold_class", lambda folded: zeros.sub(b"0", folded))
    letters, state_l, by_letters = spool_of(paths, IngestOptions(fold_shapes=True), True, tmp_path / "l.arrows")
    assert letters.equals(plain)
    assert total - in_runs < (total - by_letters) / 4, (in_runs, by_letters)


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
