"""Rule categories agree with the labelled threads that hit them (``benchmarks/rule_audit.py``), and a rule
declared ``generic`` gives its line's category to the line's words."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from l4lite.detect.rules import RuleDetector
from l4lite.records import Record
from l4lite.rules.pack import RulePack
from l4lite.scan.scanner import Hit, JobScan

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import rule_audit  # noqa: E402
from rule_audit import Thread, audit, defects  # noqa: E402

SIGNATURE = """
[[rule]]
id = "widget-failed"
pattern = 'widget failed'
category = "{category}"
role = "root"
severity = "error"
explain = "x"
{extra}
"""


def _pack(tmp_path: Path, category: str = "software", extra: str = "") -> RulePack:
    path = tmp_path / "user.toml"
    path.write_text(SIGNATURE.format(category=category, extra=extra), encoding="utf-8")
    return RulePack.load([path], include_default=False)


def _threads(labels: list[tuple[str, str]]) -> list[Thread]:
    return [Thread(group, label, ("boot ok", f"widget failed in {group}"), "lines") for group, label in labels]


def _shipped(pack: RulePack) -> RulePack:
    """The user rules audited as if shipped (the audit reads the shipped pack only)."""
    for rule in pack.rules:
        object.__setattr__(rule, "shipped", True)
    return pack


def test_the_shipped_rules_agree_with_the_labelled_threads() -> None:
    """The lines file and the dev excerpts only: the rule pack's own examples carry no independent label.

    ``cuda-unknown-error`` was split (a GPU that failed, gpu_hardware, and two machines whose driver or fabric
    manager state a restart fixed, host): it is generic since 2026-12-05, the rest of its line decides, and no rule
    is known to disagree with its threads."""
    assert RulePack.load().get("cuda-unknown-error").generic
    bad = defects(audit(with_examples=False))
    assert [(a.rule.id, a.rule.category, dict(a.counts)) for a in bad] == []


def test_three_threads_against_a_rule_make_a_defect(tmp_path: Path) -> None:
    pack = _shipped(_pack(tmp_path))
    threads = _threads([("a/b#1", "user_config"), ("c/d#2", "user_config"), ("e/f#3", "user_config"),
                        ("g/h#4", "software")])
    (found,) = audit(pack, threads, with_examples=False)
    assert found.defect(3) and found.majority == ("user_config", 3)


def test_two_threads_or_one_source_are_not_enough(tmp_path: Path) -> None:
    pack = _shipped(_pack(tmp_path))
    two = _threads([("a/b#1", "user_config"), ("c/d#2", "user_config")])
    assert defects(audit(pack, two, with_examples=False)) == []
    # one thread copied into both labelled files, or its lines split in three entries, votes once
    same = _threads([("a/b#1", "user_config")] * 3 + [("c/d#2", "user_config")])
    assert defects(audit(pack, same, with_examples=False)) == []


def test_no_majority_is_no_defect(tmp_path: Path) -> None:
    pack = _shipped(_pack(tmp_path))
    split = _threads([("a/b#1", "user_config"), ("c/d#2", "data"), ("e/f#3", "software"), ("g/h#4", "software")])
    assert defects(audit(pack, split, with_examples=False)) == []


def test_a_generic_rule_is_not_audited(tmp_path: Path) -> None:
    pack = _shipped(_pack(tmp_path, extra="generic = true"))
    against = _threads([("a/b#1", "user_config"), ("c/d#2", "user_config"), ("e/f#3", "user_config")])
    assert audit(pack, against, with_examples=False) == []


def test_a_more_specific_rule_decides_the_line(tmp_path: Path) -> None:
    """ENOSPC inside NCCL's shared-memory warning is the shared-memory rule's line, not the disk-full rule's."""
    pack = RulePack.load()
    line = "include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device"
    assert rule_audit.rules_hit(pack, [line]) == {"nccl-shm-too-small"}


