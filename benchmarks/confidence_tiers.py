"""Share of right verdicts per confidence reading, on planted jobs: what ``diagnose.confidence.TIERS`` is set from.

Usage: python benchmarks/confidence_tiers.py ROWS.jsonl [ROWS.jsonl ...] [--prior N] [--pool A,B [--cv]]
       [--jobs-dir DIR]

A helper of ``category_cv.py --tiers FILE`` and ``fresh_lines.py --jobs --tiers FILE``: while they analyse their
planted jobs, :func:`capturing` records the :class:`~l4lite.diagnose.confidence.Basis` each verdict's confidence was
read from, and each job becomes one row (its basis, confidence and whether node and category were both right).
``--jobs-dir fixtures/real_jobs`` makes such a file from the real jobs. Given such files, this script prints per way of deciding and per doubt how many verdicts there were and how many
were right, per file and pooled, and the pooled share shrunk towards a prior (``--prior`` pseudo-verdicts at the
current tier's value). ``--pool`` names the files (by stem) the table in ``confidence.py`` is read from
(``propose``) and scores it on each file; ``--cv`` also scores it in a grouped cross-validation over the pooled
rows (dev folds by source group, fresh files), beside a logistic regression on the same readings.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from l4lite.diagnose import confidence, localize  # noqa: E402
from l4lite.diagnose.confidence import Basis  # noqa: E402
from l4lite.evaluate.calibration import Scored, calibration  # noqa: E402
from l4lite.evaluate.scoreboard import JobResult  # noqa: E402
from l4lite.rules import components  # noqa: E402


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
    words: str = ""  # what the lexicon reads from the root lines: "agree", "other" (another category), "none"
    roots: int = 0  # root evidence lines
    rule: str = ""  # the rule of the root line that gave the category, if a rule did
    words_other: bool = False  # the basis's reading: the root lines' words name another category


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


def row_of(job_id: str, seen: list[Basis], result: JobResult, inc: dict[str, Any]) -> TierRow | None:
    """The job's row, or None where no verdict is judged (not reported as an incident, nothing scored).

    Besides the basis, candidate readings: whether the lexicon, read on the root lines, names the verdict's
    category, another one or none; how many root lines there are; the rule that gave the category."""
    scored = result.scored()
    if scored is None or not seen:
        return None
    b = seen[-1]
    roots = [e for e in inc.get("evidence") or [] if e.get("role") == "root"]
    texts = [str(e.get("text") or "") for e in roots]
    said = components.component("\n".join(t for t in texts if not components.is_cascade(t)))
    words = "none" if said is None else ("agree" if said.category == inc.get("category") else "other")
    lead = next((e for e in roots if e.get("category") == inc.get("category")), None)
    return TierRow(job_id, b.decided_by, b.cascade_only, b.rival_roots, b.global_scope, scored.confidence,
                   scored.right, words, len(roots), str((lead or {}).get("rule") or ""), b.words_other)


def write_rows(path: Path, rows: Sequence[TierRow]) -> None:
    path.write_text("".join(json.dumps(asdict(r)) + "\n" for r in rows), encoding="utf-8")


def read_rows(path: Path) -> list[TierRow]:
    return [TierRow(**json.loads(x)) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def doubts(r: TierRow) -> list[str]:
    return [name for name, on in (("global_scope", r.global_scope), ("cascade_only", r.cascade_only),
                                  ("rival_roots", r.rival_roots > 0), ("words_other", r.words_other)) if on]


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
        if r.words:
            add(f"{r.decided_by}/words:{r.words}", r.right)
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


def job_rows(folder: Path) -> list[TierRow]:
    """Each job with a ground truth under ``folder`` analysed as ``l4lite eval`` does, one row per judged verdict."""
    from l4lite.api import AnalyzeOptions, analyze
    from l4lite.evaluate.scoreboard import job_paths, load_truth, score_job

    rows = []
    for job in sorted(p for p in folder.iterdir() if (p / "ground_truth.json").exists()):
        with capturing() as seen:
            inc = analyze(job_paths(job), AnalyzeOptions(heatmap=False)).to_dict()
        row = row_of(job.name, seen, score_job(job, load_truth(job), inc, "l4lite", 0.0), inc)
        if row is not None:
            rows.append(row)
    return rows


CAP = 0.95  # no way of deciding is surer than this: a few dozen verdicts cannot show a share above it


class Setting(NamedTuple):
    """A table of tiers and penalties, as ``diagnose.confidence`` holds them."""

    tiers: dict[str, float]
    penalties: dict[str, float]


def confidence_of(r: TierRow, s: Setting) -> float:
    """The confidence ``job_confidence`` would give the row's basis under the setting ``s``."""
    p = s.tiers.get(r.decided_by, s.tiers["none"])
    for d in doubts(r):
        p *= s.penalties[d]
    return round(min(1.0, max(0.0, p)), 3)


