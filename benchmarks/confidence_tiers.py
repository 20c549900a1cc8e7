"""Share of right verdicts per confidence reading, on planted jobs: what ``diagnose.confidence.TIERS`` is set from.

Usage: python benchmarks/confidence_tiers.py ROWS.jsonl [ROWS.jsonl ...] [--prior N]

A helper of ``category_cv.py --tiers FILE`` and ``fresh_lines.py --jobs --tiers FILE``: while they analyse their
planted jobs, :func:`capturing` records the :class:`~l4lite.diagnose.confidence.Basis` each verdict's confidence was
read from, and each job becomes one row (its basis, confidence and whether node and category were both right).
Given such files, this script prints per way of deciding and per doubt how many verdicts there were and how many
were right, per file and pooled, and the pooled share shrunk towards a prior (``--prior`` pseudo-verdicts at the
current tier's value), which is how the table in ``confidence.py`` is set.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from l4lite.diagnose import confidence, localize  # noqa: E402
from l4lite.diagnose.confidence import Basis  # noqa: E402
from l4lite.evaluate.scoreboard import JobResult  # noqa: E402


@dataclass(frozen=True)
class TierRow:
    """One planted job's verdict: what its confidence was read from and whether it was right."""

    id: str
    decided_by: str
    cascade_only: bool
    rival_roots: int
    global_scope: bool
    confidence: float
    right: bool


@contextmanager
def capturing() -> Iterator[list[Basis]]:
    """Record every basis the diagnosis reads a confidence from (the last one is the reported verdict's)."""
    seen: list[Basis] = []
    original = localize.job_confidence

    def spy(basis: Basis) -> float:
        seen.append(basis)
        return original(basis)

    localize.job_confidence = spy  # type: ignore[assignment]
    try:
        yield seen
    finally:
        localize.job_confidence = original  # type: ignore[assignment]


def row_of(job_id: str, seen: list[Basis], result: JobResult) -> TierRow | None:
    """The job's row, or None where no verdict is judged (not reported as an incident, nothing scored)."""
    scored = result.scored()
    if scored is None or not seen:
        return None
    b = seen[-1]
    return TierRow(job_id, b.decided_by, b.cascade_only, b.rival_roots, b.global_scope, scored.confidence,
                   scored.right)


def write_rows(path: Path, rows: Sequence[TierRow]) -> None:
    path.write_text("".join(json.dumps(asdict(r)) + "\n" for r in rows), encoding="utf-8")


def read_rows(path: Path) -> list[TierRow]:
    return [TierRow(**json.loads(x)) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def doubts(r: TierRow) -> list[str]:
    return [name for name, on in (("global_scope", r.global_scope), ("cascade_only", r.cascade_only),
                                  ("rival_roots", r.rival_roots > 0)) if on]


def counts(rows: Sequence[TierRow]) -> dict[str, tuple[int, int]]:
    """(verdicts, right) per way of deciding, per doubt (``+name``) and without any doubt (``name/clean``)."""
    out: dict[str, list[int]] = {}

    def add(key: str, right: bool) -> None:
        n = out.setdefault(key, [0, 0])
        n[0] += 1
        n[1] += right

    for r in rows:
        add(r.decided_by, r.right)
        if not doubts(r):
            add(f"{r.decided_by}/clean", r.right)
        for d in doubts(r):
            add(f"+{d}", r.right)
    return {k: (v[0], v[1]) for k, v in sorted(out.items())}


def shrunk(n: int, right: int, prior: float, weight: float) -> float:
    """The share right with ``weight`` pseudo-verdicts at ``prior``: few verdicts move the value little."""
    return (right + weight * prior) / (n + weight)


def table(files: dict[str, list[TierRow]], weight: float) -> str:
    keys = sorted({k for rows in files.values() for k in counts(rows)})
    pooled = counts([r for rows in files.values() for r in rows])
    head = f"{'reading':22s}" + "".join(f"{name[:18]:>20s}" for name in files) + f"{'pooled':>14s}  shrunk"
    lines = [head]
    per = {name: counts(rows) for name, rows in files.items()}
    for k in keys:
        cells = []
        for name in files:
            n, ok = per[name].get(k, (0, 0))
            cells.append(f"{ok:>8d}/{n:<4d}{(ok / n if n else float('nan')):5.2f}  ")
        n, ok = pooled.get(k, (0, 0))
        base = k.split("/")[0]
        prior = confidence.TIERS.get(base, 1.0) if not base.startswith("+") else 1.0
        lines.append(f"{k:22s}" + "".join(cells) + f"{ok:>6d}/{n:<4d}{ok / n if n else 0:4.2f}  "
                     f"{shrunk(n, ok, prior, weight):.2f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", nargs="+", type=Path)
    ap.add_argument("--prior", type=float, default=5.0, help="pseudo-verdicts at the current tier's value")
    args = ap.parse_args(argv)
    files = {p.stem: read_rows(p) for p in args.rows}
    print(table(files, args.prior))
    return 0


def summary(rows: Sequence[TierRow]) -> dict[str, Any]:
    """The rows' counts per reading, for a script's own printout."""
    return {k: {"n": n, "right": ok} for k, (n, ok) in counts(rows).items()}


if __name__ == "__main__":
    sys.exit(main())
