"""Runs of known-shape lines (``l4lite.ingest.runs``) give the records of the per-line path, and take most lines.

Ingest reads a window of lines at a time where it can: the shapes of all lines from one byte translation, the
times of the lines of known shapes from one numpy gather. These tests compare that with the per-line path
(``IngestOptions(line_runs=False)``) and with the full reader (``line_shapes=False``) on simulated jobs long
enough for runs to form, on hand-made files that hit each way out of a run (a new minute, a new shape, an open
traceback, an impossible date, a future time, blank and non-ASCII lines), and check ``l4lite parse``'s spool,
which takes runs as columns and mines them per shape.
"""

from __future__ import annotations

import itertools
import random
import sys
from collections.abc import Callable
from dataclasses import astuple
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.ipc as ipc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from l4lite.export.spool import write_spool
from l4lite.ingest.blocks import epoch_days
from l4lite.ingest.files import discover
from l4lite.ingest.reader import IngestOptions, iter_job, iter_records, read_file
from l4lite.ingest.shaperun import ShapeRun
from l4lite.mining.miner import TemplateMiner
from l4lite.records import Accounting
from l4lite.simulate import JobSpec, generate


def _read(paths: list[str], **options: bool) -> tuple[list[tuple], dict]:
    acc = Accounting()
    records = [astuple(r)[:-1] for r in iter_records(paths, IngestOptions(**options), acc)]  # not the shape
    return records, acc.to_dict()


def _run_counts(paths: list[str]) -> dict[str, list[int]]:
    """Per file, the records that came in runs and all its records, the files read in one pass."""
    acc = Accounting()
    counts: dict[str, list[int]] = {}
    for item in iter_job(discover(paths, acc), IngestOptions(), acc, runs=True):
        c = counts.setdefault(item.file, [0, 0])
        n = len(item) if type(item) is ShapeRun else 1
        c[1] += n
        if type(item) is ShapeRun:
            c[0] += n
    return counts


def _run_share(paths: list[str]) -> float:
    """Share of the records that came in runs."""
    counts = _run_counts(paths).values()
    return sum(a for a, _ in counts) / sum(b for _, b in counts)


def same_three_ways(paths: list[str]) -> int:
    runs = _read(paths)
    lines = _read(paths, line_runs=False)
    full = _read(paths, line_shapes=False)
    assert runs[1] == lines[1] == full[1]
    for a, b, c in zip(runs[0], lines[0], full[0], strict=True):
        assert a == b == c
    return len(runs[0])


@pytest.fixture(scope="module")
def sim_jobs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("sim")
    jobs = []
    for k, (scenario, fmt, layout) in enumerate((("xid79_fallen_off_bus", "deepspeed", "per-node-dir"),
                                                 ("healthy", "deepspeed", "per-node-dir"),
                                                 ("healthy", "megatron", "per-node-dir"),
                                                 ("healthy", "hf", "per-node-dir"),
                                                 ("xid79_fallen_off_bus", "deepspeed", "merged-slurm"))):
        out = root / f"{k}-{scenario}-{fmt}-{layout}"
        generate(JobSpec(scenario, nodes=2, gpus_per_node=2, iterations=3000, seed=7 + k, fmt=fmt, layout=layout),
                 out)
        jobs.append(out)
    return jobs


def test_simulated_jobs_read_the_same_in_runs(sim_jobs: list[Path]) -> None:
    for job in sim_jobs:
        assert same_three_ways([str(job)]) > 1000


def test_runs_take_most_lines_of_trainer_logs(sim_jobs: list[Path]) -> None:
    assert _run_share([str(sim_jobs[1])]) > 0.8
    assert _run_share([str(sim_jobs[2])]) > 0.8  # Megatron: " [2024-04-10 14:48:08] iteration ..."
    assert _run_share([str(sim_jobs[4])]) > 0.8  # every rank in one srun --label file: the rank from the prefix


def _iso(t: float) -> str:
    whole = int(t)
    stamp = datetime(2024, 12, 31, 23, 0, 0) + timedelta(seconds=whole)
    return f"{stamp:%Y-%m-%d %H:%M:%S},{int(round((t - whole) * 1000)) % 1000:03d}"


def hand_made(rnd: random.Random) -> list[str]:
    """A trainer log crossing minutes, hours and a new year, with every kind of line that ends a run."""
    out = []
    t = 0.0
    step = 1
    for i in range(3000):
        t += rnd.choice((0.4, 1.3, 7.9, 61.0))
        stamp = _iso(t)
        r = rnd.random()
        if r < 0.80:
            out.append(f"[{stamp}] [INFO] [train.py:214:train] [Rank 3] step={step}, loss={rnd.uniform(0, 12):.4f}, "
                       f"lr={rnd.uniform(0, 1e-3):.4e}")
            step += rnd.choice((1, 1, 1, 97))
        elif r < 0.84:
            out.append(f"[{stamp}] [INFO] [timer.py:264:stop] RunningAvgSamplesPerSec={rnd.uniform(0, 999)!r}")
        elif r < 0.86:
            out.append("")
        elif r < 0.88:
            out.append(f"[{stamp}] [ERROR] [engine.py:88:step] Traceback (most recent call last):")
            out.append('  File "train.py", line 12, in <module>')
            out.append("RuntimeError: CUDA error: an illegal memory access was encountered")
        elif r < 0.89:
            out.append(f"[2024-02-{rnd.randrange(30, 32)} 10:00:00,000] [INFO] [train.py:214:train] [Rank 3] "
                       f"step={step}, loss=1.0000, lr=1.0000e-04")  # an impossible date, a known shape
        elif r < 0.90:
            out.append(f"[2099-01-01 00:00:{rnd.randrange(10, 60)},000] [INFO] [train.py:214:train] [Rank 3] "
                       f"step={step}, loss=1.0000, lr=1.0000e-04")  # a wrong clock
        elif r < 0.92:
            out.append(f"[{stamp}] [INFO] [data.py:9:load] shard « é {i} » 读取 ✓")
        elif r < 0.94:
            out.append(f"Jan  1 00:{rnd.randrange(10, 60)}:00 node3 kernel: NVRM: Xid (PCI:0000:3b:00): 79")
        else:
            out.append(f"[{stamp}] [INFO] [logging.py:128:log_dist] [Rank 3] step={step}, skipped=0, "
                       f"lr=[{rnd.uniform(0, 1e-3)!r}]")
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_hand_made_logs_read_the_same_in_runs(tmp_path: Path, seed: int) -> None:
    rnd = random.Random(seed)
    f = tmp_path / "node003" / "rank3.log"
    f.parent.mkdir()
    f.write_text("\n".join(hand_made(rnd)) + "\n", encoding="utf-8")
    assert same_three_ways([str(f)]) > 2500
    assert _run_share([str(f)]) > 0.3


@pytest.mark.parametrize("prefix", ["{rank:>2}: ", "[rank{rank}]: ", "[default{rank}]:", "{rank:>2}: [default{local}]:",
                                    "[{pid}] [rank{rank}]: ", "train.node{host:03d} [stdout] {rank:>2}: ",
                                    "job{big}.node{host:03d} [stderr] {rank:>2}: "])
def test_prefixed_streams_read_the_same(tmp_path: Path, prefix: str) -> None:
    """Ranks interleaved in one file behind an srun --label or torchrun prefix (and some lines without one), one
    rank's host learnt from an NCCL line midway (later lines of its stream take that node). The spool of the
    runs is that of the records too."""
    rnd = random.Random(4)
    lines = []
    for i, line in enumerate(hand_made(rnd)):
        rank = rnd.choice([0, 3, 5, 8, 10, 12, 22, 32])  # 12, 22, 32: one shape, prefixes that differ before the last digit
        # other digits of a prefix (a local rank, a pid, a host) tell streams of one rank apart
        names = {"local": rnd.randrange(8), "pid": rnd.choice([811, 911]), "host": rnd.randrange(3),
                 "big": rnd.choice([1234567890123456, 9234567890123456])}
        lines.append(line if i % 7 == 3 else prefix.format(rank=rank, **names) + line)
        if i == 1500:
            lines.append(prefix.format(rank=5, **names) + "node017:811:811 [5] NCCL INFO cudaDriverVersion 12040")
    f = tmp_path / "slurm-77.out"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert same_three_ways([str(f)]) > 2500
    share = _run_share([str(f)])
    if prefix in ("{rank:>2}: ", "[rank{rank}]: ", "[{pid}] [rank{rank}]: ", "[default{rank}]:"):
        assert share > (0.1 if "pid" in prefix else 0.3)
    else:  # a local rank behind an srun label and a host prefix: those lines go line by line
        assert share < 0.05  # (a few of the lines without a prefix make short runs)
    a, state_a = spool([str(f)], True, tmp_path / "runs.arrows")
    b, state_b = spool([str(f)], False, tmp_path / "lines.arrows")
    assert a.equals(b)
    assert state_a == state_b


