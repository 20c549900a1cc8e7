"""The rule pack: loading and validation, user overrides, the keyword prefilter, timeouts, and RuleDetector."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from l4lite.detect.rules import RuleDetector, rule_score
from l4lite.errors import L4Error
from l4lite.records import Record
from l4lite.rules.keys import derive_keywords, gate_keywords
from l4lite.rules.pack import RulePack
from l4lite.rules.render import render
from l4lite.rules.signature import RULE_ROLES
from l4lite.scan.scanner import Hit, JobScan
from l4lite.vocab import CATEGORIES, PHASES, SEVERITIES

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PACK = RulePack.load()


def rec(message: str, *, text: str | None = None, node: str | None = "node01", rank: int | None = 0,
        time: float | None = 100.0, line: int = 1, source: str = "trainer", file: str = "train.log") -> Record:
    text = message if text is None else text
    return Record(file=file, line=line, end_line=line + text.count("\n"), node=node, rank=rank, gpu=None,
                  source=source, time=time, level="error", message=message, text=text)


def write(tmp_path: Path, body: str, name: str = "user.toml") -> Path:
    p = tmp_path / name
    p.write_text(body, encoding="utf-8")
    return p


def naive(pack: RulePack, message: str, text: str) -> set[str]:
    """Every rule's regex tried on its field, no prefilter: the reference the prefilter must agree with."""
    hits, fallbacks = set(), set()
    for r in pack.rules:
        value = message if r.match == "message" else text
        if value and r.compiled.search(value[: pack.max_chars]):
            (fallbacks if r.fallback else hits).add(r.id)
    explained = [i for i in hits if pack.get(i).role != "symptom" or pack.get(i).category != "unknown"]
    if explained or not fallbacks:
        return hits
    return hits | {max(fallbacks, key=lambda i: pack.get(i).priority)}


# --------------------------------------------------------------------------------------------- the shipped pack
def test_default_pack_is_valid_and_covers_the_issue():
    assert len(PACK) >= 100
    for r in PACK.rules:
        assert r.category in CATEGORIES and r.role in RULE_ROLES and r.severity in SEVERITIES
        assert r.phase_hint is None or r.phase_hint in PHASES
        assert gate_keywords(r.keywords), f"{r.id} has no usable keywords: it would run on every record"
        assert r.explain and r.action, r.id
        assert r.examples, f"{r.id} has no example line"
    ids = {r.id for r in PACK.rules}
    for xid in (13, 31, 43, 45, 48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 109, 119, 154):
        assert f"xid-{xid}" in ids
    assert {"xid-nvlink5-fatal", "xid-nvlink5-nonfatal", "gpu-fallen-off-bus", "cuda-ecc-uncorrectable",
            "pcie-aer-fatal", "ib-link-down", "nccl-ib-retry-exceeded", "nccl-watchdog-timeout", "cuda-oom",
            "host-oom-killer", "elastic-root-cause", "enospc", "eio", "ckpt-zip-corrupt", "nan-metric",
            "loss-scale-min", "nccl-no-interface", "python-exception"} <= ids


@pytest.mark.parametrize("rule", PACK.rules, ids=lambda r: r.id)
def test_rule_examples_match_and_counter_examples_do_not(rule):
    for ex in rule.examples:
        assert rule in PACK.candidates(ex, rule.match), f"keywords of {rule.id} miss its example: {ex!r}"
        assert rule.compiled.search(ex), f"{rule.id} does not match its example {ex!r}"
    for ex in rule.counter_examples:
        assert not (rule in PACK.candidates(ex, rule.match) and rule.compiled.search(ex)), (rule.id, ex)


def test_prefilter_agrees_with_trying_every_regex():
    lines: list[str] = []
    for r in PACK.rules:
        lines += list(r.examples) + list(r.counter_examples)
    for path in (FIXTURES / "real" / "real-failures.jsonl", FIXTURES / "rules" / "paraphrased.jsonl"):
        for row in path.read_text(encoding="utf-8").splitlines():
            excerpt = json.loads(row)["lines"]
            lines += excerpt
            lines.append("\n".join(excerpt))  # as a multi-line record
    for line in lines:
        got = {m.rule.id for m in PACK.match_fields(line, line)}
        assert got == naive(PACK, line, line), line[:120]


