"""What a log line talks about, for the lines no signature names: a component lexicon and the cascade class.

A rule pack knows the lines it was written from; the next failure's root line is often phrased otherwise. What
such a line still does is name the component it comes from (an Xid or ECC error is the GPU, an errno of a file
system call is storage, a JSON parse error is the data), and that is enough to say what kind of fault it is.
``component`` scores a line against a lexicon of such words per category and returns the best one when it is
clear.

Cascades are a class of their own: what healthy ranks print when a collective lost a member (watchdog timeouts,
broken pipes, connection resets, closed rendezvous) and what launchers print while tearing a job down (SIGTERM
to the workers, "Killing subprocess"). They are never the cause while anything else is on offer. A cascade line
that carries a payload (a CUDA error quoted inside a watchdog message) is read by its payload instead.

A learned classifier (TF-IDF and logistic regression over the rule pack's examples, the corpus's dev part and the
labelled failure lines of ``fixtures/real/lines.jsonl``, ``rules.learned``) is asked when the lexicon names
nothing; ``docs/evaluation.md`` compares the two on the held-out part of the real corpus.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from l4lite.rules.exceptions import named
from l4lite.rules.word_gate import WordGate

# ------------------------------------------------------------------------------------------------ cascades
CASCADE = re.compile(
    r"Watchdog caught collective operation timeout|collective operation timeout|watchdog thread terminated|"
    r"Timeout at NCCL work: \d+|"
    r"Some NCCL operations have failed or timed out|To avoid data inconsistency, we are taking the entire process|"
    r"Broken pipe|BrokenPipeError|Connection reset by peer|ConnectionResetError|Connection closed by (?:remote )?peer|"
    r"closed by remote peer|remote process exited|ncclRemoteError|RendezvousClosedError|Rendezvous[\w ]{0,40}closed|"
    r"SignalException|got signal: 1[05]\b|closing signal SIG(?:TERM|KILL|INT)|Killing subprocess|"
    r"Received SIGTERM|SIGTERM received|terminate called after throwing|what\(\):\s{0,10}\[Rank \d+\] Watchdog|"
    r"store->get\(|Socket Timeout|TCPStore[\w ]{0,40}(?:timed out|failed)|ChildFailedError|"
    r"Job step aborted|Waiting up to \d+ seconds for job step|ProcessGroupNCCL is being destroyed|"
    r"Timed out waiting \d+ ?ms for (?:send|recv) operation|CANCELLED AT \S{1,40} \*\*\*|"
    # srun's report of the tasks it terminated while tearing the step down
    r"srun: error: \S{1,80}: tasks? [\d,-]{1,40}: Terminated|"
    # lines that send the reader to another process's logs: the coordination services of JAX/XLA and the like
    r"(?:check|see) the (?:\w+ ){0,3}logs? for (?:an earlier|the first|more)[^\n]{0,160}|"
    r"another (?:task|rank|process|worker|node|peer) (?:\w+ ){0,2}(?:died|failed|crashed|exited)|"
    r"an error from this or another task|tasks? (?:is set to ERROR|are unhealthy|have crashed)|"
    r"heartbeat timeout|stopped sending heartbeats|remote task has failed[^\n]{0,80}|detected fatal errors|"
    r"barrier in coordination service has failed|"
    # torchelastic's agent enters its exit barrier only after its own workers succeeded: what fails there is the
    # rendezvous store of a peer that already left, and the c10d store's words for a server that went away
    r"Error waiting on exit barrier|Failed to recv, got 0 bytes|Did the remote server shutdown or crash|"
    # an allocation no accelerator could hold (PyTorch's "more than 1EB", peta- and exabytes, tens of tebibytes):
    # the size was garbage after an earlier failure, so the out-of-memory words around it are no payload
    r"(?:\bOutOfMemoryError\b:?\s{0,5})?(?:(?:CUDA|HIP|XPU|NPU) out of memory\.?\s{0,10})?"
    r"(?:Tried|failed) to allocate (?:more than 1EB|\d{2,20}(?:\.\d{1,20})? ?TiB|[\d.]{1,20} ?[PE]i?B)(?: memory)?",
    re.IGNORECASE,
)

# One word (lower case) that every match of each alternative of ``CASCADE`` holds (``rules.word_gate``): most
# lines of a job hold none, and the regex is not asked of them. One word per new alternative.
CASCADE_WORDS = (
    "collective operation timeout", "watchdog", "timeout at nccl work: ", "some nccl operations",
    "to avoid data inconsistency", "broken pipe", "brokenpipeerror", "connection reset by peer",
    "connectionreseterror", "connection closed by ", "closed by remote peer", "remote process exited",
    "ncclremoteerror", "rendezvous", "signalexception", "got signal: 1", "closing signal sig",
    "killing subprocess", "received sigterm", "sigterm received", "terminate called after throwing",
    "store->get(", "socket timeout", "tcpstore", "childfailederror", "job step aborted", "waiting up to ",
    "processgroupnccl is being destroyed", "timed out waiting ", "cancelled at ", "log",
    "another ", "task", "heartbeat", "detected fatal errors", "barrier", "failed to recv, got 0 bytes",
    "did the remote server shutdown or crash", "to allocate ",
)
CASCADE_GATE = WordGate(CASCADE, CASCADE_WORDS)


def cascade_search(text: str) -> re.Match[str] | None:
    """``CASCADE.search(text)``, without the regex for most lines (``CASCADE_GATE``)."""
    return CASCADE_GATE.search(text)


# What cascade messages say about themselves, not about a cause.
_BOILERPLATE = re.compile(
    r"Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete "
    r"data\.?|CUDA kernel errors might be asynchronously reported at some other API call[^\n]*|"
    r"For debugging consider passing CUDA_LAUNCH_BLOCKING=1\.?|ProcessGroupNCCL(?:\.cpp:\d+)?|"
    r"NCCL (?:version|error)[^\n]{0,20}|\bnetwork error\b|WorkNCCL\([^)]*\)|Timeout\(ms\)=\d+|SeqNum=\d+|"
    r"OpType=\w+|ran for \d+ milliseconds before timing out|remote process exiting prematurely",
    re.IGNORECASE,
)
# Advice CUDA and PyTorch append to any error: it names no component, whatever its words.
_ADVICE = re.compile(
    r"CUDA kernel errors might be asynchronously reported at some other API call[^\n]*|"
    r"For debugging consider passing CUDA_LAUNCH_BLOCKING=1\.?|"
    r"Compile with `?TORCH_USE_CUDA_DSA`? to enable device-side assertions\.?|"
    r"Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete "
    r"data\.?",
    re.IGNORECASE,
)
# Components a cascade line may quote as the cause of its rank's failure.
PAYLOADS = frozenset({"gpu_hardware", "oom", "host", "storage", "software"})


@dataclass(frozen=True)
class Component:
    """The category a line's words point at, its score (weighted word hits) and the words that decided it."""

    category: str
    score: float
    words: tuple[str, ...]


