"""The mechanisms that carry diagnosis beyond the lines the rules were written from: the component lexicon, the
cascade class (with payloads), and NVIDIA's Xid catalogue."""

from __future__ import annotations

import pytest

from l4lite.rules.components import cascade_payload, component, first_failure, is_cascade
from l4lite.rules.xid import CATALOGUE, xid_code, xid_entry

CASCADES = [
    "[E ProcessGroupNCCL.cpp:828] [Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, "
    "OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.",
    "[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed or timed out. Due to the asynchronous nature of "
    "CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
    "BrokenPipeError: [Errno 32] Broken pipe",
    "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.0.0.3]:2931",
    "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 29341 closing signal SIGTERM",
    "[2023-03-05 06:40:25,173] [INFO] [launch.py:318:sigkill_handler] Killing subprocess 3698707",
    "torch.distributed.elastic.rendezvous.api.RendezvousClosedError",
    "torch.distributed.DistBackendError: [3] is setting up NCCL communicator and retrieving ncclUniqueId from [0] "
    "via c10d key-value store by key '0', but store->get('0') got error: Connection reset by peer",
    # JAX's coordination service sends every task to another one's logs (real job 074-jax-sigkill)
    "The tasks have crashed. Check the task logs for an earlier error, or scheduler events (e.g. preemption, "
    "eviction) to debug further. [type.googleapis.com/tensorflow.CoordinationServiceError='']",
    "F1204 14:13:38.811184    2882 client.h:80] Terminating process because the JAX distributed service detected "
    "fatal errors. This most likely indicates that another task died; see the other task logs for more details.",
    "E1204 14:13:38.810934    2882 coordination_service_agent.cc:289] Polled an error from coordination service "
    "(this can be an error from this or another task).",
]


@pytest.mark.parametrize("line", CASCADES)
def test_cascade_lines_are_a_class_of_their_own(line: str) -> None:
    assert is_cascade(line)


def test_advice_to_read_other_logs_is_no_payload() -> None:
    """"scheduler events (e.g. preemption, eviction)" is where to look, not what happened."""
    line = CASCADES[-3]
    assert cascade_payload(line) is None


def test_a_cascade_carrying_a_cuda_error_is_read_by_its_payload() -> None:
    line = ("[E ProcessGroupNCCL.cpp:1182] [Rank 3] NCCL watchdog thread terminated with exception: CUDA error: "
            "uncorrectable ECC error encountered")
    assert not is_cascade(line)
    payload = cascade_payload(line)
    assert payload is not None and payload.category == "gpu_hardware"


