"""`l4lite eval`: score the analyser and the L4 baselines on a suite of simulated jobs."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from l4lite.cli.commands import summary


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help=summary("eval"),
        description="Run the analyser and L4's two baselines on every job of SUITE_DIR (folders with "
        "ground_truth.json, as written by `l4lite simulate --suite`) and print faulty-node top-1/3/5, phase "
        "and category accuracy, evidence precision/recall/F1, false incidents on healthy jobs and speed, per "
        "scenario and overall.",
    )
    p.add_argument("suite", metavar="SUITE_DIR", nargs="?", help="suite folder (or a single simulated job)")
    p.add_argument("--corpus", metavar="FILE", help="instead of a suite: plant every excerpt of a real corpus "
                   "(fixtures/real/corpus.jsonl) in 8-node jobs in three layouts and print a table per split")
    p.add_argument("--layouts", metavar="A,B", help="with --corpus: only these layouts "
                   "(node-folders, rank-files, srun-merged)")
    p.add_argument("--split", choices=("dev", "holdout", "both"), default="both", help="with --corpus: which part")
    p.add_argument("--confusion", action="store_true", help="with --corpus: also print each split's category "
                   "confusion matrix (truth x predicted counts, layouts summed)")
    p.add_argument("--seed", type=int, default=0, help="with --corpus: seed of the planted jobs")
    p.add_argument("--json", nargs="?", const="-", metavar="FILE",
                   help="write all numbers as JSON to FILE (or stdout, instead of the table)")
    p.add_argument("--baselines-only", action="store_true", help="score the two baselines only")
    p.add_argument("--scenarios", metavar="A,B", help="only jobs of these scenarios (comma-separated)")
    p.add_argument("-q", "--quiet", action="store_true", help="no per-job progress on stderr")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.corpus:
        return run_corpus(args)
    if not args.suite:
        print("l4lite eval: give SUITE_DIR or --corpus FILE", file=sys.stderr)
        return 2
    from l4lite.evaluate.scoreboard import OURS, default_analyzers, evaluate, format_scoreboard, load_truth
    from l4lite.simulate import suite_jobs

    jobs = suite_jobs(args.suite)
    if args.scenarios:
        wanted = {s.strip() for s in args.scenarios.split(",") if s.strip()}
        jobs = [j for j in jobs if load_truth(j).get("scenario") in wanted]
    analyzers = default_analyzers(args.baselines_only)
    if OURS not in analyzers and not args.baselines_only and not args.quiet:
        print("l4lite: the analysis pipeline is not available; scoring the baselines only", file=sys.stderr)

    def progress(result) -> None:  # noqa: ANN001
        if not args.quiet:
            top = "ok" if result.top(1) else ("-" if result.top(1) is None else "miss")
            print(f"  {result.job} [{result.method}]: {result.pred_status or 'error'}, top1 {top}, "
                  f"{result.seconds:.2f} s", file=sys.stderr)

    board = evaluate(jobs, analyzers, progress)
    return _output(args, board.to_dict(), lambda: format_scoreboard(board))


def run_corpus(args: argparse.Namespace) -> int:
    from l4lite.evaluate.corpus import (
        SPLITS,
        evaluate_corpus,
        format_corpus,
        format_corpus_confusion,
        load_corpus,
    )
    from l4lite.evaluate.planting import LAYOUTS

    excerpts = load_corpus(args.corpus)
    layouts = [s.strip() for s in args.layouts.split(",") if s.strip()] if args.layouts else list(LAYOUTS)
    bad = [lay for lay in layouts if lay not in LAYOUTS]
    if bad:
        print(f"l4lite eval: unknown layout {bad[0]!r}; choose from {', '.join(LAYOUTS)}", file=sys.stderr)
        return 2
    splits = SPLITS if args.split == "both" else (args.split,)

    def progress(result) -> None:  # noqa: ANN001
        if not args.quiet:
            print(f"  {result.job} [{result.scenario}]: {result.pred_status or 'error'}", file=sys.stderr)

    score = evaluate_corpus(excerpts, layouts, splits, seed=args.seed, progress=progress)
    if args.confusion:
        return _output(args, score.to_dict(), lambda: format_corpus(score) + "\n\n" + format_corpus_confusion(score))
    return _output(args, score.to_dict(), lambda: format_corpus(score))


def _output(args: argparse.Namespace, data: dict, table: Callable[[], str]) -> int:
    """``--json -`` prints the numbers, ``--json FILE`` writes them (atomically) beside the printed table."""
    from l4lite.diagnose.incident import write_atomic

    if args.json:
        text = json.dumps(data, indent=2)
        if args.json == "-":
            print(text)
            return 0
        write_atomic(args.json, text + "\n")
    print(table())
    return 0