# (category, weight, pattern). Patterns are case-insensitive; a line's score per category is the sum of the
# weights of the distinct patterns it contains.
_LEXICON: tuple[tuple[str, float, str], ...] = (
    # GPU, driver, Xid, ECC, NVLink
    ("gpu_hardware", 3.0, r"\bXid\b|NVRM:|\bECC\b|uncorrectable|double[- ]bit|\bDBE\b|row remap|fallen off the bus|"
                          r"GPU is lost|RmInitAdapter|\bGSP\b|NVLink|nvlink|\bHardware Error\b|hardware error|"
                          r"retired pages?|page retirement|Uncorrected|thermal|throttl|power brake|PCIe? (?:bus )?error|"
                          r"\bAER\b|amdgpu|\bMCE\b.*GPU|GPU has fallen|GPU (?:hang|reset|requires reset)|"
                          # "unknown error" is what CUDA says when the GPU or its driver failed underneath, and
                          # what many C libraries say of an errno they cannot name: the GPU's only beside CUDA's words
                          r"(?:cuda|cudnn|\bGPU\b|nvml|nvidia)[^\n]{0,80}?unknown error|"
                          # (PaddlePaddle's allocator says "Out of memory error on GPU 0": no memory fault)
                          r"Unable to determine the device handle|(?<!out of )memory errors? (?:on|in) GPU|"
                          r"GPU \d+ has [\w ]*errors|"
                          # nvidia-smi's table prints ERR! for a field (fan, power) the GPU did not answer
                          r"\|\s{0,3}ERR!|ERR!\s{0,3}/\s{0,5}\d+W"),
    ("gpu_hardware", 1.0, r"\bGPU\b|\bCUDA error\b|cudaError|nvidia-smi|\bDCGM\b|dcgmi|\bSXM\b"),
    # the process ran out of (GPU) memory
    ("oom", 3.0, r"OutOfMemoryError|CUDA out of memory|out of memory|CUBLAS_STATUS_ALLOC_FAILED|RESOURCE_EXHAUSTED|"
                 r"cudaErrorMemoryAllocation|Tried to allocate|"
                 # TensorFlow's allocator: "ResourceExhaustedError: OOM when allocating tensor with shape[...]"
                 r"ResourceExhaustedError|OOM when allocating"),
    # network: IB, RoCE, sockets, NIC
    ("network", 3.0, r"\bNET/Socket\b|\bibv_\w+|\bmlx5|InfiniBand|\bRoCE\b|\bHCA\b|\bEFA\b|libfabric|"
                     r"\bGID\b|link (?:is )?down|port error|Connection timed out|Connection refused|No route to host|"
                     r"Network is unreachable|\bNIC\b|net_ib|net_socket|ETIMEDOUT|ECONNREFUSED|completion (?:with|error)|"
                     r"retry (?:counter )?exceeded|\brdma\b"),
    ("network", 1.0, r"\bNET/IB\b|\bsocket\b|\bnetwork\b|\bpeer\b|\bIB\b|\bNCCL WARN\b"),
    # storage: file systems and their errnos
    ("storage", 3.0, r"Input/output error|\bEIO\b|Errno 5\]|Stale file handle|ESTALE|Disk quota exceeded|EDQUOT|"
                     r"Read-only file system|EROFS|\bLustre(?:Error)?\b|\bLNet(?:Error)?\b|Transport endpoint is not connected|"
                     r"Remote I/O error|\bnfs\b|\bNFS\b|\bGPFS\b|mmfs|\bFSx\b|"
                     r"\bbeegfs\b|not responding, (?:still trying|timed out)|I/O error|blk_update_request|"
                     r"\bEXT4-fs error|\bXFS\b.*error|No space left on device|PytorchStreamWriter failed|"
                     r"failed writing|unexpected EOF|file write failed|inline_container|"
                     # a write the file system cut short, in the words of C stdio and the writers built on it
                     r"short write|wrote \d+ (?:bytes|blocks|items) instead of \d+|\bwrite error\b|partial write|"
                     r"(?:not enough|insufficient|no) (?:free )?disk space|disk (?:is )?full|"
                     # the kubelet's reason for evicting a pod: the node's local disk ran short
                     r"low on resource: ephemeral-storage"),
    ("storage", 1.0, r"\bdisk\b|\bmount\b|serialization\.py|torch\.save|checkpoint"),
    # host: memory, kernel, CPU
    ("host", 3.0, r"Cannot allocate memory|MemoryError|oom-kill|oom_reaper|Out of memory: Kill|Memory cgroup out of|"
                  r"killed by signal: (?:Killed|Terminated)|\bSIGKILL\b|signal 9\b|exitcode: -9|\bKilled\b|soft lockup|hung_task|"
                  # a process killed by SIGKILL, in the exit codes launchers and shells report (-9, 128 + 9)
                  r"(?:exit(?:ed)?(?: with)?|error|return)[ _]?(?:status )?(?:code|status)[:= ]{0,3}(?:-9|137)\b|"
                  r"blocked for more than|Machine Check|\bEDAC\b|kernel BUG|Kernel panic|CPU Virtual Memory|"
                  r"can't allocate memory|DefaultCPUAllocator|ENOMEM|Errno 12\]|memory usage.*(?:9\d|100)(?:\.\d)?%|"
                  # a container or pod past its memory limit (Ray, Kubernetes, docker say it in these words)
                  r"exceed\w* (?:the |its )?(?:[\w-]+ ){0,3}memory(?: limits?)?\b|memory limits? exceeded|"
                  # the host's memory in the words of C++, numpy, Kubernetes, Ray's memory monitor and the kernel
                  r"std::bad_alloc|\bOOMKilled\b|Unable to allocate [\d.]+ ?[KMGTP]i?B|low on memory|"
                  r"memory on this node|oom-prevention|page allocation failure|"
                  # the kubelet's reason for evicting a pod: the node's memory ran short
                  r"low on resource: memory|"
                  # Slurm's reason for a job whose launch failed on its node (slurmd, prolog): the node is drained
                  r"launch failed requeued held"),
    ("host", 1.0, r"\bkernel\b|\bRAM\b|\bswap\b|\bcgroup\b|\bCPU\b"),
    # numerical
    ("numerical", 3.0, r"\bNaN\b|\bnan\b|\binf\b|\bInf\b|overflow|loss scale|diverg|exploding|non-finite|"
                       r"isfinite|grad(?:ient)? norm is"),
    # data loading and the data itself
    ("data", 3.0, r"corrupt|truncated|JSON parse error|JSONDecodeError|UnicodeDecodeError|codec can't decode|"
                  r"ArrowInvalid|out of bounds|out of range|ParserError|Error tokenizing|invalid (?:image|"
                  r"sample|record)|UnidentifiedImageError|cannot identify image|bad (?:sample|record)|malformed|"
                  r"Expected .* got .* (?:shape|size)|empty (?:batch|sample)|label"),
    ("data", 1.0, r"\bDataLoader\b|dataset|\bsamples?\b|\bimage\b|\bPIL\b|tokeniz|\bbatch\b|\.jsonl?\b|\.csv\b|"
                  r"\bparquet\b|\bdecode\b"),
    # configuration: paths, ports, sizes, environment, limits
    ("user_config", 3.0, r"Address already in use|errno: 98|EADDRINUSE|No such file or directory|FileNotFoundError|"
                         r"does not exist|must be (?:divisible|greater|less|equal|set)|has to be greater|"
                         r"divisible by|invalid (?:value|argument|choice|configuration|config)|misconfigur|"
                         r"environment variable|TIME LIMIT|DUE TO TIME|CANCELLED|Permission denied|EACCES|"
                         r"/dev/shm|posix_fallocate|shared memory|\bshm\b|unrecognized arguments|"
                         r"required argument|ValueError|"
                         # the environment the job was started in: a package not installed, a build for other
                         # GPUs, a per-process limit, a launch without the distributed launcher
                         r"ModuleNotFoundError|No module named|not compatible with the current|"
                         r"Too many open files|process group has not been initialized|"
                         # the container was started without the GPU runtime: the driver's libraries are not in it
                         r"could not load NVML|NVML library not found|default runtime to .?nvidia|"
                         # a checkpoint saved with another parallel layout than the launch's
                         r"world size of \d+ but the current world size|world size (?:mismatch|does not match)|"
                         # a file that was never a pickle (a Git LFS pointer, an HTML page saved as the weights)
                         r"invalid load key"),
    # "KeyError" names the exception only: its labelled threads were a class name missing from the
    # annotations (data) and a script's bug (software) more often than a configuration key (2026-12-07)
    ("user_config", 1.0, r"KeyError|not found|\bconfig\b|\bargs?\b|--\w+|\bNCCL_\w+|\bport\b|\bpath\b|\bsetting\b|\bparameter\b"),
    # code: the program's own bugs and its build ("device-side assert" is no word of it: a kernel's check
    # failed, on labels or token ids out of range as often as on a wrong setting, never a bug in the threads)
    ("software", 3.0, r"undefined symbol|ImportError|Segmentation fault|SIGSEGV|segfault|"
                      r"core dumped|illegal memory access|illegal instruction|NotImplementedError|AttributeError|"
                      r"TypeError|AssertionError|assert(?:ion)? failed|version mismatch|"
                      r"incompatible|deadlock|RecursionError|internal error|Duplicate GPU|invalid usage|"
                      r"Bad address|Errno 14\]"),
    ("software", 1.0, r"\bTraceback\b|\bException\b|\bbug\b|\bversion\b|\.so\b|\bcompile\b"),
)


