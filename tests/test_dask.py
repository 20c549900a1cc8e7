"""The Dask engine: a LocalCluster of two single-threaded worker processes gives the single-process verdict.

The cluster is started once for the module through ``--scheduler local:2`` semantics (``DaskEngine``), and
the CLI reaches the same cluster through its ``tcp://`` address, so both ways of naming a scheduler run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from test_engine import SUITE, signature, verdict  # noqa: E402

from l4lite.api import analyze, diagnose
from l4lite.cli.main import main  # noqa: E402
from l4lite.diagnose.incident import Incident  # noqa: E402
from l4lite.errors import L4Error  # noqa: E402
from l4lite.options import AnalyzeOptions
from l4lite.scale.engine import DaskEngine, scan_job_parallel  # noqa: E402
from l4lite.scale.shards import SHARD_ROUNDS  # noqa: E402
from l4lite.scan.job import scan_job  # noqa: E402

JOBS = ["002-xid79_fallen_off_bus", "008-device_oom", "007-slow_node"]


@pytest.fixture(scope="module")
def engine():
    eng = DaskEngine("local:2")  # LocalCluster(n_workers=2, processes=True, threads_per_worker=1)
    try:
        yield eng
    finally:
        eng.close()


def test_local_cluster_has_two_worker_processes(engine: DaskEngine) -> None:
    assert engine.workers == 2
    info = engine._client.scheduler_info()["workers"]  # noqa: SLF001
    assert all(w["nthreads"] == 1 for w in info.values())
    assert len({w["id"] for w in info.values()}) == 2


def test_local_workers_keep_the_sliding_mmap_threshold_and_run_no_profiler(engine: DaskEngine) -> None:
    import os

    import dask

    client = engine._client  # noqa: SLF001
    assert set(client.run(os.environ.get, "MALLOC_TRIM_THRESHOLD_").values()) == {None}
    assert set(client.run(os.environ.get, "OMP_NUM_THREADS").values()) == {"1"}  # Dask's other settings stay
    assert set(client.run(dask.config.get, "distributed.worker.profile.enabled").values()) == {False}
    assert dask.config.get("distributed.worker.profile.enabled") is True  # this process's settings are untouched
    assert "MALLOC_TRIM_THRESHOLD_" in dask.config.get("distributed.nanny.pre-spawn-environ")


def test_local_scheduler_sends_a_worker_its_next_shard_only_when_it_is_free(engine: DaskEngine) -> None:
    """Not two at once (Dask's default saturation of 1.1 rounds up to two tasks per single-threaded worker)."""
    import dask

    def saturation(dask_scheduler) -> float:  # noqa: ANN001 - Client.run_on_scheduler passes the scheduler
        return dask_scheduler.WORKER_SATURATION

    assert engine._client.run_on_scheduler(saturation) == 1.0  # noqa: SLF001
    assert dask.config.get("distributed.scheduler.worker-saturation") == 1.1  # this process's settings stay


@pytest.mark.parametrize("gather", [8, 0], ids=["merged-here", "merged-on-workers"])
@pytest.mark.parametrize("name", JOBS)
def test_dask_gives_the_single_process_verdict(engine: DaskEngine, name: str, gather: int,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Four shards' scans merged in this process, or in a tree on the workers (as for many shards)."""
    import l4lite.scale.engine

    monkeypatch.setattr(l4lite.scale.engine, "GATHER_SHARDS", gather)
    monkeypatch.setattr(l4lite.scale.engine, "ROUND_MIN_BYTES", 0)  # the small fixture jobs in every round
    options = AnalyzeOptions()
    job = str(SUITE / name)
    whole = scan_job([job], options)
    sharded = scan_job_parallel([job], options, engine=engine)
    assert sharded.info["shards"] == 2 * len(SHARD_ROUNDS)
    assert signature(sharded) == signature(whole)
    assert verdict(diagnose(sharded, options)) == verdict(diagnose(whole, options))


def test_dask_reads_a_merged_file_in_pieces(engine: DaskEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    """One merged srun file cut into pieces (planned here, read on the workers): the one-pass scan."""
    import l4lite.ingest.pieces as pieces
    import l4lite.scale.engine

    monkeypatch.setattr(pieces, "MIN_PIECE_BYTES", 4096)
    monkeypatch.setattr(l4lite.scale.engine, "ROUND_MIN_BYTES", 0)
    options = AnalyzeOptions()
    job = str(SUITE / "006-nccl_hang")  # the trainer output of every rank in one slurm-*.out
    whole = scan_job([job], options)
    sharded = scan_job_parallel([job], options, engine=engine)
    assert sharded.info["shards"] == 2 * len(SHARD_ROUNDS)
    assert signature(sharded) == signature(whole)


def test_cli_with_a_scheduler_address(engine: DaskEngine, tmp_path: Path) -> None:
    address = engine._client.scheduler.address  # noqa: SLF001
    assert address.startswith("tcp://")
    name = JOBS[0]
    out = tmp_path / "inc.json"
    code = main(["analyze", str(SUITE / name), "--scheduler", address, "--no-store", "--quiet", "--json", str(out)])
    inc = Incident.from_dict(json.loads(out.read_text()))
    single = analyze([str(SUITE / name)], AnalyzeOptions())
    assert code == 1 and verdict(inc) == verdict(single)
    assert engine._client.status == "running"  # noqa: SLF001 - the CLI closed only its own connection


def test_unreachable_scheduler_is_a_one_line_error() -> None:
    with pytest.raises(L4Error, match=r"^--scheduler tcp://127.0.0.1:9: cannot connect"):
        DaskEngine("tcp://127.0.0.1:9", timeout=2)
