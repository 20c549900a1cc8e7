"""A window's dmesg uptime digits read as integers (``ingest.clocks.uptime_parts``, one product per (dot, width)
pair) equal the per-digit passes the window read them with before, kept here as the reference: for uptimes of
many widths and dot places, lines without one, digits past the window's end and widths past what a window reads."""

from __future__ import annotations

import random

import numpy as np

from l4lite.ingest.blocks import POW10_INT
from l4lite.ingest.clocks import uptime_parts

_UP_WIDTH = 16


def _reference(buf: np.ndarray, start: np.ndarray, dot: np.ndarray, width: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    k = np.arange(_UP_WIDTH)
    up = buf[np.minimum(start[:, None] + k, len(buf) - 1)].astype(np.int64) - 48
    whole_exp = dot[:, None] - 1 - k
    frac_exp = width[:, None] - 1 - k
    whole = (up * np.where(whole_exp >= 0, POW10_INT[np.clip(whole_exp, 0, 17)], 0)).sum(axis=1)
    frac = (up * np.where((k > dot[:, None]) & (frac_exp >= 0), POW10_INT[np.clip(frac_exp, 0, 17)], 0)).sum(axis=1)
    return whole, frac


def test_uptime_parts_equal_the_digit_passes() -> None:
    rnd = random.Random(29)
    checked = 0
    for _ in range(300):
        texts, starts, dots, widths = [], [], [], []
        at = 0
        for _ in range(rnd.randrange(0, 40)):
            if rnd.random() < 0.2:  # a line without an uptime
                text = "no uptime here"
                starts.append(at)
                dots.append(0)
                widths.append(0)
            else:
                whole = "".join(rnd.choice("0123456789") for _ in range(rnd.randrange(1, 14)))
                frac = "".join(rnd.choice("0123456789") for _ in range(rnd.randrange(0, 12)))
                up = f"{whole}.{frac}"
                text = f"[{' ' * rnd.randrange(3)}{up}] kernel: x"
                starts.append(at + text.index(up))
                dots.append(len(whole))
                widths.append(len(up))
            texts.append(text)
            at += len(text) + 1
        buf = np.frombuffer("\n".join(texts).encode() or b"\n", np.uint8)
        if rnd.random() < 0.1 and texts:  # digits reaching past the window's end
            buf = buf[:starts[-1] + 2]
        args = (np.array(starts, np.int64), np.array(dots, np.int64), np.array(widths, np.int64))
        got, want = uptime_parts(buf, *args), _reference(buf, *args)
        assert np.array_equal(got[0], want[0])
        assert np.array_equal(got[1], want[1])
        checked += len(starts)
    assert checked > 4000