def test_files_that_read_a_shape_alike_share_it_and_others_do_not(tmp_path: Path) -> None:
    """The same lines in files that read them differently: a kernel log (its bare lines are kernel lines), a
    rank's file (the rank from the path) and a file with no rank in its path (the rank from "[Rank N]"), with and
    without a node in the path. Each reads as the full reader reads it alone, whatever was read before it."""
    rnd = random.Random(11)
    text = "\n".join(hand_made(rnd)) + "\n"
    names = ["node003/rank3.log", "node003/rank4.log", "node003/kern.log", "node003/train.log", "rank5.log",
             "node004/rank6.log"]
    for name in names:
        f = tmp_path / name
        f.parent.mkdir(exist_ok=True)
        f.write_text(text, encoding="utf-8")
    assert same_three_ways([str(tmp_path)]) > 6 * 2500
    for name in names:  # and each file alone
        assert same_three_ways([str(tmp_path / name)]) > 2500
    records, _ = _read([str(tmp_path)])
    by_file: dict[str, set] = {}
    for r in records:
        by_file.setdefault(r[0], set()).add((r[4], r[6]))  # rank, source of the step lines
    assert (3, "trainer") in by_file["node003/rank3.log"]
    assert (3, "kernel") in by_file["node003/kern.log"]


def test_a_file_starts_with_the_shapes_of_the_files_before_it(tmp_path: Path) -> None:
    """The second rank file of a node reads in runs from its first lines: the shapes are the first file's."""
    rnd = random.Random(12)
    lines = [f"[{_iso(i * 1.3)}] [INFO] [train.py:214:train] step={i}, loss={rnd.uniform(0, 12):.4f}"
             for i in range(4000)]
    for name in ("node003/rank3.log", "node003/rank4.log"):
        f = tmp_path / name
        f.parent.mkdir(exist_ok=True)
        f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    shares = {rel: a / b for rel, (a, b) in _run_counts([str(tmp_path)]).items()}
    assert shares["node003/rank4.log"] > 0.999 > shares["node003/rank3.log"]
    assert same_three_ways([str(tmp_path)]) == 8000


def test_a_ray_driver_log_reads_in_runs_as_line_by_line(tmp_path: Path) -> None:
    """A Ray driver relays its workers' lines under ``(RayTrainWorker pid=N, ip=A)``: copies without a time of
    their own, each naming its worker's node. Runs take them (the host read once per prefix), give them no time
    while the driver's own timed lines around them keep theirs, and read the same records as the per-line path,
    a relayed traceback included."""
    rnd = random.Random(36866)
    ips = ["10.0.0.188", "10.0.0.186"]
    pids = [rnd.randrange(3000, 90000) for _ in range(8)]
    lines = []
    for step in range(1, 6000):
        if step % 500 == 0:
            lines.append(f"{_iso(step * 1.3)}\tINFO tune_controller.py:1009 -- Trial status: 1 RUNNING")
        if step == 4200:
            lines += [f"(RayTrainWorker pid={pids[0]}, ip={ips[0]}) Traceback (most recent call last):",
                      f'(RayTrainWorker pid={pids[0]}, ip={ips[0]})   File "train.py", line 9, in <module>',
                      f"(RayTrainWorker pid={pids[0]}, ip={ips[0]}) RuntimeError: CUDA error: an illegal memory "
                      "access was encountered"]
        k = step % 8
        lines.append(f"(RayTrainWorker pid={pids[k]}, ip={ips[k % 2]}) {{'loss': {rnd.uniform(0, 9):.4f}, "
                     f"'grad_norm': {rnd.uniform(0.1, 9):.16g}, 'epoch': {round(step / 4000, 2)}}}"
                     + (" [repeated 7x across cluster]" if step % 97 == 0 else ""))
    for node in ("node001", "node002"):
        f = tmp_path / node / "driver.log"
        f.parent.mkdir()
        f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert _run_share([str(tmp_path)]) > 0.9
    assert same_three_ways([str(tmp_path)]) == 2 * (len(lines) - 2)
    records, _ = _read([str(tmp_path)])
    relayed = [r for r in records if r[10].startswith("(RayTrainWorker")]
    assert {r[3] for r in relayed} == {"10.0.0.188", "10.0.0.186"} and {r[7] for r in relayed} == {None}
    assert all(r[7] is not None for r in records if not r[10].startswith("(RayTrainWorker"))


def test_a_file_without_a_node_in_its_path_reads_the_same(tmp_path: Path) -> None:
    """No node in the path: a run's lines take the node that the per-line path would fill in (here, none)."""
    f = tmp_path / "train.log"
    f.write_text("\n".join(hand_made(random.Random(9))) + "\n", encoding="utf-8")
    assert same_three_ways([str(f)]) > 2500


@settings(max_examples=200, deadline=None)
@given(day=st.integers(-800_000, 2_900_000), month=st.integers(0, 14), dom=st.integers(0, 32))
def testepoch_days_agree_with_date(day: int, month: int, dom: int) -> None:
    d = date(1, 1, 1) + timedelta(days=day % 3_652_059)
    y = np.array([d.year])
    days, valid = epoch_days(y, np.array([d.month]), np.array([d.day]))
    assert valid[0] and days[0] == d.toordinal() - 719163
    days, valid = epoch_days(y, np.array([month]), np.array([dom]))
    try:
        expected = date(d.year, month, dom).toordinal() - 719163
    except ValueError:
        assert not valid[0]
    else:
        assert valid[0] and days[0] == expected


def spool(paths: list[str], runs: bool, path: Path, fold: bool = False) -> tuple[object, dict]:
    acc = Accounting()
    miner = TemplateMiner()
    options = IngestOptions(line_runs=runs, fold_shapes=fold)
    n = write_spool(iter_job(discover(paths, acc), options, acc, runs=runs), miner, path)
    with ipc.open_stream(path) as reader:
        table = reader.read_all()
    sizes = {cid: c.size for cid, c in miner.drain.id_to_cluster.items()}
    assert n == table.num_rows
    return table, {"templates": miner.finalize(), "sizes": sizes, "hits": miner.hits, "accounting": acc.to_dict()}


def test_parse_spools_runs_as_it_spools_records(sim_jobs: list[Path], tmp_path: Path) -> None:
    """Runs go into the columns as they are and are mined per shape: the same rows, cluster ids, template sizes
    and cache hits as record by record."""
    for k, job in enumerate(sim_jobs[:2] + sim_jobs[4:]):
        a, state_a = spool([str(job)], True, tmp_path / f"runs{k}.arrows")
        b, state_b = spool([str(job)], False, tmp_path / f"lines{k}.arrows")
        assert a.equals(b)
        assert state_a == state_b


def _finished_scan(paths: list[str], runs: bool, max_cells: int = 150_000, fold: bool = False) -> Any:
    from l4lite.options import AnalyzeOptions
    from l4lite.scan.job import load_rules
    from l4lite.scan.scanner import Scanner

    acc = Accounting()
    options = IngestOptions(fold_shapes=fold)
    scanner = Scanner(TemplateMiner(), load_rules(AnalyzeOptions()), bucket_seconds=5.0, max_cells=max_cells)
    scanner.add_many(iter_job(discover(paths, acc), options, acc, runs=runs))
    return scanner.finish(acc, options.rank_map.as_dict())


