"""The collector's threshold is raised during a pass and restored after, also when passes overlap in threads."""

from __future__ import annotations

import gc
import threading

from l4lite.scan.gctune import fewer_collections


def test_threshold_raised_and_restored() -> None:
    before = gc.get_threshold()
    with fewer_collections(123_456):
        assert gc.get_threshold()[0] == max(123_456, before[0])
    assert gc.get_threshold() == before


def test_restored_after_an_error() -> None:
    before = gc.get_threshold()
    try:
        with fewer_collections():
            raise ValueError("boom")
    except ValueError:
        pass
    assert gc.get_threshold() == before


def test_overlapping_passes_in_threads_restore_the_first_setting() -> None:
    before = gc.get_threshold()
    inside = threading.Barrier(2)
    first_done = threading.Event()
    seen: list[int] = []

    def first() -> None:
        with fewer_collections(300_000):
            inside.wait()
        first_done.set()

    def second() -> None:
        with fewer_collections(300_000):
            inside.wait()
            first_done.wait(5)
            seen.append(gc.get_threshold()[0])  # the first pass ended: still raised for this one

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == [max(300_000, before[0])]
    assert gc.get_threshold() == before
