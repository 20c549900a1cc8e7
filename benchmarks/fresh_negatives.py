"""Hard negatives: how many alarming-looking lines from healthy runs an analysis leaves healthy.

Usage: python benchmarks/fresh_negatives.py FILE [FILE ...] [--show] [--layouts L,L] [--phase P]

Each entry of FILE (``fixtures/real/fresh/a.jsonl`` schema with ``"status": "healthy"``; ``notes`` quote the
thread saying the message is harmless or the run went on) is planted in an 8-node healthy job as the corpus
plants its healthy excerpts (``evaluate.planting``: the lines on one rank or its node's kernel log, every rank
training on and finishing afterwards), in each layout, and analysed end to end with the shipped rules. An entry
counts as healthy when every layout's verdict is healthy. ``--show`` lists each false incident with the finding
that made it one: its detector, rule id, the gate that let it through (a root, or a severe cascade or
confirmation) and the line it points at.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from l4lite.api import detectors, run_detectors
from l4lite.diagnose.localize import Localizer, Verdict
from l4lite.evaluate.planting import LAYOUTS, Excerpt, JobPlanter
from l4lite.options import AnalyzeOptions
from l4lite.scan.job import load_rules, scan_job
from l4lite.vocab import PHASES


@dataclass(frozen=True)
class Raised:
    """The finding that made a planted healthy job an incident."""

    layout: str
    detector: str
    rule: str | None
    gate: str  # "root", or the severe role ("cascade", "confirmation") that let a job without roots through
    category: str
    line: str


@dataclass
class Entry:
    """One hard negative and what each layout's analysis said of it."""

    id: str
    source_url: str
    raised: list[Raised] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return not self.raised


def negatives(path: Path, phase: str | None = None) -> list[Excerpt]:
    """The file's entries as healthy excerpts (phase as labelled, or ``phase`` for all; none means training)."""
    out: list[Excerpt] = []
    for n, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not text.strip():
            continue
        row = json.loads(text)
        if row.get("status", "healthy") != "healthy":
            raise ValueError(f"{path}:{n}: a hard negative's status is healthy, not {row.get('status')!r}")
        out.append(Excerpt(id=str(row["id"]), source_group=str(row.get("source_group", row["id"])), split="fresh",
                           status="healthy", category=None, phase=phase or row.get("phase"), faulty=None,
                           lines=tuple(str(x) for x in row["lines"]), source_url=str(row.get("source_url", ""))))
    return out


def raised_by(verdict: Verdict, layout: str) -> Raised:
    """The verdict's lead finding, with the gate it passed."""
    f = verdict.primary
    if f is None:
        return Raised(layout, "?", None, "?", str(verdict.category), "")
    role = next((r for g, r in zip(verdict.findings, verdict.roles, strict=False) if g is f), f.role)
    line = f.records[0].text.splitlines()[0][:160] if f.records else f.explain[:160]
    return Raised(layout, f.detector, f.rule, "root" if f.role == "root" else f"{f.role}->{role}",
                  str(verdict.category), line)


def score(excerpts: Sequence[Excerpt], layouts: Sequence[str] = LAYOUTS, seed: int = 0) -> list[Entry]:
    """Plant and analyse every excerpt in every layout; one ``Entry`` per excerpt."""
    options = AnalyzeOptions()
    rules = load_rules(options)
    out: list[Entry] = []
    with tempfile.TemporaryDirectory(prefix="l4lite-neg-") as tmp:
        for x in excerpts:
            entry = Entry(x.id, x.source_url)
            planter = JobPlanter(x, seed)
            for layout in layouts:
                job = planter.write(layout, Path(tmp) / layout / x.id).path
                scan = scan_job([str(job)], options, rules=rules)
                verdict = Localizer().localize(scan, run_detectors(scan, detectors(options, rules)))
                if verdict.status == "incident":
                    entry.raised.append(raised_by(verdict, layout))
            out.append(entry)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--show", action="store_true", help="each false incident and the finding that raised it")
    ap.add_argument("--layouts", default=",".join(LAYOUTS), help="comma-separated planting layouts")
    ap.add_argument("--phase", choices=PHASES, help="plant every entry in this phase; 'shutdown' puts the lines "
                    "after the run's last progress line, so no later training shows that the job lived through them")
    args = ap.parse_args(argv)
    layouts = [x for x in args.layouts.split(",") if x]
    for path in args.files:
        entries = score(negatives(path, args.phase), layouts)
        ok = sum(e.healthy for e in entries)
        jobs = len(entries) * len(layouts)
        bad_jobs = sum(len(e.raised) for e in entries)
        print(f"{path}: {ok}/{len(entries)} entries healthy in every layout ({100 * ok / max(len(entries), 1):.1f} %);"
              f" jobs {jobs - bad_jobs}/{jobs} healthy")
        if args.show:
            for e in entries:
                for r in e.raised:
                    print(f"  {e.id} @{r.layout}: {r.detector} rule={r.rule} gate={r.gate} category={r.category}"
                          f"\n      {r.line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
