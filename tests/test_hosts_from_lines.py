"""Hosts worked out from the evidence in a job's lines where no path names them (one merged stream, files renamed
to numbers): a relayed actor prefix names its actor's node and never the file's, an address is tied to a host
wherever in a hostless file its statement sits, a torchelastic error record takes the node of the process that
raised its exception, and a traceback printed after a pid-named line is that process's."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

from l4lite.ingest.attribution import actor_prefix, address_of
from l4lite.ingest.errorfile import error_record_places
from l4lite.ingest.pids import BLOCK_RECORDS, between_one_node, named_by_pid
from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.records import Accounting, Record

EXC = "RuntimeError: shape mismatch in attention block: expected key length 64, got 63"


def _rec(text: str, *, line: int = 1, node: str | None = None, rank: int | None = None,
         time: float | None = None) -> Record:
    return Record(file="job.out", line=line, end_line=line + text.count("\n"), node=node, rank=rank, gpu=None,
                  source="trainer", time=time, level=None, message=text.splitlines()[-1], text=text)


def _error_json(message: str) -> str:
    stack = f'Traceback (most recent call last):\n  File "train.py", line 80, in main\n    step()\n{message}\n'
    return json.dumps({"message": {"message": message, "extraInfo": {"py_callstack": stack,
                                                                     "timestamp": "1796309782"}}})


def _records(tmp_path: Path, text: str) -> list[Record]:
    (tmp_path / "logs").mkdir(exist_ok=True)
    (tmp_path / "logs" / "000-job.out").write_text(text)
    return list(iter_records([str(tmp_path)], IngestOptions(), Accounting()))


def test_a_relayed_prefix_names_its_actor_not_the_drivers_other_lines(tmp_path: Path) -> None:
    recs = _records(tmp_path, "(RayTrainWorker pid=94, ip=10.0.0.2) step 1/40 | loss 5.70\n"
                              "Traceback (most recent call last):\n"
                              '  File "train.py", line 114, in <module>\n'
                              f"{EXC}\n")
    relayed, driver = recs[0], recs[-1]
    assert relayed.node == "10.0.0.2"  # the actor's node, by its address (no statement names the host)
    assert driver.node is None  # the driver's own traceback is not the relayed actor's node


def test_an_actor_banner_ties_its_prefix_address_to_the_host_it_names() -> None:
    out: Counter[tuple[str, str]] = Counter()

    def banner(message: str) -> str | None:
        return "trn-n4" if "up on trn-n4" in message else None
    line = "2026-12-04T14:25:14.6Z stderr F \x1b[36m(RayTrainWorker pid=95, ip=127.0.1.2)\x1b[0m worker 1/4 up on trn-n4"
    assert address_of(line, out, lambda h: h, banner) is None
    assert out == Counter({("127.0.1.2", "trn-n4"): 1})
    assert address_of(line, out, lambda h: h) is None and len(out) == 1  # without a banner reader: nothing
    local = actor_prefix("\x1b[36m(RayTrainWorker pid=323)\x1b[0m worker 2/4 up on trn-n3")
    assert local is not None and local[2] is None  # an actor of the driver's own node: no address
    assert actor_prefix("worker 2/4 up on trn-n3") is None


def test_a_hostless_files_banners_place_its_lines_and_its_actors(tmp_path: Path) -> None:
    # a Ray head pod's log renamed to a number: the actor of the driver's node names the driver's host, the one
    # relayed from another address names that address's host, for the lines far below them too
    pad = "".join(f"(PlacementGroupCleaner pid=265) Failed to query Ray Train Controller actor state {i}\n"
                  for i in range(600))  # past the sampled head and tail of the file
    text = ("2026-12-04 14:21:42,413\tINFO scripts.py:1043 -- Local node IP: 127.0.1.1\n"
            "(RayTrainWorker pid=95, ip=127.0.1.2) worker 1/4 up on trn-n4 (local rank 1)\n"
            "(RayTrainWorker pid=323) worker 2/4 up on trn-n3 (local rank 0)\n" + pad +
            "(RayTrainWorker pid=94, ip=127.0.1.2) step 15/40 | loss 3.58\n"
            "(RayTrainWorker pid=349) Traceback (most recent call last):\n"
            f"(RayTrainWorker pid=349) {EXC}\n" + pad)
    recs = {r.text.split(")", 1)[0]: r.node for r in _records(tmp_path, text) if "(RayTrainWorker" in r.text}
    assert recs["(RayTrainWorker pid=94, ip=127.0.1.2"] == "trn-n4"
    assert recs["(RayTrainWorker pid=349"] == "trn-n3"


def test_an_address_statement_anywhere_in_a_hostless_file_ties_it(tmp_path: Path) -> None:
    # one merged stream: a raylet's start-up line, which names its address and its host, sits in the middle
    pad = "".join(f"2026-12-04 14:22:3{i % 10},000\tINFO worker.py:1 -- waiting {i}\n" for i in range(800))
    text = (pad + "[2026-12-04 14:22:40,001 I 77 77] main.cc:1: Raylet started. node_manager address: "
            "10.0.0.2:0 object_manager address: 10.0.0.2:45701 hostname: node-b\n" + pad +
            "(RayTrainWorker pid=96, ip=10.0.0.2) OSError: [Errno 30] Read-only file system\n")
    recs = _records(tmp_path, text)
    assert recs[-1].node == "node-b"


def test_an_error_record_takes_the_node_of_the_one_process_raising_its_exception() -> None:
    err = _rec(_error_json(EXC), line=142)
    raised = _rec(f"[rank0]: Traceback (most recent call last):\n[rank0]: {EXC}", line=29, node="n1", rank=0)
    places = error_record_places([raised, err, _rec("step 3/40 loss=1.0", line=5, node="n2")])
    assert places == {("job.out", 142): places[("job.out", 142)]}
    assert (places[("job.out", 142)].node, places[("job.out", 142)].rank) == ("n1", 0)
    # ranks of two nodes failing alike: the record is either's, so it is placed on neither
    alike = _rec(f"[rank2]: {EXC}", line=60, node="n2", rank=2)
    assert error_record_places([raised, alike, err]) == {}
    # an exception no process's lines end in places nothing
    assert error_record_places([_rec("[rank0]: RuntimeError: another one entirely", node="n1", rank=0), err]) == {}


def test_alike_error_records_go_one_to_each_process_raising_their_exception() -> None:
    """Two ranks on two nodes fail alike and each leaves the same error record: which copy is whose cannot be
    told and changes nothing, so one goes to each node; with a third process raising it, a copy is missing, or
    a node holds two of the processes, and none is placed."""
    raised = _rec(f"[rank0]: Traceback (most recent call last):\n[rank0]: {EXC}", line=29, node="n1", rank=0)
    tee = _rec(f"[default0]:[rank0]: {EXC}", line=12, node="n1")  # the console's copy: the same process
    alike = _rec(f"[rank2]: {EXC}", line=60, node="n2", rank=2)
    errs = [_rec(_error_json(EXC), line=142), _rec(_error_json(EXC), line=150)]
    places = error_record_places([raised, tee, alike, *errs])
    assert {(p.node, p.rank) for p in places.values()} == {("n1", 0), ("n2", 2)} and len(places) == 2
    third = _rec(f"[rank3]: {EXC}", line=70, node="n2", rank=3)
    assert error_record_places([raised, alike, third, *errs]) == {}
    # two ranks of each node failing alike (a job-wide fault): which copy is which rank's is not known
    second = _rec(f"[rank1]: {EXC}", line=40, node="n1", rank=1)
    four = [*errs, _rec(_error_json(EXC), line=160), _rec(_error_json(EXC), line=170)]
    assert error_record_places([raised, second, alike, third, *four]) == {}
    # a record cut inside its traceback ends in a frame every rank shares: it ties no process
    cut = _rec('[rank3]: Traceback (most recent call last):\n[rank3]:   File "train.py", line 80, in main',
               line=80, node="n3", rank=3)
    assert {p.node for p in error_record_places([raised, cut, errs[0]]).values()} == {"n1"}


def test_a_rendezvous_name_ties_the_agents_pid_and_names_its_writer() -> None:
    """torchelastic's dynamic rendezvous calls each agent ``<host>_<pid>_<n>``: in a ``cat`` where nothing else
    names the second node, its agent's lines still name their host."""
    from l4lite.ingest.pids import pid_facts
    from l4lite.ingest.writers import writer_host

    line = ("W1203 14:42:48.963000 21635 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1346] The node "
            "'trn-sjc2-r08-n4_21635_0' has failed to send a keep-alive heartbeat to the rendezvous 'run-017'")
    assert writer_host(line) == "trn-sjc2-r08-n4"
    assert ("21635", "trn-sjc2-r08-n4") in pid_facts([line])[1]
    # another process's pid in the name ties nothing
    assert pid_facts([line.replace("21635 torch", "999 torch")])[1] == set()


