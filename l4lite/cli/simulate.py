"""`l4lite simulate`: generate a realistic job archive with an injected fault, or a whole suite of them."""

from __future__ import annotations

import argparse
import json
import sys
import time

from l4lite.cli.commands import summary
from l4lite.errors import L4Error


def register(sub: argparse._SubParsersAction) -> None:
    from l4lite.simulate import FORMATS, LAYOUTS, NAMINGS

    p = sub.add_parser(
        "simulate",
        help=summary("simulate"),
        description="Write a training-job archive (trainer, NCCL, kernel, GPU telemetry and launcher logs) for "
        "SCENARIO into DIR, with ground_truth.json beside the logs; or build a suite of jobs with --suite; or "
        "list the scenarios with --list. The same seed always gives the same bytes.",
    )
    p.add_argument("scenario", nargs="?", help="scenario name (see --list)")
    p.add_argument("-o", "--output", metavar="DIR", help="job folder to create (single job)")
    p.add_argument("--suite", metavar="DIR", help="build a suite of jobs (one per scenario and repetition) in DIR")
    p.add_argument("--jobs-per-scenario", type=int, default=1, metavar="M", help="suite: jobs per scenario (1)")
    p.add_argument("--scenarios", metavar="A,B", help="suite: only these scenarios (comma-separated)")
    p.add_argument("--extra-healthy", type=int, default=0, metavar="N",
                   help="suite: N more healthy jobs (alternately plain and with hard negatives)")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    p.add_argument("--nodes", type=int, default=4, metavar="N", help="nodes (4)")
    p.add_argument("--gpus-per-node", type=int, default=8, metavar="G", help="GPUs (ranks) per node (8)")
    p.add_argument("--iterations", type=int, default=200, metavar="K", help="training iterations the job runs (200)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="random seed (0)")
    p.add_argument("--format", choices=FORMATS, help="trainer output style (default: chosen by the seed)")
    p.add_argument("--layout", choices=LAYOUTS, help="file layout (default: chosen by the seed)")
    p.add_argument("--naming", choices=NAMINGS, help="node naming scheme (default: chosen by the seed)")
    p.add_argument("--force", action="store_true", help="replace an earlier simulated job in the output folder")
    p.add_argument("--json", action="store_true", help="print the ground truth (or the suite index) as JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from l4lite.simulate import JobSpec, build_suite, generate, scenarios

    if args.list:
        infos = scenarios()
        width = max(len(s.name) for s in infos)
        for s in infos:
            what = f"{s.category} / {s.phase}" if s.status == "incident" else "healthy"
            print(f"{s.name.ljust(width)}  {what:<26}  {s.summary}")
        return 0
    if args.suite:
        if args.scenario or args.output:
            raise L4Error("--suite builds many jobs: give no SCENARIO or -o with it (use --scenarios to filter)")
        names = [n.strip() for n in args.scenarios.split(",") if n.strip()] if args.scenarios else None
        started = time.perf_counter()

        def progress(job: str, truth: dict) -> None:
            if not args.json:
                print(f"  {job}: {truth['status']}, {truth['lines']} lines, {truth['format']}/{truth['layout']}",
                      file=sys.stderr)

        index = build_suite(args.suite, args.jobs_per_scenario, args.nodes, args.gpus_per_node, args.iterations,
                            args.seed, names, args.extra_healthy, overwrite=args.force, progress=progress)
        if args.json:
            print(json.dumps({"jobs": index}, indent=2))
        else:
            lines = sum(e["lines"] for e in index)
            print(f"wrote {len(index)} jobs ({lines:,} lines) to {args.suite} in {time.perf_counter() - started:.1f} s")
        return 0
    if not args.scenario or not args.output:
        raise L4Error("give a SCENARIO and -o DIR (or --suite DIR, or --list)")
    spec = JobSpec(scenario=args.scenario, nodes=args.nodes, gpus_per_node=args.gpus_per_node,
                   iterations=args.iterations, seed=args.seed, fmt=args.format, layout=args.layout,
                   naming=args.naming)
    started = time.perf_counter()
    truth = generate(spec, args.output, overwrite=args.force)
    if args.json:
        print(json.dumps(truth, indent=2))
        return 0
    seconds = time.perf_counter() - started
    print(f"wrote {args.output}: {spec.nodes} nodes x {spec.gpus_per_node} GPUs, {truth['format']} / "
          f"{truth['layout']} / {truth['naming']} names, {truth['lines']:,} lines in {truth['files']} files "
          f"({seconds:.1f} s)")
    if truth["status"] == "incident":
        blame = ", ".join(truth["faulty_nodes"]) or "none (job-wide fault)"
        print(f"{truth['scenario']}: {truth['category']} in {truth['phase']}, faulty node(s): {blame}; "
              f"{len(truth['evidence'])} evidence lines in ground_truth.json")
    else:
        print(f"{truth['scenario']}: healthy run")
    return 0
