"""Phase markers, the phase state machine and phases named by tracebacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from l4lite.diagnose.phasing import written_by
from l4lite.records import Record
from l4lite.scan.jobscan import Hit, JobScan
from l4lite.scan.phases import (
    MARKER_WORDS,
    PhaseTracker,
    match_marker,
    may_be_marker,
    phase_at,
    phase_from_traceback,
    spans,
)


def test_checkpoint_markers_with_iteration_and_path() -> None:
    start = match_marker("saving checkpoint at iteration   33241 to /gpfs/checkpoints/tr1-13B/checkpoints")
    assert start is not None and start.kind == "checkpoint" and start.iteration == 33241
    assert start.detail["path"] == "/gpfs/checkpoints/tr1-13B/checkpoints"
    done = match_marker("  successfully saved checkpoint at iteration   33241 to /gpfs/checkpoints/tr1-13B/checkpoints")
    assert done is not None and done.kind == "checkpoint_saved" and done.iteration == 33241
    hf = match_marker("Saving model checkpoint to output/checkpoint-500")
    assert hf is not None and hf.kind == "checkpoint" and hf.detail["path"] == "output/checkpoint-500"
    mm = match_marker("12/09 06:49:23 - mmengine - INFO - Saving checkpoint at 14 epochs")
    assert mm is not None and mm.kind == "checkpoint" and mm.detail["epoch"] == 14


def test_other_markers() -> None:
    assert match_marker("NCCL INFO NCCL version 2.18.5+cuda12.2").kind == "init"  # type: ignore[union-attr]
    assert match_marker("loading checkpoint from /ckpt at iteration 2000").kind == "load"  # type: ignore[union-attr]
    assert match_marker("***** Running Evaluation *****").kind == "eval"  # type: ignore[union-attr]
    assert match_marker("[exiting program after 1190.03 minutes]").kind == "shutdown"  # type: ignore[union-attr]
    assert match_marker("Restarting worker group").kind == "restart"  # type: ignore[union-attr]
    assert match_marker("Search for history checkpoints...").kind == "load"  # type: ignore[union-attr]
    assert match_marker("Restoring from checkpoint ckpt/step_100").kind == "load"  # type: ignore[union-attr]
    assert match_marker("NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC") is None
    assert match_marker("iteration 10/100 | lm loss: 2.0") is None


def test_tracker_ignores_late_nccl_init_but_honours_restart() -> None:
    tr = PhaseTracker()
    tr.feed("init", 0.0, "a.log", 1)
    tr.feed("load", 10.0, "a.log", 5)
    tr.feed("train", 20.0, "a.log", 9)
    assert not tr.feed("init", 30.0, "a.log", 12)  # a new process group mid-training
    tr.feed("checkpoint", 40.0, "a.log", 15)
    tr.feed("checkpoint_saved", 45.0, "a.log", 16)
    assert tr.current == "train"
    tr.feed("restart", 50.0, "a.log", 20)
    assert tr.current == "init"
    names = [e.phase for e in tr.events]
    assert names == ["init", "load", "train", "checkpoint", "train", "init"]
    sp = spans(tr.events, 60.0)
    assert sp[0] == ("init", 0.0, 10.0) and sp[-1] == ("init", 50.0, 60.0)


def test_phase_at_by_line_and_by_time() -> None:
    tr = PhaseTracker()
    tr.feed("init", 0.0, "a.log", 1)
    tr.feed("train", 20.0, "a.log", 9)
    tr.feed("eval", 40.0, "a.log", 30)
    assert phase_at(tr.events, None, "a.log", 10) == "train"
    assert phase_at(tr.events, 45.0, "kern.log", 3) == "eval"
    assert phase_at(tr.events, 25.0) == "train"
    assert phase_at(tr.events, -5.0) == "init"
    assert phase_at([], None) is None


def test_phase_from_traceback_uses_innermost_frame() -> None:
    save = ('Traceback (most recent call last):\n  File "train.py", line 5, in <module>\n'
            '  File "trainer.py", line 10, in train_epoch\n  File "hooks.py", line 345, in _save_checkpoint\n'
            'OSError: [Errno 122] Disk quota exceeded')
    assert phase_from_traceback(save) == "checkpoint"
    load = ('  File "x.py", line 2, in train\n  File "modeling_utils.py", line 2560, in from_pretrained\n'
            'safetensors_rust.SafetensorError: HeaderTooLarge')
    assert phase_from_traceback(load) == "load"
    init = ('  File "training.py", line 95, in pretrain\n  File "initialize.py", line 140, in _compile_dependencies\n'
            'RuntimeError: CUDA error: out of memory')
    assert phase_from_traceback(init) == "init"
    assert phase_from_traceback("RuntimeError: CUDA error: out of memory") is None


def test_a_loop_frame_the_training_and_validation_loops_share_takes_the_calling_loop_s_phase() -> None:
    # MMEngine's ValLoop and IterBasedTrainLoop both name their step ``run_iter`` (real job 224: a validation hook
    # raises on one rank); the loop that called it, in the source line above, says which ran
    frames = ('  File "mmengine/runner/runner.py", line 1777, in train\n    model = self.train_loop.run()\n'
              '  File "mmengine/runner/loops.py", line 296, in run\n    self.runner.{loop}.run()\n'
              '  File "mmengine/runner/loops.py", line 400, in run_iter\n    self.runner.call_hook(\n'
              '  File "hooks.py", line 74, in before_{kind}_iter\n'
              'RuntimeError: shape mismatch in attention block')
    assert phase_from_traceback(frames.format(loop="val_loop", kind="val")) == "eval"
    assert phase_from_traceback(frames.format(loop="test_loop", kind="test")) == "eval"
    # without a loop named above it, or under the training loop alone, the frame is the training step's
    assert phase_from_traceback(frames.format(loop="train_loop", kind="train")) == "train"
    assert phase_from_traceback('  File "loops.py", line 313, in run_iter\nRuntimeError: x') == "train"


def test_a_collective_in_an_end_of_training_hook_fails_in_the_shutdown() -> None:
    # a rank that never reaches the closing barrier an ``after_train`` hook enters (real job 226): its peers time out
    # there, after the last step's save, in no checkpoint code of their own
    hook = ('  File "mmengine/runner/loops.py", line 299, in run\n    self.runner.call_hook(\'after_train\')\n'
            '  File "train.py", line 78, in after_train\n    dist.barrier()\n'
            '  File "torch/distributed/distributed_c10d.py", line 5356, in barrier\n'
            'RuntimeError: Timed out waiting 30000ms for recv operation to complete')
    assert phase_from_traceback(hook) == "shutdown"
    # a save made from the end-of-training callback is the save's, its frame innermost
    save = ('  File "callbacks.py", line 20, in on_train_end\n  File "ckpt.py", line 9, in save_checkpoint\n'
            'OSError: [Errno 28] No space left on device')
    assert phase_from_traceback(save) == "checkpoint"
    # hooks that run each iteration are the loop's
    assert phase_from_traceback('  File "hooks.py", line 5, in after_train_iter\nRuntimeError: x') is None


def test_wrapping_the_model_for_data_parallelism_is_set_up() -> None:
    # DDP's check that every rank holds the same parameters raises in its constructor, before any step, called
    # from the training script's main (real job 132: one rank's model config of another hidden size)
    ddp = ('  File "train.py", line 183, in main\n    model = DDP(TinyLM(**cfg))\n'
           '  File "torch/nn/parallel/distributed.py", line 1064, in __init__\n'
           '  File "torch/distributed/utils.py", line 286, in _verify_param_shape_across_processes\n'
           'RuntimeError: [3]: params[0] in this process with sizes [256, 96] appears not to match sizes of the '
           'same param in process 0.')
    assert phase_from_traceback(ddp) == "init"
    ds = '  File "deepspeed/runtime/engine.py", line 1290, in _broadcast_model\n    dist.broadcast(p, src)'
    assert phase_from_traceback(ds) == "init"
    # a later frame of the training loop still wins
    step = ds + '\n  File "train.py", line 90, in train_step\n    loss.backward()'
    assert phase_from_traceback(step) == "train"


def test_marker_gate_agrees_with_its_definition() -> None:
    """``may_be_marker`` (one regex) says yes exactly where a marker word or "heckpoint" is in the message."""
    words = MARKER_WORDS
    texts = [f"x {w} y" for w in words] + [w[:-1] for w in words] + [w[1:].upper() for w in words] + [
        "NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC", "LustreError: 11-0: scratch-OST0001 failed",
        "Checkpoint", "loading checkpoin", "Init COMPLET", "", "saving checkpoint", "Evaluating"]
    assert "Init COMPLETE" in words and "heckpoint" in words
    for text in texts:
        assert may_be_marker(text) == any(w in text for w in words), text
    assert may_be_marker("[Torch] Checkpoint global_step100 is ready now!")
    assert not may_be_marker("nfs: server fs1.cluster.local not responding, still trying")


def test_every_marker_word_holds_a_piece_of_the_cover() -> None:
    from l4lite.scan.phases import MARKER_WORDS, cover

    pieces = cover(MARKER_WORDS)
    assert len(pieces) < len(MARKER_WORDS) // 2
    for word in MARKER_WORDS:
        assert any(p in word for p in pieces), word
    assert cover(("abcdefgh", "xbcdefgy", "ab")) == ("bcdefg", "ab")


# ---------------------------------------------------------------------------------------------- bare excerpts
WATCHDOG = ("[E ProcessGroupNCCL.cpp:828] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={n}, "
            "OpType=ALLGATHER, Timeout(ms)=1800000) ran for 1800081 milliseconds before timing out.")


@pytest.mark.parametrize(("lines", "phase"), [
    ([WATCHDOG.format(n=7753)], "train"),  # thousands of collectives ran: training
    ([WATCHDOG.format(n=4)], "init"),  # a handful: the set-up's broadcasts and barriers
    (["Traceback (most recent call last):", '  File "train.py", line 9, in <module>',
      "    import flash_attn_2_cuda as flash_attn_cuda",
      "ImportError: flash_attn_2_cuda.so: undefined symbol: _ZN3c104cuda9SetDeviceEi"], "init"),
    (["Traceback (most recent call last):", '  File "train.py", line 88, in <module>', "    loss.backward()",
      '  File "/usr/lib/python3.10/site-packages/torch/autograd/__init__.py", line 251, in backward',
      "RuntimeError: CUDA error: an illegal memory access was encountered"], "train"),
    (["RuntimeError: CUDA error: uncorrectable ECC error encountered"], "train"),  # nothing says: the common case
])
def test_a_lone_excerpt_takes_its_phase_from_what_its_lines_say(lines: list[str], phase: str,
                                                                 tmp_path: Path) -> None:
    from l4lite.api import analyze
    from l4lite.options import AnalyzeOptions

    log = tmp_path / "excerpt.log"
    log.write_text("\n".join(lines) + "\n")
    inc = analyze([str(log)], AnalyzeOptions())
    assert inc.status == "incident" and inc.phase == phase


def test_markers_outrank_what_the_lines_say(tmp_path: Path) -> None:
    """A job that printed its start-up and nothing more failed in it, whatever its error's words suggest."""
    from l4lite.api import analyze
    from l4lite.options import AnalyzeOptions

    log = tmp_path / "excerpt.log"
    log.write_text("[2024-05-07 01:00:00] > initializing torch distributed ...\n"
                   "[2024-05-07 01:00:05] " + WATCHDOG.format(n=7753) + "\n")
    assert analyze([str(log)], AnalyzeOptions()).phase == "init"


