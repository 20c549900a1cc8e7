"""A ``WordGate`` answers its pattern's ``search`` without the regex for lines that hold none of its words: every
alternative of the pattern must hold one of those words in a run of literal characters every match holds."""

from __future__ import annotations

import random
import re._parser as sre_parse  # the stdlib's own reading of a pattern: its alternatives and their literals

import pytest

from l4lite.detect.components import ERRORISH_GATE
from l4lite.rules.advisory import ADVISORY_GATE
from l4lite.rules.components import CASCADE_GATE
from l4lite.rules.word_gate import WordGate

GATES = {"cascade": CASCADE_GATE, "advisory": ADVISORY_GATE, "errorish": ERRORISH_GATE}


def covered(items: sre_parse.SubPattern | list, words: tuple[str, ...]) -> bool:
    """Whether every match of the sequence ``items`` holds one of ``words``: a run of its literals holds one, or
    a group it always matches does, or every branch of an alternation it always takes does."""
    run: list[str] = []
    for op, arg in [*items, (None, None)]:
        if op is sre_parse.LITERAL:
            run.append(chr(arg))
            continue
        text, run = "".join(run).lower(), []
        if any(w in text for w in words):
            return True
        if op is sre_parse.SUBPATTERN and covered(arg[3], words):
            return True
        if op is sre_parse.BRANCH and all(covered(b, words) for b in arg[1]):
            return True
    return False


@pytest.mark.parametrize("name", sorted(GATES))
def test_every_alternative_holds_one_of_the_words(name: str) -> None:
    gate = GATES[name]
    tree = sre_parse.parse(gate.pattern.pattern, gate.pattern.flags)
    assert covered(tree, gate.words)
    for drop in gate.words:  # and the check is no formality: without any one word, some alternative is bare
        assert not covered(tree, tuple(w for w in gate.words if w != drop)), drop


def test_a_gate_answers_as_its_regex() -> None:
    lines = ["[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7)", "Broken pipe",
             "torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 7 closing signal SIGTERM",
             "RuntimeError: CUDA out of memory. Tried to allocate 20.00 GiB", "Tried to allocate 3 PiB",
             "see the logs for an earlier error", "srun: error: node7: task 3: Terminated",
             "iteration 10 | loss 2.3 | grad norm 0.4", "INFO: writing the log for step 5", "",
             "This warning can be safely ignored.", "it's OK to ignore", "Will retry in 5 s", "No action needed",
             "Received \u017fIGTERM",  # a long s folds to "s" in the regex, not in str.lower: beyond ASCII
             "\u212aILLED by the OOM killer",  # the Kelvin sign folds to "k"
             "Connection reset by peer \u00e9", "RENDEZVOUS  was CLOSED", "| ERR!  |", "NVRM: Xid 79"]
    words = ["watchdog", "timeout", "nccl", "peer", "closed", "SIGTERM", "signal", "log", "for", "the", "task",
             "allocate", "TiB", "12", "Tried", "to", "got", "1", "0", "bytes", ":", " ", "\u212a", "heartbeat",
             "safely", "ignored", "is", "expected", "be", "retry", "killed", "ERR!", "|", "error", "FAIL", "s"]
    rng = random.Random(7)
    lines += [" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(3000)]
    for gate in GATES.values():
        for line in lines:
            assert (gate.search(line) is None) == (gate.pattern.search(line) is None), line
    assert CASCADE_GATE.search("Received \u017fIGTERM") is not None
    assert ERRORISH_GATE.search("\u212aILLED by the OOM killer") is not None


def test_a_gate_skips_the_regex_for_a_line_without_its_words() -> None:
    class Counting:
        calls = 0

        def search(self, text: str) -> None:
            Counting.calls += 1

    gate = WordGate(Counting(), ("watchdog",))  # type: ignore[arg-type]
    gate.search("step 5 loss 2.1")
    gate.search("W\u00e4tchdog")  # beyond ASCII: the regex decides
    gate.search("WATCHDOG")
    assert Counting.calls == 2
