"""Hangs: the stuck rank from PyTorch Flight Recorder dumps, and from what the logs leave out (issue 31).

The jobs in fixtures/flight_recorder/ are real: two torchrun "nodes" of two ranks each on gloo, one rank made to
sleep before a collective, the recorder on (fixtures/flight_recorder/README.md says how they were made). Beside
each job is the output of PyTorch's own analyser (torch.distributed.flight_recorder.fr_trace) on its dumps; the
verdict must agree with it. A hostile dump must be refused with one warning, and run nothing.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from l4lite.api import analyze
from l4lite.detect.collectives import hang_table, match_groups
from l4lite.detect.hang import HangDetector
from l4lite.diagnose.incident import Incident
from l4lite.ingest.files import discover
from l4lite.ingest.flight_recorder import DumpError, FlightDump, FlightEntry, dump_kind, read_dump
from l4lite.options import AnalyzeOptions
from l4lite.records import Accounting
from l4lite.report.html import render_html

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "flight_recorder"
JOBS = sorted(p for p in FIXTURES.iterdir() if (p / "ground_truth.json").is_file()) if FIXTURES.is_dir() else []
REAL_JOBS = ROOT / "fixtures" / "real_jobs"
# The lead's real hang jobs with dumps (fixtures/real_jobs/*_fr), where present: the same checks run on them.
REAL_FR = sorted(p for p in REAL_JOBS.glob("*hang_fr") if (p / "_meta" / "fr_trace_analysis.txt").is_file()) \
    if REAL_JOBS.is_dir() else []
DUMP_NAMES = ("nccl_trace_rank_*", "fr_trace_*")


def truth(job: Path) -> dict[str, Any]:
    return json.loads((job / "ground_truth.json").read_text(encoding="utf-8"))


def analyser(job: Path) -> dict[str, Any]:
    """What torch's analyser said on the job's dumps: the first collective not all ranks joined, and who missed it."""
    beside = job.parent / f"{job.name}.fr_trace.txt"
    text = (beside if beside.is_file() else job / "_meta" / "fr_trace_analysis.txt").read_text(encoding="utf-8")
    if "expected ranks: set()" in text:  # gloo registered the group with no members: the analyser cannot match
        pytest.skip("the analyser's output here could not tell the process group's members")
    out: dict[str, Any] = {"decided": "Not all ranks joining collective" in text}
    m = re.search(r"sequence number: (\d+)", text)
    out["seq"] = int(m.group(1)) if m else None
    m = re.search(r"missing ranks: \{([\d, ]*)\}", text)
    out["missing"] = sorted(int(x) for x in re.findall(r"\d+", m.group(1))) if m else []
    m = re.search(r"^collective: (\S+)", text, re.M)
    out["collective"] = m.group(1) if m else None
    m = re.search(r"missed FR dumps from ranks \(\{([\d, ]*)\}\)", text)
    out["no_dump"] = sorted(int(x) for x in re.findall(r"\d+", m.group(1))) if m else []
    return out


def test_the_fixtures_are_there() -> None:
    assert len(JOBS) >= 3
    kinds = {d.kind for job in JOBS for d in _dumps(job)}
    assert kinds == {"pickle", "json"}


def _dumps(job: Path) -> list[FlightDump]:
    acc = Accounting()
    return [read_dump(d.path, d.rel, d.kind) for d in discover([str(job)], acc).dumps]


# ----------------------------------------------------------------------------------------- real dumps
@pytest.mark.parametrize("job", JOBS + REAL_FR, ids=lambda p: p.name)
def test_real_dumps_name_the_stuck_rank_and_its_node_first(job: Path) -> None:
    gt = truth(job)
    inc = analyze(str(job), AnalyzeOptions())
    assert inc.status == "incident"
    assert inc.suspects[0].node == gt["faulty_nodes"][0]
    assert inc.hang is not None and inc.hang["source"] == "flight_recorder"
    assert inc.hang["stuck_ranks"] == [gt["faulty_rank"]]
    assert inc.hang["stuck_nodes"] == gt["faulty_nodes"]
    table = inc.hang["per_rank_last_seq"]
    assert sorted(int(r) for r in table) == list(range(gt["world_size"]))
    assert all(row["node"] == gt["rank_hosts"][r] for r, row in table.items())
    assert f"rank {gt['faulty_rank']}" in inc.summary


@pytest.mark.parametrize("job", JOBS + REAL_FR, ids=lambda p: p.name)
def test_the_verdict_agrees_with_pytorchs_analyser(job: Path) -> None:
    said = analyser(job)
    hang = analyze(str(job), AnalyzeOptions()).hang
    assert hang is not None
    if said["decided"]:
        assert (hang["seq"], hang["stuck_ranks"], hang["collective"]) == (said["seq"], said["missing"],
                                                                          said["collective"])
        assert hang["missing_dumps"] == []
    else:  # the stuck rank left no dump: the analyser cannot decide, and names the rank whose dump is missing
        assert said["no_dump"] and hang["missing_dumps"] == said["no_dump"] == hang["stuck_ranks"]


@pytest.mark.parametrize("job", JOBS + REAL_FR, ids=lambda p: p.name)
def test_without_the_dumps_the_logs_still_point_at_the_stuck_rank(job: Path, tmp_path: Path) -> None:
    """The same job with its dumps removed: the rank that printed no error while its peers timed out."""
    gt = truth(job)
    copy = tmp_path / job.name
    shutil.copytree(job, copy, ignore=shutil.ignore_patterns(*DUMP_NAMES, "_meta"))  # _meta: how it was made
    inc = analyze(str(copy), AnalyzeOptions())
    assert inc.hang is not None and inc.hang["source"] == "logs"
    assert gt["faulty_rank"] in inc.hang["stuck_ranks"]
    assert gt["faulty_nodes"][0] in [s.node for s in inc.suspects[:2]]


def test_incident_keeps_the_hang_section_through_json(tmp_path: Path) -> None:
    inc = analyze(str(JOBS[0]), AnalyzeOptions())
    inc.save(tmp_path / "incident.json")
    again = Incident.load(tmp_path / "incident.json")
    assert again.hang == json.loads(json.dumps(inc.hang))


def test_report_shows_the_per_rank_table() -> None:
    gt = truth(JOBS[0])
    page = render_html(analyze(str(JOBS[0]), AnalyzeOptions()))
    section = page[page.index('<section id="hang"'):]
    section = section[:section.index("</section>")]
    rows = re.findall(r"<tr( class=\"stuck\")?><td>(\d+)", section)
    assert sorted(int(r) for _, r in rows) == list(range(gt["world_size"]))
    assert [int(r) for stuck, r in rows if stuck] == [gt["faulty_rank"]]
    assert "Last entered" in section and gt["faulty_nodes"][0] in section


# --------------------------------------------------------------------------------------- hostile dumps
class _RunsACommand:
    """What a hostile dump holds: unpickling it would call os.system."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (os.system, (self.command,))


