"""The report's view model: everything the templates show, computed from an ``Incident`` and bounded by ``Caps``.

Each section is built from the incident alone (never from logs or detectors). Log text is cleaned (control
characters) and clipped here, and escaped by the templates; the free-form chart data of ``Incident.extra`` is
read defensively: a malformed section is left out with a note instead of failing the whole report. Everything
that is left out to keep the page small is counted in ``view["omitted"]``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from markupsafe import escape

from l4lite.diagnose.incident import Evidence, Incident, Suspect
from l4lite.report import charts as rc
from l4lite.report.facts import CATEGORY_LABELS, copy_key, follows_only, lines_kept
from l4lite.report.scale import clean, fmt_time, parse_time, xy_arrays
from l4lite.version import __version__

_ACCOUNTING_KEYS = frozenset({"accounting", "files", "lines_read", "lines_in_records", "records", "lines_unwrapped",
                              "lines_skipped",
                              "files_skipped", "warnings"})
ROLE_ORDER = {"root": 0, "cascade": 1, "symptom": 2, "confirmation": 3, "anomaly": 4}


@dataclass(frozen=True)
class Caps:
    """Upper bounds on what one page shows; tighter levels are tried when a page exceeds the budget."""

    evidence_rows: int = 200
    evidence_bytes: int = 700_000  # escaped HTML of evidence text and context lines
    evidence_chars: int = 2000
    evidence_text_lines: int = 40
    context_lines: int = 14
    context_chars: int = 400
    heatmap_rows: int = 64
    heatmap_cols: int = 180
    series_points: int = 500
    node_series: int = 32
    node_points: int = 200
    timeline_events: int = 200
    templates: int = 40
    template_chars: int = 300
    warnings: int = 50


CAP_LEVELS: tuple[Caps, ...] = (
    Caps(),
    Caps(evidence_rows=100, evidence_bytes=350_000, evidence_chars=1000, context_lines=10, context_chars=240, heatmap_cols=100,
         series_points=300, node_points=120, timeline_events=100, templates=30, template_chars=200),
    Caps(evidence_rows=40, evidence_bytes=150_000, evidence_chars=400, evidence_text_lines=12, context_lines=6, context_chars=160,
         heatmap_rows=32, heatmap_cols=60, series_points=150, node_series=16, node_points=60,
         timeline_events=50, templates=15, template_chars=120, warnings=20),
)


def clip(text: Any, limit: int) -> tuple[str, int]:
    """At most ``limit`` characters of cleaned text, and how many were cut (cut first: lines can be huge)."""
    raw = "" if text is None else str(text)
    return clean(raw[:limit]), max(0, len(raw) - limit)


def build_view(inc: Incident, caps: Caps, shared: dict[str, Any]) -> dict[str, Any]:
    """The template context of one page at one cap level; ``shared`` holds what all levels reuse."""
    extra = inc.extra if isinstance(inc.extra, dict) else {}
    suspects = sorted(inc.suspects, key=lambda s: -float(s.score or 0))
    main = main_suspects(suspects)
    suspect_nodes = [s.node for s in main]
    failure_t = parse_time(inc.failure_time)
    is_incident = inc.status == "incident"
    omitted: list[str] = list(shared["omitted"])
    view: dict[str, Any] = {
        "version": __version__,
        "generated": datetime.now(tz=UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "status": clean(inc.status),
        "tone": "bad" if is_incident else "good" if inc.status == "healthy" else "warn",
        "is_incident": is_incident,
        "category": clean(inc.category) if inc.category else None,
        "category_label": CATEGORY_LABELS.get(inc.category or "", clean(inc.category)) if inc.category else None,
        "phase": clean(inc.phase) if inc.phase else None,
        "iteration": inc.iteration,
        "failure_time": fmt_time(failure_t) if failure_t is not None else clean(inc.failure_time or "") or None,
        "summary": clip(inc.summary, 600)[0] + ("…" if len(inc.summary or "") > 600 else ""),
        "scope": inc.scope,
        "confidence": inc.confidence,
        "suspects": [{"node": clip(s.node, 120)[0], "score": s.score, "category": s.category,
                      "follows": i > 0 and follows_only(s.reasons),
                      "reasons": [clip(r, 300)[0] for r in (s.reasons or [])[:4]]} for i, s in enumerate(main)],
        "other_suspects": clip(", ".join(f"{s.node} {float(s.score or 0) * 100:.0f}%"
                                         for s in suspects[len(main):len(main) + 12]), 300)[0],
        "more_suspects": max(0, len(suspects) - len(main)),
        "recommendations": [clip(r, 600)[0] for r in inc.recommendations[:20]],
        "checkpoint": _kv(inc.checkpoint.get("last_saved") if isinstance(inc.checkpoint, dict) else None),
        "checkpoint_short": _checkpoint_short(inc.checkpoint),
        "job": _kv(_job_facts(inc.job)),
        "job_name": clip((inc.job or {}).get("name") or (inc.job or {}).get("root") or "", 200)[0],
        "nodes_seen": len(extra["nodes"]) if isinstance(extra.get("nodes"), list) else 0,
        "matched_fault": _kv(inc.matched_fault),
        "seen_before": _seen_before(inc.matched_fault),
        "schema": inc.schema,
    }
    view["facts"] = _facts(inc, view)
    view["hang"] = guard("hang", omitted, _hang, inc.hang)
    view["attempts"] = guard("attempts", omitted, _attempts, inc.attempts)
    view["evidence"], view["facets"] = _evidence(inc.evidence, caps, omitted)
    view["evidence_total"] = len(inc.evidence)
    view["evidence_copies"] = sum(len(r["also"]) for r in view["evidence"])
    view["timelines"] = guard("timeline", omitted, _timelines, inc, extra, caps, failure_t, suspect_nodes) or []
    view["phases"] = [{"name": clean(p.name), "start": fmt_time(parse_time(p.start)),
                       "end": fmt_time(parse_time(p.end))} for p in inc.phases[:20]]
    hm = extra.get("heatmap")
    view["heatmap"] = guard("heatmap", omitted, rc.heatmap, hm, suspects=suspect_nodes, max_rows=caps.heatmap_rows,
                             max_cols=caps.heatmap_cols, failure_time=failure_t) if isinstance(hm, dict) else None
    view["health"] = guard("training health", omitted, _health, extra.get("health"), suspect_nodes, caps)
    view["checklist"] = [{"question": clip(c.get("question"), 300)[0], "answer": clip(c.get("answer"), 600)[0],
                          "status": c.get("status") if c.get("status") in ("yes", "no", "unknown") else "unknown"}
                         for c in shared["checklist"][:40] if isinstance(c, dict)]
    view["templates"] = guard("templates", omitted, _templates, extra.get("templates"), caps, omitted)
    view["accounting"] = guard("input accounting", omitted, _accounting, inc.stats, caps, omitted)
    view["stats"] = _kv({k: v for k, v in (inc.stats or {}).items() if k not in _ACCOUNTING_KEYS
                         and not isinstance(v, dict | list)})
    for chart in [*view["timelines"], view["heatmap"], *(view["health"] or {}).get("charts", [])]:
        if chart is not None and chart.note:
            omitted.append(f"{getattr(chart, 'title', 'heatmap')}: {chart.note}")
    view["omitted"] = omitted
    view["page_data"] = {"ticket": clean(shared["ticket"]), "evidence_total": len(inc.evidence),
                         "evidence_shown": len(view["evidence"])}
    return view


def guard(name: str, omitted: list[str], fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Build one section from the free-form chart data; malformed data leaves the section out with a note."""
    try:
        return fn(*args, **kwargs)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, OverflowError) as exc:
        note = f"{name}: left out, the incident's data for it is malformed ({type(exc).__name__})"
        if note not in omitted:
            omitted.append(note)
        return None


