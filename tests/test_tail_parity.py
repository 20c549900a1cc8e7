"""``tail`` on a real job says what ``analyze`` says (``benchmarks/live_parity.py``): a job written while tail
follows it, a tail resumed from its state after each piece, and ``tail --once`` on the finished job."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import live_parity as lp  # noqa: E402

JOBS = ROOT / "fixtures" / "real_jobs"


@pytest.mark.parametrize("name", ["002-ddp-sigkill", "114-ddp-eval_sigkill"])
def test_live_replay_gives_the_postmortem_verdict(name: str) -> None:
    # tail started before the job wrote anything: a context built from no files placed no file on a node, and
    # the live verdict blamed no node ("user_config", init) where the postmortem names the SIGKILLed rank's node
    job = JOBS / name
    assert lp.Verdict.of(lp.replay_live(job, 4)) == lp.analyze_verdict(job)


@pytest.mark.parametrize("name", ["001-ddp-exception", "043-ddp-diverge", "141-accelerate-port_taken"])
def test_resumed_tail_gives_the_postmortem_verdict(name: str) -> None:
    # a tail restarted from its state read only the lines after the checkpoint: the last piece alone said
    # "data" for a software fault, and "healthy" for a run whose loss diverged in an earlier piece; 141 has no
    # time on any line and one empty file (the launcher failed before any rank started)
    job = JOBS / name
    assert lp.Verdict.of(lp.replay_resume(job, 4)) == lp.analyze_verdict(job)


@pytest.mark.parametrize("name", ["010-hf-sigkill", "104-ddp-json_exception"])
def test_resumed_tail_cut_inside_tracebacks_gives_the_postmortem_verdict(name: str) -> None:
    # ten pieces, each file cut in the middle of a multi-line record: a run committed the half traceback it saw
    # and the next read the rest as a record of its own, and a resumed reader learnt its file from the lines
    # that came first (010: no node and "software" for the SIGKILLed node's "host"; 104: the other node)
    job = JOBS / name
    assert lp.Verdict.of(lp.replay_resume(job, 10, inside=True)) == lp.analyze_verdict(job)


def test_cuts_inside_records_fall_in_the_middle_of_the_first_long_one() -> None:
    # records (last line, time): 1, 2-4, 5, 6-9, 10; cuts after lines 0 and 5 of 10
    rows = [(1, 1.0), (4, 2.0), (5, 3.0), (9, 4.0), (10, 5.0)]
    assert lp.inside_records([0, 5, 10], rows) == [2, 7, 10]
    assert lp.inside_records([0, 1, 10], rows) == [0, 2, 10]  # nothing long between 0 and 1


def test_once_reads_a_node_in_another_time_zone_in_the_job_time() -> None:
    # one node logs naive local time five hours behind: unshifted, its lines came before the SIGKILL on the
    # other node and took the verdict (another node, phase and category)
    job = JOBS / "119-ddp-eval_sigkill"
    assert lp.Verdict.of(lp.tail_once([str(p) for p in lp.job_inputs(job)])) == lp.analyze_verdict(job)


def test_once_reads_a_stepped_node_back_as_analyze_does(tmp_path: Path) -> None:
    # ``--transform clock-step-back``: a healthy node an hour fast until mid-job. The job context found the step,
    # but tail read the node's lines by its zone only: 002's verdict moved (train -> checkpoint, host -> software)
    job = lp.transformed(JOBS / "002-ddp-sigkill", "clock-step-back", tmp_path)
    assert job is not None and job != JOBS / "002-ddp-sigkill"
    assert lp.Verdict.of(lp.tail_once([str(p) for p in lp.job_inputs(job)])) == lp.analyze_verdict(job)
    assert lp.analyze_verdict(job) == lp.analyze_verdict(JOBS / "002-ddp-sigkill")


def test_context_is_built_again_when_files_appear(tmp_path: Path) -> None:
    from l4lite.live.jobfacts import LiveContext

    facts = LiveContext(str(tmp_path))
    assert facts.due({}) is False
    log = tmp_path / "node-a" / "console.log"
    log.parent.mkdir()
    log.write_text("2026-12-03 14:38:20,000 INFO hostname=node-a starting\n")
    assert facts.due({"node-a/console.log": log.stat().st_size})
    facts.build([str(log)])
    assert not facts.due({"node-a/console.log": log.stat().st_size})


def test_growth_builds_stop_once_the_facts_settle(tmp_path: Path) -> None:
    # a build reads the ends of every file (and the files no path places whole): it is done again as the bytes
    # double only while it still changes something, so that a long job is not read over and over
    from l4lite.live.jobfacts import QUIET_BUILDS, LiveContext

    log = tmp_path / "node-a" / "console.log"
    log.parent.mkdir()
    line = "2026-12-03 14:38:20,000 INFO step done\n"
    log.write_text(line * 200)
    facts = LiveContext(str(tmp_path))
    facts.build([str(log)])
    log.write_text(log.read_text() * 2)
    assert not facts.due({"node-a/console.log": log.stat().st_size})  # not twice within half a minute
    facts.growth_seconds = 0.0
    for _ in range(QUIET_BUILDS):
        log.write_text(log.read_text() * 2)
        assert facts.due({"node-a/console.log": log.stat().st_size})
        assert not facts.build([str(log)])
    log.write_text(log.read_text() * 2)
    assert not facts.due({"node-a/console.log": log.stat().st_size})
    (tmp_path / "node-b").mkdir()
    (tmp_path / "node-b" / "console.log").write_text(line)
    assert facts.due({"node-a/console.log": log.stat().st_size, "node-b/console.log": len(line)})


@pytest.mark.parametrize("name", ["002-ddp-sigkill", "003-ddp-hang"])
def test_once_reads_a_clock_jump_back_as_analyze_does(name: str, tmp_path: Path) -> None:
    # a peer's clock springs an hour ahead mid-file (``ingest.jumps``): tail read its later lines an hour late,
    # and the diagnosis had no clock skew of the job's context (002: phase and category, 003: the node moved)
    import archive_variants as av

    job, _ = av.prepare(JOBS / name, tmp_path / "prep")
    variant = av.TRANSFORMS["dst-jump"](job)
    av.write_variant(variant, tmp_path / "v")
    paths = [str(tmp_path / "v" / variant.target)]
    from l4lite.api import AnalyzeOptions, analyze

    batch = lp.Verdict.of(analyze(paths, AnalyzeOptions(heatmap=False)))
    assert lp.Verdict.of(lp.tail_once(paths)) == batch


def test_once_on_a_folder_with_no_files_says_so(tmp_path: Path) -> None:
    # the folder exists: "no such file or directory" sent the engineer looking for a typo in the path
    from l4lite.errors import L4Error

    with pytest.raises(L4Error, match="no log files in it"):
        lp.tail_once([str(tmp_path)])
