"""L4's cross-job, spatial and temporal template filtering."""

from __future__ import annotations

from scan_helpers import DigitMiner, rec

from l4lite.detect.filters import FilterDetector
from l4lite.records import Record
from l4lite.scan.scanner import JobScan, scan_records

NODES = [f"n{k}" for k in range(8)]


def _job(extra: list[Record] | None = None) -> JobScan:
    records = []
    line = 0
    for i in range(100):
        for node in NODES:
            line += 1
            records.append(rec(f"iteration {i}/100 | lm loss: 2.0 |", node=node, time=1000.0 + 10 * i, line=line))
            if i == 0:
                records.append(rec("WARNING deprecated flag ignored", node=node, time=1000.0, line=line,
                                   level="warning"))
    records.append(rec("kernel: ERROR something odd early", node="n3", time=1005.0, line=9000, level="error"))
    return scan_records(records + (extra or []), DigitMiner())


def _templates(findings) -> set[str]:
    return {f.data["template"] for f in findings}


def test_spatial_and_temporal_filters_keep_the_new_local_error() -> None:
    scan = _job([rec("mlx5_core 0000:3b:00.0: port 1 link down", node="n5", time=1985.0, line=9999,
                     level="error", source="kernel")])
    findings = FilterDetector().detect(scan)
    assert len(findings) == 1 and "link down" in findings[0].data["template"]
    f = findings[0]
    assert f.node == "n5" and f.role == "anomaly" and f.records[0].line == 9999


def test_cross_job_filter_drops_what_healthy_jobs_print() -> None:
    late = rec("NCCL WARN late warning seen in healthy runs too", node="n1", time=1990.0, line=9998, level="warning")
    scan = _job([late])
    assert _templates(FilterDetector().detect(scan)) == {"NCCL WARN late warning seen in healthy runs too"}
    baseline = scan_records([rec("NCCL WARN late warning seen in healthy runs too", time=5.0)], DigitMiner())
    assert FilterDetector().fit(baseline).detect(scan) == []


def test_rate_far_above_the_baseline_survives_the_cross_job_filter() -> None:
    noisy = [rec("NCCL WARN retry", node="n1", time=1980.0 + k * 0.01, line=9000 + k, level="warning")
             for k in range(400)]
    scan = _job(noisy)
    rates = {t: 1e-6 for t, s in scan.templates.items() if "retry" in s.template}
    assert _templates(FilterDetector(baseline_rates=rates).detect(scan)) == {"NCCL WARN retry"}


def test_templates_on_many_nodes_are_dropped() -> None:
    everywhere = [rec("ERROR watchdog timeout", node=n, time=1995.0, line=9900 + k, level="error")
                  for k, n in enumerate(NODES)]
    assert FilterDetector().detect(_job(everywhere)) == []


def test_a_short_job_start_up_warning_is_not_near_a_failure_in_training() -> None:
    # Two nodes, a minute of training: shorter than the horizon, so only the start of training tells the launcher's
    # banner (printed before the first step) from what the failing node printed after it.
    records = [rec("launcher banner: setting thread count to 1", node=n, time=100.0, line=1, level="warning")
               for n in ("a", "b")]
    records += [rec(f"step {i} | loss 2.0", node="a", time=110.0 + i, line=10 + i) for i in range(40)]
    records.append(rec("ERROR receive timed out on the store socket", node="b", time=152.0, line=90, level="error"))
    found = _templates(FilterDetector().detect(scan_records(records, DigitMiner())))
    assert "ERROR receive timed out on the store socket" in found
    assert not any("banner" in t for t in found)


def test_start_up_lines_stay_when_training_never_began() -> None:
    records = [rec("ERROR rendezvous store unreachable", node="b", time=100.0, line=1, level="error"),
               rec("waiting for peers", node="a", time=101.0, line=1, level="info")]
    found = _templates(FilterDetector().detect(scan_records(records, DigitMiner())))
    assert "ERROR rendezvous store unreachable" in found


def test_a_header_with_an_empty_message_is_no_candidate() -> None:
    blank = "W1203 23:38:33.983000 7497 torch/distributed/run.py:874]"
    records = [rec(blank, node="a", time=150.0, line=1, level="warning"),
               rec("ERROR receive timed out on the store socket", node="b", time=152.0, line=90, level="error")]
    found = _templates(FilterDetector().detect(scan_records(records, DigitMiner())))
    assert "ERROR receive timed out on the store socket" in found
    assert len(found) == 1


def test_a_banner_frame_is_no_candidate() -> None:
    records = [rec("*" * 41, node="a", time=150.0, line=2, level="warning"),
               rec("ERROR receive timed out on the store socket", node="b", time=152.0, line=90, level="error")]
    assert _templates(FilterDetector().detect(scan_records(records, DigitMiner()))) == {
        "ERROR receive timed out on the store socket"}


def test_a_settings_listing_near_the_failure_is_no_anomaly() -> None:
    """Rank 0 alone prints the config: its lines are new and on one node, and say how the job was set up."""
    dump = [rec("[config.py:678:print]   bfloat16_config .............. enabled=False check_grad_overflow=False",
                node="n5", time=1985.0, line=9990, level="info"),
            rec('    "wall_clock_breakdown": false', node="n5", time=1985.0, line=9991),
            rec("  loss_scale ...................................... None", node="n5", time=1985.0, line=9992)]
    assert _templates(FilterDetector().detect(_job(dump))) == set()
    odd = rec("ERROR overflow in loss scale detected", node="n5", time=1985.0, line=9993, level="error")
    assert _templates(FilterDetector().detect(_job(dump + [odd]))) == {"ERROR overflow in loss scale detected"}


def test_what_a_settings_listing_line_is() -> None:
    from l4lite.rules.components import is_listing
    assert is_listing('[default0]:    "fp16_enabled": true,') and is_listing('  "stage": <NUM>')
    for event in ('{"loss": NaN, "step": 3}', "{'loss': nan, 'grad_norm': inf}", '    "fp16": {',
                  "Gradient overflow. Skipping step, reducing loss scale to 1024",
                  "RuntimeError: CUDA error: an illegal memory access was encountered ...."):
        assert not is_listing(event), event