def main_suspects(suspects: list[Suspect]) -> list[Suspect]:
    """The suspects worth naming up front (at most 3): the top one and any close to it."""
    if not suspects:
        return []
    top = float(suspects[0].score or 0)
    return [suspects[0]] + [s for s in suspects[1:3] if float(s.score or 0) >= max(0.2, 0.4 * top)]


def _facts(inc: Incident, view: dict[str, Any]) -> list[tuple[str, Any]]:
    """The six facts beside the verdict: the failure for an incident, the run's extent for a healthy job."""
    if view["is_incident"]:
        facts = [("Category", view["category_label"]), ("Phase", view["phase"]), ("Iteration", inc.iteration),
                 ("Failure time", view["failure_time"]), ("Last checkpoint", view["checkpoint_short"]),
                 ("Evidence lines", f"{len(inc.evidence):,}")]
        skew = clock_skew_fact(inc.job)
        return [*facts, ("Node clocks", skew)] if skew else facts
    stats = inc.stats if isinstance(inc.stats, dict) else {}
    acc = stats.get("accounting") if isinstance(stats.get("accounting"), dict) else stats  # nested or flat
    nodes = view["nodes_seen"] or (inc.job or {}).get("nodes")
    read = acc.get("lines_read")
    reached = view["phase"] or next((clean(p.name) for p in reversed(inc.phases) if p.name), None)
    return [("Nodes", nodes), ("Phase reached", reached), ("Last iteration", inc.iteration),
            ("Last checkpoint", view["checkpoint_short"]),
            ("Lines read", f"{read:,}" if isinstance(read, int) else None),
            ("Warnings", len(acc.get("warnings") or []))]


