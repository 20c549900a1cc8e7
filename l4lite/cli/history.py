"""`l4lite history`: healthy baselines, the fault library, the fleet view and sharing, on the history store.

The store is ``--store PATH``, else ``$L4LITE_STORE``, else ``~/.local/share/l4lite/history.sqlite3`` (or
``$XDG_DATA_HOME/l4lite/...``). Listings print aligned tables, or JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from l4lite.cli.commands import summary
from l4lite.cli.terminal import printable
from l4lite.errors import L4Error

if TYPE_CHECKING:
    from l4lite.history.store import Store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "history",
        help=summary("history"),
        description="Remember jobs across runs: healthy baselines for cross-job filtering, confirmed faults "
        "that analyze matches first, and which nodes keep failing.",
    )
    p.add_argument("--store", dest="store_top", metavar="PATH", help=argparse.SUPPRESS)
    p.set_defaults(run=_usage(p))
    actions = p.add_subparsers(dest="history_command", metavar="ACTION")

    def action(name: str, help_text: str, func: Any) -> argparse.ArgumentParser:
        a = actions.add_parser(name, help=help_text, description=help_text)
        a.add_argument("--store", metavar="PATH", help="history store file (default: $L4LITE_STORE or the user "
                       "data folder, ~/.local/share/l4lite/history.sqlite3)")
        a.set_defaults(run=func)
        return a

    a = action("add", "record healthy jobs as baselines for cross-job filtering", run_add)
    a.add_argument("jobs", nargs="+", metavar="JOB", help="a healthy job's log folder or file (each is one job)")
    a.add_argument("--healthy", action="store_true", help="the jobs ran without a fault (required)")
    a.add_argument("--tag", help="match jobs by this tag instead of the setup parsed from the logs")
    a.add_argument("--force", action="store_true", help="record the jobs even if analysis finds an incident")

    a = action("confirm", "add the confirmed cause of an analysed job to the fault library", run_confirm)
    a.add_argument("job_id", type=int, metavar="JOB_ID", help="the job's number in 'l4lite history jobs'")
    a.add_argument("--category", required=True, help="fault category, e.g. network or gpu_hardware")
    a.add_argument("--cause", required=True, help='what it was, e.g. "IB cable"')
    a.add_argument("--node", help="the node at fault, if one was")

    a = action("nodes", "rank nodes by the incidents in which they were the top suspect", run_nodes)
    a.add_argument("--since", metavar="DATE", help="only incidents since DATE (2026-11-03, or 7d, 24h)")
    a.add_argument("--json", action="store_true", help="print JSON")

    a = action("jobs", "list recorded jobs, newest first", run_jobs)
    a.add_argument("--limit", type=int, default=50, help="at most this many (default 50; 0 for all)")
    a.add_argument("--kind", choices=["healthy", "analysis"], help="only healthy baselines or analysed jobs")
    a.add_argument("--json", action="store_true", help="print JSON")

    a = action("faults", "list the fault library", run_faults)
    a.add_argument("--json", action="store_true", help="print JSON")

    a = action("remove", "forget a recorded job (e.g. a baseline that was not healthy)", run_remove)
    a.add_argument("job_id", type=int, metavar="JOB_ID")

    a = action("key-fields", "show or set the job facts that decide which jobs share baselines", run_key_fields)
    a.add_argument("fields", nargs="?", metavar="FIELD,FIELD", help="comma-separated facts, e.g. model,world_size")

    a = action("export", "write the fault library and baselines as JSON (to share between clusters)", run_export)
    a.add_argument("file", metavar="FILE", help="output JSON file, or - for stdout")
    a.add_argument("--no-healthy", action="store_true", help="export the fault library only")

    a = action("import", "merge an exported JSON file into the store", run_import)
    a.add_argument("file", metavar="FILE", help="a file written by 'l4lite history export'")


def _usage(parser: argparse.ArgumentParser) -> Any:
    def run(args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return 2

    return run


def _open(args: argparse.Namespace) -> Store:
    """The store named on the action (or before it); imported late so ``l4lite --help`` stays fast."""
    from l4lite.history.store import Store

    return Store(getattr(args, "store", None) or getattr(args, "store_top", None))


def run_add(args: argparse.Namespace) -> int:
    if not args.healthy:
        raise L4Error("'history add' records healthy baselines: pass --healthy (analyze --store records failures)")
    from l4lite import api as pipeline

    options = pipeline.AnalyzeOptions(tag=args.tag)
    rules = pipeline.load_rules(options)
    refused = 0
    with _open(args) as store:
        for job in args.jobs:
            if not Path(job).exists():
                raise L4Error(f"{job}: no such file or folder")
            scan = pipeline.scan_job([job], options, rules=rules)
            if not args.force:
                # A failed job recorded as healthy would teach cross-job filtering to drop its fault lines.
                verdict = pipeline.diagnose(scan, options, rules=rules)
                if verdict.is_incident:
                    print(f"l4lite: {job}: not recorded, it looks failed: {verdict.summary} "
                          "(pass --force to record it as healthy anyway)", file=sys.stderr)
                    refused += 1
                    continue
            key = store.job_key(scan, args.tag)
            job_id = store.add_healthy(scan, key, str(Path(job).resolve()))
            print(
                f"healthy job #{job_id}: {job} ({scan.accounting.lines_read} lines, {len(scan.templates)} templates)"
                f" under key {key}"
            )
        print(f"store: {store.path}")
    return 2 if refused else 0


def run_confirm(args: argparse.Namespace) -> int:
    with _open(args) as store:
        fault_id = store.confirm(args.job_id, args.category, args.cause, args.node)
    where = f" on {args.node}" if args.node else ""
    print(f"confirmed fault #{fault_id} from job #{args.job_id}: {args.category}, {args.cause}{where}")
    return 0


def run_nodes(args: argparse.Namespace) -> int:
    with _open(args) as store:
        fleet, path = store.nodes(args.since), store.path
    return _listing(
        args, fleet, f"no incidents with a suspect node in {path}",
        ["NODE", "INCIDENTS", "CONFIRMED", "CATEGORIES", "LAST SEEN", "LAST JOB"],
        lambda e: [
            e["node"], e["incidents"], e["confirmed_faults"],
            ", ".join(f"{c} {n}" for c, n in e["categories"].items()), e["last_seen"], f"#{e['last_job']}",
        ],
    )


def run_jobs(args: argparse.Namespace) -> int:
    with _open(args) as store:
        jobs, path = store.jobs(args.limit or None, args.kind), store.path
    return _listing(
        args, jobs, f"no jobs recorded in {path}",
        ["JOB", "RECORDED", "KIND", "STATUS", "CATEGORY", "PHASE", "TOP NODE", "FAULT", "KEY", "PATH"],
        lambda j: [
            f"#{j['job_id']}", j["recorded_at"], j["kind"], j["status"] or "-", j["category"] or "-",
            j["phase"] or "-", j["top_node"] or "-", f"#{j['fault_id']}" if j["fault_id"] else "-", j["key"],
            j["path"],
        ],
    )


def run_faults(args: argparse.Namespace) -> int:
    with _open(args) as store:
        faults, path = store.faults(), store.path
    return _listing(
        args, faults, f"no confirmed faults in {path}",
        ["FAULT", "CONFIRMED", "CATEGORY", "NODE", "MATCHES", "FROM", "CAUSE"],
        lambda f: [
            f"#{f['fault_id']}", f["confirmed_at"], f["category"], f["node"] or "-", f["matches"],
            f"#{f['job_id']}" if f["job_id"] else f["origin"], f["cause"],
        ],
    )


def _listing(args: argparse.Namespace, items: list[dict[str, Any]], empty: str, headers: Sequence[str],
             row: Callable[[dict[str, Any]], list[Any]]) -> int:
    """The listings print JSON with --json, a one-line note when there is nothing, else one table row per item."""
    if args.json:
        return _print_json(items)
    if not items:
        print(empty)
        return 0
    print(table(headers, [row(item) for item in items]))
    return 0


def run_remove(args: argparse.Namespace) -> int:
    with _open(args) as store:
        store.remove_job(args.job_id)
    print(f"removed job #{args.job_id}")
    return 0


def run_key_fields(args: argparse.Namespace) -> int:
    with _open(args) as store:
        if args.fields:
            store.set_key_fields(args.fields.split(","))
        print(",".join(store.key_fields))
    return 0


def run_export(args: argparse.Namespace) -> int:
    from l4lite.diagnose.incident import write_atomic

    with _open(args) as store:
        data = store.export_json(include_healthy=not args.no_healthy)
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if args.file == "-":
        sys.stdout.write(text)
        return 0
    try:
        write_atomic(Path(args.file), text)
    except OSError as exc:
        raise L4Error(f"{args.file}: cannot write: {exc.strerror or exc}") from None
    print(
        f"exported {len(data['faults'])} faults and {len(data['healthy_jobs'])} healthy jobs to {args.file}",
        file=sys.stderr,
    )
    return 0


def run_import(args: argparse.Namespace) -> int:
    try:
        with open(args.file, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as exc:
        raise L4Error(f"{args.file}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise L4Error(f"{args.file}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise L4Error(f"{args.file}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    with _open(args) as store:
        result = store.import_json(data, origin=Path(args.file).name)
    print(
        f"imported {result['faults_added']} faults ({result['faults_skipped']} already present) and "
        f"{result['healthy_added']} healthy jobs ({result['healthy_skipped']} already present) from {args.file}"
    )
    return 0


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Left-aligned columns; numbers right-aligned; the last column is not padded."""
    cells = [[str(h) for h in headers]] + [["-" if v is None else printable(str(v)) for v in row] for row in rows]
    numeric = [all(isinstance(row[i], int | float) for row in rows) for i in range(len(headers))]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for r in cells:
        parts = [
            (r[i].rjust(widths[i]) if numeric[i] else r[i].ljust(widths[i])) if i < len(r) - 1 else r[i]
            for i in range(len(r))
        ]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def _print_json(data: Any) -> int:
    print(json.dumps(data, indent=2, ensure_ascii=False))
    return 0