def test_rules_of_a_line_shape_match_as_the_line_does():
    """The scan matches a run's line against the rules its shape may meet (``line_rules``, once per shape):
    the same matches as ``match_fields`` for every example, counter-example and real excerpt line, with its
    message a part of the text (a header in front), and none where the shape rules everything out."""
    from l4lite.ingest.shape import shape_of

    lines: list[str] = []
    for r in PACK.rules:
        lines += list(r.examples) + list(r.counter_examples)
    for row in (FIXTURES / "real" / "real-failures.jsonl").read_text(encoding="utf-8").splitlines():
        lines += json.loads(row)["lines"]
    matched = 0
    for message in lines:
        if "\n" in message:
            continue
        text = "[2024-07-25 04:34:58,871] " + message
        candidates = PACK.line_rules(shape_of(text))
        if candidates is None:  # longer than the pack reads: the scan sends such a line as a record
            assert len(text.encode("utf-8", "surrogatepass")) > PACK.max_chars
            continue
        want = [(m.rule.id, m.groups) for m in PACK.match_fields(message, text, "trainer")]
        got = [(m.rule.id, m.groups) for m in PACK.match_line(candidates, message, text, "trainer")]
        assert got == want, message[:120]
        assert PACK.could_match_line(shape_of(text)) == bool(candidates[0] or candidates[1])
        matched += bool(got)
    assert matched > 200


def test_healthy_lines_match_nothing():
    healthy = [
        "gpu-a100-017:4012:4101 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
        "n01:2211:2290 [0] NCCL INFO TUNER/Plugin: Failed to find ncclTunerPlugin_v3 symbol, using internal tuner.",
        " iteration      100/  500000 | consumed samples: 51200 | lm loss: 3.456789E+00 | loss scale: 1.0 | "
        "grad norm: 0.876 | number of skipped iterations:   0 | number of nan iterations:   0 |",
        "{'loss': 1.8734, 'grad_norm': 0.4121, 'learning_rate': 1.2e-05, 'epoch': 2.98}",
        "mlx5_core 0000:c1:00.0: mlx5_ib: port 1 state changed to INIT",
        "mlx5_core 0000:c1:00.0 ibp193s0: Link up",
        "[INFO|trainer.py:3705] >> Saving model checkpoint to /out/checkpoint-500",
        "checking for errors in compile output: 0 errors, 2 warnings",
    ]
    for line in healthy:
        assert PACK.match_fields(line, line) == [], line


# ------------------------------------------------------------------------------------------- named groups, render
def test_named_groups_and_explanation_use_the_capture():
    line = ("kp-ddp-worker-0:3468:3905 [4] NCCL WARN NET/IB : Got completion from peer 10.0.0.9<54862> with "
            "status=12 opcode=0 len=0 vendor err 129 (Recv)")
    (m,) = PACK.match(rec(line))
    assert m.rule.id == "nccl-ib-retry-exceeded" and m.groups["peer"] == "10.0.0.9" and m.groups["status"] == "12"
    text = PACK.explain(m.rule, m.groups)
    assert "10.0.0.9" in text and "RETRY_EXC_ERR" in text
    (flush,) = PACK.match(rec(line.replace("status=12", "status=5")))
    assert flush.rule.id == "nccl-ib-flush" and flush.rule.role == "symptom"
    assert "WR_FLUSH_ERR" in PACK.explain(flush.rule, flush.groups)


