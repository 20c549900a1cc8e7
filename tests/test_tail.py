"""The tail loop: records from followed files, instant rule alerts, checkpoints, restarts, hang, CLI."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from l4lite.live.alerts import JsonLinesSink
from l4lite.live.options import STATE_FILE
from l4lite.live.tail import Tailer, TailOptions
from l4lite.records import Record

XID = "NVRM: Xid (PCI:0000:cb:00): 79, pid=1234, name=python, GPU has fallen off the bus."

RULES = r'''
[[rule]]
id = "xid-79"
pattern = 'NVRM: Xid \(PCI:(?P<pci>[0-9a-fA-F:.]+)\): 79\b'
category = "gpu_hardware"
role = "root"
severity = "critical"
explain = "The GPU at {pci} fell off the bus."
action = "Drain the node."

[[rule]]
id = "watchdog"
pattern = 'Watchdog caught collective operation timeout'
category = "network"
role = "cascade"
severity = "error"
explain = "A collective timed out."
'''


class SimpleReader:
    """Test reader: node = first folder of the file; a line starting with two spaces continues a record."""

    def __init__(self, name: str) -> None:
        self.node = name.split(os.sep)[0] if os.sep in name else None
        self.name = name
        self.lines: list[tuple[int, str]] = []

    @property
    def pending_line(self) -> int | None:
        return self.lines[0][0] if self.lines else None

    def feed(self, line_no: int, text: str) -> list[Record]:
        if text.startswith("  ") and self.lines:
            self.lines.append((line_no, text))
            return []
        out = self.flush()
        self.lines = [(line_no, text)]
        return out

    def expire(self, line_no: int) -> list[Record]:
        return self.flush() if self.lines and self.lines[-1][0] <= line_no else []

    def flush(self) -> list[Record]:
        if not self.lines:
            return []
        first, last = self.lines[0][0], self.lines[-1][0]
        text = "\n".join(t for _, t in self.lines)
        self.lines = []
        return [Record(self.name, first, last, self.node, None, None, "other", None, None,
                       text.split("\n")[0], text)]


@pytest.fixture
def rules(tmp_path: Path) -> str:
    p = tmp_path / "rules.toml"
    p.write_text(RULES)
    return str(p)


def job(tmp_path: Path, n: int = 20, nodes: int = 2) -> Path:
    root = tmp_path / "job"
    for k in range(nodes):
        d = root / f"node{k:03d}"
        d.mkdir(parents=True)
        (d / "train.log").write_text("".join(f"step {i} loss 2.{i:03d}\n" for i in range(n)))
    return root


def tailer(tmp_path: Path, rules: str, paths: list[str], **kw) -> tuple[Tailer, io.StringIO]:
    out = io.StringIO()
    opts = TailOptions(paths=paths, rules_files=[rules], default_rules=False, state_dir=str(tmp_path / "state"),
                       **kw)
    t = Tailer(opts, sinks=[JsonLinesSink(stream=out)], reader_factory=SimpleReader)
    return t, out


def alerts(out: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def state(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "state" / STATE_FILE).read_text())


def test_once_counts_every_line_and_alerts_on_root_rule(tmp_path: Path, rules: str) -> None:
    root = job(tmp_path)
    with open(root / "node001" / "train.log", "a") as fh:
        fh.write(XID + "\n")
    t, out = tailer(tmp_path, rules, [str(root)], once=True)
    t.run()
    got = alerts(out)
    assert len(got) == 1
    a = got[0]
    assert a["kind"] == "new" and a["category"] == "gpu_hardware"
    assert a["suspects"][0]["node"] == "node001"
    ev = a["evidence"][0]
    assert (ev["file"], ev["line"], ev["rule"], ev["role"]) == (os.path.join("node001", "train.log"), 21, "xid-79",
                                                                   "root")
    assert (t.totals.lines, t.totals.records) == (41, 41)
    s = state(tmp_path)
    # committed up to each file's last complete record: its last line may still be continued (the reader keeps
    # it open), so the next run reads it again
    assert s["totals"]["lines"] == 39 and s["totals"]["records"] == 39
    assert s["totals"]["hits"] == {} and t.totals.hits == {"xid-79": 1}  # the Xid line is node001's last
    again, out = tailer(tmp_path, rules, [str(root)], once=True)
    again.run()
    assert (again.totals.lines, again.totals.records) == (41, 41) and again.totals.hits == {"xid-79": 1}
    assert not alerts(out)  # announced once


def test_live_steps_alert_once_then_update(tmp_path: Path, rules: str) -> None:
    root = job(tmp_path)
    t, out = tailer(tmp_path, rules, [str(root / "*" / "*.log")], flush_after=0.0)
    t.step()
    assert alerts(out) == []
    with open(root / "node000" / "train.log", "a") as fh:
        fh.write(XID + "\n")
    t.step()
    assert [a["kind"] for a in alerts(out)] == ["new"]
    with open(root / "node000" / "train.log", "a") as fh:
        fh.write("step 21 loss 2.0\n")
        fh.write("Watchdog caught collective operation timeout\n")
    t.step()
    assert len(alerts(out)) == 1  # a cascade line is not news
    with open(root / "node000" / "train.log", "a") as fh:
        fh.write(XID.replace("cb:00", "ca:00") + "\n")
    t.step()
    got = alerts(out)
    assert [a["kind"] for a in got] == ["new", "update"] and got[1]["alert_id"] == got[0]["alert_id"]
    t.close()


def test_multiline_record_waits_for_its_continuation(tmp_path: Path, rules: str) -> None:
    log = tmp_path / "a.log"
    log.write_text("Traceback (most recent call last):\n  File x\n")
    t, _ = tailer(tmp_path, rules, [str(log)], flush_after=3600.0)
    t.step()
    t.checkpoint()
    assert state(tmp_path)["totals"]["lines"] == 0  # the record is still open: nothing committed
    with open(log, "a") as fh:
        fh.write("  line 2\nnext record\n")
    t.step()
    t.checkpoint()
    s = state(tmp_path)
    assert s["totals"]["records"] == 1 and s["totals"]["lines"] == 3
    t.close()
    assert state(tmp_path)["totals"]["lines"] == 3  # "next record" may still be continued: not committed


def test_restart_resumes_without_loss_or_double_count(tmp_path: Path, rules: str) -> None:
    root = job(tmp_path, n=50)
    t, out = tailer(tmp_path, rules, [str(root)], flush_after=0.0)
    t.step()
    t.checkpoint()
    # Simulate a crash: more lines are processed but not checkpointed, then the process dies.
    for k in range(2):
        with open(root / f"node{k:03d}" / "train.log", "a") as fh:
            fh.write("".join(f"late {i}\n" for i in range(7)))
    with open(root / "node001" / "train.log", "a") as fh:
        fh.write(XID + "\n")
    t.step()
    t.follower.close()
    # Restart: the same lines are read again; totals come out exact, the alert is not repeated.
    t2, out2 = tailer(tmp_path, rules, [str(root)], once=True, alerts_path=None)
    t2.tracker.load_state(t.tracker.to_state())  # the alert went out before the crash (as in the alert log)
    t2.run()
    s = state(tmp_path)
    assert s["totals"]["lines"] == 2 * 50 + 2 * 7 + 1
    assert s["totals"]["records"] == s["totals"]["lines"]
    assert s["totals"]["hits"] == {"xid-79": 1}
    assert len(alerts(out)) == 1 and alerts(out2) == []


def test_hang_alert_when_progress_stops_but_logs_continue(tmp_path: Path, rules: str) -> None:
    clock = [100.0]
    log = tmp_path / "train.log"
    log.write_text("".join(f" iteration {i}/ 1000 | lm loss: 2.5E+00 | grad norm: 1.0 |\n" for i in range(1, 4)))
    out = io.StringIO()
    opts = TailOptions(paths=[str(log)], rules_files=[rules], default_rules=False, hang_after=60.0, flush_after=0.0)
    t = Tailer(opts, sinks=[JsonLinesSink(stream=out)], reader_factory=SimpleReader, clock=lambda: clock[0])
    t.step()
    for _ in range(5):
        clock[0] += 10
        with open(log, "a") as fh:
            fh.write("still alive, waiting on barrier\n")
        t.step()
    assert alerts(out) == []
    clock[0] += 15
    with open(log, "a") as fh:
        fh.write("still alive, waiting on barrier\n")
    t.step()
    got = alerts(out)
    assert len(got) == 1 and "hang" in got[0]["summary"].lower()
    t.close()


def test_own_outputs_are_not_followed(tmp_path: Path, rules: str) -> None:
    root = job(tmp_path)
    alerts_file = root / "alerts.jsonl"
    out = io.StringIO()
    opts = TailOptions(paths=[str(root)], rules_files=[rules], default_rules=False, state_dir=str(root / "state"),
                       alerts_path=str(alerts_file), once=True)
    t = Tailer(opts, sinks=[JsonLinesSink(stream=out)], reader_factory=SimpleReader)
    t.run()
    assert t.totals.lines == 40


# ------------------------------------------------------------------------------------------ the real command
def healthy(rank: int, i: int) -> str:
    if i % 3 == 0:
        return f"gpu-node{rank // 2:03d}:{4100 + rank}:{4200 + i % 5} [{rank % 2}] NCCL INFO Channel {i % 32:02d}/0 : " \
               f"{rank}[{rank % 2}] -> {rank + 1}[0] via P2P/IPC"
    return f"[rank{rank}]:[2026-01-05 10:{i // 600 % 60:02d}:{i // 10 % 60:02d},{i % 1000:03d}] INFO data.py:12 " \
           f"prefetched shard {i % 97} in {i % 13}.{i % 10} ms"


def append(path: Path, lines: list[str]) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in lines))


def l4lite_tail(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "l4lite", "tail", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for(predicate, timeout: float = 90.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def committed(state_file: Path) -> dict:
    try:
        return json.loads(state_file.read_text())["totals"]
    except (OSError, ValueError, KeyError):
        return {}


def test_kill9_and_restart_loses_and_repeats_nothing(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    files = [logs / f"rank{r}.log" for r in range(4)]
    written = 0
    for r, f in enumerate(files):
        append(f, [healthy(r, i) for i in range(500)])
        written += 500
    state = tmp_path / "state"
    state_file = state / STATE_FILE
    alerts_file = tmp_path / "alerts.jsonl"
    args = (str(logs / "*.log"), "--state", str(state), "--alerts", str(alerts_file), "--poll", "0.05")
    proc = l4lite_tail(*args)
    try:
        wait_for(lambda: committed(state_file).get("lines", 0) >= 2000, what="first checkpoint")
        # Keep writing while it runs; an Xid line among them; kill -9 in the middle of it.
        for k in range(30):
            for r, f in enumerate(files):
                append(f, [healthy(r, 1000 + k * 50 + i) for i in range(50)])
                written += 50
            if k == 10:
                append(files[1], [f"[Mon Jan  5 10:30:00 2026] {XID}"])
                written += 1
            time.sleep(0.02)
        wait_for(lambda: alerts_file.exists() and alerts_file.read_text().strip() != "", what="the alert")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    before = committed(state_file).get("lines", 0)
    for r, f in enumerate(files):  # written while it was down
        append(f, [healthy(r, 5000 + i) for i in range(300)])
        written += 300
    report = tmp_path / "report.html"
    proc = l4lite_tail(*args, "--html", str(report))
    try:
        for r, f in enumerate(files):
            append(f, [healthy(r, 9000 + i) for i in range(100)])
            written += 100
        wait_for(lambda: committed(state_file).get("lines", 0) >= written, what="catching up")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    totals = committed(state_file)
    assert before < written
    assert totals["lines"] == written  # nothing lost, nothing counted twice
    assert totals["records"] == written
    assert totals["hits"].get("xid-79") == 1
    rows = [json.loads(line) for line in alerts_file.read_text().splitlines()]
    assert [r["kind"] for r in rows].count("new") == 1
    assert report.exists() and "gpu-node000" in report.read_text()  # the final report, written on SIGTERM


def test_webhook_gets_one_alert_and_a_restart_sends_nothing_again(tmp_path: Path) -> None:
    from test_alerts import local_server

    from l4lite.live.alerts import WebhookSink

    logs = tmp_path / "logs"
    (logs / "gpu-node003").mkdir(parents=True)
    append(logs / "gpu-node003" / "train.log", [healthy(6, i) for i in range(100)])
    append(logs / "gpu-node003" / "dmesg.log", [f"[Mon Jan  5 10:30:00 2026] {XID}"])
    opts = TailOptions(paths=[str(logs)], state_dir=str(tmp_path / "state"), flush_after=0.0)
    with local_server() as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        t = Tailer(opts, sinks=[WebhookSink(url, backoff=0.01)])
        t.step()
        append(logs / "gpu-node003" / "train.log", [healthy(6, i) for i in range(100, 110)])
        t.step()
        t.close()
        assert len(server.bodies) == 1 and "gpu-node003" in server.bodies[0]["text"]
        append(logs / "gpu-node003" / "dmesg.log", [f"[Mon Jan  5 10:30:02 2026] {XID.replace('cb:00', 'ca:00')}"])
        t2 = Tailer(opts, sinks=[WebhookSink(url, backoff=0.01)])  # a restart: same incident, one new root line
        t2.step()
        t2.close()
        assert len(server.bodies) == 2 and "[update]" in server.bodies[1]["text"]
    assert committed(tmp_path / "state" / STATE_FILE)["lines"] == 112


def test_incremental_reader_gives_the_same_records_as_ingest(tmp_path: Path) -> None:
    from l4lite.ingest.context import build_context
    from l4lite.ingest.files import discover
    from l4lite.ingest.reader import IngestOptions, iter_records
    from l4lite.live.reader import default_reader_factory
    from l4lite.records import Accounting

    fixtures = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "real-failures.jsonl"
    rows = [json.loads(line) for line in fixtures.read_text().splitlines()]
    lines = [line for row in rows for line in row["lines"]]
    log = tmp_path / "node007" / "all.log"
    log.parent.mkdir()
    log.write_text("\n".join(lines) + "\n")
    # the excerpts name many hosts: one host-like folder holding a whole job that shows several nodes names none,
    # and its lines are placed as ``read_file`` places them after a whole read (by an agent's pid, a summary's
    # quote, a run between two lines of one node), a record at a time
    # the job's context (its year, the node of its file) is built alike by ingest and by tail; this file of
    # excerpts from many jobs spans years, and a followed job's span stays open (later lines are expected)
    files = discover([str(tmp_path)], Accounting()).files
    expected = [r for r in iter_records([str(tmp_path)], IngestOptions().use(build_context(files, open_end=True)),
                                        Accounting()) if r.file == "node007/all.log"]
    reader = default_reader_factory(str(tmp_path), paths=[str(log)])("node007/all.log")
    got = []
    for i, text in enumerate(lines, 1):
        got.extend(reader.feed(i, text))
        if i % 37 == 0:  # a poll boundary: the reader keeps open records across it
            assert reader.pending_line is None or reader.pending_line <= i
    got.extend(reader.flush())
    assert reader.pending_line is None
    assert [r.as_row() for r in got] == [r.as_row() for r in expected]
    assert sum(r.end_line - r.line + 1 for r in got) + sum(not t.strip() for t in lines) == len(lines)


class InterleavedReader:
    """Two prefix streams in one file ("A ..." and "B ..."); "A+ ..." continues A's open record. Records come
    out in the order of their first line, as ingest's do."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.open: dict[str, list[tuple[int, str]]] = {}
        self.out: list[tuple[list[tuple[int, str]], bool]] = []  # (lines, closed)

    @property
    def pending_line(self) -> int | None:
        return self.out[0][0][0][0] if self.out else None

    def _drain(self) -> list[Record]:
        done = []
        while self.out and self.out[0][1]:
            lines = self.out.pop(0)[0]
            text = "\n".join(t for _, t in lines)
            done.append(Record(self.name, lines[0][0], lines[-1][0], "n1", None, None, "other", None, None,
                               lines[0][1], text))
        return done

    def _close(self, stream: str) -> None:
        lines = self.open.pop(stream, None)
        if lines is not None:
            for i, (ls, _) in enumerate(self.out):
                if ls is lines:
                    self.out[i] = (ls, True)

    def feed(self, line_no: int, text: str) -> list[Record]:
        stream = text[0]
        if text[1:2] == "+" and stream in self.open:
            self.open[stream].append((line_no, text))
            return []
        self._close(stream)
        lines = [(line_no, text)]
        self.open[stream] = lines
        self.out.append((lines, False))
        return self._drain()

    def expire(self, line_no: int) -> list[Record]:
        for stream, lines in list(self.open.items()):
            if lines[-1][0] <= line_no:
                self._close(stream)
        return self._drain()

    def flush(self) -> list[Record]:
        for stream in list(self.open):
            self._close(stream)
        return self._drain()