def propose(rows: Sequence[TierRow], weight: float) -> Setting:
    """Tiers and penalties from pooled out-of-sample rows, by one rule written down beforehand.

    The confidence is a tier times a factor per doubt; both are read from the rows by turns (each a ratio of
    verdicts right to verdicts expected right under the other's current values), each with ``weight``
    pseudo-verdicts: a tier's (at most ``CAP``) at the pooled share right of all rows (a tier seen a few times stays near the
    average), a doubt's at a factor of 1 (a doubt seen a few times lowers little; it never raises). A tier no row
    shows keeps its current value, capped at the pooled share, and a doubt no row shows its current factor
    (priors, not measurements)."""
    overall = sum(r.right for r in rows) / len(rows)
    tiers = dict(confidence.TIERS)
    pens = {d: 1.0 if any(d in doubts(r) for r in rows) else v for d, v in confidence.PENALTIES.items()}

    def factor(r: TierRow, leave: str = "") -> float:
        p = 1.0
        for d in doubts(r):
            p *= pens[d] if d != leave else 1.0
        return p

    for _ in range(20):
        for t, now in confidence.TIERS.items():
            mine = [r for r in rows if r.decided_by == t]
            tiers[t] = min(CAP, (sum(r.right for r in mine) + weight * overall) /
                           (sum(factor(r) for r in mine) + weight)) if mine else min(now, overall)
        for d in pens:
            hit = [r for r in rows if d in doubts(r)]
            expected = sum(tiers[r.decided_by] * factor(r, d) for r in hit)
            pens[d] = min(1.0, (sum(r.right for r in hit) + weight) / (expected + weight)) if hit else \
                confidence.PENALTIES[d]
    return Setting({t: round(v, 2) for t, v in tiers.items()}, {d: round(v, 2) for d, v in pens.items()})


def scores(rows: Sequence[TierRow], s: Setting) -> str:
    points = [Scored(confidence_of(r, s), r.right) for r in rows]
    cal = calibration(points)
    high = [p for p in points if p.confidence >= 0.8]
    share = f"{sum(p.right for p in high) / len(high):.2f} of {len(high)}" if high else "-"
    auc = "-" if cal["auroc"] is None else f"{cal['auroc']:.3f}"
    return f"Brier {cal['brier']:.3f} AUROC {auc} ECE {cal['ece']:.3f}, at 0.8 or above right {share}"


def group_of(name: str, r: TierRow, folds: dict[str, int]) -> str:
    """A row's group for the grouped cross-validation: its dev fold (by source group), else its fresh file."""
    if r.id in folds:
        return f"{name}:fold{folds[r.id]}"
    return f"{name}:{r.id.split('/')[0]}"


def grouped_cv(files: dict[str, list[TierRow]], pool: Sequence[str], weight: float) -> str:
    """Each group scored by the setting ``propose`` reads from the other groups, beside a logistic regression on
    the same readings (when scikit-learn is installed) and the setting in force: does a model beat the table?"""
    from category_cv import fold_of

    from l4lite.evaluate.corpus import load_corpus

    folds = {x.id: fold_of(x.source_group, 5) for x in load_corpus(ROOT / "fixtures" / "real" / "corpus.jsonl")
             if x.split == "dev"}  # the held-out part is never read
    rows = [(group_of(name, r, folds), r) for name in pool for r in files[name]]
    now = Setting(dict(confidence.TIERS), dict(confidence.PENALTIES))
    names = list(confidence.TIERS) + list(confidence.PENALTIES)

    def features(r: TierRow) -> list[float]:
        return [float(r.decided_by == n or n in doubts(r)) for n in names]

    out: dict[str, list[Scored]] = {"table": [], "in force": [], "logistic": []}
    for g in sorted({g for g, _ in rows}):
        train = [r for h, r in rows if h != g]
        test = [r for h, r in rows if h == g]
        s = propose(train, weight)
        out["table"] += [Scored(confidence_of(r, s), r.right) for r in test]
        out["in force"] += [Scored(confidence_of(r, now), r.right) for r in test]
        try:
            from sklearn.linear_model import LogisticRegression
        except ImportError:
            continue
        model = LogisticRegression(C=1.0).fit([features(r) for r in train], [r.right for r in train])
        got = model.predict_proba([features(r) for r in test])[:, 1]
        out["logistic"] += [Scored(float(p), r.right) for p, r in zip(got, test, strict=True)]
    lines = []
    for name, points in out.items():
        if points:
            cal = calibration(points)
            high = [p for p in points if p.confidence >= 0.8]
            lines.append(f"  grouped CV {name:9s} n={cal['n']} Brier {cal['brier']:.3f} AUROC {cal['auroc']:.3f} "
                         f"ECE {cal['ece']:.3f}, at 0.8 or above right {sum(p.right for p in high)}/{len(high)}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", nargs="+", type=Path)
    ap.add_argument("--prior", type=float, default=5.0, help="pseudo-verdicts at the current tier's value")
    ap.add_argument("--pool", help="comma-separated stems of the files the proposed setting is read from")
    ap.add_argument("--cv", action="store_true", help="with --pool: grouped cross-validation of the rule")
    ap.add_argument("--jobs-dir", type=Path, help="first analyse these jobs (fixtures/real_jobs) and write their rows "
                    "to the first ROWS file")
    args = ap.parse_args(argv)
    if args.jobs_dir is not None:
        write_rows(args.rows[0], job_rows(args.jobs_dir))
    files = {p.stem: read_rows(p) for p in args.rows}
    print(table(files, args.prior))
    if args.pool:
        pooled = [r for name in args.pool.split(",") for r in files[name]]
        new = propose(pooled, args.prior)
        now = Setting(dict(confidence.TIERS), dict(confidence.PENALTIES))
        print(f"proposed from {args.pool} ({len(pooled)} verdicts): tiers {new.tiers}, penalties {new.penalties}")
        for name, rows in files.items():
            print(f"  {name:16s} now: {scores(rows, now)}\n  {'':16s} new: {scores(rows, new)}")
        if args.cv:
            print(grouped_cv(files, args.pool.split(","), args.prior))
    return 0


def summary(rows: Sequence[TierRow]) -> dict[str, Any]:
    """The rows' counts per reading, for a script's own printout."""
    return {k: {"n": n, "right": ok} for k, (n, ok) in counts(rows).items()}


if __name__ == "__main__":
    sys.exit(main())
