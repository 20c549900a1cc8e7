"""Names with one meaning (``rules.exceptions``): an exception class, an errno, a CUDA error, a worker's signal, an
NCCL transport file, a remote-storage client. Each decides a line's category before the lexicon's word votes,
and a line without such a name is left to the lexicon. The lines are written for these tests."""

from __future__ import annotations

import pytest

from l4lite.rules.components import component
from l4lite.rules.exceptions import exception_class, named


@pytest.mark.parametrize(("line", "category"), [
    # Ray's memory monitor is about the host, though the class is called like PyTorch's CUDA OOM
    ("ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.", "host"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.", "oom"),
    # a number the code converts into a type too small for it: the code's, whatever "out of range" votes for
    ("OverflowError: out of range integral type conversion attempted", "software"),
    ("tarfile.ReadError: unexpected end of data in shard-000123.tar", "data"),
    ("ConnectionRefusedError: [Errno 111] Connection refused", "network"),
    ("OSError: [Errno 122] Disk quota exceeded: '/scratch/run7/step_400.pt'", "storage"),
    ("OSError: [Errno 116] Stale file handle", "storage"),
    ("PermissionError: [Errno 13] Permission denied: '/mnt/out/config.json'", "user_config"),
    ("torch.AcceleratorError: CUDA error: CUDA-capable device(s) is/are busy or unavailable", "gpu_hardware"),
    ("RuntimeError: CUDA error: uncorrectable ECC error encountered", "gpu_hardware"),
    # a build without kernels for the GPU: the labelled threads fix it by installing a matching build
    ("RuntimeError: CUDA error: no kernel image is available for execution on the device", "user_config"),
    ("RuntimeError: CUDA error: invalid device ordinal", "user_config"),
    # the node's driver daemons (the NVSwitch fabric manager) are down or of another version than the driver
    ("RuntimeError: CUDA error: system not yet initialized", "host"),
    # PyTorch's own hint: a worker's bus error is a /dev/shm too small for its batches
    ("RuntimeError: DataLoader worker (pid 4410) is killed by signal: Bus error.", "user_config"),
    ("node3:811:902 [1] transport/nvls.cc:201 NCCL WARN Cuda failure 'invalid argument'", "gpu_hardware"),
    ("node3:811:902 [1] transport/net_ib.cc:1010 NCCL WARN NET/IB : Got completion with error 12", "network"),
])
def test_a_name_with_one_meaning_decides(line: str, category: str) -> None:
    found = component(line)
    assert found is not None and found.category == category


@pytest.mark.parametrize("line", [
    "botocore.exceptions.ReadTimeoutError: Read timeout on endpoint URL: \"https://bkt.s3.amazonaws.com/shard-7\"",
    "urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool(host='huggingface.co', port=443): Read timed out.",
    "E tensorflow/core/platform/s3/aws_logging.cc:60] Curl returned error code 28",
    "OSError: AWS Error NETWORK_CONNECTION during GetObject operation: curlCode: 28, Timeout was reached",
    # a traceback cut inside the remote reader: its innermost frames name the store's client
    'Traceback (most recent call last):\n  File "/env/site-packages/fsspec/implementations/http.py", line 61, in '
    'fetch\n    out = await r.read()\n  File "/env/site-packages/aiohttp/streams.py", line 392, in readany\n'
    '    await self._wait("readany")',
])
def test_a_failed_read_from_remote_storage_is_storage(line: str) -> None:
    found = component(line)
    assert found is not None and found.category == "storage"


def test_a_remote_store_named_without_a_failure_names_nothing_of_its_own() -> None:
    assert named("INFO downloading shard 12 from s3://bucket/train/ (4.1 GB)") is None


def test_a_generic_exception_is_left_to_the_lexicon() -> None:
    """``RuntimeError``, ``ValueError`` and an ``OSError`` without an errno have no meaning of their own."""
    assert named("RuntimeError: Expected all tensors to be on the same device") is None
    assert named("ValueError: batch_size should be a positive integer value, but got batch_size=0") is None
    assert exception_class("  File \"x.py\", line 3\nValueError: bad value") == "ValueError"
    assert exception_class("[rank3]: torch.distributed.DistBackendError: NCCL error") == \
        "torch.distributed.DistBackendError"


def test_the_last_exception_of_a_traceback_names_it() -> None:
    text = ("Traceback (most recent call last):\n  File \"a.py\", line 1\nFileNotFoundError: missing.json\n\n"
            "During handling of the above exception, another exception occurred:\n\nOverflowError: too big")
    assert exception_class(text) == "OverflowError"


def test_a_traceback_cut_to_its_frames_is_read_by_its_innermost_frames() -> None:
    """A record of frames alone (no header, no exception line, no error word) is a failure's traceback; what its
    innermost frames do names the component, and only such a name does (no word vote, no guess)."""
    from scan_helpers import DigitMiner, rec

    from l4lite.detect.components import ComponentDetector
    from l4lite.scan.scanner import scan_records

    store = ('  File "/env/site-packages/s3fs/core.py", line 1201, in _cat_file\n'
             '    return await _read(r)\n  File "/env/site-packages/aiohttp/streams.py", line 392, in readany\n'
             '    await self._wait("readany")')
    plain = ('  File "/app/train.py", line 88, in step\n    loss = model(batch)\n'
             '  File "/app/model.py", line 12, in forward\n    return self.head(x)')
    records = [rec(store.splitlines()[0], text=store, line=1, end_line=4, time=100.0),
               rec(plain.splitlines()[0], text=plain, line=5, end_line=8, time=101.0, node="node2",
                   file="node2.log")]
    found = ComponentDetector().detect(scan_records(records, DigitMiner()))
    assert [(f.node, f.category) for f in found] == [("node1", "storage")]


@pytest.mark.parametrize("text", [
    # a DataLoader starting its workers under a pids limit it has reached (fixtures/real_jobs/149)
    '  File "/usr/lib/python3.11/multiprocessing/popen_fork.py", line 66, in _launch\n'
    "    self.pid = os.fork()\n               ^^^^^^^^^\nBlockingIOError: [Errno 11] Resource temporarily unavailable",
    "RuntimeError: can't start new thread",
    "OpenBLAS blas_thread_init: pthread_create failed for thread 5 of 32: Resource temporarily unavailable",
    "bash: fork: retry: Resource temporarily unavailable",
])
def test_a_process_or_thread_refused_with_eagain_is_the_process_limit(text: str) -> None:
    found = named(text)
    assert found is not None and found.category == "user_config"


def test_eagain_without_a_new_process_names_no_limit() -> None:
    # a non-blocking socket or read says "try again" too: no process limit in it
    assert named("BlockingIOError: [Errno 11] Resource temporarily unavailable") is None
