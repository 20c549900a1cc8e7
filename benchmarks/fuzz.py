"""Time-boxed fuzzing of the entry points that see hostile input, with hypothesis.

Usage: python benchmarks/fuzz.py [--seconds 60] [--targets ingest,parse,...] [--shrink] [--slow 10]

Targets (run in rotation, each round a batch of hypothesis examples, until the time is up):

- ingest:    generated files (raw bytes, log-like bytes, mutated real failure lines; plain, gzip, cut gzip,
             UTF-16) through ``sources.discover`` and ``ingest.read_file``: no exception, books balance, records
             inside their file, no line lost or doubled, well-formed fields, exact line count where it is known.
- parse:     a small job of generated files through ``l4lite parse`` (in-process CLI): exit 0, one row per
             record, balanced metadata, template id = hash of the template text.
- rules:     arbitrary messages and records through the shipped rule pack (``RulePack.match_fields``) and the
             rendering of every match's explanation and action.
- rulefile:  generated user rule files (TOML with hostile ids, patterns, placeholders) through
             ``RulePack.load``: either a pack or an ``L4Error``, nothing else; a loaded pack then matches lines.
- templates: arbitrary messages through ``mining.mask`` and ``TemplateMiner``: the cached fast path gives the
             clusters Drain alone gives, state survives a JSON round trip.
- analyze:   a small job of generated lines (metric lines with hostile numbers, timestamps, rule lines) through
             ``pipeline.analyze``, ``Incident.to_json`` and the HTML report.
- tail:      the same kind of job through ``l4lite tail --once``: no traceback, alerts are valid JSON lines.

Any single execution slower than ``--slow`` seconds counts as a failure too (a hang or a quadratic path).
Each failure is saved under /tmp (``l4lite-fuzz-<target>-<n>.json``: the error, the traceback and the input
files base64-encoded, plus the raw files next to it) and the run exits with status 1. Hypothesis' shrinking is
off unless ``--shrink`` is given, so that the run stays within its time box.
"""

from __future__ import annotations

import argparse
import base64
import codecs
import contextlib
import gzip
import io
import json
import math
import os
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The expected line count and the gzip prefix decoder are the property tests' own: one definition of the truth.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from test_properties import expected_lines, gunzip_prefix  # noqa: E402

from l4lite.errors import L4Error
from l4lite.records import Accounting
from l4lite.vocab import SOURCES

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "fixtures" / "real" / "real-failures.jsonl"
LEVELS = {None, "error", "warning", "info", "debug"}


# --------------------------------------------------------------------------------------------- generators
def _real_lines() -> list[bytes]:
    out: list[bytes] = []
    try:
        with open(REAL, encoding="utf-8") as fh:
            for line in fh:
                out.extend(s.encode() for s in json.loads(line)["lines"])
    except (OSError, ValueError, KeyError):
        pass
    return out or [b"NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus."]


REAL_LINES = _real_lines()
PIECES = [
    b"\x00", b"\r", b"\r\n", b"\n", b"\n\n", b" ", b"\t", b"\xff", b"\xfe", b"\xc3", b"\xe9", b"\xe2\x82",
    b"\xed\xa0\x80", codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, b"\x1f\x8b", b"\x1b[31m", b"\x7f",
    "\u00e9".encode(), "\u4e2d".encode(), "\U0001f600".encode(), "\u0663".encode(), "\u2028".encode(),
    "\u0085".encode(), b"Traceback (most recent call last):", b'  File "a.py", line 1, in f', b"ValueError: boom",
    b"[rank1]:", b"3: ", b"[default0]: ", b"host1:12:34 [0] NCCL INFO Init", b"NCCL WARN x", b"[std",
    b"2024-01-01 00:00:00,000 ", b"[2024-01-01 00:00:00] ", b"Nov 29 10:11:12 h kernel: ", b"[12.5] ", b"[  +0.1] ",
    b"E1129 10:11:12.345678 1 a.cc:1] ", b"kern  :err   : ", b"x.py FAILED", b"=" * 40, b"Root Cause",
    b"  rank      : 1 (local_rank: 1)", b"  host      : n1", b"frame #0: f + 0x1", b"2099-01-01T00:00:00Z ",
    b"1970-01-01 00:00:00 ", b"srun: error: n1: tasks 0-99999999: Exited", b"global_ranks=[0, 1, 99999999]",
    b" iteration 5/ 10 | lm loss: nan | grad norm: inf |", b"{'loss': 1e309, 'epoch': -1}", b"<script>",
]


