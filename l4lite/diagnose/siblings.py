"""A root on no node beside a job whose lines name one node: that node's, unless its file is another node's copy.

When the job's lines name one host only, a node-scoped root whose lines no node holds is read as that host's
(a launcher's file beside a single node's folder). A file that is the same file as one of that node's, in
another place (``part-0002/console.log`` beside ``part-0001/console.log``, ``logs/007-console.log`` beside
``logs/000-console.log``, ``train-4242-1.out`` beside ``train-4242-0.out``), is the same writer on another
machine: a second node whose lines name no host (a preempted node's agent, stopped before it said where it
ran). Its root is then no known node's; naming the one host the lines name would blame the node that survived.
The same holds when two torchelastic agents ran at once (``ingest.agents``): the job has two nodes, named or not.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from l4lite.detect.base import Finding

_DIGITS = re.compile(r"\d+")


def file_shape(rel: str) -> str:
    """A file's path with its numbers folded: the same file of another node, attempt or task reads alike."""
    return _DIGITS.sub("0", rel.replace("\\", "/"))


def sibling_file(findings: Sequence[Finding], primary: Finding, node: str) -> bool:
    """Whether ``primary``'s lines, on no node, sit in a file that is a sibling of one of ``node``'s files (the
    same path with other numbers), while none of its lines is ``node``'s."""
    mine = {r.file for r in primary.records if r.node is None}
    if not mine or any(r.node == node for r in primary.records):
        return False
    theirs = {r.file for f in findings for r in f.records if r.node == node} - mine
    shapes = {file_shape(rel) for rel in theirs}
    return any(file_shape(rel) in shapes for rel in mine)


def one_node_logged(scan_info: Mapping[str, Any], findings: Sequence[Finding], primary: Finding, real: Sequence[str]) -> bool:
    """Whether a fault on no node is the node's that logged it because the job has one node (or none named): not
    when ``primary``'s file is another node's copy of one of that node's files (``sibling_file``), nor when two
    torchelastic agents ran at once (``agents_at_once`` in the scan's info: a preempted node whose lines name no
    host, merged with its peer's)."""
    return len(real) <= 1 and scan_info.get("agents_at_once", 0) <= 1 \
        and not (real and sibling_file(findings, primary, real[0]))
