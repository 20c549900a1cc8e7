"""Where a generic exception was raised: the innermost library frames of its traceback, as data.

A ``RuntimeError``, ``ValueError`` or ``OSError`` says little by its name, and its message often names no
component ("unable to write to file </torch_1394_2747491098>"). The traceback's frames still say which library
raised it, and some libraries do one thing: ``torch/multiprocessing/reductions.py`` passes tensors between
processes through ``/dev/shm``, ``torch/serialization.py`` writes and reads checkpoint files, the DataLoader's
``collate.py`` stacks the samples of a batch, a configuration loader reads the job's settings.

``frame_component`` reads the innermost frames that live in an installed package (``site-packages``,
``dist-packages``, the standard library), skipping the user's own files and the wrappers every call passes
through, and returns the category the first listed one gives. It is asked only where the line's own words name
no component (``detect.rules``), so it never overrules what the exception says of itself.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class Frame(NamedTuple):
    """The category an innermost library frame gives, and the frame's path as it decided."""

    category: str
    path: str


_FRAME = re.compile(r'File "(?P<path>[^"\n]{1,400})", line \d+')
# a frame of an installed package or of the standard library (the user's own files are neither)
_LIBRARY = re.compile(r"[/\\](?:site-packages|dist-packages|lib[/\\]python\d[\d.]*)[/\\]", re.I)
# frames every call passes through: they say nothing of what was being done
_WRAPPER = re.compile(r"[/\\](?:torch[/\\]nn[/\\]modules[/\\]module\.py|torch[/\\]_ops\.py|functools\.py|"
                      r"threading\.py|runpy\.py|contextlib\.py|torch[/\\]utils[/\\]_contextlib\.py|"
                      r"torch[/\\]_dynamo[/\\]|torch[/\\]autograd[/\\]function\.py)", re.I)

# (category, path pattern): one library, one job.
FRAME_COMPONENTS: tuple[tuple[str, str], ...] = (
    # tensors handed between processes (DataLoader workers, torch.multiprocessing) go through /dev/shm: a failure
    # there is the container's shared-memory size, as NCCL's shm transport and a worker's bus error are
    ("user_config", r"torch[/\\]multiprocessing[/\\]reductions\.py"),
    # checkpoint files written and read
    ("storage", r"torch[/\\]serialization\.py|[/\\]safetensors[/\\]|[/\\](?:fsspec|s3fs|gcsfs)[/\\]"),
    # the DataLoader stacking the samples of a batch: samples of unequal shapes or types
    ("data", r"torch[/\\]utils[/\\]data[/\\]_utils[/\\]collate\.py|[/\\]webdataset[/\\]"),
    # the job's settings: a model configuration, command-line arguments, a composed configuration
    ("user_config", r"transformers[/\\](?:configuration_utils\.py|models[/\\]auto[/\\]configuration_auto\.py)|"
                    r"[/\\]argparse\.py|[/\\](?:hydra|omegaconf)[/\\]"),
    # the rendezvous and its store: connecting the job's processes to each other
    ("network", r"torch[/\\]distributed[/\\](?:rendezvous\.py|elastic[/\\]rendezvous[/\\]|"
                r"elastic[/\\]utils[/\\]store\.py)"),
)
_COMPILED = tuple((cat, re.compile(pat, re.I)) for cat, pat in FRAME_COMPONENTS)
INNERMOST = 3  # library frames read, from the innermost out


def library_frames(text: str) -> list[str]:
    """The paths of the frames of ``text`` in installed packages, innermost first, wrappers left out."""
    paths = [m.group("path") for m in _FRAME.finditer(text[:20000])]
    return [p for p in reversed(paths) if _LIBRARY.search(p) and not _WRAPPER.search(p)]


def frame_component(text: str) -> Frame | None:
    """The category the innermost listed library frame of ``text`` gives; None when none of the ``INNERMOST``
    innermost library frames is listed (or the text has no frames)."""
    for path in library_frames(text)[:INNERMOST]:
        for cat, pat in _COMPILED:
            m = pat.search(path)
            if m is not None:
                return Frame(cat, m.group(0).strip("/\\"))
    return None