@functools.cache
def _compiled() -> tuple[tuple[str, float, re.Pattern[str]], ...]:
    """The lexicon's patterns, compiled on the first line that asks (a healthy job's analysis never does: a
    process that compiled them at import paid 4-6 ms for nothing)."""
    return tuple((cat, weight, re.compile(pat, re.IGNORECASE)) for cat, weight, pat in _LEXICON)


MIN_SCORE = 3.0  # at least one strong word, or three weak ones
MIN_MARGIN = 1.0  # over the second-best category
LEARNED_MIN = 0.5
LEARNED_SUPPORT = 2  # words the model knows, besides the words of any failure, for it to guess at all
LEARNED_FIRST = False  # whether the model answers before the lexicon for a line no name decides


LEARNED_WORDS = "(learned)"  # the words a learned answer gives: no lexicon word decided it


def component(text: str, learned: bool = False) -> Component | None:
    """The category a line's words name, when one stands out; None for a line that names no component.

    ``learned``: when the lexicon names nothing, ask the shipped TF-IDF model (``rules.learned``), which answers
    only when it is fairly sure (probability ``LEARNED_MIN``) and the line holds words it knows that say more than
    that something failed (``LEARNED_SUPPORT``); with ``LEARNED_FIRST`` the model is asked before the lexicon.
    A name with one meaning decides before either.
    """
    named = named_component(text)
    if named is not None or not learned:
        return named or _lexicon(text)
    if LEARNED_FIRST:
        return learned_component(text) or _lexicon(text)
    return _lexicon(text) or learned_component(text)


