"""Times one line lends a job: a quoted date, a record's field of another year, a checkpoint saved after the
failure, a launcher's stated time on a node in another zone. Each must not move the job's facts (the cases of
``benchmarks/time_transforms.py`` that lost a verdict, on their real jobs)."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path

from l4lite.api import analyze
from l4lite.ingest.spans import DatedLine, FileSpan, apart_files, lone_years, no_spikes
from l4lite.options import AnalyzeOptions
from l4lite.scan.phases import PhaseTracker, phase_at

REAL = Path(__file__).resolve().parent.parent / "fixtures" / "real_jobs"
T = 1796476195.0


def test_before_a_first_marker_that_says_training_ran_is_no_set_up() -> None:
    saved = PhaseTracker()
    saved.feed("checkpoint_saved", T, "n1/console.log", 30, "n1", 1200)
    assert phase_at(saved.events, T - 2) is None  # the loop ran to save it: since when, the stream does not say
    started = PhaseTracker()
    started.feed("train", T, "n1/console.log", 30, "n1")
    assert phase_at(started.events, T - 2) == "init"  # before training began: set-up
    restarted = PhaseTracker()
    restarted.feed("restart", T - 10, "n1/console.log", 3, "n1")
    restarted.feed("checkpoint_saved", T, "n1/console.log", 30, "n1")
    assert phase_at(restarted.events, T - 20) == "init"


def test_a_file_whose_one_timed_line_of_several_is_a_date_it_quotes_is_not_set_apart() -> None:
    core = {f"a/{i}.log": FileSpan(False, T, T + 60, times=(T, T + 60), lines=40) for i in range(3)}
    quoted = T - 3 * 365 * 86400.0  # ``Fri Mar  1 12:00:00 UTC 2024`` amid a rank's untimed traceback
    assert apart_files({**core, "b/stderr.log": FileSpan(False, quoted, quoted, times=(quoted,), lines=7,
                                                                  first_at=3)}) == {}
    # a file that opens with its one timed line (a start-up line, then untimed ones) keeps its span: set apart
    assert set(apart_files({**core, "b/old.log": FileSpan(False, quoted, quoted, times=(quoted,), lines=7)})) == \
        {"b/old.log"}
    # a file of that one line is its line's: another job's, set apart
    assert set(apart_files({**core, "b/old.log": FileSpan(False, quoted, quoted, times=(quoted,), lines=1)})) == \
        {"b/old.log"}


def test_the_one_timed_line_of_a_file_of_several_gives_no_year() -> None:
    written = time.mktime((2026, 12, 6, 12, 0, 0, 0, 0, 0))
    lines = ["Traceback (most recent call last):", "  import packing_utils", "Fri Mar  1 12:00:00 UTC 2024",
             "ModuleNotFoundError: No module named 'packing_utils'"]
    assert lone_years(lines, [DatedLine(2, 2024, "Fri Mar  1 12:00:00 UTC 2024")], written) == {2024: 1}
    assert lone_years(lines[2:3], [DatedLine(0, 2024, "Fri Mar  1 12:00:00 UTC 2024")], written) == {}


def test_of_two_times_a_last_one_hours_before_the_first_is_a_wrong_line() -> None:
    assert no_spikes([T, T - 3 * 365 * 86400.0]) == [T]  # a record's ``created`` of 2024 after this run's line
    assert no_spikes([T, T + 7200.0]) == [T, T + 7200.0]  # a last line hours later: a hang cut by a time limit


def _truth_time(job: Path) -> float:
    truth = json.loads((job / "ground_truth.json").read_text())
    return datetime.fromisoformat(truth["fault_time"].replace("Z", "+00:00")).timestamp()


def test_a_launcher_summary_on_a_node_in_another_zone_dates_its_untimed_root_line() -> None:
    # 143: trn-sjc2-r08-n3 logs five hours behind; rank 1's traceback inherits its start-up line's time, and the
    # summary's ``time : 2026-12-05_18:30:17`` is on n3's clock: read back as n3's lines are, it bounds the failure
    job = REAL / "143-ddp-tz_exception"
    incident = analyze([str(job)], AnalyzeOptions())
    assert incident.failure_time is not None
    got = datetime.fromisoformat(incident.failure_time.replace("Z", "+00:00")).timestamp()
    assert abs(got - _truth_time(job)) < 1.0