def _hostile_job(tmp_path: Path, protocol: int) -> tuple[Path, Path]:
    marker = tmp_path / "pwned"
    job = tmp_path / "job"
    (job / "gpu-node-01").mkdir(parents=True)
    (job / "gpu-node-01" / "train.log").write_text(
        "2025-01-01 10:00:00 INFO [rank0] step 1/10 | loss 1.0\n2025-01-01 10:00:01 INFO [rank0] step 2/10 | "
        "loss 0.9\n", encoding="utf-8")
    payload = {"version": "2.10", "pg_config": {}, "entries": [{"collective_seq_id": 1,
                                                                 "frames": _RunsACommand(f"touch {marker}")}]}
    (job / "gpu-node-01" / "nccl_trace_rank_0").write_bytes(pickle.dumps(payload, protocol=protocol))
    return job, marker


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_a_hostile_pickle_is_refused_with_one_warning_and_runs_nothing(tmp_path: Path, protocol: int) -> None:
    job, marker = _hostile_job(tmp_path, protocol)
    acc = Accounting()
    assert [d.rel for d in discover([str(job)], acc).dumps] == ["gpu-node-01/nccl_trace_rank_0"]
    inc = analyze(str(job), AnalyzeOptions())
    said = [w for w in inc.stats["warnings"] if "nccl_trace_rank_0" in w]
    assert len(said) == 1 and "refused" in said[0] and "posix.system" in said[0] and "\n" not in said[0]
    assert inc.hang is None
    assert not marker.exists()