def test_torchelastic_summary_names_host_and_rank():
    block = "\n".join([
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
        "Root Cause (first observed failure):", "[0]:", "  time      : 2025-05-21_15:43:03",
        "  host      : gpu-node-17", "  rank      : 12 (local_rank: 4)", "  exitcode  : -9 (pid: 14750)",
        "  error_file: <N/A>", "  traceback : Signal 9 (SIGKILL) received by PID 14750"])
    matches = {m.rule.id: m for m in PACK.match(rec("ChildFailedError", text=block))}
    root = matches["elastic-root-cause"]
    assert root.groups["host"] == "gpu-node-17" and root.groups["failed_rank"] == "12"
    assert root.groups["exitcode"] == "-9" and root.rule.role == "confirmation"
    assert matches["sigkill-exit"].rule.category == "host"  # the kernel OOM killer is a host fault


def test_render_is_plain_substitution():
    assert render("GPU {pci} on {node}", {"pci": "0000:3b:00"}) == "GPU 0000:3b:00 on ?"
    assert render("{status|t}", {"status": "12"}, {"t": {"12": "retry"}}) == "retry"
    assert render("{status|t}", {"status": "99"}, {"t": {"default": "unknown"}}) == "unknown"
    assert render("{x.__class__} {x[0]}", {"x": "abc"}) == "{x.__class__} {x[0]}"
    assert render("link[[ {a/b}]] down[[ ({pci})]]", {"b": "ib0"}) == "link ib0 down"
    assert render("failed with {exc}[[: {detail}]]", {"exc": "RuntimeError", "detail": "  "}) == "failed with RuntimeError"


def test_explanations_of_shipped_rules_render_without_holes():
    """Every example line yields an explanation and action with no unfilled '?' placeholder."""
    for rule in PACK.rules:
        for ex in rule.examples:
            m = rule.compiled.search(ex)
            groups = {k: v for k, v in m.groupdict().items() if v is not None}
            context = {"node": "node07", "rank": 3, "gpu": 1, "count": 2}
            for text in (PACK.explain(rule, groups, context), PACK.action(rule, groups, context)):
                assert "{" not in text and "[[" not in text, (rule.id, text)
                assert " ? " not in text and "(?)" not in text and not text.endswith("?"), (rule.id, ex, text)


def test_fallback_rules_only_when_nothing_specific_matched():
    ids = {m.rule.id for m in PACK.match(rec("RuntimeError: CUDA error: an illegal memory access was encountered"))}
    assert "cuda-illegal-address" in ids and "python-exception" not in ids
    ids = {m.rule.id for m in PACK.match(rec("RuntimeError: something nobody has seen before"))}
    assert ids == {"python-exception"}
    # a traceback through a checkpoint load says where it failed, not what: the generic rule still reports it
    tb = ("Traceback (most recent call last):\n  File \"train.py\", line 198, in train\n    "
          "trainer.train(resume_from_checkpoint=True)\n  File \"deepspeed/runtime/engine.py\", line 2935, in "
          "load_checkpoint\n    load_path, client_states = self._load_checkpoint(load_dir,")
    ids = {m.rule.id for m in PACK.match(rec(tb.splitlines()[0], text=tb))}
    assert ids == {"ckpt-load-traceback", "python-traceback"}


def test_overlong_record_is_cut_not_searched_whole():
    pack = RulePack.load(max_chars=1000)
    tail = "x" * 2_000_000 + " NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus."
    assert pack.match(rec(tail)) == []
    assert pack.match(rec("NVRM: Xid (PCI:0000:01:00): 79, x" + "y" * 2_000_000))[0].rule.id == "xid-79"


# --------------------------------------------------------------------------------------------- keyword derivation
def test_derive_keywords():
    assert derive_keywords(r"No space left on device") == ("no space left on device",)
    assert set(derive_keywords(r"Disk quota exceeded|EDQUOT")) == {"disk quota exceeded", "edquot"}
    assert derive_keywords(r"foo\d+barbaz") == ("barbaz",)
    assert derive_keywords(r"(?:ab|cd)\d") == ()  # no literal of 3+ characters on every branch
    assert derive_keywords(r"(unbalanced") == ()