@pytest.mark.parametrize(("line", "category"), [
    ("OSError: [Errno 5] Input/output error: '/lustre/ckpt/iter_0400/model.pt'", "storage"),
    ("mlx5_core 0000:3b:00.0: mlx5_cmd_out_err: ACCESS_REG(0x805) op_mod(0x1) failed, status bad parameter", "network"),
    ("json.decoder.JSONDecodeError: Expecting ',' delimiter: line 1 column 3051 (char 3050) in sample 88", "data"),
    ("RuntimeError: DataLoader worker (pid 629) is killed by signal: Killed.", "host"),
    ("ImportError: flash_attn_2_cuda.so: undefined symbol: _ZN3c104cuda9SetDeviceEi", "software"),
    ("[W socket.cpp:426] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address already "
     "in use).", "user_config"),
    ("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "oom"),
])
def test_lines_no_rule_knows_are_classified_by_the_component_they_name(line: str, category: str) -> None:
    found = component(line)
    assert found is not None and found.category == category, found


def test_a_line_that_names_no_component_is_left_alone() -> None:
    assert component("step 120 done in 1.4 s") is None
    assert component("Traceback (most recent call last):") is None


def test_xid_catalogue_covers_the_codes_and_reads_caused_by_previous() -> None:
    assert {13, 31, 43, 45, 48, 62, 63, 64, 66, 67, 70, 74, 75, 77, 79, 92, 94, 95, 119, 120, 136, 140, 143, 149, 154,
            158} <= set(CATALOGUE)
    assert all(e.category in ("gpu_hardware", "software", "unknown") for e in CATALOGUE.values())
    line = ("NVRM: Xid (PCI:0000:03:00): 45, pid=4411, name=python, Ch 00000010, Preemptive cleanup, due to previous "
            "errors -- Most likely caused by previous Xid 74")
    assert xid_code(line) == (74, True)
    entry, caused = xid_entry(line)
    assert caused and entry is not None and entry.category == "gpu_hardware" and entry.role == "root"
    entry, caused = xid_entry("NVRM: Xid (PCI:0000:9b:00): 149, pid=1, NETIR_LINK_EVT Fatal error")
    assert not caused and entry is not None and entry.name.startswith("NVLink")
    assert xid_entry("no xid here") == (None, False)


def test_a_launcher_summary_is_read_at_the_failure_it_names_first() -> None:
    # torchelastic lists the other ranks' failures (a peer's lost connection) before its "Root Cause" section
    summary = ("train.py FAILED\nFailures:\n[1]:\n  rank      : 2 (local_rank: 0)\n  exitcode  : -15 (SIGTERM)\n"
               "  traceback : RuntimeError: [pair.cc:537] Read error: Connection reset by peer.\n"
               "Root Cause (first observed failure):\n[0]:\n  rank      : 3 (local_rank: 1)\n"
               "  exitcode  : -9 (pid: 7267)  (SIGKILL)\n  traceback : Signal 9 (SIGKILL) received by PID 7267\n")
    named = first_failure(summary)
    assert named.startswith("Root Cause") and "Connection reset" not in named
    assert not is_cascade(named)
    assert component(named) is not None and component(named).category == "host"  # type: ignore[union-attr]
    assert first_failure("RuntimeError: CUDA error") == "RuntimeError: CUDA error"


# Lines that name their component in the words of their own layer (a container runtime, C stdio, TensorFlow,
# the kernel, a package manager), whatever the program: (line, the category the words name).
WORDED: list[tuple[str, str]] = [
    # a process past its memory limit: the host's memory
    *[(line, "host") for line in (
        # Ray (an RL trainer's TaskRunner actor on Kubernetes): the worker died past the pod's memory limit
        "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: "
        "Worker exits unexpectedly. Worker exits with an exit code None. The worker may have exceeded K8s pod memory "
        "limits.",
        "Exit Reason: User Container killed by docker due to it exceeded the request memory",
    )],
    # a write the file system cut short, in the words of C stdio and the writers built on it: storage
    *[(line, "storage") for line in (
        "/opt/torch/install/bin/luajit: /opt/torch/install/share/lua/5.1/torch/File.lua:210: write error: wrote 170926 "
        "blocks instead of 416138 at /opt/torch/pkg/torch/lib/TH/THDiskFile.c:353",
        "fwrite short write to /scratch/run7/ckpt/model_000900.bin",
        "ERROR: partial write of /nfs/ckpt/shard-03.pt (1048576 of 4194304 bytes)",
    )],
    # TensorFlow's allocator running out: device memory
    *[(line, "oom") for line in (
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
        "shape[64,512,512] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
        "2026-01-03 10:00:01.123: W tensorflow/core/common_runtime/bfc_allocator.cc:456] OOM when allocating tensor",
    )],
    # the host's memory in the words of C++, numpy, Kubernetes, Ray and the kernel
    *[(line, "host") for line in (
        "terminate called after throwing an instance of 'std::bad_alloc'",
        "Unable to allocate 812 MiB for an array with shape (106000, 1000) and data type float64",
        "Last State: Terminated  Reason: OOMKilled",
        "Warning  Evicted  pod/trainer-0  The node was low on memory.",
        "Refer to the documentation on how to address the out of memory issue: "
        "https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html. Consider provisioning more memory "
        "on this node or reducing task parallelism.",
        "python: page allocation failure: order:4, mode:0x40cc0(GFP_KERNEL|__GFP_COMP)",
    )],
    # PaddlePaddle's allocator running out: device memory, though it says "memory error on GPU"
    ("Out of memory error on GPU 1. Cannot allocate 2.500000GB memory on GPU 1, available memory is only "
     "1.250000GB.", "oom"),
    # the kubelet's reason for evicting a pod names what the node ran short of: its memory or its local disk
    ("Message:          The node was low on resource: memory. Threshold quantity: 100Mi, available: 80124Ki.",
     "host"),
    ("The node was low on resource: ephemeral-storage. Container trainer was using 52Gi, which exceeds its request "
     "of 0.", "storage"),
    # the environment the job started in (a package not installed, a build for other GPUs, a per-process limit, a
    # launch without the launcher): configuration
    *[(line, "user_config") for line in (
        "ModuleNotFoundError: No module named 'deepspeed'",
        "/venv/bin/python: Error while finding module specification for 'torch.distributed.run' "
        "(ModuleNotFoundError: No module named 'torch')",
        "NVIDIA H200 with CUDA capability sm_90 is not compatible with the current PyTorch installation.",
        "OSError: Too many open files",
        "RuntimeError: Default process group has not been initialized, please make sure to call init_process_group.",
    )],
]


@pytest.mark.parametrize(("line", "category"), WORDED)
def test_a_lines_own_words_name_its_component(line: str, category: str) -> None:
    got = component(line)
    assert got is not None and got.category == category


def test_memory_errors_on_a_gpu_stay_the_gpus() -> None:
    """Only "out of memory error on GPU" is the allocator's; errors of a GPU's memory are its hardware."""
    for line in ("DCGM reports memory errors on GPU 3", "Uncorrectable memory error in GPU 0 detected"):
        got = component(line)
        assert got is not None and got.category == "gpu_hardware"


def test_a_memory_limit_in_a_configuration_line_is_not_a_kill() -> None:
    """Only going past a limit names host memory; a line that sets one does not."""
    named = component("resources: limits: memory: 2Gi")
    assert named is None or named.category != "host"


def test_a_container_without_the_gpu_runtime_is_configuration() -> None:
    """NVIDIA/gpu-operator#250: the device plugin cannot load NVML because the container runtime was not set up
    with the nvidia runtime; the driver's libraries were never mounted into the container."""
    for line in ("2021/08/27 23:03:50 Failed to initialize NVML: could not load NVML library.",
                 "2021/08/27 23:03:50 If this is a GPU node, did you set the docker default runtime to `nvidia`?"):
        named = component(line)
        assert named is not None and named.category == "user_config"


def test_a_checkpoint_of_another_world_size_is_configuration() -> None:
    named = component("deepspeed.runtime.zero.utils.ZeRORuntimeException: The checkpoint being loaded used a DP "
                      "world size of 256 but the current world size is 2.")
    assert named is not None and named.category == "user_config"


def test_a_bad_alloc_is_not_a_cascade() -> None:
    """``terminate called after throwing`` is what a rank prints when any C++ exception ends it; the exception
    it names is the payload."""
    assert not is_cascade("terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc")


def test_an_import_of_a_name_the_installed_version_lacks_stays_software() -> None:
    got = component("ImportError: cannot import name 'is_torch_tpu_available' from 'transformers'")
    assert got is not None and got.category == "software"


@pytest.mark.parametrize("line", [
    "RuntimeError: CUDA error: unknown error",
    "Check failed: error == cudaSuccess (999 vs. 0) unknown error",
    "luajit: cuda runtime error (30) : unknown error at /tmp/luarocks_cutorch-scm-1-9927/cutorch/lib/THC/THCStorage.c:113",
])
def test_cudas_unknown_error_is_the_gpu(line: str) -> None:
    found = component(line)
    assert found is not None and found.category == "gpu_hardware"


def test_an_unknown_error_of_another_library_is_not_the_gpu() -> None:
    # torch.save on cephfs, a write interrupted by a signal (pytorch/pytorch#8477): the C library's words, no GPU's
    found = component("RuntimeError: Unknown error -1")
    assert found is None or found.category != "gpu_hardware"
