"""Which node wrote a file when no folder names it the usual way: a rank's log-dir file by its console's tee
copies, an agent's run folder as the widest folder a file inherits from, a no-machine folder of two nodes' files,
file names spelling the hosts out beside one folder holding them all, a ``cat`` whose lines state two agents'
pids, a local rank's label repeated on one line, and two ranks' untimed errors ordered by their error files."""

from __future__ import annotations

from pathlib import Path

from l4lite.ingest.attribution import inherited_hosts
from l4lite.ingest.context import build_context
from l4lite.ingest.files import discover
from l4lite.ingest.layout import infer_level
from l4lite.ingest.pids import between_one_node
from l4lite.records import Accounting, Record

AGENT = "W1205 23:45:35.153000 {pid} torch/distributed/run.py:874] Setting OMP_NUM_THREADS environment variable\n"
SUMMARY = "  time      : 2026-12-05_23:46:33\n  host      : {host}\n  rank      : {rank} (local_rank: {local})\n"
TB = ("Traceback (most recent call last):\n"
      '  File "/usr/lib/python3.11/multiprocessing/queues.py", line 244, in _feed\n'
      "RuntimeError: unable to allocate shared memory(shm) for file </torch_4624_{n}_0>: No space left on device\n")


def _context(tmp_path: Path, files: dict[str, str]):  # noqa: ANN202 - a JobContext
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    acc = Accounting()
    return build_context(discover([str(tmp_path)], acc).files, accounting=acc)


def _console(host: str, pid: int, ranks: tuple[int, int], body: str = "", named: bool = True) -> str:
    summary = "".join(SUMMARY.format(host=host, rank=r, local=i) for i, r in enumerate(ranks)) if named else ""
    return AGENT.format(pid=pid) + body + summary


def test_a_rank_file_is_placed_by_the_tee_copies_of_its_lines_in_one_nodes_console(tmp_path: Path) -> None:
    # the log folder shared by both agents: no path names a node, and node-b's console never names its run
    # folder (its agent died before its failure summary); its console holds the rank's lines as ``[default0]:``
    tb_b = TB.format(n=3776760911)
    ctx = _context(tmp_path, {
        "train-4242-node0421.out": _console("node0421", 4385, (0, 1)),
        "train-4242-node0422.out": AGENT.format(pid=4443) + "".join(f"[default0]:{ln}\n" for ln in tb_b.splitlines()),
        "logs/run-145_bpk1mw2x/attempt_0/0/stderr.log": "[rank0]: RuntimeError: Timed out waiting 30000ms for recv\n",
        "logs/run-145_ozqbm945/attempt_0/0/stderr.log": tb_b,
    })
    assert ctx.node_of("logs/run-145_ozqbm945/attempt_0/0/stderr.log") == "node0422"
    assert ctx.node_of("logs/run-145_bpk1mw2x/attempt_0/0/stderr.log") == "node0421"  # its ranks' node, as before


def test_tee_copies_of_a_line_every_node_prints_place_nothing(tmp_path: Path) -> None:
    same = "[2026-12-05 23:45:56,316] [WARNING] Setting accelerator to CPU, we were unable to detect it.\n"
    ctx = _context(tmp_path, {
        "train-4242-node0421.out": _console("node0421", 4385, (0, 1), f"[default0]:{same}"),
        "train-4242-node0422.out": _console("node0422", 4443, (2, 3), f"[default0]:{same}"),
        "logs/run-145_ozqbm945/attempt_0/0/stdout.log": same,
    })
    assert ctx.node_of("logs/run-145_ozqbm945/attempt_0/0/stdout.log") is None


def test_a_file_inherits_no_host_from_above_its_agents_run_folder() -> None:
    # ``logs/`` holds both agents' run folders; only node-a's files are placed: node-b's run folder says nothing
    rels = ["logs/run-1_bpk1mw2x/attempt_0/0/stderr.log", "logs/run-1_ozqbm945/attempt_0/0/stdout.log",
            "logs/notes.txt"]
    placed = {"logs/run-1_bpk1mw2x/attempt_0/0/stderr.log": "node-a"}
    got = inherited_hosts(rels, placed.get, [])
    assert "logs/run-1_ozqbm945/attempt_0/0/stdout.log" not in got
    assert got["logs/notes.txt"] == "node-a"  # a file outside any run folder still takes its folder's host


