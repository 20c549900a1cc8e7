"""``masking.letter_form``: tokens whose keys have one letter form (the letters of their id words all ``a``, an
exponent's ``e`` kept) mask alike under the default masks, so ``TemplateMiner.kept_stays`` answers a pointer's
tail that is new on every line (``libc.so.6[7f3a1c2b+ca387]``) once per pattern of its digits."""

from __future__ import annotations

import random
import re
from pathlib import Path

from test_free_kept import _kernel_log, assert_runs_mine_as_lines

from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_job
from l4lite.ingest.shape import hex_key, shape_of
from l4lite.ingest.shaperun import ShapeRun
from l4lite.mining.masking import Masker, letter_form, stays_apart
from l4lite.mining.miner import TemplateMiner
from l4lite.records import Accounting

REAL_JOBS = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs"
_WORD = re.compile(r"[A-Za-z0-9]+")


def _form(token: str) -> bytes:
    return letter_form(hex_key(shape_of(token)))


def _variant(token: str, rnd: random.Random) -> str:
    """``token`` with the digits and lowercase hex letters of its words of ``[0-9a-f]`` holding a digit changed."""
    def change(m: re.Match[str]) -> str:
        word = m.group()
        if not re.fullmatch(r"[0-9a-f]*[0-9][0-9a-f]*", word):
            return word
        return "".join(rnd.choice("0123456789") if c.isdigit() else rnd.choice("abcdef") for c in word)
    return _WORD.sub(change, token)


def _tokens() -> list[str]:
    rnd = random.Random(9)
    out = ["libc.so.6[7f3a1c2b+ca387]", "libc.so.6[7f3a1c2b+1e5]", "5e-10", "1.5e10", "0x7f3a", "node12ab",
           "::ffff:10.0.0.1", "ab12cd:", "3ca87", "e5", "12ms", "a1b2c3d4e5", "blk_1e7", "/a1b2/c3", "/1ab/x",
           "10.0.3.7@o2ib", "scratch-OST00d3-osc-ffff8f2a:", "mlx5_cmd_out_err:801:", "12abc/s", "1a2bc/s"]
    files = sorted(p for p in REAL_JOBS.glob("*/*/*") if p.is_file())
    for path in rnd.sample(files, min(80, len(files))):
        lines = path.read_text(errors="replace").splitlines()
        for line in rnd.sample(lines, min(30, len(lines))):
            out += [t for t in line.split() if any(c.isdigit() for c in t) and len(t) < 200]
    return out


def test_tokens_of_one_letter_form_mask_alike() -> None:
    rnd = random.Random(4)
    tried = 0
    for token in _tokens():
        masked, kept = Masker().mask_list([token])
        want = (bool(kept), bool(kept) and stays_apart(masked[0]))
        for _ in range(8):
            v = _variant(token, rnd)
            if v == token or _form(v) != _form(token):
                continue
            tried += 1
            vm, vk = Masker().mask_list([v])
            assert (bool(vk), bool(vk) and stays_apart(vm[0])) == want, (token, v, masked, vm)
    assert tried > 2000


def test_letter_form_keeps_what_masking_tells_apart() -> None:
    assert _form("5e-10") != _form("5a-10")  # a number's exponent before its sign
    assert _form("1e5") != _form("1a5")
    assert _form("ca387") == _form("be112") != _form("3ca87")  # letters alike, digits where they stand
    assert letter_form(b"ffff") == b"ffff"  # no 0: not an id (an IPv4-mapped address's ffff)


def test_kernel_tails_masked_once_per_form(tmp_path: Path, monkeypatch: object) -> None:
    """A kernel log's segfault lines, each with a new pointer tail: mined in runs as line by line, masking only a
    few of the tails (it masked one in three before)."""
    _kernel_log(tmp_path, random.Random(3))
    acc = Accounting()
    items = list(iter_job(discover([str(tmp_path)], acc), IngestOptions(fold_shapes=True), acc, runs=True))
    assert sum(len(x) for x in items if type(x) is ShapeRun) > 2000
    calls = []
    stays = TemplateMiner.kept_stays
    mask_list = Masker.mask_list

    def counted(self: TemplateMiner, token: str, form: bytes | None = None) -> bool:
        calls.append(token)
        return stays(self, token, form)

    masked = []

    def counted_mask(self: Masker, tokens: list[str]) -> tuple[list[str], list[int]]:
        if len(tokens) == 1 and tokens[0] in calls[-1:]:
            masked.append(tokens[0])
        return mask_list(self, tokens)

    monkeypatch.setattr(TemplateMiner, "kept_stays", counted)  # type: ignore[attr-defined]
    monkeypatch.setattr(Masker, "mask_list", counted_mask)  # type: ignore[attr-defined]
    assert_runs_mine_as_lines(items)
    assert len(calls) > 1000
    assert len(masked) < len(calls) / 20, (len(masked), len(calls))
