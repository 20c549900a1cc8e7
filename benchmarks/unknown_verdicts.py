"""How often an incident says `unknown`, and whether its top suspect's own lines named a component anyway.

Usage: python benchmarks/unknown_verdicts.py [--corpus FILE] [FILE ...] [--layout L] [--show]

Each excerpt (the corpus's dev part with ``--corpus``; fresh line files as ``benchmarks/fresh_lines.py`` reads
them) is planted in an 8-node job and analysed end to end. For every incident whose category is ``unknown`` (or
missing), the evidence lines of its top suspect (any role) are read by the component lexicon and the names with
one meaning (``rules.components.component``, no learned guess) and, separately, with the learned model: a line
that names a component is one the abstention could have followed. ``--show`` prints, per unknown verdict, the
excerpt, its truth and what the suspect's lines name; use it only on sets whose misses may be studied.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from category_cv import labelled_lines  # noqa: E402

from l4lite.api import AnalyzeOptions, analyze  # noqa: E402
from l4lite.evaluate.corpus import load_corpus  # noqa: E402
from l4lite.evaluate.planting import Excerpt, JobPlanter  # noqa: E402
from l4lite.evaluate.scoreboard import job_paths  # noqa: E402
from l4lite.rules.components import component  # noqa: E402


def suspect_lines(inc: dict) -> list[str]:
    """The evidence lines of the incident's top suspect, in the incident's order."""
    sus = inc.get("suspects") or []
    if not sus:
        return [str(e.get("text") or "") for e in inc.get("evidence") or []]
    node = sus[0].get("node")
    return [str(e.get("text") or "") for e in inc.get("evidence") or [] if e.get("node") == node]


def named(lines: Sequence[str], learned: bool) -> list[str]:
    """The categories the lines' words name, one per line that names one."""
    out = []
    for text in lines:
        found = component(text, learned=learned)
        if found is not None:
            out.append(found.category)
    return out


def score(name: str, excerpts: Sequence[Excerpt], layout: str, show: bool) -> None:
    incidents = unknown = words = model = 0
    right_words = 0
    truths: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="l4lite-unknown-") as tmp:
        for x in excerpts:
            if x.status != "incident":
                continue
            job = JobPlanter(x).write(layout, Path(tmp) / x.id).path
            inc = analyze(job_paths(job), AnalyzeOptions()).to_dict()
            if inc.get("status") != "incident":
                continue
            incidents += 1
            if inc.get("category") not in (None, "unknown"):
                continue
            unknown += 1
            truths[str(x.category)] += 1
            lines = suspect_lines(inc)
            by_words, by_model = named(lines, False), named(lines, True)
            words += bool(by_words)
            model += bool(by_model)
            right_words += bool(by_words) and by_words[0] == x.category
            if show:
                print(f"  {x.id}: truth {x.category}; words {by_words}; with model {by_model}")
                for text in lines[:4]:
                    print(f"      | {text[:160]!r}")
    told = f" (truths {dict(truths)})" if show else ""  # a score-only set's misses stay unread without --show
    print(f"{name}: {incidents} incidents, {unknown} unknown{told}; suspect's lines name a component: {words} by"
          f" words/names, {model} with the model" + (f" ({right_words} the truth first)" if show else ""))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--corpus", type=Path, help="the real corpus: its dev part")
    ap.add_argument("--layout", default="rank-files")
    ap.add_argument("--show", action="store_true")
    args = ap.parse_args(argv)
    if args.corpus:
        score(f"{args.corpus} (dev)", [x for x in load_corpus(args.corpus) if x.split == "dev"], args.layout,
              args.show)
    for path in args.files:
        score(str(path), labelled_lines(path), args.layout, args.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