# ------------------------------------------------------------------------------------------------- user rule files
def test_user_rule_overrides_adds_and_disables(tmp_path):
    user = write(tmp_path, """
[[rule]]
id = "xid-79"
pattern = 'Xid \\((?:PCI:)?(?P<pci>[0-9a-f:.]+)\\):\\s*79\\b'
category = "gpu_hardware"
role = "root"
severity = "critical"
explain = "site text for {pci}"
action = "call the vendor"

[[rule]]
id = "site-fs-hang"
pattern = 'weka(?:fs)?: (?P<what>[a-z ]+) timed out'
category = "storage"
role = "root"
severity = "error"
explain = "WekaFS {what} timed out"

[[rule]]
id = "nccl-socket-closed"
enabled = false
""")
    pack = RulePack.load([user])
    assert len(pack) == len(PACK)  # one replaced, one added, one removed
    assert pack.get("xid-79").explain == "site text for {pci}"
    assert [r.id for r in pack.rules].index("xid-79") == [r.id for r in PACK.rules].index("xid-79")
    assert pack.get("nccl-socket-closed") is None
    (m,) = pack.match(rec("wekafs: metadata read timed out"))
    assert m.rule.id == "site-fs-hang" and pack.explain(m.rule, m.groups) == "WekaFS metadata read timed out"
    assert m.rule.keywords  # derived from the pattern
    only = RulePack.load([user], include_default=False)
    assert {r.id for r in only.rules} == {"xid-79", "site-fs-hang"}


@pytest.mark.parametrize("body, message", [
    ('[[rule]]\nid = "a"\npattern = "x"\ncategory = "disk"\nrole = "root"\nseverity = "error"\nexplain = "e"\n',
     "unknown category 'disk'"),
    ('[[rule]]\nid = "a"\npattern = "x"\ncategory = "storage"\nrole = "culprit"\nseverity = "error"\nexplain = "e"\n',
     "unknown role 'culprit'"),
    ('[[rule]]\nid = "a"\npattern = "(x"\ncategory = "storage"\nrole = "root"\nseverity = "error"\nexplain = "e"\n',
     "invalid pattern"),
    ('[[rule]]\nid = "a"\npattern = "x"\ncategory = "storage"\nrole = "root"\nexplain = "e"\n',
     "missing required field(s) ['severity']"),
    ('[[rule]]\nid = "a"\npattern = "x"\ncategory = "storage"\nrole = "root"\nseverity = "error"\nexplain = "e"\n'
     'colour = "red"\n', "unknown field(s) ['colour']"),
    ('[[rule]]\nid = "a"\npattern = "x"\ncategory = "storage"\nrole = "root"\nseverity = "error"\nexplain = "e"\n'
     'priority = 500\n', "'priority' must be an integer from 0 to 100"),
])
def test_invalid_rule_names_file_line_and_id(tmp_path, body, message):
    path = write(tmp_path, "# site rules\n\n" + body)
    with pytest.raises(L4Error) as err:
        RulePack.load([path])
    text = str(err.value)
    assert "\n" not in text
    assert f"{path}:3" in text and "'a'" in text and message in text


def test_bad_toml_and_missing_file_are_one_line_errors(tmp_path):
    with pytest.raises(L4Error, match=r"invalid TOML.*line 2"):
        RulePack.load([write(tmp_path, '[[rule]]\nid = "unterminated\n')])
    with pytest.raises(L4Error, match="cannot read rule file"):
        RulePack.load([tmp_path / "absent.toml"])
    dup = '[[rule]]\nid = "a"\npattern = "x+y"\ncategory = "storage"\nrole = "root"\nseverity = "error"\nexplain = "e"\n'
    with pytest.raises(L4Error, match="duplicate rule id"):
        RulePack.load([write(tmp_path, dup + "\n" + dup, "dup.toml")])


# ------------------------------------------------------------------------------------------------------ timeouts
# a user rule whose pattern backtracks catastrophically on a run of ``a``
EVIL = """
[[rule]]
id = "evil"
pattern = '(a|aa)+$'
keywords = ["aaaa"]
category = "unknown"
role = "symptom"
severity = "warning"
explain = "never"
"""