def test_a_traceback_after_a_pid_named_line_is_that_processs() -> None:
    pids = {"140104215448448": "rack2-15"}
    step = _rec("I1204 14:10:24.912943 140104215448448 train_jax.py:107] step 14/40 loss=0.0005", time=100.5)
    tb = _rec(f"Traceback (most recent call last):\n{EXC}", line=2, time=100.5)  # timed by the line above
    later = _rec("[Gloo] Rank 0 is connected to 3 peer ranks", line=4, time=90.0)  # another file's own time
    assert [r.node for r in named_by_pid([step, tb, later], pids)] == ["rack2-15", "rack2-15", None]
    # a line the pid does not name ends it: what follows is not that process's
    other = _rec("I1204 14:10:24.912943 999 train_jax.py:107] step 14/40 loss=0.0005", time=100.5)
    tb2 = _rec(f"Traceback (most recent call last):\n{EXC}", line=3, time=100.5)
    assert [r.node for r in named_by_pid([step, other, tb2], pids)] == ["rack2-15", None, None]


def test_of_two_error_files_stating_one_exception_the_one_repeating_the_roots_frames_is_taken() -> None:
    from l4lite.diagnose.errorfiles import error_records, stated_by

    def record(frame: str, line: int) -> Record:
        stack = f'Traceback (most recent call last):\n  File "train.py", line {frame}, in main\n{EXC}\n'
        text = json.dumps({"message": {"message": EXC, "extraInfo": {"py_callstack": stack, "timestamp": "17"}}})
        return _rec(text, line=line)
    root = _rec(f'[rank3]: Traceback (most recent call last):\n[rank3]:   File "train.py", line 91, in main\n'
                f"[rank3]: {EXC}", line=900, node="n2", rank=3, time=17.5)
    found = stated_by(root, error_records([record("80", 10), record("91", 20)]))
    assert found is not None and found.line == 20
    assert stated_by(root, error_records([record("80", 10), record("85", 20)])) is None  # neither: a tie