def _mutate(line: bytes, edits: list[tuple[int, bytes, int]]) -> bytes:
    b = bytearray(line)
    for pos, insert, delete in edits:
        p = pos % (len(b) + 1)
        b[p:p + delete] = insert
    return bytes(b)


pieces = st.one_of(
    st.sampled_from(PIECES), st.binary(max_size=40), st.integers(0, 5000).map(lambda n: b"x" * n),
    st.sampled_from(REAL_LINES),
    st.tuples(st.sampled_from(REAL_LINES), st.lists(st.tuples(st.integers(0, 500), st.binary(max_size=4),
                                                              st.integers(0, 4)), max_size=4))
    .map(lambda t: _mutate(*t)),
)
separators = st.sampled_from([b"\n", b"\n", b"\n", b"\r\n", b"\r", b"", b" "])
log_bytes = st.lists(st.tuples(pieces, separators), max_size=80).map(lambda xs: b"".join(p + s for p, s in xs))
raw_bytes = st.one_of(st.binary(max_size=6000), log_bytes)


@st.composite
def files(draw: Any) -> tuple[bytes, str]:
    data = draw(raw_bytes)
    kind = draw(st.sampled_from(["plain", "plain", "plain", "gzip", "gzip-cut", "gzip-padded", "gzip-flipped",
                                 "utf-16", "utf-16-le", "utf-16-be"]))
    if kind == "gzip":
        return gzip.compress(data), kind
    if kind == "gzip-padded":  # a crashed node's compressed log: zeros (or garbage) after the last member
        return gzip.compress(data) + draw(st.sampled_from([b"\x00" * 512, b"\x1f", b"junk\n"])), kind
    if kind == "gzip-flipped":  # one corrupt byte
        z = bytearray(gzip.compress(data))
        z[draw(st.integers(0, len(z) - 1))] ^= draw(st.integers(1, 255))
        return bytes(z), kind
    if kind == "gzip-cut":
        z = gzip.compress(data)
        return z[: draw(st.integers(0, len(z)))], kind
    if kind.startswith("utf-16"):
        return data.decode("utf-8", "replace").encode(kind), kind
    return data, kind


names = st.sampled_from(["node1/train.log", "node2.log", "gpu-node-03/dmesg", "rank4.out", "x", "a/b/c/d.txt",
                         "node1/rotated.1", "stdout"])
texts = st.one_of(st.text(max_size=200), raw_bytes.map(lambda b: b.decode("utf-8", "replace")[:5000]),
                  st.sampled_from(REAL_LINES).map(lambda b: b.decode("utf-8", "replace")))


def _number() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(["nan", "inf", "-inf", "1e309", "-0", "0", "1e-320", "99999999999999999999",
                                      "-1", "NaN", "1.0E+38"]),
                     st.floats(allow_nan=True, allow_infinity=True).map(repr), st.integers().map(str))


@st.composite
def metric_line(draw: Any) -> bytes:
    n = _number()
    form = draw(st.integers(0, 3))
    if form == 0:
        s = (f" iteration {draw(n)}/ {draw(n)} | elapsed time per iteration (ms): {draw(n)} | lm loss: {draw(n)} | "
             f"loss scale: {draw(n)} | grad norm: {draw(n)} |")
    elif form == 1:
        s = f"{{'loss': {draw(n)}, 'grad_norm': {draw(n)}, 'learning_rate': {draw(n)}, 'epoch': {draw(n)}}}"
    elif form == 2:
        s = f"step={draw(n)}, skipped={draw(n)}, lr=[{draw(n)}], loss={draw(n)}"
    else:
        s = f" validation loss at iteration {draw(n)} | lm loss value: {draw(n)} | lm loss PPL: {draw(n)} |"
    return s.encode()


