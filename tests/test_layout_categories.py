"""A failure's category does not depend on how the job's logs were laid out: a traceback cut off before its
exception line reads the same in per-node folders, per-rank files and one ``srun --label`` stream, where every
line of the record begins with the task's number."""

from __future__ import annotations

import pytest

from l4lite import analyze
from l4lite.evaluate.planting import LAYOUTS, Excerpt, JobPlanter

CUT_TRACEBACK = Excerpt(
    id="cut-traceback", source_group="t#cut-traceback", split="dev", status="incident", category="software",
    phase="train", faulty="node", lines=(
        "Traceback (most recent call last):",
        '  File "/workspace/trainer/run_pretrain.py", line 212, in <module>',
        "    main(parse_args())",
        '  File "/workspace/trainer/run_pretrain.py", line 188, in main',
        "    engine.train_step(batch)",
        '  File "/workspace/trainer/engine.py", line 97, in train_step',
        "    outputs = self.model(**batch)",
    ))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_cut_traceback_reads_alike_in_every_layout(tmp_path, layout) -> None:
    job = JobPlanter(CUT_TRACEBACK, seed=3).write(layout, tmp_path / layout)
    inc = analyze(str(job.path)).to_dict()
    assert inc["status"] == "incident"
    assert inc["category"] == "software"  # the fallback's reading, not "unknown" for srun's "12: " label
    assert any(e.get("rule") == "python-traceback" and e.get("role") == "root" for e in inc["evidence"])
