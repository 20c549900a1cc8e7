"""Alerts: one per incident with updates, de-duplication across restarts, JSON lines, webhook delivery."""

from __future__ import annotations

import http.server
import io
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from l4lite.diagnose.incident import Evidence, Incident, Suspect
from l4lite.live.alerts import (
    ALERT_SCHEMA,
    AlertTracker,
    JsonLinesSink,
    WebhookSink,
    incident_id,
    read_alert_log,
    slack_body,
)


def ev(line: int, rule: str | None, role: str = "root", node: str = "node017", text: str = "x") -> Evidence:
    return Evidence(file="node017/dmesg.log", line=line, node=node, rank=None, time="2026-01-01T00:00:00Z",
                    text=text, template_id="t1", rule=rule, role=role, score=1.0)


def incident(category: str = "gpu_hardware", suspects=("node017",), evidence=None, phase="train") -> Incident:
    return Incident(status="incident", category=category, phase=phase, iteration=100, failure_time=None,
                    summary=f"{category} on {suspects[0] if suspects else 'job'}",
                    suspects=[Suspect(n, 1.0 - i * 0.1, ["r"]) for i, n in enumerate(suspects)],
                    evidence=list(evidence if evidence is not None else [ev(10, "xid-79")]))


def test_one_alert_then_updates_only_on_news() -> None:
    t = AlertTracker()
    first = t.observe(incident(), now=1.0)
    assert first is not None and first.kind == "new" and first.seq == 1
    assert first.alert_id == incident_id("gpu_hardware", "node017", "xid-79", "node017/dmesg.log:10")
    assert t.observe(incident(), now=2.0) is None  # same verdict again: nothing to say
    more = incident(evidence=[ev(10, "xid-79"), ev(11, "xid-79")])
    upd = t.observe(more, now=3.0)
    assert upd is not None and upd.kind == "update" and upd.seq == 2 and upd.alert_id == first.alert_id
    assert upd.changes == ["1 more root-cause line(s)"]
    assert t.observe(more, now=4.0) is None
    new_rule = incident(evidence=[ev(10, "xid-79"), ev(11, "xid-79"), ev(12, "nccl-ib-error", "symptom")])
    upd2 = t.observe(new_rule, now=5.0)
    assert upd2 is not None and "new evidence rules: nccl-ib-error" in upd2.changes
    wider = incident(suspects=("node017", "node003"), evidence=new_rule.evidence)
    upd3 = t.observe(wider, now=6.0)
    assert upd3 is not None and upd3.changes == ["new suspects: node003"] and upd3.seq == 4
    # Fewer facts than already told (e.g. after a restart) say nothing.
    assert t.observe(incident(), now=7.0) is None


def test_a_flood_of_root_lines_is_announced_when_it_doubles() -> None:
    t = AlertTracker()
    assert t.observe(incident(evidence=[ev(1, "xid-79")]), now=1.0).kind == "new"
    kinds = []
    for n in range(2, 10):
        a = t.observe(incident(evidence=[ev(i, "xid-79") for i in range(1, n + 1)]), now=float(n))
        kinds.append(a.seq if a else None)
    assert kinds == [2, None, 3, None, None, None, 4, None]  # at 2, 4 and 8 root lines


def test_category_change_is_an_update_and_flapping_is_not_repeated() -> None:
    t = AlertTracker()
    a = t.observe(incident(category="network", evidence=[ev(5, "ib-link-down")]), now=1.0)
    b = t.observe(incident(category="gpu_hardware", evidence=[ev(5, "ib-link-down")]), now=2.0)
    assert a is not None and b is not None and b.alert_id == a.alert_id
    assert b.changes == ["category network -> gpu_hardware"]
    assert t.observe(incident(category="network", evidence=[ev(5, "ib-link-down")]), now=3.0) is None


def test_a_quiet_alert_is_closed_and_a_later_failure_is_new() -> None:
    t = AlertTracker(reopen_after=600)
    a = t.observe(incident(), now=1000.0)
    assert t.observe(incident(evidence=[ev(10, "xid-79"), ev(11, "xid-79")]), now=1200.0).kind == "update"
    later = t.observe(incident(evidence=[ev(500, "xid-79")]), now=5000.0)
    assert later is not None and later.kind == "new" and later.alert_id != a.alert_id