def _finding_category(pack: RulePack, message: str) -> str:
    record = Record(file="train.log", line=1, end_line=1, node="node01", rank=0, gpu=None, source="trainer",
                    time=1.0, level="error", message=message, text=message)
    scan = JobScan()
    for m in pack.match(record):
        scan.hits.append(Hit(m.rule.id, record, m.groups))
    (finding,) = RuleDetector(pack).detect(scan)
    return finding.category


def test_a_generic_rule_takes_the_category_its_line_names(tmp_path: Path) -> None:
    plain = _pack(tmp_path, category="user_config")
    generic = _pack(tmp_path, category="user_config", extra="generic = true")
    disk = "widget failed: No space left on device while writing the checkpoint"
    assert _finding_category(plain, disk) == "user_config"
    assert _finding_category(generic, disk) == "storage"
    # a line whose words name nothing keeps the rule's category
    assert _finding_category(generic, "widget failed") == "user_config"


def test_a_library_version_mismatch_is_not_a_configuration_error() -> None:
    """``python-code-error`` is generic: an unexpected keyword argument after an upgrade is software, a wrong
    argument value stays user_config."""
    pack = RulePack.load()
    assert _finding_category(pack, "TypeError: __init__() got an unexpected keyword argument 'grad_scaler'") \
        == "software"
    assert _finding_category(pack, "ValueError: num_samples should be a positive integer value, but got "
                                   "num_samples=0") == "user_config"


def test_a_generic_rule_reads_the_words_outside_its_mechanism() -> None:
    """A device-side assert is a mechanism: its own words (the lexicon's "device-side assert", a software word)
    do not decide the line; the words around it do when they name a component, else the rule's category stands."""
    pack = RulePack.load()
    assert pack.get("cuda-device-assert").generic
    assert _finding_category(pack, "RuntimeError: CUDA error: device-side assert triggered") == "user_config"
    assert _finding_category(pack, "RuntimeError: CUDA error: device-side assert triggered in the tokenizer of a "
                                   "truncated jsonl record") == "data"


def test_threads_of_several_causes_make_a_mechanism(tmp_path: Path) -> None:
    """Four threads, four diagnoses: the phrase says how it failed, not why; declared generic, it is not flagged."""
    labels = [("a/b#1", "storage"), ("c/d#2", "host"), ("e/f#3", "user_config"), ("g/h#4", "software")]
    (plain,) = rule_audit.spread(_shipped(_pack(tmp_path)), _threads(labels))
    assert plain.mechanism and plain.flag() == "MECHANISM"
    (generic,) = rule_audit.spread(_shipped(_pack(tmp_path, extra="generic = true")), _threads(labels))
    assert generic.flag() == ""
    agreed = [("a/b#1", "software"), ("c/d#2", "software"), ("e/f#3", "software"), ("g/h#4", "host")]
    (cause,) = rule_audit.spread(_shipped(_pack(tmp_path)), _threads(agreed))
    assert not cause.mechanism and cause.written == 3


def test_a_verdict_needs_agreeing_source_groups_where_the_rule_decides(tmp_path: Path) -> None:
    """Another category from three agreeing source groups that are more than half; role-only when four groups
    decide and another label outnumbers the rule's own; nothing from two groups or a tie."""
    pack = _shipped(_pack(tmp_path, category="storage"))
    three = [("a/b#1", "user_config"), ("c/d#2", "user_config"), ("e/f#3", "user_config"), ("g/h#4", "storage")]
    (moved,) = rule_audit.spread(pack, _threads(three))
    assert moved.verdict() == "category user_config"
    split = [("a/b#1", "user_config"), ("c/d#2", "user_config"), ("e/f#3", "network"), ("g/h#4", "storage")]
    (loose,) = rule_audit.spread(pack, _threads(split))
    assert loose.verdict() == "role-only"
    for few in ([("a/b#1", "user_config"), ("c/d#2", "user_config"), ("e/f#3", "storage")],
                [("a/b#1", "user_config"), ("c/d#2", "user_config"), ("e/f#3", "storage"), ("g/h#4", "storage")]):
        (kept,) = rule_audit.spread(pack, _threads(few))
        assert kept.verdict() == ""


