"""`l4lite report INCIDENT.json -o report.html [--logs JOB] [--markdown [FILE]]`: the HTML report of a saved
incident (postmortem), or its Markdown for a ticket."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from l4lite.cli.commands import summary
from l4lite.errors import L4Error


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help=summary("report"),
        description="Write the self-contained HTML report of a saved incident JSON (no logs needed). "
        "With --logs, the evidence lines get context lines read back from the job's log files.",
    )
    p.add_argument("incident", metavar="INCIDENT.json", help="incident saved by 'l4lite analyze --json'")
    p.add_argument("-o", "--output", metavar="REPORT.html",
                   help="where to write the report (default: INCIDENT.html next to the incident)")
    p.add_argument("--logs", metavar="JOB", action="append",
                   help="the job's log folder or file(s); adds context lines around each evidence line "
                   "(repeatable)")
    p.add_argument("--markdown", nargs="?", const="-", metavar="FILE",
                   help="write the ticket text as Markdown (GitHub, GitLab, Jira) to FILE, or to stdout without "
                   "FILE; the HTML report is then written only if -o is given")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from l4lite.report.html import default_report_path, load_incident, render_html

    incident = load_incident(args.incident)
    if args.markdown:
        from l4lite.report.markdown import render_markdown

        if args.markdown == "-":
            sys.stdout.write(render_markdown(incident))
        else:
            try:
                render_markdown(incident, args.markdown)
            except OSError as exc:
                raise L4Error(f"{args.markdown}: cannot write the Markdown: {exc.strerror or exc}") from None
            print(f"wrote {args.markdown}", file=sys.stderr)
        if not args.output:
            return 0
    out = Path(args.output) if args.output else default_report_path(args.incident)
    if out.exists() and out.is_dir():
        raise L4Error(f"{out}: is a directory, expected a file name for the report")
    try:
        html = render_html(incident, out, logs=args.logs)
    except OSError as exc:
        raise L4Error(f"{out}: cannot write the report: {exc.strerror or exc}") from None
    print(f"wrote {out} ({len(html.encode('utf-8')) / 1024:.0f} kB)", file=sys.stderr)
    return 0