def learned_component(text: str) -> Component | None:
    """The shipped model's category for ``text`` when it is fairly sure and the text holds words it knows."""
    from l4lite.rules.learned import shipped_model

    model = shipped_model()
    rest = without_advice(text)
    if model is None or not rest.strip() or model.support(rest) < LEARNED_SUPPORT:
        return None
    proba = model.proba(rest)
    best = max(proba, key=lambda c: proba[c])
    return Component(best, proba[best], (LEARNED_WORDS,)) if proba[best] >= LEARNED_MIN else None


def says_more(text: str, framing: Sequence[str]) -> bool:
    """Whether ``text`` holds a word the learned model knows that none of the ``framing`` texts holds. A generic
    rule's examples without its mechanism are its framing ("RuntimeError: CUDA error:"): a line left with those
    words only says nothing the model could read, and its guess on them is a prior of the training text."""
    from l4lite.rules.learned import shipped_model

    model = shipped_model()
    if model is None:
        return False
    seen = frozenset().union(*(model.known_words(without_advice(t)) for t in framing))
    return bool(model.known_words(without_advice(text)) - seen)


def without_advice(text: str) -> str:
    """``text`` (its first 4,000 characters) without CUDA's advice appended to every error: the words the learned
    model reads."""
    return _ADVICE.sub(" ", text[:4000])


