"""The rule pack's cheap paths give the answers of the slow ones: the combined keyword gate and its per-shape
memo against the gate's definition (``ReferenceGate``), lazy pattern compilation, and scikit-learn
imported only where an isolation forest is fitted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from l4lite.errors import L4Error
from l4lite.ingest.reader import IngestOptions, iter_records
from l4lite.records import Accounting, Record
from l4lite.rules.keys import ReferenceGate, longest_trie, shape
from l4lite.rules.pack import RuleMatch, RulePack

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
PACK = RulePack.load()
REFERENCE = ReferenceGate(PACK.rules)


def excerpt_lines() -> list[str]:
    lines: list[str] = []
    for path in (FIXTURES / "real" / "real-failures.jsonl", FIXTURES / "rules" / "paraphrased.jsonl"):
        for row in path.read_text(encoding="utf-8").splitlines():
            lines.extend(json.loads(row)["lines"])
    return lines


@pytest.fixture(scope="module")
def suite_records() -> list[Record]:
    out: list[Record] = []
    for job in sorted(p for p in (FIXTURES / "suite").iterdir() if p.is_dir()):
        out.extend(iter_records([str(job)], IngestOptions(), Accounting()))
    return out


def reference_match(pack: RulePack, message: str, text: str, source: str | None) -> list[tuple[str, dict]]:
    """``RulePack.match_fields`` with the gate computed by its definition (no combined regex, no memo)."""
    message, text = message[: pack.max_chars], text[: pack.max_chars]
    by_message = REFERENCE.candidates(message)[0]
    by_text = REFERENCE.candidates(text)[1] if text else ()
    out, fallbacks = [], []
    for rules, value in ((by_message, message), (by_text, text)):
        for rule in rules:
            if rule.source and source not in rule.source:
                continue
            m = rule.compiled.search(value)
            if m is not None:
                groups = {k: v for k, v in m.groupdict().items() if v is not None}
                (fallbacks if rule.fallback else out).append(RuleMatch(rule, groups))
    if not out and fallbacks:
        out = [max(fallbacks, key=lambda m: m.rule.priority)]
    return [(m.rule.id, m.groups) for m in out]


def ids(found: tuple[tuple, tuple]) -> tuple[list[str], list[str]]:
    return [r.id for r in found[0]], [r.id for r in found[1]]


# ------------------------------------------------------------------------------------------------ the gate
def test_gate_agrees_with_its_definition_on_the_excerpts_and_the_suite(suite_records: list[Record]) -> None:
    texts = excerpt_lines()
    for record in suite_records:
        texts += [record.message, record.text]
    assert len(texts) > 40_000
    texts = list(dict.fromkeys(texts))  # the same text twice gives the same answer: each once, in order
    pack = RulePack.load()
    nonempty = 0
    for text in texts:
        want = ids(REFERENCE.candidates(text))
        assert ids(pack._lookup(text)) == want, text
        nonempty += bool(want[0] or want[1])
    for text in texts[::7]:  # answered from the memo this time, for every shape the first pass stored
        assert ids(pack._lookup(text)) == ids(REFERENCE.candidates(text)), text
    assert 1_000 < nonempty < len(texts) // 2  # the gate both opens and stays shut on real input


def test_matches_agree_with_the_definition_on_every_fixture_line(suite_records: list[Record]) -> None:
    pack = RulePack.load()
    matched = 0
    for line in excerpt_lines():
        got = [(m.rule.id, m.groups) for m in pack.match_fields(line, line, "trainer")]
        assert got == reference_match(pack, line, line, "trainer"), line
        matched += bool(got)
    for record in suite_records:
        got = [(m.rule.id, m.groups) for m in pack.match(record)]
        assert got == reference_match(pack, record.message or record.text, record.text, record.source), record
        matched += bool(got)
    assert matched > 1_000


def test_the_memo_does_not_depend_on_which_digit_variant_came_first() -> None:
    """A keyword may hold a character a folded digit becomes: the memo key must not confuse the two."""
    pack = RulePack.load()
    rule = next(r for r in pack.rules if "finished collective #" in r.keywords)
    for first, second in (("finished collective #5 timeout", "finished collective 55 timeout"),
                          ("finished collective 55 timeout", "finished collective #5 timeout")):
        fresh = RulePack(pack.rules)
        for text in (first, second):
            got = fresh.candidates(text, rule.match)
            assert (rule in got) == ("#" in text) and ids(fresh._lookup(text)) == ids(REFERENCE.candidates(text))


def test_overlapping_and_nested_keywords_are_all_found(tmp_path: Path) -> None:
    body = "".join(
        f'[[rule]]\nid = "{rid}"\npattern = "{pat}"\nkeywords = ["{kw}"]\ncategory = "storage"\nrole = "root"\n'
        f'severity = "error"\nexplain = "e"\n\n'
        for rid, pat, kw in (("a", "abc", "abc"), ("b", "abcde", "abcde"), ("c", "cdx", "cdx"),
                             ("d", "bcd", "bcd"), ("e", "dÉfaillance", "défaillance")))
    path = tmp_path / "words.toml"
    path.write_text(body, encoding="utf-8")
    pack = RulePack.load([path], include_default=False)
    for text, want in (("xxABCDEyy", "abd"), ("abcdx", "acd"), ("ab cd", ""), ("abcdabcde", "abd"),
                       ("DÉFAILLANCE 3 abc", "ae"), ("de\u0301faillance", "")):
        assert "".join(r.id for r in pack.candidates(text, "message")) == want, text


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["NCCL", "xid", " 79", "Error", "#", "0x3f", "ib", "link down", "Ä", "é",
                                 "finished collective ", "timeout", "ECC", "uncorrectable", "\n", "Traceback"]),
                max_size=12))
def test_gate_agrees_with_its_definition_on_generated_texts(parts: list[str]) -> None:
    text = "".join(parts)
    assert ids(PACK._lookup(text)) == ids(REFERENCE.candidates(text))
    assert shape(text) == shape(text.translate(str.maketrans("123456789", "987654321")))


def test_texts_with_many_keyword_positions_get_the_same_answer() -> None:
    """Past a number of keyword positions the gate tests each remaining keyword once instead."""
    for text in ("error " * 5_000 + "NVRM: Xid 79", "nccl " * 70 + "Traceback (most recent call last):",
                 "x" * 30_000 + "ib link down " * 80, "Timeout " * 63 + "cuda error", "Timeout " * 64 + "ECC"):
        assert ids(RulePack(PACK.rules)._lookup(text)) == ids(REFERENCE.candidates(text)), text[-60:]


def test_the_memo_is_bounded_and_stays_exact() -> None:
    pack = RulePack(PACK.rules, max_cache=50, max_cache_bytes=2_000)
    texts = excerpt_lines()
    for text in texts:
        assert ids(pack._lookup(text)) == ids(REFERENCE.candidates(text))
        assert len(pack._cache) <= 50 and (pack._cache_bytes <= 2_000 or len(pack._cache) == 1)


def test_longest_trie_reports_the_longest_word_at_a_position() -> None:
    rx = regex.compile(longest_trie([b"nan", b"nan iterations", b"x(d", b"error"]))
    assert rx.match(b"nan iterations: 3").group() == b"nan iterations"
    assert rx.match(b"nan iter").group() == b"nan"
    assert rx.match(b"x(d").group() == b"x(d" and rx.match(b"xd") is None


# --------------------------------------------------------------------------------------- lazy compilation
def test_shipped_patterns_compile_on_first_use_only() -> None:
    pack = RulePack.load()
    assert not any("compiled" in r.__dict__ for r in pack.rules)
    pack.match_fields("NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.",
                      "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.", "kernel")
    compiled = [r for r in pack.rules if "compiled" in r.__dict__]
    assert compiled and len(compiled) < len(pack.rules) // 4
    assert all(isinstance(r.compiled, regex.Pattern) for r in pack.rules)


def test_user_patterns_compile_when_loaded(tmp_path: Path) -> None:
    good = tmp_path / "good.toml"
    good.write_text('[[rule]]\nid = "site-a"\npattern = "fs (?<fs>\\\\w+) hung"\ncategory = "storage"\n'
                    'role = "root"\nseverity = "error"\nexplain = "e"\n', encoding="utf-8")
    pack = RulePack.load([good])
    assert isinstance(pack.get("site-a").__dict__.get("compiled"), regex.Pattern)
    bad = tmp_path / "bad.toml"
    bad.write_text("# site\n\n" + good.read_text().replace("hung", "hung(").replace("site-a", "site-b"),
                   encoding="utf-8")
    with pytest.raises(L4Error) as err:
        RulePack.load([bad])
    message = str(err.value)
    assert f"{bad}:3" in message and "'site-b'" in message and "invalid pattern" in message
    assert "\n" not in message


# ------------------------------------------------------------------------------------------ scikit-learn
def run_python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_importing_the_pipeline_does_not_import_scikit_learn_or_pandas() -> None:
    """Neither is needed to scan: a parallel scan imports them (``preload``) while its shards are scanned."""
    out = run_python("import sys, l4lite.cli.main, l4lite.api, l4lite.scale.engine, l4lite.diagnose.chartdata, l4lite.detect.iforest\n"
                     "print(sorted(m for m in ('sklearn', 'scipy', 'pandas') if m in sys.modules))")
    assert out == "[]"


def test_preload_imports_scikit_learn_and_pandas() -> None:
    out = run_python("import sys\nfrom l4lite.detect.iforest import preload\nprint('sklearn' in sys.modules)\n"
                     "preload()\nprint('sklearn.ensemble' in sys.modules, 'pandas' in sys.modules)")
    assert out.split() == ["False", "True", "True"]


def test_a_job_too_small_for_a_forest_never_imports_scikit_learn() -> None:
    """The NCCL misconfiguration fixture fails at start-up: too few windows and no node unlike the others."""
    out = run_python("import sys\nfrom l4lite import api as pipeline\n"
                     "inc = pipeline.analyze(['fixtures/suite/015-nccl_misconfig'], pipeline.AnalyzeOptions())\n"
                     "print(inc.is_incident, 'sklearn' in sys.modules)")
    assert out == "True False"
