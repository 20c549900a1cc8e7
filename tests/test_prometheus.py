"""``l4lite tail --metrics-port``: /metrics scraped over HTTP while tail follows growing files, read with
prometheus_client's own parser; and the Grafana dashboard asks only for metrics that exist."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from l4lite.live.metrics import MetricsSnapshot, render

parser = pytest.importorskip("prometheus_client.parser")

XID = "NVRM: Xid (PCI:0000:cb:00): 79, pid=1234, name=python, GPU has fallen off the bus."
DOCS = Path(__file__).resolve().parent.parent / "docs"


def iteration_line(i: int) -> str:
    return (f" [2024-07-11 06:{4 + i // 60:02d}:{i % 60:02d}] iteration {i:8d}/     250 | consumed samples: {256 * i:12d}"
            f" | elapsed time per iteration (ms): 1099.3 | learning rate: 6.000000E-05 | global batch size:   256 |"
            f" lm loss: 1.068435E+01 | loss scale: 1.0 | grad norm: 5.632 | number of skipped iterations:   0 |"
            f" number of nan iterations:   0 |")


def append(path: Path, lines: list[str]) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in lines))


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = response.read().decode("utf-8")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in parser.text_string_to_metric_families(text) for s in family.samples}


def value(samples: dict, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def scrape_until(url: str, ready, what: str, timeout: float = 120.0) -> dict:
    """Scrape until ``ready(samples)``; the last scrape is returned."""
    deadline = time.monotonic() + timeout
    while True:
        samples = scrape(url)
        if ready(samples):
            return samples
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {samples}")
        time.sleep(0.1)


def test_metrics_endpoint_follows_a_growing_job(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    for node in ("node001", "node002"):
        (logs / node).mkdir(parents=True)
        append(logs / node / "rank0.log", [iteration_line(i) for i in range(1, 11)] + [""])
    written = 22
    proc = subprocess.Popen([sys.executable, "-m", "l4lite", "tail", str(logs), "--metrics-port", "0", "--poll",
                             "0.05", "--alerts", str(tmp_path / "alerts.jsonl")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        m = re.search(r"metrics at (http://127\.0\.0\.1:\d+/metrics)", line)
        assert m, line
        url = m.group(1)
        first = scrape_until(url, lambda s: value(s, "l4lite_tail_lines_read_total") == written, "the first lines")
        assert value(first, "l4lite_tail_up") == 1
        assert value(first, "l4lite_tail_lines_skipped_total", reason="blank") == 2
        assert value(first, "l4lite_tail_last_iteration", node="node001") == 10
        # The file grows: one node moves on, the other stops; then its GPU falls off the bus.
        append(logs / "node001" / "rank0.log", [iteration_line(i) for i in range(11, 31)])
        append(logs / "node002" / "dmesg.log", [f"[Thu Jul 11 06:05:00 2024] {XID}"])
        written += 21
        later = scrape_until(url, lambda s: value(s, "l4lite_tail_lines_read_total") == written and value(
            s, "l4lite_tail_alerts_total", category="gpu_hardware", node="node002", kind="new"), "the alert")
        assert value(later, "l4lite_tail_last_iteration", node="node001") == 30
        assert value(later, "l4lite_tail_last_iteration", node="node002") == 10
        assert value(later, "l4lite_tail_rule_hits_total", rule="xid-79") == 1
        assert value(later, "l4lite_tail_records_total") == written - 2
        stalled = value(later, "l4lite_tail_seconds_since_progress", node="node002")
        moving = value(later, "l4lite_tail_seconds_since_progress", node="node001")
        assert stalled is not None and moving is not None and stalled >= moving
        scored = scrape_until(url, lambda s: value(s, "l4lite_tail_incident") == 1 and (
            value(s, "l4lite_tail_node_anomaly_score", node="node002") or 0) > 0, "the diagnosis")
        assert scored[("l4lite_tail_node_anomaly_score", (("node", "node002"),))] >= \
            (value(scored, "l4lite_tail_node_anomaly_score", node="node001") or 0)
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(url.replace("/metrics", "/state"), timeout=10)
        assert err.value.code == 404
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert proc.returncode == 0


def test_busy_port_is_a_one_line_error(tmp_path: Path) -> None:
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        (tmp_path / "a.log").write_text("hello\n")
        proc = subprocess.run([sys.executable, "-m", "l4lite", "tail", str(tmp_path / "a.log"), "--once",
                               "--metrics-port", str(port)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and f"--metrics-port {port}" in proc.stderr


def test_label_values_from_logs_are_escaped() -> None:
    snap = MetricsSnapshot(node_scores={'evil"} 1\nl4lite_tail_up 0\\': 0.5}, rule_hits={"r": 3})
    families = {f.name: f for f in parser.text_string_to_metric_families(render(snap))}
    (sample,) = families["l4lite_tail_node_anomaly_score"].samples
    assert sample.labels["node"] == 'evil"} 1\nl4lite_tail_up 0\\' and sample.value == 0.5
    assert [s.value for s in families["l4lite_tail_up"].samples] == [1]


def test_grafana_dashboard_uses_only_served_metrics() -> None:
    dashboard = json.loads((DOCS / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 6
    served = {f.name for f in parser.text_string_to_metric_families(render(MetricsSnapshot()))}
    used = {name for e in exprs for name in re.findall(r"l4lite_tail_\w+", e)}
    # prometheus_client names counter families without "_total"; the samples keep it
    known = served | {n + "_total" for n in served}
    assert used and used <= known, used - known


FR03 = Path(__file__).resolve().parent.parent / "fixtures" / "flight_recorder" / "fr-03-pickle-rank3-nodump"


def rank_files() -> dict[int, tuple[Path, list[str]]]:
    """fr-03's four per-rank stderr logs (real torchrun lines: every rank prints ``[rankN] step k/20``), by rank."""
    out = {}
    for path in sorted(FR03.glob("*/torchelastic/*/attempt_0/*/stderr.log")):
        lines = path.read_text().splitlines()
        rank = int(re.search(r"\[rank(\d)\]", lines[0]).group(1))
        out[rank] = (path.relative_to(FR03), lines)
    return out


