"""``tail`` places the lines of a file no path places as ``analyze`` does after its whole read (``ingest.pids.Placer``:
by an agent's pid, by the failure summary quoting a traceback, a run between two lines of one node; and a ``cat``'s
agent blocks, ``ingest.agents.block_place``), a record at a time as the lines come."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from l4lite.ingest.pids import BetweenOneNode, Placer, between_one_node
from l4lite.records import Accounting

IB0 = "RuntimeError: [enforce fail at gloo/transport/tcp/device.cc:84] Unable to find address for: ib0"
STORE = "torch.distributed.DistStoreError: wait timeout after 30000ms, keys: /default_pg/0//cpu//0/2"


def _console(host: str, agent: int, local: int, exc: str, start: int) -> str:
    """A node's console as torchrun leaves it: the agent's banner, its workers' tee'd lines, a thread's glog line
    and stack dump no banner ties, the worker's traceback, and the failure summary quoting it under the host."""
    frames = ['  File "train.py", line 37, in main', '    dist.init_process_group("gloo")']
    worker = "".join(f"[default{local}]:{x}\n" for x in ("Traceback (most recent call last):", *frames, exc))
    quoted = "".join(f"    {x}\n" for x in frames)
    steps = "".join(f"[default{local}]:2026-12-05 08:11:{start + i:02d},100 INFO step {i} loss=1.{i}\n"
                    for i in range(6))
    return (f"W1205 08:11:{start:02d}.000000 {agent} torch/distributed/run.py:874] *****\n"
            f"I1205 08:11:{start:02d}.100000 {agent} torch/distributed/elastic/agent/server/api.py:525] rendezvous\n"
            + steps
            + f"E1205 08:11:{start + 6:02d}.000000    3132 coordination_service.cc:1549] tasks are unhealthy\n"
            "*** Check failure stack trace: ***\n"
            f"I1205 08:11:{start + 6:02d}.500000 {agent} torch/distributed/elastic/agent/server/api.py:700] waiting\n"
            + worker
            + f"E1205 08:11:{start + 7:02d}.847000 {agent} torch/distributed/elastic/multiprocessing/api.py:1002] "
            f"failed (exitcode: 1) local_rank: {local} (pid: {agent + 50}) of binary: python3\n"
            "Root Cause (first observed failure):\n[0]:\n  time      : 2026-12-05_08:11:06\n"
            f"  host      : {host}\n  rank      : {local + 2} (local_rank: {local})\n"
            f"  exitcode  : 1 (pid: {agent + 50})\n  error_file: /logs/{host}/attempt_0/{local}/error.json\n"
            f"  traceback : Traceback (most recent call last):\n{quoted}  {exc}\n  \n"
            "============================================================\n")


def _cat(tmp_path: Path) -> Path:
    """Two nodes' consoles cat'ed into one file of a host-like folder holding the whole job: no path names a node,
    and the two agents ran at once."""
    log = tmp_path / "login-node-01" / "all.log"
    log.parent.mkdir()
    log.write_text(_console("gpu-node-07", 12788, 0, STORE, 10) + _console("gpu-node-12", 12811, 0, IB0, 11))
    return log


def test_tail_places_a_cat_of_consoles_as_analyze_does(tmp_path: Path) -> None:
    from l4lite.ingest.context import build_context
    from l4lite.ingest.files import discover
    from l4lite.ingest.reader import IngestOptions, iter_records
    from l4lite.live.reader import default_reader_factory

    log = _cat(tmp_path)
    rel = "login-node-01/all.log"
    context = build_context(discover([str(tmp_path)], Accounting()).files, open_end=True)
    assert context.node_of(rel) is None and context.pids and context.quoted and context.blocks.get(rel)
    expected = list(iter_records([str(tmp_path)], IngestOptions().use(context), Accounting()))
    nodes = {r.node for r in expected}
    assert {"gpu-node-07", "gpu-node-12"} <= nodes  # placed by pid, quote, block and run
    lines = log.read_text().splitlines()
    reader = default_reader_factory(str(tmp_path), paths=[str(log)])(rel)
    got, held = [], 0
    for i, text in enumerate(lines, 1):
        got.extend(reader.feed(i, text))
        # records held for a later line keep the committed offset before them
        assert reader.pending_line is None or reader.pending_line <= min((r.line for r in expected[len(got):]),
                                                                         default=i)
        held += reader.pending_line is not None and not reader.r.out
    got.extend(reader.flush())
    assert held  # some records waited, complete, for the line that places them
    assert [r.as_row() for r in got] == [r.as_row() for r in expected]


def _rec(node: str | None, line: int, text: str = "a line of no one's") -> SimpleNamespace:
    return SimpleNamespace(node=node, rank=None, text=text, line=line, time=None)


def test_a_run_held_for_its_node_keeps_the_commit_before_it_and_a_flush_gives_it_unplaced() -> None:
    placer = Placer({}, {})
    assert placer.feed(_rec("n1", 1)) and placer.held_line is None
    inside = [_rec(None, 2), _rec(None, 3)]
    assert [placer.feed(r) for r in inside] == [[], []] and placer.held_line == 2  # waiting for what ends the run
    assert [r.node for r in placer.feed(_rec("n1", 4))] == ["n1", "n1", "n1"] and placer.held_line is None
    late = _rec(None, 5)
    assert placer.feed(late) == [] and placer.flush() == [late] and late.node is None  # a quiet stream: given as is
    after = _rec(None, 6)
    assert placer.feed(after) == [] and [r.node for r in placer.feed(_rec("n1", 7))] == ["n1", "n1"]


def test_between_one_node_a_record_at_a_time_is_the_whole_reads() -> None:
    recs = [_rec("n1", 1), _rec(None, 2), _rec(None, 3), _rec("n1", 4), _rec(None, 5), _rec("n2", 6), _rec(None, 7)]
    whole = [(r.line, r.node) for r in between_one_node(recs)]
    for r in recs[1:3] + recs[4:5]:
        r.node = None
    between = BetweenOneNode()
    out = [r for x in recs for r in between.feed(x)] + between.flush()
    assert [(r.line, r.node) for r in out] == whole == [(1, "n1"), (2, "n1"), (3, "n1"), (4, "n1"), (5, None),
                                                        (6, "n2"), (7, None)]


def test_a_tail_taken_up_inside_the_cat_places_the_lines_after_as_analyze_does(tmp_path: Path) -> None:
    # a restart from a committed offset, or lines read on after the job's context was built again: the reader
    # learns from the lines before where it starts whose block and whose run it starts inside
    from l4lite.ingest.context import build_context
    from l4lite.ingest.files import discover
    from l4lite.ingest.reader import IngestOptions, iter_records
    from l4lite.live.reader import default_reader_factory

    log = _cat(tmp_path)
    rel = "login-node-01/all.log"
    context = build_context(discover([str(tmp_path)], Accounting()).files, open_end=True)
    expected = list(iter_records([str(tmp_path)], IngestOptions().use(context), Accounting()))
    raw = log.read_bytes().splitlines(keepends=True)
    for cut in sorted({r.line for r in expected} - {1}):
        start = sum(len(x) for x in raw[:cut - 1])
        reader = default_reader_factory(str(tmp_path), paths=[str(log)])(rel, start)
        got = []
        for i, text in enumerate(raw[cut - 1:], cut):
            got.extend(reader.feed(i, text.decode().rstrip("\n")))
        got.extend(reader.flush())
        assert [(r.line, r.node) for r in got] == [(r.line, r.node) for r in expected if r.line >= cut], cut