def test_catastrophic_user_pattern_times_out_and_is_switched_off(tmp_path):
    user = write(tmp_path, EVIL)
    pack = RulePack.load([user], timeout=0.02, max_timeouts=2)
    hostile = rec("a" * 5000 + "!")
    for _ in range(5):  # would take hours without the timeout
        assert [m.rule.id for m in pack.match(hostile)] == []
    assert pack.timeouts["evil"] == 2 and "evil" in pack.disabled
    assert len([w for w in pack.warnings if "timed out" in w]) == 1
    assert any("disabled after 2 timeouts" in w for w in pack.warnings)
    assert str(user) in pack.warnings[0]
    # The rest of the pack still works.
    assert pack.match(rec("OSError: [Errno 28] No space left on device"))[0].rule.id == "enospc"


# ------------------------------------------------------------------------------------------------- RuleDetector
def scan_with(records: list[Record], pack: RulePack = PACK, totals: dict | None = None) -> JobScan:
    scan = JobScan()
    for r in records:
        for m in pack.match(r):
            scan.hits.append(Hit(m.rule.id, r, m.groups))
            key = (m.rule.id, r.node or "unknown")
            scan.hit_totals[key] = scan.hit_totals.get(key, 0) + 1
    for k, v in (totals or {}).items():
        scan.hit_totals[k] = v
    return scan


def test_rule_detector_groups_by_rule_and_node():
    xid = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus."
    wd = ("[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, "
          "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.")
    records = [rec(xid, node="n1", time=50.0, source="kernel", line=3)]
    records += [rec(wd.format(r=r), node="n2", rank=r, time=700.0 + r, line=10 + r) for r in range(30)]
    records += [rec(wd.format(r=40), node="n3", rank=40, time=705.0)]
    scan = scan_with(records, totals={("nccl-watchdog-timeout", "n2"): 1234})
    findings = RuleDetector(PACK, max_records=20).detect(scan)
    by = {(f.rule, f.node): f for f in findings}
    assert set(by) == {("xid-79", "n1"), ("nccl-watchdog-timeout", "n2"), ("nccl-watchdog-timeout", "n3")}
    root = by[("xid-79", "n1")]
    assert root.role == "root" and root.category == "gpu_hardware" and root.severity == "critical"
    assert root.time == 50.0 and "0000:3b:00" in root.explain and "n1" in root.action
    assert root.data["scope"] == "node" and root.data["groups"]["pci"] == "0000:3b:00"
    wd2 = by[("nccl-watchdog-timeout", "n2")]
    assert wd2.role == "cascade" and wd2.count == 1234 and len(wd2.records) == 20
    assert wd2.time == 700.0 and wd2.records[0].rank == 0 and "ALLREDUCE" in wd2.explain
    assert root.score > wd2.score
    assert findings[0] is root  # ordered by time


def test_scores_follow_severity_then_priority():
    assert rule_score("critical", 100) == 1.0
    assert rule_score("critical", 50) > rule_score("error", 50) > rule_score("warning", 50) > rule_score("info", 50)
    assert rule_score("error", 80) > rule_score("error", 10)
    assert 0.0 <= rule_score("info", 0) <= 1.0


def test_rule_detector_global_scope_and_phase_category():
    nan = rec("{'loss': nan, 'grad_norm': nan, 'learning_rate': 1e-05, 'epoch': 1.2}", node="n4")
    tb = "\n".join(["Traceback (most recent call last):", '  File "train.py", line 9, in <module>',
                    '  File "ckpt.py", line 40, in save_checkpoint', "    write(blob)",
                    "RuntimeError: write failed in an unexpected way"])
    crash = rec("RuntimeError: write failed in an unexpected way", text=tb, node="n5", line=20)
    findings = {f.rule: f for f in RuleDetector(PACK).detect(scan_with([nan, crash]))}
    assert findings["nan-metric"].category == "numerical" and findings["nan-metric"].data["scope"] == "global"
    # A storage signature from the save frames, and the generic exception is suppressed for that record.
    assert findings["ckpt-save-traceback"].category == "storage"
    assert "python-exception" not in findings
    # Without the frames the generic exception is re-categorised by the checkpoint phase of the traceback.
    bare = "\n".join(["Traceback (most recent call last):", '  File "ckpt.py", line 40, in _save', "    w()",
                      "RuntimeError: odd"])
    pack = RulePack.load()
    pack.disabled.add("ckpt-save-traceback")
    (f,) = RuleDetector(pack).detect(scan_with([rec("RuntimeError: odd", text=bare)], pack))
    assert f.rule == "python-exception" and f.category == "storage" and f.data["phase"] == "checkpoint"


