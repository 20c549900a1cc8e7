"""A ``cat`` of several nodes' consoles read block by block: each node's agent begins its block, the streams'
hosts learnt above it say nothing of the lines below it (``[default0]:`` is every node's first local rank), and a
line that nothing else places takes the host the job ties to its block's agent. Lines are shaped as torchrun and
torchelastic write them (``fixtures/real_jobs/198-ignite-data``, ``205-ignite-netdrop``, ``164-deepspeed-cpu_throttle``).
"""

from __future__ import annotations

from pathlib import Path

from l4lite.ingest.agents import GlogSpans, agent_starts, agents_at_once
from l4lite.ingest.context import build_context
from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.records import Accounting, Record


def _launcher(pid: int, t: str = "19:05:06.625000") -> str:
    return (f"W1206 {t} {pid} torch/distributed/run.py:874] *****************************************\n"
            f"W1206 {t} {pid} torch/distributed/run.py:874] Setting OMP_NUM_THREADS environment variable for each "
            "process to be 1 in default\n")


def _steps(local: int, rank: int, n: int = 3, minute: str = "05:2") -> str:
    return "".join(f"[default{local}]:2026-12-06 19:{minute}{i},815 TinyLM-Training INFO: [rank{rank}] step {i + 1} "
                   "loss 5.70\n" for i in range(n))


def _rdzv(pid: int, host: str, t: str = "19:05:26.263000") -> str:
    """The agent's rendezvous name ``<host>_<pid>_0``: ties its pid to its host."""
    return (f"W1206 {t} {pid} torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1346] The node "
            f"'{host}_{pid}_0' has failed to shutdown the rendezvous 'none' due to an error\n")


def _spans(lines: list[str]) -> GlogSpans:
    spans = GlogSpans()
    for line in lines:
        spans.feed(line)
    return spans


def test_an_agent_started_with_another_and_cat_below_its_training_lines_ran_beside_it() -> None:
    """Both agents start at one moment (one ``srun``); the first node's agent logs nothing more, its workers'
    lines go on for 20 s under it, then the second console begins: the first agent reaches over its workers'
    lines, so the second one, starting before that, ran beside it."""
    a = _launcher(12451).splitlines() + _steps(0, 0).splitlines()
    b = _launcher(12493, "19:05:06.626000").splitlines() + _steps(0, 2).splitlines()
    assert agents_at_once(_spans(a + b), []) == 2
    assert agent_starts(_spans(a + b), []) == ["12451", "12493"]
    restarted = _launcher(12493, "19:05:40.000000").splitlines()  # one node's agent run again after its workers
    assert agents_at_once(_spans(a + restarted), []) == 0 and agent_starts(_spans(a + restarted), []) == []


def _ingest(job: Path) -> list[Record]:
    acc = Accounting()
    recs = list(iter_records([str(job)], IngestOptions(), acc))
    assert acc.balanced
    return recs


def test_a_cat_of_two_consoles_places_each_block_by_its_own_agent(tmp_path: Path) -> None:
    """node-a's console names its host in a worker's ``hostname:`` banner under ``[default0]:``; node-b's console,
    cat'ed below it, names its host only in its agent's rendezvous name. Its ``[default0]:`` lines are node-b's
    (not the host the same prefix had above), and so are its bare lines."""
    a = (_launcher(12451) + "[default0]:2026-12-06 19:05:18,816 ignite.distributed.utils INFO: hostname: node-a\n"
         + _steps(0, 0) + _rdzv(12451, "node-a"))
    b = (_launcher(12493, "19:05:06.626000") + _steps(0, 2, minute="05:1")
         + "[default0]:2026-12-06 19:05:19,000 TinyLM-Training ERROR: JSONDecodeError: Expecting ',' delimiter\n"
         + "RuntimeError: a bare line of node-b's worker\n" + _rdzv(12493, "node-b"))
    (tmp_path / "job").mkdir()
    (tmp_path / "job" / "job.out").write_text(a + b)
    ctx = build_context(discover([str(tmp_path / "job")], Accounting()).files)
    assert "job.out" in ctx.mixed and ctx.blocks["job.out"] == ["12451", "12493"]
    assert ctx.pids.get("12493") == "node-b"
    recs = _ingest(tmp_path / "job")
    assert {r.node for r in recs if "JSONDecodeError" in r.text} == {"node-b"}
    assert {r.node for r in recs if "[rank2] step" in r.text} == {"node-b"}
    assert {r.node for r in recs if "a bare line of node-b" in r.text} == {"node-b"}
    assert {r.node for r in recs if "[rank0] step" in r.text} == {"node-a"}
