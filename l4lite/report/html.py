"""The HTML incident report: one self-contained file that opens offline and makes the verdict obvious.

``render_html(incident)`` turns an ``Incident`` (nothing else: the report never sees detectors or records) into a
page made from the Jinja2 templates in the top-level ``templates/`` folder. Design choices:

* Autoescaping is on for every template, and log text is only ever inserted as template variables, so a log
  line such as ``<script>`` appears as text. Data handed to the page script is JSON inside
  ``<script type="application/json">`` with ``<``, ``>`` and ``&`` written as ``\\u003c`` etc.
* A Content-Security-Policy meta tag allows no network access at all and only the page's own script (by hash),
  so even an escaping bug could neither run injected code nor fetch anything.
* Charts are inline SVG laid out in :mod:`l4lite.report.charts` (numbers only) and drawn by template macros:
  no plotting dependency, a few kB per chart, text escaped by construction.
* The page is bounded: evidence rows, context lines, line lengths, heatmap cells, series points and events are
  capped (with the counts of what was left out shown on the page); if a page still exceeds the budget it is
  rendered again with tighter caps, so a 16-node job stays under 2 MB whatever the length of its logs.
* Everything is readable without JavaScript; the script only adds sorting, filtering and a copy button.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import math
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from l4lite.diagnose.incident import Incident, write_atomic
from l4lite.errors import L4Error
from l4lite.report.check import check_document, check_incident
from l4lite.report.context import attach_context
from l4lite.report.facts import checklist, ticket_text
from l4lite.report.view import CAP_LEVELS, Caps, build_view, guard
from l4lite.resources import templates_dir
from l4lite.vocab import INCIDENT_SCHEMA

MAX_BYTES = 2_000_000
_BUDGET = 1_900_000  # keep a margin under MAX_BYTES


def render_html(incident: Incident, path: str | Path | None = None, logs: Sequence[str] | None = None) -> str:
    """Render the report; write it atomically to ``path`` when given. ``logs`` adds context lines."""
    check_incident(incident)
    if logs:
        incident = copy.deepcopy(incident)
        attach_context(incident, logs)
    omitted: list[str] = []
    shared = {"checklist": guard("checklist", omitted, checklist, incident) or [],
              "ticket": ticket_text(incident), "omitted": omitted}
    html = ""
    for caps in CAP_LEVELS:
        html = _render(incident, caps, shared)
        if len(html.encode("utf-8")) <= _BUDGET:
            break
    if path is not None:
        write_atomic(Path(path), html)
    return html


def load_incident(path: str | Path) -> Incident:
    """Read a saved incident, turning every way it can be wrong into a one-line L4Error naming the file."""
    p = Path(path)
    try:
        with open(p, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise L4Error(f"{p}: no such incident file") from None
    except IsADirectoryError:
        raise L4Error(f"{p}: is a directory, expected an incident JSON file") from None
    except UnicodeDecodeError as exc:
        raise L4Error(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise L4Error(f"{p}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    except OSError as exc:
        raise L4Error(f"{p}: cannot read: {exc.strerror or exc}") from None
    if not isinstance(data, dict):
        raise L4Error(f"{p}: not an l4lite incident (top level is not an object)")
    if data.get("schema") == INCIDENT_SCHEMA:
        check_document(data, str(p))
    try:
        incident = Incident.from_dict(data)
    except ValueError as exc:
        raise L4Error(f"{p}: {exc}") from None
    except (TypeError, AttributeError) as exc:
        raise L4Error(f"{p}: malformed incident: {exc}") from None
    check_incident(incident, str(p))
    return incident


# ---------------------------------------------------------------------------------------------- rendering
@lru_cache(maxsize=4)
def _environment(folder: str) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pct"] = _pct
    env.filters["num"] = lambda v: f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else v
    return env


def _pct(value: Any) -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return "—"
    return f"{v * 100:.0f}%" if math.isfinite(v) else "—"


def _render(incident: Incident, caps: Caps, shared: dict[str, Any]) -> str:
    env = _environment(str(templates_dir()))
    script = env.get_template("report.js.j2").render()
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    view = build_view(incident, caps, shared)
    page = env.get_template("report.html.j2").render(
        v=view, script=Markup(script), script_hash=f"sha256-{digest}",
        page_data=Markup(script_json(view["page_data"])),
    )
    return page.encode("utf-8", "replace").decode("utf-8")


def script_json(data: Any) -> str:
    """JSON safe to place inside a <script> element: no '<', '>' or '&' survive (no '</script>' breakout)."""
    text = json.dumps(data, ensure_ascii=False, default=str)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def default_report_path(incident_path: str | Path) -> Path:
    p = Path(incident_path)
    return p.with_name(p.stem + ".html") if p.suffix == ".json" else Path(os.fspath(p) + ".html")


__all__ = ["CAP_LEVELS", "MAX_BYTES", "Caps", "load_incident", "render_html", "script_json"]
