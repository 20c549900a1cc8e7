"""The streaming scan: aggregates, stable template ids, rank remapping, bounded memory and shard merging."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from scan_helpers import DigitMiner, rec

from l4lite.records import Record
from l4lite.scan.scanner import METRIC_CAP, JobScan, Scanner, cap_hits, scan_records, thin_metrics


@dataclass
class _Rule:
    id: str


@dataclass
class _Match:
    rule: _Rule
    groups: dict[str, str] = field(default_factory=dict)


class XidRules:
    """A stand-in rule pack: one rule for Xid lines."""

    def match(self, record: Record) -> list[_Match]:
        if "Xid" in record.message:
            return [_Match(_Rule("xid"), {"code": record.message.rsplit(" ", 1)[-1]})]
        return []


def _job() -> list[Record]:
    out = []
    line = 0
    for i in range(10):
        for node in ("n1", "n2"):
            line += 1
            out.append(rec(f"iteration {i + 1}/100 | lm loss: {2.0 - i * 0.01:.3f} |", node=node, time=100.0 + i * 2,
                           file=f"{node}.log", line=line))
    out.append(rec("NVRM: Xid (PCI:0000:3b:00): 79", node="n2", time=121.0, file="n2-kern.log", line=1,
                   source="kernel", level="error"))
    out.append(rec("NVRM: Xid (PCI:0000:3b:00): 79", node="n2", time=121.5, file="n2-kern.log", line=2,
                   source="kernel", level="error"))
    out.append(rec("watchdog timeout", node=None, rank=3, time=130.0, file="rank3.log", line=1, level="error"))
    out.append(rec("tie rank three", node="n1", rank=3, time=131.0, file="n1.log", line=999))
    return out


def test_scan_aggregates() -> None:
    scan = scan_records(_job(), DigitMiner(), XidRules(), bucket_seconds=5.0, root="/job")
    assert scan.root == "/job"
    assert sorted(scan.nodes) == ["n1", "n2"]  # rank:3 was remapped to n1 through the tying line
    xid = [t for t in scan.templates.values() if "Xid" in t.template]
    assert len(xid) == 1 and xid[0].count == 2 and xid[0].nodes == {"n2": 2} and xid[0].levels == {"error": 2}
    assert xid[0].first_time == 121.0 and xid[0].last_time == 121.5
    assert sum(scan.counts.values()) == len(_job())
    assert scan.counts[("n2", int(121.0 // 5), xid[0].template_id)] == 2
    assert scan.hit_totals == {("xid", "n2"): 2}
    assert [h.record.line for h in scan.hits] == [1, 2]
    assert scan.hits[0].record.template_id == xid[0].template_id and scan.hits[0].groups == {"code": "79"}
    watchdog = [t for t in scan.templates.values() if "watchdog" in t.template]
    assert len(watchdog) == 1 and watchdog[0].nodes == {"n1": 1}
    assert scan.node_ranks["n1"] == {3}
    assert scan.start_time == 100.0 and scan.end_time == 131.0
    train = [p for p in scan.metrics if p.node == "n1"]
    assert len(train) == 10 and train[-1].iteration == 10 and train[0].loss == 2.0
    assert scan.progress["n2"].last_iteration == 10 and scan.progress["n2"].last_time == 118.0
    assert [m.kind for m in scan.markers if m.node == "n1"] == ["train"]


def test_exemplars_and_hits_are_capped() -> None:
    scanner = Scanner(DigitMiner(), XidRules(), hit_cap=3)
    for i in range(50):
        scanner.add(rec(f"NVRM: Xid (PCI:0000:3b:00): {i}", time=float(i), line=i + 1))
    scan = scanner.finish()
    assert len(scan.hits) == 3 and scan.hit_totals[("xid", "node1")] == 50
    assert [h.record.line for h in scan.hits] == [1, 2, 3]
    assert all(len(v) <= 2 for v in scan.exemplars.values())


def test_count_table_coarsens_when_too_large() -> None:
    scanner = Scanner(DigitMiner(), bucket_seconds=1.0, max_cells=100)
    for i in range(1000):
        scanner.add(rec("heartbeat", time=float(i), line=i + 1))
    scan = scanner.finish()
    assert len(scan.counts) <= 100 and scan.bucket_seconds >= 16.0
    assert sum(scan.counts.values()) == 1000


def test_count_table_coarsens_inside_one_batch_of_records() -> None:
    """Buckets stay in step with the bucket length when it doubles in the middle of ``add_many``."""
    scanner = Scanner(DigitMiner(), bucket_seconds=1.0, max_cells=100)
    scanner.add_many(rec("heartbeat", time=float(i), line=i + 1) for i in range(1000))
    scan = scanner.finish()
    assert len(scan.counts) <= 100 and sum(scan.counts.values()) == 1000
    last = max(bucket for _, bucket, _ in scan.counts)
    assert last * scan.bucket_seconds <= 999 < (last + 1) * scan.bucket_seconds


def test_more_series_than_the_count_table_holds_grow_the_table() -> None:
    """More (node, template) series than cells: longer buckets cannot help, and doubling them forever ended in an
    OverflowError. The table grows instead, once every series is in one bucket, and counts every record."""
    scanner = Scanner(DigitMiner(), bucket_seconds=1.0, max_cells=20)
    scanner.add_many(rec(f"event kind{chr(97 + i % 26)}", node=f"node{i % 7}", time=float(i), line=i + 1)
                     for i in range(5000))
    scan = scanner.finish()
    assert sum(scan.counts.values()) == 5000
    assert len(scan.counts) == 7 * 26 and math.isfinite(scan.bucket_seconds)


def test_finish_is_repeatable_for_live_use() -> None:
    scanner = Scanner(DigitMiner())
    scanner.add(rec("a 1", time=1.0))
    first = scanner.finish()
    scanner.add(rec("a 2", time=2.0, line=2))
    second = scanner.finish()
    assert sum(first.counts.values()) == 1 and sum(second.counts.values()) == 2


def test_merge_of_shards_equals_single_scan() -> None:
    records = _job()
    whole = scan_records([_copy(r) for r in records], DigitMiner(), XidRules())
    by_file: dict[str, list[Record]] = {}
    for r in records:
        by_file.setdefault(r.file, []).append(_copy(r))
    shards = [scan_records(rs, DigitMiner(), XidRules()) for rs in by_file.values()]
    merged = JobScan()
    for s in shards:
        merged.merge(s)
    merged.remap_nodes()
    assert merged.counts == whole.counts
    assert {k: v.count for k, v in merged.templates.items()} == {k: v.count for k, v in whole.templates.items()}
    assert merged.hit_totals == whole.hit_totals
    assert sorted(merged.nodes) == sorted(whole.nodes)
    assert merged.progress["n1"].last_iteration == whole.progress["n1"].last_iteration == 10
    assert merged.start_time == whole.start_time and merged.end_time == whole.end_time


def test_merge_brings_buckets_to_the_coarser_length() -> None:
    a = scan_records([rec("x", time=10.0)], DigitMiner(), bucket_seconds=5.0)
    b = scan_records([rec("x", time=12.0)], DigitMiner(), bucket_seconds=10.0)
    a.merge(b)
    assert a.bucket_seconds == 10.0 and list(a.counts.values()) == [2]


def test_thin_metrics_keeps_flagged_points_and_the_tail() -> None:
    scanner = Scanner(DigitMiner())
    for i in range(10000):
        loss = "nan" if i == 10 else "2.0"
        scanner.add(rec(f"iteration {i}/20000 | lm loss: {loss} |", time=float(i), line=i + 1))
    points = thin_metrics(scanner.finish().metrics, cap=1000)
    assert len(points) <= 1000
    assert any(p.iteration == 10 for p in points)  # the NaN survives thinning
    assert [p.iteration for p in points[-250:]] == list(range(9750, 10000))


def test_cap_hits_keeps_earliest() -> None:
    from l4lite.scan.scanner import Hit
    hits = [Hit("r", rec("x", time=float(t), line=t)) for t in (5, 1, 3, 2, 4)]
    assert [h.record.line for h in cap_hits(hits, 2)] == [1, 2]


def _copy(r: Record) -> Record:
    return Record(r.file, r.line, r.end_line, r.node, r.rank, r.gpu, r.source, r.time, r.level, r.message, r.text)


def test_metric_points_are_thinned_but_flagged_and_recent_points_stay() -> None:
    """A long series keeps about METRIC_CAP points per node: the newest in full, NaN losses always."""
    scanner = Scanner(DigitMiner())
    n = 20_000
    scanner.add_many(rec(f"step={i}, loss={'nan' if i in (100, 7001) else 2.5}", time=1000.0 + i, line=i + 1)
                     for i in range(n))
    points = scanner.finish().metrics
    steps = [p.iteration for p in points]
    assert len(points) <= METRIC_CAP and steps == sorted(steps)
    assert {100, 7001} <= set(steps)  # flagged points survive every thinning
    assert all(p.loss != p.loss for p in points if p.iteration in (100, 7001))
    assert steps[-METRIC_CAP // 4:] == list(range(n - METRIC_CAP // 4, n))  # the newest quarter in full
    assert len(set(steps[:100])) == 100 and steps[0] == 0


def test_a_metric_point_pickles_whole() -> None:
    """Shard results cross to the parent or a Dask client pickled: every field of a point comes back."""
    import pickle
    from dataclasses import astuple, fields

    from l4lite.scan.jobscan import MetricPoint

    values = {f.name: f"v-{f.name}" for f in fields(MetricPoint)}  # a distinct value in every field
    point = MetricPoint(**values)
    back = pickle.loads(pickle.dumps([point, point], protocol=pickle.HIGHEST_PROTOCOL))
    assert [astuple(p) for p in back] == [astuple(point)] * 2
    assert {f.name: getattr(back[0], f.name) for f in fields(MetricPoint)} == values


def test_adding_count_tables_gives_the_loops_sums_and_key_order() -> None:
    """``add_counts`` (dict updates and the shared keys' sums) leaves the table a loop of ``get`` and set leaves,
    keys in the same order, whether the tables share no key, some, or all."""
    import random

    from l4lite.scan.jobscan import add_counts

    rnd = random.Random(7)
    for shared in (0.0, 0.3, 1.0):
        a = {(f"n{rnd.randrange(5)}", rnd.randrange(50), f"t{rnd.randrange(4)}"): rnd.randrange(1, 9) for _ in range(300)}
        b = {k: rnd.randrange(1, 9) for k in a if rnd.random() < shared}
        b.update({(f"m{rnd.randrange(5)}", rnd.randrange(50), "t0"): rnd.randrange(1, 9) for _ in range(200)})
        expected = dict(a)
        for k, n in b.items():
            expected[k] = expected.get(k, 0) + n
        got = dict(a)
        add_counts(got, b)
        assert got == expected and list(got) == list(expected)
        empty: dict = {}
        add_counts(empty, b)
        assert empty == b and list(empty) == list(b)