def duration(seconds: float) -> str:
    """A signed offset in the largest units that read well: +5 h 0 min, -3 min 20 s, +0.4 s."""
    sign = "-" if seconds < 0 else "+"
    s = abs(seconds)
    if s < 59.95:
        return f"{sign}{s:.1f} s"
    if s < 3570:
        minutes, secs = divmod(round(s), 60)
        return f"{sign}{minutes} min {secs} s"
    hours, minutes = divmod(round(s / 60), 60)
    return f"{sign}{hours} h {minutes} min"


def clock_skew_fact(job: Any) -> str | None:
    """The largest clock offset between nodes, said on the first screen when it matters: the times on the page
    are then the corrected ones and the raw lines of that node read differently (a node in another time zone)."""
    skew = job.get("clock_skew") if isinstance(job, dict) else None
    if not isinstance(skew, dict) or not skew.get("exceeds"):
        return None
    nodes = skew.get("nodes") if isinstance(skew.get("nodes"), dict) else {}
    offsets = [(n, d.get("seconds")) for n, d in nodes.items()
               if isinstance(d, dict) and isinstance(d.get("seconds"), int | float)]
    if not offsets:
        return None
    node, secs = max(offsets, key=lambda o: abs(o[1]))
    fixed = "times corrected" if skew.get("corrected") else "NOT corrected: compare times across nodes with care"
    return f"{clip(node, 80)[0]} is {duration(float(secs))} off; {fixed}"


def _hang(hang: Any, max_ranks: int = 256) -> dict[str, Any] | None:
    """The stuck rank's table: per rank its node, last collective entered and completed, and its state."""
    if not isinstance(hang, dict):
        return None
    per_rank = hang.get("per_rank_last_seq")
    per_rank = per_rank if isinstance(per_rank, dict) else {}
    stuck = {str(r) for r in hang.get("stuck_ranks") or []}
    ranks = sorted(per_rank, key=lambda r: (r not in stuck, int(r) if str(r).isdigit() else 1 << 30, str(r)))
    rows = []
    for r in ranks[:max_ranks]:
        row = per_rank[r] if isinstance(per_rank[r], dict) else {}
        state = row.get("state")
        if state is None and row.get("entered_stuck_collective") is not None:
            state = "entered it, waiting" if row.get("entered_stuck_collective") else "never entered it"
        if state is None and row.get("dump") is None:
            state = "no dump"
        rows.append({"rank": clip(r, 20)[0], "node": clip(row.get("node") or "?", 120)[0],
                     "last_entered": row.get("last_entered"), "last_completed": row.get("last_completed"),
                     "last_op": clip(row.get("last_op") or "", 60)[0], "state": clip(state or "", 80)[0],
                     "stuck": str(r) in stuck})
    return {"columns": {"last_entered": any(r["last_entered"] is not None for r in rows),
                        "last_completed": any(r["last_completed"] is not None for r in rows),
                        "last_op": any(r["last_op"] for r in rows)},
            "process_group": clip(hang.get("process_group") or "", 120)[0],
            "collective": clip(hang.get("collective") or "", 80)[0], "seq": hang.get("seq"),
            "sizes": clip(hang.get("input_sizes") if hang.get("input_sizes") is not None else "", 120)[0],
            "stuck_ranks": clip(", ".join(str(r) for r in hang.get("stuck_ranks") or []), 200)[0],
            "stuck_nodes": clip(", ".join(str(n) for n in hang.get("stuck_nodes") or []), 300)[0],
            "source": "Flight Recorder dumps" if hang.get("source") == "flight_recorder" else "the logs",
            "rows": rows,
            "more_ranks": max(0, len(ranks) - max_ranks) + _count(hang.get("ranks_not_shown")),
            "stack": [clip(f, 300)[0] for f in (hang.get("stuck_stack") or [])[:12]],
            "waiting_stack": [clip(f, 300)[0] for f in (hang.get("waiting_stack") or [])[:12]]}


