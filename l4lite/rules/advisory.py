"""Advisory lines: a record that says of itself that it is harmless, and the traceback that belongs to it.

Libraries log a caught exception at WARNING with words that tell the reader not to worry ("it's safe to ignore
this error", "this is expected", "will retry"), often followed by the traceback they caught (the next record of
the same stream, or the same record's attached ``exc_text`` in a JSON log). Such a traceback reads like a crash
to a rule that matches any Python exception, yet the program went on. The words are data here (``ADVISORY``), so
one lexicon serves the rule detector (the hit is a symptom, never a root) and the component detector (the line
is not a fault of its node).
"""

from __future__ import annotations

import re

from l4lite.records import Record
from l4lite.rules.word_gate import WordGate

# Phrases a logger uses to say that what it reports needs no action. Kept to phrases about the line itself: "will
# retry" is advisory, a bare "retrying" is not (a retry loop that ends in a failure reports the failure anyway,
# but many root lines of network faults say "retrying" while they fail).
ADVISORY = re.compile(
    r"\b(?:"
    r"(?:it'?s|it is|this is|is|are) (?:safe|ok(?:ay)?) to ignore"
    r"|(?:can|may|could) (?:be )?safely (?:be )?ignored?"
    r"|(?:can|may|could) be ignored"
    r"|you (?:can|may|could) (?:safely )?ignore"
    r"|(?:please )?ignore this (?:warning|message|error)"
    r"|(?:this|which) is (?:expected|harmless|benign|normal)(?! to fail)"
    r"|(?:is|are) (?:harmless|benign)"
    r"|(?:this is )?not an error"
    r"|nothing to worry about"
    r"|no action (?:is )?(?:needed|required)"
    r"|will (?:be )?retr(?:y|ied)"
    # a socket that could not use one address family and goes on with the other (torch's c10d store server:
    # "Failed to bind to ipv6 address, trying ipv4"): the bind it reports failed is not the one it ends with
    r"|(?:trying|falling back to|fall back to) ipv[46]"
    r")\b",
    re.IGNORECASE,
)
# a word every match of each alternative holds (``rules.word_gate``): the regex is asked only of lines with one
ADVISORY_GATE = WordGate(ADVISORY, ("ignore", "expected", "harmless", "benign", "normal", "not an error",
                                    "nothing to worry about", "no action", "retr", "ipv"))
HEAD_CHARS = 1000  # the advisory words stand in the message, not deep in an attached traceback
TRACEBACK = "Traceback (most recent call last):"


def _head(record: Record) -> str:
    """The part of a record that speaks for itself: its first line (a JSON record's message), not its traceback."""
    text = record.text
    cut = text.find(TRACEBACK)
    if cut >= 0:
        text = text[:cut]
    return text[:HEAD_CHARS]


def says_harmless(record: Record) -> bool:
    """The record tells its reader that what it reports needs no action."""
    return ADVISORY_GATE.search(_head(record)) is not None


def is_traceback(record: Record) -> bool:
    """The record is a Python traceback on its own (its first line is the traceback's header)."""
    return record.text.lstrip().startswith(TRACEBACK)


def follows_advisory(prev: Record | None, record: Record) -> bool:
    """``record`` is the traceback an advisory line just before it in the same stream caught: same file, same rank,
    the next record (no line between them)."""
    return (prev is not None and prev.file == record.file and prev.rank == record.rank
            and prev.end_line < record.line <= prev.end_line + 1
            and is_traceback(record) and says_harmless(prev))


def advisory(prev: Record | None, record: Record) -> bool:
    """The record, or the record it is the traceback of, says that it is harmless."""
    return says_harmless(record) or follows_advisory(prev, record)
