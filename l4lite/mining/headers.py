"""A file's own header, learnt from its first messages, so that only what follows it is mined.

Ingest splits off the headers it knows (timestamps, syslog host and program, level markers, stream prefixes).
Systems print others: BGL's nine columns before the level, HDFS's ``081109 203615 148 INFO dfs.DataNode$...:``,
Spark's ``17/06/09 20:10:40 INFO executor.Backend:``, Hadoop's ``[main] org.apache...MRAppMaster:``. Left in the
message, those columns make Drain's first tokens the same for every event of a file and dilute its similarity
with constant or per-line values, so events merge (raw Loghub lines: GA 0.60 against 0.90 on the contents).

The header is learnt, not known: over a file's first messages, the token where it ends is the one found at the
same place in most of them, a level word (``INFO``, ``FATAL``...) followed by the component tokens that usually
follow a level (``name:``, ``[thread]``, ``a.dotted.Name``, ``-``), or else a token ending in ``:`` (a
``program[pid]:``), or else the last column holding a whole number in (nearly) every message (HPC's epoch
seconds and flag, of any width and sign) when the text after it varies. A message is cut only where its own
tokens have that anchor, so lines of another layout in the same file stay whole. Files with no such anchor are
not cut. Where some cut messages start with context columns (a client address, a bracketed object such as
``[instance: 3edec1e4-...]``) and then a word, those are cut too: Drain picks a message's tree branch by its
first token, and an address or an object id there puts every request or every object's events in one branch,
where one differing word (``"GET``/``"POST``, ``Terminating``/``Claim``) is too little to keep them apart.

``l4lite parse`` mines each message without its file's learnt header (``cut_by_file``); the record keeps its
whole message. The scan does not apply it yet: there the template is also the key of the rules' and detectors'
per-template statistics, and a changed key would move their baselines. Trainer and launcher formats learn no cut
(an anchor at their first token, a number after the cut, a constant library word before it all veto one), so
their lines keep the per-shape fast path.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

from l4lite.ingest.shaperun import ShapeRun
from l4lite.records import Record

LEVEL_WORDS = frozenset(["INFO", "WARN", "WARNING", "ERROR", "FATAL", "SEVERE", "DEBUG", "TRACE", "NOTICE",
                         "CRITICAL", "FAILURE", "CRIT", "ERR", "EMERG", "ALERT"])
# a token: a bracketed group with what sticks to it ("[QuorumPeer[myid=1]/0:...@774]"), or a run of non-blanks
_TOKEN = re.compile(r"\[[^\]]*\]\S*|\S+")
_IDENT = re.compile(r"[A-Za-z_][\w$]*(?:\.[\w$]+)+")  # org.apache.hadoop.Foo, dfs.DataNode$PacketResponder
REACH = 10  # an anchor must be among a message's first tokens
LEVEL_SHARE = 0.8  # of the learning messages that must have the level word at the same place
COLON_SHARE = 0.6  # and the "program:" token
AFTER_LEVEL = 3  # component tokens after a level word, at most
NUMBER_SHARE = 0.95  # of the learning messages with a whole number in a column
WORD_SHARE = 0.5  # of the cut messages whose text starts with a word
FIRST_SHARE = 0.9  # at most this share of the messages cut after number columns start with one token
_WORD = re.compile(r"""[(\["']?[A-Za-z]{2}""")
_NUMBER = re.compile(r"[-+]?\d+")
# a client address before a message's text (OpenStack's ``10.11.10.1 "GET ...``): IPv4 with an optional port,
# or a comma-separated list of them; not ``name:digits``, which is as often a source file and line
# (NCCL's ``channel.cc:52``) as a host and port
_ADDRESS = r"(?:\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?,?)+"
# context columns a header may end with on some messages only: client addresses and bracketed fields
# (OpenStack's ``[instance: 3edec1e4-...]``), each followed by a blank
_CONTEXT = re.compile(r"(?:(?:" + _ADDRESS + r"|\[[^\]]*\])\s+)+")
CONTEXT_SHARE = 0.1  # of the cut messages that start with context columns and then a word


@dataclass(frozen=True)
class HeaderCut:
    """Where a file's messages start: after ``cut`` tokens, for messages whose token ``anchor`` is a level word
    (``level``) or ends in ``:``. ``cut == 0`` cuts nothing."""

    cut: int = 0
    anchor: int = -1
    level: bool = False
    number: bool = False  # the anchor is a whole number (HPC's epoch seconds and flag columns)
    context: bool = False  # context columns (addresses, bracketed fields) that start a cut message are cut too

    def strip(self, message: str) -> str:
        """The message without the learnt header, or the whole message when its tokens do not have the anchor."""
        if not self.cut:
            return message
        anchor_ok = False
        for i, m in enumerate(_TOKEN.finditer(message)):
            if i == self.anchor:
                token = m.group()
                if self.number:
                    anchor_ok = _NUMBER.fullmatch(token) is not None
                else:
                    anchor_ok = token in LEVEL_WORDS if self.level else token.endswith(":")
                if not anchor_ok:
                    return message
            if i == self.cut:
                if not anchor_ok:
                    return message
                start = m.start()
                if self.context:
                    c = _CONTEXT.match(message, start)
                    if c is not None and c.end() < len(message):
                        start = c.end()
                return message[start:]
        return message


def _component(token: str) -> bool:
    return token.endswith(":") or token == "-" or (token.startswith("[") and token.endswith("]")) \
        or _IDENT.fullmatch(token) is not None


def learn_header(messages: Sequence[str]) -> HeaderCut:
    """The header of a file from its first messages (a few hundred are plenty), or no cut when what it would
    cut looks like a message's own text: an anchor at the first token (``NVRM:``, ``LustreError:``, a JSON
    line's ``{"time":``) is a program tag or a field, not a header; and what follows a header starts with a
    word (``Changing modify acls``), or with a client address and then a word (``10.11.10.1 "GET ...``), not
    with a number (``Epoch 0: 0%|``, ``step: 51 loss: ...``)."""
    cut = _anchored(messages)
    if not cut.cut or cut.anchor < 1:
        cut = _numbered(messages)
    if not cut.cut:
        return cut
    cut_ones = [(m, rest) for m, rest in ((m, cut.strip(m)) for m in messages) if rest is not m]
    contexts = sum(1 for _, rest in cut_ones if _after_context(rest) is not rest)
    words = sum(1 for _, rest in cut_ones if _WORD.match(_after_context(rest)))
    if not cut_ones or words < WORD_SHARE * len(cut_ones):
        return HeaderCut()
    if contexts >= CONTEXT_SHARE * len(cut_ones):
        cut = replace(cut, context=True)
    heads = {m[:len(m) - len(rest)].split()[0] for m, rest in cut_ones if m[:len(m) - len(rest)].strip()}
    if cut.anchor == 1 and len(heads) == 1 and heads.pop().isalpha():
        return HeaderCut()  # "NCCL INFO ...": a library's name before its level is part of the message
    if cut.number:
        # a header is followed by the varied text of many events; "epoch 3 step 120 loss 2.31" is followed by
        # one constant word, the rest of a single event's text
        firsts = Counter(rest.split(None, 1)[0] if rest.strip() else "" for _, rest in cut_ones)
        if firsts.most_common(1)[0][1] > FIRST_SHARE * len(cut_ones):
            return HeaderCut()
    return cut


def _after_context(text: str) -> str:
    """The text after leading context columns when a word follows them, or the text itself."""
    m = _CONTEXT.match(text)
    if m is None or not _WORD.match(text, m.end()):
        return text
    return text[m.end():]


def _numbered(messages: Sequence[str]) -> HeaderCut:
    """A header of columns ending with a whole number in (nearly) every message: HPC's ``366463 node-122
    unix.hw state_change.unavailable 1085084674 1 ...`` (its epoch seconds and a flag of 1, 0 or -1)."""
    tokens = [m.split(None, REACH)[:REACH] for m in messages]
    n = len(tokens)
    if not n:
        return HeaderCut()
    last = HeaderCut()
    for i in range(1, REACH):
        count = sum(1 for ts in tokens if len(ts) > i and _NUMBER.fullmatch(ts[i]) is not None)
        if count >= NUMBER_SHARE * n:
            last = HeaderCut(i + 1, i, False, True)
    return last


def _anchored(messages: Sequence[str]) -> HeaderCut:
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


LEARN_MESSAGES = 200  # a file's header is learnt from its first messages


def _run_messages(run: ShapeRun, limit: int) -> list[str]:
    table = run.table
    return [text[table[x].msg_start:table[x].msg_end] for text, x in zip(run.texts[:limit], run.shapes[:limit],
                                                                          strict=False)]


def cut_by_file(items: Iterable[Record | ShapeRun],
                learn: int = LEARN_MESSAGES) -> Iterator[tuple[Record | ShapeRun, HeaderCut]]:
    """Each record or run with its file's header, learnt from the file's first ``learn`` messages (records and
    the lines of runs alike, so that reading in runs or line by line learns the same header). Items keep their
    order; those of a file still being learnt wait, at most ``learn`` messages' worth."""
    cuts: dict[str, HeaderCut] = {}
    waiting: list[Record | ShapeRun] = []
    messages: list[str] = []
    current = None

    def settle() -> Iterator[tuple[Record | ShapeRun, HeaderCut]]:
        cut = cuts[current] = learn_header(messages)  # type: ignore[index]
        for item in waiting:
            yield item, cut
        waiting.clear()
        messages.clear()

    for item in items:
        file = item.file
        if waiting and file != current:
            yield from settle()
        cut = cuts.get(file)
        if cut is not None:
            yield item, cut
            continue
        current = file
        waiting.append(item)
        if type(item) is ShapeRun:
            messages += _run_messages(item, learn - len(messages))
        else:
            messages.append(item.message)
        if len(messages) >= learn:
            yield from settle()
    if waiting:
        yield from settle()
