"""Folded line shapes (``shape.fold_ids``): hex ids of one width make one shape whatever their letters, and no
test the reader makes on a message can tell two lines of one folded shape apart.

The fold keeps the length and every byte but the hex letters of id-like words (``[0-9a-f]`` with a digit, or
``0x`` and such). ``_learn_folded`` keeps a line's header and its message's first character out of the fold
(``fold_from``); what the reader tests beyond them are literals (level, record-kind, source and rank words). A
literal each of whose words holds a character outside ``[0-9a-fx]`` (``fold_safe``) is found at the same places
in every text of a folded shape. These tests list the literals and check each, compare the window fold with the
line fold, and spool logs of new ids on every line (also where the message would make the header reader decide
otherwise) with folded shapes and with the per-line reader.
"""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from scan_helpers import spool_of

from l4lite.ingest import lineclass as lc
from l4lite.ingest.blocks import fold_window
from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_job
from l4lite.ingest.shape import (
    FOLD_DIGITS,
    fold_ids,
    fold_safe,
    hex_key,
    shape_of,
    wide_fold,
    wide_signature,
    wide_spans,
)
from l4lite.ingest.shaperun import ShapeRun
from l4lite.mining.miner import TemplateMiner
from l4lite.records import Accounting


def _alternatives(pattern: re.Pattern[str]) -> list[str]:
    """The literal branches of a flat alternation (``lineclass._ERROR``), lookarounds dropped."""
    return [re.sub(r"\(\?[!=<][^)]*\)", "", branch) for branch in pattern.pattern.split("|")]


# every literal the reader looks for in a message or a line (lineclass, reader, header)
READER_LITERALS = (
    list(lc._STORAGE) + list(lc._KERNEL) + list(lc._LAUNCHER) + list(lc._LAUNCHER_PATHS) + list(lc.HINTS)
    + list(lc.FRAME_STARTS) + list(lc.CHAIN_MARKERS) + list(lc.CONTINUATION_STARTS) + list(lc.NCCL_EXC_LINES)
    + list(lc.STRONG_CONTINUATION) + list(lc._ERROR_STARTS) + sorted(lc.LEVEL_WORDS)
    + _alternatives(lc._ERROR) + _alternatives(lc._WARNING) + list(lc._CLASSIFY_DIGITS) + list(lc._STORAGE_DIGITS)
    + ["Traceback (most recent call last)", "==== backtrace", "NVRM: ", "Exception raised from ", "what():",
       "NCCL ", "NCCL WARN", "NCCL INFO", "NCCL", "oom-killer", "ChildFailedError", "distributed", "nranks",
       "[Rank ", "[rank", "global_ranks=[", "srun: error: ", "slurmstepd: error: ", " [std", ": ", "]:", ">:",
       " pid=", "\r"]
)


def test_every_literal_the_reader_tests_is_fold_safe() -> None:
    assert len(READER_LITERALS) > 100
    unsafe = [w for w in READER_LITERALS if not fold_safe(w)]
    assert not unsafe


def test_fold_safe_refuses_literals_a_folded_word_may_hold() -> None:
    for literal in ("dead", "bad parameter", "0x", "cafe1", "face", "Error 0ad"):
        assert not fold_safe(literal), literal
    for literal in ("Lustre", "mlx5_", "ib0:", "NVRM: ", "Segmentation fault", "[Rank "):
        assert fold_safe(literal), literal


def test_a_fold_safe_literal_is_found_alike_in_every_text_of_a_folded_shape() -> None:
    """Random texts of hex-ish words around literals: two texts of one folded shape hold each fold-safe literal
    at the same places (the property the reader's tests rely on), as texts of one shape do: digits told apart
    by their values are the digit fold's own matter (``lineclass.source_by_digits``), so both are compared
    with their digits folded."""
    rnd = random.Random(3)
    literals = [w for w in READER_LITERALS if fold_safe(w) and w.isascii()]
    pieces = ["0", "a", "f", "x", "e", "1", "9", " ", "-", ":", "[", "."]
    by_shape: dict[bytes, list[str]] = {}
    for _ in range(30_000):
        words = [rnd.choice(literals) if rnd.random() < 0.2 else
                 "".join(rnd.choice(pieces) for _ in range(rnd.randrange(1, 6))) for _ in range(rnd.randrange(1, 5))]
        text = "".join(words)
        by_shape.setdefault(fold_ids(shape_of(text)), []).append(text)
    patterns = [re.compile(re.escape(shape_of(w))) for w in literals]
    compared = 0
    for texts in by_shape.values():
        first = shape_of(texts[0])
        for text in texts[1:]:
            other = shape_of(text)
            for p in patterns:
                assert [m.start() for m in p.finditer(first)] == [m.start() for m in p.finditer(other)], \
                    (p.pattern, texts[0], text)
            compared += 1
    assert compared > 1000