def test_the_verdicts_on_the_studied_threads_are_the_known_ones() -> None:
    """The lines file, the dev excerpts and the studied fresh samples (never b, d, f, h, j, l). Both verdicts of
    2026-12-05 were applied and taken back (docs/evaluation.md): ``nccl-system-error`` without a category (with
    the fallback kept off its line) took the held-out category from 62.7 to 62.2 together with a change of
    ``diagnose.firstfail``; ``cuda-device-assert`` as data lost the thread of its own example in
    ``category_cv.py --lines``. ``dataloader-worker-died`` (generic, data) became role-only when m-study's
    FOTS#23 made five threads decide (user_config 2, host 2, data 1); applying a verdict is the thread-vote overrule
    that was taken back, so it stands as a finding only (docs/evaluation.md, 2026-12-06). q-study's NCCL threads
    (an interface name, docker's IPC namespace) turned ``nccl-system-error``'s verdict from role-only into
    ``category user_config``: the same overrule, so again a finding only. With the model retrained on
    2026-12-06 without the score-only text (docs/evaluation.md), one user_config thread's line of
    ``dataloader-worker-died`` is read by the model, so its deciding threads are host 3, user_config 1, data 1 and
    the verdict reads ``category host``: the same overrule, a finding only. w-study (2026-12-07) adds two more
    findings of the same kind: a Windows TDR timeout (whisper-standalone-win#411, user_config) makes
    ``cuda-launch-failure``'s deciding threads user_config 2, software 1, host 1, and a read-only ``out/`` whose cause
    nobody found (graph4nlp#580, unknown) makes ``read-only-fs``'s user_config 2, storage 1, unknown 1: both read
    ``role-only`` and stand as findings only. Any other verdict fails here."""
    threads = rule_audit.labelled_threads(fresh=True)
    assert "fresh" in {t.origin for t in threads}
    # no entry of a score-only sample votes (b's threads that the lines file also holds vote as its entries)
    assert not {t.group for t in threads if t.origin == "fresh"} & _score_only_groups()
    rows = rule_audit.spread(threads=threads)
    assert sorted((s.rule.id, s.verdict()) for s in rows if s.verdict()) == [
        ("cuda-device-assert", "category data"), ("cuda-launch-failure", "role-only"),
        ("dataloader-worker-died", "category host"), ("nccl-system-error", "category user_config"),
        ("read-only-fs", "role-only")]
    assert [(s.rule.id, s.verdict()) for s in rule_audit.spread() if s.verdict()] == [
        ("cuda-device-assert", "category data")]


def _score_only_groups() -> set[str]:
    return _fresh_groups("b", "d", "f", "h", "j", "l", "m-score", "n-score", "o-score", "p-score", "q-score",
                         "r-score", "s-score", "t-score", "u-score", "v-score", "w-score")