def test_pod_logs_merged_under_stream_labels_lose_their_runtime_prefix(tmp_path: Path) -> None:
    # two pods' logs merged into one stream with a label per pod: each line's container prefix is read as in
    # the pod's own log (its time kept, its partial line joined), after the label
    (tmp_path / "job.out").write_text(
        "0: 2026-12-04T14:25:55.705458435Z stderr F (RayTrainWorker pid=349) Traceback (most recent call last):\n"
        f"0: 2026-12-04T14:25:55.705466531Z stderr F (RayTrainWorker pid=349) {EXC}\n"
        "1: 2026-12-04T14:25:56.000000000Z stdout P step 15/40 | loss\n"
        "1: 2026-12-04T14:25:56.000000001Z stdout F  3.58\n")
    recs = list(iter_records([str(tmp_path)], IngestOptions(), Accounting()))
    assert [r.text for r in recs] == [
        f"0: (RayTrainWorker pid=349) Traceback (most recent call last):\n(RayTrainWorker pid=349) {EXC}",
        "1: step 15/40 | loss 3.58"]
    assert recs[0].time is None  # a relayed actor's copy takes no time, as in the pod's own log
    assert recs[1].time is not None and abs(recs[1].time - 1796394356.0) < 0.01  # the runtime's time


def _summary(host: str, rank: int, pid: int) -> str:
    return ("Root Cause (first observed failure):\n[0]:\n  time      : 2026-12-03_15:13:00\n"
            f"  host      : {host}\n  rank      : {rank} (local_rank: 0)\n  exitcode  : 1 (pid: {pid})\n")


