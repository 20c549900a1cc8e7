"""What an exception, an errno, a CUDA error, a signal or a client library says about a fault, as data.

The lexicon (``rules.components``) weighs words; some words are not votes but names with one meaning. A
traceback's last line names its exception class (``OverflowError`` is code converting a number it cannot hold,
``tarfile.ReadError`` is a broken data shard, ``ray.exceptions.OutOfMemoryError`` is the host's memory, not the
GPU's), an ``OSError`` its errno (28 is a full file system, 116 a stale NFS handle), a CUDA call its error (a
device "busy or unavailable" is a GPU the driver has given up on), a DataLoader worker the signal that killed it
(a bus error is a too small ``/dev/shm``), a fork or a new thread refused with EAGAIN the process-count limit, an
NCCL warning the transport source file it came from, and a traceback its innermost frames (a remote-storage
client: S3, GCS, the Hugging Face hub, fsspec's HTTP reader).

``named`` returns the category such a name gives, with the name, or None; ``rules.components.component`` asks
it before the lexicon. Only names whose meaning does not depend on the rest of the line are listed; a generic
``RuntimeError``, ``ValueError`` or ``OSError`` without an errno is left to the lexicon.

Remote storage: a read from an object store or a hub that times out or fails is ``storage`` (the component
that failed is the remote store the data or checkpoint lives on), whatever the client library's exception is
called (``docs/rules.md``).
"""

from __future__ import annotations

import re
from typing import NamedTuple


class Named(NamedTuple):
    """The category a name in a line gives, and the name."""

    category: str
    name: str


# ------------------------------------------------------------------------------------ exception classes
# Keyed by the class name as printed, qualified names first (the longest match wins).
EXCEPTIONS: dict[str, str] = {
    "ray.exceptions.OutOfMemoryError": "host",  # Ray's memory monitor killed a task: the node's RAM
    "torch.OutOfMemoryError": "oom",
    "torch.cuda.OutOfMemoryError": "oom",
    "numpy.core._exceptions._ArrayMemoryError": "host",
    "numpy._core._exceptions._ArrayMemoryError": "host",
    "_ArrayMemoryError": "host",
    "MemoryError": "host",
    "tarfile.ReadError": "data",  # a truncated or corrupted tar shard (WebDataset)
    "tarfile.HeaderError": "data",
    "PIL.UnidentifiedImageError": "data",
    "UnidentifiedImageError": "data",
    "UnicodeDecodeError": "data",
    "json.decoder.JSONDecodeError": "data",
    "JSONDecodeError": "data",
    "pyarrow.lib.ArrowInvalid": "data",
    "datasets.builder.DatasetGenerationError": "data",
    "OverflowError": "software",  # a number converted to a type that cannot hold it: the code's
    "ZeroDivisionError": "software",
    "NameError": "software",
    "UnboundLocalError": "software",
    "SyntaxError": "software",
    "IndentationError": "software",
    "NotImplementedError": "software",
    "RecursionError": "software",
    "FloatingPointError": "numerical",
    # fsspec raises it for a request of an asynchronous (remote: HTTP, S3, GCS) file system that timed out
    "fsspec.exceptions.FSTimeoutError": "storage",
    "FSTimeoutError": "storage",
    "ConnectionRefusedError": "network",
    "ConnectionAbortedError": "network",
    "FileNotFoundError": "user_config",
    # a model, file or revision the hub does not have, or will not give this account: the name configured
    "RepositoryNotFoundError": "user_config",
    "RevisionNotFoundError": "user_config",
    "EntryNotFoundError": "user_config",
    "GatedRepoError": "user_config",
    "HFValidationError": "user_config",
    # configuration files and their composition (OmegaConf, Hydra, YAML, argparse)
    "omegaconf.errors.ConfigAttributeError": "user_config",
    "omegaconf.errors.ConfigKeyError": "user_config",
    "omegaconf.errors.MissingMandatoryValue": "user_config",
    "ConfigCompositionException": "user_config",
    "yaml.scanner.ScannerError": "user_config",
    "yaml.parser.ParserError": "user_config",
    "yaml.constructor.ConstructorError": "user_config",
    "argparse.ArgumentError": "user_config",
    "IsADirectoryError": "user_config",
    "NotADirectoryError": "user_config",
    "PermissionError": "user_config",
}
_EXC_LINE = re.compile(
    r"^(?:\[[^\]\n]{0,200}\]:?\s{0,20}|\d{1,5}:\s{0,5}|[\d\-: ,.]{10,40}\s)?"  # rank, srun or timestamp prefix
    r"(?P<cls>(?:[A-Za-z_]\w{0,80}\.){0,8}[A-Za-z_]\w{0,80}(?:Error|Exception|Failure))(?:\((?P<inner>\w{1,60})\))?"
    r"(?::|$)", re.M)

