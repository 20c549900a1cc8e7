"""The report as the on-call engineer reads it: who is blamed up front, what the first screen says, what a
ticket spends its few evidence entries on. Each test renders a small incident and asserts on the text."""

from __future__ import annotations

import re
from html import unescape

from l4lite.diagnose.incident import EVIDENCE_TEXT_CHARS, Evidence, Incident, PhaseSpan, Suspect
from l4lite.report.charts import fit_label, timeline
from l4lite.report.facts import lines_kept, ticket_text
from l4lite.report.html import render_html
from l4lite.report.markdown import render_markdown
from l4lite.report.view import duration


def text_of(html: str) -> str:
    """The page's visible text, tags dropped and whitespace folded."""
    body = re.sub(r"(?s)<(script|style)\b.*?</\1>", " ", html)
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", body)))


def ev(file: str, node: str, role: str, rank: int | None = 3, explain: str = "The program failed with RuntimeError",
       rule: str = "python-exception") -> Evidence:
    return Evidence(file=file, line=7, end_line=17, node=node, rank=rank, time="2026-12-03T14:38:23.219Z",
                    text="Traceback (most recent call last):\nRuntimeError: boom", template_id="t1", rule=rule,
                    role=role, score=1.0, explain=explain)


def two_node_incident(**changes: object) -> Incident:
    """The shape of most real two-node failures: the root node, and a peer that only logged the teardown."""
    inc = Incident(
        status="incident", category="software", phase="train", iteration=16,
        failure_time="2026-12-03T14:38:29.234Z", summary="Software fault on node-a.",
        suspects=[Suspect("node-a", 1.0, ["root: The program failed with RuntimeError", "cascade: teardown"]),
                  Suspect("peer-b", 0.8, ["confirmation: torchelastic names rank 1 as the first failure",
                                          "cascade: The launcher is tearing down the remaining workers"])],
        evidence=[ev("node-a/console.log", "node-a", "root"),
                  ev("node-a/torchelastic/attempt_0/1/stderr.log", "node-a", "root"),
                  ev("peer-b/console.log", "peer-b", "cascade", rank=None, explain="teardown", rule="launcher-teardown")],
        scope="node", confidence=0.3)
    for k, v in changes.items():
        setattr(inc, k, v)
    return inc


def test_a_peer_with_only_consequences_is_not_blamed_beside_the_root_node() -> None:
    inc = two_node_incident()
    md = render_markdown(inc)
    title = md.splitlines()[0]
    assert "node-a" in title and "peer-b" not in title
    assert "Lines read as consequences of the failure on `node-a`: `peer-b` 0.80" in md
    assert "teardown" not in md.split("### Suspects", 1)[1].split("###", 1)[0].split("consequences", 1)[1]
    page = render_html(inc)
    assert re.search(r'class="suspect follows"[^>]*>\s*<span class="suspect-node">peer-b', page)
    assert "its lines read as consequences of the failure on node-a" in text_of(page)
    head = ticket_text(inc).splitlines()[0]
    assert "node-a (100%)" in head and "read as consequences: peer-b" in head


def test_a_second_node_with_its_own_root_line_stays_blamed() -> None:
    inc = two_node_incident()
    inc.suspects[1].reasons = ["root: The program failed with ray.train.WorkerGroupError"]
    assert "peer-b" in render_markdown(inc).splitlines()[0]
    assert 'class="suspect follows"' not in render_html(inc)


def test_the_same_traceback_tee_d_in_two_files_takes_one_ticket_entry() -> None:
    md = render_markdown(two_node_incident())
    assert md.count("- **root**") == 1
    assert "also written at `node-a/torchelastic/attempt_0/1/stderr.log:7-17`" in md
    assert "Evidence (2 of 2; 1 copies of these in other files folded in)" in md


def test_healthy_first_screen_says_lines_read_warnings_and_the_phase_reached() -> None:
    """Incidents carry their input accounting flat in ``stats``; the healthy facts must read it there."""
    inc = Incident(status="healthy", category=None, phase=None, iteration=40, failure_time=None,
                   summary="No incident.", stats={"files": 11, "lines_read": 153, "lines_in_records": 108,
                                                  "warnings": ["_meta/run.json: skipped (not_a_log)"]},
                   phases=[PhaseSpan("train", "2026-12-03T14:38:07Z", "2026-12-03T14:38:08Z"),
                           PhaseSpan("shutdown", "2026-12-03T14:38:10Z", "2026-12-03T14:38:10Z")])
    text = text_of(render_html(inc))
    assert re.search(r"Lines read\s+153\b", text)
    assert re.search(r"Warnings\s+1\b", text)
    assert re.search(r"Phase reached\s+shutdown\b", text)


