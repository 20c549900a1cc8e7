"""Execution engines: shard plans, the merge of shard scans, and the process pool (``--jobs``) giving the
same verdict as one process on the committed fixture jobs."""

from __future__ import annotations

import gzip
import json
import sys
import threading
from pathlib import Path

import pytest

from l4lite.api import analyze, diagnose
from l4lite.cli.main import main
from l4lite.diagnose.incident import Incident
from l4lite.errors import L4Error
from l4lite.ingest.context import build_context
from l4lite.ingest.files import InputFile, discover
from l4lite.options import AnalyzeOptions
from l4lite.records import Accounting
from l4lite.scale.engine import (
    LocalEngine,
    PoolEngine,
    ShardResult,
    ShardTask,
    make_engine,
    merge_results,
    plan_shards,
    scan_job_parallel,
    scan_shard,
    unify_templates,
)
from l4lite.scale.shards import SHARD_ROUNDS, even_ends, job_rounds, job_shards, makespan, read_size
from l4lite.scan.job import load_rules, scan_job
from l4lite.scan.scanner import JobScan, TemplateStat

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "fixtures" / "suite"
JOBS = sorted(p for p in SUITE.iterdir() if p.is_dir())
# one job per layout and trainer format: merged srun output, one file per rank, one folder per node
VERDICT_JOBS = ["002-xid79_fallen_off_bus", "008-device_oom", "005-ib_link_down", "013-loss_divergence"]