# ------------------------------------------------------------------------------------------------- errno
ERRNOS: dict[int, str] = {
    2: "user_config",  # ENOENT: a path the configuration names
    5: "storage",  # EIO
    12: "host",  # ENOMEM
    13: "user_config",  # EACCES
    14: "software",  # EFAULT
    24: "user_config",  # EMFILE: the open-files limit
    28: "storage",  # ENOSPC
    30: "storage",  # EROFS
    36: "user_config",  # ENAMETOOLONG
    98: "user_config",  # EADDRINUSE: a port already taken
    101: "network",  # ENETUNREACH
    107: "storage",  # ENOTCONN: a FUSE mount whose daemon went away
    110: "network",  # ETIMEDOUT
    111: "network",  # ECONNREFUSED
    113: "network",  # EHOSTUNREACH
    116: "storage",  # ESTALE
    121: "storage",  # EREMOTEIO
    122: "storage",  # EDQUOT
}
_ERRNO = re.compile(r"\[Errno (\d{1,4})\]|\berrno[:=]? ?(\d{1,4})\b|\berror (\d{1,4}) \(E[A-Z]{2,12}\)", re.I)

# A new process or thread refused with EAGAIN: the process-count limit of the user or the container (``ulimit -u``,
# a cgroup's pids.max, a pod's pids limit) is reached. EAGAIN alone means no more than "try again" (a non-blocking
# socket says it too); raised by fork, clone or pthread_create it is that limit, the node's setting.
_PROCESS_LIMIT = re.compile(
    r"can't start new thread|"
    r"\bos\.fork\(\)[^\n]{0,80}\n(?:[^\n]{0,200}\n){0,3}?[^\n]{0,200}\[Errno 11\] Resource temporarily unavailable|"
    r"\b(?:fork|clone|vfork|pthread_create)(?: failed)?[^\n]{0,60}?: (?:retry: )?Resource temporarily unavailable")

# ------------------------------------------------------------------------------------------- CUDA errors
# cudaError_t names and the messages cudaGetErrorString gives them.
CUDA_ERRORS: tuple[tuple[str, str], ...] = (
    ("gpu_hardware", r"cudaErrorECCUncorrectable|uncorrectable ECC error encountered|cudaErrorDevicesUnavailable|"
                     r"CUDA-capable device\(s\) is/are busy or unavailable|cudaErrorHardwareStackError|"
                     r"hardware stack error|cudaErrorNvlinkUncorrectable|uncorrectable NVLink error|"
                     r"CUDA_ERROR_ECC_UNCORRECTABLE"),
    # the node's driver daemons (NVSwitch fabric manager) are not running or not of the driver's version:
    # cudaGetErrorString's own advice, and four threads that fixed it on the host; NVML's "Driver/library version
    # mismatch" is the node's loaded kernel module and its user-space driver libraries out of step (a package
    # upgrade without a reboot or module reload): four threads, all fixed on the host
    ("host", r"cudaErrorSystemNotReady|system not yet initialized|Driver/library version mismatch"),
    ("software", r"cudaErrorIllegalAddress|an illegal memory access was encountered|cudaErrorMisalignedAddress|"
                 r"misaligned address|cudaErrorIllegalInstruction|an illegal instruction was encountered|"
                 r"cudaErrorInvalidPc"),
    # a build without kernels for the GPU's architecture: the threads fix it by installing a matching build
    ("user_config", r"cudaErrorNoKernelImageForDevice|no kernel image is available|"
                    r"cudaErrorNoDevice|no CUDA-capable device is detected|cudaErrorInvalidDevice\b|"
                    r"invalid device ordinal|cudaErrorInsufficientDriver|driver version is insufficient|"
                    r"cudaErrorSystemDriverMismatch|Found no NVIDIA driver on your system|"
                    r"NVIDIA driver on your system is too old"),
    ("oom", r"cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY"),
)
_CUDA = tuple((cat, re.compile(pat, re.I)) for cat, pat in CUDA_ERRORS)

# ----------------------------------------------------------------------------------------------- signals
# The signal a DataLoader worker or a launcher reports: a bus error in a worker is PyTorch's own hint at a
# /dev/shm too small for the batches it passes (a container's setting); SIGKILL and SIGTERM are sent to the
# worker from outside, not raised by what it read: the kernel's OOM killer or a memory-pressure daemon of the
# node (a worker's own crash is a segmentation fault, an abort or an exception).
_SIGNALS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("user_config", re.compile(r"killed by signal: Bus error|\bSIGBUS\b|insufficient shared memory", re.I)),
    ("host", re.compile(r"DataLoader worker \(pids?\(?s?\)?[\d, ]{1,200}\)? is killed by signal: (?:Killed|Terminated)",
                        re.I)),
)

# ------------------------------------------------------------------------------------ NCCL source files
# An NCCL warning names the source file it comes from: the transport that failed.
_NCCL_WARN = re.compile(r"(?P<file>[\w/]{1,80}\.cc):\d{1,6} NCCL WARN|NCCL WARN[^\n]{0,40}?(?P<file2>[\w/]{1,80}\.cc)")
NCCL_FILES: dict[str, str] = {
    "nvls.cc": "gpu_hardware",  # NVLink SHARP: the NVSwitch fabric (fabric manager state)
    "net_ib.cc": "network", "net_socket.cc": "network", "socket.cc": "network",
    "shm.cc": "user_config",  # the container's /dev/shm
}