def _node_log(host: str, agent: int, worker: int, rank: int, pad: int) -> str:
    body = "".join(f"[default0]:[rank{rank}]: step {i} loss 1.0\n" for i in range(pad))
    return (f"W1203 15:12:30.408000 {agent} torch/distributed/run.py:874] Setting OMP_NUM_THREADS\n{body}"
            f"E1203 15:13:00.483000 {agent} torch/distributed/elastic/multiprocessing/api.py:1002] failed "
            f"(exitcode: 1) local_rank: 0 (pid: {worker}) of binary: python3\n" + _summary(host, rank, worker)
            + _summary(host, rank + 1, worker + 1))


def test_a_cat_of_two_nodes_is_voted_on_all_its_lines_not_its_two_ends(tmp_path: Path) -> None:
    """The second node's lines sit past the sampled head and before the sampled tail: read whole, the file names
    two writers, so its hostless lines are placed by pid and rank, never all on the first node."""
    from l4lite.ingest.context import build_context
    from l4lite.ingest.files import discover

    text = _node_log("compute-alpha", 9400, 9494, 0, 600) + _node_log("compute-beta", 9428, 9501, 2, 600) \
        + "".join(f"[default0]:[rank0]: eval {i}\n" for i in range(600))
    (tmp_path / "job.out").write_text(text)
    ctx = build_context(discover([str(tmp_path)], Accounting()).files)
    assert ctx.node_of("job.out") is None and ctx.mixed == ["job.out"]
    assert ctx.pids.get("9428") == "compute-beta" and (3, "compute-beta") in ctx.rank_ties
    recs = list(iter_records([str(tmp_path)], IngestOptions(), Accounting()))
    beta = [r for r in recs if "9428" in r.text]
    assert beta and {r.node for r in beta} == {"compute-beta"}


def test_a_loggers_level_word_after_a_zoned_time_is_no_syslog_host(tmp_path: Path) -> None:
    """``<time+05:30> <logger> INFO: ...`` is Python's ``%(name)s %(levelname)s``: the logger is not a host."""
    lines = "".join(f"2026-12-04T16:23:10.{i:03d}+05:30 ignite.distributed.utils INFO: step {i}\n" for i in range(5))
    recs = _records(tmp_path, lines)
    assert recs and {r.node for r in recs} == {None}


def test_a_rotated_logs_pieces_are_read_as_one_stream_for_its_pids(tmp_path: Path) -> None:
    """The failure summary naming a worker's host sits in the rotated ``.2.gz`` piece, the agent's line naming that
    worker in the current file: the pid -> host tie joins them across the rotation."""
    import gzip

    from l4lite.ingest.files import discover
    from l4lite.ingest.pids import file_pids

    (tmp_path / "job.out.2.gz").write_bytes(gzip.compress(_summary("compute-beta", 2, 9501).encode()))
    (tmp_path / "job.out.1").write_text("step 1\n")
    (tmp_path / "job.out").write_text("E1203 15:13:00.483000 9428 torch/distributed/elastic/multiprocessing/"
                                      "api.py:1002] failed (exitcode: 1) local_rank: 0 (pid: 9501) of binary: x\n")
    files = discover([str(tmp_path)], Accounting()).files
    assert len(files) == 1 and len(files[0].parts) == 3
    children, owners = file_pids(files[0])
    assert ("9428", "9501") in children and ("9501", "compute-beta") in owners


