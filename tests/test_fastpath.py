"""The fast path end to end: the records and templates of real job layouts are the same with the template
miner's caches as with Drain on every message (the plain path), through ingest, the scan and parse.

tests/test_mining.py checks the miner alone on single lines; this checks the whole chain on the committed
fixture jobs and on a job whose digits vary wildly (every cache key of the fast path gets exercised)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from test_engine import signature

from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.mining.miner import TemplateMiner
from l4lite.options import AnalyzeOptions
from l4lite.records import Accounting
from l4lite.scan.job import load_rules, scan_job

ROOT = Path(__file__).resolve().parent.parent
JOBS = [ROOT / "fixtures" / "jobs" / "ib-link-down"] + [
    ROOT / "fixtures" / "suite" / n for n in ("001-healthy_hard_negatives", "004-nvlink_error", "008-device_oom",
                                                "009-host_oom", "012-data_pipeline_fault")]


def _mined(job: Path, miner: TemplateMiner) -> list[tuple]:
    records = list(iter_records([str(job)], IngestOptions(), Accounting()))
    local = [miner.add(r.message) for r in records]
    table = miner.finalize()
    return [(r.file, r.line, r.end_line, r.node, r.rank, r.time, r.message, *table[c]) for r, c in
            zip(records, local, strict=True)]


@pytest.mark.parametrize("job", JOBS, ids=lambda p: p.name)
def test_records_and_templates_fast_equal_plain(job: Path) -> None:
    fast, plain = TemplateMiner(), TemplateMiner(cache_size=0)
    got = _mined(job, fast)
    assert got == _mined(job, plain)
    assert fast.drain_calls < plain.drain_calls  # the fast path did answer from its caches


def test_fast_path_with_varying_digits_and_tiny_caches(tmp_path: Path) -> None:
    """Redraw every digit of a job (new ranks, times, values, addresses) and mine with caches of 32 entries."""
    rnd = random.Random(3)
    src = JOBS[0]
    job = tmp_path / "job"
    for path in sorted(src.rglob("*.log"))[:6]:
        out = job / path.relative_to(src)
        out.parent.mkdir(parents=True, exist_ok=True)
        text = path.read_text(encoding="utf-8", errors="replace")
        # keep the timestamps parseable: redraw digits only after the first 30 characters of a line
        out.write_text("\n".join(line[:30] + re.sub(r"\d", lambda _: str(rnd.randrange(10)), line[30:])
                                 for line in text.splitlines()) + "\n", encoding="utf-8")
    assert _mined(job, TemplateMiner(cache_size=32)) == _mined(job, TemplateMiner(cache_size=0))


def test_scan_with_the_fast_miner_equals_the_plain_miner() -> None:
    options = AnalyzeOptions()
    rules = load_rules(options)
    for job in JOBS[1:3]:
        fast = scan_job([str(job)], options, rules=rules, miner=TemplateMiner())
        plain = scan_job([str(job)], options, rules=rules, miner=TemplateMiner(cache_size=0))
        assert signature(fast) == signature(plain), job.name


def _hex_word_lines(n: int, seed: int) -> list[str]:
    """Kernel- and storage-style lines whose hex ids change on every line, in every context masking treats
    apart (a path, after a digit and a dot, in a URL scheme, a host, a UUID, an exponent, a sign)."""
    rnd = random.Random(seed)

    def hx(k: int) -> str:
        return "".join(rnd.choice("0123456789abcdef") for _ in range(k))

    contexts = ["/{}", "0.{}", "1.{}", "-{}", "+{}", "x {} y", "{}://a", "node01-{}", "a.{}.com", "{}.cluster.local",
                "fe80::1%{}", "0000:cb:00.{}", "{}-abcd-1234-abcd-123456789abc", "sp {}", "[{}+{}]", "id={}", "({})",
                "1{}", "e{}", "mlx5_0 {}", "10.0.{}.1@o2ib {}", "CPU{}: {}"]
    lines = []
    for _ in range(n):
        k = rnd.choice([8, 9, 12, 16])
        word = rnd.choice(["0x" + hx(k), "0x" + hx(3), hx(k), hx(k).upper(), "1" * (k - 3) + "e12",
                           "12e" + "3" * (k - 3), "e" + "1" * (k - 1), str(rnd.randrange(10**k))])
        lines.append("event " + rnd.choice(contexts).format(word, hx(rnd.randrange(1, 7))) + " done")
    return lines


@pytest.mark.parametrize("cache_size", [100_000, 16])
def test_hex_words_and_kept_digits_fast_equal_plain(cache_size: int) -> None:
    """Messages whose hex ids (or tokens that keep digits, ``CPU7:``, ``<IP>@o2ib``) change on every line are
    answered from the caches, and get the templates Drain gives every message."""
    lines = _hex_word_lines(20_000, seed=5)
    fast, plain = TemplateMiner(cache_size=cache_size), TemplateMiner(cache_size=0)
    got = [fast.add(m) for m in lines]
    want = [plain.add(m) for m in lines]
    fast_table, plain_table = fast.finalize(), plain.finalize()
    assert [fast_table[c] for c in got] == [plain_table[c] for c in want]
    if cache_size > 1000:
        assert fast.drain_calls < len(lines) // 2


def test_hex_key_folds_ids_but_not_what_masking_tells_apart() -> None:
    from l4lite.ingest.shape import shape_of
    from l4lite.mining.miner import hex_key

    def key(text: str) -> bytes:
        return hex_key(shape_of(text))

    assert key("free callback for 0x5445f4d764bd") == key("free callback for 0x33a5")
    assert key("GPU-a3d6328b lost") == key("GPU-f9e1f0c2 lost")
    assert key("at /a3d6328b") != key("at /3ad6328b")  # a path component may not start with a digit
    assert key("x 12e45678") != key("x 12a45678")  # a number in exponent form
    assert key("GPU-A3D6328B") != key("GPU-99E1F0C2")  # upper case is left to the plain key


def test_hex_key_finds_the_words_of_its_reference_pattern() -> None:
    """``hex_key`` scans with a pattern that leaves part of its test to the fold (``_HEX_RUN``): it folds the
    same words as the reference pattern (``_HEX_WORD``) on keys made of the bytes that matter to either."""
    import random

    from l4lite.ingest.shape import _HEX_WORD, _fold_hex_word, hex_key

    rnd = random.Random(11)
    alphabet = [b"0", b"a", b"b", b"e", b"f", b"x", b"g", b"A", b" ", b"-", b"/", b".", b"_", b"[", b"\xc3\xa9"]
    for _ in range(20_000):
        key = b"".join(rnd.choice(alphabet) if rnd.random() < 0.3 else rnd.choice(alphabet[:4])
                       for _ in range(rnd.randrange(1, 40)))
        assert hex_key(key) == _HEX_WORD.sub(_fold_hex_word, key), key
    assert hex_key(b"at 0000000000 and aaaaaaaaaa") == b"at 0000000000 and aaaaaaaaaa"  # no letter, no digit
