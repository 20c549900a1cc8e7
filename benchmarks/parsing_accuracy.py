"""Grouping accuracy of l4lite's template miner on the Loghub 2k samples, and its throughput against drain3.

Usage: python benchmarks/parsing_accuracy.py [LOGHUB_DIR] [--throughput-lines N] [--no-throughput]

The throughput part masks and mines the nine samples' contents repeated to N lines (default 500,000), once as
they are and once with the digits of every masked value redrawn (new values, same constant text), with drain3's own TemplateMiner and the
same masks as the baseline, measured in the same run (CPU time of this process, so that other work on the
machine does not skew the ratios).

LOGHUB_DIR (default ../shared/data/loghub relative to the repository) holds loghub's ``<System>/<System>_2k.log``
and loghub-2.0's re-annotated ground truth ``loghub-2.0_corrected/<System>/<System>_2k.log_structured_corrected.csv``.
Each raw line is split with loghub's per-system log format (as loghub's benchmark does) and the Content field is
mined; grouping accuracy (GA) is loghub's metric: a message counts as correct iff the set of lines in its
predicted group equals the set of lines of its ground-truth template. The table shows l4lite's one default
setting, the best per-system setting of a small grid (as Drain's benchmark tuned per system), and Drain's
published Loghub-2k figures. ``--raw`` shows instead the grouping of the raw lines, headers included, as ``l4lite
parse`` reads them (ingest splits the headers off), beside drain3's defaults on the same raw lines.
"""

from __future__ import annotations

import argparse
import csv
import random
import re
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from l4lite.mining.miner import DEFAULT_MASKS, TemplateMiner

DRAIN_PUBLISHED = {
    "BGL": 0.963,
    "HPC": 0.887,
    "Thunderbird": 0.955,
    "HDFS": 0.998,
    "Hadoop": 0.948,
    "Spark": 0.920,
    "Zookeeper": 0.967,
    "OpenStack": 0.733,
    "Linux": 0.690,
}

# loghub's per-system log formats (logparser benchmark settings); <Content> is what gets mined.
LOG_FORMATS = {
    "HDFS": "<Date> <Time> <Pid> <Level> <Component>: <Content>",
    "Hadoop": r"<Date> <Time> <Level> \[<Process>\] <Component>: <Content>",
    "Spark": "<Date> <Time> <Level> <Component>: <Content>",
    "Zookeeper": r"<Date> <Time> - <Level>  \[<Node>:<Component>@<Id>\] - <Content>",
    "BGL": "<Label> <Timestamp> <Date> <Node> <Time> <NodeRepeat> <Type> <Component> <Level> <Content>",
    "HPC": "<LogId> <Node> <Component> <State> <Time> <Flag> <Content>",
    "Thunderbird": r"<Label> <Timestamp> <Date> <User> <Month> <Day> <Time> <Location> <Component>(\[<PID>\])?: <Content>",
    "Linux": r"<Month> <Date> <Time> <Level> <Component>(\[<PID>\])?: <Content>",
    "OpenStack": r"<Logrecord> <Date> <Time> <Pid> <Level> <Component> \[<ADDR>\] <Content>",
}

SIM_GRID = (0.3, 0.4, 0.5, 0.6, 0.7)
DEPTH_GRID = (4, 5, 6)


def format_regex(log_format: str) -> re.Pattern[str]:
    """loghub's ``generate_logformat_regex``: <Field> -> named group, spaces -> \\s+."""
    parts = re.split(r"(<[^<>]+>)", log_format)
    regex = ""
    for i, part in enumerate(parts):
        if i % 2 == 0:
            regex += re.sub(" +", r"\\s+", part)
        else:
            name = part.strip("<>")
            regex += f"(?P<{name}>.*?)"
    return re.compile("^" + regex + "$")


