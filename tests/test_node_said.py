"""A suspect node's own lines near the failure name a component (``diagnose.ownlines.node_said``); a progress line
is not one of them: it reports every step's numbers, and under fp16 the first steps' loss-scale search counts a
skipped iteration in each (real job 191: AMP with Megatron-LM's progress line, the first node cut off from the
network at its 15th step, while the search had just ended)."""

from __future__ import annotations

from pathlib import Path

import pytest

from l4lite.api import analyze

REPO = Path(__file__).resolve().parents[1]
CUT_OFF = REPO / "fixtures" / "real_jobs" / "191-amp-netdown"


@pytest.mark.skipif(not CUT_OFF.is_dir(), reason="real job 191 not present")
def test_the_loss_scale_search_in_progress_lines_reads_as_no_numerical_fault() -> None:
    inc = analyze([str(CUT_OFF)])
    assert inc.suspects[0].node == "cpu-node-a"
    assert inc.category != "numerical"