@st.composite
def job_lines(draw: Any) -> bytes:
    out = []
    for _ in range(draw(st.integers(1, 60))):
        stamp = draw(st.sampled_from(["[2024-05-07 01:00:{:02d}] ", "2024-05-07 01:{:02d}:00,000 INFO ",
                                      "[Tue May  7 01:00:{:02d} 2024] ", "", "[2099-01-01 00:00:{:02d}] "]))
        body = draw(st.one_of(metric_line(), st.sampled_from(REAL_LINES), st.sampled_from(PIECES), pieces))
        out.append(stamp.format(draw(st.integers(0, 59))).encode() + body + b"\n")
    return b"".join(out)


# --------------------------------------------------------------------------------------------- checks
class Failure(AssertionError):
    """A property of one input that does not hold."""


def check(ok: Any, what: str) -> None:
    if not ok:
        raise Failure(what)


def check_file(input_file: Any, data: bytes, kind: str, cap: int) -> int:
    """Read one discovered file with ingest and check every property; returns the number of records."""
    from l4lite.ingest.decode import open_lines
    from l4lite.ingest.reader import IngestOptions, read_file

    acc = Accounting()
    recs = list(read_file(input_file, IngestOptions(max_line_chars=cap), acc))
    lines = [t for _, t in open_lines(input_file, Accounting(), cap)]
    check(acc.balanced, f"books do not balance: {acc.to_dict()}")
    check(acc.records == len(recs), "record count")
    check(acc.lines_read == len(lines), f"lines read {acc.lines_read} != lines in file {len(lines)}")
    starts = [r.line for r in recs]
    check(starts == sorted(set(starts)), "records do not start on distinct lines in order")
    used: Counter[str] = Counter()
    for r in recs:
        check(1 <= r.line <= r.end_line <= acc.lines_read, f"record {r.line}-{r.end_line} outside the file")
        parts = r.text.split("\n")
        check(len(parts) <= r.end_line - r.line + 1, "record holds more lines than its range")
        check(parts[0] == lines[r.line - 1] and parts[-1] == lines[r.end_line - 1], "record ends are not its lines")
        used.update(parts)
        check(r.level in LEVELS and r.source in SOURCES, f"level/source {r.level}/{r.source}")
        check(r.time is None or math.isfinite(r.time), f"time {r.time}")
        check((r.rank is None or r.rank >= 0) and (r.gpu is None or r.gpu >= 0), "rank/gpu")
        check(r.node is None or (r.node and "\n" not in r.node), f"node {r.node!r}")
        check("\n" not in r.message, "multi-line message")
    check(sum(used.values()) == acc.lines_in_records, "lines in records")
    check(not used - Counter(lines), "a record holds a line the file does not have (or holds one twice)")
    text = gunzip_prefix(data) if data.startswith(b"\x1f\x8b") else data
    utf16 = text.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))  # (inside the gzip too) decoded
    if kind == "gzip" and not utf16:
        check(acc.lines_read == expected_lines(gzip.decompress(data)), "gzip line count")
    elif kind == "plain" and not utf16:
        check(acc.lines_read == expected_lines(text), f"line count {acc.lines_read} != {expected_lines(text)}")
    return len(recs)


# --------------------------------------------------------------------------------------------- targets
class Target:
    """One fuzz target: a hypothesis test over generated input, run in batches of ``batch`` examples."""

    def __init__(self, name: str, batch: int, strategy: st.SearchStrategy[Any], run: Callable[[Any, Path], None]):
        self.name = name
        self.batch = batch
        self.strategy = strategy
        self.run = run
        self.executions = 0
        self.failures: list[str] = []


def t_ingest(args: tuple[tuple[bytes, str], int], tmp: Path) -> None:
    from l4lite.ingest.files import discover

    (data, kind), cap = args
    (tmp / "job").mkdir()
    (tmp / "job" / "node9.log").write_bytes(data)
    (tmp / "job" / "ok.log").write_text("readable\n")
    found = Accounting()
    job = discover([str(tmp / "job")], found)
    mine = [f for f in job.files if f.rel == "node9.log"]
    if not mine:
        check(found.files_skipped == {"binary": 1}, f"skipped {dict(found.files_skipped)}")
        check(any("node9.log" in w for w in found.warnings), "no warning names the skipped file")
        return
    check_file(mine[0], data, kind, cap)


