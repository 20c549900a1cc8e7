"""`l4lite analyze`: flags to ``api.analyze``, its ``Incident`` to JSON, HTML, a webhook and the terminal.

`l4lite analyze JOB... [--json FILE] [--html FILE] [--baseline JOB ...] [--rules FILE] [--window SECONDS]
[--node-from REGEX] [--store PATH|--no-store] [--tag TAG] [--jobs N|auto] [--scheduler ADDRESS]
[--webhook URL [--webhook-title TEXT]] [--quiet]`.

Exit codes: 0 healthy, 1 incident, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import TYPE_CHECKING

from l4lite.cli.commands import summary
from l4lite.cli.progress import progress_bar
from l4lite.cli.terminal import printable
from l4lite.errors import L4Error
from l4lite.options import AnalyzeOptions, ExecutionOptions
from l4lite.scale.parallel import jobs_argument, resolve_jobs

if TYPE_CHECKING:
    from l4lite.diagnose.incident import Incident


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "analyze", help=summary("analyze"),
        description="Diagnose a failed or hung training job from its logs. Exit code 0: healthy, 1: incident, "
                    "2: usage or input error.")
    p.add_argument("paths", nargs="+", metavar="JOB", help="job directory, log files, or - for stdin")
    p.add_argument("--json", metavar="FILE",
                   help="write the incident as JSON (schema l4lite.incident/1); - prints it on stdout instead of "
                        "the summary")
    p.add_argument("--html", metavar="FILE", help="write the self-contained HTML report")
    p.add_argument("--baseline", action="append", default=[], metavar="JOB",
                   help="a healthy job of the same setup; its templates are filtered out (repeatable)")
    p.add_argument("--rules", action="append", default=[], metavar="FILE", help="extra rule file (repeatable)")
    p.add_argument("--window", type=float, default=None, metavar="SECONDS",
                   help="window length for the node x time counts (default: 30 s, chosen by measurement, bounded by the job's length)")
    p.add_argument("--node-from", metavar="REGEX",
                   help="regex whose first group (or group 'node') names the node in a file's relative path")
    store = p.add_mutually_exclusive_group()
    store.add_argument("--store", metavar="PATH", help="history store (default: $L4LITE_STORE or the user data dir)")
    store.add_argument("--no-store", action="store_true", help="do not read or write the history store")
    p.add_argument("--tag", help="history key for matching baselines (default: derived from the logs)")
    p.add_argument("--jobs", type=jobs_argument, default="auto", metavar="N|auto",
                   help="parallel processes reading shards of files, large files in pieces (default auto: one "
                        "per core for inputs over 64 MB, else 1)")
    p.add_argument("--scheduler", metavar="ADDR", help="Dask scheduler (tcp://HOST:PORT or local:N)")
    p.add_argument("--webhook", metavar="URL", help="POST an incident (Slack-compatible body, as tail's alerts) to URL")
    p.add_argument("--webhook-title", metavar="TEXT", help="what the webhook message starts with, e.g. the job id")
    p.add_argument("-q", "--quiet", action="store_true", help="no terminal summary and no progress bar")
    p.set_defaults(run=run)


def _store_path(args: argparse.Namespace) -> str | None:
    if args.no_store:
        return None
    if args.store:
        return str(args.store)
    try:
        from l4lite.history.store import Store
    except ImportError:  # pragma: no cover - a partial install
        return None
    return str(Store.default_path())


def run(args: argparse.Namespace) -> int:
    if args.window is not None and args.window <= 0:
        raise L4Error("--window must be a positive number of seconds")
    if args.webhook and not args.webhook.startswith(("http://", "https://")):
        raise L4Error(f"--webhook: the URL must start with http:// or https://, got {args.webhook!r}")
    jobs = resolve_jobs(args.jobs, args.paths) if not args.scheduler else 1
    from l4lite.api import analyze  # here, so that other commands skip pandas

    bar = progress_bar(args.quiet)
    options = AnalyzeOptions(window_seconds=args.window, baselines=list(args.baseline), rules_files=list(args.rules),
                             node_from=args.node_from, store=_store_path(args), tag=args.tag)
    execution = ExecutionOptions(jobs=jobs, scheduler=args.scheduler, progress=bar)
    try:
        incident = analyze(args.paths, options, execution)
    finally:
        if bar is not None:
            bar.close()
    to_stdout = args.json == "-"  # for a pipe into jq: the JSON alone on stdout, warnings still on stderr
    if args.json and not to_stdout:
        incident.save(args.json)
    if args.html:
        render_html(incident, args.html)
    if args.webhook:
        post(args.webhook, args.webhook_title, incident)
    if not args.quiet:
        sys.stderr.write(input_warnings(incident))
    if to_stdout:
        sys.stdout.write(incident.to_json() + "\n")
    elif not args.quiet:
        sys.stdout.write(terminal_summary(incident))
    return 1 if incident.is_incident else 0


def post(url: str, title: str | None, incident: Incident) -> None:
    from l4lite.live.alerts import post_incident

    def warn(message: str) -> None:
        print(f"l4lite: warning: {printable(message)}", file=sys.stderr, flush=True)

    post_incident(url, incident, title=title, warn=warn)


def input_warnings(incident: Incident, limit: int = 20) -> str:
    """One stderr line per input problem (a file skipped, a line truncated or re-decoded ...), each naming its
    file, so that a user sees what was not read as it was written; the full list is in the incident's stats."""
    warnings = list(incident.stats.get("warnings") or [])
    lines = [f"l4lite: warning: {printable(w)}" for w in warnings[:limit]]
    if len(warnings) > limit:
        lines.append(f"l4lite: warning: {len(warnings) - limit} more input warnings in the incident's stats")
    return "".join(line + os.linesep for line in lines)