def test_a_process_banner_ties_its_rank_to_its_host_anywhere_in_a_labelled_stream(tmp_path: Path) -> None:
    """``srun --label`` over one task per node: the labels are nodes, and ``process 2/4 on cpu-node-b`` in the
    middle of the stream is what ties rank 2 to its host (a peer's ``Task 2 heartbeat timeout`` names that rank):
    a mention, the weakest of the ties."""
    from l4lite.ingest.context import build_context
    from l4lite.ingest.files import discover

    def node(label: int, host: str, first: int) -> str:
        head = "".join(f"{label}: I1204 14:12:48.7{r}0000 1398{r} train_jax.py:71] process {r}/4 on {host}: 1 local "
                       "device(s)\n" for r in (first, first + 1))
        return head + "".join(f"{label}: I1204 14:13:25.{i:06d} 1398{first} train_jax.py:107] step {i}/40 loss=1.0\n"
                              for i in range(900))

    (tmp_path / "job.out").write_text(node(0, "cpu-node-a", 0) + node(1, "cpu-node-b", 2))
    ctx = build_context(discover([str(tmp_path)], Accounting()).files)
    assert {(2, "cpu-node-b"), (3, "cpu-node-b"), (0, "cpu-node-a")} <= set(ctx.mention_ties)


def _labelled(label: int, host: str | None, rank: int, pad: int) -> str:
    """One node's task in an ``srun --label`` stream (``srun --label torchrun``): its error record (neither a rank
    prefix nor a host: the agent's error file, printed before the console's lines), its two ranks' lines, and,
    with ``host``, the agent's failure summary naming the host at the end."""
    body = "".join(f"{label}: [default{i % 2}]:[rank{rank + i % 2}]: step {i} loss 1.0\n" for i in range(pad))
    summary = f"{label}:   host      : {host}\n{label}:   rank      : {rank}\n" if host else ""
    return f'{label}: {{"message": {{"message": "RuntimeError: boom {label}"}}}}\n' + body + summary


def test_an_srun_label_takes_the_host_its_lines_name_anywhere_in_the_stream(tmp_path: Path) -> None:
    """The sampled ends show task 0 only; task 1's failure summary sits in the middle of the stream, after its
    error record. Read whole, the label's own lines name its host wherever they sit, and its hostless error
    record is that node's."""
    from l4lite.ingest.context import build_context
    from l4lite.ingest.files import discover

    (tmp_path / "job.out").write_text(_labelled(0, "compute-alpha", 0, 900) + _labelled(1, "compute-beta", 2, 900)
                                      + "".join(f"0: [default0]:[rank0]: eval {i}\n" for i in range(900)))
    ctx = build_context(discover([str(tmp_path)], Accounting()).files)
    assert ctx.task_hosts["job.out"] == {"0": "compute-alpha", "1": "compute-beta"}
    recs = list(iter_records([str(tmp_path)], IngestOptions(), Accounting()))
    assert [r.node for r in recs if "boom 1" in r.text] == ["compute-beta"]


def test_an_srun_label_takes_the_host_its_ranks_are_tied_to_and_no_host_for_ranks_of_two(tmp_path: Path) -> None:
    """No line of task 1 names a host; the job ties its ranks 2 and 3 to compute-beta, so the label runs there. A
    label whose ranks the job ties to two hosts takes neither."""
    from l4lite.ingest.writers import label_hosts, vote_lines

    lines = (_labelled(0, "compute-alpha", 0, 3) + _labelled(1, None, 2, 3) + _labelled(2, None, 4, 3)).splitlines()
    vote = vote_lines(lines)
    assert vote.label_ranks[("1", 3)] == 1 and vote.label_ranks[("1", 2)] == 2
    ties = [(2, "compute-beta"), (3, "compute-beta"), (4, "compute-gamma"), (5, "compute-delta")]
    assert label_hosts(vote, ties) == {"0": "compute-alpha", "1": "compute-beta"}
    assert label_hosts(vote, [(2, "compute-beta"), (3, "compute-beta"), (3, "compute-gamma")]) == {"0": "compute-alpha"}