def test_distinct_incidents_get_distinct_alerts() -> None:
    t = AlertTracker()
    a = t.observe(incident(), now=1.0)
    b = t.observe(incident(category="storage", suspects=("node002",), evidence=[ev(1, "lustre-evict", node="node002")]),
                  now=2.0)
    assert a is not None and b is not None and a.alert_id != b.alert_id
    assert b.kind == "new"


def test_healthy_verdict_gives_no_alert() -> None:
    t = AlertTracker()
    healthy = Incident(status="healthy", category=None, phase=None, iteration=None, failure_time=None, summary="ok")
    assert t.observe(healthy) is None


def test_state_round_trip_and_absorbing_the_alert_log(tmp_path: Path) -> None:
    t = AlertTracker()
    alert = t.observe(incident(), now=1.0)
    assert alert is not None
    restored = AlertTracker()
    restored.load_state(json.loads(json.dumps(t.to_state())))
    assert restored.observe(incident(), now=2.0) is None
    # An alert written just before a crash (not in the saved state) is learnt from the log instead.
    log = tmp_path / "alerts.jsonl"
    sink = JsonLinesSink(path=log)
    sink.emit(alert)
    sink.close()
    with open(log, "a") as fh:
        fh.write('{"schema": "l4lite.alert/1", "alert_id": "torn')  # a torn last line
    fresh = AlertTracker()
    for row in read_alert_log(log):
        fresh.absorb(row)
    assert fresh.observe(incident(), now=3.0) is None
    assert fresh.observe(incident(evidence=[ev(10, "xid-79"), ev(11, "xid-79")]), now=4.0).seq == 2


def test_json_lines_fields() -> None:
    out = io.StringIO()
    t = AlertTracker()
    JsonLinesSink(stream=out).emit(t.observe(incident(), now=1.0))
    row = json.loads(out.getvalue())
    assert row["schema"] == ALERT_SCHEMA and row["kind"] == "new" and row["category"] == "gpu_hardware"
    e = row["evidence"][0]
    for key in ("file", "line", "node", "rank", "time", "text", "template_id", "rule", "role", "score"):
        assert key in e
    assert row["suspects"][0]["node"] == "node017"


def test_slack_body_shape() -> None:
    t = AlertTracker()
    body = slack_body(t.observe(incident(), now=1.0))
    assert "gpu_hardware" in body["text"] and "node017" in body["text"]
    assert body["blocks"][0]["type"] == "header"
    assert all(len(b.get("text", {}).get("text", "")) <= 3000 for b in body["blocks"])


class _Recorder(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server API
        server = self.server
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        server.attempts += 1
        if server.fail_first > 0:
            server.fail_first -= 1
            self.send_response(503)
            self.end_headers()
            return
        server.bodies.append(json.loads(body))
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args) -> None:
        pass


@contextmanager
def local_server(fail_first: int = 0) -> Iterator[http.server.HTTPServer]:
    server = http.server.HTTPServer(("127.0.0.1", 0), _Recorder)
    server.bodies, server.attempts, server.fail_first = [], 0, fail_first
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_webhook_delivers_with_retries() -> None:
    warnings: list[str] = []
    t = AlertTracker()
    with local_server(fail_first=2) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        sink = WebhookSink(url, warn=warnings.append, retries=3, backoff=0.01)
        sink.emit(t.observe(incident(), now=1.0))
        sink.close(timeout=10)
        assert server.attempts == 3
        assert len(server.bodies) == 1 and "blocks" in server.bodies[0] and "text" in server.bodies[0]
    assert sink.sent == 1 and not warnings


def test_webhook_failure_warns_and_never_raises() -> None:
    warnings: list[str] = []
    t = AlertTracker()
    with local_server(fail_first=100) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        sink = WebhookSink(url, warn=warnings.append, retries=2, backoff=0.01)
        sink.emit(t.observe(incident(), now=1.0))
        sink.close(timeout=10)
        assert server.attempts == 3
    assert sink.failed == 1 and any("not delivered" in w and "503" in w for w in warnings)


def test_webhook_unreachable_warns() -> None:
    import socket

    with socket.socket() as s:  # a port with nobody listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    warnings: list[str] = []
    sink = WebhookSink(f"http://127.0.0.1:{port}/", warn=warnings.append, retries=1, backoff=0.01, timeout=2)
    sink.emit(AlertTracker().observe(incident(), now=1.0))
    sink.close(timeout=10)
    assert sink.failed == 1 and len(warnings) == 1
