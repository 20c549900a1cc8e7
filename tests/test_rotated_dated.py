"""logrotate's dated pieces in every form its ``dateformat`` takes are one log, read oldest first."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.records import Accounting

LINES = ["2026-12-03 14:00:00,000 INFO step 1", "2026-12-03 14:10:00,000 INFO step 2",
         "2026-12-03 14:20:00,000 ERROR Traceback (most recent call last):"]


@pytest.mark.parametrize("second, first", [("-20261203-1796306400", "-20261203-1796306000"),  # -%Y%m%d-%s
                                        ("-2026120314", "-2026120313"),  # hourly: -%Y%m%d%H
                                        ("-20261203-140500", "-20261203-140000")])  # the kubelet's
def test_dated_pieces_are_one_log_oldest_first(tmp_path: Path, second: str, first: str) -> None:
    (tmp_path / "n1").mkdir()
    (tmp_path / "n1" / f"train.log{first}.gz").write_bytes(gzip.compress((LINES[0] + "\n").encode()))
    (tmp_path / "n1" / f"train.log{second}").write_text(LINES[1] + "\n")
    (tmp_path / "n1" / "train.log").write_text(LINES[2] + "\n")
    job = discover([str(tmp_path)], Accounting())
    assert [f.rel for f in job.files] == ["n1/train.log"]
    assert [p.rel for p in job.files[0].parts] == [f"n1/train.log{first}.gz", f"n1/train.log{second}", "n1/train.log"]
    texts = [r.text for r in iter_records([str(tmp_path)], IngestOptions(), Accounting())]
    assert [t.split(" INFO ")[-1] for t in texts[:2]] == ["step 1", "step 2"]


@pytest.mark.parametrize("name", ["train.log-20261203-1796306000.gz", "train.log-2026120314", "train.log.1"])
def test_a_followed_log_knows_its_dated_pieces(name: str) -> None:
    from l4lite.live.followio import rotation_stem

    assert rotation_stem(name) == "train.log"
