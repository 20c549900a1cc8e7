"""Root selection on real lines that no rule was written for: the faulty node's own words are the root, its
peers' cascades (watchdog timeouts, broken pipes, SIGTERM) never are while such a line exists.

Each excerpt is real (its source in ``fixtures/real/corpus.jsonl``, dev part) and is planted in an 8-node job
whose healthy nodes print the usual cascades."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from l4lite import analyze
from l4lite.evaluate.planting import Excerpt, JobPlanter
from l4lite.rules.components import is_cascade

REAL_JOBS = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs"

# NVIDIA/nccl#230: the IB adapter of one node raised a catastrophic error; the other ranks timed out.
IB_ASYNC = Excerpt(
    id="t-ib-async", source_group="t#1", split="dev", status="incident", category="network", phase="train",
    faulty="container-e275", lines=(
        "container-e275:815:864 [0] transport/net_ib.cu:80 NCCL WARN NET/IB : Got async event : local "
        "catastrophic error",
        "container-e275:815:864 [0] misc/ibvwrap.cu:220 NCCL WARN Call to ibv_get_async_event failed",
    ),
)
# stas00/ml-engineering, debug.md: a DCGM diagnostic of the node that dropped out of the job.
DCGM = Excerpt(
    id="t-dcgm", source_group="t#2", split="dev", status="incident", category="gpu_hardware", phase=None,
    faulty="gpu3", lines=(
        "+---------------------------+------------------------------------------------+",
        "| Diagnostic                | Result                                         |",
        "+===========================+================================================+",
        "| Error                     | GPU 3 has uncorrectable memory errors and row  |",
        "|                           |  remappings are pending                        |",
    ),
)
# databrickslabs/dolly#111: DeepSpeed's memory report at 95 % of the host's RAM, then the process was gone.
HOST_RAM = Excerpt(
    id="t-host-ram", source_group="t#3", split="dev", status="incident", category="host", phase="init",
    faulty="gpu0", lines=(
        "[2023-04-20 19:03:19,578] [INFO] [utils.py:831:see_memory_usage] After creating fp32 partitions",
        "[2023-04-20 19:03:19,581] [INFO] [utils.py:840:see_memory_usage] CPU Virtual Memory:  used = 29.71 GB, "
        "percent = 95.3%",
        "[2023-04-20 19:03:19,633] [INFO] [utils.py:831:see_memory_usage] Before initializing optimizer states",
    ),
)


@pytest.mark.parametrize("excerpt", [IB_ASYNC, DCGM, HOST_RAM], ids=lambda x: x.id)
def test_the_faulty_nodes_own_line_is_the_root_and_no_cascade_is(tmp_path, excerpt: Excerpt) -> None:
    job = JobPlanter(excerpt, seed=0).write("node-folders", tmp_path / "job")
    truth = json.loads((job.path / "ground_truth.json").read_text())
    planted = {(e["file"], e["line"]) for e in truth["evidence"]}
    inc = analyze(str(job.path)).to_dict()
    assert inc["status"] == "incident" and inc["category"] == excerpt.category
    assert inc["suspects"][0]["node"] == truth["faulty_nodes"][0]
    roots = [e for e in inc["evidence"] if e["role"] == "root"]
    assert roots and not any(is_cascade(e["text"]) for e in roots)
    assert any((e["file"], e["line"]) in planted for e in roots)
    # the healthy nodes' cascades are still shown, as cascades
    assert any(e["role"] == "cascade" and e["node"] != truth["faulty_nodes"][0] for e in inc["evidence"])


def test_a_hang_without_words_of_its_own_keeps_the_hang_not_the_start_up_banner() -> None:
    """A rank that sleeps forever prints nothing; the launcher's OMP_NUM_THREADS notice new to its node a
    few seconds before is no cause."""
    inc = analyze(str(REAL_JOBS / "003-ddp-hang")).to_dict()
    truth = json.loads((REAL_JOBS / "003-ddp-hang" / "ground_truth.json").read_text())
    assert inc["category"] == "software" and inc["scope"] == "node"
    assert inc["suspects"][0]["node"] == truth["faulty_nodes"][0]
    assert not any("OMP_NUM_THREADS" in e["text"] for e in inc["evidence"] if e["role"] == "root")


# ultralytics/yolov5#12429 and a DeepSpeed 1-bit run: one rank's watchdog timeout in a multi-node job, no
# cause in the thread. The peers print the agent's SIGTERM and broken connections, nothing else.
WATCHDOG_ONLY = [
    Excerpt(id="t-yolov5-allgather", source_group="t#4", split="dev", status="incident", category="unknown",
            phase="train", faulty=None, lines=(
                "[E ProcessGroupNCCL.cpp:828] [Rank 1] Watchdog caught collective operation timeout: "
                "WorkNCCL(SeqNum=4, OpType=ALLGATHER, Timeout(ms)=1800000) ran for 1800081 milliseconds before "
                "timing out.",
                "[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed or timed out. Due to the "
                "asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete "
                "data.",
                "[E ProcessGroupNCCL.cpp:460] To avoid data inconsistency, we are taking the entire process down.",
                "terminate called after throwing an instance of 'std::runtime_error'",
            )),
    Excerpt(id="t-onebit-ckpt", source_group="t#5", split="dev", status="incident", category="unknown",
            phase="train", faulty=None, lines=(
                "[torch_checkpoint_engine.py:33:commit] [Torch] Checkpoint global_step5000 is ready now!",
                "[rank6]:[E ProcessGroupNCCL.cpp:523] [Rank 6] Watchdog caught collective operation timeout: "
                "WorkNCCL(SeqNum=12029440, OpType=_ALLGATHER_BASE, NumelIn=512, NumelOut=4096, "
                "Timeout(ms)=1800000) ran for 1808499 milliseconds before timing out.",
            )),
]


@pytest.mark.parametrize("excerpt", WATCHDOG_ONLY, ids=lambda x: x.id)
def test_a_stuck_rank_shown_only_by_cascades_names_no_category(tmp_path, excerpt: Excerpt) -> None:
    """The agent's SIGTERM and the peers' watchdog timeouts say the job was torn down around a rank, not
    what held it up: no component is named, so the category is unknown, not the cascade rule's guess."""
    job = JobPlanter(excerpt, seed=0).write("node-folders", tmp_path / "job")
    inc = analyze(str(job.path)).to_dict()
    assert inc["status"] == "incident" and inc["category"] == "unknown"
    roots = [e for e in inc["evidence"] if e["role"] == "root"]
    assert roots and all(e["category"] == "unknown" for e in roots if e["rule"] is None)