def _fresh_groups(*names: str) -> set[str]:
    out: set[str] = set()
    for name in names:
        for raw in (ROOT / "fixtures" / "real" / "fresh" / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
            if raw.strip():
                out.add(json.loads(raw)["source_group"])
    return out


def test_a_thread_a_rule_was_written_from_does_not_vote_for_it(tmp_path: Path) -> None:
    pack = _shipped(_pack(tmp_path, extra='examples = ["widget failed in some-owner/some-repository#1"]'))
    (found,) = rule_audit.spread(pack, _threads([("some-owner/some-repository#1", "software"), ("c/d#2", "host")]))
    assert list(found.votes) == ["c/d#2"] and found.written_from == 1


def test_older_excerpts_are_labelled_threads_named_as_the_other_files_name_them() -> None:
    assert rule_audit.group_of("https://github.com/NVIDIA/nccl/issues/1235") == "NVIDIA/nccl#1235"
    assert rule_audit.group_of("https://example.org/chronicles.md") == "https://example.org/chronicles.md"
    threads = rule_audit.labelled_threads()
    assert {t.origin for t in threads} == {"lines", "dev", "failures"}
    assert all(t.label != "unknown" for t in threads)


def test_no_shipped_rule_names_a_mechanism_as_a_cause() -> None:
    """Every rule's threads by the category its finding takes: a rule that is not generic is not hit by threads
    of several causes, and a generic rule's reading of its words agrees at least as often as its own category
    would (the shipped learned model, which read these threads: a floor, not an estimate)."""
    rows = rule_audit.spread()
    assert [(s.rule.id, s.flag()) for s in rows if s.flag()] == []
    fallback = next(s for s in rows if s.rule.id == "python-exception")
    assert len(fallback.votes) >= 80 and fallback.read >= 0.8 * len(fallback.votes)


def test_cuda_unknown_error_while_initialising_is_the_hosts_driver_state() -> None:
    """pytorch/pytorch#49081, #88639 and facebookresearch/maskrcnn-benchmark#238, each fixed by a reboot or a module
    reload; later in a run the same words still follow a GPU that failed (``cuda-unknown-error``)."""
    pack = RulePack.load()
    assert _finding_category(pack, "RuntimeError: CUDA unknown error - this may be due to an incorrectly set up "
                                   "environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program "
                                   "start. Setting the available devices to be zero.") == "host"
    assert _finding_category(pack, "RuntimeError: cuda runtime error (30) : unknown error at /opt/conda/conda-bld/"
                                   "pytorch/work/aten/src/THC/THCGeneral.cpp:51") == "host"
    assert _finding_category(pack, "RuntimeError: CUDA error: unknown error") == "gpu_hardware"


def test_lexicon_words_the_threads_contradict() -> None:
    """``invalid load key`` (four threads, each a Git LFS pointer in place of the weights) names a configuration,
    not data; ``device-side assert`` (five threads: data or configuration) names a mechanism, no component."""
    from l4lite.rules.components import component

    named = component("_pickle.UnpicklingError: invalid load key, 'v'.")
    assert named is not None and named.category == "user_config"
    assert component("RuntimeError: CUDA error: device-side assert triggered") is None


def test_an_unpickling_error_reads_the_words_after_it() -> None:
    """``_pickle.UnpicklingError`` says that a file could not be deserialised, not why: a truncated pickle is the
    file system's (``ckpt-truncated``), a Git LFS pointer's ``invalid load key, 'v'`` a configuration even where the
    rule written for it is absent."""
    pack = RulePack.load()
    assert pack.get("unpickling-error").generic
    # the truncated pickle's own rule decides its line (the generic reading of "truncated" would say data)
    assert rule_audit.rules_hit(pack, ["_pickle.UnpicklingError: pickle data was truncated"]) == {"ckpt-truncated"}
    pack.disabled.add("ckpt-not-a-checkpoint")
    assert _finding_category(pack, "_pickle.UnpicklingError: invalid load key, 'v'.") == "user_config"
    assert _finding_category(pack, "_pickle.UnpicklingError: unpickling stack underflow") == "storage"


def test_the_lexicon_words_the_threads_contradict_are_the_known_ones() -> None:
    """``invalid argument`` (network 2, user_config 1, software 4) stays a configuration word: without it dev lost
    a thread (docs/evaluation.md), and as a code word (the majority of its threads, 2026-12-05) it lost the same
    one (parlai3084, top-1 and category) while no score-only set moved; ``net/socket`` is NCCL's transport named in INFO lines of either kind, as
    ``mlx5`` is the NIC's driver named by network faults and by software ones alike (2 and 2); ``valueerror``
    agrees with most of its threads. ``net/ib`` (10 of 17)
    and ``not found`` (1 of 4) became weak words and NCCL's ``misc/ibvwrap.cc`` no name of its own on 2026-12-05
    (docs/evaluation.md): none of them may decide a line alone again. Any other word the labelled threads
    contradict fails here (CUDA's "system not yet initialized" was one: four threads fixed it on the host, and it
    reads as host now; so is NVML's "Driver/library version mismatch", whose four host threads made ``version``
    read against them until the name decided their lines)."""
    found = {(category, word) for category, word, _ in rule_audit.lexicon_words(rule_audit.labelled_threads())}
    assert found == {("user_config", "invalid argument"), ("network", "net/socket"), ("network", "mlx5")}


def test_single_example_rules_follow_the_threads_that_contradicted_them() -> None:
    """A rule written from one example whose labelled thread said otherwise (2026-12-05): an IB local protection
    error was the node's PCIe ACS setting (NVIDIA/nccl#928, the thread of the rule's own example). ``read-only-fs``
    keeps storage although its two labelled threads were paths on read-only mounts: the real jobs 045, 046, 063
    and 070 are a node's file system gone read-only, and user_config would blame no node for them."""
    pack = RulePack.load()
    assert pack.get("nccl-ib-local-protection").category == "host"
    assert pack.get("read-only-fs").category == "storage"
    by_rule = {a.rule.id: a for a in audit(with_examples=False)}
    for rule_id in ("nccl-ib-local-protection",):
        found = by_rule[rule_id]
        assert found.counts and found.majority is not None and found.majority[0] == found.rule.category


def test_a_category_one_source_holds_against_two_that_agree_is_fitted(tmp_path: Path) -> None:
    """Where the rule's own category decides: at most one source group carries it and at least two carry one other
    label that outnumbers it. Three agreeing groups that are a majority name the category to take; two name
    none (the line's words should decide); a second group for the rule's own category clears it."""
    pack = _shipped(_pack(tmp_path, category="storage"))
    (two,) = rule_audit.spread(pack, _threads([("a/b#1", "host"), ("c/d#2", "host"), ("e/f#3", "storage")]))
    assert two.fitted() == "component"
    (three,) = rule_audit.spread(pack, _threads([("a/b#1", "host"), ("c/d#2", "host"), ("e/f#3", "host"),
                                                 ("g/h#4", "storage")]))
    assert three.fitted() == "category host"
    (held,) = rule_audit.spread(pack, _threads([("a/b#1", "host"), ("c/d#2", "host"), ("e/f#3", "storage"),
                                                ("g/h#4", "storage")]))
    assert held.fitted() == ""
    (lone,) = rule_audit.spread(pack, _threads([("a/b#1", "host"), ("e/f#3", "storage")]))
    assert lone.fitted() == ""


def test_a_fault_run_under_several_launchers_is_one_source(tmp_path: Path) -> None:
    """Real jobs vote once per injected fault: ``ddp-erofs`` and ``deepspeed-erofs`` are one source group, read
    from the lines their ground truth names as evidence; a healthy job does not vote."""
    for name, scenario, status in (("045-ddp-erofs", "ddp-erofs", "incident"),
                                   ("046-deepspeed-erofs", "deepspeed-erofs", "incident"),
                                   ("047-ddp-healthy", "ddp-healthy", "healthy")):
        job = tmp_path / name
        (job / "n1").mkdir(parents=True)
        (job / "n1" / "train.log").write_text("boot ok\nOSError: [Errno 30] Read-only file system\n",
                                              encoding="utf-8")
        truth = {"scenario": scenario, "status": status, "category": "storage" if status == "incident" else None,
                 "evidence": [{"file": "n1/train.log", "line": 2}]}
        (job / "ground_truth.json").write_text(json.dumps(truth), encoding="utf-8")
    threads = rule_audit.job_threads(tmp_path)
    assert [(t.group, t.label, t.lines, t.origin) for t in threads] == [
        ("real_jobs/erofs", "storage", ("OSError: [Errno 30] Read-only file system",), "jobs")] * 2
