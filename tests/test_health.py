"""Training-health findings: numerical faults, slowdowns, stragglers and hangs."""

from __future__ import annotations

import random
from collections import Counter
from statistics import median

from scan_helpers import DigitMiner, rec

from l4lite.detect.health import HealthDetector, counted_median, maybe_non_finite, non_finite_of
from l4lite.records import Record
from l4lite.scan.jobscan import MetricPoint
from l4lite.scan.scanner import JobScan, scan_records


def megatron(i: int, loss: float | str, *, ms: float = 1000.0, grad: float | str = 1.0, nan: int = 0,
             scale: float = 65536.0) -> str:
    return (f" iteration {i:8d}/ 100000 | elapsed time per iteration (ms): {ms:.1f} | lm loss: {loss} |"
            f" loss scale: {scale} | grad norm: {grad} | number of skipped iterations: 0 |"
            f" number of nan iterations: {nan} |")


def job(lines_by_node: dict[str, list[tuple[float, str]]]) -> JobScan:
    records: list[Record] = []
    for node, lines in lines_by_node.items():
        for n, (t, msg) in enumerate(lines, start=1):
            records.append(rec(msg, node=node, time=t, file=f"{node}.log", line=n))
    return scan_records(records, DigitMiner())


def signals(scan: JobScan) -> dict[str, object]:
    return {f.data["signal"]: f for f in HealthDetector().detect(scan)}


def healthy_lines(n: int = 60, start: int = 1, seed: int = 0, ms: float = 1000.0) -> list[tuple[float, str]]:
    rnd = random.Random(seed)
    return [(100.0 + i, megatron(start + i, f"{3.0 - i * 0.005 + rnd.uniform(-0.02, 0.02):.4f}",
                                 ms=ms * rnd.uniform(0.98, 1.02), grad=f"{rnd.uniform(0.8, 1.2):.3f}"))
            for i in range(n)]


def test_healthy_job_has_no_findings() -> None:
    scan = job({f"n{k}": healthy_lines(seed=k) for k in range(4)})
    assert HealthDetector().detect(scan) == []


def test_nan_loss_is_a_global_numerical_root() -> None:
    lines = healthy_lines(30)
    lines += [(131.0, megatron(31, "nan", grad="nan")), (132.0, megatron(32, "nan", grad="nan"))]
    found = signals(job({"n1": lines}))
    nan = found["nan"]
    assert nan.role == "root" and nan.category == "numerical" and nan.data["scope"] == "global"  # type: ignore[attr-defined]
    assert nan.data["iteration"] == 31 and nan.records[0].line == 31  # type: ignore[attr-defined]


def test_the_first_node_to_go_non_finite_is_named_and_every_point_counts() -> None:
    """Of two nodes that went NaN, the one that did first in time is named (here by the trainer's NaN counter),
    and the count is of every non-finite point."""
    n1 = healthy_lines(30) + [(140.0, megatron(31, "nan", grad="nan")), (141.0, megatron(32, "nan"))]
    n2 = healthy_lines(30, seed=1) + [(131.0, megatron(31, "2.9", nan=1)), (133.0, megatron(32, "inf"))]
    nan = signals(job({"n1": n1, "n2": n2}))["nan"]
    assert nan.node == "n2" and nan.time == 131.0 and nan.data["iteration"] == 31  # type: ignore[attr-defined]
    assert nan.count == 4  # type: ignore[attr-defined]
    assert nan.explain.startswith("the trainer counted NaN iterations at iteration 31")  # type: ignore[attr-defined]


def test_sustained_loss_spike_with_grad_explosion_first() -> None:
    lines = healthy_lines(40)
    lines += [(141.0, megatron(41, "2.80", grad="50.0"))]  # the grad norm explodes first
    lines += [(142.0 + k, megatron(42 + k, f"{7.0 + 0.1 * k:.2f}", grad="30.0")) for k in range(6)]
    found = signals(job({"n1": lines}))
    spike = found["loss_spike"]
    assert spike.role == "root" and spike.data["sustained"] and spike.data["iteration"] == 42  # type: ignore[attr-defined]
    assert spike.data["grad_norm_grew_first"] is True  # type: ignore[attr-defined]
    assert found["grad_explosion"].data["iteration"] == 41  # type: ignore[attr-defined]