def test_the_fold_keeps_length_and_folds_only_letters_of_id_words() -> None:
    assert fold_ids(b"GPU-0b0b0000 a0 OST000d 0xabc face 0x x0 0xg0 ff.0a") == \
        b"GPU-00000000 00 OST000d 0x000 face 0x x0 0xg0 ff.00"
    key = shape_of("scratch-OST011d-osc-ffffcc89007a: libc.so.6[7f3a1c2b+1f000] failed")
    assert len(fold_ids(key)) == len(key)
    assert fold_ids(key) == b"scratch-OST000d-osc-000000000000: libc.so.0[00000000+00000] failed"


def test_the_window_fold_is_the_line_fold() -> None:
    rnd = random.Random(5)
    alphabet = [b"0", b"a", b"b", b"e", b"f", b"x", b"g", b"A", b"F", b"z", b"Z", b" ", b"-", b"/", b".", b"_",
                b"[", b"\xc3\xa9", b"`", b"{", b"@"]
    for _ in range(5000):
        keys = [b"".join(rnd.choice(alphabet) if rnd.random() < 0.3 else rnd.choice(alphabet[:5])
                         for _ in range(rnd.randrange(0, 30))) for _ in range(rnd.randrange(1, 6))]
        joined = b"\n".join(keys)
        folded, at = fold_window(joined)
        assert folded == b"\n".join(fold_ids(k) for k in keys), joined
        assert sorted(at.tolist()) == [i for i, (x, y) in enumerate(zip(joined, folded, strict=True)) if x != y]
    real = "Nov 29 04:01:04 node01 kernel: [ 5003.014231] LustreError: 11-0: scratch-OST011d-osc-ffffcc89007a:"
    key = real.encode().translate(FOLD_DIGITS)
    assert fold_window(key)[0] == fold_ids(key)
    # a window of a few MB (one line's words of letters and ids, 0x words at its ends)
    keys = [_fill(rnd, rnd.choice(_MESSAGES)).encode().translate(FOLD_DIGITS) for _ in range(60_000)]
    keys[0], keys[-1] = b"0xab " + keys[0], keys[-1] + b" 0x0f"
    joined = b"\n".join(keys)
    assert len(joined) > 2**21
    assert fold_window(joined)[0] == b"\n".join(map(fold_ids, keys))


def test_one_folded_shape_and_signature_have_one_miner_key() -> None:
    """The run path finds the miner's key of a line of a folded shape in a memo of the shape by the line's
    ``wide_signature``: two messages of one folded shape with one signature have one ``hex_key``, and a message
    whose folded shape has no word the key may fold is its own key. Messages start anywhere in the line (a
    header may end inside a word)."""
    rnd = random.Random(17)

    def word() -> str:
        kind = rnd.randrange(7)
        n = rnd.choice((2, 4, 7, 8, 9, 12, 16))
        if kind == 0:
            return "".join(rnd.choice("0123456789abcdef") for _ in range(n))
        if kind == 1:
            return "0x" + "".join(rnd.choice("0123456789abcdef") for _ in range(n))
        if kind == 2:
            return "".join(rnd.choice("0123456789") for _ in range(n))
        if kind == 3:  # a number in exponent form, or a hex id of its shape
            return rnd.choice(("12e45678", "1e345678", "12a45678", "e1234567", "1234567e"))
        if kind == 4:
            return "".join(rnd.choice("abcdef") for _ in range(n))
        if kind == 5:
            return rnd.choice(("x0", "0x", "OST", "deadbeef", "libc.so.6", "mlx5_core", "GPU-", "err"))
        return rnd.choice(("", "a", "9", "f0"))

    groups: dict[tuple[bytes, int, bytes], set[bytes]] = {}
    plain = 0
    for _ in range(40_000):
        text = "".join(word() + rnd.choice(" :-[]./+@(") for _ in range(rnd.randrange(1, 6)))
        key = shape_of(text)
        start = rnd.randrange(0, min(len(key), 6))
        msg, folded = key[start:], fold_ids(key)[start:]
        spans = wide_spans(folded)
        if not spans:
            assert hex_key(msg) == msg, text
            plain += 1
            continue
        groups.setdefault((fold_ids(key), start, wide_signature(msg, spans)), set()).add(hex_key(msg))
    assert plain > 1000
    assert all(len(keys) == 1 for keys in groups.values())
    assert sum(1 for keys in groups.values()) < 40_000 - plain  # signatures are shared


