"""``rules.blind``: a pattern that tells no digit (or id letter) apart answers alike for every line of a shape
(or folded shape), so the run path searches it once per shape of a run; the scan's hits stay those of one
search per line."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import pytest
from scan_helpers import counted_scan, real_job_lines

from l4lite.ingest.shape import fold_ids, shape_of
from l4lite.rules.blind import FOLDED, NONE, SHAPE, blindness
from l4lite.rules.pack import RulePack
from l4lite.scan import runpath

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import format_zoo  # noqa: E402


@pytest.mark.parametrize(("pattern", "ignore_case", "level"), [
    (r"LustreError:[^\n]{0,200}?(?P<detail>[^\n]{0,160})", False, FOLDED),
    (r"evicted by [\w-]{1,200}; in progress", False, FOLDED),
    (r"deadline passed", False, FOLDED),  # "dead" sits in a word with an "l"
    (r"\bdead\b", False, SHAPE),  # may be an id's letters: told apart from its digits
    (r"rc = -\d+", False, SHAPE),  # \d holds digits, not hex letters
    (r"[A-Za-z_]\w*Error", False, SHAPE),
    (r"(?i)BAD PARAM", False, SHAPE),  # any case: "bad" may be an id's letters
    (r"BAD PARAM", False, FOLDED),  # upper case never is
    (r"Xid 79", False, NONE),  # a literal digit
    (r"port [0-7]", False, NONE),  # a class of some digits
    (r"[^5]", False, NONE),
    (r"x[^a]", True, SHAPE),  # any case: not an id's "a" (nor its "A"), any digit
    (r"x[^g]", True, FOLDED),
    (r"(a+)x\1", False, NONE),  # a back reference
    (r"[[:digit:]]", False, NONE),  # a class to the regex module, a set of characters to the standard parser
    (r"(?<name>x)", False, NONE),  # syntax only the regex module reads
    (r"(", False, NONE),
])
def test_levels(pattern: str, ignore_case: bool, level: int) -> None:
    assert blindness(pattern, ignore_case) == level


def _variant(text: str, rnd: random.Random, letters: bool) -> str:
    """``text`` with each digit (and with ``letters`` each hex letter) replaced at random by a digit (or hex
    character); the caller keeps only variants of the same shape or folded shape."""
    pool = "0123456789abcdef" if letters else "0123456789"
    # ASCII digits only: a shape reads those as digits, not ``²`` (which ``str.isdigit`` calls one)
    return "".join(rnd.choice(pool) if c in "0123456789" or (letters and c in "abcdef") else c for c in text)


def _lines() -> list[str]:
    rnd = random.Random(11)
    out = []
    for fmt in ("kernel", "storage"):
        it = format_zoo.FORMATS[fmt][0](1, random.Random(3))
        out += [next(it) for _ in range(300)]
    out += real_job_lines(rnd, 40)
    return out


def test_blind_rules_answer_alike_on_a_shapes_lines() -> None:
    """Every shipped rule that ``blindness`` calls blind meets a line exactly when it meets other lines of the
    line's shape (digits changed) or folded shape (id letters changed as well)."""
    pack = RulePack.load()
    rnd = random.Random(5)
    blind = [(rule, blindness(rule.pattern, rule.ignore_case)) for rule in pack.rules]
    assert sum(level == FOLDED for _, level in blind) > 20 and sum(level == SHAPE for _, level in blind) > 20
    met = tried = 0
    for line in _lines():
        shape, folded = shape_of(line), fold_ids(shape_of(line))
        variants = [(v, SHAPE) for v in (_variant(line, rnd, False) for _ in range(3))]
        variants += [(v, FOLDED) for v in (_variant(line, rnd, True) for _ in range(6))
                     if fold_ids(shape_of(v)) == folded]
        for rule, level in blind:
            if level == NONE:
                continue
            expect = rule.compiled.search(line) is not None
            met += expect
            for v, need in variants:
                if level >= need:
                    assert need == FOLDED or shape_of(v) == shape
                    tried += 1
                    assert (rule.compiled.search(v) is not None) == expect, (rule.id, line, v)
    assert met > 100 and tried > 10_000


def _scan(job: Path, monkeypatch: pytest.MonkeyPatch, blind: bool) -> tuple[dict[str, Any], int]:
    return counted_scan(job, monkeypatch, *(() if blind else ((runpath, "shape_rules"),)))


def test_storage_rules_searched_per_shape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    format_zoo.generate("storage", tmp_path / "storage", 64_000)  # 4,000 lines a file: read in runs
    per_shape, shape_calls = _scan(tmp_path / "storage", monkeypatch, True)
    per_line, line_calls = _scan(tmp_path / "storage", monkeypatch, False)
    assert per_shape == per_line
    assert dict(per_shape["hit_totals"]).get(("lustre-rpc-failed", "node01"), 0) > 100
    assert line_calls > 20_000 and shape_calls < line_calls * 0.8


def test_meets_is_match_ids_of_one_rule() -> None:
    """``RulePack.meets`` (what ``ShapeRules.ids`` asks of a shape's per-line rules) says whether ``match_ids`` of
    the rule alone is not empty, for every shipped rule, on zoo and real-job lines."""
    pack = RulePack.load()
    met = 0
    for line in _lines()[::3]:
        for rule in pack.rules:
            for source in (None, *(rule.source or ())[:1]):
                expect = bool(pack.match_ids((rule,), line, source))
                met += expect
                assert pack.meets(rule, line, source) == expect, (rule.id, line)
    assert met > 50


def test_shape_rules_build_no_matches_per_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a storage log, whose Lustre lines each meet ``python-exception``'s search, the per-line rules of a shape
    are asked whether they meet (``RulePack.meets``), not for their ids through match objects (``match_ids``):
    with the memo of answers by message missing on nearly every line, that was most of the calls."""
    format_zoo.generate("storage", tmp_path / "storage", 64_000)
    per_shape, shape_calls = _scan(tmp_path / "storage", monkeypatch, True)
    per_line, line_calls = _scan(tmp_path / "storage", monkeypatch, False)
    assert per_shape == per_line
    assert line_calls > 20_000 and shape_calls < line_calls * 0.2, (shape_calls, line_calls)
