"""Where a category comes from when no signature names the fault: a node's warnings after its error lines, and a
re-raised worker exception read by the traceback inside it. The lines are written for these tests."""

from __future__ import annotations

from pathlib import Path

from scan_helpers import T0, node_job, progress

from l4lite.detect.components import ComponentDetector
from l4lite.options import AnalyzeOptions
from l4lite.rules.exceptions import exception_class, named
from l4lite.rules.pack import RulePack
from l4lite.scan.job import scan_job


def _components(job: Path) -> list[tuple[str | None, str, str]]:
    found = ComponentDetector().detect(scan_job([str(job)], AnalyzeOptions()))
    return [(f.node, f.category, f.severity) for f in found]


def test_a_warning_one_node_printed_names_the_component(tmp_path: Path) -> None:
    warn = f"{T0}30,000 trainer WARNING: shard cache: disk is full, dropping cached shards"
    job = node_job(tmp_path, {"node01": progress(30) + [warn], "node02": progress(30)})
    assert _components(job) == [("node01", "storage", "warning")]


def test_a_warning_every_node_printed_is_chatter(tmp_path: Path) -> None:
    warn = f"{T0}01,500 WARNING run.py: Setting OMP_NUM_THREADS environment variable for each process to be 1"
    job = node_job(tmp_path, {n: progress(1) + [warn] + progress(20)[1:] for n in ("node01", "node02")})
    assert _components(job) == []


def test_a_warning_waits_for_the_nodes_error_lines(tmp_path: Path) -> None:
    """An error line that names a component speaks for the node; its warnings are not read then."""
    warn = f"{T0}20,000 WARNING: gradient norm is growing fast at step 20"
    err = f"{T0}21,000 ERROR: cache flush failed: FSx volume answered with an I/O error"
    job = node_job(tmp_path, {"node01": progress(20) + [warn, err], "node02": progress(20)})
    assert _components(job) == [("node01", "storage", "error")]


def test_a_build_configuration_s_compiler_flags_name_no_component(tmp_path: Path) -> None:
    """torch's build settings, as MMEngine prints them at start-up (real job 225): ``-Wno-error=...`` reads as the
    word error and ``-Wno-strict-overflow`` as a numerical overflow unless compiler options are read as options."""
    build = (f"{T0}01,000  - Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release, CXX_FLAGS= -fvisibility-inlines-hidden "
             "-DUSE_PTHREADPOOL -DNDEBUG -O2 -fPIC -Wall -Wextra -Werror=return-type -Wno-strict-overflow "
             "-Wno-stringop-overflow -Wno-error=old-style-cast -faligned-new -fno-math-errno, USE_CUDA=0")
    job = node_job(tmp_path, {"node01": progress(1) + [build] + progress(20)[1:], "node02": progress(20)})
    assert _components(job) == []
    # the same words in prose still name their component
    said = f"{T0}21,000 ERROR: fp16 overflow in the loss: the step's result is inf"
    job = node_job(tmp_path / "b", {"node01": progress(20) + [said], "node02": progress(20)})
    assert [c for _, c, _ in _components(job)] == ["numerical"]


def test_a_fabric_providers_lower_case_warn_marker_is_a_warning(tmp_path: Path) -> None:
    warn = (f"{T0}30,000 libfabric:4517:17085::efa:cq:efa_rdm_txe_handle_error():737<warn> err: 5, message: Invalid "
            "address; peer EFA addr unreachable")
    job = node_job(tmp_path, {"node01": progress(30) + [warn], "node02": progress(30)})
    assert _components(job) == [("node01", "network", "warning")]


WRAPPED = """Traceback (most recent call last):
  File "train.py", line 125, in main
    for step, batch in enumerate(loader):
  File "/env/lib/python3.7/site-packages/torch/utils/data/dataloader.py", line 608, in _process_next_batch
    raise batch.exc_type(batch.exc_msg)
ValueError: Traceback (most recent call last):
  File "/env/lib/python3.7/site-packages/imageio/plugins/pillow.py", line 518, in pil_try_read
    im.getdata()[0]
  File "/env/lib/python3.7/site-packages/PIL/Image.py", line 1308, in getdata
    self.load()"""