def test_transient_loss_spike_is_only_an_anomaly() -> None:
    lines = healthy_lines(40)
    lines.insert(20, (120.5, megatron(1000, "9.0")))
    lines = [(t, m) for t, m in lines]
    lines += [(200.0 + k, megatron(2000 + k, "2.8")) for k in range(20)]
    found = signals(job({"n1": sorted(lines)}))
    assert found["loss_spike"].role == "anomaly"  # type: ignore[attr-defined]


def test_loss_scale_collapse() -> None:
    lines = healthy_lines(20)
    lines += [(121.0 + k, megatron(21 + k, "3.0", scale=2.0 ** (10 - 3 * k))) for k in range(5)]
    found = signals(job({"n1": lines}))
    assert found["loss_scale_collapse"].role == "root"  # type: ignore[attr-defined]


def test_straggler_node_is_blamed() -> None:
    nodes = {f"n{k}": healthy_lines(seed=k) for k in range(6)}
    nodes["n4"] = healthy_lines(seed=4, ms=1500.0)
    found = signals(job(nodes))
    assert found["straggler"].node == "n4" and found["straggler"].role == "root"  # type: ignore[attr-defined]


def test_fail_slow_onset_on_one_node() -> None:
    lines = healthy_lines(40) + [(140.0 + k, megatron(41 + k, "2.8", ms=1300.0)) for k in range(15)]
    found = signals(job({"n1": lines}))
    slow = found["slowdown"]
    assert slow.node == "n1" and slow.data["iteration"] == 45 and slow.data["ratio"] > 1.25  # type: ignore[attr-defined]


def test_hang_while_logs_stay_alive_names_who_stopped_first() -> None:
    nodes = {f"n{k}": healthy_lines(60, seed=k) for k in range(4)}
    nodes["n2"] = healthy_lines(50, seed=2)  # n2 stopped 10 iterations earlier
    for k in range(4):  # everyone keeps printing heartbeats for an hour
        nodes[f"n{k}"] = nodes[f"n{k}"] + [(200.0 + 60 * j, "heartbeat: rank alive") for j in range(60)]
    found = signals(job(nodes))
    hang = found["hang"]
    assert hang.node == "n2" and hang.data["behind"] == ["n2"]  # type: ignore[attr-defined]
    assert hang.data["last_iterations"]["n2"] == 50 and hang.data["gap_seconds"] > 3000  # type: ignore[attr-defined]


def test_no_hang_when_the_job_ends_with_its_progress() -> None:
    lines = healthy_lines(60) + [(161.0, "training finished, exiting")]
    assert "hang" not in signals(job({"n1": lines}))


def test_untimed_progress_uses_the_next_timed_line() -> None:
    lines: list[tuple[float | None, str]] = [(None, megatron(i, "2.0", ms=111000.0)) for i in range(1, 4)]
    lines += [(1000.0 + 3600 * j, "PULSE: job is running") for j in range(3)]
    records = [rec(m, node="n1", time=t, line=n) for n, (t, m) in enumerate(lines, start=1)]
    scan = scan_records(records, DigitMiner())
    hang = signals(scan)["hang"]
    assert hang.data["gap_seconds"] == 7200.0  # type: ignore[attr-defined]


def test_validation_loss_rising_while_training_falls() -> None:
    lines = healthy_lines(60)
    for k, v in enumerate([2.5, 2.4, 2.45, 2.5, 2.6]):
        lines.append((100.0 + 10 * k + 0.5, f" validation loss at iteration {10 * k + 1} | lm loss value: {v} |"))
    found = signals(job({"n1": sorted(lines)}))
    rising = found["val_rising"]
    assert rising.role == "root" and rising.data["scope"] == "global"  # type: ignore[attr-defined]
    assert [r.line for r in rising.records] == [24, 35, 46]  # type: ignore[attr-defined]  # the first three rises
    assert rising.data["iteration"] == 21  # type: ignore[attr-defined]


def test_validation_loss_that_recovers_is_not_overfitting() -> None:
    lines = healthy_lines(60)
    for k, v in enumerate([2.5, 2.4, 2.45, 2.3, 2.2]):
        lines.append((100.0 + 10 * k + 0.5, f" validation loss at iteration {10 * k + 1} | lm loss value: {v} |"))
    assert "val_rising" not in signals(job({"n1": sorted(lines)}))


