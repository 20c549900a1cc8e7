"""The rank whose timed-out collective differs from every other rank's (``detect.pending``, ``detect.desync``).

The tracebacks are the shapes of a real four-rank gloo job (fixtures/real_jobs/085): one rank waits in a
``dist.barrier()`` nobody else enters, the others in the step's collectives (DDP's buffer broadcast in forward,
the gradient all-reduce in backward).
"""

from __future__ import annotations

from pathlib import Path

from scan_helpers import DigitMiner, rec

from l4lite.api import analyze
from l4lite.detect.desync import DesyncDetector
from l4lite.detect.pending import STEP, pending_op
from l4lite.options import AnalyzeOptions
from l4lite.records import Record
from l4lite.rules.pack import RulePack
from l4lite.scan.scanner import scan_records

REAL_JOBS = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs"
SITE = "/venv/lib/python3.11/site-packages/torch"
GLOO = ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 30000ms "
        "for recv operation to complete")
FRAMES = {
    "barrier": [('/run/faults.py', 178, 'at_step', 'dist.barrier()'),
                (f'{SITE}/distributed/c10d_logger.py', 83, 'wrapper', 'return func(*args, **kwargs)'),
                (f'{SITE}/distributed/distributed_c10d.py', 5356, 'barrier', 'work.wait()')],
    "all_gather": [('/run/train.py', 90, 'log_metrics', 'dist.all_gather(out, t)'),
                   (f'{SITE}/distributed/distributed_c10d.py', 3800, 'all_gather', 'work.wait()')],
    "backward": [('/run/train.py', 108, 'main', 'loss.backward()'),
                 (f'{SITE}/_tensor.py', 623, 'backward', 'torch.autograd.backward('),
                 (f'{SITE}/autograd/graph.py', 979, '_engine_run_backward', 'return Variable._execution_engine')],
    "forward": [('/run/train.py', 105, 'main', 'logits = model(batch)'),
                (f'{SITE}/nn/parallel/distributed.py', 2363, '_distributed_broadcast_coalesced',
                 'dist._broadcast_coalesced(')],
}


LOST = ("RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer "
        "[127.0.0.1]:58001. This is typically caused by a remote worker crashing.")


def traceback(rank: int, node: str, where: str, line: int = 1, error: str = GLOO) -> Record:
    body = ["Traceback (most recent call last):"]
    for path, n, func, code in FRAMES[where]:
        body += [f'  File "{path}", line {n}, in {func}', f"    {code}"]
    text = "\n".join(f"[rank{rank}]: {x}" for x in [*body, error])
    return rec(error, node=node, rank=rank, time=1000.0 + rank, file=f"{node}/rank{rank}.log", line=line,
               end_line=line + len(body), level="error", text=text)


def desync(records: list[Record]):  # type: ignore[no-untyped-def]
    return DesyncDetector().detect(scan_records(records, DigitMiner(), rules=RulePack.load()))


def test_the_op_each_rank_waited_in_is_read_from_its_frames_or_its_message() -> None:
    assert pending_op(traceback(2, "n1", "barrier")) == "barrier"
    assert pending_op(traceback(3, "n1", "all_gather")) == "all_gather"
    assert pending_op(traceback(1, "n0", "backward")) == STEP
    assert pending_op(traceback(0, "n0", "forward")) == STEP
    watchdog = ("[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=40, "
                "OpType=_ALLGATHER_BASE, Timeout(ms)=600000) ran for 600054 milliseconds before timing out.")
    assert pending_op(rec(watchdog)) == "allgather"
    assert pending_op(rec(GLOO)) is None  # no frames, no op: unread


def test_the_one_rank_in_a_barrier_while_the_others_run_the_step_is_named_with_its_node() -> None:
    found = desync([traceback(0, "n0", "forward"), traceback(1, "n0", "backward"),
                    traceback(2, "n1", "barrier"), traceback(3, "n1", "backward")])
    assert len(found) == 1
    f = found[0]
    # a collective no other rank is in is a code path the others did not take: the program's, and the root
    assert f.rank == 2 and f.node == "n1" and f.role == "root" and f.category == "software"
    assert "barrier" in f.explain and f.records[0].rank == 2


def test_ranks_that_lost_the_peer_that_timed_out_first_still_say_where_they_waited() -> None:
    """Two ranks time out (one in the stray barrier, one in the step); the other two then see the connection
    closed by a peer that gave up, inside the step's collectives (the HF Trainer's backward, fixtures 158)."""
    found = desync([traceback(0, "n0", "backward"), traceback(1, "n0", "backward", error=LOST),
                    traceback(2, "n1", "barrier"), traceback(3, "n1", "backward", error=LOST)])
    assert len(found) == 1 and found[0].rank == 2 and found[0].node == "n1"
    crashed = [traceback(r, f"n{r // 2}", "backward", error=LOST) for r in (0, 1, 3)]
    assert desync(crashed) == []  # rank 2 crashed on its own, in no collective: nobody strayed


def test_ranks_all_in_the_step_or_split_evenly_or_partly_unread_name_no_one() -> None:
    alike = [traceback(r, f"n{r // 2}", "backward") for r in range(4)]
    assert desync(alike) == []
    halves = [traceback(r, f"n{r // 2}", "barrier" if r < 2 else "backward") for r in range(4)]
    assert desync(halves) == []  # two nodes, two ops: which side strayed is not said
    unread = [*alike[:3], rec(GLOO, node="n1", rank=3, time=1003.0, file="n1/rank3.log", level="error")]
    unread[2] = traceback(2, "n1", "barrier")
    assert desync(unread) == []  # rank 3 does not say where it waited: it may be the one that stopped


def test_nccl_watchdog_ops_at_one_sequence_number_name_the_odd_rank() -> None:
    line = ("[Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=512, OpType={op}, "
            "Timeout(ms)=600000) ran for 600031 milliseconds before timing out.")
    records = [rec(line.format(rank=r, op="BARRIER" if r == 5 else "ALLREDUCE"), node=f"n{r // 4}", rank=r,
                   time=1000.0 + r, file=f"n{r // 4}/rank{r}.log") for r in range(8)]
    found = desync(records)
    assert len(found) == 1 and found[0].rank == 5 and found[0].node == "n1"


def test_the_real_job_names_the_rank_in_the_stray_barrier() -> None:
    incident = analyze(REAL_JOBS / "085-ddp-stray_barrier", AnalyzeOptions())
    assert incident.suspects[0].node == "h100-sxm-044"
    assert incident.category == "software"


ODD_RANKS = {"085-ddp-stray_barrier": 2, "113-ddp-collective_mismatch": 3, "154-deepspeed-stray_barrier": 1,
             "158-hf-stray_barrier": 2, "159-accelerate-collective_mismatch": 0}  # each job's ground truth


def test_the_odd_ranks_own_timeout_naming_its_collective_is_root_evidence_and_the_peers_are_cascade() -> None:
    """The odd rank's traceback ends in a timeout like every other rank's, but its frames name the collective no
    one else is in: that is the proof, and the peers' timeouts stay the cascade it caused."""
    for job in ODD_RANKS:
        incident = analyze(REAL_JOBS / job, AnalyzeOptions())
        odd = ODD_RANKS[job]
        root = [e for e in incident.evidence if e.role == "root"]
        own = [e for e in root if e.rank == odd and "Traceback" in e.text]
        assert own, job  # the rank's own traceback, not only its launcher's exit line
        assert all(e.rank in (odd, None) for e in root), job
        assert any(e.role == "cascade" and e.rank not in (odd, None) for e in incident.evidence), job