def write_job(job: Path, files: list[tuple[str, bytes]]) -> Path:
    """A job folder holding ``files`` (relative name, bytes)."""
    for name, data in files:
        p = job / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return job


def t_parse(args: list[tuple[str, tuple[bytes, str]]], tmp: Path) -> None:
    from l4lite.cli.main import main
    from l4lite.mining.miner import template_id

    job = write_job(tmp / "job", [(name, data) for name, (data, _) in args])
    (job / "ok.log").write_text("2024-01-01 00:00:00 INFO fine\n")
    out = tmp / "out.jsonl"
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["parse", str(job), "-o", str(out)])
    check(code == 0, f"parse exit {code}: {err.getvalue()[-500:]}")
    rows = [json.loads(x) for x in out.read_text(encoding="utf-8").split("\n") if x]
    meta = json.loads(Path(f"{out}.meta.json").read_text(encoding="utf-8"))
    acc = meta["l4lite.accounting"]
    check(acc["lines_read"] == acc["lines_in_records"] + sum(acc["lines_skipped"].values()), "parse books")
    check(meta["records"] == acc["records"] == len(rows), "parse rows")
    check(all(r["template_id"] == template_id(r["template"]) for r in rows), "template id is not the text's hash")
    check(all(len(line) < 300 for line in err.getvalue().splitlines()), "a stderr message is not one short line")


_PACK: list[Any] = []


def _pack() -> Any:
    if not _PACK:
        from l4lite.rules.pack import RulePack

        _PACK.append(RulePack.load())
    return _PACK[0]


def t_rules(args: tuple[str, str, str | None], tmp: Path) -> None:
    message, text, source = args
    pack = _pack()
    for m in pack.match_fields(message, text, source):
        check(isinstance(pack.explain(m.rule, m.groups, {"node": "n1"}), str), "explain")
        check(isinstance(pack.action(m.rule, m.groups, {"node": "n1"}), str), "action")


@st.composite
def rule_file(draw: Any) -> str:
    def toml_str(s: str) -> str:
        return json.dumps(s)  # a JSON string is a valid TOML basic string

    atoms = st.sampled_from(["(a+)+$", "(a|aa)*b", "\\d+", "x{1000000}", "(?P<pci>[0-9a-f:.]+)", "[", "(?<=a+)b",
                             "Xid", "(?i)error", "\\", ".*.*.*=.*", "(?P<node>\\w+)", "\\p{L}+", "(?R)?", "\\1",
                             "{0}", "{pci}", "{node|tbl}", "<script>", "'''", "\x00", "\u2028"])
    pattern = "".join(draw(st.lists(st.one_of(atoms, st.text(max_size=5)), max_size=5)))
    fields = {
        "id": draw(st.one_of(st.sampled_from(["user-1", "xid-79", "../../etc", "a b", ""]), st.text(max_size=8))),
        "pattern": pattern,
        "category": draw(st.sampled_from(["gpu_hardware", "network", "nope", ""])),
        "role": draw(st.sampled_from(["root", "cascade", "symptom", "anomaly"])),
        "severity": draw(st.sampled_from(["critical", "high", "low", "info", "x"])),
        "explain": "".join(draw(st.lists(st.one_of(atoms, st.text(max_size=6)), max_size=4))) or "e",
    }
    body = "[[rule]]\n" + "".join(f"{k} = {toml_str(v)}\n" for k, v in fields.items())
    extra = draw(st.sampled_from(["", "priority = 100\n", "priority = -1\n", "match = \"text\"\n",
                                  "keywords = [\"a\"]\n", "enabled = false\n", "ignore_case = true\n",
                                  "scope = \"global\"\n", "[tables.tbl]\nx = \"y\"\n", "unknown = 1\n",
                                  "source = [\"kernel\"]\n", "category_by_phase = { init = \"data\" }\n"]))
    junk = draw(st.sampled_from(["", "", "[[rule]]\n", "rule = 3\n", "\x00", "[tables]\nx = 1\n"]))
    return body + extra + junk


