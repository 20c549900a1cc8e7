"""What category a real failure line gets, and why healthy lines stay healthy (issue 26).

Every line here is copied from the rule-writing (dev) part of the real corpus, or is a stock message of the tool
that prints it; each test names the mechanism it checks, not the excerpt.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from l4lite.api import analyze
from l4lite.evaluate.corpus import load_corpus
from l4lite.evaluate.planting import Excerpt, JobPlanter
from l4lite.options import AnalyzeOptions
from l4lite.rules.components import chained_cause, component
from l4lite.rules.pack import RulePack

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "corpus.jsonl"
PACK = RulePack.load()


def one_node(tmp_path: Path, lines: list[str]) -> tuple[str, str | None]:
    node = tmp_path / "job" / "node001"
    node.mkdir(parents=True)
    (node / "train.log").write_text("\n".join(lines) + "\n", encoding="utf-8")
    incident = analyze([str(tmp_path / "job")], AnalyzeOptions())
    return incident.status, incident.category


def planted(excerpt: Excerpt) -> tuple[str, str | None]:
    with tempfile.TemporaryDirectory() as tmp:
        job = JobPlanter(excerpt, 0).write("node-folders", Path(tmp) / excerpt.id).path
        incident = analyze([str(job)], AnalyzeOptions())
        return incident.status, incident.category


def dev_excerpt(excerpt_id: str) -> Excerpt:
    found = [x for x in load_corpus(CORPUS) if x.id == excerpt_id]
    assert found and found[0].split == "dev"
    return found[0]


def rule_ids(line: str, text: str | None = None) -> set[str]:
    return {m.rule.id for m in PACK.match_fields(line, text if text is not None else line)}


# ------------------------------------------------------------------------------- index and label asserts
def test_a_loss_kernels_target_assert_is_data_an_embedding_index_assert_is_configuration() -> None:
    target = ("/tmp/luarocks_cunn-scm-1-9248/cunn/lib/THCUNN/ClassNLLCriterion.cu:52: void "
              "cunn_ClassNLLCriterion_updateOutput_kernel(Dtype *, Dtype *, Dtype *, long *, Dtype *, int, int, int, "
              "int) [with Dtype = float, Acctype = float]: block: [0,0,0], thread: [24,0,0] Assertion "
              "`t >= 0 && t < n_classes` failed.")
    assert "label-out-of-range" in rule_ids(target)
    assert PACK.get("label-out-of-range").category == "data"
    index = ("../aten/src/ATen/native/cuda/Indexing.cu:1146: indexSelectLargeIndex: block: [335,0,0], thread: "
             "[64,0,0] Assertion `srcIndex < srcSelectDimSize` failed.")
    assert "cuda-index-assert" in rule_ids(index) and "label-out-of-range" not in rule_ids(index)


def test_a_label_assert_job_is_a_data_fault(tmp_path: Path) -> None:
    lines = list(dev_excerpt("lmlstmcrf27-label-out-of-range").lines)
    assert one_node(tmp_path, lines) == ("incident", "data")


# ------------------------------------------------------------------------------- tracebacks
def test_the_first_exception_of_a_chained_traceback_is_the_cause(tmp_path: Path) -> None:
    lines = list(dev_excerpt("everydream15-memoryerror-final-ckpt").lines)
    assert chained_cause("\n".join(lines)) == "MemoryError"
    assert chained_cause("Traceback (most recent call last):\nValueError: x") is None
    # torchrun's per-line tags (real job 128: ``[default0]:[rank0]: MemoryError``) are not part of the exception
    tagged = "\n".join(f"[default0]:[rank0]: {line}" for line in lines)
    assert chained_cause(tagged) == "MemoryError"
    # the final exception ("unexpected pos" of the zip writer) would say storage; the MemoryError says host
    assert one_node(tmp_path, lines) == ("incident", "host")


def test_a_traceback_through_a_checkpoint_load_is_not_storage_by_default(tmp_path: Path) -> None:
    lines = list(dev_excerpt("glm136-zero-dp-world-size-resume").lines)
    status, category = one_node(tmp_path, lines)
    assert status == "incident" and category != "storage"


def test_a_load_traceback_without_its_exception_is_still_a_failure() -> None:
    tb = ("[rank0]: Traceback (most recent call last):\n[rank0]:   File \"train_sft.py\", line 198, in train\n"
          "[rank0]:     trainer.train(resume_from_checkpoint=True)\n[rank0]:   File \"deepspeed/runtime/engine.py\", "
          "line 2935, in load_checkpoint")
    assert rule_ids("Traceback (most recent call last):", tb) == {"ckpt-load-traceback", "python-traceback"}


def test_an_import_of_a_compiled_extension_with_a_missing_symbol_is_software(tmp_path: Path) -> None:
    lines = list(dev_excerpt("axolotl1157-flashattn-undefined-symbol").lines)
    cut = next(line for line in lines if line.startswith("ImportError:"))
    assert "native-extension-abi" in rule_ids(cut) and "python-env-error" not in rule_ids(cut)
    assert "python-env-error" in rule_ids("ModuleNotFoundError: No module named 'flash_attn'")
    assert one_node(tmp_path, lines) == ("incident", "software")


# ------------------------------------------------------------------------------- components
@pytest.mark.parametrize("advice", [
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
    "incorrect.",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.",
])
def test_the_advice_appended_to_cuda_errors_names_no_component(advice: str) -> None:
    assert component(advice, learned=True) is None


def test_a_stuck_rank_found_by_its_silence_takes_the_component_its_node_names() -> None:
    # a dcgmi report on the node whose ranks stayed silent while the others timed out: the hang is the GPU's
    assert planted(dev_excerpt("mle-dcgm-row-remap-pending")) == ("incident", "gpu_hardware")


# ------------------------------------------------------------------------------- hard negatives
def test_c10d_client_retry_warnings_are_no_fault() -> None:
    line = ("[W socket.cpp:663] [c10d] The client socket has failed to connect to [node01]:29500 (errno: 111 - "
            "Connection refused).")
    assert "nccl-socket-refused" not in rule_ids(line)
    assert "nccl-socket-refused" in rule_ids("r11i6n2:486514:486651 [1] include/socket.h:403 NCCL WARN Connect to "
                                             "10.148.3.247<56821> failed : Connection refused")
    excerpt = Excerpt(id="c10d-retry", source_group="c10d", split="dev", status="healthy", category=None,
                      phase="init", faulty=None, lines=(line, line))
    assert planted(excerpt)[0] == "healthy"


def test_progress_of_another_run_far_behind_is_no_loss_spike() -> None:
    # NeMo progress at iteration 120 (loss 1.3) planted in a job whose Megatron lines run at iteration 2000 (loss
    # 2.3): a far jump to a level that holds is another run or a resume, not a divergence
    assert planted(dev_excerpt("bionemo740-nemo-progress-healthy"))[0] == "healthy"


def test_a_driver_boot_banner_is_not_an_error_line() -> None:
    from l4lite.detect.components import ERRORISH

    assert not ERRORISH.search("[Mon Jun 24 10:18:12 2024] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15")
    assert ERRORISH.search("NVRM: GPU 0000:06:00.0: GPU has fallen off the bus.")
    assert ERRORISH.search("NVRM: Xid (PCI:0000:06:00): 79, GPU has fallen off the bus.")


def test_a_dataloader_workers_exception_reraised_by_older_pytorch_is_data(tmp_path: Path) -> None:
    # the re-raised message ("ValueError: Traceback ...") only wraps the worker's traceback: the frames say what
    lines = list(dev_excerpt("retinanet93-truncated-midrun").lines)
    assert one_node(tmp_path, lines) == ("incident", "data")