def test_records_inside_one_nodes_block_of_a_cat_are_that_nodes() -> None:
    """A ``cat`` of two nodes' files: a glog line of a thread no banner ties, and the stack dump after it, sit
    between two lines of rack2-15's process: they are its. Between two nodes' blocks, or after a labelled line,
    nothing is placed; a rank's line keeps its own."""
    pids = {"140104215448448": "rack2-15", "140104215448449": "rack2-16"}
    own = _rec("I1204 14:10:24.912943 140104215448448 train_jax.py:107] step 14/40 loss=0.0005", time=100.5)
    thread = _rec("E1204 14:10:30.374982    3132 coordination_service.cc:1549] tasks are unhealthy", line=2,
                  time=106.0)
    dump = _rec("*** Check failure stack trace: ***", line=3, time=106.0)
    again = _rec("I1204 14:10:31.000000 140104215448448 train_jax.py:120] shutting down", line=4, time=107.0)
    other = _rec("I1204 14:10:31.000000 140104215448449 train_jax.py:120] shutting down", line=6, time=107.0)
    assert [r.node for r in named_by_pid([own, thread, dump, again], pids)] == ["rack2-15"] * 4
    thread.node = dump.node = None
    assert [r.node for r in named_by_pid([own, thread, dump, other], pids)] == ["rack2-15", None, None, "rack2-16"]
    thread.node = None
    labelled = _rec("0: I1204 14:10:24.912943 140104215448448 train_jax.py:107] step 14", node="rack2-15")
    assert [r.node for r in named_by_pid([labelled, thread, again], pids)][1] is None
    ranked = _rec("[rank3]: RuntimeError: boom", line=3, rank=3)
    assert [(r.node, r.rank) for r in named_by_pid([own, ranked, again], pids)][1] == (None, 3)


def test_a_shared_log_folders_files_take_the_node_their_ranks_run_on(tmp_path: Path) -> None:
    """torchelastic's ``--log-dir`` on shared storage beside an ``srun --label`` stream: no path names a node. The
    ``[rank3]:`` lines of a run folder's ``stderr.log`` are rank 3's, which the stream's failure summary ties to
    compute-beta; its error file and its unprefixed lines are that node's too. A file of ranks of two nodes
    takes neither."""
    from l4lite.ingest.context import build_context
    from l4lite.ingest.files import discover
    from l4lite.ingest.writers import rank_host, vote_lines

    (tmp_path / "job.out").write_text(_labelled(0, "compute-alpha", 0, 5) + _labelled(1, "compute-beta", 3, 5))
    run = tmp_path / "logs" / "run-015_o9p_oziu" / "attempt_0" / "1"
    run.mkdir(parents=True)
    (run / "stderr.log").write_text("  3%| 1/40 [00:01<00:03]\n" + "".join(f"[rank3]: step {i}\n" for i in range(5)))
    (run / "error.json").write_text(_error_json("RuntimeError: boom") + "\n")
    ctx = build_context(discover([str(tmp_path)], Accounting()).files)
    assert ctx.node_of("logs/run-015_o9p_oziu/attempt_0/1/stderr.log") == "compute-beta"
    assert ctx.node_of("logs/run-015_o9p_oziu/attempt_0/1/error.json") == "compute-beta"
    two = vote_lines(["[rank0]: a", "[rank3]: b", "[rank0]: c", "[rank3]: d"])
    assert rank_host(two, [(0, "compute-alpha"), (3, "compute-beta")]) is None


def test_a_cat_of_consoles_mostly_of_one_nodes_ranks_is_no_ones() -> None:
    """Ranks 0 and 1 are tied to gpu-node-07; rank 2 is tied to none. A ``cat`` of both nodes' consoles shows
    node 07's long tracebacks and one line of rank 2: the file is not node 07's."""
    from l4lite.ingest.writers import rank_host, vote_lines

    lines = [f"[default0]:[rank{r}]: frame {i}" for r in (0, 1) for i in range(40)] + ["[default0]:[rank2]: step 1"]
    assert rank_host(vote_lines(lines), [(0, "gpu-node-07"), (1, "gpu-node-07")]) is None
    assert rank_host(vote_lines(lines[:80]), [(0, "gpu-node-07"), (1, "gpu-node-07")]) == "gpu-node-07"