NAMED_SCORE = 5.0  # a name with one meaning (``rules.exceptions``) outweighs a strong lexicon word


def named_component(text: str) -> Component | None:
    """The category a name with one meaning in ``text`` gives (``rules.exceptions``), as a component."""
    found = named(text)
    return Component(found.category, NAMED_SCORE, (found.name,)) if found is not None else None


def _lexicon(text: str) -> Component | None:
    scores: dict[str, float] = {}
    words: dict[str, list[str]] = {}
    head = _ADVICE.sub(" ", text[:4000])
    for cat, weight, pat in _compiled():
        found = {m.group(0).lower() for m in pat.finditer(head)}
        if found:
            scores[cat] = scores.get(cat, 0.0) + weight * min(len(found), 2)
            words.setdefault(cat, []).extend(sorted(found))
    if not scores:
        return None
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])
    best, score = ranked[0]
    second = ranked[1][1] if len(ranked) > 1 else 0.0
    if score < MIN_SCORE or score - second < MIN_MARGIN:
        return None
    return Component(best, score, tuple(words[best][:6]))


def cascade_payload(text: str) -> Component | None:
    """For a cascade line: the component of what it quotes, with the cascade's own words taken out."""
    rest = _BOILERPLATE.sub(" ", CASCADE.sub(" ", text))
    found = component(rest)
    if found is None or found.category not in PAYLOADS:
        return None  # a cascade's own vocabulary (peers, sockets, timeouts) is no payload
    return found


