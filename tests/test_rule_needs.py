"""A pattern's needed literals (``rules.needs``) never skip a search that would match: every shipped rule on its
examples, the real excerpts and every line of the simulator's suite, and patterns of every construct."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.ingest.shape import fold_ids, shape_of
from l4lite.records import Accounting
from l4lite.rules.needs import may_match, needs, shape_candidates
from l4lite.rules.pack import RulePack

ROOT = Path(__file__).resolve().parent.parent
PACK = RulePack.load()


def texts() -> list[str]:
    out: list[str] = []
    for path in (ROOT / "fixtures" / "real" / "real-failures.jsonl", ROOT / "fixtures" / "rules" / "paraphrased.jsonl"):
        for row in path.read_text(encoding="utf-8").splitlines():
            out.extend(json.loads(row)["lines"])
    for rule in PACK.rules:
        out.extend(rule.examples)
        out.extend(rule.counter_examples)
    for job in sorted(p for p in (ROOT / "fixtures" / "suite").iterdir() if p.is_dir())[:12]:
        for record in iter_records([str(job)], IngestOptions(), Accounting()):
            out += [record.message, record.text]
    return list(dict.fromkeys(t[: PACK.max_chars] for t in out))


def test_a_skipped_search_never_matches() -> None:
    """Every rule on every text: where the needed literals are missing, the pattern finds nothing."""
    skipped = 0
    with_needs = [r for r in PACK.rules if r.needs is not None]
    assert len(with_needs) > 0.8 * len(PACK.rules)
    for text in texts():
        low = text.lower()
        if not text.isascii():
            continue
        for rule in with_needs:
            if not may_match(rule.needs, low):
                skipped += 1
                assert rule.compiled.search(text) is None, (rule.id, text)
    assert skipped > 100_000


def test_needs_of_some_patterns() -> None:
    assert needs(r"mlx5_core (?P<pci>\S+) .*?(?:health compromised|syndrome 0x[0-9a-f]+ \()") == (
        (("mlx5_core ",), ("health compromised", "syndrome 0x")),)
    assert needs(r"(?:HW|SW) slowdown|clocks? (?:event|throttle)") == (((" slowdown",),), (("clock",), ("event", "throttle")))
    assert needs(r"(?:abc)+def", ("abc",)) == ((("def",),),)  # "abc" is the gate's keyword: no clause for it
    assert needs(r"abc|x?yz") is None  # a branch that needs nothing (short literals give no clause)
    assert needs(r"(?:error)?") is None and needs(r"\p{L}+ error") is None  # optional, or not stdlib syntax


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["Xid", " 79", "error", "ERROR", "(?:a|b)", "timed out", "[0-9]+", "(?:foo|bar)+",
                                 "(?:baz)?", "\\s+", ".*?", "(?i:Fail)", "|", "(?P<g>qux)", "\\bnot\\b", "(?=ok)"]),
                min_size=1, max_size=8),
       st.lists(st.sampled_from(["Xid", " 79", "error", "ERROR", "a", "b", "timed out", "12", "foo", "bar", "baz",
                                 " ", "fail", "FAIL", "qux", "not", "ok", "x"]), max_size=12))
def test_generated_patterns_and_texts(parts: list[str], words: list[str]) -> None:
    import regex

    pattern = "".join(parts)
    try:
        compiled = regex.compile(pattern, regex.IGNORECASE | regex.VERSION0)
    except regex.error:
        return
    need = needs(pattern)
    text = "".join(words)
    if need is not None and not may_match(need, text.lower()):
        assert compiled.search(text) is None, (pattern, text)


def test_matches_are_those_of_the_reference() -> None:
    """The pack with its fast paths and without them (``fold=False``) match the same rules with the same groups."""
    fast, plain = RulePack(PACK.rules), RulePack(PACK.rules, fold=False)
    for text in texts()[::3]:
        got = [(m.rule.id, m.groups) for m in fast.match_fields(text, text, "kernel")]
        assert got == [(m.rule.id, m.groups) for m in plain.match_fields(text, text, "kernel")], text


def test_a_rule_left_out_by_its_shape_fails_on_each_line_of_it() -> None:
    """``shape_candidates``: a rule that a line's shape (digits folded) or folded shape (``fold_ids``: hex letters
    of id-like words too) leaves out fails its literal test on the line itself, for every shipped rule the gate
    gives the line (so ``match_line`` with the narrowed rules finds what it finds with all of them); and it leaves
    out rules on many lines (a shape decides most of the literals)."""
    left_out = 0
    for text in texts() + [t.upper() for t in texts()[:500]]:
        key = shape_of(text)
        for shaped, folded in ((key, False), (fold_ids(key), True)):
            found = PACK.line_rules(shaped)
            if found is None:
                continue
            start = len(text) // 3
            narrowed = shape_candidates(found, shaped, start, len(text), folded)
            for rules, kept, value in zip(found, narrowed, (text[start:] or text, text), strict=True):
                assert set(kept) <= set(rules)
                for rule in set(rules) - set(kept):
                    left_out += 1
                    assert not may_match(rule.needs, value.lower())
    assert left_out > 100
