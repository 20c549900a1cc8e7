"""Node x window count frames built from the scan's bucket counts."""

from __future__ import annotations

from frames_reference import count_frame, node_activity, node_frame, window_frame
from scan_helpers import DigitMiner, rec

from l4lite.detect.windows import auto_window
from l4lite.scan.scanner import scan_records


def _scan():
    records = []
    for i in range(120):  # two minutes of a heartbeat on two nodes, 1 line/s each
        for node in ("a", "b"):
            records.append(rec("heartbeat", node=node, time=1000.0 + i, line=i + 1, file=f"{node}.log"))
    records.append(rec("ERROR disk gone", node="b", time=1100.0, line=500, file="b.log"))
    records.append(rec("untimed", node="a", time=None, line=600, file="a.log"))
    return scan_records(records, DigitMiner(), bucket_seconds=5.0)


def test_count_frame_sums_buckets_into_windows() -> None:
    scan = _scan()
    frame = count_frame(scan, 60.0)
    assert list(frame.index.names) == ["node", "window"]
    hb = next(t for t, s in scan.templates.items() if s.template == "heartbeat")
    err = next(t for t, s in scan.templates.items() if "disk" in s.template)
    assert frame[hb].sum() == 240 and frame.loc[("b", 1080.0), err] == 1
    assert frame.loc[("a", 960.0), hb] == 20 and frame.loc[("a", 1020.0), hb] == 60
    assert int(frame.to_numpy().sum()) == 241  # the untimed record is left out


def test_window_frame_fills_empty_windows() -> None:
    scan = _scan()
    frame = window_frame(scan, 10.0)
    assert list(frame.index) == [1000.0 + 10 * k for k in range(12)]
    assert int(frame.to_numpy().sum()) == 241


def test_a_clock_years_off_does_not_fill_millions_of_windows() -> None:
    """One line stamped six years after the rest: the frame keeps the windows that have counts, no more."""
    records = [rec("heartbeat", node="a", time=1000.0 + i, line=i + 1) for i in range(60)]
    records.append(rec("heartbeat", node="b", time=1000.0 + 6 * 365 * 86400, line=1, file="b.log"))
    scan = scan_records(records, DigitMiner(), bucket_seconds=5.0)
    frame = window_frame(scan, 30.0)
    assert len(frame) == 4 and int(frame.to_numpy().sum()) == 61


def test_node_frame_and_activity() -> None:
    scan = _scan()
    nodes = node_frame(scan)
    assert list(nodes.index) == ["a", "b"] and int(nodes.loc["a"].sum()) == 121
    act = node_activity(scan, 30.0)
    assert act.shape == (2, 5) and int(act.loc["b"].sum()) == 121


def test_auto_window_is_a_multiple_of_the_bucket_and_bounded() -> None:
    scan = _scan()
    assert auto_window(scan, 7.0) == 5.0  # rounded to whole buckets
    assert auto_window(scan, 2.0) == 5.0
    assert auto_window(scan) == 15.0  # a two-minute job gets at least 8 windows