_FIRST_FAILURE = re.compile(r"Root Cause \(first observed failure\):")


def first_failure(text: str) -> str:
    """The part of a launcher's failure summary about the failure it names first (torchelastic's "Root Cause"
    section), else the whole text: the summary lists the other ranks' failures before it, and their tracebacks
    (the peers' lost connections) say nothing about why the named rank died."""
    m = _FIRST_FAILURE.search(text)
    return text[m.start():] if m is not None else text


_CHAINED = re.compile(r"During handling of the above exception, another exception occurred|"
                      r"The above exception was the direct cause of the following exception")
_EXCEPTION_LINE = re.compile(r"^(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Failure)\b(?::.*)?$")
# the tags a launcher puts before every line of a rank's output (torchrun's ``[rank0]:``, ``[default0]:``)
_LINE_TAGS = re.compile(r"^\s*(?:\[[\w.:-]{1,40}\]:\s?)+")


def chained_cause(text: str) -> str | None:
    """The first exception of a chained traceback (the one printed before "During handling of the above
    exception"): the original failure, where the final exception is often what the cleanup tripped over (a
    ``MemoryError`` in ``torch.save`` ends as a zip writer's "unexpected pos")."""
    m = _CHAINED.search(text[:20000])
    if m is None:
        return None
    for line in reversed(text[:m.start()].splitlines()):
        line = _LINE_TAGS.sub("", line).strip()
        if line:
            return line if _EXCEPTION_LINE.match(line) else None
    return None


# A line of a settings listing states how the job was configured, not what happened: Megatron's and DeepSpeed's
# argument dumps (``loss_scale ........ None``) and a pretty-printed JSON config (``"fp16": false,``). Their
# names hold component words (overflow, loss scale, checkpoint) that no event said.
_LISTING = re.compile(r"[\w.\]\[-]+ \.{4,} |(?:^|[\]:]|\s)\"[\w.\-]+\":\s*"
                      r"(?:true|false|null|-?\d[\w.+-]*|<\w+>|\"[^\"]{0,200}\"),?\s*$", re.M)


def is_listing(text: str) -> bool:
    """Whether the text is a line of a settings listing (a name, a leader or a colon, one value)."""
    return _LISTING.search(text) is not None


def is_cascade(text: str) -> bool:
    """A line healthy ranks or the launcher print because of a failure elsewhere, with no payload of its own."""
    # a traceback names its exception last: look at both ends of a long record
    hit = cascade_search(text[:4000]) or (len(text) > 4000 and cascade_search(text[-2000:]))
    return bool(hit) and cascade_payload(text) is None
