"""The category from what a node said first: an earlier error line before a root rule's line, a peer's lost
connection that names no category, kill exit codes, and the frames of a remote reader cut above its header."""

from __future__ import annotations

from pathlib import Path

import pytest
from scan_helpers import rec
from test_localize import NODES, _scan, finding

from l4lite.api import AnalyzeOptions, analyze
from l4lite.detect.base import Finding
from l4lite.diagnose.firstfail import earlier_failure
from l4lite.diagnose.localize import localize
from l4lite.evaluate.planting import Excerpt, JobPlanter
from l4lite.evaluate.scoreboard import job_paths
from l4lite.rules.components import component
from l4lite.rules.exceptions import named


def component_finding(node: str, t: float, category: str, *, severity: str = "error", line: int = 1,
                      words: str = "net/ib") -> Finding:
    r = rec(f"12:00:00 error line naming {category}", node=node, time=t, line=line, file=f"{node}-kern.log")
    return Finding("components", category, "symptom", 0.25, "An error line", node=node, time=t,
                   severity=severity, records=[r], data={"component": words})


def test_an_error_line_just_before_the_root_line_on_its_node_gives_the_category() -> None:
    """An IB completion error a second before a CUDA call reports an illegal memory access: the network."""
    scan = _scan()
    root = finding("n2", 1051.0, category="software", rule="cuda-illegal-address", line=5)
    ib = component_finding("n2", 1050.0, "network", line=3)
    v = localize(scan, [root, ib])
    assert v.primary is root and v.category == "network" and v.suspects[0][0] == "n2"
    assert dict(zip(map(id, v.findings), v.roles, strict=True))[id(ib)] == "root"


def test_an_earlier_line_elsewhere_long_before_or_after_the_root_line_does_not_decide() -> None:
    root = finding("n2", 1051.0, category="software", rule="cuda-illegal-address")
    for other in (component_finding("n3", 1050.0, "network"),  # another node
                  component_finding("n2", 1051.0 - 600, "network"),  # ten minutes before
                  component_finding("n2", 1052.0, "network"),  # after it
                  component_finding("n2", 1050.0, "network", severity="warning"),  # a warning
                  component_finding("n2", 1050.0, "network", words="(learned)")):  # a guess
        assert earlier_failure([root, other], {id(root): "root", id(other): "symptom"}, root) is None


def test_a_verdict_led_by_a_peers_lost_connection_names_no_category() -> None:
    """Every node lost a peer and the suspect named nothing: the cascade rule's category is no cause."""
    scan = _scan()
    lost = [finding(n, 1700.0 + k, role="cascade", category="network", score=0.35, rule="nccl-socket-closed",
                    text="NCCL WARN socketProgress: Connection reset by peer", line=k + 1)
            for k, n in enumerate(NODES[1:])]
    v = localize(scan, lost)
    assert v.status == "incident" and v.category == "unknown"


def test_kill_exit_codes_are_the_hosts() -> None:
    for line in ("ERROR: error code -9", "Job exited with error code 137", "Training process finished. Exit code: 137",
                 "Training task exit with status code 137", "Process exited with code -9"):
        found = component(line)
        assert found is not None and found.category == "host", line
    assert component("Job exited with error code 1370") is None


def test_frames_inside_fsspecs_http_reader_name_remote_storage() -> None:
    """The reader is a file of ``fsspec/implementations``, not a folder of its own."""
    frames = ('  File "/env/site-packages/fsspec/implementations/http.py", line 614, in async_fetch_range\n'
              '    out = await r.read()')
    found = named(frames)
    assert found is not None and found == ("storage", "fsspec/implementations/http.py")
    assert named('  File "/env/site-packages/fsspec/implementations/local.py", line 3, in open\n    x()') is None


def test_a_watchdogs_timeout_at_nccl_work_is_a_cascade() -> None:
    from l4lite.rules.components import is_cascade

    assert is_cascade("[rank1]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 1] Timeout at NCCL work: 6075, last "
                      "enqueued NCCL work: 6139, last completed NCCL work: 6074.")


@pytest.mark.parametrize(("line", "category"), [
    ("Transport retry count exceeded on mlx5_1:1/IB", "network"),
    ("df: '/backup/tapes': Transport endpoint is not connected", "storage"),
])
def test_a_stuck_nodes_own_line_that_names_a_component_gives_the_category(tmp_path: Path, line: str,
                                                                         category: str) -> None:
    """The faulty rank printed one line no rule knows, not worded as an error, and stopped; its peers timed
    out. The hang names no category of its own; the stuck node's line near the stall names the component."""
    x = Excerpt(id="one-line", source_group="t#1", split="dev", status="incident", category=category,
                phase="train", faulty=None, lines=(line,))
    job = JobPlanter(x).write("rank-files", tmp_path / "job").path
    inc = analyze(job_paths(job), AnalyzeOptions())
    assert inc.status == "incident" and inc.category == category


def test_a_stuck_nodes_last_lines_are_read_together_for_a_name() -> None:
    """Frames of a traceback cut above its header, one record each: together they name the remote reader."""
    from scan_helpers import DigitMiner

    from l4lite.diagnose.ownlines import last_words
    from l4lite.scan.scanner import scan_records

    frames = ['  File "/env/site-packages/fsspec/implementations/http.py", line 614, in async_fetch_range',
              "    out = await r.read()"]
    records = [rec(f"iteration {i} loss 2.0", node=n, time=1000.0 + i, line=i, file=f"{n}.log")
               for n in ("n1", "n2", "n3") for i in range(1, 4)]
    records += [rec(t, node="n2", time=1010.0 + k, line=10 + k, file="n2.log") for k, t in enumerate(frames)]
    said = last_words(scan_records(records, DigitMiner()), "n2", 1012.0, set())
    assert said is not None and said.category == "storage"
    assert said.data["component"] == "fsspec/implementations/http.py"


def test_a_stuck_nodes_last_lines_name_their_component_in_the_lexicons_words() -> None:
    """A refused connection no signature knows, the stuck node's last line of its own, names the network; a
    routine line or a stall warning names nothing and leaves the hang's category alone."""
    from scan_helpers import DigitMiner

    from l4lite.diagnose.ownlines import last_words
    from l4lite.scan.scanner import scan_records

    def said_by(line: str) -> str | None:
        records = [rec(f"iteration {i} loss 2.0", node=n, time=1000.0 + i, line=i, file=f"{n}.log")
                   for n in ("n1", "n2", "n3") for i in range(1, 4)]
        records.append(rec(line, node="n2", time=1010.0, line=10, file="n2.log"))
        said = last_words(scan_records(records, DigitMiner()), "n2", 1012.0, set())
        assert said is not None
        return said.data.get("component") and said.category

    assert said_by("NCCL WARN Call to connect timeout : Connection refused") == "network"
    assert said_by("epoch 3 done, writing summary") is None
    # a stall's own words are no diagnosis: the hang keeps its category
    assert said_by("One or more tensors were submitted by only a subset of ranks, which may cause a deadlock") is None