def test_checkpoint_waits_for_a_clean_cut_between_interleaved_records(tmp_path: Path, rules: str) -> None:
    log = tmp_path / "merged.log"
    log.write_text("A start\nB start\nA+ more\nA next\n")
    clock = [0.0]
    opts = TailOptions(paths=[str(log)], rules_files=[rules], default_rules=False, state_dir=str(tmp_path / "state"),
                       flush_after=3600.0)
    t = Tailer(opts, reader_factory=InterleavedReader, clock=lambda: clock[0])
    t.step()
    assert t.totals.records == 1  # A (lines 1-3) is out while B (line 2) is still open
    assert not t.checkpoint()  # committing "line 1 done" with A counted would count line 3 twice after a crash
    with open(log, "a") as fh:
        fh.write("B next\n")  # closes B: the cut is clean again
    clock[0] += 1
    t.step()
    assert t.checkpoint()
    saved = json.loads((tmp_path / "state" / STATE_FILE).read_text())["totals"]
    assert saved["records"] == 2 and saved["lines"] == 3  # A and B; line 4 opens a record still open
    # Crash here and restart: the rest is read once, nothing is counted twice.
    t.follower.close()
    t2 = Tailer(TailOptions(paths=[str(log)], rules_files=[rules], default_rules=False,
                            state_dir=str(tmp_path / "state"), once=True), reader_factory=InterleavedReader)
    t2.run()
    assert (t2.totals.lines, t2.totals.records) == (5, 4)
    final = json.loads((tmp_path / "state" / STATE_FILE).read_text())["totals"]
    assert final["lines"] == 3 and final["records"] == 2  # A next and B next may still be continued