def test_rule_detector_skips_hits_of_unknown_rules():
    scan = JobScan()
    scan.hits.append(Hit("no-such-rule", rec("x"), {}))
    assert RuleDetector(PACK).detect(scan) == []


def test_shipped_patterns_stay_fast_on_hostile_records():
    """Shipped rules run without a timeout on ordinary records: their patterns must not backtrack badly.

    Each pattern is searched in long repetitions of its own examples and keywords (the inputs that make lazy
    scans and alternations backtrack) under a generous timeout; a time-out here means a pattern to bound.
    """
    n = 16_384
    for rule in PACK.rules:
        hostile = []
        for ex in rule.examples[:2]:
            hostile.append((ex.replace("\n", " ") + " ") * (n // (len(ex) + 1) + 1))
            half = ex[: max(1, len(ex) // 2)]
            hostile.append(half * (n // len(half) + 1))
        for kw in rule.keywords[:3]:
            hostile.append((kw + " ") * (n // (len(kw) + 1) + 1))
            hostile.append((kw + "x" * 40 + " ") * (n // (len(kw) + 41) + 1))
        for text in hostile:
            try:
                rule.compiled.search(text[:n], timeout=2.0)
            except TimeoutError:  # pragma: no cover - the failure being tested for
                pytest.fail(f"{rule.id}: pattern backtracks on {text[:60]!r}...")


def test_a_bare_device_assert_leaves_the_category_to_the_assertion_beside_it():
    """`device-side assert triggered` says that a kernel's input check failed, not which input: the rule is generic,
    and the assertion line printed with it decides (PyTorch's scatter/gather bound check is an index, configuration)."""
    bare = [m.rule for m in PACK.match_fields("RuntimeError: CUDA error: device-side assert triggered",
                                              "RuntimeError: CUDA error: device-side assert triggered")]
    assert [r.id for r in bare] == ["cuda-device-assert"] and bare[0].generic
    line = ("../aten/src/ATen/native/cuda/ScatterGatherKernel.cu:367: operator(): block: [12,0,0], thread: [7,0,0] "
            'Assertion `idx_dim >= 0 && idx_dim < index_size && "index out of bounds"` failed.')
    hit = {m.rule.id: m.rule.category for m in PACK.match_fields(line, line)}
    assert hit == {"cuda-index-assert": "user_config"}




def test_shared_pack_is_read_once_and_handed_out_fresh(tmp_path):
    user = write(tmp_path, EVIL)
    first, second = RulePack.shared([user]), RulePack.shared([user])
    assert [r.id for r in first.rules] == [r.id for r in RulePack.load([user]).rules]
    assert all(a is b for a, b in zip(first.rules, second.rules, strict=True))  # parsed once
    hostile = rec("a" * 5000 + "!")
    for _ in range(first.max_timeouts):
        assert first.match(hostile) == []
    assert "evil" in first.disabled and first.warnings
    assert not second.disabled and not second.timeouts and not second.warnings  # its counters are its own
    assert second.match(rec("OSError: [Errno 28] No space left on device"))[0].rule.id == "enospc"
    user.write_text(EVIL.replace('"never"', '"read again"'), encoding="utf-8")  # edited since: read again
    assert RulePack.shared([user]).get("evil").explain == "read again"
