"""A rank's torchelastic error file is found by its own shape where no path places it beside the rank's log, and
a process banner in an absl/glog line ties the header's process id to its host."""

from __future__ import annotations

import json

from l4lite.diagnose.errorfiles import error_records as read_error_records
from l4lite.diagnose.errorfiles import stated_by
from l4lite.ingest.errorfile import error_lines
from l4lite.ingest.pids import named_by_pid, pid_facts, pid_hosts
from l4lite.records import Record

TIMEOUT = ("RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out "
           "waiting 30000ms for recv operation to complete")
CLOSED = ("RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by "
          "peer [127.0.0.1]:49541")


def _error_json(message: str, stamp: int = 1796309782) -> str:
    stack = f'Traceback (most recent call last):\n  File "train.py", line 80, in main\n    work.wait()\n{message}\n'
    return json.dumps({"message": {"message": message, "extraInfo": {"py_callstack": stack,
                                                                     "timestamp": str(stamp)}}})


def _rec(text: str, *, file: str = "job.out", line: int = 1, node: str | None = None, rank: int | None = None,
         time: float | None = None) -> Record:
    return Record(file=file, line=line, end_line=line + text.count("\n"), node=node, rank=rank, gpu=None,
                  source="trainer", time=time, level=None, message=text.splitlines()[-1], text=text)


def _root(message: str, *, node: str = "n2", rank: int = 3, time: float = 1796309780.0) -> Record:
    return _rec(f"[rank{rank}]: Traceback (most recent call last):\n[rank{rank}]:   File \"train.py\", line 80\n"
                f"[rank{rank}]: {message}", file="job.out", line=900, node=node, rank=rank, time=time)


def test_an_error_record_is_read_by_its_keys_after_any_stream_label() -> None:
    read = error_lines("1: " + _error_json(TIMEOUT))
    assert read is not None and TIMEOUT in read[0] and read[1] == 1796309782.0
    assert error_lines('{"message": "boom"}') is None  # a JSON line of another writer: not torchelastic's record
    assert error_lines(_error_json(TIMEOUT)[:200]) is None  # cut short: not read as one
    assert error_lines(f"[rank1]: RuntimeError: {TIMEOUT}") is None


def test_the_error_file_stating_the_roots_exception_is_found_wherever_it_sits() -> None:
    candidates = read_error_records([_rec(_error_json(CLOSED), line=607, node="n1"),
                                     _rec(_error_json(TIMEOUT), line=776, node="n1"),  # another node's timeout
                                     _rec(_error_json(TIMEOUT), line=1362, node="n2")])
    found = stated_by(_root(TIMEOUT), candidates)
    assert found is not None and found.line == 1362


def test_a_node_less_error_file_is_taken_only_when_one_stands_out() -> None:
    one = read_error_records([_rec(_error_json(TIMEOUT), file="logs/003-error.json")])
    found = stated_by(_root(TIMEOUT), one)
    assert found is not None and found.file == "logs/003-error.json"
    # two ranks wrote the same bytes at the same second and no line names their host or rank: either could be
    # the root's, so neither is shown
    twins = read_error_records([_rec(_error_json(TIMEOUT), file=f"logs/00{k}-error.json") for k in (3, 7)])
    assert stated_by(_root(TIMEOUT), twins) is None
    # the one written when the root's rank failed stands out from one written a minute later
    apart = read_error_records([_rec(_error_json(TIMEOUT, 1796309782), file="logs/003-error.json"),
                                _rec(_error_json(TIMEOUT, 1796309842), file="logs/007-error.json")])
    found = stated_by(_root(TIMEOUT), apart)
    assert found is not None and found.file == "logs/003-error.json"


def test_an_error_file_of_another_rank_or_exception_is_not_taken() -> None:
    other_rank = read_error_records([_rec(_error_json(TIMEOUT), node="n2", rank=2)])
    assert stated_by(_root(TIMEOUT), other_rank) is None
    assert stated_by(_root(TIMEOUT), read_error_records([_rec(_error_json(CLOSED))])) is None


def test_an_absl_banner_ties_the_glog_header_id_to_its_host() -> None:
    lines = ["I1204 14:09:46.229105 140118394928000 train_jax.py:71] process 2/4 on a100-rack2-15: 1 local device(s)",
             "I1204 14:09:46.229105 140118394928111 train_jax.py:71] process 0/4 on a100-rack2-14: 1 local device(s)",
             "I1204 14:10:23.750231 140118394928000 train_jax.py:107] step 1/40 loss=2.7659"]
    banner = {"a100-rack2-15": "a100-rack2-15", "a100-rack2-14": "a100-rack2-14"}

    def host(message: str) -> str | None:
        return next((h for h in banner if f"on {h}" in message), None)
    pids = pid_hosts(*pid_facts(lines, host))
    assert pids == {"140118394928000": "a100-rack2-15", "140118394928111": "a100-rack2-14"}
    step = _rec(lines[2])
    assert [r.node for r in named_by_pid([step], pids)] == ["a100-rack2-15"]
    assert pid_hosts(*pid_facts(lines)) == {}  # without a banner reader, the header's id ties nothing


def test_a_labelled_roots_exception_line_is_read_without_its_srun_label() -> None:
    root = _rec(f"0: [default0]:[rank0]: Traceback (most recent call last):\n0: [default0]:[rank0]: {TIMEOUT}",
                line=68, node="n1", rank=0, time=1796309780.0)
    found = stated_by(root, read_error_records([_rec("0: " + _error_json(TIMEOUT), line=138, node="n1")]))
    assert found is not None and found.line == 138


def test_an_error_record_in_a_merged_stream_takes_the_time_it_states_not_its_neighbours(tmp_path) -> None:
    from l4lite.ingest.reader import IngestOptions, iter_records
    from l4lite.records import Accounting

    summary = "E1203 14:44:59.255000 24100 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1)"
    (tmp_path / "job.out").write_text(f"{summary}\n{_error_json(TIMEOUT, 1796309000)}\n")
    (tmp_path / "n1").mkdir()
    (tmp_path / "n1" / "error.json").write_text(_error_json(TIMEOUT, 1796309000))
    times = {r.file: r.time for r in iter_records([str(tmp_path)], IngestOptions(), Accounting())
             if r.text.startswith("{")}
    assert times["job.out"] == 1796309000.999  # its own whole second (read as of its end), not the summary's time
    assert times["n1/error.json"] is None  # alone in its file: nothing borrowed, as before
