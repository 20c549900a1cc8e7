"""Was a generic exception raised while the rank read its data, or while its model ran?

An exception no signature knows reads as ``software``: the code failed. Its words often cannot tell more
("stack expects each tensor to be equal size", "expected sequence of length 32 at dim 1"): the same message comes
from a model's own ``torch.stack`` and from the DataLoader collating a batch. Where it was raised does tell: the
innermost frames of its traceback. Walked from the innermost frame outwards, the first frame that belongs either to
loading samples (a dataset's ``__getitem__``, the DataLoader's iterator, fetcher and collate functions, a data
library) or to running the model (``torch.nn`` modules, autograd, an optimizer, a collective) names the part the
error came from; frames of neither kind (the standard library, a helper of the user's) are passed over. The
DataLoader's iterator also raises when a batch never comes (``DataLoader timed out after 10 seconds``: a worker
stuck in a read); its workers' deaths (a signal, the OOM killer) have signatures of their own and never reach
this reading, which is for an exception no signature knows.

A sample that one rank's shard held and no other rank's did is that rank's data, not the job's code: every rank
runs the same collate function on its own batches, and the others trained on. ``diagnose.localize`` reads a
fallback ``software`` verdict as ``data`` only when the error was raised in data-loading frames and one process
alone printed it while the other nodes lost it (``lone.lone_fault``). The same holds when who printed the error
already placed it (``spatial.node_setup``: the ranks of one node alone, the others only lost them;
``spatial.rank_own``: one rank, while its node-mate only lost it): raised in data-loading frames, a generic
exception (a ``ValueError`` from a reader, which a signature of any code's bug matched, or no signature at all) is
what that node's or rank's samples held (a shard on the node's local disk, a record of the rank's), not the job's
code or configuration, which every rank runs alike: ``data``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from l4lite.detect.base import Finding
from l4lite.diagnose.lone import lone_fault
from l4lite.rules.components import LEARNED_WORDS
from l4lite.scan.scanner import JobScan

# a traceback frame: its file and its function ("File "/x/y.py", line 12, in collate")
_FRAME = re.compile(r'File \\?"([^"\n\\]+)\\?", line \d+, in ([\w<>.]+)')  # also escaped in error.json
# loading samples: a dataset's item access, the DataLoader's fetch and collate, data libraries' own files, and an
# installed framework's own data package (``megatron/core/datasets/indexed_dataset.py``, ``transformers/data/``),
# which is read before the framework's model frames below
_DATA_FILE = re.compile(r"/torch/utils/data/(?:_utils/(?:collate|fetch)|dataset|dataloader)\.py$|"
                        r"/site-packages/(?:datasets|webdataset|torchdata|streaming|ffcv|dali)/|"
                        r"/site-packages/[\w.]+/(?:[\w.]+/)*(?:datasets?|data)/[\w.]+\.py$")
_DATA_FUNC = re.compile(r"^(?:__getitem__|__getitems__|collate\w*|\w*_collate\w*|collate_fn)$")
# running the model: modules, autograd, optimizers, collectives
_MODEL_FILE = re.compile(r"/torch/(?:nn|autograd|optim|distributed|_tensor\.py|functional\.py)|"
                         r"/site-packages/(?:transformers/models|deepspeed/runtime|megatron)/")
_MODEL_FUNC = re.compile(r"^(?:forward|backward|_call_impl|_wrapped_call_impl|training_step|train_step|step)$")


def raised_loading_data(text: str) -> bool:
    """True when the innermost frame of ``text``'s traceback that is a data-loading or a model frame is a
    data-loading one (see the module); False when it is a model frame or the text holds no such frame."""
    for m in reversed(list(_FRAME.finditer(text))):
        path, func = m.group(1), m.group(2)
        if _DATA_FILE.search(path) or _DATA_FUNC.match(func):
            return True
        if _MODEL_FILE.search(path) or _MODEL_FUNC.match(func):
            return False
    return False


def own_part_s_data(findings: Sequence[Finding], primary: Finding, category: str, placed: bool) -> bool:
    """Whether a generic exception that who printed it placed on one node or one rank (``placed``:
    ``spatial.node_setup`` or ``spatial.rank_own`` named it) was raised while loading samples: that part's data
    (see the module)."""
    if not placed or category not in ("software", "user_config") or primary.category != category:
        return False
    if not (primary.data.get("fallback") or primary.data.get("generic_rule")):
        return False
    if primary.data.get("component") not in (None, LEARNED_WORDS):  # its words name what failed (a limit, a file)
        return False
    return any(raised_loading_data(r.text) for r in primary.records)


def read_as_data(scan: JobScan, findings: Sequence[Finding], primary: Finding, category: str, placed: bool) -> bool:
    """One rank's data (``one_rank_s_data``), or the data of the node or rank who printed it placed it on
    (``own_part_s_data``)."""
    return one_rank_s_data(scan, findings, primary, category) or own_part_s_data(findings, primary, category, placed)


def one_rank_s_data(scan: JobScan, findings: Sequence[Finding], primary: Finding, category: str) -> bool:
    """Whether a ``software`` verdict from a generic exception (no signature knew it) is one rank's data: the
    exception was raised while that rank loaded samples, and it alone printed it while the other nodes only
    lost it (see the module)."""
    if category != "software" or not primary.data.get("fallback") or primary.category != "software":
        return False
    if not any(raised_loading_data(r.text) for r in primary.records):
        return False
    return lone_fault(scan, findings, primary)
