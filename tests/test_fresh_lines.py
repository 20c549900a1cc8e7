"""The category of fresh real failure lines, end to end (``benchmarks/fresh_lines.py --jobs``), pinned.

Each sample of ``fixtures/real/fresh`` was collected from public threads no layer was written from and split by
thread before any scoring into a studied half and a score-only half (``fixtures/real/fresh/README.md``). Each
entry is planted in an 8-node job and analysed; the category the incident reports is compared with the thread's
own diagnosis. The floors are the counts reached on 2026-12-06, so that a change which loses a line fails here;
the score-only halves (b, d, f, h, j, l, m-score, n-score, o-score, p-score, q-score, r-score, s-score,
t-score, u-score, v-score, w-score, x-score) are the honest measure of lines the tool has never seen. Lowered on 2026-12-06 when the
shipped model was retrained without b's threads (copied into lines.jsonl earlier, learnt from): b 28 -> 26, c, i
and o-study one fewer, p-study two fewer; a one more (docs/evaluation.md). Raised on
2026-12-07 when a generic rule's framing alone ("RuntimeError: CUDA error:") was no longer read by the learned
model: c, i and o-study one more, p-study two more, b one more.
Raised on 2026-12-07 with 120 more labelled lines and the retrained model: a, c, i, k, o-study and m-score one
more, p-study two more (docs/evaluation.md); b back to 26 with both (27 with the framing alone).
On 2026-12-07 with sample v: m-study one fewer, since the model was retrained without a v-score line that five
training documents held (CUDA's "no kernel image is available"); d and v-study higher with the lexicon's words for
PaddlePaddle's device allocator and the kubelet's evictions. m-study back to 15 when cuda-illegal-address's
examples took PyTorch's legacy "cuda runtime error (700) :" form, so its framing covers both forms.
Sample w (2026-12-07) pinned as first scored with main's tool: w-study 7 of 13, w-score 5 of 9 (whole w 12 of 22).
Sample x (2026-12-07, new threads of used repositories, network, GPU and storage first) pinned as first scored with
the model retrained without x-score's one shared line: x-study 4 of 13, x-score 2 of 9 (whole x 6 of 22).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from fresh_lines import reported  # noqa: E402

FRESH = ROOT / "fixtures" / "real" / "fresh"
# sample: (right end to end, entries); studied halves first, then the score-only ones
FLOORS: dict[str, tuple[int, int]] = {
    "a": (33, 48), "c": (11, 16), "e": (7, 11), "g": (13, 15), "i": (11, 17), "k": (13, 15), "m-study": (15, 19),
    "n-study": (14, 19), "o-study": (8, 16), "p-study": (9, 16), "q-study": (9, 16),
    "r-study": (5, 15), "s-study": (12, 15), "t-study": (8, 14), "u-study": (10, 14),
    "v-study": (7, 13), "w-study": (7, 13), "x-study": (4, 13),
    "b": (26, 43), "d": (6, 11), "f": (7, 11), "h": (8, 12), "j": (6, 12), "l": (10, 11), "m-score": (12, 15),
    "n-score": (5, 13), "o-score": (5, 10), "p-score": (9, 14), "q-score": (7, 13),
    "r-score": (4, 11), "s-score": (5, 10), "t-score": (5, 9), "u-score": (7, 11),
    "v-score": (6, 9), "w-score": (5, 9), "x-score": (2, 9),
}
SCORE_ONLY = {"b", "d", "f", "h", "j", "l", "m-score", "n-score", "o-score", "p-score", "q-score",
              "r-score", "s-score", "t-score", "u-score", "v-score", "w-score", "x-score"}
# the score-only halves' misses are not read, not even in a failure message


@pytest.mark.parametrize("sample", sorted(FLOORS))
def test_fresh_lines_keep_their_category(sample: str) -> None:
    floor, entries = FLOORS[sample]
    got = reported(FRESH / f"{sample}.jsonl")
    assert len(got) == entries
    wrong = [f"{r.id}: {r.truth} -> {r.got} ({r.layer})" for r in got if r.truth != r.got]
    assert entries - len(wrong) >= floor, f"{len(wrong)} wrong" if sample in SCORE_ONLY else wrong
