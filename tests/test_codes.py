"""A system call's error code read in any of its spellings: number, symbolic name or the C library's message."""

from __future__ import annotations

import pytest

from l4lite.rules import codes
from l4lite.rules.exceptions import ERRNOS, named


@pytest.mark.parametrize(("line", "category"), [
    ("lmbd.diskError: No space left on device", "storage"),  # the message alone, no errno number
    ("include/socket.h:403 NCCL WARN Connect to fe80::c4eb%6<57335> failed : Network is unreachable", "network"),
    ("fi_send failed: (EHOSTUNREACH) while posting", "network"),  # the symbolic name alone
    ("tar: ./shard-0001.tar: Cannot write: Disk quota exceeded", "storage"),
])
def test_a_code_named_by_name_or_message_gets_its_numbers_category(line: str, category: str) -> None:
    found = named(line)
    assert found is not None and found.category == category


@pytest.mark.parametrize("line", [
    "ConnectionResetError: [Errno 104] Connection reset by peer",  # a reset or a broken pipe is a cascade's word
    "recv failed : Connection reset by peer",
    "BrokenPipeError: [Errno 32] Broken pipe",
    "ECONNABORTED",
])
def test_a_cascade_code_names_no_category(line: str) -> None:
    assert named(line) is None


def test_the_tables_agree_with_each_other() -> None:
    # every code a category is given for is a code the header tables know, by one name and one message
    assert set(ERRNOS) <= set(codes.ERRNO)
    assert len({name for name, _ in codes.ERRNO.values()}) == len(codes.ERRNO)
    assert codes.ERRNO_BY_NAME["ENOSPC"] == 28 and codes.ERRNO[110] == ("ETIMEDOUT", "Connection timed out")


def test_the_longer_message_wins() -> None:
    assert codes.errno_of("open: Too many open files in system", {23, 24}) == (23, "Too many open files in system")