def test_loss_spike_without_grad_growth_says_so() -> None:
    lines = healthy_lines(40)
    lines += [(142.0 + k, megatron(41 + k, f"{7.0 + 0.1 * k:.2f}", grad="1.0")) for k in range(6)]
    spike = signals(job({"n1": lines}))["loss_spike"]
    assert spike.data["grad_norm_grew_first"] is False  # type: ignore[attr-defined]


def test_gpu_telemetry_slowdown_is_a_node_root() -> None:
    header = ("timestamp, index, pci.bus_id, temperature.gpu, clocks.sm [MHz], clocks_event_reasons.hw_slowdown, "
              "clocks_event_reasons.hw_thermal_slowdown")
    rows = [(100.0, header)]
    for k in range(4):
        act = "Active" if k >= 2 else "Not Active"
        for gpu in range(2):
            rows.append((100.0 + 30 * k, f"2024/10/29 07:1{k}:00.000, {gpu}, 00000000:0{gpu}:00.0, 80, 1000 MHz, "
                                         f"{act}, {act}"))
    scan = job({"n3": rows, "n1": [(100.0, header)]})
    found = signals(scan)["gpu_slowdown"]
    assert found.node == "n3" and found.role == "root" and found.category == "gpu_hardware"  # type: ignore[attr-defined]
    assert [r.line for r in found.records] == [6, 7]  # type: ignore[attr-defined]  # the first two Active readings


def test_progress_lines_without_a_step_are_no_baseline_for_lines_with_one() -> None:
    """A callback prints its own step-less loss dicts (a fine-tuning loss near 0.1) on the node whose trainer
    prints numbered iterations (a pre-training loss near 3): two series, so the jump between them is no spike."""
    dicts = [(90.0 + k * 0.1, f"{{'loss': {0.1 + 0.01 * (k % 3):.4f}, 'grad_norm': 0.7, 'epoch': {k / 10:.1f}}}")
             for k in range(30)]
    scan = job({"n1": dicts + healthy_lines(20)})
    assert "loss_spike" not in signals(scan)
    spiked = healthy_lines(20) + [(121.0 + k, megatron(21 + k, "9.5000")) for k in range(10)]
    assert signals(job({"n1": dicts + spiked}))["loss_spike"].data["iteration"] == 21  # type: ignore[attr-defined]


def test_counted_median_is_the_median_of_the_expanded_values() -> None:
    """The loss-spike scan counts logging steps as it goes; their median must be the plain median."""
    rng = random.Random(7)
    for _ in range(500):
        values = [rng.choice([1, 2, 5, 10, 50, 100]) for _ in range(rng.randint(1, 40))]
        assert counted_median(Counter(values)) == median(values)


def test_a_nan_gradient_norm_the_rank_trains_past_is_a_skipped_step() -> None:
    # mmocr with AMP: "grad_norm: nan" at one step, finite numbers at the next with the loss falling
    lines = healthy_lines(30)
    lines[10] = (110.0, megatron(11, "2.9400", grad="nan"))
    assert "nan" not in signals(job({"n1": lines}))
    # the same NaN as the last word of the rank, or with the loss NaN too, is a divergence
    assert "nan" in signals(job({"n1": healthy_lines(30) + [(131.0, megatron(31, "2.8500", grad="nan"))]}))
    lines[10] = (110.0, megatron(11, "nan", grad="nan"))
    assert "nan" in signals(job({"n1": lines}))


def test_the_cheap_non_finite_test_lets_every_non_finite_point_through() -> None:
    """``_non_finite`` asks the exact test only of points the cheap sum test lets through: it must miss none
    (opposite infinities, an overflowing sum, a zero, a NaN counter) and stop the finite ones."""
    values = [None, 0.0, -0.0, 1.5, -2.0, 1e308, -1e308, float("nan"), float("inf"), float("-inf")]
    rng = random.Random(5)
    for loss in values:
        for grad in values:
            for nan_count in (None, 0, rng.randint(1, 9)):
                p = MetricPoint("n1", 0, None, 1, "f", 1, loss=loss, grad_norm=grad, nan_count=nan_count)
                if non_finite_of(p):
                    assert maybe_non_finite(p)
                elif abs((loss or 0.0) + (grad or 0.0)) < 1e308:
                    assert not maybe_non_finite(p)
