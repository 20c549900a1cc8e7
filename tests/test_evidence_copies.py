"""Copies of one root line fold into its first copy with a count (``diagnose.copies``)."""

from __future__ import annotations

from l4lite.diagnose.copies import collapse_copies
from l4lite.diagnose.incident import Evidence


def ev(file: str, line: int, text: str, role: str = "root", rank: int | None = None, node: str = "n1",
       source: str | None = "trainer", end_line: int | None = None) -> Evidence:
    return Evidence(file=file, line=line, node=node, rank=rank, time=None, text=text, template_id="t", rule="r",
                    role=role, score=1.0, end_line=end_line, source=source)


RETRY = "[W1205 23:35:{s:02d}.{n} socket.cpp:764] [c10d] The IPv6 network addresses of (node0421, 29684) cannot " \
        "be retrieved (gai error: -2 - Name or service not known)."


def test_retries_of_one_warning_fold_into_the_first_with_a_count() -> None:
    entries = [ev("n2/console.log", 5 + k, RETRY.format(s=k, n=310090679 + 7 * k)) for k in range(10)]
    entries.append(ev("n2/console.log", 16, "[E1205 23:35:56] [c10d] The client socket has timed out", "cascade"))
    out = collapse_copies(entries)
    roots = [e for e in out if e.role == "root"]
    assert [(e.line, e.count) for e in roots] == [(5, 10)]
    assert [e.role for e in out] == ["root", "cascade"]


def test_same_error_of_two_ranks_or_two_files_stays_apart() -> None:
    text = "[rank{r}]: RuntimeError: unable to allocate shared memory(shm) for file </torch_46{r}_1>"
    out = collapse_copies([ev("a/console.log", 10, text.format(r=0), rank=0),
                           ev("a/console.log", 30, text.format(r=1), rank=1),
                           ev("a/0/stderr.log", 10, text.format(r=0), rank=0)])
    assert [(e.file, e.line, e.count) for e in out] == \
        [("a/console.log", 10, 1), ("a/console.log", 30, 1), ("a/0/stderr.log", 10, 1)]


def test_tracebacks_that_raised_other_errors_are_not_copies() -> None:
    tb = "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n{err}"
    shm = "RuntimeError: unable to allocate shared memory(shm) for file </torch_{pid}_{n}_0>: No space left on device"
    out = collapse_copies([ev("s.log", 1, tb.format(err=shm.format(pid=4622, n=1875096739)), end_line=3),
                           ev("s.log", 4, tb.format(err="OSError: [Errno 28] No space left on device"), end_line=6),
                           ev("s.log", 7, tb.format(err=shm.format(pid=4624, n=3776760911)), end_line=9)])
    assert [(e.line, e.count) for e in out] == [(1, 2), (4, 1)]


def test_lines_that_say_other_numbers_are_other_events() -> None:
    # two malformed samples, three evaluations: what the lines say differs, not only when they said it
    skip = "2024-06-09 08:12:{s:02d} WARNING: skipping malformed sample {n} in shard-00273.jsonl.zst"
    evals = "[2024-06-09 08:1{m}:49,289] [INFO] [Rank 0] eval at step {step}: eval_loss={loss}"
    out = collapse_copies([ev("r.log", 62, skip.format(s=1, n=87518525)), ev("r.log", 64, skip.format(s=2, n=9839366)),
                           ev("r.log", 120, evals.format(m=2, step=60, loss=3.2)),
                           ev("r.log", 135, evals.format(m=3, step=72, loss=3.3228))])
    assert [e.count for e in out] == [1, 1, 1, 1]


def test_kernel_lines_repeating_are_kept_each() -> None:
    line = "kernel: NVRM: Xid (PCI:0000:{b}:00): 79, pid=1234, GPU has fallen off the bus."
    out = collapse_copies([ev("kern.log", k, line.format(b=10 + k), source="kernel") for k in range(3)])
    assert len(out) == 3
