"""Real excerpts analysed alone, as an engineer pastes one failure's lines into a file: status, category, phase.

Usage: python benchmarks/lone_excerpts.py [--part real-failures|dev|holdout] [--show]

The planted evaluation (``l4lite eval --corpus``) puts each excerpt in an 8-node job whose context follows its
labelled phase, so it measures whether markers are read. Here there is no context: the phase must come from the
excerpt's own lines, or from what most failures are. ``real-failures`` is ``fixtures/real/real-failures.jsonl``
(the excerpts the first rules were written from), ``dev`` and ``holdout`` the corpus's parts. ``--show`` lists
each excerpt's truth and verdict; it refuses the held-out part, whose rows are only ever scored in aggregate.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from l4lite.api import analyze
from l4lite.evaluate.components_train import LEGACY_CATEGORY
from l4lite.options import AnalyzeOptions

ROOT = Path(__file__).resolve().parent.parent
LEGACY_PHASE = {"iterative_training": "train", "checkpoint_save": "checkpoint", "checkpoint_load": "load",
                "init": "init", "eval": "eval", "shutdown": "shutdown"}


def load(part: str) -> list[dict]:
    """Rows of one part as {id, lines, status, category, phase}."""
    if part == "real-failures":
        out = []
        for line in (ROOT / "fixtures" / "real" / "real-failures.jsonl").read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            healthy = r.get("root_cause") == "none"
            out.append({"id": r["id"], "lines": r["lines"], "status": "healthy" if healthy else "incident",
                        "category": None if healthy else LEGACY_CATEGORY.get(r.get("root_cause") or "", "unknown"),
                        "phase": None if healthy else LEGACY_PHASE.get(r.get("phase") or "")})
        return out
    rows = [json.loads(line) for line in
            (ROOT / "fixtures" / "real" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    return [r for r in rows if r["split"] == part]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="real-failures", choices=("real-failures", "dev", "holdout"))
    ap.add_argument("--show", action="store_true", help="one line per excerpt (not for the held-out part)")
    args = ap.parse_args(argv)
    if args.show and args.part == "holdout":
        print("--show is not allowed on the held-out part", file=sys.stderr)
        return 2
    rows = load(args.part)
    tally = {"status": [0, 0], "category": [0, 0], "phase": [0, 0]}
    with tempfile.TemporaryDirectory() as tmp:
        for r in rows:
            log = Path(tmp) / f"{r['id']}.log"
            log.write_text("\n".join(r["lines"]) + "\n", encoding="utf-8")
            inc = analyze([str(log)], AnalyzeOptions())
            got = {"status": inc.status, "category": inc.category, "phase": inc.phase}
            tally["status"][0] += got["status"] == r["status"]
            tally["status"][1] += 1
            if r["status"] == "incident" and got["status"] == "incident":
                for key in ("category", "phase"):
                    if r.get(key):
                        tally[key][0] += got[key] == r[key]
                        tally[key][1] += 1
            if args.show:
                print(f"{r['id'][:48]:48s} truth {r['status']}/{r.get('category')}/{r.get('phase')}  "
                      f"got {got['status']}/{got['category']}/{got['phase']}")
    print(f"{args.part}: {len(rows)} excerpts; " + "; ".join(
        f"{k} {ok}/{n} ({100 * ok / n:.1f} %)" if n else f"{k} -" for k, (ok, n) in tally.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