def test_the_reader_refuses_globals_of_every_kind(tmp_path: Path) -> None:
    """Any class or function is refused, harmless or not: a dump holds plain data only."""
    for obj in (_RunsACommand("true"), {"entries": [], "x": {1, 2}.__class__}, {"entries": [complex(1, 2)]}):
        path = tmp_path / "nccl_trace_rank_0"
        path.write_bytes(pickle.dumps(obj, protocol=4))
        with pytest.raises(DumpError, match=r"^nccl_trace_rank_0: Flight Recorder dump refused"):
            read_dump(str(path), "nccl_trace_rank_0", "pickle")


def test_truncated_and_odd_dumps_give_one_line_errors(tmp_path: Path) -> None:
    good = pickle.dumps({"version": "2.10", "pg_config": {}, "entries": []}, protocol=4)
    cases = {"cut": good[:-5], "list": pickle.dumps(["entries", "pg_config"], protocol=4),
             "nameless": good}
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(DumpError) as err:
            read_dump(str(path), name, "pickle")
        assert str(err.value).startswith(f"{name}: ") and "\n" not in str(err.value)


# ----------------------------------------------------------------------------------- discovery, matching
def test_dump_kind_tells_dumps_from_logs() -> None:
    pick = pickle.dumps({"version": "2.10", "pg_config": {"0": {}}, "entries": []}, protocol=4)
    assert dump_kind(pick) == "pickle"
    assert dump_kind(b'{"comm_lib_version":"","entries":[{"collective_seq_id":1,"profiling_name":"nccl:all_reduce"') \
        == "json"
    assert dump_kind(pickle.dumps({"weights": [1, 2, 3]}, protocol=4)) is None  # a pickle, not a dump
    assert dump_kind(b"2025-01-01 10:00:00 INFO entries pg_config collective_seq_id\n") is None
    assert dump_kind(b'{"time": 1, "msg": "step 3", "entries": 4}\n{"time": 2}\n') is None


def test_discovery_lists_dumps_apart_and_reads_the_logs_as_before(tmp_path: Path) -> None:
    job = JOBS[0]
    acc = Accounting()
    found = discover([str(job)], acc)
    assert found.dumps and all("nccl_trace_rank_" in d.rel for d in found.dumps)
    assert not any("nccl_trace_rank_" in f.rel for f in found.files)
    assert "binary" not in acc.files_skipped
    plain = tmp_path / "plain"
    shutil.copytree(job, plain, ignore=shutil.ignore_patterns("nccl_trace_rank_*"))
    assert [f.rel for f in discover([str(plain)], Accounting()).files] == [f.rel for f in found.files]


def _entry(seq: int, op: str = "nccl:all_reduce", sizes: Any = None, t: int = 0) -> FlightEntry:
    return FlightEntry(record_id=seq, pg_id="0", pg_name="0", pg_desc="default_pg", seq=seq, p2p_seq=0, op=op,
                       input_sizes=sizes or [[4]], output_sizes=sizes or [[4]], state="scheduled", retired=True,
                       time_ns=t or seq * 1000, is_p2p=False)


def _dump(rank: int, last: int, world: int = 4, op_at: dict[int, str] | None = None) -> FlightDump:
    ops = op_at or {}
    return FlightDump(file=f"n/nccl_trace_rank_{rank}", rank=rank, node=None, version="2.10", kind="pickle",
                      pg_ranks={"0": list(range(world))},
                      entries=[_entry(s, ops.get(s, "nccl:all_reduce")) for s in range(1, last + 1)])


def test_matching_finds_the_first_collective_a_rank_never_entered() -> None:
    [v] = match_groups([_dump(0, 12), _dump(1, 10), _dump(2, 12), _dump(3, 11)])
    assert (v.seq, v.missing, v.entered) == (11, [1], [0, 2, 3])
    assert v.states[1].last_entered == 10 and v.states[3].last_entered == 11


def test_matching_names_the_rank_without_a_dump_when_every_dump_agrees() -> None:
    [v] = match_groups([_dump(0, 7), _dump(1, 7), _dump(3, 7)])
    assert (v.seq, v.missing, v.no_dump, v.stuck) == (7, [], [2], [2])