def _attempts(attempts: Any, max_rows: int = 50) -> list[dict[str, Any]] | None:
    """A restarted job's attempts, oldest first: each one's own verdict, the one the incident's comes from
    marked."""
    if not isinstance(attempts, list) or len(attempts) < 2:
        return None
    rows = []
    for a in attempts[:max_rows]:
        root = a.get("root") if isinstance(a.get("root"), dict) else {}
        label = CATEGORY_LABELS.get(a.get("category") or "", a.get("category") or "")
        rows.append({"attempt": a.get("attempt"), "verdict": bool(a.get("verdict")),
                     "status": clip(a.get("status") or "", 20)[0], "category": clip(label, 60)[0],
                     "phase": clip(a.get("phase") or "", 20)[0],
                     "nodes": clip(", ".join(str(n) for n in a.get("nodes") or []), 200)[0],
                     "pods": clip(", ".join(str(p) for p in a.get("pods") or []), 300)[0],
                     "time": fmt_time(parse_time(a.get("failure_time"))),
                     "root": clip(root.get("text") or "", 300)[0],
                     "where": clip(f"{root.get('file')}:{root.get('line')}" if root.get("file") else "", 300)[0]})
    return rows


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def _seen_before(fault: Any) -> str:
    if not isinstance(fault, dict) or not fault:
        return ""
    parts = [str(fault[k]) for k in ("summary", "job_id") if fault.get(k)]
    sim = fault.get("similarity")
    if isinstance(sim, int | float):
        parts.append(f"similarity {sim:.2f}")
    if fault.get("resolution"):
        parts.append(f"resolution: {fault['resolution']}")
    return clip(" · ".join(parts) or "a matching fault is in the history library", 300)[0]


def _checkpoint_short(checkpoint: Any) -> str:
    last = checkpoint.get("last_saved") if isinstance(checkpoint, dict) else None
    if not isinstance(last, dict):
        return "none seen"
    it = last.get("iteration")
    head = f"iteration {it}" if it is not None else "saved"
    done = last.get("complete")
    state = "complete" if done is True else "INCOMPLETE" if done is False else "completion unknown"
    return clean(f"{head} ({state})")


def _job_facts(job: Any) -> Any:
    """The job's facts with the clock skew between its nodes said in words (the numbers stay in the JSON)."""
    if not isinstance(job, dict) or not isinstance(job.get("clock_skew"), dict):
        return job
    out = dict(job)
    skew = out.pop("clock_skew")
    out["clocks"] = ("⚠ " if skew.get("exceeds") else "") + str(skew.get("note") or "")
    return out


def _kv(data: Any) -> list[tuple[str, str]]:
    """A flat dict as display pairs (nested values as compact JSON, everything clipped)."""
    if not isinstance(data, dict):
        return []
    out = []
    for k, v in list(data.items())[:40]:
        if v is None or v == "" or v == [] or v == {}:
            continue
        text = v if isinstance(v, str) else json.dumps(v, default=str, ensure_ascii=False)
        if isinstance(v, bool):
            text = "yes" if v else "no"
        out.append((clip(str(k).replace("_", " "), 80)[0], clip(text, 400)[0]))
    return out


