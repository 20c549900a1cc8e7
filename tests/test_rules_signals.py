"""A killed process as launchers, schedulers and the DataLoader report it: the signal says who ended it."""

from __future__ import annotations

import pytest

from l4lite.rules.components import component
from l4lite.rules.pack import RulePack

DS = "[ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python3', '-u', 'train.py'] exits with return code = "


@pytest.fixture(scope="module")
def pack() -> RulePack:
    return RulePack.load()


def _rules(pack: RulePack, line: str) -> set[str]:
    return {m.rule.id for m in pack.match_fields(line, line)}


@pytest.mark.parametrize(("line", "rule"), [
    # DeepSpeed's launcher reports a worker's death by signal N as return code -N, as torchelastic's exitcode -N
    (DS + "-9", "sigkill-exit"),
    (DS + "-11", "segfault"),
    (DS + "-7", "sigbus-shm"),
    (DS + "-6", "sigabrt"),
    # Open MPI names the signal a rank died of
    ("mpirun noticed that process rank 0 with PID 0 on node localhost exited on signal 9 (Killed).", "sigkill-exit"),
    # a shell's 128 + 11
    ("Process finished with exit code 139 (interrupted by signal 11: SIGSEGV)", "segfault"),
    # SIGTERM and SIGKILL reach a DataLoader worker from outside it
    ("RuntimeError: DataLoader worker (pid 8102) is killed by signal: Terminated.", "sigkill-exit"),
])
def test_a_launchers_signal_report_reads_as_that_signal(pack: RulePack, line: str, rule: str) -> None:
    assert rule in _rules(pack, line)


def test_other_return_codes_and_a_workers_own_crash_are_not_read_as_those_signals(pack: RulePack) -> None:
    assert not _rules(pack, DS + "-115") & {"sigkill-exit", "segfault", "sigbus-shm", "sigabrt"}
    assert not _rules(pack, DS + "1") & {"sigkill-exit", "segfault", "sigbus-shm", "sigabrt"}
    crash = "RuntimeError: DataLoader worker (pid 812) is killed by signal: Segmentation fault."
    assert "sigkill-exit" not in _rules(pack, crash)
    assert "dataloader-worker-died" in _rules(pack, crash)
    assert "dataloader-worker-died" not in _rules(pack, "RuntimeError: DataLoader worker (pid 1) is killed by "
                                                         "signal: Terminated.")


@pytest.mark.parametrize(("line", "category"), [
    ("RuntimeError: DataLoader worker (pid 8102) is killed by signal: Terminated.", "host"),
    ("RuntimeError: DataLoader worker (pid 22358) is killed by signal: Killed.", "host"),
    ("RuntimeError: DataLoader worker (pid 30882) is killed by signal: Bus error. It is possible that dataloader's "
     "workers are out of shared memory.", "user_config"),
    # the node's kernel module and its user-space driver libraries out of step: a package upgrade on the host
    ("Failed to initialize NVML: Driver/library version mismatch", "host"),
])
def test_the_words_of_a_killed_worker_and_a_mismatched_driver_name_their_component(line: str, category: str) -> None:
    found = component(line, learned=True)
    assert found is not None and found.category == category


def test_a_workers_own_crash_is_not_the_hosts() -> None:
    found = component("RuntimeError: DataLoader worker (pid 812) is killed by signal: Segmentation fault.", learned=True)
    assert found is None or found.category != "host"