def _placed(node: str | None, text: str = "a line of no one's", rank: int | None = None) -> SimpleNamespace:
    return SimpleNamespace(node=node, rank=rank, text=text)


def test_hostless_records_inside_one_nodes_block_take_it_and_none_is_lost_or_repeated() -> None:
    inside = [_placed(None) for _ in range(3)]
    out = list(between_one_node([_placed("n1"), *inside, _placed("n1"), _placed(None), _placed("n2")]))
    assert len(out) == 7 and len({id(r) for r in out}) == 7
    assert [r.node for r in out] == ["n1", "n1", "n1", "n1", "n1", None, "n2"]  # between n1 and n2: nobody's


def test_a_run_of_hostless_records_too_long_for_a_block_stays_unplaced_and_whole() -> None:
    run = [_placed(None) for _ in range(BLOCK_RECORDS + 5)]
    out = list(between_one_node([_placed("n1"), *run, _placed("n1")]))
    assert len(out) == len(run) + 2 and len({id(r) for r in out}) == len(out)
    assert all(r.node is None for r in run)


def test_a_local_ranks_lines_inside_one_nodes_block_of_a_cat_take_it() -> None:
    """A ``cat`` of two nodes' consoles: ``[default0]:`` is local rank 0 on both, so its label says nothing of
    whose a line is (global rank 0's host is not its host); between two of gpu-node-12's agent lines it is that
    node's. A global rank's label (``[rank2]:``) keeps its own reading, and between two nodes nothing is placed."""
    agent_a, agent_b = _placed("gpu-node-07", "W1205 08:11:06 12788 run.py:874] *****"), \
        _placed("gpu-node-12", "W1205 08:11:08 12811 run.py:874] *****")
    local = [_placed(None, "[default0]:Traceback (most recent call last):", 0),
             _placed(None, "[default1]:RuntimeError: no interface named ib0", 1)]
    ranked = _placed(None, "[default0]:[rank2]: RuntimeError: no interface named ib0", 2)
    out = list(between_one_node([agent_a, agent_b, *local, agent_b]))
    assert [r.node for r in out] == ["gpu-node-07", "gpu-node-12", "gpu-node-12", "gpu-node-12", "gpu-node-12"]
    assert [r.node for r in between_one_node([agent_b, ranked, agent_b])] == ["gpu-node-12", None, "gpu-node-12"]
    local[0].node = None
    assert [r.node for r in between_one_node([agent_a, local[0], agent_b])] == ["gpu-node-07", None, "gpu-node-12"]


def _quoting_console(host: str, agent: int, local: int, exc: str) -> str:
    """A node's console as torchrun leaves it: its worker's traceback first (no line of the node before it), then
    the agent's lines and the failure summary quoting that traceback under the worker's host and ranks."""
    frames = '  File "train.py", line 37, in main\n    dist.init_process_group("gloo")\n'
    worker = "".join(f"[default{local}]:{x}\n" for x in ("Traceback (most recent call last):", *frames.splitlines(),
                                                         exc))
    quoted = "".join(f"    {x}\n" for x in frames.splitlines())
    return (worker + f"E1205 08:11:07.847000 {agent} torch/distributed/elastic/multiprocessing/api.py:1002] failed "
            f"(exitcode: 1) local_rank: {local} (pid: {agent + 50}) of binary: python3\n"
            "Root Cause (first observed failure):\n[0]:\n  time      : 2026-12-05_08:11:06\n"
            f"  host      : {host}\n  rank      : {local + 2} (local_rank: {local})\n"
            f"  exitcode  : 1 (pid: {agent + 50})\n  error_file: /logs/{host}/attempt_0/{local}/error.json\n"
            f"  traceback : Traceback (most recent call last):\n{quoted}  {exc}\n  \n"
            "============================================================\n")