# ---------------------------------------------------------------------------------------- remote storage
_REMOTE_STORE = re.compile(
    r"\bs3://|amazonaws\.com|tensorflow/core/platform/s3|GetObject|PutObject|HeadObject|botocore|\bboto3\b|"
    r"\bs3fs\b|\bgcsfs\b|storage\.googleapis|\bgs://|blob\.core\.windows|azure[./]storage|huggingface\.co|"
    r"huggingface_hub|fsspec/implementations/(?:http|s3|gcs|arrow)|\bhf://", re.I)
_REMOTE_FAILURE = re.compile(
    r"timed? ?out|Timeout|curl(?:Code)?:? ?28\b|Curl returned error code|error code 28|HTTPError|"
    r"\b5\d\d (?:Server Error|Internal|Service Unavailable|Bad Gateway)|ConnectionError|ClientError|"
    r"IncompleteRead|NETWORK_CONNECTION|Connection (?:aborted|broken)|RemoteDisconnected|SlowDown|"
    r"Request failed", re.I)
# the innermost frames of a traceback inside a remote-storage client's read
_FRAME = re.compile(r'File "(?P<path>[^"\n]{1,400})", line \d+')
_REMOTE_FRAME = re.compile(r"/(?:fsspec/implementations/(?:http|s3|gcs)\w{0,20}\.py|(?:s3fs|gcsfs|botocore|"
                           r"huggingface_hub|aiohttp|aiobotocore)/)", re.I)
# A traceback cut before its exception line (the rest of the log was lost, or another thread's line split it)
# still says in its innermost frames what the program was doing: writing or reading a checkpoint file.
_FILE_FRAME = re.compile(r"/torch/serialization\.py|/safetensors/", re.I)
# ... or decoding a sample: an image, audio or video decoder fails on a file it cannot read (truncated, corrupt)
_DECODER_FRAME = re.compile(r"[/\\](?:PIL|imageio|cv2|torchvision[/\\]io|soundfile|librosa|torchaudio|decord|av)[/\\]")
# An exception whose message is another traceback re-raises a worker's exception (older PyTorch's DataLoader:
# ``raise batch.exc_type(batch.exc_msg)``): it names nothing itself, the traceback inside it does.
_WRAPPER = re.compile(r":\s{0,20}Traceback \(most recent call last\):?\s*$")


def exception_class(text: str) -> str | None:
    """The class of the last exception line in ``text`` (a traceback's final line), None without one."""
    last = None
    for m in _EXC_LINE.finditer(text[:20000]):
        end = text.find("\n", m.end())
        if not _WRAPPER.search(text[m.start():end if end >= 0 else len(text)]):
            last = m
    if last is None:
        return None
    return last.group("cls")


def _class_category(cls: str) -> Named | None:
    parts = cls.split(".")
    for i in range(len(parts)):  # the qualified name first, then shorter suffixes
        name = ".".join(parts[i:])
        cat = EXCEPTIONS.get(name)
        if cat is not None:
            return Named(cat, name)
    return None


def named(text: str) -> Named | None:
    """The category a name with one meaning in ``text`` gives; None when the text holds no such name."""
    head = text[:20000]
    for cat, pat in _SIGNALS:
        m = pat.search(head)
        if m:
            return Named(cat, m.group(0))
    for cat, pat in _CUDA:
        m = pat.search(head)
        if m:
            return Named(cat, m.group(0))
    limit = _PROCESS_LIMIT.search(head)
    if limit is not None:
        return Named("user_config", "process limit")
    store = _REMOTE_STORE.search(head)
    if store is not None and _REMOTE_FAILURE.search(head):
        return Named("storage", store.group(0))
    frames = [m.group("path") for m in _FRAME.finditer(head)]
    if frames and any(_REMOTE_FRAME.search(p) for p in frames[-3:]):
        hit = next(m for p in frames[-3:] if (m := _REMOTE_FRAME.search(p)) is not None)
        return Named("storage", hit.group(0).strip("/"))
    cls = exception_class(head)
    if cls is not None:
        found = _class_category(cls)
        if found is not None:
            return found
    elif frames and any(_FILE_FRAME.search(p) for p in frames[-2:]):
        return Named("storage", next(p for p in frames[-2:] if _FILE_FRAME.search(p)).rsplit("/", 1)[-1])
    elif frames and any(_DECODER_FRAME.search(p) for p in frames[-2:]):
        path = next(p for p in frames[-2:] if _DECODER_FRAME.search(p))
        return Named("data", _DECODER_FRAME.search(path).group(0).strip("/\\"))
    m = _ERRNO.search(head)
    if m is not None:
        code = int(next(g for g in m.groups() if g))
        if code in ERRNOS:
            return Named(ERRNOS[code], m.group(0))
    w = _NCCL_WARN.search(head)
    if w is not None:
        path = w.group("file") or w.group("file2") or ""
        cat = NCCL_FILES.get(path.rsplit("/", 1)[-1])
        if cat is not None:
            return Named(cat, path)
    return None
