"""Two readings of the category decision when no rule speaks, measured on studied material end to end.

Usage: python benchmarks/verdict_study.py [FILE ...] [--dev] [--save OUT.json | --load IN.json] [--show]

Each entry (the corpus's dev excerpts with a scored category with ``--dev``; fresh line files, studied halves only:
a, c, e, g, i, k, m-study to v-study) is planted in an 8-node job of rank files and analysed once (``--save`` keeps
the verdicts, ``--load`` reads them back instead of analysing). Two tables:

1. **Abstentions.** For each `unknown` verdict, the best category other than unknown that the top suspect's
   non-cascade evidence lines would give: the shipped model's most probable class over those lines (its
   probability, in bands), and the lexicon with its floor lowered. Per band: how many such readings would be right
   (a gain), how many verdicts are right as `unknown` (a loss), and how many are wrong either way. The shipped model
   was trained on the dev excerpts and on sample a (copied into ``fixtures/real/lines.jsonl``), so its bands are
   printed apart for those and for the other studied halves, which it never saw.
2. **Over-eager categories.** For each category given, right/given by what decided it (``category_cv.decided_by``).

Counts only without ``--show``; ``--show`` names the entries (studied sets only).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from category_cv import decided_by, labelled_lines  # noqa: E402

from l4lite.api import AnalyzeOptions, analyze  # noqa: E402
from l4lite.evaluate.corpus import load_corpus  # noqa: E402
from l4lite.evaluate.planting import Excerpt, JobPlanter  # noqa: E402
from l4lite.evaluate.scoreboard import job_paths  # noqa: E402
from l4lite.rules import components, learned  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TRAINED = frozenset({"dev", "a"})  # sets the shipped model was trained on
BANDS = (0.0, 0.3, 0.4, 0.5, 0.6)
LEXICON_FLOORS = (1.0, 2.0)


class Verdict(NamedTuple):
    """One studied entry analysed end to end."""

    set: str
    id: str
    truth: str
    got: str
    decided: str
    suspect_lines: tuple[str, ...]  # the top suspect's evidence lines, in the incident's order


def analysed(name: str, excerpts: Sequence[Excerpt]) -> list[Verdict]:
    out: list[Verdict] = []
    with tempfile.TemporaryDirectory(prefix="l4lite-verdicts-") as tmp:
        for x in excerpts:
            if x.status != "incident" or x.category is None:
                continue
            job = JobPlanter(x).write("rank-files", Path(tmp) / x.id).path
            inc = analyze(job_paths(job), AnalyzeOptions()).to_dict()
            sus = inc.get("suspects") or []
            node = sus[0].get("node") if sus else None
            lines = tuple(str(e.get("text") or "") for e in inc.get("evidence") or []
                          if node is None or e.get("node") == node)
            out.append(Verdict(name, x.id, str(x.category), str(inc.get("category") or "unknown"), decided_by(inc),
                               lines))
    return out


class Reading(NamedTuple):
    """The best non-unknown category a reading gives an abstention, with its strength."""

    category: str
    strength: float


def model_reading(lines: Sequence[str]) -> Reading | None:
    """The shipped model's most probable class over the non-cascade lines, at any probability."""
    model = learned.shipped_model()
    best: Reading | None = None
    for text in lines:
        rest = components.without_advice(text)
        if model is None or not rest.strip() or components.is_cascade(text):
            continue
        proba = model.proba(rest)
        top = max(proba, key=lambda c: proba[c])
        if best is None or proba[top] > best.strength:
            best = Reading(top, proba[top])
    return best


def lexicon_reading(lines: Sequence[str], floor: float) -> Reading | None:
    """The first non-cascade line the lexicon reads with its score floor lowered to ``floor`` (margin 0.5)."""
    kept = components.MIN_SCORE, components.MIN_MARGIN
    components.MIN_SCORE, components.MIN_MARGIN = floor, 0.5
    try:
        for text in lines:
            found = None if components.is_cascade(text) else components.component(text)
            if found is not None:
                return Reading(found.category, found.score)
        return None
    finally:
        components.MIN_SCORE, components.MIN_MARGIN = kept


