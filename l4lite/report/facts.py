"""Facts the report states in words: the investigation checklist and the plain-text ticket summary.

The pipeline may ship its own checklist in ``Incident.extra["checklist"]``; when it does not (an incident from
an older version, or one written by hand) the questions are answered here from what the incident holds, and
"unknown" is said plainly when the data is not there.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, NamedTuple

import numpy as np

from l4lite.diagnose.incident import EVIDENCE_TEXT_CHARS, Evidence, Incident
from l4lite.report.scale import fmt_time, lttb_indices, parse_time, xy_arrays

CATEGORY_LABELS = {
    "gpu_hardware": "GPU hardware", "network": "Network", "storage": "Storage", "host": "Host",
    "oom": "Out of memory", "numerical": "Numerical (loss / gradients)", "data": "Data",
    "software": "Software", "user_config": "User configuration", "unknown": "Unknown",
}


class LinesKept(NamedTuple):
    """How much of a multi-line record an evidence entry still holds: ``kept`` of its ``span`` lines."""

    kept: int
    span: int


def lines_kept(ev: Evidence) -> LinesKept | None:
    """The lines kept when the diagnosis cut a long record's text (a launcher's error summary with two full
    tracebacks), so that a page does not show the first part of a block as if it were all of it."""
    text = ev.text or ""
    span = (ev.end_line or ev.line) - ev.line + 1
    kept = text.count("\n") + 1
    return LinesKept(kept, span) if span > kept and len(text) >= EVIDENCE_TEXT_CHARS else None


def copy_key(ev: Evidence) -> tuple[str, str, int | None, str, str] | None:
    """What makes two evidence entries one event written twice (the same traceback in the console a launcher tees
    and in the rank's own log): same role, node, rank, rule and explanation. None for an entry without a node or
    a rule, which is never folded."""
    if not ev.node or not ev.rule:
        return None
    return (ev.role, ev.node, ev.rank, ev.rule, ev.explain or ev.text or "")


_ROLE_PREFIXES = ("root", "cascade", "symptom", "confirmation", "anomaly")


def follows_only(reasons: Any) -> bool:
    """Whether a suspect's reasons name roles and none of them is a root: its node only logged the failure's
    consequences (a peer torn down, a launcher's summary). Reasons without role prefixes say nothing either way."""
    roles = {str(r).split(":", 1)[0].strip() for r in reasons or [] if isinstance(r, str) and ":" in r}
    roles &= set(_ROLE_PREFIXES)
    return bool(roles) and "root" not in roles


def _series(inc: Incident, key: str, limit: int = 2000) -> list[tuple[float, float]]:
    """A health series sorted by iteration, at most ``limit`` points (LTTB keeps the spikes), non-finite kept."""
    health = inc.extra.get("health") if isinstance(inc.extra, dict) else None
    series = (health or {}).get("series") if isinstance(health, dict) else None
    pts = series.get(key) if isinstance(series, dict) else None
    if not isinstance(pts, list) or not pts:
        return []
    x, y = xy_arrays(pts)
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    finite = np.isfinite(y)
    sel = lttb_indices(x[finite], y[finite], limit)
    keep = np.concatenate((x[finite][sel], x[~finite][:1]))
    vals = np.concatenate((y[finite][sel], y[~finite][:1]))
    order = np.argsort(keep, kind="stable")
    return list(zip(keep[order].tolist(), vals[order].tolist(), strict=True))


def _item(question: str, answer: str, status: str) -> dict[str, str]:
    return {"question": question, "answer": answer, "status": status}


def checklist(inc: Incident) -> list[dict[str, Any]]:
    """The incident's own checklist, or one answered from its fields and chart data."""
    given = inc.extra.get("checklist") if isinstance(inc.extra, dict) else None
    if isinstance(given, list) and given:
        return given
    return [_iteration(inc), _first_device(inc), _grad_before_spike(inc), _val_rising(inc),
            _checkpoint(inc), _restart(inc)]


def _iteration(inc: Incident) -> dict[str, str]:
    q = "Which iteration was running?"
    if inc.iteration is None:
        return _item(q, "No iteration was reported before the failure.", "unknown")
    phase = f" (phase {inc.phase})" if inc.phase else ""
    return _item(q, f"Iteration {inc.iteration}{phase}.", "yes")


def _first_device(inc: Incident) -> dict[str, str]:
    q = "Which device reported an error first?"
    roots = [e for e in inc.evidence if e.role == "root"] or [e for e in inc.evidence if e.role != "anomaly"]
    if not roots:
        return _item(q, "No error line was attributed to a device.", "unknown")
    timed = [(parse_time(e.time), i, e) for i, e in enumerate(roots)]
    first = min(timed, key=lambda t: (t[0] is None, t[0] or 0.0, t[1]))[2]
    where = first.node or "an unknown node"
    if first.gpu is not None:
        where += f" GPU {first.gpu}"
    elif first.rank is not None:
        where += f" rank {first.rank}"
    when = f" at {fmt_time(parse_time(first.time))}" if parse_time(first.time) is not None else ""
    what = (first.explain or first.text or "").splitlines()[0][:160] if (first.explain or first.text) else ""
    return _item(q, f"{where} ({first.source or 'log'}){when}: {what}", "yes")


def _spike(loss: list[tuple[float, float]]) -> float | None:
    """Iteration of the first loss spike: non-finite, or above 1.5x the median of the preceding points."""
    for i, (x, y) in enumerate(loss):
        if not math.isfinite(y):
            return x
        prev = [v for _, v in loss[max(0, i - 20):i] if math.isfinite(v)]
        if len(prev) >= 5 and y > 1.5 * statistics.median(prev) and y > max(prev):
            return x
    return None


def _grad_before_spike(inc: Incident) -> dict[str, str]:
    q = "Did the gradient norm grow before the loss spike?"
    loss, grad = _series(inc, "loss"), _series(inc, "grad_norm")
    if not loss or not grad:
        return _item(q, "Loss or gradient norm was not recorded.", "unknown")
    at = _spike(loss)
    if at is None:
        return _item(q, "The loss did not spike in the recorded iterations.", "no")
    before = [(x, y) for x, y in grad if x < at and math.isfinite(y)]
    if len(before) < 6:
        return _item(q, f"Loss spiked at iteration {at:.0f}; too few gradient norms before it to tell.", "unknown")
    base = statistics.median(y for _, y in before[: len(before) // 2])
    peak_x, peak = max(before[len(before) // 2:], key=lambda p: p[1])
    if base > 0 and peak > 2 * base:
        return _item(q, f"Yes: the gradient norm rose from ~{base:.3g} to {peak:.3g} (iteration {peak_x:.0f}) "
                        f"before the loss spiked at iteration {at:.0f}.", "yes")
    return _item(q, f"No: the gradient norm stayed near {base:.3g} before the loss spiked at iteration {at:.0f}.",
                 "no")


def _val_rising(inc: Incident) -> dict[str, str]:
    q = "Did the validation loss start rising earlier?"
    val = [(x, y) for x, y in _series(inc, "val_loss") if math.isfinite(y)]
    if len(val) < 3:
        return _item(q, "Validation loss was not recorded often enough to tell.", "unknown")
    best_x, best = min(val, key=lambda p: p[1])
    last_x, last = val[-1]
    if last_x > best_x and last > best * 1.02:
        return _item(q, f"Yes: from {best:.4g} at iteration {best_x:.0f} to {last:.4g} at iteration {last_x:.0f}.",
                     "yes")
    return _item(q, f"No: the last validation loss ({last:.4g} at iteration {last_x:.0f}) is at or near its best.",
                 "no")


def _checkpoint(inc: Incident) -> dict[str, str]:
    q = "Is the last checkpoint complete?"
    last = inc.checkpoint.get("last_saved") if isinstance(inc.checkpoint, dict) else None
    if not isinstance(last, dict):
        return _item(q, "No checkpoint save was seen in the logs.", "unknown")
    where = f"iteration {last.get('iteration')}" if last.get("iteration") is not None else "the last save"
    if last.get("path"):
        where += f" at {last['path']}"
    complete = last.get("complete")
    if complete is True:
        return _item(q, f"Yes: {where} finished saving.", "yes")
    if complete is False:
        return _item(q, f"No: {where} did not finish; resume from the one before.", "no")
    return _item(q, f"Saved {where}; completion was not confirmed in the logs.", "unknown")


def _restart(inc: Incident) -> dict[str, str]:
    q = "Did the failure begin right after a restart?"
    timeline = inc.extra.get("timeline") if isinstance(inc.extra, dict) else None
    events = (timeline or {}).get("events") or []
    fail = parse_time(inc.failure_time)
    restarts = [parse_time(e.get("time")) for e in events if isinstance(e, dict)
                and "restart" in f"{e.get('label', '')} {e.get('rule', '')}".lower()]
    restarts = [t for t in restarts if t is not None and (fail is None or t <= fail)]
    if restarts and fail is not None:
        gap = fail - max(restarts)
        if gap <= 900:
            return _item(q, f"Yes: {gap / 60:.0f} min after a restart at {fmt_time(max(restarts))}.", "yes")
        return _item(q, f"No: the last restart was {gap / 60:.0f} min before the failure.", "no")
    if events:
        return _item(q, "No restart marker appears in the timeline.", "no")
    return _item(q, "No timeline data to tell.", "unknown")


def ticket_text(inc: Incident) -> str:
    """A plain-text summary to paste into a ticket (copied by the report's button)."""
    head = f"[l4lite] {inc.status.upper()}"
    if inc.category:
        head += f" {CATEGORY_LABELS.get(inc.category, inc.category)}"
    if inc.suspects:
        top = sorted(inc.suspects, key=lambda s: -float(s.score or 0))[:3]
        blamed = [top[0]] + [s for s in top[1:] if not follows_only(s.reasons)]
        head += " on " + ", ".join(f"{s.node} ({float(s.score or 0) * 100:.0f}%)" for s in blamed)
        after = [s.node for s in top if s not in blamed]
        if after:
            head += f"; read as consequences: {', '.join(after)}"
    elif inc.scope == "global":
        head += " (job-wide)"
    lines = [head]
    facts = [f"phase {inc.phase}" if inc.phase else "", f"iteration {inc.iteration}" if inc.iteration is not None
             else "", f"failed {fmt_time(parse_time(inc.failure_time))}" if parse_time(inc.failure_time) else ""]
    if any(facts):
        lines.append(", ".join(f for f in facts if f))
    lines.append((inc.summary or "")[:1000])
    if inc.recommendations:
        lines.append("What to do now:")
        lines += [f"- {r[:300]}" for r in inc.recommendations[:8]]
    roots = [e for e in inc.evidence if e.role == "root"][:5]
    if roots:
        lines.append("Root evidence:")
        lines += [f"- {e.node or '?'} {e.file}:{e.line}: {(e.text or '').splitlines()[0][:200] if e.text else ''}"
                  for e in roots]
    return "\n".join(lines)
