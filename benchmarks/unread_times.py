"""Real lines with a date or time in their header that the timestamp reader does not read.

Every line of ``fixtures/real/real-failures.jsonl`` and of the dev rows of ``fixtures/real/corpus.jsonl`` (never the
holdout rows) goes through what the line reader does for a time: stream prefixes off, the timestamp parser at the
header (and after leading blanks, as Megatron prints it), the excerpt's time spot (``ingest.timespots``). A line
left without a time that shows a date-like text in its first 80 characters is listed, grouped by the shape of its
text up to that date (digits as 0), most frequent first, so that a header layout worth reading shows as one group.

    .venv/bin/python benchmarks/unread_times.py [--examples 2]
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter, defaultdict
from pathlib import Path

from l4lite.ingest.timespots import learn_spot, spot_time, strip_stream_prefixes
from l4lite.ingest.timestamps import TimestampParser

ROOT = Path(__file__).resolve().parent.parent
REACH = 80  # a header's time sits in a line's first characters
_DATE_LIKE = re.compile(
    r"\d{4}[-/.]\d\d[-/.]\d\d[T _]\d\d:\d\d"  # 2025-01-28 18:14, 2025/01/28T18:14, 2025-05-21_15:43
    r"|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d{1,2},? +(?:\d{4} )?\d\d:\d\d"  # Nov 29 04:01
    r"|\b[IWEF]\d{4} \d\d:\d\d:\d\d"  # glog / absl / klog
    r"|\b\d\d/\d\d/\d{2,4}[ ,]+\d\d:\d\d"  # 09/11/2024 17:52, 11/29/24, 04:01
    r"|\b\d{10}(?:\.\d+)?\b")  # epoch seconds


def excerpts() -> list[tuple[str, list[str]]]:
    """(id, lines) of every real-failures excerpt and every dev row of the corpus."""
    out = []
    for line in (ROOT / "fixtures" / "real" / "real-failures.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out.append((row["id"], row["lines"]))
    for line in (ROOT / "fixtures" / "real" / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            if row.get("split") == "dev":
                out.append((row["id"], row["lines"]))
    return out


def read_time(parser: TimestampParser, line: str, spot: str) -> float | None:
    """The time the line reader would give the line's header (None: none read)."""
    s = strip_stream_prefixes(line)
    t, end, _, _ = parser.parse(s)
    if not end and s.startswith(" "):
        p = len(s) - len(s.lstrip(" "))
        if p < 8:
            t, end, _, _ = parser.parse(s, p)
    if not end and spot:
        t = spot_time(parser, s, 0, spot)[1][0]
    return t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=2, help="lines shown per group")
    args = ap.parse_args(argv)
    groups: Counter[str] = Counter()
    shown: dict[str, list[str]] = defaultdict(list)
    total = dated = 0
    for ident, lines in excerpts():
        spot = learn_spot(lines)
        parser = TimestampParser(2025)
        for line in lines:
            total += 1
            m = _DATE_LIKE.search(line, 0, REACH)
            if m is None:
                continue
            dated += 1
            if read_time(parser, line, spot) is not None:
                continue
            head = re.sub(r"\d", "0", line[:m.start()])[-40:]
            key = f"{head!r} + {re.sub(r'[0-9]', '0', m.group())!r}"
            groups[key] += 1
            if len(shown[key]) < args.examples:
                shown[key].append(f"{ident}: {line[:160]}")
    unread = sum(groups.values())
    print(f"# {total} lines, {dated} with a date-like text in their first {REACH} characters, {unread} of them "
          f"without a time read ({len(groups)} groups)")
    for key, n in groups.most_common():
        print(f"{n:5d}  {key}")
        for example in shown[key]:
            print(f"         {example}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