def scan_counts(paths: list[str], runs: bool, max_cells: int, fold: bool = False) -> dict:
    from test_engine import signature

    return signature(_finished_scan(paths, runs, max_cells, fold))


@pytest.mark.parametrize("max_cells", [150_000, 300])
def test_the_scan_takes_runs_as_it_takes_records(sim_jobs: list[Path], tmp_path: Path, max_cells: int) -> None:
    """Templates, counts (coarsened in the middle of runs with a small table), metrics, markers, exemplars,
    progress and node tables: the same from runs as from their records."""
    f = tmp_path / "node003" / "rank3.log"
    f.parent.mkdir()
    f.write_text("\n".join(hand_made(random.Random(5))) + "\n", encoding="utf-8")
    rnd = random.Random(6)
    merged = tmp_path / "slurm-5.out"  # rank 11 speaks late, on a shape learnt long before: only in runs
    merged.write_text("10: node007:811:811 [0] NCCL INFO cudaDriverVersion 12040\n" + "\n".join(
        f"{11 if i > 3000 and i % 2 else 10}: [{_iso(i * 1.5)}] [INFO] [train.py:214:train] step={i:05d}, "
        f"loss={rnd.uniform(1, 9):.4f}" for i in range(4000)) + "\n", encoding="utf-8")
    assert _run_share([str(merged)]) > 0.8
    twice = tmp_path / "slurm-6.out"  # rank 3 behind two prefixes: two streams, one (node, rank, GPU)
    twice.write_text("".join(f"{p}node007:811:811 [0] NCCL INFO cudaDriverVersion 12040\n" for p in ("3: ", "[rank3]: "))
                     + "\n".join(f"{'3: ' if i % 3 else '[rank3]: '}[{_iso(i * 1.5)}] [INFO] [train.py:214:train] "
                                 f"step={i:05d}, loss={rnd.uniform(1, 9):.4f}" for i in range(4000)) + "\n",
                     encoding="utf-8")
    assert _run_share([str(twice)]) > 0.8
    for paths in [[str(job)] for job in sim_jobs] + [[str(f)], [str(merged)], [str(twice)]]:
        assert scan_counts(paths, True, max_cells) == scan_counts(paths, False, max_cells)

def assert_spooled_and_scanned_alike(paths: list[str], tmp_path: Path) -> None:
    """The spool, the reader's state and the scan from runs are those of the per-line path."""
    a, state_a = spool(paths, True, tmp_path / "runs.arrows")
    b, state_b = spool(paths, False, tmp_path / "lines.arrows")
    assert a.equals(b)
    assert state_a == state_b
    assert scan_counts(paths, True, 300) == scan_counts(paths, False, 300)



def _device_events(paths: list[str], runs: bool) -> dict:
    return {k: [(e.kind, e.record.line, e.detail, e.count) for e in v]
            for k, v in _finished_scan(paths, runs).device_events.items()}