def test_miner_key_spliced_at_the_spans_is_hex_key() -> None:
    """A message that starts and ends at a word's edge has its miner key spliced at its folded shape's spans
    (``wide_fold``): it is ``hex_key`` of the message, whatever its ids' letters and digits."""
    rnd = random.Random(23)
    alphabet = "0123456789abcdef"
    words = ("OST", "deadbeef", "libc.so.6", "mlx5_core", "GPU-", "err", "x0", "0x", "12e45678", "1e345678",
             "e1234567", "1234567e", "0000:3b:00.0", "ffffffff")
    compared = spliced = 0
    for _ in range(30_000):
        parts = []
        for _ in range(rnd.randrange(1, 7)):
            kind = rnd.randrange(4)
            n = rnd.choice((3, 7, 8, 9, 12, 16, 20))
            if kind == 0:
                parts.append("".join(rnd.choice(alphabet) for _ in range(n)))
            elif kind == 1:
                parts.append("0x" + "".join(rnd.choice(alphabet) for _ in range(n)))
            elif kind == 2:
                parts.append("".join(rnd.choice("0123456789") for _ in range(n)))
            else:
                parts.append(rnd.choice(words))
            parts.append(rnd.choice(" :-[]./+@(="))
        text = "".join(parts)
        msg = shape_of(text)
        spans = wide_spans(fold_ids(msg))
        compared += 1
        spliced += bool(spans)
        assert wide_fold(msg, spans) == hex_key(msg), text
    assert spliced > compared // 2


# messages after a syslog or dmesg header with new ids, and ones that make the reader decide otherwise
_MESSAGES = [
    "NVRM: GPU at PCI:0000:{h2}:00: GPU-{h8}", "mlx5_core 0000:{h2}:00.0: mlx5_cmd_out_err:801: ACCESS_REG(0x805) "
    "op_mod(0x1) failed, status bad parameter(0x3), syndrome (0x{h6}), err(-22)",
    "python[{d}]: segfault at {h8} ip 0000{h8} sp 0000{h8} error 4 in libc.so.6[{h8}+{h4}]",
    "LustreError: 11-0: scratch-OST{h4}-osc-ffff{h8}: operation ost_connect failed: rc = -16",
    "nvidia-peermem nv_get_p2p_free_callback:130 free callback for 0x{h8}", "{h8} starts with an id",
    "{h2}ad starts with hex letters", "[E x.cc:{h2}] a glog marker with an id", "[E] bracketed",
    "Traceback (most recent call last):", "dead{h2} beef", "Xid (PCI:0000:{h2}:00): 79, pid={d}",
    "[Rank {d}] id {h8}", "nfs4: server {h8} gone", "ERROR: id {h8}", "fault at 0x{h8}: Segmentation fault",
    "mmfs: [E] Unable to access file system gpfs{d}, error 5", "NCCL WARN id {h8}", "cafe{d}: Bus error",
]


def _fill(rnd: random.Random, template: str) -> str:
    def hexs(n: int) -> str:
        return "".join(rnd.choice("0123456789abcdef" if rnd.random() < 0.7 else "0123456789") for _ in range(n))

    return template.format(h2=hexs(2), h4=hexs(4), h6=hexs(6), h8=hexs(8), d=rnd.randrange(1, 10**5))