def load_system(root: Path, system: str) -> tuple[list[str], list[str], int]:
    """Contents (from the raw log and the log format) and ground-truth templates, line by line."""
    truth_file = root / "loghub-2.0_corrected" / system / f"{system}_2k.log_structured_corrected.csv"
    raw_file = root / system / f"{system}_2k.log"
    with truth_file.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    truth = [row["EventTemplate"] for row in rows]
    regex = format_regex(LOG_FORMATS[system])
    contents: list[str] = []
    differ = 0
    raw_lines = raw_file.read_text(encoding="utf-8", errors="replace").splitlines()
    for row, line in zip(rows, raw_lines, strict=False):
        m = regex.match(line.strip())
        content = m.group("Content") if m else row["Content"]
        if content.strip() != row["Content"].strip():
            differ += 1
        contents.append(content)
    if len(raw_lines) != len(rows):
        contents = [row["Content"] for row in rows]
    return contents, truth, differ


def grouping_accuracy(truth: Sequence[str], predicted: Sequence[object]) -> float:
    """loghub's GA: lines whose predicted group is exactly their ground-truth group, over all lines."""
    truth_size = Counter(truth)
    groups: dict[object, list[int]] = defaultdict(list)
    for i, p in enumerate(predicted):
        groups[p].append(i)
    correct = 0
    for members in groups.values():
        labels = {truth[i] for i in members}
        if len(labels) == 1 and truth_size[next(iter(labels))] == len(members):
            correct += len(members)
    return correct / len(truth)


def raw_lines(root: Path, system: str) -> tuple[list[str], list[str]]:
    """The raw log lines of a system (headers included, as ``l4lite parse`` reads them) and their templates."""
    truth_file = root / "loghub-2.0_corrected" / system / f"{system}_2k.log_structured_corrected.csv"
    with truth_file.open(newline="", encoding="utf-8") as fh:
        truth = [row["EventTemplate"] for row in csv.DictReader(fh)]
    lines = (root / system / f"{system}_2k.log").read_text(encoding="utf-8", errors="replace").splitlines()
    return lines[:len(truth)], truth[:len(lines)]


def l4lite_raw_groups(lines: Sequence[str], tmp: Path, learn: bool = False) -> list[object]:
    """Each raw line's group as ``l4lite parse`` gives it: ingest splits the headers off (and may join lines into
    one record), the miner groups the messages; a line takes its record's group."""
    from l4lite.ingest.files import discover
    from l4lite.ingest.reader import IngestOptions, iter_job
    from l4lite.records import Accounting, Record

    path = tmp / "raw.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    from l4lite.mining.headers import HeaderCut, cut_by_file

    acc = Accounting()
    miner = TemplateMiner()
    groups: list[object] = [None] * len(lines)
    records = list(iter_job(discover([str(path)], acc), IngestOptions(), acc))
    cuts = cut_by_file(records) if learn else ((r, HeaderCut()) for r in records)
    for record, header in cuts:
        assert isinstance(record, Record)
        cid = miner.add(header.strip(record.message))
        for i in range(record.line - 1, min(record.end_line, len(lines))):
            groups[i] = cid
    table = miner.finalize()
    return [table[g][0] if g is not None else ("skipped", i) for i, g in enumerate(groups)]


def drain3_default_groups(lines: Sequence[str]) -> list[object]:
    """drain3's ``TemplateMiner`` with its default configuration, on the raw lines."""
    from drain3 import TemplateMiner as Drain3Miner
    from drain3.template_miner_config import TemplateMinerConfig

    config = TemplateMinerConfig()
    config.profiling_enabled = False
    miner = Drain3Miner(config=config)
    ids = [miner.add_log_message(line)["cluster_id"] for line in lines]
    final = {c.cluster_id: c.get_template() for c in miner.drain.clusters}
    return [final[i] for i in ids]