# THUDM/GLM#136: a ZeRO checkpoint saved at DP world size 256 resumed on 2 ranks; DeepSpeed's INFO line about the
# load lands inside the traceback and cuts it in two.
ZERO_RESUME = Excerpt(
    id="t-glm-zero-resume", source_group="t#6", split="dev", status="incident", category="user_config",
    phase="load", faulty=None, lines=(
        '/data/pretrained_model/glm-10b-chinese-mp4/80000/mp_rank_03_model_states.pt.',
        'Traceback (most recent call last):',
        '  File "pretrain_glm.py", line 673, in <module>',
        '    main()',
        '  File "pretrain_glm.py", line 584, in main',
        '    args.iteration = load_checkpoint(model, optimizer, lr_scheduler, args, no_deepspeed=args.no'
        '_deepspeed_load)',
        '  File "/data/users/zhaojinming/source/glm10BCodesSlurmN1/utils.py", line 339, in load_checkpoint',
        '[2023-03-21 20:28:05,674] [INFO] [torch_checkpoint_engine.py:21:load] [Torch] Loading checkpoin'
        't from /home/zhaojinming/data/pretrained_model/glm-10b-chinese-mp4/80000/mp_rank_00_model_state'
        's.pt...',
        '    load_lr_scheduler_states=not args.no_load_lr_scheduler)',
        '  File "/home/zhaojinming/data/miniconda3/envs/glm10b/lib/python3.7/site-packages/deepspeed/run'
        'time/engine.py", line 2780, in load_checkpoint',
        '    load_optimizer_states=load_optimizer_states)',
        '  File "/home/zhaojinming/data/miniconda3/envs/glm10b/lib/python3.7/site-packages/deepspeed/run'
        'time/engine.py", line 2950, in _load_zero_checkpoint',
        '    raise ZeRORuntimeException("The checkpoint being loaded used a DP " \\',
        "deepspeed.runtime.zero.utils.ZeRORuntimeException: The checkpoint being loaded used a DP world "
        "size of 256 but the current world size is 2. Automatic adjustment of ZeRO's optimizer state par"
        "titioning with a new world size is not currently supported.",
    ),
)


def test_a_traceback_cut_by_an_interleaved_line_takes_its_exceptions_category(tmp_path) -> None:
    """The first half of the traceback names nothing; its exception line, matched on its own below, says the
    checkpoint's world size and the launch's disagree: the configuration, not the code."""
    job = JobPlanter(ZERO_RESUME, seed=0).write("node-folders", tmp_path / "job")
    inc = analyze(str(job.path)).to_dict()
    assert inc["status"] == "incident" and inc["category"] == "user_config"
    assert any(e["role"] == "root" and "world size of 256" in e["text"] for e in inc["evidence"])
