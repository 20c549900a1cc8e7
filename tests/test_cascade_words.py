"""``cascade_search`` answers ``CASCADE.search`` without the regex for lines that hold none of ``CASCADE_WORDS``:
every alternative of ``CASCADE`` must hold one of those words in a run of literal characters it always matches."""

from __future__ import annotations

import random
import re._parser as sre_parse  # the stdlib's own reading of a pattern: its alternatives and their literals

from l4lite.rules.components import CASCADE, CASCADE_WORDS, cascade_search


def literal_runs(items: sre_parse.SubPattern) -> list[str]:
    """The runs of literal characters an alternative matches in every match (its top-level LITERAL items)."""
    runs, run = [], []
    for op, arg in items:
        if op is sre_parse.LITERAL:
            run.append(chr(arg))
        else:
            runs.append("".join(run))
            run = []
    runs.append("".join(run))
    return [r.lower() for r in runs if r]


def alternatives() -> list[sre_parse.SubPattern]:
    tree = sre_parse.parse(CASCADE.pattern, CASCADE.flags)
    assert len(tree) == 1 and tree[0][0] is sre_parse.BRANCH
    return tree[0][1][1]


def test_every_cascade_alternative_holds_one_of_the_words() -> None:
    alts = alternatives()
    assert len(alts) > 40
    for alt in alts:
        runs = literal_runs(alt)
        assert any(w in run for run in runs for w in CASCADE_WORDS), (runs, alt)


def test_cascade_search_answers_as_the_regex() -> None:
    lines = ["[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7)", "Broken pipe",
             "torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 7 closing signal SIGTERM",
             "RuntimeError: CUDA out of memory. Tried to allocate 20.00 GiB", "Tried to allocate 3 PiB",
             "see the logs for an earlier error", "srun: error: node7: task 3: Terminated",
             "iteration 10 | loss 2.3 | grad norm 0.4", "INFO: writing the log for step 5", "",
             "Received \u017fIGTERM",  # a long s folds to "s" in the regex, not in str.lower: beyond ASCII
             "Connection reset by peer \u00e9", "RENDEZVOUS  was CLOSED"]
    words = ["watchdog", "timeout", "nccl", "peer", "closed", "SIGTERM", "signal", "log", "for", "the", "task",
             "allocate", "TiB", "12", "Tried", "to", "got", "1", "0", "bytes", ":", " ", "\u212a", "heartbeat"]
    rng = random.Random(7)
    lines += [" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(3000)]
    for line in lines:
        assert (cascade_search(line) is None) == (CASCADE.search(line) is None), line
    assert cascade_search("Received \u017fIGTERM") is not None