def raw_table(root: Path) -> None:
    """Grouping accuracy on the raw lines, headers included: l4lite's one setting against drain3's defaults."""
    import tempfile

    print("\nRaw lines (headers included, as `l4lite parse` reads them): l4lite's default setting, drain3's "
          "defaults on the same lines, Drain's published GA (on the contents)")
    print("(parse: as `l4lite parse` mines them, each message without the header learnt from its file's first "
          "messages, l4lite.mining.headers.cut_by_file; whole: the whole message as ingest leaves it)")
    print(f"{'system':<12} {'whole':>7} {'parse':>7} {'drain3':>7} {'Drain':>7}")
    totals = [0.0, 0.0, 0.0]
    with tempfile.TemporaryDirectory() as tmp:
        for system, published in DRAIN_PUBLISHED.items():
            lines, truth = raw_lines(root, system)
            row = (grouping_accuracy(truth, l4lite_raw_groups(lines, Path(tmp))),
                   grouping_accuracy(truth, l4lite_raw_groups(lines, Path(tmp), learn=True)),
                   grouping_accuracy(truth, drain3_default_groups(lines)))
            for i, v in enumerate(row):
                totals[i] += v
            print(f"{system:<12} " + " ".join(f"{v:7.3f}" for v in row) + f" {published:7.3f}")
    n = len(DRAIN_PUBLISHED)
    print(f"{'average':<12} " + " ".join(f"{v / n:7.3f}" for v in totals)
          + f" {sum(DRAIN_PUBLISHED.values()) / n:7.3f}")


def mine(contents: Sequence[str], sim_th: float, depth: int) -> list[str]:
    miner = TemplateMiner(sim_th=sim_th, depth=depth)
    ids = [miner.add(c) for c in contents]
    table = miner.finalize()
    return [table[i][0] for i in ids]


def main(argv: Sequence[str] | None = None) -> int:
    here = Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("loghub_dir", nargs="?", default=str(here / ".." / "shared" / "data" / "loghub"))
    ap.add_argument("--throughput-lines", type=int, default=500_000, metavar="N")
    ap.add_argument("--no-throughput", action="store_true")
    ap.add_argument("--raw", action="store_true", help="only the table of raw lines (headers included)")
    args = ap.parse_args(argv)
    root = Path(args.loghub_dir)
    if not (root / "loghub-2.0_corrected").is_dir():
        print(f"{root}: no loghub-2.0_corrected/ folder here (pass LOGHUB_DIR)", file=sys.stderr)
        return 2
    if args.raw:
        raw_table(root)
        return 0
    default = TemplateMiner()
    print("Grouping accuracy on the Loghub 2k samples (ground truth: loghub-2.0 corrected templates)")
    print(f"l4lite: one default setting (sim_th={default.sim_th}, depth={default.depth}) for every system;")
    print(
        f"tuned: best of sim_th in {SIM_GRID} x depth in {DEPTH_GRID} per system; Drain: published Loghub-2k GA."
    )
    print(f"\n{'system':<12} {'l4lite':>7} {'tuned':>7} {'(sim_th, depth)':>16} {'Drain':>7}")
    all_contents: list[str] = []
    totals = [0.0, 0.0, 0.0]
    for system, published in DRAIN_PUBLISHED.items():
        contents, truth, differ = load_system(root, system)
        if differ:
            print(f"  note: {system}: {differ} contents differ from the structured CSV", file=sys.stderr)
        all_contents.extend(contents)
        ga_default = grouping_accuracy(truth, mine(contents, default.sim_th, default.depth))
        best = max(
            ((grouping_accuracy(truth, mine(contents, s, d)), s, d) for s in SIM_GRID for d in DEPTH_GRID),
            key=lambda t: t[0],
        )
        for i, v in enumerate((ga_default, best[0], published)):
            totals[i] += v
        mark = ">=" if round(ga_default, 3) >= published else "< "
        print(
            f"{system:<12} {ga_default:7.3f} {best[0]:7.3f} {str(best[1:]):>16} {published:7.3f}  {mark} Drain"
        )
    n = len(DRAIN_PUBLISHED)
    print(f"{'average':<12} {totals[0] / n:7.3f} {totals[1] / n:7.3f} {'':>16} {totals[2] / n:7.3f}")
    if not args.no_throughput:
        masking_engines(all_contents)
        throughput(all_contents, args.throughput_lines)
    return 0