def t_rulefile(args: tuple[str, list[str]], tmp: Path) -> None:
    from l4lite.rules.pack import RulePack

    text, lines = args
    path = tmp / "user.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        pack = RulePack.load([path], timeout=0.05, max_timeouts=2)
    except L4Error as exc:
        check("\n" not in str(exc) and str(path) in str(exc), f"rule file error is not one line naming it: {exc}")
        return
    for line in lines + ["a" * 5000 + "b"]:
        for m in pack.match_fields(line, line, "kernel"):
            pack.explain(m.rule, m.groups)


def t_templates(messages: list[str], tmp: Path) -> None:
    from l4lite.mining.miner import TemplateMiner, mask, template_id

    messages = [m.replace("\x00", "") for m in messages]
    for m in messages:
        check(isinstance(mask(m), str), "mask")
    fast, plain = TemplateMiner(), TemplateMiner(cache_size=0)
    a = [fast.add(m) for m in messages]
    b = [plain.add(m) for m in messages]
    ta, tb = fast.finalize(), plain.finalize()
    check([ta[c] for c in a] == [tb[c] for c in b], "fast path and plain path disagree")
    check(all(tid == template_id(text) for tid, text in ta.values()), "template id")
    restored = TemplateMiner.from_state(json.loads(json.dumps(fast.to_state())))
    check(restored.finalize() == ta, "state round trip")


def t_analyze(args: list[tuple[str, bytes]], tmp: Path) -> None:
    from l4lite.api import analyze
    from l4lite.options import AnalyzeOptions
    from l4lite.report.html import render_html

    job = write_job(tmp / "job", args)
    try:
        incident = analyze([str(job)], AnalyzeOptions())
    except L4Error as exc:
        check("\n" not in str(exc), f"multi-line error: {exc}")
        return
    st_ = incident.stats
    check(st_["lines_read"] == st_["lines_in_records"] + sum(st_["lines_skipped"].values()), "analyze books")
    json.loads(incident.to_json())
    html = render_html(incident)
    check(html.lower().count("<script") == 2, f"{html.lower().count('<script')} script tags in the report")


def t_tail(args: list[tuple[str, bytes]], tmp: Path) -> None:
    from l4lite.cli.main import main

    job = write_job(tmp / "job", args)
    alerts = tmp / "alerts.jsonl"
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["tail", "--once", str(job), "--alerts", str(alerts)])
    check(code in (0, 1, 2), f"tail exit {code}")
    check("Traceback" not in err.getvalue(), "traceback on stderr")
    if alerts.exists():
        for line in alerts.read_text(encoding="utf-8").split("\n"):
            if line:
                check(json.loads(line)["schema"] == "l4lite.alert/1", "alert schema")


def targets() -> list[Target]:
    node_files = st.lists(st.tuples(names, files()), min_size=1, max_size=3, unique_by=lambda t: t[0])
    return [
        Target("ingest", 40, st.tuples(files(), st.integers(1, 70_000)), t_ingest),
        Target("parse", 10, node_files, t_parse),
        Target("rules", 60, st.tuples(texts, texts, st.sampled_from([None, *SOURCES])), t_rules),
        Target("rulefile", 30, st.tuples(rule_file(), st.lists(texts, max_size=4)), t_rulefile),
        Target("templates", 30, st.lists(texts, max_size=40), t_templates),
        Target("analyze", 3, st.lists(st.tuples(st.sampled_from(["gpu-node-01/train.log", "gpu-node-02/train.log",
                                                                 "gpu-node-02/dmesg.log", "launcher.out",
                                                                 "gpu-node-01/train.log.1"]),
                                                st.one_of(job_lines(), job_lines().map(gzip.compress),
                                                          files().map(lambda f: f[0]))),
                                      min_size=1, max_size=4, unique_by=lambda t: t[0]), t_analyze),
        Target("tail", 3, st.lists(st.tuples(names, st.one_of(job_lines(), files().map(lambda f: f[0]))),
                                   min_size=1, max_size=4, unique_by=lambda t: t[0]), t_tail),
    ]