def test_matching_sees_nothing_wrong_when_every_rank_entered_every_collective() -> None:
    [v] = match_groups([_dump(r, 5) for r in range(4)])
    assert v.seq is None and v.stuck == []
    assert HangDetector().detect(_scan_of([_dump(r, 5) for r in range(4)])) == []


def test_matching_reports_a_collective_of_another_type_at_the_same_number() -> None:
    [v] = match_groups([_dump(0, 5), _dump(1, 5, op_at={5: "nccl:broadcast"}), _dump(2, 5), _dump(3, 5)])
    assert v.mismatch and "#5" in v.mismatch[0] and "nccl:broadcast" in v.mismatch[0]


def test_the_per_rank_table_stays_bounded_and_keeps_the_stuck_rank() -> None:
    [v] = match_groups([_dump(r, 11 if r == 700 else 12, world=1000) for r in range(1000)])
    table = hang_table(v, {})
    assert table["stuck_ranks"] == [700] and "700" in table["per_rank_last_seq"]
    assert len(table["per_rank_last_seq"]) + table["ranks_not_shown"] == 1000
    assert len(table["per_rank_last_seq"]) <= 512


def _scan_of(dumps: list[FlightDump]) -> Any:
    from l4lite.scan.scanner import JobScan

    return JobScan(flight_records=dumps)


# --------------------------------------------------------------------------- real hang jobs, no dumps
def _real_hang_jobs() -> list[Path]:
    if not REAL_JOBS.is_dir():
        return []
    return sorted(p for p in REAL_JOBS.iterdir() if (p / "ground_truth.json").is_file()
                  and truth(p).get("scenario", "").endswith("hang") and not truth(p).get("flight_recorder"))


@pytest.mark.skipif(len(_real_hang_jobs()) < 5, reason="needs the real hang jobs of fixtures/real_jobs")
def test_real_hang_jobs_without_dumps_put_the_stuck_node_first() -> None:
    jobs = _real_hang_jobs()
    first = [analyze(str(j), AnalyzeOptions()).suspects[:1] for j in jobs]
    hits = sum(bool(s) and s[0].node in truth(j)["faulty_nodes"] for j, s in zip(jobs, first, strict=True))
    assert hits >= 4 * len(jobs) / 5, f"{hits} of {len(jobs)}"


# ------------------------------------------------------------------------------ NCCL-style logs, no dumps
def _nccl_job(tmp_path: Path, crash: bool = False, desync: bool = True, progress: bool = False) -> Path:
    """Two nodes of two ranks, one log per rank; rank 2 stops, the others report NCCL watchdog timeouts (with a
    desync report, and a Megatron straggler line from rank 0). With ``crash`` rank 2 raises an error instead."""
    job = tmp_path / "job"
    nodes = {0: "gpu-node-01", 1: "gpu-node-01", 2: "gpu-node-02", 3: "gpu-node-02"}
    lines: dict[int, list[str]] = {r: [f"2025-03-01 10:00:0{r},000 INFO [rank{r}] initialized process group: "
                                       f"backend=nccl world_size=4 host={nodes[r]}"] for r in nodes}
    if progress:  # every rank prints its steps; rank 2's stop one step early
        for r in nodes:
            lines[r] += [f"2025-03-01 10:01:{k:02d},000 INFO [rank{r}] step {k}/100 | loss {3 - k / 100:.3f}"
                         for k in range(1, 41 if r == 2 else 42)]
    if desync:
        lines[0].append("[2025-03-01 10:05:00] 2025-03-01 10:05:00 | MnRtt/Rnk: 310.5ms/1 | MxRtt/Rnk: 902.1ms/2 | "
                        "MnPwr/Rnk: 600000.00mW/0")
    for r in (0, 1, 3):
        lines[r].append(f"[rank{r}]:[E0301 10:16:00.000000000 ProcessGroupNCCL.cpp:632] [PG 0 (default_pg) Rank {r}] "
                        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, "
                        "NumelIn=1024, NumelOut=1024, Timeout(ms)=600000) ran for 600021 milliseconds before timing out.")
    if desync:
        lines[0].append("[rank0]:[E0301 10:16:00.100000000 ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank 0] "
                        "Timeout at NCCL work: 812, last enqueued NCCL work: 812, last completed NCCL work: 811.")
        lines[0].append("[rank0]:\t   - [2] finished collective #811, but didn't join collective #812 (count from 1)")
    if crash:
        lines[2].append("[rank2]: ValueError: expected a batch of 8, got 0")
    for r, text in lines.items():
        (job / nodes[r]).mkdir(parents=True, exist_ok=True)
        (job / nodes[r] / f"rank{r}.log").write_text("\n".join(text) + "\n", encoding="utf-8")
    return job