def masking_engines(contents: list[str]) -> None:
    """Whole-line masking with the one combined pattern compiled by ``re`` and by ``regex``."""
    import regex

    pattern = "|".join(f"(?P<{name}>{p})" for name, p in DEFAULT_MASKS)
    print("\nmasking a line with the combined pattern, no cache:")
    for module in (re, regex):
        compiled = module.compile(pattern)
        sub = compiled.sub

        def repl(m: Any) -> str:
            return f"<{m.lastgroup}>"

        t0 = time.process_time()
        for line in contents:
            sub(repl, line)
        dt = time.process_time() - t0
        print(f"  {module.__name__:<6} {len(contents) / dt:12,.0f} lines/s")


def _redraw_values(lines: list[str], seed: int) -> list[str]:
    """Every digit inside a masked value redrawn (a leading digit stays non-zero): new values for the variable
    parts of each line, the constant text unchanged, as when a log repeats its events."""
    rnd = random.Random(seed)
    pattern = re.compile("|".join(f"(?:{p})" for _, p in DEFAULT_MASKS))

    def draw(m: re.Match[str]) -> str:
        n = len(m.group())
        return str(rnd.randrange(10 ** (n - 1) if n > 1 else 0, 10**n))

    def redraw(m: re.Match[str]) -> str:
        return re.sub(r"\d+", draw, m.group())

    return [pattern.sub(redraw, line) for line in lines]


def throughput(contents: list[str], n_lines: int) -> None:
    """drain3's TemplateMiner with the same masks (the baseline) against l4lite's plain and fast paths."""
    from drain3 import TemplateMiner as Drain3Miner
    from drain3.masking import MaskingInstruction
    from drain3.template_miner_config import TemplateMinerConfig

    repeated = (contents * (n_lines // len(contents) + 1))[:n_lines]
    inputs = {
        "loghub contents repeated": repeated,
        "repeated, masked values redrawn": _redraw_values(repeated, seed=1),
    }
    for name, lines in inputs.items():
        config = TemplateMinerConfig()
        config.masking_instructions = [MaskingInstruction(p, mask_name) for mask_name, p in DEFAULT_MASKS]
        config.drain_sim_th = TemplateMiner().sim_th
        config.drain_depth = TemplateMiner().depth
        config.profiling_enabled = False
        baseline = Drain3Miner(config=config)
        t0 = time.process_time()
        for line in lines:
            baseline.add_log_message(line)
        t_base = time.process_time() - t0
        plain = TemplateMiner(cache_size=0)
        t0 = time.process_time()
        for line in lines:
            plain.add(line)
        t_plain = time.process_time() - t0
        fast = TemplateMiner()
        t0 = time.process_time()
        for line in lines:
            fast.add(line)
        fast.finalize()
        t_fast = time.process_time() - t0
        print(f"\nthroughput, {len(lines):,} lines ({name}; {len(set(lines)):,} distinct):")
        print(f"  drain3 TemplateMiner + masks  {len(lines) / t_base:12,.0f} lines/s   1.0x")
        print(
            f"  l4lite plain (mask + Drain)   {len(lines) / t_plain:12,.0f} lines/s {t_base / t_plain:5.1f}x"
        )
        print(
            f"  l4lite fast path              {len(lines) / t_fast:12,.0f} lines/s {t_base / t_fast:5.1f}x"
            f"  (answered from cache {fast.hits / len(lines):.1%}, Drain calls {fast.drain_calls:,})"
        )


if __name__ == "__main__":
    sys.exit(main())
