"""``RulePack.match_ids`` gives the ids of ``RulePack.match_line``'s matches (the run path counts a
line's hits by them where each of those rules' evidence of the node is full)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from l4lite.rules.pack import RulePack
from l4lite.scan.runpath import hit_rule_id

REAL_JOBS = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs"

LINES = [
    "LustreError: 11-0: scratch-OST011d-osc-ffffcc89007a: operation ost_connect to node 10.0.0.110@o2ib failed: rc = -16",
    "Lustre: 91666:0:(client.c:2001:ptlrpc_expire_one_request()) @@@ Request sent has timed out for slow reply",
    "nfs: server fs2.cluster.local not responding, still trying",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error",
    "ValueError: something odd",
    "KeyError: 'model'",
    "Traceback (most recent call last):",
    "NCCL WARN socket timeout",
    "Out of memory: Killed process 4242 (python) total-vm:100kB",
    "mce: [Hardware Error]: Machine check events logged",
    "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.",
    "slurmstepd: error: *** JOB 12345 ON node01 CANCELLED AT 2024-01-01T00:00:00 DUE TO TIME LIMIT ***",
    "",
    "all good, step 10 loss 2.3",
]


def _messages() -> list[str]:
    """Lines of the real jobs' logs (their messages and whole lines) and the list above."""
    rng = random.Random(7)
    out = list(LINES)
    files = sorted(p for p in REAL_JOBS.glob("*/*/*") if p.is_file())
    for path in rng.sample(files, min(40, len(files))):
        lines = path.read_text(errors="replace").splitlines()
        out += [line for line in rng.sample(lines, min(60, len(lines))) if len(line) <= 4096]
    return out


@pytest.fixture(scope="module")
def pack() -> RulePack:
    return RulePack.load()


def test_ids_equal_match_line(pack: RulePack) -> None:
    by_message = tuple(rule for rule in pack.rules if rule.match == "message" and rule.shipped)
    assert any(rule.fallback for rule in by_message)
    met = 0
    for message in _messages():
        for source in (None, "kernel", "stderr"):
            for rules in (by_message, pack.line_rules(message.encode())[0] if pack.line_rules(message.encode())
                          else ()):
                expect = tuple(hit_rule_id(m) for m in pack.match_line((rules, ()), message, message, source))
                assert pack.match_ids(rules, message, source) == expect, (message, source)
                met += bool(expect)
    assert met > 50  # the lines meet rules, not only none

