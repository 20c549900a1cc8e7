"""`l4lite tail`: follow a running job's logs and alert within a second of a root-cause line."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from l4lite.cli.commands import summary
from l4lite.cli.terminal import printable
from l4lite.errors import L4Error


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tail",
        help=summary("tail"),
        description="Follow log files (paths, directories or quoted globs, re-expanded every poll) across rotation "
        "and truncation; alert on root-cause lines at once, on spatial/temporal anomalies and hangs as windows "
        "fill. Alerts are JSON lines: one per incident, then updates as it evolves.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH_OR_GLOB", help="log files, directories or globs to follow")
    p.add_argument("--baseline", action="append", default=[], metavar="JOB",
                   help="a healthy job whose templates are not anomalous (repeatable)")
    p.add_argument("--rules", action="append", default=[], metavar="FILE", help="extra rule file (repeatable)")
    p.add_argument("--alerts", default="-", metavar="FILE|-", help="where alert JSON lines go (default: stdout)")
    p.add_argument("--webhook", metavar="URL", help="also POST each alert (Slack-compatible body) to this URL")
    p.add_argument("--html", metavar="REPORT.html", help="rewrite this HTML report every few seconds")
    p.add_argument("--state", metavar="DIR", help="keep offsets, templates and sent alerts here (resume after a "
                   "restart without losing or repeating lines)")
    p.add_argument("--poll", type=float, default=0.2, metavar="SECONDS", help="poll interval (default 0.2)")
    p.add_argument("--hang-after", type=float, default=300.0, metavar="SECONDS",
                   help="alert when training makes no progress this long while logs are written (default 300)")
    p.add_argument("--metrics-port", type=int, metavar="PORT",
                   help="serve Prometheus metrics at http://ADDRESS:PORT/metrics (0: any free port)")
    p.add_argument("--metrics-address", default="127.0.0.1", metavar="ADDRESS",
                   help="address the metrics server binds to (default 127.0.0.1; 0.0.0.0 for a scraper elsewhere)")
    p.add_argument("--metrics-ranks", type=int, default=256, metavar="N",
                   help="per-rank progress series shown in /metrics: the N stalest ranks (default 256; 0: none)")
    p.add_argument("--once", action="store_true", help="process what is there now, then exit (1 if incident)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from l4lite.live.alerts import AlertSink, JsonLinesSink, WebhookSink
    from l4lite.live.tail import Tailer, TailOptions

    if args.poll <= 0 or args.hang_after <= 0:
        raise L4Error("--poll and --hang-after must be positive")
    if args.metrics_ranks < 0:
        raise L4Error("--metrics-ranks must be 0 or more")

    def warn(message: str) -> None:
        print(f"l4lite: warning: {printable(message)}", file=sys.stderr, flush=True)

    sinks: list[AlertSink] = []
    try:
        sinks.append(JsonLinesSink(stream=sys.stdout) if args.alerts == "-" else JsonLinesSink(path=args.alerts))
    except OSError as exc:
        raise L4Error(f"{args.alerts}: cannot write alerts: {exc.strerror or exc}") from exc
    if args.webhook:
        try:
            sinks.append(WebhookSink(args.webhook, warn=warn))
        except ValueError as exc:
            raise L4Error(str(exc)) from exc
    options = TailOptions(paths=list(args.paths), baselines=list(args.baseline), rules_files=list(args.rules),
                          state_dir=args.state, alerts_path=None if args.alerts == "-" else args.alerts,
                          html=args.html, poll=args.poll, hang_after=args.hang_after, once=args.once)
    metrics = None
    if args.metrics_port is not None:
        from l4lite.live.metrics import MetricsServer, TailMetrics

        try:
            server = MetricsServer(args.metrics_port, args.metrics_address)
        except (OSError, OverflowError) as exc:
            raise L4Error(f"--metrics-port {args.metrics_port}: cannot listen on {args.metrics_address}: "
                          f"{getattr(exc, 'strerror', None) or exc}") from None
        host, port = server.address
        print(f"l4lite tail: metrics at http://{host}:{port}/metrics", file=sys.stderr, flush=True)
        metrics = TailMetrics(server, max_ranks=args.metrics_ranks)
    tailer = Tailer(options, sinks=sinks, warn=warn, metrics=metrics)
    stop = threading.Event()
    previous: dict[int, Any] = {}

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, on_signal)
    try:
        incident = tailer.run(stop)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if metrics is not None:
            metrics.close()
    t = tailer.totals
    print(f"l4lite tail: {t.lines} lines in {t.records} records from {len(tailer.follower.streams)} file(s); "
          f"{t.alerts} alert(s)" + (f"; state in {args.state}" if args.state else ""), file=sys.stderr)
    if args.once and incident is not None and incident.is_incident:
        return 1
    return 0
