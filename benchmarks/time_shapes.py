"""More time shapes of real archives (``benchmarks/archive_variants.py`` runs them beside
``time_transforms.py``'s): a root node's kernel log in syslog's yearless format across New Year, a file stamped
in plain epoch seconds (``ts '%.s'``, a C++ logger) beside ISO files, a healthy node's ``journalctl -o
short-monotonic`` capture (seconds since a boot nothing dates), and a 12-hour clock without its AM/PM.
Each keeps the job's verdict.
"""

from __future__ import annotations

from datetime import datetime

from archive_transforms import Job, Out, Variant, edit_file, identity
from time_transforms import (
    _clock_target,
    _heads,
    _job_times,
    _moved,
    _on_node,
    _peer,
    _restamp,
    syslog_stamp,
)


def _root_node(job: Job) -> str:
    roots = [r.split("/", 1)[0] for r in job.root_files if "/" in r]
    return roots[0] if roots else ""


def new_year_root(job: Job) -> Variant:
    """The whole job moved so that the middle of its span is New Year's midnight, the root evidence's file in
    rsyslog's yearless format (``Dec 31 23:59:58 host python[4242]: ``, then ``Jan  1 00:00:01``)."""
    times = _job_times(job)
    if not times:
        return identity(job)
    mid = times[0] + (times[-1] - times[0]) / 2
    delta = datetime(mid.year + 1, 1, 1, tzinfo=mid.tzinfo) - mid
    v = _moved(job, type(delta)(seconds=int(delta.total_seconds())), mid.year)
    target = _clock_target(job).rel
    host = _root_node(job) or "node"
    for o in v.outs:
        if o.rel == target and o.raw is None:
            o.lines = [_restamp(ln, syslog_stamp(host)) for ln in o.lines]
    return v


def epoch_prefix(job: Job) -> Variant:
    """The root evidence's file stamped in epoch seconds with microseconds (moreutils ``ts '%.s'``:
    ``1796341034.200123 INFO ...``) beside the job's ISO files."""
    def stamp(t: datetime) -> bytes:
        return f"{t.timestamp():.6f} ".encode()

    def edit(o: Out) -> None:
        o.lines = [_restamp(ln, stamp) for ln in o.lines]
    return edit_file(job, _clock_target(job), edit)


def journal_monotonic(job: Job) -> Variant:
    """A healthy node's files as ``journalctl -o short-monotonic`` prints them (``[ 8123.456789] host
    python[4242]: ``): seconds since a boot two days before the job that no line of the job dates."""
    node = _peer(job)
    times = _job_times(job)
    if not times or not node:
        return identity(job)
    boot = times[0].timestamp() - 2 * 86400 - 1234.5

    def stamp(t: datetime) -> bytes:
        return f"[{t.timestamp() - boot:12.6f}] {node} python[4242]: ".encode()

    def edit(o: Out) -> None:
        o.lines = [_restamp(ln, stamp) for ln in o.lines]
    return _on_node(identity(job), node, edit)


def clock_12h_bare(job: Job) -> Variant:
    """The root evidence's file stamped by a ``datefmt='%Y-%m-%d %I:%M:%S'`` (a 12-hour clock with no AM/PM, a
    common slip): afternoon lines read twelve hours early, and lines around noon go back."""
    def stamp(t: datetime) -> bytes:
        return t.strftime("%Y-%m-%d %I:%M:%S,").encode() + f"{t.microsecond // 1000:03d} ".encode()

    def edit(o: Out) -> None:
        o.lines = [_restamp(ln, stamp) if _heads(ln) else ln for ln in o.lines]
    return edit_file(job, _clock_target(job), edit)


TIME_SHAPES = {
    "new-year-root": new_year_root,
    "epoch-prefix": epoch_prefix,
    "journal-monotonic": journal_monotonic,
    "clock-12h-bare": clock_12h_bare,
}