BANNER = 1_800_000_000.0  # the start-up banner's time, inherited by every untimed line below it


def _rec(line: int, text: str, time: float | None) -> Record:
    return Record(file="n1/console.log", line=line, end_line=line + 2 if "Traceback" in text else line,
                  node="n1", rank=None, gpu=None, source="trainer", time=time, level="error", message=text, text=text)


def test_a_later_line_that_inherited_its_time_bounds_nothing() -> None:
    root = _rec(10, "[rank3]: Traceback (most recent call last):\n  File x\nRuntimeError: boom", BANNER)
    peer = _rec(20, "[rank2]: RuntimeError: Connection closed by peer [127.0.0.1]:34723", BANNER)
    stamped = _rec(30, "W1203 14:38:30.475000 16444 api.py:1028] Sending process 16447 closing signal SIGTERM",
                   BANNER + 600.0)
    scan = JobScan()
    scan.hits = [Hit("peer", peer), Hit("teardown", stamped)]
    assert written_by(scan, [root]) == BANNER + 600.0


def test_a_later_file_s_part_of_a_concatenation_bounds_nothing() -> None:
    """``cat`` or ``kubectl logs`` of a node's files in turn: below the console's traceback come its own later
    lines, then a rank's stderr.log from its start, whose clock goes back. Those earlier lines are no bound."""
    root = _rec(10, "[rank0]: Traceback (most recent call last):\n  File x\nOSError: [Errno 28]", BANNER)
    summary = _rec(30, "E1203 15:11:38.875000 1711 elastic/multiprocessing/api.py:1002] failed (exitcode: 1)",
                   BANNER + 6.0)
    restart = _rec(40, "[2026-12-03 15:11:32,941] [WARNING] Setting accelerator to CPU.", BANNER + 0.03)
    scan = JobScan()
    scan.hits = [Hit("teardown", summary), Hit("warning", restart)]
    assert written_by(scan, [root]) == BANNER + 6.0
    restart.time = BANNER + 5.0  # a clock back by less than a restart: interleaved streams of one console
    assert written_by(scan, [root]) == BANNER + 5.0


