"""The syslog times a window's clocks read (``l4lite.ingest.clocks``) put into the timestamp parser's memos at once.

``TimestampParser.read_syslog`` remembers each new text's time and its minute's start one line at a time, with
a check of each memo's bound before every entry (a full memo is emptied). A run of a storage or kernel log hands
it hundreds of texts, most of them new seconds: where neither memo can reach its bound within the run, the same
entries go in with one ``dict.update`` each, and the line-by-line path is left for the run that empties one.
"""

from __future__ import annotations

from dataclasses import dataclass

TIME_MEMO = 65536  # entries of the parser's text -> time memo before it is emptied (``TimestampParser._remember``)
MINUTE_MEMO = 4096  # entries of its minute memo before it is emptied


@dataclass(frozen=True, slots=True)
class SyslogBatch:
    """The syslog times of one run in line order: each text, its time, its minute's start; one year for all."""

    texts: list[str]
    times: list[float]
    bases: list[float]
    year: int


def remember_at_once(cache: dict[str, float], minutes: dict[str, tuple[int, float]], batch: SyslogBatch) -> bool:
    """Put ``batch``'s new texts into ``cache`` (text -> time) and their minutes into ``minutes`` (minute text ->
    (year, start)) as one by one in order, where neither memo would be emptied on the way; False (nothing
    changed) where one would. A text seen before, in the memo or earlier in the batch, changes nothing: only a
    text's first new line is written, and a minute takes the start of its last such line."""
    texts = batch.texts
    fresh = [k for k, text in enumerate(texts) if text not in cache]
    if not fresh:
        return True
    first = dict(zip([texts[k] for k in reversed(fresh)], reversed(fresh), strict=True))  # text -> first line
    rows = sorted(first.values()) if len(first) < len(fresh) else fresh
    minute_keys = [texts[k][:-2] for k in rows]
    if len(cache) + len(rows) > TIME_MEMO or len(minutes) + len(set(minute_keys).difference(minutes)) > MINUTE_MEMO:
        return False
    times, bases, year = batch.times, batch.bases, batch.year
    cache.update(zip([texts[k] for k in rows], [times[k] for k in rows], strict=True))
    minutes.update(zip(minute_keys, [(year, bases[k]) for k in rows], strict=True))
    return True