def render_html(incident: Incident, path: str) -> None:
    try:
        report = importlib.import_module("l4lite.report.html")
    except ImportError as exc:
        raise L4Error("--html: the HTML report is not available in this build") from exc
    report.render_html(incident, path)


def terminal_summary(incident: Incident, max_evidence: int = 5) -> str:
    """A short, plain summary for the terminal."""
    lines: list[str] = []
    if incident.is_incident:
        head = f"INCIDENT  {incident.category}  phase={incident.phase}"
        if incident.iteration is not None:
            head += f"  iteration={incident.iteration}"
        if incident.failure_time:
            head += f"  at {incident.failure_time}"
        lines.append(head)
        if incident.suspects:
            tops = ", ".join(f"{s.node} ({s.score:.2f})" for s in incident.suspects[:3])
            lines.append(f"suspects: {tops}")
        else:
            lines.append("suspects: none (job-wide fault)")
    else:
        lines.append("HEALTHY")
    lines.append(incident.summary)
    roots = [e for e in incident.evidence if e.role == "root"][:max_evidence]
    if roots:
        lines.append("evidence:")
        for e in roots:
            first = (e.text or "").splitlines()[0] if e.text else ""
            lines.append(f"  {e.file}:{e.line}  {first[:150]}")
    for rec in incident.recommendations[:4]:
        lines.append(f"- {rec}")
    last = (incident.checkpoint or {}).get("last_saved")
    if last and not any("checkpoint" in r for r in incident.recommendations):
        lines.append(f"last complete checkpoint: iteration {last.get('iteration')} {last.get('path') or ''}".rstrip())
    st = incident.stats
    lines.append(f"({st.get('files', 0)} files, {st.get('lines_read', 0):,} lines, {st.get('templates', 0)} "
                 f"templates, {st.get('seconds', 0):.1f}s)")
    # log lines, file and node names are shown as written but never act on the terminal
    return os.linesep.join(printable(line) for line in lines) + os.linesep