def test_an_exception_whose_message_is_a_traceback_names_nothing_itself() -> None:
    assert exception_class(WRAPPED) is None
    assert exception_class(WRAPPED + "\nOSError: image file is truncated (5 bytes not processed)") == "OSError"
    assert "python-code-error" not in {m.rule.id for m in RulePack.load().match_fields(
        "ValueError: Traceback (most recent call last):", "ValueError: Traceback (most recent call last):")}


def test_a_traceback_cut_inside_a_decoder_is_a_sample_it_cannot_read() -> None:
    found = named(WRAPPED)
    assert found is not None and found.category == "data"
    # the same frames above an exception line of their own: the exception decides
    found = named(WRAPPED + "\nPermissionError: [Errno 13] Permission denied: '/data/x.jpg'")
    assert found is not None and found.category == "user_config"


def _assert_rule_stands(pack: RulePack, line: str) -> None:
    """One error line on one node: its only root is ``cuda-illegal-address`` with the rule's own category, no
    component reading taken."""
    from l4lite.detect.rules import RuleDetector
    from l4lite.records import Record
    from l4lite.scan.scanner import Hit, JobScan

    record = Record(file="rank0.log", line=1, end_line=1, node="node01", rank=0, gpu=None, source="trainer",
                    time=10.0, level="error", message=line, text=line)
    scan = JobScan()
    scan.hits += [Hit(m.rule.id, record, m.groups) for m in pack.match(record)]
    (root,) = [f for f in RuleDetector(pack).detect(scan) if f.role == "root"]
    assert root.rule == "cuda-illegal-address" and root.category == "software"
    assert "component" not in root.data and root.data.get("generic")


def test_a_generic_rules_framing_words_do_not_let_a_coin_toss_overrule_it() -> None:
    """m-study's pytorch#42077: "cuda runtime error (700) : an illegal memory access was encountered" is
    ``cuda-illegal-address`` (generic, software). Without its mechanism the line keeps only CUDA's framing,
    "cuda runtime error (700) :" (once from the message, once from the text: what the detector reads), which the
    learned model reads as configuration at about 0.57: under the bar a fallback's reading must clear
    (``FALLBACK_LEARNED_MIN``), so the rule's own category stands."""
    from l4lite.detect.rules import FALLBACK_LEARNED_MIN, words_left
    from l4lite.rules import components

    line = "cuda runtime error (700) : an illegal memory access was encountered"
    pack = RulePack.load()
    rule = next(r for r in pack.rules if r.id == "cuda-illegal-address")
    guess = components.component(words_left(rule, f"{line}\n{line}"), learned=True)
    assert guess is not None and guess.words == (components.LEARNED_WORDS,)
    assert guess.category != "software" and guess.score < FALLBACK_LEARNED_MIN
    _assert_rule_stands(pack, line)


def test_a_generic_rules_own_framing_is_not_read_by_the_learned_model() -> None:
    """PyTorch's bare "RuntimeError: CUDA error: an illegal memory access was encountered" is
    ``cuda-illegal-address`` (generic, software). Without its mechanism the line keeps "RuntimeError: CUDA error:",
    the words every example of the rule prints around it; the learned model reads them as configuration above the
    fallback bar, a prior of its training text. Words the rule's own examples hold say nothing more, so the model is
    not asked and the rule's own category stands; a line with a word of its own is still read."""
    from l4lite.detect.rules import framing, words_left
    from l4lite.rules import components

    line = "RuntimeError: CUDA error: an illegal memory access was encountered"
    pack = RulePack.load()
    rule = next(r for r in pack.rules if r.id == "cuda-illegal-address")
    left = words_left(rule, f"{line}\n{line}")
    guess = components.component(left, learned=True)
    assert guess is None or guess.category != "software"  # the model alone would not give the rule's category
    assert not components.says_more(left, framing(rule))
    assert components.says_more(words_left(rule, f"{line} in the flash attention kernel"), framing(rule))
    _assert_rule_stands(pack, line)