def test_gpu_telemetry_in_runs_reports_every_slowdown_a_record_scan_does(tmp_path: Path) -> None:
    """nvidia-smi CSV of thousands of lines: the lines of ``Not Active`` only go in runs, and every line with an
    ``Active`` slowdown (in any case, in any slowdown column, next to an ``Active`` that is not a slowdown) is an
    event, as in the record scan; so is one after a header that comes first in the middle of the file."""
    header = ("timestamp, index, pci.bus_id, temperature.gpu, clocks.sm [MHz], clocks_event_reasons.gpu_idle, "
              "clocks_event_reasons.hw_slowdown, clocks_event_reasons.hw_thermal_slowdown")
    rnd = random.Random(3)

    def row(i: int, idle: str = "Not Active", hw: str = "Not Active", thermal: str = "Not Active") -> str:
        t = datetime(2024, 7, 25, 4, 33, 8) + timedelta(seconds=i // 8)
        return f"{t:%Y/%m/%d %H:%M:%S}.349, {i % 8}, 00000000:07:00.0, {30 + i % 9}, 1410 MHz, {idle}, {hw}, {thermal}"

    def lines(n: int) -> list[str]:
        out = []
        for i in range(n):
            r = rnd.random()
            if r < 0.002:
                out.append(row(i, hw="Active"))
            elif r < 0.004:
                out.append(row(i, thermal="ACTIVE "))
            elif r < 0.1:
                out.append(row(i, idle="Active"))  # not a slowdown
            else:
                out.append(row(i))
        return out

    first = tmp_path / "first"  # a job folder: the node comes from the file's folder
    (first / "node001").mkdir(parents=True)
    (first / "node001" / "nvidia-smi.log").write_text("\n".join([header, *lines(6000)]) + "\n", encoding="utf-8")
    late = tmp_path / "late"  # data lines before the header, then data with slowdowns
    (late / "node002").mkdir(parents=True)
    (late / "node002" / "nvidia-smi.log").write_text(
        "\n".join([row(i) for i in range(3000)] + [header, *lines(3000)]) + "\n", encoding="utf-8")
    for job in (first, late):
        assert _run_share([str(job)]) > 0.8
        events = _device_events([str(job)], True)
        assert events == _device_events([str(job)], False)
        assert sum(len(v) for v in events.values()) > 5


def test_metric_points_of_runs_wait_for_their_values_and_scan_the_same(tmp_path: Path) -> None:
    """Progress lines of a learnt shape are kept with their plan and get their values only if they survive
    thinning. With NaN and infinite losses and NaN counters (flagged points, never thinned) among them, a
    validation shape (an implied phase), iterations that jump back (a restart), lines a rule matches and more
    points than a node keeps, the scan equals the record scan."""
    from l4lite.options import AnalyzeOptions
    from l4lite.scan.job import load_rules
    from l4lite.scan.scanner import METRIC_CAP, Scanner

    rnd = random.Random(9)
    lines = []
    step = 1
    for i in range(int(METRIC_CAP * 2.5)):
        stamp = _iso(i * 0.7)
        if i % 997 == 500:  # a NaN (a rule's line, read as a record) or an overflow to infinity (a run's line)
            loss = "nan" if i % 2 else f"{rnd.randrange(2, 9)}.5e+{rnd.randrange(400, 999)}"
            lines.append(f"[{stamp}] [INFO] [train.py:214:train] step={step:05d}, loss={loss}, grad_norm=1.000")
        elif i % 1500 == 700:
            lines.append(f"[{stamp}] [INFO] [eval.py:33:eval] step={step:05d}, val_loss={rnd.uniform(1, 3):.4f}")
        else:
            lines.append(f"[{stamp}] [INFO] [train.py:214:train] step={step:05d}, loss={rnd.uniform(1, 9):.4f}, "
                         f"grad_norm={rnd.uniform(0, 2):.3f}")
        step = step - 900 if i == 6000 else step + 1
    f = tmp_path / "node002" / "rank0.log"
    f.parent.mkdir()
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    megatron = tmp_path / "node003" / "rank8.log"  # a NaN counter that flags some lines of a deferred shape
    megatron.parent.mkdir()
    megatron.write_text("".join(
        f" [{_iso(i * 2.0)[:19]}] iteration {i:>8d}/   20000 | consumed samples: {i * 64:>10d} | "
        f"lm loss: {rnd.uniform(1, 9):.6E} | grad norm: {rnd.uniform(0, 2):.3f} | "
        f"number of nan iterations: {int(i % 1231 == 17):>3d} |\n" for i in range(1, int(METRIC_CAP * 2.5))),
        encoding="utf-8")
    paths = [str(tmp_path)]
    assert _run_share(paths) > 0.9
    from test_engine import signature

    scans = []
    for runs in (True, False):
        acc = Accounting()
        scanner = Scanner(TemplateMiner(), load_rules(AnalyzeOptions()), bucket_seconds=5.0)
        scanner.add_many(iter_job(discover(paths, acc), IngestOptions(), acc, runs=runs))
        waiting = sum(type(p[0]) is tuple for series in scanner._metrics.values() for p in series)
        assert waiting > METRIC_CAP // 4  # records of a learnt shape wait too (``Scanner._add_deferred``)
        scans.append(scanner.finish(acc))
    assert signature(scans[0]) == signature(scans[1])
    flagged = [p for p in scans[0].metrics if p.flagged]
    assert len([p for p in flagged if p.node == "node002"]) == len(range(500, len(lines), 997))  # all kept
    assert len([p for p in flagged if p.node == "node003"]) == len(range(17, int(METRIC_CAP * 2.5), 1231))
    assert {m.kind for m in scans[0].markers} >= {"train", "eval"}
    # the Megatron lines' shape meets a rule's keywords: each line is matched in the run, a record only on a hit
    assert scans[0].hit_totals[("nan-iterations", "node003")] == len(range(17, int(METRIC_CAP * 2.5), 1231))


def test_a_merged_file_in_pieces_scans_as_one_pass_with_runs(sim_jobs: list[Path],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces of 300 KB of a merged srun file: every piece starts with no shapes learnt and takes runs of its own;
    the merged scan is the one-pass scan."""
    from test_engine import signature

    from l4lite.ingest import pieces
    from l4lite.options import AnalyzeOptions
    from l4lite.scale.engine import LocalEngine, scan_job_parallel
    from l4lite.scale.shards import job_shards
    from l4lite.scan.job import load_rules, scan_job

    monkeypatch.setattr(pieces, "MIN_PIECE_BYTES", 300_000)
    options = AnalyzeOptions()
    rules = load_rules(options)
    job = sim_jobs[4]
    cut = [p for shard in job_shards(discover([str(job)], Accounting()).files, 4) for p in shard if p.is_piece]
    assert len(cut) > 2
    acc = Accounting()
    assert any(type(item) is ShapeRun for item in read_file(cut[-1], IngestOptions(), acc, runs=True))

    class Many(LocalEngine):
        workers = 4

    whole = scan_job([str(job)], options, rules=rules)
    assert signature(scan_job_parallel([str(job)], options, engine=Many())) == signature(whole)


_ZOO_RUNS = {"megatron": 0.9, "megatron-deepspeed": 0.9, "deepspeed": 0.9, "hf-trainer": 0.9, "lightning": 0.9,
             "nemo": 0.9, "torchtitan": 0.9, "composer": 0.9, "fairseq": 0.8, "python-logging": 0.9,
             "json-lines": 0.9, "nccl": 0.85, "kernel": 0.0, "storage": 0.0,
             # formats no plan was written for (glog and ANSI-coloured lines in runs of lines read from their
             # plans; journal and CRI lines one by one)
             "glog": 0.9, "mpi-tf": 0.9, "c10-rank": 0.9, "cri": 0.0, "journal": 0.0, "pdsh": 0.9, "logfmt": 0.9,
             "ansi": 0.9}


@pytest.mark.parametrize("fmt", sorted(_ZOO_RUNS))
def test_format_zoo_reads_the_same_in_runs(tmp_path: Path, fmt: str) -> None:
    """The formats of ``benchmarks/format_zoo.py`` (from real excerpts: timestamps or none, a rank in a local
    ``[defaultN]:`` prefix or in the message, right-aligned counters whose width changes) read the same in runs,
    per shape and in full, and their spools are equal; the share of their lines that runs take is pinned; the scans of runs and of records agree."""
    import itertools
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import format_zoo

    gen, name = format_zoo.FORMATS[fmt]
    for node in range(2):  # the second node's lines from far into its log (wider numbers, tqdm bars drawn)
        f = tmp_path / "job" / f"node{node + 1:03d}" / name
        f.parent.mkdir(parents=True)
        lines = itertools.islice(gen(node, random.Random(node)), 40_000 * node, 40_000 * node + 3000)
        f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    paths = [str(tmp_path / "job")]
    assert same_three_ways(paths) > 5000
    assert _run_share(paths) >= _ZOO_RUNS[fmt]
    a, state_a = spool(paths, True, tmp_path / "runs.arrows")
    b, state_b = spool(paths, False, tmp_path / "lines.arrows")
    assert a.equals(b)
    assert state_a == state_b
    assert scan_counts(paths, True, 300) == scan_counts(paths, False, 300)
    if fmt in ("kernel", "storage", "nccl", "composer"):  # and with folded shapes, as ``l4lite parse`` reads
        c, state_c = spool(paths, True, tmp_path / "folded.arrows", fold=True)
        assert c.equals(b)
        assert state_c == state_b
        # and ``analyze``'s scan of them, which reads with folded shapes too
        assert scan_counts(paths, True, 300, fold=True) == scan_counts(paths, False, 300)
        assert scan_counts(paths, True, 150_000, fold=True) == scan_counts(paths, False, 150_000)


_REAL = Path(__file__).resolve().parent.parent / "fixtures"


def _real_kernel_messages() -> list[str]:
    """Kernel and storage messages of the real excerpts (corpus dev rows, a job's dmesg), headers removed."""
    import json
    import re

    head = re.compile(r"\[ *\d+\.\d+\] |\[[A-Z][a-z]{2} [A-Z][a-z]{2} +\d+ [\d:]+ \d{4}\] ")
    out = []
    for row in map(json.loads, (_REAL / "real" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()):
        if row["split"] == "dev":
            out += [head.sub("", line, count=1) for line in row["lines"] if head.match(line)]
    dmesg = (_REAL / "jobs" / "ib-link-down" / "node075" / "dmesg.log").read_text(encoding="utf-8").splitlines()
    out += [head.sub("", line, count=1) for line in dmesg if head.match(line)]
    return [m for m in out if m.strip()]


def _kernel_log(rnd: random.Random, messages: list[str], form: str) -> list[str]:
    """Real kernel and storage messages behind syslog, ISO syslog, journald or dmesg headers, repeated with new
    digits (so their shapes come back), over a reboot (the uptime starts again) and a change of host."""
    import re

    out = []
    t = 1_733_011_200.0  # 2024-12-01
    up = 950.818166
    for i in range(2500):
        t += rnd.choice((0.2, 1.7, 45.0))
        up += rnd.choice((0.001, 1.5, 44.0))
        if i == 1200:
            up = 3.5  # a reboot
        host = "gpu-node07" if i < 1800 else "gpu-node08"
        msg = re.sub(r"\d", lambda _: str(rnd.randrange(10)), rnd.choice(messages)) if rnd.random() < 0.5 \
            else rnd.choice(messages)
        stamp = datetime.fromtimestamp(t, tz=UTC)
        uptime = f"[{up:12.6f}] "
        if form == "syslog":
            head = f"{stamp:%b} {stamp.day:2d} {stamp:%H:%M:%S} {host} kernel: "
            out.append(head + (uptime if i % 3 else "") + msg)
        elif form == "iso-syslog":
            out.append(f"{stamp:%Y-%m-%dT%H:%M:%S.%f}+00:00 {host} kernel: {uptime}{msg}")
        elif form == "journald":
            prog = rnd.choice(("kernel", "nvidia-persistenced[2211]", "slurmd[1834]", "mmfs[4410]"))
            out.append(f"{stamp:%b} {stamp.day:02d} {stamp:%H:%M:%S} {host} {prog}: {msg}")
        elif form == "dmesg-mixed":  # a kern.log of bare uptimes between syslog lines that anchor them
            out.append(uptime + msg if i % 2 else f"{stamp:%b} {stamp.day:2d} {stamp:%H:%M:%S} {host} kernel: "
                       f"{uptime}{msg}")
        else:  # "dmesg-human"
            out.append(f"[{stamp:%a %b} {stamp.day:2d} {stamp:%H:%M:%S %Y}] {msg}")
    return out


@pytest.mark.parametrize("form", ["syslog", "iso-syslog", "journald", "dmesg-mixed", "dmesg-human"])
def test_kernel_and_storage_lines_read_the_same_by_shape(tmp_path: Path, form: str) -> None:
    """Lines whose header changes the reader's state (a syslog host, a kernel line's uptime anchoring the boot)
    read from their shape's plan give the records (node, time, text, template) the per-line path gives."""
    messages = _real_kernel_messages()
    assert len(messages) > 40
    paths = []
    for node in (7, 8):  # two nodes' folders: the job's layout names the node of lines without a host
        f = tmp_path / f"node{node:03d}" / "kern.log"
        f.parent.mkdir()
        f.write_text("\n".join(_kernel_log(random.Random(node), messages, form)) + "\n", encoding="utf-8")
        paths.append(str(f))
    assert same_three_ways(paths) > 4000
    options = IngestOptions()
    records = list(iter_records(paths, options, Accounting()))
    planned = sum(len(book.plans) for book in options.shape_books.values())
    assert planned > 20  # the shapes were learnt: later lines of them took the plans
    nodes = {r.node for r in records}
    assert nodes == ({"node007", "node008"} if form == "dmesg-human" else
                     {"gpu-node07", "gpu-node08", "node007", "node008"} if form == "dmesg-mixed" else
                     {"gpu-node07", "gpu-node08"})
    miners = TemplateMiner(), TemplateMiner(cache_size=0)
    plain = list(iter_records(paths, IngestOptions(line_shapes=False), Accounting()))
    fast_ids = [miners[0].add(r.message) for r in records]
    plain_ids = [miners[1].add(r.message) for r in plain]
    fast_t, plain_t = miners[0].finalize(), miners[1].finalize()
    assert [fast_t[c] for c in fast_ids] == [plain_t[c] for c in plain_ids]


def _new_ids(rnd: random.Random, text: str) -> str:
    """``text`` with new digits and new hex letters (ids, pointers): a new line shape nearly every time."""
    import re

    text = re.sub(r"\d", lambda _: str(rnd.randrange(10)), text)
    return re.sub(r"(?<=[0-9])[a-f]|[a-f](?=[0-9])", lambda _: rnd.choice("abcdef"), text)


# messages after a known header that make the header reader decide otherwise, or that open a record
_TRICKY = ["x.node07 [stdout] python", "3: rank three", "[1,3]<stdout>: mpi", "[rank3]: torch said", " ",
           "dgx-01:11:12 [3] NCCL INFO late header", "NCCL WARN in the message", "ERROR: a level word",
           "[INFO] a marker", "2024-12-01 10:00:00 a second stamp", "Traceback (most recent call last):",
           "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.", "global_ranks=[0, 1]",
           "[Rank 3] step=12 loss=2.5", "mlx5_core 0000:0c:00.0: port 1 down", "nfs4: server gone",
           "line with a carriage\rreturn", "12345 starts with a number", "[  12.500000] an uptime in it",
           "[ERROR] bracketed level"]


@pytest.mark.parametrize("form", ["syslog", "dmesg-mixed", "nccl", "iso"])
def test_lines_of_new_shapes_read_from_their_header_plan_the_same(tmp_path: Path, form: str) -> None:
    """Kernel, storage and NCCL lines with a new id each (nearly one shape per line) are read from the plan of
    their header's shape (``_learn_head``): the records are those of the per-line path, also where the
    message would make the header reader decide otherwise (a prefix, NCCL, a level marker, a stamp) or opens
    a record."""
    messages = _real_kernel_messages() + _TRICKY
    paths = []
    for node in (7, 8):
        rnd = random.Random(node)
        up, lines = 950.818166, []
        for i in range(3000):
            up += rnd.choice((0.001, 1.5, 44.0))
            msg = _new_ids(rnd, rnd.choice(messages) if rnd.random() < 0.3 else
                           f"python[{rnd.randrange(10**6)}]: segfault at 7f3a{i:x}c2b ip 0000{i:x}bc sp "
                           f"00{i * 7:x}e error 4 in libc.so.6[7f3a1c2b+1f000]")
            stamp = datetime.fromtimestamp(1_733_011_200.0 + i * 1.7, tz=UTC)
            if form == "syslog":  # a third without an uptime: their messages may start with a bracket
                lines.append(f"{stamp:%b} {stamp.day:2d} {stamp:%H:%M:%S} gpu-node{node:02d} kernel: "
                             + (f"[{up:12.6f}] " if i % 3 else "") + msg)
            elif form == "dmesg-mixed":
                lines.append(f"[{up:12.6f}] {msg}" if i % 2 else
                             f"{stamp:%b} {stamp.day:2d} {stamp:%H:%M:%S} gpu-node{node:02d} kernel: [{up:12.6f}] {msg}")
            elif form == "nccl":
                gpu = i % 4
                lines.append(f"gpu-node{node:02d}:{5270 + gpu}:{5690 + gpu} [{gpu}] NCCL INFO {msg}")
            else:
                lines.append(f"{stamp:%Y-%m-%d %H:%M:%S},{i % 1000:03d} - kernel - INFO - {msg}")
        f = tmp_path / f"node{node:03d}" / "kern.log"
        f.parent.mkdir()
        f.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(str(f))
    assert same_three_ways(paths) > 5000
    options = IngestOptions()
    records = list(iter_records(paths, options, Accounting()))
    assert any(book.heads for book in options.shape_books.values())
    shapes = {r.shape for r in records if r.shape}
    # lines read from a plan name their shape; most shapes here were met once, so a header plan read them
    assert len(shapes) > 1500


@pytest.mark.parametrize("max_cells", [150_000, 40])
def test_runs_counted_at_once_scan_as_line_by_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   max_cells: int) -> None:
    """A run's cells, time buckets and exemplars counted per (template, shape, bucket) equal the record scan, also
    for runs whose times go back (lines of a later minute written before earlier ones); runs that would coarsen
    a small count table go line by line, and that too equals the record scan."""
    import itertools
    import sys

    from l4lite.scan.runpath import RunPath

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import format_zoo

    # the third file, read last, takes the first file's shapes from its first window and has earlier times: its
    # runs move the templates' first times back
    for node, (fmt, skip) in enumerate((("python-logging", 20_000), ("megatron", 0), ("python-logging", 0))):
        gen, name = format_zoo.FORMATS[fmt]
        lines = list(itertools.islice(gen(node, random.Random(node)), skip, skip + 12_000))
        lines[6000:9000] = lines[7500:9000] + lines[6000:7500]  # the clock goes back once
        if node == 1:  # and in the file's first lines: the least time of a template is in the middle of a run
            lines[:3000] = lines[1500:3000] + lines[:1500]
        f = tmp_path / f"node{node + 1:03d}" / name
        f.parent.mkdir()
        f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    answers: list[bool] = []
    at_once = RunPath._tables_at_once

    def spy(self: Any, *args: Any) -> bool:
        answers.append(at_once(self, *args))
        return answers[-1]

    monkeypatch.setattr(RunPath, "_tables_at_once", spy)
    paths = [str(tmp_path)]
    assert _run_share(paths) > 0.9
    assert scan_counts(paths, True, max_cells) == scan_counts(paths, False, max_cells)
    if max_cells > 1000:  # the runs across a step back in time too (each cell's least and greatest time)
        assert all(answers)
    else:
        assert False in answers  # every run once the table is full


def test_runs_whose_times_go_back_count_their_cells_at_once_as_line_by_line(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs whose times are not in order (a syslog file's whole seconds between dmesg uptimes): the cells' least
    and greatest times come from numpy, not from a template's first and last lines. Each run's times reversed
    (its least time on its last line): the scan equals the scan that adds every run's lines one by one."""
    import dataclasses
    import itertools
    import sys

    from test_engine import signature

    from l4lite.options import AnalyzeOptions
    from l4lite.scan.job import load_rules
    from l4lite.scan.runpath import RunPath
    from l4lite.scan.scanner import Scanner

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import format_zoo

    gen, name = format_zoo.FORMATS["python-logging"]
    f = tmp_path / "node001" / name
    f.parent.mkdir()
    f.write_text("\n".join(itertools.islice(gen(0, random.Random(3)), 6000)) + "\n", encoding="utf-8")
    acc = Accounting()
    items = list(iter_job(discover([str(tmp_path)], acc), IngestOptions(), acc, runs=True))
    runs = [k for k, item in enumerate(items) if type(item) is ShapeRun and len(item) > 1]
    assert sum(len(items[k]) for k in runs) > 4000
    for k in runs:  # the first run's last line the job's first time, the last run's first line its last time
        shift = -1e6 if k == runs[0] else 1e6 if k == runs[-1] else 0.0
        values = items[k].time_values()[::-1] + shift
        items[k] = dataclasses.replace(items[k], times=values.tolist(), time_array=values)

    def scan() -> dict:
        scanner = Scanner(TemplateMiner(), load_rules(AnalyzeOptions()), bucket_seconds=5.0)
        scanner.add_many(items)
        return signature(scanner.finish(Accounting(), {}))

    at_once = scan()
    monkeypatch.setattr(RunPath, "_tables_at_once", lambda *args: False)
    assert at_once == scan()


def test_runs_with_shapes_checked_token_by_token_mine_as_line_by_line(tmp_path: Path) -> None:
    """A shape whose template keeps digits where Drain routes or the cluster has no wildcard (NCCL's ``P2P/IPC``)
    is checked token by token on every line, one whose kept tokens sit on wildcards (Composer's
    ``lr-DecoupledAdamW/group0:``) is answered per key; mined in one pass with the cached shapes around it, a run gives the
    ids, template sizes and cache hits of ``add`` line by line, also while Drain still changes templates."""

    lines = []
    for step in range(1, 1000):
        lines += [f"[batch={step}/9000]:", f"\t Train time/batch: {step - 1}", f"\t Train loss/total: {step % 7}.5",
                  f"\t Train lr-DecoupledAdamW/group{step % 3}: 0.{step:04d}",
                  f"\t Train mem/{'peak' if step % 50 else 'reserved'}: {step * 1000}",
                  f"\t group{step % 3}/lr-DecoupledAdamW: 0.{step:04d}"]
    f = tmp_path / "node001" / "train.log"
    f.parent.mkdir()
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    acc = Accounting()
    items = list(iter_job(discover([str(tmp_path)], acc), IngestOptions(), acc, runs=True))
    assert sum(len(x) for x in items if type(x) is ShapeRun) > 1500
    by_run, by_line = _mined_both_ways(items)
    # a checked shape was met (a kept token Drain routes by: ``group0/...`` first), and one whose kept tokens all
    # sit where the cluster has wildcards (``lr-DecoupledAdamW/group0:``), which a run answers from the cache
    assert any(by_run.needs_tokens(k) for k in by_run._by_key)
    assert any(by_run.kept_getter(k) is not None and not by_run.needs_tokens(k) for k in by_run._by_key)


def test_kernel_runs_of_folded_shapes_with_kept_tokens_mine_as_line_by_line(tmp_path: Path) -> None:
    """Kernel lines of folded shapes whose messages keep digits (``CPU7:``, ``mlx5_cmd_out_err:801:``) with new
    hex ids, lines of kept tokens only, and Lustre lines whose kept node changes: a run answers a message from the id ``add`` gave one of
    the same key and kept tokens, and gives the ids, sizes, hits and state of ``add`` line by line, also while
    Drain still changes templates (the events' words change now and then)."""

    rnd = random.Random(29)
    t = 1_764_388_862
    lines = []
    for k in range(6000):
        t += rnd.randrange(2)
        head = f"Nov 29 04:{(t // 60) % 60:02d}:{t % 60:02d} node07 kernel: [{k * 1.5 + 100:12.6f}] "
        r = rnd.random()
        if r < 0.3:
            word = "throttled" if rnd.random() < 0.97 else rnd.choice(["normal", "again"])
            msg = f"CPU{rnd.randrange(12)}: Core temperature above threshold, cpu clock {word} (total events = {k})"
        elif r < 0.45:
            msg = (f"mlx5_core 0000:{rnd.choice(['0d', 'b3', '18'])}:00.0: mlx5_cmd_out_err:{rnd.choice([801, 813])}: "
                   f"ACCESS_REG(0x805) op_mod(0x1) failed, status bad parameter(0x3), syndrome "
                   f"(0x{rnd.getrandbits(24):06x}), err(-22)")
        elif r < 0.55:
            msg = f"nvidia-peermem nv_get_p2p_free_callback:{rnd.randrange(127, 134)} free callback for " \
                  f"0x{rnd.getrandbits(48):012x}"
        elif r < 0.85:  # every token kept: which cluster depends on them, and Drain keeps changing
            words = [f"{w}{rnd.randrange(3)}" for w in ("eth", "sd", "p", "q")]
            if rnd.random() < 0.3:
                words[rnd.randrange(4)] = rnd.choice(["up", "down"])
            msg = " ".join(words)
        elif r < 0.92:
            msg = (f"LustreError: 11-0: scratch-OST{rnd.getrandbits(12):04x}-osc-ffff{rnd.getrandbits(32):08x}: "
                   f"operation ost_connect to node 10.0.{rnd.randrange(256)}.{rnd.randrange(256)}@o2ib failed")
        else:
            msg = (f"python[{rnd.randrange(10**6)}]: segfault at {rnd.getrandbits(44):x} ip "
                   f"{rnd.getrandbits(47):016x} error 4 in libc.so.6[{rnd.getrandbits(40):x}+{rnd.getrandbits(20):x}]")
        lines.append(head + msg)
    f = tmp_path / "node007" / "kern.log"
    f.parent.mkdir()
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    acc = Accounting()
    items = list(iter_job(discover([str(tmp_path)], acc), IngestOptions(fold_shapes=True), acc, runs=True))
    assert sum(len(x) for x in items if type(x) is ShapeRun) > 2000
    by_run, by_line = _mined_both_ways(items)
    assert by_run.changes > 3  # the premise: templates changed between runs' lines


def _nccl_job(tmp_path: Path, rnd: random.Random, hosts: tuple[str, str] = ("dgx-a100-01", "dgx-a100-02")) -> list[str]:
    """NCCL INFO lines of ``hosts`` in one file (init lines with a new ``comm 0x...`` hex id or one of digits;
    with two hosts, ranks tied twice with different hosts), with trainer lines and a traceback between them."""
    lines = []
    t = 1_764_388_862.0
    for k in range(2500):
        host = hosts[(k // 700) % 2] if k % 3 else hosts[0]
        gpu = k % 8
        h = f"{host}:{5270 + gpu}:{5689 + gpu} [{gpu}]"
        r = rnd.random()
        if r < 0.04:  # an id of digits only: a shape that repeats, and goes in runs
            lines.append(f"{h} NCCL INFO ncclCommInitRank comm 0x{rnd.randrange(10**9):09d} rank {k % 16} "
                         f"nranks 16 cudaDev {gpu} - Init COMPLETE")
        elif r < 0.08:
            lines.append(f"{h} NCCL INFO ncclCommInitRank comm 0x{rnd.getrandbits(40):x} rank {k % 16} nranks 16 "
                         f"cudaDev {gpu} busId {0x18 + gpu * 0x11:x}000 commId 0x{rnd.getrandbits(60):x} - Init COMPLETE")
        elif r < 0.1:
            t += 1.5
            lines.append(f"{_iso(t)} INFO iteration {k:6d} | loss {rnd.uniform(1, 9):.4f}")
        elif r < 0.102:
            lines += ["Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
                      "RuntimeError: NCCL error"]
        else:
            lines.append(f"{h} NCCL INFO Channel {k % 32:02d}/0 : {k % 16}[{gpu}] -> {(k + 1) % 16}[{(gpu + 1) % 8}]"
                         " via P2P/IPC/read")
    f = tmp_path / "node001" / "nccl.log"
    f.parent.mkdir()
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [str(f)]


def test_nccl_lines_of_one_host_go_in_runs(tmp_path: Path) -> None:
    """NCCL INFO lines (``host:pid:tid [dev]``, no time) go in runs where the path names the node, their host and
    GPU read once per distinct header, an init line of a new ``comm 0x...`` id taken into the run from its header's
    plan: the same records as line by line."""
    paths = _nccl_job(tmp_path, random.Random(7), hosts=("dgx-a100-01", "dgx-a100-01"))
    assert same_three_ways(paths) > 2000
    assert _run_share(paths) > 0.8


def test_nccl_lines_read_the_same_in_runs(tmp_path: Path) -> None:
    """A file whose NCCL lines name two hosts is mixed whatever folder it sits in (its path names no node, so it
    is read line by line); its ranks are tied to their hosts in line order: the same records, rank ties, spool
    and scan with runs asked for as without."""
    paths = _nccl_job(tmp_path, random.Random(7))
    assert same_three_ways(paths) > 2000
    assert _run_share(paths) == 0.0
    ties = []
    for runs in (True, False):
        acc = Accounting()
        options = IngestOptions(line_runs=runs)
        for _ in iter_job(discover(paths, acc), options, acc, runs=runs):
            pass
        ties.append(([options.rank_map.node_of(r) for r in range(16)], options.rank_map.conflicts))
    assert ties[0] == ties[1]
    assert ties[0][1] > 0 and None not in ties[0][0]
    assert_spooled_and_scanned_alike(paths, tmp_path)


def test_a_line_with_a_header_after_an_open_record_reads_from_its_plan(tmp_path: Path) -> None:
    """A line that may open a multi-line record (``NVRM:``, an error, a traceback) is queued (from its header's
    plan where it has one, else line by line); the line
    after it is read from its plan when its header (no stream prefix, a timestamp) says it continues nothing,
    and ends the record there, as the per-line path does. Lines without a header continue it, and an NCCL line
    leaves it open: those stay on the per-line path. Records are those of the per-line path."""
    rnd = random.Random(3)
    lines = []
    t = 1_733_011_200.0
    for i in range(3000):
        t += rnd.choice((0.4, 2.0))
        stamp = datetime.fromtimestamp(t, tz=UTC)
        head = f"{stamp:%b} {stamp.day:2d} {stamp:%H:%M:%S} node07 kernel: [{1000 + i * 0.5:12.6f}] "
        k = i % 7
        lines.append(head + (f"NVRM: Xid (PCI:0000:{i % 200:02x}:00): 79, pid={i}, GPU has fallen off the bus."
                             if k == 0 else
                             f"mlx5_core 0000:0c:00.0: port {i % 2} link up" if k in (1, 4) else
                             f"LustreError: 11-0: scratch-OST{i % 99:04x}: operation failed: rc = -{i % 9}" if k == 2
                             else f"CPU{i % 96}: Core temperature above threshold (total events = {i})"))
        if k == 3 and i % 2:
            lines.append(f"    continued text of event {i}")  # no header: continues the open record
        if k == 5:
            lines.append(f"{_iso(t)} ERROR trainer crashed at step {i}")
            lines.append('Traceback (most recent call last):')
            lines.append(f"dgx-a100-01:{5270 + i % 8}:{5689 + i % 8} [{i % 8}] NCCL INFO comm 0x{i:x} rank 0")
            lines.append('  File "train.py", line 3, in <module>')
            lines.append("RuntimeError: CUDA error")
    f = tmp_path / "node007" / "kern.log"
    f.parent.mkdir()
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert same_three_ways([str(f)]) > 3000
    records = list(iter_records([str(f)], IngestOptions(), Accounting()))
    openers = {r.end_line + 1 for r in records if r.message.startswith(("NVRM:", "LustreError"))}
    after = [r for r in records if r.line in openers]
    assert len(after) > 800
    assert sum(r.shape is not None for r in after) > 0.8 * len(after)  # read from a plan, not line by line


def test_a_line_that_opens_a_record_is_queued_from_its_header_plan(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernel and storage lines whose message opens a record (``NVRM:``, ``LustreError``, an ``[E]`` marker, an
    error word) with a new id on each line are queued from their header's plan, not by ``_line``; the records
    are those of the per-line path, continuation lines and NCCL lines between them included."""
    from l4lite.ingest import reader

    rnd = random.Random(5)
    lines = []
    t = 1_733_011_200.0
    up = 1000.0
    for i in range(4000):
        t += rnd.choice((0.4, 2.0))
        up += rnd.choice((0.3, 1.0))
        stamp = datetime.fromtimestamp(t, tz=UTC)
        head = f"{stamp:%b} {stamp.day:2d} {stamp:%H:%M:%S} node07 "
        k = i % 6
        ident = f"{rnd.getrandbits(rnd.choice((24, 32, 44))):x}"
        msg = (f"NVRM: GPU at PCI:0000:{i % 200:02x}:00: GPU-{ident}" if k == 0 else
               f"LustreError: 11-0: scratch-OST{i % 99:04x}-osc-ffff{ident}: operation failed: rc = -{i % 9}"
               if k == 1 else f"mlx5_core 0000:0c:00.0: port {i % 2} link up, id {ident}" if k == 2 else
               f"free callback for 0x{ident} failed with error {i % 7}" if k == 3 else
               f"CPU{i % 96}: Core temperature above threshold (total events = {i})")
        if k == 4 and i % 4 == 0:
            lines.append(f"{head}mmfs: [E] Unable to access file system gpfs{i % 3} ({ident})")
        else:
            lines.append(f"{head}kernel: [{up:12.6f}] {msg}" if i % 5 else f"[{up:12.6f}] {msg}")
        if k == 0 and i % 3 == 0:
            lines.append(f"    continued text of event {i}")
        if i % 97 == 0:
            lines.append(f"dgx-a100-01:{5270 + i % 8}:{5689 + i % 8} [{i % 8}] NCCL INFO comm 0x{ident} rank 0")
    f = tmp_path / "node007" / "kern.log"
    f.parent.mkdir()
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    calls = [0]
    line = reader._FileReader._line

    def counted(self: Any, lineno: int, s: str) -> Any:
        calls[0] += 1
        return line(self, lineno, s)

    monkeypatch.setattr(reader._FileReader, "_line", counted)
    assert same_three_ways([str(f)]) > 4000
    calls[0] = 0
    records = list(iter_records([str(f)], IngestOptions(), Accounting()))
    openers = sum(r.message.startswith(("NVRM:", "LustreError", "[E]")) or "failed with error" in r.message
                  for r in records)
    assert openers > 1500
    # by line: the continuation and NCCL lines, and the first line of each header's shape
    assert calls[0] < sum(x.startswith("    ") or "NCCL" in x for x in lines) + 20


@pytest.mark.parametrize("root", ["real_jobs", "suite"])
def test_fixture_jobs_spool_as_the_per_line_reader_spools_them(tmp_path: Path, root: str) -> None:
    """Every job of ``fixtures/real_jobs`` (real runs) and ``fixtures/suite`` (simulated faults) spools the same
    rows and templates with runs, line plans and header plans as with the per-line reader alone."""
    jobs = sorted(p for p in (_REAL / root).iterdir() if p.is_dir())
    assert len(jobs) >= 20
    for k, job in enumerate(jobs):
        tables = []
        for way, (runs, options) in enumerate(((True, IngestOptions()), (False, IngestOptions(line_shapes=False)),
                                               (True, IngestOptions(fold_shapes=True)))):
            acc = Accounting()
            miner = TemplateMiner()
            path = tmp_path / f"{k}-{way}.arrows"
            write_spool(iter_job(discover([str(job)], acc), options, acc, runs=runs), miner, path)
            with ipc.open_stream(path) as reader:
                tables.append((reader.read_all(), miner.finalize(), acc.to_dict()))
        (a, templates_a, acc_a), (b, templates_b, acc_b), (c, templates_c, acc_c) = tables
        assert a.equals(b), job.name
        assert (templates_a, acc_a) == (templates_b, acc_b), job.name
        assert c.equals(b), job.name
        assert (templates_c, acc_c) == (templates_b, acc_b), job.name


def _spot_lines(rnd: random.Random, form: str) -> list[str]:
    """A log whose times sit after a logger's tag or in a JSON record's field (``ingest.timespots``), crossing
    minutes, with lines that end a run: an impossible date, a wrong clock, a time zone, a record without the
    field, a traceback."""
    out = []
    t = 0.0
    for i in range(3000):
        t += rnd.choice((0.4, 1.3, 7.9, 61.0))
        stamp = _iso(t)
        iso_t = stamp.replace(" ", "T").replace(",", ".")
        r = rnd.random()
        if form == "titan":
            head = f"[rank{rnd.choice((0, 3))}]:" if i % 5 else ""
            if r < 0.9:
                out.append(f"{head}[titan] {stamp} - root - INFO - step: {i:2d}  loss: {rnd.uniform(0, 12):8.5f}")
            elif r < 0.92:
                out.append(f"{head}[titan] 2024-02-{rnd.randrange(30, 32)} 10:00:00,000 - root - INFO - step: 1  "
                           "loss:  1.00000")
            elif r < 0.94:
                out.append(f"{head}[titan] 2099-01-01 00:00:00,000 - root - INFO - step: 1  loss:  1.00000")
            elif r < 0.96:
                out.append(f"{head}[titan] {stamp} - root - ERROR - Traceback (most recent call last):")
                out.append('  File "train.py", line 12, in <module>')
            else:
                out.append(f"{head}W1203 04:0{rnd.randrange(10)}:02.345000 1234 run.py:793] *****")
        else:
            step = f'"step": {i}, "loss": {rnd.uniform(0, 12):.4f}'
            if r < 0.55:
                out.append({"time": f'{{"time": "{iso_t}Z", "level": "INFO", {step}}}',
                            "timestamp": f'{{"level":"INFO","timestamp":"{iso_t}",{step}}}',
                            "ts": f'{{"msg": "step", "ts": {1735686000 + int(t)}.{i % 1000:03d}, {step}}}'}[form])
            elif r < 0.7 and form == "ts":
                out.append(f'{{"msg": "step", "ts": {1735686000 + int(t)}{i % 1000:03d}, {step}}}')
            elif r < 0.8:
                out.append(f'{{"{form}": "{iso_t}+02:00", {step}}}')
            elif r < 0.85:
                out.append(f'{{"{form}": "2024-02-{rnd.randrange(30, 32)}T10:00:00.000Z", {step}}}')
            elif r < 0.88:
                out.append(f'{{"{form}": "2099-01-01T00:00:{rnd.randrange(10, 60)}.000Z", {step}}}')
            elif r < 0.95:
                out.append(f'{{"event": "no time here", {step}}}')
            else:
                out.append(f"{{'loss': {rnd.uniform(0, 12):.4f}, 'epoch': {i}}}")  # a Python dict
    return out


@pytest.mark.parametrize("form", ["titan", "json"])
def test_times_after_a_tag_or_in_a_json_field_read_the_same_in_runs(tmp_path: Path, form: str) -> None:
    """torchtitan's ``[titan] <time>`` and JSON records' time fields (ISO in UTC, naive or zoned, epoch seconds and
    milliseconds) are read as times by every reader alike, runs take most lines, and the spools agree."""
    forms = ["titan"] if form == "titan" else ["time", "timestamp", "ts"]
    for k, name in enumerate(forms):
        f = tmp_path / "job" / "node003" / ("train.log" if form == "titan" else f"events-{name}.jsonl")
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("\n".join(_spot_lines(random.Random(5 + k), name)) + "\n", encoding="utf-8")
    paths = [str(tmp_path / "job")]  # the node from the folder: a run needs it
    assert same_three_ways(paths) > 2500 * len(forms)
    assert _run_share(paths) > 0.3
    records, _ = _read(paths)
    stamped = [r for r in records if ("[titan] 2" in r[10] or r[10].startswith('{"')) and "2099" not in r[10]
               and "-02-3" not in r[10] and "no time" not in r[10]]
    assert len(stamped) > 2000 * len(forms) and all(r[7] is not None for r in stamped)
    if form == "json":  # epoch seconds and milliseconds are one clock
        epochs = [r for r in records if '"ts": 1' in r[10]]
        assert len(epochs) > 1000 and all(abs(r[7] - int(r[10].split('"ts": ')[1][:10])) < 1.0 for r in epochs)
        zoned = [r for r in records if "+02:00" in r[10]]
        # whole seconds keep their file order within the second (``ingest.seconds``)
        assert zoned and all(0 <= r[7] - datetime.fromisoformat(r[10].split('"')[3]).timestamp() < 1.0
                             for r in zoned)
    else:
        assert all(r[9].startswith(("step:", "Traceback")) for r in stamped)  # the tag and time are the header
    a, state_a = spool(paths, True, tmp_path / "runs.arrows")
    b, state_b = spool(paths, False, tmp_path / "lines.arrows")
    assert a.equals(b)
    assert state_a == state_b


def test_a_file_whose_first_lines_show_no_spot_reads_no_time_there(tmp_path: Path) -> None:
    """The spot is the file's, learnt from its first lines: a tag that first comes late gives no time, in every
    reader, and a file of the same lines from the start does (files that read alike share shapes, but not across
    spots)."""
    titan = [f"[titan] {_iso(i * 1.3)} - root - INFO - step: {i:2d}  loss: 1.00000" for i in range(3000)]
    plain = [f"step {i} loss 1.0" for i in 10 * list(range(30))]
    (tmp_path / "node001").mkdir()
    (tmp_path / "node002").mkdir()
    (tmp_path / "node001" / "train.log").write_text("\n".join(titan) + "\n", encoding="utf-8")
    (tmp_path / "node002" / "train.log").write_text("\n".join(plain + titan) + "\n", encoding="utf-8")
    assert same_three_ways([str(tmp_path)]) == 6300
    records, _ = _read([str(tmp_path)])
    times = {f: {r[7] is None for r in records if r[0] == f} for f in ("node001/train.log", "node002/train.log")}
    assert times == {"node001/train.log": {False}, "node002/train.log": {True}}


def test_runs_of_a_file_with_a_learnt_header_mine_per_shape_as_line_by_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A container's output behind docker compose's ``name  | `` prefix, with a logger's time, name and level
    that ingest does not split off: the file learns a header cut (``mining.headers``), and its runs are mined
    without it per shape, with the ids, sizes, hits and state of ``add`` of each cut message, and with far fewer
    ``add`` calls than lines."""
    from l4lite.mining.headers import cut_by_file

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import format_zoo

    lines = list(itertools.islice(format_zoo.gen_compose(0, random.Random(5)), 3000))
    f = tmp_path / "node001" / "train.log"
    f.parent.mkdir()
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    acc = Accounting()
    pairs = list(cut_by_file(iter_job(discover([str(tmp_path)], acc), IngestOptions(), acc, runs=True)))
    assert {cut.cut for _, cut in pairs} == {6}
    assert sum(len(x) for x, _ in pairs if type(x) is ShapeRun) > 2500
    calls = []
    add = TemplateMiner.add
    monkeypatch.setattr(TemplateMiner, "add", lambda self, *a: calls.append(1) or add(self, *a))
    _mined_both_ways([x for x, _ in pairs], pairs[0][1].strip)
    assert len(calls) < len(lines) + 300  # every line once by the line miner, a few by the run miner


def _mined_both_ways(items: list, strip: Callable[[str], str] | None = None
                     ) -> tuple[TemplateMiner, TemplateMiner]:
    """Mine ``items`` with runs through ``mine_run`` and every record through ``add`` (of each message cut by
    ``strip``); both must agree on ids, hits and state. Returns (run miner, line miner)."""
    from l4lite.mining.runmine import mine_run

    def cut(message: str) -> str:
        return strip(message) if strip is not None else message

    by_run, by_line = TemplateMiner(), TemplateMiner()
    got: list[int] = []
    want: list[int] = []
    for item in items:
        if type(item) is ShapeRun:
            got += mine_run(item, by_run, strip)
            want += [by_line.add(cut(r.message)) for r in item.records()]
        else:
            got.append(by_run.add(cut(item.message)))
            want.append(by_line.add(cut(item.message)))
    assert got == want
    assert by_run.hits == by_line.hits
    assert by_run.to_state() == by_line.to_state()
    return by_run, by_line