def _evidence(evidence: Sequence[Evidence], caps: Caps, omitted: list[str]) -> tuple[list[dict], dict]:
    """Rows for the evidence table: root causes first when something must go, within a byte budget."""
    order = sorted(range(len(evidence)), key=lambda i: (ROLE_ORDER.get(evidence[i].role, 9), i))
    rows: dict[int, dict[str, Any]] = {}
    used = cut_chars = cut_ctx = dropped_ctx = 0
    left_out: Counter[str] = Counter()
    full = False
    first_of: dict[tuple, int] = {}  # a copy of one event (tee'd console and the rank's file) joins its first row
    for i in order:
        ev = evidence[i]
        key = copy_key(ev)
        if key is not None and first_of.get(key) in rows:
            rows[first_of[key]]["also"].append(clip(f"{ev.file}:{ev.line}" + (
                f"–{ev.end_line}" if ev.end_line and ev.end_line != ev.line else ""), 240)[0])
            continue
        if key is not None:
            first_of.setdefault(key, i)
        if full or len(rows) >= caps.evidence_rows:
            left_out[ev.role] += 1
            continue
        raw = "" if ev.text is None else str(ev.text)
        text = clean("\n".join(raw[: caps.evidence_chars].split("\n")[: caps.evidence_text_lines]))
        cut = len(raw) - len(text)
        last = ev.end_line or ev.line
        context = [c for c in (ev.context or []) if isinstance(c, dict)]
        ctx = []
        for c in context[: caps.context_lines]:
            ln = c.get("line")
            ctx.append({"line": ln, "text": clip(c.get("text"), caps.context_chars)[0],
                        "hit": isinstance(ln, int) and ev.line <= ln <= last})
        size = len(escape(text)) + sum(len(escape(c["text"])) + 40 for c in ctx) + 900
        if used + size > caps.evidence_bytes and ctx:
            dropped_ctx += len(ctx)
            size -= sum(len(escape(c["text"])) + 40 for c in ctx)
            ctx = []
        if used + size > caps.evidence_bytes and rows:
            left_out[ev.role] += 1
            full = True
            continue
        used += size
        cut_chars += cut
        cut_ctx += max(0, len(context) - caps.context_lines)
        t = parse_time(ev.time)
        rows[i] = {
            "rank_in_incident": i + 1, "time": fmt_time(t) if t is not None else clean(ev.time or "") or "—",
            "epoch": t if t is not None else "", "node": clean(ev.node or ""), "rank": ev.rank, "gpu": ev.gpu,
            "source": clean(ev.source or "other"), "role": clean(ev.role), "rule": clean(ev.rule or ""),
            "category": clean(ev.category or ""), "score": float(ev.score or 0.0),
            "file": clip(ev.file, 240)[0], "line": ev.line, "end_line": last, "count": ev.count,
            "text": text, "text_cut": cut, "explain": clip(ev.explain or "", 400)[0], "context": ctx,
            "open": ev.role == "root" and bool(ctx), "also": [], "kept": lines_kept(ev),
        }
    if left_out:
        omitted.append(f"evidence: {sum(left_out.values())} of {len(evidence)} rows not shown ("
                       + ", ".join(f"{n} {r}" for r, n in left_out.most_common()) + ")")
    if cut_chars:
        omitted.append(f"evidence text: {cut_chars} characters of long lines not shown")
    if cut_ctx or dropped_ctx:
        omitted.append(f"context: {cut_ctx + dropped_ctx} context lines not shown (at most {caps.context_lines} "
                       "per row, within the page budget)")
    shown = [rows[i] for i in sorted(rows)]
    facets = {key: sorted({r[key] for r in shown if r[key]}) for key in ("node", "source", "role")}
    return shown, facets


def _health(data: Any, suspects: list[str], caps: Caps) -> dict[str, Any] | None:
    if not isinstance(data, dict):
        return None
    series = data.get("series") if isinstance(data.get("series"), dict) else {}
    fail = data.get("failure_iteration")
    fail_x = float(fail) if isinstance(fail, int | float) and not isinstance(fail, bool) else None
    titles = {"loss": "Training loss", "grad_norm": "Gradient norm", "iter_time": "Iteration time (s)",
              "val_loss": "Validation loss", "loss_scale": "Loss scale"}
    charts = []
    for key in [*titles, *sorted(k for k in series if k not in titles)]:
        pts = series.get(key)
        if isinstance(pts, list) and pts:
            chart = rc.line_chart(titles.get(key, clip(key, 60)[0]), {key: pts}, max_points=caps.series_points,
                                  failure_x=fail_x)
            if chart:
                charts.append(chart)
        if key == "grad_norm" and fail_x is not None:
            charts += _before_failure(series, titles, fail_x, caps)
    per_node = data.get("per_node_iter_time")
    if isinstance(per_node, dict) and per_node:
        names = sorted(per_node, key=lambda n: (n not in suspects, str(n)))[: caps.node_series]
        chart = rc.line_chart("Iteration time per node (s)",
                              {clip(n, 80)[0]: per_node[n] for n in names if isinstance(per_node[n], list)},
                              max_points=caps.node_points, failure_x=fail_x, highlight=suspects, width=560)
        if chart:
            if len(per_node) > len(names):
                chart.note = (chart.note + "; " if chart.note else "") + \
                    f"{len(per_node) - len(names)} of {len(per_node)} nodes not drawn"
            charts.append(chart)
    return {"charts": charts, "failure_iteration": fail} if charts else None


