"""l4lite: which node is bad, in which phase a training job broke, what kind of fault it is, which lines prove it.

    >>> from l4lite import analyze
    >>> incident = analyze("fixtures/jobs/ib-link-down")
    >>> incident.status, incident.category
    ('incident', 'network')

The subpackages read top to bottom as the pipeline: ``ingest`` -> ``mining`` -> ``rules`` -> ``scan`` ->
``detect`` -> ``diagnose`` -> ``report``; ``history``, ``scale``, ``export``, ``live``, ``simulate``, ``evaluate``
and ``cli`` are built on them. ``api`` composes the stages.

The names below are imported on first use, so that ``import l4lite.cli.main`` (and ``l4lite parse``) does not
pay for pandas or jinja2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from l4lite.version import __version__

if TYPE_CHECKING:
    from l4lite.api import analyze, diagnose
    from l4lite.diagnose.incident import Evidence, Incident, Suspect
    from l4lite.options import AnalyzeOptions, ExecutionOptions
    from l4lite.report.html import render_html

__all__ = ["AnalyzeOptions", "Evidence", "ExecutionOptions", "Incident", "Suspect", "__version__", "analyze",
           "diagnose", "render_html"]


def __getattr__(name: str) -> Any:
    if name in ("analyze", "diagnose"):
        from l4lite import api

        return getattr(api, name)
    if name in ("AnalyzeOptions", "ExecutionOptions"):
        from l4lite import options

        return getattr(options, name)
    if name in ("Incident", "Evidence", "Suspect"):
        from l4lite.diagnose import incident

        return getattr(incident, name)
    if name == "render_html":
        from l4lite.report import html

        return html.render_html
    raise AttributeError(f"module 'l4lite' has no attribute {name!r}")