class Tally(NamedTuple):
    gain: int
    loss: int
    wrong: int


def tally(pairs: Sequence[tuple[Verdict, Reading]]) -> Tally:
    gain = sum(r.category == v.truth for v, r in pairs)
    loss = sum(v.truth == "unknown" for v, _ in pairs)
    return Tally(gain, loss, len(pairs) - gain - loss)


def abstentions(verdicts: Sequence[Verdict], show: bool) -> None:
    unknown = [v for v in verdicts if v.got == "unknown"]
    for part, keep in (("trained on (dev, a)", True), ("never trained on", False)):
        rows = [v for v in unknown if (v.set in TRAINED) == keep]
        read = [(v, model_reading(v.suspect_lines)) for v in rows]
        print(f"{part}: {len(rows)} unknown verdicts, {sum(v.truth == 'unknown' for v in rows)} right")
        for lo, hi in zip(BANDS, (*BANDS[1:], 1.01), strict=True):
            band = [(v, r) for v, r in read if r is not None and lo <= r.strength < hi]
            t = tally(band)
            print(f"  model's best class at p in [{lo:.1f}, {min(hi, 1.0):.1f}): {len(band):3d} readings, gain {t.gain},"
                  f" loss {t.loss}, wrong either way {t.wrong}")
        for floor in LEXICON_FLOORS:
            pairs = [(v, r) for v in rows if (r := lexicon_reading(v.suspect_lines, floor)) is not None]
            t = tally(pairs)
            print(f"  lexicon at score >= {floor}: {len(pairs)} readings, gain {t.gain}, loss {t.loss},"
                  f" wrong either way {t.wrong}")
        if show:
            for v, r in read:
                got = f"{r.category} {r.strength:.2f}" if r else "-"
                print(f"    {v.set}/{v.id}: truth {v.truth}; model {got}; decided {v.decided}")


def over_eager(verdicts: Sequence[Verdict], show: bool) -> None:
    given = Counter(v.got for v in verdicts)
    for cat, n in given.most_common():
        if cat == "unknown":
            continue
        rows = [v for v in verdicts if v.got == cat]
        by = Counter(v.decided for v in rows)
        ok = Counter(v.decided for v in rows if v.truth == cat)
        wrong = sorted(by, key=lambda k: -(by[k] - ok[k]))
        cells = ", ".join(f"{k} {ok[k]}/{by[k]}" for k in wrong[:6] if by[k] > ok[k])
        print(f"  {cat}: right {sum(ok.values())}/{n}; wrong most by {cells}")
        if show:
            for v in rows:
                if v.truth != cat:
                    print(f"    {v.set}/{v.id}: truth {v.truth} ({v.decided})")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--dev", action="store_true", help="the corpus's dev excerpts")
    ap.add_argument("--save", type=Path)
    ap.add_argument("--load", type=Path)
    ap.add_argument("--show", action="store_true")
    args = ap.parse_args(argv)
    if args.load:
        verdicts = [Verdict(*(tuple(x) if isinstance(x, list) else x for x in row))
                    for row in json.loads(args.load.read_text(encoding="utf-8"))]
    else:
        verdicts = []
        if args.dev:
            verdicts += analysed("dev", [x for x in load_corpus(ROOT / "fixtures" / "real" / "corpus.jsonl")
                                         if x.split == "dev"])
        for path in args.files:
            verdicts += analysed(path.stem, labelled_lines(path))
    if args.save:
        args.save.write_text(json.dumps([list(v) for v in verdicts]), encoding="utf-8")
    for part, keep in (("dev", True), ("studied halves", False)):
        rows = [v for v in verdicts if (v.set == "dev") == keep]
        print(f"{part}: {sum(v.got == v.truth for v in rows)}/{len(rows)} right end to end")
    print("abstentions:")
    abstentions(verdicts, args.show)
    print("categories given (right/given), with the deciders of the wrong ones:")
    over_eager(verdicts, args.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