def test_nccl_watchdog_lines_desync_report_and_straggler_point_at_the_silent_rank(tmp_path: Path) -> None:
    inc = analyze(str(_nccl_job(tmp_path)), AnalyzeOptions())
    assert inc.suspects[0].node == "gpu-node-02"
    hang = inc.hang
    assert hang is not None and hang["source"] == "logs"
    assert (hang["stuck_ranks"], hang["seq"], hang["collective"]) == ([2], 812, "ALLREDUCE")
    assert hang["per_rank_last_seq"]["0"]["last_completed"] == 811
    assert hang["per_rank_last_seq"]["2"]["state"] == "silent"
    lead = next(e for e in inc.evidence if e.role == "root")
    assert "desync report" in (lead.explain or "") or "desync report" in inc.summary


def test_the_rank_whose_progress_stops_first(tmp_path: Path) -> None:
    inc = analyze(str(_nccl_job(tmp_path, desync=False, progress=True)), AnalyzeOptions())
    assert inc.suspects[0].node == "gpu-node-02"
    assert inc.hang is not None and inc.hang["stuck_ranks"] == [2]
    assert "progress stopped first" in inc.summary and "desync" not in inc.summary


def test_a_rank_with_an_error_of_its_own_is_a_crash_not_a_hang(tmp_path: Path) -> None:
    inc = analyze(str(_nccl_job(tmp_path, crash=True)), AnalyzeOptions())
    assert inc.hang is None


@pytest.mark.parametrize("protocol", [0, 1])
def test_an_old_protocol_pickle_is_never_unpickled(tmp_path: Path, protocol: int) -> None:
    """Protocols 0 and 1 do not start like a dump: such a file is read as text or skipped, and runs nothing."""
    job, marker = _hostile_job(tmp_path, protocol)
    assert discover([str(job)], Accounting()).dumps == []
    analyze(str(job), AnalyzeOptions())
    assert not marker.exists()


def test_a_gzipped_dump_reads_as_the_plain_one(tmp_path: Path) -> None:
    """``gzip -r`` over a job folder compresses its dumps too: the hang table must not change."""
    import gzip

    job = REAL_FR[0] if REAL_FR else JOBS[0]
    plain = analyze(str(job), AnalyzeOptions())
    copy = tmp_path / job.name
    shutil.copytree(job, copy)
    zipped = 0
    for p in sorted(copy.rglob("*")):
        if p.is_file() and dump_kind(p.read_bytes()[:4096]) is not None:
            p.with_name(p.name + ".gz").write_bytes(gzip.compress(p.read_bytes()))
            p.unlink()
            zipped += 1
    assert zipped >= 2
    acc = Accounting()
    found = discover([str(copy)], acc).dumps
    assert len(found) == zipped and all(d.compressed for d in found)
    inc = analyze(str(copy), AnalyzeOptions())
    assert inc.hang is not None and plain.hang is not None
    assert json.dumps(inc.to_dict()["hang"]).replace(".gz", "") == json.dumps(plain.to_dict()["hang"])
    assert [e.file.removesuffix(".gz") for e in inc.evidence if e.role == "root"] == \
        [e.file for e in plain.evidence if e.role == "root"]


def test_a_gzip_bomb_dump_is_refused(tmp_path: Path) -> None:
    import gzip

    body = pickle.dumps({"version": "2.10", "pg_config": {"0": {}}, "entries": [], "pad": "x"}, protocol=4)
    path = tmp_path / "nccl_trace_rank_0.gz"
    path.write_bytes(gzip.compress(body[:-1] + b"\x00" * (70 << 20)))
    with pytest.raises(DumpError, match="limit"):
        read_dump(str(path), "nccl_trace_rank_0.gz", "pickle", compressed=True)
