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
from l4lite.rules.pack import RulePack, fold_key, fold_safe
from l4lite.rules.rulefile import parse_rule_file
from l4lite.rules.signature import RuleMatch

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
    parse_rule_file.cache_clear()  # rules parsed (and compiled) by earlier tests are kept per file text
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
    """Neither is needed to scan (nor to diagnose: ``tests/test_counts.py``)."""
    out = run_python("import sys, l4lite.cli.main, l4lite.api, l4lite.scale.engine, l4lite.diagnose.chartdata, l4lite.detect.iforest\n"
                     "print(sorted(m for m in ('sklearn', 'scipy', 'pandas') if m in sys.modules))")
    assert out == "[]"


def test_a_job_whose_forests_fit_never_imports_scikit_learn() -> None:
    """The forests are the package's own: scikit-learn (and SciPy) stay out of an analysis, even a long one."""
    out = run_python("import sys\nfrom l4lite import api as pipeline\n"
                     "from l4lite.detect import isolation\n"
                     "fits = []\nfit = isolation.IsolationTrees.fit\n"
                     "isolation.IsolationTrees.fit = lambda self, x: (fits.append(1), fit(self, x))[1]\n"
                     "inc = pipeline.analyze(['fixtures/suite/002-xid79_fallen_off_bus'], pipeline.AnalyzeOptions())\n"
                     "print(inc.is_incident, len(fits) > 0, 'sklearn' in sys.modules, 'scipy' in sys.modules)")
    assert out == "True True False False"


# ------------------------------------------------------------------------------------- the folded memo key
def test_fold_key_folds_numbers_and_hex_words_only() -> None:
    key = b"req@0000f0d000000000 x000000/t0(0) gpu-a0d0000b ost000d deadbeef 0xff cafe_0 error 0"
    assert fold_key(key) == b"req@0 0/t0(0) gpu-0 ost000d deadbeef 0 cafe_0 error 0"


@pytest.mark.parametrize(("word", "safe"), [
    (b"failed", True), (b"failed: rc", True), (b"abc_def", True), (b"finished collective #", True),
    (b"dead", False), (b" bad", False), (b"bad parameter", False), (b"uncorrectable ecc", False), (b"x", False),
    (b"(x", False), (b"# fe", False), (b"edac", False)])
def test_fold_safe_words(word: bytes, safe: bool) -> None:
    assert fold_safe(word) is safe


def hex_pack(tmp_path: Path) -> RulePack:
    """Rules whose keywords a fold could hide (hex letters at an edge) beside ones it cannot."""
    body = "".join(
        f'[[rule]]\nid = "{rid}"\npattern = "{kw}"\nkeywords = ["{kw}"]\ncategory = "storage"\nrole = "root"\n'
        f'severity = "error"\nexplain = "e"\n\n'
        for rid, kw in (("a", "dead"), ("b", "bad parameter"), ("c", "status bad"), ("d", "failed"),
                        ("f", "ace_"), ("g", "fault at")))
    path = tmp_path / "hex.toml"
    path.write_text(body, encoding="utf-8")
    return RulePack.load([path], include_default=False)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["dead", "beef", "0x", "1", "7f3a", " ", "bad", " parameter", "status ", "ace",
                                 "_", "failed", "fault", " at ", "(", ")", "-", "c0ffee", "AB", "x", "."]),
                max_size=14))
def test_the_folded_memo_finds_the_keywords_of_the_text(parts: list[str]) -> None:
    """Keyed by the folded shape, the memo gives each text the candidates the gate's definition gives it, also
    for keywords a fold could hide, whichever text of a folded key came first."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        pack = hex_pack(Path(tmp))
    reference = ReferenceGate(pack.rules)
    text = "".join(parts)
    for variant in (text, text.replace("1", "9"), text.replace("dead", "0ead").replace("bad", "ba0")):
        assert ids(pack._lookup(variant)) == ids(reference.candidates(variant)), variant


def test_a_fold_that_hides_a_keyword_is_caught(tmp_path: Path) -> None:
    """Texts of one folded key, the first without a keyword that the fold hides in the second."""
    pack = hex_pack(tmp_path)
    reference = ReferenceGate(pack.rules)
    for first, second, want in (("id 00 ok", "id 0dead ok", "a"), ("status 0 parameter", "status 0bad parameter", "b"),
                                ("x 00 ok", "x 00ace ok", ""), ("segfault at 7f3a", "segfault at 7f3b", "g")):
        assert fold_key(shape(first)) == fold_key(shape(second))
        for text in (first, second):
            got = "".join(r.id for r in pack.candidates(text, "message"))
            assert got == "".join(r.id for r in reference.candidates(text)[0]), text
        assert "".join(r.id for r in pack.candidates(second, "message")) == want


def test_the_unfolded_memo_gives_the_same_answers() -> None:
    texts = excerpt_lines()[:3000]
    folded, plain = RulePack(PACK.rules), RulePack(PACK.rules, fold=False)
    for text in texts:
        assert ids(folded._lookup(text)) == ids(plain._lookup(text)), text
    assert len(folded._cache) < len(plain._cache)


def test_a_rule_file_read_again_is_not_parsed_again_unless_its_text_changed(tmp_path: Path) -> None:
    first, again = RulePack.load(), RulePack.load()
    assert first is not again and [r.id for r in first.rules] == [r.id for r in again.rules]
    assert all(a is b for a, b in zip(first.rules, again.rules, strict=True))  # one parse, frozen rules
    user = tmp_path / "site.toml"
    rule = 'id = "site-a"\npattern = "fs {word} hung"\ncategory = "storage"\nrole = "root"\nseverity = "error"\n'
    user.write_text("[[rule]]\n" + rule.format(word="a") + 'explain = "e"\n', encoding="utf-8")
    assert RulePack.load([user]).get("site-a").pattern == "fs a hung"
    user.write_text("[[rule]]\n" + rule.format(word="b") + 'explain = "e"\n', encoding="utf-8")  # same size
    assert RulePack.load([user]).get("site-a").pattern == "fs b hung"