def test_no_clean_cut_for_long_forces_one(tmp_path: Path, rules: str) -> None:
    log = tmp_path / "merged.log"
    log.write_text("A start\nB start\nA+ more\nA next\n")
    clock = [0.0]
    opts = TailOptions(paths=[str(log)], rules_files=[rules], default_rules=False, state_dir=str(tmp_path / "state"),
                       flush_after=3600.0)
    t = Tailer(opts, reader_factory=InterleavedReader, clock=lambda: clock[0])
    t.step()
    assert not t.checkpoint()
    clock[0] += 10
    assert t.checkpoint()
    saved = json.loads((tmp_path / "state" / STATE_FILE).read_text())["totals"]
    assert saved["lines"] == 4 and saved["records"] == 3


def test_error_line_in_a_busy_file_is_not_held_back(tmp_path: Path) -> None:
    clock = [0.0]
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "rank09.log"
    append(log, [healthy(9, i) for i in range(50)])
    out = io.StringIO()
    t = Tailer(TailOptions(paths=[str(logs)], flush_after=0.3), sinks=[JsonLinesSink(stream=out)],
               clock=lambda: clock[0])
    t.step()
    append(log, [f"[Mon Jan  5 10:30:00 2026] {XID}"])
    steps = 0
    while not out.getvalue() and steps < 20:  # the file keeps growing: no idle flush ever happens
        append(log, [healthy(9, 1000 + steps * 10 + i) for i in range(10)])
        clock[0] += 0.1
        t.step()
        steps += 1
    assert out.getvalue(), "no alert while the file kept growing"
    assert steps <= 6
    t.close()