def _before_failure(series: dict[str, Any], titles: dict[str, str], fail_x: float, caps: Caps) -> list[rc.LineChart]:
    """Loss and gradient norm over the last stretch before the failure, where divergence shows."""
    out = []
    for key in ("loss", "grad_norm"):
        pts = series.get(key)
        if not isinstance(pts, list) or len(pts) < 50:
            continue
        x, _ = xy_arrays(pts)
        if not len(x) or fail_x - float(x.min()) < 1000:
            continue
        window = max(200.0, round((fail_x - float(x.min())) * 0.05, -1))
        chart = rc.line_chart(f"{titles[key]}: last {window:.0f} iterations before the failure", {key: pts},
                              max_points=caps.series_points, failure_x=fail_x, x_min=fail_x - window)
        if chart:
            out.append(chart)
    return out


def _templates(data: Any, caps: Caps, omitted: list[str]) -> dict[str, Any] | None:
    if not isinstance(data, dict):
        return None
    top = [t for t in (data.get("top") or []) if isinstance(t, dict)]
    rows = []
    for t in top[: caps.templates]:
        nodes = t.get("nodes")
        rows.append({"id": clip(t.get("template_id"), 40)[0], "template": clip(t.get("template"), caps.template_chars)[0],
                     "count": t.get("count"), "nodes": len(nodes) if isinstance(nodes, list | dict) else nodes,
                     "first": fmt_time(parse_time(t.get("first_time")))})
    if len(top) > caps.templates:
        omitted.append(f"templates: {len(top) - caps.templates} of the {len(top)} listed templates not shown")
    return {"total": data.get("total"), "rows": rows}


def _accounting(stats: Any, caps: Caps, omitted: list[str]) -> dict[str, Any] | None:
    if not isinstance(stats, dict):
        return None
    acc = stats.get("accounting") if isinstance(stats.get("accounting"), dict) else stats
    if "lines_read" not in acc and "files" not in acc:
        return None
    warnings = [clip(w, 400)[0] for w in acc.get("warnings") or []]
    if len(warnings) > caps.warnings:
        omitted.append(f"warnings: {len(warnings) - caps.warnings} of {len(warnings)} not shown")
    skipped = {clean(k): v for k, v in (acc.get("lines_skipped") or {}).items() if isinstance(v, int)}
    read, in_rec = acc.get("lines_read"), acc.get("lines_in_records")
    unwrapped = acc.get("lines_unwrapped") if isinstance(acc.get("lines_unwrapped"), int) else 0
    balanced = None
    if isinstance(read, int) and isinstance(in_rec, int):
        balanced = read + unwrapped == in_rec + sum(v for v in skipped.values() if isinstance(v, int))
    return {"files": acc.get("files"), "lines_read": read, "lines_in_records": in_rec, "lines_unwrapped": unwrapped,
            "records": acc.get("records"), "lines_skipped": skipped,
            "files_skipped": {clean(k): v for k, v in (acc.get("files_skipped") or {}).items() if isinstance(v, int)},
            "warnings": warnings[: caps.warnings], "balanced": balanced}


def _timelines(inc: Incident, extra: dict[str, Any], caps: Caps, failure_t: float | None,
               suspects: list[str]) -> list[rc.Timeline]:
    """A zoomed view around the failure (when the run is much longer) above the whole run."""
    data = extra.get("timeline") if isinstance(extra.get("timeline"), dict) else _derived_timeline(inc)
    phases = [{"name": p.name, "start": p.start, "end": p.end} for p in inc.phases]
    full = rc.time_range(data, phases, failure_t)
    if full is None:
        return []
    out = []
    focus = rc.focus_window(data, failure_t, full)
    if focus is not None:
        out.append(rc.timeline(data, phases, max_events=caps.timeline_events, failure_time=failure_t,
                               suspects=suspects, window=focus,
                               title=f"Around the failure: {fmt_time(focus[0], False)} to "
                                     f"{fmt_time(focus[1], False)} UTC"))
    out.append(rc.timeline(data, phases, max_events=caps.timeline_events, failure_time=failure_t,
                           suspects=suspects, title=f"Whole run: {fmt_time(full[0])} to {fmt_time(full[1])}"))
    return [t for t in out if t is not None]


def _derived_timeline(inc: Incident) -> dict[str, Any]:
    """A timeline from the evidence when the incident carries none."""
    events = [{"time": e.time, "node": e.node, "role": e.role, "label": (e.explain or e.text or "")[:120],
               "rule": e.rule} for e in inc.evidence if e.time]
    return {"events": events, "lanes": [s.node for s in inc.suspects[:4]]}
