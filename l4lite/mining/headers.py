"""A file's own header, learnt from its first messages, so that only what follows it is mined.

Ingest splits off the headers it knows (timestamps, syslog host and program, level markers, stream prefixes).
Systems print others: BGL's nine columns before the level, HDFS's ``081109 203615 148 INFO dfs.DataNode$...:``,
Spark's ``17/06/09 20:10:40 INFO executor.Backend:``, Hadoop's ``[main] org.apache...MRAppMaster:``. Left in the
message, those columns make Drain's first tokens the same for every event of a file and dilute its similarity
with constant or per-line values, so events merge (raw Loghub lines: GA 0.60 against 0.90 on the contents).

The header is learnt, not known: over a file's first messages, the token where it ends is the one found at the
same place in most of them, a level word (``INFO``, ``FATAL``...) followed by the component tokens that usually
follow a level (``name:``, ``[thread]``, ``a.dotted.Name``, ``-``), or else a token ending in ``:`` (a
``program[pid]:``). A message is cut only where its own tokens have that anchor, so lines of another layout in the
same file stay whole. Files with no such anchor are not cut.

Not yet applied by ``l4lite parse`` or the scan (``benchmarks/parsing_accuracy.py --raw`` measures it): the
``program:`` anchor also fires on a trainer's progress line (``iteration 94/ 500000 | consumed samples: ...``)
and would cut the text the metric parser and the rules read, so applying it wants the cut kept apart from the
record's message (a template key only).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

LEVEL_WORDS = frozenset(["INFO", "WARN", "WARNING", "ERROR", "FATAL", "SEVERE", "DEBUG", "TRACE", "NOTICE",
                         "CRITICAL", "FAILURE", "CRIT", "ERR", "EMERG", "ALERT"])
# a token: a bracketed group with what sticks to it ("[QuorumPeer[myid=1]/0:...@774]"), or a run of non-blanks
_TOKEN = re.compile(r"\[[^\]]*\]\S*|\S+")
_IDENT = re.compile(r"[A-Za-z_][\w$]*(?:\.[\w$]+)+")  # org.apache.hadoop.Foo, dfs.DataNode$PacketResponder
REACH = 10  # an anchor must be among a message's first tokens
LEVEL_SHARE = 0.8  # of the learning messages that must have the level word at the same place
COLON_SHARE = 0.6  # and the "program:" token
AFTER_LEVEL = 3  # component tokens after a level word, at most


@dataclass(frozen=True)
class HeaderCut:
    """Where a file's messages start: after ``cut`` tokens, for messages whose token ``anchor`` is a level word
    (``level``) or ends in ``:``. ``cut == 0`` cuts nothing."""

    cut: int = 0
    anchor: int = -1
    level: bool = False

    def strip(self, message: str) -> str:
        """The message without the learnt header, or the whole message when its tokens do not have the anchor."""
        if not self.cut:
            return message
        anchor_ok = False
        for i, m in enumerate(_TOKEN.finditer(message)):
            if i == self.anchor:
                token = m.group()
                anchor_ok = token in LEVEL_WORDS if self.level else token.endswith(":")
                if not anchor_ok:
                    return message
            if i == self.cut:
                return message[m.start():] if anchor_ok else message
        return message


def _component(token: str) -> bool:
    return token.endswith(":") or token == "-" or (token.startswith("[") and token.endswith("]")) \
        or _IDENT.fullmatch(token) is not None


def learn_header(messages: Sequence[str]) -> HeaderCut:
    """The header of a file from its first messages (a few hundred are plenty)."""
    tokens = [_TOKEN.findall(m)[:REACH + AFTER_LEVEL + 1] for m in messages]
    n = len(tokens)
    if not n:
        return HeaderCut()
    levels = Counter(next((i for i, t in enumerate(ts[:REACH]) if t in LEVEL_WORDS), -1) for ts in tokens)
    at, count = levels.most_common(1)[0]
    if at >= 0 and count >= LEVEL_SHARE * n:
        cut = at + 1
        for _ in range(AFTER_LEVEL):
            if sum(1 for ts in tokens if len(ts) > cut and _component(ts[cut])) < LEVEL_SHARE * n:
                break
            cut += 1
        return HeaderCut(cut, at, True)
    colons = Counter(next((i for i, t in enumerate(ts[:REACH]) if t.endswith(":")), -1) for ts in tokens)
    at, count = colons.most_common(1)[0]
    if at >= 0 and count >= COLON_SHARE * n:
        return HeaderCut(at + 1, at, False)
    return HeaderCut()
