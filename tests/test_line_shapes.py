"""Reading lines from remembered shapes gives the same records as reading every line in full.

A file's lines of one shape (the same bytes once every ASCII digit is folded to 0) are read from the offsets of
the first line of that shape (``IngestOptions.line_shapes``). These tests compare both ways on every committed
fixture job, on the real excerpts, and on lines whose digits are redrawn at random (new times, ranks, hosts and
values, including impossible dates), so that every remembered shape is hit by lines with other digits.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import astuple
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from l4lite.ingest import reader as ingest
from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.records import Accounting

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_JOBS = sorted(p for p in (ROOT / "fixtures" / "suite").iterdir() if p.is_dir()) + [
    ROOT / "fixtures" / "jobs" / "ib-link-down", ROOT / "fixtures" / "ingest" / "merged",
    ROOT / "fixtures" / "ingest" / "per-rank", ROOT / "fixtures" / "ingest" / "tree"]


def _read(paths: list[str], shapes: bool) -> tuple[list[tuple], dict]:
    acc = Accounting()
    records = [astuple(r)[:-1] for r in iter_records(paths, IngestOptions(line_shapes=shapes), acc)]  # not shape
    return records, acc.to_dict()


def _same_both_ways(paths: list[str]) -> int:
    fast, plain = _read(paths, True), _read(paths, False)
    assert fast[1] == plain[1]
    for a, b in zip(fast[0], plain[0], strict=True):
        assert a == b
    return len(fast[0])


@pytest.mark.parametrize("job", FIXTURE_JOBS, ids=lambda p: p.name)
def test_fixture_jobs_read_the_same_with_and_without_shapes(job: Path) -> None:
    assert _same_both_ways([str(job)]) > 0


def test_real_excerpts_read_the_same(tmp_path: Path) -> None:
    """Each real excerpt as a file of its own, its lines repeated so that every shape is seen twice."""
    paths = []
    for n, row in enumerate(map(json.loads, (ROOT / "fixtures" / "real" / "real-failures.jsonl").open())):
        f = tmp_path / f"node{n:03d}" / "train.log"
        f.parent.mkdir()
        f.write_text("\n".join(row["lines"] * 2) + "\n", encoding="utf-8")
        paths.append(str(f))
    assert _same_both_ways(paths) > 0


def _redraw(text: str, rnd: random.Random) -> str:
    return re.sub(r"\d", lambda _: str(rnd.randrange(10)), text)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_redrawn_digits_read_the_same(tmp_path: Path, seed: int) -> None:
    """Every digit of real lines redrawn: times change second, minute and day (or become impossible dates,
    which are no timestamps), hosts and ranks change, and lines of one shape alternate with other shapes."""
    rnd = random.Random(seed)
    src = ROOT / "fixtures" / "ingest" / "merged"
    sample = [line for path in sorted(src.rglob("*")) if path.is_file()
              for line in path.read_text(encoding="utf-8", errors="replace").splitlines()]
    sample += [line for path in sorted((ROOT / "fixtures" / "suite" / "004-nvlink_error").rglob("*.log"))[:4]
               for line in path.read_text(encoding="utf-8").splitlines()[:60]]
    lines = [_redraw(rnd.choice(sample), rnd) if rnd.random() < 0.7 else rnd.choice(sample) for _ in range(400)]
    job = tmp_path / f"job{seed}"
    for i, name in enumerate(("node001/rank3.log", "10-0-3-17/train.log", "merged.log")):
        f = job / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("\n".join(lines[i::3]) + "\n", encoding="utf-8")
    assert _same_both_ways([str(job)]) > 0


def test_shapes_take_most_lines_off_the_full_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of it: on a trainer's log almost every line is read from a remembered shape."""
    calls = {"full": 0}
    full = ingest._FileReader._line

    def counting(self, lineno, s):  # noqa: ANN001, ANN202
        calls["full"] += 1
        return full(self, lineno, s)

    monkeypatch.setattr(ingest._FileReader, "_line", counting)
    n = len(_read([str(ROOT / "fixtures" / "suite" / "000-healthy")], True)[0])
    assert calls["full"] < n / 2
    calls["full"] = 0
    _read([str(ROOT / "fixtures" / "suite" / "000-healthy")], False)
    assert calls["full"] >= n
