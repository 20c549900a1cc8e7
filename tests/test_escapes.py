"""Terminal escape sequences (colours, cursor moves) written by consoles, tqdm, rich and Ray's driver are removed
as a file's lines are read: records, templates and rules see the text a terminal showed, every line keeps its
number, and the fast path (runs of known shapes) reads a coloured file as the plain one."""

from __future__ import annotations

import random
import sys
from dataclasses import astuple
from pathlib import Path

from l4lite.ingest.decode import open_lines, without_escapes
from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.records import Accounting

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_runs import hand_made  # noqa: E402

GREEN, RED, RESET, UP, CLEAR = "\x1b[32m", "\x1b[1;31m", "\x1b[0m", "\x1b[A", "\x1b[2K"


def _records(path: Path, **options: bool) -> list[tuple]:
    return [astuple(r)[:-1] for r in iter_records([str(path)], IngestOptions(**options), Accounting())]


def _coloured(line: str, rnd: random.Random) -> str:
    """The line as a terminal would have been sent it: its level coloured, or a progress bar's cursor moves."""
    for level, colour in (("[INFO]", GREEN), ("[ERROR]", RED)):
        if level in line and rnd.random() < 0.7:
            return line.replace(level, colour + level + RESET)
    return CLEAR + line + UP if line and rnd.random() < 0.1 else line


def test_records_hold_no_escape_sequences(tmp_path: Path) -> None:
    f = tmp_path / "node7" / "console.log"
    f.parent.mkdir()
    f.write_text(f"2026-12-04 13:54:40,100 {GREEN}INFO{RESET} step 12 loss 1.25\n"
                 f"Writing model shards:   0%|          | 0/1 [00:00<?, ?it/s]{UP}\n"
                 f"2026-12-04 13:54:41,200 {RED}ERROR{RESET} CUDA error: an illegal memory access was encountered\n",
                 encoding="utf-8")
    records = list(iter_records([str(f)], IngestOptions(), Accounting()))
    assert [r.line for r in records] == [1, 2, 3]
    assert all("\x1b" not in r.message and "\x1b" not in r.text for r in records)
    assert records[0].message.endswith("step 12 loss 1.25")
    assert records[2].level == "error"
    shown = list(open_lines(discover([str(f)], Accounting()).files[0], Accounting()))  # a report's context lines
    assert [n for n, _ in shown] == [1, 2, 3] and all("\x1b" not in s for _, s in shown)


def test_a_coloured_log_reads_as_the_plain_one_in_runs_and_line_by_line(tmp_path: Path) -> None:
    rnd = random.Random(5)
    plain = hand_made(rnd)
    for name, lines in (("plain", plain), ("coloured", [_coloured(x, rnd) for x in plain])):
        (tmp_path / name / "node003").mkdir(parents=True)
        (tmp_path / name / "node003" / "rank3.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    want = _records(tmp_path / "plain" / "node003" / "rank3.log")
    got = tmp_path / "coloured" / "node003" / "rank3.log"
    assert "\x1b" in got.read_text(encoding="utf-8")
    assert len(want) > 2500
    for options in ({}, {"line_runs": False}, {"line_shapes": False}):
        assert _records(got, **options) == want


def test_a_coloured_ray_actor_prefix_loses_its_codes_too() -> None:
    """Ray's coloured ``(Actor pid=N, ip=A)`` prefix is read as the plain one (``tests/test_relay.py``)."""
    prefix = "\x1b[36m(RayTrainWorker pid=94, ip=127.0.1.2)\x1b[0m "
    lines = without_escapes([prefix + f"{GREEN}step 3{RESET}{UP}", "no codes"])
    assert lines == ["(RayTrainWorker pid=94, ip=127.0.1.2) step 3", "no codes"]