# --------------------------------------------------------------------------------------------- driver
def save_failure(target: Target, example: Any, exc: BaseException) -> Path:
    n = len(target.failures)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = Path(tempfile.gettempdir()) / f"l4lite-fuzz-{target.name}-{stamp}-{n}"
    raw_dir = Path(f"{base}.files")
    raw_dir.mkdir(parents=True, exist_ok=True)
    blobs: dict[str, str] = {}

    def walk(x: Any, path: str) -> Any:
        if isinstance(x, bytes):
            blobs[path] = base64.b64encode(x).decode()
            (raw_dir / path.replace("/", "_")).write_bytes(x)
            return f"<bytes {len(x)}: see files[{path!r}]>"
        if isinstance(x, list | tuple):
            return [walk(v, f"{path}.{i}") for i, v in enumerate(x)]
        return x

    described = walk(example, "input")
    out = Path(f"{base}.json")
    out.write_text(json.dumps({"target": target.name, "error": f"{type(exc).__name__}: {exc}",
                               "traceback": "".join(traceback.format_exception(exc)), "input": described,
                               "files": blobs}, indent=2, default=repr), encoding="utf-8")
    return out


def run_round(target: Target, deadline: float, slow: float, shrink: bool) -> None:
    last: list[Any] = [None]
    box: list[BaseException | None] = [None]

    @settings(max_examples=target.batch, deadline=None, database=None, derandomize=False,
              phases=[Phase.generate, Phase.shrink] if shrink else [Phase.generate],
              suppress_health_check=list(HealthCheck), report_multiple_bugs=False)
    @given(target.strategy)
    def test(example: Any) -> None:
        if time.monotonic() > deadline:
            return
        target.executions += 1
        last[0] = example
        with tempfile.TemporaryDirectory(prefix="l4lite-fuzz-") as tmp:
            started = time.monotonic()
            target.run(example, Path(tmp))
            took = time.monotonic() - started
        if took > slow:
            raise Failure(f"one execution took {took:.1f} s (over {slow} s)")

    try:
        test()
    except Exception as exc:  # noqa: BLE001 - every failure is reported and saved, whatever it is
        box[0] = exc
    if box[0] is not None:
        saved = save_failure(target, last[0], box[0])
        target.failures.append(str(saved))
        print(f"FAILURE in {target.name}: {type(box[0]).__name__}: {str(box[0])[:300]}\n  saved to {saved}",
              flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="time box (default 60)")
    parser.add_argument("--targets", default="ingest,parse,rules,rulefile,templates,analyze,tail")
    parser.add_argument("--slow", type=float, default=10.0, help="an execution slower than this is a failure")
    parser.add_argument("--shrink", action="store_true", help="let hypothesis shrink failing inputs")
    args = parser.parse_args(argv)
    chosen = [t for t in targets() if t.name in args.targets.split(",")]
    if not chosen:
        parser.error("no known target selected")
    os.environ.setdefault("L4LITE_STORE", str(Path(tempfile.gettempdir()) / "l4lite-fuzz-store.sqlite3"))
    # numpy's warnings about inf/nan arithmetic on hostile metric values are not failures (exceptions are)
    warnings.simplefilter("ignore", RuntimeWarning)
    started = time.monotonic()
    deadline = started + args.seconds
    rounds = 0
    while time.monotonic() < deadline:
        target = chosen[rounds % len(chosen)]
        run_round(target, deadline, args.slow, args.shrink)
        rounds += 1
    elapsed = time.monotonic() - started
    total = sum(t.executions for t in chosen)
    failures = sum(len(t.failures) for t in chosen)
    print(f"{'target':<10} {'executions':>10} {'failures':>9}")
    for t in chosen:
        print(f"{t.name:<10} {t.executions:>10} {len(t.failures):>9}")
    print(f"{'total':<10} {total:>10} {failures:>9}   in {elapsed:.0f} s ({total / max(elapsed, 1e-9):.1f} exec/s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