def test_an_error_file_read_alone_is_dated_by_the_seconds_it_states() -> None:
    """A rank's error.json in its own file has no line above it to take a time from; inside a merged stream the
    reader dates it by the epoch seconds it states. Alone it is dated alike, not left without a failure time."""
    from l4lite.detect.base import Finding
    from l4lite.diagnose.phasing import failure_time_of

    text = ('{"message": {"message": "RuntimeError: unexpected pos 11136 vs 11030", "extraInfo": {"py_callstack": '
            '"Traceback (most recent call last):\\n  File \\"x.py\\", line 1\\nRuntimeError: unexpected pos", '
            '"timestamp": "1796381712"}}}')
    rec = Record(file="n1/attempt_0/0/error.json", line=1, end_line=1, node="n1", rank=0, gpu=None,
                 source="launcher", time=None, level="error", message=text, text=text)
    f = Finding("rules", "storage", "root", 1.0, "", node="n1", records=[rec])
    assert failure_time_of(JobScan(), f) == 1796381712.999


def test_a_silent_rank_s_failure_in_the_training_loop_is_dated_in_training() -> None:
    """A node whose ranks log nothing after start-up keeps its start-up as its last marker; when the job was
    training by then and the failure's own frames are the training loop's, it failed in training."""
    from l4lite.detect.base import Finding
    from l4lite.diagnose.phasing import phase_of
    from l4lite.scan.phases import PhaseEvent

    frames = ("[rank2]: Traceback (most recent call last):\n"
              '  File "/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 732, in __next__\n'
              "RuntimeError: Caught JSONDecodeError in DataLoader worker process 0.")
    bare = "[rank2]: RuntimeError: Caught JSONDecodeError in DataLoader worker process 0."
    node = [PhaseEvent("init", BANNER, "n2/console.log", 6, node="n2")]
    # the job's markers in time order (a start-up seen after training began is not a phase the job went back to)
    job = [PhaseEvent("init", BANNER - 2, "n1/console.log", 6, node="n1"),
           PhaseEvent("train", BANNER - 1, "n1/console.log", 37, node="n1")]

    def phase(text: str, job_events: list[PhaseEvent]) -> str:
        r = Record(file="n2/console.log", line=11, end_line=13, node="n2", rank=2, gpu=None, source="trainer",
                   time=BANNER + 20, level="error", message=text, text=text)
        f = Finding("rules", "data", "root", 0.8, "bad record", node="n2", rank=2, time=BANNER + 20, records=[r])
        return phase_of(f, JobScan(), {"n2": node, "n1": job_events}, job_events)

    assert phase(frames, job) == "train"
    assert phase(bare, job) == "init"  # nothing of its own says training
    assert phase(frames, job[:1]) == "init"  # the job was not training yet