def test_clock_skew_is_on_the_first_screen_in_hours() -> None:
    skew = {"reference": "worker-0", "threshold_seconds": 1.0, "largest_seconds": 17999.998, "exceeds": True,
            "corrected": True, "nodes": {"worker-1": {"seconds": 17999.998, "lines": 1}}, "note": "clocks disagree"}
    page = render_html(two_node_incident(job={"clock_skew": skew}))
    verdict = text_of(page.split('<nav class="toc"', 1)[0])
    assert re.search(r"Node clocks\s+worker-1 is \+5 h 0 min off; times corrected", verdict)
    agree = dict(skew, exceeds=False)
    assert "Node clocks" not in text_of(render_html(two_node_incident(job={"clock_skew": agree})))


def test_duration_reads_in_the_largest_unit() -> None:
    assert [duration(x) for x in (17999.998, -0.4, 59.96, 200, 3599)] == \
        ["+5 h 0 min", "-0.4 s", "+1 min 0 s", "+3 min 20 s", "+1 h 0 min"]


def test_hang_table_drops_columns_no_rank_has() -> None:
    hang = {"stuck_ranks": [2], "stuck_nodes": ["node-b"], "source": "logs",
            "per_rank_last_seq": {"2": {"node": "node-b", "state": "killed by its agent while busy"},
                                  "0": {"node": "node-a", "state": "timed out"}}}
    page = render_html(two_node_incident(hang=hang))
    table = page.split('class="hang-table"', 1)[1].split("</table>", 1)[0]
    assert "Last entered" not in table and "Last collective" not in table and "State" in table
    assert "No collective sequence numbers" in text_of(page)
    hang["per_rank_last_seq"]["2"].update(last_entered=36, last_completed=35, last_op="gloo:broadcast")
    table = render_html(two_node_incident(hang=hang)).split('class="hang-table"', 1)[1].split("</table>", 1)[0]
    assert "Last entered" in table and "gloo:broadcast" in table


def test_long_node_names_keep_their_distinguishing_end_in_chart_rows() -> None:
    names = ["llm-pretrain-7f9c4-worker-0", "llm-pretrain-7f9c4-worker-1"]
    labels = [fit_label(n, 16) for n in names]
    assert all(len(x) == 16 for x in labels) and labels[0] != labels[1]
    assert labels[1].endswith("worker-1") and labels[1].startswith("llm-pre")
    events = [{"time": "2026-12-03T14:38:23Z", "node": n, "role": "root", "label": "x"} for n in names]
    t = timeline({"events": events, "lanes": names}, [], max_events=50, failure_time=None, suspects=names[:1],
                 title="t")
    assert t is not None
    lanes = {lane["full"]: lane["label"] for lane in t.lanes}
    assert lanes[names[1]].endswith("worker-1") and len(lanes[names[1]]) < len(names[1])


def test_html_evidence_folds_the_tee_d_copy_into_its_first_row() -> None:
    page = render_html(two_node_incident())
    table = page.split('id="evidence-table"', 1)[1].split("</table>", 1)[0]
    assert table.count('<tr class="ev ') == 2
    assert "also written at node-a/torchelastic/attempt_0/1/stderr.log:7–17" in text_of(table)
    assert "1 copies in other files folded into their first row" in text_of(page)


def test_a_record_cut_by_the_diagnosis_says_so() -> None:
    """A 62-line launcher summary kept as its first 4000 characters must not read as the whole block."""
    text = "\n".join(f"  File \"/venv/lib/python3.11/site-packages/torch/x.py\", line {i}, in f" + "x" * 60
                     for i in range(57))[:EVIDENCE_TEXT_CHARS]
    big = Evidence(file="peer-b/console.log", line=89, end_line=150, node="peer-b", rank=1, time=None, text=text,
                   template_id="t9", rule="elastic-root-cause", role="confirmation", score=0.3, explain="summary")
    inc = two_node_incident()
    inc.evidence.append(big)
    kept = text.count("\n") + 1
    assert kept < 62
    assert f"(the first {kept} of the record's 62 lines; the rest is in the file)" in render_markdown(inc)
    assert f"[the first {kept} of the record's 62 lines; the rest is in the file]" in text_of(render_html(inc))
    whole = Evidence(**{**big.__dict__, "end_line": 89 + text.count("\n")})
    assert lines_kept(whole) is None