def through(lines: list[str], step: int) -> int:
    """How many of a rank's lines it has printed once its ``step`` line is out."""
    return 1 + next(i for i, line in enumerate(lines) if f" step {step}/20 " in line)


def start_tail(logs: Path, tmp_path: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "l4lite", "tail", str(logs), "--metrics-port", "0", "--poll",
                             "0.05", "--alerts", str(tmp_path / "alerts.jsonl"), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    m = re.search(r"metrics at (http://127\.0\.0\.1:\d+/metrics)", line)
    assert m, line
    return proc, m.group(1)


def test_stuck_rank_staleness_grows_while_its_peers_step(tmp_path: Path) -> None:
    """A real 4-rank torchrun job replayed rank by rank: rank 3 (h100-044) stops after step 3 while ranks 0-2 go
    on to step 8; its per-rank staleness grows from scrape to scrape, theirs stays below it."""
    files = rank_files()
    assert sorted(files) == [0, 1, 2, 3]
    logs = tmp_path / "logs"
    for rel, lines in files.values():
        (logs / rel).parent.mkdir(parents=True, exist_ok=True)
        append(logs / rel, lines[:through(lines, 3)])
    proc, url = start_tail(logs, tmp_path)
    try:
        def at(samples: dict, name: str, node: str, rank: int) -> float | None:
            return value(samples, "l4lite_tail_rank_" + name, node=node, rank=str(rank))

        nodes = {0: "h100-031", 1: "h100-031", 2: "h100-044", 3: "h100-044"}
        first = scrape_until(url, lambda s: all(at(s, "last_iteration", nodes[r], r) == 3 for r in range(4)),
                             "step 3 of every rank")
        assert value(first, "l4lite_tail_progress_ranks") == 4
        stuck_seen = []
        for step in range(4, 9):  # ranks 0-2 print their real step line; rank 3 prints nothing
            time.sleep(1.0)
            for rank in (0, 1, 2):
                rel, lines = files[rank]
                append(logs / rel, lines[through(lines, step - 1):through(lines, step)])
            now = scrape_until(url, lambda s, k=step: all(at(s, "last_iteration", nodes[r], r) == k
                                                          for r in (0, 1, 2)), f"step {step}")
            stuck = at(now, "seconds_since_progress", "h100-044", 3)
            peers = [at(now, "seconds_since_progress", nodes[r], r) for r in (0, 1, 2)]
            assert at(now, "last_iteration", "h100-044", 3) == 3
            assert stuck is not None and all(p is not None and p < stuck for p in peers), (stuck, peers)
            stuck_seen.append(stuck)
        assert stuck_seen == sorted(stuck_seen) and stuck_seen[-1] - stuck_seen[0] >= 3.0, stuck_seen
        assert max(p for p in peers if p is not None) < stuck_seen[-1] / 2
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert proc.returncode == 0


def test_rank_series_are_capped_to_the_stalest(tmp_path: Path) -> None:
    """``--metrics-ranks 1``: one rank's two series (the stalest), while ``progress_ranks`` still counts all."""
    files = rank_files()
    logs = tmp_path / "logs"
    for rank, (rel, lines) in files.items():
        (logs / rel).parent.mkdir(parents=True, exist_ok=True)
        append(logs / rel, lines[:through(lines, 3 if rank == 2 else 8)])
    proc, url = start_tail(logs, tmp_path, "--metrics-ranks", "1")
    try:
        samples = scrape_until(url, lambda s: value(s, "l4lite_tail_progress_ranks") == 4, "four ranks")
        shown = {labels: v for (name, labels), v in samples.items() if name == "l4lite_tail_rank_last_iteration"}
        assert shown == {(("node", "h100-044"), ("rank", "2")): 3}
        assert sum(name == "l4lite_tail_rank_seconds_since_progress" for name, _ in samples) == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert proc.returncode == 0


def test_rank_staleness_by_the_wall_clock_and_capped() -> None:
    """Staleness restarts when a rank's iteration or line count moves; a rank first known by number keeps its
    time once its node is learnt; ``max_ranks`` keeps the stalest; 0 keeps none."""
    from l4lite.live.metrics import TailMetrics
    from l4lite.scan.scanner import RankProgress

    def tick(m: TailMetrics, now: float, *ranks: RankProgress) -> MetricsSnapshot:
        return m.update(now=now, lines_read=0, records=0, files=0, skipped={}, rule_hits={}, progress={},
                        incident=None, diagnose_seconds=0.0, ranks=ranks)

    m = TailMetrics(max_ranks=2)
    tick(m, 100.0, RankProgress("rank:0", 0, 5, 5), RankProgress("n1", 1, 5, 5), RankProgress("n1", 2, 5, 5))
    snap = tick(m, 110.0, RankProgress("n0", 0, 5, 5), RankProgress("n1", 1, 6, 6), RankProgress("n1", 2, 5, 5))
    assert snap.progress_ranks == 3
    assert snap.rank_since_progress == {("n0", "0"): 10.0, ("n1", "2"): 10.0}  # rank 1 moved: not shown
    assert snap.rank_last_iteration == {("n0", "0"): 5, ("n1", "2"): 5}
    snap = tick(m, 130.0, RankProgress("n0", 0, 7, 7), RankProgress("n1", 1, 6, 6), RankProgress("n1", 2, 5, 5))
    assert snap.rank_since_progress == {("n1", "2"): 30.0, ("n1", "1"): 20.0}
    assert tick(TailMetrics(max_ranks=0), 1.0, RankProgress("n0", 0, 1, 1)).rank_since_progress == {}
    text = render(snap)
    assert 'l4lite_tail_rank_seconds_since_progress{node="n1",rank="2"} 30.0' in text
