"""A Ray driver's log relays each actor's lines under a coloured prefix ``(RayTrainWorker pid=94, ip=A)``: such a
line is a copy. It belongs to the prefix's node, it has no time unless it prints one (not the driver's last time,
often minutes early), and a controller's quote of a rank's error (``[Rank 0 Error Snippet]:``) is one record with
the traceback it quotes."""

from __future__ import annotations

from dataclasses import astuple
from pathlib import Path

from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.ingest.relay import quoted_error, relayed_copy, relayed_from_afar
from l4lite.records import Accounting

JOB = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs" / "070-ray-erofs"


def _driver(**options: bool) -> list:
    recs = iter_records([str(JOB)], IngestOptions(**options), Accounting())
    return [r for r in recs if r.file == "node0421/driver.log"]


def test_a_relayed_line_goes_to_its_node_without_the_drivers_time() -> None:
    recs = {r.line: r for r in _driver()}
    assert not any("\x1b" in r.text for r in recs.values())
    copy = recs[156]  # "(RayTrainWorker pid=96, ip=127.0.1.2) Traceback ...": the worker on node0422
    assert copy.text.startswith("(RayTrainWorker pid=96, ip=127.0.1.2) Traceback")
    assert (copy.node, copy.time) == ("node0422", None)
    assert copy.end_line > copy.line  # its traceback is one record
    assert "OSError: [Errno 30]" in copy.message
    own = recs[1]  # the driver's own stamped line keeps its node and time
    assert own.node == "node0421" and own.time is not None
    local = next(r for r in recs.values() if r.text.startswith("(TrainController pid=235) "))
    assert local.node == "node0421" and local.time is None  # an actor of the driver's node: a copy too


def test_relayed_lines_read_alike_on_the_fast_and_the_plain_path() -> None:
    want = [astuple(r)[:-1] for r in _driver(line_shapes=False)]
    assert [astuple(r)[:-1] for r in _driver()] == want
    assert [astuple(r)[:-1] for r in _driver(line_runs=False)] == want


def test_a_quoted_rank_error_is_one_record_with_its_traceback(tmp_path: Path) -> None:
    f = tmp_path / "node1" / "controller.err"
    f.parent.mkdir()
    f.write_text("Error: Training failed due to worker errors:\n"
                 "[Rank 0 Error Snippet]:\n"
                 "Traceback (most recent call last):\n"
                 '  File "train.py", line 74, in train_loop\n'
                 "OSError: [Errno 30] Read-only file system: '/ckpt'\n"
                 "[Rank 1 Error Snippet]:\n"
                 "ray.train.WorkerGroupError: Training failed due to worker errors:\n")
    recs = list(iter_records([str(f)], IngestOptions(), Accounting()))
    spans = [(r.line, r.end_line) for r in recs]
    assert spans == [(1, 1), (2, 5), (6, 6), (7, 7)]  # a quote without a traceback under it stands alone
    assert recs[1].message.startswith("OSError: [Errno 30]")
    assert quoted_error(recs[1].text) and not quoted_error(recs[0].text)


def test_copies_are_told_by_their_prefix() -> None:
    assert relayed_copy("(RayTrainWorker pid=94, ip=10.0.0.2) step 3")
    assert relayed_copy("(TrainController pid=235) [Rank 0 Error Snippet]:\nTraceback")
    assert not relayed_copy("2026-12-04 13:53:11 INFO step 3 (pid=4)")
    assert relayed_from_afar("(RayTrainWorker pid=94, ip=10.0.0.2) step 3")
    assert not relayed_from_afar("(TrainController pid=235) step 3")


def test_the_controllers_reraise_is_a_copy_and_a_ranks_own_error_is_not() -> None:
    from l4lite.ingest.relay import controller_copy

    assert controller_copy("ray.train.WorkerGroupError: Training failed due to worker errors:")
    assert controller_copy("(TrainController pid=234) Error: Training failed due to worker errors:")
    assert controller_copy("[Rank 0 Error Snippet]:\nTraceback (most recent call last):")
    assert not controller_copy("RuntimeError: step 14 raised in user code")