def test_sliding_scan_keeps_the_previous_generation(tmp_path: Path) -> None:
    clock = [0.0]
    logs = tmp_path / "logs"
    logs.mkdir()
    append(logs / "rank0.log", [healthy(0, i) for i in range(30)])
    t = Tailer(TailOptions(paths=[str(logs)], generation_seconds=10.0), clock=lambda: clock[0])
    t.step()
    first = t.scan().node_last
    clock[0] += 11
    t.step()  # the generation rolls over
    append(logs / "rank0.log", ["[rank0]:[2026-01-05 10:40:00,000] INFO a different kind of line entirely"])
    clock[0] += 1
    t.step()
    t.close()
    scan = t.scan()
    assert sum(n for _, n in scan.node_last.values()) == 31
    assert set(first) <= set(scan.node_last)
    clock[0] += 11
    t._rotate_generation()  # the oldest generation is dropped
    assert sum(n for _, n in t.scan().node_last.values()) == 1


def test_baseline_job_is_scanned_and_used(tmp_path: Path) -> None:
    base = tmp_path / "healthy"
    base.mkdir()
    append(base / "rank0.log", [healthy(0, i) for i in range(60)])
    logs = tmp_path / "logs"
    (logs / "gpu-node000").mkdir(parents=True)
    append(logs / "gpu-node000" / "rank0.log", [healthy(0, i) for i in range(60)])
    append(logs / "gpu-node000" / "dmesg.log", [f"[Mon Jan  5 10:30:00 2026] {XID}"])
    out = io.StringIO()
    t = Tailer(TailOptions(paths=[str(logs)], baselines=[str(base)], once=True), sinks=[JsonLinesSink(stream=out)])
    assert len(t._baseline_scans) == 1 and t._baseline_scans[0].templates
    incident = t.run()
    assert incident is not None and incident.category == "gpu_hardware"
    assert [json.loads(x)["suspects"][0]["node"] for x in out.getvalue().splitlines()] == ["gpu-node000"]