def test_a_no_machine_folder_whose_files_name_two_writers_stands_for_neither(tmp_path: Path) -> None:
    # every file in ``logs/`` under a number: node-a's console names its host at both ends, node-b's only in
    # its middle (its agent's rendezvous name); a file naming no host is then no one's by its folder
    middle = "".join(f"[default0]:step {i}\n" for i in range(40))
    rdzv = ("W1205 23:46:34.682000 4443 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1298] "
            "The node 'node-b_4443_0' has failed to shutdown the rendezvous 'run-145'.\n")
    ctx = _context(tmp_path, {
        "logs/000-console.log": _console("node-a", 4385, (0, 1)),
        "logs/001-console.log": AGENT.format(pid=4443) + middle + rdzv + middle,
        "logs/002-stdout.log": "[2026-12-05 23:45:56,363] [WARNING] a line that names no host at all, twice over\n",
    })
    assert ctx.node_of("logs/000-console.log") == "node-a"
    assert ctx.node_of("logs/001-console.log") == "node-b"
    assert ctx.node_of("logs/002-stdout.log") is None


def test_file_names_spelling_the_hosts_win_over_one_folder_holding_every_file() -> None:
    # ``flat/<host>_console.log``: only node-a's lines name it; ``flat`` agrees with it as well as the file names
    # do, but the file names spell the hosts out and keep node-b's files apart
    rels = [f"flat/{h}_{f}" for h in ("a100-rack2-14", "a100-rack2-15") for f in ("console.log", "stderr.log")]
    own = {"flat/a100-rack2-14_console.log": "a100-rack2-14"}
    level = infer_level(rels, own, {"a100-rack2-14"})
    assert level.depth == -1


def test_a_cat_whose_lines_state_two_agents_pids_is_mixed(tmp_path: Path) -> None:
    # one host named as a writer twice, the other once (its agent's rendezvous name): few mentions, but two
    # agents state their pids on two hosts, so the file is a merged one and its lines are placed line by line
    rdzv = ("W1205 23:46:34.682000 4443 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1298] "
            "The node 'node-b_4443_0' has failed to shutdown the rendezvous 'run-145'.\n")
    ctx = _context(tmp_path, {"job.out": _console("node-a", 4385, (0, 1)).replace(
        "  rank      : 0", "  exitcode  : 1 (pid: 4575)\n  rank      : 0") + "[default0]:x\n" * 50 + rdzv})
    assert "job.out" in ctx.mixed and ctx.node_of("job.out") is None
    assert ctx.pids.get("4443") == "node-b"


def _rec(line: int, text: str, node: str | None, rank: int | None = None) -> Record:
    return Record(file="job.out", line=line, end_line=line, node=node, rank=rank, gpu=None, source="app",
                  time=None, level="INFO", message=text, text=text)


def test_a_local_rank_label_repeated_on_one_line_stays_in_its_nodes_block() -> None:
    # two writes of rank 1's stream met on one line (``[default1]: [default1]:``): still a local rank's line
    recs = [_rec(1, "W1206 02:02:18.048000 9003 torch/distributed/run.py:874] x", "node-b"),
            _rec(2, "[default1]:Traceback (most recent call last):", None, 1),
            _rec(3, "[default1]: [default1]:   ^^^^^^^^^^^^^^^^^^^^", None, 1),
            _rec(4, "[default1]:ModuleNotFoundError: No module named 'packing_utils'", None, 1),
            _rec(5, "W1206 02:02:24.349000 9003 torch/distributed/elastic/multiprocessing/api.py:1028] y", "node-b")]
    assert [r.node for r in between_one_node(recs)] == ["node-b"] * 5
