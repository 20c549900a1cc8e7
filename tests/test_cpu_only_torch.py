"""A PyTorch built without CUDA where the job asks for a GPU (``AssertionError: Torch not compiled with CUDA
enabled``): the node's installation, fixed by installing a CUDA build, as a build without kernels for the GPU's
architecture is; and a device that cannot be opened, so the job was still setting up (real job 194: the second
node's job environment names a CUDA device, its torch is the CPU wheel; both its ranks fail moving the model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from l4lite.api import analyze
from l4lite.rules.exceptions import named
from l4lite.scan.phases import evidence_phase

REPO = Path(__file__).resolve().parents[1]
JOB = REPO / "fixtures" / "real_jobs" / "194-ddp-device_missing"
TRACE = """Traceback (most recent call last):
  File "/opt/run/train.py", line 188, in main
    net = net.to(torch.device(os.environ["DEVICE"], int(os.environ["LOCAL_RANK"])))
  File "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1369, in convert
    return t.to(
  File "/venv/lib/python3.11/site-packages/torch/cuda/__init__.py", line 522, in _lazy_init
    raise AssertionError("Torch not compiled with CUDA enabled")
AssertionError: Torch not compiled with CUDA enabled"""


def test_a_torch_built_without_cuda_is_the_node_s_installation() -> None:
    found = named(TRACE)
    assert found is not None and found.category == "user_config"


def test_a_torch_built_without_cuda_fails_while_the_job_sets_up() -> None:
    assert evidence_phase(TRACE) == "init"


@pytest.mark.skipif(not JOB.is_dir(), reason="real job 194 not present")
def test_the_node_with_a_cpu_only_torch_is_read_as_its_setup() -> None:
    inc = analyze([str(JOB)])
    assert inc.suspects[0].node == "dgx-b200-11"
    assert (inc.category, inc.phase) == ("user_config", "init")
