"""The incident as Markdown for a ticket (GitHub, GitLab, Jira's Markdown paste): verdict, suspects, actions and
the root evidence lines.

Everything in an incident that came from a log (summary, node and file names, reasons, evidence text, even the
actions, which quote paths) is untrusted, and a ticket renders Markdown, so no such text may become markup:

* prose is backslash-escaped (the marks that open emphasis, code, links, HTML, tables, math and entities, and
  ``@`` and ``#`` so that a log line can neither mention people nor link issues; list and rule markers where the
  text starts; parentheses stay, as no link can open without a bracket), its line breaks folded to spaces;
* anything a renderer would turn into a link by itself (``scheme://``, ``www.``, ``mailto:``, an e-mail address)
  goes into an inline code span, which no renderer links;
* names (nodes, files, rules) are code spans, evidence lines are fenced code blocks; each span or fence is made
  of more backticks than the longest run of backticks in its text, so the text cannot close it;
* control characters (ESC, NUL, CR, the Unicode line and paragraph separators, bidi overrides) are shown as
  ``\\xNN`` / ``\\uNNNN`` escapes rather than passed on.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from l4lite.diagnose.incident import Evidence, Incident, write_atomic
from l4lite.report.check import check_incident
from l4lite.report.facts import CATEGORY_LABELS, copy_key, follows_only, lines_kept

EVIDENCE_SHOWN = 8
TEXT_CHARS = 4000  # per evidence entry
LINE_CHARS = 500  # per prose field

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_CONTROL_BREAKS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff\n]")
_PUNCT = re.compile(r"([\\`*_{}\[\]<>#|~&@$^])")
_LEADING = re.compile(r"^(\s*)([-+=.!]|\d+[.)])")  # a list, rule or heading marker where a line starts
_LINKISH = re.compile(r"(?i)(?:\b[a-z][a-z0-9+.\-]{0,30}://\S*|\bwww\.\S+|\b(?:mailto|javascript|data|vbscript|file|tel):\S*"
                      r"|[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+)")
_TICKS = re.compile(r"`+")


def _visible(match: re.Match[str]) -> str:
    c = ord(match.group(0))
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def shown(text: str) -> str:
    """Control and invisible characters written as escapes (line feeds and tabs kept)."""
    return _CONTROL.sub(_visible, text)


def code_span(text: str) -> str:
    """``text`` as an inline code span that its own backticks cannot close; line breaks folded."""
    text = _CONTROL_BREAKS.sub(lambda m: " " if m.group(0) == "\n" else _visible(m), str(text))
    longest = max((len(m) for m in _TICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith(("`", " ")) or text.endswith(("`", " ")) or not text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def inline(text: str | None, limit: int = LINE_CHARS) -> str:
    """Untrusted prose as Markdown text: escaped, link-like words in code spans, on one line."""
    text = str(text or "")
    if len(text) > limit:
        text = text[:limit] + " ..."
    text = _CONTROL_BREAKS.sub(lambda m: " " if m.group(0) == "\n" else _visible(m), text)
    out: list[str] = []
    last = 0
    for m in _LINKISH.finditer(text):
        out.append(_PUNCT.sub(r"\\\1", text[last:m.start()]))
        out.append(code_span(m.group(0)))
        last = m.end()
    out.append(_PUNCT.sub(r"\\\1", text[last:]))
    return _LEADING.sub(lambda m: m.group(1) + m.group(2)[:-1] + "\\" + m.group(2)[-1], "".join(out))


def fenced(text: str, info: str = "text") -> str:
    """A fenced code block its text cannot close: the fence is longer than any backtick run inside."""
    body = shown(text.replace("\r\n", "\n"))
    longest = max((len(m) for m in _TICKS.findall(body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body}\n{fence}"


class Folded(NamedTuple):
    """One evidence entry and the places the same event was also written (a tee'd console and the rank's file)."""

    evidence: Evidence
    also: list[str]


def _where(e: Evidence) -> str:
    return f"{e.file}:{e.line}" + (f"-{e.end_line}" if e.end_line and e.end_line != e.line else "")


def fold_copies(evidence: list[Evidence]) -> list[Folded]:
    """Entries that repeat one event (same role, node, rank, rule and explanation: the same traceback in the
    console a launcher tees and in the rank's own log) folded into the first, so that a ticket's few entries
    are not spent on copies; the other places are kept as a list."""
    out: list[Folded] = []
    seen: dict[tuple, int] = {}
    for e in evidence:
        key = copy_key(e)
        if key is not None and key in seen:
            out[seen[key]].also.append(_where(e))
            continue
        if key is not None:
            seen[key] = len(out)
        out.append(Folded(e, []))
    return out


def _evidence(e: Evidence, also: list[str] | None = None) -> str:
    head = [f"**{inline(e.role)}**", code_span(_where(e))]
    if e.node:
        head.append("node " + code_span(e.node))
    if e.rank is not None:
        head.append(f"rank {int(e.rank)}")
    if e.time:
        head.append(inline(e.time))
    if e.rule:
        head.append("rule " + code_span(e.rule))
    if e.count and e.count > 1:
        head.append(f"{int(e.count)} lines like it")
    lines = ["- " + " · ".join(head)]
    if also:
        lines.append("  also written at " + ", ".join(code_span(w) for w in also[:5])
                     + (f" and {len(also) - 5} more places" if len(also) > 5 else ""))
    if e.explain:
        lines.append("  " + inline(e.explain))
    text = e.text or ""
    if len(text) > TEXT_CHARS:
        text = text[:TEXT_CHARS] + "\n..."
    lines.append("")
    lines += ["  " + row if row else "" for row in fenced(text).split("\n")]
    kept = lines_kept(e)
    if kept:
        lines += ["", f"  (the first {kept.kept} of the record's {kept.span} lines; the rest is in the file)"]
    return "\n".join(lines)


def _attempts(attempts: list) -> list[str]:
    """The restarted job's attempts, oldest first, the verdict's attempt marked. A list, not a table: a table
    cell ends at a pipe, even inside a code span, so log text in a cell could add columns."""
    out = ["### Attempts", ""]
    for a in attempts[:50]:
        if not isinstance(a, dict):
            continue
        root = a.get("root") if isinstance(a.get("root"), dict) else {}
        head = f"attempt {int(a.get('attempt') or 0)}" + (" (this verdict)" if a.get("verdict") else "")
        parts = [inline(a.get("status"), 20)]
        label = CATEGORY_LABELS.get(a.get("category") or "", a.get("category") or "")
        if label:
            parts.append(inline(label, 60))
        if a.get("nodes"):
            parts.append("suspects " + ", ".join(code_span(str(n)) for n in a["nodes"][:3]))
        if root.get("text"):
            parts.append("first root line " + code_span(str(root["text"])[:300]))
        out.append(f"- **{head}**: " + "; ".join(parts))
    return [*out, ""]


def render_markdown(incident: Incident, path: str | Path | None = None, *, evidence: int = EVIDENCE_SHOWN) -> str:
    """The ticket text; written atomically to ``path`` when given. Root evidence first, then the rest."""
    check_incident(incident)
    inc = incident
    label = CATEGORY_LABELS.get(inc.category or "", inc.category or "")
    title = "l4lite: " + (f"{inc.status} ({label})" if inc.category else inc.status)
    ranked = sorted(inc.suspects, key=lambda s: -float(s.score or 0))
    if ranked:
        title += " on " + ", ".join(s.node for i, s in enumerate(ranked[:3]) if i == 0 or not follows_only(s.reasons))
    elif inc.scope == "global":
        title += ", job-wide"
    out = [f"## {inline(title, 300)}", ""]
    facts = [f"**Status:** {inline(inc.status)}"]
    if inc.category:
        facts.append(f"**Category:** {inline(label)}")
    if inc.phase:
        facts.append(f"**Phase:** {inline(inc.phase)}")
    if inc.iteration is not None:
        facts.append(f"**Iteration:** {int(inc.iteration)}")
    if inc.failure_time:
        facts.append(f"**Failed at:** {inline(inc.failure_time)}")
    if inc.confidence is not None:
        facts.append(f"**Confidence:** {float(inc.confidence) * 100:.0f}%")
    job = inc.job or {}
    if job.get("name"):
        facts.append(f"**Job:** {code_span(str(job['name']))}")
    out += [" · ".join(facts), "", inline(inc.summary, 2000), ""]
    if inc.suspects:
        out += ["### Suspects", ""]
        after = [s for s in ranked[1:] if follows_only(s.reasons)]
        blamed = [s for s in ranked if s not in after][:10]
        for i, s in enumerate(blamed, 1):
            row = f"{i}. {code_span(s.node)} score {float(s.score or 0):.2f}"
            if s.category:
                row += f" ({inline(s.category)})"
            if s.reasons:
                row += ": " + "; ".join(inline(r, 300) for r in s.reasons[:4])
            out.append(row)
        if after:  # one line: their reasons are the same teardown and peer-gone lines, node after node
            out += ["", f"Lines read as consequences of the failure on {code_span(ranked[0].node)}: "
                    + ", ".join(f"{code_span(s.node)} {float(s.score or 0):.2f}" for s in after[:12])
                    + (f" and {len(after) - 12} more nodes" if len(after) > 12 else "")]
        out.append("")
    if inc.recommendations:
        out += ["### What to do now", ""]
        out += [f"- {inline(r)}" for r in inc.recommendations[:10]]
        out.append("")
    last = (inc.checkpoint or {}).get("last_saved") if isinstance(inc.checkpoint, dict) else None
    if isinstance(last, dict) and last.get("iteration") is not None:
        where = f" at {code_span(str(last['path']))}" if last.get("path") else ""
        out += [f"Last saved checkpoint: iteration {inline(str(last['iteration']))}{where}", ""]
    if isinstance(inc.attempts, list) and len(inc.attempts) > 1:
        out += _attempts(inc.attempts)
    ordered = fold_copies([e for e in inc.evidence if e.role == "root"] + [e for e in inc.evidence if e.role != "root"])
    if ordered:
        shown_n = min(evidence, len(ordered))
        copies = sum(len(also) for _, also in ordered)
        note = f"; {copies} copies of these in other files folded in" if copies else ""
        out += [f"### Evidence ({shown_n} of {len(ordered)}{note})", ""]
        out += [_evidence(e, also) + "\n" for e, also in ordered[:evidence]]
    acc = (inc.stats or {}).get("accounting") if isinstance(inc.stats, dict) else None
    if isinstance(acc, dict) and acc.get("lines_read") is not None:
        out.append(f"_l4lite read {inline(str(acc.get('lines_read')))} lines in "
                   f"{inline(str(acc.get('files', '?')))} files\\._")
    text = "\n".join(out).rstrip("\n") + "\n"
    if path is not None:
        write_atomic(Path(path), text)
    return text


__all__ = ["code_span", "fenced", "inline", "render_markdown"]
