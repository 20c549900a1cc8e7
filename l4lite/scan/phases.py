"""Training phases from framework markers: init, load, train, checkpoint, eval, shutdown.

Markers are recognised with cheap substring gates (this runs on every line). A ``PhaseTracker`` turns the marker
stream of a job into phase spans and answers "which phase was node N in at time t (or at file:line)?". The
failure phase is the phase of the first root-cause evidence, so this is what the localiser asks.

Why a tracker and not only the latest marker: NCCL prints communicator set-up lines ("Init COMPLETE") whenever a
new process group is created, also in the middle of training; such lines only mean ``init`` before the job has
loaded or trained, or after a restart.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

from l4lite.rules.keys import trie_regex
from l4lite.vocab import PHASES

PHASE_ORDER = {name: i for i, name in enumerate(PHASES)}

# (substring gate, marker kind). The gate is matched case-sensitively against the message; order matters
# (first hit wins), so completion markers come before start markers of the same family.
_MARKERS: tuple[tuple[str, str], ...] = (
    ("successfully saved checkpoint", "checkpoint_saved"),
    ("Successfully saved checkpoint", "checkpoint_saved"),
    ("is ready now!", "checkpoint_saved"),  # DeepSpeed "[Torch] Checkpoint global_step100 is ready now!"
    ("Saved checkpoint", "checkpoint_saved"),
    ("saved checkpoint", "checkpoint_saved"),  # a script's own "saved checkpoint <path>" after its save call
    ("Model weights saved in", "checkpoint_saved"),  # Hugging Face Trainer, the last file of a save
    ("Checkpoint saved", "checkpoint_saved"),
    ("checkpoint saved", "checkpoint_saved"),
    ("saving checkpoint", "checkpoint"),
    ("Saving checkpoint", "checkpoint"),
    ("Saving model checkpoint", "checkpoint"),
    ("is about to be saved", "checkpoint"),
    ("saving model to", "checkpoint"),
    ("Saving model to", "checkpoint"),
    ("successfully loaded checkpoint", "load_done"),
    ("Successfully loaded checkpoint", "load_done"),
    ("loading checkpoint", "load"),
    ("Loading checkpoint", "load"),
    ("load_checkpoint", "load"),
    ("Resuming from checkpoint", "load"),
    ("resuming from checkpoint", "load"),
    ("Loading model", "load"),
    ("loading weights file", "load"),
    ("loading configuration file", "load"),
    ("loading model", "load"),
    ("building train, validation, and test datasets", "load"),
    ("Building dataset", "load"),
    ("building dataset", "load"),
    ("Loading dataset", "load"),
    ("loading dataset", "load"),
    ("building GPT model", "load"),
    ("Running training", "train"),
    ("Starting training", "train"),
    ("starting training", "train"),
    ("before the start of training step", "train"),
    ("training ...", "train"),
    ("Running Evaluation", "eval"),
    ("Running evaluation", "eval"),
    ("Start evaluation", "eval"),
    ("Evaluating", "eval"),
    ("Validation DataLoader", "eval"),
    ("Validation:", "eval"),
    ("evaluating", "eval"),
    ("Restarting worker group", "restart"),
    ("restarting worker group", "restart"),
    ("Rendezvous complete for workers", "init"),
    ("Starting elastic_operator", "init"),
    ("initializing torch distributed", "init"),
    ("Initializing distributed", "init"),
    ("init_process_group", "init"),
    ("initializing tensor model parallel", "init"),
    ("Initializing TorchBackend", "init"),
    ("NCCL version", "init"),
    ("Bootstrap :", "init"),
    ("Init COMPLETE", "init"),
    ("WorkerState.SUCCEEDED", "shutdown"),
    ("'train_runtime'", "shutdown"),
    ("exiting program", "shutdown"),
    ("after training is done", "shutdown"),
    ("Training completed", "shutdown"),
    ("Training finished", "shutdown"),
    ("training finished", "shutdown"),
    ("Training complete", "shutdown"),
    ("Finished training", "shutdown"),
    ("finished training", "shutdown"),
    ("Trainer.fit` stopped", "shutdown"),
    ("destroy_process_group", "shutdown"),
    ("Destroying process group", "shutdown"),
    # the training loop is over, the teardown is not (yolov5 prints the first, wandb.finish() the others)
    ("epochs completed in", "shutdown"),
    ("Waiting for W&B process to finish", "shutdown"),
    ("wandb: Run history:", "shutdown"),
    ("wandb: Run summary:", "shutdown"),
)
# Shutdown markers that only a run that ended well prints.
_SUCCESS = frozenset({"WorkerState.SUCCEEDED", "'train_runtime'", "exiting program", "after training is done",
                      "Training completed", "Training finished", "training finished", "Training complete",
                      "Finished training", "finished training", "Trainer.fit` stopped"})
_KIND = dict(_MARKERS)
# Marker kinds that end a phase and say the training loop had been running before them.
_CONTINUED = frozenset({"checkpoint_saved"})
# Any marker word, or "heckpoint", as one trie-shaped regex: ``may_be_marker`` runs on every message of a new
# shape (every line of kernel and storage logs, whose hex ids make each shape new), and one search of the trie
# costs a third of seventy substring tests.
MARKER_WORDS: tuple[str, ...] = ("heckpoint", *(g for g, _ in _MARKERS))
_MAY_MARK = re.compile(trie_regex(MARKER_WORDS))


def cover(words: tuple[str, ...], n: int = 6) -> tuple[str, ...]:
    """Pieces of ``n`` characters (a shorter word: itself), each word holding at least one: a text that holds
    none holds no word. Picked greedily, the piece in most words first."""
    left = set(words)
    out: list[str] = []
    while left:
        pieces: dict[str, int] = {}
        for w in left:
            for piece in {w[i:i + n] for i in range(max(1, len(w) - n + 1))}:
                pieces[piece] = pieces.get(piece, 0) + 1
        best = max(sorted(pieces), key=pieces.__getitem__)
        out.append(best)
        left = {w for w in left if best not in w}
    return tuple(out)


# Twenty-one substring tests before the trie (a line that holds none of them holds no marker word) cost half its
# search on kernel and storage lines.
_MARKER_PIECES = cover(MARKER_WORDS)

_CKPT_LOOKUP = re.compile(r"\b(?:search|look|find|restor|resum)\w*\s+(?:for\s+|from\s+)?(?:the\s+)?(?:\w+\s+)?"
                         r"checkpoints?\b", re.I)
_ITER = re.compile(r"\b(?:iteration|step|global_step|global step)[\s=:]*(\d+)", re.I)
_EPOCHS = re.compile(r"\bat\s+(\d+)\s+epochs?\b")
_PATH = re.compile(r"(?:\bto|:)\s+'?(/[^\s']+|[\w.-]+/[^\s']+)'?")
# The step a checkpoint's own name carries: checkpoint-20 (Hugging Face), iter_0000200 (Megatron), global_step200
# (DeepSpeed), step=9000 / epoch=3-step=99 (Lightning), step_100, ckpt_100.
_PATH_ITER = re.compile(r"(?:checkpoint|ckpt|iter|global_step|step)[-_=]?(\d{1,12})(?!.*(?:checkpoint|ckpt|iter_|global_step|step))",
                        re.I)
_CKPT_PATH = re.compile(r"((?:/|\.{1,2}/|\w[\w.-]*/)[^\s'\",]*(?:checkpoint|ckpt|global_step|iter_)[^\s'\",]*)", re.I)

# Innermost Python frames tell where an exception was thrown; the last matching frame wins. A checkpoint library's
# own module (its path names checkpoints: torch.distributed.checkpoint, a trainer's checkpointing.py) tells it by
# its functions' verbs, whatever they are called: saving or writing is the checkpoint, loading or reading the load
# (activation checkpointing's modules save tensors for the backward pass: not a checkpoint's save).
_CKPT_MODULE = r'File "[^"\n]*checkpoint[^"\n]*", line \d+, in (?!\w*backward)_?'
_FRAME_PHASE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(_CKPT_MODULE + r"(?:save|write|finish|commit)\w*", re.I), "checkpoint"),
    (re.compile(_CKPT_MODULE + r"(?:load|read|restore)\w*", re.I), "load"),
    (re.compile(r"\bin (?:_?save_checkpoint\w*|save_model|_save_model|save_pretrained|_save|savez|"
                r"save_state|_save_checkpoint|checkpoint_save|save_to_disk|write_checkpoint)\b"), "checkpoint"),
    (re.compile(r"\bin (?:_?load_checkpoint\w*|from_pretrained|load_state_dict|_load_from_checkpoint|"
                r"load_model|_load_model|build_train_valid_test_data\w*|_load_from_state_dict|load_sharded\w*|"
                r"resume\w*)\b"), "load"),
    (re.compile(r"\bin (?:evaluate|evaluation_loop|evaluation_step|validation_step|_run_evaluate|"
                r"_evaluate|run_eval\w*|prediction_step|_validate)\b"), "eval"),
    # wrapping the model for data parallelism (DDP's check that every rank holds the same parameters, the
    # broadcast of rank 0's weights by DDP, FSDP or DeepSpeed's engine) happens once, before the first step
    (re.compile(r"\bin (?:initialize_megatron|_initialize_distributed|init_process_group|_compile_dependencies|"
                r"init_distributed|_init_dist\w*|setup_distributed|_new_process_group_helper|"
                r"_verify_param_shape_across_processes|_sync_module_states|_sync_params_and_buffers|"
                r"_broadcast_model|_configure_distributed_model)\b"), "init"),
    (re.compile(r"\bin (?:train_step|training_step|forward_step|backward_step|_inner_training_loop|"
                r"train_epoch|_optimizer_step|optimizer_step|run_iter|run_epoch)\b"), "train"),
    # a framework's end-of-training hooks and callbacks (MMEngine's ``after_train``/``after_run``, the Trainer
    # callbacks' ``on_train_end``/``on_fit_end``) and the process group's destruction run once the loop is over: a
    # collective that fails in them fails in the run's shutdown. (A strategy's ``teardown`` is left out: frameworks
    # also call it while they handle a failure inside the loop.)
    (re.compile(r"\bin (?:after_train|after_run|on_train_end|on_fit_end|destroy_process_group)\b"), "shutdown"),
    # the error itself, last in a traceback: a write refused (full, read-only, over quota or size limit) to a file
    # the line names as a checkpoint is that checkpoint's save, or its copy, whatever thread wrote it
    (re.compile(r"(?:No space left on device|Read-only file system|Disk quota exceeded|File too large)\b[^\n]*?"
                r"(?:checkpoint|ckpt)", re.I), "checkpoint"),
)


@dataclass(slots=True)
class MarkerMatch:
    """What a marker line says: its kind and details (iteration, checkpoint path)."""

    kind: str
    iteration: int | None = None
    detail: dict[str, Any] = field(default_factory=dict)


def may_be_marker(message: str) -> bool:
    """False when ``match_marker`` is sure to find nothing: none of its words (``MARKER_WORDS``) is in the
    message."""
    for piece in _MARKER_PIECES:
        if piece in message:
            return _MAY_MARK.search(message) is not None
    return False


def match_marker(message: str) -> MarkerMatch | None:
    """Recognise a phase marker in one message, or return None (most lines).

    Plain substring tests in table order (first hit wins): a regex alternation of these literals is an order of
    magnitude slower on the lines that match none, which is nearly all of them.
    """
    gate = next((g for g, _ in _MARKERS if g in message), None)
    if gate is None:
        if "heckpoint" in message and _CKPT_LOOKUP.search(message):
            return MarkerMatch("load")  # "Search for history checkpoints...", "Restoring checkpoint ..."
        return None
    kind = _KIND[gate]
    out = MarkerMatch(kind)
    if kind == "shutdown" and gate in _SUCCESS:
        out.detail["success"] = True
    end = message.find(gate) + len(gate)
    if kind in ("checkpoint", "checkpoint_saved", "load", "load_done"):
        it = _ITER.search(message)
        if it is not None:
            out.iteration = int(it.group(1))
        else:
            ep = _EPOCHS.search(message)
            if ep is not None:
                out.detail["epoch"] = int(ep.group(1))
        path = _CKPT_PATH.search(message) or _PATH.search(message[end:])
        if path is not None:
            out.detail["path"] = path.group(1).rstrip(".,;:")
            if out.iteration is None:
                named = _PATH_ITER.search(out.detail["path"])
                if named is not None:
                    out.iteration = int(named.group(1))
    return out


# Frame names a runner's training and validation loops share (MMEngine's ``IterBasedTrainLoop.run_iter`` and
# ``ValLoop.run_iter``): the loop that called them, named in a source line above (``self.runner.val_loop.run()``),
# says which one ran.
_SHARED_LOOP_FRAME = re.compile(r"\bin (?:run_iter|run_epoch)\b")
_LOOP_CALL = re.compile(r"\b(train|val|validation|eval|test)_loop\.run\(")


def phase_from_traceback(text: str) -> str | None:
    """The phase named by the innermost recognisable frame of a traceback, or None."""
    if "File \"" not in text and "in " not in text:
        return None
    best: tuple[int, str] | None = None
    for pattern, phase in _FRAME_PHASE:
        for m in pattern.finditer(text):
            if best is None or m.start() > best[0]:
                best = (m.start(), phase)
    if best is None:
        return None
    if best[1] == "train" and _SHARED_LOOP_FRAME.match(text, best[0]):
        calls = [m.group(1) for m in _LOOP_CALL.finditer(text, 0, best[0])]
        if calls and calls[-1] != "train":
            return "eval"
    return best[1]


# When no marker, hint or named frame places a failure, what its own lines say of how far the job had got. A
# collective's sequence number counts the collectives its process group ran: a job's set-up runs a handful
# (parameter broadcasts, barriers), a training step one or many, so a hundred or more means it was training and
# under ten that it was still setting up. Frames of a backward pass, an optimizer step or a DataLoader handing out
# batches are the training loop's; a failed import, arguments being parsed, a communicator's set-up (NCCL's bootstrap, its channel and
# topology search) or a device that cannot be opened come before it.
_SEQ_NUM = re.compile(r"\b(?:SeqNum=|last enqueued (?:NCCL )?work: |last completed (?:NCCL )?work: |opCount )"
                      r"(\d+)")
_TRAINING_SEQ, _SETUP_SEQ = 100, 10
_LOOP_FRAME = re.compile(r"\bin (?:backward|_engine_run_backward|_next_data|__next__|_try_get_data|"
                         r"clip_grad_norm_?|zero_grad)\b|\.backward\(|torch/autograd/|"
                         r"torch/utils/data/dataloader\.py|torch/optim/\w+\.py\", line \d+, in step\b")
_SETUP_LINE = re.compile(r"\b(?:ImportError|ModuleNotFoundError|undefined symbol|parse_args\w*|argparse|"
                         r"__post_init__|NCCL INFO Channel \d+|bootstrap\.cc|init\.cc:\d+|Failed to find reverse path|ncclCommInitRank|"
                         r"Before initializing|device\(s\) is/are busy or unavailable|cudaErrorDevicesUnavailable|"
                         r"no CUDA-capable device|CUDA driver version is insufficient|"
                         r"Torch not compiled with CUDA enabled|rendezvous)\b", re.I)


def loop_frames(text: str) -> bool:
    """Whether a failure's own frames are the training loop's: a backward pass, an optimizer step, a DataLoader
    handing out batches (or starting its workers for an epoch)."""
    return _LOOP_FRAME.search(text) is not None


def evidence_phase(text: str) -> str | None:
    """``train`` when a failure's own lines show the training loop under way (a collective sequence number of a
    hundred or more, a frame of a backward pass, an optimizer step or a DataLoader's next batch), ``init`` when
    they show set-up (a sequence number under ten, a failed import, a communicator or device being set up), else
    None."""
    seqs = [int(m.group(1)) for m in _SEQ_NUM.finditer(text)]
    if any(n >= _TRAINING_SEQ for n in seqs) or loop_frames(text):
        return "train"
    if any(n < _SETUP_SEQ for n in seqs) or _SETUP_LINE.search(text) is not None:
        return "init"
    return None


@dataclass(slots=True)
class PhaseEvent:
    """A phase entered at a point of one node's log (time may be None; file/line order is kept)."""

    phase: str
    time: float | None
    file: str
    line: int
    node: str | None = None
    iteration: int | None = None
    # the marker says its phase was under way before it (a checkpoint saved: the training loop ran to save it),
    # so a point before a stream's first marker is not known to be set-up when that marker is such a one
    continued: bool = False


