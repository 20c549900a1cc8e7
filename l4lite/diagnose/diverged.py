"""Why the training diverged, when a line of the job says: an error that names a component near the divergence.

A health signal (the loss became NaN, the gradient norm became NaN, the loss jumped and stayed up) says that the
numbers went wrong, not why. Often the why is a numerical one (a learning rate, fp16 overflow), and the job's
lines say no more. But when the job also printed, around the divergence, an error line that names another
component (a truncated data record the reader reported, an illegal memory access in an attention kernel), that
line is the failure the numbers followed: a corrupted batch or a kernel writing garbage makes the loss jump or
turn NaN, and the thread that finds the cause names the record or the kernel, not the learning rate.

Only lines that name their component by words or names count: a rule's root or symptom that is not a peer's
cascade nor a generic traceback signature, or an error line of the component detector (not a guess of the learned
model); not a line training outlived or the job always prints; within minutes of the signal
(``timeline.close_to``). A line naming the numbers themselves (``numerical``) or nothing leaves the signal as it is.
"""

from __future__ import annotations

from l4lite.detect.base import Finding
from l4lite.detect.components import ComponentDetector
from l4lite.diagnose.timeline import close_to, finding_key
from l4lite.rules.components import LEARNED_WORDS, first_failure, is_cascade

SIGNALS = frozenset({"nan", "loss_spike", "grad_explosion"})  # the health signals of numbers going wrong


def _names_component(f: Finding, roles: dict[int, str]) -> bool:
    """A line that names what broke in words: a specific rule's line, or an error line the lexicon places."""
    if roles.get(id(f)) not in ("root", "symptom") or f.category in ("numerical", "unknown") or not f.records:
        return False
    if f.data.get("survived") or f.data.get("in_baseline") or is_cascade(first_failure(f.records[0].text)):
        return False
    if f.detector == ComponentDetector.name:
        return f.severity == "error" and f.data.get("component") != LEARNED_WORDS
    named = f.data.get("component")  # a generic signature's line names its component by its words
    return f.detector == "rules" and (not f.data.get("fallback") or bool(named) and named != LEARNED_WORDS)


def diverged_because(findings: list[Finding], roles: dict[int, str], primary: Finding) -> Finding | None:
    """The earliest line naming another component near a health signal that leads; None (see the module)."""
    if primary.detector != "health" or primary.data.get("signal") not in SIGNALS:
        return None
    found = [f for f in findings if f is not primary and _names_component(f, roles) and close_to(f, primary)]
    return min(found, key=finding_key) if found else None