@pytest.mark.parametrize("form", ["syslog", "dmesg-mixed", "storage"])
def test_kernel_lines_of_new_ids_spool_by_folded_shape_as_line_by_line(tmp_path: Path, form: str) -> None:
    """Syslog and dmesg lines with a new id on nearly every line (kernel, storage), over a reboot, a new month
    and a clock that jumps: with folded shapes most lines come in runs, and the spool (rows, templates, cache
    hits, accounting) is the per-line reader's."""
    paths = []
    for node in (7, 8):
        rnd = random.Random(node)
        up, t, lines = 950.818166, 1_733_011_200.0 - 86400 * 2, []
        for i in range(6000):
            up += rnd.choice((0.001, 1.5, 44.0))
            t += rnd.choice((0.5, 1.0, 30.0))
            if i == 3000:
                up = 3.25  # a reboot
            if i == 4500:
                t -= 7200  # a clock set back
            msg = _fill(rnd, rnd.choice(_MESSAGES[:5]) if rnd.random() < 0.8 else rnd.choice(_MESSAGES))
            stamp = datetime.fromtimestamp(t, tz=UTC)
            head = f"{stamp:%b} {stamp.day:2d} {stamp:%H:%M:%S} gpu-node{node:02d}"
            if form == "syslog":
                lines.append(f"{head} kernel: [{up:12.6f}] {msg}")
            elif form == "dmesg-mixed":
                lines.append(f"[{up:12.6f}] {msg}" if i % 2 else f"{head} kernel: [{up:12.6f}] {msg}")
            else:
                lines.append(f"{head} mmfs: {msg}" if i % 5 == 3 else f"{head} kernel: [{up:12.6f}] {msg}")
        f = tmp_path / f"node{node:03d}" / ("kern.log" if form != "storage" else "syslog")
        f.parent.mkdir()
        f.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(str(f))
    folded, state_f, in_runs = spool_of(paths, IngestOptions(fold_shapes=True), True, tmp_path / "f.arrows")
    plain, state_p, _ = spool_of(paths, IngestOptions(line_shapes=False), False, tmp_path / "p.arrows")
    assert folded.equals(plain)
    assert state_f == state_p
    assert in_runs > 1500, in_runs


def _id_scan(paths: list[str], rules_file: Path, **options: bool) -> tuple[dict, int]:
    """The scan's signature (``tests/test_engine.py``) of a job read with ``options``, and its lines read in runs
    of folded shapes."""
    from test_engine import signature

    from l4lite.rules.pack import RulePack
    from l4lite.scan.scanner import Scanner

    acc = Accounting()
    ingest = IngestOptions(**options)
    scanner = Scanner(TemplateMiner(), RulePack.load([rules_file]), bucket_seconds=5.0)
    folded = 0
    items = []
    for item in iter_job(discover(paths, acc), ingest, acc, runs=True):
        if type(item) is ShapeRun:
            folded += sum(item.table[x].fold_from >= 0 for x in item.shapes)
        items.append(item)
    scanner.add_many(items)
    return signature(scanner.finish(acc, ingest.rank_map.as_dict())), folded


def test_the_scan_of_folded_shapes_finds_what_the_per_line_scan_finds(tmp_path: Path) -> None:
    """``analyze`` reads with folded shapes: the rule gate answers once per folded shape, but a keyword that
    starts or ends with a word of hex letters (``bad``, ``edac``: not ``fold_safe``) may sit in an id that the
    fold hides, so such lines are looked up by their own keys. Ids holding ``bad`` or ``edac`` are spread over
    the lines of one folded shape; the hits, templates and counts equal the per-line reader's scan."""
    rules_file = tmp_path / "rules.toml"
    rules_file.write_text(
        '[[rule]]\nid = "hex-bad"\npattern = "bad"\nkeywords = ["bad"]\ncategory = "unknown"\nrole = "symptom"\n'
        'severity = "error"\npriority = 5\nexplain = "a bad id"\nexamples = ["id 12bad3 seen"]\n', encoding="utf-8")
    rnd = random.Random(29)
    words = ("bad", "edac", "cafe", "0f0f")
    lines = []
    for i in range(6000):
        tail = f"{rnd.randrange(16):x}{rnd.choice(words) if rnd.random() < 0.05 else f'{rnd.getrandbits(16):04x}'}" \
               f"{rnd.randrange(10)}"
        stamp = datetime.fromtimestamp(1_733_011_200.0 + i * 0.5, tz=UTC)
        lines.append(f"{stamp:%b} {stamp.day:2d} {stamp:%H:%M:%S} gpu-node01 kernel: [{1000 + i * 0.5:12.6f}] "
                     f"nvidia-peermem free callback for 0x{rnd.getrandbits(32):08x} id {tail:<6} state ok")
    f = tmp_path / "node001" / "kern.log"
    f.parent.mkdir()
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    folded, in_runs = _id_scan([str(f)], rules_file, fold_shapes=True)
    plain, _ = _id_scan([str(f)], rules_file, line_shapes=False)
    assert in_runs > 3000, in_runs
    assert folded["hits"] == plain["hits"]
    assert folded == plain
    assert sum(n for (rule, _), n in plain["hit_totals"].items() if rule == "hex-bad") == sum("bad" in line for line in lines) > 20
