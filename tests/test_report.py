"""The HTML report: sections, escaping, self-containment, size bounds, context lines and the report command."""

from __future__ import annotations

import gzip
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from l4lite.cli.main import main
from l4lite.diagnose.incident import Evidence, Incident, Suspect
from l4lite.errors import L4Error
from l4lite.report.charts import lttb, pool_columns
from l4lite.report.context import attach_context, read_lines
from l4lite.report.html import MAX_BYTES, load_incident, render_html, script_json
from l4lite.resources import templates_dir

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "report"
HOSTILE = ["<script>alert(1)</script>", "\"><img src=x onerror=alert(1)>", "{{ 7*7 }}",
           "javascript:alert(document.cookie)", "</script><script>alert(2)</script>", "<svg onload=alert(3)>"]


class Page(HTMLParser):
    """Collects the elements, attributes and text of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        (self.scripts if self._in_script else self.text).append(data)


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    page.close()
    return page


@pytest.fixture(scope="module")
def gpu() -> Incident:
    return load_incident(FIX / "gpu_16node.json")


@pytest.fixture(scope="module")
def gpu_html(gpu: Incident) -> str:
    return render_html(gpu, logs=[str(FIX / "gpu_job")])


def test_templates_ship_with_the_package() -> None:
    names = {p.name for p in templates_dir().iterdir()}
    assert {"report.html.j2", "_macros.j2", "_charts.j2", "report.css.j2", "report.js.j2"} <= names


def test_gpu_report_has_every_section_and_the_verdict(gpu_html: str) -> None:
    for section in ("verdict", "actions", "history", "timeline", "heatmap", "health", "evidence", "checklist",
                    "templates", "accounting"):
        assert f'<section id="{section}"' in gpu_html, section
    page = parse(gpu_html)
    text = " ".join(page.text)
    assert "GPU hardware fault on node-07" in text
    assert "Drain node-07" in text and "iteration 18000" in text
    assert "Which device reported an error first?" in text
    assert "llama-70b-run37" in text  # matched fault from the history library
    assert "1,482,113" in text  # input accounting
    assert sum(1 for tag, _ in page.tags if tag == "svg") >= 6  # 2 timelines, heatmap, >= 4 health charts
    rows = [a for tag, a in page.tags if tag == "tr" and "data-role" in a]
    assert len(rows) == 19
    assert {a["data-role"] for a in rows} == {"root", "cascade", "confirmation", "symptom"}
    assert len(gpu_html.encode()) < MAX_BYTES


def test_report_is_self_contained(gpu_html: str) -> None:
    page = parse(gpu_html)
    assert "://" not in gpu_html
    for tag, attrs in page.tags:
        assert "src" not in attrs, tag
        if tag in ("a", "link"):
            assert (attrs.get("href") or "#").startswith("#"), attrs
    assert "@import" not in gpu_html and "url(" not in gpu_html
    csp = next(a["content"] for t, a in page.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert "default-src 'none'" in csp and "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]


def test_hostile_log_text_stays_text() -> None:
    html = render_html(load_incident(FIX / "hostile.json"))
    page = parse(html)
    tags = [t for t, _ in page.tags]
    assert tags.count("script") == 2 and "img" not in tags and "h1" in tags and tags.count("h1") == 1
    assert not [(t, k) for t, a in page.tags for k in a if k.startswith("on")]
    text = "".join(page.text)
    for h in HOSTILE:
        assert h in text, h
    assert "do {{ 7*7 }}" in text and "do 49" not in text
    data = json.loads(page.scripts[0])
    assert "<script>alert(1)</script>" in data["ticket"]
    assert "<" not in page.scripts[0] and "</script" not in page.scripts[0].lower()
    # NUL and escape sequences from logs never reach the page as control characters
    assert "\x00" not in html and "\x1b" not in html


def test_script_json_cannot_close_the_script_element() -> None:
    out = script_json({"a": "</script><script>alert(1)</script>", "b": "x\u2028y & <!--"})
    assert "<" not in out and ">" not in out and "&" not in out and "\u2028" not in out
    assert json.loads(out) == {"a": "</script><script>alert(1)</script>", "b": "x\u2028y & <!--"}


def test_healthy_job_gets_a_no_incident_report_with_health_charts() -> None:
    html = render_html(load_incident(FIX / "healthy.json"))
    text = " ".join(parse(html).text)
    assert "NO INCIDENT" in text and "No incident: the job looks healthy" in text
    assert html.count('<figure class="chart">') == 3
    assert 'id="evidence-table"' not in html and "No evidence lines." in text


def test_global_numerical_incident_blames_no_node_and_answers_the_checklist() -> None:
    inc = load_incident(FIX / "numerical_global.json")
    html = render_html(inc)
    text = " ".join(parse(html).text)
    assert "Numerical (loss / gradients) fault — job-wide" in text
    assert "job-wide fault · no node blamed" in text
    assert "non-finite values" in text  # NaN losses drawn as red ticks
    rows = re.findall(r'<tr class="st-(\w+)"><td class="icon">.*?<th scope="row">(.*?)</th>', html, re.S)
    status = {q: s for s, q in rows}
    assert status["Did the gradient norm grow before the loss spike?"] == "yes"
    assert status["Did the validation loss start rising earlier?"] == "yes"
    assert status["Is the last checkpoint complete?"] == "unknown"


def test_minimal_incident_renders() -> None:
    inc = Incident(status="incident", category=None, phase=None, iteration=None, failure_time=None, summary="")
    html = render_html(inc)
    assert "Unclassified fault" in html and "No timed events." in html


def _huge_incident() -> Incident:
    nodes = [f"node-{i:02d}" for i in range(16)]
    big, amp = "<" * 200_000, "&\"<>" * 5_000
    ctx = [{"line": k, "text": amp} for k in range(1, 60)]
    evidence = [Evidence(file=f"{nodes[i % 16]}/trainer.log", line=i + 1, node=nodes[i % 16], rank=i % 128,
                         time=f"2024-05-07T03:{(i // 60) % 60:02d}:{i % 60:02d}Z", text=big, template_id="t",
                         rule="r", role=("root", "cascade", "symptom")[i % 3], score=0.5, context=ctx)
                for i in range(5000)]
    times = [f"2024-05-07T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}Z" for i in range(5000)]
    series = [[i, (i % 97) / 97] for i in range(50_000)]
    extra = {
        "nodes": nodes,
        "heatmap": {"nodes": nodes, "times": times, "bucket_seconds": 1.0,
                    "scores": [[((i * 7 + k) % 100) / 100 for i in range(5000)] for k in range(16)]},
        "health": {"series": {k: series for k in ("loss", "grad_norm", "iter_time", "val_loss")},
                   "per_node_iter_time": {n: series[:10_000] for n in nodes}, "failure_iteration": 49_999},
        "timeline": {"lanes": nodes[:3], "events": [{"time": times[i % 5000], "node": nodes[i % 16], "role": "cascade",
                                                     "label": "<" * 500, "rule": None} for i in range(20_000)]},
        "templates": {"total": 3000, "top": [{"template_id": str(i), "template": "<" * 3000, "count": i,
                                              "nodes": nodes, "first_time": None} for i in range(3000)]},
    }
    return Incident(status="incident", category="gpu_hardware", phase="train", iteration=1,
                    failure_time="2024-05-07T01:00:00Z", summary="<" * 100_000,
                    suspects=[Suspect(node=n, score=0.5, reasons=["<" * 5000] * 20) for n in nodes],
                    evidence=evidence, recommendations=["<" * 5000] * 100,
                    stats={"accounting": {"files": 1, "lines_read": 1, "lines_in_records": 1, "records": 1,
                                          "lines_skipped": {}, "warnings": ["<" * 5000] * 3000}},
                    extra=extra)


def test_size_is_bounded_whatever_the_log_length(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    html = render_html(_huge_incident(), out)
    size = len(html.encode())
    assert size < MAX_BYTES
    assert out.read_text(encoding="utf-8") == html
    text = " ".join(parse(html).text)
    assert "Left out of this page" in text
    assert re.search(r"evidence: \d+ of 5000 rows not shown", text)
    assert re.search(r"of 50000 points drawn \(LTTB downsampling\)", text)
    assert "5000 time buckets pooled into" in text
    assert re.search(r"events not drawn", text)
    assert re.search(r"warnings: \d+ of 3000 not shown", text)


def test_lttb_keeps_ends_and_spikes() -> None:
    pts = [(float(i), 1.0) for i in range(10_000)]
    pts[4321] = (4321.0, 50.0)
    out = lttb(pts, 100)
    assert len(out) == 100 and out[0] == pts[0] and out[-1] == pts[-1]
    assert (4321.0, 50.0) in out
    assert lttb(pts[:10], 100) == pts[:10]


def test_heatmap_pooling_keeps_the_maximum() -> None:
    row = [0.0] * 1000
    row[517] = 0.9
    pooled = pool_columns(row, 50)
    assert len(pooled) == 50 and max(pooled) == 0.9 and pooled[25] == 0.9


# ------------------------------------------------------------------------------------------- context lines
def test_logs_add_context_lines_from_plain_and_gzip_files(gpu: Incident) -> None:
    inc = Incident.from_dict(gpu.to_dict())
    notes = attach_context(inc, [str(FIX / "gpu_job")])
    assert notes == []
    xid = inc.evidence[0]
    assert xid.rule == "xid-79"
    assert [c["line"] for c in xid.context] == [4, 5, 6, 7, 8, 9, 10]
    assert "GPU Board Serial Number" in xid.context[2]["text"]
    gz = next(e for e in inc.evidence if e.file.endswith(".gz"))
    assert any("detected by watchdog" in c["text"] for c in gz.context)


def test_report_without_logs_has_no_context_and_with_logs_has_it(gpu: Incident, gpu_html: str) -> None:
    assert "GPU Board Serial Number" in gpu_html
    assert "GPU Board Serial Number" not in render_html(gpu)


def test_context_never_reads_outside_the_log_folder(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET\n" * 5)
    inc = Incident(status="incident", category=None, phase=None, iteration=None, failure_time=None, summary="",
                   evidence=[Evidence(file=f, line=2, node=None, rank=None, time=None, text="", template_id="",
                                      rule=None, role="root", score=1.0)
                             for f in ("../secret.txt", str(secret), "/etc/passwd")])
    (job / "core.1234").write_bytes(b"\x7fELF" + bytes(range(256)) * 40)
    inc.evidence.append(Evidence(file="core.1234", line=1, node=None, rank=None, time=None, text="",
                                 template_id="", rule=None, role="root", score=1.0))
    notes = attach_context(inc, [str(job)])
    assert all(not e.context for e in inc.evidence)
    assert len(notes) == 4 and "no context" in notes[-1]


def test_context_reading_survives_truncated_gzip_and_huge_lines(tmp_path: Path) -> None:
    body = "".join(f"line {i}\n" for i in range(1, 2000)).encode()
    (tmp_path / "a.log.gz").write_bytes(gzip.compress(body)[:-30])
    got = read_lines(tmp_path / "a.log.gz", {5, 6, 999_999})
    assert got[5] == "line 5" and got[6] == "line 6"
    (tmp_path / "b.log").write_bytes(b"x" * 10_000_000 + b"\nafter\r\n\xff\xfebad\n")
    got = read_lines(tmp_path / "b.log", {1, 2, 3})
    assert got[1].startswith("xxxx") and len(got[1]) < 2100 and "rest of the line not shown" in got[1]
    assert got[2] == "after" and got[3].endswith("bad")
    (tmp_path / "c.log").write_bytes("\n".join(f"zeile {i} é" for i in range(1, 9)).encode("utf-16"))
    assert read_lines(tmp_path / "c.log", {3}) == {3: "zeile 3 é"}


# ------------------------------------------------------------------------------------------- the command
def test_report_command_writes_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sub" / "report.html"
    assert main(["report", str(FIX / "gpu_16node.json"), "-o", str(out), "--logs", str(FIX / "gpu_job")]) == 0
    html = out.read_text(encoding="utf-8")
    assert "GPU Board Serial Number" in html and "wrote" in capsys.readouterr().err
    assert not list(out.parent.glob(".*.tmp"))


@pytest.mark.parametrize("content, message", [
    (None, "no such incident file"),
    ("{not json", ":1: invalid JSON"),
    ("[1, 2]", "not an l4lite incident"),
    ('{"schema": "other/1"}', "not an l4lite incident"),
    ('{"schema": "l4lite.incident/1"}', "status is missing"),
    ('{"schema": "l4lite.incident/1", "status": "incident", "category": null, "phase": null, "iteration": null, '
     '"failure_time": null, "summary": "", "evidence": [{"file": "a", "line": "7", "node": null, "rank": null, '
     '"time": null, "text": "", "template_id": "", "rule": null, "role": "root", "score": 1}]}',
     "evidence[0].line should be an integer, not text"),
])
def test_report_command_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            content: str | None, message: str) -> None:
    path = tmp_path / "incident.json"
    if content is not None:
        path.write_text(content)
    assert main(["report", str(path), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and str(path) in err and message in err
    assert not (tmp_path / "r.html").exists()


def test_report_command_rejects_missing_logs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(FIX / "healthy.json"), "-o", str(tmp_path / "r.html"),
                 "--logs", str(tmp_path / "nope")]) == 2
    assert "nope: no such file or directory" in capsys.readouterr().err


def _paths(data: object, prefix: tuple = ()) -> list[tuple]:
    out: list[tuple] = []
    items = data.items() if isinstance(data, dict) else enumerate(data[:2]) if isinstance(data, list) else []
    for key, value in items:
        out.append((*prefix, key))
        out += _paths(value, (*prefix, key))
    return out


_SMALL = json.loads((FIX / "hostile.json").read_text(encoding="utf-8"))
_SMALL["evidence"] = _SMALL["evidence"][:3]
_PATHS = [p for p in _paths(_SMALL) if p != ("schema",)]
_JUNK = [None, 5, -1, 1.5, float("nan"), "x", "", [], {}, [1], {"a": 1}, True, [None], [[1, None]], ["a"]]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(_PATHS), st.sampled_from(_JUNK)), min_size=1, max_size=3))
def test_damaged_incidents_give_an_error_line_or_a_page(edits: list[tuple[tuple, object]]) -> None:
    data = json.loads(json.dumps(_SMALL))
    for path, value in edits:
        node = data
        try:
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue
    try:
        incident = Incident.from_dict(data)
    except (TypeError, ValueError, AttributeError):
        return  # load_incident turns these into one-line errors (tested above)
    try:
        html = render_html(incident)
    except L4Error as exc:
        assert "\n" not in str(exc)
        return
    assert html.startswith("<!DOCTYPE html>") and "</html>" in html