def test_a_checkpoint_library_s_frames_say_save_or_load_by_their_verbs() -> None:
    # torch.distributed.checkpoint (real job 175): a sharded save that failed in a rank's write
    save = ('  File "train_fsdp.py", line 118, in main\n    dcp.save(state, checkpoint_id=path)\n'
            '  File "torch/distributed/checkpoint/state_dict_saver.py", line 196, in save\n'
            '  File "torch/distributed/checkpoint/utils.py", line 263, in all_reduce\n'
            '  File "torch/distributed/checkpoint/filesystem.py", line 422, in _write_files_from_queue\n'
            '  File "contextlib.py", line 137, in __enter__\n'
            "OSError: [Errno 30] Read-only file system: '/ckpt/step-20/__0_0.distcp'")
    assert phase_from_traceback(save) == "checkpoint"
    load = ('  File "torch/distributed/checkpoint/state_dict_loader.py", line 150, in load\n'
            '  File "torch/distributed/checkpoint/filesystem.py", line 650, in read_data\n'
            "FileNotFoundError: [Errno 2] No such file or directory: '/ckpt/step-20/__3_0.distcp'")
    assert phase_from_traceback(load) == "load"
    # activation checkpointing keeps tensors for the backward pass: the training step, not a checkpoint
    act = ('  File "train.py", line 90, in train_step\n    loss.backward()\n'
           '  File "deepspeed/runtime/activation_checkpointing/checkpointing.py", line 560, in forward\n'
           '  File "deepspeed/runtime/activation_checkpointing/checkpointing.py", line 500, in save_args_for_backward\n'
           'RuntimeError: CUDA error: an illegal memory access was encountered')
    assert phase_from_traceback(act) == "train"