@pytest.fixture(autouse=True)
def _every_round(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fixture jobs are small: ``analyze`` would cut them into one round of shards (``ROUND_MIN_BYTES``);
    here they are cut into every round, so that the merges of a round's small shards are tested too."""
    import l4lite.scale.engine

    monkeypatch.setattr(l4lite.scale.engine, "ROUND_MIN_BYTES", 0)


class TwoWorkers(LocalEngine):
    """The shard plan and merge of a two-worker engine, run in this process."""

    workers = 2


def verdict(inc: Incident) -> tuple:
    """What must not depend on the engine: status, category, phase, suspects and the evidence lines."""
    return (inc.status, inc.category, inc.phase, inc.iteration, inc.scope,
            [(s.node, round(s.score, 6)) for s in inc.suspects],
            [(e.file, e.line, e.end_line, e.role, e.node, e.rule) for e in inc.evidence])


def signature(scan: JobScan) -> dict:
    """A scan as comparable data (list orders that no detector depends on are normalised)."""
    info = {k: v for k, v in scan.info.items() if k not in ("scan_seconds", "shards")}
    return {
        "templates": {t: (s.template, s.count, s.nodes, s.levels, s.sources, s.first_time, s.last_time)
                      for t, s in scan.templates.items()},
        "counts": scan.counts, "bucket": scan.bucket_seconds, "hit_totals": scan.hit_totals,
        "hits": sorted((h.rule_id, h.record.file, h.record.line, h.record.node, h.record.template_id)
                       for h in scan.hits),
        "metrics": sorted(repr(p) for p in scan.metrics), "markers": sorted(repr(m) for m in scan.markers),
        "exemplars": {k: [(r.file, r.line, r.node, r.template_id) for r in v] for k, v in scan.exemplars.items()},
        "rank_nodes": scan.rank_nodes, "node_last": scan.node_last, "node_first": scan.node_first,
        "node_ranks": scan.node_ranks, "progress": scan.progress, "start": scan.start_time, "end": scan.end_time,
        "source_last": scan.source_last, "info": info, "accounting": scan.accounting.to_dict(),
    }


def _file(path: Path, root: Path, size: int) -> InputFile:
    return InputFile(path=str(path), rel=str(path.relative_to(root)), size=size)


# ------------------------------------------------------------------------------------------------ shard plans
@pytest.mark.parametrize("sizes,parts", [([5] * 10, 3), ([100, 1, 1, 1, 1], 2), ([1, 1, 1, 100], 3), ([7], 4),
                                         ([3, 0, 0, 9, 2, 2, 2, 40, 1], 4), ([1] * 5, 10)])
def test_plan_keeps_every_file_once_in_order(sizes: list[int], parts: int, tmp_path: Path) -> None:
    files = [_file(tmp_path / f"f{i:02d}", tmp_path, s) for i, s in enumerate(sizes)]
    shards = plan_shards(files, parts)
    assert [f for shard in shards for f in shard] == files  # contiguous runs, file order kept
    assert all(shards) and len(shards) == min(parts, len(files))


def test_plan_balances_sizes(tmp_path: Path) -> None:
    files = [_file(tmp_path / f"f{i:03d}", tmp_path, 10 + (i * 7) % 13) for i in range(200)]
    shards = plan_shards(files, 4)
    sizes = [sum(f.size for f in s) for s in shards]
    assert max(sizes) <= 1.1 * sum(sizes) / 4
    assert plan_shards([], 3) == []


def test_plan_by_weights_sizes_runs_in_proportion(tmp_path: Path) -> None:
    files = [_file(tmp_path / f"f{i:03d}", tmp_path, 10) for i in range(120)]
    shards = plan_shards(files, [3, 3, 2, 2, 1, 1])
    assert [len(s) for s in shards] == [30, 30, 20, 20, 10, 10]
    assert [f for s in shards for f in s] == files
    few = plan_shards(files[:4], [3, 3, 2, 2, 1, 1])  # fewer files than weights: one file each
    assert [len(s) for s in few] == [1, 1, 1, 1]


@pytest.mark.parametrize("n", [4, 5, 7, 9, 12, 16, 20, 33, 64])
def test_job_shards_end_both_workers_together_on_equal_files(n: int, tmp_path: Path) -> None:
    """A job of equal files (one per node, as the format zoo's): the two workers end as close together as whole
    files allow, each round smaller than the one before, every file once and in order."""
    files = [_file(tmp_path / f"node{i:03d}.log", tmp_path, 1000) for i in range(n)]
    shards = job_shards(files, 2)
    assert [f for s in shards for f in s] == files
    counts = [len(s) for s in shards]
    assert makespan(counts, 2) == -(-n // 2)  # the least any plan of whole files can do
    assert counts[0] >= counts[2] and counts[1] >= counts[3]
    if n == 16:  # shares 2, 2, 1, 1 rounded each on its own gave 5, 6, 2, 3: one worker 9 files, the other 7
        assert counts == [5, 5, 3, 3]


def test_a_small_job_is_one_round_of_shards(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every shard learns its lines' shapes, gates and templates anew: ``analyze`` cuts a later round only where
    its shards hold ``ROUND_MIN_BYTES`` or more, so a small job is one shard per worker and a large one keeps the
    small last round that lets the workers end together (``parse`` keeps every round)."""
    import l4lite.scale.engine

    assert job_rounds(6 * 1000, 2, 1000) == SHARD_ROUNDS  # a last-round shard of 1,000 bytes
    assert job_rounds(6 * 1000 - 6, 2, 1000) == SHARD_ROUNDS[:1]
    assert job_rounds(10, 2, 0) == SHARD_ROUNDS and job_rounds(0, 1, 1) == SHARD_ROUNDS[:1]
    files = [_file(tmp_path / f"node{i:03d}.log", tmp_path, 1000) for i in range(16)]
    assert len(job_shards(files, 2)) == 2 * len(SHARD_ROUNDS)
    assert [len(s) for s in job_shards(files, 2, 16_000 // 6 + 1)] == [8, 8]
    assert [len(s) for s in job_shards(files, 2, 16_000 // 6 - 1)] == [5, 5, 3, 3]
    job = tmp_path / "job"
    for i in range(4):
        (job / f"node{i}").mkdir(parents=True)
        (job / f"node{i}" / "train.log").write_text("".join(
            f"[2024-04-26 10:00:{k % 60:02d}] node{i} step {k} loss 2.{k % 1000:03d}\n" for k in range(400)))
    options = AnalyzeOptions()
    monkeypatch.setattr(l4lite.scale.engine, "ROUND_MIN_BYTES", 1 << 20)
    small = scan_job_parallel([str(job)], options, engine=TwoWorkers())
    monkeypatch.setattr(l4lite.scale.engine, "ROUND_MIN_BYTES", 0)
    every = scan_job_parallel([str(job)], options, engine=TwoWorkers())
    assert small.info["shards"] == 2 and every.info["shards"] == 4
    assert signature(small) == signature(every) == signature(scan_job([str(job)], options))


def test_even_ends_keeps_a_plan_that_ends_together(tmp_path: Path) -> None:
    files = [_file(tmp_path / f"f{i:03d}", tmp_path, 10) for i in range(120)]
    weights = [2, 2, 1, 1]
    shards = plan_shards(files, weights)
    assert even_ends(shards, weights, 2) == shards


def test_gzip_files_weigh_what_they_hold(tmp_path: Path) -> None:
    """Rotated ``.gz`` logs weigh their uncompressed lines in the shard plan, not their bytes on disk: half the
    job's lines in gzip files that are a tenth of their text go to their own shards."""
    text = b"".join(b"[2024-04-26 10:00:%02d] step %d loss 2.%03d\n" % (i % 60, i, i % 1000) for i in range(3000))
    files = []
    for i in range(12):
        path = tmp_path / (f"rank{i:02d}.log" + (".gz" if i >= 6 else ""))
        path.write_bytes(gzip.compress(text) if i >= 6 else text)
        found = discover([str(path)], Accounting()).files[0]
        assert found.compressed == (i >= 6)
        files.append(found)
    assert files[6].size * 5 < files[0].size  # on disk the gzip files are small
    assert read_size(files[6]) == len(text) and read_size(files[0]) == files[0].size
    shards = job_shards(files, 2)
    weights = [w for w in SHARD_ROUNDS for _ in range(2)]
    held = [sum(read_size(f) for f in s) for s in shards]
    shares = [sum(held) * w / sum(weights) for w in weights]
    assert held == shares == [4 * len(text), 4 * len(text), 2 * len(text), 2 * len(text)]


# ------------------------------------------------------------------------------------------------ merging
def test_every_fixture_job_scans_the_same_in_shards() -> None:
    """Shards of one or two files each, merged: the same scan as one pass (templates, counts, nodes, ...)."""
    options = AnalyzeOptions()
    rules = load_rules(options)
    for job in JOBS:
        whole = scan_job([str(job)], options, rules=rules)

        class Many(LocalEngine):
            workers = 8

        sharded = scan_job_parallel([str(job)], options, engine=Many())
        assert sharded.info["shards"] > 1
        assert signature(sharded) == signature(whole), job.name


def test_rank_only_lines_get_the_node_tied_in_a_later_shard(tmp_path: Path) -> None:
    """The rank->node map merges across shards before rank-only node keys are resolved."""
    job = tmp_path / "job"
    job.mkdir()
    ts = "2024-05-07 01:00:{:02d}"
    (job / "a-trainer.log").write_text("".join(
        f"[rank3]: [{ts.format(i)}] iteration {i + 1:5d}/  100 | lm loss: 2.5 | grad norm: 1.0 |\n"
        for i in range(20)))
    (job / "b-nccl.log").write_text(
        "node07:2001:2001 [3] NCCL INFO comm 0x55d1 rank 3 nranks 8 cudaDev 3 busId 3b000 - Init COMPLETE\n"
        "node02:2001:2001 [0] NCCL INFO comm 0x55d2 rank 0 nranks 8 cudaDev 0 busId 1b000 - Init COMPLETE\n")
    options = AnalyzeOptions()
    whole = scan_job([str(job)], options)
    sharded = scan_job_parallel([str(job)], options, engine=TwoWorkers())
    assert sharded.info["shards"] == 2
    assert sharded.nodes == whole.nodes == ["node02", "node07"]
    assert sharded.rank_nodes[3] == "node07"
    assert {p.node for p in sharded.metrics} == {"node07"}
    assert signature(sharded) == signature(whole)


def test_merge_keeps_file_order_for_first_and_last_times(tmp_path: Path) -> None:
    """A node's kernel log may start days before its trainer log: one pass keeps the times in file order."""
    job = tmp_path / "job"
    (job / "n1").mkdir(parents=True)
    (job / "n1" / "a-kern.log").write_text("[Tue May  7 01:00:05 2024] Linux version 5.15.0\n")
    (job / "n1" / "b-train.log").write_text("2024-05-01 01:00:00 hello\n2024-05-01 01:00:01 world\n")
    options = AnalyzeOptions()
    whole = scan_job([str(job)], options)
    sharded = scan_job_parallel([str(job)], options, engine=TwoWorkers())
    assert sharded.node_first == whole.node_first and sharded.node_last == whole.node_last


def test_unify_templates_joins_what_shards_generalised_differently() -> None:
    scan = JobScan()
    texts = ["comm <HEX> busId <NUM> - Init <*>", "comm <HEX> busId <*> - Init COMPLETE", "something else here"]
    for i, text in enumerate(texts):
        scan.templates[f"T{i}"] = TemplateStat(f"T{i}", text, count=2, nodes={"n1": 2})
        scan.counts[("n1", 0, f"T{i}")] = 2
    assert unify_templates(scan) == 1
    joined = [s for s in scan.templates.values() if s.template.startswith("comm")]
    assert len(joined) == 1 and joined[0].count == 4 and joined[0].template == "comm <HEX> busId <*> - Init <*>"
    assert scan.counts[("n1", 0, joined[0].template_id)] == 4 and len(scan.counts) == 2


def test_merge_results_is_associative_on_a_job(tmp_path: Path) -> None:
    job = SUITE / "012-data_pipeline_fault"
    from l4lite.ingest.files import discover
    from l4lite.records import Accounting

    found = discover([str(job)], Accounting())
    shards = plan_shards(found.files, 3)
    tasks = [ShardTask(i, tuple(s), found.root, build_context(found.files), (), 5.0) for i, s in enumerate(shards)]
    left = merge_results(merge_results(scan_shard(tasks[0]), scan_shard(tasks[1])), scan_shard(tasks[2]))
    right = merge_results(scan_shard(tasks[0]), merge_results(scan_shard(tasks[1]), scan_shard(tasks[2])))
    assert signature(left.scan) == signature(right.scan)
    assert left.ties.as_dict() == right.ties.as_dict() and left.first_rank_nodes == right.first_rank_nodes
    assert left.records == right.records > 0


def test_a_node_keeps_its_implied_phase_marker_whichever_way_shards_merge() -> None:
    """rank-1.log opens with explicit init markers (no time) and then a metric line implies training. Merged
    markers are in time order, which puts the timed training marker first: the merge must still see the init
    markers as the node's first, as one pass does, and keep the training marker."""
    found = discover([str(SUITE / "012-data_pipeline_fault")], Accounting())
    names = [f.rel for f in found.files]
    cuts = [0, names.index("rank-1.log"), names.index("rank-5.log"), len(names)]
    tasks = [ShardTask(i, tuple(found.files[a:b]), found.root, build_context(found.files), (), 5.0)
             for i, (a, b) in enumerate(zip(cuts, cuts[1:], strict=False))]
    tasks.append(ShardTask(9, tuple(found.files), found.root, build_context(found.files), (), 5.0))

    def markers(result: ShardResult) -> list[str]:
        return sorted(repr(m) for m in result.scan.markers)

    one = markers(scan_shard(tasks[3]))
    assert any("rank=1" in m and "'train'" in m and "implied" in m for m in one)
    left = merge_results(merge_results(scan_shard(tasks[0]), scan_shard(tasks[1])), scan_shard(tasks[2]))
    right = merge_results(scan_shard(tasks[0]), merge_results(scan_shard(tasks[1]), scan_shard(tasks[2])))
    assert markers(left) == markers(right) == one


def test_results_fold_as_they_come_in_any_order_into_the_one_pass_scan() -> None:
    """Shard results merge with the neighbours already in as they arrive, whatever the order; a shard that never
    came leaves its neighbours merged in shard order."""
    import copy
    import itertools

    from l4lite.scale.engine import _Folding

    job = str(SUITE / "012-data_pipeline_fault")
    options = AnalyzeOptions()
    whole = signature(scan_job([job], options))

    class Arriving(LocalEngine):
        workers = 2
        order: tuple[int, ...] = ()

        def run(self, tasks, progress=None, meanwhile=None) -> ShardResult:  # noqa: ANN001
            results = [scan_shard(t) for t in tasks]
            folding = _Folding()
            for i in self.order:
                folding.add(results[i])
            assert len(folding._runs) == 1  # noqa: SLF001 - every neighbour merged on arrival
            return folding.result()

    engine = Arriving()
    for order in itertools.permutations(range(4)):
        engine.order = order
        sharded = scan_job_parallel([job], options, engine=engine)
        assert sharded.info["shards"] == 4
        assert signature(sharded) == whole, order
    found = discover([job], Accounting())
    results = [scan_shard(ShardTask(i, tuple(s), found.root, build_context(found.files), (), 5.0))
               for i, s in enumerate(plan_shards(found.files, 4))]
    folding = _Folding()
    fresh = copy.deepcopy(results)  # a merge consumes its inputs
    for i in (3, 0, 2):
        folding.add(fresh[i])
    fresh = copy.deepcopy(results)
    assert signature(folding.result().scan) == \
        signature(merge_results(merge_results(fresh[0], fresh[2]), fresh[3]).scan)


# ------------------------------------------------------------------------------------------------ the pool
@pytest.fixture(scope="module")
def single() -> dict[str, Incident]:
    return {name: analyze([str(SUITE / name)], AnalyzeOptions()) for name in VERDICT_JOBS}


def test_pool_gives_the_single_process_verdict(single: dict[str, Incident]) -> None:
    with PoolEngine(2) as engine:
        assert engine.workers == 2
        for name in VERDICT_JOBS:
            options = AnalyzeOptions()
            scan = scan_job_parallel([str(SUITE / name)], options, engine=engine)
            inc = diagnose(scan, options)
            ref = single[name]
            assert verdict(inc) == verdict(ref), name
            assert inc.stats["lines_read"] == ref.stats["lines_read"]


def test_pool_tells_the_caller_of_results_and_of_the_first_idle_worker() -> None:
    """``meanwhile`` hears of each shard's result as it comes, and once of the first worker left without a
    shard: before any result when there are fewer shards than workers."""
    heard: list[tuple[int | None, bool, str]] = []

    def told(result: ShardResult | None, idle: bool) -> None:
        heard.append((None if result is None else result.index, idle, threading.current_thread().name))

    job = discover([str(SUITE / VERDICT_JOBS[2])], Accounting())
    context = build_context(job.files)
    one = [ShardTask(0, tuple(job.files), job.root, context, (), 5.0)]
    three = [ShardTask(i, tuple(s), job.root, context, (), 5.0) for i, s in enumerate(plan_shards(job.files, 3))]
    main_thread = threading.current_thread().name
    with PoolEngine(2) as engine:
        assert engine.run(one, meanwhile=told).records > 0
        assert heard == [(None, True, main_thread), (0, False, main_thread)]
        heard.clear()
        engine.run(three, meanwhile=told)
    assert sorted(i for i, _, _ in heard) == [0, 1, 2]
    assert [idle for _, idle, _ in heard] == [False, True, False]  # two shards left for two workers, then one


def test_analyze_with_jobs_through_the_cli(single: dict[str, Incident], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    name = VERDICT_JOBS[0]
    out = tmp_path / "inc.json"
    assert main(["analyze", str(SUITE / name), "--jobs", "2", "--no-store", "--quiet", "--json", str(out)]) == 1
    inc = Incident.from_dict(json.loads(out.read_text()))
    assert verdict(inc) == verdict(single[name])
    assert [e.context for e in inc.evidence] == [e.context for e in single[name].evidence]
    assert capsys.readouterr().err == ""


def test_engine_choice_and_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(make_engine(1, None), LocalEngine)
    with pytest.raises(L4Error, match="expected tcp://HOST:PORT or local:N"):
        make_engine(1, "somewhere:8786")
    with pytest.raises(L4Error, match="local:N"):
        make_engine(1, "local:two")
    monkeypatch.setitem(sys.modules, "distributed", None)  # Dask not installed
    with pytest.raises(L4Error, match=r"pip install 'l4lite\[dask\]'"):
        make_engine(1, "local:2")
    job = SUITE / VERDICT_JOBS[0]
    assert main(["analyze", str(job), "--scheduler", "local:2", "--no-store", "--quiet"]) == 2


def test_stdin_and_single_files_are_scanned_in_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    text = (SUITE / VERDICT_JOBS[0] / "slurm-709109.out").read_text()
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    scan = scan_job_parallel(["-"], AnalyzeOptions(), engine=TwoWorkers())
    assert "shards" not in scan.info and scan.accounting.lines_read > 0


# ------------------------------------------------------------------------------------------------ parse --jobs
@pytest.mark.parametrize("name", ["004-nvlink_error", "010-checkpoint_save_failure"])
def test_parse_with_jobs_writes_the_same_rows(name: str, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    one, two = tmp_path / "one.parquet", tmp_path / "two.parquet"
    assert main(["parse", str(SUITE / name), "-o", str(one), "--quiet"]) == 0
    assert main(["parse", str(SUITE / name), "-o", str(two), "--quiet", "--jobs", "2"]) == 0
    a, b = pq.read_table(one), pq.read_table(two)
    assert a.num_rows > 0 and a.to_pylist() == b.to_pylist()
    meta_a, meta_b = (json.loads(t.schema.metadata[b"l4lite.accounting"]) for t in (a, b))
    assert meta_a == meta_b


@pytest.mark.parametrize("fmt", ["parquet", "csv", "jsonl"])
def test_parse_with_jobs_joins_the_workers_parts_into_the_file_one_writer_makes(fmt: str, tmp_path: Path) -> None:
    from l4lite.export.parse_engine import finalized_batches, parse_parallel, write_parallel
    from l4lite.export.writers import write_output

    metadata = {"records": 1}
    with PoolEngine(2) as engine:
        results, _, _ = parse_parallel([str(SUITE / "004-nvlink_error")], None, engine, tmp_path)
        assert len(results) > 1 and all(r.records for r in results)
        write_output(finalized_batches(results), tmp_path / f"serial.{fmt}", fmt, metadata)
        write_parallel(results, engine, tmp_path, tmp_path / f"joined.{fmt}", fmt, metadata)
    assert (tmp_path / f"joined.{fmt}").read_bytes() == (tmp_path / f"serial.{fmt}").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".meta.json")) == \
        [f"joined.{fmt}", f"serial.{fmt}"]
    if fmt == "csv":  # one header line, at the top
        assert (tmp_path / "joined.csv").read_text().count('"file","line"') == 1


def test_parse_with_jobs_fills_rank_only_nodes_from_earlier_shards(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    job = tmp_path / "job"
    job.mkdir()
    (job / "a-nccl.log").write_text(
        "node07:2001:2001 [3] NCCL INFO comm 0x55d1 rank 3 nranks 8 cudaDev 3 busId 3b000 - Init COMPLETE\n")
    (job / "b-trainer.log").write_text("".join(f"[rank3]: step {i} loss 2.5\n" for i in range(5)))
    one, two = tmp_path / "one.parquet", tmp_path / "two.parquet"
    assert main(["parse", str(job), "-o", str(one), "--quiet"]) == 0
    assert main(["parse", str(job), "-o", str(two), "--quiet", "--jobs", "2"]) == 0
    rows = pq.read_table(two).to_pylist()
    assert rows == pq.read_table(one).to_pylist()
    assert {r["node"] for r in rows if r["file"] == "b-trainer.log"} == {"node07"}


def test_user_rules_reach_the_shards_and_edits_are_seen(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    for name in ("a.log", "b.log"):
        (job / name).write_text("2024-05-07 01:00:00 node01 widget frobnication failed\n")
    rules = tmp_path / "extra.toml"

    def write_rule(word: str) -> None:
        rules.write_text(f"""[[rule]]
id = "frob"
pattern = '{word} failed'
category = "software"
role = "root"
severity = "error"
explain = "frobnication"
""")

    write_rule("frobnication")
    options = AnalyzeOptions(rules_files=[str(rules)])
    scan = scan_job_parallel([str(job)], options, engine=TwoWorkers())
    assert sum(n for (rule, _), n in scan.hit_totals.items() if rule == "frob") == 2
    write_rule("nothing-like-this")
    scan = scan_job_parallel([str(job)], options, engine=TwoWorkers())
    assert not any(rule == "frob" for rule, _ in scan.hit_totals)