def test_a_traceback_opening_a_nodes_console_in_a_cat_takes_the_host_of_the_summary_quoting_it(
        tmp_path: Path) -> None:
    """``cat`` of two nodes' consoles: gpu-node-12's ``[default0]:`` traceback comes right after gpu-node-07's
    summary, so no block of one node surrounds it; gpu-node-12's failure summary quotes its exception line under
    ``host : gpu-node-12``, ``local_rank: 0``, and that places it. The same exception printed under another local
    rank than the summary names stays unplaced."""
    ib0 = "RuntimeError: [enforce fail at gloo/transport/tcp/device.cc:84] Unable to find address for: ib0"
    store = "torch.distributed.DistStoreError: wait timeout after 30000ms, keys: /default_pg/0//cpu//0/2"
    stray = f"[default1]:Traceback (most recent call last):\n[default1]:{ib0}\n"
    text = (_quoting_console("gpu-node-07", 12788, 0, store) + _quoting_console("gpu-node-12", 12811, 0, ib0)
            + stray)
    recs = _records(tmp_path, text)
    tracebacks = {r.text.splitlines()[-1]: r for r in recs if r.text.startswith("[default")}
    assert tracebacks[f"[default0]:{store}"].node == "gpu-node-07"
    assert tracebacks[f"[default0]:{ib0}"].node == "gpu-node-12"
    assert tracebacks[f"[default1]:{ib0}"].node is None  # the summary quotes it for local rank 0 only


def test_an_exception_quoted_by_two_hosts_summaries_places_no_traceback(tmp_path: Path) -> None:
    """Every node failed alike: both summaries quote one exception line, which then says nothing of whose a
    traceback is; the traceback opening the second console stays unplaced."""
    from l4lite.ingest.pids import exception_key, quoted_hosts

    same = "RuntimeError: Connection reset by peer"
    recs = _records(tmp_path, _quoting_console("gpu-node-07", 12788, 0, same)
                    + _quoting_console("gpu-node-12", 12811, 0, same))
    assert all(r.node is None for r in recs if r.text.startswith("[default"))
    assert quoted_hosts([(same, "a", "0"), (same, "b", "0")]) == {}
    assert exception_key("[default0]:torch.distributed.DistStoreError: wait timeout") == "DistStoreError: wait timeout"
    assert exception_key('{"message": {"message": "RuntimeError: x y", "extraInfo": {}}}') is None  # errorfile's
    assert exception_key("  File \"train.py\", line 3, in main") is None


def test_a_ranks_line_placed_by_its_global_rank_does_not_end_its_nodes_block() -> None:
    """A ``cat`` of a node's console: the agent's banner, the local ranks' start-up lines (``[default0]:`` only),
    then rank 2's traceback (``[default0]:[rank2]:``, placed by the rank's host) and the agent's report. The
    start-up lines sit inside the node's block; the rank's line, placed on that node, continues the block rather
    than ending it. A rank's line of another node still ends it."""
    agent = _placed("cpu-node-b", "W1205 16:14:16.769000 13367 torch/distributed/run.py:874] *****")
    local = [_placed(None, "[default0]:INFO [rank2] initialized process group host=cpu-node-b", 0),
             _placed(None, "[default1]:INFO [rank3] initialized process group host=cpu-node-b", 1)]
    ranked = _placed("cpu-node-b", "[default0]:[rank2]: Traceback (most recent call last):", 2)
    report = _placed("cpu-node-b", "E1205 16:14:28.073000 13367 api.py:1002] failed (exitcode: -9)")
    assert [r.node for r in between_one_node([agent, *local, ranked, report])] == ["cpu-node-b"] * 5
    own = _placed(None, "2026-12-05 16:14:22,206 INFO [rank2] initialized")  # a rank's own file: no label, no rank
    assert [r.node for r in between_one_node([agent, own, ranked, report])] == \
        ["cpu-node-b", None, "cpu-node-b", "cpu-node-b"]
    for r in local:
        r.node = None
    other = _placed("cpu-node-a", "[default0]:[rank0]: Traceback (most recent call last):", 0)
    assert [r.node for r in between_one_node([agent, *local, other, report])] == \
        ["cpu-node-b", None, None, "cpu-node-a", "cpu-node-b"]