def test_an_untimed_failure_is_not_placed_by_another_file_s_untimed_markers() -> None:
    """184: the failing node's ranks raise building their dataset (untimed tracebacks, their launcher's start-up
    time); the other node's ``training ...`` marker is untimed too, at its own launcher's start-up: set-up."""
    from l4lite.api import analyze

    job = Path(__file__).resolve().parents[1] / "fixtures" / "real_jobs" / "184-megatron-idx_truncated"
    incident = analyze([job])
    assert (incident.phase, incident.category) == ("init", "data")


def test_a_script_s_own_saved_checkpoint_line_ends_the_save() -> None:
    done = match_marker("saved checkpoint /ckpt/step_000040.pt")  # real jobs 213, 214 (DDP, Fabric scripts)
    assert done is not None and done.kind == "checkpoint_saved" and done.iteration == 40


def test_a_write_refused_to_a_checkpoint_file_is_the_checkpoint_s_save_in_any_thread() -> None:
    # real job 108: a background thread copying the step-250 checkpoint to a full upload disk while training goes on
    copy = ("Exception in thread ckpt-upload:\nTraceback (most recent call last):\n"
            '  File "train_ddp.py", line 91, in copy\n    shutil.copy(path, target)\n'
            '  File "shutil.py", line 144, in _fastcopy_sendfile\n'
            "OSError: [Errno 28] No space left on device: '/work/ckpt/step_000250.pt' -> '/work/upload/step_000250.pt'")
    assert phase_from_traceback(copy) == "checkpoint"
    # a full disk under a file that names no checkpoint (a dataset cache) says nothing of a save
    cache = copy.replace("ckpt/step_000250.pt", "cache/shard_7.arrow").replace("upload/step_000250.pt", "tmp/x")
    assert phase_from_traceback(cache) is None


def test_a_failure_after_the_run_s_last_step_is_in_its_shutdown() -> None:
    """Real jobs 214, 215: a rank never reaches the closing barrier after the last step, and Fabric and the
    Accelerate script print their end line only after that barrier: the last progress line's ``step 40/40`` says
    the loop was over."""
    from l4lite.detect.base import Finding
    from l4lite.diagnose.phasing import phase_of
    from l4lite.scan.jobscan import MetricPoint
    from l4lite.scan.phases import PhaseEvent

    def phase(last_text: str, iteration: int, at: float) -> str:
        scan = JobScan()
        scan.metrics = [MetricPoint("n1", 0, BANNER + 10, iteration - 2, "n1/0.log", 30, text="step 38/40"),
                        MetricPoint("n1", 0, BANNER + 11.5, iteration, "n1/0.log", 31, text=last_text)]
        r = Record(file="n2/0.log", line=40, end_line=40, node="n2", rank=None, gpu=None, source="agent",
                   time=at, level="warning", message="Sending process 9 closing signal SIGTERM", text="")
        f = Finding("hang", "software", "root", 0.8, "stuck rank", node="n2", rank=2, time=at, records=[r])
        train = [PhaseEvent("train", BANNER, "n1/0.log", 5, node="n1")]
        return phase_of(f, scan, {"n1": train}, train)

    assert phase("step 40/40 | loss 1.4593", 40, BANNER + 11) == "shutdown"  # stamped to the second: that second
    assert phase("step 40/40: train_loss 1.4593", 40, BANNER + 40) == "shutdown"
    assert phase("step 39/40 | loss 1.4593", 39, BANNER + 40) == "train"  # the loop had a step to go
    assert phase("step 40/40 | loss 1.4593", 40, BANNER + 9) == "train"  # before the last step's line
    assert phase("Epoch 0: 100%|##########| 40/40 [00:02<00:00]", 40, BANNER + 40) == "train"  # one epoch's bar