@dataclass
class PhaseTracker:
    """Phase state machine of one log stream (a node, or the whole job)."""

    events: list[PhaseEvent] = field(default_factory=list)
    current: str | None = None
    trained: bool = False  # load/train/checkpoint/eval seen since the last restart

    def feed(self, kind: str, time: float | None, file: str, line: int, node: str | None = None,
             iteration: int | None = None) -> bool:
        """Feed one marker kind; return True when the phase changed."""
        phase = {"checkpoint_saved": "train", "load_done": None, "restart": "init"}.get(kind, kind)
        if kind == "restart":
            self.trained = False
        if phase is None or phase not in PHASE_ORDER:
            return False
        if phase == "init" and self.trained and kind != "restart":
            return False  # a late process group, not a new start
        if phase != "init" and phase != "shutdown":
            self.trained = True
        if phase == self.current:
            return False
        self.current = phase
        self.events.append(PhaseEvent(phase, time, file, line, node, iteration, continued=kind in _CONTINUED))
        return True


def spans(events: list[PhaseEvent], end_time: float | None) -> list[tuple[str, float | None, float | None]]:
    """Turn ordered phase events into (phase, start, end) spans; the last span ends at ``end_time``."""
    out: list[tuple[str, float | None, float | None]] = []
    for i, ev in enumerate(events):
        nxt = events[i + 1].time if i + 1 < len(events) else end_time
        if out and out[-1][0] == ev.phase:
            continue
        out.append((ev.phase, ev.time, nxt))
    # merge consecutive spans of the same phase (can happen when events were merged from several nodes)
    merged: list[tuple[str, float | None, float | None]] = []
    for name, start, end in out:
        if merged and merged[-1][0] == name:
            merged[-1] = (name, merged[-1][1], end)
        else:
            merged.append((name, start, end))
    for i in range(len(merged) - 1):
        name, start, _ = merged[i]
        merged[i] = (name, start, merged[i + 1][1])
    return merged


def phase_at(events: list[PhaseEvent], time: float | None, file: str | None = None,
             line: int | None = None) -> str | None:
    """The phase in force at a point: by file order within the same file, else by time."""
    if file is not None and line is not None:
        same = [e for e in events if e.file == file and e.line <= line]
        if same:  # the nearest marker above the line (events are in time order, a merged file's lines not quite)
            return max(same, key=lambda e: e.line).phase
    if time is not None:
        timed = [e for e in events if e.time is not None]
        if timed:
            timed.sort(key=lambda e: e.time)  # type: ignore[arg-type,return-value]
            i = bisect_right([e.time for e in timed], time)  # type: ignore[misc]
            if i > 0:
                return timed[i - 1].phase
            # before a stream's first marker it was setting up, unless that marker says its phase ran already
            # (a checkpoint saved): then since when is not known, set-up or that phase
            return None if timed[0].continued else "init"
    return None