def test_fast_lane_alerts_before_the_record_is_complete(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    (logs / "gpu-node003").mkdir(parents=True)
    append(logs / "gpu-node003" / "rank6.log", [healthy(6, i) for i in range(20)])
    out = io.StringIO()
    clock = [0.0]
    t = Tailer(TailOptions(paths=[str(logs)], flush_after=3600.0), sinks=[JsonLinesSink(stream=out)],
               clock=lambda: clock[0])
    t.step()
    append(logs / "gpu-node003" / "rank6.log", [f"[Mon Jan  5 10:30:00 2026] {XID}"])
    t.step()
    got = alerts(out)
    assert len(got) == 1 and got[0]["suspects"][0]["node"] == "gpu-node003"
    assert got[0]["evidence"][0]["line"] == 21
    assert not t._root_hits  # the record itself is still open (an error line may get continuation lines)
    t.close()  # the record completes: same incident, nothing new to say
    assert len(alerts(out)) == 1 and t.totals.hits == {"xid-79": 1}


def replay(src: Path, dst: Path, slices: int = 12) -> tuple[Tailer, list[dict]]:
    """Write a finished job's files again, a slice of every file at a time, while tail follows them."""
    files = [p for p in sorted(src.rglob("*")) if p.is_file() and p.name != "ground_truth.json"]
    data = {p: p.read_text(errors="replace").splitlines(keepends=True) for p in files}
    for p in files:
        (dst / p.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
        (dst / p.relative_to(src)).write_text("")
    clock = [0.0]
    out = io.StringIO()
    t = Tailer(TailOptions(paths=[str(dst)]), sinks=[JsonLinesSink(stream=out)], clock=lambda: clock[0])
    for k in range(slices):
        for p, lines in data.items():
            a, b = len(lines) * k // slices, len(lines) * (k + 1) // slices
            append(dst / p.relative_to(src), [x.rstrip("\n") for x in lines[a:b]])
        for _ in range(2):
            clock[0] += 1.0
            t.step()
    for _ in range(4):
        clock[0] += 2.0
        t.step()
    t.close()
    return t, alerts(out)


@pytest.mark.parametrize("scenario", ["healthy_hard_negatives", "xid79_fallen_off_bus"])
def test_simulated_job_followed_live(tmp_path: Path, scenario: str) -> None:
    from l4lite.simulate import JobSpec, generate

    truth = generate(JobSpec(scenario, nodes=3, gpus_per_node=2, iterations=60, seed=3), tmp_path / "src")
    t, got = replay(tmp_path / "src", tmp_path / "live")
    assert t.totals.lines == sum(len(p.read_text().splitlines()) for p in (tmp_path / "src").rglob("*.*")
                                 if p.is_file() and p.name != "ground_truth.json")
    if truth["status"] == "healthy":
        assert got == [] and (t.incident is None or not t.incident.is_incident)
    else:
        assert t.incident is not None and t.incident.category == truth["category"]
        assert t.incident.suspects[0].node in truth["faulty_nodes"]
        assert any(e["rule"] == "xid-79" for a in got for e in a["evidence"])


def test_shedding_routine_lines_keeps_counts_exact_across_a_restart(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    state = str(tmp_path / "state")
    append(logs / "rank0.log", [healthy(0, i) for i in range(200)])
    clock = [0.0]
    t = Tailer(TailOptions(paths=[str(logs)], state_dir=state), clock=lambda: clock[0])
    t.step()  # shapes learnt
    t.sampler.keep = 0.1
    t.sampler.adjust = lambda busy, interval: None  # stay overloaded
    append(logs / "rank0.log", [healthy(0, i) for i in range(200, 1200)]
           + [f"[Mon Jan  5 10:30:00 2026] {XID}"] + [healthy(0, i) for i in range(1200, 1300)])
    clock[0] += 1
    t.step()
    assert t.totals.alerts == 1  # the fast lane
    clock[0] += 1
    t.step()  # the open records complete
    assert t.totals.sampled_out > 800
    assert t.totals.hits.get("xid-79") == 1  # never shed: not a routine shape
    assert t.checkpoint()
    append(logs / "rank0.log", [healthy(0, i) for i in range(1300, 1400)])
    clock[0] += 1
    t.step()  # processed, then lost in a crash
    t.follower.close()
    t2 = Tailer(TailOptions(paths=[str(logs)], state_dir=state, once=True))
    t2.run()
    saved = json.loads((tmp_path / "state" / STATE_FILE).read_text())["totals"]
    assert saved["lines"] == saved["records"] == 1401
    assert saved["hits"] == {"xid-79": 1}
